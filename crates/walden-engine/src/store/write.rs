//! A checkpoint's write into the base store, in batches.
//!
//! The keys that changed since the last checkpoint are written in batches
//! of [`BATCH_ROWS`] row keys, each batch a durable redb commit holding the
//! rows of a range of row keys together with their index entries (an
//! entry's key ends with its row's key). The last commit holds what cannot
//! be split (tables written whole, tables dropped) and `meta`, whose LSN is
//! where recovery starts its redo. Tables and indexes written whole (a
//! first checkpoint, after TRUNCATE or a rebuild, a new index) are staged:
//! their rows go in batches of [`STAGE_BYTES`] (by default) into a staging table beside
//! the stored one, and the last commit renames it into place, so no
//! commit writes a whole table at once. A crash before the last commit
//! leaves staging tables that nothing reads and the next checkpoint drops.
//! A crash between two batches leaves a
//! store whose `meta` is the previous checkpoint's, with some keys already
//! at this checkpoint's state: each key's row and its index entries agree
//! with each other, and the log since the previous checkpoint (kept until
//! this one is done) holds every change after either state, so redo (rows
//! put or deleted whole, index entries kept from the row's prior) brings
//! every key to the same end. The fuzzy checkpoint of PostgreSQL and SQL
//! Server, at key rather than page grain.
//!
//! Batches keep each commit's write-out small, so the log's syncs do not
//! queue behind one large one, and let the checkpointer pause between them
//! (see `Pace`) instead of taking a core and the disk at once.

use super::base::{
    corrupt, index_name, is_data_table, is_stage_table, panic_text, rows_def, stage_name,
    table_name, BaseStore, TableWrite, META, META_IMAGE,
};
use super::encode_key;
use super::reads::encode_row;
use crate::error::EngineError;
use crate::error::Result;
use crate::mvcc::{Csn, VersionedRows};
use crate::types::{Key, Row, Value};
use redb::TableHandle;
use std::collections::HashSet;
use std::ops::Bound;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// Row keys per batch: a batch of random updates dirties about one leaf
/// page per key, so 2,048 keys write some 8-10 MB.
pub(crate) const BATCH_ROWS: usize = 2048;

/// Encoded bytes of rows per staged batch of a table written whole: its
/// rows arrive in key order and fill pages densely, so a batch writes
/// little more than this.
pub(crate) const STAGE_BYTES: usize = 8 << 20;

/// What one checkpoint wrote to the store, and where its time went.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StoreWrite {
    /// Bytes written to the file.
    pub bytes: u64,
    /// Rows (and index entries) written or deleted.
    pub rows: u64,
    /// redb commits (the batches and the last one).
    pub commits: u64,
    /// Reading the changes and putting them into the store's pages.
    pub write: Duration,
    /// redb's commits: pages written out and synced, then the root.
    pub commit: Duration,
    /// Paused between batches.
    pub paused: Duration,
}

/// How the checkpointer spaces its batches: called after each batch but
/// the last with the time the batch took; it may sleep.
pub(crate) type Pace<'a> = &'a mut dyn FnMut(Duration);

/// A table's rows or an index's entries written whole: staged in batches
/// unless they fit one, in which case the last commit writes them.
struct Whole<'a> {
    name: String,
    versions: &'a VersionedRows,
    /// Rows went to the staging table (the last commit renames it).
    staged: bool,
    /// All the rows, when they fit one batch.
    rows: Vec<(Key, Row)>,
}

/// A table's incremental change, cut into batches of row keys.
struct Split<'a> {
    tw: &'a TableWrite,
    keys: Vec<&'a Key>,
    /// Each index's changed entries, sorted by the row key they name.
    entries: Vec<Vec<(&'a [Value], &'a Key)>>,
}

