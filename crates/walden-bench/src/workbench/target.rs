//! What an experiment runs against: a [`Target`] makes a fresh database per
//! measured cell ([`Db`]), hands out connections ([`Conn`]) and reads the
//! log counters before and after.
//!
//! Three kinds: Walden (embedded or a server), PostgreSQL and SQLite. The
//! experiments speak a small SQL subset all three accept; the differences
//! (how a write transaction starts, how to bulk-load) live in [`Dialect`].

use crate::Result;
use serde::Serialize;

/// One client connection.
pub trait Conn: Send {
    /// Runs one statement and discards its rows.
    fn exec(&mut self, sql: &str) -> Result<()>;
    /// Runs one query and returns its rows as text (`None` for NULL).
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>>;
}

/// Which product a target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    Walden,
    Postgres,
    Sqlite,
}

/// The two ends of each product's dial, so results line up across products.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Acknowledged after the log is on stable storage (Walden
    /// DELAYED_DURABILITY = DISABLED, PostgreSQL synchronous_commit = on,
    /// SQLite synchronous = FULL).
    Full,
    /// Acknowledged before (Walden DELAYED_DURABILITY = FORCED, PostgreSQL
    /// synchronous_commit = off, SQLite synchronous = NORMAL).
    Relaxed,
}

/// Walden's recovery model, for the experiment that compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Recovery {
    Simple,
    Full,
}

/// SQL that differs between products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Walden,
    Postgres,
    Sqlite,
}

impl Dialect {
    /// Starts a write transaction. SQLite takes its write lock at the first
    /// write unless told up front, and then fails with SQLITE_BUSY instead of
    /// waiting when another writer got there first.
    pub fn begin(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            _ => "BEGIN",
        }
    }

    /// The experiments' table. SQLite keys a table by its rowid, and makes
    /// the key that rowid only when declared `INTEGER PRIMARY KEY` (64-bit);
    /// `BIGINT PRIMARY KEY` would add a second b-tree (a unique index) and
    /// double its write work, where the others keep one index on the key.
    pub fn create_table(self, table: &str) -> String {
        let id = match self {
            Dialect::Sqlite => "INTEGER",
            _ => "BIGINT",
        };
        format!(
            "CREATE TABLE {table} (id {id} PRIMARY KEY, session_id INTEGER NOT NULL, \
             v INTEGER NOT NULL, pad VARCHAR(100) NOT NULL)"
        )
    }

    /// One statement inserting rows `from..=to` of the experiments' table.
    pub fn bulk_insert(self, table: &str, from: u64, to: u64) -> String {
        match self {
            Dialect::Sqlite => format!(
                "WITH RECURSIVE g(x) AS (SELECT {from} UNION ALL SELECT x + 1 FROM g WHERE x < {to}) \
                 INSERT INTO {table} (id, session_id, v, pad) SELECT x, 0, x % 1000, '{PAD}' FROM g"
            ),
            _ => format!(
                "INSERT INTO {table} (id, session_id, v, pad) \
                 SELECT g, 0, g % 1000, '{PAD}' FROM generate_series({from}, {to}) AS g"
            ),
        }
    }
}

/// The payload column of every inserted row: 50 bytes, so a row's log record
/// is of the size the published experiments used (about 100 bytes).
pub const PAD: &str = "walden-workbench-payload-0123456789-abcdefghijklmn";

/// One row of the experiments' table.
pub fn insert_sql(table: &str, id: u64, session: usize) -> String {
    format!(
        "INSERT INTO {table} (id, session_id, v, pad) VALUES ({id}, {session}, {}, '{PAD}')",
        id % 1000
    )
}

/// Cumulative log counters of one database (or, where the product only
/// counts per server, of the whole server), read before and after a cell.
/// `None` where the product does not expose the figure.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counters {
    /// Write calls to the log file(s).
    pub log_writes: Option<u64>,
    pub log_bytes: Option<u64>,
    /// Time spent in log writes (ms).
    pub io_stall_write_ms: Option<f64>,
    /// Log flushes (writes that made log durable, or syncs).
    pub log_flushes: Option<u64>,
    pub log_bytes_flushed: Option<u64>,
    /// Transactions that wrote, as the product counts them.
    pub write_transactions: Option<u64>,
    /// WRITELOG waits of all sessions.
    pub writelog_waits: Option<u64>,
    pub writelog_wait_ms: Option<f64>,
}

