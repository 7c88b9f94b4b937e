//! A simple Query message with several statements runs as one implicit
//! transaction, DDL included, exactly as PostgreSQL 15: each message below is
//! sent to a scratch PostgreSQL and to Walden through tokio-postgres's
//! `simple_query` and through `psql -c`, and the outcome (results or
//! SQLSTATE, the session's state afterwards) and the tables afterwards must
//! be the same. Then Walden-only checks: T-SQL transaction statements in a
//! message, and a DDL-containing message on a delayed-durable database
//! surviving a kill right after its acknowledgement.

use crate::pg_diff;
use crate::server_support;

use pg_diff::schedule::summary;
use pg_diff::{connect, runtime as rt};
use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::time::Duration;
use tokio_postgres::Client;
use walden_bench::workbench::pg_peer::ScratchPostgres;

/// Rows and command completions, or the SQLSTATE.
async fn outcome(c: &Client, sql: &str) -> String {
    summary(&c.simple_query(sql).await)
}

struct Case {
    setup: &'static str,
    message: &'static str,
    checks: &'static [&'static str],
}

const SETUP: &str = "CREATE TABLE t (id int PRIMARY KEY, v int); \
                     INSERT INTO t VALUES (1, 10), (2, 20); \
                     CREATE TABLE u (id int PRIMARY KEY); INSERT INTO u VALUES (1)";
const RELS: &str =
    "SELECT relname FROM pg_class WHERE relname IN ('t', 'u', 'n', 'm', 'n_a', 's') \
                    ORDER BY relname";
const T: &str = "SELECT * FROM t ORDER BY id";

fn cases() -> Vec<Case> {
    vec![
        // DDL with DML, an error at the end: nothing is left.
        Case {
            setup: SETUP,
            message: "CREATE TABLE n (a int); INSERT INTO n VALUES (1); SELECT 1/0",
            checks: &[RELS],
        },
        Case {
            setup: SETUP,
            message: "CREATE TABLE n (a int PRIMARY KEY); INSERT INTO n VALUES (1), (2); \
                      ALTER TABLE n ADD COLUMN b int DEFAULT 5; UPDATE n SET b = a * 10 WHERE a = 2; \
                      SELECT * FROM n ORDER BY a",
            checks: &[RELS, "SELECT * FROM n ORDER BY a"],
        },
        Case {
            setup: SETUP,
            message: "INSERT INTO t VALUES (3, 30); TRUNCATE t; INSERT INTO t VALUES (4, 40); \
                      DROP TABLE u; SELECT count(*) FROM t; SELECT 1/0",
            checks: &[RELS, T, "SELECT * FROM u"],
        },
        Case {
            setup: SETUP,
            message: "UPDATE t SET v = 11 WHERE id = 1; ALTER TABLE t ADD CONSTRAINT t_v_key UNIQUE (v); \
                      INSERT INTO t VALUES (5, 11)",
            checks: &[T, "SELECT conname FROM pg_constraint WHERE conrelid = 't'::regclass ORDER BY 1"],
        },
        Case {
            setup: SETUP,
            message: "UPDATE t SET v = 11 WHERE id = 1; ALTER TABLE t ADD CONSTRAINT t_v_key UNIQUE (v); \
                      INSERT INTO t VALUES (5, 50)",
            checks: &[T, "SELECT conname FROM pg_constraint WHERE conrelid = 't'::regclass ORDER BY 1"],
        },
        Case {
            setup: SETUP,
            message: "CREATE TABLE n (a int); INSERT INTO n VALUES (1); CREATE UNIQUE INDEX n_a ON n (a); \
                      INSERT INTO n VALUES (1)",
            checks: &[RELS],
        },
        Case {
            setup: SETUP,
            message: "CREATE SEQUENCE s; SELECT nextval('s'); SELECT 1/0",
            checks: &[RELS],
        },
        // BEGIN in the message: what came before joins the block; COMMIT
        // ends it; what follows is another implicit transaction.
        Case {
            setup: SETUP,
            message: "CREATE TABLE n (a int); BEGIN; INSERT INTO n VALUES (1); COMMIT; \
                      CREATE TABLE m (a int); SELECT 1/0",
            checks: &[RELS, "SELECT * FROM n"],
        },
        Case {
            setup: SETUP,
            message: "CREATE TABLE n (a int); INSERT INTO n VALUES (1); COMMIT; DROP TABLE n; SELECT 1/0",
            checks: &[RELS, "SELECT * FROM n"],
        },
        Case {
            setup: SETUP,
            message: "CREATE TABLE n (a int); ROLLBACK; CREATE TABLE m (a int)",
            checks: &[RELS],
        },
        Case {
            setup: SETUP,
            message: "DELETE FROM t WHERE id = 1; BEGIN; CREATE TABLE n (a int); SELECT 1/0",
            checks: &[RELS, T],
        },
        Case {
            setup: SETUP,
            message: "INSERT INTO t VALUES (3, 30); BEGIN; DROP TABLE u; CREATE TABLE n (a int)",
            checks: &[RELS, T],
        },
        // Statements that cannot run in a transaction block (25001), and
        // CHECKPOINT and LOCK TABLE, which can.
        Case {
            setup: SETUP,
            message: "INSERT INTO t VALUES (3, 30); VACUUM",
            checks: &[T],
        },
        Case {
            setup: SETUP,
            message: "VACUUM; SELECT 1",
            checks: &[T],
        },
        Case {
            setup: SETUP,
            message: "CREATE TABLE n (a int); CREATE DATABASE implicit_x",
            checks: &[RELS],
        },
        Case {
            setup: SETUP,
            message: "SELECT 1; DROP DATABASE IF EXISTS implicit_x",
            checks: &[RELS],
        },
        Case {
            setup: SETUP,
            message: "CREATE INDEX CONCURRENTLY n_a ON t (v); SELECT 1",
            checks: &[RELS],
        },
        Case {
            setup: SETUP,
            message: "INSERT INTO t VALUES (3, 30); DISCARD ALL",
            checks: &[T],
        },
        Case {
            setup: SETUP,
            message: "CHECKPOINT; INSERT INTO t VALUES (3, 30); CREATE TABLE n (a int); CHECKPOINT; SELECT 1/0",
            checks: &[RELS, T],
        },
        Case {
            setup: SETUP,
            message: "LOCK TABLE t IN SHARE MODE; SELECT count(*) FROM t; INSERT INTO u VALUES (2)",
            checks: &["SELECT * FROM u ORDER BY id"],
        },
        Case {
            setup: SETUP,
            message: "BEGIN; INSERT INTO t VALUES (3, 30); COMMIT; VACUUM",
            checks: &[T],
        },
    ]
}

