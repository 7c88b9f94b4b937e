//! Planning a query body: SELECT lists, set operations, grouping, ORDER BY,
//! LIMIT and OFFSET.

use super::*;

/// Plans a query (`outer`: the enclosing query's scope, for correlation).
pub fn plan_query(
    p: &mut Planner<'_>,
    q: &ast::Query,
    outer: Option<Arc<Scope>>,
) -> Result<QueryPlan> {
    // A top-level locking read is planned by `locking.rs`; anywhere else
    // (a subquery, a CTE, INSERT ... SELECT) it would take no lock.
    if !q.locks.is_empty() {
        return Err(SqlError::unsupported(
            "FOR UPDATE / FOR SHARE in a subquery, CTE or INSERT ... SELECT",
        ));
    }
    let saved_ctes = p.ctes.len();
    if let Some(with) = &q.with {
        if let Err(e) = plan_with(p, with, &outer) {
            p.ctes.truncate(saved_ctes);
            return Err(e);
        }
    }
    let r = plan_query_body(p, q, outer);
    p.ctes.truncate(saved_ctes);
    r
}

/// Plans a WITH list's queries, each visible to the ones after it and to
/// what follows (the caller drops them from `p.ctes` afterwards).
pub(crate) fn plan_with(
    p: &mut Planner<'_>,
    with: &ast::With,
    outer: &Option<Arc<Scope>>,
) -> Result<()> {
    for cte in &with.cte_tables {
        // The top level's are run by `dml/with_dml.rs`.
        if matches!(
            cte.query.body.as_ref(),
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_)
        ) {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "WITH clause containing a data-modifying statement must be at the top level",
            ));
        }
        if with.recursive {
            let plan = super::recursive::plan_recursive_cte(p, cte, outer.clone())?;
            p.ctes
                .push((cte.alias.name.value.to_ascii_lowercase(), Arc::new(plan)));
            continue;
        }
        let mut plan = plan_query(p, &cte.query, outer.clone())?;
        cte_column_count(cte, plan.columns.len())?;
        for (c, a) in plan.columns.iter_mut().zip(cte.alias.columns.iter()) {
            c.name = a.name.value.to_ascii_lowercase();
        }
        p.ctes
            .push((cte.alias.name.value.to_ascii_lowercase(), Arc::new(plan)));
    }
    Ok(())
}

