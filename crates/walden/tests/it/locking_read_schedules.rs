//! Locking reads (`SELECT ... FOR UPDATE | NO KEY UPDATE | SHARE | KEY
//! SHARE`, NOWAIT, SKIP LOCKED) as concurrent schedules against PostgreSQL
//! 15, and a job queue whose workers take every job exactly once.

use crate::isolation_support;
use crate::pg_diff;
use crate::server_support;

use isolation_support::{schedules_match_postgres, Schedule, SETUP};
use pg_diff::schedule::summary;
use pg_diff::{connect, runtime};
use server_support::Serve;
use std::time::Duration;

#[test]
fn locking_read_schedules_match_postgres() {
    schedules_match_postgres(locking_schedules(), |_| SETUP);
}

/// Locking reads: who waits for whom, NOWAIT, SKIP LOCKED, the re-check
/// of a waited-for row under READ COMMITTED, 40001 under REPEATABLE READ,
/// savepoints and auto-commit releasing the locks.
fn locking_schedules() -> Vec<Schedule> {
    let sel1 = "SELECT * FROM test WHERE id = 1";
    let mut v = Vec::new();
    for mode in [
        "FOR UPDATE",
        "FOR NO KEY UPDATE",
        "FOR SHARE",
        "FOR KEY SHARE",
    ] {
        let name = |n: &str| -> &'static str { Box::leak(format!("{mode}: {n}").into_boxed_str()) };
        let lock: &'static str = Box::leak(format!("{sel1} {mode}").into_boxed_str());
        v.push(Schedule {
            name: name("UPDATE, DELETE and FOR UPDATE of the row"),
            sessions: 3,
            steps: vec![
                (0, "BEGIN"),
                (0, lock),
                (2, "SELECT id FROM test ORDER BY id FOR KEY SHARE NOWAIT"),
                (1, "UPDATE test SET value = 11 WHERE id = 1"),
                (2, "SELECT * FROM test WHERE id = 1 FOR UPDATE NOWAIT"),
                (2, "SELECT id FROM test ORDER BY id FOR UPDATE SKIP LOCKED"),
                (0, "COMMIT"),
                (2, "BEGIN"),
                (2, lock),
                (1, "DELETE FROM test WHERE id = 1"),
                (2, "COMMIT"),
            ],
        });
        v.push(Schedule {
            name: name("two sessions lock the same row"),
            sessions: 2,
            steps: vec![
                (0, "BEGIN"),
                (1, "BEGIN"),
                (0, lock),
                (0, "SELECT * FROM test WHERE id = 2 FOR SHARE"),
                (1, lock),
                (0, "COMMIT"),
                (1, "SELECT * FROM test WHERE id = 2 FOR UPDATE NOWAIT"),
                (1, "COMMIT"),
            ],
        });
    }
    v.push(Schedule {
        name: "read committed re-checks the row it waited for",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (0, "UPDATE test SET value = 100 WHERE id = 1"),
            (1, "BEGIN ISOLATION LEVEL READ COMMITTED"),
            (
                1,
                "SELECT * FROM test WHERE value < 50 ORDER BY id FOR UPDATE",
            ),
            (0, "COMMIT"),
            (1, "COMMIT"),
        ],
    });
    v.push(Schedule {
        name: "read committed returns the newest version",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (0, "UPDATE test SET value = 15 WHERE id = 1"),
            (
                1,
                "SELECT * FROM test WHERE value < 50 ORDER BY id LIMIT 1 FOR UPDATE",
            ),
            (0, "COMMIT"),
        ],
    });
    v.push(Schedule {
        name: "a waited-for row that was deleted is skipped, LIMIT takes the next",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (0, "DELETE FROM test WHERE id = 1"),
            (1, "SELECT * FROM test ORDER BY id LIMIT 1 FOR UPDATE"),
            (0, "COMMIT"),
        ],
    });
    v.push(Schedule {
        name: "repeatable read: locking a row changed after the snapshot",
        sessions: 2,
        steps: vec![
            (0, "BEGIN ISOLATION LEVEL REPEATABLE READ"),
            (0, "SELECT * FROM test ORDER BY id"),
            (1, "UPDATE test SET value = 11 WHERE id = 1"),
            (0, "SELECT * FROM test WHERE id = 2 FOR UPDATE"),
            (0, "SELECT * FROM test WHERE id = 1 FOR SHARE"),
            (0, "ROLLBACK"),
        ],
    });
    v.push(Schedule {
        name: "repeatable read: waiting for a writer that commits",
        sessions: 2,
        steps: vec![
            (0, "BEGIN ISOLATION LEVEL REPEATABLE READ"),
            (0, "SELECT * FROM test ORDER BY id"),
            (1, "BEGIN"),
            (1, "UPDATE test SET value = 11 WHERE id = 1"),
            (0, "SELECT * FROM test WHERE id = 1 FOR UPDATE"),
            (1, "COMMIT"),
            (0, "ROLLBACK"),
        ],
    });
    v.push(Schedule {
        name: "ROLLBACK TO a savepoint releases the row lock",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (0, "SAVEPOINT s"),
            (0, "SELECT * FROM test WHERE id = 1 FOR UPDATE"),
            (0, "ROLLBACK TO SAVEPOINT s"),
            (1, "UPDATE test SET value = 11 WHERE id = 1"),
            (0, "SELECT * FROM test WHERE id = 1 FOR UPDATE"),
            (0, "COMMIT"),
        ],
    });
    v.push(Schedule {
        name: "auto-commit: the lock lasts for the statement",
        sessions: 2,
        steps: vec![
            (0, "SELECT * FROM test ORDER BY id FOR UPDATE"),
            (1, "UPDATE test SET value = 11 WHERE id = 1"),
        ],
    });
    v.push(Schedule {
        name: "OFFSET rows are locked too",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (
                0,
                "SELECT id FROM test ORDER BY id LIMIT 1 OFFSET 1 FOR UPDATE",
            ),
            (1, "SELECT id FROM test ORDER BY id FOR UPDATE SKIP LOCKED"),
            (0, "COMMIT"),
        ],
    });
    v
}

