//! Targets other than the embedded engine: a Walden server by URL, and the
//! peers PostgreSQL and SQLite. (Being built.)

use super::target::Target;
use crate::{BenchError, Result};
use std::path::Path;

/// A running Walden server at `url`.
pub fn walden_server(url: &str) -> Result<Box<dyn Target>> {
    Err(BenchError::Other(format!(
        "server targets are not built yet ({url})"
    )))
}

/// A throwaway PostgreSQL cluster under `dir`; `Err(reason)` when it cannot start.
pub fn postgres(_dir: &Path) -> std::result::Result<Box<dyn Target>, String> {
    Err("the PostgreSQL peer is not built yet".into())
}

/// SQLite databases under `dir`.
pub fn sqlite(_dir: &Path) -> std::result::Result<Box<dyn Target>, String> {
    Err("the SQLite peer is not built yet".into())
}
