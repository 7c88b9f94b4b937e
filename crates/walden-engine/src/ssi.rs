//! Serializable snapshot isolation (SSI), after PostgreSQL's: SERIALIZABLE
//! transactions run as REPEATABLE READ, and their reads and writes are
//! tracked to find rw-antidependencies (T1 -rw-> T2: T1 read something T2
//! wrote, without seeing T2's write) between concurrent ones. Every cycle of
//! dependencies under snapshot isolation has two consecutive rw edges
//! T_in -> pivot -> T_out where T_out commits first (Fekete et al.); a
//! commit that would complete such a structure fails with 40001.
//!
//! Coarser than PostgreSQL's in places (false positives are allowed, misses
//! are not):
//! - reads are tracked as the access path read them: a lookup by primary
//!   key reads that key (present or not); a scan of a key range (a key
//!   prefix, `ORDER BY ... LIMIT` up to where it stopped) that range of
//!   primary keys; a search or walk of an index the range of its entries
//!   (indexed values ++ row key) it went through, up to the first entry
//!   past it, so a row inserted into that range later is a conflict (a
//!   phantom) and one inserted beside it is not, as PostgreSQL's SIREAD
//!   locks on index pages and tuples do at a finer grain. More than
//!   [`MAX_RANGES`] ranges in one table or index count as the whole table
//!   (PostgreSQL's promotion of many locks to a coarser one). Other reads
//!   (a scan the planner could not bound, `ON CONFLICT`'s search) read the
//!   whole table;
//! - writes are tracked per primary key and, for the commit test, per
//!   index entry (the written row's entry and the one of the row it
//!   replaced, so a reader of either range meets it);
//! - edges are found at commit, under one mutex, so of two concurrent
//!   commits the second sees the first: an edge between two transactions
//!   is known by the time the second of them commits;
//! - the pivot test does not ask whether T_in committed before T_out.
//!
//! At the commit of T, with IN = concurrent transactions that read
//! something T wrote and OUT = transactions committed after T's snapshot
//! that wrote something T read, T fails when IN and OUT are both non-empty
//! (T is a pivot whose T_out committed first), or when a member of OUT had,
//! at its own commit, an out-edge to a transaction committed before it (T
//! is T_in of a structure whose pivot committed already). A structure whose
//! pivot commits last is caught at the pivot's commit; one whose T_in
//! commits last, at T_in's: T_out, committing first, is never last.
//!
//! "Concurrent" is judged by a commit sequence of SSI's own: a transaction
//! registers (before it takes its snapshot) with the newest sequence number
//! whose commits are all published, and anything committed after that
//! counts as unseen. It may have been seen after all: that only adds edges.

use crate::error::{EngineError, Result};
use crate::types::{Key, Value};
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

/// Ranges read in one table or index before they count as the whole table.
pub(crate) const MAX_RANGES: usize = 64;

/// A range of keys: primary keys of a table, or entries of an index.
pub(crate) type KeyRange = (Bound<Key>, Bound<Key>);

/// One SERIALIZABLE transaction's tracked reads.
pub(crate) struct SsiTx {
    txid: u64,
    /// Commits with a sequence number up to this one are in its snapshot.
    start_seq: u64,
    reads: Mutex<Reads>,
}

/// What a transaction read: whole tables, keys looked up, and ranges of
/// keys or index entries.
#[derive(Clone, Default)]
struct Reads {
    tables: HashSet<u32>,
    keys: HashSet<(u32, Key)>,
    /// By the id of the table (primary keys) or index (entries) read:
    /// the table's id, and the ranges.
    ranges: HashMap<u32, (u32, Vec<KeyRange>)>,
}

impl Reads {
    /// Whether a transaction that wrote `w` wrote something read here.
    fn meets(&self, w: &Writes) -> bool {
        if self.tables.iter().any(|t| w.tables.contains(t)) {
            return true;
        }
        let keys = if self.keys.len() <= w.keys.len() {
            self.keys.iter().any(|k| w.keys.contains(k))
        } else {
            w.keys.iter().any(|k| self.keys.contains(k))
        };
        keys || self.ranges.iter().any(|(&space, (table, ranges))| {
            w.tables.contains(table) && ranges.iter().any(|r| w.any_in(space, r))
        })
    }
}

