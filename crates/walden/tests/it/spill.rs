//! Large transactions spill (docs/design.md, "Slices", 2 and 3): under a
//! transaction memory limit far below the load's size, a transaction that
//! creates a table and loads it succeeds, because the rows of the table go
//! to a spill file, not memory. It reads and changes the rows it moved out.
//! The server is then killed and restarted (from the log), checkpointed and
//! restarted (from the store), and the rows are as committed. Expected
//! values were checked by hand on PostgreSQL 15.

use crate::server_support;

use server_support::{have, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;

/// The limit the load runs under (the loads below estimate at ~80 MB and
/// ~120 MB): before spilling they failed with 53200.
const CONFIG: &str = "transaction_memory_limit_mb = 32\n";

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
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
            ])
            .args(["-c", sql]),
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "{sql}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.log()
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn bulk_loads_past_the_transaction_limit_spill_and_survive_a_kill() {
    if !have("psql", &["--version"]) {
        server_support::missing_tool("psql is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = tmp.path().join("walden.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let config = config.to_str().unwrap().to_string();
    let flags = ["--config", &config];
    let mut s = Serve::start(&data, &flags);

    // One transaction writes 300,000 rows into a table it created, reads
    // them back, changes some of them and commits.
    let got = psql(
        &s,
        "BEGIN; CREATE TABLE x (id int PRIMARY KEY, v text); \
         INSERT INTO x SELECT g, repeat('x', 100) FROM generate_series(1, 300000) g; \
         SELECT count(*), sum(id), sum(length(v)) FROM x; \
         UPDATE x SET v = 'y' WHERE id = 5; \
         DELETE FROM x WHERE id > 299990; \
         SELECT v FROM x WHERE id = 5; \
         SELECT count(*), max(id) FROM x; \
         COMMIT",
    );
    assert_eq!(got, "300000|45000150000|30000000\ny\n299990|299990");

    let spill_dir = data.join("walden").join("spill");

    // Killed before or after a checkpoint wrote the spilled tables, the
    // server comes back with everything committed.
    s.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let mut s = Serve::start(&data, &flags);
    assert_eq!(
        psql(&s, "SELECT count(*), sum(id), max(v) FROM x"),
        "299990|44997150045|y"
    );
    let left = std::fs::read_dir(&spill_dir).map_or(0, |d| d.count());
    assert_eq!(left, 0, "spill files left after the restart");
    psql(&s, "CHECKPOINT");
    s.signal_and_wait(libc::SIGTERM, Duration::from_secs(30));
    let s = Serve::start(&data, &flags);
    assert_eq!(
        psql(&s, "SELECT count(*), sum(id), max(v) FROM x"),
        "299990|44997150045|y"
    );
}
