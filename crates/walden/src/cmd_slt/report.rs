//! What `walden slt` reports: counts per file, the first failures, the
//! failure categories, and the same as JSON.

use super::failures::{one_line, Category};
use serde::Serialize;
use std::io::Write;

#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct FileStats {
    pub(super) file: String,
    pub(super) statements_ok: u64,
    pub(super) statements_failed: u64,
    pub(super) queries_ok: u64,
    /// Ran but gave a wrong result (or succeeded where an error was expected).
    pub(super) queries_failed: u64,
    /// Returned an error.
    pub(super) queries_errored: u64,
    /// Over the time limit.
    pub(super) queries_timeout: u64,
    /// Over the memory limit.
    pub(super) queries_memory_limit: u64,
    pub(super) seconds: f64,
}

impl FileStats {
    pub(super) fn statements(&self) -> u64 {
        self.statements_ok + self.statements_failed
    }
    pub(super) fn queries(&self) -> u64 {
        self.queries_ok
            + self.queries_failed
            + self.queries_errored
            + self.queries_timeout
            + self.queries_memory_limit
    }
    pub(super) fn pass_pct(&self) -> f64 {
        let total = self.statements() + self.queries();
        if total == 0 {
            100.0
        } else {
            100.0 * (self.statements_ok + self.queries_ok) as f64 / total as f64
        }
    }
    pub(super) fn add(&mut self, o: &FileStats) {
        self.statements_ok += o.statements_ok;
        self.statements_failed += o.statements_failed;
        self.queries_ok += o.queries_ok;
        self.queries_failed += o.queries_failed;
        self.queries_errored += o.queries_errored;
        self.queries_timeout += o.queries_timeout;
        self.queries_memory_limit += o.queries_memory_limit;
        self.seconds += o.seconds;
    }
}

pub(super) struct FailureShown {
    pub(super) file: String,
    pub(super) line: u32,
    pub(super) category: String,
    pub(super) sql: String,
    pub(super) detail: String,
}

#[derive(Serialize)]
pub(super) struct Report<'a> {
    pub(super) unix_time: u64,
    pub(super) timeout_seconds: f64,
    pub(super) max_memory_mb: u64,
    pub(super) files: &'a [FileStats],
    pub(super) total: &'a FileStats,
    /// Statements that did not stop when cancelled at the time limit.
    pub(super) abandoned_statements: usize,
    pub(super) categories: Vec<Category>,
}

fn print_table(
    out: &mut impl Write,
    files: &[FileStats],
    total: &FileStats,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<16} {:>14} {:>14} {:>7} {:>8} {:>8} {:>7} {:>7} {:>9}",
        "file",
        "statements ok",
        "queries ok",
        "wrong",
        "errored",
        "timeout",
        "memory",
        "pass %",
        "time"
    )?;
    let row = |out: &mut dyn Write, s: &FileStats| {
        writeln!(
            out,
            "{:<16} {:>14} {:>14} {:>7} {:>8} {:>8} {:>7} {:>7.1} {:>8.1}s",
            s.file,
            format!("{}/{}", s.statements_ok, s.statements()),
            format!("{}/{}", s.queries_ok, s.queries()),
            s.queries_failed,
            s.queries_errored,
            s.queries_timeout,
            s.queries_memory_limit,
            s.pass_pct(),
            s.seconds
        )
    };
    for s in files {
        row(out, s)?;
    }
    if files.len() > 1 {
        row(out, total)?;
    }
    Ok(())
}

/// The human-readable report on stdout: the first failures, the table of
/// counts, abandoned statements, and the top `top` failure categories.
pub(super) fn print_report(
    out: &mut impl Write,
    shown: &[FailureShown],
    files: &[FileStats],
    total: &FileStats,
    abandoned: usize,
    cats: &[Category],
    top: usize,
) -> std::io::Result<()> {
    if !shown.is_empty() {
        writeln!(out, "first failures:")?;
        for f in shown {
            writeln!(out, "{}:{}: {}", f.file, f.line, f.category)?;
            writeln!(out, "    {}", one_line(&f.sql, 200))?;
            for l in f.detail.lines() {
                writeln!(out, "    | {l}")?;
            }
        }
        writeln!(out)?;
    }
    print_table(out, files, total)?;
    if abandoned > 0 {
        writeln!(
            out,
            "{abandoned} statement(s) did not stop when cancelled; their threads were left running"
        )?;
    }
    if !cats.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "failure categories ({} in all, top {}):",
            cats.len(),
            top.min(cats.len())
        )?;
        for c in cats.iter().take(top) {
            writeln!(
                out,
                "{:>6}  {}  ({} statements, {} queries)",
                c.count, c.category, c.statements, c.queries
            )?;
            for ex in &c.examples {
                writeln!(
                    out,
                    "          {}:{}: {}",
                    ex.file,
                    ex.line,
                    one_line(&ex.sql, 160)
                )?;
            }
        }
    }
    Ok(())
}
