//! `walden slt`: a counting sqllogictest runner.
//!
//! Each file runs against a fresh in-memory instance (`MemVfs`, background
//! checkpoints off) through `walden-sql` in this process. Records are parsed
//! and checked by the `sqllogictest` crate (its parser, its per-record
//! `Runner::run`, its default validator, hashing and sort modes), but unlike
//! its stock driver this one does not stop at the first failure: every record
//! runs, and statements and queries are counted per file. Failures are grouped
//! into categories by a normalized form of their message.
//!
//! Each SQL text runs on a worker thread that owns the session, so a record
//! can be given limits: past the time limit, or when it grows the process's
//! resident set past the memory limit (a cross product of a many-table join),
//! the statement is cancelled through the session's cancel flag and counted
//! as a timeout or as over the memory limit. A statement that does not stop
//! when cancelled is left running on its thread and the file continues on a
//! new session of the same instance.
//!
//! Values are printed the way sqllogictest expects: integers in decimal,
//! floating-point and decimal values with 3 decimals (SQLite's `%.3f` for `R`
//! columns), NULL as `NULL`, the empty string as `(empty)`, and characters
//! outside printable ASCII as `@`.
//!
//! The exit code is 0 when every file was read and run, whatever the pass
//! rate; 2 when a file could not be read or parsed, or the JSON not written.

use clap::Args;
use db::{fresh_engine, install_panic_hook, DbError, Limits, WaldenDb};
use failures::{classify, Categories, Example, Outcome, RecordKind};
use report::{print_report, FailureShown, FileStats, Report};
use sqllogictest::{parse_file, DefaultColumnType, Record, Runner};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod db;
mod failures;
mod report;

#[derive(Debug, Args)]
pub struct SltArgs {
    /// sqllogictest files; each runs against its own fresh in-memory instance.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Write the counts and the failure categories as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Print the details (location, SQL, message) of at most this many
    /// failures, the first ones met.
    #[arg(long, default_value_t = 10)]
    max_failures_shown: usize,
    /// Time limit of one record, in seconds; past it the statement is
    /// cancelled and counted as a timeout.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Memory limit of the process, in MiB (0: none); a statement that grows
    /// the resident set past it is cancelled and counted as over the memory
    /// limit. Guards against cross products of many-table joins.
    #[arg(long, default_value_t = 4096)]
    max_memory_mb: u64,
    /// How many failure categories to print (the JSON has them all).
    #[arg(long, default_value_t = 20)]
    categories: usize,
    /// Example SQL texts kept per category.
    #[arg(long, default_value_t = 3)]
    examples: usize,
}

struct Run<'a> {
    args: &'a SltArgs,
    categories: Categories,
    shown: Vec<FailureShown>,
    abandoned: Arc<AtomicUsize>,
}

fn short_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

impl Run<'_> {
    fn file(&mut self, path: &Path) -> Result<FileStats, String> {
        let name = short_name(path);
        let records = parse_file::<DefaultColumnType>(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let engine = fresh_engine()?;
        let limits = Limits {
            time: Duration::from_secs_f64(self.args.timeout.max(0.001)),
            memory: (self.args.max_memory_mb > 0).then_some(self.args.max_memory_mb << 20),
        };
        let abandoned = self.abandoned.clone();
        let mut runner = Runner::new(move || {
            std::future::ready(Ok::<_, DbError>(WaldenDb::new(
                engine.clone(),
                limits,
                abandoned.clone(),
            )))
        });
        let total = records
            .iter()
            .filter(|r| matches!(r, Record::Statement { .. } | Record::Query { .. }))
            .count();
        let mut st = FileStats {
            file: name.clone(),
            ..Default::default()
        };
        let started = Instant::now();
        let mut last_progress = Instant::now();
        let mut done = 0usize;
        eprintln!("{name}: {total} records");
        for rec in records {
            let (kind, sql, line) = match &rec {
                Record::Statement { sql, loc, .. } => {
                    (RecordKind::Statement, sql.clone(), loc.line())
                }
                Record::Query { sql, loc, .. } => (RecordKind::Query, sql.clone(), loc.line()),
                Record::Halt { .. } => break,
                _ => {
                    // Control records (hash-threshold, sort and result
                    // modes) only configure the runner.
                    let _ = runner.run(rec);
                    continue;
                }
            };
            let result = runner.run(rec);
            done += 1;
            match result {
                Ok(_) => match kind {
                    RecordKind::Statement => st.statements_ok += 1,
                    RecordKind::Query => st.queries_ok += 1,
                },
                Err(e) => {
                    let (outcome, category, detail) = classify(&e);
                    match (kind, outcome) {
                        (RecordKind::Statement, _) => st.statements_failed += 1,
                        (RecordKind::Query, Outcome::Failed) => st.queries_failed += 1,
                        (RecordKind::Query, Outcome::Errored) => st.queries_errored += 1,
                        (RecordKind::Query, Outcome::Timeout) => st.queries_timeout += 1,
                        (RecordKind::Query, Outcome::Memory) => st.queries_memory_limit += 1,
                    }
                    let ex = Example {
                        file: name.clone(),
                        line,
                        sql: sql.clone(),
                    };
                    self.categories.add(&category, kind, ex, self.args.examples);
                    if self.shown.len() < self.args.max_failures_shown {
                        self.shown.push(FailureShown {
                            file: name.clone(),
                            line,
                            category,
                            sql,
                            detail,
                        });
                    }
                }
            }
            if last_progress.elapsed() >= Duration::from_secs(10) {
                last_progress = Instant::now();
                eprintln!(
                    "{name}: {done}/{total} records, {:.0}% passing so far, {:.0} s",
                    st.pass_pct(),
                    started.elapsed().as_secs_f64()
                );
            }
        }
        runner.shutdown();
        st.seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "{name}: done, statements {}/{}, queries {}/{}, {:.1}% in {:.1} s",
            st.statements_ok,
            st.statements(),
            st.queries_ok,
            st.queries(),
            st.pass_pct(),
            st.seconds
        );
        Ok(st)
    }
}

pub fn run(args: SltArgs) -> ExitCode {
    install_panic_hook();
    let mut run = Run {
        args: &args,
        categories: Categories::default(),
        shown: Vec::new(),
        abandoned: Arc::new(AtomicUsize::new(0)),
    };
    let mut files = Vec::new();
    let mut bad = false;
    for path in &args.files {
        match run.file(path) {
            Ok(st) => files.push(st),
            Err(e) => {
                eprintln!("walden slt: {e}");
                bad = true;
            }
        }
    }
    let mut total = FileStats {
        file: "total".into(),
        ..Default::default()
    };
    for s in &files {
        total.add(s);
    }
    let cats = run.categories.sorted();
    let abandoned = run.abandoned.load(Ordering::Relaxed);

    let _ = print_report(
        &mut std::io::stdout().lock(),
        &run.shown,
        &files,
        &total,
        abandoned,
        &cats,
        args.categories,
    );

    if let Some(path) = &args.json {
        let report = Report {
            unix_time: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            timeout_seconds: args.timeout,
            max_memory_mb: args.max_memory_mb,
            files: &files,
            total: &total,
            abandoned_statements: abandoned,
            categories: cats,
        };
        let text = serde_json::to_string_pretty(&report).expect("report serializes");
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("walden slt: cannot write {}: {e}", path.display());
            bad = true;
        }
    }
    if bad {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
