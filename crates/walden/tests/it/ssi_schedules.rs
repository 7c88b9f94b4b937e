//! Serializable snapshot isolation: schedules whose outcome at SERIALIZABLE
//! must match PostgreSQL 15 step by step (the read-only transaction
//! anomaly, disjoint keys, the level set in other spellings), and bank
//! transfers under load that keep their invariants.

use crate::isolation_support;
use crate::pg_diff;
use crate::server_support;

use isolation_support::{schedules_match_postgres, Schedule, SETUP};
use pg_diff::{connect, runtime};
use server_support::Serve;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

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

/// Reads of key ranges and index ranges at SERIALIZABLE are tracked as the
/// ranges they read: a row inserted (or moved) beside a range read is no
/// conflict, one inserted into it is. `ranged` has enough rows that
/// PostgreSQL reads the ranges through its indexes (whose SIREAD locks are
/// on index pages: the schedules' ranges and inserts lie pages apart).
#[test]
fn ssi_range_schedules_match_postgres() {
    schedules_match_postgres(range_schedules(), |_| RANGE_SETUP);
}

const RANGE_SETUP: &str = "DROP TABLE IF EXISTS ranged; \
     CREATE TABLE test (id int PRIMARY KEY, value int); \
     CREATE TABLE ranged (k int PRIMARY KEY, v int); \
     INSERT INTO ranged SELECT g * 10, g * 10 FROM generate_series(1, 5000) g; \
     CREATE INDEX ranged_v ON ranged (v); \
     ANALYZE ranged";

fn range_schedules() -> Vec<Schedule> {
    let sr = "BEGIN ISOLATION LEVEL SERIALIZABLE";
    let end = "SELECT count(*), sum(v) FROM ranged WHERE k > 50000 OR k % 10 <> 0";
    let pair = |name, read0, read1, write0, write1| Schedule {
        name,
        sessions: 2,
        steps: vec![
            (0, sr),
            (1, sr),
            (0, read0),
            (1, read1),
            (0, write0),
            (1, write1),
            (0, "COMMIT"),
            (1, "COMMIT"),
            (0, end),
        ],
    };
    vec![
        pair(
            "ranges: key ranges read beside each other's inserts both commit",
            "SELECT count(*), sum(v) FROM ranged WHERE k BETWEEN 100 AND 200",
            "SELECT count(*), sum(v) FROM ranged WHERE k BETWEEN 30000 AND 30100",
            "INSERT INTO ranged VALUES (60001, 1)",
            "INSERT INTO ranged VALUES (70001, 2)",
        ),
        pair(
            "ranges: each inserts into the key range the other read",
            "SELECT count(*), sum(v) FROM ranged WHERE k BETWEEN 100 AND 200",
            "SELECT count(*), sum(v) FROM ranged WHERE k BETWEEN 30000 AND 30100",
            "INSERT INTO ranged VALUES (30005, 1)",
            "INSERT INTO ranged VALUES (105, 2)",
        ),
        pair(
            "ranges: index ranges read beside each other's inserts both commit",
            "SELECT count(*), sum(k) FROM ranged WHERE v BETWEEN 100 AND 200",
            "SELECT count(*), sum(k) FROM ranged WHERE v BETWEEN 30000 AND 30100",
            "INSERT INTO ranged VALUES (60001, 60001)",
            "INSERT INTO ranged VALUES (70001, 70001)",
        ),
        pair(
            "ranges: each moves a row into the index range the other read",
            "SELECT count(*), sum(k) FROM ranged WHERE v BETWEEN 100 AND 200",
            "SELECT count(*), sum(k) FROM ranged WHERE v BETWEEN 30000 AND 30100",
            "UPDATE ranged SET v = 30005 WHERE k = 10",
            "UPDATE ranged SET v = 105 WHERE k = 45000",
        ),
        pair(
            "ranges: ORDER BY LIMIT reads up to where it stopped",
            "SELECT k FROM ranged WHERE k >= 100 ORDER BY k LIMIT 2",
            "SELECT count(*), sum(v) FROM ranged WHERE k BETWEEN 30000 AND 30100",
            "INSERT INTO ranged VALUES (60001, 1)",
            "INSERT INTO ranged VALUES (45005, 2)",
        ),
        pair(
            "ranges: ORDER BY LIMIT meets an insert before where it stopped",
            "SELECT k FROM ranged WHERE k >= 100 ORDER BY k LIMIT 2",
            "SELECT count(*), sum(v) FROM ranged WHERE k BETWEEN 30000 AND 30100",
            "INSERT INTO ranged VALUES (30005, 1)",
            "INSERT INTO ranged VALUES (105, 2)",
        ),
    ]
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
    bank_transfers("CREATE TABLE acct (id int PRIMARY KEY, owner int, bal int)");
}

/// The same with the owner's accounts read as a range of primary keys (a
/// key prefix), so read tracking is by range rather than by table.
#[test]
fn serializable_bank_transfers_over_key_ranges() {
    bank_transfers("CREATE TABLE acct (owner int, id int, bal int, PRIMARY KEY (owner, id))");
}

/// The same with the owner's accounts read through an index on the owner.
#[test]
fn serializable_bank_transfers_over_an_index() {
    bank_transfers(
        "CREATE TABLE acct (id int PRIMARY KEY, owner int, bal int); \
         CREATE INDEX acct_owner ON acct (owner)",
    );
}

fn bank_transfers(create: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let conn = walden.conn_str();
    let accounts = 6i64;
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(240), async {
            let admin = connect(&conn).await;
            admin
                .simple_query(&format!(
                    "{create}; INSERT INTO acct (id, owner, bal) \
                     SELECT g, g % 3, 100 FROM generate_series(1, {accounts}) g"
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
                                        format!(
                                            "UPDATE acct SET bal = bal - {amount} \
                                             WHERE owner = {owner} AND id = {from}"
                                        ),
                                        format!(
                                            "UPDATE acct SET bal = bal + {amount} \
                                             WHERE owner = {} AND id = {to}",
                                            to % 3
                                        ),
                                    ],
                                )
                                .await
                            } else {
                                guarded(
                                    &c,
                                    &check,
                                    amount,
                                    &[format!(
                                        "UPDATE acct SET bal = bal - {amount} \
                                             WHERE owner = {owner} AND id = {from}"
                                    )],
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
            let total = first_int(
                &admin
                    .simple_query("SELECT sum(bal) FROM acct")
                    .await
                    .unwrap(),
            );
            assert_eq!(
                total,
                accounts * 100 - withdrawn,
                "the total moves only by withdrawals"
            );
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
