//! Foreign keys under concurrency, as two-session schedules run step by
//! step on Walden and on a scratch PostgreSQL 15 with the same SQL: each
//! step's outcome (rows, command tag, SQLSTATE, or that it blocked) must be
//! the same. A referencing row takes KEY SHARE on the row it references, so
//! a concurrent delete or key change of that row waits and then fails (or
//! cascades); an update that keeps the key does not wait.

use crate::pg_diff;

use pg_diff::schedule::{self, Run};
use pg_diff::{block_on_within, Peers};
use std::time::Duration;

/// Checked after every schedule.
const CHECKS: &[&str] = &[
    "SELECT id, v FROM p ORDER BY id",
    "SELECT id, p FROM c ORDER BY id",
];

fn setup(action: &str) -> String {
    format!(
        "DROP TABLE IF EXISTS c, p; \
         CREATE TABLE p (id int PRIMARY KEY, v int); \
         CREATE TABLE c (id int PRIMARY KEY, p int REFERENCES p {action}); \
         INSERT INTO p VALUES (1, 10), (2, 20)"
    )
}

struct Schedule {
    name: String,
    setup: String,
    steps: Vec<(usize, &'static str)>,
}

fn schedules() -> Vec<Schedule> {
    let rc = "BEGIN ISOLATION LEVEL READ COMMITTED";
    let rr = "BEGIN ISOLATION LEVEL REPEATABLE READ";
    let mut v = Vec::new();
    let mut add = |name: &str, action: &str, steps: Vec<(usize, &'static str)>| {
        v.push(Schedule {
            name: name.to_string(),
            setup: setup(action),
            steps,
        })
    };
    for (end, what) in [("COMMIT", "commits"), ("ROLLBACK", "rolls back")] {
        add(
            &format!("child insert first, parent delete waits; the child {what}"),
            "",
            vec![
                (0, rc),
                (0, "INSERT INTO c VALUES (1, 1)"),
                (1, "DELETE FROM p WHERE id = 1"),
                (0, end),
            ],
        );
        add(
            &format!("parent delete first, child insert waits; the delete {what}"),
            "",
            vec![
                (1, rc),
                (1, "DELETE FROM p WHERE id = 1"),
                (0, "INSERT INTO c VALUES (1, 1)"),
                (1, end),
            ],
        );
        add(
            &format!("ON DELETE CASCADE waits for the child insert, which {what}"),
            "ON DELETE CASCADE",
            vec![
                (0, rc),
                (0, "INSERT INTO c VALUES (1, 1), (2, 1)"),
                (1, "DELETE FROM p WHERE id = 1"),
                (0, end),
            ],
        );
        add(
            &format!("parent key change waits for the child insert, which {what}"),
            "ON UPDATE CASCADE",
            vec![
                (0, rc),
                (0, "INSERT INTO c VALUES (1, 1)"),
                (1, "UPDATE p SET id = 10 WHERE id = 1"),
                (0, end),
            ],
        );
    }
    add(
        "an update keeping the key does not wait for the child insert",
        "",
        vec![
            (0, rc),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (1, "UPDATE p SET v = v + 1 WHERE id = 1"),
            (0, "COMMIT"),
        ],
    );
    add(
        "a child insert does not wait for an update keeping the key",
        "",
        vec![
            (1, rc),
            (1, "UPDATE p SET v = v + 1 WHERE id = 1"),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (1, "COMMIT"),
        ],
    );
    add(
        "an uncommitted parent is not seen by a child insert",
        "",
        vec![
            (1, rc),
            (1, "INSERT INTO p VALUES (3, 30)"),
            (0, "INSERT INTO c VALUES (1, 3)"),
            (1, "COMMIT"),
            (0, "INSERT INTO c VALUES (1, 3)"),
        ],
    );
    add(
        "two children of one parent do not wait for each other",
        "",
        vec![
            (0, rc),
            (1, rc),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (1, "INSERT INTO c VALUES (2, 1)"),
            (0, "COMMIT"),
            (1, "COMMIT"),
        ],
    );
    add(
        "repeatable read: the parent deleted after the snapshot",
        "",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, "DELETE FROM p WHERE id = 1"),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (0, "ROLLBACK"),
        ],
    );
    add(
        "repeatable read: the parent updated (key kept) after the snapshot",
        "",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, "UPDATE p SET v = 11 WHERE id = 1"),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (0, "COMMIT"),
        ],
    );
    add(
        "repeatable read: a child inserted after the snapshot blocks the delete",
        "",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, "INSERT INTO c VALUES (1, 1)"),
            (0, "DELETE FROM p WHERE id = 1"),
            (0, "ROLLBACK"),
        ],
    );
    add(
        "repeatable read: a cascade to a child inserted after the snapshot",
        "ON DELETE CASCADE",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, "INSERT INTO c VALUES (1, 1)"),
            (0, "DELETE FROM p WHERE id = 1"),
            (0, "ROLLBACK"),
        ],
    );
    add(
        "repeatable read: the child insert waits for the parent delete",
        "",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, rc),
            (1, "DELETE FROM p WHERE id = 1"),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (1, "COMMIT"),
            (0, "ROLLBACK"),
        ],
    );
    v
}

#[test]
fn foreign_key_schedules_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare foreign key schedules") else {
        return;
    };
    let (pg_conn, w_conn) = (peers.pg_conn(), peers.walden_conn());
    let failures = block_on_within(Duration::from_secs(300), async {
        let mut failures = Vec::new();
        for sc in schedules() {
            let run = Run {
                setup: &sc.setup,
                init: "",
                sessions: 2,
                steps: &sc.steps,
                checks: CHECKS,
            };
            let (want, got) = schedule::run_both(&pg_conn, &run, &w_conn, &run).await;
            failures.extend(schedule::mismatch(&sc.name, &want, &got));
        }
        failures
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
