//! The workbench: the published delayed-durability experiments (SPEC §6),
//! run against Walden and, side by side, PostgreSQL and SQLite.
//!
//! - [`target`]: what a product must offer (connections, counters, modes).
//! - [`walden`]: Walden embedded or behind a server ([`pgwire`]).
//! - [`peers`]: the targets besides the embedded engine: a Walden server,
//!   PostgreSQL ([`pg_peer`]) and SQLite ([`sqlite_peer`]).
//! - [`experiments`]: the five experiments as plans.
//! - [`harness`]: runs and measures one cell.
//! - [`result`]: what a run reports (the `--json` shape).
//! - [`table`]: the terminal tables and the written reading.
//!
//! A run interleaves what it compares: for each workload, every target runs
//! its full and relaxed modes back to back (the order alternating between
//! workloads), so a disk that changes state mid-run shifts both alike.

pub mod delay_proxy;
pub mod experiments;
pub mod harness;
pub mod peers;
pub mod pg_peer;
pub mod pgwire;
pub mod replica;
pub mod report;
pub mod result;
pub mod sqlite_peer;
pub mod sqlite_vfs;
pub mod table;
pub mod target;
pub mod walden;

use crate::{BenchError, Result};
use result::{ExperimentReport, Ratio, Skipped, WorkbenchReport};
use std::collections::BTreeMap;
use std::time::Instant;
use target::{Db, Durability, Recovery, Target};

static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_interrupt(sig: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
    // A second Ctrl-C ends the process at once.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
    }
}

/// Makes SIGINT/SIGTERM stop the run after the cell in progress, so the
/// caller can stop its peers (a PostgreSQL cluster) and remove the scratch
/// directory instead of leaving them behind. A second signal kills at once.
pub fn install_interrupt_handler() {
    let h = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    unsafe {
        libc::signal(libc::SIGINT, h);
        libc::signal(libc::SIGTERM, h);
    }
}

fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// What to run.
#[derive(Clone, Debug)]
pub struct WorkbenchConfig {
    /// Experiment names ([`experiments::NAMES`]).
    pub experiments: Vec<String>,
    /// Published sizes times this.
    pub scale: f64,
    /// Print a line per cell on stderr.
    pub progress: bool,
    /// The command line, recorded in the report.
    pub command: String,
    /// `sync-replica`: put the secondary instance here (another disk, say)
    /// instead of beside the primary.
    pub secondary_dir: Option<std::path::PathBuf>,
}

/// The default scale: `bench all` on the embedded engine in about a minute
/// on 2 cores (longer when the disk is in its slow state).
pub const DEFAULT_SCALE: f64 = 0.01;

/// First 80 characters of a statement, for error messages.
pub fn short_sql(sql: &str) -> String {
    let s: String = sql.chars().take(80).collect();
    if s.len() < sql.len() {
        format!("{s}...")
    } else {
        s
    }
}

fn db_name(exp: &str, d: Durability, r: Option<Recovery>) -> String {
    let d = match d {
        Durability::Full => "full",
        Durability::Relaxed => "relaxed",
    };
    let r = match r {
        None => "",
        Some(Recovery::Simple) => "_simple",
        Some(Recovery::Full) => "_full",
    };
    format!("wb_{}_{d}{r}", exp.replace('-', "_"))
}

/// Runs the experiments against every target.
pub fn run(
    cfg: &WorkbenchConfig,
    targets: &[Box<dyn Target>],
    skipped_targets: Vec<Skipped>,
) -> Result<WorkbenchReport> {
    let t0 = Instant::now();
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut reports = Vec::new();
    for name in &cfg.experiments {
        if interrupted() {
            return Err(BenchError::Other(
                "interrupted; stopped the peers and removed the scratch directory".into(),
            ));
        }
        let def = experiments::define(name, cfg.scale)
            .ok_or_else(|| BenchError::Other(format!("unknown experiment {name:?}")))?;
        reports.push(run_experiment(cfg, &def, targets)?);
    }
    if interrupted() {
        eprintln!("interrupted: the report holds the cells that finished");
    }
    let mut report = WorkbenchReport {
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix,
        command: cfg.command.clone(),
        scale: cfg.scale,
        targets: targets.iter().map(|t| t.label()).collect(),
        skipped_targets,
        disk: None,
        experiments: reports,
        summary: String::new(),
        elapsed_s: 0.0,
    };
    report.summary = table::summary(&report);
    report.elapsed_s = t0.elapsed().as_secs_f64();
    Ok(report)
}

