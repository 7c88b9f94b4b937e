//! Redo: applies log records on top of a checkpoint image (when a database
//! opens and when a restore replays log backups) or, on a secondary replica,
//! on top of the live tables.

use crate::budget::BuildBudget;
use crate::checkpoint::BackupState;
use crate::checkpoint::Image;
use crate::codec::{decode_redo, Op, Redo};
use crate::database::{Catalog, SeqState};
use crate::error::{EngineError, Result};
use crate::roles::RoleRecord;
use crate::schema::DbSettings;
use crate::table::Table;
use crate::types::{Key, Row};
use std::collections::HashMap;
use std::sync::Arc;
use walden_log::Lsn;

pub(crate) struct Replay {
    state: Image,
    /// Parts of transactions whose commit record has not been seen yet.
    pending: HashMap<u64, Vec<Op>>,
    /// The newest role catalog a replayed commit carried.
    roles: Option<RoleRecord>,
}

impl Replay {
    pub fn new(state: Image) -> Self {
        Replay {
            state,
            pending: HashMap::new(),
            roles: None,
        }
    }

    /// Applies the record ending at `end`. A commit record ending at or
    /// below the image's commit floor is already in the image: its
    /// transaction is skipped whole (`inflight.rs` says why that is safe
    /// and why applying its DDL again would not be).
    pub fn apply(&mut self, end: Lsn, rec: &[u8]) -> Result<()> {
        let st = &mut self.state;
        let in_image = end <= st.commit_floor;
        apply_record_from(
            in_image,
            &mut self.pending,
            RedoTarget {
                catalog: &mut st.catalog,
                settings: &mut st.settings,
                backup: &mut st.backup,
                next_txid: &mut st.next_txid,
                roles: &mut self.roles,
            },
            rec,
        )
        .map(drop)
    }

    /// The newest role catalog the replayed commits carried, for the
    /// instance to reinstall if its own is older (`instance/roles_txn.rs`).
    pub fn take_roles(&mut self) -> Option<RoleRecord> {
        self.roles.take()
    }

    /// The recovered state, and the parts of transactions whose commit record
    /// was not seen (a primary drops them; a secondary keeps them, since the
    /// commit may still arrive from its primary).
    pub fn finish(self) -> (Image, Pending) {
        (self.state, self.pending)
    }
}

/// Parts of transactions whose commit record has not been seen, by txid.
pub(crate) type Pending = HashMap<u64, Vec<Op>>;

/// The parts of a database's state a redo record can change.
pub(crate) struct RedoTarget<'a> {
    pub catalog: &'a mut Catalog,
    pub settings: &'a mut DbSettings,
    pub backup: &'a mut BackupState,
    pub next_txid: &'a mut u64,
    /// Where a committed transaction's role catalog goes (the newest kept).
    pub roles: &'a mut Option<RoleRecord>,
}

/// Applies one redo record. A transaction takes effect at its commit
/// record, with all its earlier parts. Returns whether the catalog changed.
pub(crate) fn apply_record(pending: &mut Pending, t: RedoTarget<'_>, rec: &[u8]) -> Result<bool> {
    apply_record_from(false, pending, t, rec)
}

