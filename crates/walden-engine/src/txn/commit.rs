//! Ending a transaction: its redo, commit (durable or delayed), rollback and lock release.

use super::{CommitOutcome, Transaction};
use crate::codec::{encode_redo, put_op_roles, Redo};
use crate::codec::{put_op_ddl, put_op_delete, put_op_forget, put_op_put, put_txn_header};
use crate::error::{EngineError, Result};
use crate::roles::RoleRecord;
use crate::schema::DelayedDurability;
use crate::session::CommitRequest;
use crate::types::{Key, Row};
use std::sync::atomic::Ordering::Relaxed;

impl Transaction {
    /// The DDL records for the commit record, in statement order; a
    /// sequence created here carries its reservation too, and a table
    /// created or altered here its identity counter, after all the DDL: a
    /// `setval` made before the commit was logged when the table did not
    /// exist yet for recovery (or a secondary), or had another shape, so
    /// the commit must carry where the counter stands.
    fn ddl_records(&self) -> Vec<Vec<u8>> {
        if !self.has_ddl() {
            return Vec::new();
        }
        let cat = self.db.catalog.read();
        let mut out = Vec::new();
        let mut counters: Vec<u32> = Vec::new();
        for step in self.ddl.lock().iter() {
            out.push(encode_redo(&step.redo));
            match &step.redo {
                Redo::CreateSequence(def) | Redo::AlterSequence { def, .. } => {
                    if let Some(s) = cat.sequences.values().find(|s| s.def.id == def.id) {
                        let upto = s.state.lock().reserved;
                        out.push(encode_redo(&Redo::SeqReserve { id: def.id, upto }));
                    }
                }
                Redo::CreateTable(def) if !counters.contains(&def.id) => counters.push(def.id),
                Redo::AlterTable { table, .. } if !counters.contains(table) => {
                    counters.push(*table)
                }
                _ => {}
            }
        }
        for id in counters {
            if let Some(t) = cat.table_by_id(id) {
                if t.def.identity_column().is_some() {
                    out.push(encode_redo(&Redo::IdentitySet {
                        table: id,
                        next: t.next_identity.load(std::sync::atomic::Ordering::Relaxed),
                    }));
                }
            }
        }
        out
    }

    /// Whether this commit will be delayed, given the database setting.
    fn resolve(&self, request: CommitRequest) -> bool {
        let wants = match request {
            CommitRequest::Delayed => true,
            CommitRequest::Durable => false,
            CommitRequest::Default => self.session.delayed_default(),
        };
        match self.db.settings.read().delayed_durability {
            DelayedDurability::Disabled => false,
            DelayedDurability::Allowed => wants,
            DelayedDurability::Forced => true,
        }
    }

    /// Encodes the write set's rows (all, or these keys' entries) as one
    /// or more redo records, handing each to `emit` as it fills (with
    /// whether it is the last): a large transaction's redo is never whole in
    /// memory beside its write set. At [`End::Commit`] the DDL records (and
    /// the role catalog the commit installs, if any) come first and the
    /// last record carries the commit flag; at [`End::Part`] (logging as it
    /// goes, `spill.rs`) there are only rows, and no record when there are
    /// none.
    // Inlined: in a small commit's path it was part of `commit`, and a
    // call of its own cost ~60 instructions a commit (callgrind).
    #[inline(always)]
    pub(super) fn encode_parts(
        &self,
        end: End<'_>,
        rows: Rows<'_>,
        emit: &mut dyn FnMut(&[u8], bool) -> Result<()>,
    ) -> Result<()> {
        let commit = matches!(end, End::Commit(_));
        let ddl = if commit {
            self.ddl_records()
        } else {
            Vec::new()
        };
        let mut rec = Vec::new();
        let mut body = Vec::with_capacity(64);
        let mut n = 0;
        if let End::Commit(Some(r)) = end {
            put_op_roles(&mut body, r);
            n += 1;
        }
        // Catalog changes first: recovery applies them before the rows,
        // which may be of a table created or changed here.
        for r in &ddl {
            put_op_ddl(&mut body, r);
            n += 1;
        }
        let mut part = |body: &mut Vec<u8>, n: &mut usize, commit: bool| {
            rec.clear();
            put_txn_header(&mut rec, self.txid, commit, *n);
            rec.extend_from_slice(body);
            body.clear();
            *n = 0;
            emit(&rec, commit)
        };
        // With DDL in the record, keys are always written: the table may
        // not exist yet when recovery decodes it. So they are in parts
        // logged as the transaction goes: recovery decodes them before
        // the commit record's DDL.
        let always_keys = !ddl.is_empty() || self.spill.is_some();
        // The write set is ordered by table: one catalog look-up per table,
        // not a catalog lock held across the appends.
        let mut hidden_of = None;
        match rows {
            Rows::All => {
                for ((tid, key), w) in &self.writes {
                    self.put_op(&mut body, *tid, key, Some(w), always_keys, &mut hidden_of);
                    n += 1;
                    if body.len() >= MAX_PART {
                        part(&mut body, &mut n, false)?;
                    }
                }
            }
            Rows::Keys(keys) => {
                for k in keys {
                    let moved;
                    let w = match self.writes.get(k) {
                        Some(w) => Some(w),
                        None if !self.layers.lock().is_empty() => {
                            moved = self.moved_row(k)?;
                            moved.as_ref()
                        }
                        None => None,
                    };
                    self.put_op(&mut body, k.0, &k.1, w, always_keys, &mut hidden_of);
                    n += 1;
                    if body.len() >= MAX_PART {
                        part(&mut body, &mut n, false)?;
                    }
                }
            }
        }
        if commit || n > 0 {
            part(&mut body, &mut n, commit)?;
        }
        Ok(())
    }

