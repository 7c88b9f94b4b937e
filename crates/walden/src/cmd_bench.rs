//! `walden bench ...`: the workbench's experiments against the embedded engine.
//!
//! Each experiment is a variant of [`BenchCommand`]; its work lives in the
//! `walden-bench` crate, this module only parses arguments and prints.

use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use walden_bench::log_bench::{self, LogBenchConfig};

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The log and commit path: the disk's sync-write ceiling, durable and
    /// delayed one-row-insert commits from 1..64 sessions, O_DSYNC vs
    /// fdatasync, and recovery speed; interleaved in rounds, medians printed.
    Log(LogArgs),
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
