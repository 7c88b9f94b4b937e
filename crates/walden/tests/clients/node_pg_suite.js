// node-postgres and pg-cursor against a server:
//   node node_pg_suite.js 'host=... port=...'
// Same report as the Python programs (conformance.py): PASS, FAIL or GAP per
// check, each under a time limit, exit status 1 on a FAIL.

const { Client } = require('pg'); // a missing driver fails the run here
const Cursor = require('pg-cursor');
const assert = require('assert');

const kv = Object.fromEntries(process.argv[2].split(/\s+/).map((p) => p.split('=')));
const config = {
  host: kv.host,
  port: Number(kv.port),
  user: kv.user || 'walden',
  database: kv.dbname || 'walden',
  connectionTimeoutMillis: 10000,
};
const LIMIT_MS = 20000;

const checks = [];
const check = (name, f, gap) => checks.push({ name, f, gap });

async function withClient(f) {
  const c = new Client(config);
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

async function fresh(c, table, cols) {
  await c.query(`DROP TABLE IF EXISTS ${table}`);
  await c.query(`CREATE TABLE ${table} (${cols})`);
}

check('queries_with_parameters', () =>
  withClient(async (c) => {
    await fresh(c, 'np_crud', 'id int PRIMARY KEY, name text');
    await c.query('INSERT INTO np_crud VALUES ($1, $2), ($3, $4)', [1, 'one', 2, null]);
    const r = await c.query('SELECT id, name FROM np_crud ORDER BY id');
    assert.deepStrictEqual(r.rows, [{ id: 1, name: 'one' }, { id: 2, name: null }]);
    // A named statement is parsed once and reused.
    for (let i = 0; i < 3; i++) {
      const q = await c.query({ name: 'np_one', text: 'SELECT $1::int + 1 AS n', values: [i] });
      assert.strictEqual(q.rows[0].n, i + 1);
    }
  }));

check('errors_carry_sqlstate', () =>
  withClient(async (c) => {
    await assert.rejects(c.query('SELECT * FROM no_such_table_here'), { code: '42P01' });
    await assert.rejects(c.query('SELECT 1 / $1::int', [0]), { code: '22012' });
    assert.strictEqual((await c.query('SELECT 1 AS x')).rows[0].x, 1);
  }));

check('quoted_names_are_row_keys', () =>
  withClient(async (c) => {
    await fresh(c, 'np_case', '"FirstName" text, id int PRIMARY KEY');
    await c.query('INSERT INTO np_case VALUES ($1, 1)', ['Ada']);
    const r = await c.query('SELECT * FROM np_case');
    assert.deepStrictEqual(r.rows, [{ FirstName: 'Ada', id: 1 }]);
  }));

check('cursor_reads_in_batches', () =>
  withClient(async (c) => {
    const cur = c.query(new Cursor('SELECT x FROM generate_series(1, 1000) AS x'));
    let n = 0;
    for (;;) {
      const rows = await cur.read(100);
      if (rows.length === 0) break;
      assert.ok(rows.length <= 100);
      n += rows.length;
    }
    assert.strictEqual(n, 1000);
    await cur.close();
  }));

check('cursor_error_returns_promptly', () =>
  withClient(async (c) => {
    // pg-cursor sends Flush, not Sync, after Execute.
    const cur = c.query(new Cursor('SELECT * FROM no_such_table_here'));
    await assert.rejects(cur.read(10), { code: '42P01' });
    assert.strictEqual((await c.query('SELECT 2 AS x')).rows[0].x, 2);
  }));

check('transaction_rolls_back', () =>
  withClient(async (c) => {
    await fresh(c, 'np_tx', 'id int PRIMARY KEY');
    await c.query('BEGIN');
    await c.query('INSERT INTO np_tx VALUES (1)');
    await assert.rejects(c.query('INSERT INTO np_tx VALUES (1)'), { code: '23505' });
    await assert.rejects(c.query('SELECT 1'), { code: '25P02' });
    await c.query('ROLLBACK');
    assert.strictEqual((await c.query('SELECT count(*)::int AS n FROM np_tx')).rows[0].n, 0);
  }));

check(
  'timestamptz_keeps_the_instant',
  () =>
    withClient(async (c) => {
      const text = '2024-01-02 03:04:05-05';
      const d = new Date('2024-01-02T03:04:05-05:00');
      const r = await c.query('SELECT $1::timestamptz AS t', [text]);
      assert.strictEqual(r.rows[0].t.getTime(), d.getTime());
      await c.query("SET TIME ZONE 'Asia/Kolkata'");
      const s = await c.query("SELECT '2024-01-02 00:00:00+00'::timestamptz::text AS t");
      assert.strictEqual(s.rows[0].t, '2024-01-02 05:30:00+05:30');
      const i = await c.query("SELECT (timestamptz '2024-01-02 00:00+00' - timestamptz '2024-01-01 00:00+00')::text AS i");
      assert.strictEqual(i.rows[0].i, '1 day');
    }),
);

check('json_and_jsonb_are_parsed', () =>
  withClient(async (c) => {
    await fresh(c, 'np_json', 'id int PRIMARY KEY, j jsonb, t json');
    const doc = { b: [1, 'two', null], a: { c: true } };
    await c.query('INSERT INTO np_json VALUES (1, $1, $2)', [JSON.stringify(doc), JSON.stringify(doc)]);
    const r = await c.query("SELECT j, t, j -> 'b' AS b, j ->> 'a' AS a FROM np_json");
    assert.deepStrictEqual(r.rows[0].j, doc);
    assert.deepStrictEqual(r.rows[0].t, doc);
    assert.deepStrictEqual(r.rows[0].b, [1, 'two', null]);
    assert.strictEqual(r.rows[0].a, '{"c": true}');
    const k = await c.query('SELECT key, value FROM jsonb_each($1::jsonb)', ['{"y": 2, "x": [1]}']);
    assert.deepStrictEqual(k.rows, [{ key: 'x', value: [1] }, { key: 'y', value: 2 }]);
  }));

// node-postgres sends a JS array as text (`{1,2}`) with no type: the
// server types the parameter from where it stands, as PostgreSQL does.
check('array_parameter', () =>
  withClient(async (c) => {
    await fresh(c, 'np_arr', 'id int PRIMARY KEY, xs int[], ts text[]');
    await c.query('INSERT INTO np_arr VALUES ($1, $2, $3)', [1, [1, 2], ['a', 'b,c', null, '"q"', 'back\\slash']]);
    await c.query('INSERT INTO np_arr VALUES ($1, $2, $3)', [2, [], []]);
    const r = await c.query('SELECT xs, ts FROM np_arr WHERE id = ANY($1) ORDER BY id', [[1, 2, 3]]);
    assert.deepStrictEqual(r.rows, [
      { xs: [1, 2], ts: ['a', 'b,c', null, '"q"', 'back\\slash'] },
      { xs: [], ts: [] },
    ]);
    assert.deepStrictEqual((await c.query('SELECT $1::int[] AS a', [[1, 2]])).rows[0].a, [1, 2]);
    await c.query('UPDATE np_arr SET xs = array_cat(xs, $1) WHERE id = 1', [[3]]);
    const u = await c.query(
      'SELECT xs, array_length(xs, 1) AS n FROM np_arr WHERE $1 = ANY(xs) AND xs @> $2 AND id <> ALL($3)',
      [3, [1], [2]],
    );
    assert.deepStrictEqual(u.rows, [{ xs: [1, 2, 3], n: 3 }]);
    const o = await c.query('SELECT id FROM np_arr ORDER BY array_position($1, id)', [[2, 1]]);
    assert.deepStrictEqual(o.rows.map((x) => x.id), [2, 1]);
    const n = await c.query('SELECT x FROM unnest($1::text[]) AS x', [['p', 'q']]);
    assert.deepStrictEqual(n.rows.map((x) => x.x), ['p', 'q']);
  }));

function timeout(ms) {
  return new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s (hang)`)), ms).unref());
}

(async () => {
  const version = (m) => JSON.parse(require('fs').readFileSync(`${__dirname}/node_modules/${m}/package.json`)).version;
  console.log(`pg ${version('pg')}, pg-cursor ${version('pg-cursor')}`);
  let failed = 0;
  for (const { name, f, gap } of checks) {
    const t0 = Date.now();
    let err = null;
    try {
      await Promise.race([f(), timeout(LIMIT_MS)]);
    } catch (e) {
      err = e;
    }
    const secs = ((Date.now() - t0) / 1000).toFixed(2);
    if (!err) {
      console.log(`PASS ${name} (${secs} s)` + (gap ? ` [was a known gap: ${gap}]` : ''));
    } else if (gap) {
      console.log(`GAP  ${name}: ${gap} (${String(err.message).split('\n')[0]})`);
    } else {
      failed++;
      console.log(`FAIL ${name}: ${err.stack || err}`);
      if (String(err.message).includes('(hang)')) {
        console.log(`${failed} failed (stopped after a hang)`);
        process.exit(1);
      }
    }
  }
  console.log(`${checks.length - failed} of ${checks.length} ok, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