    /// One write-set entry as an op (`None`: the write set lacks the key,
    /// a forget op). `hidden_of` caches the last table's answer to whether
    /// its rows lack their key.
    #[inline(always)]
    fn put_op(
        &self,
        body: &mut Vec<u8>,
        tid: u32,
        key: &Key,
        w: Option<&Option<Row>>,
        always_keys: bool,
        hidden_of: &mut Option<(u32, bool)>,
    ) {
        match w {
            Some(Some(row)) => {
                let hidden = always_keys
                    || match *hidden_of {
                        Some((t, h)) if t == tid => h,
                        _ => {
                            let h = self
                                .db
                                .catalog
                                .read()
                                .table_by_id(tid)
                                .is_none_or(|t| t.has_hidden_key());
                            *hidden_of = Some((tid, h));
                            h
                        }
                    };
                put_op_put(body, tid, hidden.then_some(&key[..]), row)
            }
            Some(None) => put_op_delete(body, tid, key),
            None => put_op_forget(body, tid, key),
        }
    }

    /// Commits. The database's `DELAYED_DURABILITY` and `request` decide
    /// whether the commit waits for its log to be hardened.
    pub fn commit(mut self, request: CommitRequest) -> Result<CommitOutcome> {
        self.check_open()?;
        // Rows of tables in spill files: the rest join them (logged
        // first), so the install has none of theirs to place in memory.
        self.move_layered_rest()?;
        // SERIALIZABLE: the commit test; a failure rolls back (on drop).
        let ssi_seq = match &self.ssi {
            Some(s) => {
                let writes = self.ssi_writes()?;
                let seq = self.db.txns.ssi.precommit(s, writes)?;
                self.ssi = None;
                Some(seq)
            }
            None => None,
        };
        self.finished = true;
        self.snapshot = None;
        // Role changes (`instance/roles_txn.rs`) travel in the
        // transaction's log record and are written to the role file after
        // it, before the commit returns.
        let mut roles = self.roles.take().filter(|r| r.changed());
        let ddl = self.has_ddl();
        if self.writes.is_empty() && !ddl {
            let installed = roles.map_or(Ok(()), |r| r.install());
            self.release();
            installed?;
            return Ok(CommitOutcome {
                lsn: None,
                durable: true,
            });
        }
        // DDL is always durable, and so are rows committed with role
        // changes (which are).
        let delayed = !ddl && roles.is_none() && self.resolve(request);
        let role_record = roles.as_ref().map(|r| r.record());
        let session = self.session.clone();
        let sinks = session.wait_sinks();
        let db = self.db.clone();
        let dirty = self.spill.as_deref_mut().map(|s| {
            let mut keys = std::mem::take(&mut s.dirty);
            keys.sort_unstable();
            keys.dedup();
            keys
        });
        let result = (|| {
            // A commit with DDL holds the gate exclusively from its last
            // part (the one with the commit flag) until it is applied, as
            // the statements did: a checkpoint or backup capture sees the
            // catalog either before or after it, never in between. Its
            // earlier parts (a bulk load's rows) go in under the shared
            // gate, so other commits and checkpoints go on beside them: to
            // a capture they are an open transaction's, its catalog
            // changes still uncommitted (`image_catalog`), and its redo
            // start is at or below them (`inflight.rs`). A commit with
            // role changes holds it exclusively throughout, since the role
            // file is written under it.
            let (mut shared, mut exclusive) = if roles.is_some() {
                (None, Some(db.txns.gate.write()))
            } else {
                (Some(db.txns.gate.read()), None)
            };
            {
                let cat = db.catalog.read();
                // A table dropped since the change was made cannot take it.
                if let Some(((tid, _), _)) = self
                    .writes
                    .iter()
                    .find(|((tid, _), _)| cat.table_by_id(*tid).is_none())
                {
                    return Err(EngineError::UnknownTable(format!(
                        "(table id {tid}, dropped)"
                    )));
                }
                self.check_definitions(&cat)?;
                self.check_foreign_keys(&cat)?;
            }
            db.check_writable()?;
            let ticket = if delayed {
                db.remote_ticket()
            } else {
                db.check_commit_quorum()?
            };
            // Registered before the first append (or, logging as it went,
            // before its first part), gone after the publish.
            let _inflight = db.txns.inflight.enter(self.txid, &db.log);
            let mut lsn = 0;
            // Logging as it went, only the keys changed since its last part
            // are left to log.
            let rows = match &dirty {
                Some(keys) => Rows::Keys(keys),
                None => Rows::All,
            };
            self.encode_parts(End::Commit(role_record.as_ref()), rows, &mut |p, last| {
                if last && ddl && exclusive.is_none() {
                    drop(shared.take());
                    exclusive = Some(db.txns.gate.write());
                }
                lsn = db.log.append(p, &sinks)?;
                Ok(())
            })?;
            let hardened = if delayed {
                db.log.acknowledge_delayed(lsn, &sinks)
            } else {
                db.log.wait_hardened(lsn, &sinks)
            };
            if let Err(source) = hardened {
                // The outcome is unknown: the catalog keeps the changes
                // (recovery will apply them if the record survived).
                db.txns.uncommitted_ddl.lock().remove(&self.txid);
                self.ddl.lock().clear();
                return Err(EngineError::CommitOutcomeUnknown { lsn, source });
            }
            if let Some(r) = &roles {
                r.crash_point();
            }
            let applied = self.apply();
            if ddl {
                db.txns.uncommitted_ddl.lock().remove(&self.txid);
                self.ddl.lock().clear();
                // Others' plans made from the catalog without this
                // transaction's changes are stale now.
                db.catalog_version
                    .fetch_add(1, std::sync::atomic::Ordering::Release);
            }
            applied.map_err(|e| {
                // The log holds the commit and memory does not: no later
                // commit may build on that. Recovery applies it at restart.
                db.log
                    .poison(format!("commit at LSN {lsn} could not be applied: {e}"));
                EngineError::ApplyFailed {
                    lsn,
                    source: Box::new(e),
                }
            })?;
            if let (Some(r), Some(rec)) = (roles.take(), &role_record) {
                r.install_logged(rec).map_err(|e| {
                    // The commit stands (the roles are installed in memory);
                    // the record must reach the file through recovery, so
                    // no checkpoint may drop it first.
                    db.log.poison(format!(
                        "role catalog of the commit at LSN {lsn} could not be written: {e}"
                    ));
                    EngineError::ApplyFailed {
                        lsn,
                        source: Box::new(e),
                    }
                })?;
            }
            Ok((lsn, ticket))
        })();
        // A commit that failed before its record was appended undoes its
        // catalog changes, as a rollback.
        if result.is_err() {
            self.undo_ddl(0);
            self.drop_layers();
        }
        // Its parts logged as it went: void unless the commit stands (an
        // abort record after a commit record that did reach the log voids
        // nothing: the commit took its parts).
        self.end_spill(result.is_err());
        self.release();
        if let Some(seq) = ssi_seq {
            match &result {
                Ok(_) => db.txns.ssi.published(seq),
                Err(_) => db.txns.ssi.failed(seq),
            }
        }
        // Synchronous secondaries are waited for outside the gate and the row
        // locks, as PostgreSQL waits for its standbys: the commit is applied
        // locally already, and a later commit that saw it waits for a higher
        // LSN anyway.
        let (lsn, ticket) = result?;
        if delayed {
            db.lag_bound_delayed(&ticket, lsn, &sinks)?;
        } else {
            db.harden_remote(&ticket, lsn, &sinks)?;
        }
        db.counters.write_transactions.fetch_add(1, Relaxed);
        if delayed {
            db.counters.delayed_commits.fetch_add(1, Relaxed);
        } else {
            db.counters.durable_commits.fetch_add(1, Relaxed);
        }
        Ok(CommitOutcome {
            lsn: Some(lsn),
            durable: !delayed,
        })
    }

