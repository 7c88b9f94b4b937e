//! Correlated subqueries answered from one grouped pass: a scalar
//! aggregate subquery or an EXISTS whose only references to the enclosing
//! row are equalities `inner = outer` is also planned without them, its
//! inner sides as grouping keys:
//!
//! ```text
//! c_balance <> (SELECT sum(ol_amount) FROM order_line
//!               WHERE ol_w_id = c.c_w_id AND ol_d_id = c.c_d_id AND ol_delivery_d IS NOT NULL)
//! -- also as
//! SELECT ol_w_id, ol_d_id, sum(ol_amount) FROM order_line
//!   WHERE ol_delivery_d IS NOT NULL GROUP BY ol_w_id, ol_d_id
//! ```
//!
//! Once a statement has evaluated the subquery for a few enclosing rows
//! (a statement reading few rows keeps the per-row plan, which searches
//! the inner tables by the row's values), the grouped query runs once and
//! its rows are kept by key; each later row is answered by a lookup of its
//! own values: the scalar's value for a key found, EXISTS true for a key
//! found and false otherwise (the grouped pass saw every row the
//! subquery could; a NULL key equals no row). A scalar whose key has no
//! group, or is NULL, reads no rows: its value is the select list over
//! aggregates of nothing (`count` 0, `sum` NULL, ...), which reads no
//! enclosing row and is the same for every such key, so the per-row plan
//! gives it once and it is kept.
//!
//! An EXISTS may also test the enclosing row otherwise (`b.x > a.v`
//! beside `b.a_id = a.id`): its rows are then kept whole, by key, rather
//! than grouped, and each enclosing row tests those other conditions on
//! the rows of its key only (a hash semi-join with a join filter, as
//! PostgreSQL plans it), instead of reading the inner tables once per
//! enclosing row. The enclosing side of an equality may be an expression
//! of the enclosing row (`b.x = a.id + 1`).
//!
//! Only where grouping by a value finds exactly the rows `=` finds: keys
//! of integer types (any width), text and varchar, date, timestamp,
//! uuid and bool, both sides of the same kind; a subquery with no other
//! reference to enclosing queries, no GROUP BY, HAVING, DISTINCT, ORDER
//! BY, LIMIT, window or nested subquery, and calling only aggregates and
//! functions whose value depends on their arguments alone.

use super::*;
use std::ops::ControlFlow;

/// Enclosing rows answered by the per-row plan before the grouped pass.
pub const PER_ROW_FIRST: usize = 8;

/// A correlated subquery's grouped form (see the module comment).
#[derive(Debug)]
pub struct Decorrelated {
    /// The subquery grouped by the inner sides of its correlation: the
    /// keys, then (for a scalar) its value.
    pub plan: Arc<QueryPlan>,
    /// The enclosing row's side of each equality, over the row the
    /// subquery is evaluated beside.
    pub keys: Vec<Expr>,
    /// An EXISTS's conditions on the enclosing row besides the equalities,
    /// over a row of the subquery's FROM (which `plan` gives after the
    /// keys), with the enclosing row as the first outer one; `plan` then
    /// keeps rows, not groups.
    pub residual: Option<Expr>,
    state: parking_lot::Mutex<State>,
}

/// The grouped pass's rows by key (normalized).
#[derive(Debug)]
enum Groups {
    /// A scalar's value, or `true` for an EXISTS, per key.
    Values(HashMap<Vec<Value>, Value>),
    /// The FROM rows of each key, for an EXISTS's residual conditions.
    Rows(HashMap<Vec<Value>, Vec<Vec<Value>>>),
}

#[derive(Debug, Default)]
struct State {
    calls: usize,
    /// The grouped rows by key, once made.
    groups: Option<Arc<Groups>>,
    /// A scalar's value over no rows, once the per-row plan gave it.
    empty: Option<Value>,
    /// The grouped pass failed (it reads rows of keys no enclosing row
    /// asks for, where an expression may fail): the per-row plan answers.
    failed: bool,
}

/// What the grouped pass says of one enclosing row.
pub enum Answer {
    Value(Value),
    /// The subquery reads no rows for this one: the per-row plan's value
    /// is the value of every such row (see [`Decorrelated::set_empty`]).
    Empty,
    /// The per-row plan answers.
    PerRow,
}

impl Decorrelated {
    /// Keeps the value of the subquery over no rows: aggregates of nothing
    /// (`count` 0, the others NULL) under a select list that reads no
    /// enclosing row, the same for every key without rows.
    pub fn set_empty(&self, v: Value) {
        self.state.lock().empty = Some(v);
    }
}

