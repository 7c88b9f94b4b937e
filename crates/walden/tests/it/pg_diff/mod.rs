//! The PostgreSQL differential harness: a scratch PostgreSQL 15 beside a
//! Walden server, the same SQL sent to both through tokio-postgres, and each
//! statement's outcome rendered as a string so the two can be compared.
//!
//! A test file uses it with `mod server_support; mod pg_diff;` (this module
//! starts Walden through `server_support`). Concurrent schedules (sessions
//! stepping in turn, with blocking observed) are in [`schedule`].

#![allow(dead_code)]

pub mod schedule;

use crate::server_support::{missing_tool, Serve};
use std::future::Future;
use std::path::Path;
use std::time::Duration;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};
use walden_bench::workbench::pg_peer::ScratchPostgres;

/// The runtime the tests drive their clients on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `f` on a fresh [`runtime`], failing the test if it takes longer
/// than `limit`.
pub fn block_on_within<F: Future>(limit: Duration, f: F) -> F::Output {
    runtime().block_on(async {
        tokio::time::timeout(limit, f)
            .await
            .unwrap_or_else(|_| panic!("timed out after {limit:?}"))
    })
}

/// Checks what a test wrote twice over: after a SIGKILL and a restart (it
/// comes back from the log), then after a CHECKPOINT, a SIGTERM and a
/// restart (from the checkpointed image).
pub fn check_after_kill_then_checkpoint<F, Fut>(mut walden: Serve, dir: &Path, check: F)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = ()>,
{
    walden.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let mut walden = Serve::start(dir, &[]);
    block_on_within(Duration::from_secs(60), check(walden.conn_str()));
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        c.simple_query("CHECKPOINT").await.unwrap();
    });
    walden.signal_and_wait(libc::SIGTERM, Duration::from_secs(20));
    let walden = Serve::start(dir, &[]);
    block_on_within(Duration::from_secs(60), check(walden.conn_str()));
}