    /// Installs the write set as new versions under one CSN, published
    /// once every table has them.
    fn apply(&mut self) -> Result<()> {
        let layers = std::mem::take(self.layers.get_mut());
        let cat = self.db.catalog.read();
        let writes = std::mem::take(&mut self.writes);
        let publish = self.db.txns.vis.begin_publish();
        // Most commits write one table: no allocation for the list.
        let mut batches: smallvec::SmallVec<[_; 1]> = smallvec::SmallVec::new();
        let mut it = writes.into_iter().peekable();
        while let Some(((tid, key), w)) = it.next() {
            let mut batch = vec![(key, w)];
            while let Some(((next, _), _)) = it.peek() {
                if *next != tid {
                    break;
                }
                let Some(((_, k), w)) = it.next() else { break };
                batch.push((k, w));
            }
            if let Some(t) = cat.table_by_id(tid) {
                batches.push((t, batch));
            }
        }
        // Every store read before the first change: a failure installs
        // nothing (and publishes an empty CSN).
        let priors = batches
            .iter()
            .map(|(t, b)| t.priors(b))
            .collect::<Result<smallvec::SmallVec<[_; 1]>>>()?;
        // Rows in spill files: their tables read them from now on, at this
        // CSN and later.
        super::spill::install_layers(&self.db, layers, &cat, publish.csn);
        let replaced = std::mem::take(&mut self.replaced);
        for ((t, batch), priors) in batches.into_iter().zip(priors) {
            let marks: Vec<Key> = if replaced.is_empty() {
                Vec::new()
            } else {
                batch
                    .iter()
                    .filter(|(k, w)| w.is_some() && replaced.contains(&(t.id(), k.clone())))
                    .map(|(k, _)| k.clone())
                    .collect()
            };
            t.install(batch, priors, publish.csn, publish.horizon);
            if !marks.is_empty() {
                t.rows.mark_replaced(&marks, publish.csn);
            }
        }
        Ok(())
    }

