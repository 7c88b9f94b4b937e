//! Set operations (UNION, INTERSECT, EXCEPT): planning each branch and
//! casting them to the columns' common types, as PostgreSQL resolves them.

use super::*;

pub(super) fn plan_set_expr(
    p: &mut Planner<'_>,
    body: &SetExpr,
    outer: Option<Arc<Scope>>,
) -> Result<QueryPlan> {
    match body {
        SetExpr::Select(sel) => Ok(plan_select(p, sel, &[], outer)?.0),
        SetExpr::Query(q) => plan_query(p, q, outer),
        SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            let mut l = plan_set_expr(p, left, outer.clone())?;
            let mut r = plan_set_expr(p, right, outer)?;
            if l.columns.len() != r.columns.len() {
                return Err(SqlError::syntax(format!(
                    "each {op} query must have the same number of columns"
                )));
            }
            // A quoted literal or NULL (PostgreSQL's unknown) takes the
            // other branch's type: `SELECT 'x' UNION SELECT relname` is name.
            for i in 0..l.columns.len() {
                let (lu, ru) = (unknown_column(&l, i, false), unknown_column(&r, i, true));
                if lu && !ru {
                    let ty = super::unmodified(&r.columns[i].ty);
                    cast_column(&mut l, i, ty);
                } else if ru && !lu {
                    let ty = super::unmodified(&l.columns[i].ty);
                    cast_column(&mut r, i, ty);
                }
            }
            // Then the branches' types resolve to one, each branch cast to
            // it (`SELECT 1 UNION SELECT 2.5` is numeric, both rows).
            let context = match op {
                ast::SetOperator::Union => "UNION",
                ast::SetOperator::Intersect => "INTERSECT",
                _ => "EXCEPT",
            };
            let mut casts: [Vec<Option<super::ColumnCast>>; 2] = [vec![], vec![]];
            let mut types = Vec::with_capacity(l.columns.len());
            for i in 0..l.columns.len() {
                let (lt, rt) = (branch_type(p, &l, i), branch_type(p, &r, i));
                let ty = super::common_type::select_common(&[lt.clone(), rt.clone()], context)?;
                for (side, (plan, t)) in casts.iter_mut().zip([(&l, lt), (&r, rt)]) {
                    side.push(match t {
                        Some(t) if super::common_type::needs_cast(&t, &ty) => {
                            Some(super::ColumnCast::new(&t, &ty))
                        }
                        Some(_) => None,
                        None => {
                            infer_branch_param(p, plan, i, &ty);
                            None
                        }
                    });
                }
                types.push(ty);
            }
            let all = matches!(set_quantifier, ast::SetQuantifier::All);
            // A set operation's columns read no one table (PostgreSQL marks
            // no origin on them).
            let columns = l
                .columns
                .iter()
                .zip(types)
                .map(|(c, ty)| Column {
                    origin: None,
                    ty,
                    ..c.clone()
                })
                .collect();
            Ok(QueryPlan {
                columns,
                correlated: l.correlated || r.correlated,
                body: Body::SetOp {
                    left: Box::new(l),
                    right: Box::new(r),
                    op: *op,
                    all,
                    casts,
                },
                order: vec![],
                limit: None,
                offset: None,
                limit_mode: LimitMode::default(),
            })
        }
        SetExpr::Values(v) => {
            let scope = Arc::new(Scope {
                cols: vec![],
                parent: outer,
                reach: None,
            });
            let mut rows = Vec::new();
            let saved = std::mem::replace(&mut p.window, window::WindowSlot::Refused("in VALUES"));
            let compiled = v.rows.iter().try_for_each(|r| {
                rows.push(
                    r.iter()
                        .map(|e| Expr::compile(p, &scope, e))
                        .collect::<Result<Vec<_>>>()?,
                );
                Ok::<(), SqlError>(())
            });
            p.window = saved;
            compiled?;
            let width = rows.first().map_or(0, |r| r.len());
            if rows.iter().any(|r| r.len() != width) {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            // A column's type is its values' common type, each value cast
            // to it; quoted literals and NULLs (unknown) take it, as
            // PostgreSQL's.
            let mut columns = Vec::with_capacity(width);
            for i in 0..width {
                let types: Vec<Option<DataType>> = rows
                    .iter()
                    .map(|r| {
                        if unknown_literal(&r[i]) {
                            None
                        } else {
                            static_type(&r[i], &[], &p.params)
                        }
                    })
                    .collect();
                let ty = super::common_type::select_common(&types, "VALUES")?;
                for (r, t) in rows.iter_mut().zip(&types) {
                    let cast = match t {
                        Some(t) => super::common_type::needs_cast(t, &ty),
                        None if unknown_literal(&r[i]) => {
                            !matches!(ty, DataType::Text | DataType::Char(_))
                        }
                        None => {
                            if let Expr::Param(k) = r[i] {
                                p.infer_param(k, ty.clone());
                            }
                            false
                        }
                    };
                    if cast {
                        let e = std::mem::replace(&mut r[i], Expr::Lit(Value::Null));
                        r[i] = crate::expr::cast_from(e, t.as_ref(), ty.clone());
                    }
                }
                columns.push(Column {
                    name: format!("column{}", i + 1),
                    ty,
                    origin: None,
                });
            }
            let correlated = rows.iter().flatten().any(|e| e.uses_outer());
            Ok(QueryPlan {
                columns,
                body: Body::Values(rows),
                order: vec![],
                limit: None,
                offset: None,
                limit_mode: LimitMode::default(),
                correlated,
            })
        }
        other => Err(SqlError::unsupported(format!("query {other}"))),
    }
}

