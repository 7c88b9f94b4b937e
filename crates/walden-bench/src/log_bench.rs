//! The log and commit-path benchmark (`walden bench log`).
//!
//! Measured in one run, interleaved in rounds (round `r` runs the disk
//! ceiling, then every cell, in reverse order on odd rounds, then recovery):
//!
//! - the disk's sync-write ceiling ([`crate::disk`]);
//! - one-row-insert commits per second of the engine, fully durable
//!   (`DELAYED_DURABILITY = DISABLED`) and delayed (`FORCED`), from 1, 4, 16
//!   and 64 sessions, with the log counters a DBA reads (writes, bytes,
//!   flushes, WRITELOG waits) and commit latency;
//! - fully durable single-session commits with `SyncMode::Fdatasync` and
//!   `SyncMode::Dsync`, each in its own instance, to choose the default;
//! - recovery speed: opening an instance whose log holds about 200 MB that
//!   no checkpoint covers, with the log's pages evicted from the page cache
//!   (cold) and again right after (warm).
//!
//! Each cell starts from the same state: an empty table, a fresh checkpoint
//! (so old segments are recycled as spares and no segment is zero-filled
//! during the cell) and new sessions.

mod cell;
mod report;

use crate::disk::{device_sample, evict_dir, CeilingFile, DiskCeiling, DiskState};
use crate::stats::{median, median_by, percentile_sorted, ratio};
use crate::{BenchError, Result};
use cell::*;
pub use report::*;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use walden_engine::{
    ColumnDef, CommitRequest, DataType, Database, DelayedDurability, Instance, InstanceConfig,
    LogConfig, Session, SyncMode, Table, TableDef, Value, WaitType,
};
/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct LogBenchConfig {
    /// Where the instances and the ceiling file go (must exist).
    pub dir: PathBuf,
    pub rounds: usize,
    /// Length of each commit cell.
    pub cell_seconds: f64,
    /// Session counts of the durable and delayed cells.
    pub sessions: Vec<usize>,
    /// Length of each of the three ceiling measurements.
    pub ceiling_seconds: f64,
    /// Size of the preallocated ceiling file.
    pub ceiling_file_bytes: u64,
    /// Also run durable single-session cells with each sync mode.
    pub sync_mode_cells: bool,
    /// Log bytes to write for the recovery measurement (0 skips it).
    pub recovery_bytes: u64,
    /// Text bytes per row of the recovery workload.
    pub recovery_row_bytes: usize,
    /// Rows per transaction of the recovery workload.
    pub recovery_rows_per_txn: usize,
    /// Log segment size (`None`: the default, 64 MiB).
    pub segment_size: Option<u64>,
    /// Print a line per measurement on stderr.
    #[serde(skip)]
    pub progress: bool,
}

impl LogBenchConfig {
    /// The defaults of `walden bench log` (about 75 s on 2 cores).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LogBenchConfig {
            dir: dir.into(),
            rounds: 3,
            cell_seconds: 1.5,
            sessions: vec![1, 4, 16, 64],
            ceiling_seconds: 0.5,
            ceiling_file_bytes: 64 << 20,
            sync_mode_cells: true,
            recovery_bytes: 200_000_000,
            recovery_row_bytes: 1000,
            recovery_rows_per_txn: 64,
            segment_size: None,
            progress: false,
        }
    }

    fn log_config(&self, sync_mode: SyncMode) -> LogConfig {
        let mut c = LogConfig {
            sync_mode,
            ..LogConfig::default()
        };
        if let Some(s) = self.segment_size {
            c.segment_size = s;
        }
        c
    }
}

/// The commit mode of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Durable,
    Delayed,
}

/// Which instance a cell runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// The durable/delayed grid, default log settings.
    Main,
    /// The sync-mode comparison (one instance per mode).
    SyncMode,
}

/// One cell of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CellSpec {
    pub group: Group,
    pub mode: Mode,
    #[serde(serialize_with = "ser_sync")]
    pub sync_mode: SyncMode,
    pub sessions: usize,
}

fn sync_name(m: SyncMode) -> &'static str {
    match m {
        SyncMode::Fdatasync => "fdatasync",
        SyncMode::Dsync => "dsync",
    }
}

fn ser_sync<S: serde::Serializer>(m: &SyncMode, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(sync_name(*m))
}

impl CellSpec {
    pub fn label(&self) -> String {
        match (self.group, self.mode) {
            (Group::Main, Mode::Durable) => format!("durable x{}", self.sessions),
            (Group::Main, Mode::Delayed) => format!("delayed x{}", self.sessions),
            (Group::SyncMode, _) => {
                format!("durable x{} {}", self.sessions, sync_name(self.sync_mode))
            }
        }
    }
}

fn say(cfg: &LogBenchConfig, msg: impl AsRef<str>) {
    if cfg.progress {
        eprintln!("{}", msg.as_ref());
    }
}

