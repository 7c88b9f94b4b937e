//! A table: its definition, its rows' versions and its secondary indexes'
//! entries, kept in memory in key order (see `mvcc.rs`).

use crate::budget::BuildBudget;
use crate::error::{EngineError, KeyConflict, Result};
use crate::mvcc::{Csn, VersionedRows};
use crate::schema::{IndexDef, TableDef};
use crate::types::{Key, Row, Value};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

pub struct Table {
    pub def: TableDef,
    /// Committed row versions by primary key (or hidden row id). Shared with
    /// the table's next definition when an index is added or dropped.
    pub rows: Arc<VersionedRows>,
    /// Entries of `def.indexes`, in the same order.
    pub indexes: Vec<Arc<Index>>,
    /// Next identity value to hand out. Like SQL Server, identity values are
    /// not transactional: a rollback leaves a gap. Shared across the table's
    /// definitions, so a transaction holding an older one cannot reuse a value.
    pub(crate) next_identity: Arc<AtomicI64>,
    /// Next hidden row id (tables without a primary key).
    pub(crate) next_rowid: Arc<AtomicI64>,
    /// What the next checkpoint must write to the base store (shared, like
    /// `rows`, with the table's next definition).
    pub(crate) unsaved: Arc<Mutex<Unsaved>>,
}

/// The rows of a table changed since the base store last received it: the
/// keys a commit installed, or the whole table (a table the store has never
/// held, or whose rows were replaced: TRUNCATE, a new primary key).
#[derive(Debug, Default)]
pub(crate) struct Unsaved {
    pub keys: BTreeSet<Key>,
    pub whole: bool,
}

impl Unsaved {
    pub(crate) fn all() -> Self {
        Unsaved {
            keys: BTreeSet::new(),
            whole: true,
        }
    }

    /// Puts back what a failed checkpoint took.
    pub fn restore(&mut self, taken: Unsaved) {
        self.whole |= taken.whole;
        if !self.whole {
            self.keys.extend(taken.keys);
        } else {
            self.keys.clear();
        }
    }
}

/// A secondary index's entries: (indexed values ++ row key) -> empty row,
/// versioned by the same CSNs as the rows, so a snapshot reads the index
/// exactly as it reads the table.
#[derive(Debug)]
pub struct Index {
    pub def: IndexDef,
    pub entries: VersionedRows,
    /// The index was built from the state published at this CSN: an older
    /// snapshot may see rows it has no entries for, and must scan instead.
    pub valid_from: Csn,
    /// Searches through the index (`sys.dm_db_index_usage_stats.user_seeks`).
    pub seeks: AtomicU64,
    /// Ordered walks through the index with no leading value fixed
    /// (`ORDER BY ... LIMIT`; `user_scans`).
    pub scans: AtomicU64,
    /// Commits that changed its entries (`user_updates`).
    pub updates: AtomicU64,
    /// Entries the next checkpoint must write to the base store.
    pub(crate) unsaved: Mutex<Unsaved>,
}

impl Index {
    /// A new index over `def`, with no entries yet; the store has none of
    /// them.
    pub(crate) fn new(def: IndexDef, valid_from: Csn) -> Index {
        Index {
            def,
            entries: VersionedRows::default(),
            valid_from,
            seeks: AtomicU64::new(0),
            scans: AtomicU64::new(0),
            updates: AtomicU64::new(0),
            unsaved: Mutex::new(Unsaved::all()),
        }
    }

    /// Loads the entry of a row every snapshot sees.
    pub(crate) fn load_entry(&self, key: &[Value], row: &[Value]) {
        self.entries.load(self.entry(key, row), present());
    }

    /// The indexed values of `row` (a prefix of its entries' keys).
    pub fn values_of(&self, row: &[Value]) -> Vec<Value> {
        self.def.columns.iter().map(|&c| row[c].clone()).collect()
    }

    /// The entry of the row `row` at `key`: its indexed values ++ its key.
    pub(crate) fn entry(&self, key: &[Value], row: &[Value]) -> Key {
        let mut e = self.values_of(row);
        e.extend_from_slice(key);
        e.into_boxed_slice()
    }

