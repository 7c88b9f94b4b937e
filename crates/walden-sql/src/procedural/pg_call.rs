//! PostgreSQL functions that run rather than inline: one call runs the
//! body on the runtime with its parameters bound as variables, and the
//! RETURN value cast to the declared type.
//!
//! Two ways reach it:
//! - a statement that is one call (`SELECT f(args)`, which is also what
//!   PERFORM, `x := f(...)` and `RETURN f(...)` evaluate) runs the body on
//!   the caller's runtime and host ([`Runner::direct_call`]): its data
//!   changes and exception blocks are those of any statement;
//! - a call inside a larger expression (a WHERE clause, a select list over
//!   a FROM, VALUES ...) is compiled as `walden_routine('f', args...)`;
//!   evaluating that calls [`Routines::call`] through the hook in the
//!   session's `SessionInfo` (expression evaluation is an earlier stage
//!   and cannot name the runtime). The hook runs the body on a [`Nested`]
//!   host that plans and runs the body's queries in the caller's
//!   transaction, read-only: it holds the transaction shared while the
//!   caller's statement reads. A data change, a savepoint (EXCEPTION
//!   block) or transaction control there is refused (0A000).

use super::*;
use crate::catalog::privileges::Who;
use crate::front::plpgsql::{parse_plpgsql, Lang, PgFunc};
use crate::functions::{Env, RoutineHook, Routines};
use crate::query::{Planner, QueryPlan};
use sqlparser::ast::Statement;
use std::cell::Cell;
use std::sync::Mutex;

/// A cached plan's key: the command's address and its parameters' types.
type PlanKey = (usize, Vec<Option<DataType>>);

/// Calls of PostgreSQL functions inside one another at most (PostgreSQL
/// bounds them by `max_stack_depth`; 54001 either way).
pub const MAX_PG_DEPTH: usize = 200;

thread_local! {
    /// PostgreSQL function calls active on this thread (both ways).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// The session's hook for one statement.
pub fn routine_hook(who: Who, db: Arc<walden_engine::Database>) -> RoutineHook {
    RoutineHook(Arc::new(PgRoutines {
        who,
        db,
        defs: Mutex::new(HashMap::new()),
        parsed: ParseCache::default(),
        plans: Mutex::new(HashMap::new()),
    }))
}

/// Statement texts of routine bodies parsed once per outer statement
/// (functions' and triggers' hosts share it).
#[derive(Default)]
pub(super) struct ParseCache(Mutex<HashMap<String, Arc<Command>>>);

impl ParseCache {
    pub(super) fn parse(&self, sql: &str) -> Result<Arc<Command>> {
        if let Some(c) = self.0.lock().ok().and_then(|p| p.get(sql).cloned()) {
            return Ok(c);
        }
        let c = Arc::new(crate::front::parse(sql)?);
        if let Ok(mut p) = self.0.lock() {
            p.insert(sql.to_string(), c.clone());
        }
        Ok(c)
    }
}

/// Runs functions for one statement; its caches live as long (the
/// statement changes no definition: a nested body cannot run DDL).
struct PgRoutines {
    who: Who,
    db: Arc<walden_engine::Database>,
    defs: Mutex<HashMap<String, Option<Arc<PgFunc>>>>,
    parsed: ParseCache,
    plans: Mutex<HashMap<PlanKey, Arc<QueryPlan>>>,
}

impl Routines for PgRoutines {
    fn call(&self, env: &Env<'_>, name: &str, args: Vec<Value>) -> Result<Value> {
        let mut host = Nested {
            env,
            owner: self,
            state: TsqlState::default(),
        };
        let mut r = Runner::new(&mut host);
        r.pg = true;
        let f = self.definition(&mut r, name)?;
        r.call_pg_func(&f, args)
    }

    fn call_rows(
        &self,
        env: &Env<'_>,
        name: &str,
        types: &[DataType],
        args: Vec<Value>,
    ) -> Result<Vec<Vec<Value>>> {
        let mut host = Nested {
            env,
            owner: self,
            state: TsqlState::default(),
        };
        let mut r = Runner::new(&mut host);
        r.pg = true;
        let f = self.definition(&mut r, name)?;
        r.call_pg_rows(&f, types, args)
    }
}

impl PgRoutines {
    /// The function `name`'s definition (read once per statement).
    fn definition(&self, r: &mut Runner<'_, Nested<'_, '_>>, name: &str) -> Result<Arc<PgFunc>> {
        let cached = self.defs.lock().ok().and_then(|d| d.get(name).cloned());
        let f = match cached {
            Some(f) => f,
            None => {
                let f = r
                    .func_definition(name)?
                    .and_then(|d| crate::front::plpgsql::parse_pg_function(&d))
                    .map(Arc::new);
                if let Ok(mut d) = self.defs.lock() {
                    d.insert(name.to_string(), f.clone());
                }
                f
            }
        };
        f.ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedFunction,
                format!("function {name} does not exist"),
            )
        })
    }
}

