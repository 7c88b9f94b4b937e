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
    /// ORDER BY ... LIMIT served by the primary key's order: the rows are
    /// read in that order and locked as they come (see [`run_walk`]).
    walk: Option<LockWalk>,
}

/// The primary key's rows whose leading columns equal `range.prefix`, in
/// key order (or `reverse`).
struct LockWalk {
    range: query::KeyRange,
    reverse: bool,
}

impl LockingPlan {
    /// Whether the plan may run again from the plan cache: nothing in it
    /// is read at planning but the catalog (which the cache checks), so
    /// any plan without a subquery.
    pub(crate) fn reusable(&self) -> bool {
        let order = self.order.iter().map(|(e, _, _)| e);
        let walk = self.walk.iter().flat_map(|w| w.range.exprs());
        self.access.reusable()
            && order
                .chain(walk)
                .chain(self.limit.iter())
                .chain(self.offset.iter())
                .all(|e| !e.has_subquery())
            && self.proj.exprs.iter().all(|e| !e.has_subquery())
            && self.proj.into.is_none()
    }

    pub(crate) fn columns(&self) -> Vec<Column> {
        self.proj.columns.clone()
    }

    /// EXPLAIN's nodes: PostgreSQL's Limit over LockRows over the sort (or
    /// the primary key read in ORDER BY order) over the table's scan.
    pub(crate) fn explain<'p>(
        &'p self,
        b: &mut query::explain::Builder<'p, '_>,
    ) -> query::explain::Node {
        use query::explain::{table_node, Node, TablePath};
        let a = &self.access;
        let mut n = match &self.walk {
            Some(w) => {
                let path = TablePath {
                    lookup: None,
                    range: Some(&w.range),
                    index: None,
                    filter: &a.filter,
                };
                let mut n = table_node(b, &self.table, path, false);
                if n.kind == "Seq Scan" {
                    // No bound at all: the whole key, in order.
                    n.kind = "Index Scan".into();
                    n.index = Some(query::explain::pkey_name(&self.table));
                }
                let dir = if w.reverse { " Backward" } else { "" };
                n.scan_direction = Some(if w.reverse { "Backward" } else { "Forward" });
                n.label = Some(format!(
                    "Index Scan{dir} using {} on {}",
                    query::explain::pkey_name(&self.table),
                    self.table.name()
                ));
                n.rows = None;
                n
            }
            None => {
                let path = TablePath {
                    lookup: a.lookup.as_deref(),
                    range: a.range.as_deref(),
                    index: a.index.as_deref(),
                    filter: &a.filter,
                };
                let mut n = table_node(b, &self.table, path, false);
                if !self.order.is_empty() {
                    let names = query::explain::table_names(&self.table, false);
                    let keys = self
                        .order
                        .iter()
                        .map(|(e, desc, nf)| {
                            let mut k = b.d.expr(e, &names);
                            if *desc {
                                k.push_str(if *nf { " DESC" } else { " DESC NULLS LAST" });
                            } else if *nf {
                                k.push_str(" NULLS FIRST");
                            }
                            k
                        })
                        .collect();
                    let mut s = Node::new("Sort");
                    s.list("Sort Key", keys);
                    n = n.under(s);
                }
                n
            }
        };
        n = n.under(Node::new("LockRows"));
        if self.limit.is_some() || self.offset.is_some() {
            let mut l = Node::new("Limit");
            if let Some(e) = &self.limit {
                let c = b.d.expr(e, &[]);
                l.prop("Row Count", c);
            }
            if let Some(e) = &self.offset {
                let c = b.d.expr(e, &[]);
                l.prop("Offset", c);
            }
            n = n.under(l);
        }
        n
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
            let desc = crate::expr::sort_desc(&it.options)?;
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
        if top.with_ties || top.percent {
            return Err(SqlError::unsupported(
                "TOP ... WITH TIES or PERCENT with a locking clause",
            ));
        }
        limit = Some(match &top.quantity {
            Some(ast::TopQuantity::Expr(e)) => Expr::compile(p, &empty, e)?,
            Some(ast::TopQuantity::Constant(n)) => Expr::Lit(Value::Int(*n as i64)),
            None => return Err(SqlError::syntax("TOP needs a row count")),
        });
    }
    let walk = lock_walk(&t, &access.filter, &order);
    Ok(LockingPlan {
        table: t,
        walk,
        access,
        order,
        limit,
        offset,
        proj,
        mode,
        busy,
    })
}

