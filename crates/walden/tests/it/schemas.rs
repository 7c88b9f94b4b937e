//! Schemas (CREATE / DROP / ALTER SCHEMA) through the server, against a
//! scratch PostgreSQL 15 with the same SQL: tables, indexes, sequences,
//! views and enum types in schemas, the same name in two schemas,
//! qualified names in DDL, DML, joins and foreign keys, `search_path`
//! resolution and `current_schema()`, DROP ... CASCADE, rollback of
//! CREATE SCHEMA, and the catalogs; then a restart after a kill (from the
//! log) and after a checkpoint (from the image).

use crate::pg_diff;
use crate::repl_support;
use crate::server_support;

use pg_diff::{assert_same, connect, outcome, run_script, runtime, Field, Peers};
use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::process::Command;
use std::time::{Duration, Instant};

const SCRIPT: &[&str] = &[
    "CREATE SCHEMA s1",
    "CREATE SCHEMA s1",
    "CREATE SCHEMA IF NOT EXISTS s1",
    "CREATE SCHEMA s2",
    "CREATE SCHEMA pg_mine",
    "CREATE TABLE s1.t (id int PRIMARY KEY, v text)",
    "CREATE TABLE s2.t (id int PRIMARY KEY, w int)",
    "CREATE TABLE t (id int, z text)",
    "CREATE TABLE nosuch.t (a int)",
    "INSERT INTO s1.t VALUES (1, 'one'), (2, 'two')",
    "INSERT INTO s2.t VALUES (1, 10), (3, 30)",
    "INSERT INTO t VALUES (1, 'public')",
    "SELECT * FROM s1.t ORDER BY id",
    "SELECT * FROM s2.t ORDER BY id",
    "SELECT * FROM t",
    "SELECT a.id, a.v, b.w FROM s1.t a JOIN s2.t b ON a.id = b.id",
    "SELECT t.v FROM s1.t WHERE t.id = 2",
    "UPDATE s2.t SET w = w + 1 WHERE id = 3",
    "DELETE FROM s1.t WHERE id = 2",
    "SELECT * FROM s1.t ORDER BY id",
    "SELECT * FROM s2.t ORDER BY id",
    "SELECT * FROM nosuch.t",
    "SELECT current_schema()",
    "SHOW search_path",
    "SET search_path TO s1, public",
    "SHOW search_path",
    "SELECT current_schema(), current_schemas(false)",
    "SELECT * FROM t ORDER BY id",
    "INSERT INTO t VALUES (5, 'five')",
    "SELECT * FROM s1.t ORDER BY id",
    "CREATE TABLE only1 (a int)",
    "SELECT schemaname, tablename FROM pg_tables WHERE tablename = 'only1'",
    "SET search_path TO s2, s1, public",
    "SELECT * FROM t ORDER BY id",
    "SELECT * FROM only1",
    "SET search_path TO nosuch",
    "SELECT current_schema()",
    "CREATE TABLE nowhere (a int)",
    "SET search_path TO public",
    "SELECT * FROM only1",
    "SELECT * FROM s1.only1",
    "CREATE INDEX t_v ON s1.t (v)",
    "SELECT schemaname, tablename, indexname FROM pg_indexes WHERE indexname = 't_v'",
    "CREATE SEQUENCE s1.seq",
    "SELECT nextval('s1.seq'), nextval('s1.seq')",
    "CREATE TABLE s1.c (id int REFERENCES s1.t (id), n serial)",
    "INSERT INTO s1.c (id) VALUES (1)",
    "INSERT INTO s1.c (id) VALUES (9)",
    "SELECT * FROM s1.c",
    "CREATE VIEW s2.v AS SELECT id, w FROM s2.t",
    "SELECT * FROM s2.v ORDER BY id",
    "CREATE TYPE s1.mood AS ENUM ('sad', 'happy')",
    "CREATE TABLE s1.m (x s1.mood)",
    "INSERT INTO s1.m VALUES ('happy')",
    "SELECT x FROM s1.m",
    "ALTER TABLE s1.t ADD COLUMN extra int",
    "SELECT * FROM s1.t ORDER BY id",
    "TRUNCATE s2.t",
    "SELECT count(*) FROM s2.t",
    "SELECT nspname FROM pg_namespace WHERE nspname IN ('s1', 's2', 'public') ORDER BY 1",
    "SELECT c.relname, n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
     WHERE c.relname = 't' ORDER BY n.nspname",
    "SELECT table_schema, table_name FROM information_schema.tables \
     WHERE table_name IN ('t', 'c') AND table_type = 'BASE TABLE' ORDER BY 1, 2",
    "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 's_' ORDER BY 1",
    "DROP SCHEMA s2",
    "DROP SCHEMA s2 CASCADE",
    "SELECT * FROM s2.t",
    "DROP SCHEMA IF EXISTS s2, s3",
    "DROP SCHEMA s3",
    "BEGIN",
    "CREATE SCHEMA r",
    "CREATE TABLE r.x (a int)",
    "INSERT INTO r.x VALUES (1)",
    "SELECT * FROM r.x",
    "ROLLBACK",
    "SELECT * FROM r.x",
    "SELECT nspname FROM pg_namespace WHERE nspname = 'r'",
    "CREATE SCHEMA e",
    "ALTER SCHEMA e RENAME TO e2",
    "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'e%' ORDER BY 1",
    "DROP SCHEMA e2",
    "DROP TABLE s1.c",
    "DROP TABLE s1.t",
    "SELECT * FROM s1.t",
    "SELECT * FROM t ORDER BY id",
];

