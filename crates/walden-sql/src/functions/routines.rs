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
