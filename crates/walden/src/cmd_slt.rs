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
use serde::Serialize;
use sqllogictest::{
    parse_file, DBOutput, DefaultColumnType, Record, Runner, TestError, TestErrorKind, DB,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Once};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use walden_engine::{Instance, InstanceConfig, LogConfig, MemVfs};
use walden_sql::{DataType, ErrorKind, QueryOutput, SqlEngine, SqlError, SqlSession, Value};

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

// ------------------------------------------------------------------ the DB

/// How long a cancelled statement gets to stop before its thread is left
/// behind.
const CANCEL_GRACE: Duration = Duration::from_secs(10);
/// Stack of a worker thread: deep expressions and 64-table joins recurse.
const WORKER_STACK: usize = 256 << 20;

#[derive(Clone, Debug)]
enum Failure {
    /// The SQL layer returned an error.
    Sql(ErrorKind),
    /// Over the time limit.
    Timeout,
    /// Over the memory limit.
    Memory,
    /// The SQL layer panicked.
    Panic,
}

/// An error of one SQL text, as the sqllogictest runner sees it.
#[derive(Clone, Debug)]
struct DbError {
    failure: Failure,
    message: String,
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DbError {}

impl From<SqlError> for DbError {
    fn from(e: SqlError) -> Self {
        DbError {
            failure: Failure::Sql(e.kind),
            message: e.message,
        }
    }
}

type Reply = Result<Vec<Result<QueryOutput, SqlError>>, String>;

/// A thread owning one session, running one SQL text at a time.
struct Worker {
    jobs: mpsc::Sender<String>,
    replies: mpsc::Receiver<Reply>,
    cancel: Arc<AtomicBool>,
}

thread_local! {
    /// The last panic of this thread (message and location), set by the hook.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

const WORKER_NAME: &str = "slt-worker";

/// Keeps panics of worker threads off stderr: they are counted as failures.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some(WORKER_NAME) {
                let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
                    (*s).to_string()
                } else if let Some(s) = info.payload().downcast_ref::<String>() {
                    s.clone()
                } else {
                    "panic".to_string()
                };
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{at}")));
            } else {
                default(info);
            }
        }));
    });
}

impl Worker {
    fn start(session: SqlSession) -> std::io::Result<Worker> {
        let (jobs, job_rx) = mpsc::channel::<String>();
        let (reply_tx, replies) = mpsc::channel::<Reply>();
        let cancel = session.cancel_flag();
        let mut session = session;
        std::thread::Builder::new()
            .name(WORKER_NAME.into())
            .stack_size(WORKER_STACK)
            .spawn(move || {
                while let Ok(sql) = job_rx.recv() {
                    let reply = catch_unwind(AssertUnwindSafe(|| session.execute_batch(&sql)))
                        .map_err(|_| {
                            LAST_PANIC
                                .with(|p| p.borrow_mut().take())
                                .unwrap_or_else(|| "panic".to_string())
                        });
                    let panicked = reply.is_err();
                    if reply_tx.send(reply).is_err() || panicked {
                        // After a panic the session's state is unknown: the
                        // DB starts a new one.
                        break;
                    }
                }
            })?;
        Ok(Worker {
            jobs,
            replies,
            cancel,
        })
    }
}

/// Limits of one SQL text.
#[derive(Clone, Copy, Debug)]
struct Limits {
    time: Duration,
    /// Resident set size in bytes; `None`: no limit.
    memory: Option<u64>,
}

/// How often a running statement is checked against the limits.
const POLL: Duration = Duration::from_millis(50);
/// Growth of the resident set during a statement below which the memory
/// limit is not applied (memory freed earlier may still be counted as
/// resident by the allocator).
const MEMORY_SLACK: u64 = 64 << 20;

/// The resident set size of this process (Linux), in bytes.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A sqllogictest connection: one session of the file's instance.
struct WaldenDb {
    engine: Arc<SqlEngine>,
    worker: Option<Worker>,
    limits: Limits,
    /// Statements that did not stop when cancelled (their threads still run).
    abandoned: Arc<AtomicUsize>,
}

impl WaldenDb {
    fn new(engine: Arc<SqlEngine>, limits: Limits, abandoned: Arc<AtomicUsize>) -> Self {
        WaldenDb {
            engine,
            worker: None,
            limits,
            abandoned,
        }
    }

    fn worker(&mut self) -> Result<&Worker, DbError> {
        if self.worker.is_none() {
            let session = self.engine.connect("walden", "slt", "walden slt")?;
            let w = Worker::start(session).map_err(|e| DbError {
                failure: Failure::Panic,
                message: format!("cannot start a worker thread: {e}"),
            })?;
            self.worker = Some(w);
        }
        Ok(self.worker.as_ref().expect("worker started"))
    }

