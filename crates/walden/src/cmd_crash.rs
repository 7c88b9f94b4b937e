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
// The child
// ---------------------------------------------------------------------------

/// The side file of acknowledgements: one `write` per line (`O_APPEND`) under
/// a mutex, then `fdatasync`. The sync runs outside the mutex so concurrent
/// sessions' syncs overlap; each line is on disk when its own sync returns.
struct AckLog {
    file: File,
    lock: Mutex<()>,
}

impl AckLog {
    fn open(path: &Path) -> std::io::Result<AckLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AckLog {
            file,
            lock: Mutex::new(()),
        })
    }

    fn record(&self, line: &str) -> std::io::Result<()> {
        {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let n = (&self.file).write(line.as_bytes())?;
            if n != line.len() {
                return Err(std::io::Error::other(format!(
                    "short write to the ack file ({n} of {} bytes)",
                    line.len()
                )));
            }
        }
        self.file.sync_data()
    }
}

fn child_fail(what: impl std::fmt::Display) -> ! {
    eprintln!("crash-test-child: {what}");
    std::process::exit(EXIT_CHILD_ERROR);
}

/// Runs the child: set up, report `ready` on stdout, then write until killed.
pub fn run_child(args: CrashChildArgs) -> ExitCode {
    let inst = Instance::open(instance_config(&args.data))
        .unwrap_or_else(|e| child_fail(format!("open {}: {e}", args.data.display())));
    // A kill during the very first open can leave an instance whose default
    // database was never created (see `KillRecord::default_database_missing`).
    let db = inst
        .database("walden")
        .or_else(|_| inst.create_database("walden"))
        .unwrap_or_else(|e| child_fail(format!("database: {e}")));
    let setup = inst.new_session();
    let starts = child_setup(&db, &setup, &args).unwrap_or_else(|e| child_fail(e));
    let acks = Arc::new(
        AckLog::open(&args.acks)
            .unwrap_or_else(|e| child_fail(format!("cannot open {}: {e}", args.acks.display()))),
    );

    let mut threads = Vec::new();
    for (session, start) in starts.into_iter().enumerate() {
        let (inst, db, acks) = (inst.clone(), db.clone(), acks.clone());
        let seed = args
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(((args.run as u64) << 16) | session as u64);
        let run = args.run as i64;
        threads.push(std::thread::spawn(move || {
            let s = inst.new_session();
            let worker = Worker {
                db: &db,
                session: &s,
                acks: &acks,
                id: session as i64,
                run,
            };
            if let Err(e) = worker.run(start, seed) {
                child_fail(format!("session {session}: {e}"));
            }
        }));
    }
    {
        let db = db.clone();
        let mut rng = StdRng::seed_from_u64(args.seed ^ ((args.run as u64) << 32) ^ 0xC0FFEE);
        threads.push(std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(rng.gen_range(20..=80)));
            if let Err(e) = db.checkpoint() {
                child_fail(format!("checkpoint: {e}"));
            }
        }));
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    std::thread::sleep(Duration::from_millis(args.max_ms));
    eprintln!(
        "crash-test-child: not killed after {} ms, exiting",
        args.max_ms
    );
    std::process::exit(EXIT_CHILD_ERROR);
}

