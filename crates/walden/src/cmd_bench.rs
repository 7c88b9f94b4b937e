//! `walden bench ...`: the workbench's experiments against the embedded engine
//! or a Walden server (`--target URL`), with the peers (`--peer`) alongside.
//!
//! Each experiment is a variant of [`BenchCommand`]; its work lives in the
//! `walden-bench` crate, this module only parses arguments and prints.

use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use walden_bench::log_bench::{self, LogBenchConfig};
use walden_bench::workbench::{self, result::Skipped, target::Target, WorkbenchConfig};

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The log and commit path: the disk's sync-write ceiling, durable and
    /// delayed one-row-insert commits from 1..64 sessions, O_DSYNC vs
    /// fdatasync, and recovery speed; interleaved in rounds, medians printed.
    Log(LogArgs),
    /// SPEC §6.1: insert/delete purge loops from 8 and 16 sessions.
    Purge(ExpArgs),
    /// SPEC §6.2: 5 sessions of 3-insert transactions.
    ThreeInsert(ExpArgs),
    /// SPEC §6.3: many small transactions vs fewer larger ones, recovery SIMPLE/FULL.
    SmallVsLarge(ExpArgs),
    /// SPEC §6.4: auto-commit vs explicit transactions with a synchronous replica.
    SyncReplica(ExpArgs),
    /// SPEC §6.5: log-write characteristics (1 and 20 sessions, bulk load, one big transaction).
    LogIo(ExpArgs),
    /// Every experiment above, in one run.
    All(ExpArgs),
}

#[derive(Debug, Args)]
pub struct ExpArgs {
    /// What to measure: `embedded` (an instance in a scratch directory) or
    /// the URL of a running Walden server (postgres://user@host:port/db).
    #[arg(long, value_name = "embedded|URL", default_value = "embedded")]
    pub target: String,
    /// Also run a peer side by side: `postgres` (a throwaway PostgreSQL 15
    /// cluster, synchronous_commit on/off) or `sqlite` (WAL, synchronous
    /// FULL/NORMAL). Repeatable.
    #[arg(long, value_name = "postgres|sqlite")]
    pub peer: Vec<String>,
    /// Published sizes times F (the default runs `bench all` in about a
    /// minute on the embedded engine).
    #[arg(long, value_name = "F", default_value_t = walden_bench::workbench::DEFAULT_SCALE)]
    pub scale: f64,
    /// The published sizes (scale 1); takes hours.
    #[arg(long, conflicts_with = "scale")]
    pub full: bool,
    /// Write every figure as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report with charts to DIR/report.html.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Directory for scratch instances and peers (default: under ./target or .).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// sync-replica: run the secondary instance in DIR (on another disk, to
    /// measure a secondary that does not share the primary's device); by
    /// default it runs beside the primary in the scratch directory.
    #[arg(long, value_name = "DIR")]
    pub secondary_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Directory to work in (a scratch directory is made inside it and removed
    /// afterwards). Default: under ./target, or the current directory, so the
    /// measurement is of the real disk, not of a memory file system.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Seconds per commit cell.
    #[arg(long, value_name = "S", default_value_t = 1.5)]
    pub seconds: f64,
    /// Rounds (each runs every cell once; medians are over rounds).
    #[arg(long, value_name = "R", default_value_t = 3)]
    pub rounds: usize,
    /// Session counts of the durable and delayed cells.
    #[arg(
        long,
        value_name = "N,N,...",
        value_delimiter = ',',
        default_value = "1,4,16,64"
    )]
    pub sessions: Vec<usize>,
    /// Megabytes of log to write and replay for the recovery measurement (0 skips it).
    #[arg(long, value_name = "MB", default_value_t = 200)]
    pub recovery_mb: u64,
    /// Skip the O_DSYNC vs fdatasync cells.
    #[arg(long)]
    pub no_sync_modes: bool,
    /// Also write the whole report (per-round figures included) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Keep the scratch directory (its path is printed).
    #[arg(long)]
    pub keep: bool,
}

