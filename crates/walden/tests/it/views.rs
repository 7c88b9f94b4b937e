//! Views through the server, against a scratch PostgreSQL 15 with the same
//! SQL: CREATE [OR REPLACE] VIEW, DROP VIEW, views in FROM (joins,
//! subqueries, views over views, a CTE of the naming query not reaching
//! the view's), dependencies (DROP TABLE and ALTER TABLE of what a view
//! reads: 2BP01), transactional DDL and the catalogs (pg_views, pg_class,
//! pg_attribute, information_schema). Then what PostgreSQL does and Walden
//! refuses (0A000: writing through a view, partitioned tables), T-SQL's
//! CREATE OR ALTER / ALTER VIEW, restarts after a kill (from the log) and
//! after a checkpoint (from the image), and a secondary receiving views.

use crate::pg_diff;
use crate::repl_support;
use crate::server_support;

use pg_diff::{assert_same, connect, outcome, run_script, runtime, Field, Peers};
use server_support::Serve;
use std::time::{Duration, Instant};

const SCRIPT: &[&str] = &[
    "CREATE TABLE t (a int PRIMARY KEY, b text, c int)",
    "INSERT INTO t VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30)",
    "CREATE TABLE u (a int, d text)",
    "INSERT INTO u VALUES (1, 'x'), (3, 'y'), (3, 'z')",
    "CREATE VIEW v AS SELECT a, b FROM t WHERE a < 3",
    "SELECT * FROM v ORDER BY a",
    "CREATE VIEW v AS SELECT 1",
    "CREATE VIEW t AS SELECT 1",
    "SELECT v.b, u.d FROM v JOIN u ON u.a = v.a ORDER BY 1, 2",
    "SELECT count(*) FROM (SELECT * FROM v) s",
    "SELECT a FROM t WHERE a IN (SELECT a FROM v) ORDER BY a",
    "SELECT x.a, x.b FROM v AS x WHERE x.a = 2",
    "SELECT q.p, q.r FROM v AS q (p, r) ORDER BY 1",
    "CREATE VIEW v2 (k, label) AS SELECT a * 10, upper(b) FROM v",
    "SELECT * FROM v2 ORDER BY k",
    "CREATE VIEW agg AS SELECT u.a, count(*) AS n FROM u GROUP BY u.a",
    "SELECT * FROM agg ORDER BY a",
    "WITH t AS (SELECT 99 AS a, 'cte' AS b) SELECT * FROM v ORDER BY a",
    "CREATE VIEW three (p, q, r, s) AS SELECT a, b, c FROM t",
    "CREATE VIEW dup AS SELECT a, a FROM t",
    "CREATE OR REPLACE VIEW v AS SELECT a, b, c FROM t WHERE a < 3",
    "SELECT * FROM v ORDER BY a",
    "CREATE OR REPLACE VIEW v AS SELECT a FROM t",
    "CREATE OR REPLACE VIEW v AS SELECT a, d AS b, c FROM t JOIN u USING (a)",
    "CREATE OR REPLACE VIEW v AS SELECT a, b, b AS c FROM t",
    "CREATE OR REPLACE VIEW v AS SELECT a, b, c, a + c AS s FROM t WHERE a < 3",
    "SELECT * FROM v ORDER BY a",
    "SELECT * FROM v2 ORDER BY k",
    "DROP TABLE t",
    "DROP TABLE u",
    "ALTER TABLE t DROP COLUMN b",
    "ALTER TABLE u DROP COLUMN d",
    "SELECT * FROM agg ORDER BY a",
    "DROP VIEW v",
    "DROP VIEW t",
    "DROP TABLE v2",
    "DROP VIEW nope",
    "DROP VIEW IF EXISTS nope",
    "SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1",
    "SELECT relname, relkind, relnatts FROM pg_class WHERE relname IN ('t', 'v', 'v2', 'agg') \
     ORDER BY 1",
    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute \
     WHERE attrelid = 'v'::regclass AND attnum > 0 ORDER BY attnum",
    "SELECT table_name, table_type FROM information_schema.tables \
     WHERE table_schema = 'public' ORDER BY 1",
    "SELECT table_name FROM information_schema.views WHERE table_schema = 'public' ORDER BY 1",
    "SELECT table_name, column_name, data_type FROM information_schema.columns \
     WHERE table_name IN ('v2', 'agg') ORDER BY 1, ordinal_position",
    "SELECT pg_get_viewdef('t'::regclass)",
    "BEGIN",
    "CREATE VIEW vt AS SELECT a FROM t",
    "SELECT * FROM vt ORDER BY a",
    "ROLLBACK",
    "SELECT * FROM vt",
    "BEGIN",
    "DROP VIEW v2",
    "ROLLBACK",
    "SELECT * FROM v2 ORDER BY k",
    "DROP VIEW v RESTRICT",
    "DROP VIEW v CASCADE",
    "SELECT * FROM v2",
    "SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1",
    "DROP TABLE u CASCADE",
    "SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1",
    "SELECT * FROM t ORDER BY a",
];

