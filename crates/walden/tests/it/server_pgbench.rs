//! pgbench against `walden serve`: server-side initialization, then the
//! built-in TPC-B script with 4 clients in the simple, extended and prepared
//! protocols: no failed transaction, and the balances agree afterwards.

use crate::server_support;

use server_support::{have, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;

fn pgbench(s: &Serve, args: &[&str]) -> String {
    let out = run_with_deadline(
        Command::new("pgbench")
            .args(["-h", "127.0.0.1", "-p", &s.port.to_string(), "-U", "walden"])
            .args(args)
            .arg("walden"),
        Duration::from_secs(600),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "pgbench {args:?} failed ({}):\n{text}",
        out.status
    );
    text
}

fn psql_value(s: &Serve, sql: &str) -> String {
    let out = run_with_deadline(
        Command::new("psql").args([
            "-X",
            "-At",
            "-h",
            "127.0.0.1",
            "-p",
            &s.port.to_string(),
            "-U",
            "walden",
            "-d",
            "walden",
            "-c",
            sql,
        ]),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn pgbench_tpcb_in_every_protocol() {
    if !have("pgbench", &["--version"]) || !have("psql", &["--version"]) {
        server_support::missing_tool(
            "pgbench/psql are not installed (Debian: postgresql-15, postgresql-client-15)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    pgbench(&s, &["-i", "-s", "1", "-I", "dtGp"]);
    assert_eq!(
        psql_value(&s, "SELECT count(*) FROM pgbench_accounts"),
        "100000"
    );
    for mode in ["simple", "extended", "prepared"] {
        let out = pgbench(&s, &["-n", "-c", "4", "-j", "2", "-t", "200", "-M", mode]);
        assert!(
            out.contains("number of transactions actually processed: 800/800"),
            "-M {mode}:\n{out}"
        );
        assert!(
            out.contains("number of failed transactions: 0 "),
            "-M {mode}:\n{out}"
        );
        let tps = out
            .lines()
            .find(|l| l.starts_with("tps"))
            .unwrap_or("tps = ?");
        eprintln!("pgbench -M {mode}: {tps}");
    }
    let sums: Vec<String> = [
        "SELECT sum(abalance) FROM pgbench_accounts",
        "SELECT sum(tbalance) FROM pgbench_tellers",
        "SELECT sum(bbalance) FROM pgbench_branches",
        "SELECT sum(delta) FROM pgbench_history",
    ]
    .iter()
    .map(|q| psql_value(&s, q))
    .collect();
    assert!(
        sums.iter().all(|v| v == &sums[0]),
        "balances disagree: {sums:?}"
    );
    assert_eq!(
        psql_value(&s, "SELECT count(*) FROM pgbench_history"),
        "2400"
    );

    // The built-in script's startup queries (count and the partition probe)
    // in the default mode, without -n.
    let out = pgbench(&s, &["-c", "1", "-t", "10"]);
    assert!(out.contains("number of failed transactions: 0 "), "{out}");
}
