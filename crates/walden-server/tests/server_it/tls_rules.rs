//! TLS on the SQL port with host-based rules that demand it: hostssl and
//! hostnossl rules, `cert` authentication by a client certificate that the
//! configured CA signed and whose common name is the role, SCRAM over TLS,
//! and real clients (psql, pgbench, psycopg) with `sslmode=verify-full`.

use crate::common;

use common::{missing_tool, TestServer};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use walden_server::config::TlsFiles;
use walden_server::{Rules, ServerConfig};

/// Runs a command, killing it past `limit`.
fn run(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd:?} did not finish in {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn openssl(dir: &Path, args: &[&str]) -> bool {
    run(
        Command::new("openssl").current_dir(dir).args(args),
        Duration::from_secs(30),
    )
    .status
    .success()
}

/// A CA, a server certificate for 127.0.0.1 and localhost, client
/// certificates for `alice` (signed by the CA) and a rogue one for `alice`
/// signed by nobody the server knows. `None` without openssl.
fn make_pki(dir: &Path) -> Option<()> {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
    let ok = openssl(
        dir,
        &[
            &[
                "req",
                "-x509",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=walden test CA",
            ][..],
            &ec[..],
            &["-keyout", "ca.key", "-out", "ca.crt"][..],
        ]
        .concat(),
    );
    if !ok {
        return None;
    }
    let leaf = |name: &str, cn: &str, ext: &str, ca: Option<&str>| {
        std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
        assert!(openssl(
            dir,
            &[
                &["req", "-new", "-nodes", "-subj", &format!("/CN={cn}")][..],
                &ec[..],
                &[
                    "-keyout",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.csr")
                ][..],
            ]
            .concat(),
        ));
        let csr = format!("{name}.csr");
        let out = format!("{name}.crt");
        let extfile = format!("{name}.ext");
        let mut args = vec!["x509", "-req", "-in", &csr, "-days", "2", "-out", &out];
        args.extend(["-extfile", &extfile]);
        match ca {
            Some(_) => args.extend(["-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial"]),
            None => args.extend(["-signkey", "rogue-signer.key"]),
        }
        assert!(openssl(dir, &args), "openssl x509 for {name}");
    };
    leaf(
        "server",
        "localhost",
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        Some("ca"),
    );
    let client_ext = "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n";
    leaf("alice", "alice", client_ext, Some("ca"));
    assert!(openssl(
        dir,
        &[
            &[
                "genpkey",
                "-algorithm",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1"
            ][..],
            &["-out", "rogue-signer.key"][..]
        ]
        .concat()
    ));
    leaf("rogue", "alice", client_ext, None);
    Some(())
}

const RULES: &str = r#"
[[auth.rule]]
type = "hostnossl"
roles = "alice"
address = "all"
method = "reject"

[[auth.rule]]
type = "hostnossl"
roles = "walden"
address = "127.0.0.1"
method = "scram-sha-256"

[[auth.rule]]
type = "hostssl"
roles = "+certified"
address = "all"
method = "cert"

[[auth.rule]]
type = "hostssl"
address = "all"
method = "scram-sha-256"
"#;

struct Pki(PathBuf);

impl Pki {
    fn f(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    /// A connection string to the server, verified against the CA.
    fn conn(&self, s: &TestServer, user: &str, extra: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user={user} dbname=walden sslmode=verify-full sslrootcert={} connect_timeout=10 {extra}",
            s.addr.port(),
            self.f("ca.crt")
        )
    }

    fn client_cert(&self, name: &str) -> String {
        format!(
            "sslcert={} sslkey={}",
            self.f(&format!("{name}.crt")),
            self.f(&format!("{name}.key"))
        )
    }
}

/// psql -c `sql` against `conn`: (success, stdout, stderr).
fn psql(conn: &str, password: Option<&str>, sql: &str) -> (bool, String, String) {
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-At", "-w", "-c", sql, conn])
        .env_remove("PGPASSWORD");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    let out = run(&mut cmd, Duration::from_secs(30));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_rules_and_client_certificates() {
    if !common::have("psql") {
        missing_tool("psql is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if make_pki(dir.path()).is_none() {
        missing_tool("openssl cannot make the test certificates");
        return;
    }
    let pki = Pki(dir.path().to_path_buf());
    let file = dir.path().join("walden.toml");
    std::fs::write(&file, RULES).unwrap();
    let parsed = ServerConfig::from_file(&file).unwrap();
    let s = TestServer::start_in(&dir.path().join("data"), |c| {
        c.auth = Rules::from_file(parsed.auth.as_ref()).unwrap();
        c.users.insert("walden".into(), "boot".into());
        c.auth_failure_delay = Duration::from_millis(1);
        c.tls = Some(TlsFiles {
            cert: dir.path().join("server.crt"),
            key: dir.path().join("server.key"),
            ca: Some(dir.path().join("ca.crt")),
        });
    });
    let boot = s.connect_with("password=boot").await.unwrap();
    boot.batch_execute(
        "CREATE ROLE certified; \
         CREATE ROLE alice LOGIN IN ROLE certified; \
         CREATE ROLE bob LOGIN PASSWORD 'pw' IN ROLE certified; \
         CREATE ROLE carol LOGIN PASSWORD 'pw'",
    )
    .await
    .unwrap();

    // alice: refused without TLS; her certificate logs her in over TLS.
    let plain = format!(
        "host=127.0.0.1 port={} user=alice dbname=walden sslmode=disable",
        s.addr.port()
    );
    let (ok, _, err) = psql(&plain, None, "SELECT 1");
    assert!(!ok);
    assert!(
        err.contains("pg_hba.conf rejects connection for host \"127.0.0.1\", user \"alice\", database \"walden\", no encryption"),
        "{err}"
    );
    let (ok, out, err) = psql(
        &pki.conn(&s, "alice", &pki.client_cert("alice")),
        None,
        "SELECT current_user",
    );
    assert!(ok, "{err}");
    assert_eq!(out, "alice");
    // \conninfo names the TLS session.
    let (ok, out, err) = psql(
        &pki.conn(&s, "alice", &pki.client_cert("alice")),
        None,
        "\\conninfo",
    );
    assert!(ok && out.contains("SSL connection"), "{out}{err}");

    // bob is certified too, but alice's certificate is not his, and no
    // certificate is no login.
    let (ok, _, err) = psql(
        &pki.conn(&s, "bob", &pki.client_cert("alice")),
        Some("pw"),
        "SELECT 1",
    );
    assert!(!ok);
    assert!(
        err.contains("certificate authentication failed for user \"bob\""),
        "{err}"
    );
    let (ok, _, err) = psql(&pki.conn(&s, "bob", ""), Some("pw"), "SELECT 1");
    assert!(!ok);
    assert!(
        err.contains("connection requires a valid client certificate"),
        "{err}"
    );

    // A certificate the CA did not sign ends the TLS handshake.
    let (ok, _, err) = psql(
        &pki.conn(&s, "alice", &pki.client_cert("rogue")),
        None,
        "SELECT 1",
    );
    assert!(!ok, "a rogue certificate logged in");
    assert!(!err.contains("current_user"), "{err}");

    // carol: SCRAM over TLS, with channel binding available; no rule for
    // her without TLS.
    let (ok, out, err) = psql(
        &pki.conn(&s, "carol", ""),
        Some("pw"),
        "SELECT current_user",
    );
    assert!(ok, "{err}");
    assert_eq!(out, "carol");
    let (ok, _, err) = psql(
        &pki.conn(&s, "carol", "channel_binding=require"),
        Some("pw"),
        "SELECT 1",
    );
    assert!(ok, "channel binding: {err}");
    let (ok, _, err) = psql(&pki.conn(&s, "carol", ""), Some("wrong"), "SELECT 1");
    assert!(
        !ok && err.contains("password authentication failed for user \"carol\""),
        "{err}"
    );
    let (ok, _, err) = psql(
        &plain.replace("user=alice", "user=carol"),
        Some("pw"),
        "SELECT 1",
    );
    assert!(!ok);
    assert!(
        err.contains("no pg_hba.conf entry for host \"127.0.0.1\", user \"carol\", database \"walden\", no encryption"),
        "{err}"
    );
    // verify-full checks the name: "localhost" is in the certificate too.
    let (ok, _, err) = psql(
        &pki.conn(&s, "carol", "")
            .replace("host=127.0.0.1", "host=localhost"),
        Some("pw"),
        "SELECT 1",
    );
    assert!(ok, "host=localhost: {err}");

    // pgbench over TLS with SCRAM.
    if common::have("pgbench") {
        let script = dir.path().join("select.sql");
        std::fs::write(&script, "SELECT 1;\n").unwrap();
        let out = run(
            Command::new("pgbench")
                .args(["-n", "-c", "2", "-t", "5", "-f"])
                .arg(&script)
                .arg(pki.conn(&s, "carol", ""))
                .env("PGPASSWORD", "pw"),
            Duration::from_secs(60),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success()
                && text.contains("number of transactions actually processed: 10/10"),
            "pgbench: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        missing_tool("pgbench is not installed");
    }

    // psycopg, verify-full, SCRAM; then alice's certificate.
    if common::have_python_module("psycopg") {
        let script = r#"
import sys, psycopg
with psycopg.connect(sys.argv[1], password="pw") as c:
    print(c.execute("SELECT current_user").fetchone()[0], c.info.pgconn.ssl_in_use)
with psycopg.connect(sys.argv[2]) as c:
    print(c.execute("SELECT current_user").fetchone()[0])
"#;
        let out = run(
            Command::new("python3")
                .args(["-c", script])
                .arg(pki.conn(&s, "carol", ""))
                .arg(pki.conn(&s, "alice", &pki.client_cert("alice"))),
            Duration::from_secs(60),
        );
        assert!(
            out.status.success(),
            "psycopg: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "carol True\nalice"
        );
    } else {
        missing_tool("python3 with psycopg is not installed");
    }

    let m = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut t = tokio::net::TcpStream::connect(s.metrics.unwrap())
            .await
            .unwrap();
        t.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        t.read_to_string(&mut out).await.unwrap();
        out
    };
    assert!(
        m.contains("walden_login_failures_total{reason=\"certificate\"} 2"),
        "{m}"
    );
}
