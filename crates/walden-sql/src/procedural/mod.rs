//! The procedural runtime: runs a T-SQL batch or procedure body (the tree
//! `front::parse_batch` makes) statement by statement, with its variables,
//! control flow, transaction nesting and procedure calls. It reaches the
//! session through [`Host`] (the session is the stage above): each SQL
//! statement runs there as a parsed command with the variables' values as
//! its parameters, through the session's parse and plan caches.

mod compile;
mod fast;
mod funcs;
mod identity;
mod overload;
mod pg;
mod pg_call;
mod pg_funcs;
mod pg_procs;
mod pg_rows;
mod procs;
mod raise;
mod table_vars;
mod triggers;

pub use compile::{lift, Lifted};
pub use funcs::calls_user_function;
pub use pg_call::routine_hook;
pub use triggers::trigger_hook;

use crate::error::{ErrorKind, Result, SqlError};
use crate::front::{Command, TStmt};
use crate::QueryOutput;
use std::collections::HashMap;
use std::sync::Arc;
use walden_engine::{DataType, Value};

/// SQL Server's limit on nested procedure calls.
pub const MAX_NESTING: usize = 32;

/// What the runtime needs from the session.
pub trait Host {
    /// Parses one statement (cached by the session).
    fn parse(&mut self, sql: &str) -> Result<Arc<Command>>;
    /// Runs a parsed statement with parameter values, in the session's
    /// transaction (or its own auto-commit one).
    fn run(&mut self, cmd: &Arc<Command>, params: &[Value]) -> Result<QueryOutput>;
    /// [`Host::run`] with the parameters' types where they are known (a
    /// variable's declared type): the statement is planned with them, as a
    /// prepared statement's declared types, so `@x / 2` divides a decimal
    /// `@x` as a decimal instead of taking `$1` for an integer from the `2`.
    fn run_typed(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
        types: &[Option<DataType>],
    ) -> Result<QueryOutput>;
    /// Whether an explicit transaction is open.
    fn in_transaction(&self) -> bool;
    /// Whether the open transaction can still commit (XACT_STATE 1) or
    /// has failed (-1).
    fn transaction_failed(&self) -> bool;
    /// Makes the open transaction uncommittable (XACT_STATE -1): it reads,
    /// but only a rollback ends it.
    fn doom(&mut self);
    /// Whether it is.
    fn doomed(&self) -> bool;
    /// Err when the client cancelled or the batch's statement_timeout passed.
    fn check_cancel(&self) -> Result<()>;
    /// The session's T-SQL state (kept between batches).
    fn state(&mut self) -> &mut TsqlState;
}

/// A session's T-SQL state between batches.
#[derive(Default)]
pub struct TsqlState {
    pub rowcount: i64,
    /// `@@ERROR`: the last statement's error number (0: it succeeded).
    pub error: i64,
    pub nocount: bool,
    /// `SET XACT_ABORT ON`: a run-time error ends the batch and rolls the
    /// transaction back (inside TRY: leaves it uncommittable).
    pub xact_abort: bool,
    /// The open transaction is uncommittable (see [`Host::doom`]).
    pub doomed: bool,
    /// `BEGIN TRAN`s inside the outermost one (`@@TRANCOUNT` - 1).
    pub nest: i64,
    /// The session has run a T-SQL batch: it speaks T-SQL, so a statement
    /// inside an open transaction fails alone (SQL Server's statement-level
    /// rollback) however the transaction was begun (see `session/tsql.rs`).
    pub speaks: bool,
    /// When the running batch's statement_timeout passes.
    pub deadline: Option<std::time::Instant>,
    /// Errors of the last batch already dealt with (the client's error
    /// reports must not fail the transaction again).
    pub handled_errors: usize,
    /// `@@IDENTITY` and `SCOPE_IDENTITY()` (the DML stage writes them).
    pub identity: Arc<std::sync::Mutex<crate::functions::IdentityLog>>,
    /// T-SQL triggers' result sets for the client, collected while a
    /// simple query runs (see `SessionInfo::trigger_sets`).
    pub trigger_sets: crate::functions::TriggerSets,
    /// Compiled statements by text.
    lifted: HashMap<String, Arc<(Lifted, Arc<Command>)>>,
    /// The function definitions' epoch `lifted` was compiled in.
    func_epoch: u64,
    /// Parsed procedure definitions by text.
    bodies: HashMap<String, Arc<Vec<TStmt>>>,
    /// Statements that are one call of a function that runs (`pg_call.rs`),
    /// by text; `None` for the others.
    direct: HashMap<String, Option<Arc<pg_call::DirectCall>>>,
    /// Expressions evaluated without SQL (`fast.rs`), by text; `None` for
    /// those SQL evaluates.
    fast: HashMap<String, Option<Arc<fast::Fast>>>,
}

