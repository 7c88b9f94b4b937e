//! ALTER TABLE in the engine: a table's next definition and how its rows
//! move into it. The SQL layer decides what the new definition is (and
//! validates the rows against it); the engine logs definition and rewrite
//! as one system change (fully durable) and applies it the same way on the
//! primary, at recovery and on a secondary, so all three end up with the
//! same table.
//!
//! Rows are positional, so a change of columns (ADD/DROP COLUMN, a new
//! type) rewrites every row, under the database's gate: commits wait for
//! it, as for CREATE INDEX. A change of names, defaults or constraints
//! keeps the rows and their versions (adding a unique index builds it).

use crate::budget::{held_bytes, BuildBudget, ENTRY_BYTES};
use crate::codec::Redo;
use crate::database::{Catalog, Database};
use crate::error::{EngineError, KeyConflict, Result};
use crate::mvcc::Csn;
use crate::schema::TableDef;
use crate::session::Session;
use crate::store::layer::{LayerFile, SortedBatch, LAYER_BATCH_BYTES};
use crate::table::{value_list, Table};
use crate::types::{Key, Value};
use std::collections::HashSet;
use std::ops::Bound;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

/// Where a column of the rewritten table takes its values from.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnSource {
    /// The old row's column at this position.
    Old(usize),
    /// The same value in every row (a new column's default).
    Fill(Value),
    /// One value per row, in the order of the old table's newest committed
    /// rows by key, which is the same wherever the record is
    /// applied: the change is made under the gate, with no commit between.
    Values(Vec<Value>),
}

impl ColumnSource {
    /// Row `n` of a rewrite: the old row `row` through the columns' sources
    /// (`n` indexes the per-row values).
    pub fn project(src: &[ColumnSource], row: &[Value], n: usize) -> Vec<Value> {
        src.iter()
            .map(|s| match s {
                ColumnSource::Old(i) => row[*i].clone(),
                ColumnSource::Fill(v) => v.clone(),
                ColumnSource::Values(v) => v[n].clone(),
            })
            .collect()
    }
}

/// A table's next definition (same id), and the rewrite of its rows if its
/// columns change.
#[derive(Clone, Debug)]
pub struct Alteration {
    pub def: TableDef,
    pub rewrite: Option<Vec<ColumnSource>>,
}

impl Database {
    /// `ALTER TABLE name ...` in a transaction of its own (see
    /// [`crate::Transaction::alter_table`]).
    pub fn alter_table<E: From<EngineError>>(
        self: &Arc<Self>,
        session: &Arc<Session>,
        name: &str,
        plan: impl FnOnce(&Arc<Table>) -> std::result::Result<Option<Alteration>, E>,
    ) -> std::result::Result<(), E> {
        let tx = self.begin(session);
        tx.alter_table(name, plan)?;
        tx.commit(crate::session::CommitRequest::Durable)?;
        Ok(())
    }
}

/// Checks an alteration of `t` against the catalog and builds the table it
/// makes, with its redo record, and whether its rows went into `into`
/// (see [`altered`]).
pub(crate) fn prepare(
    cat: &Catalog,
    t: &Arc<Table>,
    alt: Alteration,
    csn: Csn,
    budget: &mut BuildBudget,
    into: Option<&LayerFile>,
) -> Result<(Arc<Table>, Redo, bool)> {
    if !alt.def.name.eq_ignore_ascii_case(t.name())
        && (cat.table(&alt.def.name).is_some() || cat.index_table(&alt.def.name).is_some())
    {
        return Err(EngineError::RelationExists(alt.def.name));
    }
    let mut def = alt.def;
    def.id = t.id();
    keeps_foreign_keys(cat, t, &def)?;
    // New indexes take fresh ids, as CREATE INDEX gives them.
    let fresh = def.indexes.iter_mut().filter(|ix| ix.id == 0);
    for (id, ix) in (cat.next_table_id.max(1)..).zip(fresh) {
        ix.id = id;
    }
    let (nt, spilled) = altered(t, &def, alt.rewrite.as_deref(), csn, budget, into)?;
    Ok((
        Arc::new(nt),
        Redo::AlterTable {
            table: t.id(),
            def,
            rewrite: alt.rewrite,
        },
        spilled,
    ))
}

