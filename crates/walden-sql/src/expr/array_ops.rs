//! Binding the array operators: `@>`, `<@`, `&&` between arrays (jsonb's
//! otherwise), and the unknown-typed operand beside an array.

use super::Expr;
use super::Scope;
use crate::error::{Result, SqlError};
use crate::functions::Func;
use crate::query::{static_type, Planner};
use crate::types::names::involves_enum;
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::{DataType, Value};

/// The static type of `e` in `scope`.
fn type_of(p: &Planner<'_>, scope: &Scope, e: &Expr) -> Option<DataType> {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    static_type(e, &types, &p.params)
}

/// Beside an array, a quoted literal is an array of that type and a
/// parameter takes that type, as PostgreSQL resolves unknown-typed
/// operands (`a = '{1,2}'`, `a || '{3}'`; `a || '3'` is 22P02 there too).
pub fn coerce_operands(
    p: &mut Planner<'_>,
    scope: &Scope,
    l: Expr,
    r: Expr,
) -> Result<(Expr, Expr)> {
    // Only a quoted literal or a parameter is typed by its neighbour; the
    // neighbour's type is not worked out otherwise (long operator chains
    // would pay for it at every level).
    let open = |e: &Expr| matches!(e, Expr::Lit(Value::Text(_)) | Expr::Param(_));
    if !open(&l) && !open(&r) {
        return Ok((l, r));
    }
    let (tl, tr) = (type_of(p, scope, &l), type_of(p, scope, &r));
    let fix = |p: &mut Planner<'_>, e: Expr, t: &DataType| -> Result<Expr> {
        Ok(match e {
            Expr::Lit(v @ Value::Text(_)) => {
                Expr::Lit(walden_engine::types::coerce(v, t).map_err(SqlError::from)?)
            }
            Expr::Param(i) => {
                p.infer_param(i, t.clone());
                // An enum array's labels are known here, not where the
                // value arrives: the parameter is read as one.
                if involves_enum(t) {
                    Expr::Cast(Box::new(Expr::Param(i)), t.clone())
                } else {
                    Expr::Param(i)
                }
            }
            other => other,
        })
    };
    let typed = |t: &Option<DataType>| matches!(t, Some(DataType::Array(_)));
    Ok(match (&tl, &tr) {
        (Some(t), _) if typed(&tl) => (l, fix(p, r, t)?),
        (_, Some(t)) if typed(&tr) => (fix(p, l, t)?, r),
        _ => (l, r),
    })
}

/// `@>`, `<@` and `&&` between arrays (`@>` and `<@` on anything else are
/// jsonb's); `None` for other operators.
pub fn compile_operator(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    left: &ast::Expr,
    op: &ast::BinaryOperator,
    right: &ast::Expr,
) -> Result<Option<Expr>> {
    use ast::BinaryOperator as B;
    if !matches!(op, B::AtArrow | B::ArrowAt | B::PGOverlap) {
        return Ok(None);
    }
    let l = Expr::compile(p, scope, left)?;
    let r = Expr::compile(p, scope, right)?;
    let is_array = |t: Option<DataType>| matches!(t, Some(DataType::Array(_)));
    if !matches!(op, B::PGOverlap)
        && !is_array(type_of(p, scope, &l))
        && !is_array(type_of(p, scope, &r))
    {
        let j = crate::functions::json::operator(op).expect("@> and <@ are json operators");
        return Ok(Some(Expr::Func(Func::Json(j), vec![l, r])));
    }
    let (l, r) = coerce_operands(p, scope, l, r)?;
    let f = match op {
        B::AtArrow => Func::ArrayContains(false),
        B::ArrowAt => Func::ArrayContains(true),
        _ => Func::ArrayOverlap,
    };
    Ok(Some(Expr::Func(f, vec![l, r])))
}