/// `@@OPTIONS` of a session as SQL Server's drivers (JDBC, ODBC) open
/// one: ANSI_WARNINGS, ANSI_PADDING, ANSI_NULLS, QUOTED_IDENTIFIER,
/// ANSI_NULL_DFLT_ON, CONCAT_NULL_YIELDS_NULL. NOCOUNT (512) and XACT_ABORT
/// (16384) follow the session's settings.
const OPTIONS_DEFAULT: i64 = 8 | 16 | 32 | 256 | 1024 | 4096;

/// Most entries the caches keep.
const CACHE: usize = 1024;

/// How a statement ended.
enum Flow {
    Normal,
    Break,
    Continue,
    Return,
}

/// A variable: its declared type and value.
struct Var {
    ty: DataType,
    value: Value,
}

/// The error a CATCH block reads.
#[derive(Clone)]
struct Caught {
    error: SqlError,
    number: i64,
    severity: i64,
    state: i64,
}

/// Runs a batch or a procedure body.
pub struct Runner<'h, H: Host> {
    host: &'h mut H,
    /// Results, in order, for the client (with the errors the batch went
    /// on after).
    pub out: Vec<Result<QueryOutput>>,
    /// PRINT messages not yet attached to a result.
    notices: Vec<String>,
    /// The variables of each active call (the batch's first).
    frames: Vec<HashMap<String, Var>>,
    /// The error each active CATCH block handles.
    caught: Vec<Caught>,
    /// The return code of the innermost call.
    ret: i64,
    /// The local temporary tables (`#t`) each active call created: they
    /// are dropped when it ends, as in SQL Server.
    /// Each is (the name as written, lower case; the table's name): a
    /// call's `#t` while a caller has one is a table of another name.
    temps: Vec<Vec<(String, String)>>,
    /// The table variables each active call declared, by name.
    tables: Vec<HashMap<String, table_vars::TableVar>>,
    /// TRY blocks open (an error inside one goes to its CATCH).
    tries: usize,
    /// The number, severity and state of the error THROW or RAISERROR
    /// raised last (an error carries no SQL Server number of its own).
    raised: Option<(String, i64, i64, i64)>,
    /// Running PL/pgSQL (PostgreSQL's error and result rules).
    pub pg: bool,
    /// Subtransactions of PL/pgSQL exception blocks open.
    guards: usize,
    /// PostgreSQL function calls active on this runner: RETURN gives
    /// the function's value (`pg_ret`).
    in_func: usize,
    pg_ret: Option<Value>,
    /// The rows the running function gives, when it gives rows
    /// (`pg_rows.rs`).
    sink: Option<pg_rows::RowSink>,
    /// Running a T-SQL trigger: its `inserted` / `deleted`.
    pseudo: Option<Arc<triggers::Pseudo>>,
}

fn table_var_as_scalar(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::DuplicateObject,
        format!("The variable name '{name}' has already been declared. Variable names must be unique within a query batch or stored procedure."),
    )
}

fn undeclared(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedObject,
        format!("Must declare the scalar variable \"{name}\"."),
    )
}

/// The row count a command tag reports (0 for other commands).
fn tag_rows(tag: &str) -> Option<i64> {
    let mut w = tag.split_whitespace();
    match w.next()? {
        "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "FETCH" | "MOVE" | "COPY" => {
            tag.split_whitespace().last()?.parse().ok()
        }
        _ => None,
    }
}

