//! Walden's SQL layer.
//!
//! Statements are parsed with `sqlparser` (PostgreSQL dialect, falling back to
//! the MS SQL dialect for T-SQL forms such as `IDENTITY(1,1)` and `TOP`); the
//! T-SQL statements it cannot parse (`COMMIT TRAN WITH (DELAYED_DURABILITY =
//! ON)`, `ALTER DATABASE ... SET ...`, `DELETE TOP (n)`, `EXEC sys.sp_flush_log`,
//! `BACKUP`, `DBCC SQLPERF`, ...) are recognised by a small front end
//! (`front/`) before it. Queries are planned into bound expressions and run
//! over the engine's transactions; keyed statements take a point-lookup fast
//! path. System views (`sys.*`) are computed from the engine's counters, and
//! PostgreSQL's catalogs (`pg_catalog.*`) from its catalog.
//!
//! The wire server (`walden-server`) drives a [`SqlSession`] per connection.

// The stages of a statement's path, from the bottom: error, types, front,
// functions, expr, query, dml, catalog, compat, admin, session. A module
// imports only from its own stage and the ones below it (docs/design.md,
// "SQL layer"; tests/sql_it/stages.rs checks it).
mod admin;
mod catalog;
mod compat;
mod context;
mod dml;
mod error;
mod expr;
mod front;
mod functions;
mod procedural;
mod query;
mod session;
mod types;

pub use context::notify::Notification;
pub use context::timeouts::SessionTimeouts;
pub use error::{ErrorFields, ErrorKind, Result, SqlError};
pub use functions::server_host::{HbaRuleRow, ServerHost};
pub use session::copy::{CopyFormat, CopyIn, CopyLoad, CopyOut};
pub use session::{Prepared, SqlSession, TxStatus};
pub use types::oids::{decode_enum_oid, enum_array_oid, enum_oid};
pub use types::reg_type_oid;
pub use walden_engine::{DataType, Value};

use std::sync::Arc;
use walden_engine::Instance;

/// A result column.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: DataType,
    /// The table column it reads, when it is a plain reference to one
    /// (RowDescription's table OID and column number, as PostgreSQL marks
    /// them when it parses the statement).
    pub origin: Option<ColumnOrigin>,
}

impl Column {
    /// Result columns that read no table column (a command's own rows).
    pub(crate) fn computed(spec: &[(&str, DataType)]) -> Vec<Column> {
        spec.iter()
            .map(|(n, ty)| Column {
                name: n.to_string(),
                ty: ty.clone(),
                origin: None,
            })
            .collect()
    }
}

/// A table column as RowDescription names it: the table's `pg_class.oid`
/// and the column's `attnum`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnOrigin {
    pub table_oid: u32,
    pub attnum: i16,
}

impl ColumnOrigin {
    /// Column `index` (from 0) of the table with engine id `table_id`.
    pub(crate) fn of_table(table_id: u32, index: usize) -> Option<Self> {
        Some(ColumnOrigin {
            table_oid: u32::try_from(types::oids::table_oid(table_id)).ok()?,
            attnum: i16::try_from(index + 1).ok()?,
        })
    }
}

/// A WARNING a statement sends along with its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub kind: WarningKind,
    pub message: String,
}

/// What a warning is about (its SQLSTATE is the wire's business).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningKind {
    /// A GRANT granted less than it named.
    PrivilegeNotGranted,
    /// A REVOKE revoked less than it named.
    PrivilegeNotRevoked,
    /// A statement that means something only in a transaction block ran
    /// outside one (`SET CONSTRAINTS`).
    NoTransactionBlock,
}

