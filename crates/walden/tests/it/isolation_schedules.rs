//! Isolation anomalies as concurrent schedules (after Hermitage's tests for
//! PostgreSQL), run step by step on Walden and on a scratch PostgreSQL 15
//! with the same SQL: each step's outcome (rows, command tag, SQLSTATE, or
//! that it blocked) must be the same on both. Then invariants under load:
//! concurrent increments lose nothing, and a statement never sees half of a
//! transaction that spans two tables.

use crate::isolation_support;
use crate::pg_diff;
use crate::server_support;

use isolation_support::{schedules_match_postgres, Schedule, SETUP};
use pg_diff::schedule::summary;
use pg_diff::{connect, runtime};
use server_support::Serve;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn isolation_schedules_match_postgres() {
    schedules_match_postgres(schedules(), |_| SETUP);
}

fn schedules() -> Vec<Schedule> {
    let rc = "BEGIN ISOLATION LEVEL READ COMMITTED";
    let rr = "BEGIN ISOLATION LEVEL REPEATABLE READ";
    let sr = "BEGIN ISOLATION LEVEL SERIALIZABLE";
    let mut v = Vec::new();
    for (level, begin) in [("rc", rc), ("rr", rr), ("serializable", sr)] {
        let name = |n: &str| -> &'static str { Box::leak(format!("{level} {n}").into_boxed_str()) };
        // G0: dirty write.
        v.push(Schedule {
            name: name("G0 dirty write"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "UPDATE test SET value = 11 WHERE id = 1"),
                (1, "UPDATE test SET value = 12 WHERE id = 1"),
                (0, "UPDATE test SET value = 21 WHERE id = 2"),
                (0, "COMMIT"),
                (1, "UPDATE test SET value = 22 WHERE id = 2"),
                (1, "COMMIT"),
            ],
        });
        // G1a: aborted read.
        v.push(Schedule {
            name: name("G1a aborted read"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "UPDATE test SET value = 101 WHERE id = 1"),
                (1, "SELECT * FROM test ORDER BY id"),
                (0, "ROLLBACK"),
                (1, "SELECT * FROM test ORDER BY id"),
                (1, "COMMIT"),
            ],
        });
        // G1b: intermediate read.
        v.push(Schedule {
            name: name("G1b intermediate read"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "UPDATE test SET value = 101 WHERE id = 1"),
                (1, "SELECT * FROM test ORDER BY id"),
                (0, "UPDATE test SET value = 11 WHERE id = 1"),
                (0, "COMMIT"),
                (1, "SELECT * FROM test ORDER BY id"),
                (1, "COMMIT"),
            ],
        });
        // OTV: observed transaction vanishes.
        v.push(Schedule {
            name: name("OTV observed transaction vanishes"),
            sessions: 3,
            steps: vec![
                (0, begin),
                (1, begin),
                (2, begin),
                (0, "UPDATE test SET value = 11 WHERE id = 1"),
                (0, "UPDATE test SET value = 19 WHERE id = 2"),
                (1, "UPDATE test SET value = 12 WHERE id = 1"),
                (0, "COMMIT"),
                (2, "SELECT * FROM test ORDER BY id"),
                (1, "UPDATE test SET value = 18 WHERE id = 2"),
                (2, "SELECT * FROM test ORDER BY id"),
                (1, "COMMIT"),
                (2, "SELECT * FROM test ORDER BY id"),
                (2, "COMMIT"),
            ],
        });
        // PMP: predicate many preceders.
        v.push(Schedule {
            name: name("PMP predicate many preceders"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "SELECT * FROM test WHERE value = 30"),
                (1, "INSERT INTO test VALUES (3, 30)"),
                (1, "COMMIT"),
                (0, "SELECT * FROM test WHERE value % 3 = 0"),
                (0, "COMMIT"),
            ],
        });
        // PMP on writes: a predicate re-checked on the newest version.
        v.push(Schedule {
            name: name("PMP write predicate"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "UPDATE test SET value = value + 10"),
                (1, "DELETE FROM test WHERE value = 20"),
                (0, "COMMIT"),
                (1, "SELECT * FROM test ORDER BY id"),
                (1, "COMMIT"),
            ],
        });
        // P4: lost update.
        v.push(Schedule {
            name: name("P4 lost update"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "SELECT * FROM test WHERE id = 1"),
                (1, "SELECT * FROM test WHERE id = 1"),
                (0, "UPDATE test SET value = value + 1 WHERE id = 1"),
                (1, "UPDATE test SET value = value + 1 WHERE id = 1"),
                (0, "COMMIT"),
                (1, "COMMIT"),
            ],
        });
        // A row deleted and inserted again under the same key by the
        // transaction a writer waits for: the new row is another row
        // (PostgreSQL's statement, having waited, finds its row deleted).
        v.push(Schedule {
            name: name("delete and re-insert under a waiting DELETE"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (1, "SELECT * FROM test WHERE id = 1"),
                (0, "DELETE FROM test WHERE id = 1"),
                (0, "INSERT INTO test VALUES (1, 100)"),
                (1, "DELETE FROM test WHERE id = 1"),
                (0, "COMMIT"),
                (1, "INSERT INTO test VALUES (1, 200)"),
                (1, "ROLLBACK"),
                (0, "SELECT * FROM test ORDER BY id"),
            ],
        });
        v.push(Schedule {
            name: name("delete and re-insert under a waiting UPDATE"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (1, "SELECT * FROM test WHERE id = 2"),
                (0, "DELETE FROM test WHERE id = 1"),
                (0, "INSERT INTO test VALUES (1, 100)"),
                (0, "UPDATE test SET value = value + 5 WHERE id = 2"),
                (1, "UPDATE test SET value = value + 1 WHERE id IN (1, 2)"),
                (0, "COMMIT"),
                (1, "SELECT * FROM test ORDER BY id"),
                (1, "COMMIT"),
                (0, "SELECT * FROM test ORDER BY id"),
            ],
        });
        // G-single: read skew.
        v.push(Schedule {
            name: name("G-single read skew"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "SELECT * FROM test WHERE id = 1"),
                (1, "SELECT * FROM test WHERE id = 1"),
                (1, "SELECT * FROM test WHERE id = 2"),
                (1, "UPDATE test SET value = 12 WHERE id = 1"),
                (1, "UPDATE test SET value = 18 WHERE id = 2"),
                (1, "COMMIT"),
                (0, "SELECT * FROM test WHERE id = 2"),
                (0, "COMMIT"),
            ],
        });
        // G-single with a write: the second read is a write.
        v.push(Schedule {
            name: name("G-single write 1"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "SELECT * FROM test WHERE id = 1"),
                (1, "SELECT * FROM test ORDER BY id"),
                (1, "UPDATE test SET value = 12 WHERE id = 1"),
                (1, "UPDATE test SET value = 18 WHERE id = 2"),
                (1, "COMMIT"),
                (0, "DELETE FROM test WHERE value = 20"),
                (0, "COMMIT"),
            ],
        });
        // A write to a row another transaction deleted.
        v.push(Schedule {
            name: name("write after concurrent delete"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "SELECT * FROM test ORDER BY id"),
                (1, "DELETE FROM test WHERE id = 2"),
                (1, "COMMIT"),
                (0, "UPDATE test SET value = value + 1 WHERE id = 2"),
                (0, "SELECT * FROM test ORDER BY id"),
                (0, "COMMIT"),
            ],
        });
        // G2-item: write skew (PostgreSQL's REPEATABLE READ allows it too).
        v.push(Schedule {
            name: name("G2-item write skew"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "SELECT * FROM test WHERE id IN (1, 2) ORDER BY id"),
                (1, "SELECT * FROM test WHERE id IN (1, 2) ORDER BY id"),
                (0, "UPDATE test SET value = 11 WHERE id = 1"),
                (1, "UPDATE test SET value = 21 WHERE id = 2"),
                (0, "COMMIT"),
                (1, "COMMIT"),
            ],
        });
        // G2: anti-dependency cycles over a predicate.
        v.push(Schedule {
            name: name("G2 predicate anti-dependency"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "SELECT * FROM test WHERE value % 3 = 0"),
                (1, "SELECT * FROM test WHERE value % 3 = 0"),
                (0, "INSERT INTO test VALUES (3, 30)"),
                (1, "INSERT INTO test VALUES (4, 42)"),
                (0, "COMMIT"),
                (1, "COMMIT"),
            ],
        });
        // G2-item where the first commits before the second writes.
        v.push(Schedule {
            name: name("G2-item write skew, second write after the first commit"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (0, "SELECT * FROM test WHERE id IN (1, 2) ORDER BY id"),
                (1, "SELECT * FROM test WHERE id IN (1, 2) ORDER BY id"),
                (0, "UPDATE test SET value = 11 WHERE id = 1"),
                (0, "COMMIT"),
                (1, "UPDATE test SET value = 21 WHERE id = 2"),
                (1, "COMMIT"),
            ],
        });
    }
    v
}

