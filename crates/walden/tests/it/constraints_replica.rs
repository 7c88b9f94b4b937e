//! CHECK constraints and locking reads on a readable secondary: the
//! constraint reaches the secondary with the table (it is in the logged
//! definition) and shows in its catalogs; a locking read there is refused
//! as a write (25006), as on a PostgreSQL hot standby.

use crate::repl_support;

use repl_support::*;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_constraint_reaches_the_secondary_and_locking_reads_are_refused_there() {
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
    must(
        ca,
        "CREATE TABLE k (id int PRIMARY KEY, v int CONSTRAINT v_pos CHECK (v > 0))",
    )
    .await;
    must(ca, "INSERT INTO k VALUES (1, 5)").await;
    assert_eq!(
        sqlstate(exec(ca, "INSERT INTO k VALUES (2, -5)").await),
        "23514"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = cb
            .simple_query(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'v_pos'",
            )
            .await
            .unwrap();
        let def = r.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        });
        if let Some(d) = def {
            assert_eq!(d, "CHECK ((v > 0))");
            break;
        }
        assert!(Instant::now() < deadline, "the constraint never reached b");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for sql in [
        "SELECT * FROM t WHERE id = 1 FOR UPDATE",
        "SELECT * FROM t FOR KEY SHARE SKIP LOCKED",
        "SELECT * FROM t WITH (UPDLOCK)",
    ] {
        assert_eq!(sqlstate(exec(cb, sql).await), "25006", "{sql} on b");
    }
    // SERIALIZABLE is refused on a secondary (its writes come as redo,
    // outside SSI's tracking), as on a PostgreSQL hot standby.
    assert_eq!(
        sqlstate(exec(cb, "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT 1").await),
        "0A000"
    );
    assert_eq!(sqlstate(exec(cb, "ROLLBACK; SELECT 1").await), "ok");
}
