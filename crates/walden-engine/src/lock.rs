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

mod requests;
pub use requests::{LockRequest, RequestMode};

/// How often a waiting lock request looks at its session's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);
use walden_log::{WaitSinks, WaitType};

pub type LockKey = (u32, Key);

/// PostgreSQL's row-lock modes, weakest first. Each conflicts with a superset
/// of what the weaker ones conflict with, so holding two modes is holding the
/// stronger one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockMode {
    /// `FOR KEY SHARE`: the key must not change or vanish.
    KeyShare,
    /// `FOR SHARE`: the row must not change.
    Share,
    /// `FOR NO KEY UPDATE`, and an UPDATE that keeps the key.
    NoKeyUpdate,
    /// `FOR UPDATE`, DELETE, INSERT and an UPDATE of the key.
    Update,
}

impl LockMode {
    /// PostgreSQL's row-lock conflict table.
    pub fn conflicts(self, other: LockMode) -> bool {
        use LockMode::*;
        match (self.min(other), self.max(other)) {
            (_, Update) => true,
            (KeyShare, _) | (Share, Share) => false,
            _ => true,
        }
    }
}

/// PostgreSQL's table-lock modes, weakest first (`LOCK TABLE ... IN ... MODE`).
/// DML takes `RowExclusive` (writes) or `RowShare` (row locks of locking
/// reads and foreign key checks), plain reads `AccessShare`; DDL and TRUNCATE
/// `AccessExclusive`, CREATE INDEX `Share`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableLockMode {
    AccessShare,
    RowShare,
    RowExclusive,
    ShareUpdateExclusive,
    Share,
    ShareRowExclusive,
    Exclusive,
    AccessExclusive,
}

impl TableLockMode {
    const ALL: [TableLockMode; 8] = [
        TableLockMode::AccessShare,
        TableLockMode::RowShare,
        TableLockMode::RowExclusive,
        TableLockMode::ShareUpdateExclusive,
        TableLockMode::Share,
        TableLockMode::ShareRowExclusive,
        TableLockMode::Exclusive,
        TableLockMode::AccessExclusive,
    ];

    /// The modes this one conflicts with, one bit per mode (PostgreSQL's
    /// table 13.2).
    fn conflict_mask(self) -> u8 {
        use TableLockMode::*;
        let bit = |m: TableLockMode| 1u8 << (m as u8);
        match self {
            AccessShare => bit(AccessExclusive),
            RowShare => bit(Exclusive) | bit(AccessExclusive),
            RowExclusive => {
                bit(Share) | bit(ShareRowExclusive) | bit(Exclusive) | bit(AccessExclusive)
            }
            ShareUpdateExclusive => {
                bit(ShareUpdateExclusive)
                    | bit(Share)
                    | bit(ShareRowExclusive)
                    | bit(Exclusive)
                    | bit(AccessExclusive)
            }
            Share => {
                bit(RowExclusive)
                    | bit(ShareUpdateExclusive)
                    | bit(ShareRowExclusive)
                    | bit(Exclusive)
                    | bit(AccessExclusive)
            }
            ShareRowExclusive => !(bit(AccessShare) | bit(RowShare)),
            Exclusive => !bit(AccessShare),
            AccessExclusive => 0xff,
        }
    }

    pub fn conflicts(self, other: TableLockMode) -> bool {
        self.conflict_mask() & (1 << (other as u8)) != 0
    }

    /// Holding `self` is at least holding `other`.
    pub(crate) fn covers(self, other: TableLockMode) -> bool {
        let (a, b) = (self.conflict_mask(), other.conflict_mask());
        a & b == b
    }

    /// The weakest mode that is holding both (PostgreSQL holds the two
    /// separately; one entry per holder keeps the lock table simple).
    pub(crate) fn combine(self, other: TableLockMode) -> TableLockMode {
        let need = self.conflict_mask() | other.conflict_mask();
        Self::ALL
            .into_iter()
            .find(|m| m.conflict_mask() & need == need)
            .unwrap_or(TableLockMode::AccessExclusive)
    }

    /// The SQL name, as `pg_locks.mode` shows it.
    pub fn name(self) -> &'static str {
        use TableLockMode::*;
        match self {
            AccessShare => "AccessShareLock",
            RowShare => "RowShareLock",
            RowExclusive => "RowExclusiveLock",
            ShareUpdateExclusive => "ShareUpdateExclusiveLock",
            Share => "ShareLock",
            ShareRowExclusive => "ShareRowExclusiveLock",
            Exclusive => "ExclusiveLock",
            AccessExclusive => "AccessExclusiveLock",
        }
    }
}

