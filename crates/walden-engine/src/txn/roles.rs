//! A transaction's side of role changes (see `instance/roles_txn.rs`).

use super::Transaction;
use crate::error::Result;
use crate::instance::roles_txn::TxRoles;
use crate::roles::RoleCatalog;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

impl Transaction {
    /// The role catalog with this transaction's changes, once it made any.
    pub(crate) fn pending_roles(&self) -> Option<Arc<RoleCatalog>> {
        self.roles.as_ref().map(|r| r.cat.clone())
    }

    pub(crate) fn roles_state(&mut self) -> &mut Option<TxRoles> {
        &mut self.roles
    }

    /// Role changes are writes: refused in a READ ONLY transaction.
    pub(crate) fn check_role_change(&self) -> Result<()> {
        self.check_write("a role change")
    }

    /// What a wait for the role lock honours: the session's cancel flag
    /// and the database's lock timeout.
    pub(crate) fn role_wait(&self) -> (Arc<AtomicBool>, Option<Duration>) {
        (self.session.cancel.clone(), self.db.txns.lock_timeout)
    }
}