impl<'a> Whole<'a> {
    fn new(name: String, versions: &'a VersionedRows) -> Whole<'a> {
        Whole {
            name,
            versions,
            staged: false,
            rows: Vec::new(),
        }
    }
}

/// Lets the checkpointer pause after a batch that took `took`.
fn paced(pace: Pace<'_>, took: Duration, out: &mut StoreWrite) {
    let p0 = Instant::now();
    pace(took);
    out.paused += p0.elapsed();
}

impl<'a> Split<'a> {
    fn of(tw: &'a TableWrite) -> Split<'a> {
        let t = &tw.table;
        let entries = t
            .indexes
            .iter()
            .zip(&tw.indexes)
            .map(|(ix, u)| {
                let mut v: Vec<(&[Value], &Key)> =
                    u.keys.iter().map(|e| (ix.row_key(e), e)).collect();
                v.sort_unstable_by(|a, b| a.0.cmp(b.0));
                v
            })
            .collect();
        Split {
            tw,
            keys: tw.unsaved.keys.iter().collect(),
            entries,
        }
    }
}

impl BaseStore {
    /// Commits one checkpoint: `header` (an image without rows) and each
    /// table's changes read at `csn`; tables the catalog no longer has are
    /// dropped. `pace` runs between batches.
    pub(crate) fn write(
        &self,
        header: &[u8],
        tables: &[TableWrite],
        csn: Csn,
        pace: Pace<'_>,
    ) -> Result<StoreWrite> {
        if !self.verified.load(Relaxed) {
            if let Err(why) = super::verify::verify_pages(self.file.clone()) {
                self.mark_damaged(format!("before its first write since the open: {why}"));
                return Err(EngineError::CorruptDataFile {
                    path: self.path.clone(),
                    detail: why,
                });
            }
            self.verified.store(true, Relaxed);
        }
        // redb may panic rather than fail on damage it reads while writing
        // (its allocator state, a branch page): that is damage found, and
        // the store takes no more commits.
        match catch_unwind(AssertUnwindSafe(|| {
            self.write_batches(header, tables, csn, pace)
        })) {
            Ok(r) => r,
            Err(p) => {
                let why = format!("a checkpoint's write panicked in redb: {}", panic_text(&*p));
                self.mark_panicked(why.clone());
                Err(EngineError::CorruptDataFile {
                    path: self.path.clone(),
                    detail: why,
                })
            }
        }
    }

    fn write_batches(
        &self,
        header: &[u8],
        tables: &[TableWrite],
        csn: Csn,
        pace: Pace<'_>,
    ) -> Result<StoreWrite> {
        let before = self.stats.num_of_bytes_written.load(Relaxed);
        let mut out = StoreWrite::default();
        // Tables with a part written whole go in the last commit; the parts
        // written whole are staged first.
        let (split, last): (Vec<&TableWrite>, Vec<&TableWrite>) = tables
            .iter()
            .partition(|tw| !tw.unsaved.whole && tw.indexes.iter().all(|u| !u.whole));
        let mut wholes = Vec::new();
        for tw in &last {
            let t = &tw.table;
            if tw.unsaved.whole {
                wholes.push(Whole::new(table_name(t.id()), &t.rows));
            }
            for (ix, u) in t.indexes.iter().zip(&tw.indexes) {
                if u.whole {
                    wholes.push(Whole::new(index_name(t, ix), &ix.entries));
                }
            }
        }
        for wh in &mut wholes {
            self.stage(wh, csn, &mut out, pace)?;
        }
        let keys: usize = split.iter().map(|tw| tw.unsaved.keys.len()).sum();
        let mut in_last: Vec<&TableWrite> = last;
        if keys <= BATCH_ROWS {
            in_last.extend(split.iter().copied());
        } else {
            for tw in &split {
                let s = Split::of(tw);
                let mut lo = 0;
                while lo < s.keys.len() {
                    let hi = (lo + BATCH_ROWS).min(s.keys.len());
                    let t0 = Instant::now();
                    self.commit_batch(&s, lo, hi, csn, &mut out)?;
                    paced(pace, t0.elapsed(), &mut out);
                    lo = hi;
                }
            }
        }
        self.commit_last(header, tables, &in_last, wholes, csn, &mut out)?;
        out.bytes = self.stats.num_of_bytes_written.load(Relaxed) - before;
        self.after_commit(tables)?;
        Ok(out)
    }

