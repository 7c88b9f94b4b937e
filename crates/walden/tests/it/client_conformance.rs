//! The client conformance suite: one program per client driver
//! (`tests/clients/*_suite.{py,js}`) against a `walden serve` started here. Each
//! program reports every check as PASS, FAIL or GAP (a known missing feature,
//! listed in docs/conformance.md) and exits non-zero on a FAIL; a hang is
//! cut off by a per-check limit inside the program and a deadline here. A
//! missing driver fails the test: CI installs them (`.ci/run`). The same
//! programs run against PostgreSQL: `python3 FILE 'host=... port=...'` (or
//! `node FILE ...`).

use crate::server_support;

use server_support::{have, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;

fn clients_dir() -> String {
    format!("{}/tests/clients", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `interpreter program` against a fresh server and fails on any FAIL.
fn run_suite(interpreter: &str, program: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let path = format!("{}/{program}", clients_dir());
    let out = run_with_deadline(
        Command::new(interpreter).args([&path, &s.conn_str()]),
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

fn require_python_module(module: &str) {
    assert!(
        have("python3", &["-c", &format!("import {module}")]),
        "python3 with {module} is required (pip install {module}; .ci/run installs it)"
    );
}

#[test]
fn psycopg_conformance() {
    require_python_module("psycopg");
    run_suite("python3", "psycopg_suite.py");
}

#[test]
fn asyncpg_conformance() {
    require_python_module("asyncpg");
    run_suite("python3", "asyncpg_suite.py");
}

#[test]
fn node_postgres_conformance() {
    let modules = format!("{}/node_modules", clients_dir());
    assert!(
        have("node", &["--version"])
            && std::path::Path::new(&format!("{modules}/pg")).exists()
            && std::path::Path::new(&format!("{modules}/pg-cursor")).exists(),
        "node with pg and pg-cursor is required (npm ci --prefix {}; .ci/run does it)",
        clients_dir()
    );
    run_suite("node", "node_pg_suite.js");
}

#[test]
fn sqlalchemy_conformance() {
    require_python_module("psycopg");
    require_python_module("sqlalchemy");
    run_suite("python3", "sqlalchemy_suite.py");
}

#[test]
fn pandas_and_alembic_conformance() {
    require_python_module("psycopg");
    require_python_module("sqlalchemy");
    require_python_module("pandas");
    require_python_module("alembic");
    run_suite("python3", "pandas_alembic_suite.py");
}

#[test]
fn pgcli_completion_conformance() {
    require_python_module("pgcli");
    run_suite("python3", "pgcli_suite.py");
}
