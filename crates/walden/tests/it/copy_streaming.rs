//! psql's `\copy ... from` against `walden serve`: a million rows go in
//! through one COPY (inserted batch by batch as they arrive), and a bad
//! line deep in a large input fails the whole COPY with PostgreSQL's error
//! and CONTEXT line while psql's session goes on.

use crate::server_support;

use server_support::{have, run_with_deadline, Serve};
use std::io::Write;
use std::process::{Command, Output};
use std::time::Duration;

fn psql(s: &Serve, args: &[&str]) -> Output {
    run_with_deadline(
        Command::new("psql")
            .args(["-X", "-h", "127.0.0.1", "-p", &s.port.to_string()])
            .args(["-U", "walden", "-d", "walden", "-At"])
            .args(args),
        Duration::from_secs(300),
    )
}

/// `n` lines of COPY text: `i<TAB>row i`, line `bad` (if any) with `x` as
/// its key.
fn write_input(path: &std::path::Path, n: usize, bad: Option<usize>) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 1..=n {
        if Some(i) == bad {
            writeln!(f, "x\trow {i}").unwrap();
        } else {
            writeln!(f, "{i}\trow {i}").unwrap();
        }
    }
    f.flush().unwrap();
}

/// VmHWM (peak resident memory) of a process, in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn psql_copies_a_million_rows_and_reports_a_bad_line_in_context() {
    if !have("psql", &["--version"]) {
        server_support::missing_tool("psql is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let out = psql(
        &s,
        &[
            "-c",
            "CREATE TABLE big (a int PRIMARY KEY, b text NOT NULL)",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let input = tmp.path().join("big.copy");
    write_input(&input, 1_000_000, None);
    let before = peak_rss_kb(s.child.id());
    let out = psql(
        &s,
        &[
            "-c",
            &format!("\\copy big from '{}'", input.display()),
            "-c",
            "SELECT count(*), sum(a), min(b), max(a) FROM big",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "COPY 1000000\n1000000|500000500000|row 1|1000000\n");
    let after = peak_rss_kb(s.child.id());
    eprintln!(
        "peak RSS {} MB -> {} MB for a {} MB COPY",
        before >> 10,
        after >> 10,
        std::fs::metadata(&input).unwrap().len() >> 20
    );

    // Line 700,000 of 800,000 does not convert: nothing of the COPY stays,
    // the error names the line and column, and the next command of the same
    // psql session runs.
    let input = tmp.path().join("bad.copy");
    write_input(&input, 800_000, Some(700_000));
    let out = psql(
        &s,
        &[
            "-c",
            "CREATE TABLE big2 (a int PRIMARY KEY, b text)",
            "-c",
            &format!("\\copy big2 from '{}'", input.display()),
            "-c",
            "SELECT count(*) FROM big2",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ERROR:  invalid input syntax for type integer: \"x\"")
            && stderr.contains("CONTEXT:  COPY big2, line 700000, column a: \"x\""),
        "{stderr}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "CREATE TABLE\n0\n",
        "{stderr}"
    );
}
