//! Locking reads: `SELECT ... FOR UPDATE | NO KEY UPDATE | SHARE | KEY SHARE
//! [OF t] [NOWAIT | SKIP LOCKED]` and the T-SQL hints `WITH (UPDLOCK)`,
//! `WITH (XLOCK)`, `WITH (HOLDLOCK)` (with `NOWAIT` / `READPAST`).
//!
//! As PostgreSQL's LockRows node: candidate rows come from the statement's
//! snapshot, are sorted, then locked one by one in that order; after a lock
//! the newest committed version is read and the WHERE clause re-checked (a
//! row that no longer matches, or is gone, is not returned); OFFSET and LIMIT
//! count only rows locked and returned. Under REPEATABLE READ a row changed
//! after the snapshot fails with 40001 (in the engine's lock path). Locks are
//! the engine's row locks: held until the transaction ends or a ROLLBACK TO
//! an earlier savepoint. One table per locking SELECT for now.

use crate::dml::{self, Ctx, Returning};
use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::{Expr, Scope};
use crate::front::WEAKER;
use crate::query::{self, object_last, Planner, SortKey};
use crate::{Column, QueryOutput};
use sqlparser::ast::{self, SetExpr, TableFactor};
use std::sync::Arc;
use walden_engine::{Key, LockMode, Locked, Table, Transaction, Value, WaitPolicy};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Busy {
    Wait,
    NoWait,
    Skip,
}

pub(crate) struct LockingPlan {
    table: Arc<Table>,
    access: dml::Access,
    /// Sort expressions over the table row: expression, descending, nulls first.
    order: Vec<(Expr, bool, bool)>,
    limit: Option<Expr>,
    offset: Option<Expr>,
    proj: Returning,
    mode: LockMode,
    busy: Busy,
}

impl LockingPlan {
    pub(crate) fn columns(&self) -> Vec<Column> {
        self.proj.columns.clone()
    }
}

fn single_table(q: &ast::Query) -> Option<(&ast::Select, &TableFactor)> {
    match q.body.as_ref() {
        SetExpr::Select(sel) if sel.from.len() == 1 && sel.from[0].joins.is_empty() => {
            Some((sel, &sel.from[0].relation))
        }
        _ => None,
    }
}

/// The T-SQL table hints of a one-table SELECT, upper-cased.
fn hints(q: &ast::Query) -> Vec<String> {
    match single_table(q) {
        Some((_, TableFactor::Table { with_hints, .. })) => with_hints
            .iter()
            .map(|h| h.to_string().to_ascii_uppercase())
            .collect(),
        _ => Vec::new(),
    }
}

/// The lock the T-SQL hints of a one-table SELECT ask for, if any.
fn hinted(q: &ast::Query) -> Option<(LockMode, Busy)> {
    let hints = hints(q);
    let has = |h: &str| hints.iter().any(|x| x == h);
    let mode = if has("UPDLOCK") || has("XLOCK") {
        LockMode::Update
    } else if has("HOLDLOCK") {
        LockMode::Share
    } else {
        return None;
    };
    let busy = if has("NOWAIT") {
        Busy::NoWait
    } else if has("READPAST") {
        Busy::Skip
    } else {
        Busy::Wait
    };
    Some((mode, busy))
}

/// Whether a query asks for row locks.
pub(crate) fn wanted(q: &ast::Query) -> bool {
    !q.locks.is_empty() || hinted(q).is_some()
}

fn not_allowed(what: &str) -> SqlError {
    SqlError::new(
        ErrorKind::FeatureNotSupported,
        format!("FOR UPDATE is not allowed with {what}"),
    )
}

