//! Triggers (PostgreSQL's `CREATE TRIGGER`): definitions stored as rows of
//! [`TRIGGER_TABLE`] (logged, recovered, replicated and undone by a
//! rollback as rows are, as functions are), found by the DML stage through
//! the hook [`trigger_hook`] puts in each statement's `SessionInfo`, and
//! run on the runtime over a host that writes in the firing statement's
//! transaction (`host.rs`).
//!
//! The common path: a process-wide registry knows, per database, the
//! tables that have (or once had) a trigger; a data change on any other
//! table costs one look-up per statement. For a table in it, the
//! statement reads the table's rows of [`TRIGGER_TABLE`] in its own
//! transaction (so a trigger created in an open transaction fires there
//! and nowhere else until it commits).

mod ddl;
mod host;
mod pseudo;

pub(super) use pseudo::Pseudo;

use super::*;
use crate::catalog::privileges::Who;
use crate::front::plpgsql::trigger::{PgTrigger, Timing, TrigOp};
use crate::front::plpgsql::{field_var, PgFunc, RETURN_NEW, RETURN_OLD};
use crate::functions::trigger_hook::{Fire, FireCtx, TableTriggers, Triggers};
use crate::functions::{Env, TriggerHook};
use crate::query::Planner;
use std::collections::HashSet;
use std::sync::{Mutex, RwLock};
use walden_engine::{Table, Transaction};

pub use crate::front::plpgsql::trigger::TRIGGER_TABLE;

/// The OIDs of the tables with triggers: per database, read from
/// [`TRIGGER_TABLE`] at first use; and every table a CREATE TRIGGER named
/// since the process started (committed or not: a superset is safe).
#[derive(Default)]
struct Known {
    loaded: HashMap<u32, HashSet<i64>>,
    added: HashSet<i64>,
}

static REGISTRY: RwLock<Option<Known>> = RwLock::new(None);

/// Notes that the table of OID `tbl` has a trigger.
fn note(tbl: i64) {
    if let Ok(mut r) = REGISTRY.write() {
        r.get_or_insert_with(Known::default).added.insert(tbl);
    }
}

/// Whether table `tbl` of database `db` may have triggers; `None` before
/// the database's list was read.
fn may_have(db: u32, tbl: i64) -> Option<bool> {
    let r = REGISTRY.read().ok()?;
    let k = r.as_ref()?;
    if k.added.contains(&tbl) {
        return Some(true);
    }
    k.loaded.get(&db).map(|l| l.contains(&tbl))
}

/// The session's trigger hook for one statement.
pub fn trigger_hook(who: Who, db: Arc<walden_engine::Database>) -> TriggerHook {
    TriggerHook(Arc::new(PgTriggers {
        who,
        db,
        funcs: Mutex::new(HashMap::new()),
        defs: Mutex::new(HashMap::new()),
        parsed: super::pg_call::ParseCache::default(),
        plans: Mutex::new(HashMap::new()),
    }))
}

/// A cached plan's key: the command's address and its parameters' types.
type PlanKey = (usize, Vec<Option<DataType>>);

/// Runs one statement's triggers; its caches live as long.
pub(super) struct PgTriggers {
    who: Who,
    db: Arc<walden_engine::Database>,
    funcs: Mutex<HashMap<String, Arc<PgFunc>>>,
    defs: Mutex<HashMap<String, Arc<PgTrigger>>>,
    parsed: super::pg_call::ParseCache,
    plans: Mutex<HashMap<PlanKey, Arc<host::Planned>>>,
}