/// The cells of a run, in the order of even rounds.
pub fn cells(cfg: &LogBenchConfig) -> Vec<CellSpec> {
    let mut v = Vec::new();
    for &n in &cfg.sessions {
        for mode in [Mode::Durable, Mode::Delayed] {
            v.push(CellSpec {
                group: Group::Main,
                mode,
                sync_mode: SyncMode::Fdatasync,
                sessions: n,
            });
        }
    }
    if cfg.sync_mode_cells {
        for sync_mode in [SyncMode::Fdatasync, SyncMode::Dsync] {
            v.push(CellSpec {
                group: Group::SyncMode,
                mode: Mode::Durable,
                sync_mode,
                sessions: 1,
            });
        }
    }
    v
}

/// What a round runs, in the order of even rounds.
#[derive(Clone, Debug)]
enum Step {
    /// Every fully durable cell (and the ceiling), in alternating slices.
    Durable(Vec<CellSpec>),
    /// A delayed cell (CPU-bound, not disk-bound: run whole).
    Cell(CellSpec),
}

fn steps(cfg: &LogBenchConfig) -> Vec<Step> {
    let all = cells(cfg);
    let durable: Vec<CellSpec> = all
        .iter()
        .copied()
        .filter(|c| c.mode == Mode::Durable)
        .collect();
    let mut v = vec![Step::Durable(durable)];
    v.extend(
        all.into_iter()
            .filter(|c| c.mode == Mode::Delayed)
            .map(Step::Cell),
    );
    v
}

/// Which of the instances (main, sync-fdatasync, sync-dsync) runs a cell.
fn bench_index(spec: &CellSpec) -> usize {
    match (spec.group, spec.sync_mode) {
        (Group::Main, _) => 0,
        (Group::SyncMode, SyncMode::Fdatasync) => 1,
        (Group::SyncMode, SyncMode::Dsync) => 2,
    }
}

/// Slices per interleaved measurement.
const SLICES: usize = 4;

/// Runs the fully durable cells in `SLICES` slices each, alternating with
/// each other (the order rotated by one every slice) and with 4 KB `O_DSYNC`
/// ceiling slices: C A B .. Z C B .. Z A C ... The disk drifts within seconds (and
/// with what other processes write); alternating short slices compares like
/// with like, so ratios between durable cells and to the ceiling hold even
/// when the absolute figures move.
fn interleaved(
    ceiling_file: &CeilingFile,
    cfg: &LogBenchConfig,
    specs: &[CellSpec],
    benches: &mut [Bench],
    flip: bool,
) -> Result<Vec<(CellSpec, CellResult)>> {
    let slice = cfg.cell_seconds / SLICES as f64;
    let cslice = cfg.ceiling_seconds / 2.0;
    let mut raws: Vec<RawCell> = specs.iter().map(|_| RawCell::default()).collect();
    let mut ceilings = vec![ceiling_file.dsync_rate(4096, cslice)?];
    let n = specs.len();
    for k in 0..SLICES {
        for j in 0..n {
            // Rotate by one each slice (and reverse on odd rounds) so that no
            // cell always runs next to a ceiling slice or to the same neighbour.
            let pos = (j + k) % n;
            let i = if flip { n - 1 - pos } else { pos };
            let spec = specs[i];
            let raw = benches[bench_index(&spec)].run_cell(spec.mode, spec.sessions, slice)?;
            raws[i].add(raw);
        }
        ceilings.push(ceiling_file.dsync_rate(4096, cslice)?);
    }
    let ceiling_mean = ceilings.iter().sum::<f64>() / ceilings.len() as f64;
    Ok(specs
        .iter()
        .zip(raws)
        .map(|(spec, raw)| {
            let mut res = raw.finish();
            res.ratio_to_interleaved_ceiling = Some(ratio(res.commits_per_s, ceiling_mean));
            res.interleaved_ceiling_dsync_4k = ceilings.clone();
            (*spec, res)
        })
        .collect())
}