/// A lock mode in the lock table: a row's or a table's. A key only ever
/// holds one kind (a table lock's key is the table id with an empty key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Row(LockMode),
    Table(TableLockMode),
}

impl Mode {
    fn conflicts(self, other: Mode) -> bool {
        match (self, other) {
            (Mode::Row(a), Mode::Row(b)) => a.conflicts(b),
            (Mode::Table(a), Mode::Table(b)) => a.conflicts(b),
            _ => false,
        }
    }
    fn covers(self, other: Mode) -> bool {
        match (self, other) {
            (Mode::Row(a), Mode::Row(b)) => a >= b,
            (Mode::Table(a), Mode::Table(b)) => a.covers(b),
            _ => false,
        }
    }
    fn combine(self, other: Mode) -> Mode {
        match (self, other) {
            (Mode::Row(a), Mode::Row(b)) => Mode::Row(a.max(b)),
            (Mode::Table(a), Mode::Table(b)) => Mode::Table(a.combine(b)),
            (_, b) => b,
        }
    }
}

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

#[derive(Default)]
pub struct LockManager {
    table: Mutex<Table>,
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

    /// Takes table `id`'s table lock in `mode` for `txid`. An upgrade is
    /// kept to the end of the transaction (reported as `Held`).
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
        let key = table_lock_key(id);
        match self.acquire_mode(
            txid,
            &key,
            Mode::Table(mode),
            policy,
            waits,
            timeout,
            cancel,
        )? {
            Acquired::Upgraded(_) => Ok(Acquired::Held),
            other => Ok(other),
        }
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
        if !t.locks.contains_key(key) {
            let mut holders = SmallVec::new();
            holders.push((txid, mode));
            t.locks.insert(
                key.clone(),
                Entry {
                    holders,
                    queue: VecDeque::new(),
                },
            );
            return Ok(Acquired::New);
        }
        let e = t.locks.get_mut(key).expect("present");
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
    pub fn release(&self, txid: u64, keys: impl IntoIterator<Item = LockKey>) {
        let mut t = self.table.lock();
        for k in keys {
            let Some(e) = t.locks.get_mut(&k) else {
                continue;
            };
            let before = e.holders.len();
            e.holders.retain(|h| h.0 != txid);
            if e.holders.len() != before {
                t.settle(&k);
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

    /// Locks currently held (for diagnostics).
    pub fn held(&self) -> usize {
        self.table.lock().locks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    static NO: AtomicBool = AtomicBool::new(false);
    use crate::types::Value;
    const X: LockMode = LockMode::Update;
    const W: WaitPolicy = WaitPolicy::Wait;
    use std::sync::Arc;

    fn k(i: i64) -> LockKey {
        (1, vec![Value::Int(i)].into_boxed_slice())
    }

    #[test]
    fn a_cycle_is_detected_and_the_requester_is_the_victim() {
        let lm = Arc::new(LockManager::default());
        lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
        lm.acquire(2, &k(2), X, W, &[], None, &NO).unwrap();
        let lm2 = lm.clone();
        let t = std::thread::spawn(move || lm2.acquire(1, &k(2), X, W, &[], None, &NO).map(|_| ()));
        // Let transaction 1 start waiting for 2.
        while lm.table.lock().edges(1) != vec![2] {
            std::thread::sleep(Duration::from_millis(1));
        }
        let err = lm
            .acquire(2, &k(1), X, W, &[], None, &NO)
            .expect_err("deadlock");
        assert!(matches!(err, EngineError::Deadlock { victim: 2, .. }));
        lm.release(2, [k(2)]);
        t.join().unwrap().unwrap();
    }

    #[test]
    fn timeouts_fire() {
        let lm = LockManager::default();
        lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
        let e = lm
            .acquire(2, &k(1), X, W, &[], Some(Duration::from_millis(20)), &NO)
            .unwrap_err();
        assert!(matches!(e, EngineError::LockTimeout(_)));
    }

    fn wait_until_waiting(lm: &LockManager, txid: u64, owner: u64) {
        while !lm.table.lock().edges(txid).contains(&owner) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_release_hands_the_lock_to_the_first_waiter_and_moves_the_others_edges() {
        let lm = Arc::new(LockManager::default());
        lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
        lm.acquire(3, &k(3), X, W, &[], None, &NO).unwrap();
        let (a, b) = (lm.clone(), lm.clone());
        let t2 = std::thread::spawn(move || a.acquire(2, &k(1), X, W, &[], None, &NO).map(|_| ()));
        wait_until_waiting(&lm, 2, 1);
        let t3 = std::thread::spawn(move || b.acquire(3, &k(1), X, W, &[], None, &NO).map(|_| ()));
        wait_until_waiting(&lm, 3, 1);
        lm.release(1, [k(1)]);
        t2.join().unwrap().unwrap();
        {
            let t = lm.table.lock();
            assert_eq!(
                t.locks.get(&k(1)).and_then(|e| e.mode_of(2)),
                Some(Mode::Row(X))
            );
            // 3 now waits for 2, so 2 waiting for 3 closes a cycle.
            assert_eq!(t.edges(3), vec![2]);
            assert!(t.edges(2).is_empty());
        }
        let err = lm
            .acquire(2, &k(3), X, W, &[], None, &NO)
            .expect_err("deadlock");
        assert!(matches!(err, EngineError::Deadlock { victim: 2, .. }));
        lm.release(2, [k(1)]);
        t3.join().unwrap().unwrap();
        lm.release(3, [k(1), k(3)]);
        assert_eq!(lm.held(), 0);
        assert!(lm.table.lock().waiting.is_empty());
    }

    #[test]
    fn a_timed_out_waiter_leaves_the_queue() {
        let lm = LockManager::default();
        lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
        assert!(lm
            .acquire(2, &k(1), X, W, &[], Some(Duration::from_millis(5)), &NO)
            .is_err());
        assert!(lm.table.lock().waiting.is_empty());
        lm.release(1, [k(1)]);
        assert_eq!(lm.held(), 0);
    }

    #[test]
    fn many_sessions_on_few_keys_serialise_without_losing_a_wakeup() {
        let lm = Arc::new(LockManager::default());
        let counter = Arc::new(Mutex::new([0u64; 3]));
        let threads: Vec<_> = (0..8u64)
            .map(|i| {
                let (lm, counter) = (lm.clone(), counter.clone());
                std::thread::spawn(move || {
                    for j in 0..300u64 {
                        let txid = 1 + i * 1_000 + j;
                        let key = k(((i + j) % 3) as i64);
                        lm.acquire(txid, &key, X, W, &[], None, &NO)
                            .map(|_| ())
                            .unwrap();
                        counter.lock()[((i + j) % 3) as usize] += 1;
                        lm.release(txid, [key]);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(counter.lock().iter().sum::<u64>(), 2_400);
        assert_eq!(lm.held(), 0);
    }

    #[test]
    fn a_cancel_ends_a_lock_wait() {
        let lm = Arc::new(LockManager::default());
        lm.acquire(1, &k(1), X, W, &[], None, &NO).unwrap();
        let cancel = Arc::new(AtomicBool::new(false));
        let (lm2, c2) = (lm.clone(), cancel.clone());
        let t = std::thread::spawn(move || lm2.acquire(2, &k(1), X, W, &[], None, &c2).map(|_| ()));
        std::thread::sleep(Duration::from_millis(50));
        cancel.store(true, Relaxed);
        let r = t.join().unwrap();
        assert!(matches!(r, Err(EngineError::Cancelled)), "{r:?}");
        // The cancelled waiter left the queue: the lock goes back to free.
        lm.release(1, [k(1)]);
        lm.acquire(3, &k(1), X, W, &[], None, &NO).unwrap();
    }

    fn get(lm: &LockManager, tx: u64, key: i64, mode: LockMode, p: WaitPolicy) -> Acquired {
        lm.acquire(tx, &k(key), mode, p, &[], Some(Duration::from_secs(5)), &NO)
            .unwrap()
    }

    #[test]
    fn the_conflict_table_is_postgresqls() {
        use LockMode::*;
        let modes = [KeyShare, Share, NoKeyUpdate, Update];
        // Rows: held; columns: requested (PostgreSQL's table 13.3).
        let expect = [
            [false, false, false, true],
            [false, false, true, true],
            [false, true, true, true],
            [true, true, true, true],
        ];
        for (i, a) in modes.iter().enumerate() {
            for (j, b) in modes.iter().enumerate() {
                assert_eq!(a.conflicts(*b), expect[i][j], "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn table_modes_follow_postgresqls_conflict_table() {
        use TableLockMode::*;
        let modes = TableLockMode::ALL;
        // PostgreSQL's table 13.2: which requested modes each held mode
        // conflicts with (1 = conflict), weakest first.
        let expect = [
            "00000001", "00000011", "00001111", "00011111", "00110111", "00111111", "01111111",
            "11111111",
        ];
        for (i, a) in modes.iter().enumerate() {
            for (j, b) in modes.iter().enumerate() {
                let want = expect[i].as_bytes()[j] == b'1';
                assert_eq!(a.conflicts(*b), want, "{a:?} vs {b:?}");
            }
        }
        assert_eq!(RowExclusive.combine(Share), ShareRowExclusive);
        assert!(AccessExclusive.covers(RowShare));
        assert!(!Share.covers(RowExclusive));
    }

    #[test]
    fn table_and_row_locks_deadlock_together() {
        let lm = Arc::new(LockManager::default());
        lm.acquire_table(1, 7, TableLockMode::RowExclusive, W, &[], None, &NO)
            .unwrap();
        lm.acquire(2, &k(1), X, W, &[], None, &NO).unwrap();
        let lm2 = lm.clone();
        let t = std::thread::spawn(move || lm2.acquire(1, &k(1), X, W, &[], None, &NO).map(|_| ()));
        wait_until_waiting(&lm, 1, 2);
        let e = lm
            .acquire_table(2, 7, TableLockMode::AccessExclusive, W, &[], None, &NO)
            .expect_err("deadlock");
        assert!(
            matches!(e, EngineError::Deadlock { victim: 2, .. }),
            "{e:?}"
        );
        assert_eq!(
            lm.acquire_table(
                3,
                7,
                TableLockMode::Share,
                WaitPolicy::NoWait,
                &[],
                None,
                &NO
            )
            .unwrap(),
            Acquired::Busy
        );
        lm.release(2, [k(1)]);
        t.join().unwrap().unwrap();
        assert_eq!(
            lm.table_locks(),
            vec![(1, 7, TableLockMode::RowExclusive, true)]
        );
        lm.release(1, [k(1), table_lock_key(7)]);
        assert_eq!(lm.held(), 0);
    }

    #[test]
    fn shared_modes_coexist_and_nowait_reports_busy() {
        use LockMode::*;
        let lm = LockManager::default();
        let nw = WaitPolicy::NoWait;
        assert_eq!(get(&lm, 1, 1, Share, nw), Acquired::New);
        assert_eq!(get(&lm, 2, 1, Share, nw), Acquired::New);
        assert_eq!(get(&lm, 3, 1, KeyShare, nw), Acquired::New);
        assert_eq!(get(&lm, 4, 1, NoKeyUpdate, nw), Acquired::Busy);
        assert_eq!(get(&lm, 1, 1, KeyShare, nw), Acquired::Held);
        lm.release(1, [k(1)]);
        lm.release(2, [k(1)]);
        // Key share does not block an update that keeps the key.
        assert_eq!(get(&lm, 4, 1, NoKeyUpdate, nw), Acquired::New);
        assert_eq!(get(&lm, 5, 1, Update, nw), Acquired::Busy);
        lm.release(3, [k(1)]);
        lm.release(4, [k(1)]);
        assert_eq!(lm.held(), 0);
    }

    #[test]
    fn an_upgrade_waits_for_other_sharers_and_two_upgraders_deadlock() {
        use LockMode::*;
        let lm = Arc::new(LockManager::default());
        get(&lm, 1, 1, Share, W);
        get(&lm, 2, 1, Share, W);
        let lm2 = lm.clone();
        let t = std::thread::spawn(move || get(&lm2, 1, 1, Update, W));
        wait_until_waiting(&lm, 1, 2);
        let e = lm
            .acquire(2, &k(1), Update, W, &[], None, &NO)
            .expect_err("deadlock");
        assert!(
            matches!(e, EngineError::Deadlock { victim: 2, .. }),
            "{e:?}"
        );
        lm.release(2, [k(1)]);
        assert_eq!(t.join().unwrap(), Acquired::Upgraded(Share));
        // Back to share: another sharer fits again.
        lm.downgrade(1, &k(1), Share);
        assert_eq!(get(&lm, 3, 1, Share, WaitPolicy::NoWait), Acquired::New);
        lm.release(1, [k(1)]);
        lm.release(3, [k(1)]);
        assert_eq!(lm.held(), 0);
        assert!(lm.table.lock().waiting.is_empty());
    }

    #[test]
    fn a_release_grants_every_compatible_waiter_at_the_front() {
        use LockMode::*;
        let lm = Arc::new(LockManager::default());
        get(&lm, 1, 1, Update, W);
        let (a, b) = (lm.clone(), lm.clone());
        let t2 = std::thread::spawn(move || get(&a, 2, 1, Share, W));
        wait_until_waiting(&lm, 2, 1);
        let t3 = std::thread::spawn(move || get(&b, 3, 1, KeyShare, W));
        wait_until_waiting(&lm, 3, 1);
        lm.release(1, [k(1)]);
        assert_eq!(t2.join().unwrap(), Acquired::New);
        assert_eq!(t3.join().unwrap(), Acquired::New);
        lm.release(2, [k(1)]);
        lm.release(3, [k(1)]);
        assert_eq!(lm.held(), 0);
    }
}
