//! `walden crash-test`: kills a writing process over and over (SIGKILL) and
//! checks after each kill what recovery kept, against the durability
//! semantics of SPEC.md §2.
//!
//! The parent spawns this same binary as a hidden child
//! (`walden crash-test-child`) on one data directory. The child opens the
//! instance, runs K session threads committing small transactions (1–3 rows
//! into `crash` plus an update of the session's `counters` row), durable or
//! delayed as the mode says, checkpoints every few tens of ms, and after each
//! acknowledged commit appends one line to a per-run side file (written
//! after the acknowledgement, so a line proves the ack came before the
//! kill). The parent kills it at a random moment, reopens the instance
//! in-process and checks:
//!
//! * (a) every acknowledged durable commit is present;
//! * (b) the survivors are a prefix of the commit (LSN) order: acknowledged
//!   commits ordered by LSN, per-session sequences without gaps, and the
//!   recovered end of log splitting present from absent;
//! * (c) no partial transaction: every present transaction has all its
//!   rows, and each session's counter equals its highest present sequence;
//! * (d) no lost delayed commit lies more than `--max-exposure-bytes` past
//!   the recovered end of log;
//! * (e) the counters are sane after recovery (no exposure, hardened = end,
//!   the log was read), and a new commit succeeds.
//!
//! Commits that survived one recovery must survive every later one (the
//! history is cumulative). On the first kill that shows a violation the run
//! stops and the data directory is kept, with a copy of the files as the kill
//! left them in `last-crash-image/`.

use clap::{Args, ValueEnum};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use walden_engine::{
    ColumnDef, CommitRequest, DataType, Database, DelayedDurability, Instance, InstanceConfig,
    LogConfig, Session, TableDef, Value,
};

mod check;
mod child;
mod report;
pub use child::run_child;
use child::*;
use report::*;

/// Exit code when a check failed.
const EXIT_VIOLATION: u8 = 1;
/// Exit code for a usage or set-up error (nothing was checked).
const EXIT_ERROR: u8 = 2;
/// Exit code of a child that hit an error.
const EXIT_CHILD_ERROR: i32 = 3;

/// Log segments are small so a run rolls over and recycles segments.
const SEGMENT_SIZE: u64 = 4 * 1024 * 1024;
/// Fraction of kills that do not wait for the child to be ready (they land
/// during recovery or set-up).
const EARLY_KILL_PROBABILITY: f64 = 0.1;
/// How long the parent waits for a child to report it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

const CRASH: &str = "crash";
const COUNTERS: &str = "counters";
const PROBE: &str = "probe";
use crate::crash_workload::{self, churn_def, CHURN};

/// What the child's database is set to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `DELAYED_DURABILITY = DISABLED`: every commit is durable (requests
    /// for delayed commits are made and must be ignored).
    Durable,
    /// `DELAYED_DURABILITY = FORCED`: every commit is delayed.
    Delayed,
    /// `DELAYED_DURABILITY = ALLOWED`: each commit asks for one or the other.
    Mixed,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Durable => "durable",
            Mode::Delayed => "delayed",
            Mode::Mixed => "mixed",
        }
    }

    fn setting(self) -> DelayedDurability {
        match self {
            Mode::Durable => DelayedDurability::Disabled,
            Mode::Delayed => DelayedDurability::Forced,
            Mode::Mixed => DelayedDurability::Allowed,
        }
    }

    /// Whether a commit that made `request` must come back durable.
    fn expect_durable(self, requested_delayed: bool) -> bool {
        match self {
            Mode::Durable => true,
            Mode::Delayed => false,
            Mode::Mixed => !requested_delayed,
        }
    }
}

