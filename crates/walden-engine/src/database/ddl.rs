//! Catalog changes as transactions of their own (the transactional
//! versions are `Transaction`'s, see `txn/ddl.rs`), and the system
//! transaction that settings changes use.

use super::{Catalog, Database};
use crate::codec::{encode_redo, Redo};
use crate::error::{EngineError, Result};
use crate::schema::{ForeignKeyDef, IndexDef, TableDef};
use crate::session::{CommitRequest, Session};
use crate::table::Table;
use crate::txn::Transaction;
use parking_lot::RwLockWriteGuard;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Database {
    /// A system transaction: logs `redo` fully durably, then applies it, with
    /// no user commit in flight.
    /// `gate`: the caller's hold on the database's gate, released once the
    /// change is hardened here and applied, before the wait for synchronous
    /// secondaries (as a commit releases its row locks first): a stalled
    /// secondary then holds up this session only, not every session of the
    /// database.
    pub(crate) fn system_change<T>(
        &self,
        gate: RwLockWriteGuard<'_, ()>,
        session: &Session,
        redo: Redo,
        apply: impl FnOnce(&mut Catalog) -> T,
    ) -> Result<T> {
        self.check_writable()?;
        let ticket = self.check_commit_quorum()?;
        let rec = encode_redo(&redo);
        let sinks = session.wait_sinks();
        let lsn = self.log.append(&rec, &sinks)?;
        self.log
            .wait_hardened(lsn, &sinks)
            .map_err(|source| EngineError::CommitOutcomeUnknown { lsn, source })?;
        let mut cat = self.catalog.write();
        // Applied whatever the secondaries say: the change is in the local
        // log, and recovery would apply it anyway.
        let out = apply(&mut cat);
        // Under the catalog lock: a planner that read the old version before
        // planning sees the new one on its next look (Release pairs with the
        // Acquire load in `catalog_version`).
        self.catalog_version.fetch_add(1, Ordering::Release);
        drop(cat);
        drop(gate);
        self.harden_remote(&ticket, lsn, &sinks)?;
        Ok(out)
    }

    /// A number that changes whenever the catalog does (any DDL, TRUNCATE,
    /// ALTER DATABASE ... SET), here or through a secondary's redo. A plan
    /// made after reading version v is valid while the version is still v.
    pub fn catalog_version(&self) -> u64 {
        self.catalog_version.load(Ordering::Acquire)
    }

    /// Runs one DDL statement in a transaction of its own, committed
    /// durably.
    fn ddl<T>(
        self: &Arc<Self>,
        session: &Arc<Session>,
        f: impl FnOnce(&mut Transaction) -> Result<T>,
    ) -> Result<T> {
        self.run(session, CommitRequest::Durable, f)
    }

    pub fn create_table(
        self: &Arc<Self>,
        session: &Arc<Session>,
        def: TableDef,
    ) -> Result<Arc<Table>> {
        self.ddl(session, |tx| tx.create_table(def))
    }

    pub fn drop_table(self: &Arc<Self>, session: &Arc<Session>, name: &str) -> Result<()> {
        self.ddl(session, |tx| tx.drop_table_cascade(name, false).map(drop))
    }

    /// Foreign keys (of any table) referencing table `id`, by name, with
    /// the referencing table.
    pub fn referencing(&self, id: u32) -> Vec<(Arc<Table>, ForeignKeyDef)> {
        self.catalog.read().referencing(id)
    }

    /// Checks every committed row of `t` against `fk`, which references
    /// `r` (both locked by the caller).
    pub(crate) fn check_foreign_key(&self, t: &Table, r: &Table, fk: &ForeignKeyDef) -> Result<()> {
        if fk.columns.len() != fk.ref_columns.len()
            || fk.columns.iter().any(|&c| c >= t.def.columns.len())
            || fk.ref_columns.iter().any(|&c| c >= r.def.columns.len())
        {
            return Err(EngineError::InvalidDefinition(format!(
                "foreign key \"{}\" names columns its tables do not have",
                fk.name
            )));
        }
        if t.def.foreign_keys.iter().any(|f| f.name == fk.name)
            || t.def.checks.iter().any(|c| c.name == fk.name)
        {
            return Err(EngineError::InvalidDefinition(format!(
                "constraint \"{}\" for relation \"{}\" already exists",
                fk.name, t.def.name
            )));
        }
        // Both tables stream past in chunks (rows the store holds are not
        // gathered first); only the referenced values are held.
        let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
        let mut keys: std::collections::HashSet<Vec<crate::types::Value>> = Default::default();
        r.rows.for_each_at(all, crate::mvcc::Csn::MAX, |row| {
            keys.insert(fk.ref_columns.iter().map(|&c| row[c].clone()).collect());
            Ok::<(), EngineError>(())
        })?;
        t.rows.for_each_at(all, crate::mvcc::Csn::MAX, |row| {
            let vals: Vec<crate::types::Value> =
                fk.columns.iter().map(|&c| row[c].clone()).collect();
            let nulls = vals.iter().filter(|v| v.is_null()).count();
            let detail = if nulls == 0 {
                if keys.contains(&vals) {
                    return Ok(());
                }
                format!(
                    "Key {}=({}) is not present in table \"{}\".",
                    t.def.column_list(&fk.columns),
                    crate::table::value_list(&vals),
                    r.def.name
                )
            } else if fk.match_full && nulls < vals.len() {
                "MATCH FULL does not allow mixing of null and nonnull key values.".to_string()
            } else {
                return Ok(());
            };
            Err(EngineError::ForeignKeyViolation(Box::new(
                crate::error::FkViolation {
                    table: t.def.name.clone(),
                    constraint: fk.name.clone(),
                    detail,
                },
            )))
        })
    }

    pub fn add_primary_key(
        self: &Arc<Self>,
        session: &Arc<Session>,
        name: &str,
        columns: &[&str],
    ) -> Result<()> {
        self.ddl(session, |tx| tx.add_primary_key(name, columns))
    }

    /// The table holding the index of this name.
    pub fn index_table(&self, name: &str) -> Option<Arc<Table>> {
        self.catalog.read().index_table(name).cloned()
    }

    pub fn create_index(
        self: &Arc<Self>,
        session: &Arc<Session>,
        table: &str,
        index: IndexDef,
    ) -> Result<()> {
        self.ddl(session, |tx| tx.create_index(table, index))
    }

    pub fn drop_index(self: &Arc<Self>, session: &Arc<Session>, name: &str) -> Result<()> {
        self.ddl(session, |tx| tx.drop_index(name))
    }

    /// Removes every row.
    pub fn truncate(self: &Arc<Self>, session: &Arc<Session>, name: &str) -> Result<()> {
        self.ddl(session, |tx| tx.truncate(name))
    }

    pub fn create_sequence(
        self: &Arc<Self>,
        session: &Arc<Session>,
        name: &str,
        start: i64,
        increment: i64,
    ) -> Result<()> {
        let opts = crate::schema::SequenceOptions {
            start: Some(start),
            increment: Some(increment),
            ..Default::default()
        };
        self.ddl(session, |tx| tx.create_sequence(name, &opts))
    }

    pub fn drop_sequence(self: &Arc<Self>, session: &Arc<Session>, name: &str) -> Result<()> {
        self.ddl(session, |tx| tx.drop_sequence(name))
    }
}