    fn execute(&mut self, sql: &str) -> Result<Vec<Result<QueryOutput, SqlError>>, DbError> {
        let limits = self.limits;
        let w = self.worker()?;
        if w.jobs.send(sql.to_string()).is_err() {
            self.worker = None;
            return Err(DbError {
                failure: Failure::Panic,
                message: "worker thread exited".into(),
            });
        }
        let died = |message: String| DbError {
            failure: Failure::Panic,
            message: format!("panic: {message}"),
        };
        let started = Instant::now();
        let rss_at_start = limits.memory.and_then(|_| resident_bytes());
        let over = loop {
            match w.replies.recv_timeout(POLL) {
                Ok(Ok(results)) => return Ok(results),
                Ok(Err(panic)) => {
                    self.worker = None;
                    return Err(died(panic));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.worker = None;
                    return Err(died("worker thread exited".into()));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if started.elapsed() >= limits.time {
                break DbError {
                    failure: Failure::Timeout,
                    message: format!("timeout: over {} s", limits.time.as_secs_f64()),
                };
            }
            if let (Some(max), Some(start)) = (limits.memory, rss_at_start) {
                if let Some(now) = resident_bytes() {
                    if now > max && now > start + MEMORY_SLACK {
                        break DbError {
                            failure: Failure::Memory,
                            message: format!("memory limit: over {} MiB resident", max >> 20),
                        };
                    }
                }
            }
        };
        w.cancel.store(true, Ordering::Relaxed);
        match w.replies.recv_timeout(CANCEL_GRACE) {
            // Stopped (cancelled, or done just now): the session goes on.
            Ok(Ok(_)) => {}
            // Panicked.
            Ok(Err(_)) | Err(mpsc::RecvTimeoutError::Disconnected) => self.worker = None,
            // Still running: leave the thread behind and go on with a new
            // session of the same instance.
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.abandoned.fetch_add(1, Ordering::Relaxed);
                self.worker = None;
            }
        }
        Err(over)
    }
}

impl DB for WaldenDb {
    type Error = DbError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let results = self.execute(sql)?;
        let mut last = None;
        for r in results {
            last = Some(r?);
        }
        let Some(out) = last else {
            return Ok(DBOutput::StatementComplete(0));
        };
        match out.columns {
            Some(cols) => Ok(DBOutput::Rows {
                types: cols.iter().map(|c| column_type(&c.ty)).collect(),
                rows: out
                    .rows
                    .iter()
                    .map(|r| r.iter().map(format_value).collect())
                    .collect(),
            }),
            None => Ok(DBOutput::StatementComplete(
                out.tag
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
            )),
        }
    }

    fn engine_name(&self) -> &str {
        "walden"
    }
}

/// sqllogictest's column type letter of a result column: `I`, `R` or `T`.
fn column_type(t: &DataType) -> DefaultColumnType {
    match t {
        DataType::SmallInt | DataType::Int | DataType::BigInt => DefaultColumnType::Integer,
        DataType::Real | DataType::Double | DataType::Decimal { .. } => {
            DefaultColumnType::FloatingPoint
        }
        DataType::Varchar(_) | DataType::Text => DefaultColumnType::Text,
        _ => DefaultColumnType::Any,
    }
}

/// A value as sqllogictest prints it.
fn format_value(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:.3}"),
        Value::Decimal(d) => format!("{d:.3}"),
        Value::Text(s) if s.is_empty() => "(empty)".into(),
        Value::Text(s) => printable(s),
        other => printable(&other.to_string()),
    }
}

/// SQLite's harness prints characters outside printable ASCII as `@`.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '@' })
        .collect()
}