/// Functions besides aggregates a grouped subquery may call: their value
/// depends on their arguments alone.
const PURE: &[&str] = &[
    "coalesce",
    "nullif",
    "abs",
    "round",
    "trunc",
    "floor",
    "ceil",
    "ceiling",
    "lower",
    "upper",
    "length",
    "char_length",
    "substr",
    "substring",
    "greatest",
    "least",
    "sign",
    "mod",
    "concat",
    "isnull",
];

/// The grouped form of subquery `q` compiled beside `scope`, when its
/// shape allows one (see the module comment); `None` otherwise.
pub fn plan(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    q: &ast::Query,
    kind: &crate::expr::SubKind,
) -> Option<Box<Decorrelated>> {
    use crate::expr::SubKind;
    let scalar = match kind {
        SubKind::Scalar => true,
        SubKind::Exists { .. } => false,
        _ => return None,
    };
    if q.with.is_some()
        || q.order_by.is_some()
        || q.limit_clause.is_some()
        || q.fetch.is_some()
        || !q.locks.is_empty()
    {
        return None;
    }
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return None;
    };
    let no_groups = matches!(&sel.group_by, ast::GroupByExpr::Expressions(v, m) if v.is_empty() && m.is_empty());
    if sel.distinct.is_some()
        || sel.top.is_some()
        || sel.into.is_some()
        || sel.having.is_some()
        || sel.qualify.is_some()
        || !sel.named_window.is_empty()
        || !no_groups
        || sel.from.is_empty()
    {
        return None;
    }
    let where_ = sel.selection.as_ref()?;
    // A scalar: one aggregate value.
    let value = if scalar {
        match sel.projection.as_slice() {
            [SelectItem::UnnamedExpr(e)] | [SelectItem::ExprWithAlias { expr: e, .. }]
                if select::has_aggregate(e) =>
            {
                Some(e.clone())
            }
            _ => return None,
        }
    } else {
        None
    };
    if !deterministic(where_) || value.as_ref().is_some_and(|v| !deterministic(v)) {
        return None;
    }
    for twj in &sel.from {
        if !plain_from(twj) {
            return None;
        }
    }
    // The names the subquery's FROM gives.
    let inner = {
        let item = from::plan_from(p, &sel.from, &None, &mut Vec::new()).ok()?;
        Scope::new(item.cols)
    };
    let mut conj = Vec::new();
    conjuncts(where_, &mut conj);
    let mut inner_keys = Vec::new();
    let mut outer_keys = Vec::new();
    let mut rest = Vec::new();
    let mut residual = Vec::new();
    for c in conj {
        if let ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::Eq,
            right,
        } = strip(&c)
        {
            match (side(left, &inner, scope), side(right, &inner, scope)) {
                (Side::Inner, Side::Outer) => {
                    inner_keys.push(left.as_ref().clone());
                    outer_keys.push(right.as_ref().clone());
                    continue;
                }
                (Side::Outer, Side::Inner) => {
                    inner_keys.push(right.as_ref().clone());
                    outer_keys.push(left.as_ref().clone());
                    continue;
                }
                _ => {}
            }
        }
        // Other conditions on the enclosing row: an EXISTS tests them per
        // enclosing row on its key's rows.
        match reads(&c, &inner, scope) {
            Some((_, true)) if !scalar => residual.push(c),
            Some((_, true)) => return None,
            _ => rest.push(c),
        }
    }
    if inner_keys.is_empty() {
        return None;
    }
    let and = |v: Vec<ast::Expr>| {
        v.into_iter().reduce(|a, b| ast::Expr::BinaryOp {
            left: Box::new(a),
            op: ast::BinaryOperator::And,
            right: Box::new(b),
        })
    };
    // The residual conditions, over a FROM row beside the enclosing row;
    // the rows are kept whole (every column named qualified, so a USING
    // join's merged or a nameless column leaves the per-row plan).
    let residual = match and(residual) {
        Some(r) => {
            if inner
                .cols
                .iter()
                .any(|c| c.table.is_none() || !c.merged.is_empty() || c.using_ty.is_some())
            {
                return None;
            }
            let beside = Arc::new(Scope {
                cols: inner.cols.clone(),
                parent: Some(scope.clone()),
                reach: None,
            });
            Some(Expr::compile(p, &beside, &r).ok()?)
        }
        None => None,
    };
    // The grouped query: keys, then the value (or, with a residual, the
    // FROM row, ungrouped).
    let mut g = sel.as_ref().clone();
    g.projection = inner_keys
        .iter()
        .cloned()
        .map(SelectItem::UnnamedExpr)
        .chain(value.map(SelectItem::UnnamedExpr))
        .collect();
    g.selection = and(rest);
    if residual.is_some() {
        g.projection.extend(
            inner
                .cols
                .iter()
                .map(|c| SelectItem::UnnamedExpr(select::qualified(c))),
        );
    } else {
        g.group_by = ast::GroupByExpr::Expressions(inner_keys.clone(), vec![]);
    }
    let mut gq = q.clone();
    *gq.body = SetExpr::Select(Box::new(g));
    let saved_ctes = p.ctes.clone();
    let planned = plan_query(p, &gq, None);
    p.ctes = saved_ctes;
    let planned = planned.ok()?;
    if planned.correlated {
        return None;
    }
    let mut keys = Vec::with_capacity(outer_keys.len());
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    for (k, o) in outer_keys.iter().enumerate() {
        let e = Expr::compile(p, scope, o).ok()?;
        let ot = scoped_type(&e, scope, &types, &p.params)?;
        let it = &planned.columns.get(k)?.ty;
        if !same_kind(it, &ot) {
            return None;
        }
        keys.push(e);
    }
    Some(Box::new(Decorrelated {
        plan: Arc::new(planned),
        keys,
        residual,
        state: Default::default(),
    }))
}

