//! Transactions: a private write set under row locks, logged as redo at
//! commit, durable or delayed as the database setting decides.
//!
//! Reads see a snapshot (see `mvcc.rs`) plus the transaction's own writes:
//! under READ COMMITTED a new snapshot per statement, under REPEATABLE READ
//! one for the whole transaction, taken by its first statement. Writers lock
//! each key they touch until the end of the transaction and work on the
//! newest committed version; under REPEATABLE READ a key changed by a commit
//! the snapshot does not see fails with a serialization failure, as
//! PostgreSQL's first-updater-wins. A fully
//! durable commit applies its changes (and releases its locks) only after its
//! commit record is hardened; a delayed one at once. Because a transaction
//! that reads or overwrites another's change always commits later in log
//! order, hardening it hardens what it depended on.

use crate::codec::{put_op_delete, put_op_put, put_txn_header};
use crate::database::Database;
use crate::error::{EngineError, KeyConflict, Result};
use crate::lock::{Acquired, LockKey, LockMode, WaitPolicy};
use crate::mvcc::{Csn, Snapshot};
use crate::savepoint::Savepoints;
use crate::schema::{DefaultExpr, DelayedDurability};
use crate::session::{CommitRequest, Session};
use crate::table::{value_list, Index, Table};
use crate::types::{coerce, now_micros, DataType, Key, Row, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use walden_log::Lsn;

mod ri;
pub use ri::RefPath;

/// Largest transaction record; bigger write sets stream as several parts.
const MAX_PART: usize = 256 * 1024;

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

/// A transaction's isolation level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// A snapshot per statement.
    #[default]
    ReadCommitted,
    /// One snapshot for the transaction; write conflicts fail (40001).
    RepeatableRead,
}

/// How a commit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitOutcome {
    /// End LSN of the commit record (`None` for a read-only transaction).
    pub lsn: Option<Lsn>,
    /// Whether the commit was hardened before it returned.
    pub durable: bool,
}

pub struct Transaction {
    db: Arc<Database>,
    session: Arc<Session>,
    txid: u64,
    /// Changes by (table id, key); `None` deletes.
    writes: BTreeMap<(u32, Key), Option<Row>>,
    locks: Vec<LockKey>,
    /// `SAVEPOINT`s set and not yet released (see `savepoint.rs`).
    savepoints: Savepoints,
    /// `READ ONLY`: writes and row locks are refused.
    read_only: bool,
    isolation: Isolation,
    /// What reads see; `None` until the first statement (reads outside a
    /// statement see the newest published state).
    snapshot: Option<Snapshot>,
    /// For each table written, the unique indexes (ids) every write to it
    /// was checked against: a unique index added since fails the commit
    /// rather than let unchecked rows in.
    checked: HashMap<u32, HashSet<u32>>,
    /// For each table written, its columns and constraints when first
    /// written: an ALTER TABLE since (rows of another shape, a new NOT NULL
    /// or CHECK) fails the commit rather than let rows it never saw in.
    shapes: HashMap<u32, crate::alter::Shape>,
    /// Rows this transaction gave values in a unique index, by (index id,
    /// values): candidates a later write of the same values checks against
    /// the write set (stale ones, after an update or ROLLBACK TO, are
    /// recognized there).
    own_unique: HashMap<(u32, Vec<Value>), Vec<Key>>,
    /// For each table written, the foreign keys (table id, name) on it or
    /// referencing it at its first write (see `ri.rs`).
    fk_seen: HashMap<u32, HashSet<(u32, String)>>,
    finished: bool,
}

/// What a locking read found (see [`Transaction::get_locked`]).
pub enum Locked {
    /// The row's latest version under the lock (`None`: it is gone).
    Row(Option<Row>),
    /// Another transaction holds a conflicting lock and the policy was not to wait.
    Busy,
}

