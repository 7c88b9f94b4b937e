//! CHECK constraints through the server, statement by statement against a
//! scratch PostgreSQL 15 with the same SQL (outcome, SQLSTATE, message,
//! detail and the constraint and table fields drivers read), then across
//! restarts: after a kill (redo from the log) and after a checkpoint (the
//! image), the constraints are still there and still enforced.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, outcome, run_script, runtime, Field, Peers};
use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::time::Duration;

/// The error fields compared besides SQLSTATE and message.
const FIELDS: &[Field] = &[Field::Detail, Field::Table, Field::Constraint];

const SCRIPT: &[&str] = &[
    "CREATE TABLE t (id int PRIMARY KEY, n int CHECK (n > 0), m int, \
     CONSTRAINT m_small CHECK (m < 100), CHECK (n < m), CHECK (id BETWEEN 1 AND 1000))",
    "INSERT INTO t VALUES (1, 5, 10)",
    "INSERT INTO t VALUES (2, -5, 10)",
    // NULL passes.
    "INSERT INTO t VALUES (3, NULL, 10)",
    "INSERT INTO t VALUES (4, 50, 10)",
    "INSERT INTO t VALUES (5, 5, 200)",
    "INSERT INTO t VALUES (1001, 5, 10)",
    // Several violated: the first by name is reported.
    "INSERT INTO t VALUES (6, -1, 500)",
    "UPDATE t SET n = 0 WHERE id = 1",
    "UPDATE t SET m = 20 WHERE id = 1",
    "INSERT INTO t SELECT 7, 1, 2 UNION ALL SELECT 8, 3, 2",
    "SELECT * FROM t ORDER BY id",
    "SELECT conname, contype, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true) \
     FROM pg_constraint WHERE conrelid = 't'::regclass ORDER BY conname",
    "SELECT relchecks FROM pg_class WHERE relname = 't'",
    "SELECT conname, conkey, pg_get_expr(conbin, conrelid) IS NOT NULL FROM pg_constraint \
     WHERE conrelid = 't'::regclass ORDER BY conname",
    // Default names avoid names in use.
    "CREATE TABLE u (a int CHECK (a > 0), b int, CHECK (a <> b), CHECK (a + b > 0), \
     CONSTRAINT u_b_check CHECK (b > 0))",
    "SELECT conname FROM pg_constraint WHERE conrelid = 'u'::regclass ORDER BY conname",
    "INSERT INTO u VALUES (1, -1)",
    // What CREATE TABLE refuses.
    "CREATE TABLE bad (a int CHECK (a))",
    "CREATE TABLE bad (a int CHECK ((SELECT 1) > 0))",
    "CREATE TABLE bad (a int CHECK (count(*) > 0))",
    "CREATE TABLE bad (a int CHECK (zz > 0))",
    "CREATE TABLE bad (a int CONSTRAINT c CHECK (a > 0), b int CONSTRAINT c CHECK (b > 0))",
    // A check over text and a function.
    "CREATE TABLE s (code text CHECK (length(code) = 3 AND code = upper(code)))",
    "INSERT INTO s VALUES ('ABC')",
    "INSERT INTO s VALUES ('abc')",
    "INSERT INTO s VALUES ('ABCD')",
    // In a transaction block the error aborts it, as any error does.
    "BEGIN",
    "INSERT INTO s VALUES ('XYZ')",
    "INSERT INTO s VALUES ('x')",
    "COMMIT",
    "SELECT * FROM s ORDER BY code",
];

#[test]
fn check_constraints_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare CHECK constraints") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, FIELDS).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, FIELDS).await;
        assert_same(&want, &got);
    });
}

#[test]
fn check_constraints_survive_restarts_and_copy() {
    if !have("psql", &["--version"]) {
        missing_tool("psql is needed for COPY FROM STDIN");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let mut walden = Serve::start(&dir, &[]);
    let enforced = |conn: String| async move {
        let c = connect(&conn).await;
        let e = c
            .simple_query("INSERT INTO k VALUES (100, -1)")
            .await
            .unwrap_err();
        let d = e.as_db_error().expect("a server error");
        assert_eq!(d.code().code(), "23514");
        assert_eq!(d.constraint(), Some("k_v_check"));
        assert_eq!(d.table(), Some("k"));
        let defs = outcome(
            &c,
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint \
             WHERE contype = 'c' ORDER BY 1",
            FIELDS,
        )
        .await;
        assert_eq!(defs, "k_v_check|CHECK ((v > 0)); ok 1");
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.simple_query("CREATE TABLE k (id int PRIMARY KEY, v int CHECK (v > 0))")
                .await
                .unwrap();
            // COPY FROM checks each row; a failing row fails the COPY.
            let (ok, out) = psql_copy(&walden, &tmp.path().join("bad.sql"), "1\t5\n2\t-3\n");
            assert!(
                !ok && out.contains("violates check constraint \"k_v_check\""),
                "{out}"
            );
            let (ok, out) = psql_copy(&walden, &tmp.path().join("good.sql"), "1\t5\n2\t3\n");
            assert!(ok, "{out}");
            assert_eq!(
                outcome(&c, "SELECT count(*) FROM k", FIELDS).await,
                "2; ok 1"
            );
        })
        .await
        .expect("timed out")
    });
    // Killed: the definition comes back from the log.
    walden.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let mut walden = Serve::start(&dir, &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), enforced(walden.conn_str()))
            .await
            .expect("timed out")
    });
    // Checkpointed, then stopped: it comes back from the image.
    runtime().block_on(async {
        let c = connect(&walden.conn_str()).await;
        c.simple_query("CHECKPOINT").await.unwrap();
    });
    walden.signal_and_wait(libc::SIGTERM, Duration::from_secs(20));
    let walden = Serve::start(&dir, &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), enforced(walden.conn_str()))
            .await
            .expect("timed out")
    });
}

/// Runs `COPY k FROM STDIN` with `rows` through psql (the data inline in
/// a script file); returns whether psql succeeded and its output.
fn psql_copy(s: &Serve, script: &std::path::Path, rows: &str) -> (bool, String) {
    std::fs::write(script, format!("COPY k FROM STDIN;\n{rows}\\.\n")).unwrap();
    let out = run_with_deadline(
        std::process::Command::new("psql")
            .args(["-X", "-v", "ON_ERROR_STOP=1", "-h", &s.host])
            .args([
                "-p",
                &s.port.to_string(),
                "-U",
                "walden",
                "-d",
                "walden",
                "-f",
            ])
            .arg(script),
        Duration::from_secs(30),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
