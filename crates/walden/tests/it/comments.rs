//! `COMMENT ON` through the server, against a scratch PostgreSQL 15 with
//! the same SQL: comments on tables, columns, views and their columns,
//! indexes (a primary key's too), sequences, enum types and constraints;
//! `IS NULL` / `IS ''` removing one; transactional (a rollback takes it
//! back); a renamed column keeping its comment; dropping an object dropping
//! its comments; read through `pg_description`, `obj_description` and
//! `col_description`, and the queries SQLAlchemy 2's reflection sends.
//! Then comments surviving a kill and a checkpointed restart, and reaching
//! a secondary.

use crate::pg_diff;
use crate::repl_support;
use crate::server_support;

use pg_diff::{assert_same, connect, outcome, run_script, runtime, Field, Peers};
use server_support::Serve;
use std::time::{Duration, Instant};

const SCRIPT: &[&str] = &[
    "CREATE TABLE t (a int PRIMARY KEY, b text, c int CHECK (c > 0), \
     CONSTRAINT t_b_key UNIQUE (b))",
    "CREATE TABLE r (k int REFERENCES t (a), n int)",
    "CREATE INDEX t_c_idx ON t (c)",
    "CREATE SEQUENCE s",
    "CREATE VIEW v AS SELECT a, b FROM t",
    "CREATE TYPE mood AS ENUM ('sad', 'ok')",
    "COMMENT ON TABLE t IS 'the table'",
    "COMMENT ON COLUMN t.b IS 'column b'",
    "COMMENT ON COLUMN public.t.c IS 'column ''c'''",
    "COMMENT ON VIEW v IS 'a view'",
    "COMMENT ON COLUMN v.a IS 'view column'",
    "COMMENT ON INDEX t_c_idx IS 'an index'",
    "COMMENT ON INDEX t_pkey IS 'primary key index'",
    "COMMENT ON SEQUENCE s IS 'a sequence'",
    "COMMENT ON TYPE mood IS 'a type'",
    "COMMENT ON CONSTRAINT t_pkey ON t IS 'pk'",
    "COMMENT ON CONSTRAINT t_c_check ON public.t IS 'positive'",
    "COMMENT ON CONSTRAINT t_b_key ON t IS 'unique b'",
    "COMMENT ON CONSTRAINT r_k_fkey ON r IS 'fk'",
    "COMMENT ON TABLE r IS $$dollar 'quoted'$$",
    "COMMENT ON TABLE nope IS 'x'",
    "COMMENT ON COLUMN t.nope IS 'x'",
    "COMMENT ON COLUMN nope.a IS 'x'",
    "COMMENT ON CONSTRAINT nope ON t IS 'x'",
    "COMMENT ON INDEX nope IS 'x'",
    "COMMENT ON SEQUENCE nope IS 'x'",
    "COMMENT ON TYPE nope IS 'x'",
    "SELECT obj_description('t'::regclass, 'pg_class'), obj_description('t'::regclass), \
     obj_description('t'::regclass, 'pg_type')",
    "SELECT col_description('t'::regclass, 1), col_description('t'::regclass, 2), \
     col_description('t'::regclass, 3), col_description('t'::regclass, 0)",
    "SELECT c.relname, d.objsubid, d.description FROM pg_description d \
     JOIN pg_class c ON c.oid = d.objoid \
     WHERE d.classoid = 'pg_catalog.pg_class'::regclass ORDER BY 1, 2",
    "SELECT con.conname, d.description FROM pg_description d \
     JOIN pg_constraint con ON con.oid = d.objoid \
     WHERE d.classoid = 'pg_constraint'::regclass ORDER BY 1",
    "SELECT ty.typname, d.description FROM pg_description d \
     JOIN pg_type ty ON ty.oid = d.objoid AND d.classoid = 'pg_type'::regclass \
     WHERE ty.oid >= 16384 ORDER BY 1",
    "SELECT obj_description(oid, 'pg_class') FROM pg_class WHERE relname IN ('s', 'v', 't_pkey') \
     ORDER BY relname",
    // SQLAlchemy 2's get_table_comment and get_columns (their joins).
    "SELECT pg_catalog.pg_class.relname, pg_catalog.pg_description.description \
     FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_description \
     ON pg_catalog.pg_class.oid = pg_catalog.pg_description.objoid \
     AND pg_catalog.pg_description.objsubid = 0 \
     AND pg_catalog.pg_description.classoid = CAST('pg_catalog.pg_class' AS REGCLASS) \
     WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) \
     AND pg_catalog.pg_class.relname IN ('t', 'r', 'v') ORDER BY 1",
    "SELECT pg_catalog.pg_attribute.attname AS name, \
     pg_catalog.pg_description.description AS comment \
     FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_attribute \
     ON pg_catalog.pg_class.oid = pg_catalog.pg_attribute.attrelid \
     AND pg_catalog.pg_attribute.attnum > 0 AND NOT pg_catalog.pg_attribute.attisdropped \
     LEFT OUTER JOIN pg_catalog.pg_description \
     ON pg_catalog.pg_description.objoid = pg_catalog.pg_attribute.attrelid \
     AND pg_catalog.pg_description.objsubid = pg_catalog.pg_attribute.attnum \
     WHERE pg_catalog.pg_class.relname = 't' ORDER BY pg_catalog.pg_attribute.attnum",
    // Removing: IS NULL and IS ''.
    "COMMENT ON TABLE t IS NULL",
    "COMMENT ON COLUMN t.b IS ''",
    "SELECT obj_description('t'::regclass, 'pg_class'), col_description('t'::regclass, 2)",
    // Transactional.
    "BEGIN",
    "COMMENT ON TABLE t IS 'in a transaction'",
    "COMMENT ON COLUMN t.c IS 'changed'",
    "SELECT obj_description('t'::regclass, 'pg_class'), col_description('t'::regclass, 3)",
    "ROLLBACK",
    "SELECT obj_description('t'::regclass, 'pg_class'), col_description('t'::regclass, 3)",
    "BEGIN",
    "COMMENT ON TABLE t IS 'committed'",
    "COMMIT",
    "SELECT obj_description('t'::regclass, 'pg_class')",
    // A renamed column or table keeps its comment; a dropped column's goes.
    "CREATE TABLE d (x int, y int, z int)",
    "COMMENT ON COLUMN d.y IS 'why'",
    "COMMENT ON COLUMN d.z IS 'zed'",
    "ALTER TABLE d RENAME COLUMN z TO zz",
    "ALTER TABLE d RENAME TO dd",
    "ALTER TABLE dd DROP COLUMN y",
    "SELECT a.attname, col_description(a.attrelid, a.attnum) FROM pg_attribute a \
     WHERE a.attrelid = 'dd'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1",
    "ALTER TABLE dd ADD COLUMN y int",
    "SELECT a.attname, col_description(a.attrelid, a.attnum) FROM pg_attribute a \
     WHERE a.attrelid = 'dd'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1",
    // Dropping an object drops its comments (and its constraints' and
    // indexes'); a new object of the same name has none.
    "DROP INDEX t_c_idx",
    "ALTER TABLE t DROP CONSTRAINT t_b_key",
    "SELECT count(*) FROM pg_description WHERE description IN ('an index', 'unique b')",
    "DROP VIEW v",
    "DROP TABLE r",
    "DROP TABLE t",
    "DROP TABLE dd",
    "DROP SEQUENCE s",
    "SELECT description FROM pg_description WHERE objoid >= 16384 ORDER BY 1",
    "CREATE TABLE t (a int)",
    "SELECT obj_description('t'::regclass, 'pg_class')",
    "DROP TYPE mood",
    "SELECT count(*) FROM pg_description WHERE objoid >= 16384",
    // Objects Walden has no comments for are refused.
    "COMMENT ON SCHEMA public IS 'standard public schema'",
    "SELECT obj_description('public'::regnamespace, 'pg_namespace')",
];

