//! A statement that materializes more rows than `statement_memory_limit`
//! fails with 53200; the session and the server go on.

use crate::common;

use common::TestServer;
use std::time::Duration;

/// Runs `insert` (`INSERT ... SELECT` over `g`) for `g` in 1..=chunks*per,
/// one statement of `per` rows at a time (each under the statement limit).
async fn insert_series(c: &tokio_postgres::Client, insert: &str, chunks: i64, per: i64) {
    for k in 0..chunks {
        let (lo, hi) = (k * per + 1, k * per + per);
        c.batch_execute(&format!("{insert} FROM generate_series({lo}, {hi}) g"))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_series_and_cross_join_are_refused_with_53200() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| c.statement_memory_limit = 64 << 20);
    let c = s.client().await;
    for sql in [
        "SELECT count(*) FROM generate_series(1, 10000000000)",
        "SELECT count(*) FROM generate_series(1, 3000) a, generate_series(1, 3000) b",
    ] {
        let e = tokio::time::timeout(Duration::from_secs(60), c.query(sql, &[]))
            .await
            .expect("refused within 60 s")
            .unwrap_err();
        let db = e.as_db_error().expect("a server error");
        assert_eq!(db.code().code(), "53200", "{sql}: {db:?}");
        assert!(db.message().contains("statement_memory_limit"), "{db:?}");
    }
    // Under the limit the same shapes work, on the same connection.
    let n: i64 = c
        .query_one("SELECT count(*) FROM generate_series(1, 100000)", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 100_000);
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM generate_series(1, 300) a, generate_series(1, 300) b",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 90_000);
}

/// `ALTER TABLE ... TYPE` holds every row of the table while it rewrites
/// them: past the statement's limit it fails with 53200 before it has read
/// them all, and the table is left as it was.
#[tokio::test(flavor = "multi_thread")]
async fn a_rewrite_of_more_rows_than_the_limit_is_refused_with_53200() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| c.statement_memory_limit = 4 << 20);
    let c = s.client().await;
    c.batch_execute("CREATE TABLE big (id int PRIMARY KEY, v int); CREATE TABLE small (v int)")
        .await
        .unwrap();
    insert_series(&c, "INSERT INTO big SELECT g, g", 4, 25_000).await;
    c.batch_execute("INSERT INTO small SELECT g FROM generate_series(1, 1000) g")
        .await
        .unwrap();
    let e = tokio::time::timeout(
        Duration::from_secs(60),
        c.batch_execute("ALTER TABLE big ALTER COLUMN v TYPE bigint"),
    )
    .await
    .expect("refused within 60 s")
    .unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code().code(), "53200", "{db:?}");
    assert!(db.message().contains("statement_memory_limit"), "{db:?}");
    let ty = "SELECT data_type FROM information_schema.columns WHERE table_name = $1 AND column_name = 'v'";
    let t: String = c.query_one(ty, &[&"big"]).await.unwrap().get(0);
    assert_eq!(t, "integer");
    let n: i64 = c
        .query_one("SELECT sum(v) FROM big", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 100_000 * 100_001 / 2);
    // A table that fits is rewritten, on the same connection.
    c.batch_execute("ALTER TABLE small ALTER COLUMN v TYPE bigint")
        .await
        .unwrap();
    let t: String = c.query_one(ty, &[&"small"]).await.unwrap().get(0);
    assert_eq!(t, "bigint");
}

/// Checking the rows against a new definition (NOT NULL, CHECK, a new
/// primary key) streams them and holds none: `ADD PRIMARY KEY` over more
/// rows than the statement's limit could hold succeeds (the re-keyed table
/// is the engine's build, under the transaction's limit), as do SET NOT
/// NULL and ADD CHECK; their violations are still found, a new key's
/// duplicates reported before its nulls, as PostgreSQL does.
#[tokio::test(flavor = "multi_thread")]
async fn validating_a_new_definition_holds_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| c.statement_memory_limit = 4 << 20);
    let c = s.client().await;
    c.batch_execute("CREATE TABLE big (id int, v int, w int)")
        .await
        .unwrap();
    insert_series(&c, "INSERT INTO big SELECT g, g, g", 10, 10_000).await;
    let timed = |sql: &'static str| {
        let c = &c;
        async move {
            tokio::time::timeout(Duration::from_secs(60), c.batch_execute(sql))
                .await
                .expect("answered within 60 s")
        }
    };
    timed("ALTER TABLE big ALTER COLUMN v SET NOT NULL")
        .await
        .unwrap();
    timed("ALTER TABLE big ADD CONSTRAINT w_positive CHECK (w > 0)")
        .await
        .unwrap();
    timed("ALTER TABLE big ADD PRIMARY KEY (id)").await.unwrap();
    let n: i64 = c
        .query_one("SELECT count(*) FROM big WHERE id BETWEEN 500 AND 599", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 100);
    // Violations are found in the stream.
    let code = |e: tokio_postgres::Error| {
        let db = e.as_db_error().expect("a server error").clone();
        (db.code().code().to_string(), db.message().to_string())
    };
    c.batch_execute(
        "CREATE TABLE t (a int, b int); INSERT INTO t VALUES (1, 1), (1, NULL), (NULL, 2)",
    )
    .await
    .unwrap();
    let (sqlstate, msg) = code(
        timed("ALTER TABLE t ADD PRIMARY KEY (a)")
            .await
            .unwrap_err(),
    );
    assert_eq!(sqlstate, "23505", "{msg}");
    let (sqlstate, msg) = code(
        timed("ALTER TABLE t ALTER COLUMN b SET NOT NULL")
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (sqlstate.as_str(), msg.as_str()),
        (
            "23502",
            "column \"b\" of relation \"t\" contains null values"
        )
    );
    let (sqlstate, msg) = code(
        timed("ALTER TABLE t ADD CONSTRAINT b_big CHECK (b > 1)")
            .await
            .unwrap_err(),
    );
    assert_eq!(sqlstate, "23514", "{msg}");
    c.batch_execute("DELETE FROM t WHERE b = 1").await.unwrap();
    let (sqlstate, msg) = code(
        timed("ALTER TABLE t ADD PRIMARY KEY (a)")
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (sqlstate.as_str(), msg.as_str()),
        (
            "23502",
            "column \"a\" of relation \"t\" contains null values"
        )
    );
}