#[derive(Debug, Args)]
pub struct CrashTestArgs {
    /// How many times to kill the writing child.
    #[arg(long)]
    pub kills: u32,
    /// Durability of the child's commits.
    #[arg(long, value_enum, default_value_t = Mode::Mixed)]
    pub mode: Mode,
    /// Working directory (must be empty or absent; kept afterwards). Default:
    /// a new directory under the current one, removed if the test passes.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Writing sessions (threads) in the child.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub sessions: u32,
    /// Set the database's `max_exposure_bytes` and check lost delayed
    /// commits against it.
    #[arg(long, value_name = "B")]
    pub max_exposure_bytes: Option<u64>,
    /// Seed of the kill timing and the child's workload (default: from the clock).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Also write the figures as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print one line per kill.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Arguments of the hidden child process (`walden crash-test-child`).
#[derive(Debug, Args)]
pub struct CrashChildArgs {
    /// Instance data directory.
    #[arg(long)]
    pub data: PathBuf,
    /// Side file of acknowledgements of this run.
    #[arg(long)]
    pub acks: PathBuf,
    #[arg(long)]
    pub run: u32,
    #[arg(long, value_enum)]
    pub mode: Mode,
    #[arg(long)]
    pub sessions: u32,
    #[arg(long)]
    pub max_exposure_bytes: Option<u64>,
    #[arg(long)]
    pub seed: u64,
    /// Give up on its own after this long (in case the parent died).
    #[arg(long, default_value_t = 60_000)]
    pub max_ms: u64,
}

/// The instance configuration both the child and the parent use.
fn instance_config(data: &Path) -> InstanceConfig {
    InstanceConfig {
        log: LogConfig {
            segment_size: SEGMENT_SIZE,
            ..LogConfig::default()
        },
        // The child checkpoints explicitly; the parent's close checkpoints.
        background_checkpoints: false,
        ..InstanceConfig::new(data)
    }
}

/// Primary key of part `part` of transaction `seq` of session `session`.
fn row_id(session: i64, seq: i64, part: i64) -> i64 {
    (session << 40) | (seq << 2) | part
}

fn crash_def() -> TableDef {
    TableDef::new(
        CRASH,
        vec![
            ColumnDef::new("id", DataType::BigInt),
            ColumnDef::new("session", DataType::Int).not_null(),
            ColumnDef::new("seq", DataType::BigInt).not_null(),
            ColumnDef::new("part", DataType::Int).not_null(),
            // Rows the transaction inserted (so a partial one is visible).
            ColumnDef::new("parts", DataType::Int).not_null(),
            // Which child run committed it (a lost seq is reused later).
            ColumnDef::new("run", DataType::Int).not_null(),
        ],
        &["id"],
    )
    .expect("crash table definition")
}

fn counters_def() -> TableDef {
    TableDef::new(
        COUNTERS,
        vec![
            ColumnDef::new("session", DataType::Int),
            ColumnDef::new("n", DataType::BigInt).not_null(),
        ],
        &["session"],
    )
    .expect("counters table definition")
}

fn probe_def() -> TableDef {
    TableDef::new(
        PROBE,
        vec![
            ColumnDef::new("id", DataType::Int),
            ColumnDef::new("n", DataType::BigInt).not_null(),
        ],
        &["id"],
    )
    .expect("probe table definition")
}

fn int(v: &Value) -> Result<i64, String> {
    v.as_i64()
        .ok_or_else(|| format!("expected an integer, found {v:?}"))
}

// ---------------------------------------------------------------------------
// The parent
// ---------------------------------------------------------------------------

/// A transaction found in `crash`.
struct Present {
    run: i64,
    parts: i64,
    seen: Vec<i64>,
}

struct Tester<'a> {
    args: &'a CrashTestArgs,
    exe: PathBuf,
    data: PathBuf,
    acks_dir: PathBuf,
    image: PathBuf,
    rng: StdRng,
    /// Every transaction present after an earlier recovery, with its run.
    recovered: HashMap<(i64, i64), i64>,
    /// Checkpoint LSN left by the parent's last clean close.
    close_checkpoint_lsn: u64,
}