/// The host a function called from inside a query runs on.
struct Nested<'e, 'a> {
    env: &'e Env<'a>,
    owner: &'e PgRoutines,
    state: TsqlState,
}

fn refuse_nested(what: &str) -> SqlError {
    SqlError::unsupported(format!(
        "{what} in a function called from inside a query (Walden runs a function's data changes, EXCEPTION blocks and transaction control when the call is a statement of its own: SELECT f(...), PERFORM f(...), x := f(...))"
    ))
}

impl Host for Nested<'_, '_> {
    fn parse(&mut self, sql: &str) -> Result<Arc<Command>> {
        self.owner.parsed.parse(sql)
    }

    fn run(&mut self, cmd: &Arc<Command>, params: &[Value]) -> Result<QueryOutput> {
        self.run_typed(cmd, params, &[])
    }

    fn run_typed(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
        types: &[Option<DataType>],
    ) -> Result<QueryOutput> {
        self.check_cancel()?;
        let q = match cmd.as_ref() {
            Command::Sql(s) => match s.as_ref() {
                Statement::Query(q)
                    if !crate::dml::locking::wanted(q)
                        && crate::dml::is_merge(q).is_none()
                        && crate::catalog::create_as::select_into(q).is_none() =>
                {
                    q
                }
                other => {
                    let text = other.to_string();
                    let head = text.split_whitespace().next().unwrap_or("a statement");
                    return Err(refuse_nested(&head.to_ascii_uppercase()));
                }
            },
            _ => return Err(refuse_nested("transaction control or a savepoint")),
        };
        // A plan is made for its parameters' types.
        let key = (Arc::as_ptr(cmd) as usize, types.to_vec());
        let cached = self
            .owner
            .plans
            .lock()
            .ok()
            .and_then(|p| p.get(&key).cloned());
        let plan = match cached {
            Some(p) => p,
            None => {
                let info = self.env.info;
                let mut p = Planner::new(self.owner.db.clone(), info.system, types);
                p.viewer = Some(self.env.tx.id());
                p.path = info.path.clone();
                let plan = Arc::new(crate::query::plan_query(&mut p, q, None)?);
                let needs = crate::catalog::privileges::needs(cmd, &p);
                crate::catalog::privileges::require(&self.owner.who, self.owner.db.id(), &needs)?;
                if let Ok(mut m) = self.owner.plans.lock() {
                    m.insert(key, plan.clone());
                }
                plan
            }
        };
        let env = Env {
            params,
            outer: &[],
            tx: self.env.tx,
            info: self.env.info,
            cancel: self.env.cancel,
            instance: self.env.instance,
        };
        let rows = crate::query::execute_plan(&plan, &env, None)?;
        Ok(QueryOutput {
            tag: format!("SELECT {}", rows.len()),
            columns: Some(plan.columns.clone()),
            rows,
            ..Default::default()
        })
    }

    fn in_transaction(&self) -> bool {
        true
    }

    fn transaction_failed(&self) -> bool {
        false
    }

    fn doom(&mut self) {}

    fn doomed(&self) -> bool {
        false
    }

    fn check_cancel(&self) -> Result<()> {
        if self.env.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SqlError::new(
                ErrorKind::Cancelled,
                "canceling statement due to user request",
            ));
        }
        Ok(())
    }

    fn state(&mut self) -> &mut TsqlState {
        &mut self.state
    }
}

/// Leaves the depth count as it was when dropped.
struct Depth;

