//! The sqllogictest connection: one session of a file's in-memory
//! instance on a worker thread, so a record can be cancelled at its time
//! or memory limit, and values printed the way sqllogictest expects.

use sqllogictest::{DBOutput, DefaultColumnType, DB};
use std::cell::RefCell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Once};
use std::time::{Duration, Instant};
use walden_engine::{Instance, InstanceConfig, LogConfig, MemVfs};
use walden_sql::{DataType, ErrorKind, QueryOutput, SqlEngine, SqlError, SqlSession, Value};

/// How long a cancelled statement gets to stop before its thread is left
/// behind.
const CANCEL_GRACE: Duration = Duration::from_secs(10);
/// Stack of a worker thread: deep expressions and 64-table joins recurse.
const WORKER_STACK: usize = 256 << 20;

#[derive(Clone, Debug)]
pub(super) enum Failure {
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
pub(super) struct DbError {
    pub(super) failure: Failure,
    pub(super) message: String,
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
pub(super) fn install_panic_hook() {
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
pub(super) struct Limits {
    pub(super) time: Duration,
    /// Resident set size in bytes; `None`: no limit.
    pub(super) memory: Option<u64>,
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
pub(super) struct WaldenDb {
    engine: Arc<SqlEngine>,
    worker: Option<Worker>,
    limits: Limits,
    /// Statements that did not stop when cancelled (their threads still run).
    abandoned: Arc<AtomicUsize>,
}

impl WaldenDb {
    pub(super) fn new(engine: Arc<SqlEngine>, limits: Limits, abandoned: Arc<AtomicUsize>) -> Self {
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
        Value::Decimal(d) => d.round_at(3).to_string(),
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

pub(super) fn fresh_engine() -> Result<Arc<SqlEngine>, String> {
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
}