/// Foreign keys name columns by position: a change that drops or retypes
/// columns of a table that has or is referenced by one is refused (for
/// now), and a key or unique constraint a foreign key references must stay.
fn keeps_foreign_keys(cat: &Catalog, t: &Table, def: &TableDef) -> Result<()> {
    let referencing = cat.referencing(t.id());
    if t.def.foreign_keys.is_empty() && referencing.is_empty() {
        return Ok(());
    }
    let moved = def.columns.len() < t.def.columns.len()
        || t.def
            .columns
            .iter()
            .zip(&def.columns)
            .any(|(a, b)| a.data_type != b.data_type);
    if moved {
        return Err(EngineError::AlterForeignKeyColumns(t.def.name.clone()));
    }
    let set = |c: &[usize]| {
        let mut c = c.to_vec();
        c.sort_unstable();
        c
    };
    let by: Vec<(String, String)> = referencing
        .into_iter()
        .filter(|(_, fk)| {
            let want = set(&fk.ref_columns);
            set(&def.primary_key) != want
                && !def
                    .indexes
                    .iter()
                    .any(|ix| ix.unique && set(&ix.columns) == want)
        })
        .map(|(o, fk)| (fk.name, o.name().to_string()))
        .collect();
    if by.is_empty() {
        Ok(())
    } else {
        Err(EngineError::Referenced {
            kind: "constraint",
            table: t.def.name.clone(),
            by,
        })
    }
}

/// Replaces table `id` in the catalog by its altered self (under a new
/// name, if renamed); its columns' comments follow them.
pub(crate) fn install(
    cat: &mut Catalog,
    id: u32,
    nt: Arc<Table>,
    rewrite: Option<&[ColumnSource]>,
) {
    if let Some(old) = cat.by_id.get(&id).cloned() {
        let old_of: Vec<Option<usize>> = match rewrite {
            // Same columns in the same places (names may change).
            None => (0..nt.def.columns.len()).map(Some).collect(),
            Some(src) => src
                .iter()
                .map(|s| match s {
                    ColumnSource::Old(i) => Some(*i),
                    _ => None,
                })
                .collect(),
        };
        cat.follow_columns(&old.def, &nt.def, &old_of);
        cat.follow_owned_sequences(&old.def, &nt.def, &old_of);
    }
    // Not `remove_table`: that drops the foreign keys referencing the
    // table, as DROP TABLE ... CASCADE does.
    cat.replace_table(id, nt);
}

/// Redo of an ALTER TABLE record.
pub(crate) fn redo(
    cat: &mut Catalog,
    id: u32,
    def: &TableDef,
    rewrite: Option<&[ColumnSource]>,
) -> Result<()> {
    let t = cat.by_id.get(&id).cloned().ok_or_else(|| {
        EngineError::Data(format!(
            "redo record names table id {id}, which does not exist"
        ))
    })?;
    let csn = cat.vis.visible();
    let (nt, _) = altered(&t, def, rewrite, csn, &mut BuildBudget::unlimited(), None)?;
    let nt = Arc::new(nt);
    install(cat, id, nt, rewrite);
    Ok(())
}

fn bad(detail: &str) -> EngineError {
    EngineError::Data(format!("ALTER TABLE record: {detail}"))
}

/// `t` under its next definition. Rows, their versions and unchanged
/// indexes are shared when the columns and key stay; otherwise the table is
/// rebuilt from its newest committed rows, into the spill file `into` if
/// one is given and the new table has no indexes (the flag says whether
/// it was; the caller then makes the table read the file).
pub(crate) fn altered(
    t: &Table,
    def: &TableDef,
    rewrite: Option<&[ColumnSource]>,
    csn: Csn,
    budget: &mut BuildBudget,
    into: Option<&LayerFile>,
) -> Result<(Table, bool)> {
    def.validate()?;
    // A column that just became an identity column (ADD GENERATED, or a
    // new identity column) counts from its START, as PostgreSQL's new
    // sequence does, whatever rows the table holds.
    let fresh_identity = match (t.def.identity_column(), def.identity_column()) {
        (None, Some((_, id))) => Some(id.seed),
        _ => None,
    };
    let (mut next, spilled) = altered_rows(t, def, rewrite, csn, budget, into)?;
    if let Some(seed) = fresh_identity {
        next.next_identity = Arc::new(AtomicI64::new(seed));
    }
    Ok((next, spilled))
}

