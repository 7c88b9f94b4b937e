//! A transaction's reads: gets, locking reads and scans over its snapshot and own writes.

use super::{Isolation, Locked, Transaction};
use crate::error::{EngineError, Result};
use crate::lock::{LockMode, WaitPolicy};
use crate::mvcc::{range_is_empty, Visited};
use crate::table::Table;
use crate::types::{Key, Row, Value};
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering::Relaxed;

impl Transaction {
    /// The row with this key as this transaction sees it.
    pub fn get(&self, table: &str, key: &[Value]) -> Result<Option<Row>> {
        let t = self.db.table(table)?;
        self.get_in(&t, key)
    }

    pub fn get_in(&self, t: &Table, key: &[Value]) -> Result<Option<Row>> {
        if let Some(s) = &self.ssi {
            s.note_key(t.id(), key);
        }
        if !self.writes.is_empty() {
            if let Some(w) = self.writes.get(&(t.id(), key.into())) {
                return Ok(w.clone());
            }
        }
        match &self.snapshot {
            Some(s) => t.rows.get_at(key, s.csn()),
            None => t.rows.get_visible(key, &self.db.txns.vis),
        }
    }

    /// Locks the row's key, then reads its latest committed (or own) version.
    pub fn get_for_update(&mut self, table: &str, key: &[Value]) -> Result<Option<Row>> {
        let t = self.db.table(table)?;
        match self.get_locked(&t, key, LockMode::Update, WaitPolicy::Wait)? {
            Locked::Row(r) => Ok(r),
            Locked::Busy => Err(EngineError::LockNotAvailable(t.name().to_string())),
        }
    }

    /// Locks the row's key in `mode` (a locking read, or the first step of
    /// an UPDATE or DELETE), then reads its latest committed (or own) version.
    pub fn get_locked(
        &mut self,
        t: &Table,
        key: &[Value],
        mode: LockMode,
        policy: WaitPolicy,
    ) -> Result<Locked> {
        self.check_write(match mode {
            LockMode::Update | LockMode::NoKeyUpdate => "SELECT FOR UPDATE",
            LockMode::Share | LockMode::KeyShare => "SELECT FOR SHARE",
        })?;
        let key: Key = key.into();
        if !self.lock_mode(t, &key, mode, policy)? {
            return Ok(Locked::Busy);
        }
        self.check_conflict(t, &key)?;
        // READ COMMITTED: the row the statement found was deleted by a
        // commit it waited for; a row inserted since under the same key is
        // another row, which PostgreSQL's statement does not act on either.
        let read_committed = self.isolation == Isolation::ReadCommitted;
        if let (true, Some(snap)) = (read_committed, &self.snapshot) {
            if !self.writes.contains_key(&(t.id(), key.clone()))
                && t.rows.deleted_since(&key, snap.csn())
            {
                return Ok(Locked::Row(None));
            }
        }
        Ok(Locked::Row(self.latest_in(t, &key)?))
    }

    /// Rows with keys in `range`, in key order, as this transaction sees them.
    pub fn scan(&self, table: &str, range: (Bound<Key>, Bound<Key>)) -> Result<Vec<(Key, Row)>> {
        let t = self.db.table(table)?;
        self.scan_in(&t, range)
    }

    pub fn scan_in(&self, t: &Table, range: (Bound<Key>, Bound<Key>)) -> Result<Vec<(Key, Row)>> {
        self.note_range(t, &range);
        if range_is_empty(range.0.as_ref(), range.1.as_ref()) {
            return Ok(Vec::new());
        }
        let snap = self.read_snapshot();
        let base = t
            .rows
            .scan_at((range.0.as_ref(), range.1.as_ref()), snap.csn())?;
        if self.own_writes(t, &range).next().is_none() {
            return Ok(base);
        }
        let mut out: BTreeMap<Key, Row> = base.into_iter().collect();
        for (k, w) in self.own_writes(t, &range) {
            match w {
                Some(r) => out.insert(k.clone(), r.clone()),
                None => out.remove(k),
            };
        }
        Ok(out.into_iter().collect())
    }

