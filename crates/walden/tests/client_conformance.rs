//! The client conformance suite: one program per client driver
//! (`tests/clients/*_suite.py`) against a `walden serve` started here. Each
//! program reports every check as PASS, FAIL or GAP (a known missing feature,
//! listed in docs/conformance.md) and exits non-zero on a FAIL; a hang is
//! cut off by a per-check limit inside the program and a deadline here. A
//! missing driver fails the test: CI installs them (`.ci/run`). The same
//! programs run against PostgreSQL: `python3 FILE 'host=... port=...'`.

mod server_support;

use server_support::{have, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;

fn run_suite(module: &str, program: &str) {
    assert!(
        have("python3", &["-c", &format!("import {module}")]),
        "python3 with {module} is required (pip install {module}; .ci/run installs it)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let path = format!("{}/tests/clients/{program}", env!("CARGO_MANIFEST_DIR"));
    let out = run_with_deadline(
        Command::new("python3").args([&path, &s.conn_str()]),
        Duration::from_secs(300),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains(" ok, 0 failed"),
        "{program} failed (status {}):\n{stdout}\n{stderr}\nserver log:\n{}",
        out.status,
        s.log()
    );
}

#[test]
fn psycopg_conformance() {
    run_suite("psycopg", "psycopg_suite.py");
}

#[test]
fn asyncpg_conformance() {
    run_suite("asyncpg", "asyncpg_suite.py");
}
