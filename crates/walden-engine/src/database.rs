//! A database: its catalog, its log, its settings and its system
//! transactions (DDL and settings changes, always fully durable).

use crate::checkpoint::{self, Image};
use crate::codec::{encode_redo, Redo};
use crate::control::{self, Control};
use crate::error::{io_err, EngineError, Result};
use crate::inflight::InFlight;
use crate::lock::LockManager;
use crate::mvcc::Visibility;
use crate::recovery::Replay;
use crate::replica::ReplicaState;
use crate::schema::{DbSettings, ForeignKeyDef, IndexDef, SequenceDef, TableDef};
use crate::session::{CommitRequest, Session};
use crate::store::base::{open_and_load, BaseStore};
use crate::table::Table;
use crate::txn::Transaction;
use parking_lot::{Mutex, RwLock, RwLockWriteGuard};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use walden_log::{
    Exposure, FileStats, LogConfig, LogManager, Lsn, OpenBounds, RecoveryReport, Vfs,
};

/// A sequence and where it stands.
pub struct Sequence {
    pub def: SequenceDef,
    pub(crate) state: Mutex<SeqState>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct SeqState {
    /// The next value `nextval` returns.
    pub next: i64,
    /// Values before this may have been handed out (logged reservation).
    pub reserved: i64,
}

/// Values reserved per log record, as PostgreSQL logs 32 at a time.
const SEQ_RESERVE: i64 = 32;

#[derive(Default)]
pub struct Catalog {
    pub(crate) tables: HashMap<String, Arc<Table>>,
    pub(crate) by_id: HashMap<u32, Arc<Table>>,
    pub(crate) sequences: HashMap<String, Arc<Sequence>>,
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
    pub(crate) fn add_sequence(&mut self, def: SequenceDef, state: SeqState) {
        self.next_seq_id = self.next_seq_id.max(def.id.saturating_add(1));
        self.sequences.insert(
            def.name.to_ascii_lowercase(),
            Arc::new(Sequence {
                def,
                state: Mutex::new(state),
            }),
        );
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
    pub deadlocks: AtomicU64,
}

/// Backup state persisted with the database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackupState {
    /// LSN of the last full backup (starts the log-backup chain in FULL).
    pub full_backup_lsn: Option<Lsn>,
    /// Log before this LSN has been written to a log backup.
    pub log_backup_lsn: Option<Lsn>,
}

pub struct Database {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    pub(crate) vfs: Arc<dyn Vfs>,
    pub(crate) log: LogManager,
    pub(crate) catalog: RwLock<Catalog>,
    /// Published CSN and open snapshots (the catalog's, kept here to reach
    /// it without the catalog lock).
    pub(crate) vis: Arc<Visibility>,
    /// Commits between their first append and their publish (the online
    /// checkpoint's redo start).
    pub(crate) inflight: InFlight,
    /// Bumped by every catalog change (tables, keys, sequences, settings):
    /// the SQL layer keeps compiled plans only while it is unchanged.
    pub(crate) catalog_version: AtomicU64,
    pub(crate) settings: RwLock<DbSettings>,
    /// Commits hold it shared from log append to apply; checkpoints and DDL take
    /// it exclusively to see a state that matches an LSN exactly.
    pub(crate) gate: RwLock<()>,
    pub(crate) locks: LockManager,
    pub(crate) next_txid: AtomicU64,
    pub(crate) data_stats: Arc<FileStats>,
    pub(crate) counters: DbCounters,
    pub(crate) checkpoint_lsn: AtomicU64,
    /// Log file bytes written when the last checkpoint was taken.
    pub(crate) log_written_at_checkpoint: AtomicU64,
    pub(crate) last_checkpoint: Mutex<Instant>,
    pub(crate) backup: Mutex<BackupState>,
    pub(crate) checkpoint_lock: Mutex<()>,
    pub(crate) lock_timeout: Option<Duration>,
    pub(crate) limits: Limits,
    /// The tables' rows as of the last checkpoint.
    pub(crate) store: BaseStore,
    /// Redo start of the checkpoint before the last: the base store's
    /// previous commit, whose log is kept until the next checkpoint.
    pub(crate) prior_checkpoint_lsn: AtomicU64,
    pub(crate) recovery: RecoveryReport,
    /// Availability-group state: role, the remote-harden hook, live redo.
    pub(crate) replica: ReplicaState,
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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_value_bytes: 1 << 30,
            max_row_bytes: MAX_ROW_BYTES,
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
}

impl Database {
    pub(crate) fn data_dir(dir: &Path) -> PathBuf {
        dir.join("data")
    }

