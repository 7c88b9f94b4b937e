//! Isolation anomalies as concurrent schedules (after Hermitage's tests for
//! PostgreSQL), run step by step on Walden and on a scratch PostgreSQL 15
//! with the same SQL: each step's outcome (rows, command tag, SQLSTATE, or
//! that it blocked) must be the same on both. Then invariants under load:
//! concurrent increments lose nothing, and a statement never sees half of a
//! transaction that spans two tables.

mod pg_diff;
mod server_support;

use pg_diff::schedule::{self, summary, Run};
use pg_diff::{block_on_within, connect, runtime, Peers};
use server_support::Serve;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

const SETUP: &str = "CREATE TABLE test (id int PRIMARY KEY, value int); \
                     INSERT INTO test VALUES (1, 10), (2, 20)";

/// A named schedule over two or three sessions.
struct Schedule {
    name: &'static str,
    sessions: usize,
    steps: Vec<(usize, &'static str)>,
}

/// Where every schedule ends: the rows of `test`.
const CHECKS: &[&str] = &["SELECT id, value FROM test ORDER BY id"];

/// Runs each schedule on PostgreSQL and on Walden (after `setup(schedule)`,
/// with `test` dropped first) and fails with every schedule whose logs
/// differ.
fn schedules_match_postgres(list: Vec<Schedule>, setup: impl Fn(&Schedule) -> &'static str) {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare schedules") else {
        return;
    };
    let (pg_conn, w_conn) = (peers.pg_conn(), peers.walden_conn());
    let failures = block_on_within(Duration::from_secs(300), async {
        let mut failures = Vec::new();
        for sc in list {
            let setup = format!("DROP TABLE IF EXISTS test; {}", setup(&sc));
            let run = Run {
                setup: &setup,
                init: "",
                sessions: sc.sessions,
                steps: &sc.steps,
                checks: CHECKS,
            };
            let want = schedule::run(&pg_conn, &run).await;
            let got = schedule::run(&w_conn, &run).await;
            failures.extend(schedule::mismatch(sc.name, &want, &got));
        }
        failures
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn isolation_schedules_match_postgres() {
    schedules_match_postgres(schedules(), |_| SETUP);
}

#[test]
fn ssi_schedules_match_postgres() {
    schedules_match_postgres(ssi_schedules(), |sc| {
        if sc.sessions == 3 {
            DEPOSIT_SETUP
        } else {
            SETUP
        }
    });
}

#[test]
fn locking_read_schedules_match_postgres() {
    schedules_match_postgres(locking_schedules(), |_| SETUP);
}

#[test]
fn upsert_schedules_match_postgres() {
    schedules_match_postgres(upsert_schedules(), |_| SETUP);
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

/// The "read-only transaction anomaly" (PostgreSQL wiki, SSI): a batch
/// insert reads the current deposit number, a concurrent update closes the
/// batch and commits, then a read-only report sees the batch closed but not
/// the receipt. Only a SERIALIZABLE report makes it a cycle; without the
/// report both writers commit.
const DEPOSIT_SETUP: &str = "DROP TABLE IF EXISTS control; DROP TABLE IF EXISTS receipt; \
     CREATE TABLE test (id int PRIMARY KEY, value int); \
     CREATE TABLE control (id int PRIMARY KEY, deposit_no int); \
     INSERT INTO control VALUES (1, 1); \
     CREATE TABLE receipt (no int PRIMARY KEY, deposit_no int, amount int); \
     INSERT INTO receipt VALUES (1, 1, 10), (2, 1, 20)";

fn ssi_schedules() -> Vec<Schedule> {
    let sr = "BEGIN ISOLATION LEVEL SERIALIZABLE";
    let mut v = Vec::new();
    for report in [true, false] {
        let mut steps = vec![
            (0, sr),
            (0, "SELECT deposit_no FROM control WHERE id = 1"),
            (0, "INSERT INTO receipt VALUES (3, 1, 30)"),
            (1, sr),
            (1, "SELECT deposit_no FROM control WHERE id = 1"),
            (1, "UPDATE control SET deposit_no = 2 WHERE id = 1"),
            (1, "COMMIT"),
        ];
        if report {
            steps.extend([
                (2, "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"),
                (2, "SELECT deposit_no FROM control WHERE id = 1"),
                (2, "SELECT sum(amount) FROM receipt WHERE deposit_no = 1"),
                (2, "COMMIT"),
            ]);
        }
        steps.extend([(0, "COMMIT"), (1, "SELECT * FROM receipt ORDER BY no")]);
        v.push(Schedule {
            name: if report {
                "read-only transaction anomaly"
            } else {
                "the same without the read-only report"
            },
            sessions: 3,
            steps,
        });
    }
    // Rows of different keys read and written by point lookups: no edge.
    v.push(Schedule {
        name: "serializable: disjoint keys both commit",
        sessions: 2,
        steps: vec![
            (0, sr),
            (1, sr),
            (0, "SELECT * FROM test WHERE id = 1"),
            (1, "SELECT * FROM test WHERE id = 2"),
            (0, "UPDATE test SET value = 11 WHERE id = 1"),
            (1, "UPDATE test SET value = 21 WHERE id = 2"),
            (0, "COMMIT"),
            (1, "COMMIT"),
        ],
    });
    // The default level and SET TRANSACTION reach the same implementation.
    v.push(Schedule {
        name: "serializable by SET TRANSACTION and default_transaction_isolation",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (0, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
            (1, "SET default_transaction_isolation = 'serializable'"),
            (1, "BEGIN"),
            (0, "SELECT * FROM test WHERE id IN (1, 2) ORDER BY id"),
            (1, "SELECT * FROM test WHERE id IN (1, 2) ORDER BY id"),
            (0, "UPDATE test SET value = 11 WHERE id = 1"),
            (1, "UPDATE test SET value = 21 WHERE id = 2"),
            (0, "COMMIT"),
            (1, "COMMIT"),
        ],
    });
    v
}

/// The first column of the first row, as an integer.
fn first_int(msgs: &[SimpleQueryMessage]) -> i64 {
    msgs.iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(|v| v.parse().unwrap()),
            _ => None,
        })
        .expect("a row")
}

/// One SERIALIZABLE transaction: `check` reads a number, and when it is at
/// least `need` the `writes` run. Ok(true) committed with the writes,
/// Ok(false) committed without, Err on a serialization failure or a
/// deadlock (rolled back; the caller retries).
async fn guarded(c: &Client, check: &str, need: i64, writes: &[String]) -> Result<bool, ()> {
    let run = async {
        c.simple_query("BEGIN ISOLATION LEVEL SERIALIZABLE").await?;
        let have = first_int(&c.simple_query(check).await?);
        let ok = have >= need;
        if ok {
            for w in writes {
                c.simple_query(w).await?;
            }
        }
        c.simple_query("COMMIT").await?;
        Ok::<bool, tokio_postgres::Error>(ok)
    };
    match run.await {
        Ok(ok) => Ok(ok),
        // A serialization failure, or a deadlock (transfers lock two rows
        // in either order): retried.
        Err(e)
            if e.code()
                .is_some_and(|c| matches!(c.code(), "40001" | "40P01")) =>
        {
            let _ = c.simple_query("ROLLBACK").await;
            Err(())
        }
        Err(e) => panic!("{e} {:?}", e.as_db_error()),
    }
}

/// Bank transfers and withdrawals at SERIALIZABLE, retried on 40001. Each
/// owner has two accounts; a transfer or withdrawal from one checks the
/// owner's total over both (write skew under snapshot isolation: two
/// withdrawals from the two accounts may each see enough). The total
/// changes by exactly what was withdrawn, and no owner's total goes below
/// zero (each transaction alone keeps that true, so any serial order does).
#[test]
fn serializable_bank_transfers_keep_their_invariants() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let conn = walden.conn_str();
    let accounts = 6i64;
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(240), async {
            let admin = connect(&conn).await;
            admin
                .simple_query(&format!(
                    "CREATE TABLE acct (id int PRIMARY KEY, owner int, bal int); \
                     INSERT INTO acct SELECT g, g % 3, 100 FROM generate_series(1, {accounts}) g"
                ))
                .await
                .unwrap();
            let retried = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let mut tasks = Vec::new();
            for w in 0..4i64 {
                let c = connect(&conn).await;
                let retried = retried.clone();
                tasks.push(tokio::spawn(async move {
                    let mut withdrawn = 0;
                    for i in 0..40i64 {
                        let from = (w + i) % accounts + 1;
                        let to = (w * 7 + i * 3) % accounts + 1;
                        let amount = 10 + (i * 13 + w) % 50;
                        let owner = from % 3;
                        let check = format!("SELECT sum(bal) FROM acct WHERE owner = {owner}");
                        loop {
                            let r = if i % 2 == 0 && from != to {
                                guarded(
                                    &c,
                                    &check,
                                    amount,
                                    &[
                                        format!("UPDATE acct SET bal = bal - {amount} WHERE id = {from}"),
                                        format!("UPDATE acct SET bal = bal + {amount} WHERE id = {to}"),
                                    ],
                                )
                                .await
                            } else {
                                guarded(
                                    &c,
                                    &check,
                                    amount,
                                    &[format!("UPDATE acct SET bal = bal - {amount} WHERE id = {from}")],
                                )
                                .await
                                .inspect(|&ok| {
                                    if ok {
                                        withdrawn += amount;
                                    }
                                })
                            };
                            match r {
                                Ok(_) => break,
                                Err(()) => {
                                    retried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                            }
                        }
                    }
                    withdrawn
                }));
            }
            let mut withdrawn = 0;
            for t in tasks {
                withdrawn += t.await.unwrap();
            }
            let total = first_int(&admin.simple_query("SELECT sum(bal) FROM acct").await.unwrap());
            assert_eq!(total, accounts * 100 - withdrawn, "the total moves only by withdrawals");
            let overdrawn = first_int(
                &admin
                    .simple_query(
                        "SELECT count(*) FROM (SELECT owner, sum(bal) AS s FROM acct \
                         GROUP BY owner) o WHERE s < 0",
                    )
                    .await
                    .unwrap(),
            );
            assert_eq!(overdrawn, 0, "no owner overdrawn");
            eprintln!(
                "serializable: {withdrawn} withdrawn, {} serialization failures retried",
                retried.load(std::sync::atomic::Ordering::Relaxed)
            );
        })
        .await
        .expect("transfers timed out")
    });
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

