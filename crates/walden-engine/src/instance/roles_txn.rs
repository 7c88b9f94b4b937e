//! Role changes inside transactions. PostgreSQL's role statements (CREATE /
//! ALTER / DROP ROLE, GRANT, REVOKE, ALTER ... OWNER TO) are transactional:
//! their own transaction sees them at once, other sessions at COMMIT, and
//! ROLLBACK (or ROLLBACK TO a savepoint set before them, or an error in the
//! block) takes them back. The role catalog is instance-wide (in
//! `instance.json`, not in a database's log), so Walden does it this way:
//!
//! - A transaction's first role change takes the instance's role lock and
//!   holds it to its end: one role-changing transaction at a time, the next
//!   one waits (PostgreSQL makes the second writer of a `pg_authid` row
//!   wait; Walden locks the whole role catalog). The wait honours
//!   `lock_timeout` and cancel. Before it, the transaction takes an ACCESS
//!   EXCLUSIVE lock on a pseudo table ([`ROLE_CATALOG_LOCK`]) in its
//!   database's lock manager, so a cycle through role changes and row or
//!   table locks of that database is found as a deadlock (40P01) rather
//!   than waited out.
//! - Its statements edit a private copy of the catalog ([`TxRoles`]); its
//!   own statements read that copy, everyone else the committed one.
//!   Savepoints remember the copy as it was.
//! - COMMIT writes the copy to `instance.json` (atomically, durably) as the
//!   next version. A transaction that also changed rows or the schema of
//!   its database carries the new catalog ([`RoleRecord`]: the version and
//!   this instance's id) in its commit record, hardens that, then writes
//!   the file, both before the client is told. Recovery, finding a
//!   committed record of this instance newer than the file's version in
//!   any database's log, writes it to the file ([`Instance::reinstall_logged_roles`]):
//!   a crash between the two writes loses neither (see docs/design.md,
//!   "Roles in transactions").

use super::Instance;
use crate::error::{EngineError, Result};
use crate::lock::{TableLockMode, WaitPolicy};
use crate::roles::{RoleCatalog, RoleRecord};
use crate::txn::Transaction;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The pseudo table id whose lock stands for the role catalog in a
/// database's lock manager (table ids are counted up from 1).
pub const ROLE_CATALOG_LOCK: u32 = u32::MAX;

/// The instance's role lock: the token of the holder, if any.
#[derive(Default)]
pub(crate) struct RoleLock {
    owner: Mutex<Option<u64>>,
    freed: Condvar,
    /// Crash tests: runs between a commit's log record and its role file
    /// (see [`Instance::set_role_commit_hook`]).
    commit_hook: Mutex<Option<RoleCommitHook>>,
}

/// What a crash test runs at the point a commit with role changes has its
/// log record hardened and has not written `instance.json` yet.
pub type RoleCommitHook = Arc<dyn Fn() + Send + Sync>;

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Holds the role lock until dropped.
pub(crate) struct RoleLockGuard {
    inst: Instance,
    token: u64,
}

impl Drop for RoleLockGuard {
    fn drop(&mut self) {
        let lock = &self.inst.inner.role_lock;
        let mut owner = lock.owner.lock();
        if *owner == Some(self.token) {
            *owner = None;
            lock.freed.notify_all();
        }
    }
}

/// A transaction's role changes: the catalog as it was when it took the
/// lock, and its private copy.
pub(crate) struct TxRoles {
    guard: RoleLockGuard,
    base: Arc<RoleCatalog>,
    pub(crate) cat: Arc<RoleCatalog>,
}

impl TxRoles {
    /// Whether any statement changed the copy.
    pub(crate) fn changed(&self) -> bool {
        !Arc::ptr_eq(&self.base, &self.cat)
    }

    /// The copy goes back to the committed catalog (ROLLBACK TO a
    /// savepoint set before the first change); the lock stays held.
    pub(crate) fn reset(&mut self, to: Option<Arc<RoleCatalog>>) {
        self.cat = to.unwrap_or_else(|| self.base.clone());
    }

    /// Makes the changes the instance's; releases the lock.
    pub(crate) fn install(self) -> Result<()> {
        if self.changed() {
            self.guard.inst.install_roles((*self.cat).clone())?;
        }
        Ok(())
    }

    /// What the commit record carries: the copy as the next version (the
    /// lock is held since `base` was read, so nothing came between).
    pub(crate) fn record(&self) -> RoleRecord {
        let mut cat = (*self.cat).clone();
        cat.version = self.base.version + 1;
        RoleRecord {
            instance: self.guard.inst.instance_id(),
            catalog: Arc::new(cat),
        }
    }