    pub(crate) fn log_dir(dir: &Path) -> PathBuf {
        dir.join("log")
    }

    /// Opens a database directory: checks its control file against the
    /// catalog's id and name, loads the newest valid checkpoint image, replays
    /// the log after it, and cuts off a torn tail (refusing a log that ends
    /// before what the control file says was hardened).
    pub(crate) fn open(
        id: u32,
        name: &str,
        dir: &Path,
        opts: &OpenOptions,
    ) -> Result<Arc<Database>> {
        let vfs = opts.vfs.clone();
        if !vfs.exists(dir).map_err(io_err(dir))? {
            return Err(EngineError::DirectoryMismatch {
                dir: dir.to_path_buf(),
                detail: format!("instance.json lists database \"{name}\" (id {id}) but its directory is missing"),
            });
        }
        let ctl = control::read(&*vfs, dir)?;
        match &ctl {
            Some(c) => control::check_identity(c, id, name, dir)?,
            None => {
                tracing::warn!(dir = %dir.display(), "database directory has no control file (older build); writing one")
            }
        }
        let data_stats = Arc::new(FileStats::default());
        let (store, image) = open_and_load(&*vfs, &Self::data_dir(dir), &data_stats)?;
        let loaded = match image {
            Some(image) => checkpoint::Loaded {
                max_lsn: image.lsn,
                image,
                other_lsn: None,
                damaged: Vec::new(),
            },
            // A database of a build before the base store: its images.
            None => checkpoint::load_newest(&*vfs, &Self::data_dir(dir), &data_stats)?,
        };
        for d in &loaded.damaged {
            tracing::error!(database = name, damage = %d, "checkpoint image unusable; recovering from an older one");
        }
        let from = loaded.image.lsn;
        let prior = loaded.other_lsn.unwrap_or(from);
        let bounds = OpenBounds {
            min_end: ctl
                .as_ref()
                .map_or(0, |c| c.hardened_lsn.max(c.checkpoint_lsn))
                .max(loaded.max_lsn),
            prior_max_write: ctl.as_ref().map(|c| c.log_max_write as usize),
        };
        let mut replay = Replay::new(loaded.image);
        let log_stats = Arc::new(FileStats::default());
        let (log, report) = LogManager::open_with(
            vfs.clone(),
            &Self::log_dir(dir),
            opts.log.clone(),
            log_stats,
            from,
            bounds,
            &mut |_, end, rec| {
                replay
                    .apply(end, rec)
                    .map_err(|e| walden_log::LogError::Corrupt {
                        file: Self::log_dir(dir),
                        offset: 0,
                        lsn: end,
                        detail: format!("redo record cannot be applied: {e}"),
                    })
            },
        )?;
        let (state, pending) = replay.finish();
        log.set_exposure_bounds(
            state.settings.max_exposure_bytes,
            state.settings.max_exposure(),
        );
        let end_lsn = log.end_lsn();
        let vis = state.catalog.vis.clone();
        let db = Arc::new(Database {
            id,
            name: name.to_string(),
            dir: dir.to_path_buf(),
            vfs,
            log,
            catalog: RwLock::new(state.catalog),
            vis,
            inflight: InFlight::default(),
            catalog_version: AtomicU64::new(0),
            settings: RwLock::new(state.settings),
            gate: RwLock::new(()),
            locks: LockManager::default(),
            next_txid: AtomicU64::new(state.next_txid),
            data_stats,
            counters: DbCounters::default(),
            checkpoint_lsn: AtomicU64::new(from),
            log_written_at_checkpoint: AtomicU64::new(0),
            last_checkpoint: Mutex::new(Instant::now()),
            backup: Mutex::new(state.backup),
            checkpoint_lock: Mutex::new(()),
            lock_timeout: opts.lock_timeout,
            limits: opts.limits,
            store,
            prior_checkpoint_lsn: AtomicU64::new(prior),
            recovery: report,
            replica: ReplicaState::new(opts.secondary, pending, end_lsn),
        });
        // Record this run's max_write before it writes anything: the next
        // recovery clears that far past the end. The hardened LSN stays the
        // one of the last checkpoint or clean shutdown.
        control::write(
            &*db.vfs,
            dir,
            &Control {
                format_version: control::FORMAT_VERSION,
                id,
                name: name.to_string(),
                hardened_lsn: ctl.as_ref().map_or(from, |c| c.hardened_lsn),
                checkpoint_lsn: from,
                clean_shutdown: false,
                log_max_write: db.log.config().max_write as u64,
            },
        )?;
        tracing::info!(
            database = name,
            from_lsn = from,
            end_lsn = db.log.end_lsn(),
            records = db.recovery.scan.records,
            cut = ?db.recovery.scan.cut,
            "database opened"
        );
        Ok(db)
    }

