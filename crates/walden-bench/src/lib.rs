//! Walden's workbench: the experiments that show what each commit mode costs.
//!
//! Every experiment measures against the embedded engine, interleaves what it
//! compares in rounds (the disk of the machines Walden runs on flips between a
//! fast and a slow state for minutes at a time), and reports medians over
//! rounds together with the per-round figures.
//!
//! - [`log_bench`]: the log and commit path (`walden bench log`).
//! - [`disk`]: the disk's raw sync-write ceiling, measured in the same run.
//! - [`stats`]: medians and percentiles.

pub mod disk;
pub mod log_bench;
pub mod stats;
pub mod stress;
pub mod workbench;

use std::fmt;
use std::path::Path;

/// What can stop an experiment.
#[derive(Debug)]
pub enum BenchError {
    Io(std::io::Error),
    Engine(walden_engine::EngineError),
    Other(String),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Io(e) => write!(f, "I/O error: {e}"),
            BenchError::Engine(e) => write!(f, "engine error: {e}"),
            BenchError::Other(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for BenchError {}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::Io(e)
    }
}

impl From<walden_engine::EngineError> for BenchError {
    fn from(e: walden_engine::EngineError) -> Self {
        BenchError::Engine(e)
    }
}

pub type Result<T> = std::result::Result<T, BenchError>;

/// A scratch directory for an experiment, removed when dropped. Made under
/// `base` when given, else under `./target` (or the current directory), so
/// it lies on the disk being measured rather than on a memory file system.
pub fn scratch_dir(base: Option<&Path>) -> std::io::Result<tempfile::TempDir> {
    let base = match base {
        Some(b) => b.to_path_buf(),
        None => {
            let cwd = std::env::current_dir()?;
            let target = cwd.join("target");
            if target.is_dir() {
                target
            } else {
                cwd
            }
        }
    };
    std::fs::create_dir_all(&base)?;
    tempfile::Builder::new()
        .prefix("walden-bench-")
        .tempdir_in(base)
}
