//! Temporary tables through the server: two sessions each with their own
//! `t`, a temporary table shadowing a permanent one (and both reachable as
//! `pg_temp.t` / `public.t`), rollback of a CREATE TEMP, keys, serials and
//! foreign keys on temporary tables, compared step by step with PostgreSQL
//! 15; then what PostgreSQL cannot show: a disconnect drops the tables, a
//! kill and restart leaves none, T-SQL's `#t` and `SELECT ... INTO #t`.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, connect, outcome, runtime, Peers};
use server_support::Serve;
use std::time::Duration;

/// (session, statement): sessions 0 and 1 run interleaved.
const STEPS: &[(usize, &str)] = &[
    (0, "CREATE TABLE t (a int)"),
    (0, "INSERT INTO t VALUES (1)"),
    (0, "CREATE TEMP TABLE t (a int, b text)"),
    (0, "INSERT INTO t VALUES (10, 'x')"),
    (0, "SELECT * FROM t"),
    (0, "SELECT * FROM public.t"),
    (0, "SELECT * FROM pg_temp.t"),
    (0, "SELECT t.a, t.b FROM t WHERE t.a = 10"),
    (1, "SELECT * FROM t"),
    // No temporary table in this session: 42P01 naming "pg_temp.t".
    (1, "SELECT * FROM pg_temp.t"),
    (1, "CREATE TEMPORARY TABLE t (z int)"),
    (1, "INSERT INTO t VALUES (99)"),
    (1, "SELECT * FROM t"),
    (0, "SELECT * FROM t"),
    (0, "CREATE TEMP TABLE t (a int)"),
    (0, "CREATE TABLE public.t (a int)"),
    (0, "CREATE TEMP TABLE public.x (a int)"),
    (0, "UPDATE t SET b = 'y' WHERE t.a = 10 RETURNING t.b"),
    (0, "INSERT INTO t VALUES (11, 'z') RETURNING t.a"),
    (0, "SELECT count(*) FROM t JOIN public.t p ON p.a < t.a"),
    (0, "WITH t AS (SELECT 5 AS a) SELECT * FROM t"),
    (0, "DELETE FROM t WHERE a = 11"),
    (0, "BEGIN"),
    (0, "CREATE TEMP TABLE r (a int)"),
    (0, "INSERT INTO r VALUES (1)"),
    (0, "SELECT * FROM r"),
    (0, "ROLLBACK"),
    (0, "SELECT * FROM r"),
    (
        0,
        "CREATE TEMP TABLE k (id serial PRIMARY KEY, v text UNIQUE, c int CHECK (c > 0))",
    ),
    (0, "INSERT INTO k (v, c) VALUES ('a', 1), ('b', 2)"),
    (0, "INSERT INTO k (v, c) VALUES ('a', 3)"),
    (0, "INSERT INTO k (v, c) VALUES ('q', -1)"),
    (0, "SELECT * FROM k ORDER BY id"),
    (0, "CREATE INDEX ON k (c)"),
    (0, "CREATE TEMP TABLE kc (a int REFERENCES k (id))"),
    (0, "INSERT INTO kc VALUES (1)"),
    (0, "INSERT INTO kc VALUES (5)"),
    (0, "CREATE TABLE perm (a int REFERENCES k (id))"),
    (0, "CREATE TABLE perm (a int)"),
    (0, "ALTER TABLE perm ADD FOREIGN KEY (a) REFERENCES k (id)"),
    (1, "SELECT * FROM k"),
    (1, "CREATE TEMP TABLE k (id int PRIMARY KEY)"),
    (1, "INSERT INTO k VALUES (1), (1)"),
    (0, "TRUNCATE t"),
    (0, "SELECT count(*) FROM t"),
    (0, "DROP TABLE t"),
    (0, "SELECT * FROM t"),
    (0, "DROP TABLE kc, k"),
    (1, "SELECT * FROM k"),
    (0, "BEGIN"),
    (0, "CREATE TEMP TABLE oc_del (a int) ON COMMIT DELETE ROWS"),
    (0, "INSERT INTO oc_del VALUES (1)"),
    (0, "SELECT count(*) FROM oc_del"),
    (0, "COMMIT"),
    (0, "SELECT count(*) FROM oc_del"),
    (0, "INSERT INTO oc_del VALUES (2)"),
    (0, "SELECT count(*) FROM oc_del"),
    (0, "BEGIN"),
    (0, "CREATE TEMP TABLE oc_drop (a int) ON COMMIT DROP"),
    (0, "INSERT INTO oc_drop VALUES (1)"),
    (0, "SELECT * FROM oc_drop"),
    (0, "COMMIT"),
    (0, "SELECT * FROM oc_drop"),
    (0, "CREATE TEMP TABLE oc_now (a int) ON COMMIT DROP"),
    (0, "SELECT * FROM oc_now"),
    (0, "CREATE TABLE oc_perm (a int) ON COMMIT DROP"),
    (0, "CREATE TEMP TABLE oc_pres (a int) ON COMMIT PRESERVE ROWS"),
    (0, "INSERT INTO oc_pres VALUES (3)"),
    (0, "SELECT * FROM oc_pres"),
    (0, "SELECT relname, relpersistence FROM pg_class WHERE relname IN ('t', 'perm', 'oc_pres') ORDER BY 1, 2"),
    (0, "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname LIKE 'pg_temp%' AND c.relname = 'oc_pres'"),
    (0, "SELECT pg_my_temp_schema() <> 0, pg_is_other_temp_schema(pg_my_temp_schema())"),
    (0, "SELECT nspname LIKE 'pg_temp_%' FROM pg_namespace WHERE oid = pg_my_temp_schema()"),
    (
        1,
        "SELECT pg_is_other_temp_schema(c.relnamespace), pg_table_is_visible(c.oid) \
         FROM pg_class c WHERE c.relname = 'oc_pres'",
    ),
    (
        0,
        "SELECT n.nspname = 'public', pg_table_is_visible(c.oid) FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'oc_pres'",
    ),
    // COLLATE: the collations that order as Walden does, and their catalog.
    (
        0,
        "CREATE TABLE coll (a text COLLATE \"C\", b varchar(5) COLLATE \"POSIX\", \
         c text COLLATE \"default\", d int)",
    ),
    (0, "INSERT INTO coll VALUES ('b', 'B', 'a', 1), ('B', 'b', 'A', 2), ('a', 'é', 'e', 3)"),
    (
        0,
        "SELECT attname, attcollation FROM pg_attribute WHERE attrelid = 'coll'::regclass \
         AND attnum > 0 ORDER BY attnum",
    ),
    (0, "SELECT a FROM coll ORDER BY a COLLATE \"C\""),
    (0, "SELECT b FROM coll ORDER BY b COLLATE pg_catalog.\"POSIX\" DESC"),
    (0, "SELECT count(*) FROM coll WHERE a COLLATE \"C\" < 'b'"),
    (0, "CREATE TABLE coll2 (a int COLLATE \"C\")"),
    (0, "CREATE INDEX coll_a ON coll (a COLLATE \"C\")"),
    (0, "ALTER TABLE coll ADD COLUMN e text COLLATE \"C\""),
    (0, "SELECT attname, attcollation FROM pg_attribute WHERE attrelid = 'coll'::regclass AND attname = 'e'"),
];

