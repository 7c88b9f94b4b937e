//! Whether a comparison's two operands have an operator, and how they meet.
//!
//! PostgreSQL resolves `a = b` only when an operator takes both types after
//! implicit casts (`bigint = text` is 42883); SQL Server converts the
//! lower type (`varchar = int` compares numbers, `bit = 1` is true for a
//! set bit). Walden's evaluation converts as SQL Server does, so scripts of
//! both kinds run; the plan makes that conversion explicit, or a join's
//! hash keys (an integer and a string) never met while a WHERE on the same
//! columns matched. Pairs neither converts (a date and an integer) are
//! refused as PostgreSQL refuses them. Only operands whose type is certain
//! are judged: columns, casts, typed constants and a subquery's plain
//! column; an untyped literal or a parameter takes the other side's type,
//! as in PostgreSQL.

use super::*;

/// The operand's type when it is certain.
pub(super) fn certain_type(p: &Planner<'_>, scope: &Scope, e: &Expr) -> Option<DataType> {
    match e {
        Expr::Col(_) | Expr::Outer(..) | Expr::Cast(..) => {}
        Expr::Lit(v) if !matches!(v, Value::Text(_) | Value::Null) => {}
        _ => return None,
    }
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    query::scoped_type(e, scope, &types, &p.params)
}

fn symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Eq => "=",
        BinOp::NotEq => "<>",
        BinOp::Lt => "<",
        BinOp::LtEq => "<=",
        BinOp::Gt => ">",
        BinOp::GtEq => ">=",
        _ => "?",
    }
}

/// SQL Server's implicit conversion where PostgreSQL has no operator: a
/// string compared with a number, date, time, uuid or boolean takes the
/// other's type (numbers meet as numeric), a boolean compared with an
/// integer is an integer (`bit = 1`). The runtime's comparison converts
/// the same way (`functions::operators::unify`); doing it in the plan
/// gives a join's hash keys and an index search the same values.
fn converted(from: &DataType, to: &DataType) -> Option<DataType> {
    use DataType as T;
    let string = matches!(from, T::Text | T::Varchar(_) | T::Char(_) | T::Name);
    match to {
        T::SmallInt | T::Int | T::BigInt | T::Decimal { .. } if string => Some(T::Decimal {
            precision: 0,
            scale: 0,
        }),
        T::Real | T::Double if string => Some(T::Double),
        T::Date | T::Timestamp | T::TimestampTz | T::Time | T::Interval | T::Uuid | T::Bool
            if string =>
        {
            Some(to.clone())
        }
        T::SmallInt | T::Int | T::BigInt if matches!(from, T::Bool) => Some(T::Int),
        _ => None,
    }
}

fn refuse(l: &DataType, r: &DataType, op: BinOp) -> Result<()> {
    if query::comparable(l, r) || converted(l, r).is_some() || converted(r, l).is_some() {
        return Ok(());
    }
    Err(SqlError::new(
        ErrorKind::UndefinedFunction,
        format!(
            "operator does not exist: {} {} {}",
            query::type_name(l),
            symbol(op),
            query::type_name(r)
        ),
    ))
}

/// `l op r` for a comparison operator: the operands as they will be
/// compared (one side cast when the two types meet only by conversion).
pub(super) fn reconcile(
    p: &Planner<'_>,
    scope: &Scope,
    l: Expr,
    r: Expr,
    op: BinOp,
) -> Result<(Expr, Expr)> {
    let (Some(a), Some(b)) = (certain_type(p, scope, &l), certain_type(p, scope, &r)) else {
        return Ok((l, r));
    };
    if query::comparable(&a, &b) {
        return Ok((l, r));
    }
    if let Some(t) = converted(&a, &b) {
        return Ok((Expr::Cast(Box::new(l), t), r));
    }
    if let Some(t) = converted(&b, &a) {
        return Ok((l, Expr::Cast(Box::new(r), t)));
    }
    refuse(&a, &b, op).map(|_| (l, r))
}

/// `x = item` of an IN list: refused when no operator or conversion joins
/// the two types (the list's values are compared at run time).
pub(super) fn check(p: &Planner<'_>, scope: &Scope, l: &Expr, r: &Expr, op: BinOp) -> Result<()> {
    match (certain_type(p, scope, l), certain_type(p, scope, r)) {
        (Some(a), Some(b)) => refuse(&a, &b, op),
        _ => Ok(()),
    }
}

/// `x [NOT] IN (subquery)` and `x op ANY|ALL (subquery)`: the subquery's
/// column counts as certain when it reads a table column as it is.
pub(super) fn check_sub(x: Option<DataType>, sub: &Expr, op: BinOp) -> Result<()> {
    let Expr::Sub(s) = sub else { return Ok(()) };
    let Some(col) = s.plan.columns.first() else {
        return Ok(());
    };
    match (x, col.origin.is_some()) {
        (Some(a), true) => refuse(&a, &col.ty, op),
        _ => Ok(()),
    }
}

/// `x op ANY|ALL (array)`: the array's element type against `x`.
pub(super) fn check_array(
    p: &Planner<'_>,
    scope: &Scope,
    x: &Expr,
    arr: &Expr,
    op: BinOp,
) -> Result<()> {
    match (certain_type(p, scope, x), certain_type(p, scope, arr)) {
        (Some(a), Some(DataType::Array(el))) => refuse(&a, &el, op),
        _ => Ok(()),
    }
}