/// [`apply_record`], where `in_image` says the state it applies to already
/// holds the record's commit, if it is one: the commit's parts are dropped
/// and nothing of it is applied again (its role catalog is still offered,
/// since roles live in a file of their own and install only when newer).
fn apply_record_from(
    in_image: bool,
    pending: &mut Pending,
    t: RedoTarget<'_>,
    rec: &[u8],
) -> Result<bool> {
    let cat = t.catalog;
    let redo = {
        let key_of = |tid: u32, row: &[crate::types::Value]| {
            // Tables keyed by a hidden row id always log the key.
            cat.by_id.get(&tid).and_then(|t| t.key_of(row))
        };
        decode_redo(rec, &key_of)?
    };
    let mut catalog_changed = true;
    match redo {
        Redo::Txn { txid, commit, ops } => {
            *t.next_txid = (*t.next_txid).max(txid + 1);
            if !commit {
                pending.entry(txid).or_default().extend(ops);
                return Ok(false);
            }
            if in_image {
                pending.remove(&txid);
                offer_roles(t.roles, &ops);
                return Ok(false);
            }
            let all = match pending.remove(&txid) {
                None => ops,
                Some(mut all) => {
                    all.extend(ops);
                    last_per_key(all)
                }
            };
            // Catalog changes first (they come first in the record), then
            // the rows.
            let mut changed = false;
            for op in &all {
                if let Op::Ddl(rec) = op {
                    changed = true;
                    apply_record(
                        pending,
                        RedoTarget {
                            catalog: &mut *cat,
                            settings: &mut *t.settings,
                            backup: &mut *t.backup,
                            next_txid: &mut *t.next_txid,
                            roles: &mut *t.roles,
                        },
                        rec,
                    )?;
                }
            }
            offer_roles(t.roles, &all);
            catalog_changed = changed;
            // One CSN for the whole transaction: readers (on a secondary)
            // see all of it or none of it.
            let vis = cat.vis.clone();
            let p = vis.begin_publish();
            // A commit's rows go in a batch per run of one table's keys in
            // ascending order (a write set's order), as a live commit
            // installs them: one hold of the table per batch, not per row.
            // Anything else (a key not above the one before) starts a new
            // batch, so the order of the changes is kept.
            let mut batch: Vec<(Key, Option<Row>)> = Vec::new();
            let mut batch_table: Option<&Arc<Table>> = None;
            for op in all {
                let (table, key, row) = match op {
                    Op::Put { table, key, row } => (table, key, Some(row)),
                    Op::Delete { table, key } => (table, key, None),
                    Op::Ddl(_) | Op::Roles(_) | Op::Forget { .. } => continue,
                };
                let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
                if let Some(row) = &row {
                    t.observe(&key, row);
                }
                let same = batch_table.is_some_and(|b| Arc::ptr_eq(b, t))
                    && batch.last().is_some_and(|(k, _)| *k < key);
                if !same {
                    if let Some(b) = batch_table {
                        install_batch(b, std::mem::take(&mut batch), p.csn, p.horizon)?;
                    }
                    batch_table = Some(t);
                }
                batch.push((key, row));
            }
            if let Some(b) = batch_table {
                install_batch(b, batch, p.csn, p.horizon)?;
            }
        }
        Redo::TxnAbort { txid } => {
            *t.next_txid = (*t.next_txid).max(txid + 1);
            pending.remove(&txid);
            return Ok(false);
        }
        Redo::CreateTable(def) => cat.add_table(Arc::new(Table::new(def))),
        Redo::DropTable(id) => {
            cat.remove_table(id);
            cat.drop_owned_sequences(id);
        }
        Redo::Truncate(id) => {
            if let Some(t) = cat.by_id.get(&id) {
                let empty = Arc::new(t.emptied());
                cat.add_table(empty);
            }
        }
        Redo::CreateSequence(def) => {
            let start = def.start;
            cat.add_sequence(
                def,
                SeqState {
                    next: start,
                    reserved: start,
                    last: None,
                },
            );
        }
        Redo::AlterSequence { def, restart } => cat.replace_sequence(def, restart),
        Redo::DropSequence(id) => cat.sequences.retain(|_, s| s.def.id != id),
        Redo::SeqReserve { id, upto } => {
            if let Some(s) = cat.sequences.values().find(|s| s.def.id == id) {
                // Values below `upto` may have been handed out before the crash.
                *s.state.lock() = Catalog::resumed_state(&s.def, upto);
            }
        }
        Redo::IdentitySet { table, next } => {
            // The table may be gone (dropped later in the log).
            if let Some(tb) = cat.by_id.get(&table) {
                tb.next_identity
                    .store(next, std::sync::atomic::Ordering::Relaxed);
            }
        }
        Redo::Settings(s) => *t.settings = s,
        Redo::FullBackup { lsn } => {
            t.backup.full_backup_lsn = Some(lsn);
            t.backup.log_backup_lsn = Some(lsn);
        }
        Redo::LogBackup { lsn } => t.backup.log_backup_lsn = Some(lsn),
        Redo::AddPrimaryKey { table, columns } => {
            let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
            let nt = Arc::new(t.with_primary_key(&columns, &mut BuildBudget::unlimited())?);
            cat.add_table(nt);
        }
        Redo::CreateIndex { table, index } => {
            let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
            if index.columns.iter().any(|&c| c >= t.def.columns.len()) {
                return Err(EngineError::Data(format!(
                    "redo record indexes a column table id {table} does not have"
                )));
            }
            // Built from the state published so far: what a reader of a
            // secondary sees from now on has entries.
            let csn = cat.vis.visible();
            let nt = Arc::new(t.with_index(index, csn, &mut BuildBudget::unlimited())?);
            cat.add_table(nt);
        }
        Redo::DropIndex { table, index } => {
            let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
            let nt = Arc::new(t.without_index(index));
            cat.add_table(nt);
        }
        Redo::AlterTable {
            table,
            def,
            rewrite,
        } => crate::alter::redo(cat, table, &def, rewrite.as_deref())?,
        Redo::AddForeignKey { table, fk } => {
            let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
            let r = cat
                .by_id
                .get(&fk.ref_table)
                .ok_or_else(|| unknown(fk.ref_table))?;
            if fk.columns.iter().any(|&c| c >= t.def.columns.len())
                || fk.ref_columns.iter().any(|&c| c >= r.def.columns.len())
            {
                return Err(EngineError::Data(format!(
                    "redo record's foreign key names a column table id {table} or {} does not have",
                    fk.ref_table
                )));
            }
            let mut fks = t.def.foreign_keys.clone();
            fks.push(fk);
            let nt = Arc::new(t.with_foreign_keys(fks));
            cat.add_table(nt);
        }
        Redo::CreateEnum(def) | Redo::AlterEnum(def) => cat.put_enum(def),
        Redo::DropEnum(id) => cat.drop_enum(id),
        Redo::PutView(def) => cat.put_view(def),
        Redo::DropView(id) => cat.drop_view(id),
        Redo::Comment(on, text) => cat.set_comment(on, text),
        Redo::PutSchema(def) => cat.put_schema(def),
        Redo::DropSchema(id) => cat.drop_schema(id),
        Redo::DropForeignKey { table, name } => {
            let t = cat.by_id.get(&table).ok_or_else(|| unknown(table))?;
            let fks = t
                .def
                .foreign_keys
                .iter()
                .filter(|f| f.name != name)
                .cloned()
                .collect();
            let nt = Arc::new(t.with_foreign_keys(fks));
            cat.add_table(nt);
        }
    }
    // As live: a change that removed an object removed its comment.
    if catalog_changed {
        cat.prune_comments();
    }
    Ok(catalog_changed)
}