/// Runs the benchmark.
pub fn run(cfg: &LogBenchConfig) -> Result<LogBenchReport> {
    let started = walden_engine::types::format_timestamp(
        walden_engine::types::now_micros() / 1_000_000 * 1_000_000,
    );
    let t_run = Instant::now();
    let load0 = loadavg();
    if cfg.rounds == 0 {
        return Err(BenchError::Other("rounds must be at least 1".into()));
    }
    if cfg.sessions.contains(&0) {
        return Err(BenchError::Other(
            "session counts must be at least 1".into(),
        ));
    }
    let dir = &cfg.dir;
    std::fs::create_dir_all(dir)?;
    say(
        cfg,
        format!("walden bench log: working in {}", dir.display()),
    );
    let ceiling_file = CeilingFile::create(dir, cfg.ceiling_file_bytes)?;
    let specs = cells(cfg);
    // Indexed as `bench_index` says: main, then the sync-mode pair.
    let mut benches = vec![Bench::open(&dir.join("main"), cfg, SyncMode::Fdatasync)?];
    if cfg.sync_mode_cells {
        benches.push(Bench::open(
            &dir.join("sync-fdatasync"),
            cfg,
            SyncMode::Fdatasync,
        )?);
        benches.push(Bench::open(&dir.join("sync-dsync"), cfg, SyncMode::Dsync)?);
    }
    let rec_dir = dir.join("recovery");
    let setup = if cfg.recovery_bytes > 0 {
        say(
            cfg,
            format!(
                "writing {:.0} MB of log for the recovery measurement",
                cfg.recovery_bytes as f64 / 1e6
            ),
        );
        let s = make_recovery_log(&rec_dir, cfg)?;
        say(
            cfg,
            format!(
                "  {:.0} MB in {:.2} s ({:.0} MB/s delayed)",
                s.log_bytes as f64 / 1e6,
                s.seconds,
                s.write_mb_per_s
            ),
        );
        Some(s)
    } else {
        None
    };

    let mut rounds = Vec::new();
    for r in 0..cfg.rounds {
        let ceiling = ceiling_file.measure(cfg.ceiling_seconds)?;
        say(
            cfg,
            format!(
                "round {}: ceiling 4K O_DSYNC {:.0}/s, 4K fdatasync {:.0}/s, 60K O_DSYNC {:.0}/s ({:.0} MB/s) [{}]",
                r + 1,
                ceiling.dsync_4k_writes_per_s,
                ceiling.fdatasync_4k_writes_per_s,
                ceiling.dsync_60k_writes_per_s,
                ceiling.dsync_60k_mb_per_s,
                ceiling.state().as_str()
            ),
        );
        let mut order = steps(cfg);
        if r % 2 == 1 {
            order.reverse();
        }
        let mut results: Vec<(String, CellResult)> = Vec::new();
        for step in &order {
            let done: Vec<(CellSpec, CellResult)> = match step {
                Step::Durable(specs) => {
                    interleaved(&ceiling_file, cfg, specs, &mut benches, r % 2 == 1)?
                }
                Step::Cell(spec) => {
                    let raw = benches[0].run_cell(spec.mode, spec.sessions, cfg.cell_seconds)?;
                    vec![(*spec, raw.finish())]
                }
            };
            for (spec, mut res) in done {
                res.ratio_to_ceiling = ratio(res.commits_per_s, ceiling.dsync_4k_writes_per_s);
                say(
                    cfg,
                    format!(
                        "  {:<22} {:>10.0} commits/s  {:>7.0} writes/s  {:>6.1} commits/flush  p99 {:.0} us  other CPU {:.1}{}",
                        spec.label(),
                        res.commits_per_s,
                        res.log_writes_per_s,
                        res.commits_per_flush,
                        res.latency_p99_us,
                        res.other_cpu,
                        match res.ratio_to_interleaved_ceiling {
                            Some(q) => format!(
                                "  ({:.0}% of the interleaved ceiling {:.0}/s)",
                                q * 100.0,
                                res.interleaved_ceiling_dsync_4k.iter().sum::<f64>()
                                    / res.interleaved_ceiling_dsync_4k.len().max(1) as f64
                            ),
                            None => String::new(),
                        }
                    ),
                );
                results.push((spec.label(), res));
            }
        }
        let end_dsync = ceiling_file.dsync_rate(4096, cfg.ceiling_seconds)?;
        let mut recovery = Vec::new();
        if setup.is_some() {
            for cold in [true, false] {
                let run = recover_once(&rec_dir, cfg, cold)?;
                say(
                    cfg,
                    format!(
                        "  recovery ({}): {:.0} MB replayed in {:.2} s = {:.0} MB/s",
                        if cold { "cold" } else { "warm" },
                        run.lsn_span_bytes as f64 / 1e6,
                        run.open_seconds,
                        run.mb_per_s
                    ),
                );
                recovery.push(run);
            }
        }
        rounds.push(RoundReport {
            round: r + 1,
            disk_state: DiskState::span(ceiling.state(), DiskState::of(end_dsync)),
            ceiling,
            ceiling_end_dsync_4k_writes_per_s: end_dsync,
            order: results.iter().map(|c| c.0.clone()).collect(),
            cells: results,
            recovery,
        });
    }
    for b in benches {
        b.close()?;
    }
    drop(ceiling_file);
    let mut rep = summarize(
        cfg,
        started,
        t_run.elapsed().as_secs_f64(),
        &specs,
        rounds,
        setup,
    );
    rep.loadavg_start = load0;
    rep.loadavg_end = loadavg();
    Ok(rep)
}
