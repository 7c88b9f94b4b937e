//! Row locks with deadlock detection.
//!
//! Locks on (table, key) in PostgreSQL's four row-lock modes, held until the
//! transaction ends (or a savepoint rolled back past them is undone). Writers
//! take `NoKeyUpdate` (an UPDATE that keeps the key) or `Update` (INSERT,
//! DELETE, a key change); `SELECT ... FOR ...` takes the mode it names; plain
//! readers take none (they read committed rows). A request that would close a
//! cycle in the waits-for graph fails at once with a deadlock error: the
//! requester is the victim, as PostgreSQL's detector usually picks the one
//! that ran it.
//!
//! Each locked key has its holders and a FIFO queue of waiters; each waiter
//! sleeps on its own condition variable and is woken only when it is granted
//! (with one shared condition variable every release woke every blocked
//! session, a herd that bounded TPC-B at 16 clients). A waiter waits for the
//! holders whose modes conflict with its own and for the conflicting waiters
//! queued ahead of it; those edges are recomputed whenever the key's holders
//! or queue change, so the waits-for graph stays exact.

use crate::error::{EngineError, Result};
use crate::types::Key;
use foldhash::{HashMap, HashSet};
use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod fast;
mod modes;
mod requests;
pub use fast::TablePath;
use modes::Mode;
pub use modes::{LockMode, TableLockMode};
pub use requests::{LockRequest, RequestMode};

/// How often a waiting lock request looks at its session's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);
use walden_log::{WaitSinks, WaitType};

pub type LockKey = (u32, Key);

/// The lock-table key of table `id`'s table lock (row keys are never empty).
pub fn table_lock_key(id: u32) -> LockKey {
    (id, Vec::new().into_boxed_slice())
}

/// What to do when the lock is held in a conflicting mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPolicy {
    Wait,
    /// `NOWAIT` and `SKIP LOCKED`: give up at once.
    NoWait,
}

/// A transaction queued for a key, and how to wake it.
struct Waiter {
    txid: u64,
    mode: Mode,
    wake: Arc<Condvar>,
    /// When it queued (`pg_locks.waitstart`).
    since: std::time::SystemTime,
}

/// One locked key.
struct Entry {
    /// Transactions holding the key, each in its strongest mode.
    holders: SmallVec<[(u64, Mode); 1]>,
    /// Oldest first; granted from the front.
    queue: VecDeque<Waiter>,
}

impl Entry {
    fn mode_of(&self, txid: u64) -> Option<Mode> {
        self.holders.iter().find(|h| h.0 == txid).map(|h| h.1)
    }

    /// Other holders whose modes conflict with `mode`.
    fn blockers(&self, txid: u64, mode: Mode) -> impl Iterator<Item = u64> + '_ {
        self.holders
            .iter()
            .filter(move |h| h.0 != txid && h.1.conflicts(mode))
            .map(|h| h.0)
    }

    fn grant(&mut self, txid: u64, mode: Mode) {
        match self.holders.iter_mut().find(|h| h.0 == txid) {
            Some(h) => h.1 = h.1.combine(mode),
            None => self.holders.push((txid, mode)),
        }
    }
}

// foldhash rather than std's SipHash: hashing keys was about 10% of the CPU of
// delayed commits. Its per-map random seed keeps crafted keys from colliding.
#[derive(Default)]
struct Table {
    locks: HashMap<LockKey, Entry>,
    /// Waiting transaction -> the key it waits for (one at a time). Its
    /// waits-for edges are read off that key's entry when a deadlock check
    /// needs them, so releases and grants keep no edges up to date.
    waiting: HashMap<u64, LockKey>,
}

impl Table {
    /// Grants queued requests from the front while they fit, and drops the
    /// entry once nobody uses it.
    fn settle(&mut self, key: &LockKey) {
        let Table { locks, waiting } = self;
        let Some(e) = locks.get_mut(key) else { return };
        while let Some(w) = e.queue.front() {
            if e.blockers(w.txid, w.mode).next().is_some() {
                break;
            }
            let w = e.queue.pop_front().expect("front");
            e.grant(w.txid, w.mode);
            waiting.remove(&w.txid);
            // Under the table mutex: parking_lot moves the waiter onto the
            // mutex, so it runs once we unlock.
            w.wake.notify_one();
        }
        if e.holders.is_empty() && e.queue.is_empty() {
            locks.remove(key);
        }
    }

    /// Whom a waiting transaction waits for: the holders whose modes
    /// conflict with its request, and the conflicting requests queued ahead
    /// of it (the queue is granted in order).
    fn edges(&self, txid: u64) -> Vec<u64> {
        let Some(e) = self.waiting.get(&txid).and_then(|k| self.locks.get(k)) else {
            return Vec::new();
        };
        let Some(pos) = e.queue.iter().position(|w| w.txid == txid) else {
            return Vec::new();
        };
        let mode = e.queue[pos].mode;
        let mut out: Vec<u64> = e.blockers(txid, mode).collect();
        for ahead in e.queue.iter().take(pos) {
            if ahead.txid != txid && ahead.mode.conflicts(mode) && !out.contains(&ahead.txid) {
                out.push(ahead.txid);
            }
        }
        out
    }

