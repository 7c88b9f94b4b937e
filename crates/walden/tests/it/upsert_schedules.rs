//! INSERT ... ON CONFLICT under concurrency, as two-session schedules run
//! step by step on Walden and on a scratch PostgreSQL 15: waiting for a
//! concurrent insert of the same key, then updating or inserting as
//! PostgreSQL's speculative insertion does.

use crate::isolation_support;

use isolation_support::{schedules_match_postgres, Schedule, SETUP};

#[test]
fn upsert_schedules_match_postgres() {
    schedules_match_postgres(upsert_schedules(), |_| SETUP);
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
