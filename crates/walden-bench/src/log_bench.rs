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

use crate::disk::{device_sample, evict_dir, CeilingFile, DiskCeiling, DiskState};
use crate::stats::{median, median_by, percentile_sorted, ratio};
use crate::{BenchError, Result};
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

/// What one cell measured in one round.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CellResult {
    pub commits: u64,
    pub seconds: f64,
    pub commits_per_s: f64,
    /// This cell's commits/s over the round's 4 KB `O_DSYNC` ceiling.
    pub ratio_to_ceiling: f64,
    /// `num_of_writes` of the log files.
    pub log_writes: u64,
    pub log_writes_per_s: f64,
    /// `num_of_bytes_written` of the log files.
    pub log_bytes_written: u64,
    pub bytes_per_write: f64,
    pub io_stall_write_ms: f64,
    /// Average write-and-sync time per log write (`io_stall_write_ms / log_writes`).
    pub stall_per_write_ms: f64,
    /// Write-and-harden cycles of the flusher (`Log Flushes`).
    pub log_flushes: u64,
    /// Bytes those cycles wrote (`Log Bytes Flushed`).
    pub log_bytes_flushed: u64,
    pub commits_per_flush: f64,
    /// Bytes written zero-filling spare segments during the cell (a
    /// background thread of the log; kept out of `log_bytes_written`).
    pub prealloc_bytes: u64,
    pub writelog_waits: u64,
    pub writelog_wait_ms: f64,
    pub writelog_avg_ms: f64,
    pub logbuffer_waits: u64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_max_us: f64,
    /// For single-session durable cells: 4 KB `O_DSYNC` writes/s measured in
    /// short slices alternating with slices of the cell (the disk drifts
    /// within seconds, so a ceiling taken earlier in the round is not enough).
    pub interleaved_ceiling_dsync_4k: Vec<f64>,
    /// commits/s over the mean of the interleaved ceiling slices.
    pub ratio_to_interleaved_ceiling: Option<f64>,
    /// CPUs' worth of time other processes used during the cell (this
    /// process excluded): a busy machine slows every figure.
    pub other_cpu: f64,
    /// MB/s other writers put on the same disk during the cell (device
    /// writes minus this cell's log writes and segment preallocation;
    /// `/proc/diskstats`; includes other processes' delayed writeback).
    pub other_disk_write_mb_per_s: f64,
}

/// One recovery (an `Instance::open` of the prepared log).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecoveryRun {
    /// Whether the log's pages were evicted from the page cache first.
    pub cold: bool,
    /// `Instance::open` wall time.
    pub open_seconds: f64,
    /// The log manager's own part (scan and replay).
    pub log_recovery_seconds: f64,
    /// Bytes of the record stream replayed (end LSN minus checkpoint LSN).
    pub lsn_span_bytes: u64,
    /// Segment file bytes the scan read.
    pub bytes_read: u64,
    pub records: u64,
    /// `lsn_span_bytes / open_seconds`, in MB/s (10^6 bytes).
    pub mb_per_s: f64,
    /// `bytes_read / open_seconds`, in MB/s.
    pub read_mb_per_s: f64,
}

/// Everything one round measured.
#[derive(Clone, Debug, Serialize)]
pub struct RoundReport {
    pub round: usize,
    /// The disk's state at the start and end of the round.
    pub disk_state: DiskState,
    pub ceiling: DiskCeiling,
    /// 4 KB `O_DSYNC` writes/s measured again at the end of the round.
    pub ceiling_end_dsync_4k_writes_per_s: f64,
    /// Cell labels in the order they ran.
    pub order: Vec<String>,
    pub cells: Vec<(String, CellResult)>,
    pub recovery: Vec<RecoveryRun>,
}

/// A cell over all rounds: medians, and each round's figures.
#[derive(Clone, Debug, Serialize)]
pub struct CellSummary {
    pub label: String,
    pub spec: CellSpec,
    pub median: CellResult,
    pub per_round: Vec<CellResult>,
}

/// How the recovery log was made.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecoverySetup {
    pub log_bytes: u64,
    pub transactions: u64,
    pub rows: u64,
    pub seconds: f64,
    /// Delayed-commit log write rate while generating, MB/s.
    pub write_mb_per_s: f64,
}