/// What one statement returned.
#[derive(Clone, Debug, Default)]
pub struct QueryOutput {
    /// Result columns (`None` for statements that return no rows).
    pub columns: Option<Vec<Column>>,
    pub rows: Vec<Vec<Value>>,
    /// The command tag (`SELECT 3`, `INSERT 0 1`, `COMMIT`, ...).
    pub tag: String,
    /// Set when the statement is `COPY ... FROM STDIN`: the caller feeds the
    /// data to [`SqlSession::copy_in`].
    pub copy_in: Option<CopyIn>,
    /// Set when the statement is `COPY ... TO STDOUT`: `rows` are the data,
    /// which the caller sends in the COPY format this describes.
    pub copy_out: Option<CopyOut>,
    /// Notices to send to the client (e.g. "there is no transaction in progress").
    pub notices: Vec<String>,
    /// Warnings to send to the client (PostgreSQL's WARNING level).
    pub warnings: Vec<Warning>,
    /// Prepared statements the connection must drop (`DEALLOCATE`,
    /// `DISCARD ALL`): they live in the wire server, not in the session.
    pub deallocate: Option<Deallocate>,
    /// The rows are to be sent in binary (a FETCH from a BINARY cursor in
    /// the simple protocol).
    pub binary: bool,
}

/// Which prepared statements `DEALLOCATE` / `DISCARD ALL` drops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deallocate {
    Named(String),
    /// Every prepared statement (and, for DISCARD ALL, every portal).
    All,
}

impl QueryOutput {
    pub fn command(tag: impl Into<String>) -> Self {
        QueryOutput {
            tag: tag.into(),
            ..Default::default()
        }
    }
}

/// The SQL engine of an instance; sessions are made from it.
pub struct SqlEngine {
    instance: Instance,
    /// The availability-group layer, when the server runs one.
    replication: parking_lot::RwLock<Option<walden_replication::Replication>>,
    /// Session-level advisory locks (`pg_advisory_lock`), instance-wide.
    advisory: Arc<context::advisory::AdvisoryLocks>,
    /// LISTEN / NOTIFY: the sessions listening, per database.
    notify: Arc<context::notify::Hub>,
    /// Where BACKUP ... TO DISK may write (`None`: BACKUP is refused).
    backup_dir: parking_lot::RwLock<Option<std::path::PathBuf>>,
    /// Client sessions per role (CONNECTION LIMIT).
    logins: Arc<parking_lot::Mutex<std::collections::HashMap<u32, usize>>>,
    /// Bytes of rows one statement may materialize (0: no limit).
    statement_memory_limit: std::sync::atomic::AtomicU64,
    /// The server hosting the engine, if any.
    host: parking_lot::RwLock<Option<Arc<dyn ServerHost>>>,
}

impl SqlEngine {
    pub fn new(instance: Instance) -> Arc<SqlEngine> {
        // No session survives a restart: neither do temporary tables.
        let session = instance.new_session();
        for db in instance.databases() {
            if let Err(e) = session::temp_tables::drop_leftovers(&db, &session) {
                tracing::warn!("dropping leftover temporary tables of {}: {e}", db.name());
            }
        }
        drop(session);
        Arc::new(SqlEngine {
            instance,
            replication: parking_lot::RwLock::new(None),
            advisory: Default::default(),
            notify: Default::default(),
            backup_dir: Default::default(),
            logins: Default::default(),
            statement_memory_limit: context::membudget::DEFAULT_LIMIT.into(),
            host: Default::default(),
        })
    }

    /// Attaches the server hosting the engine (`pg_reload_conf()`,
    /// `pg_hba_file_rules`).
    pub fn set_host(&self, host: Option<Arc<dyn ServerHost>>) {
        *self.host.write() = host;
    }

    pub(crate) fn host(&self) -> Option<Arc<dyn ServerHost>> {
        self.host.read().clone()
    }

    /// The directory BACKUP ... TO DISK writes in (see `admin/backup.rs`).
    pub fn set_backup_dir(&self, dir: Option<std::path::PathBuf>) {
        *self.backup_dir.write() = dir;
    }

