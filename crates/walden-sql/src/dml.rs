//! INSERT, UPDATE, DELETE.
//!
//! UPDATE and DELETE find candidate rows by primary-key lookup when the WHERE
//! clause fixes the key (the OLTP fast path), by a scan otherwise; each row is
//! then locked and re-read, and the WHERE clause re-checked on the latest
//! committed version before it is changed (as PostgreSQL re-checks an
//! updated row).

use crate::constraints::Checks;
use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::{Env, Expr, Scope, ScopeCol};
use crate::foreign_keys::enforce::Pending;
use crate::functions::SessionInfo;
use crate::query::{self, object_last, Planner, Source};
use crate::upsert::{self, OnConflict};
use crate::{Column, QueryOutput};
use sqlparser::ast::{self, SelectItem};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use walden_engine::{
    Instance, Key, LockMode, Locked, Table, Transaction, Upsert, Value, WaitPolicy,
};

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
            SelectItem::Wildcard(_) => {
                for (i, c) in scope.cols.iter().enumerate() {
                    columns.push(Column {
                        name: c.name.clone(),
                        ty: c.ty.clone(),
                        origin: c.origin,
                    });
                    exprs.push(Expr::Col(i));
                }
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let name = match it {
                    SelectItem::ExprWithAlias { alias, .. } => alias.value.to_ascii_lowercase(),
                    _ => crate::expr::column_name(e),
                };
                let x = Expr::compile(p, scope, e)?;
                let type_of =
                    |t: &ast::DataType| crate::typing::data_type_in(&p.db, p.viewer, t).ok();
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
    Ok(Some(Returning { columns, exprs }))
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

fn insert_table(p: &Planner<'_>, ins: &ast::Insert) -> Result<Arc<Table>> {
    match &ins.table {
        ast::TableObject::TableName(n) => p.table(n),
        other => Err(SqlError::unsupported(format!("INSERT INTO {other}"))),
    }
}

enum InsertSource {
    /// Rows of expressions; `None` is DEFAULT.
    Values(Vec<Vec<Option<Expr>>>),
    Query(query::QueryPlan),
}

impl InsertSource {
    /// Whether target position `k` is given a value (not DEFAULT) by some row.
    fn given(&self) -> impl Fn(usize) -> bool + '_ {
        move |k| match self {
            InsertSource::Values(rows) => rows.iter().any(|r| matches!(r.get(k), Some(Some(_)))),
            InsertSource::Query(q) => k < q.columns.len(),
        }
    }
}

fn target_columns(t: &Table, ins: &ast::Insert) -> Result<Vec<usize>> {
    if ins.columns.is_empty() {
        return Ok((0..t.def.columns.len()).collect());
    }
    ins.columns
        .iter()
        .map(|c| {
            let n = object_last(c);
            t.def.column_index(&n).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!("column \"{n}\" of relation \"{}\" does not exist", t.name()),
                )
            })
        })
        .collect()
}