fn altered_rows(
    t: &Table,
    def: &TableDef,
    rewrite: Option<&[ColumnSource]>,
    csn: Csn,
    budget: &mut BuildBudget,
    into: Option<&LayerFile>,
) -> Result<(Table, bool)> {
    let ncols = def.columns.len();
    if def.primary_key.iter().any(|&c| c >= ncols)
        || def
            .indexes
            .iter()
            .any(|ix| ix.columns.is_empty() || ix.columns.iter().any(|&c| c >= ncols))
    {
        return Err(bad("a key or index names a column the table does not have"));
    }
    let kept: Vec<_> = def
        .indexes
        .iter()
        .filter(|ix| t.def.indexes.iter().any(|o| o.id == ix.id))
        .collect();
    let same_kept = kept.iter().all(|ix| t.def.indexes.contains(ix))
        && kept
            .iter()
            .zip(def.indexes.iter())
            .all(|(a, b)| a.id == b.id);
    let same_rows = rewrite.is_none()
        && ncols == t.def.columns.len()
        && def.primary_key == t.def.primary_key
        && def
            .columns
            .iter()
            .zip(&t.def.columns)
            .all(|(a, b)| a.data_type == b.data_type);
    if same_rows && same_kept {
        let kept_ids: HashSet<u32> = kept.iter().map(|ix| ix.id).collect();
        let mut base = def.clone();
        base.indexes.retain(|ix| kept_ids.contains(&ix.id));
        let mut next = t.sharing(base);
        next.indexes.retain(|ix| kept_ids.contains(&ix.def.id));
        for ix in def.indexes.iter().filter(|ix| !kept_ids.contains(&ix.id)) {
            next = next.with_index(ix.clone(), csn, budget)?;
        }
        return Ok((next, false));
    }
    // A new table's index entries are built in memory: its rows are too.
    let into = into.filter(|_| def.indexes.is_empty());
    let spilled = into.is_some();
    Ok((rebuilt(t, def, rewrite, budget, into)?, spilled))
}