#[test]
fn schemas_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare schemas") else {
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

fn psql(conn: &str, commands: &[&str]) -> String {
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-v", "ON_ERROR_STOP=1", "-d", conn])
        .env("PGCONNECT_TIMEOUT", "10");
    for c in commands {
        cmd.args(["-c", c]);
    }
    let out = run_with_deadline(&mut cmd, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "psql {commands:?} against {conn}:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// psql 15's `\dn` and `\dt` of a schema's tables read the same from both.
#[test]
fn psql_lists_schemas_as_postgres() {
    if !have("psql", &["--version"]) {
        missing_tool("psql is needed to compare \\dn");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare psql's \\dn") else {
        return;
    };
    psql(
        &peers.pg_conn(),
        &[
            "CREATE ROLE walden SUPERUSER LOGIN",
            "CREATE DATABASE walden OWNER walden TEMPLATE template0",
        ],
    );
    let pg = format!(
        "host=127.0.0.1 port={} user=walden dbname=walden",
        peers.pg.port()
    );
    let walden = peers.walden_conn();
    let setup = "CREATE SCHEMA sales; CREATE SCHEMA hr; \
         CREATE TABLE sales.orders (id int PRIMARY KEY); CREATE TABLE hr.people (id int); \
         CREATE TABLE hr.orders (n text)";
    psql(&pg, &[setup]);
    psql(&walden, &[setup]);
    let mut differences = Vec::new();
    for c in ["\\dn", "\\dt sales.*", "\\dt hr.*", "\\dt *.orders"] {
        let want = psql(&pg, &[c]);
        let got = psql(&walden, &[c]);
        if want != got {
            differences.push(format!("{c}\n--- postgres:\n{want}--- walden:\n{got}"));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    let listed = psql(&walden, &["\\dn", "\\dt hr.*"]);
    for needle in ["sales", "hr", "people"] {
        assert!(listed.contains(needle), "no {needle} in\n{listed}");
    }
}

/// SQL Server's view of them: `sys.schemas`, `SCHEMA_NAME()`, `dbo` as
/// `public`, and `CREATE SCHEMA` / `schema.table` in T-SQL batches.
#[test]
fn tsql_sees_schemas() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for s in [
                "CREATE SCHEMA sales",
                "CREATE TABLE sales.orders (id int PRIMARY KEY, amount int)",
                "CREATE TABLE dbo.orders (id int)",
                "INSERT INTO sales.orders VALUES (1, 10)",
                "INSERT INTO dbo.orders VALUES (2)",
            ] {
                c.simple_query(s).await.unwrap();
            }
            let cases = [
                ("SELECT id, amount FROM sales.orders", "1|10; ok 1"),
                ("SELECT id FROM dbo.orders", "2; ok 1"),
                ("SELECT id FROM public.orders", "2; ok 1"),
                ("SELECT SCHEMA_NAME()", "dbo; ok 1"),
                (
                    "SELECT name, SCHEMA_NAME(schema_id) FROM sys.schemas WHERE name IN ('sales', 'dbo') \
                     ORDER BY name",
                    "dbo|dbo; sales|sales; ok 2",
                ),
                ("SELECT SCHEMA_NAME(9999999)", "NULL; ok 1"),
            ];
            for (sql, want) in cases {
                assert_eq!(outcome(&c, sql, &[]).await, want, "{sql}");
            }
        })
        .await
        .expect("timed out")
    });
}

#[test]
fn schemas_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    runtime().block_on(async {
        let c = connect(&walden.conn_str()).await;
        for s in [
            "CREATE SCHEMA kept",
            "CREATE TABLE kept.t (a int PRIMARY KEY)",
            "CREATE TABLE t (a int)",
            "INSERT INTO kept.t VALUES (1), (2)",
            "INSERT INTO t VALUES (7)",
            "CREATE SCHEMA gone",
            "DROP SCHEMA gone",
        ] {
            c.simple_query(s).await.unwrap();
        }
    });
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(&c, "SELECT a FROM kept.t ORDER BY a", &[]).await,
            "1; 2; ok 2"
        );
        assert_eq!(outcome(&c, "SELECT a FROM t", &[]).await, "7; ok 1");
        assert_eq!(
            outcome(
                &c,
                "SELECT nspname FROM pg_namespace WHERE nspname IN ('kept', 'gone')",
                &[]
            )
            .await,
            "kept; ok 1"
        );
    };
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}

/// A schema and its table made on the primary reach a readable secondary
/// (they are in the logged catalog change), qualified names resolve there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_reaches_the_secondary() {
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
    must(ca, "CREATE SCHEMA sales").await;
    must(ca, "CREATE TABLE sales.k (id int PRIMARY KEY, v int)").await;
    must(ca, "CREATE TABLE k (id int)").await;
    must(ca, "INSERT INTO sales.k VALUES (1, 5), (2, 7)").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(r) = cb
            .simple_query(
                "SELECT n.nspname, count(*) FROM sales.k, pg_namespace n \
                 WHERE n.nspname = 'sales' GROUP BY n.nspname",
            )
            .await
        {
            let rows: Vec<String> = r
                .iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        Some(format!("{}|{}", r.get(0).unwrap(), r.get(1).unwrap()))
                    }
                    _ => None,
                })
                .collect();
            if rows == vec!["sales|2".to_string()] {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the schema never reached b");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
