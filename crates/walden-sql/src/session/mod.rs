//! A SQL session: the current database, the transaction block (explicit or
//! auto-commit), session settings, and statement dispatch.

use crate::context::settings::Settings;
use crate::dml;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::Command;
use crate::functions::SessionInfo;
use crate::query;
use crate::{Column, SqlEngine};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use walden_engine::types::now_micros;
mod admin;
mod constraints;
pub(crate) mod copy;
pub(crate) mod cursor;
mod discard;
mod dispatch;
mod execute;
mod explain;
mod notify;
mod plpgsql;
mod prepare_stmt;
mod set_show;
pub(crate) mod stack;
mod statement;
pub(crate) mod temp_tables;
mod tsql;
mod txblock;

use walden_engine::{DataType, Database, Session, Transaction};

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
    /// The parameters' types of the statement the procedural runtime is
    /// running (its variables' declared types; see `Host::run_typed`).
    routine_param_types: Vec<Option<walden_engine::DataType>>,
    engine: Arc<SqlEngine>,
    session: Arc<Session>,
    db: Arc<Database>,
    user: String,
    /// The session's role (its privileges; see `privileges.rs`).
    role: u32,
    /// Counts the connection against the role's CONNECTION LIMIT.
    _login: Option<crate::catalog::privileges::LoginGuard>,
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
    /// Open cursors (see `cursor.rs`).
    cursors: Vec<crate::session::cursor::Cursor>,
    /// The block's savepoints, oldest first: the settings and the open
    /// cursors each found, which ROLLBACK TO SAVEPOINT goes back to.
    savepoint_marks: Vec<SavepointMark>,
    /// Statements `PREPARE` made (see `prepare_stmt.rs`).
    sql_prepared: Vec<prepare_stmt::SqlPrepared>,
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
    /// T-SQL batches' state: @@ROWCOUNT, NOCOUNT, nested BEGIN TRAN.
    tsql: crate::procedural::TsqlState,
    /// The session's temporary tables (see `temp_tables.rs`).
    temps: temp_tables::TempTables,
    /// Commands rewritten for them, by the original's address: the
    /// original, the rewrite, and the catalog version and transaction it
    /// was made in (so the plan cache keeps working for them).
    temp_rewrites: foldhash::HashMap<usize, TempRewrite>,
    /// Its LISTEN channels and the notifications queued for it (see
    /// `context/notify.rs`).
    listener: Arc<crate::context::notify::Listener>,
}

struct TempRewrite {
    _original: Arc<Command>,
    rewritten: Arc<Command>,
    version: u64,
    tx: Option<u64>,
}

impl Drop for SqlSession {
    /// Releases the session's advisory locks. The caches may hold statements
    /// nested up to `front::MAX_DEPTH` deep, whose drop recurses once per
    /// level: they are dropped with enough stack.
    fn drop(&mut self) {
        // A session's advisory locks end with it, as in PostgreSQL.
        self.engine.advisory.unlock_all(self.session.id);
        // And its LISTENs.
        self.engine.notify.leave(&self.listener);
        // So are its temporary tables, also when the client just went away.
        self.drop_temp_tables();
        let caches = (
            std::mem::take(&mut self.parsed),
            std::mem::take(&mut self.templates),
            std::mem::take(&mut self.plans),
            std::mem::take(&mut self.tsql),
        );
        crate::session::stack::with_stack_to_drop(move || drop(caches));
    }
}

/// A compiled INSERT, UPDATE, DELETE or query, kept between executions of
/// the same parsed command: pgbench and drivers run a handful of statement
/// shapes over and over, and name resolution and planning cost about as much
/// as executing a keyed statement.
enum StmtPlan {
    Query(query::QueryPlan),
    Locking(crate::dml::locking::LockingPlan),
    Insert(dml::InsertPlan),
    Update(dml::Planned),
    Delete(dml::DeletePlan),
    Merge(dml::MergePlan),
}

