//! Fast-path weak table locks, as PostgreSQL's fast-path locking.
//!
//! Nearly every table lock is weak (ACCESS SHARE for reads, ROW SHARE and
//! ROW EXCLUSIVE for row locks and writes), and weak modes conflict only
//! with strong ones (SHARE and above). So a weak lock on a table nobody
//! holds or wants strongly is noted in a small list of its partition (by
//! table id) instead of the lock table: no shared hash map entry made and
//! removed, no hold of the lock table's mutex. Each partition counts the
//! strong locks held or requested on its tables; a weak request takes the
//! fast path only while that count is zero.
//!
//! A strong request raises the count first, then moves the partition's
//! fast-path locks on its table into the lock table, where it waits for
//! them as for any holder (and the deadlock detector sees them). The count
//! is read and the lists changed under the partition's mutex, so a weak
//! request either was noted before the move (and is moved) or sees the
//! count. A moved lock stays in the lock table until its transaction ends.
//!
//! Invariant: a partition's count is the number of (transaction, table)
//! holders in the lock table whose table mode is strong, plus the strong
//! requests queued or on their way there.

use super::{Entry, LockManager, Mode, Table, TableLockMode};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

/// Partitions of the table-id space (a collision only sends weak requests
/// of another table to the slow path while a strong lock is held).
const PARTS: usize = 64;

/// A weak table lock held through the fast path.
#[derive(Clone, Copy)]
struct FastLock {
    txid: u64,
    table: u32,
    mode: TableLockMode,
}

#[derive(Default)]
struct Part {
    /// Strong locks held or requested on this partition's tables.
    strong: AtomicU32,
    held: Mutex<SmallVec<[FastLock; 4]>>,
}

pub(super) struct FastPath {
    parts: Box<[Part]>,
}

impl Default for FastPath {
    fn default() -> Self {
        FastPath {
            parts: (0..PARTS).map(|_| Part::default()).collect(),
        }
    }
}

/// Whether a table lock mode conflicts with a weak one.
pub(super) fn is_strong(m: TableLockMode) -> bool {
    m >= TableLockMode::Share
}

/// Whether a table lock mode conflicts only with strong ones.
pub(super) fn is_weak(m: TableLockMode) -> bool {
    m <= TableLockMode::RowExclusive
}

impl FastPath {
    fn part(&self, table: u32) -> &Part {
        &self.parts[table as usize % PARTS]
    }

    /// Notes a weak lock `txid` did not hold on `table`; `false` if a
    /// strong lock is held or wanted in the partition (take the slow path).
    pub(super) fn take(&self, txid: u64, table: u32, mode: TableLockMode) -> bool {
        debug_assert!(is_weak(mode));
        let p = self.part(table);
        let mut held = p.held.lock();
        // Under the partition's mutex: a strong requester raises the count
        // before it takes the mutex to move the list.
        if p.strong.load(SeqCst) != 0 {
            return false;
        }
        // One line per (transaction, table), whatever its callers do.
        match held.iter_mut().find(|l| l.txid == txid && l.table == table) {
            Some(l) => l.mode = l.mode.max(mode),
            None => held.push(FastLock { txid, table, mode }),
        }
        true
    }

    /// Strengthens `txid`'s fast-path lock on `table` to include `mode`
    /// (weak); `false` if it was moved to the lock table meanwhile.
    pub(super) fn upgrade(&self, txid: u64, table: u32, mode: TableLockMode) -> bool {
        debug_assert!(is_weak(mode));
        let mut held = self.part(table).held.lock();
        match held.iter_mut().find(|l| l.txid == txid && l.table == table) {
            Some(l) => {
                // Two weak modes combine to the stronger of them.
                l.mode = l.mode.max(mode);
                true
            }
            None => false,
        }
    }

    /// Drops `txid`'s fast-path lock on `table` and returns its mode;
    /// `None` if it was moved to the lock table (it is there).
    pub(super) fn remove(&self, txid: u64, table: u32) -> Option<TableLockMode> {
        let mut held = self.part(table).held.lock();
        let i = held
            .iter()
            .position(|l| l.txid == txid && l.table == table)?;
        Some(held.swap_remove(i).mode)
    }

