//! Savepoints: what a transaction changed since each savepoint, so that
//! `ROLLBACK TO` can put its write set and row locks back.
//!
//! Each savepoint remembers, for every (table, key) first written after it,
//! the write-set entry the key had before (absent, a row, or a delete), how
//! many locks the transaction held, and which held locks it strengthened.
//! Rolling back to a savepoint restores those entries, releases the locks
//! first taken after it and returns strengthened ones to their earlier mode,
//! as PostgreSQL does when it aborts a subtransaction; locks taken before
//! the savepoint are kept. `RELEASE` merges a savepoint's records into the
//! one before it (the earlier record of a key wins), so a later rollback to
//! that one still undoes everything. Role changes are undone by going back
//! to the copy of the role catalog the savepoint remembered. Names may repeat: the newest savepoint
//! of a name is the one `ROLLBACK TO` and `RELEASE` find, as in PostgreSQL.

use crate::lock::{LockKey, LockMode};
use crate::roles::RoleCatalog;
use crate::types::{Key, Row};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A write-set entry: `None` deletes, `Some` puts a row.
pub(crate) type Write = Option<Row>;

/// The state to go back to at one savepoint.
pub(crate) struct Level {
    pub(crate) name: String,
    /// Per key written since: its write-set entry before (`None` = absent).
    undo: BTreeMap<(u32, Key), Option<Write>>,
    /// How many locks the transaction held when the savepoint was set.
    pub(crate) locks_held: usize,
    /// Locks held before the savepoint and strengthened after it.
    pub(crate) upgrades: Vec<(LockKey, LockMode)>,
    /// How many DDL statements the transaction had run (later ones are
    /// undone by `ROLLBACK TO`).
    pub(crate) ddl_steps: usize,
    /// The transaction's role catalog copy (`None`: no role changes yet).
    roles: Option<Arc<RoleCatalog>>,
    /// How long the transaction's deferred work was, its state (see
    /// `Transaction::defer`), and how long its after-commit work was (see
    /// `Transaction::on_commit`).
    deferred: DeferredMark,
}

/// The lengths and state a savepoint keeps of the SQL layer's deferred and
/// after-commit work.
pub(crate) type DeferredMark = (usize, Option<crate::txn::DeferredState>, usize);

/// What undoing a savepoint's level gives back to the transaction.
pub(crate) struct Undo {
    pub(crate) writes: Vec<((u32, Key), Option<Write>)>,
    pub(crate) locks_held: usize,
    pub(crate) upgrades: Vec<(LockKey, LockMode)>,
    pub(crate) ddl_steps: usize,
    pub(crate) roles: Option<Arc<RoleCatalog>>,
    pub(crate) deferred: DeferredMark,
}

/// The savepoints of a transaction, oldest first.
#[derive(Default)]
pub(crate) struct Savepoints {
    levels: Vec<Level>,
}

impl Savepoints {
    pub(crate) fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.levels.len()
    }

    pub(crate) fn push(
        &mut self,
        name: &str,
        locks_held: usize,
        ddl_steps: usize,
        roles: Option<Arc<RoleCatalog>>,
        deferred: DeferredMark,
    ) {
        self.levels.push(Level {
            name: name.to_string(),
            undo: BTreeMap::new(),
            locks_held,
            upgrades: Vec::new(),
            ddl_steps,
            roles,
            deferred,
        });
    }

    /// Position of the newest savepoint called `name`.
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.levels.iter().rposition(|l| l.name == name)
    }

    /// Notes that `key` is about to change; `before` is its current entry.
    /// Only the first change since the newest savepoint is kept.
    pub(crate) fn record(&mut self, key: &(u32, Key), before: impl FnOnce() -> Option<Write>) {
        if let Some(l) = self.levels.last_mut() {
            if !l.undo.contains_key(key) {
                l.undo.insert(key.clone(), before());
            }
        }
    }

    /// Notes that a lock held before the newest savepoint was strengthened.
    pub(crate) fn record_upgrade(&mut self, key: LockKey, previous: LockMode) {
        if let Some(l) = self.levels.last_mut() {
            l.upgrades.push((key, previous));
        }
    }

    /// `ROLLBACK TO` the savepoint at `at`: it stays (empty), the ones after
    /// it are gone. Returns what to restore, newest level first so that the
    /// oldest record of each key is applied last.
    pub(crate) fn rollback_to(&mut self, at: usize) -> Vec<Undo> {
        let mut out = Vec::new();
        while self.levels.len() > at + 1 {
            let l = self.levels.pop().expect("level");
            out.push(Self::undo_of(l));
        }
        let l = &mut self.levels[at];
        out.push(Undo {
            writes: std::mem::take(&mut l.undo).into_iter().collect(),
            locks_held: l.locks_held,
            upgrades: std::mem::take(&mut l.upgrades),
            ddl_steps: l.ddl_steps,
            roles: l.roles.clone(),
            deferred: l.deferred.clone(),
        });
        out
    }

    /// `RELEASE` the savepoint at `at` and all after it, keeping their
    /// changes as part of the level before (or of the transaction).
    pub(crate) fn release(&mut self, at: usize) {
        while self.levels.len() > at {
            let l = self.levels.pop().expect("level");
            if let Some(parent) = self.levels.last_mut() {
                for (k, before) in l.undo {
                    parent.undo.entry(k).or_insert(before);
                }
                parent.upgrades.extend(l.upgrades);
            }
        }
    }

    fn undo_of(l: Level) -> Undo {
        Undo {
            writes: l.undo.into_iter().collect(),
            locks_held: l.locks_held,
            upgrades: l.upgrades,
            ddl_steps: l.ddl_steps,
            roles: l.roles,
            deferred: l.deferred,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.levels.clear();
    }
}
