//! Triggers reached from the DML stage. A data change asks the hook the
//! session puts in [`SessionInfo`] for its table's triggers once per
//! statement ([`Triggers::of`]: `None` for a table without any, the common
//! case), and fires each through it ([`Triggers::fire`]). The trigger
//! functions run on the procedural runtime, a later stage: as for
//! [`super::Routines`], this trait object is the way down.

use super::{Env, SessionInfo};
use crate::error::Result;
use crate::front::plpgsql::trigger::{PgTrigger, TrigOp};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use walden_engine::{Instance, Table, Transaction, Value};

/// A changed row: (old, new).
pub type RowChange = (Option<Vec<Value>>, Option<Vec<Value>>);

/// A table's enabled triggers, in firing order (by name).
#[derive(Debug, Default)]
pub struct TableTriggers {
    pub list: Vec<Arc<PgTrigger>>,
}

/// One firing.
pub struct Fire<'a> {
    pub trig: &'a PgTrigger,
    pub table: &'a Table,
    pub op: TrigOp,
    /// The row before the change (UPDATE, DELETE; row-level only).
    pub old: Option<&'a [Value]>,
    /// The row after it (INSERT, UPDATE; row-level only).
    pub new: Option<&'a [Value]>,
    /// A T-SQL trigger's `deleted` / `inserted` rows: each changed row's
    /// (old, new), in the order they were written.
    pub rows: &'a [RowChange],
    /// The columns an UPDATE set (T-SQL's `UPDATE(col)`).
    pub assigned: &'a [usize],
}

/// What a statement's transaction and session give a firing.
pub struct FireCtx<'a> {
    pub info: &'a SessionInfo,
    pub cancel: &'a AtomicBool,
    pub instance: &'a Instance,
}

/// Runs triggers for one statement.
pub trait Triggers: Send + Sync {
    /// The table's enabled triggers, `None` when it has none.
    fn of(&self, env: &Env<'_>, table: &Table) -> Result<Option<Arc<TableTriggers>>>;
    /// Runs one trigger in `tx`; for a BEFORE row trigger, the row to
    /// write (`None`: skip the row).
    fn fire(
        &self,
        tx: &mut Transaction,
        cx: &FireCtx<'_>,
        f: Fire<'_>,
    ) -> Result<Option<Vec<Value>>>;
}

/// The session's hook.
#[derive(Clone)]
pub struct TriggerHook(pub Arc<dyn Triggers>);

impl std::fmt::Debug for TriggerHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TriggerHook")
    }
}
