//! Concurrent schedules: sessions take turns running statements; a statement
//! that does not finish promptly is recorded as blocked, and its outcome
//! when it does finish. Run on PostgreSQL and on Walden, the two logs must
//! be equal.

use super::connect;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_postgres::SimpleQueryMessage;

/// What one step returned.
pub type StepResult = Result<Vec<SimpleQueryMessage>, tokio_postgres::Error>;

/// How long a step may take before it counts as blocked.
pub const BLOCKED_AFTER: Duration = Duration::from_millis(400);

/// How long after a step the others get to finish what it released.
const SETTLE: Duration = Duration::from_millis(150);

/// How long a blocked step may take to finish once its session moves on.
const FINISH_WITHIN: Duration = Duration::from_secs(10);

/// A step's result, terse: `ERROR <SQLSTATE>` (messages name backends and
/// transactions, which differ), `rows a,b c,d` for a statement that returned
/// rows, `ok TAG` otherwise; statements joined with `; `.
pub fn summary(r: &StepResult) -> String {
    match r {
        Err(e) => format!(
            "ERROR {}",
            e.code()
                .map(|c| c.code().to_string())
                .unwrap_or_else(|| e.to_string())
        ),
        Ok(msgs) => {
            let mut parts = Vec::new();
            let mut rows = Vec::new();
            for m in msgs {
                match m {
                    SimpleQueryMessage::Row(r) => rows.push(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL").to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    SimpleQueryMessage::CommandComplete(n) => {
                        if rows.is_empty() {
                            parts.push(format!("ok {n}"));
                        } else {
                            parts.push(format!("rows {}", rows.join(" ")));
                            rows.clear();
                        }
                    }
                    _ => {}
                }
            }
            parts.join("; ")
        }
    }
}

/// One schedule as run against one server.
pub struct Run<'a> {
    /// Run first by an admin session (drop what earlier schedules made, then
    /// create this one's tables).
    pub setup: &'a str,
    /// Run by every session right after it connects (may be empty).
    pub init: &'a str,
    pub sessions: usize,
    /// (session, SQL) in order.
    pub steps: &'a [(usize, &'a str)],
    /// Run by the admin session after all steps; their results end the log.
    pub checks: &'a [&'a str],
}

/// Runs the schedule on `conn` and returns what each step did. A step still
/// running after [`BLOCKED_AFTER`] is logged as blocked; its session's next
/// step (or the end) waits for it, and its outcome is logged when it
/// finishes.
pub async fn run(conn: &str, r: &Run<'_>) -> Vec<String> {
    let admin = connect(conn).await;
    admin
        .batch_execute(r.setup)
        .await
        .unwrap_or_else(|e| panic!("setup: {e}"));
    // Walden honours a session's synchronous_commit = off only where the
    // database allows delayed commits (SQL Server's rule).
    if is_walden(&admin).await {
        admin
            .batch_execute("ALTER DATABASE walden SET DELAYED_DURABILITY = ALLOWED")
            .await
            .unwrap_or_else(|e| panic!("delayed durability: {e}"));
    }
    let mut conns = Vec::new();
    for _ in 0..r.sessions {
        let c = connect(conn).await;
        // Schedules are about who waits for whom, not the disk: a commit that
        // waits for a slow fsync would read as "blocked" (or finish after the
        // settle), so on both servers commits are acknowledged from the log
        // buffer.
        c.batch_execute("SET synchronous_commit = off")
            .await
            .unwrap_or_else(|e| panic!("synchronous_commit: {e}"));
        if !r.init.is_empty() {
            c.batch_execute(r.init).await.unwrap();
        }
        conns.push(Arc::new(c));
    }
    let mut pending: Vec<Option<(String, JoinHandle<StepResult>)>> =
        (0..r.sessions).map(|_| None).collect();
    let mut log = Vec::new();
    for &(s, sql) in r.steps {
        // A session's statements run in order: a blocked one finishes first.
        if let Some((what, h)) = pending[s].take() {
            let res = tokio::time::timeout(FINISH_WITHIN, h)
                .await
                .unwrap_or_else(|_| panic!("T{s}: {what} never finished"))
                .unwrap();
            log.push(format!("T{s} {what} -> {}", summary(&res)));
        }
        let c = conns[s].clone();
        let q = sql.to_string();
        let mut h = tokio::spawn(async move { c.simple_query(&q).await });
        match tokio::time::timeout(BLOCKED_AFTER, &mut h).await {
            Ok(res) => log.push(format!("T{s} {sql} -> {}", summary(&res.unwrap()))),
            Err(_) => {
                log.push(format!("T{s} {sql} -> blocked"));
                pending[s] = Some((sql.to_string(), h));
                continue;
            }
        }
        // What this step let finish. With no step waiting, nothing can
        // finish, so the settle (most of a schedule's time) is skipped.
        if pending.iter().all(Option::is_none) {
            continue;
        }
        tokio::time::sleep(SETTLE).await;
        for (o, p) in pending.iter_mut().enumerate() {
            if p.as_ref().is_some_and(|(_, h)| h.is_finished()) {
                let (what, h) = p.take().unwrap();
                log.push(format!("T{o} {what} -> {}", summary(&h.await.unwrap())));
            }
        }
    }
    for (o, p) in pending.iter_mut().enumerate() {
        if let Some((what, h)) = p.take() {
            let res = tokio::time::timeout(FINISH_WITHIN, h)
                .await
                .unwrap_or_else(|_| panic!("T{o}: {what} never finished"))
                .unwrap();
            log.push(format!("T{o} {what} -> {}", summary(&res)));
        }
    }
    for q in r.checks {
        let end = admin.simple_query(q).await;
        log.push(format!("end {q} -> {}", summary(&end)));
    }
    log
}

/// Runs a schedule on PostgreSQL and on Walden at the same time (the
/// servers share nothing, and each schedule's waits are its own): what each
/// step did on each.
pub async fn run_both(
    pg_conn: &str,
    pg_run: &Run<'_>,
    walden_conn: &str,
    walden_run: &Run<'_>,
) -> (Vec<String>, Vec<String>) {
    tokio::join!(run(pg_conn, pg_run), run(walden_conn, walden_run))
}

/// Whether the server is Walden (its version() says so).
async fn is_walden(c: &tokio_postgres::Client) -> bool {
    let v = c.query_one("SELECT version()", &[]).await.unwrap();
    v.get::<_, String>(0).contains("Walden")
}

/// `None` if the logs are equal (said on stderr), else a description of the
/// mismatch naming the schedule.
pub fn mismatch(name: &str, want: &[String], got: &[String]) -> Option<String> {
    if want == got {
        eprintln!("{name}: same as PostgreSQL ({} steps)", want.len());
        None
    } else {
        Some(format!(
            "{name}:\n  postgres: {want:#?}\n  walden:   {got:#?}"
        ))
    }
}

/// Runs a schedule (`run(init)` builds it) on PostgreSQL and on Walden and
/// returns the mismatch, if any. PostgreSQL looks for deadlocks only after
/// `deadlock_timeout`, Walden at once: PostgreSQL's sessions set it to 50 ms
/// so a deadlock schedule ends alike on both.
pub async fn against_postgres<'a>(
    name: &str,
    pg_conn: &str,
    walden_conn: &str,
    run_of: impl Fn(&'a str) -> Run<'a>,
) -> Option<String> {
    let (pg_run, walden_run) = (run_of("SET deadlock_timeout = '50ms'"), run_of(""));
    let (want, got) = run_both(pg_conn, &pg_run, walden_conn, &walden_run).await;
    mismatch(name, &want, &got)
}
