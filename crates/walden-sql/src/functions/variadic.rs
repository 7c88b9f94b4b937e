//! `f(args..., VARIADIC array)`: PostgreSQL's variadic functions called
//! with an array for their variadic arguments. sqlparser has no VARIADIC
//! in calls, so `front/pg_forms.rs` marks the argument with a call of
//! `VARIADIC_MARK`; the call is compiled in `expr/call.rs` and its array
//! spread into the function's last arguments here when it runs.

use super::*;

/// The functions `VARIADIC array` may call: PostgreSQL's variadic ones
/// Walden has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variadic {
    Format,
    Concat,
    ConcatWs,
    Json(crate::functions::json::JsonFn),
}

impl Variadic {
    /// The function a call names, when it takes `VARIADIC`.
    pub fn of(name: &str) -> Option<Variadic> {
        Some(match name {
            "format" => Variadic::Format,
            "concat" => Variadic::Concat,
            "concat_ws" => Variadic::ConcatWs,
            _ => match crate::functions::json::lookup(name)? {
                j @ (crate::functions::json::JsonFn::BuildObject { .. }
                | crate::functions::json::JsonFn::BuildArray { .. }) => Variadic::Json(j),
                _ => return None,
            },
        })
    }

    pub fn func(self) -> Func {
        match self {
            Variadic::Format => Func::Format,
            Variadic::Concat => Func::Concat,
            Variadic::ConcatWs => Func::ConcatWs,
            Variadic::Json(j) => Func::Json(j),
        }
    }
}

/// `f(..., VARIADIC array)`: the array's elements as the last arguments.
/// A NULL array makes concat, concat_ws and the json builders NULL and
/// gives format no arguments, as PostgreSQL.
pub(super) fn call_variadic(v: Variadic, mut a: Vec<Value>, env: &Env<'_>) -> Result<Value> {
    match a.pop() {
        Some(Value::Array(items)) => a.extend(items.iter().cloned()),
        Some(Value::Null) | None if v == Variadic::Format => {}
        Some(Value::Null) | None => return Ok(Value::Null),
        Some(other) => {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!("VARIADIC argument must be an array, not {other}"),
            ))
        }
    }
    call(v.func(), a, env)
}
