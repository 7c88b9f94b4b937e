//! `f(args..., VARIADIC array)`: PostgreSQL's variadic functions called
//! with an array for their variadic arguments. sqlparser has no VARIADIC
//! in calls, so `front/pg_forms.rs` marks the argument with a call of
//! `VARIADIC_MARK`; the call is compiled here and its array spread into
//! the function's last arguments when it runs.

use super::*;
use crate::front::VARIADIC_MARK;

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

/// The argument of `VARIADIC arg`, as the rewrite marked it.
pub(super) fn variadic_marked(e: &ast::Expr) -> Option<&ast::Expr> {
    let ast::Expr::Function(f) = e else {
        return None;
    };
    if fname(f) != VARIADIC_MARK {
        return None;
    }
    match args_of(f).as_slice() {
        [a] => arg_expr(a),
        _ => None,
    }
}

/// `name(args..., VARIADIC array)`.
pub(super) fn compile_variadic(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    name: &str,
    rest: &[&FunctionArg],
    array: &ast::Expr,
) -> Result<Expr> {
    let Some(v) = Variadic::of(name) else {
        return Err(SqlError::unsupported(format!(
            "VARIADIC in a call of {name}()"
        )));
    };
    let mut args = Vec::new();
    for a in rest {
        let e = arg_expr(a)
            .ok_or_else(|| SqlError::syntax(format!("unsupported argument to {name}")))?;
        if variadic_marked(e).is_some() {
            return Err(SqlError::syntax(
                "syntax error: VARIADIC must be the last argument",
            ));
        }
        args.push(Expr::compile(p, scope, e)?);
    }
    if v.func() == Func::Format && args.is_empty() {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            "function format(text[]) does not exist",
        )
        .with_fields(crate::error::ErrorFields {
            hint: Some(
                "No function matches the given name and argument types. \
                 You might need to add explicit type casts."
                    .into(),
            ),
            ..Default::default()
        }));
    }
    let untyped = matches!(array, ast::Expr::Value(x) if matches!(x.value, ast::Value::SingleQuotedString(_)));
    let arr = Expr::compile(p, scope, array)?;
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    match (&arr, crate::query::static_type(&arr, &types, &p.params)) {
        (Expr::Param(i), None) => p.infer_param(*i, DataType::Array(Box::new(DataType::Text))),
        (Expr::Lit(Value::Null), _) | (_, Some(DataType::Array(_))) if !untyped => {}
        _ => {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                "VARIADIC argument must be an array",
            ))
        }
    }
    args.push(arr);
    Ok(Expr::Func(Func::Variadic(v), args))
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
