//! Catalog changes as system transactions: tables, keys, foreign keys, indexes, TRUNCATE.

use super::{Catalog, Database};
use crate::codec::{encode_redo, Redo};
use crate::error::{EngineError, Result};
use crate::schema::{ForeignKeyDef, IndexDef, TableDef};
use crate::session::Session;
use crate::table::Table;
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
        self.check_commit_quorum()?;
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
        self.harden_remote(lsn, &sinks)?;
        Ok(out)
    }

    /// A number that changes whenever the catalog does (any DDL, TRUNCATE,
    /// ALTER DATABASE ... SET), here or through a secondary's redo. A plan
    /// made after reading version v is valid while the version is still v.
    pub fn catalog_version(&self) -> u64 {
        self.catalog_version.load(Ordering::Acquire)
    }

    pub fn create_table(&self, session: &Session, mut def: TableDef) -> Result<Arc<Table>> {
        def.validate()?;
        let gate = self.gate.write();
        {
            let cat = self.catalog.read();
            if cat.table(&def.name).is_some() {
                return Err(EngineError::TableExists(def.name));
            }
            if cat.index_table(&def.name).is_some() {
                return Err(EngineError::RelationExists(def.name));
            }
            def.id = cat.next_table_id.max(1);
            // A foreign key referencing the table itself names it by 0
            // until it has its id.
            for fk in &mut def.foreign_keys {
                if fk.ref_table == 0 {
                    fk.ref_table = def.id;
                } else if cat.table_by_id(fk.ref_table).is_none() {
                    return Err(EngineError::UnknownTable(format!(
                        "(table id {}, dropped)",
                        fk.ref_table
                    )));
                }
            }
            // Indexes declared with the table (UNIQUE constraints) take
            // the ids after it.
            for (n, ix) in def.indexes.iter_mut().enumerate() {
                ix.id = def.id + 1 + n as u32;
            }
        }
        let t = Arc::new(Table::new(def.clone()));
        let t2 = t.clone();
        self.system_change(gate, session, Redo::CreateTable(def), move |cat| {
            cat.add_table(t2)
        })?;
        Ok(t)
    }

    pub fn drop_table(&self, session: &Session, name: &str) -> Result<()> {
        self.drop_table_cascade(session, name, false).map(drop)
    }

    /// DROP TABLE: refused while a foreign key of another table references
    /// it, unless `cascade`, which drops those foreign keys with it (one
    /// logged record: replaying it drops them too). Returns the foreign keys
    /// dropped, as (constraint, table).
    pub fn drop_table_cascade(
        &self,
        session: &Session,
        name: &str,
        cascade: bool,
    ) -> Result<Vec<(String, String)>> {
        let gate = self.gate.write();
        let t = self.table(name)?;
        let id = t.id();
        let others: Vec<(String, String)> = self
            .catalog
            .read()
            .referencing(id)
            .into_iter()
            .filter(|(o, _)| o.id() != id)
            .map(|(o, fk)| (fk.name, o.name().to_string()))
            .collect();
        if !others.is_empty() && !cascade {
            return Err(EngineError::Referenced {
                kind: "table",
                table: t.name().to_string(),
                by: others,
            });
        }
        self.system_change(gate, session, Redo::DropTable(id), |cat| {
            cat.remove_table(id);
        })?;
        Ok(others)
    }

    /// Foreign keys (of any table) referencing table `id`, by name, with
    /// the referencing table.
    pub fn referencing(&self, id: u32) -> Vec<(Arc<Table>, ForeignKeyDef)> {
        self.catalog.read().referencing(id)
    }

    /// `ALTER TABLE t ADD FOREIGN KEY`: checks every committed row of `t`
    /// against the referenced table under the gate (no commit in flight;
    /// a transaction that wrote either table before the key existed fails
    /// its commit, see `txn/ri.rs`), then logs the key (a system
    /// transaction, fully durable).
    pub fn add_foreign_key(&self, session: &Session, table: &str, fk: ForeignKeyDef) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(table)?;
        let r = self
            .catalog
            .read()
            .table_by_id(fk.ref_table)
            .cloned()
            .ok_or_else(|| EngineError::UnknownTable(format!("(table id {})", fk.ref_table)))?;
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
        let keys: std::collections::HashSet<Vec<crate::types::Value>> = r
            .latest_rows()
            .values()
            .map(|row| fk.ref_columns.iter().map(|&c| row[c].clone()).collect())
            .collect();
        for row in t.latest_rows().values() {
            let vals: Vec<crate::types::Value> =
                fk.columns.iter().map(|&c| row[c].clone()).collect();
            let nulls = vals.iter().filter(|v| v.is_null()).count();
            let detail = if nulls == 0 {
                if keys.contains(&vals) {
                    continue;
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
                continue;
            };
            return Err(EngineError::ForeignKeyViolation(Box::new(
                crate::error::FkViolation {
                    table: t.def.name.clone(),
                    constraint: fk.name.clone(),
                    detail,
                },
            )));
        }
        let mut fks = t.def.foreign_keys.clone();
        fks.push(fk.clone());
        let nt = Arc::new(t.with_foreign_keys(fks));
        self.system_change(
            gate,
            session,
            Redo::AddForeignKey { table: t.id(), fk },
            |cat| cat.add_table(nt),
        )
    }

    /// `ALTER TABLE t DROP CONSTRAINT name` of a foreign key.
    pub fn drop_foreign_key(&self, session: &Session, table: &str, name: &str) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(table)?;
        if !t.def.foreign_keys.iter().any(|f| f.name == name) {
            return Err(EngineError::UnknownConstraint {
                table: t.def.name.clone(),
                constraint: name.to_string(),
            });
        }
        let fks = t
            .def
            .foreign_keys
            .iter()
            .filter(|f| f.name != name)
            .cloned()
            .collect();
        let nt = Arc::new(t.with_foreign_keys(fks));
        self.system_change(
            gate,
            session,
            Redo::DropForeignKey {
                table: t.id(),
                name: name.to_string(),
            },
            |cat| cat.add_table(nt),
        )
    }

    /// `ALTER TABLE t ADD PRIMARY KEY (cols)` on a table keyed by a hidden row
    /// id (a system transaction, fully durable). Fails if the rows are not
    /// unique on the columns.
    pub fn add_primary_key(&self, session: &Session, name: &str, columns: &[&str]) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(name)?;
        if !t.has_hidden_key() {
            return Err(EngineError::InvalidDefinition(format!(
                "multiple primary keys for table \"{name}\" are not allowed"
            )));
        }
        let mut cols = Vec::new();
        for c in columns {
            cols.push(
                t.def
                    .column_index(c)
                    .ok_or_else(|| EngineError::UnknownColumn {
                        table: name.to_string(),
                        column: c.to_string(),
                    })?,
            );
        }
        // Build first: a duplicate fails before anything is logged.
        let nt = Arc::new(t.with_primary_key(&cols)?);
        self.system_change(
            gate,
            session,
            Redo::AddPrimaryKey {
                table: t.id(),
                columns: cols,
            },
            |cat| cat.add_table(nt),
        )
    }

    /// The table holding the index of this name.
    pub fn index_table(&self, name: &str) -> Option<Arc<Table>> {
        self.catalog.read().index_table(name).cloned()
    }

    /// `CREATE [UNIQUE] INDEX name ON table (columns)`: builds the index from
    /// the table's rows under the gate (commits wait for the build, as for
    /// other DDL), then logs it (a system transaction, fully durable). The
    /// `id` of `index` is assigned here. A duplicate in a unique index fails
    /// before anything is logged.
    pub fn create_index(&self, session: &Session, table: &str, mut index: IndexDef) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(table)?;
        {
            let cat = self.catalog.read();
            if cat.table(&index.name).is_some() || cat.index_table(&index.name).is_some() {
                return Err(EngineError::RelationExists(index.name));
            }
            index.id = cat.next_table_id.max(1);
        }
        if index.columns.is_empty() || index.columns.iter().any(|&c| c >= t.def.columns.len()) {
            return Err(EngineError::InvalidDefinition(format!(
                "index \"{}\" names no column of table \"{}\"",
                index.name, t.def.name
            )));
        }
        let nt = Arc::new(t.with_index(index.clone(), self.vis.visible())?);
        self.system_change(
            gate,
            session,
            Redo::CreateIndex {
                table: t.id(),
                index,
            },
            |cat| cat.add_table(nt),
        )
    }

    /// `DROP INDEX name`.
    pub fn drop_index(&self, session: &Session, name: &str) -> Result<()> {
        let gate = self.gate.write();
        let t = self
            .catalog
            .read()
            .index_table(name)
            .cloned()
            .ok_or_else(|| EngineError::UnknownIndex(name.to_string()))?;
        let Some((_, ix)) = t.def.index(name) else {
            return Err(EngineError::UnknownIndex(name.to_string()));
        };
        let id = ix.id;
        // A foreign key whose referenced columns are this unique index's
        // (and not the primary key's) needs it.
        let set = |c: &[usize]| {
            let mut c = c.to_vec();
            c.sort_unstable();
            c
        };
        if ix.unique && set(&ix.columns) != set(&t.def.primary_key) {
            let by: Vec<(String, String)> = self
                .catalog
                .read()
                .referencing(t.id())
                .into_iter()
                .filter(|(_, fk)| set(&fk.ref_columns) == set(&ix.columns))
                .map(|(o, fk)| (fk.name, o.name().to_string()))
                .collect();
            if !by.is_empty() {
                return Err(EngineError::Referenced {
                    kind: "index",
                    table: ix.name.clone(),
                    by,
                });
            }
        }
        let nt = Arc::new(t.without_index(id));
        self.system_change(
            gate,
            session,
            Redo::DropIndex {
                table: t.id(),
                index: id,
            },
            |cat| cat.add_table(nt),
        )
    }

    /// Removes every row (a system transaction, fully durable).
    pub fn truncate(&self, session: &Session, name: &str) -> Result<()> {
        let gate = self.gate.write();
        let t = self.table(name)?;
        let empty = Arc::new(t.emptied());
        self.system_change(gate, session, Redo::Truncate(t.id()), |cat| {
            cat.add_table(empty)
        })
    }
}
