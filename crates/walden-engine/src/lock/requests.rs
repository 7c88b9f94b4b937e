//! The lock table as rows, for `pg_locks` and `sys.dm_tran_locks`: every
//! request held or queued, and whom a queued one waits for.

use super::{LockManager, LockMode, Mode, TableLockMode};
use crate::types::Key;
use std::time::SystemTime;

/// A lock's mode: a row's or a table's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestMode {
    Row(LockMode),
    Table(TableLockMode),
}

/// One request in the lock table.
#[derive(Clone, Debug)]
pub struct LockRequest {
    pub txid: u64,
    /// The table id (or [`crate::ROLE_CATALOG_LOCK`]).
    pub table: u32,
    /// The row's primary key; `None` for a table lock.
    pub key: Option<Key>,
    pub mode: RequestMode,
    pub granted: bool,
    /// A queued request: when it queued.
    pub wait_start: Option<SystemTime>,
    /// A queued request: the transactions it waits for (conflicting
    /// holders, then conflicting requests queued ahead of it), in that
    /// order.
    pub blocked_by: Vec<u64>,
}

impl From<Mode> for RequestMode {
    fn from(m: Mode) -> Self {
        match m {
            Mode::Row(m) => RequestMode::Row(m),
            Mode::Table(m) => RequestMode::Table(m),
        }
    }
}

impl LockManager {
    /// Every request held or queued, ordered by table, key and
    /// transaction (holders of a key before its queue, which is in order).
    pub fn requests(&self) -> Vec<LockRequest> {
        let t = self.table.lock();
        let mut out = Vec::new();
        let mut keys: Vec<_> = t.locks.keys().collect();
        keys.sort();
        for k in keys {
            let e = &t.locks[k];
            let key = (!k.1.is_empty()).then(|| k.1.clone());
            let mut holders = e.holders.to_vec();
            holders.sort_by_key(|h| h.0);
            for (txid, mode) in holders {
                out.push(LockRequest {
                    txid,
                    table: k.0,
                    key: key.clone(),
                    mode: mode.into(),
                    granted: true,
                    wait_start: None,
                    blocked_by: Vec::new(),
                });
            }
            for w in &e.queue {
                out.push(LockRequest {
                    txid: w.txid,
                    table: k.0,
                    key: key.clone(),
                    mode: w.mode.into(),
                    granted: false,
                    wait_start: Some(w.since),
                    blocked_by: t.edges(w.txid),
                });
            }
        }
        drop(t);
        // Fast-path table locks: holders, in table and transaction order
        // among the table's other holders (before its queue).
        let fast = self.fast.all();
        if !fast.is_empty() {
            out.extend(fast.into_iter().map(|(txid, table, m)| LockRequest {
                txid,
                table,
                key: None,
                mode: RequestMode::Table(m),
                granted: true,
                wait_start: None,
                blocked_by: Vec::new(),
            }));
            // Stable: a key's queue keeps its order.
            out.sort_by(|a, b| {
                (a.table, &a.key, !a.granted)
                    .cmp(&(b.table, &b.key, !b.granted))
                    .then_with(|| match a.granted && b.granted {
                        true => a.txid.cmp(&b.txid),
                        false => std::cmp::Ordering::Equal,
                    })
            });
        }
        out
    }
}