impl Counters {
    /// `self - before`, field by field.
    pub fn since(&self, before: &Counters) -> Counters {
        fn d(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            Some(a?.saturating_sub(b?))
        }
        fn df(a: Option<f64>, b: Option<f64>) -> Option<f64> {
            Some((a? - b?).max(0.0))
        }
        Counters {
            log_writes: d(self.log_writes, before.log_writes),
            log_bytes: d(self.log_bytes, before.log_bytes),
            io_stall_write_ms: df(self.io_stall_write_ms, before.io_stall_write_ms),
            log_flushes: d(self.log_flushes, before.log_flushes),
            log_bytes_flushed: d(self.log_bytes_flushed, before.log_bytes_flushed),
            write_transactions: d(self.write_transactions, before.write_transactions),
            writelog_waits: d(self.writelog_waits, before.writelog_waits),
            writelog_wait_ms: df(self.writelog_wait_ms, before.writelog_wait_ms),
        }
    }
}

/// A session's own WRITELOG waits (cumulative over its life).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SessionWaits {
    pub count: u64,
    pub wait_ms: f64,
}

/// The live exposure: acknowledged commits not yet hardened.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Exposure {
    pub bytes: u64,
    pub commits: u64,
    pub oldest_ms: f64,
    /// High-water marks since the last [`Db::reset_exposure_peaks`]: the most
    /// unhardened acknowledged bytes, and the longest an acknowledged commit
    /// stayed unhardened.
    pub peak_bytes: u64,
    pub peak_ms: f64,
}

/// One mode of a target as a cell runs it.
#[derive(Clone, Debug, Serialize)]
pub struct ModeSpec {
    pub durability: Durability,
    /// How the product names the setting (`DELAYED_DURABILITY = FORCED`).
    pub label: String,
    /// Short name for tables and charts (`durable`, `delayed`, `sync=off`).
    pub short: String,
}

/// A database product the workbench can drive.
pub trait Target: Send + Sync {
    fn kind(&self) -> TargetKind;
    /// `walden (embedded)`, `walden (postgres://...)`, `postgres 15.x`, `sqlite 3.x`.
    fn label(&self) -> String;
    fn dialect(&self) -> Dialect;
    /// The mode this target runs for `d`.
    fn mode(&self, d: Durability) -> ModeSpec;
    /// Whether the recovery model is a setting of this product.
    fn has_recovery_models(&self) -> bool {
        false
    }
    /// Where an embedded instance keeps its data (`None` for servers and
    /// peers); experiments that start instances of their own put them next
    /// to it, on the same disk.
    fn embedded_dir(&self) -> Option<&std::path::Path> {
        None
    }
    /// A new, empty database set to the mode (and recovery model where the
    /// product has them); the cells of that mode run in it one after another.
    fn fresh_db(
        &self,
        name: &str,
        d: Durability,
        recovery: Option<Recovery>,
    ) -> Result<Box<dyn Db>>;
}

/// A database made for one cell; dropped (files removed) afterwards.
pub trait Db: Send + Sync {
    fn connect(&self) -> Result<Box<dyn Conn>>;
    /// Cumulative counters, read through `monitor` (a connection of its own).
    fn counters(&self, monitor: &mut dyn Conn) -> Result<Counters>;
    /// The WRITELOG waits of the session behind `conn`, if the product
    /// counts them per session.
    fn session_waits(&self, _conn: &mut dyn Conn) -> Result<Option<SessionWaits>> {
        Ok(None)
    }
    /// The live exposure, where the product shows it.
    fn exposure(&self, _monitor: &mut dyn Conn) -> Result<Option<Exposure>> {
        Ok(None)
    }
    /// Restarts the exposure high-water marks, where the product keeps them.
    fn reset_exposure_peaks(&self, _conn: &mut dyn Conn) -> Result<()> {
        Ok(())
    }
    /// Hardens everything committed so far (the "flush at the end" of the
    /// delayed runs), where the product has such a command.
    fn flush_log(&self, conn: &mut dyn Conn) -> Result<bool>;
    /// Writes a checkpoint, so a cell's log starts from a clean state.
    fn checkpoint(&self, conn: &mut dyn Conn) -> Result<()>;
    /// Removes the database.
    fn drop_db(self: Box<Self>) -> Result<()>;
}
