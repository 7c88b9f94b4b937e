//! A table: its definition and its rows' versions, kept in memory in key
//! order (see `mvcc.rs`).

use crate::mvcc::VersionedRows;
use crate::schema::TableDef;
use crate::types::{Key, Row, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

pub struct Table {
    pub def: TableDef,
    /// Committed row versions by primary key (or hidden row id).
    pub rows: VersionedRows,
    /// Next identity value to hand out. Like SQL Server, identity values are
    /// not transactional: a rollback leaves a gap.
    pub(crate) next_identity: AtomicI64,
    /// Next hidden row id (tables without a primary key).
    pub(crate) next_rowid: AtomicI64,
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
        Table {
            def,
            rows: VersionedRows::default(),
            next_identity: AtomicI64::new(seed),
            next_rowid: AtomicI64::new(1),
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
        self.def
            .primary_key
            .iter()
            .map(|&i| row.get(i).cloned())
            .collect()
    }

    /// Number of rows in the newest committed state.
    pub fn len(&self) -> usize {
        self.rows.len_latest()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// This table re-keyed by a primary key on `columns` (rows must be unique
    /// and not null there).
    pub(crate) fn with_primary_key(&self, columns: &[usize]) -> crate::error::Result<Table> {
        let mut def = self.def.clone();
        def.primary_key = columns.to_vec();
        for &c in columns {
            def.columns[c].nullable = false;
        }
        let t = Table::new(def);
        t.next_identity
            .store(self.next_identity.load(Relaxed), Relaxed);
        {
            let mut rows = BTreeMap::new();
            for row in self.rows.latest_rows().values() {
                let key: Key = columns.iter().map(|&i| row[i].clone()).collect();
                if let Some(i) = columns.iter().find(|&&i| row[i].is_null()) {
                    return Err(crate::error::EngineError::NotNull {
                        table: self.def.name.clone(),
                        column: self.def.columns[*i].name.clone(),
                    });
                }
                if rows.insert(key.clone(), row.clone()).is_some() {
                    let parts: Vec<String> = key.iter().map(|v| v.to_string()).collect();
                    return Err(crate::error::EngineError::DuplicateKey {
                        table: self.def.name.clone(),
                        key: format!("({})", parts.join(", ")),
                    });
                }
            }
            for (k, r) in rows {
                t.rows.load(k, r);
            }
        }
        Ok(t)
    }

    /// This table with no rows (TRUNCATE): a new set of versions, so that
    /// readers of the old one finish on what they started with. Identity
    /// values go on where they were, as PostgreSQL's TRUNCATE without
    /// RESTART IDENTITY.
    pub(crate) fn emptied(&self) -> Table {
        let t = Table::new(self.def.clone());
        t.next_identity
            .store(self.next_identity.load(Relaxed), Relaxed);
        t.next_rowid.store(self.next_rowid.load(Relaxed), Relaxed);
        t
    }

    /// The newest committed rows (what a checkpoint image holds).
    pub fn latest_rows(&self) -> BTreeMap<Key, Row> {
        self.rows.latest_rows()
    }
}