impl Transaction {
    pub(crate) fn new(db: Arc<Database>, session: Arc<Session>) -> Self {
        let txid = db.next_txid.fetch_add(1, Relaxed);
        db.counters.transactions.fetch_add(1, Relaxed);
        Transaction {
            db,
            session,
            txid,
            writes: BTreeMap::new(),
            locks: Vec::new(),
            savepoints: Savepoints::default(),
            read_only: false,
            isolation: Isolation::ReadCommitted,
            snapshot: None,
            checked: HashMap::new(),
            shapes: HashMap::new(),
            own_unique: HashMap::new(),
            fk_seen: HashMap::new(),
            finished: false,
        }
    }

    /// Sets the isolation level (before the first statement).
    pub fn set_isolation(&mut self, level: Isolation) {
        self.isolation = level;
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// A statement starts: READ COMMITTED takes a new snapshot, REPEATABLE
    /// READ keeps the one its first statement took.
    pub fn begin_statement(&mut self) {
        if self.isolation == Isolation::ReadCommitted || self.snapshot.is_none() {
            // Release the old one first: it may be the oldest open.
            self.snapshot = None;
            self.snapshot = Some(self.db.vis.snapshot());
        }
    }

    /// Whether a statement has run (and fixed the snapshot's level).
    pub fn has_snapshot(&self) -> bool {
        self.snapshot.is_some()
    }

    /// The CSN reads see.
    pub fn read_csn(&self) -> Csn {
        match &self.snapshot {
            Some(s) => s.csn(),
            None => self.db.vis.visible(),
        }
    }

    /// REPEATABLE READ: refuses to write (or lock) a key whose newest
    /// committed version the snapshot does not see.
    fn check_conflict(&self, t: &Table, key: &Key) -> Result<()> {
        if self.isolation != Isolation::RepeatableRead {
            return Ok(());
        }
        let Some(snap) = &self.snapshot else {
            return Ok(());
        };
        if self.writes.contains_key(&(t.id(), key.clone())) {
            return Ok(());
        }
        match t.rows.latest(key) {
            Some((csn, row)) if csn > snap.csn() => {
                Err(EngineError::SerializationFailure(if row.is_some() {
                    "update"
                } else {
                    "delete"
                }))
            }
            _ => Ok(()),
        }
    }

    /// Whether this transaction has changed rows of table `id` (ALTER TABLE
    /// refuses a table its own open transaction wrote: its rows would not
    /// fit the new definition).
    pub fn has_written(&self, id: u32) -> bool {
        self.writes.keys().any(|(t, _)| *t == id)
    }

    pub fn id(&self) -> u64 {
        self.txid
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Whether the transaction has written anything.
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
    }

    fn check_open(&self) -> Result<()> {
        if self.finished {
            return Err(EngineError::TransactionFinished);
        }
        Ok(())
    }

    /// `SET TRANSACTION READ ONLY` / `READ WRITE`.
    pub fn set_read_only(&mut self, on: bool) {
        self.read_only = on;
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Refuses a write or a row lock in a read-only transaction.
    fn check_write(&self, what: &str) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(EngineError::ReadOnlyTransaction(what.to_string()));
        }
        Ok(())
    }

    fn lock(&mut self, table: &Table, key: &Key) -> Result<()> {
        self.lock_mode(table, key, LockMode::Update, WaitPolicy::Wait)
            .map(drop)
    }