    /// Whether following waits-for edges from `txid` comes back to it; the
    /// transaction it waits for on the way if so. Edges only appear when a
    /// request queues (grants and releases remove them), so checking each
    /// new request finds every cycle.
    fn in_cycle(&self, txid: u64) -> Option<u64> {
        let mut seen = HashSet::default();
        let mut stack: Vec<(u64, u64)> = self.edges(txid).into_iter().map(|o| (o, o)).collect();
        while let Some((cur, first)) = stack.pop() {
            if cur == txid {
                return Some(first);
            }
            if !seen.insert(cur) || seen.len() > 100_000 {
                continue;
            }
            stack.extend(self.edges(cur).into_iter().map(|n| (n, first)));
        }
        None
    }
}

/// Locks released per hold of the lock table (see [`LockManager::release`]).
const RELEASE_CHUNK: usize = 1024;

#[derive(Default)]
pub struct LockManager {
    table: Mutex<Table>,
    /// Weak table locks held outside `table` (see `fast.rs`).
    fast: fast::FastPath,
}

/// How a lock request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// The lock is new to this transaction: release it at the end.
    New,
    /// The transaction already held it in this mode or a stronger one.
    Held,
    /// The transaction held it in the weaker mode given and now holds the
    /// requested one (a savepoint rollback goes back to the weaker mode).
    Upgraded(LockMode),
    /// Held in a conflicting mode and the policy was not to wait.
    Busy,
}