impl<'h, H: Host> Runner<'h, H> {
    pub fn new(host: &'h mut H) -> Self {
        Runner {
            host,
            out: Vec::new(),
            notices: Vec::new(),
            frames: vec![HashMap::new()],
            caught: Vec::new(),
            ret: 0,
            temps: vec![Vec::new()],
            tables: vec![HashMap::new()],
            tries: 0,
            raised: None,
            pg: false,
            guards: 0,
            in_func: 0,
            pg_ret: None,
            sink: None,
            pseudo: None,
        }
    }

    /// Runs a batch; the results so far stay in `out` when it fails.
    pub fn run_batch(&mut self, stmts: &[TStmt]) -> Result<()> {
        if stmts.len() > 1 {
            if let Some(TStmt::CreateProc(_)) =
                stmts.iter().find(|s| matches!(s, TStmt::CreateProc(_)))
            {
                return Err(SqlError::syntax(
                    "'CREATE/ALTER PROCEDURE' must be the first statement in a query batch.",
                ));
            }
            if stmts.iter().any(|s| matches!(s, TStmt::CreateFunc(_))) {
                return Err(SqlError::syntax(
                    "'CREATE FUNCTION' must be the first statement in a query batch.",
                ));
            }
        }
        let mut r = Ok(());
        for s in stmts {
            let before = self.out.len();
            match self.stmt(s) {
                Ok(Flow::Normal) => {}
                Ok(_) => break,
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
            // The batch's own transaction statements report themselves
            // (not those inside a loop or a procedure), unless they failed.
            if self.out[before..].iter().any(|o| o.is_err()) {
                continue;
            }
            let tag = match s {
                TStmt::BeginTran => "BEGIN",
                TStmt::CommitTran(_) => "COMMIT",
                TStmt::RollbackTran => "ROLLBACK",
                _ => continue,
            };
            self.emit(QueryOutput::command(tag));
        }
        // XACT_ABORT: an error that ended the batch rolls the transaction
        // back; so does the end of a batch that left it uncommittable.
        let abort = r.is_err() && self.host.state().xact_abort;
        if (abort || self.host.doomed()) && self.host.in_transaction() {
            self.host.state().nest = 0;
            let c = Arc::new(Command::Rollback);
            self.host.run(&c, &[])?;
        }
        // The batch's table variables end with it.
        let dropped = self.drop_table_vars();
        if r.is_ok() {
            dropped?;
        }
        self.flush_notices();
        // Every simple query ends with a command completion on the wire,
        // even a batch that only set options or variables.
        if self.out.is_empty() && r.is_ok() {
            let tag = match stmts.last() {
                Some(
                    TStmt::NoCount(_)
                    | TStmt::XactAbort(_)
                    | TStmt::IdentityInsert { .. }
                    | TStmt::Declare(_)
                    | TStmt::Assign { .. },
                ) => "SET",
                _ => "DO",
            };
            self.out.push(Ok(QueryOutput::command(tag)));
        }
        r
    }

    /// PRINT messages left at the end go with the last result (or one of
    /// their own).
    fn flush_notices(&mut self) {
        if self.notices.is_empty() {
            return;
        }
        let n = std::mem::take(&mut self.notices);
        match self.out.last_mut() {
            Some(Ok(o)) => o.notices.extend(n),
            _ => {
                let mut o = QueryOutput::command("PRINT");
                o.notices = n;
                self.out.push(Ok(o));
            }
        }
    }

    fn emit(&mut self, mut o: QueryOutput) {
        if !self.notices.is_empty() {
            let mut n = std::mem::take(&mut self.notices);
            n.append(&mut o.notices);
            o.notices = n;
        }
        self.out.push(Ok(o));
    }

    fn block(&mut self, stmts: &[TStmt]) -> Result<Flow> {
        for s in stmts {
            match self.stmt(s)? {
                Flow::Normal => {}
                f => return Ok(f),
            }
        }
        Ok(Flow::Normal)
    }

    fn stmt(&mut self, s: &TStmt) -> Result<Flow> {
        self.host.check_cancel()?;
        match s {
            TStmt::Sql(text) if self.pg => self.pg_sql(text)?,
            TStmt::ForInt { .. }
            | TStmt::SelectInto { .. }
            | TStmt::Perform(_)
            | TStmt::Raise(_)
            | TStmt::Execute { .. }
            | TStmt::Guarded { .. }
            | TStmt::Assert(..) => return self.pg_stmt(s),
            TStmt::ReturnNext(_) | TStmt::ReturnQuery(_) | TStmt::ReturnQueryExecute { .. } => {
                self.return_rows(s)?
            }
            TStmt::Return(Some(_)) if self.in_func > 0 && self.returns_rows().is_some() => {
                return Err(SqlError::new(
                    ErrorKind::DatatypeMismatch,
                    if self.returns_rows() == Some(true) {
                        "RETURN cannot have a parameter in function returning set"
                    } else {
                        "RETURN cannot have a parameter in function with OUT parameters"
                    },
                ));
            }
            TStmt::Sql(text) => {
                let r = self.sql(text);
                let r = self.shadowing_temp_table(text, r);
                // The result sets of the triggers it fired come first.
                let sets = self
                    .host
                    .state()
                    .trigger_sets
                    .lock()
                    .ok()
                    .and_then(|mut g| g.as_mut().map(std::mem::take))
                    .unwrap_or_default();
                for set in sets {
                    self.emit(set);
                }
                let o = match r {
                    Ok(o) => o,
                    // XACT_ABORT: the transaction cannot go on (outside TRY
                    // the batch's end rolls it back).
                    Err(e) if self.host.state().xact_abort => {
                        self.host.doom();
                        return Err(e);
                    }
                    // SQL Server undoes the statement alone and goes on.
                    Err(e) if self.tries == 0 && statement_level(&e) => {
                        self.host.state().rowcount = 0;
                        self.host.state().error = error_number(&e);
                        self.flush_notices();
                        self.out.push(Err(e));
                        return Ok(Flow::Normal);
                    }
                    Err(e) => return Err(e),
                };
                if self.frames.len() > 1 {
                    if let Some(t) = temp_table_created(text) {
                        let t = t.to_ascii_lowercase();
                        if let Some(list) = self.temps.last_mut() {
                            if !list.iter().any(|(w, _)| *w == t) {
                                list.push((t.clone(), t));
                            }
                        }
                    }
                }
                let rows = tag_rows(&o.tag);
                self.host.state().rowcount = rows.unwrap_or(0);
                self.host.state().error = 0;
                let dml = o.columns.is_none() && rows.is_some();
                if !(dml && self.host.state().nocount) {
                    self.emit(o);
                }
            }
            TStmt::Declare(vars) => {
                for v in vars {
                    if v.ty
                        .get(..5)
                        .is_some_and(|t| t.eq_ignore_ascii_case("table"))
                    {
                        self.declare_table(&v.name, &v.ty)?;
                        continue;
                    }
                    if self.tables.last().is_some_and(|t| t.contains_key(&v.name)) {
                        return Err(table_var_as_scalar(&v.name));
                    }
                    let ty = if self.pg {
                        crate::types::names::parse_type_name(&v.ty)?
                    } else {
                        crate::types::names::parse_type_name(&funcs::sized(&v.ty))?
                    };
                    let value = match &v.init {
                        Some(e) => {
                            let v = self.eval(e)?;
                            self.assign_cast(v, &ty)?
                        }
                        None => Value::Null,
                    };
                    self.frame().insert(v.name.clone(), Var { ty, value });
                }
            }
            TStmt::Assign { var, op, expr } => {
                let ty = self.var_type(var)?;
                let text = match op {
                    None => expr.clone(),
                    Some('+') if is_string(&ty) => format!("{var} || ({expr})"),
                    Some(c) => format!("{var} {c} ({expr})"),
                };
                let v = self.eval(&text)?;
                self.set_var(var, v)?;
                self.host.state().rowcount = 1;
            }
            TStmt::SelectAssign { vars, query } => {
                let o = self.sql(query)?;
                let n = o.rows.len() as i64;
                if let Some(last) = o.rows.last() {
                    for (k, v) in vars.iter().enumerate() {
                        self.set_var(v, last.get(k).cloned().unwrap_or(Value::Null))?;
                    }
                }
                self.host.state().rowcount = n;
            }
            TStmt::If { cond, then, els } => {
                if self.truth(cond)? {
                    return self.stmt(then);
                } else if let Some(e) = els {
                    return self.stmt(e);
                }
            }
            TStmt::While { cond, body } => {
                while self.truth(cond)? {
                    self.host.check_cancel()?;
                    match self.stmt(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        Flow::Normal | Flow::Continue => {}
                    }
                }
            }
            TStmt::Block(b) => return self.block(b),
            TStmt::TryCatch(body, handler) => return self.try_catch(body, handler),
            TStmt::Break => return Ok(Flow::Break),
            TStmt::Continue => return Ok(Flow::Continue),
            TStmt::Return(e) if self.in_func > 0 => {
                self.pg_ret = match e {
                    Some(e) => Some(self.eval(e)?),
                    None => None,
                };
                return Ok(Flow::Return);
            }
            TStmt::Return(e) => {
                self.ret = match e {
                    Some(e) => match crate::functions::cast(self.eval(e)?, &DataType::BigInt)? {
                        Value::Null => 0,
                        v => v.as_i64().unwrap_or(0),
                    },
                    None => 0,
                };
                return Ok(Flow::Return);
            }
            TStmt::Print(e) => {
                let v = self.eval(e)?;
                let s = match crate::functions::cast(v, &DataType::Text)? {
                    Value::Null => String::new(),
                    v => v.to_string(),
                };
                self.notices.push(s);
                self.host.state().rowcount = 0;
            }
            TStmt::NoCount(on) => self.host.state().nocount = *on,
            TStmt::XactAbort(on) => self.host.state().xact_abort = *on,
            TStmt::WaitForDelay(e) => self.wait_for(e)?,
            TStmt::IdentityInsert { table, on } => self.identity_insert(table, *on)?,
            TStmt::Throw(args) => {
                let e = self.throw(args.as_ref())?;
                // THROW honours XACT_ABORT (RAISERROR does not).
                if self.host.state().xact_abort {
                    self.host.doom();
                }
                return Err(e);
            }
            TStmt::Raiserror(args) => self.raiserror(args)?,
            TStmt::CommitTran(_) | TStmt::RollbackTran | TStmt::RollbackSavepoint(_) => {
                if let Err(e) = self.end_tran(s) {
                    // COMMIT or ROLLBACK without a transaction (SQL Server's
                    // errors 3902 and 3903): the batch goes on.
                    if self.tries == 0 && e.kind == ErrorKind::NoActiveTransaction {
                        self.host.state().error = if matches!(s, TStmt::CommitTran(_)) {
                            3902
                        } else {
                            3903
                        };
                        self.flush_notices();
                        self.out.push(Err(e));
                        return Ok(Flow::Normal);
                    }
                    return Err(e);
                }
            }
            TStmt::BeginTran => {
                self.host.state().rowcount = 0;
                if self.host.in_transaction() {
                    self.host.state().nest += 1;
                } else {
                    self.host.state().nest = 0;
                    self.host.state().doomed = false;
                    let c = self.host.parse("BEGIN TRANSACTION")?;
                    self.host.run(&c, &[])?;
                }
            }
            TStmt::Exec(call) => self.exec(call)?,
            TStmt::CreateProc(def) => self.create_proc(def)?,
            TStmt::DropProc { names, if_exists } => {
                let mut pg = false;
                for n in names {
                    // A PostgreSQL procedure's name (DROP PROCEDURE without
                    // argument types).
                    if !self.pg_overloads(n)?.is_empty() {
                        self.drop_pg_funcs(&[(n.clone(), None)], *if_exists, Some(true))?;
                        pg = true;
                        continue;
                    }
                    self.drop_proc(n, *if_exists)?;
                }
                if pg {
                    self.emit(QueryOutput::command("DROP PROCEDURE"));
                }
            }
            TStmt::CreateFunc(def) => self.create_func(def)?,
            TStmt::DropFunc { names, if_exists } => {
                for n in names {
                    // A PostgreSQL function's name: DROP FUNCTION without
                    // argument types (several overloads are 42725).
                    if !self.pg_overloads(n)?.is_empty() {
                        self.drop_pg_funcs(&[(n.clone(), None)], *if_exists, Some(false))?;
                        continue;
                    }
                    self.drop_func(n, *if_exists)?;
                }
                self.emit(QueryOutput::command("DROP FUNCTION"));
            }
        }
        Ok(Flow::Normal)
    }

    /// COMMIT TRAN, ROLLBACK TRAN and ROLLBACK TRAN name.
    fn end_tran(&mut self, s: &TStmt) -> Result<()> {
        match s {
            TStmt::CommitTran(dd) => {
                self.host.state().rowcount = 0;
                if !self.host.in_transaction() {
                    return Err(SqlError::new(
                        ErrorKind::NoActiveTransaction,
                        "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION.",
                    ));
                }
                if self.host.state().nest > 0 {
                    self.host.state().nest -= 1;
                } else {
                    let c = Arc::new(Command::Commit(*dd));
                    let o = self.host.run(&c, &[])?;
                    // A failed block's COMMIT rolls back (PostgreSQL's rule).
                    if o.tag == "ROLLBACK" {
                        return Err(SqlError::new(
                            ErrorKind::InFailedTransaction,
                            "The transaction had failed and was rolled back at COMMIT.",
                        ));
                    }
                }
            }
            TStmt::RollbackTran => {
                if !self.host.in_transaction() {
                    return Err(SqlError::new(
                        ErrorKind::NoActiveTransaction,
                        "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION.",
                    ));
                }
                self.host.state().nest = 0;
                self.keeping_table_vars(|r| r.host.run(&Arc::new(Command::Rollback), &[]))?;
            }
            TStmt::RollbackSavepoint(text) => {
                let o = self.keeping_table_vars(|r| r.fixed(text, &[]))?;
                self.emit(o);
            }
            _ => {}
        }
        Ok(())
    }

    /// A call's `CREATE TABLE #t` that failed because a caller (or the
    /// batch) has a `#t`: SQL Server gives the call a table of its own,
    /// which its statements and the calls it makes see in place of the
    /// caller's until it ends. Created here under another name
    /// (`#t__scope<level>`, which `table_names` maps `#t` to).
    fn shadowing_temp_table(&mut self, text: &str, r: Result<QueryOutput>) -> Result<QueryOutput> {
        let retry =
            matches!(&r, Err(e) if e.kind == ErrorKind::DuplicateTable) && self.frames.len() > 1;
        let Some(t) = retry.then(|| temp_table_created(text)).flatten() else {
            return r;
        };
        let written = t.to_ascii_lowercase();
        let level = self.frames.len() - 1;
        match self.temps.last_mut() {
            Some(list) if !list.iter().any(|(w, _)| *w == written) => {
                list.push((written.clone(), format!("{written}__scope{level}")));
            }
            _ => return r,
        }
        let again = self.sql(text);
        if again.is_err() {
            if let Some(list) = self.temps.last_mut() {
                list.pop();
            }
            return r;
        }
        again
    }

    fn try_catch(&mut self, body: &[TStmt], handler: &[TStmt]) -> Result<Flow> {
        self.tries += 1;
        let r = self.block(body);
        self.tries -= 1;
        match r {
            Ok(f) => Ok(f),
            // Cancels and timeouts end the batch, as in SQL Server.
            Err(e) if e.kind == ErrorKind::Cancelled || e.kind == ErrorKind::StackDepth => Err(e),
            Err(e) => {
                // The failed statement's work is undone already (the
                // session's statement savepoint); the transaction goes on.
                let (number, severity, state) = match &self.raised {
                    Some((m, n, sev, st))
                        if *m == e.message && e.kind == ErrorKind::RaiseException =>
                    {
                        (*n, *sev, *st)
                    }
                    _ => (error_number(&e), 16, 1),
                };
                self.host.state().error = number;
                self.caught.push(Caught {
                    error: e,
                    number,
                    severity,
                    state,
                });
                let r = self.block(handler);
                self.caught.pop();
                r
            }
        }
    }

    fn frame(&mut self) -> &mut HashMap<String, Var> {
        self.frames.last_mut().expect("a frame")
    }

    fn var_type(&mut self, name: &str) -> Result<DataType> {
        self.frame()
            .get(name)
            .map(|v| v.ty.clone())
            .ok_or_else(|| undeclared(name))
    }

    fn set_var(&mut self, name: &str, v: Value) -> Result<()> {
        let ty = self.var_type(name)?;
        let v = self.assign_cast(v, &ty)?;
        self.frame().get_mut(name).expect("checked").value = v;
        Ok(())
    }

    /// A value given to a variable of type `ty`: a string too long for a
    /// T-SQL variable is cut to its length, as SQL Server does; PL/pgSQL's
    /// assignment fails instead (22001), as PostgreSQL's.
    fn assign_cast(&self, v: Value, ty: &DataType) -> Result<Value> {
        if self.pg {
            crate::functions::cast(v, ty)
        } else {
            crate::functions::explicit_cast(v, ty)
        }
    }

    /// The value of a lifted reference.
    fn value_of(&mut self, r: &str) -> Result<Value> {
        Ok(match r {
            "@@rowcount" => Value::Int(self.host.state().rowcount),
            "@@trancount" => Value::Int(if self.host.in_transaction() {
                1 + self.host.state().nest
            } else {
                0
            }),
            "@@error" => Value::Int(self.host.state().error),
            "@@nestlevel" => Value::Int(self.frames.len() as i64 - 1),
            "@@options" => {
                let st = self.host.state();
                Value::Int(
                    OPTIONS_DEFAULT
                        | if st.nocount { 512 } else { 0 }
                        | if st.xact_abort { 16384 } else { 0 },
                )
            }
            "xact_state()" => Value::Int(
                match (
                    self.host.in_transaction(),
                    self.host.transaction_failed() || self.host.doomed(),
                ) {
                    (false, _) => 0,
                    (true, false) => 1,
                    (true, true) => -1,
                },
            ),
            "error_message()" | "error_number()" | "error_severity()" | "error_state()"
            | "error_line()" | "error_procedure()" => match self.caught.last() {
                None => Value::Null,
                Some(c) => match r {
                    "error_message()" => Value::text(c.error.message.clone()),
                    "error_number()" => Value::Int(c.number),
                    "error_severity()" => Value::Int(c.severity),
                    "error_state()" => Value::Int(c.state),
                    _ => Value::Null,
                },
            },
            name => self
                .frame()
                .get(name)
                .map(|v| v.value.clone())
                .ok_or_else(|| undeclared(name))?,
        })
    }

    /// Compiles (once per text) and runs a statement.
    fn sql(&mut self, text: &str) -> Result<QueryOutput> {
        self.follow_epoch();
        if let Some(o) = self.direct_call(text)? {
            return Ok(o);
        }
        let compiled = self.compiled(text)?;
        let params = compiled
            .0
            .refs
            .iter()
            .map(|r| self.value_of(r))
            .collect::<Result<Vec<_>>>()?;
        let frame = self.frames.last();
        let types: Vec<Option<DataType>> = compiled
            .0
            .refs
            .iter()
            .map(|r| frame.and_then(|f| f.get(r.as_str())).map(|v| v.ty.clone()))
            .collect();
        self.host.run_typed(&compiled.1, &params, &types)
    }

    /// A function created, changed or dropped since may change what a
    /// compiled statement's call means.
    fn follow_epoch(&mut self) {
        let epoch = funcs::epoch();
        if self.host.state().func_epoch != epoch {
            self.host.state().lifted.clear();
            self.host.state().direct.clear();
            self.host.state().func_epoch = epoch;
        }
    }

    fn compiled(&mut self, text: &str) -> Result<Arc<(Lifted, Arc<Command>)>> {
        self.follow_epoch();
        // The scope's table variables are part of what the text means.
        let tables = self.table_names();
        let key = if tables.is_empty() {
            std::borrow::Cow::Borrowed(text)
        } else {
            let mut k = text.to_string();
            for (_, t) in &tables {
                k.push('\u{1}');
                k.push_str(t);
            }
            std::borrow::Cow::Owned(k)
        };
        if let Some(c) = self.host.state().lifted.get(key.as_ref()) {
            return Ok(c.clone());
        }
        let rewritten = self.pseudo.as_ref().and_then(|p| p.rewrite(text));
        let text = rewritten.as_deref().unwrap_or(text);
        let expanded = self.expand_calls(text)?;
        let l = lift(&expanded, &tables)?;
        let cmd = self.host.parse(&l.text)?;
        let c = Arc::new((l, cmd));
        let st = self.host.state();
        if st.lifted.len() >= CACHE {
            st.lifted.clear();
        }
        st.lifted.insert(key.into_owned(), c.clone());
        Ok(c)
    }

    /// An integer expression over variables, evaluated here (`None`: SQL
    /// evaluates it).
    fn fast(&mut self, expr: &str) -> Option<fast::V> {
        let f = match self.host.state().fast.get(expr) {
            Some(f) => f.clone()?,
            None => {
                let f = fast::parse(expr).map(Arc::new);
                let st = self.host.state();
                if st.fast.len() >= CACHE {
                    st.fast.clear();
                }
                st.fast.insert(expr.to_string(), f.clone());
                f?
            }
        };
        let frame = self.frames.last()?;
        f.eval(&|n: &str| frame.get(n).map(|v| v.value.clone()))
    }

    /// An expression's value (`SELECT expr`).
    fn eval(&mut self, expr: &str) -> Result<Value> {
        match self.fast(expr) {
            Some(fast::V::Int(i)) => return Ok(Value::Int(i)),
            Some(fast::V::Null) => return Ok(Value::Null),
            _ => {}
        }
        let o = self.sql(&format!("SELECT {expr}"))?;
        Ok(o.rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .unwrap_or(Value::Null))
    }

    /// A condition's truth (NULL is false).
    fn truth(&mut self, cond: &str) -> Result<bool> {
        match self.fast(cond) {
            Some(fast::V::Bool(b)) => return Ok(b),
            Some(fast::V::Null) => return Ok(false),
            _ => {}
        }
        let v = self.eval(&format!("CASE WHEN {cond} THEN 1 ELSE 0 END"))?;
        Ok(matches!(v, Value::Int(1)))
    }

    /// A parsed procedure body, cached by its text.
    fn body(&mut self, text: &str) -> Result<Arc<Vec<TStmt>>> {
        if let Some(b) = self.host.state().bodies.get(text) {
            return Ok(b.clone());
        }
        let b = Arc::new(crate::front::parse_batch(text)?);
        let st = self.host.state();
        if st.bodies.len() >= CACHE {
            st.bodies.clear();
        }
        st.bodies.insert(text.to_string(), b.clone());
        Ok(b)
    }
}

/// Errors after which a SQL Server batch goes on with its next statement
/// (outside a transaction, the failed statement alone undone): constraint
/// and arithmetic errors. Others (names, conversions, syntax) end the batch.
fn statement_level(e: &SqlError) -> bool {
    matches!(
        e.kind,
        ErrorKind::UniqueViolation
            | ErrorKind::NotNullViolation
            | ErrorKind::CheckViolation
            | ErrorKind::ForeignKeyViolation
            | ErrorKind::DivisionByZero
            | ErrorKind::NumericOutOfRange
            | ErrorKind::StringTooLong
    )
}

/// The local temporary table (`#t`, not `##t`) a `CREATE TABLE` makes.
fn temp_table_created(text: &str) -> Option<String> {
    let mut w = text.split_whitespace();
    if !w.next()?.eq_ignore_ascii_case("create") || !w.next()?.eq_ignore_ascii_case("table") {
        return None;
    }
    let name = w.next()?.split('(').next()?;
    (name.starts_with('#') && !name.starts_with("##")).then(|| name.to_string())
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Text | DataType::Varchar(_) | DataType::Char(_))
}

/// SQL Server's error number for an error (what ERROR_NUMBER() returns).
fn error_number(e: &SqlError) -> i64 {
    match e.kind {
        ErrorKind::DivisionByZero => 8134,
        // A target row two source rows update or delete.
        ErrorKind::CardinalityViolation if e.message.starts_with("MERGE") => 8672,
        ErrorKind::UniqueViolation => 2627,
        ErrorKind::NotNullViolation => 515,
        ErrorKind::CheckViolation => 547,
        ErrorKind::ForeignKeyViolation => 547,
        ErrorKind::InvalidText => 245,
        ErrorKind::NumericOutOfRange => 8115,
        ErrorKind::UndefinedTable => 208,
        ErrorKind::UndefinedColumn => 207,
        _ => 50000,
    }
}