fn run_experiment(
    cfg: &WorkbenchConfig,
    def: &experiments::ExperimentDef,
    targets: &[Box<dyn Target>],
) -> Result<ExperimentReport> {
    let mut rep = ExperimentReport {
        name: def.name.to_string(),
        title: def.title.to_string(),
        description: def.description.clone(),
        cells: Vec::new(),
        skipped: Vec::new(),
        ratios: Vec::new(),
        reading: String::new(),
        published: def.published.to_string(),
        replica: None,
    };
    if let Some(plan) = &def.replica {
        run_replica(cfg, def, plan, targets, &mut rep)?;
        return Ok(rep);
    }
    if let Some(why) = &def.unavailable {
        for t in targets {
            rep.skipped.push(Skipped {
                experiment: def.name.into(),
                target: t.label(),
                reason: why.clone(),
            });
        }
        if cfg.progress {
            eprintln!("{}: skipped: {why}", def.name);
        }
        rep.reading = format!("Not run: {why}.");
        return Ok(rep);
    }
    // One database per (target, mode, recovery model), made on first use.
    let mut dbs: BTreeMap<(usize, u8, u8), Box<dyn Db>> = BTreeMap::new();
    let mut broken: BTreeMap<usize, String> = BTreeMap::new();
    for (pi, plan) in def.plans.iter().enumerate() {
        for (ti, t) in targets.iter().enumerate() {
            if broken.contains_key(&ti) || interrupted() {
                continue;
            }
            let recoveries: Vec<Option<Recovery>> =
                if plan.per_recovery_model && t.has_recovery_models() {
                    vec![Some(Recovery::Simple), Some(Recovery::Full)]
                } else {
                    vec![None]
                };
            for rec in recoveries {
                let order = if pi % 2 == 0 {
                    [Durability::Full, Durability::Relaxed]
                } else {
                    [Durability::Relaxed, Durability::Full]
                };
                for d in order {
                    let key = (ti, d as u8, rec.map_or(0, |r| r as u8 + 1));
                    let db = match dbs.entry(key) {
                        std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                        std::collections::btree_map::Entry::Vacant(v) => {
                            match t.fresh_db(&db_name(def.name, d, rec), d, rec) {
                                Ok(db) => v.insert(db),
                                Err(e) => {
                                    broken.insert(ti, format!("cannot make a database: {e}"));
                                    break;
                                }
                            }
                        }
                    };
                    let mode = t.mode(d);
                    let started = Instant::now();
                    match harness::run_cell(def.name, t.as_ref(), db.as_ref(), &mode, rec, plan) {
                        Ok(cell) => {
                            if cfg.progress {
                                eprintln!(
                                    "{} | {} | {} | {}{} | {:.2} s",
                                    def.name,
                                    plan.variant,
                                    t.label(),
                                    mode.short,
                                    rec.map(|r| format!(" {r:?}")).unwrap_or_default(),
                                    started.elapsed().as_secs_f64()
                                );
                            }
                            rep.cells.push(cell);
                        }
                        Err(e) => {
                            if cfg.progress {
                                eprintln!(
                                    "{} | {} | {} | {}: FAILED: {e}",
                                    def.name,
                                    plan.variant,
                                    t.label(),
                                    mode.short
                                );
                            }
                            rep.skipped.push(Skipped {
                                experiment: def.name.into(),
                                target: format!("{} ({}, {})", t.label(), mode.short, plan.variant),
                                reason: format!("failed: {e}"),
                            });
                        }
                    }
                }
            }
        }
    }
    for (ti, why) in broken {
        rep.skipped.push(Skipped {
            experiment: def.name.into(),
            target: targets[ti].label(),
            reason: why,
        });
    }
    for (_, db) in dbs {
        let _ = db.drop_db();
    }
    rep.ratios = ratios(&rep);
    rep.reading = table::reading(&rep);
    Ok(rep)
}

/// The synchronous-replica experiment: on the embedded engine only (it
/// starts a primary and a secondary instance of its own next to it).
fn run_replica(
    cfg: &WorkbenchConfig,
    def: &experiments::ExperimentDef,
    plan: &experiments::ReplicaPlan,
    targets: &[Box<dyn Target>],
    rep: &mut ExperimentReport,
) -> Result<()> {
    for t in targets.iter().filter(|t| t.embedded_dir().is_none()) {
        rep.skipped.push(Skipped {
            experiment: def.name.into(),
            target: t.label(),
            reason: "runs on the embedded engine only: it starts a primary and a secondary \
                     instance in this process; replicas of servers and peers are not set up by \
                     the workbench"
                .into(),
        });
    }
    let Some(dir) = replica::embedded_dir(targets) else {
        rep.reading = "Not run: needs the embedded target (--target embedded).".into();
        return Ok(());
    };
    // Next to the embedded instance, inside the scratch directory.
    let dir = dir
        .parent()
        .map(|p| p.join("replica"))
        .unwrap_or_else(|| dir.join("replica"));
    match replica::run(
        def,
        plan,
        &dir,
        cfg.secondary_dir.as_deref(),
        cfg.progress,
        &interrupted,
    ) {
        Ok(r) => {
            rep.reading = table::replica_reading(&r);
            rep.replica = Some(r);
        }
        Err(e) => {
            if cfg.progress {
                eprintln!("{}: FAILED: {e}", def.name);
            }
            rep.skipped.push(Skipped {
                experiment: def.name.into(),
                target: "walden (embedded primary and secondary)".into(),
                reason: format!("failed: {e}"),
            });
            rep.reading = format!("Not run: {e}.");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn ratios(rep: &ExperimentReport) -> Vec<Ratio> {
    let mut out = Vec::new();
    for full in rep
        .cells
        .iter()
        .filter(|c| c.durability() == Durability::Full)
    {
        let Some(rel) = rep.cells.iter().find(|c| {
            c.durability() == Durability::Relaxed
                && c.variant == full.variant
                && c.target == full.target
                && c.recovery == full.recovery
        }) else {
            continue;
        };
        let r = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
            _ => None,
        };
        out.push(Ratio {
            variant: full.variant.clone(),
            target: full.target.clone(),
            recovery: full.recovery,
            duration: rel.duration_s / full.duration_s.max(1e-9),
            throughput: rel.throughput_tps / full.throughput_tps.max(1e-9),
            log_writes: r(rel.counters.log_writes, full.counters.log_writes),
            log_bytes: r(rel.counters.log_bytes, full.counters.log_bytes),
        });
    }
    out
}
