//! Binding beside an enum (or reg) type: a quoted literal or a parameter
//! next to an enum-typed operand is read as one of its labels.

use super::{Expr, Scope};
use crate::error::{Result, SqlError};
use crate::query::{static_type, Planner};
use crate::types::names::is_enum;
use walden_engine::DataType;

/// `other` beside `typed` (an IN list's item, a BETWEEN bound): when
/// `typed` is of an enum type, a quoted literal or a parameter is read as
/// one of its labels.
pub fn beside(p: &mut Planner<'_>, scope: &Scope, typed: &Expr, other: Expr) -> Result<Expr> {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    match static_type(typed, &types, &p.params) {
        Some(t) if is_enum(&t) => as_label(p, other, t),
        Some(DataType::Reg(_)) => beside_reg(p, other),
        _ => Ok(other),
    }
}

/// Beside a reg type a string is an OID, as PostgreSQL compares reg
/// types with oid's operators (`x::regclass = 't'` is 22P02). Out of line:
/// `beside` is on the compiler's recursion through operator chains.
#[inline(never)]
fn beside_reg(p: &mut Planner<'_>, other: Expr) -> Result<Expr> {
    match other {
        Expr::Lit(walden_engine::Value::Text(s)) => {
            walden_engine::types::coerce(walden_engine::Value::Text(s.clone()), &DataType::Oid)
                .map(Expr::Lit)
                .map_err(|_| {
                    SqlError::new(
                        crate::error::ErrorKind::InvalidText,
                        format!("invalid input syntax for type oid: \"{s}\""),
                    )
                })
        }
        other => as_label(p, other, DataType::Oid),
    }
}

fn as_label(p: &mut Planner<'_>, x: Expr, t: DataType) -> Result<Expr> {
    match x {
        Expr::Lit(v @ walden_engine::Value::Text(_)) => Ok(Expr::Lit(
            walden_engine::types::coerce(v, &t).map_err(SqlError::from)?,
        )),
        Expr::Param(i) => {
            p.infer_param(i, t.clone());
            Ok(Expr::Cast(Box::new(Expr::Param(i)), t))
        }
        other => Ok(other),
    }
}

/// `'label' = ANY (enum_array)`: a quoted literal or a parameter beside an
/// array of enum values is read as one of its labels.
pub fn beside_array(p: &mut Planner<'_>, scope: &Scope, x: Expr, arr: &Expr) -> Result<Expr> {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    match static_type(arr, &types, &p.params) {
        Some(DataType::Array(e)) if is_enum(&e) => as_label(p, x, *e),
        _ => Ok(x),
    }
}
