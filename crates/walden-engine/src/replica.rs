//! A database's part in an availability group: its role, the hook through
//! which a primary's durable commits wait for synchronous secondaries, and
//! the live redo of a secondary (log records from the primary appended to the
//! local log with the same LSNs, hardened, then applied to the live tables).
//!
//! Shipping, acknowledgements and failover live in `walden-replication`; the
//! engine only knows the rules a database must keep.

use crate::database::Database;
use crate::error::{EngineError, Result};
use crate::recovery::{apply_record, Pending, RedoTarget};
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::Duration;
use walden_log::{Lsn, WaitSinks};

/// What a primary's durable commit waits on after its local harden.
/// Implemented by the replication layer.
pub trait RemoteHarden: Send + Sync {
    /// Blocks until every synchronous secondary that counts has hardened the
    /// log through `lsn` (recording HADR_SYNC_COMMIT in `waits`). An error
    /// means a required secondary did not confirm in time.
    /// Returns whether any secondary had to confirm the commit.
    fn wait(&self, lsn: Lsn, waits: WaitSinks<'_>) -> std::result::Result<bool, String>;
    /// Whether a commit could be confirmed now; checked before a commit is
    /// logged so that it fails without side effects when it cannot.
    fn check_quorum(&self) -> std::result::Result<(), String>;
    /// A delayed-durable commit at `lsn`, about to be acknowledged: blocks
    /// while acknowledging it would leave a bounded-lag asynchronous
    /// secondary beyond its bound (HADR_LAG_BOUND). Durable commits get the
    /// same check inside [`RemoteHarden::wait`].
    fn wait_lag_bound(&self, _lsn: Lsn, _waits: WaitSinks<'_>) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// Availability-group counters of a database (`sys.dm_os_performance_counters`,
/// object "Database Replica").
#[derive(Debug, Default)]
pub struct ReplicaCounters {
    /// Durable commits that waited for a synchronous secondary.
    pub mirrored_write_transactions: AtomicU64,
    /// Total time commits spent waiting for synchronous secondaries (µs).
    pub transaction_delay_us: AtomicU64,
    /// Log bytes received from the primary (on a secondary).
    pub log_bytes_received: AtomicU64,
    /// Redo records applied (on a secondary).
    pub redo_records: AtomicU64,
}

pub(crate) struct ReplicaState {
    secondary: AtomicBool,
    remote: RwLock<Option<Arc<dyn RemoteHarden>>>,
    has_remote: AtomicBool,
    /// Bumped whenever the hook is installed or removed (a promotion, a
    /// demotion): a commit confirmed under one primary term cannot be
    /// confirmed under another.
    term: AtomicU64,
    /// Secondary: parts of transactions whose commit has not arrived.
    pending: Mutex<Pending>,
    /// Secondary: redo has been applied through this LSN.
    applied: AtomicU64,
    pub counters: ReplicaCounters,
    /// Primary: the oldest LSN a secondary still needs (`u64::MAX`: none).
    retain: AtomicU64,
    /// Replaced in its instance by a fresh copy (a secondary seeded again):
    /// sessions holding this one must switch to the new one.
    superseded: AtomicBool,
}

impl ReplicaState {
    pub(crate) fn new(secondary: bool, pending: Pending, end_lsn: Lsn) -> Self {
        ReplicaState {
            secondary: AtomicBool::new(secondary),
            remote: RwLock::new(None),
            has_remote: AtomicBool::new(false),
            term: AtomicU64::new(0),
            // A primary drops unfinished transactions at recovery; a
            // secondary keeps them: their commit may still come.
            pending: Mutex::new(if secondary { pending } else { Pending::new() }),
            applied: AtomicU64::new(end_lsn),
            counters: ReplicaCounters::default(),
            retain: AtomicU64::new(u64::MAX),
            superseded: AtomicBool::new(false),
        }
    }
}

/// What a commit must satisfy before it is acknowledged, taken when its
/// quorum is checked (before it is logged) and kept to the end: the hook is
/// removed when the database is demoted, and a commit logged under a hook
/// must still wait on that hook (which then fails it) rather than find none
/// and be acknowledged without its secondaries.
pub(crate) struct RemoteTicket {
    hook: Option<Arc<dyn RemoteHarden>>,
    term: u64,
}

impl Database {
    /// Whether this database is a secondary replica (read-only).
    pub fn is_secondary(&self) -> bool {
        self.replica.secondary.load(Acquire)
    }

    /// Whether the instance replaced this database with a fresh copy (a
    /// secondary seeded from its primary): look it up again by name.
    pub fn is_superseded(&self) -> bool {
        self.replica.superseded.load(Acquire)
    }

    pub(crate) fn mark_superseded(&self) {
        self.replica.superseded.store(true, Release);
    }

    pub fn replica_counters(&self) -> &ReplicaCounters {
        &self.replica.counters
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.is_secondary() {
            return Err(EngineError::ReadOnlyReplica(self.name.clone()));
        }
        Ok(())
    }

    /// Installs (or removes) the hook durable commits wait on.
    pub fn set_remote_harden(&self, hook: Option<Arc<dyn RemoteHarden>>) {
        let mut r = self.replica.remote.write();
        self.replica.term.fetch_add(1, AcqRel);
        self.replica.has_remote.store(hook.is_some(), Release);
        *r = hook;
    }

    /// The hook a commit starting now must satisfy, and the term it belongs to.
    pub(crate) fn remote_ticket(&self) -> RemoteTicket {
        let term = self.replica.term.load(Acquire);
        let hook = if self.replica.has_remote.load(Acquire) {
            self.replica.remote.read().clone()
        } else {
            None
        };
        RemoteTicket { hook, term }
    }

    /// The ticket's hook, if it may still confirm a commit: `Err` when this
    /// database stopped being the primary the commit was logged under (its
    /// log may be discarded by the new primary).
    fn ticket_hook<'t>(
        &self,
        ticket: &'t RemoteTicket,
    ) -> Result<Option<&'t Arc<dyn RemoteHarden>>> {
        let moved = match &ticket.hook {
            Some(_) => self.replica.term.load(Acquire) != ticket.term,
            None => false,
        };
        if moved || self.is_secondary() {
            return Err(EngineError::ReplicaCommit(
                "the commit is hardened on this replica, but it stopped being the primary \
                 before the commit could be confirmed"
                    .into(),
            ));
        }
        Ok(ticket.hook.as_ref())
    }

    /// Before a commit is logged: whether it could be confirmed now. The
    /// ticket goes with the commit to [`Database::harden_remote`].
    pub(crate) fn check_commit_quorum(&self) -> Result<RemoteTicket> {
        let ticket = self.remote_ticket();
        if let Some(r) = &ticket.hook {
            r.check_quorum().map_err(EngineError::ReplicaQuorum)?;
        }
        Ok(ticket)
    }

    /// After a durable commit's local harden: waits for the synchronous
    /// secondaries (HADR_SYNC_COMMIT) of the primary it was logged under.
    pub(crate) fn harden_remote(
        &self,
        ticket: &RemoteTicket,
        lsn: Lsn,
        waits: WaitSinks<'_>,
    ) -> Result<()> {
        let Some(r) = self.ticket_hook(ticket)? else {
            return Ok(());
        };
        let t0 = std::time::Instant::now();
        let res = r.wait(lsn, waits);
        if matches!(res, Ok(true)) {
            let c = &self.replica.counters;
            c.mirrored_write_transactions.fetch_add(1, Relaxed);
            c.transaction_delay_us
                .fetch_add(t0.elapsed().as_micros() as u64, Relaxed);
        }
        res.map(|_| ()).map_err(|e| {
            EngineError::ReplicaCommit(format!(
                "the commit is hardened on the primary but was not confirmed by the \
                 synchronous secondaries it requires: {e}"
            ))
        })
    }

    /// Before a delayed-durable commit is acknowledged: the lag bound of
    /// bounded asynchronous secondaries (its own local bound, the delayed
    /// flush, holds besides).
    pub(crate) fn lag_bound_delayed(
        &self,
        ticket: &RemoteTicket,
        lsn: Lsn,
        waits: WaitSinks<'_>,
    ) -> Result<()> {
        let Some(r) = self.ticket_hook(ticket)? else {
            return Ok(());
        };
        r.wait_lag_bound(lsn, waits).map_err(|e| {
            EngineError::ReplicaCommit(format!(
                "the delayed-durable commit is made on the primary but was not acknowledged within the lag bound of its asynchronous secondaries: {e}"
            ))
        })
    }

    /// Primary: keep the log from `lsn` on for a secondary that still needs
    /// it (`None`: no secondary holds log back).
    pub fn set_replica_retention(&self, lsn: Option<Lsn>) {
        self.replica.retain.store(lsn.unwrap_or(u64::MAX), Release);
    }

    pub(crate) fn replica_retention(&self) -> Lsn {
        self.replica.retain.load(Acquire)
    }

    /// Secondary: redo has been applied through this LSN.
    pub fn applied_lsn(&self) -> Lsn {
        if self.is_secondary() {
            self.replica.applied.load(Acquire)
        } else {
            self.log.end_lsn()
        }
    }

    /// Secondary: appends whole framed records (`u32` length, then the
    /// record, as in the log's record stream) that the primary wrote starting
    /// at `lsn`, which must be where the local log ends. Returns the new end.
    pub fn replica_append(&self, lsn: Lsn, frames: &[u8]) -> Result<Lsn> {
        if !self.is_secondary() {
            return Err(EngineError::Replica(format!(
                "database \"{}\" is not a secondary replica",
                self.name
            )));
        }
        let _gate = self.txns.gate.read();
        let end = self.log.end_lsn();
        if end != lsn {
            return Err(EngineError::Replica(format!(
                "log block for LSN {lsn} does not continue the local log, which ends at {end}"
            )));
        }
        let mut end = end;
        for rec in frames_of(frames)? {
            end = self.log.append(rec, &[])?;
        }
        self.replica
            .counters
            .log_bytes_received
            .fetch_add(frames.len() as u64, Relaxed);
        Ok(end)
    }

    /// Secondary: applies framed records starting at `lsn` (already appended
    /// and hardened) to the live tables.
    pub fn replica_redo(&self, lsn: Lsn, frames: &[u8]) -> Result<()> {
        let _gate = self.txns.gate.read();
        let mut pending = self.replica.pending.lock();
        let mut cat = self.catalog.write();
        let mut settings = self.settings.write();
        let mut backup = self.backup.lock();
        let mut next_txid = self.txns.next_txid.load(Relaxed);
        // The primary's role changes are its instance's: a secondary's
        // instance keeps its own roles (`instance/roles_txn.rs`).
        let mut primary_roles = None;
        let mut end = lsn;
        let mut n = 0;
        let mut ddl = false;
        for rec in frames_of(frames)? {
            // A catalog change (alone or in a transaction): cached plans
            // made before it must not be reused.
            ddl |= apply_record(
                &mut pending,
                RedoTarget {
                    catalog: &mut cat,
                    settings: &mut settings,
                    backup: &mut backup,
                    next_txid: &mut next_txid,
                    roles: &mut primary_roles,
                },
                rec,
            )?;
            end += 4 + rec.len() as u64;
            n += 1;
        }
        if ddl {
            self.catalog_version.fetch_add(1, Release);
        }
        self.txns.next_txid.fetch_max(next_txid, Relaxed);
        self.replica.applied.store(end, Release);
        self.replica.counters.redo_records.fetch_add(n, Relaxed);
        Ok(())
    }

    /// Secondary: a consistent checkpoint is only possible between
    /// transactions; `None` while a transaction's parts wait for its commit.
    pub(crate) fn replica_checkpoint_lsn(&self) -> Option<Lsn> {
        if !self.replica.pending.lock().is_empty() {
            return None;
        }
        Some(self.replica.applied.load(Acquire))
    }

    /// Makes a secondary the primary. Every record received must have been
    /// applied; transactions whose commit never came are dropped (their
    /// primary is gone, so they never committed).
    pub fn promote(&self) -> Result<Lsn> {
        let _gate = self.txns.gate.write();
        let end = self.log.end_lsn();
        let applied = self.replica.applied.load(Acquire);
        if self.is_secondary() && applied != end {
            return Err(EngineError::Replica(format!(
                "redo has not caught up (applied through {applied}, log ends at {end})"
            )));
        }
        let dropped = std::mem::take(&mut *self.replica.pending.lock());
        if !dropped.is_empty() {
            tracing::warn!(
                database = %self.name,
                transactions = dropped.len(),
                "dropping unfinished transactions of the old primary"
            );
        }
        self.replica.secondary.store(false, Release);
        Ok(end)
    }

    /// Makes a primary a secondary (its log must be a prefix of the new
    /// primary's; the replication layer checks that first).
    pub fn demote(&self) {
        let _gate = self.txns.gate.write();
        self.set_remote_harden(None);
        self.replica.applied.store(self.log.end_lsn(), Release);
        self.replica.secondary.store(true, Release);
    }

    /// Streams an image of the database to seed a secondary: read at one
    /// snapshot taken beside commits (no lock held across the copy), after
    /// the log is hardened through the snapshot's end. `begin` gets the
    /// LSN the secondary's log continues at before the first byte; `emit`
    /// gets the image (see `image_stream.rs`) in pieces of at most `chunk`
    /// bytes. Returns that LSN and the image's size.
    pub fn seed_stream(
        &self,
        chunk: usize,
        begin: &mut dyn FnMut(Lsn) -> Result<()>,
        emit: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<(Lsn, u64)> {
        if self.is_secondary() {
            return Err(EngineError::Replica(format!(
                "database \"{}\" is a secondary replica; only its primary seeds",
                self.name
            )));
        }
        self.stream_image(chunk, &[], begin, emit)
    }
}

/// Waits (up to `timeout`) until `f` holds, polling; for tests and tools.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    loop {
        if f() {
            return true;
        }
        if t0.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Splits a record stream into records.
pub fn frames_of(mut buf: &[u8]) -> Result<Vec<&[u8]>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        if buf.len() < 4 {
            return Err(EngineError::Replica("truncated record frame".into()));
        }
        let n = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
        if buf.len() < 4 + n {
            return Err(EngineError::Replica("truncated record".into()));
        }
        out.push(&buf[4..4 + n]);
        buf = &buf[4 + n..];
    }
    Ok(out)
}