    /// Reads `wh`'s rows at `csn` a chunk at a time; keeps them if they fit
    /// one batch, else writes them to its staging table in batches.
    fn stage(
        &self,
        wh: &mut Whole<'_>,
        csn: Csn,
        out: &mut StoreWrite,
        pace: Pace<'_>,
    ) -> Result<()> {
        let mut lo: Bound<Key> = Bound::Unbounded;
        let mut first = true;
        loop {
            let t0 = Instant::now();
            let (rows, next) = wh.versions.chunk_at((lo.as_ref(), Bound::Unbounded), csn)?;
            if first && next.is_none() {
                out.write += t0.elapsed();
                wh.rows = rows;
                return Ok(());
            }
            let w = self.begin()?;
            let stage = stage_name(&wh.name);
            if first {
                // A crashed checkpoint's leftover.
                w.delete_table(rows_def(&stage))
                    .map_err(|e| corrupt(&self.path, e))?;
            }
            first = false;
            wh.staged = true;
            let mut p = Putter::open(self, &w, &stage)?;
            let mut next = next;
            for (k, r) in &rows {
                p.put(k, Some(r))?;
            }
            while p.bytes < self.stage_bytes {
                let Some(n) = next.take() else { break };
                let (rows, after) = wh.versions.chunk_at((n.as_ref(), Bound::Unbounded), csn)?;
                for (k, r) in &rows {
                    p.put(k, Some(r))?;
                }
                next = after;
            }
            out.rows += p.n;
            drop(p);
            out.write += t0.elapsed();
            self.commit(w, out)?;
            match next {
                Some(n) => lo = n,
                None => return Ok(()),
            }
            paced(pace, t0.elapsed(), out);
        }
    }

    fn begin(&self) -> Result<redb::WriteTransaction> {
        let mut w = self.db.begin_write().map_err(|e| corrupt(&self.path, e))?;
        // A crash mid-commit must not make the next open rebuild the
        // allocator from every page.
        w.set_quick_repair(true);
        // Pages are synced before the commit slot that names them: an
        // unreadable primary is then damage, never a commit cut short, and
        // redb refuses it (the open retries) instead of rolling back to the
        // secondary on a read that was only transiently wrong.
        w.set_two_phase_commit(true);
        Ok(w)
    }

    fn commit(&self, w: redb::WriteTransaction, out: &mut StoreWrite) -> Result<()> {
        let t0 = Instant::now();
        w.commit().map_err(|e| corrupt(&self.path, e))?;
        self.commits.fetch_add(1, Relaxed);
        out.commit += t0.elapsed();
        out.commits += 1;
        Ok(())
    }

    /// One batch: row keys `lo..hi` of a table and their index entries.
    fn commit_batch(
        &self,
        s: &Split<'_>,
        lo: usize,
        hi: usize,
        csn: Csn,
        out: &mut StoreWrite,
    ) -> Result<()> {
        let t0 = Instant::now();
        let w = self.begin()?;
        let t = &s.tw.table;
        let (first, last) = (&s.keys[lo][..], &s.keys[hi - 1][..]);
        out.rows += self.put_keys(
            &w,
            &table_name(t.id()),
            &t.rows,
            s.keys[lo..hi].iter().copied(),
            csn,
        )?;
        for (ix, entries) in t.indexes.iter().zip(&s.entries) {
            // The entries whose row key is in this batch's range (the
            // first batch also takes any before it, the last any after).
            let from = if lo == 0 {
                0
            } else {
                entries.partition_point(|(k, _)| *k < first)
            };
            let to = if hi == s.keys.len() {
                entries.len()
            } else {
                entries.partition_point(|(k, _)| *k <= last)
            };
            out.rows += self.put_keys(
                &w,
                &index_name(t, ix),
                &ix.entries,
                entries[from..to].iter().map(|(_, e)| *e),
                csn,
            )?;
        }
        out.write += t0.elapsed();
        self.commit(w, out)
    }