fn stronger(a: LockMode, b: LockMode) -> LockMode {
    let rank = |m: LockMode| match m {
        LockMode::KeyShare => 0,
        LockMode::Share => 1,
        LockMode::NoKeyUpdate => 2,
        LockMode::Update => 3,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

pub(crate) fn plan(p: &mut Planner<'_>, q: &ast::Query) -> Result<LockingPlan> {
    if q.with.is_some() {
        return Err(SqlError::unsupported("WITH ... SELECT ... FOR UPDATE"));
    }
    let sel = match q.body.as_ref() {
        SetExpr::Select(sel) => sel,
        SetExpr::SetOperation { op, .. } => {
            return Err(not_allowed(&format!("{op}").to_ascii_uppercase()))
        }
        _ => return Err(SqlError::unsupported("FOR UPDATE on this query")),
    };
    if sel.distinct.is_some() {
        return Err(not_allowed("DISTINCT clause"));
    }
    let grouped = match &sel.group_by {
        ast::GroupByExpr::All(_) => true,
        ast::GroupByExpr::Expressions(v, _) => !v.is_empty(),
    };
    if grouped {
        return Err(not_allowed("GROUP BY clause"));
    }
    if sel.having.is_some() {
        return Err(not_allowed("HAVING clause"));
    }
    for it in &sel.projection {
        if let ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } = it
        {
            if query::has_aggregate(e) {
                return Err(not_allowed("aggregate functions"));
            }
        }
    }
    let Some((_, factor)) = single_table(q) else {
        return Err(SqlError::unsupported(
            "SELECT ... FOR UPDATE over several tables or a subquery (one table for now)",
        ));
    };
    let TableFactor::Table {
        name,
        alias,
        args: None,
        ..
    } = factor
    else {
        return Err(SqlError::unsupported(
            "SELECT ... FOR UPDATE over this FROM item",
        ));
    };
    let t = super::target_table(p, name, "SELECT ... FOR UPDATE")?;
    if t.has_hidden_key() {
        return Err(SqlError::unsupported(
            "SELECT ... FOR UPDATE on a table without a primary key",
        ));
    }
    let alias = alias.as_ref().map(|a| a.name.value.clone());
    let label = alias
        .clone()
        .unwrap_or_else(|| t.name().to_string())
        .to_ascii_lowercase();
    // The clauses: the strongest mode wins; NOWAIT beats SKIP LOCKED.
    let mut mode: Option<LockMode> = None;
    let mut busy = Busy::Wait;
    let mut weaker = false;
    for l in &q.locks {
        if let Some(of) = &l.of {
            let n = object_last(of);
            if n == WEAKER {
                weaker = true;
                continue;
            }
            if !n.eq_ignore_ascii_case(&label) {
                return Err(SqlError::new(
                    ErrorKind::UndefinedTable,
                    format!("relation \"{n}\" in FOR UPDATE clause not found in FROM clause"),
                ));
            }
        }
        let m = match (&l.lock_type, std::mem::take(&mut weaker)) {
            (ast::LockType::Update, false) => LockMode::Update,
            (ast::LockType::Update, true) => LockMode::NoKeyUpdate,
            (ast::LockType::Share, false) => LockMode::Share,
            (ast::LockType::Share, true) => LockMode::KeyShare,
        };
        mode = Some(mode.map_or(m, |x| stronger(x, m)));
        busy = match (busy, &l.nonblock) {
            (_, Some(ast::NonBlock::Nowait)) | (Busy::NoWait, _) => Busy::NoWait,
            (_, Some(ast::NonBlock::SkipLocked)) => Busy::Skip,
            (b, None) => b,
        };
    }
    // SQL Server's HOLDLOCK is SERIALIZABLE for the table: it also keeps
    // other sessions from inserting into the range read. Row locks alone
    // would run it weaker, so it is refused as SERIALIZABLE is.
    if hints(q).iter().any(|h| h == "HOLDLOCK") {
        return Err(SqlError::unsupported(
            "WITH (HOLDLOCK) (serializable range locks; FOR SHARE takes row locks)",
        ));
    }
    if let Some((m, b)) = hinted(q) {
        mode = Some(mode.map_or(m, |x| stronger(x, m)));
        if busy == Busy::Wait {
            busy = b;
        }
    }
    let mode = mode.ok_or_else(|| SqlError::internal("locking read without a lock mode"))?;
    let scope = dml::table_scope(&t, alias.as_deref());
    let access = dml::plan_where(p, &t, &scope, &sel.selection)?;
    // A window function's rows are not the table's rows: nothing to lock.
    p.window =
        query::window::WindowSlot::Unsupported("FOR UPDATE is not allowed with window functions");
    let proj = dml::returning(p, &scope, &Some(sel.projection.clone()));
    p.window = query::window::WindowSlot::Refused("here");
    let proj = proj?.ok_or_else(|| SqlError::internal("a SELECT without a select list"))?;
    let mut order = Vec::new();
    if let Some(ob) = &q.order_by {
        let ast::OrderByKind::Expressions(items) = &ob.kind else {
            return Err(SqlError::unsupported("ORDER BY ALL"));
        };
        for it in items {
            let desc = matches!(it.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_first = it.options.nulls_first.unwrap_or(desc);
            order.push((order_expr(p, &scope, sel, &it.expr)?, desc, nulls_first));
        }
    }
    let empty = Arc::new(Scope::default());
    let (mut limit, offset) = crate::query::limit_offset(p, &empty, q)?;
    if q.fetch.is_some() {
        return Err(SqlError::unsupported("FETCH FIRST with FOR UPDATE"));
    }
    if let Some(top) = &sel.top {
        limit = Some(match &top.quantity {
            Some(ast::TopQuantity::Expr(e)) => Expr::compile(p, &empty, e)?,
            Some(ast::TopQuantity::Constant(n)) => Expr::Lit(Value::Int(*n as i64)),
            None => return Err(SqlError::syntax("TOP needs a row count")),
        });
    }
    Ok(LockingPlan {
        table: t,
        access,
        order,
        limit,
        offset,
        proj,
        mode,
        busy,
    })
}

/// An ORDER BY item: an output position, an output alias, or an expression
/// over the table's columns.
fn order_expr(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    sel: &ast::Select,
    e: &ast::Expr,
) -> Result<Expr> {
    use ast::SelectItem as S;
    let star = matches!(sel.projection.as_slice(), [S::Wildcard(_)]);
    if let ast::Expr::Value(v) = e {
        if let ast::Value::Number(n, _) = &v.value {
            let k: usize = n.parse().unwrap_or(0);
            let width = if star {
                scope.cols.len()
            } else {
                sel.projection.len()
            };
            if k == 0 || k > width {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("ORDER BY position {n} is not in select list"),
                ));
            }
            return match &sel.projection[..] {
                _ if star => Ok(Expr::Col(k - 1)),
                items => match &items[k - 1] {
                    S::UnnamedExpr(x) | S::ExprWithAlias { expr: x, .. } => {
                        Expr::compile(p, scope, x)
                    }
                    _ => Err(SqlError::unsupported("ORDER BY position of a wildcard")),
                },
            };
        }
    }
    if let ast::Expr::Identifier(id) = e {
        let name = crate::expr::fold_ident(id);
        for it in &sel.projection {
            if let S::ExprWithAlias { expr, alias } = it {
                if crate::expr::fold_ident(alias) == name {
                    return Expr::compile(p, scope, expr);
                }
            }
        }
    }
    Expr::compile(p, scope, e)
}