    /// Creates the files of a new database (control file first, so the
    /// directory says whose it is), holding `image` (empty for CREATE
    /// DATABASE, a backup's for RESTORE).
    pub(crate) fn create(
        id: u32,
        name: &str,
        dir: &Path,
        opts: &OpenOptions,
        image: &Image,
    ) -> Result<()> {
        let vfs = &*opts.vfs;
        walden_log::vfs::create_dir_durable(vfs, dir).map_err(io_err(dir))?;
        control::write(
            vfs,
            dir,
            &Control {
                format_version: control::FORMAT_VERSION,
                id,
                name: name.to_string(),
                hardened_lsn: image.lsn,
                checkpoint_lsn: image.lsn,
                clean_shutdown: true,
                log_max_write: opts.log.max_write as u64,
            },
        )?;
        let data = Self::data_dir(dir);
        walden_log::vfs::create_dir_durable(vfs, &data).map_err(io_err(&data))?;
        checkpoint::write_image(vfs, &data, image, &Arc::new(FileStats::default()))?;
        if image.lsn > 0 {
            LogManager::init_at(
                opts.vfs.clone(),
                &Self::log_dir(dir),
                &opts.log,
                Arc::new(FileStats::default()),
                image.lsn,
            )?;
        }
        Ok(())
    }

    /// Records the hardened and checkpoint LSNs in the control file.
    pub(crate) fn write_control(&self, clean_shutdown: bool) -> Result<()> {
        control::write(
            &*self.vfs,
            &self.dir,
            &Control {
                format_version: control::FORMAT_VERSION,
                id: self.id,
                name: self.name.clone(),
                hardened_lsn: self.log.hardened_lsn(),
                checkpoint_lsn: self.checkpoint_lsn(),
                clean_shutdown,
                log_max_write: self.log.config().max_write as u64,
            },
        )
    }

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
        self.vis.visible()
    }

    /// Snapshots open now (statements and REPEATABLE READ transactions).
    pub fn open_snapshots(&self) -> usize {
        self.vis.open_snapshots()
    }

    /// Row locks currently held by open transactions.
    pub fn locks_held(&self) -> usize {
        self.locks.held()
    }

