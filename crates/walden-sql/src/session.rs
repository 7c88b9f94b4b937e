//! A SQL session: the current database, the transaction block (explicit or
//! auto-commit), session settings, and statement dispatch.

use crate::copy::{CopyFormat, CopyIn, CopyOut};
use crate::ddl;
use crate::dml::{self, Ctx};
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::{self, Command};
use crate::functions::SessionInfo;
use crate::query::{self, Planner};
use crate::settings::Settings;
use crate::txmodes::TxCommand;
use crate::{Column, QueryOutput, SqlEngine};
use sqlparser::ast::{self, Statement};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use walden_engine::types::now_micros;
#[path = "cursors.rs"]
mod cursors;
#[path = "txblock.rs"]
mod txblock;

use walden_engine::{
    CommitRequest, DataType, Database, DelayedDurability, RecoveryModel, Session, Transaction,
    Value,
};

/// Transaction state for ReadyForQuery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxStatus {
    Idle,
    InBlock,
    Failed,
}

/// A prepared statement.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub sql: String,
    command: Arc<Command>,
    pub param_types: Vec<DataType>,
    /// Result columns; `None` for statements that return no rows.
    pub columns: Option<Vec<Column>>,
}

pub struct SqlSession {
    engine: Arc<SqlEngine>,
    session: Arc<Session>,
    db: Arc<Database>,
    user: String,
    /// The session's role (its privileges; see `privileges.rs`).
    role: u32,
    /// Counts the connection against the role's CONNECTION LIMIT.
    _login: Option<crate::privileges::LoginGuard>,
    tx: Option<Transaction>,
    explicit: bool,
    failed: bool,
    settings: Settings,
    /// When the explicit transaction began (now() within it).
    tx_start: i64,
    /// The explicit block has run a query (SET TRANSACTION ISOLATION LEVEL
    /// must come before).
    tx_queried: bool,
    /// In an extended-protocol pipeline: statements share one implicit
    /// transaction until the client's Sync ([`SqlSession::end_implicit`]).
    implicit: bool,
    /// The implicit block is the extended protocol's (not a multi-statement
    /// query's): DECLARE without HOLD is refused there, as in PostgreSQL.
    pipeline: bool,
    /// Open cursors (see `cursors.rs`).
    cursors: Vec<crate::cursor::Cursor>,
    cancel: Arc<AtomicBool>,
    /// Set by the statement-timeout watchdog when it cancels a statement.
    timed_out: Arc<AtomicBool>,
    /// Parsed statements by text: drivers and pgbench send the same texts
    /// again and again, and parsing is most of a keyed statement's cost.
    /// (These maps hash every statement's text: foldhash rather than std's
    /// SipHash, which cost about 2% of a TPC-B transaction's instructions.)
    parsed: foldhash::HashMap<String, Arc<Command>>,
    /// Parsed templates of keyed writes with their literals lifted out.
    templates: foldhash::HashMap<String, Option<Arc<Command>>>,
    /// Compiled plans of parsed commands (see [`SqlSession::run_planned`]).
    plans: foldhash::HashMap<usize, CachedPlan>,
    /// Executions that reused a cached plan (for tests and diagnostics).
    plan_hits: u64,
}

impl Drop for SqlSession {
    /// Releases the session's advisory locks. The caches may hold statements
    /// nested up to `front::MAX_DEPTH` deep, whose drop recurses once per
    /// level: they are dropped with enough stack.
    fn drop(&mut self) {
        // A session's advisory locks end with it, as in PostgreSQL.
        self.engine.advisory.unlock_all(self.session.id);
        let caches = (
            std::mem::take(&mut self.parsed),
            std::mem::take(&mut self.templates),
            std::mem::take(&mut self.plans),
        );
        crate::stack::with_stack_to_drop(move || drop(caches));
    }
}

/// A compiled INSERT, UPDATE, DELETE or query, kept between executions of
/// the same parsed command: pgbench and drivers run a handful of statement
/// shapes over and over, and name resolution and planning cost about as much
/// as executing a keyed statement.
enum StmtPlan {
    Query(query::QueryPlan),
    Locking(crate::locking::LockingPlan),
    Insert(dml::InsertPlan),
    Update(dml::Planned),
    Delete(dml::DeletePlan),
}

impl StmtPlan {
    fn reusable(&self) -> bool {
        match self {
            StmtPlan::Query(q) => query::reusable(q),
            StmtPlan::Locking(_) => false,
            StmtPlan::Insert(i) => i.reusable(),
            StmtPlan::Update(u) => u.reusable(),
            StmtPlan::Delete(d) => d.reusable(),
        }
    }
}

/// A plan and what it was made against. The plan holds the tables it
/// resolved, so it is valid only for the same database at the same catalog
/// version (any DDL, TRUNCATE or ALTER bumps it).
struct CachedPlan {
    /// Keeps the command alive: the cache is keyed by its address.
    _command: Arc<Command>,
    /// Weak, so that a session's cache does not keep a dropped database open;
    /// it still keeps the address from being reused.
    db: std::sync::Weak<Database>,
    catalog_version: u64,
    plan: Arc<StmtPlan>,
    /// The table privileges the statement needs (checked at every run).
    needs: Arc<[crate::privileges::Need]>,
}

/// Most statements kept in a session's parse cache.
const PARSE_CACHE: usize = 512;

impl std::fmt::Debug for SqlSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlSession")
            .field("spid", &self.session.id)
            .field("db", &self.db.name())
            .finish()
    }
}

fn hadr_err(e: walden_replication::ReplicationError) -> SqlError {
    use walden_replication::ReplicationError as R;
    match e {
        R::Engine(e) => e.into(),
        R::UnknownGroup(_) => SqlError::new(ErrorKind::UndefinedObject, e.to_string()),
        R::Invalid(_) => SqlError::new(ErrorKind::InvalidParameter, e.to_string()),
        R::State(_) => SqlError::new(ErrorKind::PrerequisiteState, e.to_string()),
        R::Io(_) => SqlError::new(ErrorKind::Io, e.to_string()),
    }
}

/// The row `ALTER AVAILABILITY GROUP ... [FORCE_]FAILOVER` returns per
/// database (also its description for the extended protocol).
fn failover_columns() -> Vec<Column> {
    [
        ("database_name", DataType::Varchar(None)),
        ("failover_lsn", DataType::BigInt),
        ("primary_last_known_lsn", DataType::BigInt),
        ("possible_loss_bytes", DataType::BigInt),
        ("epoch", DataType::BigInt),
    ]
    .into_iter()
    .map(|(n, ty)| Column {
        name: n.to_string(),
        ty,
    })
    .collect()
}