    /// Takes the row lock in `mode`; `false` if it is busy and `policy` says
    /// not to wait.
    fn lock_mode(
        &mut self,
        table: &Table,
        key: &Key,
        mode: LockMode,
        policy: WaitPolicy,
    ) -> Result<bool> {
        self.db.check_writable()?;
        let lk: LockKey = (table.id(), key.clone());
        let sinks = self.session.wait_sinks();
        match self.db.locks.acquire(
            self.txid,
            &lk,
            mode,
            policy,
            &sinks,
            self.db.lock_timeout,
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
    fn put_write(&mut self, key: (u32, Key), w: Option<Row>) {
        if !self.savepoints.is_empty() {
            let writes = &self.writes;
            self.savepoints.record(&key, || writes.get(&key).cloned());
        }
        self.writes.insert(key, w);
    }

    /// Builds a full row from per-column values (`None` = default/identity).
    fn build_row(&self, table: &Table, values: Vec<Option<Value>>) -> Result<Vec<Value>> {
        let def = &table.def;
        if values.len() != def.columns.len() {
            return Err(EngineError::Data(format!(
                "table \"{}\" has {} columns but {} values were supplied",
                def.name,
                def.columns.len(),
                values.len()
            )));
        }
        let mut row = Vec::with_capacity(values.len());
        for (c, v) in def.columns.iter().zip(values) {
            let v = match v {
                Some(v) => coerce(v, &c.data_type)?,
                None if c.identity.is_some() => Value::Int(table.take_identity()),
                None => self.default_value(c)?,
            };
            if v.is_null() && !c.nullable {
                return Err(EngineError::NotNull {
                    table: def.name.clone(),
                    column: c.name.clone(),
                });
            }
            row.push(v);
        }
        check_size(&row, self.db.limits())?;
        Ok(row)
    }

    /// The value of a column's DEFAULT (NULL without one).
    pub fn default_value(&self, c: &crate::schema::ColumnDef) -> Result<Value> {
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
        })
    }

    fn check_row(&self, table: &Table, row: Vec<Value>) -> Result<Vec<Value>> {
        self.build_row(table, row.into_iter().map(Some).collect())
    }

    /// Whether the key holds a row in the newest committed state or the
    /// transaction's own (the caller holds the key's lock).
    fn exists(&self, table: &Table, key: &Key) -> bool {
        match self.writes.get(&(table.id(), key.clone())) {
            Some(w) => w.is_some(),
            None => table.rows.latest(key).is_some_and(|(_, r)| r.is_some()),
        }
    }

    /// The newest committed (or own) version of a key.
    fn latest_in(&self, t: &Table, key: &Key) -> Option<Row> {
        if let Some(w) = self.writes.get(&(t.id(), key.clone())) {
            return w.clone();
        }
        t.rows.latest(key).and_then(|(_, r)| r)
    }

    fn pk_duplicate(t: &Table, key: &Key) -> EngineError {
        EngineError::DuplicateKey(Box::new(KeyConflict {
            table: t.name().to_string(),
            constraint: t.def.pkey_name(),
            columns: t.def.column_list(&t.def.primary_key),
            key: value_list(key),
        }))
    }

    /// Notes which unique indexes of `t` this write was checked against:
    /// the transaction keeps those every write to the table was.
    fn note_checked(&mut self, t: &Table) {
        self.shapes
            .entry(t.id())
            .or_insert_with(|| crate::alter::Shape::of(&t.def));
        self.note_foreign_keys(t.id());
        let ids = unique_ids(t);
        self.checked
            .entry(t.id())
            .and_modify(|s| s.retain(|id| ids.contains(id)))
            .or_insert(ids);
    }