    /// Calls `f` with each row in `range`, in key order, as this transaction
    /// sees it; without the key copies of `scan_in` when the transaction has
    /// not written in the range.
    pub fn scan_each<E: From<EngineError>>(
        &self,
        t: &Table,
        range: (Bound<Key>, Bound<Key>),
        mut f: impl FnMut(&[Value]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        self.note_range(t, &range);
        if range_is_empty(range.0.as_ref(), range.1.as_ref()) {
            return Ok(());
        }
        if self.own_writes(t, &range).next().is_some() {
            for (_, r) in self.scan_in(t, range)? {
                f(&r)?;
            }
            return Ok(());
        }
        let snap = self.read_snapshot();
        t.rows
            .for_each_at((range.0.as_ref(), range.1.as_ref()), snap.csn(), f)
    }

    /// As [`Transaction::scan_each`], each row with its key (see
    /// [`Visited::key`]): a statement that keeps only the keys of the rows
    /// it selects holds only those.
    pub fn scan_each_keyed<E: From<EngineError>>(
        &self,
        t: &Table,
        range: (Bound<Key>, Bound<Key>),
        mut f: impl FnMut(&Visited<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        self.note_range(t, &range);
        if range_is_empty(range.0.as_ref(), range.1.as_ref()) {
            return Ok(());
        }
        if self.own_writes(t, &range).next().is_some() {
            for (k, r) in self.scan_in(t, range)? {
                f(&Visited::held(&k, &r))?;
            }
            return Ok(());
        }
        let snap = self.read_snapshot();
        t.rows
            .for_each_keyed_at((range.0.as_ref(), range.1.as_ref()), snap.csn(), f)
    }

    /// Rows found through index `ix` of `t`, as this transaction sees them,
    /// in row-key order: those whose entries (indexed values ++ row key)
    /// start at `lo` and go on while `more` holds, and every row the
    /// transaction itself wrote there. `None` when the snapshot is older
    /// than the index (the caller scans the table instead). The caller
    /// still applies its whole filter: entries only narrow the search.
    pub fn index_scan(
        &self,
        t: &Table,
        ix: usize,
        lo: Bound<Key>,
        more: impl Fn(&Key) -> bool,
    ) -> Result<Option<Vec<(Key, Row)>>> {
        let Some((ix, snap)) = self.index_read(t, ix) else {
            return Ok(None);
        };
        let csn = snap.csn();
        ix.seeks.fetch_add(1, Relaxed);
        let entries = ix
            .entries
            .scan_while_at((lo.as_ref(), Bound::Unbounded), csn, &more)?;
        if self.ssi.is_some() {
            // Read: the entries from `lo` up to the first one past the
            // search (those passing `more` all come before it).
            let from = entries
                .last()
                .map_or(lo.clone(), |(e, _)| Bound::Excluded(e.clone()));
            let stop = ix
                .entries
                .first_key_at((from.as_ref(), Bound::Unbounded), csn)?;
            let hi = stop.map_or(Bound::Unbounded, Bound::Excluded);
            self.note_entries(t, ix, (lo.clone(), hi));
        }
        let mut out: BTreeMap<Key, Row> = BTreeMap::new();
        for (entry, _) in entries {
            let pk = ix.row_key(&entry);
            if self.wrote(t, pk) {
                continue;
            }
            if let Some(r) = t.rows.get_at(pk, csn)? {
                out.insert(pk.into(), r);
            }
        }
        let from = (lo.as_ref(), Bound::Unbounded);
        for (e, r) in self.own_entries(t, ix) {
            if from.contains(&e) && more(&e) {
                out.insert(ix.row_key(&e).into(), r.clone());
            }
        }
        Ok(Some(out.into_iter().collect()))
    }

    /// SERIALIZABLE: a read of the whole table (see `ssi.rs`).
    pub(super) fn note_scan(&self, t: &Table) {
        if let Some(s) = &self.ssi {
            s.note_scan(t.id());
        }
    }

    /// Every row of the table.
    pub fn scan_all(&self, table: &str) -> Result<Vec<(Key, Row)>> {
        self.scan(table, (Bound::Unbounded, Bound::Unbounded))
    }
}