pub(super) fn plan_query_body(
    p: &mut Planner<'_>,
    q: &ast::Query,
    outer: Option<Arc<Scope>>,
) -> Result<QueryPlan> {
    // A parenthesized query: the enclosing ORDER BY, LIMIT and OFFSET join
    // its own (PostgreSQL refuses a clause given at both levels).
    if let SetExpr::Query(inner) = q.body.as_ref() {
        let clauses =
            |q: &ast::Query| q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some();
        if !clauses(q) {
            return plan_query(p, inner, outer);
        }
        // `(((q)))`: the innermost parentheses with clauses of their own.
        let mut inner: &ast::Query = inner;
        while !clauses(inner) && inner.with.is_none() {
            match inner.body.as_ref() {
                SetExpr::Query(deeper) => inner = deeper,
                _ => break,
            }
        }
        if clauses(inner) {
            return plan_query(p, &merged_clauses(q, inner)?, outer);
        }
    }
    let order_items: Vec<ast::OrderByExpr> = match &q.order_by {
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) => v.clone(),
            ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        },
        None => vec![],
    };
    let empty = Arc::new(Scope {
        cols: vec![],
        parent: outer.clone(),
        reach: None,
    });
    let (mut limit, offset) = limit_offset(p, &empty, q)?;
    let mut limit_mode = LimitMode::default();
    if let Some(f) = &q.fetch {
        if f.percent {
            return Err(SqlError::unsupported("FETCH FIRST ... PERCENT"));
        }
        // FETCH FIRST ROWS ONLY, without a count, is one row.
        limit = Some(match &f.quantity {
            Some(qty) => Expr::compile(p, &empty, qty)?,
            None => Expr::Lit(Value::Int(1)),
        });
        if f.with_ties {
            if order_items.is_empty() {
                return Err(SqlError::syntax(
                    "WITH TIES cannot be specified without ORDER BY clause",
                ));
            }
            limit_mode.with_ties = true;
        }
    }
    for l in [&limit, &offset].into_iter().flatten() {
        if let Expr::Param(i) = l {
            p.infer_param(*i, DataType::BigInt);
        }
    }
    let mut plan = match q.body.as_ref() {
        SetExpr::Select(sel) => {
            let (plan, order) = plan_select(p, sel, &order_items, outer.clone())?;
            let mut plan = plan;
            plan.order = order;
            if let Some(top) = &sel.top {
                limit = Some(match &top.quantity {
                    Some(ast::TopQuantity::Expr(e)) => top_count(p, &empty, e)?,
                    Some(ast::TopQuantity::Constant(n)) => Expr::Lit(Value::Int(*n as i64)),
                    None => return Err(SqlError::syntax("TOP needs a row count")),
                });
                if top.with_ties && order_items.is_empty() {
                    return Err(SqlError::syntax(
                        "the TOP N WITH TIES clause is not allowed without a corresponding ORDER BY clause",
                    ));
                }
                limit_mode = LimitMode {
                    with_ties: top.with_ties,
                    percent: top.percent,
                };
            }
            plan
        }
        other => {
            let mut plan = plan_set_expr(p, other, outer.clone())?;
            plan.order = output_order(&plan.columns, &order_items)?;
            plan
        }
    };
    // A LIMIT or OFFSET may read the enclosing row (`OFFSET s - 1`).
    plan.correlated |= limit.iter().chain(offset.iter()).any(|e| e.uses_outer());
    plan.limit = limit;
    plan.offset = offset;
    plan.limit_mode = limit_mode;
    let limited = plan.limit.is_some() && limit_mode.is_plain();
    if let Body::Select(sel) = &mut plan.body {
        sel.walk = super::walk::choose_walk(sel, &plan.order, limited);
    }
    Ok(plan)
}

/// `(inner) ORDER BY ... LIMIT ...`: one query with the clauses of both,
/// as PostgreSQL reads it; a clause given at both levels is an error.
fn merged_clauses(q: &ast::Query, inner: &ast::Query) -> Result<ast::Query> {
    let twice = |what: &str| SqlError::syntax(format!("multiple {what} clauses not allowed"));
    let parts = |q: &ast::Query| -> (Option<ast::Expr>, Option<ast::Offset>) {
        match &q.limit_clause {
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
                (limit.clone(), offset.clone())
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (
                Some(limit.clone()),
                Some(ast::Offset {
                    value: offset.clone(),
                    rows: ast::OffsetRows::None,
                }),
            ),
            None => (None, None),
        }
    };
    let (ol, oo) = parts(q);
    let (il, io) = parts(inner);
    if q.order_by.is_some() && inner.order_by.is_some() {
        return Err(twice("ORDER BY"));
    }
    if (ol.is_some() || q.fetch.is_some()) && (il.is_some() || inner.fetch.is_some()) {
        return Err(twice("LIMIT"));
    }
    if oo.is_some() && io.is_some() {
        return Err(twice("OFFSET"));
    }
    let mut m = inner.clone();
    m.order_by = inner.order_by.clone().or_else(|| q.order_by.clone());
    m.fetch = inner.fetch.clone().or_else(|| q.fetch.clone());
    let (limit, offset) = (il.or(ol), io.or(oo));
    m.limit_clause = (limit.is_some() || offset.is_some()).then(|| ast::LimitClause::LimitOffset {
        limit,
        offset,
        limit_by: vec![],
    });
    Ok(m)
}