#[test]
fn views_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare views") else {
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

/// The SQLSTATE of a statement's error, or "ok".
async fn code(c: &tokio_postgres::Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Ok(_) => "ok".into(),
        Err(e) => e
            .as_db_error()
            .map_or_else(|| e.to_string(), |d| d.code().code().to_string()),
    }
}

/// What Walden refuses rather than does wrong: writing through a view
/// (PostgreSQL writes through a simple one), partitioned tables (accepted
/// and ignored before: every row landed in the parent), table inheritance,
/// ON COMMIT actions, temporary and materialized views.
#[test]
fn unhonoured_forms_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TABLE t (a int PRIMARY KEY, b text); \
                 INSERT INTO t VALUES (1, 'x'); \
                 CREATE VIEW v AS SELECT a, b FROM t",
            )
            .await
            .unwrap();
            for sql in [
                "INSERT INTO v VALUES (2, 'y')",
                "UPDATE v SET b = 'z'",
                "DELETE FROM v",
                "SELECT * FROM v FOR UPDATE",
                "CREATE TABLE p (k int, v text) PARTITION BY HASH (k)",
                "CREATE TABLE c (x int) INHERITS (t)",
                "CREATE TABLE w (a int) WITH (oids = true)",
                "CREATE TEMP VIEW tv AS SELECT 1",
                "CREATE MATERIALIZED VIEW mv AS SELECT 1",
            ] {
                assert_eq!(code(&c, sql).await, "0A000", "{sql}");
            }
            // Nothing was created, and the rows are as they were.
            assert_eq!(outcome(&c, "SELECT * FROM v", &[]).await, "1|x; ok 1");
            assert_eq!(
                code(&c, "SELECT * FROM p").await,
                "42P01",
                "the refused partitioned table must not exist"
            );
            // Storage parameters that change no answer are taken.
            assert_eq!(
                code(&c, "CREATE TABLE f (a int) WITH (fillfactor = 70)").await,
                "ok"
            );
        })
        .await
        .expect("timed out")
    });
}

