// node-postgres over TLS, the server verified against a CA and its name
// (libpq's sslmode=verify-full):
//   node tls_login.js HOST PORT CA USER PASSWORD [CERT KEY]
// Prints the session's role and whether the connection is TLS.

const { Client } = require('pg');
const fs = require('fs');

const [host, port, ca, user, password, cert, key] = process.argv.slice(2);
const ssl = { ca: fs.readFileSync(ca), rejectUnauthorized: true };
if (cert) {
  ssl.cert = fs.readFileSync(cert);
  ssl.key = fs.readFileSync(key);
}

(async () => {
  const c = new Client({
    host,
    port: Number(port),
    user,
    password: password || undefined,
    database: 'walden',
    ssl,
    connectionTimeoutMillis: 10000,
  });
  await c.connect();
  const r = await c.query('SELECT current_user AS u');
  console.log(`${r.rows[0].u} ${c.connection.stream.encrypted === true}`);
  await c.end();
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
