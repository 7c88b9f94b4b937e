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
//! and appends in between).
//!
//! The capture also notes its commit floor: the lowest bound registered by
//! a commit in progress (taken when it enters its commit, not at its first
//! part), or the log's end. A commit record that ends at or below the floor
//! belongs to a commit that had left the registry, so published, before
//! the capture: the snapshot holds it and recovery skips it. Without the
//! floor, a large transaction's first part would start redo below DDL that
//! committed while it ran, and recovery would apply that DDL a second time
//! to a catalog that already has it (dropping a column twice, adding an
//! index twice, rewriting rows already rewritten). Commits at or above the
//! floor that the snapshot also holds are harmless: they are row changes
//! only (a DDL commit's last part is appended under the exclusive gate, so
//! none can follow the registration of a commit still in progress, which
//! holds the gate shared, nor run beside a capture, which does too), and
//! redo records are whole rows applied in log order, two commits of one
//! key in the order they became visible.

use crate::mvcc::{Snapshot, Visibility};
use foldhash::HashMap;
use parking_lot::Mutex;
use std::sync::Arc;
use walden_log::{LogManager, Lsn};

#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// Transaction id -> where its records start, and where its commit
    /// started appending once it has entered its commit.
    commits: Mutex<HashMap<u64, Entry>>,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// At or below its first record (a part logged as it went, or its
    /// commit's first record).
    start: Lsn,
    /// At or below its commit's first record, once the commit has begun.
    commit: Option<Lsn>,
}

/// What the checkpoint captured: the snapshot it reads, where redo must
/// start so that recovery gets every commit the snapshot lacks, and the log
/// end (everything the snapshot holds is below it).
pub(crate) struct Capture {
    pub snapshot: Snapshot,
    pub redo_start: Lsn,
    /// Commit records ending at or below it are in the snapshot (see the
    /// module comment).
    pub commit_floor: Lsn,
    pub log_end: Lsn,
}

impl InFlight {
    /// Registers a commit about to append; it stays registered until the
    /// guard is dropped (after its publish, or on failure).
    pub fn enter<'a>(&'a self, txid: u64, log: &LogManager) -> Entered<'a> {
        let mut m = self.commits.lock();
        let end = log.end_lsn();
        m.entry(txid)
            .and_modify(|e| e.commit = Some(end))
            .or_insert(Entry {
                start: end,
                commit: Some(end),
            });
        drop(m);
        Entered { reg: self, txid }
    }

    /// Registers a transaction about to append its first part while it
    /// runs (`txn/spill.rs`), until [`InFlight::close`]; a later
    /// [`InFlight::enter`] of its commit keeps the earlier bound.
    pub fn open(&self, txid: u64, log: &LogManager) {
        let mut m = self.commits.lock();
        // Read under the lock: a capture holding it sees either this entry
        // or a log end at or below this transaction's records.
        m.entry(txid).or_insert_with(|| Entry {
            start: log.end_lsn(),
            commit: None,
        });
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
        let redo_start = m
            .values()
            .map(|e| e.start)
            .min()
            .unwrap_or(log_end)
            .min(log_end);
        let commit_floor = m
            .values()
            .filter_map(|e| e.commit)
            .min()
            .unwrap_or(log_end)
            .min(log_end);
        Capture {
            snapshot,
            redo_start,
            commit_floor,
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