/// A job queue: workers take jobs with `FOR UPDATE SKIP LOCKED` (and the
/// T-SQL spelling `WITH (UPDLOCK, READPAST)`); every job is taken exactly
/// once (a second take would break the primary key of `taken`).
#[test]
fn job_queue_with_skip_locked_takes_every_job_once() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let conn = walden.conn_str();
    let jobs = 300;
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let admin = connect(&conn).await;
            admin
                .simple_query(&format!(
                    "CREATE TABLE jobs (id int PRIMARY KEY, done bool); \
                     CREATE TABLE taken (id int PRIMARY KEY, worker int); \
                     INSERT INTO jobs SELECT g, false FROM generate_series(1, {jobs}) g"
                ))
                .await
                .unwrap();
            let mut workers = Vec::new();
            for w in 0..4 {
                let c = connect(&conn).await;
                workers.push(tokio::spawn(async move {
                    let pick = if w % 2 == 0 {
                        "SELECT id FROM jobs WHERE NOT done ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
                    } else {
                        "SELECT TOP 1 id FROM jobs WITH (UPDLOCK, READPAST) WHERE done = false ORDER BY id"
                    };
                    let mut n = 0;
                    loop {
                        c.simple_query("BEGIN").await.unwrap();
                        let got = summary(&Ok(c.simple_query(pick).await.unwrap()));
                        let Some(id) = got.strip_prefix("rows ") else {
                            c.simple_query("COMMIT").await.unwrap();
                            break n;
                        };
                        c.simple_query(&format!(
                            "UPDATE jobs SET done = true WHERE id = {id}; \
                             INSERT INTO taken VALUES ({id}, {w}); COMMIT"
                        ))
                        .await
                        .unwrap_or_else(|e| panic!("worker {w} job {id}: {e}"));
                        n += 1;
                    }
                }));
            }
            let mut per = Vec::new();
            for h in workers {
                per.push(h.await.unwrap());
            }
            let r = admin
                .simple_query("SELECT count(*), count(DISTINCT worker) FROM taken")
                .await
                .unwrap();
            assert_eq!(summary(&Ok(r)), format!("rows {jobs},4"), "per worker: {per:?}");
            let r = admin
                .simple_query("SELECT count(*) FROM jobs WHERE NOT done")
                .await
                .unwrap();
            assert_eq!(summary(&Ok(r)), "rows 0");
            eprintln!("jobs taken per worker: {per:?}");
        })
        .await
        .expect("job queue timed out")
    });
}