/// TOP's row count. SQL Server refuses a NULL count where LIMIT NULL means
/// no limit: a literal NULL is refused here, and a NULL from a parameter or
/// variable becomes -1, which the count's evaluation refuses.
fn top_count(p: &mut Planner<'_>, scope: &Arc<Scope>, e: &ast::Expr) -> Result<Expr> {
    let mut inner = e;
    while let ast::Expr::Nested(x) = inner {
        inner = x;
    }
    if matches!(inner, ast::Expr::Value(v) if matches!(v.value, ast::Value::Null)) {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            "the row count of TOP must be an integer, not NULL",
        ));
    }
    let n = Expr::compile(p, scope, e)?;
    if matches!(&n, Expr::Lit(v) if !v.is_null()) {
        return Ok(n);
    }
    Ok(Expr::Func(
        crate::functions::Func::Coalesce,
        vec![n, Expr::Lit(Value::Int(-1))],
    ))
}

pub(super) fn output_order(
    columns: &[Column],
    items: &[ast::OrderByExpr],
) -> Result<Vec<(SortKey, bool, bool)>> {
    let mut out = Vec::new();
    for it in items {
        let desc = crate::expr::sort_desc(&it.options)?;
        let nulls_first = it.options.nulls_first.unwrap_or(desc);
        let idx = match &it.expr {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => n
                    .parse::<usize>()
                    .ok()
                    .filter(|&i| i >= 1 && i <= columns.len())
                    .map(|i| i - 1),
                _ => None,
            },
            e => {
                let name = crate::expr::column_name(e);
                columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(&name))
            }
        };
        match idx {
            Some(i) => out.push((SortKey::Output(i), desc, nulls_first)),
            None => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!("ORDER BY term {} does not match a result column", it.expr),
                ))
            }
        }
    }
    Ok(out)
}

/// A query's LIMIT and OFFSET expressions (either spelling).
pub(crate) fn limit_offset(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    q: &ast::Query,
) -> Result<(Option<Expr>, Option<Expr>)> {
    Ok(match &q.limit_clause {
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (
            limit
                .as_ref()
                .map(|l| Expr::compile(p, scope, l))
                .transpose()?,
            offset
                .as_ref()
                .map(|o| Expr::compile(p, scope, &o.value))
                .transpose()?,
        ),
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (
            Some(Expr::compile(p, scope, limit)?),
            Some(Expr::compile(p, scope, offset)?),
        ),
        None => (None, None),
    })
}

/// Whether an expression contains an aggregate call (not counting those
/// inside subqueries, which belong to them).
pub(crate) fn has_aggregate(e: &ast::Expr) -> bool {
    use ast::Expr as A;
    let any = |v: &[&ast::Expr]| v.iter().any(|x| has_aggregate(x));
    match e {
        A::Function(f) => {
            if functions::aggregate_kind(f).is_some() {
                return true;
            }
            if let Some(ast::WindowType::WindowSpec(w)) = &f.over {
                if w.partition_by.iter().any(has_aggregate)
                    || w.order_by.iter().any(|o| has_aggregate(&o.expr))
                {
                    return true;
                }
            }
            match &f.args {
                ast::FunctionArguments::List(l) => l.args.iter().any(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x))
                    | ast::FunctionArg::Named {
                        arg: ast::FunctionArgExpr::Expr(x),
                        ..
                    } => has_aggregate(x),
                    _ => false,
                }),
                _ => false,
            }
        }
        A::BinaryOp { left, right, .. } => any(&[left, right]),
        A::AtTimeZone {
            timestamp,
            time_zone,
        } => any(&[timestamp, time_zone]),
        A::UnaryOp { expr, .. }
        | A::Nested(expr)
        | A::Cast { expr, .. }
        | A::IsNull(expr)
        | A::IsNotNull(expr)
        | A::IsTrue(expr)
        | A::IsFalse(expr)
        | A::IsNotTrue(expr)
        | A::IsNotFalse(expr)
        | A::Ceil { expr, .. }
        | A::Floor { expr, .. }
        | A::Extract { expr, .. }
        | A::Trim { expr, .. }
        | A::InSubquery { expr, .. } => has_aggregate(expr),
        A::IsDistinctFrom(a, b) | A::IsNotDistinctFrom(a, b) => any(&[a, b]),
        A::InList { expr, list, .. } => has_aggregate(expr) || list.iter().any(has_aggregate),
        A::Between {
            expr, low, high, ..
        } => any(&[expr, low, high]),
        A::Like { expr, pattern, .. } | A::ILike { expr, pattern, .. } => any(&[expr, pattern]),
        A::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(has_aggregate)
                || conditions
                    .iter()
                    .any(|w| has_aggregate(&w.condition) || has_aggregate(&w.result))
                || else_result.as_deref().is_some_and(has_aggregate)
        }
        A::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            has_aggregate(expr)
                || substring_from.as_deref().is_some_and(has_aggregate)
                || substring_for.as_deref().is_some_and(has_aggregate)
        }
        A::Tuple(v) => v.iter().any(has_aggregate),
        _ => false,
    }
}