fn failed_tx() -> SqlError {
    SqlError::new(
        ErrorKind::InFailedTransaction,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

impl SqlSession {
    pub(crate) fn new(
        engine: Arc<SqlEngine>,
        database: &str,
        user: &str,
        role: u32,
        login: Option<crate::privileges::LoginGuard>,
        application_name: &str,
    ) -> Result<SqlSession> {
        let db = engine.instance.database(database).map_err(|_| {
            SqlError::new(
                ErrorKind::UndefinedDatabase,
                format!("database \"{database}\" does not exist"),
            )
        })?;
        let session = engine.instance.new_session();
        session.set_program_name(application_name);
        let cancel_flag = session.cancel.clone();
        let settings = Settings::new(session.clone(), application_name);
        Ok(SqlSession {
            engine,
            session,
            db,
            user: user.to_string(),
            role,
            _login: login,
            tx: None,
            explicit: false,
            failed: false,
            settings,
            tx_start: 0,
            tx_queried: false,
            implicit: false,
            pipeline: false,
            cursors: Vec::new(),
            cancel: cancel_flag,
            timed_out: Default::default(),
            parsed: Default::default(),
            templates: Default::default(),
            plans: Default::default(),
            plan_hits: 0,
        })
    }

    /// How many statement executions reused a cached plan so far.
    pub fn plan_cache_hits(&self) -> u64 {
        self.plan_hits
    }

    pub fn session_id(&self) -> u32 {
        self.session.id
    }

    pub fn engine_session(&self) -> &Arc<Session> {
        &self.session
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    /// The session's timeouts: what SET statement_timeout (and the idle
    /// ones) chose, or the server's defaults.
    pub fn timeouts(&self) -> crate::timeouts::SessionTimeouts {
        crate::timeouts::from_settings(&self.settings)
    }

    /// The server's configured defaults for the timeouts (what RESET
    /// returns to).
    pub fn set_timeouts(&mut self, t: crate::timeouts::SessionTimeouts) {
        crate::timeouts::set_defaults(&self.settings, t);
    }

    /// The session time zone, for encoding results and decoding parameters.
    pub fn time_zone(&self) -> walden_engine::types::zone::Zone {
        self.settings.zone()
    }

    pub fn tx_status(&self) -> TxStatus {
        if self.failed {
            TxStatus::Failed
        } else if self.explicit {
            TxStatus::InBlock
        } else {
            TxStatus::Idle
        }
    }

    /// Runs a batch (simple query protocol): one result per statement,
    /// stopping after the first error.
    pub fn execute_batch(&mut self, sql: &str) -> Vec<Result<QueryOutput>> {
        crate::stack::with_stack_for(sql, || self.execute_batch_inner(sql))
    }

    fn execute_batch_inner(&mut self, sql: &str) -> Vec<Result<QueryOutput>> {
        let mut out = Vec::new();
        let stmts = front::split(sql);
        if stmts.is_empty() {
            return out;
        }
        // Several statements in one simple query run as one implicit
        // transaction, as in PostgreSQL: an error undoes the whole message's
        // work, a BEGIN in it turns the block into an explicit one, and a
        // COMMIT or ROLLBACK in it ends the block (later statements start
        // another). One statement alone simply auto-commits.
        let block = stmts.len() > 1 && !self.implicit;
        if block {
            self.implicit = true;
        }
        let mut failed = false;
        for s in stmts {
            // A syntax error's position counts from the start of the query string.
            let before = &sql[..(s.as_ptr() as usize - sql.as_ptr() as usize).min(sql.len())];
            let r = match self.fast_template(s) {
                Some((c, params)) => self.execute_shared(&c, &params),
                None => self
                    .parse_cached(s)
                    .map_err(|e| e.shift_position(before))
                    .and_then(|c| self.execute_shared(&c, &[])),
            };
            let err = r.is_err();
            // The copy data follows; statements after COPY FROM STDIN in the
            // same query are not run (PostgreSQL does the same).
            let copy = matches!(&r, Ok(o) if o.copy_in.is_some());
            if err {
                self.note_error();
                failed = true;
            }
            out.push(r);
            if err || copy {
                break;
            }
        }
        if block {
            if failed {
                self.implicit = false;
            } else if let Err(e) = self.end_implicit() {
                // The commit of the implicit block failed after its last
                // statement completed.
                self.note_error();
                out.push(Err(e));
            }
        }
        out
    }

    /// A keyed write whose literals were lifted into parameters, with its
    /// cached parse (see `front::normalize_literals`); `None` to parse the
    /// text as it is.
    fn fast_template(&mut self, sql: &str) -> Option<(Arc<Command>, Vec<Value>)> {
        let (template, params) = front::normalize_literals(sql)?;
        if let Some(c) = self.templates.get(&template) {
            return c.clone().map(|c| (c, params));
        }
        // Templates that do not parse (a literal where the grammar wants a
        // keyword or a type modifier) are remembered as such.
        let parsed = front::parse(&template).ok().map(Arc::new);
        if self.templates.len() >= PARSE_CACHE {
            self.templates.clear();
        }
        self.templates.insert(template, parsed.clone());
        parsed.map(|c| (c, params))
    }

    fn parse_cached(&mut self, sql: &str) -> Result<Arc<Command>> {
        if let Some(c) = self.parsed.get(sql) {
            return Ok(c.clone());
        }
        let c = Arc::new(front::parse(sql)?);
        if self.parsed.len() >= PARSE_CACHE {
            self.parsed.clear();
        }
        self.parsed.insert(sql.to_string(), c.clone());
        Ok(c)
    }

    /// Parses and describes a statement (extended protocol Parse).
    pub fn prepare(&mut self, sql: &str, param_types: &[Option<DataType>]) -> Result<Prepared> {
        crate::stack::with_stack_for(sql, || self.prepare_inner(sql, param_types))
    }

    fn prepare_inner(&mut self, sql: &str, param_types: &[Option<DataType>]) -> Result<Prepared> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        self.follow_reseed();
        let stmts = front::split(sql);
        if stmts.len() > 1 {
            return Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let command = match stmts.first() {
            Some(s) => {
                let before = &sql[..(s.as_ptr() as usize - sql.as_ptr() as usize).min(sql.len())];
                self.parse_cached(s).map_err(|e| e.shift_position(before))?
            }
            None => Arc::new(Command::Ignored(String::new())),
        };
        let mut p = Planner::new(self.db.clone(), &self.engine.instance, param_types);
        let columns = match command.as_ref() {
            Command::Sql(stmt) => match stmt.as_ref() {
                Statement::Query(q) if crate::locking::wanted(q) => {
                    Some(crate::locking::plan(&mut p, q)?.columns())
                }
                Statement::Query(q) => Some(query::plan_query(&mut p, q, None)?.columns),
                Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                    dml::describe(&mut p, stmt)?
                }
                _ => None,
            },
            Command::DeleteTop(_, stmt) => dml::describe(&mut p, stmt)?,
            Command::Show(name) => Some(vec![Column {
                name: name.clone(),
                ty: DataType::Text,
            }]),
            Command::PgbenchPartitionProbe(_) => Some(probe_columns()),
            Command::Declare(d) => {
                // Plans the query for its parameters' types; DECLARE returns no rows.
                query::plan_query(&mut p, &d.query, None)?;
                None
            }
            // The cursor's columns, if it is open now (PostgreSQL describes
            // a FETCH by its cursor).
            Command::Fetch(f) if !f.is_move => self.cursor_columns(&f.name),
            Command::AvailabilityGroupFailover { .. } => Some(failover_columns()),
            _ => None,
        };
        let param_types = p
            .params
            .into_iter()
            .map(|t| t.unwrap_or(DataType::Text))
            .collect();
        Ok(Prepared {
            sql: sql.to_string(),
            command,
            param_types,
            columns,
        })
    }

    /// Executes a prepared statement with bound parameters.
    pub fn execute_prepared(&mut self, p: &Prepared, params: Vec<Value>) -> Result<QueryOutput> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        crate::stack::with_stack_for(&p.sql, || self.execute_prepared_inner(p, params))
    }

    fn execute_prepared_inner(&mut self, p: &Prepared, params: Vec<Value>) -> Result<QueryOutput> {
        let params: Vec<Value> = params
            .into_iter()
            .enumerate()
            .map(|(i, v)| match p.param_types.get(i) {
                Some(t) if !v.is_null() && *t != DataType::Text => {
                    walden_engine::types::coerce(v.clone(), t).or(Ok(v))
                }
                _ => Ok(v),
            })
            .collect::<Result<Vec<_>>>()?;
        let r = self.execute_shared(&p.command, &params);
        if r.is_err() {
            self.note_error();
        }
        r
    }

    /// Marks the current statement as failed from outside the SQL layer (a
    /// parameter that cannot be decoded, a client's CopyFail): an explicit
    /// transaction becomes failed, as PostgreSQL does.
    pub fn abort_statement(&mut self) {
        self.note_error();
    }

    fn hadr(&self) -> Result<walden_replication::Replication> {
        self.engine.replication().ok_or_else(|| {
            SqlError::new(
                ErrorKind::FeatureNotSupported,
                "availability groups need replication configured on this server \
                 (walden serve --replica-name NAME [--endpoint-listen HOST:PORT], or [replication] in walden.toml)",
            )
        })
    }

    /// Whether the session's role is a superuser now.
    pub fn is_superuser(&self) -> bool {
        self.engine.instance.roles().is_superuser(self.role)
    }

    /// The session's role with the role catalog as it is now.
    fn who(&self) -> crate::privileges::Who {
        crate::privileges::Who::of(&self.engine.instance, self.role)
    }

    fn info(&self) -> SessionInfo {
        let statement_now = now_micros();
        SessionInfo {
            spid: self.session.id,
            database: self.db.name().to_string(),
            database_id: self.db.id(),
            user: self.user.clone(),
            role: self.role,
            mem: Arc::new(crate::membudget::Budget::new(
                self.engine.statement_memory_limit(),
            )),
            // now() is the transaction's start, as in PostgreSQL.
            now: if self.explicit {
                self.tx_start
            } else {
                statement_now
            },
            statement_now,
            database_ids: std::sync::OnceLock::new(),
            replication: self.engine.replication(),
            settings: self.settings.clone(),
            advisory: self.engine.advisory.clone(),
            cursors: self.cursor_rows(),
        }
    }

    /// Starts an implicit transaction block: until [`SqlSession::end_implicit`],
    /// statements outside an explicit transaction share one transaction
    /// instead of committing each (the extended protocol runs everything
    /// between two Syncs this way, so an error undoes the whole group).
    pub fn begin_implicit(&mut self) {
        self.implicit = true;
        self.pipeline = true;
    }

    /// Ends the implicit block (the client's Sync): commits what it did
    /// unless an explicit transaction took it over.
    pub fn end_implicit(&mut self) -> Result<()> {
        self.implicit = false;
        self.pipeline = false;
        if self.explicit {
            return Ok(());
        }
        match self.tx.take() {
            Some(tx) => {
                let id = tx.id();
                tx.commit(CommitRequest::Default)?;
                self.cursors_committed(id);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Runs `f` in the current transaction block, or in its own auto-commit
    /// transaction.
    fn in_tx<T>(&mut self, f: impl FnOnce(&mut Transaction, &Self) -> Result<T>) -> Result<T> {
        if self.explicit || self.implicit {
            let mut tx = match self.tx.take() {
                Some(t) => t,
                None => self.new_tx(),
            };
            self.tx_queried = true;
            self.begin_statement(&mut tx);
            let r = f(&mut tx, self);
            self.tx = Some(tx);
            r
        } else {
            let mut tx = self.new_tx();
            self.begin_statement(&mut tx);
            let v = f(&mut tx, self)?;
            tx.commit(CommitRequest::Default)?;
            Ok(v)
        }
    }

    /// A statement starts in `tx`: its first statement fixes the isolation
    /// level; each takes its snapshot (or keeps the transaction's).
    fn begin_statement(&self, tx: &mut Transaction) {
        if !tx.has_snapshot() {
            tx.set_isolation(crate::txmodes::engine_isolation(
                self.settings.get("transaction_isolation").as_deref(),
            ));
        }
        tx.begin_statement();
    }

    /// A secondary's database is replaced by a fresh copy when the primary
    /// seeds it: between transactions, follow the name to the new copy (the
    /// old one no longer changes).
    fn follow_reseed(&mut self) {
        if self.db.is_superseded() && !self.explicit && self.tx.is_none() {
            if let Ok(d) = self.engine.instance.database(self.db.name()) {
                self.db = d;
            }
        }
    }

    /// Runs a command from the parse caches or a prepared statement: DML
    /// and queries through the plan cache, everything else as it comes.
    fn execute_shared(&mut self, cmd: &Arc<Command>, params: &[Value]) -> Result<QueryOutput> {
        // The statement reads and shows times in the session's zone.
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        // Per statement, also within a multi-statement query, as PostgreSQL.
        let deadline = crate::timeouts::arm(
            crate::timeouts::statement(&self.settings),
            &self.cancel,
            &self.timed_out,
        );
        let r = self.execute_shared_inner(cmd, params);
        drop(deadline);
        match r {
            Err(e) if e.kind == ErrorKind::Cancelled && self.timed_out.swap(false, Relaxed) => {
                Err(SqlError::new(
                    ErrorKind::Cancelled,
                    "canceling statement due to statement timeout",
                ))
            }
            r => r,
        }
    }

    fn execute_shared_inner(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
    ) -> Result<QueryOutput> {
        self.follow_reseed();
        let plannable = match cmd.as_ref() {
            Command::Sql(stmt) => matches!(
                stmt.as_ref(),
                Statement::Query(_)
                    | Statement::Insert(_)
                    | Statement::Update(_)
                    | Statement::Delete(_)
            ),
            Command::DeleteTop(_, stmt) => matches!(stmt.as_ref(), Statement::Delete(_)),
            _ => false,
        };
        if !plannable {
            let who = self.who();
            crate::privileges::check_command(&who, &self.engine.instance, &self.db, cmd)?;
            let out = self.execute_command(cmd, params)?;
            crate::privileges::after_command(&who, &self.engine.instance, &self.db, cmd)?;
            return Ok(out);
        }
        self.cancel.store(false, Relaxed);
        if self.failed {
            return Err(failed_tx());
        }
        self.run_planned(cmd, params)
    }

    /// Plans `cmd` (or takes its cached plan) and runs it in the current
    /// transaction, as [`SqlSession::statement`] does for the same statements.
    /// Planning stays inside the transaction so that errors and counters come
    /// out as they do without the cache.
    fn run_planned(&mut self, cmd: &Arc<Command>, params: &[Value]) -> Result<QueryOutput> {
        let key = Arc::as_ptr(cmd) as usize;
        // Read before planning: a DDL that lands while we plan bumps the
        // version past this one, so the plan is not reused afterwards.
        let version = self.db.catalog_version();
        let cached = self
            .plans
            .get(&key)
            .filter(|c| {
                c.catalog_version == version && std::ptr::eq(c.db.as_ptr(), Arc::as_ptr(&self.db))
            })
            .map(|c| (c.plan.clone(), c.needs.clone()));
        self.plan_hits += cached.is_some() as u64;
        let who = self.who();
        let info = self.info();
        let cancel = self.cancel.clone();
        let inst = self.engine.instance.clone();
        let db = self.db.clone();
        let (out, fresh) = self.in_tx(|tx, _| {
            let (plan, needs, fresh) = match cached {
                Some((p, n)) => (p, n, false),
                None => {
                    let mut p = Planner::new(db.clone(), &inst, &[]);
                    let plan = Arc::new(plan_command(&mut p, cmd)?);
                    let needs: Arc<[_]> = crate::privileges::needs(cmd, &p).into();
                    (plan, needs, true)
                }
            };
            crate::privileges::require(&who, db.id(), &needs)?;
            let ctx = Ctx {
                params,
                info: &info,
                cancel: &cancel,
                instance: &inst,
            };
            let out = match plan.as_ref() {
                StmtPlan::Query(q) => {
                    let env = ctx.env(tx);
                    let rows = query::execute_plan(q, &env, None)?;
                    QueryOutput {
                        tag: format!("SELECT {}", rows.len()),
                        columns: Some(q.columns.clone()),
                        rows,
                        ..Default::default()
                    }
                }
                StmtPlan::Locking(l) => crate::locking::run(l, tx, &ctx)?,
                StmtPlan::Insert(i) => dml::run_insert(i, tx, &ctx)?,
                StmtPlan::Update(u) => dml::run_update(u, tx, &ctx)?,
                StmtPlan::Delete(d) => dml::run_delete(d, tx, &ctx)?,
            };
            Ok((out, fresh.then_some((plan, needs))))
        })?;
        if let Some((plan, needs)) = fresh.filter(|(p, _)| p.reusable()) {
            if self.plans.len() >= PARSE_CACHE {
                self.plans.clear();
            }
            self.plans.insert(
                key,
                CachedPlan {
                    _command: cmd.clone(),
                    db: Arc::downgrade(&db),
                    catalog_version: version,
                    plan,
                    needs,
                },
            );
        }
        Ok(out)
    }

    fn execute_command(&mut self, cmd: &Command, params: &[Value]) -> Result<QueryOutput> {
        self.cancel.store(false, Relaxed);
        self.follow_reseed();
        if self.failed
            && !matches!(
                cmd,
                Command::Commit(_)
                    | Command::Rollback
                    | Command::Tx(TxCommand::RollbackTo(_) | TxCommand::RollbackTran(_))
            )
        {
            return Err(failed_tx());
        }
        let inst = self.engine.instance.clone();
        let neutral = matches!(
            cmd,
            Command::Tx(_)
                | Command::Commit(_)
                | Command::Rollback
                | Command::Set(..)
                | Command::SetLocal(..)
                | Command::Show(_)
                | Command::Reset(_)
                | Command::Deallocate(_)
                | Command::Ignored(_)
                | Command::Declare(_)
                | Command::Fetch(_)
                | Command::CloseCursor(_)
        );
        if !self.explicit && !neutral {
            // Walden runs this statement in a transaction of its own (its DDL
            // is not transactional): an implicit block's work commits first.
            if let Some(tx) = self.tx.take() {
                let id = tx.id();
                tx.commit(CommitRequest::Default)?;
                self.cursors_committed(id);
            }
        }
        let writes = match cmd {
            Command::CreateSequence { .. } => Some("CREATE SEQUENCE"),
            Command::AlterDatabase { .. } => Some("ALTER DATABASE"),
            Command::CreateDatabase(_) => Some("CREATE DATABASE"),
            Command::DropDatabase { .. } => Some("DROP DATABASE"),
            _ => None,
        };
        if let Some(what) = writes {
            self.check_writable(what)?;
        }
        match cmd {
            Command::Tx(c) => self.tx_command(c),
            Command::Commit(dd) => {
                if self.failed {
                    self.failed = false;
                    self.explicit = false;
                    if let Some(tx) = self.tx.take() {
                        tx.rollback();
                    }
                    self.settings.end_tx(false);
                    return Ok(QueryOutput::command("ROLLBACK"));
                }
                if !self.explicit {
                    // An implicit block ends here, as in PostgreSQL.
                    if let Some(tx) = self.tx.take() {
                        let id = tx.id();
                        tx.commit(CommitRequest::Default)?;
                        self.cursors_committed(id);
                    }
                    let mut out = QueryOutput::command("COMMIT");
                    out.notices
                        .push("there is no transaction in progress".into());
                    return Ok(out);
                }
                self.explicit = false;
                let req = match dd {
                    Some(true) => CommitRequest::Delayed,
                    Some(false) => CommitRequest::Durable,
                    None => CommitRequest::Default,
                };
                // The commit uses the block's settings (SET LOCAL
                // synchronous_commit = off), then they end with it.
                let r = match self.tx.take() {
                    Some(tx) => {
                        let id = tx.id();
                        let r = tx.commit(req).map(|_| ());
                        if r.is_ok() {
                            self.cursors_committed(id);
                        }
                        r
                    }
                    None => Ok(()),
                };
                self.settings.end_tx(r.is_ok());
                r?;
                Ok(QueryOutput::command("COMMIT"))
            }
            Command::Rollback => {
                let mut out = QueryOutput::command("ROLLBACK");
                if !self.explicit && !self.failed {
                    out.notices
                        .push("there is no transaction in progress".into());
                }
                self.explicit = false;
                self.failed = false;
                if let Some(tx) = self.tx.take() {
                    tx.rollback();
                }
                self.settings.end_tx(false);
                Ok(out)
            }
            Command::Set(name, value)
                if matches!(
                    name.as_str(),
                    "transaction_isolation" | "transaction_read_only" | "transaction_deferrable"
                ) =>
            {
                self.set_tx_parameter(name, value)
            }
            Command::Set(name, value) => self.set(name, value),
            Command::SetLocal(name, value) => {
                let mut out = QueryOutput::command("SET");
                if !self.settings.set_local(name, value)? {
                    out.notices
                        .push("SET LOCAL can only be used in transaction blocks".into());
                }
                Ok(out)
            }
            Command::Deallocate(name) => {
                let mut out = QueryOutput::command("DEALLOCATE");
                out.deallocate = Some(match name {
                    Some(n) => crate::Deallocate::Named(n.clone()),
                    None => {
                        out.tag = "DEALLOCATE ALL".into();
                        crate::Deallocate::All
                    }
                });
                Ok(out)
            }
            Command::DiscardAll => {
                if self.explicit {
                    return Err(SqlError::new(
                        ErrorKind::ActiveTransaction,
                        "DISCARD ALL cannot run inside a transaction block",
                    ));
                }
                self.settings.reset_all();
                self.engine.advisory.unlock_all(self.session.id);
                self.close_all_cursors();
                let mut out = QueryOutput::command("DISCARD ALL");
                out.deallocate = Some(crate::Deallocate::All);
                Ok(out)
            }
            Command::Reset(name) => {
                match name {
                    Some(n) => self.settings.reset(n),
                    None => self.settings.reset_all(),
                }
                Ok(QueryOutput::command("RESET"))
            }
            Command::Show(name) => {
                let v = self.show(name);
                Ok(QueryOutput {
                    columns: Some(vec![Column {
                        name: name.clone(),
                        ty: DataType::Text,
                    }]),
                    rows: vec![vec![Value::text(v)]],
                    tag: "SHOW".into(),
                    ..Default::default()
                })
            }
            Command::Use(name) => {
                if self.explicit {
                    return Err(SqlError::new(
                        ErrorKind::ActiveTransaction,
                        "cannot change database inside a transaction",
                    ));
                }
                let db = inst.database(name).map_err(|_| {
                    SqlError::new(
                        ErrorKind::UndefinedDatabase,
                        format!("database \"{name}\" does not exist"),
                    )
                })?;
                if !self.who().can_connect(db.id()) {
                    return Err(crate::privileges::denied(format!(
                        "permission denied for database \"{}\"",
                        db.name()
                    )));
                }
                self.db = db;
                Ok(QueryOutput::command("SET"))
            }
            Command::FlushLog => {
                self.db.flush_log(&self.session)?;
                Ok(QueryOutput::command("EXECUTE"))
            }
            Command::Checkpoint => {
                self.db.checkpoint()?;
                Ok(QueryOutput::command("CHECKPOINT"))
            }
            Command::BackupDatabase { name, path } => {
                let file =
                    crate::backup_path::resolve(self.engine.backup_dir.read().as_deref(), path)?;
                inst.database(name)?.backup_database(&self.session, &file)?;
                Ok(QueryOutput::command("BACKUP DATABASE"))
            }
            Command::BackupLog { name, path } => {
                let file =
                    crate::backup_path::resolve(self.engine.backup_dir.read().as_deref(), path)?;
                inst.database(name)?.backup_log(&self.session, &file)?;
                Ok(QueryOutput::command("BACKUP LOG"))
            }
            Command::ClearWaitStats => {
                inst.wait_stats().clear();
                Ok(QueryOutput::command("DBCC"))
            }
            Command::CreateAvailabilityGroup(def) => {
                self.hadr()?
                    .create_group((**def).clone())
                    .map_err(hadr_err)?;
                Ok(QueryOutput::command("CREATE AVAILABILITY GROUP"))
            }
            Command::AvailabilityGroupReseed { name, replica } => {
                self.hadr()?.reseed(name, replica).map_err(hadr_err)?;
                Ok(QueryOutput::command("ALTER AVAILABILITY GROUP"))
            }
            Command::DropAvailabilityGroup(name) => {
                self.hadr()?.drop_group(name).map_err(hadr_err)?;
                Ok(QueryOutput::command("DROP AVAILABILITY GROUP"))
            }
            Command::AvailabilityGroupFailover { name, force } => {
                let rows = self.hadr()?.failover(name, *force).map_err(hadr_err)?;
                let mut out = QueryOutput::command(format!("SELECT {}", rows.len()));
                out.columns = Some(failover_columns());
                for r in rows {
                    if r.possible_loss_bytes > 0 {
                        out.notices.push(format!(
                            "database \"{}\": log from LSN {} to {} on the old primary was not received here; transactions in it may be lost",
                            r.database, r.failover_lsn, r.primary_last_known_lsn
                        ));
                    }
                    out.rows.push(vec![
                        Value::text(&r.database),
                        Value::Int(r.failover_lsn as i64),
                        Value::Int(r.primary_last_known_lsn as i64),
                        Value::Int(r.possible_loss_bytes as i64),
                        Value::Int(r.epoch as i64),
                    ]);
                }
                Ok(out)
            }
            Command::ClearExposurePeaks => {
                for db in inst.databases() {
                    db.log().counters().reset_peaks();
                }
                Ok(QueryOutput::command("DBCC"))
            }
            Command::CreateDatabase(name) => {
                inst.create_database(name)?;
                Ok(QueryOutput::command("CREATE DATABASE"))
            }
            Command::DropDatabase { name, if_exists } => {
                if name.eq_ignore_ascii_case(self.db.name()) {
                    return Err(SqlError::new(
                        ErrorKind::ObjectInUse,
                        "cannot drop the currently open database",
                    ));
                }
                if let Some(g) = self
                    .engine
                    .replication()
                    .and_then(|r| r.groups().into_iter().find(|g| g.def.has_database(name)))
                {
                    return Err(SqlError::new(
                        ErrorKind::ObjectInUse,
                        format!(
                            "database \"{name}\" belongs to availability group \"{}\"; DROP AVAILABILITY GROUP first",
                            g.def.name
                        ),
                    ));
                }
                match inst.drop_database(name) {
                    Ok(()) => Ok(QueryOutput::command("DROP DATABASE")),
                    Err(walden_engine::EngineError::UnknownDatabase(_)) if *if_exists => {
                        let mut out = QueryOutput::command("DROP DATABASE");
                        out.notices
                            .push(format!("database \"{name}\" does not exist, skipping"));
                        Ok(out)
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Command::AlterDatabase {
                name,
                option,
                value,
            } => {
                let db = if name.eq_ignore_ascii_case("current") {
                    self.db.clone()
                } else {
                    inst.database(name).map_err(|_| {
                        SqlError::new(
                            ErrorKind::UndefinedDatabase,
                            format!("database \"{name}\" does not exist"),
                        )
                    })?
                };
                let bound = |v: &str| -> Result<Option<u64>> {
                    match v.to_ascii_uppercase().as_str() {
                        "NONE" | "OFF" | "0" | "NULL" => Ok(None),
                        n => n.parse::<u64>().map(Some).map_err(|_| {
                            SqlError::new(
                                ErrorKind::InvalidParameter,
                                format!("{option} must be a number or NONE"),
                            )
                        }),
                    }
                };
                match option.as_str() {
                    "DELAYED_DURABILITY" => {
                        let dd: DelayedDurability = value.parse()?;
                        db.alter_settings(&self.session, |s| s.delayed_durability = dd)?;
                    }
                    "RECOVERY" => {
                        let rm: RecoveryModel = value.parse()?;
                        db.alter_settings(&self.session, |s| s.recovery_model = rm)?;
                    }
                    "MAX_EXPOSURE_BYTES" => {
                        let b = bound(value)?;
                        db.alter_settings(&self.session, |s| s.max_exposure_bytes = b)?;
                    }
                    "MAX_EXPOSURE_MS" => {
                        let b = bound(value)?;
                        db.alter_settings(&self.session, |s| s.max_exposure_ms = b)?;
                    }
                    other => {
                        return Err(SqlError::new(
                            ErrorKind::InvalidParameter,
                            format!("unknown database option {other} (DELAYED_DURABILITY, RECOVERY, MAX_EXPOSURE_BYTES, MAX_EXPOSURE_MS)"),
                        ))
                    }
                }
                Ok(QueryOutput::command("ALTER DATABASE"))
            }
            Command::CreateSequence {
                name,
                if_not_exists,
                start,
                increment,
            } => ddl::create_sequence(
                &self.db,
                &self.session,
                name,
                *if_not_exists,
                *start,
                *increment,
            ),
            Command::Ignored(what) => Ok(QueryOutput::command(if what.is_empty() {
                "EMPTY".to_string()
            } else {
                what.clone()
            })),
            Command::PgbenchPartitionProbe(table) => {
                let rows = if self.db.table(table).is_ok() {
                    vec![vec![Value::Int(1), Value::Null, Value::Int(0)]]
                } else {
                    vec![]
                };
                Ok(QueryOutput {
                    columns: Some(probe_columns()),
                    tag: format!("SELECT {}", rows.len()),
                    rows,
                    ..Default::default()
                })
            }
            Command::DeleteTop(n, stmt) => match stmt.as_ref() {
                Statement::Delete(d) => {
                    self.dml(params, |p, tx, ctx| dml::delete(p, d, Some(*n), tx, ctx))
                }
                _ => Err(SqlError::internal("DELETE TOP without DELETE")),
            },
            Command::Declare(d) => self.declare(d, params),
            Command::Fetch(f) => self.fetch(f),
            Command::CloseCursor(name) => self.close_cursor(name.as_deref()),
            Command::Access(stmt) => {
                crate::role_stmt::execute(&self.who(), &inst, &self.db, self.role, stmt)
            }
            Command::Sql(stmt) => self.statement(stmt, params),
        }
    }

    fn dml(
        &mut self,
        params: &[Value],
        f: impl FnOnce(&mut Planner<'_>, &mut Transaction, &Ctx<'_>) -> Result<QueryOutput>,
    ) -> Result<QueryOutput> {
        let info = self.info();
        let cancel = self.cancel.clone();
        let inst = self.engine.instance.clone();
        let db = self.db.clone();
        self.in_tx(|tx, _| {
            let mut p = Planner::new(db, &inst, &[]);
            let ctx = Ctx {
                params,
                info: &info,
                cancel: &cancel,
                instance: &inst,
            };
            f(&mut p, tx, &ctx)
        })
    }

    fn statement(&mut self, stmt: &Statement, params: &[Value]) -> Result<QueryOutput> {
        if let Some(what) = ddl_name(stmt) {
            self.check_writable(what)?;
        }
        match stmt {
            Statement::Query(q) => {
                let info = self.info();
                let cancel = self.cancel.clone();
                let inst = self.engine.instance.clone();
                let db = self.db.clone();
                let who = self.who();
                self.in_tx(|tx, _| {
                    let dbid = db.id();
                    let mut p = Planner::new(db, &inst, &[]);
                    if crate::locking::wanted(q) {
                        let plan = crate::locking::plan(&mut p, q)?;
                        crate::privileges::require(&who, dbid, &crate::privileges::reads(&p))?;
                        let ctx = Ctx {
                            params,
                            info: &info,
                            cancel: &cancel,
                            instance: &inst,
                        };
                        return crate::locking::run(&plan, tx, &ctx);
                    }
                    let plan = query::plan_query(&mut p, q, None)?;
                    crate::privileges::require(&who, dbid, &crate::privileges::reads(&p))?;
                    let ctx = Ctx {
                        params,
                        info: &info,
                        cancel: &cancel,
                        instance: &inst,
                    };
                    let env = ctx.env(tx);
                    let rows = query::execute_plan(&plan, &env, None)?;
                    Ok(QueryOutput {
                        tag: format!("SELECT {}", rows.len()),
                        columns: Some(plan.columns),
                        rows,
                        ..Default::default()
                    })
                })
            }
            Statement::Insert(ins) => self.dml(params, |p, tx, ctx| dml::insert(p, ins, tx, ctx)),
            Statement::Update(u) => self.dml(params, |p, tx, ctx| dml::update(p, u, tx, ctx)),
            Statement::Delete(d) => self.dml(params, |p, tx, ctx| dml::delete(p, d, None, tx, ctx)),
            Statement::CreateTable(ct) => {
                ddl::create_table(&self.db, &self.engine.instance, &self.session, ct)
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => ddl::drop(
                &self.db,
                &self.session,
                object_type,
                *if_exists,
                names,
                *cascade,
            ),
            Statement::AlterTable(at) if crate::foreign_keys::handles(&self.db, at) => {
                crate::foreign_keys::alter_table(&self.db, &self.session, at)
            }
            Statement::Truncate(t) => ddl::truncate(&self.db, &self.session, t),
            Statement::CreateIndex(ci) => {
                crate::index_ddl::create_index(&self.db, &self.session, ci)
            }
            Statement::AlterTable(at) => {
                let session = self.session.clone();
                self.dml(params, |p, tx, ctx| {
                    crate::alter_table::alter_table(p, at, tx, ctx, &session)
                })
            }
            Statement::Copy {
                source:
                    ast::CopySource::Table {
                        table_name,
                        columns,
                    },
                to: false,
                target: ast::CopyTarget::Stdin,
                options,
                legacy_options,
                ..
            } => {
                let table = self.db.table(&query::object_last(table_name))?;
                let columns: Vec<String> = columns.iter().map(|c| c.value.clone()).collect();
                let types = copy_columns(&table, &columns)?
                    .into_iter()
                    .map(|i| table.def.columns[i].data_type.clone())
                    .collect();
                let copy = CopyIn {
                    table: table.name().to_string(),
                    columns,
                    format: CopyFormat::from_options(options, legacy_options, false)?,
                    types,
                };
                Ok(QueryOutput {
                    tag: "COPY".into(),
                    copy_in: Some(copy),
                    ..Default::default()
                })
            }
            Statement::Copy {
                source,
                to: true,
                target: ast::CopyTarget::Stdout,
                options,
                legacy_options,
                ..
            } => self.copy_to(source, options, legacy_options, params),
            // The server reads and writes no files of its own: data goes
            // through the client (psql's \copy does exactly that).
            Statement::Copy {
                to,
                target: ast::CopyTarget::File { .. } | ast::CopyTarget::Program { .. },
                ..
            } => Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                format!(
                    "COPY {} a server file or program is not supported; use COPY ... {} and psql's \\copy",
                    if *to { "to" } else { "from" },
                    if *to { "TO STDOUT" } else { "FROM STDIN" },
                ),
            )),
            Statement::Copy { .. } => Err(SqlError::syntax(
                "syntax error: COPY FROM needs STDIN and COPY TO needs STDOUT",
            )),
            Statement::StartTransaction { .. } => self.execute_command(
                &Command::Tx(TxCommand::Begin(Default::default())),
                params,
            ),
            Statement::Commit { .. } => self.execute_command(&Command::Commit(None), params),
            Statement::Rollback { .. } => self.execute_command(&Command::Rollback, params),
            other => Err(SqlError::unsupported(format!(
                "statement {}",
                other
                    .to_string()
                    .split_whitespace()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ")
            ))),
        }
    }

    /// `COPY table [(columns)] TO STDOUT` and `COPY (query) TO STDOUT`: runs
    /// the query in the current transaction like a SELECT; the wire server
    /// lays the rows out as the [`CopyOut`] says.
    fn copy_to(
        &mut self,
        source: &ast::CopySource,
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
        params: &[Value],
    ) -> Result<QueryOutput> {
        let format = CopyFormat::from_options(options, legacy, true)?;
        let (q, names) = match source {
            ast::CopySource::Query(q) => (q.clone(), None),
            ast::CopySource::Table {
                table_name,
                columns,
            } => {
                let table = self.db.table(&query::object_last(table_name))?;
                let def = &table.def;
                let names: Vec<String> = if columns.is_empty() {
                    def.columns.iter().map(|c| c.name.clone()).collect()
                } else {
                    columns
                        .iter()
                        .map(|c| match def.column_index(&c.value) {
                            Some(i) => Ok(def.columns[i].name.clone()),
                            None => Err(SqlError::new(
                                ErrorKind::UndefinedColumn,
                                format!(
                                    "column \"{}\" of relation \"{}\" does not exist",
                                    c.value,
                                    table.name()
                                ),
                            )),
                        })
                        .collect::<Result<_>>()?
                };
                // The rows come through the planner, as a SELECT of the columns
                // (quoted: the names are the table's own).
                let quote = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
                let sql = format!(
                    "SELECT {} FROM {}",
                    names
                        .iter()
                        .map(|n| quote(n))
                        .collect::<Vec<_>>()
                        .join(", "),
                    quote(table.name())
                );
                match front::parse_sql(&sql)? {
                    Statement::Query(q) => (q, Some(names)),
                    _ => return Err(SqlError::internal("COPY TO: not a query")),
                }
            }
        };
        let mut out = self.statement(&Statement::Query(q), params)?;
        let mut columns = out.columns.take().unwrap_or_default();
        if let Some(names) = names {
            for (c, n) in columns.iter_mut().zip(names) {
                c.name = n;
            }
        }
        let mut forced = vec![false; columns.len()];
        for f in &format.force_quote {
            let i = columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(f))
                .ok_or_else(|| {
                    SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!("FORCE_QUOTE column \"{f}\" not referenced by COPY"),
                    )
                })?;
            forced[i] = true;
        }
        out.tag = format!("COPY {}", out.rows.len());
        out.columns = Some(columns);
        out.copy_out = Some(CopyOut { format, forced });
        Ok(out)
    }

    fn set(&mut self, name: &str, value: &str) -> Result<QueryOutput> {
        self.settings.set(name, value)?;
        Ok(QueryOutput::command("SET"))
    }

    fn show(&self, name: &str) -> String {
        if name.eq_ignore_ascii_case("is_superuser") {
            return if self.is_superuser() { "on" } else { "off" }.into();
        }
        self.settings.get(name).unwrap_or_default()
    }

    /// Feeds the data of a `COPY ... FROM STDIN`.
    pub fn copy_in(&mut self, copy: &CopyIn, data: &[u8]) -> Result<QueryOutput> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        if self.failed {
            return Err(failed_tx());
        }
        let r = self.copy_rows(copy, data);
        if r.is_err() {
            self.note_error();
        }
        r
    }

    /// Feeds the rows of a `COPY ... FROM STDIN` whose data the caller
    /// decoded (the binary format): values typed as [`CopyIn::types`].
    pub fn copy_in_values(
        &mut self,
        copy: &CopyIn,
        rows: &mut dyn Iterator<Item = Result<Vec<Value>>>,
    ) -> Result<QueryOutput> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        if self.failed {
            return Err(failed_tx());
        }
        let rows = rows
            .enumerate()
            .map(|(i, r)| r.map(|r| (i + 1, r.into_iter().map(Some).collect())));
        let r = self.insert_copy_rows(copy, rows);
        if r.is_err() {
            self.note_error();
        }
        r
    }

    fn copy_rows(&mut self, copy: &CopyIn, data: &[u8]) -> Result<QueryOutput> {
        let text = std::str::from_utf8(data)
            .map_err(|_| SqlError::new(ErrorKind::InvalidText, "COPY data is not valid UTF-8"))?;
        let rows = copy
            .format
            .parse_input(text)
            .into_iter()
            .map(|(lineno, fields)| {
                let row = fields
                    .into_iter()
                    .map(|f| Some(f.map(Value::text).unwrap_or(Value::Null)))
                    .collect();
                Ok((lineno, row))
            });
        self.insert_copy_rows(copy, rows)
    }

    /// Inserts COPY's rows (line number, one value per copied column) in
    /// the current transaction, checking constraints as INSERT does.
    fn insert_copy_rows(
        &mut self,
        copy: &CopyIn,
        rows: impl Iterator<Item = Result<(usize, Vec<Option<Value>>)>>,
    ) -> Result<QueryOutput> {
        let table = self.db.table(&copy.table)?;
        let cols = copy_columns(&table, &copy.columns)?;
        let width = table.def.columns.len();
        let copy = copy.clone();
        let info = self.info();
        let cancel = self.cancel.clone();
        let inst = self.engine.instance.clone();
        let db = self.db.clone();
        self.in_tx(move |tx, _| {
            let checks = {
                let mut p = Planner::new(db, &inst, &[]);
                crate::constraints::Checks::compile(&mut p, &table)?
            };
            let ctx = Ctx {
                params: &[],
                info: &info,
                cancel: &cancel,
                instance: &inst,
            };
            let mut n = 0u64;
            let mut fks = crate::foreign_keys::enforce::Pending::new(tx, &table);
            for r in rows {
                let (lineno, fields) = r?;
                if fields.len() != cols.len() {
                    return Err(SqlError::new(
                        ErrorKind::DataException,
                        format!(
                            "COPY {}, line {lineno}: expected {} columns, got {}",
                            copy.table,
                            cols.len(),
                            fields.len()
                        ),
                    ));
                }
                let mut full = vec![None; width];
                for (f, &c) in fields.into_iter().zip(&cols) {
                    full[c] = f;
                }
                let row = tx.insert_into(&table, full).map_err(|e| {
                    let e = SqlError::from(e);
                    SqlError::new(
                        e.kind,
                        format!("COPY {}, line {lineno}: {}", copy.table, e.message),
                    )
                })?;
                if !checks.is_empty() {
                    checks.enforce(&row, &ctx.env(tx))?;
                }
                fks.inserted(&table, &row);
                n += 1;
            }
            fks.finish(tx, &ctx)?;
            Ok(QueryOutput::command(format!("COPY {n}")))
        })
    }
}

/// The table positions of COPY's column list (all columns when empty).
fn copy_columns(table: &walden_engine::Table, columns: &[String]) -> Result<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..table.def.columns.len()).collect());
    }
    columns
        .iter()
        .map(|c| {
            table.def.column_index(c).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!(
                        "column \"{c}\" of relation \"{}\" does not exist",
                        table.name()
                    ),
                )
            })
        })
        .collect()
}