/// A connected client; its connection task runs on the current runtime.
pub async fn connect(conn: &str) -> Client {
    let (client, c) = tokio_postgres::connect(conn, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect {conn}: {e}"));
    tokio::spawn(async move {
        let _ = c.await;
    });
    client
}

/// Starts a scratch PostgreSQL 15 in `tmp`. If it cannot start, the tool is
/// missing: with `WALDEN_REQUIRE_TOOLS` set that fails the test, otherwise
/// the test is skipped (`None`). `what` says what PostgreSQL is needed for.
pub fn start_postgres(tmp: &Path, what: &str) -> Option<ScratchPostgres> {
    match ScratchPostgres::start(tmp) {
        Ok(pg) => Some(pg),
        Err(e) => {
            missing_tool(&format!("PostgreSQL 15 is needed {what}: {e}"));
            None
        }
    }
}

/// The connection string for the scratch cluster's `postgres` database.
pub fn postgres_conn(pg: &ScratchPostgres) -> String {
    format!(
        "host=127.0.0.1 port={} user={} dbname=postgres",
        pg.port(),
        ScratchPostgres::USER
    )
}

/// PostgreSQL and Walden side by side, both with empty databases.
pub struct Peers {
    pub pg: ScratchPostgres,
    pub walden: Serve,
}

impl Peers {
    /// Starts both in `tmp` (Walden in `tmp/walden`); `None` when PostgreSQL
    /// is missing and tools are not required (see [`start_postgres`]).
    pub fn start(tmp: &Path, what: &str) -> Option<Peers> {
        let pg = start_postgres(tmp, what)?;
        let walden = Serve::start(&tmp.join("walden"), &[]);
        Some(Peers { pg, walden })
    }

    pub fn pg_conn(&self) -> String {
        postgres_conn(&self.pg)
    }

    pub fn walden_conn(&self) -> String {
        self.walden.conn_str()
    }
}

/// An error field rendered after the SQLSTATE and message, in the order the
/// caller lists them.
#[derive(Clone, Copy, Debug)]
pub enum Field {
    Detail,
    Hint,
    Table,
    Constraint,
    Schema,
}

/// Rows as `a|b` and command tags as `ok TAG`, joined with `; `.
pub fn render_messages(msgs: &[SimpleQueryMessage]) -> String {
    msgs.iter()
        .map(|m| match m {
            SimpleQueryMessage::Row(r) => (0..r.len())
                .map(|i| r.get(i).unwrap_or("NULL").to_string())
                .collect::<Vec<_>>()
                .join("|"),
            SimpleQueryMessage::CommandComplete(n) => format!("ok {n}"),
            _ => String::new(),
        })
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// `ERROR <SQLSTATE> <message>` then `name=value` for each of `fields`; an
/// error without a server error (a lost connection) as its text.
pub fn render_error(e: &tokio_postgres::Error, fields: &[Field]) -> String {
    let Some(d) = e.as_db_error() else {
        return format!("ERROR {e}");
    };
    let mut s = format!("ERROR {} {}", d.code().code(), d.message());
    for f in fields {
        let (name, value) = match f {
            Field::Detail => ("detail", d.detail()),
            Field::Hint => ("hint", d.hint()),
            Field::Table => ("table", d.table()),
            Field::Constraint => ("constraint", d.constraint()),
            Field::Schema => ("schema", d.schema()),
        };
        s.push_str(&format!(" {name}={value:?}"));
    }
    s
}

/// What a statement did over the simple protocol: its rows and tags, or its
/// error with `fields`.
pub async fn outcome(c: &Client, sql: &str, fields: &[Field]) -> String {
    match c.simple_query(sql).await {
        Ok(msgs) => render_messages(&msgs),
        Err(e) => render_error(&e, fields),
    }
}

/// Runs `script` on `c`, one line per statement: the SQL, then its rows
/// and tags, or only its error's SQLSTATE (the wording may differ).
pub async fn sqlstate_outcomes<S: AsRef<str>>(c: &Client, script: &[S]) -> Vec<String> {
    let mut out = Vec::new();
    for sql in script {
        let sql = sql.as_ref();
        let r = match c.simple_query(sql).await {
            Ok(msgs) => render_messages(&msgs),
            Err(e) => match e.as_db_error() {
                Some(d) => format!("ERROR {}", d.code().code()),
                None => format!("ERROR {e}"),
            },
        };
        out.push(format!("{sql}\n  -> {r}"));
    }
    out
}

/// Runs `script` in one session, one line per statement: the SQL, then its
/// [`outcome`].
pub async fn run_script(conn: &str, script: &[&str], fields: &[Field]) -> Vec<String> {
    let c = connect(conn).await;
    let mut out = Vec::new();
    for sql in script {
        out.push(format!("{sql}\n  -> {}", outcome(&c, sql, fields).await));
    }
    out
}

/// Runs `script` in one session on a scratch PostgreSQL 15 and on Walden
/// and fails the test where their outcomes differ (errors with `fields`);
/// skipped when PostgreSQL is missing (see [`start_postgres`]; `what` says
/// what it is needed for).
pub fn compare_script(what: &str, script: &[&str], fields: &[Field]) {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), what) else {
        return;
    };
    let (want, got) = block_on_within(Duration::from_secs(120), async {
        (
            run_script(&peers.pg_conn(), script, fields).await,
            run_script(&peers.walden_conn(), script, fields).await,
        )
    });
    assert_same(&want, &got);
}

/// The lines where PostgreSQL (`want`) and Walden (`got`) differ, each
/// showing both; the two must be equally long.
pub fn differences(want: &[String], got: &[String]) -> Vec<String> {
    assert_eq!(
        want.len(),
        got.len(),
        "PostgreSQL and Walden ran different numbers of steps"
    );
    want.iter()
        .zip(got)
        .filter(|(w, g)| w != g)
        .map(|(w, g)| format!("postgres: {w}\nwalden:   {g}"))
        .collect()
}

/// Fails the test with every difference if `got` is not `want`.
pub fn assert_same(want: &[String], got: &[String]) {
    let d = differences(want, got);
    assert!(d.is_empty(), "{}", d.join("\n\n"));
}
