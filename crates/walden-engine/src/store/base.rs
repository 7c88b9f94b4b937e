//! The base store: every table's rows as of the last checkpoint, in redb
//! over Walden's `Vfs` (docs/design.md, "Storage engine"). Only checkpoints
//! write it, one redb commit each, and that commit holds the rows together
//! with `meta` (the catalog, the counters and the LSN redo starts from), so
//! the file is always exactly one checkpoint: redb has no journal, and
//! Walden's log stays the only write-ahead log.
//!
//! A checkpoint writes only what changed since the one before it (the keys
//! each table's commits installed, see `table::Unsaved`), read at the
//! checkpoint's snapshot.

use crate::checkpoint::{decode_image, Image};
use crate::error::{io_err, EngineError, Result};
use crate::store::layer::LayerFile;
use crate::store::reads::{decode_row, BaseRows, KeyFrom, StoreReads};
use crate::store::{StorageConfig, VfsBackend};
use crate::table::{Index, Table, Unsaved};
use parking_lot::Mutex;
use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableHandle};
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use walden_log::{CountingFile, FileStats, OpenOptionsVfs, Vfs, VfsFile};

/// The store's file, in the database's `data` directory.
pub const FILE: &str = "store.redb";
/// The catalog and counters of the checkpoint (an image without rows).
pub(super) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub(super) const META_IMAGE: &str = "image";

pub(super) fn table_name(id: u32) -> String {
    format!("t{id}")
}

/// An index's entries: `i<table id>_<index id>`.
pub(super) fn index_name(t: &Table, ix: &Index) -> String {
    format!("i{}_{}", t.id(), ix.def.id)
}

/// A stored table of rows or index entries (what a checkpoint may drop).
pub(super) fn is_data_table(name: &str) -> bool {
    name.starts_with('t') || name.starts_with('i')
}

/// Where a checkpoint stages a table (or index) written whole before
/// renaming it into place: `s<name>`.
pub(super) fn stage_name(name: &str) -> String {
    format!("s{name}")
}

pub(super) fn is_stage_table(name: &str) -> bool {
    name.starts_with('s')
}

pub(super) fn rows_def(name: &str) -> TableDefinition<'_, &'static [u8], &'static [u8]> {
    TableDefinition::new(name)
}

pub(crate) struct BaseStore {
    /// Dropped by `Drop` below unless redb panicked (see `redb_panicked`).
    pub(super) db: ManuallyDrop<redb::Database>,
    pub(crate) path: PathBuf,
    pub(super) file: Arc<dyn VfsFile>,
    pub(super) stats: Arc<FileStats>,
    /// The store's newest commit, as readers of evicted rows see it.
    pub(super) reads: Arc<StoreReads>,
    /// Rows are read from the store rather than all loaded at open, and
    /// each checkpoint's rows may leave memory.
    pub(super) read_through: bool,
    /// Bytes per staged batch of a table written whole.
    pub(super) stage_bytes: usize,
    /// Commits made to the store since it was opened (a check compares a
    /// table's count only if none came while it read the table).
    pub(super) commits: AtomicU64,
    /// Why the store is known to be damaged (a check or a read found it):
    /// checkpoints stop, so the log keeps every change since the last good
    /// one.
    damaged: Mutex<Option<String>>,
    /// redb panicked on a damaged file and its locks are poisoned: its own
    /// drop would panic again, so the handle is left open instead.
    redb_panicked: AtomicBool,
    /// Whether every page of the file has been verified since the open
    /// (see `verify.rs`); the first checkpoint write does it otherwise.
    pub(super) verified: AtomicBool,
}

impl Drop for BaseStore {
    fn drop(&mut self) {
        // redb's drop commits once more (its allocator state), reading the
        // lists of freed pages: on a file known to be damaged that can
        // panic twice and abort, so such a handle is left open (leaked)
        // and the file stays as the last good checkpoint left it.
        if !self.redb_panicked.load(Relaxed) && self.damaged.lock().is_none() {
            // SAFETY: dropped once, here, and never used after.
            unsafe { ManuallyDrop::drop(&mut self.db) }
        }
    }
}

/// How a table's stored rows give their keys.
pub(super) fn key_from(t: &Table) -> KeyFrom {
    if t.has_hidden_key() {
        KeyFrom::Stored
    } else {
        KeyFrom::Columns(t.def.primary_key.clone())
    }
}