/// What a message does over tokio-postgres: its outcome, then what the
/// session says to a plain SELECT (25P02 inside an aborted block), then
/// the checks.
async fn run_client(conn: &str, case: &Case) -> Vec<String> {
    let admin = connect(conn).await;
    reset(&admin, case).await;
    let c = connect(conn).await;
    let mut log = vec![
        format!("message -> {}", outcome(&c, case.message).await),
        format!("then SELECT 1 -> {}", outcome(&c, "SELECT 1").await),
    ];
    c.simple_query("ROLLBACK").await.unwrap();
    for q in case.checks {
        log.push(format!("{q} -> {}", outcome(&admin, q).await));
    }
    log
}

async fn reset(admin: &Client, case: &Case) {
    admin
        .batch_execute("DROP TABLE IF EXISTS t, u, n, m; DROP SEQUENCE IF EXISTS s")
        .await
        .unwrap_or_else(|e| panic!("reset: {e}"));
    admin
        .batch_execute(case.setup)
        .await
        .unwrap_or_else(|e| panic!("setup: {e}"));
}

/// The SQLSTATEs psql reported (VERBOSITY verbose puts them in the message).
fn sqlstates(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("ERROR:  "))
        .map(|l| l.split(':').next().unwrap_or("").to_string())
        .collect()
}

/// What `psql -c message` does: exit status, standard output, SQLSTATEs;
/// then the checks.
async fn run_psql(conn: &str, port: u16, user: &str, db: &str, case: &Case) -> Vec<String> {
    let admin = connect(conn).await;
    reset(&admin, case).await;
    let message = case.message.to_string();
    let (user, db) = (user.to_string(), db.to_string());
    let out = tokio::task::spawn_blocking(move || {
        run_with_deadline(
            std::process::Command::new("psql")
                .args(["-X", "-h", "127.0.0.1", "-p", &port.to_string()])
                .args(["-U", &user, "-d", &db])
                .args(["-v", "VERBOSITY=verbose", "-c", &message]),
            Duration::from_secs(30),
        )
    })
    .await
    .unwrap();
    let mut log = vec![format!(
        "psql exit {:?}, stdout {:?}, errors {:?}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        sqlstates(&String::from_utf8_lossy(&out.stderr))
    )];
    for q in case.checks {
        log.push(format!("{q} -> {}", outcome(&admin, q).await));
    }
    log
}

