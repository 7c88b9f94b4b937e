//! A statement that materializes more rows than `statement_memory_limit`
//! fails with 53200; the session and the server go on.

mod common;

use common::TestServer;
use std::time::Duration;

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
