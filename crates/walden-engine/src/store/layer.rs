//! A transaction's private spill file: the rows of a table it created or
//! truncated, moved out of memory once its write set passes the spill
//! bound (docs/design.md, "Slices", 2 and 3).
//!
//! One redb file per table, in `<database>/spill/`, keyed and encoded as
//! the base store's tables are, so the table's rows read it through the
//! store's generations (`reads.rs`, `Generation::layers`) as they read the
//! store. The file is never needed after a crash: the transaction's rows
//! are in the log (it logs as it goes before it spills) and redo rebuilds
//! them; what a crash leaves in `spill/` is removed at the next open. After
//! the commit the file stays a read-only layer under the table until a
//! checkpoint has written its rows into the store; then it is removed once
//! the last reader of an older generation lets go of it.

use super::backend::VfsBackend;
use super::base::{corrupt, rows_def};
use super::encode_key;
use super::reads::encode_row;
use crate::error::{io_err, EngineError, Result};
use crate::types::{Key, Row};
use redb::{ReadableDatabase, ReadableTableMetadata};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use walden_log::{OpenOptionsVfs, Vfs};

/// The one table inside a spill file.
const ROWS: &str = "rows";

/// redb's page cache for one spill file: the rows go out in key order and
/// are read back rarely, so a little suffices.
const CACHE_BYTES: usize = 16 << 20;

/// The most a DDL build gathers before it sorts and writes a batch.
pub(crate) const LAYER_BATCH_BYTES: usize = 32 << 20;

/// Where a database's spill files live.
pub(crate) fn spill_dir(db_dir: &Path) -> PathBuf {
    db_dir.join("spill")
}

/// Removes what a crash left in `spill/` (nothing reads it).
pub(crate) fn clear_spill_dir(vfs: &dyn Vfs, db_dir: &Path) -> Result<()> {
    let dir = spill_dir(db_dir);
    if vfs.exists(&dir).map_err(io_err(&dir))? {
        vfs.remove_dir_all(&dir).map_err(io_err(&dir))?;
    }
    Ok(())
}

/// One table's spill file.
pub(crate) struct LayerFile {
    db: redb::Database,
    path: PathBuf,
    vfs: Arc<dyn Vfs>,
}

impl std::fmt::Debug for LayerFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LayerFile")
            .field("path", &self.path)
            .finish()
    }
}

/// The rows of a spill file as of one of its commits.
pub(crate) type LayerRows = redb::ReadOnlyTable<&'static [u8], &'static [u8]>;

impl LayerFile {
    /// A new, empty spill file for the rows `uid` (see `VersionedRows::uid`).
    pub(crate) fn create(vfs: &Arc<dyn Vfs>, db_dir: &Path, uid: u64) -> Result<LayerFile> {
        let dir = spill_dir(db_dir);
        vfs.create_dir_all(&dir).map_err(io_err(&dir))?;
        let path = dir.join(format!("{uid}.redb"));
        if vfs.exists(&path).map_err(io_err(&path))? {
            vfs.remove_file(&path).map_err(io_err(&path))?;
        }
        let f = vfs
            .open(
                &path,
                OpenOptionsVfs {
                    create: true,
                    dsync: false,
                },
            )
            .map_err(io_err(&path))?;
        let db = redb::Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create_with_backend(VfsBackend::new(f))
            .map_err(|e| corrupt(&path, e))?;
        Ok(LayerFile {
            db,
            path,
            vfs: vfs.clone(),
        })
    }

