//! Targets other than the embedded engine: a Walden server by URL, and the
//! peers PostgreSQL and SQLite.

use super::pgwire::{host_port, parse_config, PgConn};
use super::target::{Conn, Target};
use super::walden::{Connector, WaldenTarget};
use crate::{BenchError, Result};
use std::path::Path;
use std::sync::Arc;

/// A running Walden server at `url` (`postgres://user@host:port/db`); its
/// cells make their own databases on that server. Fails at once, with the
/// reason, when the server does not answer.
pub fn walden_server(url: &str) -> Result<Box<dyn Target>> {
    let cfg = parse_config(url)?;
    let at = host_port(&cfg);
    let db = cfg.get_dbname().unwrap_or("walden").to_string();
    let mut probe = PgConn::connect(&cfg, &db)?;
    probe
        .query("SELECT 1")
        .map_err(|e| BenchError::Other(format!("{at} does not answer queries: {e}")))?;
    let connector: Connector =
        Arc::new(move |name: &str| Ok(Box::new(PgConn::connect(&cfg, name)?) as Box<dyn Conn>));
    Ok(Box::new(WaldenTarget::server(
        format!("walden ({at})"),
        connector,
    )))
}

/// A throwaway PostgreSQL cluster under `dir`; `Err(reason)` when it cannot start.
pub fn postgres(dir: &Path) -> std::result::Result<Box<dyn Target>, String> {
    Ok(Box::new(super::pg_peer::PostgresTarget::start(dir)?))
}

/// SQLite databases under `dir`.
pub fn sqlite(dir: &Path) -> std::result::Result<Box<dyn Target>, String> {
    Ok(Box::new(super::sqlite_peer::SqliteTarget::new(dir)?))
}
