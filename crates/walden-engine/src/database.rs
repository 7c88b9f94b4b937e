//! A database: its catalog, its log, its settings and its system
//! transactions (DDL and settings changes, always fully durable). The
//! other concepts have their own types and modules: the transaction
//! manager (`transactions.rs`), the base store (`store/`), the
//! checkpointer (`checkpoint.rs`; images in `checkpoint/image.rs`),
//! backups (`checkpoint/backup.rs`) and the replica role (`replica.rs`).

use crate::checkpoint::{BackupState, Checkpoints};
use crate::codec::Redo;
use crate::error::{EngineError, Result};
use crate::mvcc::Visibility;
use crate::replica::ReplicaState;
use crate::schema::{DbSettings, ForeignKeyDef, SequenceDef};
use crate::session::{CommitRequest, Session};
use crate::store::base::BaseStore;
use crate::table::Table;
use crate::transactions::Transactions;
use crate::txn::Transaction;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use walden_log::{Exposure, FileStats, LogConfig, LogManager, Lsn, RecoveryReport, Vfs};

mod ddl;
mod enums;
mod open;
mod schemas;
mod sequence_def;
pub use sequence_def::SequenceAlter;
mod sequences;
mod views;

/// A sequence and where it stands.
pub struct Sequence {
    pub def: SequenceDef,
    /// Shared with the entry an uncommitted ALTER SEQUENCE replaces, so
    /// values handed out meanwhile stay handed out if it rolls back
    /// (`nextval` is not transactional); a RESTART gets its own.
    pub(crate) state: Arc<Mutex<SeqState>>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct SeqState {
    /// The next value `nextval` returns.
    pub next: i64,
    /// Values before this may have been handed out (logged reservation).
    pub reserved: i64,
    /// The value `nextval` handed out last, or `setval(.., true)` set
    /// (`is_called`); `None` before either, after RESTART or
    /// `setval(.., false)`. After a restart it is estimated from the
    /// reservation (the sequence resumes past it anyway).
    pub last: Option<i64>,
}

#[derive(Default)]
pub struct Catalog {
    pub(crate) tables: HashMap<String, Arc<Table>>,
    /// foldhash: every write and commit looks tables up by id.
    pub(crate) by_id: foldhash::HashMap<u32, Arc<Table>>,
    pub(crate) sequences: HashMap<String, Arc<Sequence>>,
    /// Enum types by lower-case name (their ids come from the tables' id
    /// space, see `database/enums.rs`).
    pub(crate) enums: HashMap<String, Arc<crate::types::EnumType>>,
    /// Views by lower-case name (see `database/views.rs`).
    pub(crate) views: HashMap<String, Arc<crate::view::ViewDef>>,
    /// `COMMENT ON` texts by object (see `comment.rs`).
    pub(crate) comments: std::collections::BTreeMap<crate::comment::CommentOn, Arc<str>>,
    /// Schemas other than `public`, by name (see `namespace.rs`).
    pub(crate) schemas: HashMap<String, Arc<crate::namespace::SchemaDef>>,
    pub(crate) next_table_id: u32,
    pub(crate) next_seq_id: u32,
    /// The database's published CSN and open snapshots (travels with the
    /// catalog from the checkpoint image through recovery to the database).
    pub(crate) vis: Arc<Visibility>,
}

impl Catalog {
    pub fn table(&self, name: &str) -> Option<&Arc<Table>> {
        self.tables.get(&name.to_ascii_lowercase())
    }
    pub fn table_by_id(&self, id: u32) -> Option<&Arc<Table>> {
        self.by_id.get(&id)
    }
    /// The table holding the index of this name.
    pub fn index_table(&self, name: &str) -> Option<&Arc<Table>> {
        self.by_id.values().find(|t| t.def.index(name).is_some())
    }
    pub(crate) fn add_table(&mut self, t: Arc<Table>) {
        // Saturating: a damaged image can name id u32::MAX.
        self.next_table_id = self.next_table_id.max(t.id().saturating_add(1));
        for ix in &t.def.indexes {
            self.next_table_id = self.next_table_id.max(ix.id.saturating_add(1));
        }
        self.tables.insert(t.name().to_ascii_lowercase(), t.clone());
        self.by_id.insert(t.id(), t);
    }
    /// Puts `t` in the place of table `id` (an ALTER TABLE's result, maybe
    /// under a new name). Unlike [`Self::remove_table`] then
    /// [`Self::add_table`], the foreign keys of other tables that reference
    /// it stay: they name it by id and its columns by position, which an
    /// alteration keeps (`alter::keeps_foreign_keys`).
    pub(crate) fn replace_table(&mut self, id: u32, t: Arc<Table>) {
        if let Some(old) = self.by_id.remove(&id) {
            self.tables.remove(&old.name().to_ascii_lowercase());
        }
        self.add_table(t);
    }

