//! Compiling operators: unary, binary (arithmetic, comparison, concatenation)
//! and `^`.

use super::*;
use crate::functions::bitwise::BitOp;

/// A prefix operator applied to `expr`.
pub(super) fn compile_unary(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    op: &UnaryOperator,
    expr: &ast::Expr,
) -> Result<Expr> {
    Ok({
        let inner = Expr::compile(p, scope, expr)?;
        match op {
            UnaryOperator::Not => Expr::Not(Box::new(inner)),
            UnaryOperator::Minus => match inner {
                Expr::Lit(Value::Int(i)) => Expr::Lit(Value::Int(-i)),
                Expr::Lit(Value::Decimal(d)) => Expr::Lit(Value::Decimal(-d)),
                Expr::Lit(Value::Float(f)) => Expr::Lit(Value::Float(-f)),
                other => narrow_int_result(p, scope, Expr::Neg(Box::new(other))),
            },
            UnaryOperator::Plus => inner,
            UnaryOperator::BitwiseNot => {
                super::bitwise::compile(p, scope, BitOp::Not, None, inner)?
            }
            // `|/ x` and `||/ x` are of double precision only; `@ x` is abs.
            UnaryOperator::PGSquareRoot => {
                Expr::Func(Func::FloatFn(crate::functions::FloatFn::Sqrt), vec![inner])
            }
            UnaryOperator::PGCubeRoot => {
                Expr::Func(Func::FloatFn(crate::functions::FloatFn::Cbrt), vec![inner])
            }
            UnaryOperator::PGAbs => Expr::Func(Func::Abs, vec![inner]),
            other => return Err(SqlError::unsupported(format!("operator {other}"))),
        }
    })
}

/// `left op right`: bitwise, array, JSON and row operators first, then the
/// scalar ones with their operands reconciled.
pub(super) fn compile_binary(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    left: &ast::Expr,
    op: &BinaryOperator,
    right: &ast::Expr,
) -> Result<Expr> {
    Ok({
        if let Some(e) = super::bitwise::bitwise_binary(p, scope, left, op, right)? {
            return Ok(e);
        }
        if let Some(e) = super::array_ops::compile_operator(p, scope, left, op, right)? {
            return Ok(e);
        }
        if let Some(j) = crate::functions::json::operator(op) {
            let l = Expr::compile(p, scope, left)?;
            let r = Expr::compile(p, scope, right)?;
            return Ok(Expr::Func(Func::Json(j), vec![l, r]));
        }
        if let ast::BinaryOperator::PGExp = op {
            return power_operator(p, scope, left, right);
        }
        if let Some(rows) = super::row_compare::rewrite(left, op, right)? {
            return Expr::compile(p, scope, &rows);
        }
        let op = bin_op(op)?;
        let l = Expr::compile(p, scope, left)?;
        let r = Expr::compile(p, scope, right)?;
        if matches!(
            op,
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
        ) {
            record::refuse_comparison(scope, &[&l, &r])?;
        }
        let (l, r) = if matches!(
            op,
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
        ) {
            super::compare_types::reconcile(p, scope, l, r, op)?
        } else {
            (l, r)
        };
        let (l, r) = super::array_ops::coerce_operands(p, scope, l, r)?;
        // Compared with an enum, a literal or parameter is a label
        // (`||` and the rest read it as text).
        let (l, r) = if matches!(
            op,
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
        ) {
            let l = crate::expr::enum_ops::beside(p, scope, &r, l)?;
            let r = crate::expr::enum_ops::beside(p, scope, &l, r)?;
            (l, r)
        } else {
            (l, r)
        };
        if op != BinOp::Concat {
            p.infer_pair(&l, &r, scope);
        }
        // char(n) compares without its trailing blanks, as PostgreSQL's
        // bpchar does ('ab   ' = 'ab').
        let (l, r) = if matches!(
            op,
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
        ) && (is_char(p, scope, &l) || is_char(p, scope, &r))
        {
            (unpad(l), unpad(r))
        } else {
            (l, r)
        };
        let (l, r) = if op == BinOp::Concat {
            concat_operands(p, scope, l, r)?
        } else {
            (l, r)
        };
        let e = Expr::Bin(op, Box::new(l), Box::new(r));
        if matches!(
            op,
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod
        ) {
            narrow_int_result(p, scope, e)
        } else {
            e
        }
    })
}

/// `x ^ y`: power(); numeric ^ numeric (or integer) is numeric there,
/// float8 otherwise (integers and, beside a float, numerics are read as
/// float8, as PostgreSQL resolves them).
fn power_operator(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    left: &ast::Expr,
    right: &ast::Expr,
) -> Result<Expr> {
    let l = Expr::compile(p, scope, left)?;
    let r = Expr::compile(p, scope, right)?;
    Ok(Expr::Func(Func::Power, vec![l, r]))
}

/// Integer arithmetic runs on i64; a result typed int2 or int4 (both
/// operands integers) is checked against its type's range, so
/// `2147483647::int4 * 2::int2` is 22003 as in PostgreSQL.
fn narrow_int_result(p: &Planner<'_>, scope: &Scope, e: Expr) -> Expr {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let ty = |x: &Expr| query::static_type(x, &types, &p.params);
    let int = |t: Option<DataType>| {
        matches!(
            t,
            Some(DataType::SmallInt | DataType::Int | DataType::BigInt)
        )
    };
    let operands_int = match &e {
        Expr::Bin(_, a, b) => int(ty(a)) && int(ty(b)),
        Expr::Neg(a) => int(ty(a)),
        _ => false,
    };
    match ty(&e) {
        Some(t @ (DataType::SmallInt | DataType::Int)) if operands_int => {
            Expr::Cast(Box::new(e), t)
        }
        _ => e,
    }
}
