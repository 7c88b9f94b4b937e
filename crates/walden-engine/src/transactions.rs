//! The transaction manager: what a database keeps to run transactions
//! beside each other (ids, the commit gate, locks, published commits and
//! snapshots, serializable bookkeeping, catalog changes not yet committed).

use crate::inflight::InFlight;
use crate::lock::LockManager;
use crate::mvcc::Visibility;
use crate::roles::RoleRecord;
use crate::ssi::Ssi;
use crate::txn::Revert;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Transactions {
    /// Published CSN and open snapshots (the catalog's, kept here to reach
    /// it without the catalog lock).
    pub(crate) vis: Arc<Visibility>,
    /// Commits between their first append and their publish (the online
    /// checkpoint's redo start).
    pub(crate) inflight: InFlight,
    /// Commits hold it shared from log append to apply; checkpoints and DDL
    /// take it exclusively to see a state that matches an LSN exactly.
    pub(crate) gate: RwLock<()>,
    /// Row, table and role locks of open transactions.
    pub(crate) locks: LockManager,
    /// How long a lock wait lasts before it fails (None: until granted).
    pub(crate) lock_timeout: Option<Duration>,
    /// SERIALIZABLE transactions' reads and commits (see `ssi.rs`).
    pub(crate) ssi: Ssi,
    pub(crate) next_txid: AtomicU64,
    /// Catalog entries changed by open transactions, as they were (see
    /// `txn/ddl.rs`), by transaction.
    pub(crate) uncommitted_ddl: Mutex<HashMap<u64, Vec<Revert>>>,
    /// The newest role catalog recovery found in a committed transaction of
    /// this database's log, until the instance looked at it.
    pub(crate) recovered_roles: Mutex<Option<RoleRecord>>,
}

impl Transactions {
    pub(crate) fn new(
        vis: Arc<Visibility>,
        next_txid: u64,
        lock_timeout: Option<Duration>,
    ) -> Self {
        Transactions {
            vis,
            inflight: InFlight::default(),
            gate: RwLock::new(()),
            locks: LockManager::default(),
            lock_timeout,
            ssi: Ssi::default(),
            next_txid: AtomicU64::new(next_txid),
            uncommitted_ddl: Mutex::default(),
            recovered_roles: Mutex::default(),
        }
    }
}
