//! Logging as it goes: a transaction whose changes pass
//! `Limits::spill_transaction_bytes` appends them to the log as non-commit
//! parts while it runs, instead of all at COMMIT (where every commit after
//! it waited for those bytes to be written).
//!
//! The first part holds the whole write set so far; after it the keys
//! changed since the last part are noted (`Spill::dirty`) and logged, each
//! with its current entry, once they pass a part's worth. A key the write
//! set no longer holds (a `ROLLBACK TO` removed it, or DDL folded it into
//! its own record) is logged as [`Op::Forget`](crate::codec::Op): the
//! earlier parts' ops on it are void. The commit appends what is left and
//! then its commit record; a rollback appends an abort record. Recovery and
//! secondaries keep a transaction's parts until its commit record (where
//! the last op of each key wins) or its abort record; the transaction is
//! registered in flight (`inflight.rs`) from before its first part until
//! it ends, so no checkpoint's redo start passes its parts.

use super::commit::{End, Rows};
use super::Transaction;
use crate::codec::{put_txn_abort, Redo};
use crate::database::{Catalog, Database};
use crate::error::{EngineError, Result};
use crate::mvcc::Csn;
use crate::store::layer::LayerFile;
use crate::table::Table;
use crate::types::{Key, Row};
use std::sync::Arc;

/// Once a transaction logs as it goes: what changed since its last part.
#[derive(Default)]
pub(super) struct Spill {
    /// Keys changed since the last part (repeats allowed).
    pub(super) dirty: Vec<(u32, Key)>,
    /// Their estimated size (see `checks::write_bytes`).
    pub(super) dirty_bytes: u64,
    /// The write set's size at which rows next move to spill files.
    next_move: u64,
}

/// A table whose rows this transaction moved to a spill file: one it
/// created or truncated, which no one else reaches before it ends.
pub(super) struct TxLayer {
    /// The table object whose rows read the file (a DDL step that would
    /// replace it is refused, see [`Transaction::refuse_spilled`]).
    table: Arc<Table>,
    file: Arc<LayerFile>,
    /// The rows are in the log's parts (a load), not rebuilt by redo from
    /// a DDL record (a build): the commit's CSN hides them from older
    /// snapshots, and no later DDL may replace the table.
    logged: bool,
}

/// A part's worth of changes, at most: logged once this much changed.
const PART_BYTES: u64 = 4 << 20;

impl Transaction {
    /// Whether the transaction has logged parts while it ran.
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// How many tables' rows this transaction holds in spill files rather
    /// than memory (`store/layer.rs`).
    pub fn spill_files(&self) -> usize {
        self.layers.lock().len()
    }

    /// Notes a key about to change, once the transaction logs as it goes.
    #[inline]
    pub(super) fn note_dirty(&mut self, key: &(u32, Key), bytes: u64) {
        if let Some(s) = self.spill.as_deref_mut() {
            s.dirty.push(key.clone());
            s.dirty_bytes += bytes;
        }
    }

    /// After a write: starts logging as it goes past the bound, and logs a
    /// part once enough changed.
    #[inline]
    pub(super) fn log_as_you_go(&mut self) -> Result<()> {
        let at = self.db.limits.spill_bound();
        match &self.spill {
            Some(s) if s.dirty_bytes >= at.min(PART_BYTES) => self.log_dirty(),
            Some(_) => Ok(()),
            None if at > 0 && self.write_bytes > at => self.start_spill(),
            None => Ok(()),
        }
    }

    /// The first part: the whole write set so far.
    #[cold]
    fn start_spill(&mut self) -> Result<()> {
        self.db.check_writable()?;
        // Registered before the first append and kept until the transaction
        // ends (see `inflight.rs`).
        self.db.txns.inflight.open(self.txid, &self.db.log);
        self.spill = Some(Box::default());
        self.append_parts(Rows::All)
    }

    /// A part of the keys changed since the last one.
    #[cold]
    pub(super) fn log_dirty(&mut self) -> Result<()> {
        let Some(s) = self.spill.as_deref_mut() else {
            return Ok(());
        };
        let mut keys = std::mem::take(&mut s.dirty);
        s.dirty_bytes = 0;
        if keys.is_empty() {
            return Ok(());
        }
        keys.sort_unstable();
        keys.dedup();
        self.append_parts(Rows::Keys(&keys))
    }

    fn append_parts(&self, rows: Rows<'_>) -> Result<()> {
        let db = &self.db;
        let sinks = self.session.wait_sinks();
        self.encode_parts(End::Part, rows, &mut |p, _| {
            db.log.append(p, &sinks)?;
            Ok(())
        })
    }

    /// Past the bound, once logging as it goes and with no savepoint set
    /// (a savepoint's undo would need the entries back): the rows of
    /// tables this transaction created or truncated leave the write set
    /// for spill files (`store/layer.rs`), which the tables' rows read
    /// through as they read the store. Every change is in the log first.
    #[inline]
    pub(super) fn spill_rows(&mut self) -> Result<()> {
        match &self.spill {
            Some(s) if self.write_bytes > s.next_move.max(self.db.limits.spill_bound()) => {
                self.move_rows()
            }
            _ => Ok(()),
        }
    }