pub fn run(cmd: BenchCommand) -> ExitCode {
    match cmd {
        BenchCommand::Log(a) => run_log(a),
        BenchCommand::Purge(a) => run_experiments(&["purge"], a),
        BenchCommand::ThreeInsert(a) => run_experiments(&["three-insert"], a),
        BenchCommand::SmallVsLarge(a) => run_experiments(&["small-vs-large"], a),
        BenchCommand::SyncReplica(a) => run_experiments(&["sync-replica"], a),
        BenchCommand::LogIo(a) => run_experiments(&["log-io"], a),
        BenchCommand::All(a) => run_experiments(&walden_bench::workbench::experiments::NAMES, a),
    }
}

fn run_log(a: LogArgs) -> ExitCode {
    let scratch = match walden_bench::scratch_dir(a.dir.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("walden bench log: cannot make a scratch directory: {e}");
            return ExitCode::from(1);
        }
    };
    let mut cfg = LogBenchConfig::new(scratch.path());
    cfg.cell_seconds = a.seconds;
    cfg.rounds = a.rounds;
    cfg.sessions = a.sessions;
    cfg.recovery_bytes = a.recovery_mb * 1_000_000;
    cfg.sync_mode_cells = !a.no_sync_modes;
    cfg.progress = true;
    let result = log_bench::run(&cfg);
    if a.keep {
        let p = scratch.keep();
        eprintln!("kept {}", p.display());
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("walden bench log: {e}");
            return ExitCode::from(1);
        }
    };
    println!("{}", report.render());
    if let Some(path) = a.json {
        let json = serde_json::to_string_pretty(&report).expect("report serializes");
        if let Err(e) = std::fs::write(&path, json + "\n") {
            eprintln!("walden bench log: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        eprintln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}

fn run_experiments(names: &[&str], a: ExpArgs) -> ExitCode {
    let scratch = match walden_bench::scratch_dir(a.dir.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("walden bench: cannot make a scratch directory: {e}");
            return ExitCode::from(1);
        }
    };
    let progress = !a.quiet;
    workbench::install_interrupt_handler();
    let mut targets: Vec<Box<dyn Target>> = Vec::new();
    let mut skipped = Vec::new();
    if a.target == "embedded" {
        match workbench::walden::WaldenTarget::embedded(&scratch.path().join("walden")) {
            Ok(t) => targets.push(Box::new(t)),
            Err(e) => {
                eprintln!("walden bench: cannot open the embedded instance: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        match workbench::peers::walden_server(&a.target) {
            Ok(t) => targets.push(t),
            Err(e) => {
                eprintln!("walden bench: cannot reach {}: {e}", a.target);
                return ExitCode::from(1);
            }
        }
    }
    for p in &a.peer {
        let started = match p.as_str() {
            "postgres" | "postgresql" | "pg" => workbench::peers::postgres(scratch.path()),
            "sqlite" => workbench::peers::sqlite(scratch.path()),
            other => {
                eprintln!("walden bench: unknown peer {other:?} (expected postgres or sqlite)");
                return ExitCode::from(2);
            }
        };
        match started {
            Ok(t) => {
                if progress {
                    eprintln!("peer: {}", t.label());
                }
                targets.push(t)
            }
            Err(reason) => {
                eprintln!("peer {p} skipped: {reason}");
                skipped.push(Skipped {
                    experiment: "*".into(),
                    target: p.clone(),
                    reason,
                });
            }
        }
    }
    let cfg = WorkbenchConfig {
        experiments: names.iter().map(|s| s.to_string()).collect(),
        scale: if a.full { 1.0 } else { a.scale },
        progress,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        secondary_dir: a.secondary_dir.clone(),
    };
    let result = workbench::run(&cfg, &targets, skipped);
    // Stop peers and close the embedded instance before the scratch
    // directory goes.
    drop(targets);
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("walden bench: {e}");
            return ExitCode::from(1);
        }
    };
    println!("{}", workbench::table::render(&report));
    if let Some(path) = &a.json {
        let json = serde_json::to_string_pretty(&report).expect("report serializes");
        if let Err(e) = std::fs::write(path, json + "\n") {
            eprintln!("walden bench: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        eprintln!("wrote {}", path.display());
    }
    if let Some(dir) = &a.report {
        match workbench::report::write(&report, dir) {
            Ok(p) => eprintln!("wrote {}", p.display()),
            Err(e) => {
                eprintln!(
                    "walden bench: cannot write the report in {}: {e}",
                    dir.display()
                );
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