pub(super) fn plan_select(
    p: &mut Planner<'_>,
    sel: &ast::Select,
    order_items: &[ast::OrderByExpr],
    outer: Option<Arc<Scope>>,
) -> Result<(QueryPlan, Order)> {
    // Window calls belong to the SELECT whose list they are in; an
    // enclosing one's (this may be a subquery) waits meanwhile.
    let saved = std::mem::replace(&mut p.window, window::WindowSlot::Refused("here"));
    // Likewise set-returning calls (run by this SELECT's ProjectSet).
    let saved_srf = std::mem::replace(&mut p.srf, srf::SrfSlot::Refused(""));
    let r = plan_select_inner(p, sel, order_items, outer);
    p.window = saved;
    p.srf = saved_srf;
    r
}

fn plan_select_inner(
    p: &mut Planner<'_>,
    sel: &ast::Select,
    order_items: &[ast::OrderByExpr],
    outer: Option<Arc<Scope>>,
) -> Result<(QueryPlan, Order)> {
    use window::WindowSlot;
    if sel.into.is_some() {
        return Err(SqlError::unsupported("SELECT ... INTO"));
    }
    let saved_where = std::mem::replace(&mut p.partition_where, sel.selection.clone());
    let item = super::order::plan_from_where(p, &sel.from, sel.selection.as_ref(), &outer);
    p.partition_where = saved_where;
    let (mut item, moved_on) = item?;
    let scope = Arc::new(Scope {
        cols: item.cols.clone(),
        parent: outer.clone(),
        reach: None,
    });
    let input_types: Vec<DataType> = item.cols.iter().map(|c| c.ty.clone()).collect();
    // WHERE: conjuncts move to the sources and joins they concern.
    let win_ctx = window::WinCtx::new(&sel.named_window)?;
    let mut filter = Vec::new();
    let mut correlated = false;
    p.window = WindowSlot::Refused("in WHERE");
    p.srf = srf::SrfSlot::Refused("WHERE");
    if sel.selection.is_some() || !moved_on.is_empty() {
        let mut cs = Vec::new();
        if let Some(w) = &sel.selection {
            conjuncts(w, &mut cs);
        }
        // The ON conditions of inner joins the join order dissolved.
        cs.extend(moved_on);
        for c in cs {
            if has_aggregate(&c) {
                return Err(SqlError::new(
                    ErrorKind::GroupingError,
                    "aggregate functions are not allowed in WHERE",
                ));
            }
            let e = Expr::compile(p, &scope, &c)?;
            correlated |= e.uses_outer();
            let mut used = Vec::new();
            cols_used(&e, &mut used);
            let is_sub = matches!(&e, Expr::Sub(_));
            if !used.is_empty() && !is_sub && all_inner(&item.source) {
                add_filter_top(&mut item.source, e);
            } else {
                filter.push(e);
            }
        }
    }
    p.window = WindowSlot::Refused("here");
    super::equiv::propagate(&mut item.source);
    choose_lookups(&mut item.source);

    // Grouping.
    let group_exprs: Vec<ast::Expr> = match &sel.group_by {
        ast::GroupByExpr::Expressions(v, mods) => {
            if let Some(m) = mods.first() {
                return Err(SqlError::unsupported(format!("GROUP BY ... {m}")));
            }
            v.clone()
        }
        ast::GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
    };
    let projection_has_agg = sel.projection.iter().any(|i| match i {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => has_aggregate(e),
        _ => false,
    }) || sel.having.as_ref().is_some_and(has_aggregate)
        || order_items.iter().any(|o| has_aggregate(&o.expr));
    // HAVING alone makes the query grouped (one group of every row), as
    // in PostgreSQL: `SELECT 1 FROM t HAVING true` is one row.
    let grouped = !group_exprs.is_empty() || projection_has_agg || sel.having.is_some();

    // Output columns (expanding wildcards) as (name, AST expr).
    let mut outputs: Vec<(String, ast::Expr)> = Vec::new();
    for it in &sel.projection {
        match it {
            SelectItem::UnnamedExpr(e) => outputs.push((crate::expr::column_name(e), e.clone())),
            // A quoted alias keeps its case (psql's `AS "Schema"` headers).
            SelectItem::ExprWithAlias { expr, alias } => outputs.push((
                if alias.quote_style.is_some() {
                    alias.value.clone()
                } else {
                    alias.value.to_ascii_lowercase()
                },
                expr.clone(),
            )),
            SelectItem::Wildcard(_) => {
                // A table without columns gives none (`SELECT * FROM z`).
                if item.cols.is_empty() && sel.from.is_empty() {
                    return Err(SqlError::syntax(
                        "SELECT * with no tables specified is not valid",
                    ));
                }
                for c in star_order(&item.cols)
                    .into_iter()
                    .map(|i| &item.cols[i])
                    .filter(|c| !c.hidden && !is_system_col(p, c))
                {
                    outputs.push((c.name.clone(), qualified(c)));
                }
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let t = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                        object_last(n).to_ascii_lowercase()
                    }
                    ast::SelectItemQualifiedWildcardKind::Expr(e) => {
                        e.to_string().to_ascii_lowercase()
                    }
                };
                let before = outputs.len();
                for c in item
                    .cols
                    .iter()
                    .filter(|c| c.table.as_deref() == Some(t.as_str()) && !is_system_col(p, c))
                {
                    outputs.push((c.name.clone(), qualified(c)));
                }
                if outputs.len() == before {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedTable,
                        format!("missing FROM-clause entry for table \"{t}\""),
                    ));
                }
            }
            other => return Err(SqlError::unsupported(format!("select item {other}"))),
        }
    }

    let spec = super::grouping_sets::expand(&group_exprs)?;
    let mut group = None;
    let mut having = None;
    let mut row_types = input_types.clone();
    if grouped {
        let mut keys = Vec::new();
        let mut key_names = Vec::new();
        for g in &spec.items {
            // GROUP BY 1 / GROUP BY alias refer to output columns.
            let g = match g {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => match n.parse::<usize>() {
                        Ok(i) if i >= 1 && i <= outputs.len() => outputs[i - 1].1.clone(),
                        _ => {
                            return Err(SqlError::syntax(format!(
                                "GROUP BY position {n} is not in select list"
                            )))
                        }
                    },
                    _ => g.clone(),
                },
                ast::Expr::Identifier(id) if scope.resolve(None, &id.value).is_err() => outputs
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&id.value))
                    .map(|(_, e)| e.clone())
                    .unwrap_or_else(|| g.clone()),
                _ => g.clone(),
            };
            p.window = WindowSlot::Refused("in GROUP BY");
            p.srf = srf::SrfSlot::Refused("GROUP BY");
            keys.push(Expr::compile(p, &scope, &g)?);
            p.window = WindowSlot::Refused("here");
            key_names.push(g.to_string());
        }
        // Columns of a table grouped by its primary key depend on it: they
        // are grouped too (which splits no group), under names no
        // expression has, and found by their column (PostgreSQL's rule).
        let mut dependent = Vec::new();
        // (Not with grouping sets, where a key may be rolled up.)
        let by_key = match spec.sets {
            None => super::depend::dependent_columns(&item.source, &keys),
            Some(_) => Vec::new(),
        };
        for c in by_key {
            dependent.push((c, keys.len()));
            keys.push(Expr::Col(c));
            key_names.push(format!("\u{1}dependent {c}"));
        }
        let mut key_types: Vec<DataType> = keys
            .iter()
            .map(|k| static_type(k, &input_types, &p.params).unwrap_or(DataType::Text))
            .collect();
        if spec.sets.is_some() {
            // The grouped row's last key: its grouping set's index.
            key_names.push(super::grouping_sets::SET_KEY.to_string());
            key_types.push(DataType::Int);
        }
        p.agg = Some(AggCtx {
            group_keys: key_names,
            key_types,
            input_scope: scope.clone(),
            aggs: Vec::new(),
            dependent,
            sets: spec.sets.clone(),
        });
        group = Some(keys);
    }
    let proj_scope = scope.clone();
    p.window = WindowSlot::Open(Box::new(win_ctx));
    p.srf = srf::SrfSlot::Open(Vec::new());
    let mut projection = Vec::new();
    let compiled = (|| -> Result<()> {
        for (_, e) in &outputs {
            projection.push(Expr::compile(p, &proj_scope, e)?);
        }
        if let Some(h) = &sel.having {
            let open = std::mem::replace(&mut p.window, WindowSlot::Refused("in HAVING"));
            let srf_open = std::mem::replace(&mut p.srf, srf::SrfSlot::Refused("HAVING"));
            let r = Expr::compile(p, &proj_scope, h);
            p.window = open;
            p.srf = srf_open;
            having = Some(r?);
        }
        Ok(())
    })();
    if let Err(e) = compiled {
        p.agg = None;
        return Err(e);
    }
    // ORDER BY: output column (alias or position) or an expression over the input.
    let mut order = Vec::new();
    for it in order_items {
        let desc = crate::expr::sort_desc(&it.options)?;
        let nulls_first = it.options.nulls_first.unwrap_or(desc);
        match item_key(p, sel, &outputs, &scope, &proj_scope, &it.expr, "ORDER BY") {
            Ok(key) => order.push((key, desc, nulls_first)),
            Err(err) => {
                p.agg = None;
                return Err(err);
            }
        }
    }
    // DISTINCT ON's expressions, named as ORDER BY's are.
    let mut distinct_on = match &sel.distinct {
        Some(ast::Distinct::On(exprs)) => {
            let mut keys = Vec::new();
            for e in exprs {
                match item_key(p, sel, &outputs, &scope, &proj_scope, e, "DISTINCT ON") {
                    Ok(key) => keys.push(key),
                    Err(err) => {
                        p.agg = None;
                        return Err(err);
                    }
                }
            }
            Some(keys)
        }
        _ => None,
    };
    let win = match std::mem::replace(&mut p.window, WindowSlot::Refused("here")) {
        WindowSlot::Open(ctx) => window::finish(*ctx),
        _ => None,
    };
    let mut srf_calls = match std::mem::replace(&mut p.srf, srf::SrfSlot::Refused("")) {
        srf::SrfSlot::Open(calls) => calls,
        srf::SrfSlot::Refused(_) => Vec::new(),
    };
    let group = match (group, p.agg.take()) {
        (Some(keys), Some(ctx)) => {
            row_types = ctx.row_types(&p.params);
            Some((keys, ctx.aggs))
        }
        _ => None,
    };
    // A key, an aggregate's arguments or HAVING may read the enclosing
    // row: the subquery is then run again per row, not cached.
    if let Some((keys, aggs)) = &group {
        correlated |= keys.iter().any(|e| e.uses_outer())
            || aggs.iter().any(|a| {
                a.arg
                    .iter()
                    .chain(a.separator.iter())
                    .chain(a.filter.iter())
                    .chain(a.direct.iter())
                    .chain(a.order.iter().map(|(e, _, _)| e))
                    .any(|e| e.uses_outer())
            });
    }
    correlated |= having.as_ref().is_some_and(|h: &Expr| h.uses_outer());
    if let Some(w) = &win {
        // Window values follow the row they are computed over.
        let base = row_types.len();
        for e in projection.iter_mut() {
            window::place(e, base);
        }
        for k in order
            .iter_mut()
            .map(|(k, _, _)| k)
            .chain(distinct_on.iter_mut().flatten())
        {
            if let SortKey::Input(e) = k {
                window::place(e, base);
            }
        }
        for c in srf_calls.iter_mut() {
            for a in c.args.iter_mut() {
                window::place(a, base);
            }
        }
        let types = window::result_types(&w.calls, &row_types, &p.params);
        row_types.extend(types);
        correlated |= w.exprs().any(|e| e.uses_outer());
    }
    let project_set = if srf_calls.is_empty() {
        None
    } else {
        // SRF values follow the (grouped, windowed) row they are computed over.
        let base = row_types.len();
        for e in projection.iter_mut() {
            srf::place(e, base);
        }
        for k in order
            .iter_mut()
            .map(|(k, _, _)| k)
            .chain(distinct_on.iter_mut().flatten())
        {
            if let SortKey::Input(e) = k {
                srf::place(e, base);
            }
        }
        for c in srf_calls.iter_mut() {
            for a in c.args.iter_mut() {
                srf::place(a, base);
            }
            correlated |= c.args.iter().any(|a| a.uses_outer());
            row_types.extend(c.slot_types());
        }
        Some(Box::new(srf::ProjectSet {
            calls: srf_calls,
            base,
        }))
    };
    let type_of = |t: &ast::DataType| crate::types::names::data_type_in(&p.db, p.viewer, t).ok();
    let columns: Vec<Column> = outputs
        .iter()
        .zip(&projection)
        .map(|((name, ast), e)| Column {
            name: name.clone(),
            ty: crate::query::scoped_type(e, &scope, &row_types, &p.params)
                .unwrap_or(DataType::Text),
            origin: scope.origin_of(ast, &type_of),
        })
        .collect();
    correlated |= projection.iter().any(|e| e.uses_outer()) || source_correlated(&item.source);
    // An ORDER BY expression reading an enclosing row makes the query
    // correlated too (keys, aggregates and HAVING are above).
    correlated |= order.iter().any(|(k, _, _)| match k {
        SortKey::Input(e) => e.uses_outer(),
        SortKey::Output(_) => false,
    });
    let distinct = matches!(&sel.distinct, Some(ast::Distinct::Distinct));
    if let Some(on) = &distinct_on {
        super::distinct_on::check_order(on, &order, &projection)?;
        correlated |= on.iter().any(|k| match k {
            SortKey::Input(e) => e.uses_outer(),
            SortKey::Output(_) => false,
        });
    }
    let plan = QueryPlan {
        columns,
        body: Body::Select(Box::new(SelectPlan {
            from: item.source,
            filter,
            group,
            grouping_sets: spec.sets,
            having,
            projection,
            distinct,
            distinct_on,
            window: win.map(Box::new),
            srf: project_set,
            walk: None,
        })),
        order: vec![],
        limit: None,
        offset: None,
        limit_mode: LimitMode::default(),
        correlated,
    };
    Ok((plan, order))
}