    #[cold]
    fn move_rows(&mut self) -> Result<()> {
        self.move_rows_now()?;
        // Tried again once another bound's worth of changes is held.
        let next = self
            .write_bytes
            .saturating_add(self.db.limits.spill_bound());
        if let Some(s) = self.spill.as_deref_mut() {
            s.next_move = next;
        }
        Ok(())
    }

    fn move_rows_now(&mut self) -> Result<()> {
        // SERIALIZABLE keeps every written key for its commit test.
        if !self.savepoints.is_empty() || !self.db.store.reads_through() || self.ssi.is_some() {
            return Ok(());
        }
        let mut ids: Vec<u32> = Vec::new();
        for (tid, _) in self.writes.keys() {
            if ids.last() != Some(tid) {
                ids.push(*tid);
            }
        }
        let tables: Vec<Arc<Table>> = {
            let cat = self.db.catalog.read();
            ids.iter()
                .filter_map(|id| cat.table_by_id(*id).cloned())
                .filter(|t| self.spillable(t))
                .collect()
        };
        if tables.is_empty() {
            return Ok(());
        }
        // The rows about to move are logged first.
        self.log_dirty()?;
        for t in tables {
            self.move_table(&t)?;
        }
        Ok(())
    }

    /// Whether `t`'s rows may move to a spill file: a table without
    /// secondary indexes that this transaction created or truncated (its
    /// rows are new, every other transaction waits for its ACCESS
    /// EXCLUSIVE lock, and no checkpoint takes it before the commit).
    fn spillable(&self, t: &Arc<Table>) -> bool {
        let id = t.id();
        if !t.indexes.is_empty() || !self.holds_exclusively(id) {
            return false;
        }
        {
            let layers = self.layers.lock();
            if layers.iter().any(|l| same_rows(&l.table, t)) {
                // A build's file takes no logged rows (see `TxLayer::logged`).
                return layers.iter().any(|l| l.logged && same_rows(&l.table, t));
            }
        }
        if t.rows.has_base() || t.rows.keys_in_memory() > 0 {
            return false;
        }
        self.ddl.lock().iter().any(|s| match &s.redo {
            Redo::CreateTable(def) => def.id == id,
            Redo::Truncate(tid) => *tid == id,
            _ => false,
        })
    }

    /// Moves `t`'s entries of the write set to its spill file. On a
    /// failure they stay in the write set.
    fn move_table(&mut self, t: &Arc<Table>) -> Result<()> {
        let id = t.id();
        let mut mine = self.writes.split_off(&(id, Key::default()));
        let mut after = mine.split_off(&(id + 1, Key::default()));
        self.writes.append(&mut after);
        if mine.is_empty() {
            return Ok(());
        }
        let file = match self
            .layers
            .get_mut()
            .iter()
            .find(|l| l.logged && same_rows(&l.table, t))
        {
            Some(l) => Ok(l.file.clone()),
            None => LayerFile::create(&self.db.vfs, &self.db.dir, t.rows.uid()).map(Arc::new),
        };
        let moved = file.and_then(|file| {
            file.put(mine.iter().map(|((_, k), w)| (k, w)))?;
            self.db.store.set_layer(t, &file)?;
            Ok(file)
        });
        let file = match moved {
            Ok(f) => f,
            Err(e) => {
                self.writes.append(&mut mine);
                return Err(e);
            }
        };
        let layers = self.layers.get_mut();
        if !layers.iter().any(|l| l.logged && same_rows(&l.table, t)) {
            layers.push(TxLayer {
                table: t.clone(),
                file,
                logged: true,
            });
        }
        let freed: u64 = mine
            .iter()
            .map(|((_, k), w)| super::checks::write_bytes(k, w))
            .sum();
        self.write_bytes = self.write_bytes.saturating_sub(freed);
        // Freed once the file holds them.
        drop(mine);
        Ok(())
    }

    /// Before the commit: the entries of tables in spill files move there
    /// too (after the keys changed since the last part are logged).
    pub(super) fn move_layered_rest(&mut self) -> Result<()> {
        if self.layers.get_mut().is_empty() {
            return Ok(());
        }
        let tables: Vec<Arc<Table>> = self
            .layers
            .get_mut()
            .iter()
            .filter(|l| l.logged)
            .map(|l| l.table.clone())
            .collect();
        if tables.is_empty() {
            return Ok(());
        }
        self.log_dirty()?;
        for t in tables {
            self.move_table(&t)?;
        }
        Ok(())
    }

