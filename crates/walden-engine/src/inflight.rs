//! Commits in flight, for the checkpoint that runs beside them.
//!
//! A checkpoint reads the tables at a snapshot (CSN `S`) while commits go
//! on. Recovery must then redo every commit the snapshot does not hold: each
//! commit registers a lower bound of its first record's LSN before it
//! appends anything, and leaves after it is published. A large transaction
//! that logs its changes as it goes (`txn/spill.rs`) registers before its
//! first part and stays until it ends, so the segments of its parts outlive
//! every checkpoint taken while it runs. The checkpoint's redo
//! start is the lowest registered bound, or the log's end when none is
//! registered, read together with `S` (under the publish lock, so no commit
//! publishes in between, and under the registry's lock, so none registers
//! and appends in between). Commits the snapshot holds that redo meets again
//! are harmless: redo records are whole rows applied in log order, and two
//! commits of one key are in the log in the order they became visible.

use crate::mvcc::{Snapshot, Visibility};
use foldhash::HashMap;
use parking_lot::Mutex;
use std::sync::Arc;
use walden_log::{LogManager, Lsn};

#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// Transaction id -> an LSN at or below its first record's.
    commits: Mutex<HashMap<u64, Lsn>>,
}

/// What the checkpoint captured: the snapshot it reads, where redo must
/// start so that recovery gets every commit the snapshot lacks, and the log
/// end (everything the snapshot holds is below it).
pub(crate) struct Capture {
    pub snapshot: Snapshot,
    pub redo_start: Lsn,
    pub log_end: Lsn,
}

impl InFlight {
    /// Registers a commit about to append; it stays registered until the
    /// guard is dropped (after its publish, or on failure).
    pub fn enter<'a>(&'a self, txid: u64, log: &LogManager) -> Entered<'a> {
        self.open(txid, log);
        Entered { reg: self, txid }
    }

    /// Registers a transaction about to append its first part while it
    /// runs (`txn/spill.rs`), until [`InFlight::close`]; a later
    /// [`InFlight::enter`] of its commit keeps the earlier bound.
    pub fn open(&self, txid: u64, log: &LogManager) {
        let mut m = self.commits.lock();
        // Read under the lock: a capture holding it sees either this entry
        // or a log end at or below this transaction's records.
        m.entry(txid).or_insert_with(|| log.end_lsn());
    }

    /// The transaction appends no more (it committed and was published, or
    /// it ended otherwise).
    pub fn close(&self, txid: u64) {
        self.commits.lock().remove(&txid);
    }

    /// Captures a snapshot with its redo start (see the module comment),
    /// running `at_capture` at the same instant (no commit publishes
    /// between the two).
    pub fn capture(
        &self,
        vis: &Arc<Visibility>,
        log: &LogManager,
        at_capture: impl FnOnce(),
    ) -> Capture {
        let _publish = vis.hold_publish();
        at_capture();
        let m = self.commits.lock();
        let snapshot = vis.snapshot();
        let log_end = log.end_lsn();
        let redo_start = m.values().copied().min().unwrap_or(log_end).min(log_end);
        Capture {
            snapshot,
            redo_start,
            log_end,
        }
    }
}

pub(crate) struct Entered<'a> {
    reg: &'a InFlight,
    txid: u64,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.reg.close(self.txid);
    }
}