    pub(crate) fn remove_table(&mut self, id: u32) -> Option<Arc<Table>> {
        let t = self.by_id.remove(&id)?;
        self.tables.remove(&t.name().to_ascii_lowercase());
        // Foreign keys of other tables that referenced it go with it (DROP
        // TABLE ... CASCADE; without CASCADE there are none by then).
        let referencing: Vec<Arc<Table>> = self
            .by_id
            .values()
            .filter(|o| o.def.foreign_keys.iter().any(|f| f.ref_table == id))
            .cloned()
            .collect();
        for o in referencing {
            let keep = o
                .def
                .foreign_keys
                .iter()
                .filter(|f| f.ref_table != id)
                .cloned()
                .collect();
            self.add_table(Arc::new(o.with_foreign_keys(keep)));
        }
        Some(t)
    }

    /// Foreign keys of any table that reference table `id`, with the
    /// referencing table.
    pub fn referencing(&self, id: u32) -> Vec<(Arc<Table>, ForeignKeyDef)> {
        let mut tables: Vec<&Arc<Table>> = self.by_id.values().collect();
        // In creation order (table ids grow), as PostgreSQL lists them.
        tables.sort_by_key(|t| t.id());
        let mut out = Vec::new();
        for t in tables {
            for fk in &t.def.foreign_keys {
                if fk.ref_table == id {
                    out.push((t.clone(), fk.clone()));
                }
            }
        }
        out
    }
    /// The state of a sequence found again after a restart (an image or a
    /// reservation record): it resumes at `upto`, and has handed out
    /// values unless that is where it started.
    pub(crate) fn resumed_state(def: &SequenceDef, upto: i64) -> SeqState {
        SeqState {
            next: upto,
            reserved: upto,
            last: (upto != def.start).then(|| upto.saturating_sub(def.increment)),
        }
    }

    pub(crate) fn add_sequence(&mut self, def: SequenceDef, state: SeqState) {
        self.next_seq_id = self.next_seq_id.max(def.id.saturating_add(1));
        self.sequences.insert(
            def.name.to_ascii_lowercase(),
            Arc::new(Sequence {
                def,
                state: Arc::new(Mutex::new(state)),
            }),
        );
    }

    /// Puts in a sequence's new definition (ALTER SEQUENCE; its id names
    /// it, its name may be new): it goes on where it stands, or from
    /// `restart`.
    pub(crate) fn replace_sequence(&mut self, def: SequenceDef, restart: Option<i64>) {
        let old = self
            .sequences
            .values()
            .find(|s| s.def.id == def.id)
            .cloned();
        let state = match (restart, old) {
            (Some(v), _) => Arc::new(Mutex::new(SeqState {
                next: v,
                reserved: v,
                last: None,
            })),
            (None, Some(old)) => {
                // A new INCREMENT takes effect from the last value handed
                // out (a sequence still at its start has handed out none).
                let mut st = old.state.lock();
                if old.def.increment != def.increment {
                    if let Some(last) = st.last {
                        st.next = last.saturating_add(def.increment);
                    }
                }
                drop(st);
                old.state.clone()
            }
            (None, None) => Arc::new(Mutex::new(SeqState {
                next: def.start,
                reserved: def.start,
                last: None,
            })),
        };
        self.sequences.retain(|_, s| s.def.id != def.id);
        self.next_seq_id = self.next_seq_id.max(def.id.saturating_add(1));
        self.sequences.insert(
            def.name.to_ascii_lowercase(),
            Arc::new(Sequence { def, state }),
        );
    }

    /// Drops the sequences a column of table `id` owns (the table goes).
    pub(crate) fn drop_owned_sequences(&mut self, id: u32) {
        self.sequences
            .retain(|_, s| s.def.owned_by.is_none_or(|o| o.table != id));
    }