pub(super) fn qualified(c: &ScopeCol) -> ast::Expr {
    // A FULL join's merged column is named unqualified, its COALESCE.
    if !c.merged.is_empty() || c.using_ty.is_some() {
        return ast::Expr::Identifier(ast::Ident::new(c.name.clone()));
    }
    match &c.table {
        Some(t) => ast::Expr::CompoundIdentifier(vec![
            ast::Ident::new(t.clone()),
            ast::Ident::new(c.name.clone()),
        ]),
        None => ast::Expr::Identifier(ast::Ident::new(c.name.clone())),
    }
}

pub(super) fn all_inner(s: &Source) -> bool {
    match s {
        Source::Join {
            left, right, kind, ..
        } => matches!(kind, JoinKind::Inner) && all_inner(left) && all_inner(right),
        _ => true,
    }
}

pub(super) fn source_correlated(s: &Source) -> bool {
    match s {
        Source::Table {
            filter,
            lookup,
            range,
            index,
            ..
        } => {
            index
                .as_deref()
                .is_some_and(|ip| index_exprs(ip).iter().any(|e| e.uses_outer()))
                || filter.iter().any(|e| e.uses_outer())
                || lookup
                    .as_ref()
                    .is_some_and(|l| l.iter().any(|e| e.uses_outer()))
                || range
                    .as_ref()
                    .is_some_and(|r| r.exprs().any(|e| e.uses_outer()))
        }
        Source::Derived { plan, filter, .. } => {
            plan.correlated || filter.iter().any(|e| e.uses_outer())
        }
        Source::SysView { filter, args, .. } => filter.iter().chain(args).any(|e| e.uses_outer()),
        Source::Srf { filter, args, .. } => filter.iter().chain(args).any(|e| e.uses_outer()),
        Source::Unnest { arrays, filter } => arrays.iter().chain(filter).any(|e| e.uses_outer()),
        Source::Ordinality { inner, filter } => {
            source_correlated(inner) || filter.iter().any(|e| e.uses_outer())
        }
        Source::Ancestors { rel, filter } => {
            rel.uses_outer() || filter.iter().any(|e| e.uses_outer())
        }
        Source::JsonRows { arg, filter, .. } => {
            arg.uses_outer() || filter.iter().any(|e| e.uses_outer())
        }
        Source::Join {
            left,
            right,
            keys,
            on,
            lateral,
            ..
        } => {
            // A lateral side's outer references are mostly to the left row.
            let right_correlated = match lateral {
                Some(l) => l.enclosing,
                None => source_correlated(right),
            };
            source_correlated(left)
                || right_correlated
                || on.iter().any(|e| e.uses_outer())
                || keys.iter().any(|(a, b)| a.uses_outer() || b.uses_outer())
        }
        Source::Single => false,
    }
}

