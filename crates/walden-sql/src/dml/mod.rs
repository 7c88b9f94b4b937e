//! INSERT, UPDATE, DELETE (INSERT in insert.rs, the FROM list of UPDATE ... FROM
//! and DELETE ... USING in from.rs).
//!
//! UPDATE and DELETE find candidate rows by primary-key lookup when the WHERE
//! clause fixes the key (the OLTP fast path), by a scan otherwise; each row is
//! then locked and re-read, and the WHERE clause re-checked on the latest
//! committed version before it is changed (as PostgreSQL re-checks an
//! updated row).

use crate::dml::checks::Checks;
use crate::dml::foreign_keys::Pending;
use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::{Expr, Scope, ScopeCol};
use crate::front::plpgsql::trigger::TrigOp;
use crate::functions::Env;
use crate::functions::SessionInfo;
use crate::query::{self, object_last, Halt, Planner, Source};
use crate::{Column, QueryOutput};
use sqlparser::ast::{self, SelectItem};
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use triggers::Firing;
use upsert::OnConflict;
use walden_engine::{
    Instance, Key, LockMode, Locked, Table, Transaction, Upsert, Value, WaitPolicy,
};

pub(crate) mod assign;
pub(crate) mod checks;
pub(crate) mod defaults;
pub(crate) mod deferred;
pub(crate) mod explain;
pub(crate) mod foreign_keys;
mod from;
pub(crate) mod generated;
pub(crate) mod identity;
mod insert;
pub(crate) mod locking;
mod merge;
mod output;
pub(crate) mod routing;
pub(crate) mod triggers;
mod tsql_delete;
pub(crate) mod upsert;
pub(crate) mod with_dml;
pub use insert::*;
pub(crate) use merge::{is_merge, plan_merge, run_merge, MergePlan};

/// What statement execution needs besides the transaction.
pub struct Ctx<'a> {
    pub params: &'a [Value],
    pub info: &'a SessionInfo,
    pub cancel: &'a AtomicBool,
    pub instance: &'a Instance,
}

impl<'a> Ctx<'a> {
    pub fn env<'b>(&'b self, tx: &'b Transaction) -> Env<'b> {
        Env {
            params: self.params,
            outer: &[],
            tx,
            info: self.info,
            cancel: self.cancel,
            instance: self.instance,
        }
    }
}

/// A read-only transaction refuses a data change when the statement starts,
/// before it finds a row, as PostgreSQL does: one that would change no rows
/// fails too. A temporary table may change (PostgreSQL's exemption).
pub(crate) fn check_read_write(tx: &Transaction, t: &Table, what: &str) -> Result<()> {
    if tx.read_only() && crate::types::temp_names::split_temp(t.name()).is_none() {
        return Err(walden_engine::EngineError::ReadOnlyTransaction(what.into()).into());
    }
    Ok(())
}

pub(crate) fn table_scope(t: &Table, alias: Option<&str>) -> Arc<Scope> {
    let label = alias.unwrap_or(t.name()).to_ascii_lowercase();
    Arc::new(Scope::new(
        t.def
            .columns
            .iter()
            .enumerate()
            .map(|(k, c)| ScopeCol {
                table: Some(label.clone()),
                name: c.name.clone(),
                ty: c.data_type.clone(),
                origin: crate::ColumnOrigin::of_table(t.id(), k),
                ..Default::default()
            })
            .collect(),
    ))
}

/// A compiled RETURNING clause.
pub(crate) struct Returning {
    pub(crate) columns: Vec<Column>,
    pub(crate) exprs: Vec<Expr>,
    /// An UPDATE's OUTPUT reads the old row too (`deleted.x`), after the
    /// rest of the row.
    pub(crate) old_row: bool,
    /// OUTPUT ... INTO: the rows go into this table, not to the client.
    pub(crate) into: Option<Box<insert::InsertPlan>>,
}

impl Returning {
    /// The RETURNING row for a written row (`row` as the list's scope
    /// sees it).
    pub(crate) fn row(&self, row: &[Value], env: &Env<'_>) -> Result<Vec<Value>> {
        self.exprs.iter().map(|e| e.eval(row, env)).collect()
    }
}