#[test]
fn multi_statement_messages_match_postgres() {
    if !have("psql", &["--version"]) {
        missing_tool("psql is needed to send multi-statement messages with psql -c");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let pg = match ScratchPostgres::start(tmp.path()) {
        Ok(pg) => pg,
        Err(e) => {
            missing_tool(&format!(
                "PostgreSQL 15 is needed to compare implicit transactions: {e}"
            ));
            return;
        }
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let pg_conn = format!(
        "host=127.0.0.1 port={} user={} dbname=postgres",
        pg.port(),
        ScratchPostgres::USER
    );
    let w_conn = walden.conn_str();
    let mut failures = Vec::new();
    rt().block_on(async {
        tokio::time::timeout(Duration::from_secs(300), async {
            for case in cases() {
                let want = run_client(&pg_conn, &case).await;
                let got = run_client(&w_conn, &case).await;
                if want != got {
                    failures.push(format!(
                        "{} (simple_query):\n  postgres: {want:#?}\n  walden:   {got:#?}",
                        case.message
                    ));
                }
                let want = run_psql(
                    &pg_conn,
                    pg.port(),
                    ScratchPostgres::USER,
                    "postgres",
                    &case,
                )
                .await;
                let got = run_psql(&w_conn, walden.port, "walden", "walden", &case).await;
                if want != got {
                    failures.push(format!(
                        "{} (psql -c):\n  postgres: {want:#?}\n  walden:   {got:#?}",
                        case.message
                    ));
                }
            }
        })
        .await
        .expect("the messages finished in time");
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn tsql_transaction_statements_in_a_message() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    rt().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(SETUP).await.unwrap();
            // COMMIT TRAN ends the block that BEGIN TRAN made explicit; the
            // rest is an implicit transaction the error undoes.
            assert_eq!(
                outcome(
                    &c,
                    "INSERT INTO t VALUES (3, 30); BEGIN TRAN; CREATE TABLE n (a int); \
                     INSERT INTO n VALUES (1); COMMIT TRAN; CREATE TABLE m (a int); \
                     INSERT INTO u VALUES (2); SELECT 1/0"
                )
                .await,
                "ERROR 22012"
            );
            assert_eq!(outcome(&c, "SELECT * FROM n").await, "rows 1");
            assert_eq!(outcome(&c, "SELECT count(*) FROM t").await, "rows 3");
            assert_eq!(outcome(&c, "SELECT count(*) FROM u").await, "rows 1");
            assert_eq!(outcome(&c, "SELECT * FROM m").await, "ERROR 42P01");
            // SAVE TRAN / ROLLBACK TRAN to it inside the explicit block.
            assert_eq!(
                outcome(
                    &c,
                    "BEGIN TRAN; DROP TABLE n; SAVE TRAN a; DROP TABLE t; ROLLBACK TRAN a; \
                     COMMIT TRAN; SELECT count(*) FROM t"
                )
                .await,
                "ok 0; ok 0; ok 0; ok 0; ok 0; ok 0; rows 3"
            );
            assert_eq!(outcome(&c, "SELECT * FROM n").await, "ERROR 42P01");
            // Database-level T-SQL statements refuse a block.
            assert_eq!(
                outcome(
                    &c,
                    "SELECT 1; ALTER DATABASE current SET DELAYED_DURABILITY = ALLOWED"
                )
                .await,
                "ERROR 25001"
            );
            assert_eq!(
                outcome(
                    &c,
                    "INSERT INTO u VALUES (3); BACKUP DATABASE walden TO DISK = 'x.bak'"
                )
                .await,
                "ERROR 25001"
            );
            assert_eq!(outcome(&c, "SELECT count(*) FROM u").await, "rows 1");
        })
        .await
        .expect("timed out")
    });
}

#[test]
fn a_message_with_ddl_is_durable_on_a_delayed_durable_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let mut walden = Serve::start(&dir, &[]);
    rt().block_on(async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute("ALTER DATABASE current SET DELAYED_DURABILITY = FORCED")
            .await
            .unwrap();
        // Acknowledged, then killed at once: the DDL-containing implicit
        // transaction was hardened before its acknowledgement.
        c.simple_query(
            "CREATE TABLE n (a int PRIMARY KEY, b text); INSERT INTO n VALUES (1, 'x'), (2, 'y'); \
             CREATE UNIQUE INDEX n_b ON n (b); UPDATE n SET b = 'z' WHERE a = 2; \
             ALTER TABLE n ADD COLUMN c int DEFAULT 3; INSERT INTO n VALUES (3, 'w', 4)",
        )
        .await
        .unwrap();
    });
    walden.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let walden = Serve::start(&dir, &[]);
    rt().block_on(async {
        let c = connect(&walden.conn_str()).await;
        assert_eq!(
            outcome(&c, "SELECT * FROM n ORDER BY a").await,
            "rows 1,x,3 2,z,3 3,w,4"
        );
        assert_eq!(
            outcome(&c, "INSERT INTO n VALUES (4, 'x')").await,
            "ERROR 23505"
        );
    });
}