/// Recovery medians.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecoverySummary {
    pub setup: RecoverySetup,
    pub cold_mb_per_s: f64,
    pub cold_read_mb_per_s: f64,
    pub cold_open_seconds: f64,
    pub warm_mb_per_s: f64,
    pub warm_open_seconds: f64,
    pub lsn_span_bytes: u64,
    pub bytes_read: u64,
}

/// One of the issue's targets and what the run reached.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub name: String,
    pub goal: String,
    pub reached: String,
    /// `None` when the run did not measure it.
    pub pass: Option<bool>,
}

/// Which sync mode the figures support as the default.
#[derive(Clone, Debug, Serialize)]
pub struct SyncModeChoice {
    pub fdatasync_commits_per_s: f64,
    pub dsync_commits_per_s: f64,
    /// Median over rounds of dsync/fdatasync commits/s.
    pub dsync_over_fdatasync: f64,
    pub supported_default: String,
    pub reason: String,
}

/// The whole report (`--json` writes it).
#[derive(Clone, Debug, Serialize)]
pub struct LogBenchReport {
    pub started_utc: String,
    pub seconds: f64,
    pub cpus: usize,
    /// `/proc/loadavg` at the start and the end of the run.
    pub loadavg_start: String,
    pub loadavg_end: String,
    /// Median over cells of the CPUs' worth of time other processes used.
    pub other_cpu: f64,
    /// Median over cells of the MB/s other writers put on the disk.
    pub other_disk_write_mb_per_s: f64,
    pub config: LogBenchConfig,
    /// Disk state per round.
    pub disk_states: Vec<DiskState>,
    /// Medians over rounds.
    pub ceiling: DiskCeiling,
    pub cells: Vec<CellSummary>,
    pub sync_mode: Option<SyncModeChoice>,
    pub recovery: Option<RecoverySummary>,
    pub targets: Vec<Target>,
    pub rounds: Vec<RoundReport>,
}

/// Raw counts of one cell, summed over its slices.
#[derive(Default)]
struct RawCell {
    commits: u64,
    seconds: f64,
    log_writes: u64,
    log_bytes_written: u64,
    io_stall_write_ms: f64,
    log_flushes: u64,
    log_bytes_flushed: u64,
    writelog_waits: u64,
    writelog_wait_ms: f64,
    logbuffer_waits: u64,
    other_cpu_seconds: f64,
    device_bytes_written: u64,
    prealloc_bytes: u64,
    latencies_ns: Vec<u32>,
}

impl RawCell {
    fn add(&mut self, o: RawCell) {
        self.commits += o.commits;
        self.seconds += o.seconds;
        self.log_writes += o.log_writes;
        self.log_bytes_written += o.log_bytes_written;
        self.io_stall_write_ms += o.io_stall_write_ms;
        self.log_flushes += o.log_flushes;
        self.log_bytes_flushed += o.log_bytes_flushed;
        self.writelog_waits += o.writelog_waits;
        self.writelog_wait_ms += o.writelog_wait_ms;
        self.logbuffer_waits += o.logbuffer_waits;
        self.other_cpu_seconds += o.other_cpu_seconds;
        self.device_bytes_written += o.device_bytes_written;
        self.prealloc_bytes += o.prealloc_bytes;
        self.latencies_ns.extend(o.latencies_ns);
    }

    fn finish(mut self) -> CellResult {
        let lat = &mut self.latencies_ns;
        lat.sort_unstable();
        let (c, secs, w, b) = (
            self.commits as f64,
            self.seconds,
            self.log_writes as f64,
            self.log_bytes_written,
        );
        CellResult {
            commits: self.commits,
            seconds: secs,
            commits_per_s: ratio(c, secs),
            ratio_to_ceiling: 0.0,
            log_writes: self.log_writes,
            log_writes_per_s: ratio(w, secs),
            log_bytes_written: b,
            bytes_per_write: ratio(b as f64, w),
            io_stall_write_ms: self.io_stall_write_ms,
            stall_per_write_ms: ratio(self.io_stall_write_ms, w),
            log_flushes: self.log_flushes,
            log_bytes_flushed: self.log_bytes_flushed,
            commits_per_flush: ratio(c, self.log_flushes as f64),
            prealloc_bytes: self.prealloc_bytes,
            writelog_waits: self.writelog_waits,
            writelog_wait_ms: self.writelog_wait_ms,
            writelog_avg_ms: ratio(self.writelog_wait_ms, self.writelog_waits as f64),
            logbuffer_waits: self.logbuffer_waits,
            latency_p50_us: percentile_sorted(lat, 0.50) as f64 / 1000.0,
            latency_p99_us: percentile_sorted(lat, 0.99) as f64 / 1000.0,
            latency_max_us: lat.last().copied().unwrap_or(0) as f64 / 1000.0,
            interleaved_ceiling_dsync_4k: Vec::new(),
            ratio_to_interleaved_ceiling: None,
            other_cpu: ratio(self.other_cpu_seconds, secs),
            other_disk_write_mb_per_s: ratio(
                self.device_bytes_written
                    .saturating_sub(b + self.prealloc_bytes) as f64
                    / 1e6,
                secs,
            ),
        }
    }
}

