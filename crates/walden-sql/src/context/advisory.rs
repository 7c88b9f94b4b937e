//! Session-level advisory locks (`pg_advisory_lock` and friends): exclusive
//! locks on application-chosen 64-bit keys, per database, held by a session
//! until it unlocks them (as many times as it locked them) or ends.
//!
//! A waiter that would close a cycle of sessions waiting on one another is
//! refused with a deadlock error rather than left to wait forever.

use crate::error::{ErrorKind, Result, SqlError};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, SystemTime};

/// A lock's name: the database's id, the key, and whether the key was given
/// as two 32-bit halves (PostgreSQL keeps those apart from 64-bit keys).
pub type Key = (u32, i64, bool);

#[derive(Default, Debug)]
struct State {
    /// Held locks: owner session id and how many times it took the lock.
    held: HashMap<Key, (u32, u32)>,
    /// What each waiting session waits for, and since when.
    waiting: HashMap<u32, Key>,
    since: HashMap<u32, SystemTime>,
}

impl State {
    fn stop_waiting(&mut self, spid: u32) {
        self.waiting.remove(&spid);
        self.since.remove(&spid);
    }
}

#[derive(Default, Debug)]
pub struct AdvisoryLocks {
    state: Mutex<State>,
    released: Condvar,
}

/// How often a waiter looks at its session's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

impl AdvisoryLocks {
    /// Takes the lock, waiting while another session holds it. Fails if the
    /// statement is cancelled meanwhile or the wait would deadlock.
    pub fn lock(&self, key: Key, spid: u32, cancel: &AtomicBool) -> Result<()> {
        let mut st = self.state.lock();
        loop {
            if take(&mut st, key, spid) {
                st.stop_waiting(spid);
                return Ok(());
            }
            if would_deadlock(&st, key, spid) {
                st.stop_waiting(spid);
                return Err(SqlError::new(
                    ErrorKind::Deadlock,
                    format!(
                        "deadlock detected: advisory lock {} waits for a session that waits for this one",
                        key.1
                    ),
                ));
            }
            if cancel.load(Relaxed) {
                st.stop_waiting(spid);
                return Err(SqlError::new(
                    ErrorKind::Cancelled,
                    "canceling statement due to user request",
                ));
            }
            st.waiting.insert(spid, key);
            st.since.entry(spid).or_insert_with(SystemTime::now);
            self.released.wait_for(&mut st, CANCEL_POLL);
        }
    }

    /// Takes the lock if no other session holds it.
    pub fn try_lock(&self, key: Key, spid: u32) -> bool {
        take(&mut self.state.lock(), key, spid)
    }

    /// Releases one hold of the lock; false if this session does not hold it.
    pub fn unlock(&self, key: Key, spid: u32) -> bool {
        let mut st = self.state.lock();
        match st.held.get_mut(&key) {
            Some((owner, n)) if *owner == spid => {
                *n -= 1;
                if *n == 0 {
                    st.held.remove(&key);
                    self.released.notify_all();
                }
                true
            }
            _ => false,
        }
    }

    /// Releases every lock the session holds (`pg_advisory_unlock_all`, and
    /// when the session ends).
    pub fn unlock_all(&self, spid: u32) {
        let mut st = self.state.lock();
        let before = st.held.len();
        st.held.retain(|_, (owner, _)| *owner != spid);
        if st.held.len() != before {
            self.released.notify_all();
        }
    }

    /// Every lock held or awaited, as (key, session, since when it
    /// waits), for `pg_locks` and `sys.dm_tran_locks`.
    pub fn requests(&self) -> Vec<(Key, u32, Option<SystemTime>)> {
        let st = self.state.lock();
        let mut out: Vec<_> = st
            .held
            .iter()
            .map(|(k, (owner, _))| (*k, *owner, None))
            .chain(
                st.waiting
                    .iter()
                    .map(|(spid, k)| (*k, *spid, st.since.get(spid).copied())),
            )
            .collect();
        out.sort_by_key(|r| (r.0, r.1, r.2.is_none()));
        out
    }

    /// The locks a session holds, with their counts.
    #[cfg(test)]
    pub fn held_by(&self, spid: u32) -> Vec<(Key, u32)> {
        let st = self.state.lock();
        st.held
            .iter()
            .filter(|(_, (owner, _))| *owner == spid)
            .map(|(k, (_, n))| (*k, *n))
            .collect()
    }
}

fn take(st: &mut State, key: Key, spid: u32) -> bool {
    match st.held.get_mut(&key) {
        Some((owner, n)) if *owner == spid => {
            *n += 1;
            true
        }
        Some(_) => false,
        None => {
            st.held.insert(key, (spid, 1));
            true
        }
    }
}

/// Whether waiting for `key` closes a cycle: its holder waits (directly or
/// through others) for a lock `spid` holds.
fn would_deadlock(st: &State, key: Key, spid: u32) -> bool {
    let mut next = key;
    // Each session waits for one lock, so the chain is at most as long as
    // the number of waiters.
    for _ in 0..=st.waiting.len() {
        let Some(&(owner, _)) = st.held.get(&next) else {
            return false;
        };
        if owner == spid {
            return true;
        }
        match st.waiting.get(&owner) {
            Some(&k) => next = k,
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn reentrant_exclusive_and_released_with_the_session() {
        let l = AdvisoryLocks::default();
        let no = AtomicBool::new(false);
        l.lock((1, 7, false), 10, &no).unwrap();
        l.lock((1, 7, false), 10, &no).unwrap();
        assert!(!l.try_lock((1, 7, false), 11));
        assert!(l.try_lock((2, 7, false), 11), "another database's key 7");
        assert!(l.unlock((1, 7, false), 10));
        assert!(!l.try_lock((1, 7, false), 11), "held once more");
        assert!(l.unlock((1, 7, false), 10));
        assert!(!l.unlock((1, 7, false), 10), "not held any more");
        assert!(l.try_lock((1, 7, false), 11));
        l.unlock_all(11);
        assert!(l.held_by(11).is_empty());
        assert!(l.try_lock((1, 7, false), 10));
    }

    #[test]
    fn a_waiter_wakes_on_release_and_a_cycle_is_refused() {
        let l = Arc::new(AdvisoryLocks::default());
        let no = AtomicBool::new(false);
        l.lock((1, 1, false), 1, &no).unwrap();
        l.lock((1, 2, false), 2, &no).unwrap();
        let l2 = l.clone();
        // Session 2 waits for key 1 (held by session 1).
        let waiter = std::thread::spawn(move || l2.lock((1, 1, false), 2, &AtomicBool::new(false)));
        while !l.state.lock().waiting.contains_key(&2) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Session 1 now asking for key 2 would wait on a waiter of its own.
        let e = l.lock((1, 2, false), 1, &no).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Deadlock);
        l.unlock_all(1);
        waiter.join().unwrap().unwrap();
        assert_eq!(l.held_by(2).len(), 2);
        // A cancelled wait ends.
        let cancel = AtomicBool::new(true);
        let e = l.lock((1, 1, false), 3, &cancel).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Cancelled);
    }
}
