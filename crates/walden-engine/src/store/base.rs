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
use crate::codec::{self, Reader};
use crate::error::{io_err, EngineError, Result};
use crate::mvcc::Csn;
use crate::store::{encode_key, keycode::decode_key, VfsBackend};
use crate::table::{Table, Unsaved};
use crate::types::{Key, Row};
use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableHandle};
use std::collections::HashSet;
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
/// redb's page cache. The tables are still loaded whole at open, so the
/// cache serves checkpoint writes only.
const CACHE_BYTES: usize = 128 << 20;

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
    pub fn open(vfs: &dyn Vfs, data_dir: &Path, stats: &Arc<FileStats>) -> Result<BaseStore> {
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
                .set_cache_size(CACHE_BYTES)
                .set_check_integrity_on_open(existed)
                .create_with_backend(VfsBackend::new(file.clone()))
        };
        // Once more before refusing: a checksum mismatch may be the read's,
        // not the file's.
        let db = open().or_else(|_| open()).map_err(|e| corrupt(&path, e))?;
        let store = BaseStore {
            db,
            path,
            file,
            stats: stats.clone(),
        };
        store.note_size();
        Ok(store)
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
            for entry in rows.iter().map_err(|e| err(e.into()))? {
                let (k, v) = entry.map_err(|e| err(e.into()))?;
                let (key, row) = self.decode_row(t, k.value(), v.value())?;
                t.load_row(key, row);
            }
            t.mark_saved();
        }
        Ok(Some(image))
    }

    fn decode_row(&self, t: &Table, k: &[u8], v: &[u8]) -> Result<(Key, Row)> {
        let bad = |d: String| EngineError::CorruptDataFile {
            path: self.path.clone(),
            detail: format!("table {}: {d}", t.def.name),
        };
        // redb checks page checksums at open only; this catches a damaged
        // read (or file) later.
        let Some(n) = v.len().checked_sub(4) else {
            return Err(bad("a row is shorter than its checksum".into()));
        };
        let (v, crc) = v.split_at(n);
        if row_crc(k, v) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(bad("a row's checksum does not match".into()));
        }
        let row: Row = Arc::from(
            Reader::new(v)
                .values()
                .map_err(|e| bad(format!("a row does not decode: {e}")))?,
        );
        if row.len() != t.def.columns.len() {
            return Err(bad(format!(
                "a row has {} values for {} columns",
                row.len(),
                t.def.columns.len()
            )));
        }
        let key = if t.has_hidden_key() {
            decode_key(k)
                .map_err(|e| bad(format!("a row id does not decode: {e}")))?
                .into_boxed_slice()
        } else {
            t.key_of(&row)
                .ok_or_else(|| bad("a row has no key".into()))?
        };
        Ok((key, row))
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
                kbuf.clear();
                encode_key(key, &mut kbuf);
                match row {
                    Some(row) => {
                        buf.clear();
                        codec::put_values(&mut buf, row);
                        let crc = row_crc(&kbuf, &buf);
                        buf.extend_from_slice(&crc.to_le_bytes());
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
                    .scan_at((Bound::Unbounded, Bound::Unbounded), csn)
                {
                    put(&k, Some(&r))?;
                }
            } else {
                for k in &tw.unsaved.keys {
                    put(k, tw.table.rows.get_at(k, csn).as_ref())?;
                }
            }
        }
        w.open_table(META)
            .map_err(|e| err(e.into()))?
            .insert(META_IMAGE, header)
            .map_err(|e| err(e.into()))?;
        w.commit().map_err(|e| err(e.into()))?;
        self.note_size();
        Ok((self.stats.num_of_bytes_written.load(Relaxed) - before, rows))
    }
}

/// A stored row's checksum covers its key too (a hidden row id is read
/// from the key).
fn row_crc(key: &[u8], value: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(key), value)
}

/// Opens the store and loads its checkpoint; a damaged read is retried once
/// with the file opened afresh (redb caches what it read), so only damage
/// that is in the file refuses the open.
pub(crate) fn open_and_load(
    vfs: &dyn Vfs,
    data_dir: &Path,
    stats: &Arc<FileStats>,
) -> Result<(BaseStore, Option<Image>)> {
    let once = || -> Result<(BaseStore, Option<Image>)> {
        let store = BaseStore::open(vfs, data_dir, stats)?;
        let image = store.load()?;
        Ok((store, image))
    };
    match once() {
        Err(EngineError::Store { .. } | EngineError::CorruptDataFile { .. }) => once(),
        other => other,
    }
}

fn corrupt(path: &Path, e: impl Into<redb::Error>) -> EngineError {
    EngineError::Store {
        path: path.to_path_buf(),
        source: Box::new(e.into()),
    }
}
