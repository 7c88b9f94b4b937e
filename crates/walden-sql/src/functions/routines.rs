//! Stored routines called from an expression. A PostgreSQL function whose
//! body cannot be inlined into the statement (loops, RAISE, several
//! statements ...) is compiled as `walden_routine('name', args...)`
//! ([`Func::Routine`]); evaluating it calls back into the procedural
//! runtime through the hook the session puts in [`SessionInfo`]. The
//! runtime is a later stage than expression evaluation, so this trait
//! object is the only way down: evaluation knows the trait, the
//! procedural stage implements it.

use super::*;

/// Runs a stored function for one call, in the statement's transaction.
pub trait Routines: Send + Sync {
    /// The function `name`'s result for these arguments (each already of
    /// its parameter's type), cast to its declared result type.
    fn call(&self, env: &Env<'_>, name: &str, args: Vec<Value>) -> Result<Value>;
    /// The rows of a function that gives rows (a set, or a row of named
    /// columns), each cast to `types`: all of them, however many.
    fn call_rows(
        &self,
        env: &Env<'_>,
        name: &str,
        types: &[DataType],
        args: Vec<Value>,
    ) -> Result<Vec<Vec<Value>>>;
}

/// The result columns `walden_routine_set('name', 'cols', args...)`
/// carries in its second argument: `name:type` pairs separated by `;`
/// (an empty name for a function of one unnamed value).
pub fn routine_columns(spec: &str) -> Result<Vec<(Option<String>, DataType)>> {
    spec.split(';')
        .map(|c| {
            let (n, t) = c
                .split_once(':')
                .ok_or_else(|| SqlError::internal("walden_routine_set columns"))?;
            let ty = crate::types::names::parse_type_name(t)?;
            Ok(((!n.is_empty()).then(|| n.to_string()), ty))
        })
        .collect()
}

/// Runs `walden_routine_set` over its argument values (name, columns,
/// then the function's arguments).
pub fn call_routine_rows(a: Vec<Value>, env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
    let mut a = a.into_iter();
    let (Some(Value::Text(name)), Some(Value::Text(spec))) = (a.next(), a.next()) else {
        return Err(SqlError::internal("walden_routine_set without a name"));
    };
    let types: Vec<DataType> = routine_columns(&spec)?
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    match &env.info.routines {
        Some(h) => h.0.call_rows(env, &name, &types, a.collect()),
        None => Err(SqlError::unsupported(format!(
            "a call of function {name}() here (no procedural runtime in this context)"
        ))),
    }
}

/// The session's hook (cheap to clone with the session's info).
#[derive(Clone)]
pub struct RoutineHook(pub Arc<dyn Routines>);

impl std::fmt::Debug for RoutineHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RoutineHook")
    }
}

/// Evaluates `walden_routine('name', args...)`.
pub(super) fn call_routine(a: Vec<Value>, env: &Env<'_>) -> Result<Value> {
    let mut a = a.into_iter();
    let name = match a.next() {
        Some(Value::Text(n)) => n.to_string(),
        _ => return Err(SqlError::internal("walden_routine without a name")),
    };
    match &env.info.routines {
        Some(h) => h.0.call(env, &name, a.collect()),
        None => Err(SqlError::unsupported(format!(
            "a call of function {name}() here (no procedural runtime in this context)"
        ))),
    }
}