/// A new table under `def` holding `t`'s newest committed rows rewritten
/// by `rewrite`, with its key and unique indexes checked. The old rows
/// stream past in key order (the order `ColumnSource::Values` follows):
/// only the new table is held, and it is charged to `budget`; or, with
/// `into` (the new table has no indexes), the rows go to that spill file
/// in sorted batches of bounded size, whose inserts find a duplicate key,
/// and nothing is held.
fn rebuilt(
    t: &Table,
    def: &TableDef,
    rewrite: Option<&[ColumnSource]>,
    budget: &mut BuildBudget,
    into: Option<&LayerFile>,
) -> Result<Table> {
    let ncols = def.columns.len();
    match rewrite {
        Some(src) => {
            if src.len() != ncols {
                return Err(bad("the rewrite does not give every column"));
            }
            if src
                .iter()
                .any(|s| matches!(s, ColumnSource::Old(i) if *i >= t.def.columns.len()))
            {
                return Err(bad("the rewrite names a column the table did not have"));
            }
        }
        None if ncols != t.def.columns.len() => {
            return Err(bad("the columns change but the rows are not rewritten"))
        }
        None => {}
    }
    let values_len = rewrite.and_then(|src| {
        src.iter().find_map(|s| match s {
            ColumnSource::Values(v) => Some(v.len()),
            _ => None,
        })
    });
    if rewrite.is_some_and(|src| {
        src.iter()
            .any(|s| matches!(s, ColumnSource::Values(v) if Some(v.len()) != values_len))
    }) {
        return Err(bad("the rewrite's values do not match the rows"));
    }
    let mut nt = Table::new(def.clone());
    nt.next_identity = t.next_identity.clone();
    let hidden = nt.has_hidden_key();
    if hidden && t.has_hidden_key() {
        nt.next_rowid = t.next_rowid.clone();
    }
    let uniques: Vec<usize> = (0..def.indexes.len())
        .filter(|&i| def.indexes[i].unique)
        .collect();
    let mut seen: Vec<HashSet<Vec<Value>>> = vec![HashSet::new(); uniques.len()];
    let mut keys: HashSet<Key> = HashSet::new();
    let pkey_conflict = |k: &Key| {
        EngineError::UniqueBuildFailed(Box::new(KeyConflict {
            table: def.name.clone(),
            constraint: def.pkey_name(),
            columns: def.column_list(&def.primary_key),
            key: value_list(k),
        }))
    };
    let mut batch = SortedBatch::new(into, LAYER_BATCH_BYTES, &pkey_conflict);
    let mut n = 0usize;
    let all = (Bound::Unbounded, Bound::Unbounded);
    t.rows.for_each_keyed_at(all, Csn::MAX, |v| {
        let row = v.row();
        if values_len.is_some_and(|len| n >= len) {
            return Err(bad("the rewrite's values do not match the rows"));
        }
        let row: Vec<Value> = match rewrite {
            None => row.to_vec(),
            Some(src) => ColumnSource::project(src, row, n),
        };
        let key: Key = if !hidden {
            if let Some(&c) = def.primary_key.iter().find(|&&c| row[c].is_null()) {
                return Err(EngineError::NotNull {
                    table: def.name.clone(),
                    column: def.columns[c].name.clone(),
                    row: None,
                });
            }
            let k: Key = def.primary_key.iter().map(|&c| row[c].clone()).collect();
            // Into a file, the batches' sort and the file's inserts find
            // a duplicate.
            if into.is_none() {
                budget.charge(held_bytes(&k))?;
                if !keys.insert(k.clone()) {
                    return Err(pkey_conflict(&k));
                }
            }
            k
        } else if t.has_hidden_key() {
            v.key()?
        } else {
            vec![Value::Int(n as i64 + 1)].into_boxed_slice()
        };
        for (u, s) in uniques.iter().zip(seen.iter_mut()) {
            let ix = &def.indexes[*u];
            let vals: Vec<Value> = ix.columns.iter().map(|&c| row[c].clone()).collect();
            budget.charge(held_bytes(&vals))?;
            if !vals.iter().any(Value::is_null) && !s.insert(vals.clone()) {
                return Err(EngineError::UniqueBuildFailed(Box::new(KeyConflict {
                    table: def.name.clone(),
                    constraint: ix.name.clone(),
                    columns: def.column_list(&ix.columns),
                    key: value_list(&vals),
                })));
            }
        }
        n += 1;
        if into.is_some() {
            return batch.push(key, Arc::from(row));
        }
        budget.charge_row(&key, &row)?;
        for ix in &def.indexes {
            let vals: u64 = ix.columns.iter().map(|&c| held_bytes(&row[c..=c])).sum();
            budget.charge(ENTRY_BYTES + held_bytes(&key) + vals)?;
        }
        nt.load_row(key, Arc::from(row));
        Ok(())
    })?;
    batch.flush()?;
    if values_len.is_some_and(|len| len != n) {
        return Err(bad("the rewrite's values do not match the rows"));
    }
    if hidden && !t.has_hidden_key() {
        // A dropped primary key: the rows took row ids in key order.
        nt.next_rowid = Arc::new(AtomicI64::new(n as i64 + 1));
    }
    Ok(nt)
}

/// What rows written under a table definition depend on: their positions
/// and types, and the constraints they were checked against. Kept as the
/// table handle the rows were written through (a definition is never
/// changed in place, so the handle's is the one they were checked against):
/// taking it costs a reference count, not a copy of the definition, and
/// the common case at commit (the table is still the same) is one pointer
/// comparison.
#[derive(Debug)]
pub(crate) struct Shape {
    table: Arc<Table>,
}

impl Shape {
    pub(crate) fn of(table: &Arc<Table>) -> Shape {
        Shape {
            table: table.clone(),
        }
    }

    pub(crate) fn matches(&self, def: &TableDef) -> bool {
        let mine = &self.table.def;
        std::ptr::eq(mine, def)
            || (mine.columns == def.columns
                && mine.checks == def.checks
                && mine.primary_key == def.primary_key)
    }
}
