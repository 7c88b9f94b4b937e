//! What foreign-key enforcement needs from a transaction: reads of the
//! newest committed state (PostgreSQL runs its referential checks on a
//! fresh snapshot), the KEY SHARE lock a referencing row takes on the row it
//! references, and a commit-time guard against a foreign key added while
//! the transaction's writes were unchecked by it.

use super::Transaction;
use crate::database::Catalog;
use crate::error::{EngineError, Result};
use crate::lock::{LockMode, WaitPolicy};
use crate::table::Table;
use crate::txn::Isolation;
use crate::types::{Key, Row, Value};
use foldhash::HashSet;
use std::ops::Bound;

/// How to find the row holding a referenced key.
pub enum RefPath {
    /// The referenced columns are the primary key: the values in key order.
    Key(Vec<Value>),
    /// Through unique index `index` (its position in the table): the values
    /// in the index's column order.
    Index(usize, Vec<Value>),
}

impl Transaction {
    /// Runs `f` with reads at a fresh snapshot (the newest published state,
    /// plus this transaction's own writes), then restores the statement's.
    pub fn with_fresh_snapshot<R>(&mut self, f: impl FnOnce(&Self) -> R) -> R {
        let fresh = Some(self.db.txns.vis.snapshot());
        let saved = std::mem::replace(&mut self.snapshot, fresh);
        let r = f(self);
        self.snapshot = saved;
        r
    }

    /// The row `path` names, as reads see it now.
    fn find_referenced(&self, t: &Table, path: &RefPath) -> Result<Option<(Key, Row)>> {
        match path {
            RefPath::Key(k) => Ok(self
                .get_in(t, k)?
                .map(|r| (k.clone().into_boxed_slice(), r))),
            RefPath::Index(ix, vals) => {
                let Some(def) = t.indexes.get(*ix).map(|i| &i.def) else {
                    return Ok(None);
                };
                let matches = |r: &Row| def.columns.iter().zip(vals).all(|(&c, v)| &r[c] == v);
                let lo: Key = vals.clone().into_boxed_slice();
                let n = vals.len();
                let rows = self.index_scan(t, *ix, Bound::Included(lo), |e| {
                    e[..n.min(e.len())] == vals[..]
                })?;
                let rows = match rows {
                    Some(rows) => rows,
                    None => self
                        .scan_in(t, (Bound::Unbounded, Bound::Unbounded))?
                        .into_iter()
                        .filter(|(_, r)| matches(r))
                        .collect(),
                };
                Ok(rows.into_iter().find(|(_, r)| matches(r)))
            }
        }
    }

    /// A referencing row's check: finds the referenced row (READ COMMITTED:
    /// in the newest committed state; REPEATABLE READ: in the transaction's
    /// snapshot), takes its KEY SHARE lock, and returns its newest version
    /// if it still holds the key. A concurrent delete or key change is
    /// waited for; under REPEATABLE READ one committed after the snapshot
    /// fails with a serialization failure, as PostgreSQL's row lock does
    /// (an update that keeps the key does not conflict).
    pub fn lock_referenced(&mut self, t: &Table, path: &RefPath) -> Result<Option<Row>> {
        self.check_write("INSERT")?;
        let found = if self.isolation != Isolation::ReadCommitted && self.snapshot.is_some() {
            self.find_referenced(t, path)?
        } else {
            self.with_fresh_snapshot(|tx| tx.find_referenced(t, path))?
        };
        let Some((key, row)) = found else {
            return Ok(None);
        };
        if self.writes.contains_key(&(t.id(), key.clone())) {
            return Ok(Some(row));
        }
        self.lock_mode(t, &key, LockMode::KeyShare, WaitPolicy::Wait)?;
        let holds = |r: &Row| match path {
            RefPath::Key(_) => true,
            RefPath::Index(ix, vals) => t.indexes[*ix]
                .def
                .columns
                .iter()
                .zip(vals)
                .all(|(&c, v)| &r[c] == v),
        };
        match self.latest_in(t, &key)? {
            Some(r) if holds(&r) => Ok(Some(r)),
            other => {
                let rr = self.isolation != Isolation::ReadCommitted;
                if rr && self.snapshot.is_some() {
                    Err(EngineError::SerializationFailure(if other.is_some() {
                        "update"
                    } else {
                        "delete"
                    }))
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// Before a commit is logged: a foreign key added since this
    /// transaction first wrote a table it involves did not check those
    /// writes (ALTER TABLE ... ADD FOREIGN KEY validated the committed rows
    /// only), so the commit fails rather than let an orphan in.
    pub(super) fn check_foreign_keys(&self, cat: &Catalog) -> Result<()> {
        for (tid, noted) in &self.noted {
            if !fk_names(cat, *tid).is_subset(&noted.fks) {
                return Err(EngineError::SerializationFailure(
                    "addition of a foreign key",
                ));
            }
        }
        Ok(())
    }
}

/// Names of the foreign keys on table `tid` or referencing it.
pub(super) fn fk_names(cat: &Catalog, tid: u32) -> HashSet<(u32, String)> {
    let mut out = HashSet::default();
    for t in cat.by_id.values() {
        for fk in &t.def.foreign_keys {
            if t.id() == tid || fk.ref_table == tid {
                out.insert((t.id(), fk.name.clone()));
            }
        }
    }
    out
}