impl PgTriggers {
    /// Runs a read of [`TRIGGER_TABLE`] in `env`'s transaction; `None`
    /// when the table does not exist.
    fn read(&self, env: &Env<'_>, sql: &str, params: &[Value]) -> Result<Option<Vec<Vec<Value>>>> {
        let stmt = match crate::front::parse(sql)? {
            Command::Sql(s) => s,
            _ => return Err(SqlError::internal("a trigger catalog read did not parse")),
        };
        let sqlparser::ast::Statement::Query(q) = stmt.as_ref() else {
            return Err(SqlError::internal("a trigger catalog read is not a query"));
        };
        let mut p = Planner::new(self.db.clone(), env.info.system, &[]);
        p.viewer = Some(env.tx.id());
        let plan = match crate::query::plan_query(&mut p, q, None) {
            Ok(p) => p,
            Err(e) if e.kind == ErrorKind::UndefinedTable => return Ok(None),
            Err(e) => return Err(e),
        };
        let env = Env {
            params,
            outer: &[],
            tx: env.tx,
            info: env.info,
            cancel: env.cancel,
            instance: env.instance,
        };
        Ok(Some(crate::query::execute_plan(&plan, &env, None)?))
    }

    fn definition(&self, text: &str) -> Result<Arc<PgTrigger>> {
        if let Some(d) = self.defs.lock().ok().and_then(|d| d.get(text).cloned()) {
            return Ok(d);
        }
        let d = Arc::new(
            crate::front::plpgsql::trigger::parse_stored(text)
                .ok_or_else(|| SqlError::internal("a stored trigger definition does not parse"))?,
        );
        if let Ok(mut m) = self.defs.lock() {
            m.insert(text.to_string(), d.clone());
        }
        Ok(d)
    }
}

impl Triggers for PgTriggers {
    fn of(&self, env: &Env<'_>, table: &Table) -> Result<Option<Arc<TableTriggers>>> {
        let db = self.db.id();
        let oid = crate::types::oids::table_oid(table.id());
        match may_have(db, oid) {
            Some(false) => return Ok(None),
            Some(true) => {}
            None => {
                let oids = self
                    .read(
                        env,
                        &format!("SELECT tbl_oid FROM public.{TRIGGER_TABLE}"),
                        &[],
                    )?
                    .unwrap_or_default();
                let set: HashSet<i64> = oids
                    .into_iter()
                    .filter_map(|r| r.first().and_then(Value::as_i64))
                    .collect();
                let has = set.contains(&oid);
                if let Ok(mut r) = REGISTRY.write() {
                    r.get_or_insert_with(Known::default)
                        .loaded
                        .entry(db)
                        .or_insert(set);
                }
                if !has && may_have(db, oid) != Some(true) {
                    return Ok(None);
                }
            }
        }
        let rows = self
            .read(
                env,
                &format!(
                    "SELECT name, definition FROM public.{TRIGGER_TABLE} WHERE tbl_oid = $1 AND enabled"
                ),
                &[Value::Int(oid)],
            )?
            .unwrap_or_default();
        if rows.is_empty() {
            return Ok(None);
        }
        let mut list = Vec::with_capacity(rows.len());
        for r in rows {
            list.push(self.definition(&r[1].to_string())?);
        }
        // Firing order: by name, byte by byte (PostgreSQL's).
        list.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(Some(Arc::new(TableTriggers { list })))
    }

    fn fire(
        &self,
        tx: &mut Transaction,
        cx: &FireCtx<'_>,
        f: Fire<'_>,
    ) -> Result<Option<Vec<Value>>> {
        let mut host = host::TxHost {
            tx,
            info: cx.info,
            cancel: cx.cancel,
            instance: cx.instance,
            owner: self,
            state: TsqlState::default(),
        };
        let mut r = Runner::new(&mut host);
        if let Some(body) = &f.trig.tsql_body {
            // A trigger is a scope of its own for SCOPE_IDENTITY(); its
            // inserts show in @@IDENTITY, as in SQL Server.
            let identity = &cx.info.identity;
            let saved = identity.lock().ok().and_then(|mut l| l.scope.take());
            let done = r.run_tsql_trigger(&f, body);
            if let Ok(mut l) = identity.lock() {
                l.scope = saved;
            }
            // Its result sets go to the client (SQL Server sends them).
            let sets: Vec<QueryOutput> = std::mem::take(&mut r.out)
                .into_iter()
                .filter_map(|o| o.ok().filter(|o| o.columns.is_some()))
                .collect();
            if !sets.is_empty() {
                if let Some(list) = cx
                    .info
                    .trigger_sets
                    .lock()
                    .ok()
                    .as_mut()
                    .and_then(|g| g.as_mut())
                {
                    list.extend(sets);
                }
            }
            return done.map(|_| None);
        }
        r.pg = true;
        let func = self.function(&mut r, &f.trig.func)?;
        r.run_trigger(&func, &f)
    }
}

