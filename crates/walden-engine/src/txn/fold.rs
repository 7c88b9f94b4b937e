//! DDL on a table this transaction has already written (PostgreSQL allows
//! `INSERT ...; ALTER TABLE` of the same table in one transaction).
//!
//! The transaction holds ACCESS EXCLUSIVE on the table, so nobody else can
//! read or change its rows until it ends. Its pending writes of the table
//! are folded into a new table object holding the committed rows with those
//! writes applied (a catalog change of this transaction, undone as any
//! other); the DDL then validates and rewrites that table, so its own rows
//! are checked exactly as committed ones. The fold is logged as a DDL step
//! of the commit record: a committing transaction record of those writes
//! (keys always written), which recovery and secondaries apply in order with
//! the other DDL records, before the DDL that follows it.

use super::Transaction;
use crate::codec::{Op, Redo};
use crate::error::{EngineError, Result};
use crate::lock::TableLockMode;
use crate::mvcc::Csn;
use crate::table::Table;
use crate::types::{Key, Row};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

impl Transaction {
    /// Locks table `name` ACCESS EXCLUSIVE and folds this transaction's
    /// pending writes of it into the table (see the module comment); a
    /// table it has not written is left as it is. Call before a DDL
    /// statement that must see the transaction's rows as the table's.
    pub fn fold_writes(&mut self, name: &str) -> Result<Arc<Table>> {
        let t = self.lock_named(name, TableLockMode::AccessExclusive)?;
        self.fold_table(&t)
    }

    /// [`Self::fold_writes`] of a table this transaction has locked ACCESS
    /// EXCLUSIVE (or SHARE, which keeps other writers out as well).
    pub(super) fn fold_table(&mut self, t: &Arc<Table>) -> Result<Arc<Table>> {
        let id = t.id();
        // Rows this transaction moved to a spill file (`spill.rs`) are its
        // writes too: folded with the others, their ops in the parts
        // voided by forget ops. A savepoint's undo could not log them
        // again, so none may be open.
        let layered = self.is_logged_layer(t);
        if layered && !self.savepoints.is_empty() {
            return Err(EngineError::DdlAfterSpill(t.name().to_string()));
        }
        if !layered && !self.has_written(id) {
            return Ok(t.clone());
        }
        let entries: Vec<(Key, Option<Row>)> = self
            .writes
            .range((id, Vec::new().into_boxed_slice())..)
            .take_while(|((tid, _), _)| *tid == id)
            .map(|((_, k), w)| (k.clone(), w.clone()))
            .collect();
        // The committed rows stream past, each charged to the
        // transaction's limit before it is held (see `budget.rs`).
        let mut budget = self.build_budget();
        let mut rows = BTreeMap::new();
        let all = (Bound::Unbounded, Bound::Unbounded);
        t.rows.for_each_keyed_at(all, Csn::MAX, |v| {
            let k = v.key()?;
            budget.charge_row(&k, v.row())?;
            rows.insert(k, Row::from(v.row()));
            Ok::<(), EngineError>(())
        })?;
        for (k, w) in &entries {
            if let Some(r) = w {
                budget.charge_row(k, r)?;
            }
            match w {
                Some(r) => rows.insert(k.clone(), r.clone()),
                None => rows.remove(k),
            };
        }
        // The keys only the spill file held (their ops in the parts are
        // voided once the fold's record is in).
        let layer_keys: Vec<Key> = if layered {
            rows.keys()
                .filter(|k| !self.writes.contains_key(&(id, (*k).clone())))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        let ops = if layered {
            // Every row is this transaction's (the table is its own).
            rows.iter()
                .map(|(k, r)| Op::Put {
                    table: id,
                    key: k.clone(),
                    row: r.clone(),
                })
                .collect()
        } else {
            entries
                .into_iter()
                .map(|(key, w)| match w {
                    Some(row) => Op::Put {
                        table: id,
                        key,
                        row,
                    },
                    None => Op::Delete { table: id, key },
                })
                .collect()
        };
        // Same definition, identity and row-id counters; new row versions
        // every snapshot sees (only this transaction can read the table
        // until it ends).
        let nt = t.emptied();
        for (k, r) in rows {
            nt.load_row(k, r);
        }
        let nt = Arc::new(nt);
        let txid = self.txid;
        // The fold takes the file's rows over (see `refuse_spilled`).
        if layered {
            self.set_layer_logged(t, false);
        }
        let changed = self.catalog_change(|cat| {
            match cat.table_by_id(id) {
                Some(cur) if Arc::ptr_eq(cur, t) => {}
                _ => return Err(EngineError::SerializationFailure("DDL")),
            }
            cat.add_table(nt.clone());
            Ok((
                (),
                Redo::Txn {
                    txid,
                    commit: true,
                    ops,
                },
            ))
        });
        if let Err(e) = changed {
            if layered {
                self.set_layer_logged(t, true);
            }
            return Err(e);
        }
        self.hold_for_last_step(budget.used());
        if layered {
            for k in layer_keys {
                self.note_dirty(&(id, k), 0);
            }
        }
        // The writes now live in the table; a savepoint before this
        // statement gets them back (and the old table) at ROLLBACK TO.
        self.discard_writes(id);
        self.noted.remove(&id);
        Ok(nt)
    }

    /// After ROLLBACK TO: writes a folded table got back were checked
    /// against its definition as it is again now (the table stays locked
    /// by this transaction), so they are noted as such for the commit's
    /// checks.
    pub(super) fn renote_written(&mut self) {
        let ids: Vec<u32> = {
            let mut ids: Vec<u32> = self.writes.keys().map(|(t, _)| *t).collect();
            ids.dedup();
            ids.into_iter()
                .filter(|id| !self.noted.contains_key(id))
                .collect()
        };
        for id in ids {
            let t = self.db.catalog.read().table_by_id(id).cloned();
            if let Some(t) = t {
                self.note_checked(&t);
            }
        }
    }
}