    /// Discards the transaction's changes.
    pub fn rollback(mut self) {
        self.finish_rollback();
    }

    fn finish_rollback(&mut self) {
        if !self.finished {
            self.finished = true;
            self.writes.clear();
            self.own_unique.clear();
            self.savepoints.clear();
            self.snapshot = None;
            self.undo_ddl(0);
            // Role changes are dropped and the role lock released.
            self.roles = None;
            self.end_spill(true);
            self.drop_layers();
            if let Some(s) = self.ssi.take() {
                self.db.txns.ssi.abort(s.txid());
            }
            self.release();
            self.db.counters.rollbacks.fetch_add(1, Relaxed);
        }
    }

    pub(super) fn release(&mut self) {
        // Fast-path table locks are dropped in their partitions (see
        // `lock/fast.rs`); row locks and the other table locks in one
        // call: one hold of the lock table for a small transaction.
        let rows = std::mem::take(&mut self.locks);
        let tables = std::mem::take(&mut *self.table_locks.lock());
        let locks = &self.db.txns.locks;
        let txid = self.txid;
        let mut main = tables
            .into_held()
            .filter(|&(id, path)| !locks.release_fast(txid, id, path))
            .peekable();
        if !rows.is_empty() || main.peek().is_some() {
            locks.release(
                txid,
                rows.into_iter()
                    .chain(main.map(|(id, _)| crate::lock::table_lock_key(id))),
            );
        }
    }
}

/// How a run of redo parts ends.
pub(super) enum End<'a> {
    /// With the commit record (and the role catalog it installs, if any).
    Commit(Option<&'a RoleRecord>),
    /// Without: parts logged as the transaction goes (`spill.rs`).
    Part,
}

/// Which rows of the write set go in the parts.
pub(super) enum Rows<'a> {
    All,
    /// These keys' entries (a key the write set lacks: [`put_op_forget`]).
    Keys(&'a [(u32, Key)]),
}

/// Largest transaction record; bigger write sets stream as several parts.
const MAX_PART: usize = 256 * 1024;

impl Drop for Transaction {
    fn drop(&mut self) {
        self.finish_rollback();
        self.session.closed(self.db.id(), self.txid);
    }
}