fn fresh_engine() -> Result<Arc<SqlEngine>, String> {
    let inst = Instance::open(InstanceConfig {
        vfs: Arc::new(MemVfs::new()),
        log: LogConfig {
            segment_size: 4 << 20,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        ..InstanceConfig::new("/slt")
    })
    .map_err(|e| format!("cannot open an in-memory instance: {e}"))?;
    Ok(SqlEngine::new(inst))
}

// ------------------------------------------------------------ the counting

#[derive(Clone, Debug, Default, Serialize)]
struct FileStats {
    file: String,
    statements_ok: u64,
    statements_failed: u64,
    queries_ok: u64,
    /// Ran but gave a wrong result (or succeeded where an error was expected).
    queries_failed: u64,
    /// Returned an error.
    queries_errored: u64,
    /// Over the time limit.
    queries_timeout: u64,
    /// Over the memory limit.
    queries_memory_limit: u64,
    seconds: f64,
}

impl FileStats {
    fn statements(&self) -> u64 {
        self.statements_ok + self.statements_failed
    }
    fn queries(&self) -> u64 {
        self.queries_ok
            + self.queries_failed
            + self.queries_errored
            + self.queries_timeout
            + self.queries_memory_limit
    }
    fn pass_pct(&self) -> f64 {
        let total = self.statements() + self.queries();
        if total == 0 {
            100.0
        } else {
            100.0 * (self.statements_ok + self.queries_ok) as f64 / total as f64
        }
    }
    fn add(&mut self, o: &FileStats) {
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

#[derive(Clone, Debug, Serialize)]
struct Example {
    file: String,
    line: u32,
    sql: String,
}

#[derive(Clone, Debug, Serialize)]
struct Category {
    category: String,
    count: u64,
    statements: u64,
    queries: u64,
    examples: Vec<Example>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RecordKind {
    Statement,
    Query,
}

/// What became of a failed record.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Outcome {
    Failed,
    Errored,
    Timeout,
    Memory,
}

#[derive(Default)]
struct Categories {
    by_name: HashMap<String, Category>,
}

impl Categories {
    fn add(&mut self, name: &str, kind: RecordKind, ex: Example, keep: usize) {
        let c = self
            .by_name
            .entry(name.to_string())
            .or_insert_with(|| Category {
                category: name.to_string(),
                count: 0,
                statements: 0,
                queries: 0,
                examples: Vec::new(),
            });
        c.count += 1;
        match kind {
            RecordKind::Statement => c.statements += 1,
            RecordKind::Query => c.queries += 1,
        }
        if c.examples.len() < keep {
            c.examples.push(ex);
        }
    }

    fn sorted(&self) -> Vec<Category> {
        let mut v: Vec<Category> = self.by_name.values().cloned().collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.category.cmp(&b.category)));
        v
    }
}

/// Classifies a failed record: its outcome, its category, and a short
/// description for the failure listing.
fn classify(err: &TestError) -> (Outcome, String, String) {
    // The message without the SQL text (shown separately).
    let full = err.kind().to_string();
    let detail = first_lines(full.split("\n[SQL]").next().unwrap_or(""), 8);
    match err.kind() {
        TestErrorKind::Fail { err, .. } => match err.downcast_ref::<DbError>() {
            Some(DbError {
                failure: Failure::Timeout,
                ..
            }) => (Outcome::Timeout, "timeout".into(), detail),
            Some(DbError {
                failure: Failure::Memory,
                ..
            }) => (Outcome::Memory, "memory limit".into(), detail),
            Some(DbError {
                failure: Failure::Panic,
                message,
            }) => (
                Outcome::Errored,
                format!("panic: {}", normalize_message(message)),
                detail,
            ),
            Some(DbError {
                failure: Failure::Sql(kind),
                message,
            }) => (
                Outcome::Errored,
                format!("{kind:?}: {}", normalize_message(message)),
                detail,
            ),
            None => (
                Outcome::Errored,
                normalize_message(&err.to_string()),
                detail,
            ),
        },
        TestErrorKind::QueryResultMismatch {
            expected, actual, ..
        } => (
            Outcome::Failed,
            mismatch_category(&expected, &actual),
            format!(
                "expected: {}\nactual:   {}",
                one_line(&expected, 160),
                one_line(&actual, 160)
            ),
        ),
        TestErrorKind::Ok { .. } => (
            Outcome::Failed,
            "succeeded where an error was expected".into(),
            detail,
        ),
        TestErrorKind::ErrorMismatch { .. } => {
            (Outcome::Failed, "a different error message".into(), detail)
        }
        TestErrorKind::StatementResultMismatch { .. } => {
            (Outcome::Failed, "wrong affected-row count".into(), detail)
        }
        TestErrorKind::QueryResultColumnsMismatch { .. } => {
            (Outcome::Failed, "wrong column types".into(), detail)
        }
        other => (
            Outcome::Failed,
            normalize_message(&first_lines(&other.to_string(), 1)),
            detail,
        ),
    }
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines().take(n).collect::<Vec<_>>().join("\n")
}

/// How many values a printed result holds: `N values hashing to ...` or the
/// whitespace-separated tokens.
fn value_count(s: &str) -> usize {
    let t = s.trim();
    if let Some((n, _)) = t.split_once(" values hashing to ") {
        if let Ok(n) = n.trim().parse() {
            return n;
        }
    }
    t.split_ascii_whitespace().count()
}

fn mismatch_category(expected: &str, actual: &str) -> String {
    let (e, a) = (value_count(expected), value_count(actual));
    let what = if a == 0 {
        "no rows where rows were expected"
    } else if e == 0 {
        "rows where none were expected"
    } else if a < e {
        "fewer values"
    } else if a > e {
        "more values"
    } else {
        "same number of values, different values"
    };
    format!("result mismatch: {what}")
}

/// Groups messages that differ only in names, literals and numbers: quoted
/// text becomes `…`, numbers `N`; for "X is not supported" only the first
/// words of X are kept.
fn normalize_message(m: &str) -> String {
    let m = m.lines().next().unwrap_or("").trim();
    let mut out = String::new();
    let mut chars = m.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' | '`' => {
                // Keep the quote marks, drop what they enclose.
                out.push(c);
                out.push('…');
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                }
                out.push(c);
            }
            '0'..='9' => {
                let prev_word = out
                    .chars()
                    .last()
                    .is_some_and(|p| p.is_alphanumeric() || p == '_');
                while chars
                    .peek()
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.')
                {
                    chars.next();
                }
                if prev_word {
                    // Part of an identifier (t1, col2): the digits go.
                } else {
                    out.push('N');
                }
            }
            _ => out.push(c),
        }
    }
    if let Some(what) = out.strip_suffix(" is not supported") {
        let mut words = what.split_whitespace();
        let head = words.next().unwrap_or("");
        let rest: Vec<&str> = words.take(3).collect();
        let more = what.split_whitespace().count() > 4;
        return format!(
            "{head} {}{} is not supported",
            rest.join(" "),
            if more { " …" } else { "" }
        );
    }
    const MAX: usize = 100;
    if out.chars().count() > MAX {
        let cut: String = out.chars().take(MAX).collect();
        return format!("{cut}…");
    }
    out
}

// ---------------------------------------------------------------- running

struct FailureShown {
    file: String,
    line: u32,
    category: String,
    sql: String,
    detail: String,
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

fn one_line(sql: &str, max: usize) -> String {
    let s = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > max {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    } else {
        s
    }
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

#[derive(Serialize)]
struct Report<'a> {
    unix_time: u64,
    timeout_seconds: f64,
    max_memory_mb: u64,
    files: &'a [FileStats],
    total: &'a FileStats,
    /// Statements that did not stop when cancelled at the time limit.
    abandoned_statements: usize,
    categories: Vec<Category>,
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

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = (|| -> std::io::Result<()> {
        if !run.shown.is_empty() {
            writeln!(out, "first failures:")?;
            for f in &run.shown {
                writeln!(out, "{}:{}: {}", f.file, f.line, f.category)?;
                writeln!(out, "    {}", one_line(&f.sql, 200))?;
                for l in f.detail.lines() {
                    writeln!(out, "    | {l}")?;
                }
            }
            writeln!(out)?;
        }
        print_table(&mut out, &files, &total)?;
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
                args.categories.min(cats.len())
            )?;
            for c in cats.iter().take(args.categories) {
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
    })();

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_sqllogictest_expects() {
        assert_eq!(format_value(&Value::Null), "NULL");
        assert_eq!(format_value(&Value::Int(-42)), "-42");
        assert_eq!(format_value(&Value::Float(2.5)), "2.500");
        assert_eq!(format_value(&Value::text("")), "(empty)");
        assert_eq!(format_value(&Value::text("a b")), "a b");
        assert_eq!(format_value(&Value::text("é\t")), "@@");
    }

    #[test]
    fn messages_are_grouped() {
        assert_eq!(
            normalize_message("column \"x1\" does not exist"),
            "column \"…\" does not exist"
        );
        assert_eq!(
            normalize_message("expression CASE WHEN a > 3 THEN b END is not supported"),
            "expression CASE WHEN a … is not supported"
        );
        assert_eq!(
            normalize_message("value 12 out of range"),
            "value N out of range"
        );
        assert_eq!(normalize_message("table t1 missing"), "table t missing");
    }

    #[test]
    fn mismatches_are_grouped() {
        assert_eq!(
            mismatch_category("30 values hashing to ab", "27 values hashing to cd"),
            "result mismatch: fewer values"
        );
        assert_eq!(
            mismatch_category("1\n2", "3 4"),
            "result mismatch: same number of values, different values"
        );
        assert_eq!(
            mismatch_category("1", ""),
            "result mismatch: no rows where rows were expected"
        );
    }
}
