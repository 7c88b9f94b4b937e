//! SQLite as a peer: one database file per (experiment, mode), WAL journal,
//! `synchronous = FULL` (every commit syncs the log) against `NORMAL` (the
//! log is synced only at checkpoints), in this process through rusqlite.
//!
//! Counters: SQLite keeps none for its log, so every connection opens
//! through a counting VFS ([`super::sqlite_vfs`]) that sees the calls SQLite
//! makes on the database's `-wal` file:
//! - `log_writes`, `log_bytes`: write calls on the log and their bytes (SQLite
//!   writes a frame as two calls: its 24-byte header, then the page);
//! - `log_flushes`: syncs of the log (per commit under FULL; under NORMAL
//!   only before checkpoints, including the automatic ones every 1,000 pages);
//! - `log_bytes_flushed`: bytes written to the log before each sync;
//! - `io_stall_write_ms`: time spent in those writes and syncs;
//! - `write_transactions`: commits of write transactions, counted by a
//!   commit hook on every connection (SQLite calls it for those only).
//!   No WRITELOG waits: SQLite has no wait statistics.

use super::sqlite_vfs::{self, WalStats, VFS_NAME};
use super::target::{
    Conn, Counters, Db, Dialect, Durability, ModeSpec, Recovery, Target, TargetKind,
};
use crate::{BenchError, Result};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// Concurrent writers queue on SQLite's single write lock: a session waits
/// this long for it instead of failing with SQLITE_BUSY.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// SQLite databases under one directory.
pub struct SqliteTarget {
    dir: PathBuf,
}

impl SqliteTarget {
    /// Databases go in `dir/sqlite`.
    pub fn new(dir: &Path) -> std::result::Result<SqliteTarget, String> {
        sqlite_vfs::ensure_registered()?;
        let d = dir.join("sqlite");
        std::fs::create_dir_all(&d).map_err(|e| format!("cannot make {}: {e}", d.display()))?;
        // The counting VFS knows a log by the absolute path SQLite opens it
        // under, so open the databases under the canonical one.
        let dir = d
            .canonicalize()
            .map_err(|e| format!("cannot resolve {}: {e}", d.display()))?;
        Ok(SqliteTarget { dir })
    }
}

fn sync_setting(d: Durability) -> &'static str {
    match d {
        Durability::Full => "FULL",
        Durability::Relaxed => "NORMAL",
    }
}

fn err(e: rusqlite::Error, what: &str) -> BenchError {
    BenchError::Other(format!("sqlite: {e} ({what})"))
}

impl Target for SqliteTarget {
    fn kind(&self) -> TargetKind {
        TargetKind::Sqlite
    }
    fn label(&self) -> String {
        format!("sqlite {}", rusqlite::version())
    }
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
    fn mode(&self, d: Durability) -> ModeSpec {
        let s = sync_setting(d);
        ModeSpec {
            durability: d,
            label: format!("synchronous = {s}"),
            short: s.into(),
        }
    }
    fn fresh_db(
        &self,
        name: &str,
        d: Durability,
        _recovery: Option<Recovery>,
    ) -> Result<Box<dyn Db>> {
        let path = self.dir.join(format!("{name}.db"));
        let path_str = path
            .to_str()
            .ok_or_else(|| BenchError::Other(format!("path {path:?} is not UTF-8")))?
            .to_string();
        remove_files(&path_str)?;
        let stats = Arc::new(WalStats::default());
        sqlite_vfs::register(&path_str, stats.clone()).map_err(BenchError::Other)?;
        let db = SqliteDb {
            path: path_str,
            sync: sync_setting(d),
            stats,
            commits: Arc::new(AtomicU64::new(0)),
        };
        // Make the file and check the log mode took (it stays in the file).
        let mut c = db.open()?;
        let mode = c.query("PRAGMA journal_mode")?;
        let mode = mode.first().and_then(|r| r[0].clone()).unwrap_or_default();
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(BenchError::Other(format!(
                "sqlite: journal_mode is {mode:?}, not WAL, for {}",
                db.path
            )));
        }
        Ok(Box::new(db))
    }
}

fn remove_files(path: &str) -> Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        match std::fs::remove_file(format!("{path}{suffix}")) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(BenchError::Io(e)),
        }
    }
    Ok(())
}

struct SqliteDb {
    path: String,
    sync: &'static str,
    stats: Arc<WalStats>,
    commits: Arc<AtomicU64>,
}

impl SqliteDb {
    fn open(&self) -> Result<SqliteConn> {
        let what = &self.path;
        let mut c = Connection::open_with_flags_and_vfs(&self.path, OpenFlags::default(), VFS_NAME)
            .map_err(|e| err(e, what))?;
        c.busy_timeout(BUSY_TIMEOUT).map_err(|e| err(e, what))?;
        c.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {}",
            self.sync
        ))
        .map_err(|e| err(e, what))?;
        let commits = self.commits.clone();
        c.commit_hook(Some(move || {
            commits.fetch_add(1, Relaxed);
            false // let the commit proceed
        }))
        .map_err(|e| err(e, what))?;
        Ok(SqliteConn(c))
    }
}

impl Db for SqliteDb {
    fn connect(&self) -> Result<Box<dyn Conn>> {
        Ok(Box::new(self.open()?))
    }

    /// Read from this process's own counters; `_monitor` is not needed.
    fn counters(&self, _monitor: &mut dyn Conn) -> Result<Counters> {
        let s = &self.stats;
        let ns = s.write_ns.load(Relaxed) + s.sync_ns.load(Relaxed);
        Ok(Counters {
            log_writes: Some(s.writes.load(Relaxed)),
            log_bytes: Some(s.bytes.load(Relaxed)),
            io_stall_write_ms: Some(ns as f64 / 1e6),
            log_flushes: Some(s.syncs.load(Relaxed)),
            log_bytes_flushed: Some(s.bytes_synced.load(Relaxed)),
            write_transactions: Some(self.commits.load(Relaxed)),
            writelog_waits: None,
            writelog_wait_ms: None,
        })
    }

    /// No-op: SQLite syncs its log on demand only as part of a checkpoint,
    /// which also rewrites the database file, so it would measure more than
    /// a log flush. NORMAL commits become durable at the next checkpoint.
    fn flush_log(&self, _conn: &mut dyn Conn) -> Result<bool> {
        Ok(false)
    }

    fn checkpoint(&self, conn: &mut dyn Conn) -> Result<()> {
        conn.exec("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    fn drop_db(self: Box<Self>) -> Result<()> {
        sqlite_vfs::unregister(&self.path);
        remove_files(&self.path)
    }
}

/// One SQLite connection.
struct SqliteConn(Connection);

impl Conn for SqliteConn {
    fn exec(&mut self, sql: &str) -> Result<()> {
        self.0
            .execute_batch(sql)
            .map_err(|e| err(e, &format!("statement: {}", super::short_sql(sql))))
    }

    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let what = || format!("statement: {}", super::short_sql(sql));
        let mut st = self.0.prepare(sql).map_err(|e| err(e, &what()))?;
        let n = st.column_count();
        let mut rows = st.query([]).map_err(|e| err(e, &what()))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(|e| err(e, &what()))? {
            let mut row = Vec::with_capacity(n);
            for i in 0..n {
                let v = r.get_ref(i).map_err(|e| err(e, &what()))?;
                row.push(match v {
                    ValueRef::Null => None,
                    ValueRef::Integer(x) => Some(x.to_string()),
                    ValueRef::Real(x) => Some(x.to_string()),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Some(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            out.push(row);
        }
        Ok(out)
    }
}
