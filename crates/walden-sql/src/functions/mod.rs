//! Scalar functions (PostgreSQL and T-SQL names) and aggregates.

use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast::{self, FunctionArg, FunctionArgExpr};
use std::cmp::Ordering;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use walden_engine::types::Numeric;
use walden_engine::types::{civil_from_days, days_from_civil, now_micros};
use walden_engine::{DataType, Transaction, Value};

/// What evaluation can reach: parameters, enclosing rows, the transaction.
pub struct Env<'a> {
    pub params: &'a [Value],
    /// Enclosing queries' current rows, innermost first.
    pub outer: &'a [&'a [Value]],
    pub tx: &'a Transaction,
    pub info: &'a SessionInfo,
    pub cancel: &'a AtomicBool,
    pub instance: &'a walden_engine::Instance,
}

/// What functions may ask about the session.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub spid: u32,
    pub database: String,
    pub database_id: u32,
    pub user: String,
    /// The session's role OID (privilege functions).
    pub role: u32,
    /// The statement's memory budget for materialized rows.
    pub mem: Arc<crate::context::membudget::Budget>,
    /// Transaction start, for now() and friends.
    pub now: i64,
    /// Statement start (statement_timestamp()).
    pub statement_now: i64,
    /// The session's settings (current_setting, set_config).
    pub settings: crate::context::settings::Settings,
    /// Its `search_path` as its role sees it (schema privileges applied).
    pub path: crate::context::search_path::SearchPath,
    /// The instance's advisory locks.
    pub advisory: Arc<crate::context::advisory::AdvisoryLocks>,
    /// The session's LISTEN side (`pg_listening_channels()`).
    pub listener: Arc<crate::context::notify::Listener>,
    /// The instance's listeners (`pg_notification_queue_usage()`).
    pub notify_hub: Arc<crate::context::notify::Hub>,
    /// Database ids by lower-case name (for DB_ID and DB_NAME), listed on
    /// first use in the statement: most statements never ask, and listing
    /// every database for each one showed in profiles.
    pub database_ids: std::sync::OnceLock<Vec<(String, u32)>>,
    /// The availability-group layer (for `sys.dm_hadr_*`).
    pub replication: Option<walden_replication::Replication>,
    /// The server hosting the engine (`pg_reload_conf()`, `pg_hba_file_rules`).
    pub host: Option<Arc<dyn server_host::ServerHost>>,
    /// The session's open cursors (`pg_cursors`).
    pub cursors: Vec<crate::context::CursorRow>,
    /// `pg_prepared_statements` rows of the session's `PREPARE`d statements.
    pub prepared: Vec<Vec<Value>>,
    /// The system catalogs (`compat/`): catalog functions, system relations.
    pub system: &'static dyn SystemCatalog,
    /// The identity values the session's inserts took (`@@IDENTITY`,
    /// `SCOPE_IDENTITY()`), shared with the session.
    pub identity: Arc<std::sync::Mutex<IdentityLog>>,
    /// The result sets of T-SQL triggers the statement fired, for the
    /// client (SQL Server sends them before the statement's own result);
    /// `None` where they cannot be sent (the extended protocol).
    pub trigger_sets: TriggerSets,
    /// The procedural runtime, for stored functions called from an
    /// expression (`routines.rs`).
    pub routines: Option<RoutineHook>,
    /// The procedural runtime, for triggers a data change fires
    /// (`trigger_hook.rs`).
    pub triggers: Option<TriggerHook>,
}

/// Where T-SQL triggers' result sets wait for the client (see
/// [`SessionInfo::trigger_sets`]).
pub type TriggerSets = Arc<std::sync::Mutex<Option<Vec<crate::QueryOutput>>>>;

/// The last identity values a session's inserts took: `last` in any scope
/// (`@@IDENTITY`), `scope` in the running batch or procedure
/// (`SCOPE_IDENTITY()`; the procedural runtime keeps the caller's aside
/// while a procedure runs).
#[derive(Clone, Debug, Default)]
pub struct IdentityLog {
    pub last: Option<i64>,
    pub scope: Option<i64>,
    /// The table `SET IDENTITY_INSERT t ON` named (lower case): explicit
    /// values for its IDENTITY column are taken, other tables' refused.
    pub insert_on: Option<String>,
}

impl IdentityLog {
    /// An INSERT that took identity value `v` (its last row's).
    pub fn took(&mut self, v: i64) {
        self.last = Some(v);
        self.scope = Some(v);
    }
}

impl SessionInfo {
    fn database_ids(&self, instance: &walden_engine::Instance) -> &[(String, u32)] {
        self.database_ids.get_or_init(|| {
            instance
                .databases()
                .iter()
                .map(|d| (d.name().to_ascii_lowercase(), d.id()))
                .collect()
        })
    }
}

mod aggregate;
pub(crate) mod arrays;
pub mod bitwise;
mod call;
mod dates;
mod func;
pub(crate) mod json;
pub(crate) mod operators;
mod ordered_set;
pub(crate) mod regex_fns;
pub use ordered_set::OrderedFn;
mod routines;
pub use routines::{call_routine_rows, routine_columns, RoutineHook, Routines};
pub mod trigger_hook;
pub use trigger_hook::TriggerHook;
pub(crate) mod server_host;
mod stats;
mod strings;
mod system_catalog;
pub(crate) mod temporal;
mod variadic;

pub mod num_format;
mod to_char_dt;
pub use aggregate::*;
pub use call::*;
pub use func::*;
pub use operators::*;
pub use stats::*;
pub use system_catalog::*;
pub use variadic::*;