/// Creates the tables if they are missing, applies the mode's settings, makes
/// sure each session has a counters row, and returns where each session's
/// sequence continues (the highest seq that survived in `crash`).
fn child_setup(
    db: &Arc<Database>,
    s: &Arc<Session>,
    args: &CrashChildArgs,
) -> Result<Vec<i64>, String> {
    for def in [crash_def(), counters_def(), probe_def()] {
        if db.table(&def.name).is_err() {
            db.create_table(s, def.clone())
                .map_err(|e| format!("create table {}: {e}", def.name))?;
        }
    }
    let cur = db.settings();
    if cur.delayed_durability != args.mode.setting()
        || cur.max_exposure_bytes != args.max_exposure_bytes
    {
        db.alter_settings(s, |st| {
            st.delayed_durability = args.mode.setting();
            st.max_exposure_bytes = args.max_exposure_bytes;
        })
        .map_err(|e| format!("alter settings: {e}"))?;
    }
    let crash = db.table(CRASH).map_err(|e| e.to_string())?;
    let counters = db.table(COUNTERS).map_err(|e| e.to_string())?;
    let mut starts = Vec::new();
    for session in 0..args.sessions as i64 {
        if !counters
            .rows
            .read()
            .contains_key(&[Value::Int(session)][..])
        {
            db.run(s, CommitRequest::Durable, |tx| {
                tx.insert_into(
                    &counters,
                    vec![Some(Value::Int(session)), Some(Value::Int(0))],
                )
            })
            .map_err(|e| format!("insert counters row {session}: {e}"))?;
        }
        let lo: Box<[Value]> = vec![Value::Int(session << 40)].into();
        let hi: Box<[Value]> = vec![Value::Int((session + 1) << 40)].into();
        let last = crash
            .rows
            .read()
            .range(lo..hi)
            .next_back()
            .map(|(_, r)| int(&r[2]))
            .transpose()?;
        starts.push(last.unwrap_or(0));
    }
    Ok(starts)
}

/// One writing session of the child.
struct Worker<'a> {
    db: &'a Arc<Database>,
    session: &'a Arc<Session>,
    acks: &'a AckLog,
    id: i64,
    run: i64,
}

impl Worker<'_> {
    /// Commits transactions `start + 1`, `start + 2`, ... until killed.
    fn run(&self, start: i64, seed: u64) -> Result<(), String> {
        let (db, session) = (self.db, self.id);
        let crash = db.table(CRASH).map_err(|e| e.to_string())?;
        let counters = db.table(COUNTERS).map_err(|e| e.to_string())?;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut seq = start;
        loop {
            seq += 1;
            let parts: i64 = rng.gen_range(1..=3);
            let mut tx = db.begin(self.session);
            for part in 0..parts {
                tx.insert_into(
                    &crash,
                    vec![
                        Some(Value::Int(row_id(session, seq, part))),
                        Some(Value::Int(session)),
                        Some(Value::Int(seq)),
                        Some(Value::Int(part)),
                        Some(Value::Int(parts)),
                        Some(Value::Int(self.run)),
                    ],
                )
                .map_err(|e| format!("insert seq {seq}: {e}"))?;
            }
            tx.update_in(
                &counters,
                &[Value::Int(session)],
                vec![Value::Int(session), Value::Int(seq)],
            )
            .map_err(|e| format!("update counter to {seq}: {e}"))?;
            // Every mode makes both requests; the database setting decides.
            let requested_delayed = rng.gen_bool(0.5);
            let request = if requested_delayed {
                CommitRequest::Delayed
            } else {
                CommitRequest::Durable
            };
            let out = tx
                .commit(request)
                .map_err(|e| format!("commit seq {seq}: {e}"))?;
            let lsn = out
                .lsn
                .ok_or_else(|| format!("commit seq {seq} of a write transaction has no LSN"))?;
            self.acks
                .record(&format_ack(&Ack {
                    session,
                    seq,
                    requested_delayed,
                    durable: out.durable,
                    lsn,
                    parts,
                }))
                .map_err(|e| format!("ack file: {e}"))?;
        }
    }
}

// ---------------------------------------------------------------------------
// Acknowledgement lines
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
struct Ack {
    session: i64,
    seq: i64,
    requested_delayed: bool,
    durable: bool,
    lsn: u64,
    parts: i64,
}

/// `<session> <seq> <requested D|L> <got D|L> <commit lsn> <parts>\n`
fn format_ack(a: &Ack) -> String {
    let dl = |d: bool| if d { 'L' } else { 'D' };
    format!(
        "{} {} {} {} {} {}\n",
        a.session,
        a.seq,
        dl(a.requested_delayed),
        dl(!a.durable),
        a.lsn,
        a.parts
    )
}