    /// Keeps the sequences owned by columns of table `old.id` with their
    /// columns after ALTER TABLE (`old_of[j]`: the old position of new
    /// column `j`, when it was kept as it was). A column that went takes
    /// its sequence with it; one rewritten in place (a new type) keeps it.
    pub(crate) fn follow_owned_sequences(
        &mut self,
        old: &crate::schema::TableDef,
        new: &crate::schema::TableDef,
        old_of: &[Option<usize>],
    ) {
        let owned: Vec<Arc<Sequence>> = self
            .sequences
            .values()
            .filter(|s| s.def.owned_by.is_some_and(|o| o.table == old.id))
            .cloned()
            .collect();
        for s in owned {
            let Some(o) = s.def.owned_by else { continue };
            let moved = old_of
                .iter()
                .position(|p| *p == Some(o.column))
                .or_else(|| {
                    let name = &old.columns.get(o.column)?.name;
                    new.columns
                        .iter()
                        .position(|c| c.name.eq_ignore_ascii_case(name))
                        .filter(|&j| old_of.get(j).is_some_and(|p| p.is_none()))
                });
            let key = s.def.name.to_ascii_lowercase();
            match moved {
                Some(j) if j == o.column => {}
                Some(j) => {
                    let mut def = s.def.clone();
                    def.owned_by = Some(crate::schema::SeqOwner {
                        table: o.table,
                        column: j,
                    });
                    self.sequences.insert(
                        key,
                        Arc::new(Sequence {
                            def,
                            state: s.state.clone(),
                        }),
                    );
                }
                None => {
                    self.sequences.remove(&key);
                }
            }
        }
    }
}

/// Cumulative transaction counters (`sys.dm_os_performance_counters`).
#[derive(Debug, Default)]
pub struct DbCounters {
    pub transactions: AtomicU64,
    pub write_transactions: AtomicU64,
    pub durable_commits: AtomicU64,
    pub delayed_commits: AtomicU64,
    pub rollbacks: AtomicU64,
    pub checkpoints: AtomicU64,
    /// Bytes checkpoints wrote to the base store.
    pub checkpoint_bytes: AtomicU64,
    /// Rows checkpoints wrote to (or deleted from) the base store.
    pub checkpoint_rows: AtomicU64,
    /// Commits checkpoints made to the base store (a large checkpoint is
    /// written in batches, each its own commit).
    pub checkpoint_commits: AtomicU64,
    /// Background checkpoints that stopped pausing between batches because
    /// the next one fell due while they ran (writers outpacing them).
    pub checkpoints_unpaced: AtomicU64,
    /// Rows that left memory after a checkpoint wrote them (read through
    /// the base store from then on).
    pub rows_evicted: AtomicU64,
    pub deadlocks: AtomicU64,
}

pub struct Database {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    pub(crate) vfs: Arc<dyn Vfs>,
    pub(crate) log: LogManager,
    pub(crate) catalog: RwLock<Catalog>,
    /// Bumped by every catalog change (tables, keys, sequences, settings):
    /// the SQL layer keeps compiled plans only while it is unchanged.
    pub(crate) catalog_version: AtomicU64,
    pub(crate) settings: RwLock<DbSettings>,
    pub(crate) txns: Transactions,
    /// The tables' rows as of the last checkpoint.
    pub(crate) store: BaseStore,
    pub(crate) checkpoints: Checkpoints,
    pub(crate) backup: Mutex<BackupState>,
    /// Availability-group state: role, the remote-harden hook, live redo.
    pub(crate) replica: ReplicaState,
    pub(crate) data_stats: Arc<FileStats>,
    pub(crate) counters: DbCounters,
    pub(crate) limits: Limits,
    pub(crate) recovery: RecoveryReport,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("name", &self.name)
            .field("id", &self.id)
            .finish()
    }
}