pub(crate) fn returning(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    items: &Option<Vec<SelectItem>>,
) -> Result<Option<Returning>> {
    let Some(items) = items else { return Ok(None) };
    let types: Vec<_> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let mut columns = Vec::new();
    let mut exprs = Vec::new();
    for it in items {
        match it {
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                // `t.*`: one table's columns (the target's or, with FROM
                // or USING, one of the list's).
                let only = match it {
                    SelectItem::QualifiedWildcard(
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                        _,
                    ) => Some(object_last(n).to_ascii_lowercase()),
                    SelectItem::QualifiedWildcard(kind, _) => {
                        Some(kind.to_string().to_ascii_lowercase())
                    }
                    _ => None,
                };
                let before = columns.len();
                for (i, c) in scope.cols.iter().enumerate() {
                    if c.hidden || only.as_ref().is_some_and(|t| c.table.as_ref() != Some(t)) {
                        continue;
                    }
                    columns.push(Column {
                        name: c.name.clone(),
                        ty: c.ty.clone(),
                        origin: c.origin,
                    });
                    exprs.push(Expr::Col(i));
                }
                if let (Some(t), true) = (&only, columns.len() == before) {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedTable,
                        format!("missing FROM-clause entry for table \"{t}\""),
                    ));
                }
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let name = match it {
                    SelectItem::ExprWithAlias { alias, .. } => alias.value.to_ascii_lowercase(),
                    _ => crate::expr::column_name(e),
                };
                let x = Expr::compile(p, scope, e)?;
                let type_of =
                    |t: &ast::DataType| crate::types::names::data_type_in(&p.db, p.viewer, t).ok();
                columns.push(Column {
                    name,
                    ty: query::static_type(&x, &types, &p.params)
                        .unwrap_or(walden_engine::DataType::Text),
                    origin: scope.origin_of(e, &type_of),
                });
                exprs.push(x);
            }
            other => return Err(SqlError::unsupported(format!("RETURNING {other}"))),
        }
    }
    Ok(Some(Returning {
        columns,
        exprs,
        old_row: false,
        into: None,
    }))
}

/// The result columns a DML statement returns (for Describe).
pub fn describe(p: &mut Planner<'_>, stmt: &ast::Statement) -> Result<Option<Vec<Column>>> {
    Ok(match stmt {
        ast::Statement::Insert(ins) => {
            // Plan the whole statement, to type its parameters.
            plan_insert(p, ins)?.returning.map(|r| r.columns)
        }
        ast::Statement::Update(u) => {
            let plan = plan_update(p, u)?;
            plan.returning.map(|r| r.columns)
        }
        ast::Statement::Delete(d) => {
            let plan = plan_delete(p, d)?;
            plan.returning.map(|r| r.columns)
        }
        _ => None,
    })
}

/// A planned UPDATE or DELETE.
pub(crate) struct Planned {
    table: Arc<Table>,
    /// Key lookup (the whole primary key fixed by WHERE).
    lookup: Option<Vec<Expr>>,
    /// Otherwise bounds on the key's first column.
    range: Option<Box<query::KeyRange>>,
    /// Or a secondary index search.
    index: Option<Box<query::IndexPath>>,
    filter: Vec<Expr>,
    assignments: Vec<(usize, Expr)>,
    /// `SET (a, b) = (SELECT ...)` assignments (UPDATE only).
    rows: Vec<assign::RowAssignment>,
    returning: Option<Returning>,
    /// CHECK constraints (UPDATE only).
    checks: Option<Checks>,
    /// UPDATE ... FROM, DELETE ... USING: the rows joined with the target's.
    from: Option<Box<from::FromList>>,
    /// A partition's constraint up to the partitioned table the statement
    /// names: an updated row it no longer meets moves (UPDATE only).
    moving: Option<query::partition::Constraint>,
    /// The target's own partition constraint (a partition named
    /// directly): an updated row must meet it (23514).
    bound_check: Option<query::partition::Constraint>,
    /// A partitioned target: the plans of its partitions.
    partitions: Option<Box<routing::PartitionedWrite>>,
}

