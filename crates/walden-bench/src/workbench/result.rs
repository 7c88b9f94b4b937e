//! What a workbench run reports: one [`CellResult`] per (experiment,
//! variant, target, mode), grouped by experiment; serialised as the
//! `--json` output and read by the HTML report.

use super::target::{Counters, Durability, ModeSpec, Recovery, TargetKind};
use serde::Serialize;

/// A sample of the cumulative counters taken while a cell runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sample {
    /// Seconds since the cell started.
    pub t_s: f64,
    pub log_flushes: Option<u64>,
    pub log_bytes_flushed: Option<u64>,
    pub log_writes: Option<u64>,
    pub log_bytes: Option<u64>,
    /// Acknowledged but unhardened bytes and the age of the oldest such commit.
    pub exposure_bytes: Option<u64>,
    pub exposure_oldest_ms: Option<f64>,
}

/// One session of a cell.
#[derive(Clone, Debug, Serialize)]
pub struct SessionResult {
    pub duration_s: f64,
    pub transactions: u64,
    /// The session's own WRITELOG waits (count, ms), where counted per session.
    pub writelog_waits: Option<u64>,
    pub writelog_wait_ms: Option<f64>,
}

/// One measured cell.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    pub experiment: String,
    /// Which workload of the experiment (`insert, 8 sessions`, ...).
    pub variant: String,
    pub target: String,
    pub target_kind: TargetKind,
    pub mode: ModeSpec,
    pub recovery: Option<Recovery>,
    pub sessions: usize,
    /// Transactions the clients committed (counted by the workbench).
    pub transactions: u64,
    /// Rows written (inserted, updated or deleted).
    pub rows: u64,
    /// Wall time of the cell, from the first session's start to the last
    /// session's end (and the final log flush, where the cell has one).
    pub duration_s: f64,
    pub session_durations_s: Vec<f64>,
    pub avg_session_duration_s: f64,
    pub throughput_tps: f64,
    pub rows_per_s: f64,
    /// Counter deltas over the cell.
    pub counters: Counters,
    pub bytes_per_write: Option<f64>,
    pub log_flushes_per_s: Option<f64>,
    /// WRITELOG waits per session, averaged over the cell's sessions.
    pub writelog_avg_waits_per_session: Option<f64>,
    pub writelog_avg_ms_per_session: Option<f64>,
    /// Average length of one WRITELOG wait.
    pub writelog_avg_wait_ms: Option<f64>,
    /// Largest exposure sampled during the cell.
    pub max_exposure_bytes: Option<u64>,
    pub max_exposure_ms: Option<f64>,
    pub flushed_at_end: bool,
    pub per_session: Vec<SessionResult>,
    pub samples: Vec<Sample>,
}

impl CellResult {
    pub fn durability(&self) -> Durability {
        self.mode.durability
    }
}

/// A cell or a whole target that could not run, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub experiment: String,
    pub target: String,
    pub reason: String,
}

/// One experiment's cells and its reading.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentReport {
    pub name: String,
    pub title: String,
    /// What it does, at the sizes run.
    pub description: String,
    pub cells: Vec<CellResult>,
    pub skipped: Vec<Skipped>,
    /// Relaxed / full durability ratios, per target and variant.
    pub ratios: Vec<Ratio>,
    /// A sentence or two of reading ("delayed cut duration by X...").
    pub reading: String,
    /// The published figures this experiment reproduces.
    pub published: String,
}

/// Relaxed vs full durability for one target and variant.
#[derive(Clone, Debug, Serialize)]
pub struct Ratio {
    pub variant: String,
    pub target: String,
    pub recovery: Option<Recovery>,
    /// relaxed duration / full duration (below 1: relaxed is faster).
    pub duration: f64,
    /// relaxed throughput / full throughput.
    pub throughput: f64,
    /// relaxed log writes / full log writes.
    pub log_writes: Option<f64>,
    pub log_bytes: Option<f64>,
}

/// A whole `walden bench <experiment|all>` run.
#[derive(Clone, Debug, Serialize)]
pub struct WorkbenchReport {
    pub version: String,
    pub started_unix: u64,
    pub command: String,
    pub scale: f64,
    pub targets: Vec<String>,
    pub skipped_targets: Vec<Skipped>,
    pub disk: Option<crate::disk::DiskCeiling>,
    pub experiments: Vec<ExperimentReport>,
    pub summary: String,
    pub elapsed_s: f64,
}
