//! UPDATE ... FROM and DELETE ... USING against a scratch PostgreSQL 15:
//! the statements' rows, RETURNING (which reads the FROM list's columns)
//! and errors, then concurrent schedules where another transaction changes
//! a target row first (READ COMMITTED re-checks the join on the latest
//! version; REPEATABLE READ fails with 40001), as the UPDATE schedules in
//! isolation_schedules.rs run them.

use crate::isolation_support;
use crate::pg_diff;

use isolation_support::{schedules_match_postgres, Schedule};
use pg_diff::{assert_same, block_on_within, run_script, Peers};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "CREATE TABLE acc (id int PRIMARY KEY, name text, bal numeric(10,2), grp int)",
    "CREATE TABLE adj (acc_id int, delta numeric(10,2), note text)",
    "CREATE TABLE grp (gid int PRIMARY KEY, label text)",
    "INSERT INTO acc VALUES (1, 'a', 10, 1), (2, 'b', 20, 1), (3, 'c', 30, 2), (4, 'd', 40, NULL)",
    "INSERT INTO adj VALUES (1, 5, 'x'), (2, -3, 'y'), (2, 100, 'z'), (9, 1, 'nobody')",
    "INSERT INTO grp VALUES (1, 'one'), (2, 'two')",
    // Each target row changes once, with the FROM row it joins.
    "UPDATE acc SET bal = bal + adj.delta FROM adj \
     WHERE adj.acc_id = acc.id AND adj.note <> 'z'",
    "SELECT * FROM acc ORDER BY id",
    "UPDATE acc a SET name = g.label || '-' || a.name FROM grp g WHERE g.gid = a.grp AND a.id = 3 \
     RETURNING *",
    "UPDATE acc a SET name = g.label || '-' || a.name FROM grp g WHERE g.gid = a.grp",
    "SELECT * FROM acc ORDER BY id",
    "UPDATE acc SET bal = 0 FROM grp WHERE grp.gid = 99",
    "UPDATE acc SET bal = bal * 2 FROM adj, grp \
     WHERE adj.acc_id = acc.id AND grp.gid = acc.grp AND adj.note = 'x' RETURNING acc.id, bal, label",
    // No condition: every target row, once.
    "UPDATE acc SET bal = 1 FROM adj",
    "SELECT * FROM acc ORDER BY id",
    // A self-join with the target aliased (unaliased, the form means the
    // FROM row in SQL Server and is refused: tsql_output_identity.rs).
    "UPDATE acc AS o SET bal = 7 FROM acc a2 WHERE a2.id = o.id + 1 AND a2.bal > 0 AND o.id = 1 \
     RETURNING o.id, a2.id, o.bal",
    "UPDATE acc SET name = s.n FROM (SELECT 1 AS k, 'sub' AS n) s WHERE s.k = acc.id RETURNING acc.*",
    "UPDATE acc SET bal = bal FROM adj JOIN grp ON grp.gid = 1 \
     WHERE adj.acc_id = acc.id AND acc.id = 2 RETURNING acc.id, grp.label",
    "UPDATE acc SET bal = 0 FROM adj WHERE id = acc_id AND acc_id = 1 RETURNING id",
    "UPDATE acc SET bal = 3 FROM (VALUES (1), (2)) v(x) WHERE v.x = acc.id AND x = 2 \
     RETURNING acc.id, x",
    "UPDATE acc SET bal = 0 FROM grp WHERE nosuch = 1",
    "UPDATE acc SET bal = 0 FROM acc WHERE acc.id = 1",
    "UPDATE acc SET bal = 0 FROM grp WHERE id = 1 RETURNING nope.*",
    "SELECT * FROM acc ORDER BY id",
    "DELETE FROM adj USING acc WHERE acc.id = adj.acc_id AND acc.grp = 1 AND adj.note = 'x' \
     RETURNING adj.*, acc.name",
    "DELETE FROM adj USING acc WHERE acc.id = adj.acc_id AND acc.grp = 1",
    "SELECT * FROM adj ORDER BY acc_id",
    "DELETE FROM acc USING grp WHERE grp.gid = acc.grp AND grp.label = 'two'",
    "DELETE FROM acc USING grp WHERE grp.gid = 5",
    "SELECT * FROM acc ORDER BY id",
];

#[test]
fn update_from_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare UPDATE ... FROM") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, &[]).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, &[]).await;
        assert_same(&want, &got);
    });
}

const SCHEDULE_SETUP: &str = "DROP TABLE IF EXISTS src; \
     CREATE TABLE test (id int PRIMARY KEY, value int); \
     INSERT INTO test VALUES (1, 10), (2, 20); \
     CREATE TABLE src (id int, v int); INSERT INTO src VALUES (1, 100), (2, 200), (3, 300)";

#[test]
fn update_from_schedules_match_postgres() {
    let rc = "BEGIN ISOLATION LEVEL READ COMMITTED";
    let rr = "BEGIN ISOLATION LEVEL REPEATABLE READ";
    let mut v = Vec::new();
    for (level, begin) in [("rc", rc), ("rr", rr)] {
        let name = |n: &str| -> &'static str { Box::leak(format!("{level} {n}").into_boxed_str()) };
        // The FROM update waits for the first writer, then adds to the
        // value it committed (READ COMMITTED) or fails (REPEATABLE READ).
        v.push(Schedule {
            name: name("update from after a concurrent update"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (1, "SELECT count(*) FROM test"),
                (0, "UPDATE test SET value = value + 1 WHERE id = 1"),
                (
                    1,
                    "UPDATE test SET value = test.value + src.v FROM src WHERE src.id = test.id \
                     RETURNING test.id, test.value, src.v",
                ),
                (0, "COMMIT"),
                (1, "COMMIT"),
            ],
        });
        // The first writer's change makes the join condition false for the
        // row: READ COMMITTED re-checks the latest version and skips it.
        v.push(Schedule {
            name: name("update from re-checks the latest version"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (1, "SELECT count(*) FROM src"),
                (0, "UPDATE test SET value = 99 WHERE id = 1"),
                (
                    1,
                    "UPDATE test SET value = src.v FROM src \
                     WHERE src.id = test.id AND test.value < 50",
                ),
                (0, "COMMIT"),
                (1, "SELECT * FROM test ORDER BY id"),
                (1, "COMMIT"),
            ],
        });
        // DELETE ... USING waits for a concurrent delete of its row.
        v.push(Schedule {
            name: name("delete using after a concurrent delete"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (1, "SELECT count(*) FROM test"),
                (0, "DELETE FROM test WHERE id = 2"),
                (1, "DELETE FROM test USING src WHERE src.id = test.id"),
                (0, "COMMIT"),
                (1, "COMMIT"),
            ],
        });
        // Rows the FROM list adds after the statement's snapshot are not
        // joined.
        v.push(Schedule {
            name: name("update from reads the FROM list in its snapshot"),
            sessions: 2,
            steps: vec![
                (0, begin),
                (1, begin),
                (1, "SELECT count(*) FROM src"),
                (0, "INSERT INTO src VALUES (1, 7)"),
                (0, "DELETE FROM src WHERE v = 100"),
                (0, "COMMIT"),
                (
                    1,
                    "UPDATE test SET value = src.v FROM src WHERE src.id = test.id AND test.id = 1",
                ),
                (1, "SELECT * FROM test ORDER BY id"),
                (1, "COMMIT"),
            ],
        });
    }
    schedules_match_postgres(v, |_| SCHEDULE_SETUP);
}