impl Planned {
    fn partitioned(
        table: Arc<Table>,
        returning: Option<Returning>,
        parts: routing::PartitionedWrite,
    ) -> Planned {
        Planned {
            table,
            lookup: None,
            range: None,
            index: None,
            filter: vec![],
            assignments: vec![],
            rows: vec![],
            returning,
            checks: None,
            from: None,
            moving: None,
            bound_check: None,
            partitions: Some(Box::new(parts)),
        }
    }
}

impl Planned {
    /// The columns SET assigns.
    fn assigned_columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.assignments
            .iter()
            .map(|(i, _)| *i)
            .chain(self.rows.iter().flat_map(|r| r.cols.iter().copied()))
    }

    /// See [`InsertPlan::reusable`].
    pub(crate) fn reusable(&self) -> bool {
        let lookup = self.lookup.iter().flatten();
        let range = self.range.iter().flat_map(|r| r.exprs());
        let assigned = self
            .assignments
            .iter()
            .map(|(_, e)| e)
            .chain(self.rows.iter().map(|r| &r.source));
        let index = self.index.iter().flat_map(|ip| query::index_exprs(ip));
        lookup
            .chain(range)
            .chain(index)
            .chain(self.filter.iter())
            .chain(assigned)
            .all(|e| !e.has_subquery())
            && returning_reusable(&self.returning)
            && self.checks.as_ref().is_none_or(|c| c.reusable())
            && self.from.is_none()
            // (The partitions and bounds are read when the plan is made.)
            && self.partitions.is_none()
            && self.bound_check.is_none()
    }
}

/// A planned DELETE: the rows' plan and its row limit (`DELETE TOP (n)`, or
/// a LIMIT expression).
pub(crate) struct DeletePlan {
    planned: Planned,
    top: Option<u64>,
    limit: Option<Expr>,
}

impl DeletePlan {
    pub(crate) fn reusable(&self) -> bool {
        self.planned.reusable() && self.limit.as_ref().is_none_or(|e| !e.has_subquery())
    }
}

/// How UPDATE and DELETE (and locking reads) find their rows (see
/// `query::Source::Table`).
pub(crate) struct Access {
    pub(crate) lookup: Option<Vec<Expr>>,
    pub(crate) range: Option<Box<query::KeyRange>>,
    pub(crate) index: Option<Box<query::IndexPath>>,
    pub(crate) filter: Vec<Expr>,
}

impl Access {
    /// Whether a plan holding this access may run again (no subquery,
    /// whose per-statement state the plan would keep).
    pub(crate) fn reusable(&self) -> bool {
        let lookup = self.lookup.iter().flatten();
        let range = self.range.iter().flat_map(|r| r.exprs());
        let index = self.index.iter().flat_map(|ip| query::index_exprs(ip));
        lookup
            .chain(range)
            .chain(index)
            .chain(self.filter.iter())
            .all(|e| !e.has_subquery())
    }
}

pub(crate) fn plan_where(
    p: &mut Planner<'_>,
    t: &Arc<Table>,
    scope: &Arc<Scope>,
    selection: &Option<ast::Expr>,
) -> Result<Access> {
    let mut filter = Vec::new();
    if let Some(w) = selection {
        let mut cs = Vec::new();
        query::conjuncts(w, &mut cs);
        for c in cs {
            filter.push(Expr::compile(p, scope, &c)?);
        }
    }
    Ok(access_for(t, filter))
}

/// How to find the rows of `t` that pass `filter`.
fn access_for(t: &Arc<Table>, filter: Vec<Expr>) -> Access {
    let mut src = Source::Table {
        table: t.clone(),
        lookup: None,
        range: None,
        index: None,
        filter,
    };
    query::choose_lookups(&mut src);
    match src {
        Source::Table {
            lookup,
            range,
            index,
            filter,
            ..
        } => Access {
            lookup,
            range,
            index,
            filter,
        },
        _ => unreachable!(),
    }
}