    /// Writes `rows` (`None`: the key is removed) in one commit.
    pub(crate) fn put<'a>(
        &self,
        rows: impl IntoIterator<Item = (&'a Key, &'a Option<Row>)>,
    ) -> Result<()> {
        let err = |e: redb::Error| corrupt(&self.path, e);
        let w = self.db.begin_write().map_err(|e| err(e.into()))?;
        {
            let mut t = w.open_table(rows_def(ROWS)).map_err(|e| err(e.into()))?;
            let (mut kbuf, mut buf) = (Vec::new(), Vec::new());
            for (k, r) in rows {
                match r {
                    Some(r) => {
                        encode_row(k, r, &mut kbuf, &mut buf);
                        t.insert(&kbuf[..], &buf[..]).map_err(|e| err(e.into()))?;
                    }
                    None => {
                        kbuf.clear();
                        encode_key(k, &mut kbuf);
                        t.remove(&kbuf[..]).map_err(|e| err(e.into()))?;
                    }
                }
            }
        }
        w.commit().map_err(|e| err(e.into()))
    }

    /// Inserts new rows in one commit; returns the first key already
    /// there (and writes nothing).
    pub(crate) fn put_new<'a>(
        &self,
        rows: impl IntoIterator<Item = (&'a Key, &'a Row)>,
    ) -> Result<Option<Key>> {
        let err = |e: redb::Error| corrupt(&self.path, e);
        let w = self.db.begin_write().map_err(|e| err(e.into()))?;
        {
            let mut t = w.open_table(rows_def(ROWS)).map_err(|e| err(e.into()))?;
            let (mut kbuf, mut buf) = (Vec::new(), Vec::new());
            for (k, r) in rows {
                encode_row(k, r, &mut kbuf, &mut buf);
                let old = t.insert(&kbuf[..], &buf[..]).map_err(|e| err(e.into()))?;
                if old.is_some() {
                    drop(old);
                    drop(t);
                    w.abort().map_err(|e| err(e.into()))?;
                    return Ok(Some(k.clone()));
                }
            }
        }
        w.commit().map_err(|e| err(e.into()))?;
        Ok(None)
    }

    /// The rows as of the last `put`, and how many there are.
    pub(crate) fn rows(&self) -> Result<(LayerRows, u64)> {
        let err = |e: redb::Error| corrupt(&self.path, e);
        let r = self.db.begin_read().map_err(|e| err(e.into()))?;
        let t = r.open_table(rows_def(ROWS)).map_err(|e| err(e.into()))?;
        let n = t.len().map_err(|e| err(e.into()))?;
        Ok((t, n))
    }
}

impl Drop for LayerFile {
    fn drop(&mut self) {
        // The file is not needed by anyone once its last reader is gone;
        // one left behind is removed at the next open.
        let _ = self.vfs.remove_file(&self.path);
    }
}

/// A DDL build's rows on their way into a spill file: they arrive in
/// another order than the new key's, so they are gathered up to a bounded
/// size, sorted and inserted as one commit (redb keeps a commit's dirty
/// pages in memory). A key seen twice, in one batch or across two, is
/// `conflict`'s error.
pub(crate) struct SortedBatch<'a> {
    file: Option<&'a LayerFile>,
    rows: Vec<(Key, Row)>,
    bytes: usize,
    limit: usize,
    conflict: &'a dyn Fn(&Key) -> EngineError,
}

impl<'a> SortedBatch<'a> {
    /// Nothing is gathered without a file.
    pub(crate) fn new(
        file: Option<&'a LayerFile>,
        limit: usize,
        conflict: &'a dyn Fn(&Key) -> EngineError,
    ) -> SortedBatch<'a> {
        SortedBatch {
            file,
            rows: Vec::new(),
            bytes: 0,
            limit: limit.max(1),
            conflict,
        }
    }

    pub(crate) fn push(&mut self, key: Key, row: Row) -> Result<()> {
        self.bytes +=
            crate::budget::held_bytes(&key) as usize + crate::budget::held_bytes(&row) as usize;
        self.rows.push((key, row));
        if self.bytes >= self.limit {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes what is gathered.
    pub(crate) fn flush(&mut self) -> Result<()> {
        let Some(file) = self.file else {
            return Ok(());
        };
        self.rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let dup = match self.rows.windows(2).find(|w| w[0].0 == w[1].0) {
            Some(w) => Some(w[0].0.clone()),
            None => file.put_new(self.rows.iter().map(|(k, r)| (k, r)))?,
        };
        if let Some(k) = dup {
            return Err((self.conflict)(&k));
        }
        self.rows.clear();
        self.bytes = 0;
        Ok(())
    }
}