/// An instance with the benchmark table.
struct Bench {
    inst: Instance,
    db: Arc<Database>,
    table: Arc<Table>,
    admin: Arc<Session>,
    mode: Mode,
}

fn instance_config(dir: &Path, cfg: &LogBenchConfig, sync: SyncMode) -> InstanceConfig {
    let mut ic = InstanceConfig::new(dir);
    ic.log = cfg.log_config(sync);
    // Checkpoints run between cells instead, so none lands inside one.
    ic.background_checkpoints = false;
    ic
}

/// Waits (a bounded time) until the log keeps a preallocated spare segment,
/// so no zero-filling runs in the background of a measurement.
fn wait_for_spare(log_dir: &Path) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        let has = std::fs::read_dir(log_dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok()).any(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("spare-") && n.ends_with(".log")
                })
            })
            .unwrap_or(true);
        if has {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Bench {
    fn open(dir: &Path, cfg: &LogBenchConfig, sync: SyncMode) -> Result<Bench> {
        let inst = Instance::open(instance_config(dir, cfg, sync))?;
        let db = inst.database("walden")?;
        let admin = inst.new_session();
        let table = db.create_table(
            &admin,
            TableDef::new(
                "t",
                vec![
                    ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                    ColumnDef::new("v", DataType::Int),
                ],
                &["id"],
            )?,
        )?;
        wait_for_spare(db.log().dir());
        Ok(Bench {
            inst,
            db,
            table,
            admin,
            mode: Mode::Durable,
        })
    }

    /// Sets the mode and brings the database back to the same starting state.
    fn prepare(&mut self, mode: Mode) -> Result<()> {
        if mode != self.mode {
            let dd = match mode {
                Mode::Durable => DelayedDurability::Disabled,
                Mode::Delayed => DelayedDurability::Forced,
            };
            self.db
                .alter_settings(&self.admin, |s| s.delayed_durability = dd)?;
            self.mode = mode;
        }
        self.db.truncate(&self.admin, "t")?;
        // TRUNCATE made the table anew: a handle to the old one is stale.
        self.table = self.db.table("t")?;
        self.db.checkpoint()?;
        wait_for_spare(self.db.log().dir());
        Ok(())
    }

    fn run_cell(&mut self, mode: Mode, sessions: usize, secs: f64) -> Result<RawCell> {
        self.prepare(mode)?;
        let db = &self.db;
        let table = &self.table;
        let sess: Vec<Arc<Session>> = (0..sessions).map(|_| self.inst.new_session()).collect();
        let stop = AtomicBool::new(false);
        let barrier = Barrier::new(sessions + 1);
        let dev0 = device_sample(db.dir());
        let cpu0 = CpuSample::now();
        let fs0 = db.log_file_stats().snapshot();
        let flushes0 = db.log().counters().log_flushes.load(Relaxed);
        let flushed0 = db.log().counters().log_bytes_flushed.load(Relaxed);
        let (elapsed, outs) = std::thread::scope(|sc| {
            let handles: Vec<_> = sess
                .iter()
                .map(|s| {
                    let (stop, barrier) = (&stop, &barrier);
                    sc.spawn(move || -> Result<(u64, Vec<u32>)> {
                        let mut lat: Vec<u32> = Vec::with_capacity(1 << 16);
                        barrier.wait();
                        let mut i: i64 = 0;
                        let r = (|| {
                            while !stop.load(Relaxed) {
                                let t0 = Instant::now();
                                let mut tx = db.begin(s);
                                tx.insert_into(table, vec![None, Some(Value::Int(i))])?;
                                tx.commit(CommitRequest::Default)?;
                                let ns = t0.elapsed().as_nanos();
                                lat.push(ns.min(u32::MAX as u128) as u32);
                                i += 1;
                            }
                            Ok::<(), BenchError>(())
                        })();
                        if r.is_err() {
                            stop.store(true, Relaxed);
                        }
                        r.map(|_| (i as u64, lat))
                    })
                })
                .collect();
            barrier.wait();
            let t0 = Instant::now();
            let deadline = t0 + Duration::from_secs_f64(secs);
            while !stop.load(Relaxed) {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
            }
            stop.store(true, Relaxed);
            let outs: Vec<_> = handles
                .into_iter()
                .map(|h| h.join().expect("bench session panicked"))
                .collect();
            (t0.elapsed().as_secs_f64(), outs)
        });
        let other_cpu = cpu0.other_cpus_since();
        let dev1 = device_sample(db.dir());
        // Count the bytes of the last delayed commits too.
        db.flush_log(&self.admin)?;
        let fs1 = db.log_file_stats().snapshot();
        let flushes = db.log().counters().log_flushes.load(Relaxed) - flushes0;
        let flushed = db.log().counters().log_bytes_flushed.load(Relaxed) - flushed0;
        let mut commits = 0;
        let mut lat = Vec::new();
        for o in outs {
            let (n, l) = o?;
            commits += n;
            lat.extend(l);
        }
        // Free the rows now rather than at the next cell.
        self.db.truncate(&self.admin, "t")?;
        let mut raw = RawCell {
            commits,
            seconds: elapsed,
            log_writes: fs1.num_of_writes - fs0.num_of_writes,
            log_bytes_written: fs1.num_of_bytes_written - fs0.num_of_bytes_written,
            io_stall_write_ms: fs1.io_stall_write_ms - fs0.io_stall_write_ms,
            prealloc_bytes: fs1.prealloc_bytes - fs0.prealloc_bytes,
            log_flushes: flushes,
            log_bytes_flushed: flushed,
            other_cpu_seconds: other_cpu * elapsed,
            device_bytes_written: match (dev0, dev1) {
                (Some(a), Some(b)) => b.bytes_written.saturating_sub(a.bytes_written),
                _ => 0,
            },
            latencies_ns: lat,
            ..RawCell::default()
        };
        for s in &sess {
            let w = s.waits.get(WaitType::WriteLog);
            raw.writelog_waits += w.waiting_tasks_count;
            raw.writelog_wait_ms += w.wait_time_ms;
            raw.logbuffer_waits += s.waits.get(WaitType::LogBuffer).waiting_tasks_count;
        }
        Ok(raw)
    }

    fn close(self) -> Result<()> {
        self.inst.close()?;
        Ok(())
    }
}

/// Writes about `cfg.recovery_bytes` of log that no checkpoint covers, then
/// stops the instance without a checkpoint.
fn make_recovery_log(dir: &Path, cfg: &LogBenchConfig) -> Result<RecoverySetup> {
    let inst = Instance::open(instance_config(dir, cfg, SyncMode::Fdatasync))?;
    let db = inst.database("walden")?;
    let s = inst.new_session();
    let t = db.create_table(
        &s,
        TableDef::new(
            "r",
            vec![
                ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                ColumnDef::new("payload", DataType::Text),
            ],
            &["id"],
        )?,
    )?;
    db.alter_settings(&s, |st| st.delayed_durability = DelayedDurability::Forced)?;
    wait_for_spare(db.log().dir());
    let start = db.log().end_lsn();
    let payload: String = (0..cfg.recovery_row_bytes.max(1))
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let t0 = Instant::now();
    let (mut txns, mut rows) = (0u64, 0u64);
    while db.log().end_lsn() - start < cfg.recovery_bytes {
        let mut tx = db.begin(&s);
        for _ in 0..cfg.recovery_rows_per_txn.max(1) {
            tx.insert_into(&t, vec![None, Some(Value::text(&payload))])?;
            rows += 1;
        }
        tx.commit(CommitRequest::Default)?;
        txns += 1;
    }
    db.flush_log(&s)?;
    let secs = t0.elapsed().as_secs_f64();
    let log_bytes = db.log().end_lsn() - start;
    wait_for_spare(db.log().dir());
    inst.shutdown_nowait()?;
    drop(db);
    drop(inst);
    Ok(RecoverySetup {
        log_bytes,
        transactions: txns,
        rows,
        seconds: secs,
        write_mb_per_s: ratio(log_bytes as f64 / 1e6, secs),
    })
}

/// Opens the recovery instance once, timed, and stops it again without a checkpoint.
fn recover_once(dir: &Path, cfg: &LogBenchConfig, cold: bool) -> Result<RecoveryRun> {
    let db_dir = dir.join("walden");
    if cold {
        evict_dir(&db_dir.join("log"))?;
        evict_dir(&db_dir.join("data"))?;
        evict_dir(dir)?;
    }
    let t0 = Instant::now();
    let inst = Instance::open(instance_config(dir, cfg, SyncMode::Fdatasync))?;
    let open = t0.elapsed().as_secs_f64();
    let db = inst.database("walden")?;
    let rep = db.recovery_report();
    let span = db.log().end_lsn() - db.checkpoint_lsn();
    let run = RecoveryRun {
        cold,
        open_seconds: open,
        log_recovery_seconds: rep.elapsed.as_secs_f64(),
        lsn_span_bytes: span,
        bytes_read: rep.scan.bytes_read,
        records: rep.scan.records,
        mb_per_s: ratio(span as f64 / 1e6, open),
        read_mb_per_s: ratio(rep.scan.bytes_read as f64 / 1e6, open),
    };
    wait_for_spare(db.log().dir());
    inst.shutdown_nowait()?;
    Ok(run)
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

fn median_result(rs: &[CellResult]) -> CellResult {
    let m = |f: fn(&CellResult) -> f64| median_by(rs, f);
    CellResult {
        commits: m(|r| r.commits as f64) as u64,
        seconds: m(|r| r.seconds),
        commits_per_s: m(|r| r.commits_per_s),
        ratio_to_ceiling: m(|r| r.ratio_to_ceiling),
        log_writes: m(|r| r.log_writes as f64) as u64,
        log_writes_per_s: m(|r| r.log_writes_per_s),
        log_bytes_written: m(|r| r.log_bytes_written as f64) as u64,
        bytes_per_write: m(|r| r.bytes_per_write),
        io_stall_write_ms: m(|r| r.io_stall_write_ms),
        stall_per_write_ms: m(|r| r.stall_per_write_ms),
        log_flushes: m(|r| r.log_flushes as f64) as u64,
        log_bytes_flushed: m(|r| r.log_bytes_flushed as f64) as u64,
        commits_per_flush: m(|r| r.commits_per_flush),
        prealloc_bytes: m(|r| r.prealloc_bytes as f64) as u64,
        writelog_waits: m(|r| r.writelog_waits as f64) as u64,
        writelog_wait_ms: m(|r| r.writelog_wait_ms),
        writelog_avg_ms: m(|r| r.writelog_avg_ms),
        logbuffer_waits: m(|r| r.logbuffer_waits as f64) as u64,
        latency_p50_us: m(|r| r.latency_p50_us),
        latency_p99_us: m(|r| r.latency_p99_us),
        latency_max_us: m(|r| r.latency_max_us),
        interleaved_ceiling_dsync_4k: Vec::new(),
        ratio_to_interleaved_ceiling: rs
            .iter()
            .all(|r| r.ratio_to_interleaved_ceiling.is_some())
            .then(|| m(|r| r.ratio_to_interleaved_ceiling.unwrap_or(0.0))),
        other_cpu: m(|r| r.other_cpu),
        other_disk_write_mb_per_s: m(|r| r.other_disk_write_mb_per_s),
    }
}

fn summarize(
    cfg: &LogBenchConfig,
    started_utc: String,
    seconds: f64,
    specs: &[CellSpec],
    rounds: Vec<RoundReport>,
    setup: Option<RecoverySetup>,
) -> LogBenchReport {
    let per_round = |label: &str| -> Vec<CellResult> {
        rounds
            .iter()
            .filter_map(|r| r.cells.iter().find(|c| c.0 == label).map(|c| c.1.clone()))
            .collect()
    };
    let cells: Vec<CellSummary> = specs
        .iter()
        .map(|s| {
            let pr = per_round(&s.label());
            CellSummary {
                label: s.label(),
                spec: *s,
                median: median_result(&pr),
                per_round: pr,
            }
        })
        .collect();
    let c = |f: fn(&DiskCeiling) -> f64| median_by(&rounds, |r| f(&r.ceiling));
    let ceiling = DiskCeiling {
        dsync_4k_writes_per_s: c(|x| x.dsync_4k_writes_per_s),
        fdatasync_4k_writes_per_s: c(|x| x.fdatasync_4k_writes_per_s),
        dsync_60k_writes_per_s: c(|x| x.dsync_60k_writes_per_s),
        dsync_60k_mb_per_s: c(|x| x.dsync_60k_mb_per_s),
    };
    // Per-round ratios between two cells, then their median.
    let round_ratio = |a: &str, b: &str| -> Option<f64> {
        let (pa, pb) = (per_round(a), per_round(b));
        if pa.is_empty() || pb.is_empty() {
            return None;
        }
        let v: Vec<f64> = pa
            .iter()
            .zip(&pb)
            .map(|(x, y)| ratio(x.commits_per_s, y.commits_per_s))
            .collect();
        Some(median(&v))
    };
    let find = |label: &str| cells.iter().find(|c| c.label == label);

    let sync_mode = match (
        find("durable x1 fdatasync"),
        find("durable x1 dsync"),
        round_ratio("durable x1 dsync", "durable x1 fdatasync"),
    ) {
        (Some(f), Some(d), Some(q)) => {
            let per_round: Vec<f64> = {
                let (pa, pb) = (
                    per_round("durable x1 dsync"),
                    per_round("durable x1 fdatasync"),
                );
                pa.iter()
                    .zip(&pb)
                    .map(|(x, y)| ratio(x.commits_per_s, y.commits_per_s))
                    .collect()
            };
            let all_above = per_round.iter().all(|&x| x > 1.0);
            let all_below = per_round.iter().all(|&x| x < 1.0);
            let rounds_txt = per_round
                .iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(", ");
            let (supported, reason) = if q > 1.05 && all_above {
                (
                    "dsync",
                    format!(
                        "O_DSYNC commits {:.0}% faster, in every round (dsync/fdatasync per round: {rounds_txt})",
                        (q - 1.0) * 100.0
                    ),
                )
            } else if q < 0.95 && all_below {
                (
                    "fdatasync",
                    format!(
                        "fdatasync commits {:.0}% faster, in every round (dsync/fdatasync per round: {rounds_txt})",
                        (1.0 / q - 1.0) * 100.0
                    ),
                )
            } else {
                (
                    "fdatasync",
                    format!(
                        "no consistent difference ({:+.1}% median; dsync/fdatasync per round: {rounds_txt}): \
                         keep fdatasync",
                        (q - 1.0) * 100.0
                    ),
                )
            };
            Some(SyncModeChoice {
                fdatasync_commits_per_s: f.median.commits_per_s,
                dsync_commits_per_s: d.median.commits_per_s,
                dsync_over_fdatasync: q,
                supported_default: supported.into(),
                reason,
            })
        }
        _ => None,
    };

    let recovery = setup.map(|setup| {
        let runs = |cold: bool| -> Vec<RecoveryRun> {
            rounds
                .iter()
                .flat_map(|r| r.recovery.iter().filter(|x| x.cold == cold).cloned())
                .collect()
        };
        let (cold, warm) = (runs(true), runs(false));
        RecoverySummary {
            cold_mb_per_s: median_by(&cold, |r| r.mb_per_s),
            cold_read_mb_per_s: median_by(&cold, |r| r.read_mb_per_s),
            cold_open_seconds: median_by(&cold, |r| r.open_seconds),
            warm_mb_per_s: median_by(&warm, |r| r.mb_per_s),
            warm_open_seconds: median_by(&warm, |r| r.open_seconds),
            lsn_span_bytes: cold.first().map(|r| r.lsn_span_bytes).unwrap_or(0),
            bytes_read: cold.first().map(|r| r.bytes_read).unwrap_or(0),
            setup,
        }
    });

    let mut targets = Vec::new();
    let d1 = find("durable x1");
    targets.push(match d1 {
        Some(d1) => {
            let q = d1
                .median
                .ratio_to_interleaved_ceiling
                .unwrap_or(d1.median.ratio_to_ceiling);
            Target {
                name: "single-session durable vs disk".into(),
                goal: ">= 90% of the 4 KB O_DSYNC ceiling".into(),
                reached: format!(
                    "{:.0}% ({:.0} commits/s; median of per-round ratios to the ceiling measured \
                     in slices alternating with the cell's; {:.0}% of the round-start ceiling {:.0}/s)",
                    q * 100.0,
                    d1.median.commits_per_s,
                    d1.median.ratio_to_ceiling * 100.0,
                    ceiling.dsync_4k_writes_per_s
                ),
                pass: Some(q >= 0.9),
            }
        }
        None => not_measured("single-session durable vs disk", ">= 90% of the ceiling"),
    });
    targets.push(match round_ratio("durable x16", "durable x1") {
        Some(q) => Target {
            name: "group commit".into(),
            goal: "16-session durable >= 8x single-session durable".into(),
            reached: format!(
                "{q:.1}x ({:.0} vs {:.0} commits/s)",
                find("durable x16").unwrap().median.commits_per_s,
                find("durable x1").unwrap().median.commits_per_s
            ),
            pass: Some(q >= 8.0),
        },
        None => not_measured("group commit", "16-session durable >= 8x single-session"),
    });
    targets.push(match find("delayed x1") {
        Some(c) => Target {
            name: "delayed single-session".into(),
            goal: ">= 500,000 commits/s".into(),
            reached: format!("{:.0} commits/s", c.median.commits_per_s),
            pass: Some(c.median.commits_per_s >= 500_000.0),
        },
        None => not_measured("delayed single-session", ">= 500,000 commits/s"),
    });
    targets.push(match &recovery {
        Some(r) => Target {
            name: "recovery".into(),
            goal: ">= 200 MB/s of log replayed".into(),
            reached: format!(
                "{:.0} MB/s cold ({:.0} MB in {:.2} s), {:.0} MB/s warm",
                r.cold_mb_per_s,
                r.lsn_span_bytes as f64 / 1e6,
                r.cold_open_seconds,
                r.warm_mb_per_s
            ),
            pass: Some(r.cold_mb_per_s >= 200.0),
        },
        None => not_measured("recovery", ">= 200 MB/s"),
    });

    LogBenchReport {
        started_utc,
        seconds,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        loadavg_start: String::new(),
        loadavg_end: String::new(),
        other_cpu: median(
            &rounds
                .iter()
                .flat_map(|r| r.cells.iter().map(|c| c.1.other_cpu))
                .collect::<Vec<_>>(),
        ),
        other_disk_write_mb_per_s: median(
            &rounds
                .iter()
                .flat_map(|r| r.cells.iter().map(|c| c.1.other_disk_write_mb_per_s))
                .collect::<Vec<_>>(),
        ),
        config: cfg.clone(),
        disk_states: rounds.iter().map(|r| r.disk_state).collect(),
        ceiling,
        cells,
        sync_mode,
        recovery,
        targets,
        rounds,
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Machine-wide busy CPU time and this process's CPU time at one moment.
struct CpuSample {
    at: Instant,
    busy: Option<f64>,
    own: f64,
}

impl CpuSample {
    fn now() -> CpuSample {
        CpuSample {
            at: Instant::now(),
            busy: machine_busy_seconds(),
            own: own_cpu_seconds(),
        }
    }
    /// CPUs' worth of time used by other processes since `self` (0 if unknown).
    fn other_cpus_since(&self) -> f64 {
        let now = CpuSample::now();
        let (Some(b0), Some(b1)) = (self.busy, now.busy) else {
            return 0.0;
        };
        let wall = now.at.duration_since(self.at).as_secs_f64();
        ratio(((b1 - b0) - (now.own - self.own)).max(0.0), wall)
    }
}

/// Busy CPU seconds of the whole machine since boot (`/proc/stat`).
fn machine_busy_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 8 {
        return None;
    }
    // user nice system idle iowait irq softirq steal
    let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some(busy as f64 / if hz > 0 { hz as f64 } else { 100.0 })
}

/// User and system CPU seconds of this process (all threads).
fn own_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn not_measured(name: &str, goal: &str) -> Target {
    Target {
        name: name.into(),
        goal: goal.into(),
        reached: "not measured in this run".into(),
        pass: None,
    }
}

fn fmt_int(x: f64) -> String {
    let n = x.round() as i64;
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

impl LogBenchReport {
    /// The readable report: ceiling, one row per cell, sync mode, recovery, targets.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let states: Vec<&str> = self.disk_states.iter().map(|s| s.as_str()).collect();
        let _ = writeln!(
            o,
            "walden bench log — {} UTC, {} rounds x {} s cells, {} CPUs, {:.0} s; disk state per round: {}",
            self.started_utc,
            self.config.rounds,
            self.config.cell_seconds,
            self.cpus,
            self.seconds,
            states.join(", ")
        );
        let _ = writeln!(
            o,
            "load average {} at the start, {} at the end; during the median cell other processes used \
             {:.2} CPUs and wrote {:.1} MB/s to the same disk",
            self.loadavg_start,
            self.loadavg_end,
            self.other_cpu,
            self.other_disk_write_mb_per_s
        );
        let c = &self.ceiling;
        let _ = writeln!(
            o,
            "\nDisk ceiling (median): 4 KB O_DSYNC {}/s | 4 KB pwrite+fdatasync {}/s | 60 KB O_DSYNC {}/s = {:.0} MB/s",
            fmt_int(c.dsync_4k_writes_per_s),
            fmt_int(c.fdatasync_4k_writes_per_s),
            fmt_int(c.dsync_60k_writes_per_s),
            c.dsync_60k_mb_per_s
        );
        let _ = writeln!(
            o,
            "\n{:<22} {:>10} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}",
            "cell (median)",
            "commits/s",
            "/ceil",
            "writes/s",
            "bytes/wr",
            "com/fl",
            "WRITELOG",
            "p50 us",
            "p99 us",
            "oth",
            "oth"
        );
        let _ = writeln!(
            o,
            "{:<22} {:>10} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}",
            "", "", "", "", "", "", "avg ms", "", "", "CPU", "MB/s"
        );
        for cell in &self.cells {
            let m = &cell.median;
            let ceil = match m.ratio_to_interleaved_ceiling {
                Some(q) => format!("{:.0}%", q * 100.0),
                None => "-".into(),
            };
            let _ = writeln!(
                o,
                "{:<22} {:>10} {:>6} {:>8} {:>8} {:>8.1} {:>8.3} {:>8.1} {:>8.1} {:>6.2} {:>6.1}",
                cell.label,
                fmt_int(m.commits_per_s),
                ceil,
                fmt_int(m.log_writes_per_s),
                fmt_int(m.bytes_per_write),
                m.commits_per_flush,
                m.writelog_avg_ms,
                m.latency_p50_us,
                m.latency_p99_us,
                m.other_cpu,
                m.other_disk_write_mb_per_s
            );
        }
        let _ = writeln!(
            o,
            "/ceil: commits/s over the 4 KB O_DSYNC ceiling measured in slices alternating with the durable \
             cells' slices.\noth CPU, oth MB/s: CPUs' worth of time other processes used, and MB/s other \
             writers put on the same disk, during the cell."
        );
        if let Some(s) = &self.sync_mode {
            let _ = writeln!(
                o,
                "\nSync mode, durable x1: fdatasync {}/s, dsync {}/s (dsync/fdatasync {:.2}); the figures support `{}` as the default: {}",
                fmt_int(s.fdatasync_commits_per_s),
                fmt_int(s.dsync_commits_per_s),
                s.dsync_over_fdatasync,
                s.supported_default,
                s.reason
            );
        }
        if let Some(r) = &self.recovery {
            let _ = writeln!(
                o,
                "\nRecovery: {:.0} MB of log ({} transactions of {} rows) replayed; cold {:.0} MB/s ({:.2} s open, {:.0} MB/s of segment files read), warm {:.0} MB/s ({:.2} s)",
                r.lsn_span_bytes as f64 / 1e6,
                fmt_int(r.setup.transactions as f64),
                self.config.recovery_rows_per_txn,
                r.cold_mb_per_s,
                r.cold_open_seconds,
                r.cold_read_mb_per_s,
                r.warm_mb_per_s,
                r.warm_open_seconds
            );
        }
        let _ = writeln!(o, "\nTargets:");
        for t in &self.targets {
            let verdict = match t.pass {
                Some(true) => "PASS",
                Some(false) => "MISS",
                None => "n/a ",
            };
            let _ = writeln!(
                o,
                "  {verdict}  {:<31} goal {:<48} reached {}",
                t.name, t.goal, t.reached
            );
        }
        o
    }
}
