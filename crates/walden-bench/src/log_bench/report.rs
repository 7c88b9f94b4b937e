//! What a run reports: per-cell results, their medians over rounds, the
//! targets, and the readable rendering.

use super::*;

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

/// One of the targets and what the run reached.
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

pub(super) fn median_result(rs: &[CellResult]) -> CellResult {
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

pub(super) fn summarize(
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

pub(super) fn not_measured(name: &str, goal: &str) -> Target {
    Target {
        name: name.into(),
        goal: goal.into(),
        reached: "not measured in this run".into(),
        pass: None,
    }
}

pub(super) fn fmt_int(x: f64) -> String {
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