/// The answer from the grouped pass for the row `row`, or `None` when the
/// per-row plan must give it (see the module comment).
pub fn answer(
    d: &Decorrelated,
    kind: &crate::expr::SubKind,
    row: &[Value],
    env: &Env<'_>,
) -> Result<Answer> {
    use crate::expr::SubKind;
    let (groups, empty) = {
        let mut st = d.state.lock();
        st.calls += 1;
        if st.failed {
            return Ok(Answer::PerRow);
        }
        if st.groups.is_none() {
            if st.calls <= PER_ROW_FIRST {
                return Ok(Answer::PerRow);
            }
            let n = d.keys.len();
            // What the grouped pass charges is given back when it fails (the
            // per-row plan then runs within the statement's limit as before)
            // and, once done, replaced by the map's own charge below.
            let mark = env.info.mem.mark();
            let rows = match execute_plan(&d.plan, env, None) {
                Ok(rows) => rows,
                Err(_) => {
                    env.info.mem.release_to(mark);
                    st.failed = true;
                    return Ok(Answer::PerRow);
                }
            };
            env.info.mem.release_to(mark);
            match grouped(rows, n, d.residual.is_some(), env) {
                Some(g) => st.groups = Some(Arc::new(g)),
                None => {
                    env.info.mem.release_to(mark);
                    st.failed = true;
                    return Ok(Answer::PerRow);
                }
            }
        }
        (st.groups.clone().expect("made above"), st.empty.clone())
    };
    let mut key = Vec::with_capacity(d.keys.len());
    let mut null_key = false;
    for k in &d.keys {
        // An enclosing side that fails (`a.x / a.y`): the per-row plan
        // says whether it is evaluated at all.
        let Ok(v) = k.eval(row, env) else {
            return Ok(Answer::PerRow);
        };
        null_key |= v.is_null();
        key.push(v);
    }
    // A NULL key equals nothing: no rows, as for a key without a group.
    let key = (!null_key).then(|| normalize_key(key));
    let found = match (groups.as_ref(), &key) {
        (_, None) => None,
        (Groups::Values(m), Some(k)) => m.get(k).cloned(),
        (Groups::Rows(m), Some(k)) => {
            let residual = d.residual.as_ref().expect("rows are kept for a residual");
            let mut outer: Vec<&[Value]> = Vec::with_capacity(env.outer.len() + 1);
            outer.push(row);
            outer.extend_from_slice(env.outer);
            let beside = Env {
                outer: &outer,
                ..*env
            };
            let mut any = false;
            for r in m.get(k).map(Vec::as_slice).unwrap_or_default() {
                match passes(std::slice::from_ref(residual), r, &beside) {
                    Ok(true) => {
                        any = true;
                        break;
                    }
                    Ok(false) => {}
                    // As for a key: the per-row plan's order decides.
                    Err(_) => return Ok(Answer::PerRow),
                }
            }
            any.then_some(Value::Bool(true))
        }
    };
    Ok(match (kind, found) {
        (SubKind::Scalar, Some(v)) => Answer::Value(v),
        (SubKind::Exists { negated }, f) => Answer::Value(Value::Bool(f.is_some() != *negated)),
        (SubKind::Scalar, None) => match empty {
            Some(v) => Answer::Value(v),
            None => Answer::Empty,
        },
        _ => Answer::PerRow,
    })
}