pub(crate) fn plan_update(p: &mut Planner<'_>, u: &ast::Update) -> Result<Planned> {
    let from_list = match &u.from {
        None => None,
        Some(ast::UpdateTableFromKind::AfterSet(f)) => Some(f),
        Some(ast::UpdateTableFromKind::BeforeSet(_)) => {
            return Err(SqlError::syntax("syntax error at or near \"FROM\""))
        }
    };
    let (name, alias) = match &u.table.relation {
        ast::TableFactor::Table { name, alias, .. } => {
            (name, alias.as_ref().map(|a| a.name.value.clone()))
        }
        other => return Err(SqlError::unsupported(format!("UPDATE {other}"))),
    };
    let t = target_table(p, name, "UPDATE")?;
    if t.def.partition_key.is_some() {
        return routing::plan_update(p, u, t, alias);
    }
    if let (None, Some(f)) = (&alias, from_list) {
        tsql_delete::refuse_self_join(&t, f)?;
    }
    let target = table_scope(&t, alias.as_deref());
    let (scope, mut from) = match from_list {
        Some(f) => {
            let (scope, list) = from::plan_list(p, &target, f)?;
            (scope, Some(Box::new(list)))
        }
        None => (target, None),
    };
    let mut assignments = Vec::new();
    let mut rows = Vec::new();
    for a in assign::spread(&t, &u.assignments, None)? {
        let (i, value) = match a {
            assign::Assigned::One { i, value, .. } => (i, value),
            assign::Assigned::Row { cols, query } => {
                rows.push(assign::compile_row(p, &t, &scope, &cols, query)?);
                continue;
            }
        };
        if crate::dml::generated::is_generated(&t, i) {
            if !is_default_kw(value) {
                return Err(crate::dml::generated::value_refused(
                    &t.def.columns[i].name,
                    true,
                ));
            }
            // Computed from the new row anyway.
            continue;
        }
        if crate::dml::identity::is_generated_always(&t, i) && !is_default_kw(value) {
            return Err(crate::dml::identity::generated_always(
                &t.def.columns[i].name,
                true,
            ));
        }
        let e = if is_default_kw(value) {
            if t.def.columns[i].identity.is_some() {
                return Err(SqlError::unsupported(
                    "SET col = DEFAULT of an identity column",
                ));
            }
            crate::dml::defaults::default_of(p, &t.def.columns[i])?
        } else {
            Expr::compile(p, &scope, value)?
        };
        if let Expr::Param(pi) = &e {
            p.infer_param(*pi, t.def.columns[i].data_type.clone());
        }
        assignments.push((i, e));
    }
    let Access {
        lookup,
        range,
        index,
        filter,
    } = match from.as_deref_mut() {
        Some(f) => from::plan_where(p, &t, &scope, &u.selection, f)?,
        None => plan_where(p, &t, &scope, &u.selection)?,
    };
    let written: Vec<&ast::Expr> = u
        .assignments
        .iter()
        .map(|a| &a.value)
        .chain(u.selection.as_ref())
        .collect();
    refuse_self_reading_subquery(
        &t,
        "UPDATE",
        assignments
            .iter()
            .map(|(_, e)| e)
            .chain(rows.iter().map(|r| &r.source))
            .chain(&filter),
        &written,
    )?;
    let returning = match &u.output {
        Some(_) => output::plan(
            p,
            &scope,
            t.def.columns.len(),
            &u.output,
            output::Verb::Update,
        )?,
        None => returning(p, &scope, &u.returning)?,
    };
    let checks = Some(Checks::compile(p, &t)?).filter(|c| !c.is_empty());
    let bound_check = routing::own_constraint(p, &t)?;
    Ok(Planned {
        table: t,
        lookup,
        range,
        index,
        filter,
        assignments,
        rows,
        returning,
        checks,
        from,
        moving: None,
        bound_check,
        partitions: None,
    })
}

