//! A transaction's savepoints: SAVEPOINT, ROLLBACK TO and RELEASE over the write set.

use super::checks::write_bytes;
use super::Transaction;
use crate::error::{EngineError, Result};

impl Transaction {
    /// `SAVEPOINT name`.
    pub fn savepoint(&mut self, name: &str) -> Result<()> {
        self.check_open()?;
        let steps = self.ddl_steps();
        let roles = self.pending_roles();
        let deferred = (
            self.deferred.len(),
            self.deferred_state.clone(),
            self.on_commit.get_mut().len(),
        );
        self.savepoints
            .push(name, self.locks.len(), steps, roles, deferred);
        Ok(())
    }

    /// Appends to the transaction's deferred work: what the SQL layer
    /// checks at COMMIT. A `ROLLBACK TO` drops what was appended since its
    /// savepoint, as PostgreSQL's subtransaction abort drops the deferred
    /// trigger events it queued.
    pub fn defer(&mut self, item: super::Deferred) {
        self.deferred.push(item);
    }

    /// The deferred work so far, oldest first.
    pub fn deferred(&self) -> &[super::Deferred] {
        &self.deferred
    }

    /// The SQL layer's state of its deferred work (`None` until set). A
    /// `ROLLBACK TO` puts back the state its savepoint saw.
    pub fn deferred_state(&self) -> Option<&super::DeferredState> {
        self.deferred_state.as_ref()
    }

    pub fn set_deferred_state(&mut self, state: super::DeferredState) {
        self.deferred_state = Some(state);
    }

    /// Appends to the work the SQL layer does once the transaction has
    /// committed (`NOTIFY`, `LISTEN`), in order; through `&self`, since a
    /// function in an expression (`pg_notify`) asks for it. A `ROLLBACK TO`
    /// drops what was appended since its savepoint; a rollback drops all.
    pub fn on_commit(&self, item: super::Deferred) {
        self.on_commit.lock().push(item);
    }

    /// Takes the after-commit work (see [`Transaction::on_commit`]), to be
    /// done if the commit that follows succeeds.
    pub fn take_on_commit(&mut self) -> Vec<super::Deferred> {
        std::mem::take(self.on_commit.get_mut())
    }

    /// Visits the after-commit work so far, oldest first.
    pub fn with_on_commit<T>(&self, f: impl FnOnce(&[super::Deferred]) -> T) -> T {
        f(&self.on_commit.lock())
    }

    /// Whether a savepoint of this name is set.
    pub fn has_savepoint(&self, name: &str) -> bool {
        self.savepoints.find(name).is_some()
    }

    /// Whether any savepoint is set.
    pub fn in_savepoint(&self) -> bool {
        !self.savepoints.is_empty()
    }

    /// `ROLLBACK TO SAVEPOINT name`: undoes the changes made since, releases
    /// the row locks first taken since and weakens the ones strengthened
    /// since. The savepoint stays; later ones are gone.
    pub fn rollback_to_savepoint(&mut self, name: &str) -> Result<()> {
        self.check_open()?;
        let at = self
            .savepoints
            .find(name)
            .ok_or_else(|| EngineError::UnknownSavepoint(name.to_string()))?;
        self.rollback_levels(at);
        Ok(())
    }

    /// Rolls back to the newest savepoint (what an error inside one does).
    pub fn rollback_to_newest_savepoint(&mut self) {
        if let Some(at) = self.savepoints.len().checked_sub(1) {
            self.rollback_levels(at);
        }
    }

    fn rollback_levels(&mut self, at: usize) {
        let mut keep = usize::MAX;
        let mut ddl_keep = usize::MAX;
        let mut roles = None;
        for undo in self.savepoints.rollback_to(at) {
            ddl_keep = ddl_keep.min(undo.ddl_steps);
            self.deferred.truncate(undo.deferred.0);
            self.on_commit.get_mut().truncate(undo.deferred.2);
            // The oldest level's comes last and wins.
            self.deferred_state = undo.deferred.1;
            // The oldest level's copy comes last and wins.
            roles = Some(undo.roles);
            for (k, before) in undo.writes {
                // Not known to be replaced any more (an insert undone).
                self.replaced.remove(&k);
                // Logging as it goes: the restored entry (or, for a key
                // the write set loses, a forget op) goes in the next part.
                self.note_dirty(&k, 0);
                let now = self.writes.get(&k).map_or(0, |w| write_bytes(&k.1, w));
                let then = before.as_ref().map_or(0, |w| write_bytes(&k.1, w));
                self.write_bytes = (self.write_bytes + then).saturating_sub(now);
                match before {
                    Some(w) => self.writes.insert(k, w),
                    None => self.writes.remove(&k),
                };
            }
            for (lk, mode) in undo.upgrades {
                self.db.txns.locks.downgrade(self.txid, &lk, mode);
            }
            keep = keep.min(undo.locks_held);
        }
        // Catalog changes since the savepoint go back; their table locks
        // are kept to the end of the transaction.
        if ddl_keep != usize::MAX {
            self.undo_ddl(ddl_keep);
            self.renote_written();
        }
        // Role changes since the savepoint go back; the role lock is kept.
        if let (Some(r), Some(to)) = (self.roles.as_mut(), roles) {
            r.reset(to);
        }
        if keep < self.locks.len() {
            let gone = self.locks.split_off(keep);
            self.db.txns.locks.release(self.txid, gone);
        }
    }

    /// `RELEASE SAVEPOINT name`: forgets it and the ones after it, keeping
    /// their changes.
    pub fn release_savepoint(&mut self, name: &str) -> Result<()> {
        self.check_open()?;
        let at = self
            .savepoints
            .find(name)
            .ok_or_else(|| EngineError::UnknownSavepoint(name.to_string()))?;
        self.savepoints.release(at);
        Ok(())
    }
}