/// Plans a command [`SqlSession::execute_shared`] sends to the plan cache.
fn plan_command(p: &mut Planner<'_>, cmd: &Command) -> Result<StmtPlan> {
    match cmd {
        Command::Sql(stmt) => match stmt.as_ref() {
            Statement::Query(q) if crate::locking::wanted(q) => {
                Ok(StmtPlan::Locking(crate::locking::plan(p, q)?))
            }
            Statement::Query(q) => Ok(StmtPlan::Query(query::plan_query(p, q, None)?)),
            Statement::Insert(ins) => Ok(StmtPlan::Insert(dml::plan_insert(p, ins)?)),
            Statement::Update(u) => Ok(StmtPlan::Update(dml::plan_update(p, u)?)),
            Statement::Delete(d) => Ok(StmtPlan::Delete(dml::plan_delete_limit(p, d, None)?)),
            _ => Err(SqlError::internal("not a plannable statement")),
        },
        Command::DeleteTop(n, stmt) => match stmt.as_ref() {
            Statement::Delete(d) => Ok(StmtPlan::Delete(dml::plan_delete_limit(p, d, Some(*n))?)),
            _ => Err(SqlError::internal("DELETE TOP without DELETE")),
        },
        _ => Err(SqlError::internal("not a plannable statement")),
    }
}

/// The name of a DDL statement a read-only transaction refuses.
fn ddl_name(stmt: &Statement) -> Option<&'static str> {
    Some(match stmt {
        Statement::CreateTable(_) => "CREATE TABLE",
        Statement::Drop { .. } => "DROP",
        Statement::Truncate(_) => "TRUNCATE TABLE",
        Statement::CreateIndex(_) => "CREATE INDEX",
        Statement::AlterTable(_) => "ALTER TABLE",
        _ => return None,
    })
}

fn probe_columns() -> Vec<Column> {
    vec![
        Column {
            name: "n".into(),
            ty: DataType::Int,
        },
        Column {
            name: "partstrat".into(),
            ty: DataType::Text,
        },
        Column {
            name: "count".into(),
            ty: DataType::BigInt,
        },
    ]
}
