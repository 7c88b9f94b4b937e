//! Transaction blocks through the server, compared with what PostgreSQL 15
//! does with the same statements: the implicit transaction of a
//! multi-statement simple query, savepoints (PostgreSQL and T-SQL
//! spellings, errors inside them, the row locks they release), transaction
//! modes (isolation levels refused or honoured, READ ONLY), via
//! tokio-postgres and psql.

use crate::common;

use common::{missing_tool, TestServer};
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs a test body against a fresh server, failing it if it hangs.
fn with_server<F, Fut>(f: F)
where
    F: FnOnce(TestServer) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_in(dir.path(), |_| {});
    rt().block_on(async move {
        tokio::time::timeout(Duration::from_secs(60), f(server))
            .await
            .expect("test timed out")
    });
}

/// The SQLSTATE of a simple query's error (panics if it succeeds).
async fn code(c: &Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => e
            .code()
            .map(|c| c.code().to_string())
            .unwrap_or_else(|| panic!("{sql}: {e}")),
    }
}

/// The first column of every row a query returns, as text.
async fn col(c: &Client, sql: &str) -> Vec<String> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("NULL").to_string()),
            _ => None,
        })
        .collect()
}

async fn ids(c: &Client) -> Vec<String> {
    col(c, "SELECT id FROM t ORDER BY id").await
}

async fn setup(c: &Client) {
    c.simple_query("CREATE TABLE t (id int PRIMARY KEY, n int)")
        .await
        .unwrap();
}

#[test]
fn a_multi_statement_query_is_one_implicit_transaction() {
    with_server(|s| async move {
        let c = s.client().await;
        setup(&c).await;
        // An error undoes the whole message (PostgreSQL 15: count 0).
        assert_eq!(
            code(
                &c,
                "INSERT INTO t VALUES (1, 1); INSERT INTO t VALUES (2, 2); SELECT 1/0"
            )
            .await,
            "22012"
        );
        assert!(ids(&c).await.is_empty());
        // COMMIT ends the implicit block; what follows is another one.
        assert_eq!(
            code(
                &c,
                "INSERT INTO t VALUES (3, 3); COMMIT; INSERT INTO t VALUES (4, 4); SELECT 1/0"
            )
            .await,
            "22012"
        );
        assert_eq!(ids(&c).await, ["3"]);
        // BEGIN turns the block explicit, statements before it included: the
        // error leaves it aborted until ROLLBACK.
        assert_eq!(
            code(
                &c,
                "INSERT INTO t VALUES (5, 5); BEGIN; INSERT INTO t VALUES (6, 6); SELECT 1/0"
            )
            .await,
            "22012"
        );
        assert_eq!(code(&c, "SELECT 1").await, "25P02");
        c.simple_query("ROLLBACK").await.unwrap();
        assert_eq!(ids(&c).await, ["3"]);
        assert_eq!(
            code(
                &c,
                "INSERT INTO t VALUES (7, 7); BEGIN; INSERT INTO t VALUES (8, 8); COMMIT; SELECT 1/0"
            )
            .await,
            "22012"
        );
        assert_eq!(ids(&c).await, ["3", "7", "8"]);
        // A successful message commits at its end: another session sees it.
        c.simple_query("INSERT INTO t VALUES (10, 10); UPDATE t SET n = 30 WHERE id = 3")
            .await
            .unwrap();
        let other = s.client().await;
        assert_eq!(ids(&other).await, ["3", "7", "8", "10"]);
        assert_eq!(col(&other, "SELECT n FROM t WHERE id = 3").await, ["30"]);
        // A failed message released its row locks: the other session's
        // update of the row does not wait.
        assert_eq!(
            code(&c, "UPDATE t SET n = 0 WHERE id = 10; SELECT 1/0").await,
            "22012"
        );
        tokio::time::timeout(
            Duration::from_secs(5),
            other.simple_query("UPDATE t SET n = 11 WHERE id = 10"),
        )
        .await
        .expect("the row lock was released")
        .unwrap();
        // SAVEPOINT in an implicit block is an error, and undoes the block.
        assert_eq!(
            code(&c, "INSERT INTO t VALUES (20, 20); SAVEPOINT a; SELECT 1").await,
            "25P01"
        );
        assert!(!ids(&c).await.contains(&"20".to_string()));
    });
}

