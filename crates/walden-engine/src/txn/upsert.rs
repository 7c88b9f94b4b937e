//! INSERT ... ON CONFLICT: an insert that first looks for a row holding its
//! values in the arbiter constraints, and reports that row instead of failing.
//!
//! The arbiters are checked under the same locks an insert takes (the key's
//! row lock, each unique value's lock), so an insert that conflicts with an
//! uncommitted one waits for its outcome, as PostgreSQL's speculative
//! insertion does: after a commit it sees the row, after a rollback it
//! inserts.

use super::Transaction;
use crate::error::{EngineError, Result};
use crate::lock::{LockMode, WaitPolicy};
use crate::table::Table;
use crate::types::{Key, Row, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Which unique constraints an INSERT ... ON CONFLICT checks first (a
/// conflict in another one is an ordinary unique violation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arbiters {
    /// The primary key.
    pub primary_key: bool,
    /// Unique indexes, by id.
    pub indexes: Vec<u32>,
}

impl Arbiters {
    /// Every unique constraint of `t` (`ON CONFLICT DO NOTHING` without a target).
    pub fn all(t: &Table) -> Arbiters {
        Arbiters {
            primary_key: !t.has_hidden_key(),
            indexes: t
                .indexes
                .iter()
                .filter(|i| i.def.unique)
                .map(|i| i.def.id)
                .collect(),
        }
    }
}

/// What [`Transaction::insert_or_conflict`] did.
pub enum Upsert {
    /// No arbiter conflict: the row was inserted (its key, the row as stored).
    Inserted(Key, Row),
    /// A row holds the proposed values in an arbiter; nothing was written.
    Conflict {
        /// The existing row's key and its newest committed (or own) version.
        key: Key,
        existing: Row,
        /// The row that would have been inserted (defaults applied): the
        /// `EXCLUDED` row.
        proposed: Vec<Value>,
    },
}

impl Transaction {
    /// Inserts unless a row holds the proposed values in one of `arbiters`.
    /// With `lock_existing` (DO UPDATE) the conflicting row is locked for
    /// update; otherwise (DO NOTHING) the locks taken to look are released
    /// again, so others are not held up by a row this statement leaves alone.
    /// Under REPEATABLE READ a conflicting row the snapshot does not see is
    /// a serialization failure, as in PostgreSQL.
    pub fn insert_or_conflict(
        &mut self,
        t: &Arc<Table>,
        values: Vec<Option<Value>>,
        arbiters: &Arbiters,
        lock_existing: bool,
    ) -> Result<Upsert> {
        self.check_write("INSERT")?;
        if t.def.partition_key.is_some() {
            return Err(crate::error::EngineError::PartitionedWrite(
                "INSERT ... ON CONFLICT",
                t.name().to_string(),
            ));
        }
        let explicit_identity = t.def.identity_column().is_some_and(|(i, id)| {
            id.moves_past_explicit() && values.get(i).is_some_and(|v| v.is_some())
        });
        let row = self.build_row(t, values)?;
        let key: Key = match t.key_of(&row) {
            Some(k) => k,
            None => vec![Value::Int(t.next_rowid.fetch_add(1, Relaxed))].into_boxed_slice(),
        };
        // Whether a row holds the values is a read of the table (SSI).
        self.note_scan(t);
        let mark = self.locks.len();
        if let Some(found) = self.find_conflict(t, &key, &row, arbiters)? {
            let existing = self
                .settle_conflict(t, &found, lock_existing)?
                .ok_or_else(|| EngineError::RowNotFound(t.name().to_string()))?;
            if !lock_existing && self.locks.len() > mark {
                let gone = self.locks.split_off(mark);
                self.db.txns.locks.release(self.txid, gone);
            }
            return Ok(Upsert::Conflict {
                key: found,
                existing,
                proposed: row,
            });
        }
        // No arbiter conflict: the ordinary insert, whose checks find any
        // other unique violation (the arbiters' values are locked by now).
        self.lock(t, &key)?;
        if self.exists(t, &key)? {
            return Err(Self::pk_duplicate(t, &key));
        }
        self.check_unique(t, &key, &row, None)?;
        if explicit_identity {
            t.observe(&key, &row);
        }
        let row: Row = Arc::from(row);
        self.put_write((t.id(), key.clone()), Some(row.clone()))?;
        Ok(Upsert::Inserted(key, row))
    }

    /// The key of a row holding `row`'s values in an arbiter, waiting for
    /// any uncommitted writer of them.
    fn find_conflict(
        &mut self,
        t: &Table,
        key: &Key,
        row: &[Value],
        arbiters: &Arbiters,
    ) -> Result<Option<Key>> {
        if arbiters.primary_key && !t.has_hidden_key() {
            self.lock(t, key)?;
            if self.exists(t, key)? {
                return Ok(Some(key.clone()));
            }
        }
        for ix in &t.indexes {
            if !ix.def.unique || !arbiters.indexes.contains(&ix.def.id) {
                continue;
            }
            let vals = ix.values_of(row);
            if vals.iter().any(Value::is_null) {
                continue;
            }
            self.lock_unique(t, ix, &vals)?;
            // Under the value's lock no other writer can give the value to
            // a row or take it away: the newest state is settled.
            let holds = |tx: &Self, pk: &[Value]| match tx.writes.get(&(t.id(), pk.into())) {
                Some(Some(r)) => ix.values_of(r) == vals,
                Some(None) => false,
                None => true,
            };
            for entry in ix.entries.latest_with_prefix(&vals)? {
                let pk = ix.row_key(&entry);
                if holds(self, pk) {
                    return Ok(Some(pk.into()));
                }
            }
            if let Some(cands) = self.own_unique.get(&(ix.def.id, vals.clone())) {
                for pk in cands {
                    if self.writes.contains_key(&(t.id(), pk.clone())) && holds(self, pk) {
                        return Ok(Some(pk.clone()));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Locks the conflicting row when it is to be updated, refuses it under
    /// REPEATABLE READ when the snapshot does not see it, and reads it.
    fn settle_conflict(&mut self, t: &Table, key: &Key, lock: bool) -> Result<Option<Row>> {
        if lock {
            self.lock_mode(t, key, LockMode::Update, WaitPolicy::Wait)?;
        }
        self.check_conflict(t, key)?;
        self.latest_in(t, key)
    }
}
