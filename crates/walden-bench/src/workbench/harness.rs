//! Runs one cell: opens the sessions, reads the counters before, starts them
//! together, samples the counters while they run, reads the counters after.
//! The figures come from the product's counters, never from estimates.

use super::result::{CellResult, Sample, SessionResult};
use super::target::{Conn, Counters, Db, Dialect, ModeSpec, Recovery, Target};
use crate::{BenchError, Result};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The table every cell writes; dropped and made again for each cell.
pub const TABLE: &str = "wb_rows";

/// What one session of a cell does; returns the transactions it committed.
pub type Work = Arc<dyn Fn(&mut dyn Conn, &WorkCtx) -> Result<u64> + Send + Sync>;
/// Untimed preparation (after the table is made), on one connection.
pub type Setup = Arc<dyn Fn(&mut dyn Conn, Dialect) -> Result<()> + Send + Sync>;

/// What a session's work is told.
pub struct WorkCtx {
    pub session: usize,
    pub sessions: usize,
    pub dialect: Dialect,
}

/// One workload of an experiment, run for every target and mode.
#[derive(Clone)]
pub struct Plan {
    pub variant: String,
    pub sessions: usize,
    /// Transactions and rows the plan issues in all (for the report and the
    /// consistency check against the product's counters).
    pub transactions: u64,
    pub rows: u64,
    pub setup: Option<Setup>,
    pub work: Work,
    /// Harden everything at the end (`EXEC sys.sp_flush_log`), inside the
    /// timed part, as the published log-write experiment did.
    pub flush_at_end: bool,
    /// Run once per recovery model on targets that have them.
    pub per_recovery_model: bool,
}

/// How often the sampler reads the counters.
const SAMPLE_EVERY: Duration = Duration::from_millis(25);

fn sample(db: &dyn Db, m: &mut dyn Conn, t0: Instant) -> Result<Sample> {
    let c = db.counters(m)?;
    let e = db.exposure(m)?;
    Ok(Sample {
        t_s: t0.elapsed().as_secs_f64(),
        log_flushes: c.log_flushes,
        log_bytes_flushed: c.log_bytes_flushed,
        log_writes: c.log_writes,
        log_bytes: c.log_bytes,
        exposure_bytes: e.map(|e| e.bytes),
        exposure_oldest_ms: e.map(|e| e.oldest_ms),
    })
}

