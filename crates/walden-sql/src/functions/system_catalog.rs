//! What the stages below `compat/` need from the system catalogs, as a
//! trait `compat/` implements: the session hands the implementation down in
//! `SessionInfo` and to each `Planner`. The function library calls the
//! catalog functions through it (reg casts, `pg_get_*def`, privileges,
//! sizes); the planner finds system relations through it and scans them
//! without knowing how their rows are made. So the catalogs, which read
//! everything, sit above the code that evaluates and plans, and that code
//! imports nothing above it (DataFusion's `TableProvider` has the same
//! shape).

use super::{Env, Func};
use crate::context::search_path::SearchPath;
use crate::error::Result;
use std::sync::Arc;
use walden_engine::{DataType, Database, RegKind, Table, Value};

/// The system catalogs, seen from below.
pub trait SystemCatalog: Send + Sync + std::fmt::Debug {
    /// Calls one of the catalog functions (`Func::is_catalog`).
    fn call(&self, f: Func, args: Vec<Value>, env: &Env<'_>) -> Result<Value>;

    /// `'text'::regclass`: the OID of the relation `text` names, or digits.
    fn regclass_oid(&self, env: &Env<'_>, text: &str) -> Result<Value>;

    /// Checks a reg-type constant (`'t'::regclass`) as the expression
    /// holding it is planned: PostgreSQL reads such constants at parse time.
    fn check_reg_constant(
        &self,
        db: &Database,
        viewer: Option<u64>,
        path: &SearchPath,
        kind: RegKind,
        text: &str,
    ) -> Result<()>;

    /// The table whose identity column a sequence name stands for
    /// (`setval('t_id_seq', ...)` on an identity column's counter).
    fn identity_of_sequence(&self, env: &Env<'_>, name: &str) -> Option<Arc<Table>>;

    /// The system relation `schema.name` names (`sys.*`, `pg_catalog`,
    /// `information_schema`); `schema` None looks in `pg_catalog` and `sys`.
    fn relation(&self, schema: Option<&str>, name: &str) -> Option<Arc<dyn SystemRelation>>;

    /// A sequence read as a relation (`SELECT * FROM seq`): the relation
    /// and the argument its scan takes.
    fn sequence_relation(
        &self,
        db: &Database,
        viewer: Option<u64>,
        name: &str,
    ) -> Option<(Arc<dyn SystemRelation>, Value)>;

    /// A catalog function in FROM whose rows are a system relation's
    /// (`pg_options_to_table`, `sys.dm_io_virtual_file_stats`).
    fn table_function(&self, name: &str) -> Option<Arc<dyn SystemRelation>>;
}

/// A system relation: its columns are known when a query is planned, its
/// rows are made when the query scans it.
pub trait SystemRelation: Send + Sync + std::fmt::Debug {
    fn columns(&self) -> Vec<(&'static str, DataType)>;

    /// The OID of the catalog table it is (`pg_class`...), None for a view:
    /// such a relation has a `tableoid` system column.
    fn table_oid(&self) -> Option<i64>;

    /// A column's origin as RowDescription reports it (catalog tables only).
    fn origin(&self, column: &str) -> Option<crate::ColumnOrigin>;

    /// Its rows, given the scan's arguments (a table function's).
    fn rows(&self, args: &[Value], env: &Env<'_>) -> Result<Vec<Vec<Value>>>;
}