    /// A spill file for a DDL build from `t` (`None`: build in memory, as
    /// a small table's is or one with secondary indexes, whose entries
    /// would be built in memory anyway).
    pub(super) fn layer_for_build(&self, t: &Table) -> Result<Option<Arc<LayerFile>>> {
        let at = self.db.limits.spill_bound();
        let big = (t.rows.len_latest() as u64).saturating_mul(crate::budget::ENTRY_BYTES) > at;
        if at == 0 || !big || !t.indexes.is_empty() || !self.db.store.reads_through() {
            return Ok(None);
        }
        let file = LayerFile::create(&self.db.vfs, &self.db.dir, crate::mvcc::next_uid())?;
        Ok(Some(Arc::new(file)))
    }

    /// The rows of `t` (built by a DDL step into `file`) read the file.
    pub(super) fn add_build_layer(&self, t: &Arc<Table>, file: Arc<LayerFile>) -> Result<()> {
        self.db.store.set_layer(t, &file)?;
        self.layers.lock().push(TxLayer {
            table: t.clone(),
            file,
            logged: false,
        });
        Ok(())
    }

    /// Whether `t`'s rows are in a spill file of rows this transaction
    /// logged (a load, not a build).
    pub(super) fn is_logged_layer(&self, t: &Table) -> bool {
        self.layers
            .lock()
            .iter()
            .any(|l| l.logged && same_rows(&l.table, t))
    }

    /// Marks `t`'s file as holding logged rows or not: a fold (`fold.rs`)
    /// takes them into its DDL record, after which the file is read by
    /// `t` alone, which the fold replaces.
    pub(super) fn set_layer_logged(&mut self, t: &Table, logged: bool) {
        for l in self.layers.get_mut().iter_mut() {
            if same_rows(&l.table, t) {
                l.logged = logged;
            }
        }
    }

    /// What the log gets for a key the write set lacks: the row this
    /// transaction moved to a spill file (a `ROLLBACK TO` removed the
    /// key's later entry, which the file's row is under), or `None` (a
    /// forget op).
    pub(super) fn moved_row(&self, key: &(u32, Key)) -> Result<Option<Option<Row>>> {
        let table = {
            let layers = self.layers.lock();
            let Some(l) = layers.iter().find(|l| l.logged && l.table.id() == key.0) else {
                return Ok(None);
            };
            l.table.clone()
        };
        Ok(table.rows.latest(&key.1)?.and_then(|(_, r)| r).map(Some))
    }

    /// Whether `t`'s rows live in this transaction's spill file.
    pub(super) fn is_layered(&self, t: &Table) -> bool {
        let layers = self.layers.lock();
        !layers.is_empty() && layers.iter().any(|l| same_rows(&l.table, t))
    }

    /// A DDL step just changed `cat`: refuses it (the caller undoes it) if
    /// it replaced or dropped a table whose rows are in a spill file. Those
    /// rows' ops are in the parts logged so far, which recovery applies
    /// after the commit record's DDL: a table rewritten, truncated or
    /// dropped after them would get them back.
    pub(super) fn refuse_spilled(&self, cat: &Catalog) -> Result<()> {
        for l in self.layers.lock().iter().filter(|l| l.logged) {
            let same = cat
                .table_by_id(l.table.id())
                .is_some_and(|t| same_rows(t, &l.table));
            if !same {
                return Err(EngineError::DdlAfterSpill(l.table.name().to_string()));
            }
        }
        Ok(())
    }

    /// The transaction ends without installing its spill files.
    pub(super) fn drop_layers(&mut self) {
        for l in std::mem::take(self.layers.get_mut()) {
            self.db.store.drop_layer(l.table.rows.uid());
        }
    }

    /// The transaction ends without its commit record: an abort record
    /// voids its parts (if it cannot be appended, the parts stay without a
    /// commit record, which recovery drops as well), and it leaves the
    /// in-flight registry.
    #[inline]
    pub(super) fn end_spill(&mut self, aborted: bool) {
        if self.spill.is_some() {
            self.end_spilled(aborted);
        }
    }

    #[cold]
    fn end_spilled(&mut self, aborted: bool) {
        self.spill = None;
        if aborted {
            let mut rec = Vec::with_capacity(12);
            put_txn_abort(&mut rec, self.txid);
            let _ = self.db.log.append(&rec, &self.session.wait_sinks());
        }
        self.db.txns.inflight.close(self.txid);
    }
}

/// At the commit's install (CSN `csn`): the spill files become read-only
/// layers under their tables, seen by snapshots at `csn` or later, until a
/// checkpoint writes the rows into the store.
pub(super) fn install_layers(db: &Database, layers: Vec<TxLayer>, cat: &Catalog, csn: Csn) {
    for l in layers {
        match cat.table_by_id(l.table.id()) {
            // A build's rows are every snapshot's, as one in memory.
            Some(t) if same_rows(t, &l.table) => {
                if l.logged {
                    t.rows.hide_base_below(csn)
                }
            }
            _ => db.store.drop_layer(l.table.rows.uid()),
        }
    }
}

/// Whether two table objects share their rows (a DDL step that keeps the
/// rows makes a new object over the same ones).
fn same_rows(a: &Table, b: &Table) -> bool {
    Arc::ptr_eq(&a.rows, &b.rows)
}
