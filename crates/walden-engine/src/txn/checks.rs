//! Checks on a transaction's writes: row locks, row building, unique and definition checks.

use super::Transaction;
use crate::error::{EngineError, KeyConflict, Result};
use crate::lock::{Acquired, LockKey, LockMode, WaitPolicy};
use crate::schema::DefaultExpr;
use crate::table::{value_list, Index, Table};
use crate::types::{coerce, now_micros, DataType, Key, Row, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

impl Transaction {
    /// Refuses a write or a row lock in a read-only transaction.
    pub(super) fn check_write(&self, what: &str) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(EngineError::ReadOnlyTransaction(what.to_string()));
        }
        Ok(())
    }

    pub(super) fn lock(&mut self, table: &Table, key: &Key) -> Result<()> {
        self.lock_mode(table, key, LockMode::Update, WaitPolicy::Wait)
            .map(drop)
    }

    /// Whether this transaction holds the table's ACCESS EXCLUSIVE lock (it
    /// created or truncated the table, or locked it so): no other
    /// transaction can reach its rows until this one ends, so row and
    /// unique-value locks would only cost memory, one per row of a bulk
    /// load. (Table locks are held to the end, savepoints or not.)
    pub(super) fn holds_exclusively(&self, table: u32) -> bool {
        self.table_locks
            .lock()
            .get(table)
            .is_some_and(|(m, _)| m == crate::lock::TableLockMode::AccessExclusive)
    }

    /// Takes the row lock in `mode`; `false` if it is busy and `policy` says
    /// not to wait.
    pub(super) fn lock_mode(
        &mut self,
        table: &Table,
        key: &Key,
        mode: LockMode,
        policy: WaitPolicy,
    ) -> Result<bool> {
        self.db.check_writable()?;
        // The table first: ROW EXCLUSIVE for writes, ROW SHARE for row
        // locks that change nothing (as PostgreSQL's FOR SHARE / KEY SHARE).
        let intent = if mode >= LockMode::NoKeyUpdate {
            crate::lock::TableLockMode::RowExclusive
        } else {
            crate::lock::TableLockMode::RowShare
        };
        if !self.lock_table(table, intent, policy)? {
            return Ok(false);
        }
        if self.holds_exclusively(table.id()) {
            return Ok(true);
        }
        let lk: LockKey = (table.id(), key.clone());
        let sinks = self.session.wait_sinks();
        match self.db.txns.locks.acquire(
            self.txid,
            &lk,
            mode,
            policy,
            &sinks,
            self.db.txns.lock_timeout,
            &self.session.cancel,
        ) {
            Ok(Acquired::New) => {
                self.locks.push(lk);
                Ok(true)
            }
            Ok(Acquired::Held) => Ok(true),
            Ok(Acquired::Upgraded(previous)) => {
                self.savepoints.record_upgrade(lk, previous);
                Ok(true)
            }
            Ok(Acquired::Busy) => Ok(false),
            Err(e) => {
                if matches!(e, EngineError::Deadlock { .. }) {
                    self.db.counters.deadlocks.fetch_add(1, Relaxed);
                }
                Err(e)
            }
        }
    }

    /// Puts a change into the write set, noting for the newest savepoint
    /// what the key had before.
    pub(super) fn put_write(&mut self, key: (u32, Key), w: Option<Row>) -> Result<()> {
        if let Some(s) = &self.ssi {
            self.db.txns.ssi.check_write(s, &key)?;
        }
        let max = self.db.limits.max_transaction_bytes;
        let before = self
            .writes
            .get(&key)
            .map_or(0, |old| write_bytes(&key.1, old));
        let entry = write_bytes(&key.1, &w);
        let bytes = (self.write_bytes + entry).saturating_sub(before);
        if max > 0 && bytes + self.ddl_held.load(Relaxed) > max {
            return Err(EngineError::TransactionTooLarge { max });
        }
        self.write_bytes = bytes;
        if !self.savepoints.is_empty() {
            let writes = &self.writes;
            self.savepoints.record(&key, || writes.get(&key).cloned());
        }
        self.note_dirty(&key, entry);
        self.writes.insert(key, w);
        self.changes += 1;
        self.log_as_you_go()?;
        self.spill_rows()
    }

    /// Builds a full row from per-column values (`None` = default/identity).
    /// The row an insert of `values` into `table` would store (defaults,
    /// identity values and coercions applied) without storing it: a
    /// partitioned table's insert routes it to a partition by its values.
    pub fn complete_row(
        &mut self,
        table: &Table,
        values: Vec<Option<Value>>,
    ) -> Result<Vec<Value>> {
        self.check_write("INSERT")?;
        self.build_row(table, values)
    }

    /// [`Transaction::complete_row`] without its NOT NULL check: the row a
    /// BEFORE trigger is given, which it may still fill in (the insert
    /// checks what it returns).
    pub fn defaults_taken(
        &mut self,
        table: &Table,
        values: Vec<Option<Value>>,
    ) -> Result<Vec<Value>> {
        self.check_write("INSERT")?;
        self.fill_row(table, values)
    }

    pub(super) fn build_row(
        &self,
        table: &Table,
        values: Vec<Option<Value>>,
    ) -> Result<Vec<Value>> {
        let row = self.fill_row(table, values)?;
        let def = &table.def;
        if let Some(c) = def
            .columns
            .iter()
            .zip(&row)
            .find_map(|(c, v)| (v.is_null() && !c.nullable).then_some(c))
        {
            return Err(EngineError::NotNull {
                table: def.name.clone(),
                column: c.name.clone(),
                row: Some(crate::table::value_list(&row)),
            });
        }
        check_size(&row, self.db.limits())?;
        Ok(row)
    }

    fn fill_row(&self, table: &Table, values: Vec<Option<Value>>) -> Result<Vec<Value>> {
        let def = &table.def;
        if values.len() != def.columns.len() {
            return Err(EngineError::Data(format!(
                "table \"{}\" has {} columns but {} values were supplied",
                def.name,
                def.columns.len(),
                values.len()
            )));
        }
        // The given values are converted first (PostgreSQL converts
        // constants when it plans), then every default is taken, then NOT
        // NULL is checked, as PostgreSQL evaluates a row: a row refused for a
        // NULL still draws its sequences' values, one refused for a value
        // out of range does not.
        let given = def
            .columns
            .iter()
            .zip(values)
            .map(|(c, v)| v.map(|v| coerce_column(v, c)).transpose())
            .collect::<Result<Vec<_>>>()?;
        let mut row = Vec::with_capacity(given.len());
        for (c, v) in def.columns.iter().zip(given) {
            row.push(match v {
                Some(v) => v,
                None if c.identity.is_some() => Value::Int(table.take_identity()),
                None => self.default_value(c)?,
            });
        }
        Ok(row)
    }

    /// The value of a column's DEFAULT (NULL without one).
    pub fn default_value(&self, c: &crate::schema::ColumnDef) -> Result<Value> {
        let v = self.default_unrounded(c)?;
        Ok(match c.time_precision {
            Some(p) => crate::types::datetime::round_to_precision(v, p),
            None => v,
        })
    }

    fn default_unrounded(&self, c: &crate::schema::ColumnDef) -> Result<Value> {
        Ok(match &c.default {
            None => Value::Null,
            Some(DefaultExpr::Value(v)) => coerce(v.clone(), &c.data_type)?,
            // An instant: a `timestamp` column gets the session's
            // local time, as PostgreSQL's now() cast does.
            Some(DefaultExpr::Now) => coerce(Value::TimestampTz(now_micros()), &c.data_type)?,
            Some(DefaultExpr::Today) => coerce(
                coerce(Value::TimestampTz(now_micros()), &DataType::Date)?,
                &c.data_type,
            )?,
            Some(DefaultExpr::NewUuid) => {
                coerce(Value::Uuid(uuid::Uuid::new_v4().as_u128()), &c.data_type)?
            }
            Some(DefaultExpr::NextVal(s)) => {
                coerce(Value::Int(self.db.nextval(&self.session, s)?), &c.data_type)?
            }
            Some(DefaultExpr::Expr(_)) => {
                return Err(EngineError::DefaultNotEvaluated(c.name.clone()))
            }
        })
    }

    pub(super) fn check_row(&self, table: &Table, row: Vec<Value>) -> Result<Vec<Value>> {
        self.build_row(table, row.into_iter().map(Some).collect())
    }

    /// Whether the key holds a row in the newest committed state or the
    /// transaction's own (the caller holds the key's lock).
    pub(super) fn exists(&self, table: &Table, key: &Key) -> Result<bool> {
        Ok(match self.own_write(table, key) {
            Some(w) => w.is_some(),
            None => table.rows.latest(key)?.is_some_and(|(_, r)| r.is_some()),
        })
    }

    /// This transaction's own change of a key, if it made one. (The look-up
    /// needs an owned key: a transaction's first write skips the copy.)
    fn own_write(&self, t: &Table, key: &Key) -> Option<&Option<Row>> {
        if self.writes.is_empty() {
            return None;
        }
        self.writes.get(&(t.id(), key.clone()))
    }

    /// The newest committed (or own) version of a key.
    pub(super) fn latest_in(&self, t: &Table, key: &Key) -> Result<Option<Row>> {
        if let Some(w) = self.own_write(t, key) {
            return Ok(w.clone());
        }
        Ok(t.rows.latest(key)?.and_then(|(_, r)| r))
    }

    pub(super) fn pk_duplicate(t: &Table, key: &Key) -> EngineError {
        EngineError::DuplicateKey(Box::new(KeyConflict {
            table: t.name().to_string(),
            constraint: t.def.pkey_name(),
            columns: t.def.column_list(&t.def.primary_key),
            key: value_list(key),
        }))
    }

    /// Notes which unique indexes of `t` this write was checked against:
    /// the transaction keeps those every write to the table was.
    pub(super) fn note_checked(&mut self, t: &Arc<Table>) {
        use std::collections::hash_map::Entry;
        // Every write comes here: after a table's first, nothing is
        // allocated (the unique indexes seen are narrowed in place).
        match self.noted.entry(t.id()) {
            Entry::Occupied(mut e) => {
                e.get_mut()
                    .unique
                    .retain(|id| unique_ids(t).any(|u| u == *id));
            }
            Entry::Vacant(v) => {
                let fks = super::ri::fk_names(&self.db.catalog.read(), t.id());
                v.insert(super::Noted {
                    unique: unique_ids(t).collect(),
                    shape: crate::alter::Shape::of(t),
                    fks,
                });
            }
        }
    }

    /// The lock a writer of `vals` into unique index `ix` holds until it
    /// ends, so two writers of one value serialize and the second sees the
    /// first's outcome (and one that removes the value is waited for).
    pub(super) fn lock_unique(&mut self, t: &Table, ix: &Index, vals: &[Value]) -> Result<()> {
        if self.holds_exclusively(t.id()) {
            return Ok(());
        }
        let mut k = Vec::with_capacity(vals.len() + 1);
        k.push(Value::Int(ix.def.id as i64));
        k.extend_from_slice(vals);
        let lk: LockKey = (t.id() | UNIQUE_LOCK_SPACE, k.into_boxed_slice());
        let sinks = self.session.wait_sinks();
        match self.db.txns.locks.acquire(
            self.txid,
            &lk,
            LockMode::Update,
            WaitPolicy::Wait,
            &sinks,
            self.db.txns.lock_timeout,
            &self.session.cancel,
        )? {
            Acquired::New => self.locks.push(lk),
            Acquired::Upgraded(previous) => self.savepoints.record_upgrade(lk, previous),
            Acquired::Held | Acquired::Busy => {}
        }
        Ok(())
    }

    /// Checks that `row` (to be stored at `key`, replacing `old`) takes no
    /// value another row holds in a unique index of `t`.
    pub(super) fn check_unique(
        &mut self,
        t: &Arc<Table>,
        key: &Key,
        row: &[Value],
        old: Option<&Row>,
    ) -> Result<()> {
        self.note_checked(t);
        for ix in &t.indexes {
            let old_vals = old.map(|o| ix.values_of(o));
            if !ix.def.unique {
                continue;
            }
            let vals = ix.values_of(row);
            if old_vals.as_ref() == Some(&vals) {
                continue;
            }
            // A value this row gives up stays locked until the end, so a
            // writer who wants it waits for the outcome.
            if let Some(ov) = old_vals.filter(|v| !v.iter().any(Value::is_null)) {
                self.lock_unique(t, ix, &ov)?;
            }
            if vals.iter().any(Value::is_null) {
                continue;
            }
            self.lock_unique(t, ix, &vals)?;
            let dup = || {
                EngineError::DuplicateKey(Box::new(KeyConflict {
                    table: t.name().to_string(),
                    constraint: ix.def.name.clone(),
                    columns: t.def.column_list(&ix.def.columns),
                    key: value_list(&vals),
                }))
            };
            let holds = |tx: &Self, pk: &[Value]| -> bool {
                match tx.writes.get(&(t.id(), pk.into())) {
                    Some(Some(r)) => ix.values_of(r) == vals,
                    Some(None) => false,
                    None => true,
                }
            };
            for entry in ix.entries.latest_with_prefix(&vals)? {
                let pk = ix.row_key(&entry);
                if pk != &key[..] && holds(self, pk) {
                    return Err(dup());
                }
            }
            let slot = (ix.def.id, vals.clone());
            if let Some(cands) = self.own_unique.get(&slot) {
                for pk in cands {
                    if pk != key
                        && self.writes.contains_key(&(t.id(), pk.clone()))
                        && holds(self, pk)
                    {
                        return Err(dup());
                    }
                }
            }
            self.own_unique.entry(slot).or_default().push(key.clone());
        }
        Ok(())
    }

    /// Before a commit is logged: a unique index created on a written
    /// table after its writes were checked could not have checked them.
    pub(super) fn check_definitions(&self, cat: &crate::database::Catalog) -> Result<()> {
        for (tid, noted) in &self.noted {
            if let Some(cur) = cat.table_by_id(*tid) {
                if !noted.shape.matches(&cur.def) {
                    return Err(EngineError::SerializationFailure("ALTER TABLE"));
                }
            }
        }
        for (tid, noted) in &self.noted {
            if let Some(cur) = cat.table_by_id(*tid) {
                if !unique_ids(cur).all(|id| noted.unique.contains(&id)) {
                    return Err(EngineError::SerializationFailure(
                        "creation of a unique index",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Refuses a row with a value or a total over the limits: checked when the
/// row is made, so its log record never exceeds what recovery reads back.
fn check_size(row: &[Value], limits: crate::database::Limits) -> Result<()> {
    let mut total = 0u64;
    for v in row {
        let n = match v {
            Value::Text(t) => t.len() as u64,
            Value::Bytes(b) => b.len() as u64,
            _ => 16,
        };
        if n > limits.max_value_bytes {
            return Err(EngineError::ValueTooLarge {
                size: n,
                max: limits.max_value_bytes,
            });
        }
        total += n + 8;
    }
    if total > limits.max_row_bytes {
        return Err(EngineError::RowTooLarge {
            size: total,
            max: limits.max_row_bytes,
        });
    }
    Ok(())
}

/// Lock keys of unique-index values live beside row locks, told apart by
/// this bit of the table id (table ids stay far below it).
const UNIQUE_LOCK_SPACE: u32 = 1 << 31;

fn unique_ids(t: &Table) -> impl Iterator<Item = u32> + '_ {
    t.indexes.iter().filter(|i| i.def.unique).map(|i| i.def.id)
}

/// What one write-set entry holds in memory, roughly: the key and row
/// (see `budget::held_bytes`), the map's node, and the row lock the writer
/// holds to commit.
pub(super) fn write_bytes(key: &Key, w: &Option<Row>) -> u64 {
    use crate::budget::{held_bytes, ENTRY_BYTES};
    ENTRY_BYTES + held_bytes(key) + w.as_deref().map_or(0, held_bytes)
}

/// A value as a column stores it: its type's coercion, then the column's
/// fractional-second precision (`timestamp(2)`).
pub fn coerce_column(v: Value, c: &crate::schema::ColumnDef) -> Result<Value> {
    let v = coerce(v, &c.data_type)?;
    Ok(match c.time_precision {
        Some(p) => crate::types::datetime::round_to_precision(v, p),
        None => v,
    })
}