/// One table's share of a checkpoint: what changed, read at `csn`.
pub(crate) struct TableWrite {
    pub table: Arc<Table>,
    pub unsaved: Unsaved,
    /// Each index's changed entries, in `table.indexes` order.
    pub indexes: Vec<Unsaved>,
}

impl TableWrite {
    /// Every row and entry of `table` (a first image).
    pub fn whole(table: Arc<Table>) -> TableWrite {
        let indexes = table.indexes.iter().map(|_| Unsaved::all()).collect();
        TableWrite {
            table,
            unsaved: Unsaved::all(),
            indexes,
        }
    }

    /// What changed in `table` since the last checkpoint took it.
    pub fn take(table: Arc<Table>) -> TableWrite {
        TableWrite {
            unsaved: table.take_unsaved(),
            indexes: table.take_index_unsaved(),
            table,
        }
    }

    /// Puts what this write took back for the next checkpoint.
    pub fn restore(self) {
        self.table.restore_unsaved(self.unsaved, self.indexes);
    }
}

/// What a table takes in the base store as of the last checkpoint: its
/// rows (keyed by the primary key, so that is also the primary key's
/// index) and each secondary index's entries, by index id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredBytes {
    pub rows: u64,
    pub indexes: Vec<(u32, u64)>,
}

impl StoredBytes {
    pub fn indexes_total(&self) -> u64 {
        self.indexes.iter().map(|(_, b)| b).sum()
    }
}

impl BaseStore {
    /// `t`'s pages in the store's newest commit (see `StoredBytes`).
    pub fn stored_bytes(&self, t: &Table) -> Result<StoredBytes> {
        Ok(StoredBytes {
            rows: self.reads.stored_bytes(&table_name(t.id()), t.rows.uid())?,
            indexes: t
                .indexes
                .iter()
                .map(|ix| {
                    let b = self
                        .reads
                        .stored_bytes(&index_name(t, ix), ix.entries.uid())?;
                    Ok((ix.def.id, b))
                })
                .collect::<Result<_>>()?,
        })
    }

    /// Opens the store in `data_dir`, creating an empty one if there is
    /// none. With `verify_on_open`, redb verifies every page's checksum
    /// first, so a damaged file is refused (slow: it reads the whole file).
    /// Otherwise the open reads only what it needs, as its commits record
    /// the allocator's state (quick repair) even after a crash; the check
    /// in `check.rs` reads the rest in the background.
    pub fn open(
        vfs: &dyn Vfs,
        data_dir: &Path,
        stats: &Arc<FileStats>,
        storage: StorageConfig,
    ) -> Result<BaseStore> {
        let path = data_dir.join(FILE);
        let existed = vfs.exists(&path).map_err(io_err(&path))?;
        let f = vfs
            .open(
                &path,
                OpenOptionsVfs {
                    create: true,
                    dsync: false,
                },
            )
            .map_err(io_err(&path))?;
        if !existed {
            vfs.sync_dir(data_dir).map_err(io_err(data_dir))?;
        }
        let file: Arc<dyn VfsFile> = Arc::new(CountingFile::new(f, stats.clone()));
        let open = || {
            redb::Database::builder()
                .set_cache_size(storage.cache_bytes)
                .set_check_integrity_on_open(existed && storage.verify_on_open)
                .create_with_backend(VfsBackend::new(file.clone()))
        };

        // Once more before refusing: a checksum mismatch may be the read's,
        // not the file's.
        let db = open().or_else(|_| open()).map_err(|e| corrupt(&path, e))?;
        let reads = match catch_unwind(AssertUnwindSafe(|| {
            StoreReads::open(&db, &path, &HashMap::new())
        })) {
            Ok(r) => Arc::new(r?),
            Err(p) => {
                // redb's drop would panic on its poisoned locks.
                std::mem::forget(db);
                return Err(EngineError::CorruptDataFile {
                    path,
                    detail: format!("opening it panicked in redb: {}", panic_text(&*p)),
                });
            }
        };
        let store = BaseStore {
            db: ManuallyDrop::new(db),
            path,
            file,
            stats: stats.clone(),
            reads,
            read_through: storage.read_through,
            stage_bytes: storage.stage_bytes.max(1),
            commits: AtomicU64::new(0),
            damaged: Mutex::new(None),
            redb_panicked: AtomicBool::new(false),
            // A new file, or one redb just verified whole, needs no check
            // before its first write.
            verified: AtomicBool::new(!existed || storage.verify_on_open),
        };
        store.note_size();
        Ok(store)
    }