/// The walk that gives `order`: after the primary key's columns fixed by
/// equalities in `filter`, the ORDER BY names the next key columns (those
/// an equality fixes may come anywhere), all ascending or all descending.
/// Only for key types whose key order is their sort order (numbers,
/// dates, times): a text key's byte order is not a collation's.
fn lock_walk(t: &Table, filter: &[Expr], order: &[(Expr, bool, bool)]) -> Option<LockWalk> {
    use walden_engine::DataType as T;
    let pk = &t.def.primary_key;
    if pk.is_empty() || order.is_empty() {
        return None;
    }
    let prefix: Vec<Expr> = pk
        .iter()
        .map_while(|&c| query::equal_const(c, filter))
        .collect();
    let fixed = &pk[..prefix.len()];
    let mut cols = Vec::new();
    for (e, desc, _) in order {
        let Expr::Col(c) = e else { return None };
        if !fixed.contains(c) {
            cols.push((*c, *desc));
        }
    }
    let reverse = cols.first().is_some_and(|&(_, d)| d);
    let ordered = cols.iter().enumerate().all(|(i, &(c, d))| {
        d == reverse
            && pk.get(prefix.len() + i) == Some(&c)
            && matches!(
                t.def.columns[c].data_type,
                T::SmallInt
                    | T::Int
                    | T::BigInt
                    | T::Decimal { .. }
                    | T::Date
                    | T::Timestamp
                    | T::TimestampTz
                    | T::Time
            )
    });
    ordered.then(|| LockWalk {
        range: query::KeyRange {
            prefix,
            lo: None,
            hi: None,
        },
        reverse,
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
    crate::dml::check_read_write(
        tx,
        &lp.table,
        match lp.mode {
            LockMode::Update | LockMode::NoKeyUpdate => "SELECT FOR UPDATE",
            LockMode::Share | LockMode::KeyShare => "SELECT FOR SHARE",
        },
    )?;
    if let Some(w) = &lp.walk {
        if let Some(out) = run_walk(lp, w, tx, ctx)? {
            return Ok(QueryOutput {
                tag: format!("SELECT {}", out.len()),
                columns: Some(lp.proj.columns.clone()),
                rows: out,
                ..Default::default()
            });
        }
    }
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
    let mut out = Vec::new();
    let mut passed = 0usize;
    for (k, _) in cands {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        lock_one(lp, tx, ctx, &k, offset, &mut passed, &mut out)?;
    }
    Ok(QueryOutput {
        tag: format!("SELECT {}", out.len()),
        columns: Some(lp.proj.columns.clone()),
        rows: out,
        ..Default::default()
    })
}

/// Locks the candidate row with key `k` and, when its newest version still
/// matches, counts it and (past `offset`) adds its projection to `out`.
fn lock_one(
    lp: &LockingPlan,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    k: &[Value],
    offset: usize,
    passed: &mut usize,
    out: &mut Vec<Vec<Value>>,
) -> Result<()> {
    let t = &lp.table;
    let policy = match lp.busy {
        Busy::Wait => WaitPolicy::Wait,
        Busy::NoWait | Busy::Skip => WaitPolicy::NoWait,
    };
    let row = match tx.get_locked(t, k, lp.mode, policy)? {
        Locked::Busy if lp.busy == Busy::Skip => return Ok(()),
        Locked::Busy => {
            return Err(SqlError::new(
                ErrorKind::LockTimeout,
                format!("could not obtain lock on row in relation \"{}\"", t.name()),
            ))
        }
        Locked::Row(None) => return Ok(()),
        Locked::Row(Some(row)) => row,
    };
    let env = ctx.env(tx);
    // The newest version must still match (PostgreSQL's re-check).
    if !query::passes(&lp.access.filter, &row, &env)? {
        return Ok(());
    }
    *passed += 1;
    if *passed <= offset {
        return Ok(());
    }
    out.push(
        lp.proj
            .exprs
            .iter()
            .map(|e| e.eval(&row, &env))
            .collect::<Result<Vec<_>>>()?,
    );
    Ok(())
}

/// Runs a locking read with ORDER BY and LIMIT through the primary key's
/// order: candidates are read from the snapshot in key order a batch at a
/// time and locked in that order, until LIMIT rows are locked and still
/// match, so a `LIMIT 1` locks one row and reads few (the same rows, in
/// the same order, the sort of every candidate would give). `None` without
/// a LIMIT (the caller reads every candidate).
fn run_walk(
    lp: &LockingPlan,
    w: &LockWalk,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<Option<Vec<Vec<Value>>>> {
    use std::ops::Bound;
    let t = lp.table.clone();
    let (limit, offset, (mut lo, mut hi)) = {
        let env = ctx.env(tx);
        let Some(limit) = query::eval_count(&lp.limit, &env)? else {
            return Ok(None);
        };
        let offset = query::eval_count(&lp.offset, &env)?.unwrap_or(0);
        (limit, offset, query::key_bounds(&t, Some(&w.range), &env)?)
    };
    tx.lock_table(&t, walden_engine::TableLockMode::RowShare, WaitPolicy::Wait)?;
    let mut out = Vec::new();
    let mut passed = 0usize;
    let mut batch = limit.saturating_add(offset).clamp(1, 4096);
    while out.len() < limit {
        let mut keys: Vec<Key> = Vec::new();
        {
            let env = ctx.env(tx);
            tx.walk_in(
                &t,
                (lo.clone(), hi.clone()),
                w.reverse,
                |r| -> Result<bool> {
                    if query::passes(&lp.access.filter, r, &env)? {
                        if let Some(k) = t.key_of(r) {
                            keys.push(k);
                        }
                    }
                    Ok(keys.len() < batch)
                },
            )?;
        }
        let exhausted = keys.len() < batch;
        let last = keys.last().cloned();
        for k in keys {
            if out.len() >= limit {
                break;
            }
            lock_one(lp, tx, ctx, &k, offset, &mut passed, &mut out)?;
        }
        match last {
            Some(k) if !exhausted => {
                if w.reverse {
                    hi = Bound::Excluded(k);
                } else {
                    lo = Bound::Excluded(k);
                }
            }
            _ => break,
        }
        batch = batch.saturating_mul(2).min(65536);
    }
    Ok(Some(out))
}