    /// The row key an entry names.
    pub fn row_key<'a>(&self, entry: &'a [Value]) -> &'a [Value] {
        &entry[self.def.columns.len()..]
    }

    /// Whether a snapshot at `csn` may read through this index.
    pub fn usable_at(&self, csn: Csn) -> bool {
        csn >= self.valid_from
    }
}

/// The value of every index entry (the entry's key says everything).
fn present() -> Row {
    thread_local! {
        static EMPTY: Row = Arc::from(Vec::<Value>::new());
    }
    EMPTY.with(|e| e.clone())
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.def.id)
            .field("name", &self.def.name)
            .finish()
    }
}

impl Table {
    pub fn new(def: TableDef) -> Self {
        let seed = def.identity_column().map(|(_, i)| i.seed).unwrap_or(1);
        let indexes = def
            .indexes
            .iter()
            .map(|d| Arc::new(Index::new(d.clone(), 0)))
            .collect();
        Table {
            def,
            rows: Arc::default(),
            indexes,
            next_identity: Arc::new(AtomicI64::new(seed)),
            next_rowid: Arc::new(AtomicI64::new(1)),
            unsaved: Arc::new(Mutex::new(Unsaved::all())),
        }
    }

    /// Takes what the next checkpoint writes (under the publish lock, so it
    /// is exactly the commits at or below the checkpoint's snapshot).
    pub(crate) fn take_unsaved(&self) -> Unsaved {
        std::mem::take(&mut *self.unsaved.lock())
    }

    /// As `take_unsaved`, for each index's entries.
    pub(crate) fn take_index_unsaved(&self) -> Vec<Unsaved> {
        self.indexes
            .iter()
            .map(|ix| std::mem::take(&mut *ix.unsaved.lock()))
            .collect()
    }

    /// Puts back what a failed checkpoint took.
    pub(crate) fn restore_unsaved(&self, rows: Unsaved, indexes: Vec<Unsaved>) {
        self.unsaved.lock().restore(rows);
        for (ix, u) in self.indexes.iter().zip(indexes) {
            ix.unsaved.lock().restore(u);
        }
    }

    /// The table as loaded from the base store: nothing to write.
    pub(crate) fn mark_saved(&self) {
        *self.unsaved.lock() = Unsaved::default();
    }

    /// Loads a row every snapshot sees (a checkpoint image's, or a rebuilt
    /// table's), with its index entries.
    pub(crate) fn load_row(&self, key: Key, row: Row) {
        for ix in &self.indexes {
            ix.entries.load(ix.entry(&key, &row), present());
        }
        self.rows.load(key, row);
    }

    /// What `install` needs from the base store for these changes: read
    /// first, under the publish lock, so a failed read installs nothing.
    pub(crate) fn priors(&self, changes: &[(Key, Option<Row>)]) -> Result<Vec<Option<Row>>> {
        self.rows.priors(changes.iter().map(|(k, _)| k))
    }

