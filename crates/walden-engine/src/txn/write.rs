//! A transaction's writes: INSERT, UPDATE and DELETE into its write set.

use super::Transaction;
use crate::error::{EngineError, Result};
use crate::lock::{LockMode, WaitPolicy};
use crate::table::Table;
use crate::types::{Key, Row, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

impl Transaction {
    /// Inserts a row given one value per column (`None` takes the column's
    /// default or identity). Returns the stored row.
    pub fn insert(&mut self, table: &str, values: Vec<Option<Value>>) -> Result<Row> {
        self.check_open()?;
        let t = self.db.table(table)?;
        self.insert_into(&t, values)
    }

    /// Inserts by column name; unnamed columns take their defaults.
    pub fn insert_named(&mut self, table: &str, values: &[(&str, Value)]) -> Result<Row> {
        self.check_open()?;
        let t = self.db.table(table)?;
        let mut full = vec![None; t.def.columns.len()];
        for (name, v) in values {
            let i = t
                .def
                .column_index(name)
                .ok_or_else(|| EngineError::UnknownColumn {
                    table: t.name().to_string(),
                    column: name.to_string(),
                })?;
            full[i] = Some(v.clone());
        }
        self.insert_into(&t, full)
    }

    /// Inserts into a table handle (saves the name lookup in hot loops).
    pub fn insert_into(&mut self, t: &Arc<Table>, values: Vec<Option<Value>>) -> Result<Row> {
        self.check_write("INSERT")?;
        if t.def.partition_key.is_some() {
            return Err(EngineError::PartitionedWrite(
                "INSERT",
                t.name().to_string(),
            ));
        }
        let explicit_identity = t.def.identity_column().is_some_and(|(i, id)| {
            id.moves_past_explicit() && values.get(i).is_some_and(|v| v.is_some())
        });
        let row = self.build_row(t, values)?;
        let (key, fresh): (Key, bool) = match t.key_of(&row) {
            Some(k) => (k, false),
            None => (
                vec![Value::Int(t.next_rowid.fetch_add(1, Relaxed))].into_boxed_slice(),
                true,
            ),
        };
        self.lock(t, &key)?;
        // A new row id of a table whose rows this transaction moved to a
        // spill file is in neither (no look-up in the file per row).
        if !(fresh && self.is_layered(t)) && self.exists(t, &key)? {
            return Err(Self::pk_duplicate(t, &key));
        }
        self.check_unique(t, &key, &row, None)?;
        if explicit_identity {
            t.observe(&key, &row);
        }
        let row: Row = Arc::from(row);
        let id = (t.id(), key);
        // Deleted by this transaction, inserted again: a new row.
        if matches!(self.writes.get(&id), Some(None)) {
            self.replaced.insert(id.clone());
        }
        self.put_write(id, Some(row.clone()))?;
        Ok(row)
    }

    /// Replaces the row with key `key` by `row` (one value per column). The key
    /// may change; the new key must not exist.
    pub fn update(&mut self, table: &str, key: &[Value], row: Vec<Value>) -> Result<Row> {
        self.check_open()?;
        let t = self.db.table(table)?;
        self.update_in(&t, key, row)
    }

    pub fn update_in(&mut self, t: &Arc<Table>, key: &[Value], row: Vec<Value>) -> Result<Row> {
        self.check_write("UPDATE")?;
        if t.def.partition_key.is_some() {
            return Err(EngineError::PartitionedWrite(
                "UPDATE",
                t.name().to_string(),
            ));
        }
        let key: Key = key.into();
        let row = self.check_row(t, row)?;
        let new_key = t.key_of(&row).unwrap_or_else(|| key.clone());
        // As PostgreSQL: an update that keeps the key leaves key-share
        // lockers (foreign key checks) alone.
        let mode = if new_key == key {
            LockMode::NoKeyUpdate
        } else {
            LockMode::Update
        };
        self.lock_mode(t, &key, mode, WaitPolicy::Wait)?;
        self.check_conflict(t, &key)?;
        let Some(old) = self.latest_in(t, &key)? else {
            return Err(EngineError::RowNotFound(t.name().to_string()));
        };
        // A changed unique value is a key change too (a foreign key may
        // reference it): key-share lockers are waited for, as PostgreSQL.
        if mode == LockMode::NoKeyUpdate
            && t.indexes
                .iter()
                .any(|ix| ix.def.unique && ix.values_of(&old) != ix.values_of(&row))
        {
            self.lock_mode(t, &key, LockMode::Update, WaitPolicy::Wait)?;
        }
        if new_key != key {
            self.lock(t, &new_key)?;
            if self.exists(t, &new_key)? {
                return Err(Self::pk_duplicate(t, &new_key));
            }
        }
        // The row keeps what it held; under a new key too, since its old
        // entries go in the same commit.
        self.check_unique(t, &new_key, &row, Some(&old))?;
        if new_key != key {
            self.put_write((t.id(), key), None)?;
        }
        let row: Row = Arc::from(row);
        self.put_write((t.id(), new_key), Some(row.clone()))?;
        Ok(row)
    }

    /// Deletes the row with this key; returns whether it existed.
    pub fn delete(&mut self, table: &str, key: &[Value]) -> Result<bool> {
        self.check_open()?;
        let t = self.db.table(table)?;
        self.delete_in(&t, key)
    }

    pub fn delete_in(&mut self, t: &Arc<Table>, key: &[Value]) -> Result<bool> {
        self.check_write("DELETE")?;
        let key: Key = key.into();
        self.lock(t, &key)?;
        self.check_conflict(t, &key)?;
        let Some(old) = self.latest_in(t, &key)? else {
            return Ok(false);
        };
        self.note_checked(t);
        if t.indexes.iter().any(|ix| ix.def.unique) {
            // An inserter of a value this row frees waits for the outcome.
            for ix in &t.indexes {
                let vals = ix.values_of(&old);
                if ix.def.unique && !vals.iter().any(Value::is_null) {
                    self.lock_unique(t, ix, &vals)?;
                }
            }
        }
        self.put_write((t.id(), key), None)?;
        Ok(true)
    }
}
