//! Compiling subqueries and quantified comparisons (`IN (subquery)`,
//! `op ANY|ALL (subquery | array)`).

use super::*;
use ast::Expr as A;

/// `x [NOT] IN (subquery)`.
pub(super) fn in_subquery(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    expr: &ast::Expr,
    subquery: &ast::Query,
    negated: bool,
) -> Result<Expr> {
    Ok({
        let x = Expr::compile(p, scope, expr)?;
        let probe = super::compare_types::certain_type(p, scope, &x);
        let s = sub(
            p,
            scope,
            subquery,
            SubKind::In {
                expr: Box::new(x),
                negated,
            },
        )?;
        super::compare_types::check_sub(probe, &s, BinOp::Eq)?;
        s
    })
}

/// `x op ANY|ALL (subquery | array)`.
pub(super) fn any_all(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    left: &ast::Expr,
    compare_op: &BinaryOperator,
    right: &ast::Expr,
    all: bool,
) -> Result<Expr> {
    Ok({
        let x = Expr::compile(p, scope, left)?;
        // `x = ANY ($1)`: the parameter is an array of x's type.
        if let A::Value(v) = right {
            if let ast::Value::Placeholder(_) = v.value {
                let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
                if let (Expr::Param(i), Some(t)) = (
                    Expr::compile(p, scope, right)?,
                    query::static_type(&x, &types, &p.params),
                ) {
                    p.infer_param(i, DataType::Array(Box::new(t)));
                }
            }
        }
        let op = bin_op(compare_op)?;
        match right {
            A::Subquery(q) => {
                let probe = super::compare_types::certain_type(p, scope, &x);
                let s = sub(
                    p,
                    scope,
                    q,
                    SubKind::Quantified {
                        expr: Box::new(x),
                        op,
                        all,
                    },
                )?;
                super::compare_types::check_sub(probe, &s, op)?;
                s
            }
            // `x = ANY (array)`: arrays are values in text form.
            other => {
                let arr = Expr::compile(p, scope, other)?;
                // `$1 = ANY (xs)`: the parameter is an element.
                if let Expr::Param(i) = x {
                    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
                    if let Some(DataType::Array(t)) = query::static_type(&arr, &types, &p.params) {
                        p.infer_param(i, *t);
                    }
                }
                super::compare_types::check_array(p, scope, &x, &arr, op)?;
                let x = crate::expr::enum_ops::beside_array(p, scope, x, &arr)?;
                Expr::Func(Func::AnyArray(op, all), vec![x, arr])
            }
        }
    })
}

/// `ARRAY(SELECT ...)`.
pub fn array_subquery(p: &mut Planner<'_>, scope: &Arc<Scope>, q: &ast::Query) -> Result<Expr> {
    sub(p, scope, q, SubKind::Array)
}

/// `(SELECT a, b, ...)` as the one row it yields, a record of its
/// columns (see [`SubKind::Row`]), and how many columns that is.
pub(crate) fn row_subquery(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    q: &ast::Query,
) -> Result<(Expr, usize)> {
    let e = sub(p, scope, q, SubKind::Row)?;
    let width = match &e {
        Expr::Sub(s) => s.plan.columns.len(),
        _ => 0,
    };
    Ok((e, width))
}

pub(in crate::expr) fn sub(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    q: &ast::Query,
    kind: SubKind,
) -> Result<Expr> {
    let saved = p.agg.take();
    let win = std::mem::replace(&mut p.window, query::window::WindowSlot::Refused("here"));
    let plan = query::plan_query(p, q, Some(scope.clone()));
    // A correlated subquery outside grouping may have a grouped form.
    let grouped = match &plan {
        Ok(pl) if pl.correlated && saved.is_none() => query::decorrelate::plan(p, scope, q, &kind),
        _ => None,
    };
    p.window = win;
    p.agg = saved;
    let plan = plan?;
    if matches!(
        kind,
        SubKind::Scalar | SubKind::In { .. } | SubKind::Quantified { .. } | SubKind::Array
    ) && plan.columns.len() != 1
    {
        return Err(SqlError::syntax("subquery must return only one column"));
    }
    if matches!(kind, SubKind::Array)
        && matches!(
            plan.columns.first().map(|c| &c.ty),
            Some(DataType::Array(_))
        )
    {
        return Err(SqlError::unsupported("ARRAY(subquery) of arrays"));
    }
    let correlated = plan.correlated;
    Ok(Expr::Sub(Box::new(SubPlan {
        plan: Arc::new(plan),
        kind,
        correlated,
        cache: parking_lot::Mutex::new(None),
        grouped,
    })))
}
