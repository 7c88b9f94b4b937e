//! What a statement runs with, below everything that evaluates or plans it:
//! the session's settings, its `search_path`, its timeouts and their
//! watchdog, the statement's memory budget, the instance's advisory locks,
//! its LISTEN/NOTIFY listeners,
//! and the rows a session shows of its own cursors. The session owns these;
//! functions, the planner and the catalog statements read them from here.

pub(crate) mod advisory;
pub(crate) mod membudget;
pub mod notify;
pub(crate) mod search_path;
pub(crate) mod settings;
pub(crate) mod timeouts;

/// A row of `pg_cursors`: a cursor the session has open, as it hands it to
/// the catalog views through `SessionInfo`.
#[derive(Clone, Debug)]
pub struct CursorRow {
    pub name: String,
    pub statement: String,
    pub hold: bool,
    pub binary: bool,
    pub scroll: bool,
    pub created: i64,
}