/// INSERT ... ON CONFLICT against a concurrent insert of the same key and
/// against rows others update (as PostgreSQL's speculative insertion).
fn upsert_schedules() -> Vec<Schedule> {
    let upd = "INSERT INTO test VALUES (3, 31) ON CONFLICT (id) \
               DO UPDATE SET value = test.value + excluded.value RETURNING *";
    let nothing = "INSERT INTO test VALUES (3, 31) ON CONFLICT DO NOTHING RETURNING *";
    let mut v = Vec::new();
    for (what, sql) in [("do update", upd), ("do nothing", nothing)] {
        let name = |n: &str| -> &'static str { Box::leak(format!("{what}: {n}").into_boxed_str()) };
        for end in ["COMMIT", "ROLLBACK"] {
            v.push(Schedule {
                name: name(&format!(
                    "read committed waits for an insert, which ends {end}"
                )),
                sessions: 2,
                steps: vec![
                    (0, "BEGIN"),
                    (0, "INSERT INTO test VALUES (3, 30)"),
                    (1, "BEGIN"),
                    (1, sql),
                    (0, end),
                    (1, "COMMIT"),
                ],
            });
        }
        v.push(Schedule {
            name: name("repeatable read fails on a row its snapshot does not see"),
            sessions: 2,
            steps: vec![
                (1, "BEGIN ISOLATION LEVEL REPEATABLE READ"),
                (1, "SELECT * FROM test ORDER BY id"),
                (0, "BEGIN"),
                (0, "INSERT INTO test VALUES (3, 30)"),
                (1, sql),
                (0, "COMMIT"),
                (1, "ROLLBACK"),
            ],
        });
        v.push(Schedule {
            name: name("repeatable read: a committed row it does see"),
            sessions: 2,
            steps: vec![
                (0, "INSERT INTO test VALUES (3, 30)"),
                (1, "BEGIN ISOLATION LEVEL REPEATABLE READ"),
                (1, "SELECT * FROM test ORDER BY id"),
                (1, sql),
                (1, "COMMIT"),
            ],
        });
        v.push(Schedule {
            name: name("repeatable read: the row was updated after the snapshot"),
            sessions: 2,
            steps: vec![
                (0, "INSERT INTO test VALUES (3, 30)"),
                (1, "BEGIN ISOLATION LEVEL REPEATABLE READ"),
                (1, "SELECT * FROM test ORDER BY id"),
                (0, "UPDATE test SET value = 33 WHERE id = 3"),
                (1, sql),
                (1, "ROLLBACK"),
            ],
        });
    }
    v.push(Schedule {
        name: "do nothing leaves the existing row unlocked",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (0, "INSERT INTO test VALUES (1, 99) ON CONFLICT DO NOTHING"),
            (1, "UPDATE test SET value = 11 WHERE id = 1"),
            (0, "COMMIT"),
        ],
    });
    v.push(Schedule {
        name: "do update locks the row it updates",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (
                0,
                "INSERT INTO test VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET value = excluded.value",
            ),
            (1, "UPDATE test SET value = value + 1 WHERE id = 1"),
            (0, "COMMIT"),
        ],
    });
    v.push(Schedule {
        name: "do update waits for an updater, then updates its version",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (0, "UPDATE test SET value = 50 WHERE id = 1"),
            (
                1,
                "INSERT INTO test VALUES (1, 5) ON CONFLICT (id) \
                 DO UPDATE SET value = test.value + excluded.value RETURNING *",
            ),
            (0, "COMMIT"),
        ],
    });
    v.push(Schedule {
        name: "do update waits for a delete, then inserts",
        sessions: 2,
        steps: vec![
            (0, "BEGIN"),
            (0, "DELETE FROM test WHERE id = 1"),
            (
                1,
                "INSERT INTO test VALUES (1, 5) ON CONFLICT (id) \
                 DO UPDATE SET value = test.value + excluded.value RETURNING *",
            ),
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
