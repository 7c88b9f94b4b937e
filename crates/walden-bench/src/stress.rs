//! `walden stress`: a load driver for any PostgreSQL-protocol server.
//!
//! N sessions (one connection each) run a script M times each, after an
//! optional unmeasured warm-up; the run stops early at a time limit. Each
//! iteration runs the whole script; its latency goes into a per-session
//! histogram, its failure (statement, SQLSTATE, message) into error groups,
//! and the run goes on. See [`script`] for the script language.
//!
//! The script is always split into statements, each sent as its own message
//! (a simple Query, or Parse/Bind/Execute with `--protocol extended`), so a
//! failure names its statement, the extended protocol (one statement per
//! message) gets the same script as the simple one, and `BEGIN ... COMMIT`
//! in a script means the same on every server: PostgreSQL runs a
//! multi-statement Query as one implicit transaction, Walden does not.

pub mod report;
pub mod script;
mod session;

pub use report::{ErrorGroup, Latency, MinAvgMax, SessionReport, StressReport};
pub use script::{parse_script, split_statements, Script};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::StdRng;
use rand::SeedableRng;
use report::ErrorGroups;
use session::{session, Outcome, Shared};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_postgres::config::Host;
use tokio_postgres::{Client, NoTls};

/// What can stop a stress run before it measures anything.
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    #[error("bad --url {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("{0}")]
    Config(String),
    #[error("script: {0}")]
    Script(String),
    #[error("cannot connect to {target}: {detail}")]
    Connect { target: String, detail: String },
    #[error("setup statement {statement} failed: {message}\n  statement: {text}")]
    Setup {
        statement: usize,
        text: String,
        message: String,
    },
    #[error("cannot start the client runtime: {0}")]
    Runtime(#[from] std::io::Error),
    #[error("internal error: {0}")]
    Internal(String),
}

/// How statements travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// One simple Query message per statement.
    Simple,
    /// Parse/Bind/Execute of an unnamed statement, in one round trip.
    Extended,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
        }
    }
}

/// Unmeasured iterations each session runs before the measured ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Warmup {
    None,
    Iterations(u64),
    Seconds(f64),
}

/// A stress run.
#[derive(Debug, Clone)]
pub struct StressConfig {
    /// `postgres://user[:password]@host:port/db` or `host=... port=...`.
    pub url: String,
    pub sessions: usize,
    /// Measured iterations per session; `None` runs until the time limit.
    pub iterations: Option<u64>,
    pub warmup: Warmup,
    pub time_limit: Option<Duration>,
    /// The script's text (see [`script`]).
    pub script: String,
    /// SQL run once, on its own connection, before the sessions connect.
    pub setup: Option<String>,
    pub protocol: Protocol,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// Seed of the random parameters (session i uses seed + i); `None`: fresh.
    pub seed: Option<u64>,
}

impl StressConfig {
    pub fn new(url: &str, script: &str) -> StressConfig {
        StressConfig {
            url: url.to_string(),
            sessions: 1,
            iterations: Some(1),
            warmup: Warmup::None,
            time_limit: None,
            script: script.to_string(),
            setup: None,
            protocol: Protocol::Simple,
            progress: false,
            seed: None,
        }
    }
}

/// Runs the load and returns what it measured. Failed iterations are in the
/// report, not errors; errors are what prevents a run (bad arguments or
/// script, no connection, a failed setup).
pub fn run(cfg: &StressConfig) -> Result<StressReport, StressError> {
    if cfg.sessions == 0 {
        return Err(StressError::Config("--sessions must be at least 1".into()));
    }
    if cfg.iterations.is_none() && cfg.time_limit.is_none() {
        return Err(StressError::Config(
            "give --iterations, --time-limit, or both".into(),
        ));
    }
    if let Warmup::Seconds(s) = cfg.warmup {
        if !(s.is_finite() && s >= 0.0) {
            return Err(StressError::Config(format!("bad warm-up seconds {s}")));
        }
    }
    let script = parse_script(&cfg.script).map_err(StressError::Script)?;
    let pg = parse_url(&cfg.url)?;
    // The driver should not take cores from a server on the same machine
    // beyond what its sessions can use.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.sessions.min(cores))
        .enable_all()
        .build()?;
    rt.block_on(run_async(cfg, pg, script))
}