    /// The most bytes of rows one statement may materialize (0: no limit);
    /// past it the statement fails with 53200.
    pub fn set_statement_memory_limit(&self, bytes: u64) {
        self.statement_memory_limit
            .store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn statement_memory_limit(&self) -> u64 {
        self.statement_memory_limit
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Attaches the replication layer (AG statements and views use it).
    pub fn set_replication(&self, r: Option<walden_replication::Replication>) {
        *self.replication.write() = r;
    }

    pub fn replication(&self) -> Option<walden_replication::Replication> {
        self.replication.read().clone()
    }

    pub fn instance(&self) -> &Instance {
        &self.instance
    }

    /// Opens an embedded session on `database`. The embedding program is
    /// trusted: `user` acts with its role's privileges, and a name that is
    /// no role acts as the bootstrap superuser. Client connections go
    /// through [`SqlEngine::connect_client`].
    pub fn connect(
        self: &Arc<Self>,
        database: &str,
        user: &str,
        application_name: &str,
    ) -> Result<SqlSession> {
        let role = self
            .instance
            .roles()
            .oid_of(user)
            .unwrap_or(walden_engine::roles::BOOTSTRAP_OID);
        SqlSession::new(self.clone(), database, user, role, None, application_name)
    }

    /// Opens the session of an authenticated client: the role must exist
    /// and have LOGIN, hold CONNECT on the database and be under its
    /// CONNECTION LIMIT (errors 28000, 42501, 53300).
    pub fn connect_client(
        self: &Arc<Self>,
        database: &str,
        user: &str,
        application_name: &str,
    ) -> Result<SqlSession> {
        let db = self.instance.database(database).map_err(|_| {
            SqlError::new(
                ErrorKind::UndefinedDatabase,
                format!("database \"{database}\" does not exist"),
            )
        })?;
        let role = catalog::privileges::login(&self.instance, user, &db)?;
        let guard = catalog::privileges::take_login(&self.logins, &self.instance, role)?;
        SqlSession::new(
            self.clone(),
            database,
            user,
            role,
            Some(guard),
            application_name,
        )
    }

    /// Makes `name` a superuser that logs in with `password` (the server's
    /// configured users): created if missing; its password replaced only
    /// when the stored verifier does not match, so restarts do not rewrite
    /// the catalog.
    pub fn ensure_superuser(&self, name: &str, password: &str) -> Result<()> {
        use walden_engine::scram::ScramVerifier;
        let cat = self.instance.roles();
        if let Some(r) = cat.role(name) {
            let pw_ok = r
                .password
                .as_deref()
                .and_then(ScramVerifier::parse)
                .is_some_and(|v| v.verifies(password));
            if r.superuser && r.login && pw_ok {
                return Ok(());
            }
        }
        self.instance.update_roles(|c| -> Result<()> {
            let verifier = ScramVerifier::new(password).to_string();
            match c.roles.iter_mut().find(|r| r.name == name) {
                Some(r) => {
                    r.superuser = true;
                    r.login = true;
                    r.password = Some(verifier);
                }
                None => {
                    let mut r = walden_engine::roles::Role::new(0, name);
                    r.superuser = true;
                    r.login = true;
                    r.createdb = true;
                    r.createrole = true;
                    r.password = Some(verifier);
                    c.create_role(r)?;
                }
            }
            Ok(())
        })
    }
}

/// Server parameters reported to clients at startup.
const SERVER_PARAMETERS: &[(&str, &str)] = &[
    ("server_version", "15.0 (Walden 0.1)"),
    ("server_encoding", "UTF8"),
    ("client_encoding", "UTF8"),
    ("DateStyle", "ISO, MDY"),
    ("TimeZone", "UTC"),
    ("integer_datetimes", "on"),
    ("standard_conforming_strings", "on"),
    ("IntervalStyle", "postgres"),
    ("is_superuser", "on"),
];

/// Server parameters reported to clients at startup.
pub fn server_parameters() -> Vec<(&'static str, String)> {
    SERVER_PARAMETERS
        .iter()
        .map(|(k, v)| (*k, v.to_string()))
        .collect()
}

/// One server parameter's startup value, by name in any case (read by
/// `SHOW` and by every statement's settings lookups, so no allocation).
pub(crate) fn server_parameter(name: &str) -> Option<&'static str> {
    SERVER_PARAMETERS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

/// Text for a client with engine names of objects in schemas other than
/// `public` (`s` U+001F `t`) shown by their bare name, as PostgreSQL's
/// messages name relations.
pub fn shown_names(text: &str) -> String {
    let sep = walden_engine::namespace::SCHEMA_SEP;
    if !text.contains(sep) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut parts = text.split(sep).peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_some() {
            let keep = part
                .trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '$')
                .len();
            out.push_str(&part[..keep]);
        } else {
            out.push_str(part);
        }
    }
    out
}
