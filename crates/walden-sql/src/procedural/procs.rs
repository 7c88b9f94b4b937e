//! Procedures: `CREATE | ALTER | CREATE OR ALTER | DROP PROCEDURE` and
//! `EXEC`. A procedure's definition (its CREATE text) is a row of the
//! database's table [`PROC_TABLE`], written with ordinary SQL in the
//! session's transaction: it is logged, recovered, replicated and undone
//! on rollback exactly as other rows are.

use super::*;
use crate::front::{ExecCall, ProcDef, ProcMode};

/// The table that holds the database's procedures (created with the first).
pub use crate::front::plpgsql::PROC_TABLE;

fn not_found(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedFunction,
        format!("Could not find stored procedure '{name}'."),
    )
}

impl<'h, H: Host> Runner<'h, H> {
    /// Runs fixed SQL of this module (no variables).
    pub(super) fn fixed(&mut self, sql: &str, params: &[Value]) -> Result<QueryOutput> {
        let c = self.host.parse(sql)?;
        self.host.run(&c, params)
    }

    /// A procedure's definition text, if there is one.
    fn definition(&mut self, name: &str) -> Result<Option<String>> {
        let q = format!("SELECT definition FROM public.{PROC_TABLE} WHERE name = $1");
        match self.fixed(&q, &[Value::text(name)]) {
            Ok(o) => Ok(o
                .rows
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next())
                .map(|v| v.to_string())),
            Err(e) if e.kind == ErrorKind::UndefinedTable => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(super) fn create_proc(&mut self, def: &ProcDef) -> Result<()> {
        let exists = self.definition(&def.name)?.is_some();
        match def.mode {
            ProcMode::Create if exists => {
                return Err(SqlError::new(
                    ErrorKind::DuplicateObject,
                    format!(
                        "There is already an object named '{}' in the database.",
                        def.name
                    ),
                ))
            }
            ProcMode::Alter if !exists => return Err(not_found(&def.name)),
            _ => {}
        }
        // Parameter types must be known now, not at the first call.
        for p in &def.params {
            crate::types::names::parse_type_name(&p.ty)?;
        }
        self.fixed(
            &format!(
                "CREATE TABLE IF NOT EXISTS public.{PROC_TABLE} (name text PRIMARY KEY, definition text NOT NULL)"
            ),
            &[],
        )?;
        let text = crate::front::proc_text(def);
        self.fixed(
            &format!(
                "INSERT INTO public.{PROC_TABLE} (name, definition) VALUES ($1, $2) \
                 ON CONFLICT (name) DO UPDATE SET definition = EXCLUDED.definition"
            ),
            &[Value::text(def.name.clone()), Value::text(text)],
        )?;
        self.emit(QueryOutput::command(match def.mode {
            ProcMode::Alter => "ALTER PROCEDURE",
            _ => "CREATE PROCEDURE",
        }));
        Ok(())
    }

    pub(super) fn drop_proc(&mut self, name: &str, if_exists: bool) -> Result<()> {
        let gone = match self.fixed(
            &format!("DELETE FROM public.{PROC_TABLE} WHERE name = $1"),
            &[Value::text(name)],
        ) {
            Ok(o) => tag_rows(&o.tag).unwrap_or(0) > 0,
            Err(e) if e.kind == ErrorKind::UndefinedTable => false,
            Err(e) => return Err(e),
        };
        if !gone && !if_exists {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "Cannot drop the procedure '{name}', because it does not exist or you do not have permission."
                ),
            ));
        }
        self.emit(QueryOutput::command("DROP PROCEDURE"));
        Ok(())
    }

    pub(super) fn exec(&mut self, call: &ExecCall) -> Result<()> {
        if call.name == "sp_executesql" {
            return self.executesql(call);
        }
        let text = self
            .definition(&call.name)?
            .ok_or_else(|| not_found(&call.name))?;
        let stmts = self.body(&text)?;
        let Some(TStmt::CreateProc(def)) = stmts.first() else {
            return Err(SqlError::internal(
                "a stored procedure definition does not parse",
            ));
        };
        self.call_def(def, call)
    }

    /// `EXEC sp_executesql @stmt [, @params [, @p = value ...]]`: the text
    /// runs as a procedure body of its own (a scope without the caller's
    /// variables) whose parameters `@params` declares.
    fn executesql(&mut self, call: &ExecCall) -> Result<()> {
        let mut args = call.args.iter().peekable();
        let mut fixed = Vec::new();
        for want in ["@stmt", "@params"] {
            match args.peek() {
                Some(a) if a.name.is_none() || a.name.as_deref() == Some(want) => {
                    fixed.push(args.next().and_then(|a| a.value.clone()));
                }
                _ => fixed.push(None),
            }
        }
        let text = |r: &mut Self, e: &Option<String>| -> Result<Option<String>> {
            Ok(match e {
                Some(e) => match r.eval(e)? {
                    Value::Null => None,
                    v => Some(v.to_string()),
                },
                None => None,
            })
        };
        let Some(body) = text(self, &fixed[0])? else {
            return Err(SqlError::new(
                ErrorKind::UndefinedObject,
                "Procedure expects parameter '@statement' of type 'ntext/nchar/nvarchar'.",
            ));
        };
        let params = text(self, &fixed[1])?.unwrap_or_default();
        // The parameter list reads as a procedure's.
        let stmts = crate::front::parse_batch(&format!(
            "CREATE PROCEDURE sp_executesql {params} AS RETURN"
        ))?;
        let Some(TStmt::CreateProc(def)) = stmts.into_iter().next() else {
            return Err(SqlError::syntax("sp_executesql: bad parameter list"));
        };
        let def = crate::front::ProcDef { body, ..def };
        let rest = ExecCall {
            ret: call.ret.clone(),
            name: call.name.clone(),
            args: args.cloned().collect(),
        };
        self.call_def(&def, &rest)
    }

    /// Calls a procedure: binds the arguments, runs the body in a frame of
    /// its own, copies OUTPUT parameters back.
    fn call_def(&mut self, def: &crate::front::ProcDef, call: &ExecCall) -> Result<()> {
        if self.frames.len() > MAX_NESTING {
            return Err(SqlError::new(
                ErrorKind::StackDepth,
                format!(
                    "Maximum stored procedure, function, trigger, or view nesting level exceeded (limit {MAX_NESTING})."
                ),
            ));
        }
        // The arguments, in the caller's frame: positional first, then named.
        let mut given: Vec<Option<(Value, Option<String>)>> = vec![None; def.params.len()];
        let mut named = false;
        for (k, a) in call.args.iter().enumerate() {
            let at = match &a.name {
                Some(n) => {
                    named = true;
                    def.params
                        .iter()
                        .position(|p| p.name == *n)
                        .ok_or_else(|| {
                            SqlError::new(
                                ErrorKind::UndefinedObject,
                                format!("{n} is not a parameter for procedure {}.", def.name),
                            )
                        })?
                }
                None if named => return Err(SqlError::syntax(
                    "Must pass parameter number 2 and subsequent parameters as '@name = value'.",
                )),
                None if k >= def.params.len() => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedFunction,
                        format!(
                            "Procedure or function {} has too many arguments specified.",
                            def.name
                        ),
                    ))
                }
                None => k,
            };
            if a.output && !def.params[at].output {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!(
                        "The formal parameter \"{}\" was not declared as an OUTPUT parameter, but the actual parameter passed in requested output.",
                        def.params[at].name
                    ),
                ));
            }
            let Some(v) = &a.value else { continue };
            let value = self.eval(v)?;
            // An OUTPUT argument names the caller's variable that takes the result.
            let back = (a.output && def.params[at].output).then(|| v.trim().to_ascii_lowercase());
            // Only a variable can take an OUTPUT parameter's value back.
            if back.as_ref().is_some_and(|b| {
                !b.starts_with('@') || b.starts_with("@@") || b.contains(char::is_whitespace)
            }) {
                return Err(SqlError::syntax(format!(
                    "syntax error: the OUTPUT argument for {} must be a variable, not {v}",
                    def.params[at].name
                )));
            }
            given[at] = Some((value, back));
        }
        let mut frame = HashMap::new();
        let mut backs = Vec::new();
        for (p, g) in def.params.iter().zip(given) {
            let ty = crate::types::names::parse_type_name(&super::funcs::sized(&p.ty))?;
            let value = match g {
                Some((v, back)) => {
                    if let Some(b) = back {
                        backs.push((p.name.clone(), b));
                    }
                    v
                }
                None => match &p.default {
                    Some(d) => self.eval(d)?,
                    None if p.output => Value::Null,
                    None => {
                        return Err(SqlError::new(
                            ErrorKind::UndefinedObject,
                            format!(
                                "Procedure or function '{}' expects parameter '{}', which was not supplied.",
                                def.name, p.name
                            ),
                        ))
                    }
                },
            };
            // Cut to the parameter's length, as SQL Server does.
            let value = crate::functions::explicit_cast(value, &ty)?;
            frame.insert(p.name.clone(), Var { ty, value });
        }
        let body = self.body(&def.body)?;
        let saved_nocount = self.host.state().nocount;
        // A procedure is a scope of its own for SCOPE_IDENTITY(): it starts
        // without a value, and the caller's comes back after it.
        let identity = self.host.state().identity.clone();
        let saved_scope = identity.lock().ok().and_then(|mut l| l.scope.take());
        self.frames.push(frame);
        self.temps.push(Vec::new());
        self.tables.push(HashMap::new());
        self.ret = 0;
        let r = stacker::maybe_grow(256 * 1024, 2 * 1024 * 1024, || self.block(&body));
        let callee = self.frames.pop().expect("pushed");
        if let Ok(mut l) = identity.lock() {
            l.scope = saved_scope;
        }
        // So do its table variables and #temp tables.
        let dropped = self.drop_table_vars();
        if r.is_ok() {
            dropped?;
        }
        for (_, t) in self.temps.pop().unwrap_or_default() {
            let dropped = self.fixed(&format!("DROP TABLE IF EXISTS {t}"), &[]);
            if r.is_ok() {
                dropped?;
            }
        }
        // SET NOCOUNT inside a procedure ends with it.
        self.host.state().nocount = saved_nocount;
        r?;
        for (p, b) in backs {
            let v = callee
                .get(&p)
                .map(|v| v.value.clone())
                .unwrap_or(Value::Null);
            self.set_var(&b, v)?;
        }
        if let Some(r) = &call.ret {
            let code = self.ret;
            self.set_var(r, Value::Int(code))?;
        }
        self.ret = 0;
        Ok(())
    }
}