#[test]
fn savepoints_undo_what_followed_them() {
    with_server(|s| async move {
        let c = s.client().await;
        setup(&c).await;
        c.simple_query("BEGIN").await.unwrap();
        c.simple_query("INSERT INTO t VALUES (1, 1)").await.unwrap();
        c.simple_query("SAVEPOINT a").await.unwrap();
        c.simple_query("INSERT INTO t VALUES (2, 2)").await.unwrap();
        c.simple_query("UPDATE t SET n = 100 WHERE id = 1")
            .await
            .unwrap();
        c.simple_query("ROLLBACK TO SAVEPOINT a").await.unwrap();
        assert_eq!(ids(&c).await, ["1"]);
        assert_eq!(col(&c, "SELECT n FROM t").await, ["1"]);
        // The savepoint stays after ROLLBACK TO and can be used again.
        c.simple_query("DELETE FROM t WHERE id = 1").await.unwrap();
        c.simple_query("ROLLBACK TO a").await.unwrap();
        assert_eq!(ids(&c).await, ["1"]);
        c.simple_query("INSERT INTO t VALUES (3, 3)").await.unwrap();
        c.simple_query("RELEASE SAVEPOINT a").await.unwrap();
        assert_eq!(code(&c, "ROLLBACK TO a").await, "3B001");
        // That error aborted the block, as in PostgreSQL.
        assert_eq!(code(&c, "SELECT 1").await, "25P02");
        c.simple_query("ROLLBACK").await.unwrap();
        assert!(ids(&c).await.is_empty());

        // Duplicate names nest: ROLLBACK TO and RELEASE find the newest.
        c.simple_query("BEGIN; SAVEPOINT a; INSERT INTO t VALUES (1, 1); SAVEPOINT a; INSERT INTO t VALUES (2, 2)")
            .await
            .unwrap();
        c.simple_query("ROLLBACK TO a").await.unwrap();
        assert_eq!(ids(&c).await, ["1"]);
        c.simple_query("RELEASE a").await.unwrap();
        c.simple_query("INSERT INTO t VALUES (3, 3)").await.unwrap();
        c.simple_query("ROLLBACK TO a").await.unwrap();
        assert!(ids(&c).await.is_empty());
        c.simple_query("INSERT INTO t VALUES (4, 4)").await.unwrap();
        c.simple_query("COMMIT").await.unwrap();
        assert_eq!(ids(&s.client().await).await, ["4"]);

        // Released savepoints still roll back with an outer one.
        c.simple_query("BEGIN; SAVEPOINT outer_sp; INSERT INTO t VALUES (5, 5); SAVEPOINT inner_sp; UPDATE t SET n = 44 WHERE id = 4; RELEASE inner_sp")
            .await
            .unwrap();
        c.simple_query("ROLLBACK TO outer_sp; COMMIT")
            .await
            .unwrap();
        assert_eq!(ids(&c).await, ["4"]);
        assert_eq!(col(&c, "SELECT n FROM t").await, ["4"]);

        // Outside a block (PostgreSQL: 25P01).
        assert_eq!(code(&c, "SAVEPOINT a").await, "25P01");
        assert_eq!(code(&c, "ROLLBACK TO SAVEPOINT a").await, "25P01");
        assert_eq!(code(&c, "RELEASE SAVEPOINT a").await, "25P01");
        // Quoted names keep their case (psycopg's "_pg3_1").
        c.simple_query("BEGIN; SAVEPOINT \"_pg3_1\"; INSERT INTO t VALUES (6, 6); ROLLBACK TO SAVEPOINT \"_pg3_1\"; RELEASE \"_pg3_1\"; COMMIT")
            .await
            .unwrap();
        assert_eq!(ids(&c).await, ["4"]);
    });
}

#[test]
fn an_error_inside_a_savepoint_leaves_the_transaction_usable_after_rollback_to() {
    with_server(|s| async move {
        let c = s.client().await;
        setup(&c).await;
        c.simple_query(
            "BEGIN; INSERT INTO t VALUES (1, 1); SAVEPOINT s; INSERT INTO t VALUES (2, 2)",
        )
        .await
        .unwrap();
        assert_eq!(code(&c, "INSERT INTO t VALUES (1, 1)").await, "23505");
        assert_eq!(code(&c, "SELECT 1").await, "25P02");
        assert_eq!(code(&c, "RELEASE s").await, "25P02");
        assert_eq!(code(&c, "SAVEPOINT t").await, "25P02");
        c.simple_query("ROLLBACK TO s").await.unwrap();
        c.simple_query("INSERT INTO t VALUES (3, 3); COMMIT")
            .await
            .unwrap();
        assert_eq!(ids(&c).await, ["1", "3"]);

        // Without a savepoint the error aborts everything; ROLLBACK TO a
        // name that does not exist keeps it aborted; COMMIT rolls back.
        c.simple_query("BEGIN; INSERT INTO t VALUES (4, 4)")
            .await
            .unwrap();
        assert_eq!(code(&c, "SELECT 1/0").await, "22012");
        assert_eq!(code(&c, "ROLLBACK TO nope").await, "3B001");
        assert_eq!(code(&c, "SELECT 1").await, "25P02");
        let m = c.simple_query("COMMIT").await.unwrap();
        assert!(matches!(&m[0], SimpleQueryMessage::CommandComplete(_)));
        assert_eq!(ids(&c).await, ["1", "3"]);
    });
}