/// The grouped pass's rows by key (`n` key columns first): a value per
/// key, or (`rows`) the FROM rows after the keys; `None` past the
/// statement's memory limit. Keys with a NULL are left out (they equal
/// nothing).
fn grouped(rows: Vec<Vec<Value>>, n: usize, keep_rows: bool, env: &Env<'_>) -> Option<Groups> {
    if keep_rows {
        let mut map: HashMap<Vec<Value>, Vec<Vec<Value>>> = HashMap::new();
        for mut r in rows {
            if r[..n].iter().any(Value::is_null) {
                continue;
            }
            env.info.mem.charge_row(r.len()).ok()?;
            let rest = r.split_off(n);
            map.entry(normalize_key(r)).or_default().push(rest);
        }
        return Some(Groups::Rows(map));
    }
    let mut map = HashMap::with_capacity(rows.len());
    for mut r in rows {
        let v = if r.len() > n {
            r.pop().unwrap_or(Value::Null)
        } else {
            Value::Bool(true)
        };
        if r.iter().any(Value::is_null) {
            continue;
        }
        env.info.mem.charge_row(n + 1).ok()?;
        map.insert(normalize_key(r), v);
    }
    Some(Groups::Values(map))
}

enum Side {
    Inner,
    Outer,
    Neither,
}

/// Whether `e` reads only the subquery's own columns, or only columns of
/// enclosing queries (a column, or an expression of them).
fn side(e: &ast::Expr, inner: &Scope, outer: &Scope) -> Side {
    match reads(e, inner, outer) {
        Some((true, false)) => Side::Inner,
        Some((false, true)) => Side::Outer,
        _ => Side::Neither,
    }
}

/// Whether `e` reads the subquery's own columns, and whether it reads
/// enclosing queries' columns; `None` for a name found in neither, or a
/// nested subquery. (A name the subquery's FROM has is its own, as
/// resolution finds it.)
fn reads(e: &ast::Expr, inner: &Scope, outer: &Scope) -> Option<(bool, bool)> {
    let mut ok = true;
    let (mut own, mut enclosing) = (false, false);
    let _ = ast::visit_expressions(e, |x| {
        match x {
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => {
                let (t, n) = crate::expr::ident_parts(x);
                if inner.resolve(t.as_deref(), &n).is_ok() {
                    own = true;
                } else if outer.resolve(t.as_deref(), &n).is_ok() {
                    enclosing = true;
                } else {
                    ok = false;
                }
            }
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
                ok = false
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    ok.then_some((own, enclosing))
}

fn strip(e: &ast::Expr) -> &ast::Expr {
    match e {
        ast::Expr::Nested(inner) => strip(inner),
        e => e,
    }
}

/// No nested subquery, and only aggregates and functions of [`PURE`].
fn deterministic(e: &ast::Expr) -> bool {
    ast::visit_expressions(e, |x| match x {
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
            ControlFlow::Break(())
        }
        ast::Expr::Function(f) => {
            let name = crate::front::fname(f);
            if f.over.is_none()
                && (functions::aggregate_kind(f).is_some() || PURE.contains(&name.as_str()))
            {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        }
        _ => ControlFlow::Continue(()),
    })
    .is_continue()
}

/// Tables and joins of tables only (no functions, subqueries or views
/// whose planning could depend on the enclosing row).
fn plain_from(twj: &ast::TableWithJoins) -> bool {
    let plain = |f: &TableFactor| match f {
        TableFactor::Table { args, .. } => args.is_none(),
        _ => false,
    };
    plain(&twj.relation)
        && twj.joins.iter().all(|j| {
            use ast::JoinOperator as J;
            plain(&j.relation)
                && match &j.join_operator {
                    J::Join(c) | J::Inner(c) | J::Left(c) | J::LeftOuter(c) => match c {
                        ast::JoinConstraint::On(e) => deterministic(e),
                        _ => true,
                    },
                    J::CrossJoin(_) => true,
                    _ => false,
                }
        })
}

/// Whether grouping by values of type `a` finds the rows `=` with values
/// of type `b` finds.
fn same_kind(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    let int = |t: &DataType| matches!(t, SmallInt | Int | BigInt);
    let text = |t: &DataType| matches!(t, Text | Varchar(_));
    (int(a) && int(b))
        || (text(a) && text(b))
        || matches!(
            (a, b),
            (Date, Date)
                | (Timestamp, Timestamp)
                | (TimestampTz, TimestampTz)
                | (Uuid, Uuid)
                | (Bool, Bool)
        )
}