/// Parses the URL or key=value connection string and fills in defaults.
fn parse_url(url: &str) -> Result<tokio_postgres::Config, StressError> {
    let bad = |reason: String| StressError::BadUrl {
        url: url.to_string(),
        reason,
    };
    let mut pg: tokio_postgres::Config = url.parse().map_err(|e| bad(with_causes(&e)))?;
    if pg.get_hosts().is_empty() {
        return Err(bad("no host".into()));
    }
    if pg.get_user().is_none() {
        // As libpq does: PGUSER, else the login name.
        match ["PGUSER", "USER"]
            .iter()
            .find_map(|v| std::env::var(v).ok())
        {
            Some(u) if !u.is_empty() => {
                pg.user(u);
            }
            _ => return Err(bad("no user (give one as postgres://USER@...)".into())),
        }
    }
    if pg.get_connect_timeout().is_none() {
        pg.connect_timeout(Duration::from_secs(10));
    }
    if pg.get_application_name().is_none() {
        pg.application_name("walden stress");
    }
    Ok(pg)
}

/// `host:port/db as user`, for messages (never the password).
fn describe_target(pg: &tokio_postgres::Config) -> String {
    let host = match pg.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => String::new(),
    };
    let port = pg.get_ports().first().copied().unwrap_or(5432);
    let user = pg.get_user().unwrap_or("");
    let db = pg.get_dbname().unwrap_or(user);
    format!("{host}:{port}/{db} as {user}")
}

async fn connect(pg: &tokio_postgres::Config, target: &str) -> Result<Client, StressError> {
    let (client, conn) = pg.connect(NoTls).await.map_err(|e| StressError::Connect {
        target: target.to_string(),
        detail: with_causes(&e),
    })?;
    // The connection ends with an error when the server goes away; the
    // session sees that as a closed client.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// An error and its causes, `outer: inner: ...` (tokio-postgres puts the
/// useful part, such as "Connection refused", in the causes).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// SQLSTATE and message of a failed statement.
fn error_parts(e: &tokio_postgres::Error) -> (Option<String>, String) {
    let code = e.code().map(|c| c.code().to_string());
    let message = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => with_causes(e),
    };
    (code, message)
}

async fn run_async(
    cfg: &StressConfig,
    pg: tokio_postgres::Config,
    script: Script,
) -> Result<StressReport, StressError> {
    let target = describe_target(&pg);
    if let Some(setup) = &cfg.setup {
        run_setup(&pg, &target, setup).await?;
    }
    let mut clients = Vec::with_capacity(cfg.sessions);
    let mut connecting = tokio::task::JoinSet::new();
    for i in 0..cfg.sessions {
        let (pg, target) = (pg.clone(), target.clone());
        connecting.spawn(async move { (i, connect(&pg, &target).await) });
    }
    while let Some(r) = connecting.join_next().await {
        let (i, c) = r.map_err(|e| StressError::Internal(e.to_string()))?;
        clients.push((i, c?));
    }
    clients.sort_by_key(|(i, _)| *i);

    let shared = Arc::new(Shared {
        script,
        protocol: cfg.protocol,
        pg,
        target: target.clone(),
        iterations: cfg.iterations,
        warmup: cfg.warmup,
        time_limit: cfg.time_limit,
        barrier: tokio::sync::Barrier::new(cfg.sessions),
        started: OnceLock::new(),
        done: AtomicU64::new(0),
        failed: AtomicU64::new(0),
    });
    let progress = cfg.progress.then(|| progress_task(&shared, cfg.sessions));
    let mut sessions = tokio::task::JoinSet::new();
    for (i, client) in clients {
        let rng = match cfg.seed {
            Some(s) => StdRng::seed_from_u64(s.wrapping_add(i as u64)),
            None => StdRng::from_entropy(),
        };
        sessions.spawn(session(shared.clone(), i + 1, client, rng));
    }
    let mut outcomes = Vec::with_capacity(cfg.sessions);
    while let Some(r) = sessions.join_next().await {
        outcomes.push(r.map_err(|e| StressError::Internal(e.to_string()))?);
    }
    if let Some((bar, task)) = progress {
        task.abort();
        bar.finish_and_clear();
    }
    outcomes.sort_by_key(|o| o.session);
    assemble(cfg, &shared, target, outcomes)
}

async fn run_setup(
    pg: &tokio_postgres::Config,
    target: &str,
    setup: &str,
) -> Result<(), StressError> {
    let client = connect(pg, target).await?;
    for (i, st) in split_statements(setup).iter().enumerate() {
        if let Err(e) = client.batch_execute(st).await {
            let (code, message) = error_parts(&e);
            let message = match code {
                Some(c) => format!("{message} (SQLSTATE {c})"),
                None => message,
            };
            let mut text: String = st.chars().take(200).collect();
            if text.len() < st.len() {
                text.push_str("...");
            }
            return Err(StressError::Setup {
                statement: i + 1,
                text,
                message,
            });
        }
    }
    Ok(())
}