    /// A strong request on `table` is coming: counts it, and moves the
    /// table's fast-path locks into the lock table `t` (held by the caller).
    pub(super) fn announce_strong(&self, t: &mut Table, table: u32) {
        let p = self.part(table);
        p.strong.fetch_add(1, SeqCst);
        let mut held = p.held.lock();
        let mut i = 0;
        while i < held.len() {
            if held[i].table != table {
                i += 1;
                continue;
            }
            let l = held.swap_remove(i);
            t.grant_table(l.txid, table, l.mode);
        }
    }

    /// A strong lock on `table` was released, or its request given up.
    pub(super) fn strong_gone(&self, table: u32) {
        self.part(table).strong.fetch_sub(1, SeqCst);
    }

    /// Every fast-path lock, as (transaction, table, mode).
    pub(super) fn all(&self) -> Vec<(u64, u32, TableLockMode)> {
        let mut out = Vec::new();
        for p in self.parts.iter() {
            out.extend(p.held.lock().iter().map(|l| (l.txid, l.table, l.mode)));
        }
        out
    }
}

impl Table {
    /// Puts a fast-path lock into the lock table, as a holder.
    fn grant_table(&mut self, txid: u64, table: u32, mode: TableLockMode) {
        self.locks
            .entry(super::table_lock_key(table))
            .or_insert_with(|| Entry {
                holders: SmallVec::new(),
                queue: VecDeque::new(),
            })
            .grant(txid, Mode::Table(mode));
    }
}

/// How a transaction holds a table lock (see [`LockManager::take_table`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TablePath {
    /// Through the fast path (it may have been moved to the lock table
    /// since; the lock manager finds out).
    Fast,
    /// In the lock table.
    Main,
}

impl LockManager {
    /// Takes table `id`'s lock in `mode` for `txid`, which holds it already
    /// through `held` (if at all). Returns how the request ended and how the
    /// transaction holds the lock now. An upgrade is kept to the end of the
    /// transaction (reported as `Held`).
    #[allow(clippy::too_many_arguments)]
    pub fn take_table(
        &self,
        txid: u64,
        id: u32,
        mode: TableLockMode,
        held: Option<TablePath>,
        policy: super::WaitPolicy,
        waits: walden_log::WaitSinks<'_>,
        timeout: Option<std::time::Duration>,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> crate::error::Result<(super::Acquired, TablePath)> {
        use super::Acquired;
        if is_weak(mode) {
            match held {
                None if self.fast.take(txid, id, mode) => {
                    return Ok((Acquired::New, TablePath::Fast));
                }
                Some(TablePath::Fast) if self.fast.upgrade(txid, id, mode) => {
                    return Ok((Acquired::Held, TablePath::Fast));
                }
                _ => {}
            }
        }
        let key = super::table_lock_key(id);
        // Whether this request makes (or may make) the transaction a new
        // strong holder: count it and move the fast-path locks first.
        let counted = {
            let mut t = self.table.lock();
            // The transaction's own fast-path lock joins the request in the
            // lock table: one place per (transaction, table).
            if held == Some(TablePath::Fast) {
                if let Some(m) = self.fast.remove(txid, id) {
                    t.grant_table(txid, id, m);
                }
            }
            let prev = t.locks.get(&key).and_then(|e| match e.mode_of(txid) {
                Some(Mode::Table(m)) => Some(m),
                _ => None,
            });
            let after = prev.map_or(mode, |p| p.combine(mode));
            let counted = is_strong(after) && !prev.is_some_and(is_strong);
            if counted {
                self.fast.announce_strong(&mut t, id);
            }
            counted
        };
        let r = self.acquire_mode(
            txid,
            &key,
            Mode::Table(mode),
            policy,
            waits,
            timeout,
            cancel,
        );
        if counted && !matches!(r, Ok(Acquired::New | Acquired::Upgraded(_))) {
            self.fast.strong_gone(id);
        }
        match r? {
            Acquired::Upgraded(_) => Ok((Acquired::Held, TablePath::Main)),
            other => Ok((other, TablePath::Main)),
        }
    }

    /// Drops `txid`'s table lock on `id` if it is held through the fast
    /// path; `false` if it is in the lock table (release it there).
    pub fn release_fast(&self, txid: u64, id: u32, path: TablePath) -> bool {
        path == TablePath::Fast && self.fast.remove(txid, id).is_some()
    }
}