pub(crate) fn is_default_kw(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

fn plan_insert_source(
    p: &mut Planner<'_>,
    ins: &ast::Insert,
    t: &Table,
) -> Result<(Vec<usize>, InsertSource)> {
    let cols = target_columns(t, ins)?;
    let Some(src) = &ins.source else {
        // `DEFAULT VALUES`: one row, every column its default.
        if ins.columns.is_empty() {
            return Ok((cols, InsertSource::Values(vec![Vec::new()])));
        }
        return Err(SqlError::unsupported("INSERT without VALUES or SELECT"));
    };
    if let (ast::SetExpr::Values(v), None, None) =
        (src.body.as_ref(), &src.order_by, &src.limit_clause)
    {
        let empty = Arc::new(Scope::default());
        let mut rows = Vec::new();
        for r in &v.rows {
            if r.len() > cols.len() {
                return Err(SqlError::syntax(
                    "INSERT has more expressions than target columns",
                ));
            }
            if r.len() < cols.len() && !ins.columns.is_empty() {
                return Err(SqlError::syntax(
                    "INSERT has more target columns than expressions",
                ));
            }
            let mut row = Vec::new();
            for (k, e) in r.iter().enumerate() {
                if is_default_kw(e) {
                    row.push(None);
                    continue;
                }
                let x = Expr::compile(p, &empty, e)?;
                if let Expr::Param(i) = &x {
                    p.infer_param(*i, t.def.columns[cols[k]].data_type.clone());
                }
                row.push(Some(x));
            }
            rows.push(row);
        }
        return Ok((cols, InsertSource::Values(rows)));
    }
    let plan = query::plan_query(p, src, None)?;
    if plan.columns.len() > cols.len() {
        return Err(SqlError::syntax(
            "INSERT has more expressions than target columns",
        ));
    }
    Ok((cols, InsertSource::Query(plan)))
}

/// A planned INSERT: its table, target columns, source and RETURNING list.
pub(crate) struct InsertPlan {
    table: Arc<Table>,
    cols: Vec<usize>,
    /// Target positions whose values are ignored (`OVERRIDING USER VALUE`).
    dropped: Vec<usize>,
    source: InsertSource,
    returning: Option<Returning>,
    checks: Checks,
    on_conflict: Option<Box<OnConflict>>,
}

impl InsertPlan {
    /// Expressions whose evaluation does not depend on earlier executions
    /// (no subquery with a per-statement result cache), and a plain row source.
    pub(crate) fn reusable(&self) -> bool {
        let values = match &self.source {
            InsertSource::Values(rows) => {
                rows.iter().flatten().flatten().all(|e| !e.has_subquery())
            }
            InsertSource::Query(q) => query::reusable(q),
        };
        values
            && returning_reusable(&self.returning)
            && self.checks.reusable()
            && self.on_conflict.as_ref().is_none_or(|oc| oc.reusable())
    }
}

fn returning_reusable(r: &Option<Returning>) -> bool {
    r.as_ref()
        .is_none_or(|r| r.exprs.iter().all(|e| !e.has_subquery()))
}

pub(crate) fn plan_insert(p: &mut Planner<'_>, ins: &ast::Insert) -> Result<InsertPlan> {
    let table = insert_table(p, ins)?;
    let (cols, source) = plan_insert_source(p, ins, &table)?;
    let dropped = crate::identity_dml::identity_overrides(&table, ins, &cols, source.given())?;
    let alias = ins.table_alias.as_ref().map(|a| a.alias.value.clone());
    let scope = table_scope(&table, alias.as_deref());
    let label = scope.cols.first().and_then(|c| c.table.clone());
    let on_conflict = upsert::plan(p, ins, &table, label.as_deref().unwrap_or(""))?.map(Box::new);
    let returning = returning(p, &scope, &ins.returning)?;
    let checks = Checks::compile(p, &table)?;
    Ok(InsertPlan {
        table,
        cols,
        dropped,
        source,
        returning,
        checks,
        on_conflict,
    })
}

pub fn insert(
    p: &mut Planner<'_>,
    ins: &ast::Insert,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    run_insert(&plan_insert(p, ins)?, tx, ctx)
}

pub(crate) fn run_insert(
    pl: &InsertPlan,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    let t = &pl.table;
    let cols = &pl.cols;
    let ret = &pl.returning;
    let width = t.def.columns.len();
    let mut n = 0u64;
    let mut out_rows = Vec::new();
    let mut fks = Pending::new(tx, t);
    // Keys this command inserted or updated: DO UPDATE may not change one twice.
    let mut touched = upsert::Touched::new();
    let mut store = |tx: &mut Transaction, vals: Vec<Option<Value>>| -> Result<()> {
        let mut full = vec![None; width];
        for (k, v) in vals.into_iter().enumerate() {
            if !pl.dropped.contains(&k) {
                full[cols[k]] = v;
            }
        }
        let row = match &pl.on_conflict {
            None => tx.insert_into(t, full)?,
            Some(oc) => {
                match tx.insert_or_conflict(t, full, &oc.arbiters, oc.locks_existing())? {
                    Upsert::Inserted(key, row) => {
                        if oc.locks_existing() {
                            touched.insert(key);
                        }
                        row
                    }
                    Upsert::Conflict {
                        key,
                        existing,
                        proposed,
                    } => {
                        // The proposed row is checked as PostgreSQL does
                        // before it looks for conflicts.
                        if !pl.checks.is_empty() {
                            pl.checks.enforce(&proposed, &ctx.env(tx))?;
                        }
                        let upsert::Action::Update {
                            assignments,
                            filter,
                            checks,
                        } = &oc.action
                        else {
                            return Ok(());
                        };
                        if touched.contains(&key) {
                            return Err(upsert::affected_twice());
                        }
                        let new_row = {
                            let env = ctx.env(tx);
                            let mut both = existing.to_vec();
                            both.extend(proposed);
                            if let Some(f) = filter {
                                if !query::passes(std::slice::from_ref(f), &both, &env)? {
                                    return Ok(());
                                }
                            }
                            let mut new_row = existing.to_vec();
                            for (i, e) in assignments {
                                new_row[*i] = e.eval(&both, &env)?;
                            }
                            new_row
                        };
                        let stored = tx.update_in(t, &key, new_row)?;
                        if !checks.is_empty() {
                            checks.enforce(&stored, &ctx.env(tx))?;
                        }
                        fks.updated(t, &existing, &stored);
                        touched.insert(t.key_of(&stored).unwrap_or(key));
                        n += 1;
                        if let Some(r) = ret {
                            let env = ctx.env(tx);
                            out_rows.push(
                                r.exprs
                                    .iter()
                                    .map(|e| e.eval(&stored, &env))
                                    .collect::<Result<Vec<_>>>()?,
                            );
                        }
                        return Ok(());
                    }
                }
            }
        };
        // On the stored row (defaults and coercions applied); a violation
        // fails the statement, which undoes the write.
        if !pl.checks.is_empty() {
            pl.checks.enforce(&row, &ctx.env(tx))?;
        }
        fks.inserted(t, &row);
        n += 1;
        if let Some(r) = ret {
            let env = ctx.env(tx);
            out_rows.push(
                r.exprs
                    .iter()
                    .map(|e| e.eval(&row, &env))
                    .collect::<Result<Vec<_>>>()?,
            );
        }
        Ok(())
    };
    match &pl.source {
        InsertSource::Values(rows) => {
            for r in rows {
                let vals = {
                    let env = ctx.env(tx);
                    r.iter()
                        .map(|e| e.as_ref().map(|x| x.eval(&[], &env)).transpose())
                        .collect::<Result<Vec<_>>>()?
                };
                store(tx, vals)?;
            }
        }
        InsertSource::Query(plan) => {
            let rows = {
                let env = ctx.env(tx);
                query::execute_plan(plan, &env, None)?
            };
            for r in rows {
                store(tx, r.into_iter().map(Some).collect())?;
            }
        }
    }
    // Foreign keys are checked once the statement's rows are all written,
    // as PostgreSQL's (non-deferred) constraint triggers run.
    fks.finish(tx, ctx)?;
    let mut out = QueryOutput::command(format!("INSERT 0 {n}"));
    if let Some(r) = ret {
        out.columns = Some(r.columns.clone());
        out.rows = out_rows;
    }
    Ok(out)
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
    returning: Option<Returning>,
    /// CHECK constraints (UPDATE only).
    checks: Option<Checks>,
}

impl Planned {
    /// See [`InsertPlan::reusable`].
    pub(crate) fn reusable(&self) -> bool {
        let lookup = self.lookup.iter().flatten();
        let range = self
            .range
            .iter()
            .flat_map(|r| r.lo.iter().chain(r.hi.iter()).map(|(e, _)| e));
        let assigned = self.assignments.iter().map(|(_, e)| e);
        let index = self.index.iter().flat_map(|ip| query::index_exprs(ip));
        lookup
            .chain(range)
            .chain(index)
            .chain(self.filter.iter())
            .chain(assigned)
            .all(|e| !e.has_subquery())
            && returning_reusable(&self.returning)
            && self.checks.as_ref().is_none_or(|c| c.reusable())
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
        } => Ok(Access {
            lookup,
            range,
            index,
            filter,
        }),
        _ => unreachable!(),
    }
}