/// The progress bar and the task that refreshes it from the shared counters
/// (sessions only bump atomics, so the bar costs them nothing).
fn progress_task(
    shared: &Arc<Shared>,
    sessions: usize,
) -> (ProgressBar, tokio::task::JoinHandle<()>) {
    let by_iterations = shared.iterations.map(|m| m * sessions as u64);
    let (len, template) = match (by_iterations, shared.time_limit) {
        (Some(total), _) => (
            total,
            "{elapsed_precise} [{wide_bar}] {pos}/{len} iterations {msg}",
        ),
        (None, Some(t)) => (t.as_millis() as u64, "{elapsed_precise} [{wide_bar}] {msg}"),
        (None, None) => (0, "{elapsed_precise} {msg}"),
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message("warming up");
    let (b, sh) = (bar.clone(), shared.clone());
    let task = tokio::spawn(async move {
        let mut measuring = false;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let Some(start) = sh.started.get() else {
                continue;
            };
            if !measuring {
                measuring = true;
                b.reset();
            }
            let done = sh.done.load(Ordering::Relaxed);
            let failed = sh.failed.load(Ordering::Relaxed);
            let rate = done as f64 / start.elapsed().as_secs_f64().max(1e-3);
            if by_iterations.is_some() {
                b.set_message(format!("{rate:.0}/s, {failed} failed"));
                b.set_position(done);
            } else {
                b.set_message(format!("{done} iterations, {rate:.0}/s, {failed} failed"));
                b.set_position((start.elapsed().as_millis() as u64).min(len));
            }
        }
    });
    (bar, task)
}

fn assemble(
    cfg: &StressConfig,
    sh: &Shared,
    target: String,
    outcomes: Vec<Outcome>,
) -> Result<StressReport, StressError> {
    let mut latency = report::latency_histogram();
    let mut errors = ErrorGroups::default();
    let mut warmup_errors = ErrorGroups::default();
    let mut per_session = Vec::with_capacity(outcomes.len());
    let first_start = outcomes.iter().map(|o| o.start).min();
    let last_end = outcomes.iter().map(|o| o.end).max();
    let wall_s = match (first_start, last_end) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let (mut iterations, mut failed, mut warmup_iterations, mut warmup_failed) = (0, 0, 0, 0);
    let mut stopped_by_time_limit = false;
    for o in outcomes {
        latency
            .add(&o.latency_us)
            .map_err(|e| StressError::Internal(format!("merging histograms: {e:?}")))?;
        errors.merge(o.errors);
        warmup_errors.merge(o.warmup_errors);
        iterations += o.iterations;
        failed += o.failed;
        warmup_iterations += o.warmup_iterations;
        warmup_failed += o.warmup_failed;
        stopped_by_time_limit |= o.stopped_by_time_limit;
        per_session.push(SessionReport {
            session: o.session,
            iterations: o.iterations,
            failed: o.failed,
            duration_s: o.end.duration_since(o.start).as_secs_f64(),
            aborted: o.aborted,
        });
    }
    Ok(StressReport {
        target,
        protocol: cfg.protocol.name().to_string(),
        sessions: cfg.sessions,
        iterations_per_session: cfg.iterations,
        statements_per_iteration: sh.script.statements.len(),
        time_limit_s: cfg.time_limit.map(|t| t.as_secs_f64()),
        stopped_by_time_limit,
        warmup_iterations,
        warmup_failed,
        warmup_errors: warmup_errors.into_sorted(),
        wall_s,
        iterations,
        succeeded: iterations - failed,
        failed,
        throughput_per_s: crate::stats::ratio(iterations as f64, wall_s),
        latency_ms: Latency::from_micros(&latency),
        session_duration_s: MinAvgMax::of(per_session.iter().map(|s| s.duration_s)),
        per_session,
        errors: errors.into_sorted(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_before_connecting() {
        assert!(matches!(
            parse_url("postgres://u@127.0.0.1:notaport/db"),
            Err(StressError::BadUrl { .. })
        ));
        assert!(matches!(
            parse_url("postgres:///db"),
            Err(StressError::BadUrl { .. })
        ));
        let pg = parse_url("postgres://bob:secret@10.0.0.1:6543/shop").unwrap();
        assert_eq!(describe_target(&pg), "10.0.0.1:6543/shop as bob");
        let pg = parse_url("host=h user=u").unwrap();
        assert_eq!(describe_target(&pg), "h:5432/u as u");
    }

    #[test]
    fn bad_configs_fail_without_a_server() {
        let mut c = StressConfig::new("postgres://u@127.0.0.1:1/db", "SELECT 1");
        c.sessions = 0;
        assert!(matches!(run(&c), Err(StressError::Config(_))));
        c.sessions = 1;
        c.iterations = None;
        assert!(matches!(run(&c), Err(StressError::Config(_))));
        c.iterations = Some(1);
        c.script = "-- nothing".into();
        assert!(matches!(run(&c), Err(StressError::Script(_))));
    }
}