#[test]
fn comments_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare comments") else {
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

/// Kinds of object Walden does not have comments for are refused (0A000),
/// not accepted and lost.
#[test]
fn other_objects_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "COMMENT ON DATABASE walden IS 'x'",
                "COMMENT ON ROLE walden IS 'x'",
                "COMMENT ON EXTENSION plpgsql IS 'x'",
                "COMMENT ON MATERIALIZED VIEW m IS 'x'",
                "COMMENT ON FUNCTION f IS 'x'",
                "COMMENT ON SCHEMA public IS 'mine'",
            ] {
                let got = outcome(&c, sql, &[]).await;
                assert!(got.starts_with("ERROR 0A000"), "{sql}: {got}");
            }
        })
        .await
        .expect("timed out")
    });
}

#[test]
fn comments_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(
                &c,
                "SELECT obj_description('k'::regclass, 'pg_class'), \
                 col_description('k'::regclass, 2), obj_description('kv'::regclass), \
                 (SELECT count(*) FROM pg_description WHERE description = 'gone')",
                &[]
            )
            .await,
            "kept|renamed column|the view|0; ok 1"
        );
        assert_eq!(
            outcome(
                &c,
                "SELECT con.conname, d.description FROM pg_description d \
                 JOIN pg_constraint con ON con.oid = d.objoid",
                &[]
            )
            .await,
            "k_pkey|key; ok 1"
        );
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TABLE k (id int PRIMARY KEY, v int); \
                 CREATE VIEW kv AS SELECT id FROM k; \
                 COMMENT ON TABLE k IS 'first'; \
                 COMMENT ON TABLE k IS 'kept'; \
                 COMMENT ON COLUMN k.v IS 'renamed column'; \
                 ALTER TABLE k RENAME COLUMN v TO w; \
                 COMMENT ON VIEW kv IS 'the view'; \
                 COMMENT ON CONSTRAINT k_pkey ON k IS 'key'; \
                 CREATE TABLE g (a int); \
                 COMMENT ON TABLE g IS 'gone'; \
                 DROP TABLE g",
            )
            .await
            .unwrap();
            for sql in ["BEGIN", "COMMENT ON TABLE k IS 'rolled back'", "ROLLBACK"] {
                c.simple_query(sql).await.unwrap();
            }
        })
        .await
        .expect("timed out")
    });
    // Killed, then checkpointed and stopped: from the log, then from the image.
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}

/// A comment set on the primary reaches a readable secondary (it is in the
/// logged catalog change), and so does its removal with the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_reaches_the_secondary() {
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
    must(ca, "COMMENT ON TABLE k IS 'on the primary'").await;
    must(ca, "COMMENT ON COLUMN k.v IS 'a column'").await;
    let read = "SELECT obj_description('k'::regclass, 'pg_class'), \
                col_description('k'::regclass, 2)";
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if outcome(cb, read, &[]).await == "on the primary|a column; ok 1" {
            break;
        }
        assert!(Instant::now() < deadline, "the comment never reached b");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    must(ca, "DROP TABLE k").await;
    let count = "SELECT count(*) FROM pg_description WHERE description = 'a column'";
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if outcome(cb, count, &[]).await == "0; ok 1" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the drop never took the comment on b"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
