//! Binding the bitwise operators (`&`, `|`, `#`, `~`, `<<`, `>>`): the
//! integer width each operand's type asks for, as PostgreSQL picks the
//! operator.

use super::*;
use crate::functions::bitwise::{BitOp, IntWidth};
use crate::query::static_type;

/// What an operand's type says about the operator to pick.
enum Operand {
    /// An integer of this width.
    Int(IntWidth),
    /// A quoted literal or an untyped parameter: it takes the type the
    /// other operand asks for, as PostgreSQL's `unknown` does.
    Unknown,
    /// Any other type, by its SQL name (for the error).
    Other(String),
}

fn operand(p: &Planner<'_>, scope: &Scope, e: &Expr) -> Operand {
    if matches!(e, Expr::Lit(Value::Text(_)) | Expr::Lit(Value::Null)) {
        return Operand::Unknown;
    }
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    match static_type(e, &types, &p.params) {
        None => Operand::Unknown,
        Some(t) => match IntWidth::of(&t) {
            Some(w) => Operand::Int(w),
            // Named without a type modifier, as PostgreSQL's error does.
            None => Operand::Other(crate::types::regtype_name(
                crate::types::type_oid_and_mod(&t).0,
            )),
        },
    }
}

fn name(o: &Operand) -> String {
    match o {
        Operand::Int(w) => w.data_type().sql_name(),
        Operand::Unknown => "unknown".into(),
        Operand::Other(n) => n.clone(),
    }
}

fn no_operator(op: BitOp, l: Option<&Operand>, r: &Operand) -> SqlError {
    let text = match l {
        Some(l) => format!("{} {} {}", name(l), op.symbol(), name(r)),
        None => format!("{} {}", op.symbol(), name(r)),
    };
    SqlError::new(
        ErrorKind::UndefinedFunction,
        format!("operator does not exist: {text}"),
    )
}

/// Gives an unknown operand the type `w`: a parameter is typed, a quoted
/// literal is read as an integer of that width.
fn settle(p: &mut Planner<'_>, e: Expr, w: IntWidth) -> Expr {
    match e {
        Expr::Param(i) => {
            p.infer_param(i, w.data_type());
            Expr::Cast(Box::new(Expr::Param(i)), w.data_type())
        }
        Expr::Lit(Value::Null) => e,
        other => Expr::Cast(Box::new(other), w.data_type()),
    }
}

/// Compiles `l op r` (or `~ r` when `l` is None).
pub fn compile(
    p: &mut Planner<'_>,
    scope: &Scope,
    op: BitOp,
    l: Option<Expr>,
    r: Expr,
) -> Result<Expr> {
    let ro = operand(p, scope, &r);
    let Some(l) = l else {
        return match ro {
            Operand::Int(w) => Ok(Expr::Func(Func::Bitwise(op, w), vec![r])),
            // ~ exists for several types (integers, bit strings, inet).
            Operand::Unknown => Err(SqlError::new(
                ErrorKind::AmbiguousFunction,
                "operator is not unique: ~ unknown",
            )),
            Operand::Other(_) => Err(no_operator(op, None, &ro)),
        };
    };
    let lo = operand(p, scope, &l);
    if matches!(op, BitOp::Shl | BitOp::Shr) {
        // int2shl, int4shl, int8shl: the count is an integer (a smallint
        // widens to one; a bigint does not narrow).
        let w = match (&lo, &ro) {
            (Operand::Int(w), Operand::Int(IntWidth::W16 | IntWidth::W32) | Operand::Unknown) => *w,
            (Operand::Unknown, Operand::Int(IntWidth::W16 | IntWidth::W32)) => IntWidth::W32,
            (Operand::Unknown, Operand::Unknown) => {
                return Err(SqlError::new(
                    ErrorKind::AmbiguousFunction,
                    format!("operator is not unique: unknown {} unknown", op.symbol()),
                ))
            }
            _ => return Err(no_operator(op, Some(&lo), &ro)),
        };
        let l = if matches!(lo, Operand::Unknown) {
            settle(p, l, w)
        } else {
            l
        };
        let r = if matches!(ro, Operand::Unknown) {
            settle(p, r, IntWidth::W32)
        } else {
            r
        };
        return Ok(Expr::Func(Func::Bitwise(op, w), vec![l, r]));
    }
    let w = match (&lo, &ro) {
        (Operand::Int(a), Operand::Int(b)) => (*a).max(*b),
        (Operand::Int(w), Operand::Unknown) | (Operand::Unknown, Operand::Int(w)) => *w,
        (Operand::Unknown, Operand::Unknown) => {
            return Err(SqlError::new(
                ErrorKind::AmbiguousFunction,
                format!("operator is not unique: unknown {} unknown", op.symbol()),
            ))
        }
        _ => return Err(no_operator(op, Some(&lo), &ro)),
    };
    let l = if matches!(lo, Operand::Unknown) {
        settle(p, l, w)
    } else {
        l
    };
    let r = if matches!(ro, Operand::Unknown) {
        settle(p, r, w)
    } else {
        r
    };
    Ok(Expr::Func(Func::Bitwise(op, w), vec![l, r]))
}

/// `l op r` when the bitwise operators decide it: a bitwise `op`, or a
/// `~` that takes `op r` into its operand. Out of line, so that
/// `Expr::compile`'s frame (stacked once per level of a deep expression)
/// does not grow with it.
#[inline(never)]
pub(super) fn bitwise_binary(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    left: &ast::Expr,
    op: &ast::BinaryOperator,
    right: &ast::Expr,
) -> Result<Option<Expr>> {
    if let Some(e) = functions::bitwise::regroup_prefix(left, op, right) {
        return Expr::compile(p, scope, &e).map(Some);
    }
    let Some(b) = bit_op(op) else {
        return Ok(None);
    };
    let l = Expr::compile(p, scope, left)?;
    let r = Expr::compile(p, scope, right)?;
    super::bitwise::compile(p, scope, b, Some(l), r).map(Some)
}

/// The integer bitwise operator `op` names, written bare or as
/// `OPERATOR(pg_catalog.op)`.
fn bit_op(op: &ast::BinaryOperator) -> Option<BitOp> {
    match op {
        ast::BinaryOperator::PGCustomBinaryOperator(parts) => match parts.as_slice() {
            [o] => BitOp::from_name(o),
            [schema, o] if schema.trim_matches('"') == "pg_catalog" => BitOp::from_name(o),
            _ => None,
        },
        other => BitOp::from_binary(other),
    }
}