    /// The names of the tables in the store's newest commit (rows,
    /// index entries, staging tables, `meta`).
    pub fn table_names(&self) -> Result<Vec<String>> {
        let r = self.db.begin_read().map_err(|e| corrupt(&self.path, e))?;
        let list = r.list_tables().map_err(|e| corrupt(&self.path, e))?;
        Ok(list.map(|h| h.name().to_string()).collect())
    }

    /// Skips the verification of every page before the first write (see
    /// `verify.rs`): the file was closed cleanly.
    pub(crate) fn trust_pages(&self) {
        self.verified.store(true, Relaxed);
    }

    /// Why the store is known to be damaged, if it is.
    pub fn damaged(&self) -> Option<String> {
        self.damaged.lock().clone()
    }

    /// Damage that made redb panic (see `redb_panicked`).
    pub(crate) fn mark_panicked(&self, why: String) {
        self.redb_panicked.store(true, Relaxed);
        self.mark_damaged(why);
    }

    pub(crate) fn mark_damaged(&self, why: String) {
        let mut d = self.damaged.lock();
        if d.is_none() {
            tracing::error!(path = %self.path.display(), why = %why, "the data file is damaged: checkpoints stop until it is restored from a backup");
            *d = Some(why);
        }
    }

    /// Whether rows are read through the store (see `read_through`).
    pub fn reads_through(&self) -> bool {
        self.read_through
    }

    fn base_rows(&self, t: &Table) -> BaseRows {
        BaseRows {
            reads: self.reads.clone(),
            table: table_name(t.id()),
            name: t.def.name.clone(),
            uid: t.rows.uid(),
            key_from: key_from(t),
            columns: t.def.columns.len(),
        }
    }

    /// Makes the rows of `t` (a table only its transaction can reach) read
    /// through `file`'s newest commit: its spill file (`layer.rs`).
    pub(crate) fn set_layer(&self, t: &Table, file: &Arc<LayerFile>) -> Result<()> {
        let (rows, n) = file.rows()?;
        self.reads.set_layer(t.rows.uid(), rows, file.clone());
        if !t.rows.has_base() {
            t.rows.attach(self.base_rows(t), None);
        }
        t.rows.set_live(n);
        Ok(())
    }

    /// Forgets the spill file of the rows `uid` (its transaction ended
    /// without installing it).
    pub(crate) fn drop_layer(&self, uid: u64) {
        self.reads.drop_layer(uid);
    }

    fn index_base(&self, t: &Table, ix: &Index) -> BaseRows {
        BaseRows {
            reads: self.reads.clone(),
            table: index_name(t, ix),
            name: format!("{} (index {})", t.def.name, ix.def.name),
            uid: ix.entries.uid(),
            key_from: KeyFrom::Stored,
            columns: 0,
        }
    }

    fn reads_len(&self, t: &Table) -> Result<u64> {
        let b = self.base_rows(t);
        let p = b.pin();
        b.len(&p)
    }

    pub(super) fn note_size(&self) {
        if let Ok(len) = self.file.len() {
            self.stats.size_on_disk_bytes.store(len, Relaxed);
        }
    }