    /// Crash tests: runs the armed hook, if any (after the commit record
    /// was hardened, before the file is written).
    pub(crate) fn crash_point(&self) {
        let hook = self.guard.inst.inner.role_lock.commit_hook.lock().clone();
        if let Some(h) = hook {
            h();
        }
    }

    /// Installs `rec` (this transaction's [`record`](Self::record), already
    /// durable in a database's log). When the file cannot be written the
    /// catalog is installed in memory all the same, since the commit
    /// stands: the caller poisons that database's log, so no checkpoint
    /// drops the record before a restart reinstalls it.
    pub(crate) fn install_logged(self, rec: &RoleRecord) -> Result<()> {
        let inst = &self.guard.inst;
        let written = inst.write_roles((*rec.catalog).clone(), true);
        if written.is_err() {
            inst.write_roles((*rec.catalog).clone(), false)?;
        }
        written
    }
}

impl Instance {
    /// Crash tests: from now on a commit that carries role changes runs
    /// `hook` after its log record is hardened and before `instance.json`
    /// is written (a test kills the process there, or cuts the power of
    /// its simulated disk); `None` disarms it.
    pub fn set_role_commit_hook(&self, hook: Option<RoleCommitHook>) {
        *self.inner.role_lock.commit_hook.lock() = hook;
    }

    /// At open, after every database's recovery: the newest role catalog a
    /// committed transaction of this instance carried, if `instance.json`
    /// holds an older version (a crash came between the commit record and
    /// the file), becomes the instance's. Records of other instances (a
    /// secondary's log comes from its primary; a seeded copy's from its
    /// source) are not this instance's roles and are left alone.
    pub(crate) fn reinstall_logged_roles(&self) -> Result<()> {
        let own = self.instance_id();
        let newest = self
            .databases()
            .iter()
            .filter_map(|db| db.txns.recovered_roles.lock().take())
            .filter(|r| r.instance == own)
            .max_by_key(|r| r.catalog.version);
        let Some(rec) = newest else { return Ok(()) };
        let have = self.roles().version;
        if rec.catalog.version > have {
            tracing::warn!(
                from = have,
                to = rec.catalog.version,
                "reinstalling the role catalog of a commit the role file missed"
            );
            self.write_roles((*rec.catalog).clone(), true)?;
        }
        Ok(())
    }

    /// Takes the role lock, waiting for the transaction that holds it.
    pub(crate) fn lock_roles(
        &self,
        cancel: &AtomicBool,
        timeout: Option<Duration>,
    ) -> Result<RoleLockGuard> {
        let lock = &self.inner.role_lock;
        let start = Instant::now();
        let mut owner = lock.owner.lock();
        while owner.is_some() {
            if cancel.load(Relaxed) {
                return Err(EngineError::Cancelled);
            }
            // Short slices, so a cancel is seen while waiting.
            let mut step = Duration::from_millis(50);
            if let Some(t) = timeout {
                let left = t.saturating_sub(start.elapsed());
                if left.is_zero() {
                    return Err(EngineError::LockTimeout(start.elapsed().as_millis() as u64));
                }
                step = step.min(left);
            }
            lock.freed.wait_for(&mut owner, step);
        }
        let token = NEXT_TOKEN.fetch_add(1, Relaxed);
        *owner = Some(token);
        Ok(RoleLockGuard {
            inst: self.clone(),
            token,
        })
    }

    /// The role catalog as `tx` sees it: its own uncommitted changes, or
    /// the committed catalog.
    pub fn roles_for(&self, tx: &Transaction) -> Arc<RoleCatalog> {
        tx.pending_roles().unwrap_or_else(|| self.roles())
    }

    /// Changes the role catalog inside `tx` (see the module comment): `f`
    /// edits the transaction's copy; nothing changes when it fails.
    pub fn update_roles_in<R, E: From<EngineError>>(
        &self,
        tx: &mut Transaction,
        f: impl FnOnce(&mut RoleCatalog) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        self.check_open()?;
        if tx.roles_state().is_none() {
            tx.check_role_change()?;
            tx.lock_table_id(
                ROLE_CATALOG_LOCK,
                TableLockMode::AccessExclusive,
                WaitPolicy::Wait,
            )?;
            let (cancel, timeout) = tx.role_wait();
            let guard = self.lock_roles(&cancel, timeout)?;
            let base = self.roles();
            *tx.roles_state() = Some(TxRoles {
                guard,
                cat: base.clone(),
                base,
            });
        }
        let st = tx.roles_state().as_mut().expect("role changes started");
        let mut next = (*st.cat).clone();
        let r = f(&mut next)?;
        st.cat = Arc::new(next);
        Ok(r)
    }
}