pub(crate) fn plan_update(p: &mut Planner<'_>, u: &ast::Update) -> Result<Planned> {
    if u.from.is_some() {
        return Err(SqlError::unsupported("UPDATE ... FROM"));
    }
    let (name, alias) = match &u.table.relation {
        ast::TableFactor::Table { name, alias, .. } => {
            (name, alias.as_ref().map(|a| a.name.value.clone()))
        }
        other => return Err(SqlError::unsupported(format!("UPDATE {other}"))),
    };
    let t = p.table(name)?;
    let scope = table_scope(&t, alias.as_deref());
    let mut assignments = Vec::new();
    for a in &u.assignments {
        let col = match &a.target {
            ast::AssignmentTarget::ColumnName(n) => object_last(n),
            ast::AssignmentTarget::Tuple(_) => {
                return Err(SqlError::unsupported("UPDATE SET (a, b) = ..."))
            }
        };
        let i = t.def.column_index(&col).ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedColumn,
                format!(
                    "column \"{col}\" of relation \"{}\" does not exist",
                    t.name()
                ),
            )
        })?;
        if crate::identity_dml::is_generated_always(&t, i) && !is_default_kw(&a.value) {
            return Err(crate::identity_dml::generated_always(
                &t.def.columns[i].name,
                true,
            ));
        }
        let e = if is_default_kw(&a.value) {
            return Err(SqlError::unsupported("SET col = DEFAULT"));
        } else {
            Expr::compile(p, &scope, &a.value)?
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
    } = plan_where(p, &t, &scope, &u.selection)?;
    let returning = returning(p, &scope, &u.returning)?;
    let checks = Some(Checks::compile(p, &t)?).filter(|c| !c.is_empty());
    Ok(Planned {
        table: t,
        lookup,
        range,
        index,
        filter,
        assignments,
        returning,
        checks,
    })
}

