//! A [`Conn`] over the PostgreSQL wire protocol, for a Walden server and for
//! the PostgreSQL peer alike.
//!
//! Every statement goes through the simple-query protocol: one round trip per
//! statement, text results, nothing prepared. That is how the experiments'
//! statements are written (literals inlined), and both servers take it.

use super::target::Conn;
use crate::{BenchError, Result};
use postgres::config::Host;
use postgres::{Client, Config, NoTls, SimpleQueryMessage};
use std::time::Duration;

/// How long a connection attempt may take before it counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection to a PostgreSQL-protocol server.
pub struct PgConn {
    client: Client,
}

/// A readable message for a client error: the server's own message and
/// SQLSTATE when it sent one, else the error and its cause.
pub fn pg_error(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        );
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// Parses `postgres://user@host:port/db` (or a `key=value` string), with a
/// connect timeout and, when the URL names none, the user `walden`.
pub fn parse_config(url: &str) -> Result<Config> {
    let mut cfg: Config = url.parse().map_err(|e: postgres::Error| {
        BenchError::Other(format!("bad URL {url:?}: {}", pg_error(&e)))
    })?;
    if cfg.get_hosts().is_empty() {
        return Err(BenchError::Other(format!("the URL {url:?} names no host")));
    }
    if cfg.get_user().is_none() {
        cfg.user("walden");
    }
    cfg.connect_timeout(CONNECT_TIMEOUT);
    Ok(cfg)
}

/// `host:port` of the first host in `cfg`, for labels and messages.
pub fn host_port(cfg: &Config) -> String {
    let host = match cfg.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "?".into(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

impl PgConn {
    /// Connects to database `db` of the server `cfg` names.
    pub fn connect(cfg: &Config, db: &str) -> Result<PgConn> {
        let mut cfg = cfg.clone();
        cfg.dbname(db);
        let client = cfg.connect(NoTls).map_err(|e| {
            BenchError::Other(format!(
                "cannot connect to database {db} at {}: {}",
                host_port(&cfg),
                pg_error(&e)
            ))
        })?;
        Ok(PgConn { client })
    }

    fn fail(&self, sql: &str, e: &postgres::Error) -> BenchError {
        BenchError::Other(format!(
            "{} (statement: {})",
            pg_error(e),
            super::short_sql(sql)
        ))
    }
}

impl Conn for PgConn {
    fn exec(&mut self, sql: &str) -> Result<()> {
        self.client
            .batch_execute(sql)
            .map_err(|e| self.fail(sql, &e))
    }

    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let msgs = self
            .client
            .simple_query(sql)
            .map_err(|e| self.fail(sql, &e))?;
        Ok(msgs
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => {
                    Some((0..r.len()).map(|i| r.get(i).map(String::from)).collect())
                }
                _ => None,
            })
            .collect())
    }
}
