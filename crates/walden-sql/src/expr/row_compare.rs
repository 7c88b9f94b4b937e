//! Row-wise comparison: `(a, b) < (c, d)`, `ROW(a, b) = ROW(c, d)`,
//! `(a, b) IN ((1, 2), (3, 4))`, as PostgreSQL defines them, rewritten into
//! comparisons of the fields before binding.
//!
//! `=` is every pair equal, `<>` any pair unequal; an ordering compares the
//! pairs from the left and decides at the first pair that is not equal (or
//! is NULL: the result is then NULL). `a < c OR (a = c AND b < d)` gives
//! exactly that, NULLs included. The first pair's bound (`a <= c`) is added
//! beside it, implied and so harmless, so that an index on the leading
//! column serves keyset pagination (`WHERE (created, id) > ($1, $2)`).

use super::*;
use ast::{BinaryOperator as Op, Expr as A};

/// The fields of a row constructor written as such: `(a, b)` or
/// `ROW(a, ...)`.
fn row_items(e: &ast::Expr) -> Option<Vec<ast::Expr>> {
    match e {
        A::Tuple(items) if items.len() >= 2 => Some(items.clone()),
        A::Nested(inner) => row_items(inner),
        A::Function(f) if crate::front::fname(f).eq_ignore_ascii_case("row") => {
            crate::front::args_of(f)
                .into_iter()
                .map(|a| crate::front::arg_expr(a).cloned())
                .collect()
        }
        _ => None,
    }
}

fn bin(l: ast::Expr, op: Op, r: ast::Expr) -> ast::Expr {
    A::BinaryOp {
        left: Box::new(l),
        op,
        right: Box::new(r),
    }
}

fn nested(e: ast::Expr) -> ast::Expr {
    A::Nested(Box::new(e))
}

fn unequal_lengths() -> SqlError {
    SqlError::new(
        ErrorKind::Syntax,
        "unequal number of entries in row expressions",
    )
}

/// `left op right` over two row constructors, as a comparison of their
/// fields; `None` when they are not both rows or `op` is no comparison.
pub(super) fn rewrite(left: &ast::Expr, op: &Op, right: &ast::Expr) -> Result<Option<ast::Expr>> {
    if !matches!(
        op,
        Op::Eq | Op::NotEq | Op::Lt | Op::LtEq | Op::Gt | Op::GtEq
    ) {
        return Ok(None);
    }
    let (Some(l), Some(r)) = (row_items(left), row_items(right)) else {
        return Ok(None);
    };
    if l.len() != r.len() {
        return Err(unequal_lengths());
    }
    let pairs: Vec<(ast::Expr, ast::Expr)> = l.into_iter().zip(r).collect();
    Ok(Some(match op {
        Op::Eq | Op::NotEq => {
            let join = if *op == Op::Eq { Op::And } else { Op::Or };
            pairs
                .into_iter()
                .map(|(a, b)| nested(bin(a, op.clone(), b)))
                .reduce(|acc, c| bin(acc, join.clone(), c))
                .expect("a row has two fields or more")
        }
        _ => {
            let strict = match op {
                Op::Lt | Op::LtEq => Op::Lt,
                _ => Op::Gt,
            };
            let bound = match op {
                Op::Lt | Op::LtEq => Op::LtEq,
                _ => Op::GtEq,
            };
            // From the last pair outwards: a_i < c_i OR (a_i = c_i AND rest).
            let mut rest: Option<ast::Expr> = None;
            for (a, b) in pairs.iter().rev() {
                rest = Some(match rest {
                    None => nested(bin(a.clone(), op.clone(), b.clone())),
                    Some(tail) => nested(bin(
                        nested(bin(a.clone(), strict.clone(), b.clone())),
                        Op::Or,
                        nested(bin(
                            nested(bin(a.clone(), Op::Eq, b.clone())),
                            Op::And,
                            tail,
                        )),
                    )),
                });
            }
            let (a, b) = pairs[0].clone();
            bin(
                nested(bin(a, bound, b)),
                Op::And,
                rest.expect("a row has two fields or more"),
            )
        }
    }))
}

/// `row [NOT] IN (row, row, ...)` as equalities of rows OR-ed together;
/// `None` unless the operand and every item are row constructors.
pub(super) fn rewrite_in(
    expr: &ast::Expr,
    list: &[ast::Expr],
    negated: bool,
) -> Result<Option<ast::Expr>> {
    if row_items(expr).is_none() || list.is_empty() || list.iter().any(|i| row_items(i).is_none()) {
        return Ok(None);
    }
    let mut any: Option<ast::Expr> = None;
    for item in list {
        let eq = rewrite(expr, &Op::Eq, item)?.expect("both are rows");
        let eq = nested(eq);
        any = Some(match any {
            None => eq,
            Some(acc) => bin(acc, Op::Or, eq),
        });
    }
    let any = nested(any.expect("the list is not empty"));
    Ok(Some(if negated {
        A::UnaryOp {
            op: ast::UnaryOperator::Not,
            expr: Box::new(any),
        }
    } else {
        any
    }))
}
