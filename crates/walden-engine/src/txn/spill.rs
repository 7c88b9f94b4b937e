//! Logging as it goes: a transaction whose changes pass
//! `Limits::spill_transaction_bytes` appends them to the log as non-commit
//! parts while it runs, instead of all at COMMIT (where every commit after
//! it waited for those bytes to be written).
//!
//! The first part holds the whole write set so far; after it the keys
//! changed since the last part are noted (`Spill::dirty`) and logged, each
//! with its current entry, once they pass a part's worth. A key the write
//! set no longer holds (a `ROLLBACK TO` removed it, or DDL folded it into
//! its own record) is logged as [`Op::Forget`](crate::codec::Op): the
//! earlier parts' ops on it are void. The commit appends what is left and
//! then its commit record; a rollback appends an abort record. Recovery and
//! secondaries keep a transaction's parts until its commit record (where
//! the last op of each key wins) or its abort record; the transaction is
//! registered in flight (`inflight.rs`) from before its first part until
//! it ends, so no checkpoint's redo start passes its parts.

use super::commit::{End, Rows};
use super::Transaction;
use crate::codec::put_txn_abort;
use crate::error::Result;
use crate::types::Key;

/// Once a transaction logs as it goes: what changed since its last part.
#[derive(Default)]
pub(super) struct Spill {
    /// Keys changed since the last part (repeats allowed).
    pub(super) dirty: Vec<(u32, Key)>,
    /// Their estimated size (see `checks::write_bytes`).
    pub(super) dirty_bytes: u64,
}

/// A part's worth of changes, at most: logged once this much changed.
const PART_BYTES: u64 = 4 << 20;

impl Transaction {
    /// Whether the transaction has logged parts while it ran.
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Notes a key about to change, once the transaction logs as it goes.
    #[inline]
    pub(super) fn note_dirty(&mut self, key: &(u32, Key), bytes: u64) {
        if let Some(s) = self.spill.as_deref_mut() {
            s.dirty.push(key.clone());
            s.dirty_bytes += bytes;
        }
    }

    /// After a write: starts logging as it goes past the bound, and logs a
    /// part once enough changed.
    #[inline]
    pub(super) fn log_as_you_go(&mut self) -> Result<()> {
        let at = self.db.limits.spill_transaction_bytes;
        match &self.spill {
            Some(s) if s.dirty_bytes >= at.min(PART_BYTES) => self.log_dirty(),
            Some(_) => Ok(()),
            None if at > 0 && self.write_bytes > at => self.start_spill(),
            None => Ok(()),
        }
    }

    /// The first part: the whole write set so far.
    #[cold]
    fn start_spill(&mut self) -> Result<()> {
        self.db.check_writable()?;
        // Registered before the first append and kept until the transaction
        // ends (see `inflight.rs`).
        self.db.txns.inflight.open(self.txid, &self.db.log);
        self.spill = Some(Box::default());
        self.append_parts(Rows::All)
    }

    /// A part of the keys changed since the last one.
    #[cold]
    pub(super) fn log_dirty(&mut self) -> Result<()> {
        let Some(s) = self.spill.as_deref_mut() else {
            return Ok(());
        };
        let mut keys = std::mem::take(&mut s.dirty);
        s.dirty_bytes = 0;
        if keys.is_empty() {
            return Ok(());
        }
        keys.sort_unstable();
        keys.dedup();
        self.append_parts(Rows::Keys(&keys))
    }

    fn append_parts(&self, rows: Rows<'_>) -> Result<()> {
        let db = &self.db;
        let sinks = self.session.wait_sinks();
        self.encode_parts(End::Part, rows, &mut |p, _| {
            db.log.append(p, &sinks)?;
            Ok(())
        })
    }

    /// The transaction ends without its commit record: an abort record
    /// voids its parts (if it cannot be appended, the parts stay without a
    /// commit record, which recovery drops as well), and it leaves the
    /// in-flight registry.
    #[inline]
    pub(super) fn end_spill(&mut self, aborted: bool) {
        if self.spill.is_some() {
            self.end_spilled(aborted);
        }
    }

    #[cold]
    fn end_spilled(&mut self, aborted: bool) {
        self.spill = None;
        if aborted {
            let mut rec = Vec::with_capacity(12);
            put_txn_abort(&mut rec, self.txid);
            let _ = self.db.log.append(&rec, &self.session.wait_sinks());
        }
        self.db.txns.inflight.close(self.txid);
    }
}