fn plan_delete(p: &mut Planner<'_>, d: &ast::Delete) -> Result<Planned> {
    // T-SQL's `DELETE t FROM source ...`: as `DELETE FROM t USING ...`.
    if !d.tables.is_empty() {
        return plan_delete(p, &tsql_delete::normalize(d)?);
    }
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    if from.len() != 1 || !from[0].joins.is_empty() || !d.tables.is_empty() {
        return Err(SqlError::unsupported("DELETE from several tables"));
    }
    let (name, alias) = match &from[0].relation {
        ast::TableFactor::Table { name, alias, .. } => {
            (name, alias.as_ref().map(|a| a.name.value.clone()))
        }
        other => return Err(SqlError::unsupported(format!("DELETE FROM {other}"))),
    };
    let t = target_table(p, name, "DELETE")?;
    if t.def.partition_key.is_some() {
        return routing::plan_delete(p, d, t, alias);
    }
    let target = table_scope(&t, alias.as_deref());
    let (scope, mut using) = match &d.using {
        Some(f) => {
            let (scope, list) = from::plan_list(p, &target, f)?;
            (scope, Some(Box::new(list)))
        }
        None => (target, None),
    };
    let Access {
        lookup,
        range,
        index,
        filter,
    } = match using.as_deref_mut() {
        Some(f) => from::plan_where(p, &t, &scope, &d.selection, f)?,
        None => plan_where(p, &t, &scope, &d.selection)?,
    };
    let written: Vec<&ast::Expr> = d.selection.iter().collect();
    refuse_self_reading_subquery(&t, "DELETE", &filter, &written)?;
    let returning = match &d.output {
        Some(_) => output::plan(
            p,
            &scope,
            t.def.columns.len(),
            &d.output,
            output::Verb::Delete,
        )?,
        None => returning(p, &scope, &d.returning)?,
    };
    Ok(Planned {
        table: t,
        lookup,
        range,
        index,
        filter,
        assignments: vec![],
        rows: vec![],
        returning,
        checks: None,
        from: using,
        moving: None,
        bound_check: None,
        partitions: None,
    })
}

/// Keys of the rows the statement may touch, from the transaction's view.
fn candidates(
    pl: &Planned,
    tx: &Transaction,
    ctx: &Ctx<'_>,
    limit: Option<u64>,
) -> Result<Vec<Key>> {
    let env = ctx.env(tx);
    let t = &pl.table;
    tx.lock_table(
        t,
        walden_engine::TableLockMode::RowExclusive,
        WaitPolicy::Wait,
    )?;
    if let Some(key) = &pl.lookup {
        let k = query::lookup_key(t, key, &env)?;
        return Ok(match tx.get_in(t, &k)? {
            Some(_) => vec![k.into_boxed_slice()],
            None => vec![],
        });
    }
    let mut keys = Vec::new();
    let found = match &pl.index {
        Some(ip) => query::index_rows(t, ip, &env)?,
        None => None,
    };
    if let Some(rows) = found {
        for (k, r) in rows {
            if query::passes(&pl.filter, &r, &env)? {
                keys.push(k);
                if limit.is_some_and(|l| keys.len() as u64 >= l) {
                    break;
                }
            }
        }
        return Ok(keys);
    }
    // A scan keeps only the keys of the rows that pass: an UPDATE or
    // DELETE of a few rows of a large table holds a few keys.
    let scanned = tx.scan_each_keyed(t, query::key_bounds(t, pl.range.as_deref(), &env)?, |v| {
        if query::passes(&pl.filter, v.row(), &env).map_err(Halt::Failed)? {
            keys.push(v.key()?);
            if limit.is_some_and(|l| keys.len() as u64 >= l) {
                return Err(Halt::Enough);
            }
        }
        Ok(())
    });
    match scanned {
        Ok(()) | Err(Halt::Enough) => Ok(keys),
        Err(Halt::Failed(e)) => Err(e),
    }
}

pub fn update(
    p: &mut Planner<'_>,
    u: &ast::Update,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    run_update(&plan_update(p, u)?, tx, ctx)
}