    /// LSN of the last checkpoint.
    pub fn checkpoint_lsn(&self) -> Lsn {
        self.checkpoint_lsn.load(Relaxed)
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

    /// A system transaction: logs `redo` fully durably, then applies it, with
    /// no user commit in flight.
    /// `gate`: the caller's hold on the database's gate, released once the
    /// change is hardened here and applied, before the wait for synchronous
    /// secondaries (as a commit releases its row locks first): a stalled
    /// secondary then holds up this session only, not every session of the
    /// database.
    pub(crate) fn system_change<T>(
        &self,
        gate: RwLockWriteGuard<'_, ()>,
        session: &Session,
        redo: Redo,
        apply: impl FnOnce(&mut Catalog) -> T,
    ) -> Result<T> {
        self.check_writable()?;
        self.check_commit_quorum()?;
        let rec = encode_redo(&redo);
        let sinks = session.wait_sinks();
        let lsn = self.log.append(&rec, &sinks)?;
        self.log
            .wait_hardened(lsn, &sinks)
            .map_err(|source| EngineError::CommitOutcomeUnknown { lsn, source })?;
        let mut cat = self.catalog.write();
        // Applied whatever the secondaries say: the change is in the local
        // log, and recovery would apply it anyway.
        let out = apply(&mut cat);
        // Under the catalog lock: a planner that read the old version before
        // planning sees the new one on its next look (Release pairs with the
        // Acquire load in `catalog_version`).
        self.catalog_version.fetch_add(1, Ordering::Release);
        drop(cat);
        drop(gate);
        self.harden_remote(lsn, &sinks)?;
        Ok(out)
    }

    /// A number that changes whenever the catalog does (any DDL, TRUNCATE,
    /// ALTER DATABASE ... SET), here or through a secondary's redo. A plan
    /// made after reading version v is valid while the version is still v.
    pub fn catalog_version(&self) -> u64 {
        self.catalog_version.load(Ordering::Acquire)
    }

    pub fn create_table(&self, session: &Session, mut def: TableDef) -> Result<Arc<Table>> {
        def.validate()?;
        let gate = self.gate.write();
        {
            let cat = self.catalog.read();
            if cat.table(&def.name).is_some() {
                return Err(EngineError::TableExists(def.name));
            }
            if cat.index_table(&def.name).is_some() {
                return Err(EngineError::RelationExists(def.name));
            }
            def.id = cat.next_table_id.max(1);
            // A foreign key referencing the table itself names it by 0
            // until it has its id.
            for fk in &mut def.foreign_keys {
                if fk.ref_table == 0 {
                    fk.ref_table = def.id;
                } else if cat.table_by_id(fk.ref_table).is_none() {
                    return Err(EngineError::UnknownTable(format!(
                        "(table id {}, dropped)",
                        fk.ref_table
                    )));
                }
            }
            // Indexes declared with the table (UNIQUE constraints) take
            // the ids after it.
            for (n, ix) in def.indexes.iter_mut().enumerate() {
                ix.id = def.id + 1 + n as u32;
            }
        }
        let t = Arc::new(Table::new(def.clone()));
        let t2 = t.clone();
        self.system_change(gate, session, Redo::CreateTable(def), move |cat| {
            cat.add_table(t2)
        })?;
        Ok(t)
    }

    pub fn drop_table(&self, session: &Session, name: &str) -> Result<()> {
        self.drop_table_cascade(session, name, false).map(drop)
    }

    /// DROP TABLE: refused while a foreign key of another table references
    /// it, unless `cascade`, which drops those foreign keys with it (one
    /// logged record: replaying it drops them too). Returns the foreign keys
    /// dropped, as (constraint, table).
    pub fn drop_table_cascade(
        &self,
        session: &Session,
        name: &str,
        cascade: bool,
    ) -> Result<Vec<(String, String)>> {
        let gate = self.gate.write();
        let t = self.table(name)?;
        let id = t.id();
        let others: Vec<(String, String)> = self
            .catalog
            .read()
            .referencing(id)
            .into_iter()
            .filter(|(o, _)| o.id() != id)
            .map(|(o, fk)| (fk.name, o.name().to_string()))
            .collect();
        if !others.is_empty() && !cascade {
            return Err(EngineError::Referenced {
                kind: "table",
                table: t.name().to_string(),
                by: others,
            });
        }
        self.system_change(gate, session, Redo::DropTable(id), |cat| {
            cat.remove_table(id);
        })?;
        Ok(others)
    }

    /// Foreign keys (of any table) referencing table `id`, by name, with
    /// the referencing table.
    pub fn referencing(&self, id: u32) -> Vec<(Arc<Table>, ForeignKeyDef)> {
        self.catalog.read().referencing(id)
    }

    /// `ALTER TABLE t ADD FOREIGN KEY`: checks every committed row of `t`
    /// against the referenced table under the gate (no commit in flight;
    /// a transaction that wrote either table before the key existed fails
    /// its commit, see `txn/ri.rs`), then logs the key (a system
    /// transaction, fully durable).
    pub fn add_foreign_key(&self, session: &Session, table: &str, fk: ForeignKeyDef) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(table)?;
        let r = self
            .catalog
            .read()
            .table_by_id(fk.ref_table)
            .cloned()
            .ok_or_else(|| EngineError::UnknownTable(format!("(table id {})", fk.ref_table)))?;
        if fk.columns.len() != fk.ref_columns.len()
            || fk.columns.iter().any(|&c| c >= t.def.columns.len())
            || fk.ref_columns.iter().any(|&c| c >= r.def.columns.len())
        {
            return Err(EngineError::InvalidDefinition(format!(
                "foreign key \"{}\" names columns its tables do not have",
                fk.name
            )));
        }
        if t.def.foreign_keys.iter().any(|f| f.name == fk.name)
            || t.def.checks.iter().any(|c| c.name == fk.name)
        {
            return Err(EngineError::InvalidDefinition(format!(
                "constraint \"{}\" for relation \"{}\" already exists",
                fk.name, t.def.name
            )));
        }
        let keys: std::collections::HashSet<Vec<crate::types::Value>> = r
            .latest_rows()
            .values()
            .map(|row| fk.ref_columns.iter().map(|&c| row[c].clone()).collect())
            .collect();
        for row in t.latest_rows().values() {
            let vals: Vec<crate::types::Value> =
                fk.columns.iter().map(|&c| row[c].clone()).collect();
            let nulls = vals.iter().filter(|v| v.is_null()).count();
            let detail = if nulls == 0 {
                if keys.contains(&vals) {
                    continue;
                }
                format!(
                    "Key {}=({}) is not present in table \"{}\".",
                    t.def.column_list(&fk.columns),
                    crate::table::value_list(&vals),
                    r.def.name
                )
            } else if fk.match_full && nulls < vals.len() {
                "MATCH FULL does not allow mixing of null and nonnull key values.".to_string()
            } else {
                continue;
            };
            return Err(EngineError::ForeignKeyViolation(Box::new(
                crate::error::FkViolation {
                    table: t.def.name.clone(),
                    constraint: fk.name.clone(),
                    detail,
                },
            )));
        }
        let mut fks = t.def.foreign_keys.clone();
        fks.push(fk.clone());
        let nt = Arc::new(t.with_foreign_keys(fks));
        self.system_change(
            gate,
            session,
            Redo::AddForeignKey { table: t.id(), fk },
            |cat| cat.add_table(nt),
        )
    }