#[test]
fn temp_tables_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare temporary tables") else {
        return;
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let mut outs = Vec::new();
            for conn in [peers.pg_conn(), peers.walden_conn()] {
                let sessions = [connect(&conn).await, connect(&conn).await];
                let mut out = Vec::new();
                for (s, sql) in STEPS {
                    let o = outcome(&sessions[*s], sql, &[]).await;
                    out.push(format!("[{s}] {sql}\n  -> {o}"));
                }
                outs.push(out);
            }
            assert_same(&outs[0], &outs[1]);
        })
        .await
        .expect("timed out")
    });
}

/// Counts the relations of `name` other sessions could see.
async fn relations(c: &tokio_postgres::Client, name: &str) -> String {
    outcome(
        c,
        &format!("SELECT count(*) FROM pg_class WHERE relname = '{name}'"),
        &[],
    )
    .await
}

/// A disconnect drops the session's temporary tables; a kill and restart
/// leaves none behind, in the catalog or by name; `#t` is a temporary table
/// too, as is `SELECT ... INTO #t`.
#[test]
fn temp_tables_end_with_their_session() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let mut walden = Serve::start(&dir, &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let observer = connect(&walden.conn_str()).await;
            {
                let a = connect(&walden.conn_str()).await;
                a.batch_execute(
                    "CREATE TEMP TABLE gone (a int PRIMARY KEY); INSERT INTO gone VALUES (1)",
                )
                .await
                .unwrap();
                assert_eq!(relations(&observer, "gone").await, "1; ok 1");
                assert!(outcome(&observer, "SELECT * FROM gone", &[])
                    .await
                    .starts_with("ERROR 42P01"));
            }
            // The client went away: the server notices and drops the table.
            let mut left = String::new();
            for _ in 0..100 {
                left = relations(&observer, "gone").await;
                if left == "0; ok 1" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(left, "0; ok 1");
            // T-SQL's local temporary tables.
            let b = connect(&walden.conn_str()).await;
            b.batch_execute(
                "CREATE TABLE orders (id int IDENTITY(1,1) PRIMARY KEY, amount int); \
                 INSERT INTO orders (amount) VALUES (10), (20), (30)",
            )
            .await
            .unwrap();
            assert_eq!(
                outcome(
                    &b,
                    "SELECT TOP 2 id, amount INTO #big FROM orders ORDER BY amount DESC",
                    &[]
                )
                .await,
                "ok 2"
            );
            assert_eq!(
                outcome(&b, "SELECT * FROM #big ORDER BY id", &[]).await,
                "2|20; 3|30; ok 2"
            );
            assert_eq!(
                outcome(&b, "CREATE TABLE #scratch (id int, note varchar(10))", &[]).await,
                "ok 0"
            );
            assert_eq!(
                outcome(&b, "INSERT INTO #scratch VALUES (1, 'x')", &[]).await,
                "ok 1"
            );
            assert!(outcome(&observer, "SELECT * FROM #big", &[])
                .await
                .starts_with("ERROR 42P01"));
            // Another session's #scratch is its own.
            assert_eq!(
                outcome(&observer, "CREATE TABLE #scratch (z int)", &[]).await,
                "ok 0"
            );
            assert_eq!(
                outcome(&observer, "SELECT count(*) FROM #scratch", &[]).await,
                "0; ok 1"
            );
            assert!(outcome(&b, "CREATE TABLE ##global (a int)", &[])
                .await
                .starts_with("ERROR 0A000"));
            b.batch_execute(
                "CREATE TEMP TABLE survivor_check (a int); INSERT INTO survivor_check VALUES (1)",
            )
            .await
            .unwrap();
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
                outcome(
                    &c,
                    "SELECT count(*) FROM pg_class WHERE relname IN ('#big', '#scratch', 'survivor_check')",
                    &[]
                )
                .await,
                "0; ok 1"
            );
            assert_eq!(
                outcome(&c, "SELECT count(*) FROM orders", &[]).await,
                "3; ok 1"
            );
            // The names are free again, in a new session.
            assert_eq!(
                outcome(&c, "CREATE TEMP TABLE survivor_check (a int)", &[]).await,
                "ok 0"
            );
            assert_eq!(
                outcome(&c, "SELECT count(*) FROM survivor_check", &[]).await,
                "0; ok 1"
            );
        })
        .await
        .expect("timed out")
    });
}

/// A collation that would order otherwise than Walden does is refused with
/// 0A000 naming it (PostgreSQL knows them; Walden must not ignore them).
#[test]
fn other_collations_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute("CREATE TABLE words (w text)")
                .await
                .unwrap();
            for sql in [
                "CREATE TABLE bad (a text COLLATE \"en_US\")",
                "CREATE TABLE bad (a text COLLATE \"und-x-icu\")",
                "ALTER TABLE words ADD COLUMN x text COLLATE \"de_DE\"",
                "SELECT w FROM words ORDER BY w COLLATE \"en_US\"",
                "SELECT 'a' COLLATE \"fr_FR\" < 'b'",
                "CREATE INDEX words_w ON words (w COLLATE \"sv_SE\")",
                "SELECT w COLLATE SQL_Latin1_General_CP1_CI_AS FROM words",
            ] {
                let got = outcome(&c, sql, &[]).await;
                assert!(got.starts_with("ERROR 0A000"), "{sql}: {got}");
                assert!(got.contains("collation"), "{sql}: {got}");
            }
            // The session and the table go on.
            assert_eq!(
                outcome(&c, "SELECT count(*) FROM words", &[]).await,
                "0; ok 1"
            );
        })
        .await
        .expect("timed out")
    });
}