#[test]
fn rollback_to_releases_the_row_locks_taken_after_the_savepoint_only() {
    with_server(|s| async move {
        let a = s.client().await;
        let b = s.client().await;
        setup(&a).await;
        a.simple_query("INSERT INTO t VALUES (1, 1), (2, 2)")
            .await
            .unwrap();
        a.simple_query("BEGIN; UPDATE t SET n = 10 WHERE id = 1; SAVEPOINT s; UPDATE t SET n = 20 WHERE id = 2")
            .await
            .unwrap();
        a.simple_query("ROLLBACK TO SAVEPOINT s").await.unwrap();
        // Row 2 was locked after the savepoint: free again.
        tokio::time::timeout(
            Duration::from_secs(5),
            b.simple_query("UPDATE t SET n = 22 WHERE id = 2"),
        )
        .await
        .expect("row 2's lock was released by ROLLBACK TO")
        .unwrap();
        // Row 1 was locked before it: B waits until A commits.
        let b2 = std::sync::Arc::new(b);
        let bb = b2.clone();
        let waiter =
            tokio::spawn(async move { bb.simple_query("UPDATE t SET n = 11 WHERE id = 1").await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "row 1's lock is kept");
        a.simple_query("COMMIT").await.unwrap();
        waiter.await.unwrap().unwrap();
        assert_eq!(col(&a, "SELECT n FROM t ORDER BY id").await, ["11", "22"]);
    });
}

#[test]
fn tsql_save_and_rollback_transaction() {
    with_server(|s| async move {
        let c = s.client().await;
        setup(&c).await;
        c.simple_query("BEGIN TRAN outer_tx").await.unwrap();
        c.simple_query("INSERT INTO t VALUES (1, 1)").await.unwrap();
        c.simple_query("SAVE TRANSACTION sp1").await.unwrap();
        c.simple_query("INSERT INTO t VALUES (2, 2)").await.unwrap();
        c.simple_query("ROLLBACK TRAN sp1").await.unwrap();
        c.simple_query("SAVE TRAN sp2").await.unwrap();
        c.simple_query("COMMIT TRAN").await.unwrap();
        assert_eq!(ids(&c).await, ["1"]);
        // ROLLBACK TRAN of a name that is not a savepoint: the transaction.
        c.simple_query("BEGIN TRANSACTION named; INSERT INTO t VALUES (3, 3)")
            .await
            .unwrap();
        c.simple_query("ROLLBACK TRANSACTION named").await.unwrap();
        assert_eq!(ids(&c).await, ["1"]);
        // Outside a block, as PostgreSQL: no transaction to chain.
        assert_eq!(code(&c, "ROLLBACK AND CHAIN").await, "25P01");
        assert_eq!(code(&c, "COMMIT AND CHAIN").await, "25P01");
    });
}

#[test]
fn serializable_and_repeatable_read_run_in_every_spelling() {
    with_server(|s| async move {
        let c = s.client().await;
        // SERIALIZABLE in every spelling: the next transaction is one.
        for sql in [
            "BEGIN ISOLATION LEVEL SERIALIZABLE",
            "START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY",
            "BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE; BEGIN",
            "SET default_transaction_isolation = 'serializable'; BEGIN",
            "SELECT set_config('default_transaction_isolation', 'serializable', false); BEGIN",
        ] {
            c.simple_query(sql).await.unwrap();
            assert_eq!(
                col(&c, "SHOW transaction_isolation").await,
                ["serializable"],
                "{sql}"
            );
            c.simple_query("ROLLBACK; SET default_transaction_isolation = 'read committed'")
                .await
                .unwrap();
        }
        // PostgreSQL's DEFERRABLE wait for a safe snapshot is not done.
        assert_eq!(
            code(
                &c,
                "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE"
            )
            .await,
            "0A000"
        );
        assert_eq!(
            col(&c, "SHOW transaction_isolation").await,
            ["read committed"]
        );
        // REPEATABLE READ (and T-SQL's SNAPSHOT, which is the same) run.
        for (sql, shown) in [
            (
                "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ",
                "repeatable read",
            ),
            (
                "BEGIN; SET TRANSACTION ISOLATION LEVEL SNAPSHOT",
                "snapshot",
            ),
            (
                "BEGIN; SET transaction_isolation = 'repeatable read'",
                "repeatable read",
            ),
        ] {
            c.simple_query(sql).await.unwrap();
            assert_eq!(
                col(&c, "SHOW transaction_isolation").await,
                [shown],
                "{sql}"
            );
            c.simple_query("ROLLBACK").await.unwrap();
        }
        c.simple_query(
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        )
        .await
        .unwrap();
        assert_eq!(
            col(&c, "SHOW default_transaction_isolation").await,
            ["repeatable read"]
        );
        c.simple_query("SET default_transaction_isolation TO 'read committed'")
            .await
            .unwrap();
        c.simple_query("BEGIN").await.unwrap();
        for sql in [
            "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
            "SET transaction_isolation = 'serializable'",
        ] {
            c.simple_query(sql).await.unwrap();
            assert_eq!(
                col(&c, "SHOW transaction_isolation").await,
                ["serializable"],
                "{sql}"
            );
            c.simple_query("ROLLBACK; BEGIN").await.unwrap();
        }
        // Read committed and read uncommitted (which is read committed).
        c.simple_query("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
            .await
            .unwrap();
        assert_eq!(
            col(&c, "SHOW transaction_isolation").await,
            ["read uncommitted"]
        );
        assert_eq!(
            col(&c, "SHOW TRANSACTION ISOLATION LEVEL").await,
            ["read uncommitted"]
        );
        c.simple_query("SELECT 1").await.unwrap();
        // The same level again is fine (PostgreSQL too), another is not.
        c.simple_query("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
            .await
            .unwrap();
        assert_eq!(
            code(&c, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED").await,
            "25001",
            "after the first query, as PostgreSQL"
        );
        c.simple_query("ROLLBACK").await.unwrap();
        c.simple_query("START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE")
            .await
            .unwrap();
        assert_eq!(
            col(&c, "SELECT current_setting('transaction_isolation')").await,
            ["read committed"]
        );
        c.simple_query("COMMIT").await.unwrap();
        c.simple_query(
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
        )
        .await
        .unwrap();
        assert_eq!(
            col(&c, "SHOW default_transaction_isolation").await,
            ["read uncommitted"]
        );
        assert_eq!(
            col(&c, "SHOW transaction_isolation").await,
            ["read uncommitted"]
        );
        c.simple_query("SET default_transaction_isolation = 'read committed'")
            .await
            .unwrap();
        assert_eq!(code(&c, "BEGIN ISOLATION LEVEL CHAOS").await, "42601");
    });
}

#[test]
fn read_only_transactions_refuse_writes() {
    with_server(|s| async move {
        let c = s.client().await;
        setup(&c).await;
        c.simple_query("CREATE SEQUENCE sq").await.unwrap();
        c.simple_query("INSERT INTO t VALUES (1, 1)").await.unwrap();
        c.simple_query("START TRANSACTION READ ONLY").await.unwrap();
        assert_eq!(col(&c, "SHOW transaction_read_only").await, ["on"]);
        assert_eq!(ids(&c).await, ["1"]);
        assert_eq!(code(&c, "INSERT INTO t VALUES (2, 2)").await, "25006");
        c.simple_query("ROLLBACK").await.unwrap();
        assert_eq!(col(&c, "SHOW transaction_read_only").await, ["off"]);
        for sql in [
            "UPDATE t SET n = 2",
            "DELETE FROM t",
            "CREATE TABLE u (a int)",
            "DROP TABLE t",
            "TRUNCATE t",
            "SELECT nextval('sq')",
            "CREATE SEQUENCE sq2",
        ] {
            c.simple_query("BEGIN READ ONLY").await.unwrap();
            assert_eq!(code(&c, sql).await, "25006", "{sql}");
            c.simple_query("ROLLBACK").await.unwrap();
        }
        // SET TRANSACTION READ ONLY inside a block.
        c.simple_query("BEGIN; SET TRANSACTION READ ONLY")
            .await
            .unwrap();
        assert_eq!(code(&c, "UPDATE t SET n = 2").await, "25006");
        c.simple_query("ROLLBACK").await.unwrap();
        // The session default, and BEGIN READ WRITE overriding it.
        c.simple_query("SET default_transaction_read_only = on")
            .await
            .unwrap();
        assert_eq!(code(&c, "INSERT INTO t VALUES (3, 3)").await, "25006");
        assert_eq!(code(&c, "CREATE TABLE u (a int)").await, "25006");
        c.simple_query("BEGIN READ WRITE; INSERT INTO t VALUES (3, 3); COMMIT")
            .await
            .unwrap();
        c.simple_query("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
            .await
            .unwrap();
        c.simple_query("INSERT INTO t VALUES (4, 4)").await.unwrap();
        assert_eq!(ids(&c).await, ["1", "3", "4"]);
        // A multi-statement query's implicit transaction can be made read only.
        assert_eq!(
            code(&c, "SET TRANSACTION READ ONLY; INSERT INTO t VALUES (5, 5)").await,
            "25006"
        );
        c.simple_query("INSERT INTO t VALUES (5, 5)").await.unwrap();
    });
}

fn psql() -> Option<std::path::PathBuf> {
    let out = std::process::Command::new("psql").arg("--version").output();
    match out {
        Ok(o) if o.status.success() => Some("psql".into()),
        _ => {
            missing_tool("psql is not installed");
            None
        }
    }
}

fn run_psql(s: &TestServer, args: &[&str], stdin: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = std::process::Command::new("psql")
        .args([
            "-X",
            "-q",
            "-At",
            "-h",
            "127.0.0.1",
            "-U",
            "walden",
            "-d",
            "walden",
        ])
        .arg("-p")
        .arg(s.addr.port().to_string())
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("psql runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn psql_dash_c_and_on_error_rollback() {
    let Some(_) = psql() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let (ok, out) = run_psql(&s, &["-c", "CREATE TABLE t (id int PRIMARY KEY)"], "");
    assert!(ok, "{out}");
    // psql -c sends one Query message: one implicit transaction.
    let (ok, out) = run_psql(
        &s,
        &[
            "-c",
            "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); SELECT 1/0",
        ],
        "",
    );
    assert!(!ok && out.contains("division by zero"), "{out}");
    let (_, out) = run_psql(&s, &["-c", "SELECT count(*) FROM t"], "");
    assert_eq!(out.trim(), "0");
    // ON_ERROR_ROLLBACK wraps each statement in a savepoint.
    let (_, out) = run_psql(
        &s,
        &["-v", "ON_ERROR_ROLLBACK=on"],
        "BEGIN;\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2);\nCOMMIT;\n",
    );
    assert!(out.contains("duplicate key"), "{out}");
    let (_, out) = run_psql(
        &s,
        &["-c", "SELECT string_agg(id::text, ',' ORDER BY id) FROM t"],
        "",
    );
    assert_eq!(out.trim(), "1,2", "{out}");
}

#[test]
fn what_is_not_enforced_yet_is_refused_not_ignored() {
    with_server(|s| async move {
        let c = s.client().await;
        setup(&c).await;
        for sql in [
            // Foreign keys may be deferred; unique constraints not.
            "CREATE TABLE f1 (id int PRIMARY KEY, v int UNIQUE DEFERRABLE)",
            "CREATE TABLE f2 (id int, v int, UNIQUE (v) INITIALLY DEFERRED)",
            // Locking reads over several tables, or nested, are not done yet.
            "SELECT * FROM t a, t b FOR UPDATE",
            "SELECT * FROM t WHERE id IN (SELECT id FROM t FOR UPDATE)",
            "WITH x AS (SELECT * FROM t) SELECT * FROM x FOR UPDATE",
            // SQL Server's HOLDLOCK is serializable for the table.
            "SELECT * FROM t WITH (HOLDLOCK)",
            "SELECT * FROM t WITH (HOLDLOCK, NOWAIT) WHERE id = 1",
        ] {
            assert_eq!(code(&c, sql).await, "0A000", "{sql}");
        }
        // A UNIQUE constraint that is the primary key is enforced by it.
        c.simple_query("CREATE TABLE u4 (id int PRIMARY KEY UNIQUE, v int)")
            .await
            .unwrap();
        c.simple_query("CREATE UNIQUE INDEX u4_id ON u4 (id)")
            .await
            .unwrap();
        assert_eq!(
            code(&c, "INSERT INTO u4 VALUES (1, 1), (1, 2)").await,
            "23505"
        );
        // Read-committed hints read committed rows.
        c.simple_query("SELECT * FROM t WITH (NOLOCK)")
            .await
            .unwrap();
        // NOT NULL is enforced, with the fields drivers read.
        c.simple_query("CREATE TABLE nn (id int PRIMARY KEY, v text NOT NULL)")
            .await
            .unwrap();
        let e = c
            .simple_query("INSERT INTO nn VALUES (1, NULL)")
            .await
            .unwrap_err();
        let db = e.as_db_error().expect("a server error");
        assert_eq!(db.code().code(), "23502");
        assert_eq!(db.table(), Some("nn"));
        assert_eq!(db.column(), Some("v"));
    });
}