    /// The checkpoint the store holds, with every table's rows loaded, or
    /// `None` if no checkpoint was ever committed to it.
    pub fn load(&self) -> Result<Option<Image>> {
        let err = |e: redb::Error| corrupt(&self.path, e);
        let r = self.db.begin_read().map_err(|e| err(e.into()))?;
        let meta = match r.open_table(META) {
            Ok(m) => m,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(err(e.into())),
        };
        let Some(bytes) = meta.get(META_IMAGE).map_err(|e| err(e.into()))? else {
            return Ok(None);
        };
        let image = decode_image(bytes.value(), &self.path)?;
        let mut owners = HashMap::new();
        for t in image.catalog.by_id.values() {
            let name = table_name(t.id());
            let rows = match r.open_table(rows_def(&name)) {
                Ok(rows) => rows,
                Err(redb::TableError::TableDoesNotExist(_)) => {
                    t.mark_saved();
                    continue;
                }
                Err(e) => return Err(err(e.into())),
            };
            owners.insert(name, t.rows.uid());
            // Which indexes the store holds the entries of (a store written
            // before entries were stored has none: they are rebuilt from
            // the rows and written whole at the next checkpoint).
            let mut stored = Vec::with_capacity(t.indexes.len());
            for ix in &t.indexes {
                let iname = index_name(t, ix);
                let here = match r.open_table(rows_def(&iname)) {
                    Ok(_) => true,
                    Err(redb::TableError::TableDoesNotExist(_)) => false,
                    Err(e) => return Err(err(e.into())),
                };
                if here {
                    owners.insert(iname, ix.entries.uid());
                    *ix.unsaved.lock() = Unsaved::default();
                }
                stored.push(here);
            }
            // Rows and stored entries stay in the store when they can be
            // read from it.
            let rebuild: Vec<&Arc<Index>> = t
                .indexes
                .iter()
                .zip(&stored)
                .filter(|(_, here)| !self.read_through || !**here)
                .map(|(ix, _)| ix)
                .collect();
            if !self.read_through || !rebuild.is_empty() {
                for entry in rows.iter().map_err(|e| err(e.into()))? {
                    let (k, v) = entry.map_err(|e| err(e.into()))?;
                    let (key, row) = decode_row(
                        &self.path,
                        &t.def.name,
                        &key_from(t),
                        t.def.columns.len(),
                        k.value(),
                        v.value(),
                    )?;
                    for ix in &rebuild {
                        ix.load_entry(&key, &row);
                    }
                    if !self.read_through {
                        t.rows.load(key, row);
                    }
                }
            }
            t.mark_saved();
        }
        self.reads.swap(&self.db, &owners)?;
        if self.read_through {
            for t in image.catalog.by_id.values() {
                if owners.contains_key(&table_name(t.id())) {
                    let n = self.reads_len(t)?;
                    t.rows.attach(self.base_rows(t), Some(n));
                }
                for ix in &t.indexes {
                    if owners.contains_key(&index_name(t, ix)) {
                        ix.entries.attach(self.index_base(t, ix), None);
                    }
                }
            }
        }
        Ok(Some(image))
    }

    /// After a checkpoint's last commit: readers move to it, and the rows it
    /// holds can be read from it.
    pub(super) fn after_commit(&self, tables: &[TableWrite]) -> Result<()> {
        self.note_size();
        // Readers move to this commit; the rows it holds can then be read
        // from it (and leave memory at the checkpoint's eviction).
        let mut owners: HashMap<String, u64> = HashMap::new();
        for tw in tables {
            owners.insert(table_name(tw.table.id()), tw.table.rows.uid());
            for ix in &tw.table.indexes {
                owners.insert(index_name(&tw.table, ix), ix.entries.uid());
            }
        }
        self.reads.swap(&self.db, &owners)?;
        if self.read_through {
            for tw in tables {
                let t = &tw.table;
                if !t.rows.has_base() {
                    t.rows.attach(self.base_rows(t), None);
                }
                for ix in &t.indexes {
                    if !ix.entries.has_base() {
                        ix.entries.attach(self.index_base(t, ix), None);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Opens the store and loads its checkpoint; a damaged read is retried once
/// with the file opened afresh (redb caches what it read), so only damage
/// that is in the file refuses the open.
pub(crate) fn open_and_load(
    vfs: &dyn Vfs,
    data_dir: &Path,
    stats: &Arc<FileStats>,
    storage: StorageConfig,
) -> Result<(BaseStore, Option<Image>)> {
    // redb may panic rather than fail on a file damaged outside it: that
    // is damage found too.
    let once = || -> Result<(BaseStore, Option<Image>)> {
        let panicked = |p: Box<dyn std::any::Any + Send>| EngineError::CorruptDataFile {
            path: data_dir.join(FILE),
            detail: format!("opening it panicked in redb: {}", panic_text(&*p)),
        };
        let store = catch_unwind(AssertUnwindSafe(|| {
            BaseStore::open(vfs, data_dir, stats, storage)
        }))
        .map_err(panicked)??;
        match catch_unwind(AssertUnwindSafe(|| store.load())) {
            Ok(image) => Ok((store, image?)),
            Err(p) => {
                let e = panicked(p);
                store.mark_panicked(e.to_string());
                Err(e)
            }
        }
    };
    match once() {
        Err(EngineError::Store { .. } | EngineError::CorruptDataFile { .. }) => once(),
        other => other,
    }
}

/// A panic's message.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

pub(crate) fn corrupt(path: &Path, e: impl Into<redb::Error>) -> EngineError {
    EngineError::Store {
        path: path.to_path_buf(),
        source: Box::new(e.into()),
    }
}