/// Runs `plan` on `db` (already in the mode `mode`) and measures it.
pub fn run_cell(
    experiment: &str,
    target: &dyn Target,
    db: &dyn Db,
    mode: &ModeSpec,
    recovery: Option<Recovery>,
    plan: &Plan,
) -> Result<CellResult> {
    let dialect = target.dialect();
    let mut monitor = db.connect()?;
    monitor.exec(&format!("DROP TABLE IF EXISTS {TABLE}"))?;
    monitor.exec(&dialect.create_table(TABLE))?;
    if let Some(setup) = &plan.setup {
        setup(monitor.as_mut(), dialect)?;
    }
    // Start every cell from a checkpoint, so the log it writes is its own.
    db.checkpoint(monitor.as_mut())?;
    let mut conns = Vec::with_capacity(plan.sessions);
    for _ in 0..plan.sessions {
        conns.push(db.connect()?);
    }
    let mut sampler_conn = db.connect()?;
    let before = db.counters(monitor.as_mut())?;
    db.reset_exposure_peaks(monitor.as_mut())?;

    let barrier = Arc::new(Barrier::new(plan.sessions + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::with_capacity(plan.sessions);
    for (i, mut conn) in conns.into_iter().enumerate() {
        let work = plan.work.clone();
        let barrier = barrier.clone();
        let ctx = WorkCtx {
            session: i,
            sessions: plan.sessions,
            dialect,
        };
        handles.push(
            std::thread::Builder::new()
                .name(format!("wb-session-{i}"))
                .spawn(move || {
                    barrier.wait();
                    let t = Instant::now();
                    let r = work(conn.as_mut(), &ctx);
                    (r, t.elapsed(), conn)
                })
                .map_err(BenchError::Io)?,
        );
    }
    let t0 = Instant::now();
    let samples = std::thread::scope(|s| -> Result<(Vec<Sample>, Vec<_>, Duration)> {
        let stop2 = stop.clone();
        let sampler = s.spawn(move || {
            let mut out = Vec::new();
            while !stop2.load(Relaxed) {
                match sample(db, sampler_conn.as_mut(), t0) {
                    Ok(x) => out.push(x),
                    Err(_) => break,
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            // One last sample after the end, so the series covers the cell.
            if let Ok(x) = sample(db, sampler_conn.as_mut(), t0) {
                out.push(x);
            }
            out
        });
        barrier.wait();
        let mut results = Vec::with_capacity(handles.len());
        for h in handles {
            results.push(
                h.join()
                    .map_err(|_| BenchError::Other("a session panicked".into()))?,
            );
        }
        if plan.flush_at_end {
            db.flush_log(monitor.as_mut())?;
        }
        let wall = t0.elapsed();
        stop.store(true, Relaxed);
        let samples = sampler.join().unwrap_or_default();
        Ok((samples, results, wall))
    })?;
    let (samples, results, wall) = samples;

    let mut per_session = Vec::with_capacity(results.len());
    let mut transactions = 0u64;
    let mut first_err = None;
    let mut conns = Vec::new();
    for (r, d, mut conn) in results {
        let txns = match r {
            Ok(n) => n,
            Err(e) => {
                first_err.get_or_insert(e);
                0
            }
        };
        transactions += txns;
        let w = db.session_waits(conn.as_mut())?;
        per_session.push(SessionResult {
            duration_s: d.as_secs_f64(),
            transactions: txns,
            writelog_waits: w.map(|w| w.count),
            writelog_wait_ms: w.map(|w| w.wait_ms),
        });
        conns.push(conn);
    }
    // Close the sessions before reading the counters: some products count a
    // session's work only when it ends.
    drop(conns);
    if let Some(e) = first_err {
        return Err(e);
    }
    // Delayed commits the cell acknowledged are hardened by the background
    // flusher a few ms later; wait for that (untimed) so the log writes and
    // bytes the cell caused are all counted.
    let drain = Instant::now();
    while drain.elapsed() < Duration::from_secs(2) {
        match db.exposure(monitor.as_mut())? {
            Some(e) if e.commits > 0 => std::thread::sleep(Duration::from_millis(2)),
            _ => break,
        }
    }
    let after = db.counters(monitor.as_mut())?;
    let counters = after.since(&before);
    let peak = db.exposure(monitor.as_mut())?;
    let mut cell = summarize(
        experiment,
        target,
        mode,
        recovery,
        plan,
        transactions,
        wall,
        per_session,
        counters,
        samples,
    );
    // The product's own high-water marks see every commit; samples see
    // only the moments they were taken.
    if let Some(p) = peak {
        cell.max_exposure_bytes = Some(cell.max_exposure_bytes.unwrap_or(0).max(p.peak_bytes));
        cell.max_exposure_ms = Some(cell.max_exposure_ms.unwrap_or(0.0).max(p.peak_ms));
    }
    Ok(cell)
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    experiment: &str,
    target: &dyn Target,
    mode: &ModeSpec,
    recovery: Option<Recovery>,
    plan: &Plan,
    transactions: u64,
    wall: Duration,
    per_session: Vec<SessionResult>,
    counters: Counters,
    samples: Vec<Sample>,
) -> CellResult {
    let secs = wall.as_secs_f64().max(1e-9);
    let n = per_session.len().max(1) as f64;
    let durations: Vec<f64> = per_session.iter().map(|s| s.duration_s).collect();
    let avg_session = durations.iter().sum::<f64>() / n;
    let per_session_waits: Option<Vec<(u64, f64)>> = per_session
        .iter()
        .map(|s| Some((s.writelog_waits?, s.writelog_wait_ms?)))
        .collect();
    let (avg_w, avg_ms, avg_wait) = match &per_session_waits {
        Some(v) => {
            let c: u64 = v.iter().map(|x| x.0).sum();
            let ms: f64 = v.iter().map(|x| x.1).sum();
            (
                Some(c as f64 / n),
                Some(ms / n),
                Some(if c > 0 { ms / c as f64 } else { 0.0 }),
            )
        }
        None => (None, None, None),
    };
    let max_exposure_bytes = samples.iter().filter_map(|s| s.exposure_bytes).max();
    let max_exposure_ms = samples
        .iter()
        .filter_map(|s| s.exposure_oldest_ms)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    CellResult {
        experiment: experiment.to_string(),
        variant: plan.variant.clone(),
        target: target.label(),
        target_kind: target.kind(),
        mode: mode.clone(),
        recovery,
        sessions: plan.sessions,
        transactions,
        rows: plan.rows,
        duration_s: secs,
        session_durations_s: durations,
        avg_session_duration_s: avg_session,
        throughput_tps: transactions as f64 / secs,
        rows_per_s: plan.rows as f64 / secs,
        bytes_per_write: match (counters.log_bytes, counters.log_writes) {
            (Some(b), Some(w)) if w > 0 => Some(b as f64 / w as f64),
            _ => None,
        },
        log_flushes_per_s: counters.log_flushes.map(|f| f as f64 / secs),
        writelog_avg_waits_per_session: avg_w,
        writelog_avg_ms_per_session: avg_ms,
        writelog_avg_wait_ms: avg_wait,
        max_exposure_bytes,
        max_exposure_ms,
        flushed_at_end: plan.flush_at_end,
        counters,
        per_session,
        samples,
    }
}