impl StmtPlan {
    fn reusable(&self) -> bool {
        match self {
            StmtPlan::Query(q) => query::reusable(q),
            StmtPlan::Locking(l) => l.reusable(),
            StmtPlan::Insert(i) => i.reusable(),
            StmtPlan::Update(u) => u.reusable(),
            StmtPlan::Delete(d) => d.reusable(),
            // (Its INSERT actions' plans are not reset between runs.)
            StmtPlan::Merge(_) => false,
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
    path: crate::context::search_path::SearchPath,
    /// The TimeZone and DateStyle order it was planned under: literals
    /// such as `date '1/2/03'` are read at planning.
    dates: (String, walden_engine::types::dtinput::DateOrder),
    plan: Arc<StmtPlan>,
    /// The parameters' types it was planned for (the procedural runtime's
    /// variables: one statement text, several scopes).
    param_types: Vec<Option<walden_engine::DataType>>,
    /// The table privileges the statement needs (checked at every run).
    needs: Arc<[crate::catalog::privileges::Need]>,
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
        login: Option<crate::catalog::privileges::LoginGuard>,
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
        session.set_identity(user, role, db.name(), db.id());
        let cancel_flag = session.cancel.clone();
        let settings = Settings::new(session.clone(), application_name);
        let (instance, name) = (engine.instance.clone(), db.name().to_string());
        settings.set_standby_probe(std::sync::Arc::new(move || {
            instance.database(&name).is_ok_and(|d| d.is_secondary())
        }));
        let listener = crate::context::notify::Listener::new(session.id, db.id());
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
            savepoint_marks: Vec::new(),
            sql_prepared: Vec::new(),
            cancel: cancel_flag,
            timed_out: Default::default(),
            parsed: Default::default(),
            templates: Default::default(),
            plans: Default::default(),
            plan_hits: 0,
            routine_param_types: Vec::new(),
            tsql: Default::default(),
            temps: Default::default(),
            temp_rewrites: Default::default(),
            listener,
        })
    }

    /// Forgets the cached plans (`DISCARD PLANS`): the next run of each
    /// statement plans it afresh.
    pub(super) fn forget_plans(&mut self) {
        let plans = std::mem::take(&mut self.plans);
        crate::session::stack::with_stack_to_drop(move || drop(plans));
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

    /// Takes the notifications queued for the session (the wire server
    /// sends them when the session is idle outside a transaction block).
    pub fn take_notifications(&self) -> Vec<crate::Notification> {
        self.listener.take()
    }

    /// The connection reports whether the session waits inside a
    /// transaction block (it then keeps every notification of the database
    /// until the block ends, as PostgreSQL's listener does).
    pub fn note_in_block(&self, in_block: bool) {
        self.listener.set_in_block(in_block);
    }

    /// Called whenever a notification is queued for the session.
    pub fn set_notification_waker(&self, waker: Option<Arc<dyn Fn() + Send + Sync>>) {
        self.listener.set_waker(waker);
    }

    /// Commits `tx` (its deferred checks already run by the caller), then
    /// does its after-commit work: the LISTEN/UNLISTEN it queued take
    /// effect and its notifications go out.
    pub(super) fn commit_tx(
        &self,
        mut tx: Transaction,
        request: walden_engine::CommitRequest,
    ) -> Result<walden_engine::CommitOutcome> {
        let pending = crate::context::notify::pending_of(tx.take_on_commit());
        if pending.is_empty() {
            return Ok(tx.commit(request)?);
        }
        if let Err(e) = self.engine.notify.check_room(self.db.id(), &pending) {
            tx.rollback();
            return Err(e);
        }
        let out = tx.commit(request)?;
        self.engine.notify.committed(&self.listener, pending);
        Ok(out)
    }

    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    /// The session's timeouts: what SET statement_timeout (and the idle
    /// ones) chose, or the server's defaults.
    pub fn timeouts(&self) -> crate::context::timeouts::SessionTimeouts {
        crate::context::timeouts::from_settings(&self.settings)
    }

    /// The server's configured defaults for the timeouts (what RESET
    /// returns to).
    pub fn set_timeouts(&mut self, t: crate::context::timeouts::SessionTimeouts) {
        crate::context::timeouts::set_defaults(&self.settings, t);
    }

    /// A parameter the client sent in its startup message: set, and what
    /// RESET returns to, as in PostgreSQL.
    pub fn set_startup_parameter(&mut self, name: &str, value: &str) -> Result<()> {
        crate::catalog::privileges::setting_allowed(&self.who(), name)?;
        self.settings.set(name, value)?;
        self.settings.set_default(name, value)
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

    /// The session's role with the role catalog as its transaction sees
    /// it (its own uncommitted role changes included).
    fn who(&self) -> crate::catalog::privileges::Who {
        match &self.tx {
            Some(tx) => self.who_in(tx),
            None => crate::catalog::privileges::Who::of(&self.engine.instance, self.role),
        }
    }

    /// The session's role as `tx` sees the role catalog.
    fn who_in(&self, tx: &Transaction) -> crate::catalog::privileges::Who {
        crate::catalog::privileges::Who::with(self.engine.instance.roles_for(tx), self.role)
    }

    /// The session's `search_path` as its role sees it now.
    fn path(&self) -> crate::context::search_path::SearchPath {
        let who = self.who();
        let path = who.search_path(&self.settings, self.db.id());
        let (schemas, objects) = self.db.namespaces_as(self.tx.as_ref().map(|t| t.id()));
        if schemas.is_empty() {
            return path;
        }
        let ns = crate::context::search_path::Namespaces {
            schemas: schemas
                .iter()
                .map(|s| crate::context::search_path::UserSchema {
                    name: s.name.clone(),
                    id: s.id,
                    owner: s.owner,
                    usable: who.has_privs_of(s.owner),
                })
                .collect(),
            objects: objects.into_iter().collect(),
        };
        path.with_namespaces(ns, &who.cat.name_of(who.oid))
    }

    fn info(&self) -> SessionInfo {
        let statement_now = now_micros();
        SessionInfo {
            spid: self.session.id,
            database: self.db.name().to_string(),
            database_id: self.db.id(),
            user: self.user.clone(),
            role: self.role,
            mem: Arc::new(crate::context::membudget::Budget::new(
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
            host: self.engine.host(),
            settings: self.settings.clone(),
            path: self.path(),
            advisory: self.engine.advisory.clone(),
            listener: self.listener.clone(),
            notify_hub: self.engine.notify.clone(),
            cursors: self.cursor_rows(),
            prepared: prepare_stmt::prepared_statements_rows(&self.sql_prepared),
            system: &crate::compat::CATALOGS,
            identity: self.tsql.identity.clone(),
            trigger_sets: self.tsql.trigger_sets.clone(),
            routines: Some(crate::procedural::routine_hook(self.who(), self.db.clone())),
            triggers: Some(crate::procedural::trigger_hook(self.who(), self.db.clone())),
        }
    }
}

/// What a savepoint found: its name, the settings, the open cursors' names.
struct SavepointMark {
    name: String,
    settings: crate::context::settings::SettingsMark,
    cursors: Vec<String>,
}