    /// The last commit: dropped tables, tables written whole (renamed from
    /// their staging tables, or written here when they fit one batch), the
    /// changes of a small checkpoint, and `meta`.
    fn commit_last(
        &self,
        header: &[u8],
        all: &[TableWrite],
        tables: &[&TableWrite],
        wholes: Vec<Whole<'_>>,
        csn: Csn,
        out: &mut StoreWrite,
    ) -> Result<()> {
        let t0 = Instant::now();
        let err = |e: redb::Error| corrupt(&self.path, e);
        let w = self.begin()?;
        let mut live: HashSet<String> = HashSet::new();
        for tw in all {
            live.insert(table_name(tw.table.id()));
            live.extend(tw.table.indexes.iter().map(|ix| index_name(&tw.table, ix)));
        }
        let staged: HashSet<String> = wholes
            .iter()
            .filter(|wh| wh.staged)
            .map(|wh| stage_name(&wh.name))
            .collect();
        // Dropped tables, and staging tables a crashed checkpoint left.
        let gone: Vec<String> = w
            .list_tables()
            .map_err(|e| err(e.into()))?
            .map(|h| h.name().to_string())
            .filter(|n| {
                (is_data_table(n) && !live.contains(n))
                    || (is_stage_table(n) && !staged.contains(n))
            })
            .collect();
        for name in gone {
            w.delete_table(rows_def(&name)).map_err(|e| err(e.into()))?;
        }
        for wh in wholes {
            w.delete_table(rows_def(&wh.name))
                .map_err(|e| err(e.into()))?;
            if wh.staged {
                w.rename_table(rows_def(&stage_name(&wh.name)), rows_def(&wh.name))
                    .map_err(|e| err(e.into()))?;
            } else {
                let mut p = Putter::open(self, &w, &wh.name)?;
                for (k, r) in &wh.rows {
                    p.put(k, Some(r))?;
                }
                out.rows += p.n;
            }
        }
        for tw in tables {
            let t = &tw.table;
            if !tw.unsaved.whole {
                let name = table_name(t.id());
                out.rows += self.put_keys(&w, &name, &t.rows, tw.unsaved.keys.iter(), csn)?;
            }
            for (ix, unsaved) in t.indexes.iter().zip(&tw.indexes) {
                if !unsaved.whole {
                    let name = index_name(t, ix);
                    out.rows += self.put_keys(&w, &name, &ix.entries, unsaved.keys.iter(), csn)?;
                }
            }
        }
        w.open_table(META)
            .map_err(|e| err(e.into()))?
            .insert(META_IMAGE, header)
            .map_err(|e| err(e.into()))?;
        out.write += t0.elapsed();
        self.commit(w, out)
    }

    /// Writes the named keys of one table's rows (or one index's entries)
    /// as a snapshot at `csn` sees them. Returns the keys written or
    /// deleted.
    fn put_keys<'k>(
        &self,
        w: &redb::WriteTransaction,
        name: &str,
        versions: &VersionedRows,
        keys: impl Iterator<Item = &'k Key>,
        csn: Csn,
    ) -> Result<u64> {
        let mut p = Putter::open(self, w, name)?;
        for k in keys {
            p.put(k, versions.get_at(k, csn)?.as_ref())?;
        }
        Ok(p.n)
    }
}

/// Puts rows into one redb table, reusing its buffers.
struct Putter<'s, 'w> {
    store: &'s BaseStore,
    out: redb::Table<'w, &'static [u8], &'static [u8]>,
    kbuf: Vec<u8>,
    buf: Vec<u8>,
    n: u64,
    /// Encoded bytes put.
    bytes: usize,
}

impl<'s, 'w> Putter<'s, 'w> {
    fn open(
        store: &'s BaseStore,
        w: &'w redb::WriteTransaction,
        name: &str,
    ) -> Result<Putter<'s, 'w>> {
        let out = w
            .open_table(rows_def(name))
            .map_err(|e| corrupt(&store.path, e))?;
        Ok(Putter {
            store,
            out,
            kbuf: Vec::new(),
            buf: Vec::new(),
            n: 0,
            bytes: 0,
        })
    }

    fn put(&mut self, key: &[Value], row: Option<&Row>) -> Result<()> {
        self.n += 1;
        let err = |e: redb::StorageError| corrupt(&self.store.path, e);
        match row {
            Some(row) => {
                encode_row(key, row, &mut self.kbuf, &mut self.buf);
                self.bytes += self.kbuf.len() + self.buf.len();
                self.out
                    .insert(&self.kbuf[..], &self.buf[..])
                    .map_err(err)?;
            }
            None => {
                self.kbuf.clear();
                encode_key(key, &mut self.kbuf);
                self.out.remove(&self.kbuf[..]).map_err(err)?;
            }
        }
        Ok(())
    }
}