/// Size limits checked when a row is made, so that no log record exceeds
/// what recovery reads back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest value (text or bytea), 1 GiB as in PostgreSQL.
    pub max_value_bytes: u64,
    /// Largest row, all values together.
    pub max_row_bytes: u64,
    /// Most memory one transaction's changes may hold before commit
    /// (estimated; 0: no limit). A transaction's write set, row locks and
    /// install are in memory until it commits; past this it fails with
    /// 53200 rather than grow until the process is killed.
    pub max_transaction_bytes: u64,
    /// Past this much (estimated, as `max_transaction_bytes`) a
    /// transaction logs its changes as it goes instead of all at its
    /// commit, and moves the rows of tables it created or truncated to
    /// spill files (`txn/spill.rs`; 0: never). At most half of
    /// `max_transaction_bytes` is used (see [`Limits::spill_bound`]).
    pub spill_transaction_bytes: u64,
}

impl Limits {
    /// The spill bound in effect: under a lower transaction limit, half
    /// of it, so a bulk load spills before it would fail with 53200.
    pub fn spill_bound(&self) -> u64 {
        match self.max_transaction_bytes {
            0 => self.spill_transaction_bytes,
            max => self.spill_transaction_bytes.min(max / 2),
        }
    }
}

/// The default `spill_transaction_bytes`: 64 MiB.
pub const DEFAULT_SPILL_BYTES: u64 = 64 << 20;

/// The default `transaction_memory_limit_mb`: 2 GiB.
pub const DEFAULT_TRANSACTION_BYTES: u64 = 2 << 30;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_value_bytes: 1 << 30,
            max_row_bytes: MAX_ROW_BYTES,
            max_transaction_bytes: DEFAULT_TRANSACTION_BYTES,
            spill_transaction_bytes: DEFAULT_SPILL_BYTES,
        }
    }
}

/// Largest row: a log record holds one row plus up to one transaction part
/// (256 KiB) of others and framing, and must stay within the log's limit.
pub const MAX_ROW_BYTES: u64 = (walden_log::scan::MAX_RECORD - (1 << 20)) as u64;

/// Options for opening a database.
pub struct OpenOptions {
    pub vfs: Arc<dyn Vfs>,
    pub log: LogConfig,
    pub lock_timeout: Option<Duration>,
    pub limits: Limits,
    /// Open as a secondary replica (read-only; its log comes from a primary).
    pub secondary: bool,
    pub storage: crate::store::StorageConfig,
}