/// Runs `walden crash-test`.
pub fn run(args: CrashTestArgs) -> ExitCode {
    match run_inner(&args) {
        Ok(pass) => {
            if pass {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_VIOLATION)
            }
        }
        Err(e) => {
            eprintln!("walden crash-test: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn run_inner(args: &CrashTestArgs) -> Result<bool, String> {
    if args.kills == 0 {
        return Err("--kills must be at least 1".into());
    }
    let started = Instant::now();
    let (work, owned) = match &args.dir {
        Some(d) => {
            if d.exists()
                && fs::read_dir(d)
                    .map_err(|e| format!("cannot read {}: {e}", d.display()))?
                    .next()
                    .is_some()
            {
                return Err(format!(
                    "{} is not empty (the test needs a fresh directory)",
                    d.display()
                ));
            }
            (d.clone(), false)
        }
        None => {
            let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            (
                cwd.join(format!(
                    "walden-crash-test-{}-{:x}",
                    std::process::id(),
                    nanos & 0xffff_ffff
                )),
                true,
            )
        }
    };
    let data = work.join("instance");
    let acks_dir = work.join("acks");
    for d in [&data, &acks_dir] {
        fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
    let mut t = Tester {
        args,
        exe,
        data,
        acks_dir,
        image: work.join("last-crash-image"),
        rng: StdRng::seed_from_u64(seed),
        recovered: HashMap::new(),
        close_checkpoint_lsn: 0,
    };

    let mut kills = Vec::new();
    for run in 1..=args.kills {
        let rec = t.one_kill(run)?;
        let failed = !rec.violations.is_empty();
        if args.verbose {
            print_kill(&rec);
        }
        for v in rec.violations.iter().take(50) {
            eprintln!("crash-test: kill {run}: {}: {}", v.kind.name(), v.detail);
        }
        if rec.violations.len() > 50 {
            eprintln!(
                "crash-test: kill {run}: ... and {} more violations",
                rec.violations.len() - 50
            );
        }
        kills.push(rec);
        if failed {
            eprintln!(
                "crash-test: stopping after kill {run}; data kept in {} \
                 (files as the kill left them in {})",
                work.display(),
                t.image.display()
            );
            break;
        }
    }

    let sum = |f: fn(&KillRecord) -> u64| kills.iter().map(f).sum::<u64>();
    let mut by_kind = BTreeMap::new();
    for k in Kind::ALL {
        by_kind.insert(
            serde_json::to_value(k)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            kills.iter().map(|r| r.count(&[k])).sum::<u64>(),
        );
    }
    let count = |kinds: &[Kind]| kills.iter().map(|r| r.count(kinds)).sum::<u64>();
    let report = Report {
        pass: kills.iter().all(|r| r.violations.is_empty()),
        kills_requested: args.kills,
        kills: kills.len() as u32,
        mode: args.mode,
        sessions: args.sessions,
        seed,
        max_exposure_bytes: args.max_exposure_bytes,
        dir: work.display().to_string(),
        acknowledged_commits: sum(|r| r.acks),
        durable_commits: sum(|r| r.durable_acks),
        delayed_commits: sum(|r| r.delayed_acks),
        lost_durable: count(&[Kind::LostDurable, Kind::LostRecovered]),
        lost_delayed: sum(|r| r.lost_delayed),
        max_lost_exposure_bytes: kills
            .iter()
            .map(|r| r.max_lost_exposure_bytes)
            .max()
            .unwrap_or(0),
        prefix_violations: count(&[Kind::Prefix]),
        partial_transactions: count(&[Kind::Partial, Kind::Counter, Kind::Churn, Kind::Ddl]),
        ddl_statements: sum(|r| r.ddl_acked),
        bound_violations: count(&[Kind::Bound]),
        other_violations: count(&[Kind::Mode, Kind::Sanity, Kind::Child]),
        violations_by_kind: by_kind,
        early_kills: kills.iter().filter(|r| r.early).count() as u64,
        kills_without_acks: kills.iter().filter(|r| r.acks == 0).count() as u64,
        recoveries_from_child_checkpoint: kills.iter().filter(|r| r.from_child_checkpoint).count()
            as u64,
        tail_cuts: kills.iter().filter(|r| r.tail_cut.is_some()).count() as u64,
        default_database_missing: kills.iter().filter(|r| r.default_database_missing).count()
            as u64,
        elapsed_s: started.elapsed().as_secs_f64(),
        per_kill: kills,
    };
    println!("{}", summary_line(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).expect("report serializes");
        fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if report.pass && owned {
        if let Err(e) = fs::remove_dir_all(&work) {
            eprintln!("crash-test: cannot remove {}: {e}", work.display());
        }
    } else if !report.pass {
        eprintln!("crash-test: data kept in {}", work.display());
    }
    Ok(report.pass)
}

/// Copies a directory tree (the files as a kill left them).
fn copy_dir_all(src: &Path, dst: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dst)?;
    for e in fs::read_dir(src)? {
        let e = e?;
        let to = dst.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir_all(&e.path(), &to)?;
        } else {
            fs::copy(e.path(), &to)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn killed_by_sigkill(st: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    st.signal() == Some(9)
}

#[cfg(not(unix))]
fn killed_by_sigkill(st: &std::process::ExitStatus) -> bool {
    st.code() != Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_lines_round_trip() {
        let a = Ack {
            session: 3,
            seq: 17,
            requested_delayed: true,
            durable: false,
            lsn: 123_456,
            parts: 2,
        };
        let line = format_ack(&a);
        assert_eq!(line, "3 17 L L 123456 2\n");
        assert_eq!(parse_ack(line.trim_end()), Some(a));
        assert_eq!(parse_ack("3 17 X L 1 2"), None);
    }

    #[test]
    fn torn_last_ack_line_is_ignored() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("acks.log");
        fs::write(&p, "0 1 D D 100 1\n1 1 L L 200 3\n0 2 D").unwrap();
        let acks = read_acks(&p).unwrap();
        assert_eq!(acks.len(), 2);
        assert_eq!(acks[1].lsn, 200);
        assert!(read_acks(&d.path().join("none.log")).unwrap().is_empty());
        fs::write(&p, "garbage\n").unwrap();
        assert!(read_acks(&p).is_err());
    }

    #[test]
    fn row_ids_are_unique_per_part() {
        assert_ne!(row_id(0, 1, 0), row_id(0, 1, 1));
        assert_ne!(row_id(1, 1, 0), row_id(0, 1, 0));
        assert!(row_id(0, 1 << 30, 3) < row_id(1, 1, 0));
    }
}