fn plan_delete(p: &mut Planner<'_>, d: &ast::Delete) -> Result<Planned> {
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    if from.len() != 1 || !from[0].joins.is_empty() || d.using.is_some() {
        return Err(SqlError::unsupported("DELETE from several tables"));
    }
    let (name, alias) = match &from[0].relation {
        ast::TableFactor::Table { name, alias, .. } => {
            (name, alias.as_ref().map(|a| a.name.value.clone()))
        }
        other => return Err(SqlError::unsupported(format!("DELETE FROM {other}"))),
    };
    let t = p.table(name)?;
    let scope = table_scope(&t, alias.as_deref());
    let Access {
        lookup,
        range,
        index,
        filter,
    } = plan_where(p, &t, &scope, &d.selection)?;
    let returning = returning(p, &scope, &d.returning)?;
    Ok(Planned {
        table: t,
        lookup,
        range,
        index,
        filter,
        assignments: vec![],
        returning,
        checks: None,
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
    let rows = match found {
        Some(rows) => rows,
        None => tx.scan_in(t, query::key_bounds(t, pl.range.as_deref(), &env)?)?,
    };
    for (k, r) in rows {
        if query::passes(&pl.filter, &r, &env)? {
            keys.push(k);
            if limit.is_some_and(|l| keys.len() as u64 >= l) {
                break;
            }
        }
    }
    Ok(keys)
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
    let keys = candidates(pl, tx, ctx, None)?;
    let t = pl.table.clone();
    // As PostgreSQL: an update that leaves the key alone takes the row lock
    // of FOR NO KEY UPDATE, which key-share lockers do not wait for.
    // A column of a unique index is a key too (a foreign key may
    // reference it).
    let mode = if pl.assignments.iter().any(|(i, _)| {
        t.def.primary_key.contains(i)
            || t.def
                .indexes
                .iter()
                .any(|ix| ix.unique && ix.columns.contains(i))
    }) {
        LockMode::Update
    } else {
        LockMode::NoKeyUpdate
    };
    let mut n = 0u64;
    let mut out_rows = Vec::new();
    let mut fks = Pending::new(tx, &t);
    for k in keys {
        // Lock, then judge the latest version.
        let Locked::Row(Some(row)) = tx.get_locked(&t, &k, mode, WaitPolicy::Wait)? else {
            continue;
        };
        let new_row = {
            let env = ctx.env(tx);
            if !query::passes(&pl.filter, &row, &env)? {
                continue;
            }
            let mut new_row = row.to_vec();
            for (i, e) in &pl.assignments {
                new_row[*i] = e.eval(&row, &env)?;
            }
            new_row
        };
        let stored = tx.update_in(&t, &k, new_row)?;
        if let Some(c) = &pl.checks {
            c.enforce(&stored, &ctx.env(tx))?;
        }
        fks.updated(&t, &row, &stored);
        n += 1;
        if let Some(r) = &pl.returning {
            let env = ctx.env(tx);
            out_rows.push(
                r.exprs
                    .iter()
                    .map(|e| e.eval(&stored, &env))
                    .collect::<Result<Vec<_>>>()?,
            );
        }
    }
    fks.finish(tx, ctx)?;
    let mut out = QueryOutput::command(format!("UPDATE {n}"));
    if let Some(r) = &pl.returning {
        out.columns = Some(r.columns.clone());
        out.rows = out_rows;
    }
    Ok(out)
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
    let limit = match (&dp.limit, dp.top) {
        (_, Some(n)) => Some(n),
        (Some(x), None) => {
            let env = ctx.env(tx);
            x.eval(&[], &env)?.as_i64().map(|v| v.max(0) as u64)
        }
        _ => None,
    };
    let keys = candidates(pl, tx, ctx, limit)?;
    let t = pl.table.clone();
    let mut n = 0u64;
    let mut out_rows = Vec::new();
    let mut fks = Pending::new(tx, &t);
    for k in keys {
        let Some(row) = tx.get_for_update(t.name(), &k)? else {
            continue;
        };
        {
            let env = ctx.env(tx);
            if !query::passes(&pl.filter, &row, &env)? {
                continue;
            }
            if let Some(r) = &pl.returning {
                out_rows.push(
                    r.exprs
                        .iter()
                        .map(|e| e.eval(&row, &env))
                        .collect::<Result<Vec<_>>>()?,
                );
            }
        }
        if tx.delete_in(&t, &k)? {
            fks.deleted(&t, &row);
            n += 1;
        }
    }
    fks.finish(tx, ctx)?;
    let mut out = QueryOutput::command(format!("DELETE {n}"));
    if let Some(r) = &pl.returning {
        out.columns = Some(r.columns.clone());
        out.rows = out_rows;
    }
    Ok(out)
}