impl Depth {
    fn enter() -> Result<Depth> {
        let d = DEPTH.with(|c| {
            c.set(c.get() + 1);
            c.get()
        });
        let guard = Depth;
        if d > MAX_PG_DEPTH {
            return Err(SqlError::new(
                ErrorKind::StackDepth,
                format!(
                    "stack depth limit exceeded: more than {MAX_PG_DEPTH} nested function calls"
                ),
            )
            .with_fields(crate::error::ErrorFields {
                hint: Some("A function probably calls itself without end.".into()),
                ..Default::default()
            }));
        }
        Ok(guard)
    }
}

impl Drop for Depth {
    fn drop(&mut self) {
        DEPTH.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

impl<'h, H: Host> Runner<'h, H> {
    /// One call of a PostgreSQL function: the arguments bound as its
    /// parameters' variables, the body run, the RETURN value cast to the
    /// declared type.
    pub(super) fn call_pg_func(&mut self, f: &PgFunc, args: Vec<Value>) -> Result<Value> {
        if f.is_trigger() {
            return Err(SqlError::unsupported(
                "trigger functions can only be called as triggers",
            ));
        }
        let ret_ty = crate::types::names::parse_type_name(&f.returns)?;
        if f.strict && args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        let (v, _) = self.invoke_pg(f, args)?;
        crate::functions::cast(v.unwrap_or(Value::Null), &ret_ty)
    }

    /// Runs a routine's body over its arguments: its value (a function's;
    /// none for a procedure) and its variables as they ended.
    pub(super) fn invoke_pg(
        &mut self,
        f: &PgFunc,
        args: Vec<Value>,
    ) -> Result<(Option<Value>, HashMap<String, Var>)> {
        let mut frame = HashMap::new();
        for (p, v) in f.params.iter().zip(args) {
            let ty = crate::types::names::parse_type_name(&p.ty)?;
            let value = crate::functions::cast(v, &ty)?;
            frame.insert(p.name.clone(), Var { ty, value });
        }
        // OUT parameters are variables that start NULL.
        for o in &f.out {
            if !frame.contains_key(&o.name) {
                let ty = crate::types::names::parse_type_name(&o.ty)?;
                frame.insert(
                    o.name.clone(),
                    Var {
                        ty,
                        value: Value::Null,
                    },
                );
            }
        }
        self.invoke_frame(f, frame)
    }

    /// Runs a routine's body with its variables `frame` (parameters, or a
    /// trigger's NEW / OLD fields and TG_ values).
    pub(super) fn invoke_frame(
        &mut self,
        f: &PgFunc,
        mut frame: HashMap<String, Var>,
    ) -> Result<(Option<Value>, HashMap<String, Var>)> {
        let _depth = Depth::enter()?;
        frame.insert(
            "@found".into(),
            Var {
                ty: DataType::Bool,
                value: Value::Bool(false),
            },
        );
        let was_pg = self.pg;
        let saved_ret = self.pg_ret.take();
        // A function that gives rows runs with its caller's sink (made for
        // it); any other has none.
        let saved_sink = if f.gives_rows() {
            None
        } else {
            self.sink.take()
        };
        self.pg = true;
        self.in_func += 1;
        self.frames.push(frame);
        self.temps.push(Vec::new());
        self.tables.push(HashMap::new());
        let r = stacker::maybe_grow(256 * 1024, 2 * 1024 * 1024, || self.func_body(f));
        let frame = self.frames.pop().unwrap_or_default();
        self.temps.pop();
        self.tables.pop();
        self.in_func -= 1;
        self.pg = was_pg;
        let ret = std::mem::replace(&mut self.pg_ret, saved_ret);
        if !f.gives_rows() {
            self.sink = saved_sink;
        }
        let v = match (r?, f.lang) {
            (Some(v), _) => Some(v),
            (None, _) if f.procedure || f.gives_rows() => None,
            (None, Lang::Plpgsql) => match ret {
                Some(v) => Some(v),
                None => {
                    return Err(SqlError::new(
                        ErrorKind::FunctionNoReturn,
                        format!(
                            "control reached end of function without RETURN (function {})",
                            f.name
                        ),
                    ))
                }
            },
            (None, Lang::Sql) => None,
        };
        Ok((v, frame))
    }

    /// Runs the body: a LANGUAGE sql body's value (its last statement's
    /// first row), or `None` for PL/pgSQL (its RETURN sets `pg_ret`).
    fn func_body(&mut self, f: &PgFunc) -> Result<Option<Value>> {
        let names = f.param_names();
        let vars = f.var_names();
        match f.lang {
            Lang::Plpgsql => {
                let trig = if f.is_trigger() { "\u{3}" } else { "" };
                let key = format!("\u{2}{trig}{}\u{2}{}", vars.join(","), f.body);
                let body = match self.host.state().bodies.get(&key) {
                    Some(b) => b.clone(),
                    None => {
                        let b = Arc::new(if f.is_trigger() {
                            crate::front::plpgsql::parse_plpgsql_trigger(&f.body)?
                        } else {
                            parse_plpgsql(&f.body, &vars)?
                        });
                        self.host.state().bodies.insert(key, b.clone());
                        b
                    }
                };
                self.block(&body)?;
                Ok(None)
            }
            Lang::Sql => {
                let stmts = super::pg_funcs::sql_statements(&f.body, &names, !f.procedure)?;
                let mut last = None;
                for s in &stmts {
                    self.host.check_cancel()?;
                    let o = self.sql(s)?;
                    last = Some(o);
                }
                if f.procedure {
                    return Ok(None);
                }
                if f.gives_rows() {
                    self.sink_rows(last.map(|o| o.rows).unwrap_or_default())?;
                    return Ok(None);
                }
                Ok(Some(
                    last.and_then(|o| o.rows.into_iter().next())
                        .and_then(|r| r.into_iter().next())
                        .unwrap_or(Value::Null),
                ))
            }
        }
    }

    /// A statement that is one call of a PostgreSQL function that does not
    /// inline (`SELECT f(args) [AS c]`), run here: its arguments
    /// evaluated, the body run on this runtime (data changes included).
    pub(super) fn direct_call(&mut self, text: &str) -> Result<Option<QueryOutput>> {
        let call = match self.host.state().direct.get(text) {
            Some(c) => c.clone(),
            None => {
                let c = self.find_direct(text)?.map(Arc::new);
                let st = self.host.state();
                if st.direct.len() >= CACHE {
                    st.direct.clear();
                }
                st.direct.insert(text.to_string(), c.clone());
                c
            }
        };
        let Some(call) = call else {
            return Ok(None);
        };
        let mut args = Vec::new();
        for a in &call.args {
            args.push(self.eval(a)?);
        }
        // One statement: outside a transaction the body's changes commit
        // or roll back together.
        let own = !self.host.in_transaction() && !self.pg;
        if own {
            self.fixed("BEGIN", &[])?;
            self.host.state().nest = 0;
        }
        let r = self.call_pg_func(&call.f, args);
        if own {
            let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
            self.fixed(end, &[])?;
        }
        let v = r?;
        let ty = crate::types::names::parse_type_name(&call.f.returns)?;
        Ok(Some(QueryOutput {
            tag: "SELECT 1".into(),
            columns: Some(vec![crate::Column {
                name: call.column.clone(),
                ty,
                origin: None,
            }]),
            rows: vec![vec![v]],
            ..Default::default()
        }))
    }

    fn find_direct(&mut self, text: &str) -> Result<Option<DirectCall>> {
        let Some((name, args, column)) = super::pg_funcs::single_call(text) else {
            return Ok(None);
        };
        if !funcs::known_name(&name) {
            return Ok(None);
        }
        let cands = self.pg_overloads(&name)?;
        if cands.is_empty() {
            return Ok(None);
        }
        let (_, f) = self.choose(&name, cands, &args)?;
        if f.procedure || f.gives_rows() || super::pg_funcs::inlinable(&f) {
            return Ok(None);
        }
        let args = super::pg_funcs::bind_call(&f, &args)?;
        Ok(Some(DirectCall {
            f,
            args,
            column: column.unwrap_or(name),
        }))
    }
}

/// A statement that is one call of a function that runs.
pub(super) struct DirectCall {
    f: PgFunc,
    /// Each parameter's value as an expression.
    args: Vec<String>,
    column: String,
}