/// What a transaction wrote: primary keys by table, and (for the commit
/// test) index entries by index, both as (id, key); and the tables.
#[derive(Default)]
pub(crate) struct Writes {
    tables: HashSet<u32>,
    keys: BTreeSet<(u32, Key)>,
}

impl Writes {
    /// Writes of these (table id, primary key)s.
    pub(crate) fn new(keys: impl Iterator<Item = (u32, Key)>) -> Writes {
        let keys: BTreeSet<(u32, Key)> = keys.collect();
        Writes {
            tables: keys.iter().map(|(t, _)| *t).collect(),
            keys,
        }
    }

    /// One more index entry written (or removed) in table `table` by the
    /// index with id `index`.
    pub(crate) fn add_entry(&mut self, table: u32, index: u32, entry: Key) {
        self.tables.insert(table);
        self.keys.insert((index, entry));
    }

    fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether a key of `space` (a table's or an index's id) lies in `r`.
    fn any_in(&self, space: u32, r: &KeyRange) -> bool {
        if crate::mvcc::range_is_empty(r.0.as_ref(), r.1.as_ref()) {
            return false;
        }
        let lo = match &r.0 {
            Bound::Included(k) => Bound::Included((space, k.clone())),
            Bound::Excluded(k) => Bound::Excluded((space, k.clone())),
            Bound::Unbounded => Bound::Included((space, Key::default())),
        };
        let hi = match &r.1 {
            Bound::Included(k) => Bound::Included((space, k.clone())),
            Bound::Excluded(k) => Bound::Excluded((space, k.clone())),
            Bound::Unbounded => Bound::Excluded((space + 1, Key::default())),
        };
        self.keys.range((lo, hi)).next().is_some()
    }
}

impl SsiTx {
    /// A read of all of `table`.
    pub(crate) fn note_scan(&self, table: u32) {
        let mut r = self.reads.lock();
        if !r.tables.contains(&table) {
            r.tables.insert(table);
        }
    }

    /// A lookup of one key.
    pub(crate) fn note_key(&self, table: u32, key: &[Value]) {
        let mut r = self.reads.lock();
        if !r.tables.contains(&table) {
            r.keys.insert((table, key.into()));
        }
    }

    /// A read of the keys in `range` of `space`: `table` itself (primary
    /// keys) or one of its indexes (entries).
    pub(crate) fn note_range(&self, table: u32, space: u32, range: KeyRange) {
        if matches!((&range.0, &range.1), (Bound::Unbounded, Bound::Unbounded)) {
            return self.note_scan(table);
        }
        let mut r = self.reads.lock();
        if r.tables.contains(&table) {
            return;
        }
        let (_, ranges) = r.ranges.entry(space).or_insert_with(|| (table, Vec::new()));
        if ranges.contains(&range) {
            return;
        }
        ranges.push(range);
        if ranges.len() > MAX_RANGES {
            r.ranges.remove(&space);
            r.tables.insert(table);
        }
    }

    pub(crate) fn txid(&self) -> u64 {
        self.txid
    }
}

/// A committed SERIALIZABLE transaction, kept while a concurrent one is open.
struct Done {
    tx: Arc<SsiTx>,
    seq: u64,
    writes: Writes,
    /// It had an rw edge to a transaction committed before it.
    out_to_committed: bool,
    /// Its writes are published (a snapshot taken now sees them).
    published: bool,
}

#[derive(Default)]
struct Inner {
    /// Commits so far.
    seq: u64,
    active: HashMap<u64, Arc<SsiTx>>,
    /// In commit order.
    committed: Vec<Done>,
}

/// The database's SSI state.
#[derive(Default)]
pub(crate) struct Ssi {
    inner: Mutex<Inner>,
}

impl Ssi {
    /// Registers a transaction; call before it takes its snapshot.
    pub(crate) fn register(&self, txid: u64) -> Arc<SsiTx> {
        let mut g = self.inner.lock();
        let start_seq = g
            .committed
            .iter()
            .find(|d| !d.published)
            .map_or(g.seq, |d| d.seq - 1);
        let tx = Arc::new(SsiTx {
            txid,
            start_seq,
            reads: Mutex::new(Reads::default()),
        });
        g.active.insert(txid, tx.clone());
        tx
    }

