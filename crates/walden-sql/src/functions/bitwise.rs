//! PostgreSQL's integer bitwise operators: `&`, `|`, `#` (xor), prefix
//! `~`, `<<` and `>>` on smallint, integer and bigint.
//!
//! PostgreSQL has one operator per width (int2and, int4and, int8and, ...),
//! so a mixed pair is widened to the wider operand and the result has that
//! type; a shift's count is always an integer. Values are `Value::Int`
//! whatever the width, so the width is fixed when the operator is compiled
//! and decides how a shift wraps.

use super::*;
use sqlparser::ast::{BinaryOperator, UnaryOperator};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
    Shl,
    Shr,
}

impl BitOp {
    pub fn from_binary(op: &BinaryOperator) -> Option<BitOp> {
        use BinaryOperator as B;
        Some(match op {
            B::BitwiseAnd => BitOp::And,
            B::BitwiseOr => BitOp::Or,
            B::PGBitwiseXor => BitOp::Xor,
            B::PGBitwiseShiftLeft => BitOp::Shl,
            B::PGBitwiseShiftRight => BitOp::Shr,
            _ => return None,
        })
    }

    /// The operator named inside `OPERATOR(pg_catalog.op)`.
    pub fn from_name(op: &str) -> Option<BitOp> {
        Some(match op {
            "&" => BitOp::And,
            "|" => BitOp::Or,
            "#" => BitOp::Xor,
            "<<" => BitOp::Shl,
            ">>" => BitOp::Shr,
            _ => return None,
        })
    }

    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BitOp::And => "&",
            BitOp::Or => "|",
            BitOp::Xor => "#",
            BitOp::Not => "~",
            BitOp::Shl => "<<",
            BitOp::Shr => ">>",
        }
    }
}

/// The integer type an operator works in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IntWidth {
    W16,
    W32,
    W64,
}

impl IntWidth {
    pub(crate) fn of(t: &DataType) -> Option<IntWidth> {
        Some(match t {
            DataType::SmallInt => IntWidth::W16,
            DataType::Int => IntWidth::W32,
            DataType::BigInt => IntWidth::W64,
            _ => return None,
        })
    }

    pub fn data_type(self) -> DataType {
        match self {
            IntWidth::W16 => DataType::SmallInt,
            IntWidth::W32 => DataType::Int,
            IntWidth::W64 => DataType::BigInt,
        }
    }
}

/// Evaluates the operator over integer values (NULL in, NULL out).
pub fn call(op: BitOp, w: IntWidth, a: &[Value]) -> Result<Value> {
    let int = |i: usize| -> Result<Option<i64>> {
        match a.get(i) {
            Some(Value::Int(v)) => Ok(Some(*v)),
            Some(Value::Null) | None => Ok(None),
            Some(other) => cast(other.clone(), &w.data_type()).map(|v| v.as_i64()),
        }
    };
    let Some(x) = int(0)? else {
        return Ok(Value::Null);
    };
    if op == BitOp::Not {
        return Ok(Value::Int(!x));
    }
    let Some(y) = int(1)? else {
        return Ok(Value::Null);
    };
    // Operands are in range for `w`, so and/or/xor stay in range. Shifts
    // wrap as PostgreSQL's C code does on its hardware: the count taken
    // modulo the register width (32 bits for smallint and integer, 64 for
    // bigint), a smallint result truncated to 16 bits.
    let c = y as u32;
    Ok(Value::Int(match op {
        BitOp::And => x & y,
        BitOp::Or => x | y,
        BitOp::Xor => x ^ y,
        BitOp::Not => unreachable!("handled above"),
        BitOp::Shl => match w {
            IntWidth::W16 => (x as i32).wrapping_shl(c) as i16 as i64,
            IntWidth::W32 => (x as i32).wrapping_shl(c) as i64,
            IntWidth::W64 => x.wrapping_shl(c),
        },
        BitOp::Shr => match w {
            IntWidth::W16 => (x as i32).wrapping_shr(c) as i16 as i64,
            IntWidth::W32 => (x as i32).wrapping_shr(c) as i64,
            IntWidth::W64 => x.wrapping_shr(c),
        },
    }))
}

