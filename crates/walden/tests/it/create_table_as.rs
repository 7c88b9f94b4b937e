//! CREATE TABLE ... AS and SELECT ... INTO through the server, against a
//! scratch PostgreSQL 15 with the same SQL: column names (from the
//! query), types as PostgreSQL derives them (in pg_attribute
//! and information_schema), WITH [NO] DATA, IF NOT EXISTS, errors, and the
//! rows in the new table; then T-SQL's `SELECT ... INTO #t` and a restart.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, connect, outcome, run_script, runtime, Field, Peers};
use server_support::Serve;
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "CREATE TABLE src (id int PRIMARY KEY, name text, price numeric(10,2), qty smallint, \
     at timestamptz, flag boolean)",
    "INSERT INTO src VALUES (1, 'a', 1.50, 3, '2024-01-02 03:04:05+00', true), \
     (2, 'b', 2.25, 1, NULL, false), (3, NULL, NULL, 7, NULL, NULL)",
    "CREATE TABLE c1 AS SELECT id, name, price * qty AS total FROM src WHERE id < 3",
    "SELECT * FROM c1 ORDER BY id",
    "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute \
     WHERE attrelid = 'c1'::regclass AND attnum > 0 ORDER BY attnum",
    "CREATE TABLE c2 AS SELECT id AS x, upper(name) AS y, qty FROM src",
    "SELECT * FROM c2 ORDER BY x",
    "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'c2' \
     ORDER BY ordinal_position",
    "CREATE TABLE c3 AS SELECT * FROM src WITH NO DATA",
    "SELECT count(*) FROM c3",
    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute \
     WHERE attrelid = 'c3'::regclass AND attnum > 0 ORDER BY attnum",
    "CREATE TABLE c1 AS SELECT 1",
    "CREATE TABLE IF NOT EXISTS c1 AS SELECT 1",
    "CREATE TABLE c5 AS SELECT id, id FROM src",
    "CREATE TABLE c6 AS SELECT 1 AS one, 'x' AS t, 2.5 AS n, now() IS NOT NULL AS b",
    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute \
     WHERE attrelid = 'c6'::regclass AND attnum > 0 ORDER BY attnum",
    "CREATE TABLE c7 AS SELECT name, count(*) AS n FROM src GROUP BY name",
    "SELECT * FROM c7 ORDER BY name",
    "INSERT INTO c7 VALUES ('z', 9)",
    "INSERT INTO c7 VALUES ('z', 9)",
    "SELECT count(*) FROM c7 WHERE name = 'z'",
    "SELECT id, name INTO s1 FROM src WHERE id > 1 ORDER BY id",
    "SELECT * FROM s1 ORDER BY id",
    "SELECT 1 AS a INTO s1",
    "SELECT * INTO TABLE s2 FROM src WHERE flag",
    "SELECT id, name, flag FROM s2",
    "BEGIN",
    "CREATE TABLE c8 AS SELECT id FROM src",
    "ROLLBACK",
    "SELECT * FROM c8",
    "CREATE TABLE c9 AS SELECT id FROM nope",
    "SELECT * FROM c9",
];

#[test]
fn create_table_as_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare CREATE TABLE AS") else {
        return;
    };
    let fields = [Field::Detail, Field::Hint];
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let want = run_script(&peers.pg_conn(), SCRIPT, &fields).await;
            let got = run_script(&peers.walden_conn(), SCRIPT, &fields).await;
            assert_same(&want, &got);
        })
        .await
        .expect("timed out")
    });
}

/// T-SQL's `SELECT ... INTO #t` (the seed scripts' form), and the new
/// tables after a kill and restart (from the log).
#[test]
fn select_into_temp_name_and_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let mut walden = Serve::start(&dir, &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TABLE orders (id int IDENTITY(1,1) PRIMARY KEY, amount int); \
                 INSERT INTO orders (amount) VALUES (10), (20), (30)",
            )
            .await
            .unwrap();
            assert_eq!(
                outcome(
                    &c,
                    "SELECT TOP 2 id, amount INTO #big FROM orders ORDER BY amount DESC",
                    &[]
                )
                .await,
                "ok 2"
            );
            assert_eq!(
                outcome(&c, "SELECT * FROM #big ORDER BY id", &[]).await,
                "2|20; 3|30; ok 2"
            );
            assert_eq!(
                outcome(
                    &c,
                    "CREATE TABLE kept AS SELECT amount * 2 AS d FROM orders",
                    &[]
                )
                .await,
                "ok 3"
            );
        })
        .await
        .expect("timed out")
    });
    walden.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let walden = Serve::start(&dir, &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            assert_eq!(
                outcome(&c, "SELECT d FROM kept ORDER BY d", &[]).await,
                "20; 40; 60; ok 3"
            );
        })
        .await
        .expect("timed out")
    });
}
