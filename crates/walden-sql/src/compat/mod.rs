//! The system catalogs and views other tools read: PostgreSQL's
//! `pg_catalog` and `information_schema`, SQL Server's `sys.*` views and
//! DMVs, and the lock views of both.

pub(crate) mod activity_view;
mod catalog_functions;
pub(crate) mod locks_view;
pub(crate) mod pg_catalog;
pub(crate) mod stats_view;
pub(crate) mod system_catalog;
pub(crate) mod sysviews;

pub use system_catalog::CATALOGS;