pub(crate) fn run_update(pl: &Planned, tx: &mut Transaction, ctx: &Ctx<'_>) -> Result<QueryOutput> {
    check_read_write(tx, &pl.table, "UPDATE")?;
    let (n, out_rows) = match &pl.partitions {
        None => {
            let cols: Vec<usize> = pl.assigned_columns().collect();
            let mut fire = Firing::load(tx, ctx, &pl.table, TrigOp::Update, &cols)?;
            if let Some(f) = &fire {
                f.before_statement(tx, ctx)?;
            }
            let keys = candidates(pl, tx, ctx, None)?;
            let r = update_rows(pl, tx, ctx, keys, None, fire.as_mut())?;
            if let Some(f) = fire {
                f.finish(tx, ctx)?;
            }
            r
        }
        Some(parts) => {
            // Each partition's rows are found before any moves, so a
            // moved row is not updated again where it lands.
            let mut keys = Vec::with_capacity(parts.leaves.len());
            for l in &parts.leaves {
                keys.push(candidates(l, tx, ctx, None)?);
            }
            let mut n = 0;
            let mut out_rows = Vec::new();
            let mut moved = Vec::new();
            for (l, k) in parts.leaves.iter().zip(keys) {
                let to_root = parts.routing.columns_in(l.table.id()).unwrap_or(&[]);
                let (m, rows) = update_rows(l, tx, ctx, k, Some((&mut moved, to_root)), None)?;
                n += m;
                out_rows.extend(rows);
            }
            for row in moved {
                if let Some(c) = &parts.root_check {
                    c.enforce(&row, &ctx.env(tx))?;
                }
                parts.routing.insert(tx, ctx, row)?;
            }
            (n, out_rows)
        }
    };
    let mut out = QueryOutput::command(format!("UPDATE {n}"));
    output::deliver(&pl.returning, out_rows, &mut out, tx, ctx)?;
    Ok(out)
}

/// Updates the rows of `keys` that still pass; with `moving`, a row its
/// partition no longer takes is deleted there and handed back (in the
/// partitioned table's column order, by the positions given) to be
/// inserted through the table. Returns the count and RETURNING rows.
#[allow(clippy::type_complexity)]
fn update_rows(
    pl: &Planned,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    keys: Vec<Key>,
    mut moving: Option<(&mut Vec<Vec<Value>>, &[usize])>,
    mut fire: Option<&mut Firing>,
) -> Result<(u64, Vec<Vec<Value>>)> {
    let t = pl.table.clone();
    let mode = update_lock_mode(&t, pl.assigned_columns());
    let mut n = 0u64;
    let mut out_rows = Vec::new();
    let mut fks = Pending::new(tx, &t);
    let from_rows = match &pl.from {
        Some(f) => Some(from::rows(f, &ctx.env(tx))?),
        None => None,
    };
    for k in keys {
        // Lock, then judge the latest version.
        let Locked::Row(Some(row)) = tx.get_locked(&t, &k, mode, WaitPolicy::Wait)? else {
            continue;
        };
        let (new_row, joined) = {
            let env = ctx.env(tx);
            if !query::passes(&pl.filter, &row, &env)? {
                continue;
            }
            // With FROM, SET reads the target's row and the FROM row it
            // joins (the first one).
            let joined = match (&pl.from, &from_rows) {
                (Some(f), Some(fr)) => match from::first_match(f, fr, &row, &env)? {
                    Some(j) => Some(j),
                    None => continue,
                },
                _ => None,
            };
            let input: &[Value] = joined.as_deref().unwrap_or(&row);
            let mut new_row = row.to_vec();
            for (i, e) in &pl.assignments {
                new_row[*i] = e.eval(input, &env)?;
            }
            for r in &pl.rows {
                r.apply(input, &env, &mut new_row)?;
            }
            (new_row, joined)
        };
        let mut new_row = match fire.as_deref() {
            Some(f) if f.has_before_row() => {
                match f.before_row(tx, ctx, Some(&row), Some(new_row))? {
                    Some(r) => r,
                    None => continue,
                }
            }
            _ => new_row,
        };
        // After the BEFORE triggers, as PostgreSQL computes them.
        if let Some(c) = &pl.checks {
            c.generate(&mut new_row, &ctx.env(tx))?;
        }
        if let (Some(mv), Some((moved, to_root))) = (&pl.moving, moving.as_mut()) {
            let full = tx.complete_row(&t, new_row.iter().cloned().map(Some).collect())?;
            if !mv.admits(&full, &ctx.env(tx))? {
                if let Some(c) = &pl.checks {
                    c.enforce(&full, &ctx.env(tx))?;
                }
                if let Some(r) = &pl.returning {
                    out_rows.push(r.row(&full, &ctx.env(tx))?);
                }
                if tx.delete_in(&t, &k)? {
                    fks.deleted(&t, &row);
                }
                moved.push(to_root.iter().map(|&i| full[i].clone()).collect());
                n += 1;
                continue;
            }
        }
        let stored = tx.update_in(&t, &k, new_row)?;
        if let Some(c) = &pl.checks {
            c.enforce(&stored, &ctx.env(tx))?;
        }
        if let Some(b) = &pl.bound_check {
            b.enforce(&stored, &ctx.env(tx))?;
        }
        fks.updated(&t, &row, &stored);
        if let Some(f) = fire.as_deref_mut() {
            f.after_row(Some(&row), Some(&stored));
        }
        n += 1;
        if let Some(r) = &pl.returning {
            let env = ctx.env(tx);
            // RETURNING sees the new row and the FROM row it joined
            // (OUTPUT's deleted.x the old row after them).
            let mut seen = match joined {
                Some(mut j) => {
                    j.splice(..stored.len(), stored.iter().cloned());
                    j
                }
                None => stored.to_vec(),
            };
            if r.old_row {
                seen.extend(row.iter().cloned());
            }
            out_rows.push(r.row(&seen, &env)?);
        }
    }
    fks.finish(tx, ctx)?;
    Ok((n, out_rows))
}

