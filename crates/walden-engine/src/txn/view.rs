//! What a transaction's reads see: the snapshot a read uses, and the
//! transaction's own writes laid over it. Shared by scans, index scans and
//! ordered walks (`read.rs`, `ordered.rs`).

use super::Transaction;
use crate::mvcc::{Csn, Snapshot};
use crate::table::{Index, Table};
use crate::types::{Key, Row, Value};
use std::ops::Bound;

/// The snapshot a read uses: the statement's, or outside a statement one of
/// its own, held while the read runs (it reads in chunks, and what it
/// started on must stay).
pub(super) enum ReadSnapshot<'a> {
    Statement(&'a Snapshot),
    Own(Snapshot),
}

impl ReadSnapshot<'_> {
    pub(super) fn csn(&self) -> Csn {
        match self {
            ReadSnapshot::Statement(s) => s.csn(),
            ReadSnapshot::Own(s) => s.csn(),
        }
    }
}

impl Transaction {
    /// The snapshot a read starting now uses.
    pub(super) fn read_snapshot(&self) -> ReadSnapshot<'_> {
        match &self.snapshot {
            Some(s) => ReadSnapshot::Statement(s),
            None => ReadSnapshot::Own(self.db.txns.vis.snapshot()),
        }
    }

    /// Index `ix` of `t` and the snapshot a read through it uses (the
    /// caller notes the entries it reads for SERIALIZABLE); `None` when `t` has no such index or the
    /// snapshot is older than the index (the caller reads another way).
    pub(super) fn index_read<'t>(
        &self,
        t: &'t Table,
        ix: usize,
    ) -> Option<(&'t Index, ReadSnapshot<'_>)> {
        let index = t.indexes.get(ix)?;
        let snap = self.read_snapshot();
        index.usable_at(snap.csn()).then_some((&**index, snap))
    }

    /// Whether this transaction wrote (or deleted) the row at `key` of `t`:
    /// its own version replaces the snapshot's.
    pub(super) fn wrote(&self, t: &Table, key: &[Value]) -> bool {
        !self.writes.is_empty() && self.writes.contains_key(&(t.id(), key.into()))
    }

    /// This transaction's writes to `t` with keys in `range`, in key order
    /// (`None`: deleted).
    pub(super) fn own_writes<'a>(
        &'a self,
        t: &Table,
        range: &(Bound<Key>, Bound<Key>),
    ) -> impl Iterator<Item = (&'a Key, &'a Option<Row>)> {
        let (lo, hi) = (
            bound_map(&range.0, t.id(), false),
            bound_map(&range.1, t.id(), true),
        );
        // `BTreeMap::range` panics on an empty range.
        let empty = crate::mvcc::range_is_empty(range.0.as_ref(), range.1.as_ref());
        (!empty)
            .then(|| self.writes.range((lo, hi)))
            .into_iter()
            .flatten()
            .map(|((_, k), w)| (k, w))
    }

    /// The entries (indexed values ++ row key) `index` of `t` would hold for
    /// the rows this transaction wrote, with those rows, in row-key order.
    pub(super) fn own_entries<'a>(
        &'a self,
        t: &Table,
        index: &'a Index,
    ) -> impl Iterator<Item = (Key, &'a Row)> {
        self.own_writes(t, &(Bound::Unbounded, Bound::Unbounded))
            .filter_map(|(pk, w)| {
                let r = w.as_ref()?;
                Some((index.entry(pk, r), r))
            })
    }
}

/// Maps a key bound into the write set's (table, key) space; an unbounded
/// end stays within the table.
fn bound_map(b: &Bound<Key>, tid: u32, upper: bool) -> Bound<(u32, Key)> {
    match b {
        Bound::Included(k) => Bound::Included((tid, k.clone())),
        Bound::Excluded(k) => Bound::Excluded((tid, k.clone())),
        Bound::Unbounded if upper => Bound::Excluded((tid + 1, Key::default())),
        Bound::Unbounded => Bound::Included((tid, Key::default())),
    }
}

impl Transaction {
    /// SERIALIZABLE: a read of the primary keys of `t` in `range`.
    pub(super) fn note_range(&self, t: &Table, range: &(Bound<Key>, Bound<Key>)) {
        if let Some(s) = &self.ssi {
            s.note_range(t.id(), t.id(), range.clone());
        }
    }

    /// SERIALIZABLE: a read of the entries of `index` (of `t`) in `range`.
    pub(super) fn note_entries(&self, t: &Table, index: &Index, range: (Bound<Key>, Bound<Key>)) {
        if let Some(s) = &self.ssi {
            s.note_range(t.id(), index.def.id, range);
        }
    }

    /// SERIALIZABLE: what this transaction wrote, for the commit test: each
    /// primary key, and the entries each index of a written table had or
    /// gets for it (the replaced row's, read as the newest committed version,
    /// which the row lock held keeps; and the new row's).
    pub(super) fn ssi_writes(&self) -> crate::error::Result<crate::ssi::Writes> {
        let mut w = crate::ssi::Writes::new(self.writes.keys().cloned());
        let mut table: Option<std::sync::Arc<Table>> = None;
        for ((tid, key), row) in &self.writes {
            if table.as_ref().is_none_or(|t| t.id() != *tid) {
                table = self.db.table_by_id(*tid);
            }
            let Some(t) = table.as_ref().filter(|t| !t.indexes.is_empty()) else {
                continue;
            };
            let old = t.rows.latest(key)?.and_then(|(_, r)| r);
            for ix in &t.indexes {
                for r in old.iter().chain(row.iter()) {
                    w.add_entry(*tid, ix.def.id, ix.entry(key, r));
                }
            }
        }
        Ok(w)
    }
}