impl PgTriggers {
    fn function<H: Host>(&self, r: &mut Runner<'_, H>, name: &str) -> Result<Arc<PgFunc>> {
        if let Some(f) = self.funcs.lock().ok().and_then(|m| m.get(name).cloned()) {
            return Ok(f);
        }
        let f = r
            .func_definition(name)?
            .and_then(|d| crate::front::plpgsql::parse_pg_function(&d))
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function {name}() does not exist"),
                )
            })?;
        let f = Arc::new(f);
        if let Ok(mut m) = self.funcs.lock() {
            m.insert(name.to_string(), f.clone());
        }
        Ok(f)
    }
}

/// A table's engine name split as PostgreSQL shows it: schema, name.
pub(crate) fn schema_and_name(engine: &str) -> (String, String) {
    if let Some((spid, rel)) = crate::types::temp_names::split_temp(engine) {
        return (format!("pg_temp_{spid}"), rel.to_string());
    }
    let (s, n) = walden_engine::namespace::split_engine_name(engine);
    (s.to_string(), n.to_string())
}

thread_local! {
    /// The T-SQL triggers running on this thread (table id, name): one
    /// does not fire itself again (SQL Server's RECURSIVE_TRIGGERS OFF).
    static ACTIVE: std::cell::RefCell<Vec<(u32, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Leaves [`ACTIVE`] as it was when dropped.
struct Active;

impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.borrow_mut().pop());
    }
}

impl<'h, H: Host> Runner<'h, H> {
    /// A T-SQL trigger: its body run once for the statement, with
    /// `inserted` / `deleted` and `@@ROWCOUNT` the statement's.
    fn run_tsql_trigger(&mut self, f: &Fire<'_>, body: &str) -> Result<()> {
        let me = (f.table.id(), f.trig.name.clone());
        if ACTIVE.with(|a| a.borrow().contains(&me)) {
            return Ok(());
        }
        if ACTIVE.with(|a| a.borrow().len()) >= MAX_NESTING {
            return Err(SqlError::new(
                ErrorKind::StackDepth,
                format!("Maximum stored procedure, function, trigger, or view nesting level exceeded (limit {MAX_NESTING})."),
            ));
        }
        ACTIVE.with(|a| a.borrow_mut().push(me));
        let _active = Active;
        let stmts = self.body(body)?;
        let cols = &f.table.def.columns;
        let mut frame = HashMap::new();
        let (mut ins, mut del) = (0, 0);
        for (old, new) in f.rows {
            for (which, row, n) in [("ins", new, &mut ins), ("del", old, &mut del)] {
                let Some(row) = row else { continue };
                for (c, col) in cols.iter().enumerate() {
                    frame.insert(
                        pseudo::cell(which, *n, c),
                        Var {
                            ty: col.data_type.clone(),
                            value: row[c].clone(),
                        },
                    );
                }
                *n += 1;
            }
        }
        self.pseudo = Some(Arc::new(Pseudo {
            cols: cols
                .iter()
                .map(|c| (c.name.clone(), c.data_type.clone()))
                .collect(),
            inserted: ins,
            deleted: del,
            assigned: f
                .assigned
                .iter()
                .map(|&i| cols[i].name.to_ascii_lowercase())
                .collect(),
        }));
        self.host.state().rowcount = f.rows.len() as i64;
        self.frames.push(frame);
        self.temps.push(Vec::new());
        self.tables.push(HashMap::new());
        let r = stacker::maybe_grow(256 * 1024, 2 * 1024 * 1024, || self.block(&stmts));
        self.frames.pop();
        self.temps.pop();
        self.tables.pop();
        self.pseudo = None;
        r.map(|_| ())
    }

