//! `walden bench` against its other targets: the SQLite and PostgreSQL peers
//! and a Walden server reached by URL. Each runs one tiny experiment and
//! checks the JSON report: cells for both modes, the transaction counts, and
//! log counters that move the way the mode says they must.

use crate::server_support;

use serde_json::Value;
use server_support::{run_with_deadline, Serve};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A scratch directory the PostgreSQL peer's unprivileged user can enter
/// (tempdir makes it private; when we run as root the server does not).
fn scratch() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    t
}

/// Runs `walden bench <args> --json F --dir DIR` and returns the report.
fn bench(dir: &Path, args: &[&str]) -> Value {
    let json = dir.join("report.json");
    let out = run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_walden"))
            .arg("bench")
            .args(args)
            .arg("--json")
            .arg(&json)
            .arg("--dir")
            .arg(dir),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "walden bench {args:?}: {}\n{stderr}",
        out.status
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no report at {}: {e}\n{stderr}", json.display()));
    serde_json::from_str(&text).unwrap()
}

/// The cells of targets of `kind` (walden, postgres, sqlite).
fn cells<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["cells"].as_array().unwrap())
        .filter(|c| c["target_kind"] == kind)
        .collect()
}

fn counter(c: &Value, name: &str) -> u64 {
    c["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name} in {}", c["counters"]))
}

/// The full and relaxed cell of one variant.
fn pair<'a>(cells: &[&'a Value], variant: &str) -> (&'a Value, &'a Value) {
    let find = |d: &str| {
        *cells
            .iter()
            .find(|c| c["variant"] == variant && c["mode"]["durability"] == d)
            .unwrap_or_else(|| panic!("no {d} cell for {variant:?}"))
    };
    (find("full"), find("relaxed"))
}

/// three-insert at this scale: 5 sessions x 25 transactions.
const THREE_INSERT_TXNS: u64 = 125;

/// Checks a peer's three-insert cells: both modes, every transaction run and
/// counted by the product, log written in both, synced less when relaxed.
fn check_three_insert_peer(report: &Value, kind: &str, modes: [&str; 2]) {
    let cs = cells(report, kind);
    assert_eq!(cs.len(), 2, "{kind} cells: {cs:#?}\nreport: {report:#}");
    let variant = cs[0]["variant"].as_str().unwrap().to_string();
    let (full, relaxed) = pair(&cs, &variant);
    assert_eq!(full["mode"]["short"], modes[0]);
    assert_eq!(relaxed["mode"]["short"], modes[1]);
    for c in [full, relaxed] {
        assert_eq!(c["transactions"], THREE_INSERT_TXNS, "{c:#}");
        assert_eq!(counter(c, "write_transactions"), THREE_INSERT_TXNS, "{c:#}");
        assert!(counter(c, "log_writes") > 0, "{c:#}");
        assert!(counter(c, "log_bytes") > 0, "{c:#}");
    }
    assert!(
        counter(relaxed, "log_flushes") < counter(full, "log_flushes"),
        "relaxed should sync the log less: {:#} vs {:#}",
        relaxed["counters"],
        full["counters"]
    );
}

#[test]
fn sqlite_peer_runs_both_modes_with_counted_log_io() {
    let tmp = scratch();
    let r = bench(
        tmp.path(),
        &[
            "three-insert",
            "--scale",
            "0.0005",
            "--peer",
            "sqlite",
            "--quiet",
        ],
    );
    check_three_insert_peer(&r, "sqlite", ["FULL", "NORMAL"]);
    // FULL syncs the log at every commit.
    let cs = cells(&r, "sqlite");
    let full = cs.iter().find(|c| c["mode"]["short"] == "FULL").unwrap();
    assert!(
        counter(full, "log_flushes") >= THREE_INSERT_TXNS,
        "{full:#}"
    );
    assert!(r["targets"][1].as_str().unwrap().starts_with("sqlite 3."));
}

fn postgres_installed() -> bool {
    let debian = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| rd.flatten().any(|e| e.path().join("bin/initdb").is_file()))
        .unwrap_or(false);
    debian || std::env::var_os("PG_BIN").is_some()
}

#[test]
fn postgres_peer_runs_both_modes_with_wal_counters() {
    if !postgres_installed() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs postgresql-15, but no initdb was found"
        );
        server_support::missing_tool("PostgreSQL is not installed");
        return;
    }
    let tmp = scratch();
    let r = bench(
        tmp.path(),
        &[
            "three-insert",
            "--scale",
            "0.0005",
            "--peer",
            "postgres",
            "--quiet",
        ],
    );
    assert_eq!(r["skipped_targets"], Value::Array(vec![]), "{r:#}");
    check_three_insert_peer(&r, "postgres", ["sync=on", "sync=off"]);
    assert!(r["targets"][1].as_str().unwrap().starts_with("postgres 1"));
    // The cluster is stopped with the run: nothing listens in its directory.
    let pid_file = tmp.path().join("postgres/data/postmaster.pid");
    assert!(!pid_file.exists(), "{} still there", pid_file.display());
}

#[test]
fn walden_server_by_url_reads_its_counters_over_the_wire() {
    let tmp = scratch();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let url = format!("postgres://walden@127.0.0.1:{}/walden", s.port);
    let r = bench(
        tmp.path(),
        &["log-io", "--scale", "0.0005", "--target", &url, "--quiet"],
    );
    let cs = cells(&r, "walden");
    assert_eq!(cs.len(), 8, "{r:#}");
    let label = format!("walden (127.0.0.1:{})", s.port);
    for c in &cs {
        assert_eq!(c["target"], label.as_str());
        // Every log-io cell ends with EXEC sys.sp_flush_log, so even the
        // delayed ones write the log.
        assert!(counter(c, "log_writes") > 0, "{c:#}");
        assert_eq!(
            c["counters"]["write_transactions"], c["transactions"],
            "{c:#}"
        );
    }
    // Many auto-commit inserts: delayed durability writes the log less often.
    for variant in ["10 inserts, 1 session", "10 inserts x 20 sessions"] {
        let (durable, delayed) = pair(&cs, variant);
        assert!(
            counter(delayed, "log_writes") < counter(durable, "log_writes"),
            "{variant}: delayed {:#} vs durable {:#}",
            delayed["counters"],
            durable["counters"]
        );
        // Walden counts WRITELOG waits per session; durable commits wait.
        assert!(counter(durable, "writelog_waits") > 0, "{durable:#}");
    }
}

#[test]
fn an_unreachable_server_is_a_clear_error() {
    let tmp = scratch();
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_walden"))
            .args(["bench", "three-insert", "--quiet", "--target"])
            .arg(format!("postgres://walden@127.0.0.1:{port}/walden"))
            .arg("--dir")
            .arg(tmp.path()),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot reach"), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");
}