impl LockManager {
    /// Takes `key` in `mode` for `txid`, waiting for conflicting holders
    /// unless `policy` says not to.
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &self,
        txid: u64,
        key: &LockKey,
        mode: LockMode,
        policy: WaitPolicy,
        waits: WaitSinks<'_>,
        timeout: Option<Duration>,
        cancel: &AtomicBool,
    ) -> Result<Acquired> {
        self.acquire_mode(txid, key, Mode::Row(mode), policy, waits, timeout, cancel)
    }

    /// Takes table `id`'s table lock in `mode` for `txid`, in the lock
    /// table (release it with [`Self::release`] and [`table_lock_key`]).
    /// An upgrade is kept to the end of the transaction (reported as
    /// `Held`). Transactions use [`Self::take_table`], which takes weak
    /// locks through the fast path.
    #[cfg(test)]
    #[allow(clippy::too_many_arguments)]
    pub fn acquire_table(
        &self,
        txid: u64,
        id: u32,
        mode: TableLockMode,
        policy: WaitPolicy,
        waits: WaitSinks<'_>,
        timeout: Option<Duration>,
        cancel: &AtomicBool,
    ) -> Result<Acquired> {
        let held = Some(TablePath::Main);
        self.take_table(txid, id, mode, held, policy, waits, timeout, cancel)
            .map(|(a, _)| a)
    }

    /// Table locks held and awaited, as (transaction, table id, mode,
    /// granted), for `pg_locks`.
    pub fn table_locks(&self) -> Vec<(u64, u32, TableLockMode, bool)> {
        let t = self.table.lock();
        let mut out = Vec::new();
        for (k, e) in &t.locks {
            if !k.1.is_empty() {
                continue;
            }
            for (tx, m) in &e.holders {
                if let Mode::Table(m) = m {
                    out.push((*tx, k.0, *m, true));
                }
            }
            for w in &e.queue {
                if let Mode::Table(m) = w.mode {
                    out.push((w.txid, k.0, m, false));
                }
            }
        }
        drop(t);
        out.extend(
            self.fast
                .all()
                .into_iter()
                .map(|(tx, id, m)| (tx, id, m, true)),
        );
        out.sort_by_key(|l| (l.1, l.0));
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn acquire_mode(
        &self,
        txid: u64,
        key: &LockKey,
        mode: Mode,
        policy: WaitPolicy,
        waits: WaitSinks<'_>,
        timeout: Option<Duration>,
        cancel: &AtomicBool,
    ) -> Result<Acquired> {
        let mut t = self.table.lock();
        // One hash and probe for a key nobody holds (the usual case); a
        // held one costs a copy of the key.
        let e = match t.locks.entry(key.clone()) {
            std::collections::hash_map::Entry::Vacant(v) => {
                let mut holders = SmallVec::new();
                holders.push((txid, mode));
                v.insert(Entry {
                    holders,
                    queue: VecDeque::new(),
                });
                return Ok(Acquired::New);
            }
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
        };
        let prev = e.mode_of(txid);
        if prev.is_some_and(|p| p.covers(mode)) {
            return Ok(Acquired::Held);
        }
        let outcome = match prev {
            Some(Mode::Row(p)) => Acquired::Upgraded(p),
            // Table-lock upgrades are kept to the end (see `acquire_table`).
            Some(Mode::Table(_)) => Acquired::Upgraded(LockMode::KeyShare),
            None => Acquired::New,
        };
        // An upgrade does not queue behind waiters that wait for it anyway.
        if e.blockers(txid, mode).next().is_none() && (prev.is_some() || e.queue.is_empty()) {
            e.grant(txid, mode);
            return Ok(outcome);
        }
        if policy == WaitPolicy::NoWait {
            return Ok(Acquired::Busy);
        }
        let wake = Arc::new(Condvar::new());
        let waiter = Waiter {
            txid,
            mode,
            wake: wake.clone(),
            since: std::time::SystemTime::now(),
        };
        if prev.is_some() {
            e.queue.push_front(waiter);
        } else {
            e.queue.push_back(waiter);
        }
        t.waiting.insert(txid, key.clone());
        t.settle(key);
        // Every edge this request added starts or ends at it, so a new
        // cycle passes through it.
        if let Some(other) = t.in_cycle(txid) {
            Self::leave_queue(&mut t, key, txid);
            return Err(EngineError::Deadlock {
                victim: txid,
                detail: format!(
                    "transaction {txid} waits for a {} lock held by transaction {other}, which waits for {txid}",
                    if key.1.is_empty() { "table" } else { "row" }
                ),
            });
        }
        let start = Instant::now();
        let deadline = timeout.map(|d| start + d);
        let granted = |t: &Table| {
            t.locks
                .get(key)
                .and_then(|e| e.mode_of(txid))
                .is_some_and(|m| m.covers(mode))
        };
        let result = loop {
            // The releasing transaction granted us the lock before waking us.
            if granted(&t) {
                break Ok(outcome);
            }
            // Wake up now and then to see whether the statement was
            // cancelled (a cancel request, statement_timeout).
            let slice = Instant::now() + CANCEL_POLL;
            let until = deadline.map_or(slice, |d| d.min(slice));
            let timed_out = wake.wait_until(&mut t, until).timed_out();
            if granted(&t) {
                break Ok(outcome);
            }
            let expired = timed_out && deadline.is_some_and(|d| Instant::now() >= d);
            if expired || cancel.load(Relaxed) {
                Self::leave_queue(&mut t, key, txid);
                break Err(if expired {
                    EngineError::LockTimeout(start.elapsed().as_millis() as u64)
                } else {
                    EngineError::Cancelled
                });
            }
        };
        drop(t);
        for s in waits {
            s.record(WaitType::LckMX, start.elapsed());
        }
        result
    }

    /// Takes a waiter off a key's queue (timeout, cancel, deadlock): those
    /// behind it may now fit.
    fn leave_queue(t: &mut Table, key: &LockKey, txid: u64) {
        if let Some(e) = t.locks.get_mut(key) {
            e.queue.retain(|w| w.txid != txid);
        }
        t.waiting.remove(&txid);
        t.settle(key);
    }

    /// Releases the given locks of `txid`, granting waiters that now fit.
    ///
    /// The table is let go every [`RELEASE_CHUNK`] keys: a transaction that
    /// locked a million rows would otherwise hold every other lock request
    /// (each write, and each statement's table lock) for most of a second.
    /// The transaction has ended, so the order in which its locks go does
    /// not matter.
    pub fn release(&self, txid: u64, keys: impl IntoIterator<Item = LockKey>) {
        let mut keys = keys.into_iter().peekable();
        while keys.peek().is_some() {
            let mut t = self.table.lock();
            for k in keys.by_ref().take(RELEASE_CHUNK) {
                // One hash and probe per key: through its entry.
                let std::collections::hash_map::Entry::Occupied(mut o) = t.locks.entry(k) else {
                    continue;
                };
                let id = o.key().0;
                let e = o.get_mut();
                let before = e.holders.len();
                let mut strong = false;
                e.holders.retain(|h| {
                    if h.0 != txid {
                        return true;
                    }
                    strong = matches!(h.1, Mode::Table(m) if fast::is_strong(m));
                    false
                });
                if e.holders.len() == before {
                    continue;
                }
                if strong {
                    self.fast.strong_gone(id);
                }
                if !e.queue.is_empty() {
                    let k = o.key().clone();
                    t.settle(&k);
                } else if e.holders.is_empty() {
                    // What `settle` would do with nobody queued, without
                    // looking the key up again.
                    o.remove();
                }
            }
        }
    }

    /// Returns `txid`'s lock on `key` to a weaker mode (a savepoint rolled
    /// back past an upgrade).
    pub fn downgrade(&self, txid: u64, key: &LockKey, mode: LockMode) {
        let mut t = self.table.lock();
        let Some(e) = t.locks.get_mut(key) else {
            return;
        };
        if let Some(h) = e.holders.iter_mut().find(|h| h.0 == txid) {
            if let Mode::Row(m) = h.1 {
                h.1 = Mode::Row(m.min(mode));
            }
            t.settle(key);
        }
    }

    /// Keys locked in the lock table (for diagnostics; fast-path table
    /// locks are not among them).
    pub fn held(&self) -> usize {
        self.table.lock().locks.len()
    }
}

#[cfg(test)]
mod tests;
