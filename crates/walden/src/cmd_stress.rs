//! `walden stress`: a load driver for any PostgreSQL-protocol server. The
//! work is in `walden_bench::stress`; this module parses arguments, reads
//! files and prints.

use clap::{ArgGroup, Args, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use walden_bench::stress::{self, Protocol, StressConfig, StressError, Warmup};

/// Shown by `walden stress --help`.
const SCRIPT_HELP: &str = "\
Script: SQL statements separated by `;` (outside quotes and comments), each
sent as its own message; one iteration runs them all in order. A failed
statement ends its iteration (counted, with its SQLSTATE), a ROLLBACK follows
when the script began a transaction, and the run goes on.

Parameters, substituted anywhere in a statement (quoted strings too):
  :n              this session's iteration number, from 1 (warm-up included)
  :session        the session number, from 1
  :rand(a,b)      uniform random integer in a..=b (also :random(a,b))
  :randstr(n)     random alphanumeric string of n characters
  :NAME           a variable from a `\\set NAME EXPR` line at the top of the
                  script, EXPR being random(a,b), randstr(n) or an integer;
                  drawn once per iteration
`::` (a cast) is left alone, and so is a :word that is none of these.

Exit status: 0 the run finished (failed iterations are in the report), 1 it
could not run (no connection, setup failed, unreadable file), 2 bad arguments,
URL or script, 3 it finished but a session lost its connection for good.

Example:
  walden stress --url postgres://walden@127.0.0.1:5433/walden --sessions 8 \\
    --iterations 1000 --setup-sql 'CREATE TABLE t (s int, n int, v text, PRIMARY KEY (s, n))' \\
    --sql \"INSERT INTO t VALUES (:session, :n, ':randstr(20)')\" --json run.json";

#[derive(Debug, Args)]
#[command(after_long_help = SCRIPT_HELP)]
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

/// A file's text, or exit code 1 and a message.
fn read(what: &str, path: &Path) -> Result<String, (u8, String)> {
    std::fs::read_to_string(path)
        .map_err(|e| (1, format!("cannot read {what} {}: {e}", path.display())))
}

/// Seconds as a duration, or exit code 2 and a message.
fn seconds(flag: &str, s: f64) -> Result<Duration, (u8, String)> {
    Duration::try_from_secs_f64(s).map_err(|_| (2, format!("{flag} {s}: not a number of seconds")))
}

fn config(a: &StressArgs) -> Result<StressConfig, (u8, String)> {
    let script = match (&a.script, &a.sql) {
        (Some(p), _) => read("script", p)?,
        (None, Some(s)) => s.clone(),
        (None, None) => return Err((2, "give --script FILE or --sql SQL".into())),
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

/// Exit codes: 0 the run finished (failed iterations are in the report), 1
/// it could not run (connection, setup, unreadable files), 2 bad arguments,
/// URL or script,
/// 3 it finished but some session lost its connection and stopped early.
pub fn run(a: StressArgs) -> ExitCode {
    let cfg = match config(&a) {
        Ok(c) => c,
        Err((code, e)) => {
            eprintln!("walden stress: {e}");
            return ExitCode::from(code);
        }
    };
    let report = match stress::run(&cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("walden stress: {e}");
            let usage = matches!(
                e,
                StressError::BadUrl { .. } | StressError::Config(_) | StressError::Script(_)
            );
            return ExitCode::from(if usage { 2 } else { 1 });
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
    // Failed iterations are the measurement; sessions that lost their
    // connection for good mean the load was not what was asked for.
    if report.per_session.iter().any(|s| s.aborted.is_some()) {
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}
