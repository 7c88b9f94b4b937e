//! `walden stress`: a load driver for any PostgreSQL-protocol server. The
//! work is in `walden_bench::stress`; this module parses arguments, reads
//! files and prints.

use clap::{ArgGroup, Args, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use walden_bench::stress::{self, Protocol, StressConfig, Warmup};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["script", "sql"])))]
pub struct StressArgs {
    /// Server to load: postgres://USER[:PASSWORD]@HOST:PORT/DB (or libpq's
    /// key=value form).
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// Concurrent sessions, one connection each.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub sessions: usize,
    /// Measured iterations per session (each runs the whole script once).
    /// Without it the run lasts --time-limit.
    #[arg(long, value_name = "M")]
    pub iterations: Option<u64>,
    /// Script file: optional `\set NAME random(A, B)` lines, then SQL
    /// statements separated by `;`.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// The script given inline.
    #[arg(long, value_name = "SQL")]
    pub sql: Option<String>,
    /// Unmeasured iterations per session before the measured ones.
    #[arg(long, value_name = "K", conflicts_with = "warmup_seconds")]
    pub warmup_iterations: Option<u64>,
    /// Unmeasured warm-up per session, in seconds.
    #[arg(long, value_name = "S")]
    pub warmup_seconds: Option<f64>,
    /// Stop the measured phase after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// SQL run once before the sessions start (say, CREATE TABLE); a failure
    /// stops the run.
    #[arg(long, value_name = "SQL", conflicts_with = "setup")]
    pub setup_sql: Option<String>,
    /// Setup SQL from a file.
    #[arg(long, value_name = "FILE")]
    pub setup: Option<PathBuf>,
    /// Also write every figure as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress bar (there is none either when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// How statements are sent.
    #[arg(long, value_enum, default_value_t = ProtocolArg::Simple)]
    pub protocol: ProtocolArg,
    /// Seed for the random parameters, for repeatable runs.
    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProtocolArg {
    /// One Query message per statement.
    Simple,
    /// Parse/Bind/Execute per statement.
    Extended,
}

fn read(what: &str, path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {what} {}: {e}", path.display()))
}

fn seconds(flag: &str, s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|_| format!("{flag} {s}: not a number of seconds"))
}

fn config(a: &StressArgs) -> Result<StressConfig, String> {
    let script = match (&a.script, &a.sql) {
        (Some(p), _) => read("script", p)?,
        (None, Some(s)) => s.clone(),
        (None, None) => return Err("give --script FILE or --sql SQL".into()),
    };
    let setup = match (&a.setup, &a.setup_sql) {
        (Some(p), _) => Some(read("setup file", p)?),
        (None, s) => s.clone(),
    };
    let warmup = match (a.warmup_iterations, a.warmup_seconds) {
        (Some(k), _) => Warmup::Iterations(k),
        (None, Some(s)) => {
            seconds("--warmup-seconds", s)?;
            Warmup::Seconds(s)
        }
        (None, None) => Warmup::None,
    };
    let time_limit = a
        .time_limit
        .map(|s| seconds("--time-limit", s))
        .transpose()?;
    let mut cfg = StressConfig::new(&a.url, &script);
    cfg.sessions = a.sessions;
    cfg.iterations = a.iterations;
    cfg.warmup = warmup;
    cfg.time_limit = time_limit;
    cfg.setup = setup;
    cfg.protocol = match a.protocol {
        ProtocolArg::Simple => Protocol::Simple,
        ProtocolArg::Extended => Protocol::Extended,
    };
    cfg.progress = !a.no_progress && std::io::stderr().is_terminal();
    cfg.seed = a.seed;
    Ok(cfg)
}

pub fn run(a: StressArgs) -> ExitCode {
    let cfg = match config(&a) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("walden stress: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match stress::run(&cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("walden stress: {e}");
            return ExitCode::from(1);
        }
    };
    print!("{}", report.render());
    if let Some(path) = a.json {
        let json = match serde_json::to_string_pretty(&report) {
            Ok(j) => j,
            Err(e) => {
                eprintln!("walden stress: cannot serialize the report: {e}");
                return ExitCode::from(1);
            }
        };
        if let Err(e) = std::fs::write(&path, json + "\n") {
            eprintln!("walden stress: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        eprintln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