/// Adds a WHERE conjunct at the deepest place that has all its columns.
pub(super) fn add_filter_top(source: &mut Source, c: Expr) {
    add_filter(source, c, 0)
}

/// `tableoid` of a catalog in FROM: named, it is a column; `*` leaves it out.
fn is_system_col(p: &Planner<'_>, c: &ScopeCol) -> bool {
    c.name == "tableoid"
        && c.table
            .as_ref()
            .is_some_and(|t| p.system_labels.contains(t))
}

/// A WITH query's column list naming more columns than it has is 42P10, as
/// in PostgreSQL.
pub(crate) fn cte_column_count(cte: &ast::Cte, available: usize) -> Result<()> {
    if cte.alias.columns.len() > available {
        return Err(SqlError::new(
            ErrorKind::InvalidColumnReference,
            format!(
                "WITH query \"{}\" has {available} columns available but {} columns specified",
                cte.alias.name.value,
                cte.alias.columns.len()
            ),
        ));
    }
    Ok(())
}

/// An ORDER BY or DISTINCT ON item's key: an output column (by position,
/// or by name where the name is an alias or no input column), else an
/// expression over the row before projection.
fn item_key(
    p: &mut Planner<'_>,
    sel: &ast::Select,
    outputs: &[(String, ast::Expr)],
    scope: &Arc<Scope>,
    proj_scope: &Arc<Scope>,
    e: &ast::Expr,
    clause: &str,
) -> Result<SortKey> {
    let by_pos = match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Some(
                n.parse::<usize>()
                    .ok()
                    .filter(|&i| i >= 1 && i <= outputs.len())
                    .ok_or_else(|| {
                        SqlError::new(
                            ErrorKind::InvalidColumnReference,
                            format!("{clause} position {n} is not in select list"),
                        )
                    })?
                    - 1,
            ),
            _ => None,
        },
        ast::Expr::Identifier(id) => {
            let n = id.value.to_ascii_lowercase();
            let is_alias = sel.projection.iter().any(|i| matches!(i, SelectItem::ExprWithAlias { alias, .. } if alias.value.eq_ignore_ascii_case(&n)));
            if is_alias || scope.resolve(None, &n).is_err() {
                outputs
                    .iter()
                    .position(|(name, _)| name.eq_ignore_ascii_case(&n))
            } else {
                None
            }
        }
        _ => None,
    };
    Ok(match by_pos {
        Some(i) => SortKey::Output(i),
        None => SortKey::Input(Expr::compile(p, proj_scope, e)?),
    })
}
