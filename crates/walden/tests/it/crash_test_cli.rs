//! `walden crash-test` as the built binary: a few SIGKILLs of a writing child
//! in each durability mode must pass every check (exit code 0, `PASS`), and
//! the JSON figures must agree with the summary line.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn crash_test(mode: &str, extra: &[&str]) -> (String, Value) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("work");
    let json = tmp.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_walden"))
        .args(["crash-test", "--kills", "5", "--mode", mode, "--seed", "7"])
        .arg("--dir")
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "crash-test --mode {mode} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let summary = stdout
        .lines()
        .rfind(|l| l.starts_with("crash-test: "))
        .unwrap_or_else(|| panic!("no summary line in:\n{stdout}"))
        .to_string();
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (summary, report)
}

fn check_common(mode: &str, summary: &str, report: &Value) {
    assert!(
        summary.starts_with(&format!("crash-test: 5 kills, mode {mode}, ")),
        "{summary}"
    );
    assert!(summary.ends_with(": PASS"), "{summary}");
    for phrase in [
        " 0 lost durable,",
        " 0 prefix violations,",
        " 0 partial transactions (",
        " 0 bound violations,",
        " 0 other violations:",
    ] {
        assert!(summary.contains(phrase), "{phrase:?} not in {summary}");
    }
    assert_eq!(report["pass"], true);
    assert_eq!(report["kills"], 5);
    assert_eq!(report["mode"], mode);
    assert!(report["per_kill"].as_array().unwrap().len() == 5);
    let acked = report["acknowledged_commits"].as_u64().unwrap();
    assert!(acked > 0, "no commit was acknowledged: {summary}");
    assert_eq!(
        acked,
        report["durable_commits"].as_u64().unwrap() + report["delayed_commits"].as_u64().unwrap()
    );
    assert!(summary.contains(&format!(" {acked} acknowledged commits ")));
}

#[test]
fn durable_mode_passes_and_loses_nothing() {
    let (summary, report) = crash_test("durable", &[]);
    check_common("durable", &summary, &report);
    assert_eq!(report["delayed_commits"], 0);
    assert_eq!(report["lost_delayed"], 0);
}

#[test]
fn delayed_mode_with_exposure_bound_passes() {
    // Every commit is delayed, so the bound actually holds commits back.
    let (summary, report) = crash_test("delayed", &["--max-exposure-bytes", "8192"]);
    check_common("delayed", &summary, &report);
    assert!(summary.contains(", bound 8192 B)"), "{summary}");
    assert_eq!(report["durable_commits"], 0);
    assert!(report["max_lost_exposure_bytes"].as_u64().unwrap() <= 8192);
}

#[test]
fn mixed_mode_with_exposure_bound_passes() {
    let (summary, report) = crash_test("mixed", &["--max-exposure-bytes", "4096"]);
    check_common("mixed", &summary, &report);
    assert!(summary.contains(", bound 4096 B)"), "{summary}");
    assert!(report["max_lost_exposure_bytes"].as_u64().unwrap() <= 4096);
}

#[test]
fn refuses_a_non_empty_directory() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("x"), b"x").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_walden"))
        .args(["crash-test", "--kills", "1", "--dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(Path::new(&tmp.path().join("x")).exists());
}