    /// `ALTER TABLE t DROP CONSTRAINT name` of a foreign key.
    pub fn drop_foreign_key(&self, session: &Session, table: &str, name: &str) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(table)?;
        if !t.def.foreign_keys.iter().any(|f| f.name == name) {
            return Err(EngineError::UnknownConstraint {
                table: t.def.name.clone(),
                constraint: name.to_string(),
            });
        }
        let fks = t
            .def
            .foreign_keys
            .iter()
            .filter(|f| f.name != name)
            .cloned()
            .collect();
        let nt = Arc::new(t.with_foreign_keys(fks));
        self.system_change(
            gate,
            session,
            Redo::DropForeignKey {
                table: t.id(),
                name: name.to_string(),
            },
            |cat| cat.add_table(nt),
        )
    }

    /// `ALTER TABLE t ADD PRIMARY KEY (cols)` on a table keyed by a hidden row
    /// id (a system transaction, fully durable). Fails if the rows are not
    /// unique on the columns.
    pub fn add_primary_key(&self, session: &Session, name: &str, columns: &[&str]) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(name)?;
        if !t.has_hidden_key() {
            return Err(EngineError::InvalidDefinition(format!(
                "multiple primary keys for table \"{name}\" are not allowed"
            )));
        }
        let mut cols = Vec::new();
        for c in columns {
            cols.push(
                t.def
                    .column_index(c)
                    .ok_or_else(|| EngineError::UnknownColumn {
                        table: name.to_string(),
                        column: c.to_string(),
                    })?,
            );
        }
        // Build first: a duplicate fails before anything is logged.
        let nt = Arc::new(t.with_primary_key(&cols)?);
        self.system_change(
            gate,
            session,
            Redo::AddPrimaryKey {
                table: t.id(),
                columns: cols,
            },
            |cat| cat.add_table(nt),
        )
    }

    /// The table holding the index of this name.
    pub fn index_table(&self, name: &str) -> Option<Arc<Table>> {
        self.catalog.read().index_table(name).cloned()
    }

    /// `CREATE [UNIQUE] INDEX name ON table (columns)`: builds the index from
    /// the table's rows under the gate (commits wait for the build, as for
    /// other DDL), then logs it (a system transaction, fully durable). The
    /// `id` of `index` is assigned here. A duplicate in a unique index fails
    /// before anything is logged.
    pub fn create_index(&self, session: &Session, table: &str, mut index: IndexDef) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(table)?;
        {
            let cat = self.catalog.read();
            if cat.table(&index.name).is_some() || cat.index_table(&index.name).is_some() {
                return Err(EngineError::RelationExists(index.name));
            }
            index.id = cat.next_table_id.max(1);
        }
        if index.columns.is_empty() || index.columns.iter().any(|&c| c >= t.def.columns.len()) {
            return Err(EngineError::InvalidDefinition(format!(
                "index \"{}\" names no column of table \"{}\"",
                index.name, t.def.name
            )));
        }
        let nt = Arc::new(t.with_index(index.clone(), self.vis.visible())?);
        self.system_change(
            gate,
            session,
            Redo::CreateIndex {
                table: t.id(),
                index,
            },
            |cat| cat.add_table(nt),
        )
    }

    /// `DROP INDEX name`.
    pub fn drop_index(&self, session: &Session, name: &str) -> Result<()> {
        let gate = self.gate.write();
        let t = self
            .catalog
            .read()
            .index_table(name)
            .cloned()
            .ok_or_else(|| EngineError::UnknownIndex(name.to_string()))?;
        let Some((_, ix)) = t.def.index(name) else {
            return Err(EngineError::UnknownIndex(name.to_string()));
        };
        let id = ix.id;
        // A foreign key whose referenced columns are this unique index's
        // (and not the primary key's) needs it.
        let set = |c: &[usize]| {
            let mut c = c.to_vec();
            c.sort_unstable();
            c
        };
        if ix.unique && set(&ix.columns) != set(&t.def.primary_key) {
            let by: Vec<(String, String)> = self
                .catalog
                .read()
                .referencing(t.id())
                .into_iter()
                .filter(|(_, fk)| set(&fk.ref_columns) == set(&ix.columns))
                .map(|(o, fk)| (fk.name, o.name().to_string()))
                .collect();
            if !by.is_empty() {
                return Err(EngineError::Referenced {
                    kind: "index",
                    table: ix.name.clone(),
                    by,
                });
            }
        }
        let nt = Arc::new(t.without_index(id));
        self.system_change(
            gate,
            session,
            Redo::DropIndex {
                table: t.id(),
                index: id,
            },
            |cat| cat.add_table(nt),
        )
    }

    /// Removes every row (a system transaction, fully durable).
    pub fn truncate(&self, session: &Session, name: &str) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(name)?;
        let empty = Arc::new(t.emptied());
        self.system_change(gate, session, Redo::Truncate(t.id()), |cat| {
            cat.add_table(empty)
        })
    }

    pub fn create_sequence(
        &self,
        session: &Session,
        name: &str,
        start: i64,
        increment: i64,
    ) -> Result<()> {
        if increment == 0 {
            return Err(EngineError::InvalidDefinition(
                "INCREMENT must not be zero".into(),
            ));
        }
        let gate = self.gate.write();
        let id = {
            let cat = self.catalog.read();
            if cat.sequences.contains_key(&name.to_ascii_lowercase()) {
                return Err(EngineError::SequenceExists(name.to_string()));
            }
            cat.next_seq_id.max(1)
        };
        let def = SequenceDef {
            id,
            name: name.to_string(),
            start,
            increment,
        };
        self.system_change(gate, session, Redo::CreateSequence(def.clone()), |cat| {
            cat.add_sequence(
                def,
                SeqState {
                    next: start,
                    reserved: start,
                },
            )
        })
    }

    pub fn drop_sequence(&self, session: &Session, name: &str) -> Result<()> {
        let gate = self.gate.write();
        let id = self.sequence(name)?.def.id;
        self.system_change(gate, session, Redo::DropSequence(id), |cat| {
            cat.sequences.remove(&name.to_ascii_lowercase());
        })
    }

    fn sequence(&self, name: &str) -> Result<Arc<Sequence>> {
        self.catalog
            .read()
            .sequences
            .get(&name.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| EngineError::UnknownSequence(name.to_string()))
    }

    /// `nextval('name')` / `NEXT VALUE FOR name`. Not transactional; values are
    /// reserved in the log 32 at a time, so a crash never hands out a value a
    /// hardened commit used.
    pub fn nextval(&self, session: &Session, name: &str) -> Result<i64> {
        self.check_writable()?;
        let seq = self.sequence(name)?;
        // Gate before the sequence lock: a checkpoint takes them in that order.
        let _g = self.gate.read();
        let mut st = seq.state.lock();
        let v = st.next;
        let inc = seq.def.increment;
        let beyond = if inc > 0 {
            v >= st.reserved
        } else {
            v <= st.reserved
        };
        if beyond {
            let upto = v.saturating_add(inc.saturating_mul(SEQ_RESERVE));
            let sinks = session.wait_sinks();
            self.log.append(
                &encode_redo(&Redo::SeqReserve {
                    id: seq.def.id,
                    upto,
                }),
                &sinks,
            )?;
            st.reserved = upto;
        }
        st.next = v
            .checked_add(inc)
            .ok_or_else(|| EngineError::OutOfRange(format!("sequence \"{name}\"")))?;
        Ok(v)
    }

    /// Changes the database's settings (a system transaction).
    pub fn set_settings(&self, session: &Session, new: DbSettings) -> Result<()> {
        let gate = self.gate.write();
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
        let lsn = self.log.flush(&sinks)?;
        // On a primary, "hardened" includes its synchronous secondaries.
        if !self.is_secondary() {
            self.harden_remote(lsn, &sinks)?;
        }
        Ok(lsn)
    }

    /// Log file bytes written since the last checkpoint (with padding: a
    /// durable single-row commit writes a whole 4 KiB page, so LSN distance
    /// would understate how fast segments fill).
    pub fn log_since_checkpoint(&self) -> u64 {
        let written = self.log_file_stats().num_of_bytes_written.load(Relaxed);
        written.saturating_sub(self.log_written_at_checkpoint.load(Relaxed))
    }

    /// Hardens everything, checkpoints and closes the log.
    pub(crate) fn shutdown(&self) -> Result<()> {
        if self.log.is_poisoned().is_none() {
            self.log.flush(&[])?;
            self.checkpoint()?;
        }
        self.log.close()?;
        if self.log.is_poisoned().is_none() {
            self.write_control(true)?;
        }
        Ok(())
    }
}
