//! Data several times larger than the page cache, through `walden serve
//! --cache-size-mb 8`: a table and its index of about 200 MB load in
//! batches, the server is killed and started again, and a whole-table scan,
//! index lookups, point reads, an update of 1% of the rows and a checkpoint
//! all answer as the model says while the server's peak memory since the
//! restart stays well under the table's size (rows written by a checkpoint
//! are read through the store, not loaded at open). A clean restart then
//! answers the same.

use crate::server_support;

use server_support::{have, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;

const ROWS: i64 = 800_000;
const BATCH: i64 = 100_000;
/// Distinct values of the indexed column `k` (= id % K).
const K: i64 = 1_000;

fn psql(s: &Serve, sql: &str) -> String {
    let out = run_with_deadline(
        Command::new("psql")
            .args(["-X", "-h", "127.0.0.1", "-p", &s.port.to_string()])
            .args([
                "-U",
                "walden",
                "-d",
                "walden",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
            ])
            .args(["-c", sql]),
        Duration::from_secs(300),
    );
    assert!(
        out.status.success(),
        "{sql}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.log()
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A field of /proc/PID/status, in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The model's answers after the update (rows with id % 97 = 0 got k + 1).
fn expected_k_sum(updated: bool) -> i64 {
    let base: i64 = (1..=ROWS).map(|i| i % K).sum();
    if updated {
        base + ROWS / 97
    } else {
        base
    }
}

/// Every query the test asks, checked against the model.
fn check(s: &Serve, updated: bool) {
    assert_eq!(
        psql(s, "SELECT count(*), sum(k), sum(length(v)) FROM t"),
        format!("{ROWS}|{}|{}", expected_k_sum(updated), ROWS * 160),
        "whole-table scan"
    );
    // Index lookups: k = 7 holds ids 7, 1007, ... (800 of them), and after
    // the update also the ids = 6 (mod 1000) divisible by 97, whose k moved.
    for k in [0_i64, 7, 499, 998] {
        let want = (1..=ROWS)
            .filter(|i| {
                let moved = updated && i % 97 == 0;
                (i % K + i64::from(moved)) == k
            })
            .count();
        assert_eq!(
            psql(s, &format!("SELECT count(*) FROM t WHERE k = {k}")),
            want.to_string(),
            "index lookup k = {k}"
        );
    }
    for id in [1_i64, 97, 123_457, 555_555, ROWS] {
        let k = id % K + i64::from(updated && id % 97 == 0);
        assert_eq!(
            psql(
                s,
                &format!("SELECT k, v = repeat(md5(id::text), 5) FROM t WHERE id = {id}")
            ),
            format!("{k}|t"),
            "point read id = {id}"
        );
    }
}

#[test]
fn a_table_many_times_the_cache_loads_runs_and_restarts_in_bounded_memory() {
    if !have("psql", &["--version"]) {
        server_support::missing_tool("psql is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let flags = ["--cache-size-mb", "8"];
    let mut s = Serve::start(&data, &flags);
    psql(
        &s,
        "CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, v text NOT NULL)",
    );
    psql(&s, "CREATE INDEX t_k ON t (k)");
    for b in 0..ROWS / BATCH {
        psql(
            &s,
            &format!(
                "INSERT INTO t SELECT g, g % {K}, repeat(md5(g::text), 5) \
                 FROM generate_series({}, {}) g",
                b * BATCH + 1,
                (b + 1) * BATCH
            ),
        );
        psql(&s, "CHECKPOINT");
    }
    let table_kb: u64 = psql(&s, "SELECT pg_total_relation_size('t') / 1024")
        .parse()
        .unwrap();
    assert!(
        table_kb > 20 * 8 * 1024,
        "the table and its index ({table_kb} kB) are meant to be many times the 8 MiB cache"
    );
    // Rows since the last checkpoint are replayed from the log; the rest
    // stay in the store.
    psql(&s, "INSERT INTO t VALUES (0, 0, repeat(md5('0'), 5))");
    psql(&s, "DELETE FROM t WHERE id = 0");
    s.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));

    let mut s = Serve::start(&data, &flags);
    check(&s, false);
    psql(&s, "UPDATE t SET k = k + 1 WHERE id % 97 = 0");
    psql(&s, "CHECKPOINT");
    check(&s, true);
    let peak_kb = status_kb(s.child.id(), "VmHWM:");
    // Loaded at open, the rows would take several times the table's size
    // (about 600 bytes a row in memory); read through the store they take
    // the cache and what the statements hold.
    assert!(
        peak_kb * 10 < table_kb * 6,
        "peak memory since the restart {peak_kb} kB, table and index {table_kb} kB:\n{}",
        s.log()
    );
    s.signal_and_wait(libc::SIGTERM, Duration::from_secs(30));

    let mut s = Serve::start(&data, &flags);
    check(&s, true);
    s.signal_and_wait(libc::SIGTERM, Duration::from_secs(30));
}