    /// Installs one commit's versions of this table's keys and the index
    /// entries they add and end (under the publish lock, so the newest
    /// committed versions replaced are the ones read here).
    pub(crate) fn install(
        &self,
        changes: Vec<(Key, Option<Row>)>,
        priors: Vec<Option<Row>>,
        csn: Csn,
        horizon: Csn,
    ) {
        let keys: Vec<Key> = if self.indexes.is_empty() {
            Vec::new()
        } else {
            changes.iter().map(|(k, _)| k.clone()).collect()
        };
        let news: Vec<Option<Row>> = if self.indexes.is_empty() {
            Vec::new()
        } else {
            changes.iter().map(|(_, r)| r.clone()).collect()
        };
        // A table the next checkpoint writes whole needs no list of keys.
        // (`whole` only changes under the publish lock, which the caller
        // holds.)
        let unsaved_keys: Option<Vec<Key>> =
            (!self.unsaved.lock().whole).then(|| changes.iter().map(|(k, _)| k.clone()).collect());
        let olds = self
            .rows
            .install_with(changes, priors, csn, horizon, !self.indexes.is_empty());
        if let Some(keys) = unsaved_keys {
            let mut u = self.unsaved.lock();
            if !u.whole {
                u.keys.extend(keys);
            }
        }
        if !self.indexes.is_empty() {
            let mut per_index: Vec<Vec<(Key, Option<Row>)>> = vec![Vec::new(); self.indexes.len()];
            for ((key, new), old) in keys.iter().zip(&news).zip(&olds) {
                for (ix, out) in self.indexes.iter().zip(per_index.iter_mut()) {
                    let before = old.as_ref().map(|r| ix.entry(key, r));
                    let after = new.as_ref().map(|r| ix.entry(key, r));
                    if before == after {
                        continue;
                    }
                    if let Some(b) = before {
                        out.push((b, None));
                    }
                    if let Some(a) = after {
                        out.push((a, Some(present())));
                    }
                }
            }
            for (ix, changes) in self.indexes.iter().zip(per_index) {
                if !changes.is_empty() {
                    // An entry's prior state follows from the change: one
                    // removed was there, one added was not (entries name
                    // their row's key), so the store need not be read.
                    let priors = if ix.entries.has_base() {
                        changes
                            .iter()
                            .map(|(_, e)| e.is_none().then(present))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    {
                        let mut u = ix.unsaved.lock();
                        if !u.whole {
                            u.keys.extend(changes.iter().map(|(k, _)| k.clone()));
                        }
                    }
                    ix.entries
                        .install_with(changes, priors, csn, horizon, false);
                    ix.updates.fetch_add(1, Relaxed);
                }
            }
        }
    }

    /// Drops versions of rows and index entries no snapshot at or after
    /// `horizon` sees.
    pub(crate) fn prune(&self, horizon: Csn) {
        self.rows.prune(horizon);
        for ix in &self.indexes {
            ix.entries.prune(horizon);
        }
    }

    /// Drops from memory the rows and index entries the base store's newest
    /// commit (read at `upto`) answers for every snapshot. Returns how many
    /// left.
    pub(crate) fn evict(&self, vis: &crate::mvcc::Visibility, upto: Csn) -> usize {
        let entries: usize = self
            .indexes
            .iter()
            .map(|ix| ix.entries.evict(vis, upto))
            .sum();
        self.rows.evict(vis, upto) + entries
    }

    /// This table with one more index, built from the newest committed rows
    /// (the caller holds the database's gate, so no commit is being
    /// installed and those rows are the state published at `csn`).
    pub(crate) fn with_index(
        &self,
        def: IndexDef,
        csn: Csn,
        budget: &mut BuildBudget,
    ) -> Result<Table> {
        let ix = Index::new(def.clone(), csn);
        // The rows stream past in chunks (those a checkpoint wrote are read
        // from the store, not gathered first): only the entries are held.
        let all = (Bound::Unbounded, Bound::Unbounded);
        let mut batch = Vec::with_capacity(1024);
        self.rows.for_each_keyed_at(all, Csn::MAX, |v| {
            let entry = ix.entry(&v.key()?, v.row());
            budget.charge_row(&entry, &[])?;
            batch.push((entry, present()));
            if batch.len() == batch.capacity() {
                ix.entries.load_many(batch.drain(..));
            }
            Ok::<(), EngineError>(())
        })?;
        ix.entries.load_many(batch);
        if def.unique {
            // Entries are in value order, so equal values are neighbours.
            let n = def.columns.len();
            let mut prev: Option<Key> = None;
            ix.entries.for_each_keyed_at(all, Csn::MAX, |v| {
                let key = v.key()?;
                let vals = &key[..n];
                let dup = !vals.iter().any(Value::is_null)
                    && prev.as_ref().is_some_and(|p| p[..n] == *vals);
                if dup {
                    return Err(EngineError::UniqueBuildFailed(Box::new(KeyConflict {
                        table: self.def.name.clone(),
                        constraint: def.name.clone(),
                        columns: self.def.column_list(&def.columns),
                        key: value_list(vals),
                    })));
                }
                prev = Some(key);
                Ok(())
            })?;
        }
        let mut next = self.sharing(self.def.clone());
        next.def.indexes.push(def);
        next.indexes.push(Arc::new(ix));
        Ok(next)
    }

    /// This table without the index whose id is `id`.
    pub(crate) fn without_index(&self, id: u32) -> Table {
        let mut next = self.sharing(self.def.clone());
        next.def.indexes.retain(|i| i.id != id);
        next.indexes.retain(|i| i.def.id != id);
        next
    }

    /// This table with these foreign keys (rows and indexes shared).
    pub(crate) fn with_foreign_keys(&self, fks: Vec<crate::schema::ForeignKeyDef>) -> Table {
        let mut def = self.def.clone();
        def.foreign_keys = fks;
        self.sharing(def)
    }

    /// A new definition of this table over the same rows, indexes and counters.
    pub(crate) fn sharing(&self, def: TableDef) -> Table {
        Table {
            def,
            rows: self.rows.clone(),
            indexes: self.indexes.clone(),
            next_identity: self.next_identity.clone(),
            next_rowid: self.next_rowid.clone(),
            unsaved: self.unsaved.clone(),
        }
    }

    pub fn id(&self) -> u32 {
        self.def.id
    }

    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// Whether rows are keyed by a hidden row id rather than a primary key.
    pub fn has_hidden_key(&self) -> bool {
        self.def.primary_key.is_empty()
    }

    /// The primary key of a row (`None` for tables keyed by a hidden row id,
    /// and for a row without the key's columns, which only a damaged image
    /// or log record holds).
    pub fn key_of(&self, row: &[Value]) -> Option<Key> {
        if self.has_hidden_key() {
            return None;
        }
        // Exact capacity: the box takes the vector's buffer as it is
        // (a collect grows it, then shrinks it: two reallocations).
        let pk = &self.def.primary_key;
        let mut key = Vec::with_capacity(pk.len());
        for &i in pk {
            key.push(row.get(i)?.clone());
        }
        Some(key.into_boxed_slice())
    }

    /// Number of rows in the newest committed state.
    pub fn len(&self) -> usize {
        self.rows.len_latest()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The identity value the next insert takes.
    pub fn identity_next(&self) -> i64 {
        self.next_identity.load(Relaxed)
    }

    /// Hands out the next identity value.
    pub(crate) fn take_identity(&self) -> i64 {
        let inc = self
            .def
            .identity_column()
            .map(|(_, i)| i.increment)
            .unwrap_or(1);
        self.next_identity.fetch_add(inc, Relaxed)
    }

    /// Makes sure later identity values and row ids never collide with this
    /// row (after an explicit identity value, or during recovery).
    pub(crate) fn observe(&self, key: &[Value], row: &[Value]) {
        if let Some((i, id)) = self.def.identity_column() {
            if let Value::Int(v) = row[i] {
                if id.increment > 0 {
                    self.next_identity
                        .fetch_max(v.saturating_add(id.increment), Relaxed);
                } else {
                    self.next_identity
                        .fetch_min(v.saturating_add(id.increment), Relaxed);
                }
            }
        }
        if self.has_hidden_key() {
            if let Some(Value::Int(r)) = key.first() {
                self.next_rowid.fetch_max(r + 1, Relaxed);
            }
        }
    }

    /// The definition of this table keyed by a primary key on `columns`.
    fn primary_key_def(&self, columns: &[usize]) -> TableDef {
        let mut def = self.def.clone();
        def.primary_key = columns.to_vec();
        for &c in columns {
            def.columns[c].nullable = false;
        }
        def
    }

    /// [`Self::with_primary_key`] built into a spill file instead of
    /// memory (`store/layer.rs`): the rows stream past in chunks, each
    /// re-keyed, sorted and written to `file`, which finds a duplicate
    /// key. The caller makes the new table's rows read the file.
    pub(crate) fn with_primary_key_into(
        &self,
        columns: &[usize],
        file: &crate::store::layer::LayerFile,
        batch_bytes: usize,
    ) -> Result<Table> {
        let mut t = Table::new(self.primary_key_def(columns));
        t.next_identity = self.next_identity.clone();
        let conflict = |k: &Key| {
            EngineError::UniqueBuildFailed(Box::new(KeyConflict {
                table: self.def.name.clone(),
                constraint: self.def.pkey_name(),
                columns: self.def.column_list(columns),
                key: value_list(k),
            }))
        };
        let limit = batch_bytes.min(crate::store::layer::LAYER_BATCH_BYTES);
        let mut batch = crate::store::layer::SortedBatch::new(Some(file), limit, &conflict);
        let all = (Bound::Unbounded, Bound::Unbounded);
        self.rows.for_each_at(all, Csn::MAX, |row| {
            if let Some(i) = columns.iter().find(|&&i| row[i].is_null()) {
                return Err(EngineError::NotNull {
                    table: self.def.name.clone(),
                    column: self.def.columns[*i].name.clone(),
                    row: None,
                });
            }
            let key: Key = columns.iter().map(|&i| row[i].clone()).collect();
            batch.push(key, Row::from(row))
        })?;
        batch.flush()?;
        Ok(t)
    }

    /// This table re-keyed by a primary key on `columns` (rows must be unique
    /// and not null there).
    pub(crate) fn with_primary_key(
        &self,
        columns: &[usize],
        budget: &mut BuildBudget,
    ) -> crate::error::Result<Table> {
        let mut t = Table::new(self.primary_key_def(columns));
        t.next_identity = self.next_identity.clone();
        {
            // The rows stream past in chunks, re-keyed as they come: the
            // old table is not gathered whole beside the new one.
            let mut rows = BTreeMap::new();
            let all = (Bound::Unbounded, Bound::Unbounded);
            self.rows.for_each_at(all, Csn::MAX, |row| {
                let key: Key = columns.iter().map(|&i| row[i].clone()).collect();
                budget.charge_row(&key, row)?;
                if let Some(i) = columns.iter().find(|&&i| row[i].is_null()) {
                    return Err(crate::error::EngineError::NotNull {
                        table: self.def.name.clone(),
                        column: self.def.columns[*i].name.clone(),
                        row: None,
                    });
                }
                match rows.entry(key) {
                    std::collections::btree_map::Entry::Vacant(v) => {
                        v.insert(Row::from(row));
                        Ok(())
                    }
                    std::collections::btree_map::Entry::Occupied(o) => {
                        Err(EngineError::UniqueBuildFailed(Box::new(KeyConflict {
                            table: self.def.name.clone(),
                            constraint: self.def.pkey_name(),
                            columns: self.def.column_list(columns),
                            key: value_list(o.key()),
                        })))
                    }
                }
            })?;
            for (k, r) in rows {
                t.load_row(k, r);
            }
        }
        Ok(t)
    }

    /// This table with no rows (TRUNCATE): a new set of versions, so that
    /// readers of the old one finish on what they started with. Identity
    /// values go on where they were, as PostgreSQL's TRUNCATE without
    /// RESTART IDENTITY.
    pub(crate) fn emptied(&self) -> Table {
        let mut t = Table::new(self.def.clone());
        t.next_identity = self.next_identity.clone();
        t.next_rowid = self.next_rowid.clone();
        t
    }

    /// The newest committed rows (what a checkpoint image holds).
    pub fn latest_rows(&self) -> Result<BTreeMap<Key, Row>> {
        self.rows.latest_rows()
    }
}

/// `1, abc`: values as PostgreSQL's error details list them.
pub fn value_list(vals: &[Value]) -> String {
    let parts: Vec<String> = vals
        .iter()
        .map(|v| {
            if v.is_null() {
                "null".to_string()
            } else {
                v.to_string()
            }
        })
        .collect();
    parts.join(", ")
}