    /// One firing: NEW's and OLD's fields and the `TG_` values bound, the
    /// WHEN condition checked (false: the row goes on as it was), the body
    /// run; for a BEFORE ROW trigger, the row it returns.
    fn run_trigger(&mut self, func: &PgFunc, f: &Fire<'_>) -> Result<Option<Vec<Value>>> {
        if !func.is_trigger() {
            return Err(SqlError::new(
                ErrorKind::InvalidObjectDefinition,
                format!("function {} must return type trigger", func.name),
            ));
        }
        let t = f.trig;
        let cols = &f.table.def.columns;
        let mut frame = HashMap::new();
        for (rec, row) in [("new", f.new), ("old", f.old)] {
            for (i, c) in cols.iter().enumerate() {
                frame.insert(
                    field_var(rec, &c.name),
                    Var {
                        ty: c.data_type.clone(),
                        value: row.map_or(Value::Null, |r| r[i].clone()),
                    },
                );
            }
        }
        let (schema, name) = schema_and_name(f.table.name());
        let text = |s: &str| Var {
            ty: DataType::Text,
            value: Value::text(s),
        };
        frame.insert("@tg_op".into(), text(f.op.word()));
        frame.insert("@tg_name".into(), text(&t.name));
        frame.insert("@tg_when".into(), text(t.timing.word()));
        frame.insert(
            "@tg_level".into(),
            text(if t.row { "ROW" } else { "STATEMENT" }),
        );
        frame.insert("@tg_table_name".into(), text(&name));
        frame.insert("@tg_relname".into(), text(&name));
        frame.insert("@tg_table_schema".into(), text(&schema));
        frame.insert(
            "@tg_relid".into(),
            Var {
                ty: DataType::BigInt,
                value: Value::Int(crate::types::oids::table_oid(f.table.id())),
            },
        );
        frame.insert(
            "@tg_nargs".into(),
            Var {
                ty: DataType::Int,
                value: Value::Int(t.args.len() as i64),
            },
        );
        frame.insert(
            "@tg_argv".into(),
            Var {
                ty: DataType::Array(Box::new(DataType::Text)),
                value: Value::Array(t.args.iter().map(|a| Value::text(a.clone())).collect()),
            },
        );
        // What the row goes on as when the trigger does not run.
        let unchanged = || {
            Ok(match f.op {
                TrigOp::Delete => f.old.map(|o| o.to_vec()),
                _ => f.new.map(|n| n.to_vec()),
            })
        };
        if let (Some(w), true) = (&t.when, t.row) {
            let cond = crate::front::plpgsql::trigger_expr(w)?;
            self.frames.push(frame);
            let ok = self.truth(&cond);
            frame = self.frames.pop().unwrap_or_default();
            if !ok? {
                return unchanged();
            }
        }
        let (v, frame) = self.invoke_frame(func, frame)?;
        if !(t.row && t.timing == Timing::Before) {
            return Ok(None);
        }
        let rec = match v {
            Some(Value::Text(s)) if &*s == RETURN_NEW && f.new.is_some() => "new",
            Some(Value::Text(s)) if &*s == RETURN_OLD && f.old.is_some() => "old",
            _ => return Ok(None),
        };
        Ok(Some(
            cols.iter()
                .map(|c| {
                    frame
                        .get(&field_var(rec, &c.name))
                        .map_or(Value::Null, |v| v.value.clone())
                })
                .collect(),
        ))
    }
}