    /// The commit test for `tx`, which wrote `writes` (table ids). On
    /// success the transaction counts as committed (sequence number
    /// returned): the caller reports [`Ssi::published`] or [`Ssi::failed`].
    pub(crate) fn precommit(&self, tx: &Arc<SsiTx>, writes: Writes) -> Result<u64> {
        let mut g = self.inner.lock();
        let has_out = Self::test(&g, tx, &writes)?;
        g.active.remove(&tx.txid);
        g.seq += 1;
        let seq = g.seq;
        let published = writes.is_empty();
        g.committed.push(Done {
            tx: tx.clone(),
            seq,
            writes,
            out_to_committed: has_out,
            published,
        });
        if published {
            Self::trim(&mut g);
        }
        Ok(seq)
    }

    /// A write of `key` by `tx`: fails now when the commit test would fail
    /// at commit anyway (edges only accumulate while `tx` is open), as
    /// PostgreSQL fails the write that completes a dangerous structure.
    pub(crate) fn check_write(&self, tx: &Arc<SsiTx>, key: &(u32, Key)) -> Result<()> {
        let g = self.inner.lock();
        Self::test(&g, tx, &Writes::new(std::iter::once(key.clone()))).map(drop)
    }

    /// The commit test of `tx` having written `writes` (see the module
    /// comment); Ok(whether it has an rw edge to a committed transaction).
    fn test(g: &Inner, tx: &Arc<SsiTx>, writes: &Writes) -> Result<bool> {
        let has_in = !writes.is_empty()
            && (g
                .active
                .values()
                .any(|r| r.txid != tx.txid && r.reads.lock().meets(writes))
                || g.committed
                    .iter()
                    .any(|d| d.seq > tx.start_seq && d.tx.reads.lock().meets(writes)));
        let reads = tx.reads.lock();
        let mut has_out = false;
        let mut out_pivot = false;
        for d in &g.committed {
            if d.seq > tx.start_seq && reads.meets(&d.writes) {
                has_out = true;
                out_pivot |= d.out_to_committed;
            }
        }
        if (has_in && has_out) || out_pivot {
            return Err(EngineError::SerializationConflict);
        }
        Ok(has_out)
    }

    /// The commit `seq` is visible to new snapshots.
    pub(crate) fn published(&self, seq: u64) {
        let mut g = self.inner.lock();
        if let Some(d) = g.committed.iter_mut().find(|d| d.seq == seq) {
            d.published = true;
        }
        Self::trim(&mut g);
    }

    /// The commit `seq` failed after its test (its log write failed): it
    /// never happened.
    pub(crate) fn failed(&self, seq: u64) {
        let mut g = self.inner.lock();
        g.committed.retain(|d| d.seq != seq);
        Self::trim(&mut g);
    }

    /// A registered transaction rolled back.
    pub(crate) fn abort(&self, txid: u64) {
        let mut g = self.inner.lock();
        g.active.remove(&txid);
        Self::trim(&mut g);
    }

    /// Forgets committed transactions no open or future one can be
    /// concurrent with: published, and in every open one's snapshot.
    fn trim(g: &mut Inner) {
        let oldest = g.active.values().map(|a| a.start_seq).min();
        g.committed
            .retain(|d| !d.published || oldest.is_some_and(|o| o < d.seq));
    }