/// Concurrent read-modify-write increments: under READ COMMITTED the
/// UPDATE re-reads the newest version after its row lock, so none is lost;
/// under REPEATABLE READ conflicts fail with 40001 and are retried.
#[test]
fn concurrent_increments_lose_nothing_at_either_level() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let conn = walden.conn_str();
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let admin = connect(&conn).await;
            admin
                .simple_query("CREATE TABLE ctr (id int PRIMARY KEY, n int); INSERT INTO ctr VALUES (1, 0), (2, 0)")
                .await
                .unwrap();
            let (clients, per) = (4, 100);
            let mut tasks = Vec::new();
            let mut retries = Vec::new();
            for level in ["READ COMMITTED", "REPEATABLE READ"] {
                let id = if level == "READ COMMITTED" { 1 } else { 2 };
                for _ in 0..clients {
                    let c = connect(&conn).await;
                    let retried = Arc::new(std::sync::atomic::AtomicU64::new(0));
                    retries.push((level, retried.clone()));
                    tasks.push(tokio::spawn(async move {
                        for _ in 0..per {
                            loop {
                                let sql = format!(
                                    "BEGIN ISOLATION LEVEL {level}; \
                                     UPDATE ctr SET n = n + 1 WHERE id = {id}; COMMIT"
                                );
                                match c.simple_query(&sql).await {
                                    Ok(_) => break,
                                    Err(e) if e.code().is_some_and(|c| c.code() == "40001") => {
                                        let _ = c.simple_query("ROLLBACK").await;
                                        retried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    }
                                    Err(e) => panic!("{level}: {e}"),
                                }
                            }
                        }
                    }));
                }
            }
            for t in tasks {
                t.await.unwrap();
            }
            let rows = admin.simple_query("SELECT n FROM ctr ORDER BY id").await.unwrap();
            let got = summary(&Ok(rows));
            let want = format!("rows {0} {0}; ", clients * per);
            assert_eq!(format!("{got}; "), want, "both counters reach {}", clients * per);
            let rr: u64 = retries
                .iter()
                .filter(|(l, _)| *l == "REPEATABLE READ")
                .map(|(_, n)| n.load(std::sync::atomic::Ordering::Relaxed))
                .sum();
            eprintln!("repeatable read: {rr} serialization failures retried");
        })
        .await
        .expect("increments timed out")
    });
}