/// As PostgreSQL: an update that leaves the key alone takes the row lock
/// of FOR NO KEY UPDATE, which key-share lockers do not wait for. A column
/// of a unique index is a key too (a foreign key may reference it).
pub(crate) fn update_lock_mode(t: &Table, mut assigned: impl Iterator<Item = usize>) -> LockMode {
    if assigned.any(|i| {
        t.def.primary_key.contains(&i)
            || t.def
                .indexes
                .iter()
                .any(|ix| ix.unique && ix.columns.contains(&i))
    }) {
        LockMode::Update
    } else {
        LockMode::NoKeyUpdate
    }
}

pub fn delete(
    p: &mut Planner<'_>,
    d: &ast::Delete,
    top: Option<u64>,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    run_delete(&plan_delete_limit(p, d, top)?, tx, ctx)
}

pub(crate) fn plan_delete_limit(
    p: &mut Planner<'_>,
    d: &ast::Delete,
    top: Option<u64>,
) -> Result<DeletePlan> {
    let planned = plan_delete(p, d)?;
    let limit = match (&d.limit, top) {
        (Some(e), None) => Some(Expr::compile(p, &Arc::new(Scope::default()), e)?),
        _ => None,
    };
    Ok(DeletePlan {
        planned,
        top,
        limit,
    })
}

pub(crate) fn run_delete(
    dp: &DeletePlan,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    let pl = &dp.planned;
    check_read_write(tx, &pl.table, "DELETE")?;
    if let Some(parts) = &pl.partitions {
        if dp.top.is_some() {
            return Err(SqlError::unsupported("DELETE TOP of a partitioned table"));
        }
        let mut n = 0;
        let mut out_rows = Vec::new();
        for l in &parts.leaves {
            let keys = candidates(l, tx, ctx, None)?;
            let (m, rows) = delete_rows(l, tx, ctx, keys, None)?;
            n += m;
            out_rows.extend(rows);
        }
        let mut out = QueryOutput::command(format!("DELETE {n}"));
        output::deliver(&pl.returning, out_rows, &mut out, tx, ctx)?;
        return Ok(out);
    }
    let limit = match (&dp.limit, dp.top) {
        (_, Some(n)) => Some(n),
        (Some(x), None) => {
            let env = ctx.env(tx);
            x.eval(&[], &env)?.as_i64().map(|v| v.max(0) as u64)
        }
        _ => None,
    };
    let mut fire = Firing::load(tx, ctx, &pl.table, TrigOp::Delete, &[])?;
    if let Some(f) = &fire {
        f.before_statement(tx, ctx)?;
    }
    let keys = candidates(pl, tx, ctx, limit)?;
    let (n, out_rows) = delete_rows(pl, tx, ctx, keys, fire.as_mut())?;
    if let Some(f) = fire {
        f.finish(tx, ctx)?;
    }
    let mut out = QueryOutput::command(format!("DELETE {n}"));
    output::deliver(&pl.returning, out_rows, &mut out, tx, ctx)?;
    Ok(out)
}