/// Keeps the newest role catalog among a commit's ops.
fn offer_roles(roles: &mut Option<RoleRecord>, ops: &[Op]) {
    for op in ops {
        if let Op::Roles(r) = op {
            if roles
                .as_ref()
                .is_none_or(|o| o.catalog.version < r.catalog.version)
            {
                *roles = Some(r.clone());
            }
        }
    }
}

/// A transaction in several parts, in log order, as one op per key (the
/// last one), catalog changes first: a transaction that logged as it went
/// (`txn/spill.rs`) may have changed a key in more than one part, and
/// voided earlier ops with [`Op::Forget`].
fn last_per_key(ops: Vec<Op>) -> Vec<Op> {
    use std::collections::BTreeMap;
    let mut other = Vec::new();
    let mut rows: BTreeMap<(u32, Key), Option<Row>> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Put { table, key, row } => {
                rows.insert((table, key), Some(row));
            }
            Op::Delete { table, key } => {
                rows.insert((table, key), None);
            }
            Op::Forget { table, key } => {
                rows.remove(&(table, key));
            }
            op @ (Op::Ddl(_) | Op::Roles(_)) => other.push(op),
        }
    }
    other.extend(rows.into_iter().map(|((table, key), w)| match w {
        Some(row) => Op::Put { table, key, row },
        None => Op::Delete { table, key },
    }));
    other
}

/// Installs one batch of a replayed commit's changes to table `t`.
fn install_batch(
    t: &Table,
    changes: Vec<(Key, Option<Row>)>,
    csn: crate::mvcc::Csn,
    horizon: crate::mvcc::Csn,
) -> Result<()> {
    let priors = t.priors(&changes)?;
    t.install(changes, priors, csn, horizon);
    Ok(())
}

fn unknown(table: u32) -> EngineError {
    EngineError::Data(format!(
        "redo record names table id {table}, which does not exist"
    ))
}