/// A transfer between two tables in one transaction: a statement reading
/// both never sees the money in neither or in both (each statement reads
/// one snapshot, and a commit becomes visible in both tables at once).
#[test]
fn a_statement_never_sees_half_a_commit_across_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let conn = walden.conn_str();
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let admin = connect(&conn).await;
            admin
                .simple_query(
                    "CREATE TABLE a (id int PRIMARY KEY, v int); CREATE TABLE b (id int PRIMARY KEY, v int); \
                     INSERT INTO a SELECT g, 100 FROM generate_series(1, 2000) g; \
                     INSERT INTO b SELECT g, 100 FROM generate_series(1, 2000) g",
                )
                .await
                .unwrap();
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let mut writers = Vec::new();
            for w in 0..2 {
                let c = connect(&conn).await;
                let stop = stop.clone();
                writers.push(tokio::spawn(async move {
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let id = 1 + (n * 7 + w * 991) % 2000;
                        c.simple_query(&format!(
                            "BEGIN; UPDATE a SET v = v - 1 WHERE id = {id}; UPDATE b SET v = v + 1 WHERE id = {id}; COMMIT"
                        ))
                        .await
                        .unwrap();
                        n += 1;
                    }
                    n
                }));
            }
            let reader = connect(&conn).await;
            let mut reads = 0;
            let t0 = std::time::Instant::now();
            while t0.elapsed() < Duration::from_secs(3) {
                let r = reader
                    .simple_query("SELECT (SELECT sum(v) FROM a) + (SELECT sum(v) FROM b)")
                    .await
                    .unwrap();
                assert_eq!(summary(&Ok(r)), "rows 400000", "read {reads} saw half a transfer");
                reads += 1;
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut transfers = 0;
            for w in writers {
                transfers += w.await.unwrap();
            }
            eprintln!("{reads} consistent reads during {transfers} transfers");
            assert!(transfers > 50 && reads > 10, "the test raced too little");
        })
        .await
        .expect("transfers timed out")
    });
}
