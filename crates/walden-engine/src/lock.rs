//! Row locks with deadlock detection.
//!
//! Exclusive locks on (table, key), held until the transaction ends. Readers
//! take none (they read committed rows). A request that would close a cycle
//! in the waits-for graph fails at once with a deadlock error: the requester
//! is the victim, as PostgreSQL's detector usually picks the one that ran it.

use crate::error::{EngineError, Result};
use crate::types::Key;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use walden_log::{WaitSinks, WaitType};

pub type LockKey = (u32, Key);

#[derive(Default)]
struct Table {
    owner: HashMap<LockKey, u64>,
    waits_for: HashMap<u64, u64>,
    waiting: usize,
}

#[derive(Default)]
pub struct LockManager {
    table: Mutex<Table>,
    cv: Condvar,
}

/// How a lock request ended.
pub enum Acquired {
    /// The lock is new to this transaction: release it at the end.
    New,
    /// The transaction already held it.
    Held,
}

impl LockManager {
    /// Takes the exclusive lock on `key` for `txid`, waiting for its owner.
    pub fn acquire(
        &self,
        txid: u64,
        key: &LockKey,
        waits: WaitSinks<'_>,
        timeout: Option<Duration>,
    ) -> Result<Acquired> {
        let mut t = self.table.lock();
        match t.owner.get(key) {
            None => {
                t.owner.insert(key.clone(), txid);
                return Ok(Acquired::New);
            }
            Some(&o) if o == txid => return Ok(Acquired::Held),
            Some(_) => {}
        }
        let start = Instant::now();
        let result = loop {
            let owner = match t.owner.get(key) {
                None => {
                    t.owner.insert(key.clone(), txid);
                    break Ok(Acquired::New);
                }
                Some(&o) => o,
            };
            // Would waiting for `owner` close a cycle back to us?
            let mut cur = owner;
            let mut hops = 0;
            let mut cycle = false;
            while let Some(&next) = t.waits_for.get(&cur) {
                if next == txid {
                    cycle = true;
                    break;
                }
                cur = next;
                hops += 1;
                if hops > 100_000 {
                    break;
                }
            }
            if cycle {
                t.waits_for.remove(&txid);
                break Err(EngineError::Deadlock {
                    victim: txid,
                    detail: format!(
                        "transaction {txid} waits for a row lock held by transaction {owner}, which waits for {txid}"
                    ),
                });
            }
            t.waits_for.insert(txid, owner);
            t.waiting += 1;
            let timed_out = match timeout {
                Some(d) => {
                    let left = d.saturating_sub(start.elapsed());
                    left.is_zero() || self.cv.wait_for(&mut t, left).timed_out()
                }
                None => {
                    self.cv.wait(&mut t);
                    false
                }
            };
            t.waiting -= 1;
            t.waits_for.remove(&txid);
            if timed_out && t.owner.get(key).is_some_and(|&o| o != txid) {
                break Err(EngineError::LockTimeout(start.elapsed().as_millis() as u64));
            }
        };
        drop(t);
        for s in waits {
            s.record(WaitType::LckMX, start.elapsed());
        }
        result
    }

    /// Releases the given locks of `txid`.
    pub fn release(&self, txid: u64, keys: impl IntoIterator<Item = LockKey>) {
        let mut t = self.table.lock();
        for k in keys {
            if t.owner.get(&k) == Some(&txid) {
                t.owner.remove(&k);
            }
        }
        if t.waiting > 0 {
            self.cv.notify_all();
        }
    }

    /// Locks currently held (for diagnostics).
    pub fn held(&self) -> usize {
        self.table.lock().owner.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Value;
    use std::sync::Arc;

    fn k(i: i64) -> LockKey {
        (1, vec![Value::Int(i)].into_boxed_slice())
    }

    #[test]
    fn a_cycle_is_detected_and_the_requester_is_the_victim() {
        let lm = Arc::new(LockManager::default());
        lm.acquire(1, &k(1), &[], None).unwrap();
        lm.acquire(2, &k(2), &[], None).unwrap();
        let lm2 = lm.clone();
        let t = std::thread::spawn(move || lm2.acquire(1, &k(2), &[], None).map(|_| ()));
        // Let transaction 1 start waiting for 2.
        while lm.table.lock().waits_for.get(&1) != Some(&2) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let err = lm.acquire(2, &k(1), &[], None).err().expect("deadlock");
        assert!(matches!(err, EngineError::Deadlock { victim: 2, .. }));
        lm.release(2, [k(2)]);
        t.join().unwrap().unwrap();
    }

    #[test]
    fn timeouts_fire() {
        let lm = LockManager::default();
        lm.acquire(1, &k(1), &[], None).unwrap();
        let e = lm
            .acquire(2, &k(1), &[], Some(Duration::from_millis(20)))
            .err()
            .unwrap();
        assert!(matches!(e, EngineError::LockTimeout(_)));
    }
}
