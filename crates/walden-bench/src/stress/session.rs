//! One session of a stress run: warm-up, the barrier, the measured loop,
//! and what it takes to go on after a failed iteration.

use super::report::{self, ErrorGroups};
use super::script::{Bindings, Script};
use super::{connect, error_parts, Protocol, Warmup};
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// What the sessions share.
pub(super) struct Shared {
    pub(super) script: Script,
    pub(super) protocol: Protocol,
    pub(super) pg: tokio_postgres::Config,
    pub(super) target: String,
    pub(super) iterations: Option<u64>,
    pub(super) warmup: Warmup,
    pub(super) time_limit: Option<Duration>,
    /// Lines the sessions up between warm-up and the measured phase.
    pub(super) barrier: tokio::sync::Barrier,
    /// When the measured phase began (set by the barrier's leader).
    pub(super) started: OnceLock<Instant>,
    /// Measured iterations done and failed so far, for the progress bar.
    pub(super) done: AtomicU64,
    pub(super) failed: AtomicU64,
}

/// One failed iteration.
struct Failure {
    /// 1-based statement of the script.
    statement: usize,
    sqlstate: Option<String>,
    message: String,
}

/// A session's per-iteration state.
struct Iter {
    session: usize,
    /// Iterations begun, warm-up included: `:n`.
    n: u64,
    rng: StdRng,
    vars: Vec<String>,
    sql: String,
}

async fn run_iteration(sh: &Shared, client: &Client, it: &mut Iter) -> Result<(), Failure> {
    it.n += 1;
    sh.script.draw_vars(&mut it.rng, &mut it.vars);
    for (i, st) in sh.script.statements.iter().enumerate() {
        it.sql.clear();
        let b = Bindings {
            n: it.n,
            session: it.session,
            vars: &it.vars,
        };
        st.render(&b, &mut it.rng, &mut it.sql);
        let r = match sh.protocol {
            Protocol::Simple => client.batch_execute(&it.sql).await,
            Protocol::Extended => client.query_typed(&it.sql, &[]).await.map(drop),
        };
        if let Err(e) = r {
            let (sqlstate, message) = error_parts(&e);
            return Err(Failure {
                statement: i + 1,
                sqlstate,
                message,
            });
        }
    }
    Ok(())
}

/// Makes the session usable after a failed iteration: reconnects a lost
/// connection, rolls back a transaction the script may have left open.
/// `Err` (with the reason) when the session cannot go on.
async fn recover(sh: &Shared, client: &mut Client, f: &Failure) -> Result<(), String> {
    if client.is_closed() {
        return match connect(&sh.pg, &sh.target).await {
            Ok(c) => {
                *client = c;
                Ok(())
            }
            Err(e) => Err(format!("connection lost ({}); {e}", f.message)),
        };
    }
    let may_be_open = sh.script.statements[..f.statement]
        .iter()
        .any(|s| s.opens_transaction);
    if may_be_open {
        // Its own failure (say, no transaction after all) changes nothing.
        let _ = client.batch_execute("ROLLBACK").await;
    }
    Ok(())
}

pub(super) struct Outcome {
    pub(super) session: usize,
    pub(super) iterations: u64,
    pub(super) failed: u64,
    pub(super) warmup_iterations: u64,
    pub(super) warmup_failed: u64,
    pub(super) start: Instant,
    pub(super) end: Instant,
    pub(super) stopped_by_time_limit: bool,
    pub(super) aborted: Option<String>,
    pub(super) latency_us: Histogram<u64>,
    pub(super) errors: ErrorGroups,
    pub(super) warmup_errors: ErrorGroups,
}

pub(super) async fn session(
    sh: Arc<Shared>,
    session: usize,
    mut client: Client,
    rng: StdRng,
) -> Outcome {
    let mut it = Iter {
        session,
        n: 0,
        rng,
        vars: Vec::new(),
        sql: String::new(),
    };
    let mut aborted = None;
    let (mut warmup_iterations, mut warmup_failed) = (0, 0);
    let mut warmup_errors = ErrorGroups::default();
    let warmup_end = match sh.warmup {
        Warmup::Seconds(s) => Some(Instant::now() + Duration::from_secs_f64(s)),
        _ => None,
    };
    while aborted.is_none() {
        let more = match sh.warmup {
            Warmup::None => false,
            Warmup::Iterations(k) => warmup_iterations < k,
            Warmup::Seconds(_) => warmup_end.is_some_and(|e| Instant::now() < e),
        };
        if !more {
            break;
        }
        warmup_iterations += 1;
        if let Err(f) = run_iteration(&sh, &client, &mut it).await {
            warmup_failed += 1;
            warmup_errors.add(f.statement, f.sqlstate.as_deref(), &f.message);
            aborted = recover(&sh, &mut client, &f).await.err();
        }
    }
    // Every session passes the barrier exactly once, even one that lost its
    // connection, or the others would wait for ever.
    if sh.barrier.wait().await.is_leader() {
        let _ = sh.started.set(Instant::now());
    }
    let start = Instant::now();
    let deadline = sh.time_limit.map(|t| start + t);
    let mut latency_us = report::latency_histogram();
    let mut errors = ErrorGroups::default();
    let (mut iterations, mut failed) = (0, 0);
    let mut stopped_by_time_limit = false;
    while aborted.is_none() {
        if sh.iterations.is_some_and(|m| iterations >= m) {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            stopped_by_time_limit = true;
            break;
        }
        let t0 = Instant::now();
        let r = match deadline {
            Some(d) => {
                match tokio::time::timeout_at(d.into(), run_iteration(&sh, &client, &mut it)).await
                {
                    Ok(r) => r,
                    // Cut off mid-iteration: not counted; the connection is
                    // dropped with the session, which rolls back on the server.
                    Err(_) => {
                        stopped_by_time_limit = true;
                        break;
                    }
                }
            }
            None => run_iteration(&sh, &client, &mut it).await,
        };
        let micros = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
        iterations += 1;
        match r {
            Ok(()) => report::record_latency(&mut latency_us, micros),
            Err(f) => {
                failed += 1;
                sh.failed.fetch_add(1, Ordering::Relaxed);
                errors.add(f.statement, f.sqlstate.as_deref(), &f.message);
                aborted = recover(&sh, &mut client, &f).await.err();
            }
        }
        sh.done.fetch_add(1, Ordering::Relaxed);
    }
    Outcome {
        session,
        iterations,
        failed,
        warmup_iterations,
        warmup_failed,
        start,
        end: Instant::now(),
        stopped_by_time_limit,
        aborted,
        latency_us,
        errors,
        warmup_errors,
    }
}