impl Database {
    /// The size limits rows are checked against.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn log(&self) -> &LogManager {
        &self.log
    }

    pub fn settings(&self) -> DbSettings {
        self.settings.read().clone()
    }

    pub fn counters(&self) -> &DbCounters {
        &self.counters
    }

    pub fn data_file_stats(&self) -> &Arc<FileStats> {
        &self.data_stats
    }

    /// What `t` takes in the data file as of the last checkpoint (rows
    /// changed since are in the log and in memory).
    pub fn stored_bytes(&self, t: &Table) -> Result<crate::store::StoredBytes> {
        self.store.stored_bytes(t)
    }

    /// Reads every row and index entry of the data file back and checks it
    /// (`DBCC CHECKDB`; see `store/check.rs`). Damage found stops the
    /// checkpoints, so the log keeps every change since the last good one.
    pub fn check_store(&self) -> Result<crate::store::CheckReport> {
        self.store.check(&mut |_| true)
    }

    /// The same, pausing after each chunk as `pace` says (false: stop).
    pub fn check_store_paced(
        &self,
        pace: &mut dyn FnMut(std::time::Duration) -> bool,
    ) -> Result<crate::store::CheckReport> {
        self.store.check(pace)
    }

    /// The tables of the data file's newest commit, by their stored names
    /// (`t<id>` rows, `i<id>_<index>` entries, `s…` staging, `meta`).
    pub fn stored_table_names(&self) -> Result<Vec<String>> {
        self.store.table_names()
    }

    /// Why the data file is known to be damaged, if it is.
    pub fn store_damaged(&self) -> Option<String> {
        self.store.damaged()
    }

    /// The database's files on disk: the data file and the log.
    pub fn size_on_disk(&self) -> u64 {
        self.data_stats.size_on_disk_bytes.load(Relaxed)
            + self.log_file_stats().size_on_disk_bytes.load(Relaxed)
    }

    pub fn log_file_stats(&self) -> &Arc<FileStats> {
        self.log.file_stats()
    }

    /// The live exposure of delayed commits.
    pub fn exposure(&self) -> Exposure {
        self.log.exposure()
    }

    /// What recovery found when the database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    pub fn backup_state(&self) -> BackupState {
        *self.backup.lock()
    }

    /// The newest published commit sequence number.
    pub fn visible_csn(&self) -> crate::mvcc::Csn {
        self.txns.vis.visible()
    }

    /// Snapshots open now (statements and REPEATABLE READ transactions).
    pub fn open_snapshots(&self) -> usize {
        self.txns.vis.open_snapshots()
    }

    /// Row locks currently held by open transactions.
    pub fn locks_held(&self) -> usize {
        self.txns.locks.held()
    }

    /// LSN of the last checkpoint.
    pub fn checkpoint_lsn(&self) -> Lsn {
        self.checkpoints.lsn.load(Relaxed)
    }

    /// Starts a transaction.
    pub fn begin(self: &Arc<Self>, session: &Arc<Session>) -> Transaction {
        Transaction::new(self.clone(), session.clone())
    }

    /// Runs `f` in a transaction and commits it with `request` (auto-commit).
    pub fn run<T>(
        self: &Arc<Self>,
        session: &Arc<Session>,
        request: CommitRequest,
        f: impl FnOnce(&mut Transaction) -> Result<T>,
    ) -> Result<T> {
        let mut tx = self.begin(session);
        let v = f(&mut tx)?;
        tx.commit(request)?;
        Ok(v)
    }

    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.catalog
            .read()
            .table(name)
            .cloned()
            .ok_or_else(|| EngineError::UnknownTable(name.to_string()))
    }

    pub fn table_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .catalog
            .read()
            .tables
            .values()
            .map(|t| t.name().to_string())
            .collect();
        v.sort();
        v
    }

    pub fn table_by_id(&self, id: u32) -> Option<Arc<Table>> {
        self.catalog.read().table_by_id(id).cloned()
    }

    pub fn tables(&self) -> Vec<Arc<Table>> {
        let mut v: Vec<Arc<Table>> = self.catalog.read().tables.values().cloned().collect();
        v.sort_by_key(|t| t.id());
        v
    }

    /// The sequences' definitions in id order (the SQL layer's `pg_class`
    /// and `pg_sequence` derive stable OIDs from the ids).
    pub fn sequences(&self) -> Vec<SequenceDef> {
        let mut v: Vec<SequenceDef> = self
            .catalog
            .read()
            .sequences
            .values()
            .map(|s| s.def.clone())
            .collect();
        v.sort_by_key(|s| s.id);
        v
    }

    pub fn sequence_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .catalog
            .read()
            .sequences
            .values()
            .map(|s| s.def.name.clone())
            .collect();
        v.sort();
        v
    }

    /// Changes the database's settings (a system transaction).
    pub fn set_settings(&self, session: &Session, new: DbSettings) -> Result<()> {
        let gate = self.txns.gate.write();
        self.system_change(gate, session, Redo::Settings(new.clone()), |_| {
            self.log
                .set_exposure_bounds(new.max_exposure_bytes, new.max_exposure());
            *self.settings.write() = new;
        })
    }

    /// Changes settings with a closure over the current ones.
    pub fn alter_settings(
        &self,
        session: &Session,
        f: impl FnOnce(&mut DbSettings),
    ) -> Result<DbSettings> {
        let mut s = self.settings();
        f(&mut s);
        self.set_settings(session, s.clone())?;
        Ok(s)
    }

    /// `sp_flush_log`: hardens everything committed so far.
    pub fn flush_log(&self, session: &Session) -> Result<Lsn> {
        let sinks = session.wait_sinks();
        let primary = !self.is_secondary();
        let ticket = self.remote_ticket();
        let lsn = self.log.flush(&sinks)?;
        // On a primary, "hardened" includes its synchronous secondaries.
        if primary {
            self.harden_remote(&ticket, lsn, &sinks)?;
        }
        Ok(lsn)
    }

    /// Log file bytes written since the last checkpoint (with padding: a
    /// durable single-row commit writes a whole 4 KiB page, so LSN distance
    /// would understate how fast segments fill).
    pub fn log_since_checkpoint(&self) -> u64 {
        let written = self.log_file_stats().num_of_bytes_written.load(Relaxed);
        written.saturating_sub(self.checkpoints.log_written_at.load(Relaxed))
    }
}