/// PostgreSQL parses a prefix operator's operand up to the next operator
/// of its own precedence, so `~ 1 + 2` is `~ (1 + 2)`; sqlparser stops at
/// `+` and `-` and reads `(~ 1) + 2`. This regroups `l op r` (op being
/// `+` or `-`) when a bare `~` ends `l`'s right-hand edge, `l` regrouped
/// first (`~ 1 + 2 - 3` is `~ ((1 + 2) - 3)`).
pub fn regroup_prefix(l: &ast::Expr, op: &BinaryOperator, r: &ast::Expr) -> Option<ast::Expr> {
    if !is_additive(op) || !needs_regroup(l) {
        return None;
    }
    rebuild(&regrouped(l), op, r)
}

/// Whether regrouping `l op r` changes anything: a bare `~` ends the
/// right-hand edge of `l` or of a left operand down `l`'s `+` / `-` chain.
/// It walks without copying: compile asks at every level of a chain, and
/// copying the chain each time made a long `1 + 1 + ...` quadratic.
fn needs_regroup(l: &ast::Expr) -> bool {
    let mut e = l;
    loop {
        if ends_in_not(e) {
            return true;
        }
        match e {
            ast::Expr::BinaryOp { left, op, .. } if is_additive(op) => e = left,
            _ => return false,
        }
    }
}

/// Whether a bare `~` ends `e`'s right-hand edge (where [`rebuild`] finds one).
fn ends_in_not(e: &ast::Expr) -> bool {
    let mut e = e;
    loop {
        match e {
            ast::Expr::UnaryOp {
                op: UnaryOperator::BitwiseNot,
                ..
            } => return true,
            ast::Expr::BinaryOp { op, right, .. } if binds_tight(op) => e = right,
            _ => return false,
        }
    }
}

/// Operators that bind at least as tightly as `+`.
fn binds_tight(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Plus
            | BinaryOperator::Minus
            | BinaryOperator::Multiply
            | BinaryOperator::Divide
            | BinaryOperator::Modulo
            | BinaryOperator::PGExp
    )
}

fn is_additive(op: &BinaryOperator) -> bool {
    matches!(op, BinaryOperator::Plus | BinaryOperator::Minus)
}

/// `e` with its own `+` / `-` chain regrouped.
fn regrouped(e: &ast::Expr) -> ast::Expr {
    match e {
        ast::Expr::BinaryOp { left, op, right } if is_additive(op) => {
            let l = regrouped(left);
            rebuild(&l, op, right).unwrap_or_else(|| ast::Expr::BinaryOp {
                left: Box::new(l),
                op: op.clone(),
                right: right.clone(),
            })
        }
        other => other.clone(),
    }
}

/// `e op r` with `op r` moved into the operand of the `~` that ends `e`'s
/// right-hand edge; None when no bare `~` ends it.
fn rebuild(e: &ast::Expr, op: &BinaryOperator, r: &ast::Expr) -> Option<ast::Expr> {
    use ast::Expr as A;
    match e {
        A::UnaryOp {
            op: UnaryOperator::BitwiseNot,
            expr,
        } => Some(A::UnaryOp {
            op: UnaryOperator::BitwiseNot,
            expr: Box::new(rebuild(expr, op, r).unwrap_or_else(|| A::BinaryOp {
                left: expr.clone(),
                op: op.clone(),
                right: Box::new(r.clone()),
            })),
        }),
        // Operators that bind at least as tightly as `+` keep their left
        // side; a `~` at the end of their right side takes `op r` along.
        A::BinaryOp {
            left,
            op: inner,
            right,
        } if binds_tight(inner) => Some(A::BinaryOp {
            left: left.clone(),
            op: inner.clone(),
            right: Box::new(rebuild(right, op, r)?),
        }),
        _ => None,
    }
}