/// Deletes the rows of `keys` that still pass; the count and RETURNING rows.
fn delete_rows(
    pl: &Planned,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    keys: Vec<Key>,
    mut fire: Option<&mut Firing>,
) -> Result<(u64, Vec<Vec<Value>>)> {
    let t = pl.table.clone();
    let mut n = 0u64;
    let mut out_rows = Vec::new();
    let mut fks = Pending::new(tx, &t);
    let using_rows = match &pl.from {
        Some(f) => Some(from::rows(f, &ctx.env(tx))?),
        None => None,
    };
    for k in keys {
        let Some(row) = tx.get_for_update(t.name(), &k)? else {
            continue;
        };
        let joined = {
            let env = ctx.env(tx);
            if !query::passes(&pl.filter, &row, &env)? {
                continue;
            }
            // With USING, a row goes only if a USING row joins it;
            // RETURNING sees the first that does.
            match (&pl.from, &using_rows) {
                (Some(f), Some(ur)) => match from::first_match(f, ur, &row, &env)? {
                    Some(j) => Some(j),
                    None => continue,
                },
                _ => None,
            }
        };
        if let Some(f) = fire.as_deref().filter(|f| f.has_before_row()) {
            if f.before_row(tx, ctx, Some(&row), None)?.is_none() {
                continue;
            }
        }
        if let Some(r) = &pl.returning {
            let seen: &[Value] = joined.as_deref().unwrap_or(&row);
            out_rows.push(r.row(seen, &ctx.env(tx))?);
        }
        if tx.delete_in(&t, &k)? {
            fks.deleted(&t, &row);
            if let Some(f) = fire.as_deref_mut() {
                f.after_row(Some(&row), None);
            }
            n += 1;
        }
    }
    fks.finish(tx, ctx)?;
    Ok((n, out_rows))
}

/// The table a statement writes (or locks); a view there is refused with
/// 0A000 (PostgreSQL writes through a simple view; Walden does not yet),
/// rather than reported as missing.
pub(crate) fn target_table(
    p: &Planner<'_>,
    name: &ast::ObjectName,
    verb: &str,
) -> Result<Arc<Table>> {
    p.table(name).map_err(|e| {
        let n = query::object_last(name);
        if p.db.user_view_as(p.viewer, &n).is_some() {
            SqlError::unsupported(format!("{verb} on view \"{n}\" (views are read-only here)"))
        } else {
            e
        }
    })
}

/// Refuses an UPDATE or DELETE whose WHERE or SET has a correlated subquery
/// reading the table it changes. PostgreSQL's subquery reads the table as
/// of the statement's start; Walden's would see the rows the statement has
/// already changed (`SET v = (SELECT sum(v) FROM t t2 WHERE t2.k = t.k)`
/// summed values it had just written), a wrong answer.
fn refuse_self_reading_subquery<'a>(
    t: &Table,
    verb: &str,
    compiled: impl IntoIterator<Item = &'a Expr>,
    written: &[&ast::Expr],
) -> Result<()> {
    fn correlated(e: &Expr) -> bool {
        matches!(e, Expr::Sub(s) if s.correlated) || e.children().into_iter().any(correlated)
    }
    if !compiled.into_iter().any(correlated) {
        return Ok(());
    }
    let name = t.def.name.to_ascii_lowercase();
    let reads_target = written.iter().any(|e| {
        ast::visit_relations(*e, |rel| match rel.0.last().and_then(|p| p.as_ident()) {
            Some(i) if crate::expr::fold_ident(i) == name => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        })
        .is_break()
    });
    if reads_target {
        return Err(SqlError::unsupported(format!(
            "{verb} with a correlated subquery reading the table it changes \
             (it would see the statement's own changes)"
        )));
    }
    Ok(())
}