    /// Transactions tracked (open, committed and kept), for diagnostics.
    #[cfg(test)]
    pub(crate) fn tracked(&self) -> (usize, usize) {
        let g = self.inner.lock();
        (g.active.len(), g.committed.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(t: &[u32]) -> Writes {
        Writes::new(t.iter().map(|&t| (t, Key::default())))
    }

    #[test]
    fn write_skew_fails_the_second_commit() {
        let s = Ssi::default();
        let t1 = s.register(1);
        let t2 = s.register(2);
        t1.note_scan(7);
        t2.note_scan(7);
        let c1 = s.precommit(&t1, writes(&[7])).unwrap();
        s.published(c1);
        assert!(matches!(
            s.precommit(&t2, writes(&[7])),
            Err(EngineError::SerializationConflict)
        ));
        s.abort(2);
        assert_eq!(s.tracked(), (0, 0));
    }

    #[test]
    fn read_only_anomaly_fails_the_pivot() {
        // T_ins reads control, inserts a receipt; T_upd updates control and
        // commits; the report reads both and commits; T_ins's commit fails.
        let (control, receipt) = (1, 2);
        let s = Ssi::default();
        let ins = s.register(1);
        ins.note_scan(control);
        let upd = s.register(2);
        upd.note_scan(control);
        let c = s.precommit(&upd, writes(&[control])).unwrap();
        s.published(c);
        let report = s.register(3);
        report.note_scan(control);
        report.note_scan(receipt);
        let c = s.precommit(&report, writes(&[])).unwrap();
        s.published(c);
        assert!(s.precommit(&ins, writes(&[receipt])).is_err());
    }

    #[test]
    fn a_reader_alone_commits() {
        let s = Ssi::default();
        let r = s.register(1);
        let w = s.register(2);
        r.note_scan(1);
        w.note_scan(1);
        let c = s.precommit(&w, writes(&[1])).unwrap();
        s.published(c);
        s.precommit(&r, writes(&[])).unwrap();
        assert_eq!(s.tracked(), (0, 0));
    }

    #[test]
    fn key_reads_meet_only_that_key() {
        let s = Ssi::default();
        let t1 = s.register(1);
        let t2 = s.register(2);
        let k = |v: i64| -> Key { vec![Value::Int(v)].into_boxed_slice() };
        t1.note_key(5, &k(1));
        t2.note_key(5, &k(2));
        let c = s
            .precommit(&t1, Writes::new([(5, k(1))].into_iter()))
            .unwrap();
        s.published(c);
        // Each wrote only what it read: no edge between them.
        s.precommit(&t2, Writes::new([(5, k(2))].into_iter()))
            .unwrap();
        let t3 = s.register(3);
        let t4 = s.register(4);
        t3.note_key(5, &k(1));
        t4.note_key(5, &k(2));
        let c = s
            .precommit(&t3, Writes::new([(5, k(2))].into_iter()))
            .unwrap();
        s.published(c);
        assert!(s
            .precommit(&t4, Writes::new([(5, k(1))].into_iter()))
            .is_err());
    }

    fn range(lo: i64, hi: i64) -> KeyRange {
        let k = |v: i64| -> Key { vec![Value::Int(v)].into_boxed_slice() };
        (Bound::Included(k(lo)), Bound::Included(k(hi)))
    }

    fn key_writes(t: u32, keys: &[i64]) -> Writes {
        Writes::new(
            keys.iter()
                .map(|&v| (t, vec![Value::Int(v)].into_boxed_slice())),
        )
    }

    #[test]
    fn range_reads_meet_only_writes_inside_them() {
        // Each reads a range and writes outside both: no edge, both commit.
        let s = Ssi::default();
        let t1 = s.register(1);
        let t2 = s.register(2);
        t1.note_range(5, 5, range(1, 10));
        t2.note_range(5, 5, range(50, 60));
        let c = s.precommit(&t1, key_writes(5, &[100])).unwrap();
        s.published(c);
        s.precommit(&t2, key_writes(5, &[200])).unwrap();
        // Each writes into the other's range: write skew, the second fails.
        let t3 = s.register(3);
        let t4 = s.register(4);
        t3.note_range(5, 5, range(1, 10));
        t4.note_range(5, 5, range(50, 60));
        let c = s.precommit(&t3, key_writes(5, &[55])).unwrap();
        s.published(c);
        assert!(s.precommit(&t4, key_writes(5, &[5])).is_err());
    }

    #[test]
    fn index_ranges_meet_entries_and_many_ranges_read_the_table() {
        let (table, index) = (5, 9);
        let s = Ssi::default();
        let t1 = s.register(1);
        let t2 = s.register(2);
        t1.note_range(table, index, range(1, 10));
        t2.note_range(table, index, range(50, 60));
        // A write whose entry lies in t2's range (keys are not entries).
        let mut w = key_writes(table, &[3]);
        w.add_entry(table, index, vec![Value::Int(55), Value::Int(3)].into());
        let c = s.precommit(&t1, w).unwrap();
        s.published(c);
        let mut w = key_writes(table, &[4]);
        w.add_entry(table, index, vec![Value::Int(5), Value::Int(4)].into());
        assert!(s.precommit(&t2, w).is_err());
        s.abort(2);
        // Past MAX_RANGES ranges of one index, the table counts as read.
        let t3 = s.register(3);
        for i in 0..=MAX_RANGES as i64 {
            t3.note_range(table, index, range(i * 10, i * 10 + 1));
        }
        let r = t3.reads.lock();
        assert!(r.tables.contains(&table) && r.ranges.is_empty());
    }
}
