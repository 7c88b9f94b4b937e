//! `walden slt` run as the built binary on `tests/fixtures/slt/mini.test`:
//! every record runs (failures do not stop the file), and the counts and
//! failure categories come out in the table and in the JSON.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mini() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slt/mini.test")
}

fn walden(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walden"))
        .args(args)
        .output()
        .expect("run walden")
}

#[test]
fn slt_counts_every_record_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("slt.json");
    let out = walden(&[
        "slt",
        mini().to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--max-failures-shown",
        "5",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");

    // The table: 5 of 6 statements, 5 of 7 queries (1 wrong, 1 error).
    let row = stdout
        .lines()
        .find(|l| l.starts_with("mini.test "))
        .unwrap_or_else(|| panic!("no table row:\n{stdout}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells[..8],
        ["mini.test", "5/6", "5/7", "1", "1", "0", "0", "76.9"],
        "{stdout}"
    );
    // The failures shown, at their lines, and the categories.
    assert!(
        stdout.contains("mini.test:22: succeeded where an error was expected"),
        "{stdout}"
    );
    assert!(stdout.contains("mini.test:55: result mismatch"), "{stdout}");
    assert!(stdout.contains("expected: 3"), "{stdout}");
    assert!(stdout.contains("actual:   2"), "{stdout}");
    assert!(stdout.contains("failure categories (3 in all"), "{stdout}");
    assert!(stderr.contains("mini.test: done"), "{stderr}");

    let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let f = &j["files"][0];
    assert_eq!(f["file"], "mini.test");
    assert_eq!(f["statements_ok"], 5);
    assert_eq!(f["statements_failed"], 1);
    assert_eq!(f["queries_ok"], 5);
    assert_eq!(f["queries_failed"], 1);
    assert_eq!(f["queries_errored"], 1);
    assert_eq!(f["queries_timeout"], 0);
    assert_eq!(j["total"]["queries_ok"], 5);
    let cats = j["categories"].as_array().unwrap();
    assert_eq!(cats.len(), 3, "{cats:?}");
    let cat = |prefix: &str| {
        cats.iter()
            .find(|c| c["category"].as_str().unwrap().starts_with(prefix))
            .unwrap_or_else(|| panic!("no category {prefix}: {cats:?}"))
    };
    assert_eq!(cat("UndefinedFunction: function")["queries"], 1);
    let mismatch = cat("result mismatch");
    assert_eq!(mismatch["count"], 1);
    assert_eq!(mismatch["examples"][0]["line"], 55);
    assert_eq!(
        mismatch["examples"][0]["sql"],
        "SELECT a + 1 FROM t1 WHERE a = 1"
    );
    assert_eq!(cat("succeeded where an error")["statements"], 1);
}

#[test]
fn slt_runs_each_file_on_a_fresh_instance() {
    // The same file twice: CREATE TABLE t1 would fail the second time if the
    // instance were shared.
    let m = mini();
    let out = walden(&["slt", m.to_str().unwrap(), m.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("mini.test "))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    let counts = |r: &str| r.split_whitespace().take(7).collect::<Vec<_>>().join(" ");
    assert_eq!(counts(rows[0]), counts(rows[1]), "{stdout}");
    assert_eq!(counts(rows[0]), "mini.test 5/6 5/7 1 1 0 0", "{stdout}");
    let total = stdout
        .lines()
        .find(|l| l.starts_with("total "))
        .unwrap_or_else(|| panic!("no total:\n{stdout}"));
    let cells: Vec<&str> = total.split_whitespace().collect();
    assert_eq!(cells[..3], ["total", "10/12", "10/14"], "{stdout}");
}

#[test]
fn slt_reports_an_unreadable_file() {
    let out = walden(&["slt", "/nonexistent/x.test"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.test"));
}