fn parse_ack(line: &str) -> Option<Ack> {
    let f: Vec<&str> = line.split(' ').collect();
    if f.len() != 6 {
        return None;
    }
    let dl = |s: &str| match s {
        "D" => Some(false),
        "L" => Some(true),
        _ => None,
    };
    Some(Ack {
        session: f[0].parse().ok()?,
        seq: f[1].parse().ok()?,
        requested_delayed: dl(f[2])?,
        durable: !dl(f[3])?,
        lsn: f[4].parse().ok()?,
        parts: f[5].parse().ok()?,
    })
}

/// Reads a run's side file. A last line without its newline was cut by the
/// kill mid-write and is ignored (its `write` never completed).
fn read_acks(path: &Path) -> Result<Vec<Ack>, String> {
    let text = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let text = String::from_utf8(text).map_err(|_| format!("{} is not UTF-8", path.display()))?;
    let mut out = Vec::new();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i + 1],
        None => "",
    };
    for (n, line) in complete.lines().enumerate() {
        out.push(
            parse_ack(line)
                .ok_or_else(|| format!("{} line {}: malformed: {line:?}", path.display(), n + 1))?,
        );
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// The parent
// ---------------------------------------------------------------------------

/// What a check found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    /// (a) An acknowledged durable commit is missing.
    LostDurable,
    /// A commit present after an earlier recovery is missing now.
    LostRecovered,
    /// (b) The survivors are not a prefix of the commit order (including a
    /// gap in a session's sequence, or the recovered end of log not
    /// splitting present from absent commits).
    Prefix,
    /// (c) A transaction is present with some of its rows only.
    Partial,
    /// (c) A session's counter differs from its highest present sequence.
    Counter,
    /// (d) A lost delayed commit lies beyond the exposure bound.
    Bound,
    /// A commit came back durable or delayed against the mode.
    Mode,
    /// (e) Recovery or the state after it is not sane.
    Sanity,
    /// The child failed (exited on its own, never got ready).
    Child,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::LostDurable,
        Kind::LostRecovered,
        Kind::Prefix,
        Kind::Partial,
        Kind::Counter,
        Kind::Bound,
        Kind::Mode,
        Kind::Sanity,
        Kind::Child,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::LostDurable => "lost durable commit",
            Kind::LostRecovered => "lost recovered commit",
            Kind::Prefix => "prefix violation",
            Kind::Partial => "partial transaction",
            Kind::Counter => "counter mismatch",
            Kind::Bound => "bound violation",
            Kind::Mode => "durability mode violation",
            Kind::Sanity => "sanity violation",
            Kind::Child => "child failure",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
struct Violation {
    kind: Kind,
    detail: String,
}

/// What one kill did and what its check found.
#[derive(Clone, Debug, Default, Serialize)]
struct KillRecord {
    run: u32,
    /// Killed without waiting for the child to be ready.
    early: bool,
    /// The child reported it was ready (set-up done) before the kill.
    ready: bool,
    /// From spawn to kill.
    ran_ms: u64,
    acks: u64,
    durable_acks: u64,
    delayed_acks: u64,
    lost_delayed: u64,
    /// Largest `lsn - recovered end` of a lost delayed commit.
    max_lost_exposure_bytes: u64,
    /// `db.log().end_lsn()` right after the reopen.
    recovered_end_lsn: u64,
    /// End of the valid log found by the recovery scan.
    scan_end_lsn: u64,
    /// LSN of the checkpoint recovery started from.
    checkpoint_lsn: u64,
    /// Recovery started from a checkpoint the child took (not the parent's
    /// clean close).
    from_child_checkpoint: bool,
    records_replayed: u64,
    recovery_ms: f64,
    tail_cut: Option<String>,
    /// Transactions present in `crash` after recovery.
    transactions_present: u64,
    /// The instance came back without its default database: the kill hit
    /// its creation (between writing the empty catalog and creating
    /// `walden`). Not a loss of anything committed; the next child creates it.
    default_database_missing: bool,
    violations: Vec<Violation>,
}

impl KillRecord {
    fn violation(&mut self, kind: Kind, detail: String) {
        self.violations.push(Violation { kind, detail });
    }

    fn count(&self, kinds: &[Kind]) -> u64 {
        self.violations
            .iter()
            .filter(|v| kinds.contains(&v.kind))
            .count() as u64
    }
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct Report {
    pass: bool,
    kills_requested: u32,
    kills: u32,
    mode: Mode,
    sessions: u32,
    seed: u64,
    max_exposure_bytes: Option<u64>,
    dir: String,
    acknowledged_commits: u64,
    durable_commits: u64,
    delayed_commits: u64,
    /// Acknowledged durable commits lost, plus recovered commits lost later.
    lost_durable: u64,
    /// Acknowledged delayed commits lost (allowed, within the bound).
    lost_delayed: u64,
    max_lost_exposure_bytes: u64,
    prefix_violations: u64,
    /// Partial transactions plus counter mismatches.
    partial_transactions: u64,
    bound_violations: u64,
    /// Mode, sanity and child failures.
    other_violations: u64,
    violations_by_kind: BTreeMap<String, u64>,
    early_kills: u64,
    kills_without_acks: u64,
    recoveries_from_child_checkpoint: u64,
    tail_cuts: u64,
    default_database_missing: u64,
    elapsed_s: f64,
    per_kill: Vec<KillRecord>,
}

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
        partial_transactions: count(&[Kind::Partial, Kind::Counter]),
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

fn summary_line(r: &Report) -> String {
    let bound = match r.max_exposure_bytes {
        Some(b) => format!(", bound {b} B"),
        None => String::new(),
    };
    format!(
        "crash-test: {} kills, mode {}, {} acknowledged commits ({} durable, {} delayed), \
         {} lost durable, {} lost delayed (max exposure {} B{bound}), {} prefix violations, \
         {} partial transactions, {} bound violations, {} other violations: {}",
        r.kills,
        r.mode.as_str(),
        r.acknowledged_commits,
        r.durable_commits,
        r.delayed_commits,
        r.lost_durable,
        r.lost_delayed,
        r.max_lost_exposure_bytes,
        r.prefix_violations,
        r.partial_transactions,
        r.bound_violations,
        r.other_violations,
        if r.pass { "PASS" } else { "FAIL" }
    )
}

fn print_kill(r: &KillRecord) {
    if r.default_database_missing {
        println!(
            "kill {}: {} after {} ms: the instance came back without its default database \
             (the kill interrupted its creation; nothing was committed yet)",
            r.run,
            if r.early { "early kill" } else { "killed" },
            r.ran_ms
        );
        return;
    }
    println!(
        "kill {}: {} after {} ms{}, {} acks ({} durable, {} delayed), {} lost delayed \
         (max {} B); recovered end {} from checkpoint {}{}, {} records replayed in {:.1} ms{}; \
         {} transactions present{}",
        r.run,
        if r.early { "early kill" } else { "killed" },
        r.ran_ms,
        if r.ready { "" } else { " (before ready)" },
        r.acks,
        r.durable_acks,
        r.delayed_acks,
        r.lost_delayed,
        r.max_lost_exposure_bytes,
        r.recovered_end_lsn,
        r.checkpoint_lsn,
        if r.from_child_checkpoint {
            " (child's)"
        } else {
            ""
        },
        r.records_replayed,
        r.recovery_ms,
        match &r.tail_cut {
            Some(c) => format!(", tail cut: {c}"),
            None => String::new(),
        },
        r.transactions_present,
        if r.violations.is_empty() {
            String::new()
        } else {
            format!(", {} VIOLATIONS", r.violations.len())
        }
    );
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

impl Tester<'_> {
    fn spawn_child(&mut self, run: u32, acks: &Path) -> Result<Child, String> {
        let mut cmd = Command::new(&self.exe);
        cmd.arg("crash-test-child")
            .arg("--data")
            .arg(&self.data)
            .arg("--acks")
            .arg(acks)
            .arg("--run")
            .arg(run.to_string())
            .arg("--mode")
            .arg(self.args.mode.as_str())
            .arg("--sessions")
            .arg(self.args.sessions.to_string())
            .arg("--seed")
            .arg(self.rng.gen::<u64>().to_string());
        if let Some(b) = self.args.max_exposure_bytes {
            cmd.arg("--max-exposure-bytes").arg(b.to_string());
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.exe.display()))
    }

    /// Spawns a child, kills it, and checks what recovery kept.
    fn one_kill(&mut self, run: u32) -> Result<KillRecord, String> {
        let mut rec = KillRecord {
            run,
            ..KillRecord::default()
        };
        let acks_path = self.acks_dir.join(format!("run-{run:05}.log"));
        let t0 = Instant::now();
        let mut child = self.spawn_child(run, &acks_path)?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        rec.early = self.rng.gen_bool(EARLY_KILL_PROBABILITY);
        if rec.early {
            std::thread::sleep(Duration::from_millis(self.rng.gen_range(0..50)));
        } else {
            match rx.recv_timeout(READY_TIMEOUT) {
                Ok(l) if l == "ready" => rec.ready = true,
                Ok(l) => rec.violation(Kind::Child, format!("unexpected child output {l:?}")),
                Err(mpsc::RecvTimeoutError::Timeout) => rec.violation(
                    Kind::Child,
                    format!("child not ready after {} s", READY_TIMEOUT.as_secs()),
                ),
                Err(mpsc::RecvTimeoutError::Disconnected) => {}
            }
            if rec.ready {
                std::thread::sleep(Duration::from_millis(self.rng.gen_range(50..=300)));
            }
        }
        let exited_early = child.try_wait().ok().flatten();
        let _ = child.kill(); // SIGKILL on Unix
        let status = child
            .wait()
            .map_err(|e| format!("cannot wait for the child: {e}"))?;
        rec.ran_ms = t0.elapsed().as_millis() as u64;
        let _ = reader.join();
        if rx.try_iter().any(|l| l == "ready") {
            rec.ready = true;
        }
        if let Some(st) = exited_early {
            rec.violation(
                Kind::Child,
                format!("child exited on its own before the kill ({st})"),
            );
        } else if !killed_by_sigkill(&status) {
            rec.violation(
                Kind::Child,
                format!("child ended with {status}, not SIGKILL"),
            );
        }

        let _ = fs::remove_dir_all(&self.image);
        copy_dir_all(&self.data, &self.image)
            .map_err(|e| format!("cannot copy the crash image: {e}"))?;

        self.check(run, &acks_path, &mut rec);
        Ok(rec)
    }

    /// Reopens the instance and checks it against the acknowledgements.
    fn check(&mut self, run: u32, acks_path: &Path, rec: &mut KillRecord) {
        let t0 = Instant::now();
        let inst = match Instance::open(instance_config(&self.data)) {
            Ok(i) => i,
            Err(e) => {
                rec.violation(Kind::Sanity, format!("recovery failed: {e}"));
                return;
            }
        };
        rec.recovery_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let db = match inst.database("walden") {
            Ok(db) => db,
            Err(e) => {
                // Tolerated only while nothing was ever committed: the kill
                // interrupted the instance's creation.
                let acked = read_acks(acks_path).map(|a| a.len()).unwrap_or(1);
                if self.recovered.is_empty() && acked == 0 {
                    rec.default_database_missing = true;
                } else {
                    rec.violation(Kind::Sanity, format!("database after recovery: {e}"));
                }
                if let Err(e) = inst.close() {
                    rec.violation(Kind::Sanity, format!("clean close failed: {e}"));
                }
                return;
            }
        };
        self.check_db(run, acks_path, &inst, &db, rec);
        if !rec.violations.is_empty() {
            let r = db.recovery_report();
            eprintln!(
                "crash-test: kill {run}: recovery report: {:?}; checkpoint LSN {}",
                r,
                db.checkpoint_lsn()
            );
        }
        if let Err(e) = inst.close() {
            rec.violation(Kind::Sanity, format!("clean close failed: {e}"));
        }
        self.close_checkpoint_lsn = db.checkpoint_lsn();
    }

    fn check_db(
        &mut self,
        run: u32,
        acks_path: &Path,
        inst: &Instance,
        db: &Arc<Database>,
        rec: &mut KillRecord,
    ) {
        // (e) The state right after recovery.
        let end = db.log().end_lsn();
        let report = db.recovery_report();
        rec.recovered_end_lsn = end;
        rec.scan_end_lsn = report.scan.end_lsn;
        rec.records_replayed = report.scan.records;
        rec.tail_cut = report.scan.cut.as_ref().map(|c| {
            format!(
                "{} offset {} (LSN {}): {}",
                c.file.display(),
                c.offset,
                c.lsn,
                c.reason
            )
        });
        rec.checkpoint_lsn = db.checkpoint_lsn();
        rec.from_child_checkpoint = rec.checkpoint_lsn > self.close_checkpoint_lsn;
        let exp = db.exposure();
        if exp.unhardened_commits != 0
            || exp.unhardened_bytes != 0
            || exp.hardened_lsn != exp.end_lsn
            || exp.end_lsn != end
        {
            rec.violation(
                Kind::Sanity,
                format!("exposure after recovery is not empty: {exp:?} (end of log {end})"),
            );
        }
        if end != report.scan.end_lsn {
            rec.violation(
                Kind::Sanity,
                format!(
                    "end of log {end} differs from the recovery scan's end {}",
                    report.scan.end_lsn
                ),
            );
        }
        let reads = db.log_file_stats().snapshot().num_of_reads;
        if reads == 0 {
            rec.violation(
                Kind::Sanity,
                "recovery read no log (num_of_reads = 0)".into(),
            );
        }

        let acks = match read_acks(acks_path) {
            Ok(a) => a,
            Err(e) => {
                rec.violation(Kind::Sanity, e);
                return;
            }
        };
        let (txns, counters) = match read_tables(db, rec) {
            Ok(v) => v,
            Err(e) => {
                rec.violation(Kind::Sanity, format!("cannot read the tables: {e}"));
                return;
            }
        };
        rec.transactions_present = txns.len() as u64;
        let run_i = run as i64;

        // (c) Whole transactions; (b) no gap in a session's sequence; (c)
        // counters equal the highest present sequence.
        let mut max_seq: BTreeMap<i64, i64> = BTreeMap::new();
        for (&(session, seq), p) in &txns {
            let want: Vec<i64> = (0..p.parts).collect();
            if p.seen != want {
                rec.violation(
                    Kind::Partial,
                    format!(
                        "session {session} seq {seq} (run {}): parts {:?} present of {}",
                        p.run, p.seen, p.parts
                    ),
                );
            }
            if p.run > run_i || p.run < 1 {
                rec.violation(
                    Kind::Sanity,
                    format!("session {session} seq {seq} carries run {}", p.run),
                );
            }
            let expected = max_seq.get(&session).copied().unwrap_or(0) + 1;
            if seq != expected {
                rec.violation(
                    Kind::Prefix,
                    format!(
                        "session {session}: seq {seq} present but seq {expected}..{} missing",
                        seq - 1
                    ),
                );
            }
            max_seq.insert(session, seq);
        }
        for (&session, &n) in &counters {
            let m = max_seq.get(&session).copied().unwrap_or(0);
            if n != m {
                rec.violation(
                    Kind::Counter,
                    format!("counters.n of session {session} is {n}, highest present seq is {m}"),
                );
            }
        }
        for (&session, &m) in &max_seq {
            if !counters.contains_key(&session) {
                rec.violation(
                    Kind::Counter,
                    format!("session {session} has rows up to seq {m} but no counters row"),
                );
            }
        }

        // Commits present after an earlier recovery must still be there.
        let mut lost_recovered = 0u64;
        for (&(session, seq), &r) in &self.recovered {
            if txns.get(&(session, seq)).map(|p| p.run) != Some(r) {
                lost_recovered += 1;
                if lost_recovered <= 20 {
                    rec.violation(
                        Kind::LostRecovered,
                        format!(
                            "session {session} seq {seq} (run {r}) was present after an earlier \
                             recovery and is missing now"
                        ),
                    );
                }
            }
        }
        if lost_recovered > 20 {
            rec.violation(
                Kind::LostRecovered,
                format!(
                    "... and {} more recovered commits missing",
                    lost_recovered - 20
                ),
            );
        }

        // The acknowledgements of this run.
        let mut seen = HashMap::new();
        let mut max_present_lsn = 0u64;
        let mut status = Vec::with_capacity(acks.len());
        for a in &acks {
            rec.acks += 1;
            if a.durable {
                rec.durable_acks += 1;
            } else {
                rec.delayed_acks += 1;
            }
            if seen.insert((a.session, a.seq), a.lsn).is_some() {
                rec.violation(
                    Kind::Sanity,
                    format!("session {} seq {} acknowledged twice", a.session, a.seq),
                );
            }
            if a.durable != self.args.mode.expect_durable(a.requested_delayed) {
                rec.violation(
                    Kind::Mode,
                    format!(
                        "session {} seq {} asked for a {} commit in mode {} and got a {} one",
                        a.session,
                        a.seq,
                        if a.requested_delayed {
                            "delayed"
                        } else {
                            "durable"
                        },
                        self.args.mode.as_str(),
                        if a.durable { "durable" } else { "delayed" }
                    ),
                );
            }
            let p = txns.get(&(a.session, a.seq));
            let present = p.is_some_and(|p| p.run == run_i);
            if let Some(p) = p {
                if p.run != run_i {
                    rec.violation(
                        Kind::Sanity,
                        format!(
                            "session {} seq {} acknowledged in run {run} but its rows are from run {}",
                            a.session, a.seq, p.run
                        ),
                    );
                } else if p.parts != a.parts {
                    rec.violation(
                        Kind::Partial,
                        format!(
                            "session {} seq {}: {} rows acknowledged, {} recorded",
                            a.session, a.seq, a.parts, p.parts
                        ),
                    );
                }
            }
            if present {
                max_present_lsn = max_present_lsn.max(a.lsn);
            }
            status.push(present);
        }
        for (a, &present) in acks.iter().zip(&status) {
            let what = format!(
                "{} commit session {} seq {} (LSN {}, recovered end {end})",
                if a.durable { "durable" } else { "delayed" },
                a.session,
                a.seq,
                a.lsn
            );
            if !present {
                if a.durable {
                    rec.violation(Kind::LostDurable, format!("acknowledged {what} is missing"));
                } else {
                    rec.lost_delayed += 1;
                    let exposure = a.lsn.saturating_sub(end);
                    rec.max_lost_exposure_bytes = rec.max_lost_exposure_bytes.max(exposure);
                    if let Some(b) = self.args.max_exposure_bytes {
                        if exposure > b {
                            rec.violation(
                                Kind::Bound,
                                format!("lost {what} lies {exposure} B past the end, bound {b} B"),
                            );
                        }
                    }
                }
            }
            // (b) Prefix: absent ones must all come after every present one,
            // and the recovered end of log splits present from absent.
            if !present && (a.lsn < max_present_lsn || a.lsn <= end) {
                rec.violation(
                    Kind::Prefix,
                    format!(
                        "acknowledged {what} is missing although the commit at LSN \
                         {max_present_lsn} survived or it lies within the recovered log"
                    ),
                );
            } else if present && a.lsn > end {
                rec.violation(
                    Kind::Prefix,
                    format!("acknowledged {what} is present beyond the recovered end of log"),
                );
            }
        }

        // (e) A new commit succeeds (durable unless FORCED makes it delayed)
        // and, after a log flush, is hardened.
        let s = inst.new_session();
        match probe_commit(db, &s, run_i) {
            Ok((lsn, durable)) => {
                if durable != self.args.mode.expect_durable(false) || lsn <= end {
                    rec.violation(
                        Kind::Sanity,
                        format!(
                            "probe commit after recovery: LSN {lsn} (end was {end}), durable {durable}"
                        ),
                    );
                }
                if let Err(e) = db.flush_log(&s) {
                    rec.violation(Kind::Sanity, format!("flush after the probe commit: {e}"));
                }
                let exp = db.exposure();
                if exp.hardened_lsn < lsn || exp.unhardened_commits != 0 {
                    rec.violation(
                        Kind::Sanity,
                        format!("after the probe commit at LSN {lsn} and a flush: {exp:?}"),
                    );
                }
            }
            Err(e) => rec.violation(
                Kind::Sanity,
                format!("a new commit after recovery failed: {e}"),
            ),
        }

        for (k, p) in txns {
            self.recovered.insert(k, p.run);
        }
    }
}

/// A commit asking to be durable to the `probe` table (created if the child never got to it).
fn probe_commit(db: &Arc<Database>, s: &Arc<Session>, run: i64) -> Result<(u64, bool), String> {
    if db.table(PROBE).is_err() {
        db.create_table(s, probe_def()).map_err(|e| e.to_string())?;
    }
    let mut tx = db.begin(s);
    let key = [Value::Int(0)];
    let row = vec![Value::Int(0), Value::Int(run)];
    let exists = tx
        .get_for_update(PROBE, &key)
        .map_err(|e| e.to_string())?
        .is_some();
    if exists {
        tx.update(PROBE, &key, row).map_err(|e| e.to_string())?;
    } else {
        tx.insert(PROBE, row.into_iter().map(Some).collect())
            .map_err(|e| e.to_string())?;
    }
    let out = tx
        .commit(CommitRequest::Durable)
        .map_err(|e| e.to_string())?;
    Ok((out.lsn.unwrap_or(0), out.durable))
}

type Txns = BTreeMap<(i64, i64), Present>;

/// Reads `crash` (grouped by transaction) and `counters`. A missing table
/// (the child was killed before creating it) reads as empty.
fn read_tables(
    db: &Arc<Database>,
    rec: &mut KillRecord,
) -> Result<(Txns, BTreeMap<i64, i64>), String> {
    let mut txns: Txns = BTreeMap::new();
    if let Ok(t) = db.table(CRASH) {
        // In key order, so parts come in order within a transaction.
        for (key, row) in t.snapshot() {
            if row.len() != 6 {
                return Err(format!("crash row with {} columns", row.len()));
            }
            let id = int(&key[0])?;
            let (session, seq, part, parts, run) = (
                int(&row[1])?,
                int(&row[2])?,
                int(&row[3])?,
                int(&row[4])?,
                int(&row[5])?,
            );
            if id != row_id(session, seq, part) {
                rec.violation(
                    Kind::Sanity,
                    format!(
                        "crash row id {id} does not match session {session} seq {seq} part {part}"
                    ),
                );
            }
            let p = txns.entry((session, seq)).or_insert(Present {
                run,
                parts,
                seen: Vec::new(),
            });
            if p.run != run || p.parts != parts {
                rec.violation(
                    Kind::Partial,
                    format!(
                        "session {session} seq {seq} mixes rows of run {} ({} parts) and run {run} ({parts} parts)",
                        p.run, p.parts
                    ),
                );
            }
            p.seen.push(part);
        }
    } else if db.table(COUNTERS).is_ok() {
        return Err("table counters exists but crash does not".into());
    }
    let mut counters = BTreeMap::new();
    if let Ok(t) = db.table(COUNTERS) {
        for (_, row) in t.snapshot() {
            counters.insert(int(&row[0])?, int(&row[1])?);
        }
    }
    Ok((txns, counters))
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