/// T-SQL's forms: CREATE VIEW, CREATE OR ALTER VIEW (any new column list)
/// and ALTER VIEW ... AS, and a view read with TOP.
#[test]
fn tsql_view_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TABLE dbo_t (id int IDENTITY(1,1) PRIMARY KEY, name nvarchar(20)); \
                 INSERT INTO dbo_t (name) VALUES ('a'), ('b'), ('c')",
            )
            .await
            .unwrap();
            assert_eq!(
                code(
                    &c,
                    "CREATE VIEW tv AS SELECT TOP 2 id FROM dbo_t ORDER BY id DESC"
                )
                .await,
                "ok"
            );
            assert_eq!(outcome(&c, "SELECT * FROM tv", &[]).await, "3; 2; ok 2");
            assert_eq!(
                code(
                    &c,
                    "CREATE OR ALTER VIEW tv AS SELECT name FROM dbo_t WHERE id = 1"
                )
                .await,
                "ok"
            );
            assert_eq!(outcome(&c, "SELECT * FROM tv", &[]).await, "a; ok 1");
            assert_eq!(
                code(
                    &c,
                    "ALTER VIEW tv (n, i) AS SELECT name, id FROM dbo_t WHERE id > 2"
                )
                .await,
                "ok"
            );
            assert_eq!(outcome(&c, "SELECT i, n FROM tv", &[]).await, "3|c; ok 1");
            assert_eq!(code(&c, "ALTER VIEW nope AS SELECT 1").await, "42P01");
            assert_eq!(
                code(&c, "CREATE OR ALTER VIEW tv2 AS SELECT id FROM dbo_t").await,
                "ok"
            );
            assert_eq!(
                outcome(&c, "SELECT count(*) FROM tv2", &[]).await,
                "3; ok 1"
            );
            // A view reading itself through a replaced definition.
            assert_eq!(
                code(&c, "CREATE OR REPLACE VIEW tv2 AS SELECT id FROM tv2").await,
                "42P17"
            );
            let def = outcome(&c, "SELECT pg_get_viewdef('tv2')", &[]).await;
            assert!(def.contains("SELECT id FROM dbo_t"), "{def}");
        })
        .await
        .expect("timed out")
    });
}

#[test]
fn views_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(&c, "SELECT * FROM top2 ORDER BY k", &[]).await,
            "20|B; 30|C; ok 2"
        );
        assert_eq!(
            outcome(&c, "SELECT * FROM big ORDER BY a", &[]).await,
            "2|b; 3|c; ok 2"
        );
        assert_eq!(
            outcome(
                &c,
                "SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1",
                &[]
            )
            .await,
            "big; top2; ok 2"
        );
        assert_eq!(
            outcome(&c, "SELECT * FROM gone", &[]).await,
            "ERROR 42P01 relation \"gone\" does not exist"
        );
        assert_eq!(
            outcome(&c, "DROP TABLE r", &[]).await,
            "ERROR 2BP01 cannot drop table r because other objects depend on it"
        );
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TABLE r (a int PRIMARY KEY, b text); \
                 INSERT INTO r VALUES (1, 'a'), (2, 'b'), (3, 'c'); \
                 CREATE VIEW big AS SELECT a, b FROM r WHERE a > 5; \
                 CREATE OR REPLACE VIEW big AS SELECT a, b FROM r WHERE a > 1; \
                 CREATE VIEW top2 (k, up) AS SELECT a * 10, upper(b) FROM big; \
                 CREATE VIEW gone AS SELECT 1; DROP VIEW gone",
            )
            .await
            .unwrap();
        })
        .await
        .expect("timed out")
    });
    // Killed, then checkpointed and stopped: from the log, then from the image.
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}

/// A view created on the primary reaches a readable secondary (it is in
/// the logged catalog change) and reads the replicated rows there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_reaches_the_secondary() {
    use repl_support::*;
    let tmp = tempfile::tempdir().unwrap();
    let p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        "SYNCHRONOUS_COMMIT",
        3,
        0,
    )
    .await;
    let (ca, cb) = (&p.ca, &p.cb);
    must(ca, "CREATE TABLE k (id int PRIMARY KEY, v int)").await;
    must(ca, "INSERT INTO k VALUES (1, 5), (2, 7)").await;
    must(
        ca,
        "CREATE VIEW kv AS SELECT id, v * 2 AS w FROM k WHERE v > 5",
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(r) = cb.simple_query("SELECT id, w FROM kv").await {
            let rows: Vec<String> = r
                .iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        Some(format!("{}|{}", r.get(0).unwrap(), r.get(1).unwrap()))
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(rows, vec!["2|14".to_string()]);
            break;
        }
        assert!(Instant::now() < deadline, "the view never reached b");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