/// A quoted literal or NULL, typed by where it goes (PostgreSQL's
/// `unknown`). `text 'x'` is folded to the same literal, so it counts too.
fn unknown_literal(e: &Expr) -> bool {
    matches!(e, Expr::Lit(Value::Text(_) | Value::Null))
}

/// Whether a set operation's branch gives column `i` as an unknown literal:
/// a plain SELECT of one, or (on the right, where PostgreSQL leaves it
/// unresolved) a VALUES list of them.
pub(super) fn unknown_column(plan: &QueryPlan, i: usize, right: bool) -> bool {
    match &plan.body {
        Body::Select(s) if s.srf.is_none() && s.projection.len() == plan.columns.len() => {
            s.projection.get(i).is_some_and(unknown_literal)
        }
        Body::Values(rows) => right && rows.iter().all(|r| r.get(i).is_some_and(unknown_literal)),
        _ => false,
    }
}

/// The type of a set operation branch's column `i`, `None` where
/// PostgreSQL's would be unknown: a quoted literal or NULL left so (both
/// branches' were), a parameter of no type yet, a value of a type the
/// planner cannot tell.
pub(super) fn branch_type(p: &Planner<'_>, plan: &QueryPlan, i: usize) -> Option<DataType> {
    if let Body::Select(s) = &plan.body {
        if s.srf.is_none() && s.projection.len() == plan.columns.len() {
            match &s.projection[i] {
                Expr::Lit(Value::Null) | Expr::Outer(..) => return None,
                Expr::Param(k) if p.params.get(*k).cloned().flatten().is_none() => return None,
                _ => {}
            }
        }
    }
    Some(plan.columns[i].ty.clone())
}

/// A branch's untyped parameter in column `i` takes the set operation's
/// type (`SELECT $1 UNION SELECT 1`: $1 is integer).
fn infer_branch_param(p: &mut Planner<'_>, plan: &QueryPlan, i: usize, ty: &DataType) {
    if let Body::Select(s) = &plan.body {
        if let Some(Expr::Param(k)) = s.projection.get(i) {
            p.infer_param(*k, ty.clone());
        }
    }
}

/// Casts a branch's unknown column `i` to the other branch's type.
pub(super) fn cast_column(plan: &mut QueryPlan, i: usize, ty: DataType) {
    if ty == DataType::Text {
        return;
    }
    let cast = |e: &mut Expr| {
        let lit = std::mem::replace(e, Expr::Lit(Value::Null));
        *e = Expr::Cast(Box::new(lit), ty.clone());
    };
    match &mut plan.body {
        Body::Select(s) => cast(&mut s.projection[i]),
        Body::Values(rows) => rows.iter_mut().for_each(|r| cast(&mut r[i])),
        _ => return,
    }
    plan.columns[i].ty = ty;
}