    /// The lock a writer of `vals` into unique index `ix` holds until it
    /// ends, so two writers of one value serialize and the second sees the
    /// first's outcome (and one that removes the value is waited for).
    fn lock_unique(&mut self, t: &Table, ix: &Index, vals: &[Value]) -> Result<()> {
        let mut k = Vec::with_capacity(vals.len() + 1);
        k.push(Value::Int(ix.def.id as i64));
        k.extend_from_slice(vals);
        let lk: LockKey = (t.id() | UNIQUE_LOCK_SPACE, k.into_boxed_slice());
        let sinks = self.session.wait_sinks();
        match self.db.locks.acquire(
            self.txid,
            &lk,
            LockMode::Update,
            WaitPolicy::Wait,
            &sinks,
            self.db.lock_timeout,
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
    fn check_unique(
        &mut self,
        t: &Table,
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
            for entry in ix.entries.latest_with_prefix(&vals) {
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
    fn check_definitions(&self, cat: &crate::database::Catalog) -> Result<()> {
        for (tid, shape) in &self.shapes {
            if let Some(cur) = cat.table_by_id(*tid) {
                if !shape.matches(&cur.def) {
                    return Err(EngineError::SerializationFailure(
                        "could not serialize access due to a concurrent ALTER TABLE",
                    ));
                }
            }
        }
        for (tid, seen) in &self.checked {
            if let Some(cur) = cat.table_by_id(*tid) {
                if !unique_ids(cur).is_subset(seen) {
                    return Err(EngineError::SerializationFailure(
                        "could not serialize access due to a unique index created concurrently",
                    ));
                }
            }
        }
        Ok(())
    }

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
        let explicit_identity = t
            .def
            .identity_column()
            .is_some_and(|(i, _)| values.get(i).is_some_and(|v| v.is_some()));
        let row = self.build_row(t, values)?;
        let key: Key = match t.key_of(&row) {
            Some(k) => k,
            None => vec![Value::Int(t.next_rowid.fetch_add(1, Relaxed))].into_boxed_slice(),
        };
        self.lock(t, &key)?;
        if self.exists(t, &key) {
            return Err(Self::pk_duplicate(t, &key));
        }
        self.check_unique(t, &key, &row, None)?;
        if explicit_identity {
            t.observe(&key, &row);
        }
        let row: Row = Arc::from(row);
        self.put_write((t.id(), key), Some(row.clone()));
        Ok(row)
    }

    /// The row with this key as this transaction sees it.
    pub fn get(&self, table: &str, key: &[Value]) -> Result<Option<Row>> {
        let t = self.db.table(table)?;
        Ok(self.get_in(&t, key))
    }

    pub fn get_in(&self, t: &Table, key: &[Value]) -> Option<Row> {
        if !self.writes.is_empty() {
            if let Some(w) = self.writes.get(&(t.id(), key.into())) {
                return w.clone();
            }
        }
        match &self.snapshot {
            Some(s) => t.rows.get_at(key, s.csn()),
            None => t.rows.get_visible(key, &self.db.vis),
        }
    }

    /// Locks the row's key, then reads its latest committed (or own) version.
    pub fn get_for_update(&mut self, table: &str, key: &[Value]) -> Result<Option<Row>> {
        let t = self.db.table(table)?;
        match self.get_locked(&t, key, LockMode::Update, WaitPolicy::Wait)? {
            Locked::Row(r) => Ok(r),
            Locked::Busy => Err(EngineError::LockNotAvailable(t.name().to_string())),
        }
    }

    /// Locks the row's key in `mode` (a locking read, or the first step of
    /// an UPDATE or DELETE), then reads its latest committed (or own) version.
    pub fn get_locked(
        &mut self,
        t: &Table,
        key: &[Value],
        mode: LockMode,
        policy: WaitPolicy,
    ) -> Result<Locked> {
        self.check_write(match mode {
            LockMode::Update | LockMode::NoKeyUpdate => "SELECT FOR UPDATE",
            LockMode::Share | LockMode::KeyShare => "SELECT FOR SHARE",
        })?;
        let key: Key = key.into();
        if !self.lock_mode(t, &key, mode, policy)? {
            return Ok(Locked::Busy);
        }
        self.check_conflict(t, &key)?;
        Ok(Locked::Row(self.latest_in(t, &key)))
    }

    /// `SAVEPOINT name`.
    pub fn savepoint(&mut self, name: &str) -> Result<()> {
        self.check_open()?;
        self.savepoints.push(name, self.locks.len());
        Ok(())
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
        for undo in self.savepoints.rollback_to(at) {
            for (k, before) in undo.writes {
                match before {
                    Some(w) => self.writes.insert(k, w),
                    None => self.writes.remove(&k),
                };
            }
            for (lk, mode) in undo.upgrades {
                self.db.locks.downgrade(self.txid, &lk, mode);
            }
            keep = keep.min(undo.locks_held);
        }
        if keep < self.locks.len() {
            let gone = self.locks.split_off(keep);
            self.db.locks.release(self.txid, gone);
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

    /// Rows with keys in `range`, in key order, as this transaction sees them.
    pub fn scan(&self, table: &str, range: (Bound<Key>, Bound<Key>)) -> Result<Vec<(Key, Row)>> {
        let t = self.db.table(table)?;
        Ok(self.scan_in(&t, range))
    }

    pub fn scan_in(&self, t: &Table, range: (Bound<Key>, Bound<Key>)) -> Vec<(Key, Row)> {
        if range_is_empty(&range) {
            return Vec::new();
        }
        // A scan outside a statement holds a snapshot of its own while it
        // runs: it reads in chunks, and what it started on must stay.
        let own;
        let csn = match &self.snapshot {
            Some(s) => s.csn(),
            None => {
                own = self.db.vis.snapshot();
                own.csn()
            }
        };
        let base = t.rows.scan_at((range.0.as_ref(), range.1.as_ref()), csn);
        let lo = bound_map(&range.0, t.id(), false);
        let hi = bound_map(&range.1, t.id(), true);
        if self.writes.range((lo.clone(), hi.clone())).next().is_none() {
            return base;
        }
        let mut out: BTreeMap<Key, Row> = base.into_iter().collect();
        for ((tid, k), w) in self.writes.range((lo, hi)) {
            if *tid != t.id() {
                continue;
            }
            match w {
                Some(r) => out.insert(k.clone(), r.clone()),
                None => out.remove(k),
            };
        }
        out.into_iter().collect()
    }

    /// Calls `f` with each row in `range`, in key order, as this transaction
    /// sees it; without the key copies of `scan_in` when the transaction has
    /// not written in the range.
    pub fn scan_each<E>(
        &self,
        t: &Table,
        range: (Bound<Key>, Bound<Key>),
        mut f: impl FnMut(&Row) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let lo = bound_map(&range.0, t.id(), false);
        let hi = bound_map(&range.1, t.id(), true);
        if range_is_empty(&range) {
            return Ok(());
        }
        if self.writes.range((lo, hi)).next().is_some() {
            for (_, r) in self.scan_in(t, range) {
                f(&r)?;
            }
            return Ok(());
        }
        let own;
        let csn = match &self.snapshot {
            Some(s) => s.csn(),
            None => {
                own = self.db.vis.snapshot();
                own.csn()
            }
        };
        t.rows
            .for_each_at((range.0.as_ref(), range.1.as_ref()), csn, f)
    }

    /// Rows found through index `ix` of `t`, as this transaction sees them,
    /// in row-key order: those whose entries (indexed values ++ row key)
    /// start at `lo` and go on while `more` holds, and every row the
    /// transaction itself wrote there. `None` when the snapshot is older
    /// than the index (the caller scans the table instead). The caller
    /// still applies its whole filter: entries only narrow the search.
    pub fn index_scan(
        &self,
        t: &Table,
        ix: usize,
        lo: Bound<Key>,
        more: impl Fn(&Key) -> bool,
    ) -> Option<Vec<(Key, Row)>> {
        let ix = t.indexes.get(ix)?;
        let own;
        let csn = match &self.snapshot {
            Some(s) => s.csn(),
            None => {
                own = self.db.vis.snapshot();
                own.csn()
            }
        };
        if !ix.usable_at(csn) {
            return None;
        }
        ix.seeks.fetch_add(1, Relaxed);
        let entries = ix
            .entries
            .scan_while_at((lo.as_ref(), Bound::Unbounded), csn, &more);
        let mut out: BTreeMap<Key, Row> = BTreeMap::new();
        let mine = |pk: &[Value]| {
            !self.writes.is_empty() && self.writes.contains_key(&(t.id(), pk.into()))
        };
        for (entry, _) in entries {
            let pk = ix.row_key(&entry);
            if mine(pk) {
                continue;
            }
            if let Some(r) = t.rows.get_at(pk, csn) {
                out.insert(pk.into(), r);
            }
        }
        let (wlo, whi) = (
            bound_map(&Bound::Unbounded, t.id(), false),
            bound_map(&Bound::Unbounded, t.id(), true),
        );
        for ((_, pk), w) in self.writes.range((wlo, whi)) {
            if let Some(r) = w {
                let mut e = ix.values_of(r);
                e.extend_from_slice(pk);
                let e: Key = e.into_boxed_slice();
                let after_lo = match &lo {
                    Bound::Included(l) => e >= *l,
                    Bound::Excluded(l) => e > *l,
                    Bound::Unbounded => true,
                };
                if after_lo && more(&e) {
                    out.insert(pk.clone(), r.clone());
                }
            }
        }
        Some(out.into_iter().collect())
    }

    /// Every row of the table.
    pub fn scan_all(&self, table: &str) -> Result<Vec<(Key, Row)>> {
        self.scan(table, (Bound::Unbounded, Bound::Unbounded))
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
        let Some(old) = self.latest_in(t, &key) else {
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
            if self.exists(t, &new_key) {
                return Err(Self::pk_duplicate(t, &new_key));
            }
        }
        // The row keeps what it held; under a new key too, since its old
        // entries go in the same commit.
        self.check_unique(t, &new_key, &row, Some(&old))?;
        if new_key != key {
            self.put_write((t.id(), key), None);
        }
        let row: Row = Arc::from(row);
        self.put_write((t.id(), new_key), Some(row.clone()));
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
        let Some(old) = self.latest_in(t, &key) else {
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
        self.put_write((t.id(), key), None);
        Ok(true)
    }

    /// Whether this commit will be delayed, given the database setting.
    fn resolve(&self, request: CommitRequest) -> bool {
        let wants = match request {
            CommitRequest::Delayed => true,
            CommitRequest::Durable => false,
            CommitRequest::Default => self.session.delayed_default(),
        };
        match self.db.settings.read().delayed_durability {
            DelayedDurability::Disabled => false,
            DelayedDurability::Allowed => wants,
            DelayedDurability::Forced => true,
        }
    }

    /// Encodes the write set as one or more redo records, the last one
    /// carrying the commit flag.
    fn encode(&self) -> Vec<Vec<u8>> {
        let cat = self.db.catalog.read();
        let mut parts = Vec::new();
        let mut body = Vec::with_capacity(64);
        let mut n = 0;
        let flush = |parts: &mut Vec<Vec<u8>>, body: &mut Vec<u8>, n: &mut usize, commit: bool| {
            let mut rec = Vec::with_capacity(body.len() + 16);
            put_txn_header(&mut rec, self.txid, commit, *n);
            rec.extend_from_slice(body);
            parts.push(rec);
            body.clear();
            *n = 0;
        };
        for ((tid, key), w) in &self.writes {
            match w {
                Some(row) => {
                    let hidden = cat.table_by_id(*tid).is_none_or(|t| t.has_hidden_key());
                    put_op_put(&mut body, *tid, hidden.then_some(&key[..]), row)
                }
                None => put_op_delete(&mut body, *tid, key),
            }
            n += 1;
            if body.len() >= MAX_PART {
                flush(&mut parts, &mut body, &mut n, false);
            }
        }
        flush(&mut parts, &mut body, &mut n, true);
        parts
    }

    /// Commits. The database's `DELAYED_DURABILITY` and `request` decide
    /// whether the commit waits for its log to be hardened.
    pub fn commit(mut self, request: CommitRequest) -> Result<CommitOutcome> {
        self.check_open()?;
        self.finished = true;
        self.snapshot = None;
        if self.writes.is_empty() {
            self.release();
            return Ok(CommitOutcome {
                lsn: None,
                durable: true,
            });
        }
        let delayed = self.resolve(request);
        let parts = self.encode();
        let session = self.session.clone();
        let sinks = session.wait_sinks();
        let db = self.db.clone();
        let result = (|| {
            let _gate = db.gate.read();
            // A table dropped since the change was made cannot take it.
            {
                let cat = db.catalog.read();
                if let Some(((tid, _), _)) = self
                    .writes
                    .iter()
                    .find(|((tid, _), _)| cat.table_by_id(*tid).is_none())
                {
                    return Err(EngineError::UnknownTable(format!(
                        "(table id {tid}, dropped)"
                    )));
                }
            }
            {
                let cat = db.catalog.read();
                self.check_definitions(&cat)?;
                self.check_foreign_keys(&cat)?;
            }
            db.check_writable()?;
            if !delayed {
                db.check_commit_quorum()?;
            }
            // Registered before the first append, gone after the publish.
            let _inflight = db.inflight.enter(self.txid, &db.log);
            let mut lsn = 0;
            for p in &parts {
                lsn = db.log.append(p, &sinks)?;
            }
            let hardened = if delayed {
                db.log.acknowledge_delayed(lsn, &sinks)
            } else {
                db.log.wait_hardened(lsn, &sinks)
            };
            hardened.map_err(|source| EngineError::CommitOutcomeUnknown { lsn, source })?;
            self.apply();
            Ok(lsn)
        })();
        self.release();
        // Synchronous secondaries are waited for outside the gate and the row
        // locks, as PostgreSQL waits for its standbys: the commit is applied
        // locally already, and a later commit that saw it waits for a higher
        // LSN anyway.
        let lsn = result?;
        if !delayed {
            db.harden_remote(lsn, &sinks)?;
        }
        db.counters.write_transactions.fetch_add(1, Relaxed);
        if delayed {
            db.counters.delayed_commits.fetch_add(1, Relaxed);
        } else {
            db.counters.durable_commits.fetch_add(1, Relaxed);
        }
        Ok(CommitOutcome {
            lsn: Some(lsn),
            durable: !delayed,
        })
    }

    /// Installs the write set as new versions under one CSN, published
    /// once every table has them.
    fn apply(&mut self) {
        let cat = self.db.catalog.read();
        let writes = std::mem::take(&mut self.writes);
        let publish = self.db.vis.begin_publish();
        let mut it = writes.into_iter().peekable();
        while let Some(((tid, key), w)) = it.next() {
            let mut batch = vec![(key, w)];
            while let Some(((next, _), _)) = it.peek() {
                if *next != tid {
                    break;
                }
                let Some(((_, k), w)) = it.next() else { break };
                batch.push((k, w));
            }
            if let Some(t) = cat.table_by_id(tid) {
                t.install(batch, publish.csn, publish.horizon);
            }
        }
    }

    /// Discards the transaction's changes.
    pub fn rollback(mut self) {
        self.finish_rollback();
    }

    fn finish_rollback(&mut self) {
        if !self.finished {
            self.finished = true;
            self.writes.clear();
            self.own_unique.clear();
            self.savepoints.clear();
            self.snapshot = None;
            self.release();
            self.db.counters.rollbacks.fetch_add(1, Relaxed);
        }
    }

    fn release(&mut self) {
        if !self.locks.is_empty() {
            self.db
                .locks
                .release(self.txid, std::mem::take(&mut self.locks));
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.finish_rollback();
    }
}

/// Lock keys of unique-index values live beside row locks, told apart by
/// this bit of the table id (table ids stay far below it).
const UNIQUE_LOCK_SPACE: u32 = 1 << 31;

fn unique_ids(t: &Table) -> HashSet<u32> {
    t.indexes
        .iter()
        .filter(|i| i.def.unique)
        .map(|i| i.def.id)
        .collect()
}

/// Whether a range selects nothing (`BTreeMap::range` panics on such ranges).
fn range_is_empty(r: &(Bound<Key>, Bound<Key>)) -> bool {
    use Bound::*;
    match (&r.0, &r.1) {
        (Included(a), Included(b)) => a > b,
        (Included(a), Excluded(b)) | (Excluded(a), Included(b)) | (Excluded(a), Excluded(b)) => {
            a >= b
        }
        _ => false,
    }
}

/// Maps a key bound into the write set's (table, key) space; an unbounded
/// end stays within the table.
fn bound_map(b: &Bound<Key>, tid: u32, upper: bool) -> Bound<(u32, Key)> {
    match b {
        Bound::Included(k) => Bound::Included((tid, k.clone())),
        Bound::Excluded(k) => Bound::Excluded((tid, k.clone())),
        Bound::Unbounded if upper => Bound::Excluded((tid + 1, Key::default())),
        Bound::Unbounded => Bound::Included((tid, Key::default())),
    }
}
