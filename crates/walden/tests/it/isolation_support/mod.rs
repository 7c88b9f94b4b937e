//! What the schedule tests share: the table every schedule starts from,
//! the named schedule, and running a list of them on PostgreSQL and Walden.

#![allow(dead_code)]

use crate::pg_diff::schedule::{self, Run};
use crate::pg_diff::{block_on_within, Peers};
use std::time::Duration;

pub const SETUP: &str = "CREATE TABLE test (id int PRIMARY KEY, value int); \
                     INSERT INTO test VALUES (1, 10), (2, 20)";

/// A named schedule over two or three sessions.
pub struct Schedule {
    pub name: &'static str,
    pub sessions: usize,
    pub steps: Vec<(usize, &'static str)>,
}

/// Where every schedule ends: the rows of `test`.
const CHECKS: &[&str] = &["SELECT id, value FROM test ORDER BY id"];

/// Runs each schedule on PostgreSQL and on Walden (after `setup(schedule)`,
/// with `test` dropped first) and fails with every schedule whose logs
/// differ.
pub fn schedules_match_postgres(list: Vec<Schedule>, setup: impl Fn(&Schedule) -> &'static str) {
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
            let (want, got) = schedule::run_both(&pg_conn, &run, &w_conn, &run).await;
            failures.extend(schedule::mismatch(sc.name, &want, &got));
        }
        failures
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
