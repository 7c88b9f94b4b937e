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
    /// The synchronous-replica experiment's own figures (it compares
    /// replica modes and network delays, not two durability modes of a
    /// target, so its results do not fit [`CellResult`]).
    pub replica: Option<ReplicaReport>,
}

/// `sync-replica`: the workload with no availability group, and with a
/// secondary in each mode behind each network delay.
#[derive(Clone, Debug, Serialize)]
pub struct ReplicaReport {
    /// Rounds: every cell runs one batch per round, the cells interleaved
    /// (in reverse order every other round).
    pub batches: u64,
    pub rows_per_batch: u64,
    /// Added one-way delays between primary and secondary (0: plain loopback).
    pub delays_ms: Vec<u64>,
    /// How the delay is injected, and why that way.
    pub delay_note: String,
    pub cells: Vec<ReplicaCell>,
    /// The target: p50 durable (auto-commit) commit latency with a
    /// loopback synchronous secondary over the local-only p50.
    pub p50_ratio_sync_local: Option<f64>,
    pub p50_ratio_target: f64,
    pub pass: Option<bool>,
    /// The same p50 over the asynchronous cell's: a control on this disk,
    /// where the secondary's flushes overlapping the primary's make these
    /// faster than a lone stream of flushes (the local cell's); async has
    /// the same overlap but waits for nobody.
    pub p50_ratio_sync_async: Option<f64>,
    /// The same ratio of median ms per insert (medians over rounds).
    pub ms_per_insert_ratio_sync_local: Option<f64>,
    /// 4 KB pwrite + fdatasync pairs per second on the scratch disk, alone,
    /// before and after the cells, and the state that makes (FACTS.md).
    pub disk_fdatasync_4k_per_s: [f64; 2],
    /// The disk's floor for a secondary there: one 4 KB write + fdatasync
    /// in the primary's and the secondary's directories at once vs alone,
    /// before and after the cells.
    pub sync_pair_floor: [crate::disk::SyncPairFloor; 2],
    /// Where the secondary instance ran (`--secondary-dir`, default beside the primary).
    pub secondary_dir: String,
    pub disk_state: crate::disk::DiskState,
}

/// One (workload, replica mode, delay) over all its rounds.
#[derive(Clone, Debug, Serialize)]
pub struct ReplicaCell {
    /// `auto-commit` or `1 transaction per N`.
    pub workload: String,
    pub autocommit: bool,
    /// `local`, `sync`, `sync + delayed` or `async`.
    pub mode: String,
    /// The settings behind the mode, as a DBA would name them.
    pub mode_label: String,
    /// Added one-way delay, ms.
    pub delay_ms: u64,
    pub rows: u64,
    pub transactions: u64,
    /// Sum of the batches' wall times.
    pub duration_s: f64,
    /// duration / rows.
    pub ms_per_insert: f64,
    /// Per round (batch), and their median.
    pub ms_per_insert_rounds: Vec<f64>,
    pub median_ms_per_insert: f64,
    /// Latency of each commit: each INSERT in auto-commit, each COMMIT
    /// otherwise (ms).
    pub commit_p50_ms: f64,
    pub commit_p99_ms: f64,
    /// The session's HADR_SYNC_COMMIT and WRITELOG waits.
    pub hadr_sync_commit_waits: u64,
    pub hadr_sync_commit_wait_ms: f64,
    /// The session's HADR_LAG_BOUND waits (bounded-lag asynchronous cell).
    pub hadr_lag_bound_waits: u64,
    pub hadr_lag_bound_wait_ms: f64,
    pub writelog_waits: u64,
    pub writelog_wait_ms: f64,
    /// Primary's counters over the batches: Log Flushes/sec and Write
    /// Transactions/sec (cumulative deltas, and per second of batch time).
    pub log_flushes: u64,
    pub write_transactions: u64,
    pub log_flushes_per_s: f64,
    pub write_transactions_per_s: f64,
    /// Log writes (write + sync) and their average time, on the primary and
    /// on the secondary (its copy of the database): where a synchronous
    /// commit's time goes.
    pub log_writes: u64,
    pub log_write_avg_ms: Option<f64>,
    pub secondary_log_writes: u64,
    pub secondary_log_write_avg_ms: Option<f64>,
    /// Database Replica counters: Mirrored Write Transactions and
    /// Transaction Delay (total ms, and per mirrored transaction).
    pub mirrored_write_transactions: u64,
    pub transaction_delay_ms: f64,
    pub transaction_delay_ms_per_txn: Option<f64>,
    /// Median ms per insert over the local-only cell's of the same workload.
    pub vs_local: Option<f64>,
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
