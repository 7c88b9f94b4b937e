//! Transactional DDL and table locks.
//!
//! A DDL statement takes its table locks (ACCESS EXCLUSIVE for most, SHARE
//! for CREATE INDEX), then changes the shared catalog at once, under the
//! gate, remembering what each changed entry was. Its own transaction sees
//! the change; others cannot use the table before it commits or rolls back,
//! since every read takes ACCESS SHARE and every write ROW EXCLUSIVE. The
//! change is logged with the transaction's commit record (fully durable)
//! and undone by ROLLBACK or ROLLBACK TO. Checkpoints and backups see the
//! catalog without uncommitted changes (`Database::image_catalog`).

use super::Transaction;
use crate::budget::BuildBudget;
use crate::codec::Redo;
use crate::database::{Catalog, Database, SeqState, Sequence};
use crate::error::{EngineError, Result};
use crate::lock::{Acquired, TableLockMode, TablePath, WaitPolicy};
use crate::schema::{ForeignKeyDef, IndexDef, SequenceDef, SequenceOptions, TableDef};
use crate::table::Table;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A catalog entry as it was before an uncommitted change (`None`: it did
/// not exist).
#[derive(Clone)]
pub(crate) enum Revert {
    Table(u32, Option<Arc<Table>>),
    Sequence(String, Option<Arc<Sequence>>),
    Enum(String, Option<Arc<crate::types::EnumType>>),
    View(String, Option<Arc<crate::view::ViewDef>>),
    Comment(crate::comment::CommentOn, Option<Arc<str>>),
    Schema(String, Option<Arc<crate::namespace::SchemaDef>>),
}

/// One DDL statement of a transaction: its redo and how to undo it.
pub(crate) struct DdlStep {
    pub(crate) redo: Redo,
    pub(crate) reverts: Vec<Revert>,
    /// What its build holds in memory (see `budget.rs`).
    pub(crate) held: u64,
}

impl Catalog {
    /// Puts an entry back as it was (no cascade: every entry the change
    /// touched has its own revert).
    pub(crate) fn revert(&mut self, r: &Revert) {
        match r {
            Revert::Table(id, old) => {
                if let Some(cur) = self.by_id.remove(id) {
                    self.tables.remove(&cur.name().to_ascii_lowercase());
                }
                if let Some(old) = old {
                    self.tables
                        .insert(old.name().to_ascii_lowercase(), old.clone());
                    self.by_id.insert(*id, old.clone());
                }
            }
            Revert::Sequence(name, old) => match old {
                Some(s) => {
                    self.sequences.insert(name.clone(), s.clone());
                }
                None => {
                    self.sequences.remove(name);
                }
            },
            Revert::Enum(name, old) => match old {
                Some(e) => {
                    self.enums.insert(name.clone(), e.clone());
                }
                None => {
                    self.enums.remove(name);
                }
            },
            Revert::View(name, old) => match old {
                Some(v) => {
                    self.views.insert(name.clone(), v.clone());
                }
                None => {
                    self.views.remove(name);
                }
            },
            Revert::Schema(name, old) => match old {
                Some(s) => {
                    self.schemas.insert(name.clone(), s.clone());
                }
                None => {
                    self.schemas.remove(name);
                }
            },
            Revert::Comment(on, old) => match old {
                Some(c) => {
                    self.comments.insert(on.clone(), c.clone());
                }
                None => {
                    self.comments.remove(on);
                }
            },
        }
    }

    /// The entries `f` changes, as they were.
    fn diff_after<T>(
        &mut self,
        f: impl FnOnce(&mut Catalog) -> Result<T>,
    ) -> Result<(T, Vec<Revert>)> {
        let tables = self.by_id.clone();
        let seqs = self.sequences.clone();
        let enums = self.enums.clone();
        let views = self.views.clone();
        let comments = self.comments.clone();
        let schemas = self.schemas.clone();
        let out = f(self)?;
        self.prune_comments();
        let mut reverts = Vec::new();
        for (id, t) in &self.by_id {
            if !tables.get(id).is_some_and(|o| Arc::ptr_eq(o, t)) {
                reverts.push(Revert::Table(*id, tables.get(id).cloned()));
            }
        }
        for (id, t) in tables {
            if !self.by_id.contains_key(&id) {
                reverts.push(Revert::Table(id, Some(t)));
            }
        }
        for (n, s) in &self.sequences {
            if !seqs.get(n).is_some_and(|o| Arc::ptr_eq(o, s)) {
                reverts.push(Revert::Sequence(n.clone(), seqs.get(n).cloned()));
            }
        }
        for (n, s) in seqs {
            if !self.sequences.contains_key(&n) {
                reverts.push(Revert::Sequence(n, Some(s)));
            }
        }
        for (n, e) in &self.enums {
            if !enums.get(n).is_some_and(|o| Arc::ptr_eq(o, e)) {
                reverts.push(Revert::Enum(n.clone(), enums.get(n).cloned()));
            }
        }
        for (n, e) in enums {
            if !self.enums.contains_key(&n) {
                reverts.push(Revert::Enum(n, Some(e)));
            }
        }
        for (n, v) in &self.views {
            if !views.get(n).is_some_and(|o| Arc::ptr_eq(o, v)) {
                reverts.push(Revert::View(n.clone(), views.get(n).cloned()));
            }
        }
        for (n, v) in views {
            if !self.views.contains_key(&n) {
                reverts.push(Revert::View(n, Some(v)));
            }
        }
        for (n, s) in &self.schemas {
            if !schemas.get(n).is_some_and(|o| Arc::ptr_eq(o, s)) {
                reverts.push(Revert::Schema(n.clone(), schemas.get(n).cloned()));
            }
        }
        for (n, s) in schemas {
            if !self.schemas.contains_key(&n) {
                reverts.push(Revert::Schema(n, Some(s)));
            }
        }
        for (k, c) in &self.comments {
            if !comments.get(k).is_some_and(|o| Arc::ptr_eq(o, c)) {
                reverts.push(Revert::Comment(k.clone(), comments.get(k).cloned()));
            }
        }
        for (k, c) in comments {
            if !self.comments.contains_key(&k) {
                reverts.push(Revert::Comment(k, Some(c)));
            }
        }
        Ok((out, reverts))
    }

    /// A copy of the catalog's maps (the tables and sequences are shared).
    pub(crate) fn shallow_copy(&self) -> Catalog {
        Catalog {
            tables: self.tables.clone(),
            by_id: self.by_id.clone(),
            sequences: self.sequences.clone(),
            enums: self.enums.clone(),
            views: self.views.clone(),
            comments: self.comments.clone(),
            schemas: self.schemas.clone(),
            next_table_id: self.next_table_id,
            next_seq_id: self.next_seq_id,
            vis: self.vis.clone(),
        }
    }
}

impl Database {
    /// The catalog without the changes of transactions still open: what a
    /// checkpoint or backup image holds (call with the gate held).
    pub(crate) fn image_catalog(&self) -> Catalog {
        let mut cat = self.catalog.read().shallow_copy();
        for reverts in self.txns.uncommitted_ddl.lock().values() {
            // Newest first, so that each entry ends as it was before the
            // transaction's first change of it.
            for r in reverts.iter().rev() {
                cat.revert(r);
            }
        }
        cat
    }

    /// The catalog as transaction `txid` sees it, when that differs from
    /// the current one: without other transactions' uncommitted changes.
    pub(crate) fn view_as(&self, cat: &Catalog, txid: Option<u64>) -> Option<Catalog> {
        let me = txid?;
        let reg = self.txns.uncommitted_ddl.lock();
        if !reg.keys().any(|t| *t != me) {
            return None;
        }
        let mut view = cat.shallow_copy();
        for (t, reverts) in reg.iter() {
            if *t != me {
                // Newest first, so each entry ends as it was before the
                // other transaction's first change of it.
                for r in reverts.iter().rev() {
                    view.revert(r);
                }
            }
        }
        Some(view)
    }

    /// Table `name` as transaction `txid` sees it: with its own uncommitted
    /// changes, without other transactions' (a table another one created
    /// is not there; one it dropped or changed is as it was, and using it
    /// waits for that transaction's lock). `None`: the current catalog.
    pub fn table_as(&self, txid: Option<u64>, name: &str) -> Result<Arc<Table>> {
        let cat = self.catalog.read();
        let found = match self.view_as(&cat, txid) {
            Some(view) => view.table(name).cloned(),
            None => cat.table(name).cloned(),
        };
        found.ok_or_else(|| EngineError::UnknownTable(name.to_string()))
    }

    /// The tables as transaction `txid` sees them (see [`Database::table_as`]),
    /// in id order: what its catalog views list.
    pub fn tables_as(&self, txid: Option<u64>) -> Vec<Arc<Table>> {
        let cat = self.catalog.read();
        let view = self.view_as(&cat, txid);
        let mut v: Vec<Arc<Table>> = view
            .as_ref()
            .unwrap_or(&cat)
            .tables
            .values()
            .cloned()
            .collect();
        v.sort_by_key(|t| t.id());
        v
    }

    /// The sequences' definitions as transaction `txid` sees them, in id
    /// order.
    pub fn sequences_as(&self, txid: Option<u64>) -> Vec<crate::schema::SequenceDef> {
        let cat = self.catalog.read();
        let view = self.view_as(&cat, txid);
        let mut v: Vec<_> = view
            .as_ref()
            .unwrap_or(&cat)
            .sequences
            .values()
            .map(|s| s.def.clone())
            .collect();
        v.sort_by_key(|s| s.id);
        v
    }

    /// Table locks held or awaited, for `pg_locks`: (transaction, table
    /// id, mode, granted).
    pub fn table_locks(&self) -> Vec<(u64, u32, TableLockMode, bool)> {
        self.txns.locks.table_locks()
    }

    /// Every row and table lock request held or queued in this database
    /// (see [`crate::Session::open_transactions`] for their sessions).
    pub fn lock_requests(&self) -> Vec<crate::lock::LockRequest> {
        self.txns.locks.requests()
    }
}

impl Transaction {
    /// Takes the table lock of `t` in `mode` (held to the end of the
    /// transaction). `false` if it is busy and `policy` says not to wait.
    /// A table whose definition changed (or that went) while this
    /// transaction waited cannot be used through the handle it had.
    pub fn lock_table(&self, t: &Table, mode: TableLockMode, policy: WaitPolicy) -> Result<bool> {
        let got = self.lock_table_id(t.id(), mode, policy)?;
        if got == Some(true) {
            let cat = self.db.catalog.read();
            match cat.table_by_id(t.id()) {
                Some(cur) if std::ptr::eq(Arc::as_ptr(cur), t) => {}
                // Changed, or dropped (maybe created again under its
                // name): the statement may be planned again.
                Some(_) => {
                    self.stale_table
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    return Err(EngineError::SerializationFailure("DDL"));
                }
                None => {
                    self.stale_table
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    return Err(EngineError::UnknownTable(t.name().to_string()));
                }
            }
        }
        Ok(got.is_some())
    }

    /// `Some(true)`: newly taken; `Some(false)`: already held; `None`: busy.
    pub(crate) fn lock_table_id(
        &self,
        id: u32,
        mode: TableLockMode,
        policy: WaitPolicy,
    ) -> Result<Option<bool>> {
        self.check_open()?;
        let held = self.table_locks.lock().get(id);
        if held.is_some_and(|(m, _)| m.covers(mode)) {
            return Ok(Some(false));
        }
        let sinks = self.session.wait_sinks();
        let r = self.db.txns.locks.take_table(
            self.txid,
            id,
            mode,
            held.map(|(_, path)| path),
            policy,
            &sinks,
            self.db.txns.lock_timeout,
            &self.session.cancel,
        );
        match r {
            Ok((Acquired::Busy, _)) => Ok(None),
            Ok((a, path)) => {
                let mut held = self.table_locks.lock();
                let m = held.get(id).map_or(mode, |(h, _)| h.combine(mode));
                held.set(id, m, path);
                Ok(Some(a == Acquired::New))
            }
            Err(e) => {
                if matches!(e, EngineError::Deadlock { .. }) {
                    self.db
                        .counters
                        .deadlocks
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Err(e)
            }
        }
    }

    /// Locks table `name` in `mode` and returns its handle as it stands
    /// once locked.
    /// If the table was dropped and another created under its name while
    /// this transaction waited, the name is resolved again and the new
    /// table locked, as PostgreSQL does after a lock wait (the old table's
    /// lock is kept to the end, as there).
    pub(super) fn lock_named(&self, name: &str, mode: TableLockMode) -> Result<Arc<Table>> {
        let mut t = self.db.table_as(Some(self.txid), name)?;
        // Each retry follows a DROP and CREATE that committed meanwhile.
        for _ in 0..8 {
            self.lock_table_id(t.id(), mode, WaitPolicy::Wait)?;
            match self.db.table_as(Some(self.txid), name) {
                Ok(now) if now.id() == t.id() => return Ok(now),
                Ok(other) => t = other,
                Err(e) => return Err(e),
            }
        }
        Err(EngineError::SerializationFailure("DDL"))
    }

    /// `LOCK TABLE name IN mode MODE [NOWAIT]`.
    pub fn lock_table_named(&self, name: &str, mode: TableLockMode, nowait: bool) -> Result<()> {
        let t = self.db.table_as(Some(self.txid), name)?;
        let policy = if nowait {
            WaitPolicy::NoWait
        } else {
            WaitPolicy::Wait
        };
        match self.lock_table_id(t.id(), mode, policy)? {
            Some(_) => Ok(()),
            None => Err(EngineError::TableLockNotAvailable(t.name().to_string())),
        }
    }

    /// Applies a catalog change now, for this transaction, and keeps its
    /// redo for the commit record and its undo for a rollback. The caller
    /// holds the table locks it needs.
    pub(crate) fn catalog_change<T>(
        &self,
        apply: impl FnOnce(&mut Catalog) -> Result<(T, Redo)>,
    ) -> Result<T> {
        self.check_write("DDL")?;
        self.db.check_writable()?;
        let _gate = self.db.txns.gate.write();
        let mut cat = self.db.catalog.write();
        let ((out, redo), reverts) = cat.diff_after(apply)?;
        if let Err(e) = self.refuse_spilled(&cat) {
            for r in reverts.iter().rev() {
                cat.revert(r);
            }
            return Err(e);
        }
        self.db.catalog_version.fetch_add(1, Ordering::Release);
        drop(cat);
        let mut ddl = self.ddl.lock();
        ddl.push(DdlStep {
            redo,
            reverts,
            held: 0,
        });
        self.db.txns.uncommitted_ddl.lock().insert(
            self.txid,
            ddl.iter().flat_map(|s| s.reverts.clone()).collect(),
        );
        Ok(out)
    }

    /// What a build in this transaction may still hold: the room left under
    /// `transaction_memory_limit_mb` (see `budget.rs`).
    pub(super) fn build_budget(&self) -> BuildBudget {
        BuildBudget::new(
            self.db.limits.max_transaction_bytes,
            self.write_bytes + self.ddl_held.load(Ordering::Relaxed),
        )
    }

    /// Charges the last DDL step with what its build holds; undoing the
    /// step gives it back.
    pub(super) fn hold_for_last_step(&self, bytes: u64) {
        if let Some(step) = self.ddl.lock().last_mut() {
            step.held += bytes;
            self.ddl_held.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Undoes the DDL steps after the first `keep` (ROLLBACK, ROLLBACK TO).
    pub(super) fn undo_ddl(&self, keep: usize) {
        let mut ddl = self.ddl.lock();
        if ddl.len() <= keep {
            return;
        }
        let _gate = self.db.txns.gate.write();
        let mut cat = self.db.catalog.write();
        while ddl.len() > keep {
            let step = ddl.pop().expect("step");
            self.ddl_held.fetch_sub(step.held, Ordering::Relaxed);
            for r in step.reverts.iter().rev() {
                cat.revert(r);
            }
        }
        self.db.catalog_version.fetch_add(1, Ordering::Release);
        let mut reg = self.db.txns.uncommitted_ddl.lock();
        if ddl.is_empty() {
            reg.remove(&self.txid);
        } else {
            reg.insert(
                self.txid,
                ddl.iter().flat_map(|s| s.reverts.clone()).collect(),
            );
        }
    }

    /// DDL statements run so far.
    pub(super) fn ddl_steps(&self) -> usize {
        self.ddl.lock().len()
    }

    /// Whether this transaction changed the catalog.
    pub fn has_ddl(&self) -> bool {
        self.ddl_steps() > 0
    }

    /// Refuses a change of a table this transaction already wrote: its
    /// rows in the write set have the old shape (callers fold them into
    /// the table first, see `fold.rs`).
    fn refuse_if_written(&self, t: &Table, what: &str) -> Result<()> {
        if self.has_written(t.id()) {
            return Err(EngineError::DdlAfterWrite {
                what: what.to_string(),
                table: t.name().to_string(),
            });
        }
        Ok(())
    }

    /// Drops this transaction's pending writes to table `id` (TRUNCATE,
    /// DROP TABLE), noting them for the newest savepoint.
    pub(super) fn discard_writes(&mut self, id: u32) {
        let keys: Vec<_> = self
            .writes
            .range((id, Vec::new().into_boxed_slice())..)
            .take_while(|((t, _), _)| *t == id)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            if !self.savepoints.is_empty() {
                let writes = &self.writes;
                self.savepoints.record(&k, || writes.get(&k).cloned());
            }
            // Logging as it goes: the key's ops in earlier parts are void
            // (the DDL record holds its row now).
            self.note_dirty(&k, 0);
            self.writes.remove(&k);
        }
    }

    /// Takes a lock nobody else can hold yet (a table this transaction is
    /// creating), under the gate.
    fn lock_new(&self, id: u32) -> Result<()> {
        match self.lock_table_id(id, TableLockMode::AccessExclusive, WaitPolicy::NoWait)? {
            Some(_) => Ok(()),
            None => Err(EngineError::TableLockNotAvailable(format!(
                "(table id {id})"
            ))),
        }
    }

    pub fn create_table(&self, mut def: TableDef) -> Result<Arc<Table>> {
        def.validate()?;
        // Referenced tables: SHARE ROW EXCLUSIVE, as PostgreSQL.
        for fk in &def.foreign_keys {
            if fk.ref_table != 0 {
                self.lock_table_id(
                    fk.ref_table,
                    TableLockMode::ShareRowExclusive,
                    WaitPolicy::Wait,
                )?;
            }
        }
        self.catalog_change(|cat| {
            if cat.table(&def.name).is_some() {
                return Err(EngineError::TableExists(def.name.clone()));
            }
            if cat.index_table(&def.name).is_some() || cat.view(&def.name).is_some() {
                return Err(EngineError::RelationExists(def.name.clone()));
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
            self.lock_new(def.id)?;
            let t = Arc::new(Table::new(def.clone()));
            cat.add_table(t.clone());
            Ok((t, Redo::CreateTable(def)))
        })
    }

    /// DROP TABLE: refused while a foreign key of another table references
    /// it, unless `cascade`, which drops those foreign keys with it (one
    /// logged record: replaying it drops them too). Returns the foreign keys
    /// dropped, as (constraint, table).
    pub fn drop_table_cascade(
        &mut self,
        name: &str,
        cascade: bool,
    ) -> Result<Vec<(String, String)>> {
        let t = self.lock_named(name, TableLockMode::AccessExclusive)?;
        let id = t.id();
        let others: Vec<(Arc<Table>, ForeignKeyDef)> = self
            .db
            .catalog
            .read()
            .referencing(id)
            .into_iter()
            .filter(|(o, _)| o.id() != id)
            .collect();
        if !others.is_empty() && !cascade {
            return Err(EngineError::Referenced {
                kind: "table",
                table: t.name().to_string(),
                by: others
                    .iter()
                    .map(|(o, fk)| (fk.name.clone(), o.name().to_string()))
                    .collect(),
            });
        }
        for (o, _) in &others {
            self.lock_table_id(o.id(), TableLockMode::AccessExclusive, WaitPolicy::Wait)?;
        }
        let dropped: Vec<(String, String)> = self
            .db
            .catalog
            .read()
            .referencing(id)
            .into_iter()
            .filter(|(o, _)| o.id() != id)
            .map(|(o, fk)| (fk.name, o.name().to_string()))
            .collect();
        self.catalog_change(|cat| {
            cat.remove_table(id);
            cat.drop_owned_sequences(id);
            Ok(((), Redo::DropTable(id)))
        })?;
        self.discard_writes(id);
        Ok(dropped)
    }

    /// TRUNCATE: the table's rows go at commit (the transaction sees it
    /// empty at once).
    pub fn truncate(&mut self, name: &str) -> Result<()> {
        let t = self.lock_named(name, TableLockMode::AccessExclusive)?;
        let id = t.id();
        self.catalog_change(|cat| {
            let cur = cat
                .table_by_id(id)
                .cloned()
                .ok_or_else(|| EngineError::UnknownTable(name.to_string()))?;
            cat.add_table(Arc::new(cur.emptied()));
            Ok(((), Redo::Truncate(id)))
        })?;
        self.discard_writes(id);
        Ok(())
    }

    /// `CREATE [UNIQUE] INDEX name ON table (columns)`: builds the index
    /// from the table's rows (SHARE lock: writers wait, readers do not).
    /// The `id` of `index` is assigned here. A duplicate in a unique index
    /// fails with nothing changed.
    pub fn create_index(&mut self, table: &str, mut index: IndexDef) -> Result<()> {
        let t = self.lock_named(table, TableLockMode::Share)?;
        // A plain index takes this transaction's rows at commit, as any
        // commit's; a unique one checks them now, folded into the table.
        let t = if index.unique {
            self.fold_table(&t)?
        } else {
            t
        };
        if index.columns.is_empty() || index.columns.iter().any(|&c| c >= t.def.columns.len()) {
            return Err(EngineError::InvalidDefinition(format!(
                "index \"{}\" names no column of table \"{}\"",
                index.name, t.def.name
            )));
        }
        let vis = self.db.txns.vis.clone();
        let mut budget = self.build_budget();
        self.catalog_change(|cat| {
            if cat.table(&index.name).is_some() || cat.index_table(&index.name).is_some() {
                return Err(EngineError::RelationExists(index.name.clone()));
            }
            index.id = cat.next_table_id.max(1);
            let nt = Arc::new(t.with_index(index.clone(), vis.visible(), &mut budget)?);
            cat.add_table(nt);
            Ok((
                (),
                Redo::CreateIndex {
                    table: t.id(),
                    index,
                },
            ))
        })?;
        self.hold_for_last_step(budget.used());
        Ok(())
    }

    /// `DROP INDEX name`.
    pub fn drop_index(&self, name: &str) -> Result<()> {
        let owner = self
            .db
            .index_table(name)
            .ok_or_else(|| EngineError::UnknownIndex(name.to_string()))?;
        let t = self.lock_named(owner.name(), TableLockMode::AccessExclusive)?;
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
                .db
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
        self.catalog_change(|cat| {
            cat.add_table(nt);
            Ok((
                (),
                Redo::DropIndex {
                    table: t.id(),
                    index: id,
                },
            ))
        })
    }

    /// `ALTER TABLE t ADD PRIMARY KEY (cols)` on a table keyed by a hidden
    /// row id. Fails if the rows are not unique on the columns.
    pub fn add_primary_key(&mut self, name: &str, columns: &[&str]) -> Result<()> {
        let t = self.fold_writes(name)?;
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
        let mut budget = self.build_budget();
        // A large table is re-keyed into a spill file, not memory.
        let nt = match self.layer_for_build(&t)? {
            Some(file) => {
                let batch = self.db.limits.spill_bound() as usize;
                let nt = Arc::new(t.with_primary_key_into(&cols, &file, batch)?);
                self.add_build_layer(&nt, file)?;
                nt
            }
            None => Arc::new(t.with_primary_key(&cols, &mut budget)?),
        };
        self.catalog_change(|cat| {
            cat.add_table(nt);
            Ok((
                (),
                Redo::AddPrimaryKey {
                    table: t.id(),
                    columns: cols,
                },
            ))
        })?;
        self.hold_for_last_step(budget.used());
        Ok(())
    }

    /// `ALTER TABLE t ADD FOREIGN KEY`: checks every committed row of `t`
    /// against the referenced table, both locked (no write to either can
    /// commit meanwhile).
    pub fn add_foreign_key(&mut self, table: &str, fk: ForeignKeyDef) -> Result<()> {
        // This transaction's rows of either table are checked too.
        let t = self.fold_writes(table)?;
        if fk.ref_table != t.id() {
            self.lock_table_id(
                fk.ref_table,
                TableLockMode::ShareRowExclusive,
                WaitPolicy::Wait,
            )?;
        }
        let r = self
            .db
            .table_by_id(fk.ref_table)
            .ok_or_else(|| EngineError::UnknownTable(format!("(table id {})", fk.ref_table)))?;
        let r = if r.id() == t.id() {
            t.clone()
        } else {
            self.fold_table(&r)?
        };
        self.db.check_foreign_key(&t, &r, &fk)?;
        let mut fks = t.def.foreign_keys.clone();
        fks.push(fk.clone());
        let nt = Arc::new(t.with_foreign_keys(fks));
        self.catalog_change(|cat| {
            cat.add_table(nt);
            Ok(((), Redo::AddForeignKey { table: t.id(), fk }))
        })
    }

    /// `ALTER TABLE t DROP CONSTRAINT name` of a foreign key.
    pub fn drop_foreign_key(&self, table: &str, name: &str) -> Result<()> {
        let t = self.lock_named(table, TableLockMode::AccessExclusive)?;
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
        self.catalog_change(|cat| {
            cat.add_table(nt);
            Ok((
                (),
                Redo::DropForeignKey {
                    table: t.id(),
                    name: name.to_string(),
                },
            ))
        })
    }

    /// `ALTER TABLE name ...`: `plan` sees the table as it stands under its
    /// ACCESS EXCLUSIVE lock (no other transaction can change its rows
    /// meanwhile) and returns the change, or `None` when there is nothing
    /// to do. The change is built before it is applied, so a duplicate key
    /// fails with nothing changed.
    pub fn alter_table<E: From<EngineError>>(
        &self,
        name: &str,
        plan: impl FnOnce(&Arc<Table>) -> std::result::Result<Option<crate::alter::Alteration>, E>,
    ) -> std::result::Result<(), E> {
        let t = self.lock_named(name, TableLockMode::AccessExclusive)?;
        self.refuse_if_written(&t, "ALTER TABLE")?;
        let Some(alt) = plan(&t)? else {
            return Ok(());
        };
        let vis = self.db.txns.vis.clone();
        let mut budget = self.build_budget();
        // A large table's rewrite goes to a spill file, not memory.
        let into = self.layer_for_build(&t)?;
        let built = self.catalog_change(|cat| {
            let (nt, redo, spilled) =
                crate::alter::prepare(cat, &t, alt, vis.visible(), &mut budget, into.as_deref())?;
            let rewrite = match &redo {
                Redo::AlterTable { rewrite, .. } => rewrite.as_deref(),
                _ => None,
            };
            crate::alter::install(cat, t.id(), nt.clone(), rewrite);
            Ok((spilled.then_some(nt), redo))
        })?;
        if let (Some(nt), Some(file)) = (built, into) {
            self.add_build_layer(&nt, file)?;
        }
        self.hold_for_last_step(budget.used());
        Ok(())
    }

    pub fn create_sequence(&self, name: &str, opts: &SequenceOptions) -> Result<()> {
        self.catalog_change(|cat| {
            if cat.sequences.contains_key(&name.to_ascii_lowercase()) {
                return Err(EngineError::SequenceExists(name.to_string()));
            }
            let def = opts.define(cat.next_seq_id.max(1), name)?;
            let start = def.start;
            cat.add_sequence(
                def.clone(),
                SeqState {
                    next: start,
                    reserved: start,
                    last: None,
                },
            );
            Ok(((), Redo::CreateSequence(def)))
        })
    }

    /// `ALTER SEQUENCE`: `change` makes the new definition from the current
    /// one (or refuses it), with the value to restart from if any.
    pub fn alter_sequence(
        &self,
        name: &str,
        change: impl FnOnce(&SequenceDef) -> Result<(SequenceDef, Option<i64>)>,
    ) -> Result<()> {
        self.catalog_change(|cat| {
            let s = cat
                .sequences
                .get(&name.to_ascii_lowercase())
                .cloned()
                .ok_or_else(|| EngineError::UnknownSequence(name.to_string()))?;
            let (mut def, restart) = change(&s.def)?;
            def.id = s.def.id;
            if !def.name.eq_ignore_ascii_case(&s.def.name)
                && (cat.sequences.contains_key(&def.name.to_ascii_lowercase())
                    || cat.tables.contains_key(&def.name.to_ascii_lowercase()))
            {
                return Err(EngineError::SequenceExists(def.name.clone()));
            }
            if let Some(o) = def.owned_by {
                let t = cat
                    .by_id
                    .get(&o.table)
                    .ok_or_else(|| EngineError::UnknownTable(o.table.to_string()))?;
                if o.column >= t.def.columns.len() {
                    return Err(EngineError::UnknownColumn {
                        table: t.name().to_string(),
                        column: o.column.to_string(),
                    });
                }
            }
            cat.replace_sequence(def.clone(), restart);
            Ok(((), Redo::AlterSequence { def, restart }))
        })
    }

    pub fn drop_sequence(&self, name: &str) -> Result<()> {
        self.catalog_change(|cat| {
            let s = cat
                .sequences
                .remove(&name.to_ascii_lowercase())
                .ok_or_else(|| EngineError::UnknownSequence(name.to_string()))?;
            Ok(((), Redo::DropSequence(s.def.id)))
        })
    }
}

/// Table locks a transaction holds: (table id, mode, where it is held). A
/// list in line rather than a map: most transactions lock a table or two.
#[derive(Default)]
pub(crate) struct HeldTableLocks(smallvec::SmallVec<[(u32, TableLockMode, TablePath); 2]>);

impl HeldTableLocks {
    pub(crate) fn get(&self, id: u32) -> Option<(TableLockMode, TablePath)> {
        self.0.iter().find(|l| l.0 == id).map(|l| (l.1, l.2))
    }

    fn set(&mut self, id: u32, mode: TableLockMode, path: TablePath) {
        match self.0.iter_mut().find(|l| l.0 == id) {
            Some(l) => (l.1, l.2) = (mode, path),
            None => self.0.push((id, mode, path)),
        }
    }

    /// (table id, where it is held), for the release.
    pub(crate) fn into_held(self) -> impl Iterator<Item = (u32, TablePath)> {
        self.0.into_iter().map(|l| (l.0, l.2))
    }
}
