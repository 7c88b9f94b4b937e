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
use crate::mvcc::Csn;
use crate::store::reads::{decode_row, encode_row, BaseRows, KeyFrom, StoreReads};
use crate::store::{encode_key, StorageConfig, VfsBackend};
use crate::table::{Table, Unsaved};
use crate::types::Row;
use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableHandle};
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use walden_log::{CountingFile, FileStats, OpenOptionsVfs, Vfs, VfsFile};

/// The store's file, in the database's `data` directory.
pub const FILE: &str = "store.redb";
/// The catalog and counters of the checkpoint (an image without rows).
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const META_IMAGE: &str = "image";

fn table_name(id: u32) -> String {
    format!("t{id}")
}

fn rows_def(name: &str) -> TableDefinition<'_, &'static [u8], &'static [u8]> {
    TableDefinition::new(name)
}

pub(crate) struct BaseStore {
    db: redb::Database,
    path: PathBuf,
    file: Arc<dyn VfsFile>,
    stats: Arc<FileStats>,
    /// The store's newest commit, as readers of evicted rows see it.
    reads: Arc<StoreReads>,
    /// Rows are read from the store rather than all loaded at open, and
    /// each checkpoint's rows may leave memory.
    read_through: bool,
}

/// How a table's stored rows give their keys.
fn key_from(t: &Table) -> KeyFrom {
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
}

impl BaseStore {
    /// Opens the store in `data_dir`, creating an empty one if there is
    /// none. redb verifies every page's checksum at open: a damaged file is
    /// refused rather than trusted.
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
                .set_check_integrity_on_open(existed)
                .create_with_backend(VfsBackend::new(file.clone()))
        };
        // Once more before refusing: a checksum mismatch may be the read's,
        // not the file's.
        let db = open().or_else(|_| open()).map_err(|e| corrupt(&path, e))?;
        let reads = Arc::new(StoreReads::open(&db, &path, &HashMap::new())?);
        let store = BaseStore {
            db,
            path,
            file,
            stats: stats.clone(),
            reads,
            read_through: storage.read_through,
        };
        store.note_size();
        Ok(store)
    }

    /// Whether rows are read through the store (see `read_through`).
    pub fn reads_through(&self) -> bool {
        self.read_through
    }

    fn base_rows(&self, t: &Table) -> BaseRows {
        BaseRows {
            reads: self.reads.clone(),
            table: t.id(),
            name: t.def.name.clone(),
            uid: t.rows.uid(),
            key_from: key_from(t),
            columns: t.def.columns.len(),
        }
    }

    fn reads_len(&self, t: &Table) -> Result<u64> {
        let b = self.base_rows(t);
        let p = b.pin();
        b.len(&p)
    }

    fn note_size(&self) {
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
            owners.insert(t.id(), t.rows.uid());
            // Rows stay in the store when they can be read from it; index
            // entries are kept in memory, built from the stored rows.
            if !self.read_through || !t.indexes.is_empty() {
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
                    if self.read_through {
                        t.load_index_entries(&key, &row);
                    } else {
                        t.load_row(key, row);
                    }
                }
            }
            t.mark_saved();
        }
        self.reads.swap(&self.db, &owners)?;
        if self.read_through {
            for t in image.catalog.by_id.values() {
                if owners.contains_key(&t.id()) {
                    let n = self.reads_len(t)?;
                    t.rows.attach(self.base_rows(t), Some(n));
                }
            }
        }
        Ok(Some(image))
    }

    /// Commits one checkpoint: `header` (an image without rows) and each
    /// table's changes read at `csn`; tables the catalog no longer has are
    /// dropped. Returns the bytes written to the file and the rows written
    /// or deleted.
    pub fn write(&self, header: &[u8], tables: &[TableWrite], csn: Csn) -> Result<(u64, u64)> {
        let before = self.stats.num_of_bytes_written.load(Relaxed);
        let err = |e: redb::Error| corrupt(&self.path, e);
        let mut w = self.db.begin_write().map_err(|e| err(e.into()))?;
        // A crash mid-commit must not make the next open rebuild the
        // allocator from every page.
        w.set_quick_repair(true);
        // Pages are synced before the commit slot that names them: an
        // unreadable primary is then damage, never a commit cut short, and
        // redb refuses it (the open retries) instead of rolling back to the
        // secondary on a read that was only transiently wrong.
        w.set_two_phase_commit(true);
        let live: HashSet<String> = tables.iter().map(|t| table_name(t.table.id())).collect();
        let gone: Vec<String> = w
            .list_tables()
            .map_err(|e| err(e.into()))?
            .map(|h| h.name().to_string())
            .filter(|n| n.starts_with('t') && !live.contains(n))
            .collect();
        for name in gone {
            w.delete_table(rows_def(&name)).map_err(|e| err(e.into()))?;
        }
        let mut buf = Vec::new();
        let mut kbuf = Vec::new();
        let mut rows = 0u64;
        for tw in tables {
            let name = table_name(tw.table.id());
            let def = rows_def(&name);
            if tw.unsaved.whole {
                w.delete_table(def).map_err(|e| err(e.into()))?;
            } else if tw.unsaved.keys.is_empty() {
                continue;
            }
            let mut out = w.open_table(def).map_err(|e| err(e.into()))?;
            let mut put = |key: &[crate::types::Value], row: Option<&Row>| -> Result<()> {
                rows += 1;
                if row.is_none() {
                    kbuf.clear();
                    encode_key(key, &mut kbuf);
                }
                match row {
                    Some(row) => {
                        encode_row(key, row, &mut kbuf, &mut buf);
                        out.insert(&kbuf[..], &buf[..]).map_err(|e| err(e.into()))?;
                    }
                    None => {
                        out.remove(&kbuf[..]).map_err(|e| err(e.into()))?;
                    }
                }
                Ok(())
            };
            if tw.unsaved.whole {
                for (k, r) in tw
                    .table
                    .rows
                    .scan_at((Bound::Unbounded, Bound::Unbounded), csn)?
                {
                    put(&k, Some(&r))?;
                }
            } else {
                for k in &tw.unsaved.keys {
                    put(k, tw.table.rows.get_at(k, csn)?.as_ref())?;
                }
            }
        }
        w.open_table(META)
            .map_err(|e| err(e.into()))?
            .insert(META_IMAGE, header)
            .map_err(|e| err(e.into()))?;
        w.commit().map_err(|e| err(e.into()))?;
        self.note_size();
        // Readers move to this commit; the rows it holds can then be read
        // from it (and leave memory at the checkpoint's eviction).
        let owners: HashMap<u32, u64> = tables
            .iter()
            .map(|tw| (tw.table.id(), tw.table.rows.uid()))
            .collect();
        self.reads.swap(&self.db, &owners)?;
        if self.read_through {
            for tw in tables {
                if !tw.table.rows.has_base() {
                    tw.table.rows.attach(self.base_rows(&tw.table), None);
                }
            }
        }
        Ok((self.stats.num_of_bytes_written.load(Relaxed) - before, rows))
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
    let once = || -> Result<(BaseStore, Option<Image>)> {
        let store = BaseStore::open(vfs, data_dir, stats, storage)?;
        let image = store.load()?;
        Ok((store, image))
    };
    match once() {
        Err(EngineError::Store { .. } | EngineError::CorruptDataFile { .. }) => once(),
        other => other,
    }
}

pub(crate) fn corrupt(path: &Path, e: impl Into<redb::Error>) -> EngineError {
    EngineError::Store {
        path: path.to_path_buf(),
        source: Box::new(e.into()),
    }
}