pub(crate) fn run(lp: &LockingPlan, tx: &mut Transaction, ctx: &Ctx<'_>) -> Result<QueryOutput> {
    let t = lp.table.clone();
    // Candidates from the statement's snapshot, in the requested order.
    let (limit, offset, mut cands) = {
        let env = ctx.env(tx);
        let limit = query::eval_count(&lp.limit, &env)?;
        let offset = query::eval_count(&lp.offset, &env)?.unwrap_or(0);
        let a = &lp.access;
        tx.lock_table(&t, walden_engine::TableLockMode::RowShare, WaitPolicy::Wait)?;
        let rows: Vec<(Key, walden_engine::Row)> = match &a.lookup {
            Some(key) => {
                let k = query::lookup_key(&t, key, &env)?;
                match tx.get_in(&t, &k)? {
                    Some(r) => vec![(k.into_boxed_slice(), r)],
                    None => vec![],
                }
            }
            None => {
                let found = match &a.index {
                    Some(ip) => query::index_rows(&t, ip, &env)?,
                    None => None,
                };
                match found {
                    Some(rows) => rows,
                    None => tx.scan_in(&t, query::key_bounds(&t, a.range.as_deref(), &env)?)?,
                }
            }
        };
        let mut cands: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
        for (k, r) in rows {
            if query::passes(&lp.access.filter, &r, &env)? {
                let keys = lp
                    .order
                    .iter()
                    .map(|(e, _, _)| e.eval(&r, &env))
                    .collect::<Result<Vec<_>>>()?;
                cands.push((k.to_vec(), keys));
            }
        }
        (limit, offset, cands)
    };
    if !lp.order.is_empty() {
        let order: Vec<(SortKey, bool, bool)> = lp
            .order
            .iter()
            .enumerate()
            .map(|(i, (_, d, n))| (SortKey::Output(i), *d, *n))
            .collect();
        query::sort_rows(&mut cands, &order);
    }
    let policy = match lp.busy {
        Busy::Wait => WaitPolicy::Wait,
        Busy::NoWait | Busy::Skip => WaitPolicy::NoWait,
    };
    let mut out = Vec::new();
    let mut passed = 0usize;
    for (k, _) in cands {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let row = match tx.get_locked(&t, &k, lp.mode, policy)? {
            Locked::Busy if lp.busy == Busy::Skip => continue,
            Locked::Busy => {
                return Err(SqlError::new(
                    ErrorKind::LockTimeout,
                    format!("could not obtain lock on row in relation \"{}\"", t.name()),
                ))
            }
            Locked::Row(None) => continue,
            Locked::Row(Some(row)) => row,
        };
        let env = ctx.env(tx);
        // The newest version must still match (PostgreSQL's re-check).
        if !query::passes(&lp.access.filter, &row, &env)? {
            continue;
        }
        passed += 1;
        if passed <= offset {
            continue;
        }
        out.push(
            lp.proj
                .exprs
                .iter()
                .map(|e| e.eval(&row, &env))
                .collect::<Result<Vec<_>>>()?,
        );
    }
    Ok(QueryOutput {
        tag: format!("SELECT {}", out.len()),
        columns: Some(lp.proj.columns.clone()),
        rows: out,
        ..Default::default()
    })
}
