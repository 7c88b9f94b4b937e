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

/// ALTER TABLE rebuilds of a table larger than the transaction limit (a new
/// primary key, a rewrite for a new column) build into a spill file: before,
/// they held the new table in memory and failed with 53200. A duplicate
/// key is still found, a rollback leaves the table as it was, and the
/// rebuilt table survives a kill (redo rebuilds it) and a checkpoint.
#[test]
fn alter_table_rebuilds_past_the_transaction_limit_spill() {
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

    // No primary key: rows keyed by hidden row ids, one id twice.
    psql(
        &s,
        "CREATE TABLE y (id int NOT NULL, v text); \
         INSERT INTO y SELECT g, repeat('v', 100) FROM generate_series(1, 200000) g; \
         INSERT INTO y VALUES (777, 'again')",
    );
    let dup = run_with_deadline(
        Command::new("psql")
            .args(["-X", "-h", "127.0.0.1", "-p", &s.port.to_string()])
            .args(["-U", "walden", "-d", "walden", "-At", "-q"])
            .args(["-c", "ALTER TABLE y ADD PRIMARY KEY (id)"]),
        Duration::from_secs(120),
    );
    let err = String::from_utf8_lossy(&dup.stderr);
    assert!(
        err.contains("could not create unique index") && err.contains("(id)=(777)"),
        "{err}"
    );
    psql(&s, "DELETE FROM y WHERE v = 'again'");
    psql(
        &s,
        "BEGIN; ALTER TABLE y ADD PRIMARY KEY (id); ALTER TABLE y ADD COLUMN w int DEFAULT 7; \
         ROLLBACK",
    );
    assert_eq!(
        psql(&s, "SELECT count(*), sum(id) FROM y; SELECT count(*) FROM information_schema.columns WHERE table_name = 'y'"),
        "200000|20000100000\n2"
    );
    psql(&s, "ALTER TABLE y ADD PRIMARY KEY (id)");
    psql(&s, "ALTER TABLE y ADD COLUMN w int DEFAULT 7");
    let expect = "200000|20000100000|1400000|20000000\nvvv|7";
    let probe = "SELECT count(*), sum(id), sum(w), sum(length(v)) FROM y; \
                 SELECT left(v, 3), w FROM y WHERE id = 123456";
    assert_eq!(psql(&s, probe), expect);
    let dup_again = run_with_deadline(
        Command::new("psql")
            .args(["-X", "-h", "127.0.0.1", "-p", &s.port.to_string()])
            .args(["-U", "walden", "-d", "walden", "-At", "-q"])
            .args(["-c", "INSERT INTO y VALUES (5, 'x', 1)"]),
        Duration::from_secs(60),
    );
    assert!(String::from_utf8_lossy(&dup_again.stderr).contains("duplicate key"));

    s.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let mut s = Serve::start(&data, &flags);
    assert_eq!(psql(&s, probe), expect);
    psql(&s, "CHECKPOINT");
    s.signal_and_wait(libc::SIGTERM, Duration::from_secs(60));
    let s = Serve::start(&data, &flags);
    assert_eq!(psql(&s, probe), expect);
}
