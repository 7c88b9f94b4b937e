//! Availability groups across `walden serve` processes: a replica (data
//! directory, endpoint, the server process across restarts), its clients,
//! and the rows of `sys.dm_hadr_database_replica_states`.

#![allow(dead_code)]

use crate::server_support::Serve;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, NoTls};

/// Waits (up to `$limit`) until `$body` (which may `.await`) is `Some(v)`,
/// and gives `v`; panics with `$what` otherwise.
#[allow(unused_macros)]
macro_rules! eventually {
    ($limit:expr, $what:expr, $body:expr) => {{
        let deadline = std::time::Instant::now() + $limit;
        loop {
            if let Some(v) = $body {
                break v;
            }
            if std::time::Instant::now() > deadline {
                panic!("timed out after {:?} waiting for {}", $limit, $what);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }};
}

/// A free TCP port on 127.0.0.1 for an endpoint that must keep its port
/// across restarts. Taken below the kernel's ephemeral range (32768 and up
/// here), so no outgoing connection can take it while its server is down.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    // Spread concurrent test binaries apart by process id.
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 1000) as u16 * 12;
    for _ in 0..2000 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20_000 + (base - 20_000 + n) % 12_000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between 20000 and 32000");
}

/// One replica: `walden serve --replica-name NAME --endpoint-listen ENDPOINT`.
pub struct Node {
    pub name: String,
    pub dir: PathBuf,
    /// Where clients connect (the server listens on port 0 there).
    pub host: String,
    /// `host:port` of the replication endpoint (fixed across restarts: the
    /// group's ENDPOINT_URL names it).
    pub endpoint: String,
    /// Runs the server through this (e.g. `ip netns exec NS`).
    pub prefix: Vec<String>,
    /// More `walden serve` arguments (e.g. `--config FILE`).
    pub extra: Vec<String>,
    /// The password of `walden` (off loopback, clients log in with SCRAM).
    pub password: Option<String>,
    pub serve: Option<Serve>,
}

impl Node {
    pub fn new(name: &str, dir: PathBuf, host: &str, endpoint: String) -> Node {
        Node {
            name: name.into(),
            dir,
            host: host.into(),
            endpoint,
            prefix: Vec::new(),
            extra: Vec::new(),
            password: None,
            serve: None,
        }
    }

    /// A replica on loopback with a free endpoint port.
    pub fn local(name: &str, tmp: &std::path::Path) -> Node {
        Node::new(
            name,
            tmp.join(name),
            "127.0.0.1",
            format!("127.0.0.1:{}", free_port()),
        )
    }

    pub fn url(&self) -> String {
        format!("tcp://{}", self.endpoint)
    }

    pub fn start(&mut self) {
        assert!(self.serve.is_none(), "{} already runs", self.name);
        let prefix: Vec<&str> = self.prefix.iter().map(|s| s.as_str()).collect();
        let mut args = vec![
            "--replica-name",
            &self.name,
            "--endpoint-listen",
            &self.endpoint,
        ];
        args.extend(self.extra.iter().map(|s| s.as_str()));
        self.serve = Some(Serve::start_in(&prefix, &self.host, &self.dir, &args));
    }

    pub fn pid(&self) -> i32 {
        self.serve.as_ref().expect("running").child.id() as i32
    }

    pub fn signal(&self, sig: i32) {
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }

    /// SIGSTOP, and wait until every thread has stopped. kill() returns
    /// before that: the kernel wakes one thread to begin the group stop, and
    /// on a loaded machine the others can run (and answer the primary) for
    /// milliseconds more.
    pub fn stop(&self) {
        self.signal(libc::SIGSTOP);
        let tasks = format!("/proc/{}/task", self.pid());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let all_stopped = std::fs::read_dir(&tasks)
                .map(|d| {
                    d.flatten().all(|t| {
                        let stat =
                            std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                        // The state follows the parenthesised command name.
                        stat.rsplit_once(") ")
                            .is_some_and(|(_, rest)| rest.starts_with('T') || rest.starts_with('t'))
                    })
                })
                .unwrap_or(false);
            if all_stopped {
                return;
            }
            assert!(Instant::now() < deadline, "{} did not stop", self.name);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// SIGKILL, and wait for the exit.
    pub fn kill(&mut self) {
        let mut s = self.serve.take().expect("running");
        s.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.with_extension("server.log")).unwrap_or_default()
    }

    pub async fn client(&self) -> Client {
        let s = self.serve.as_ref().expect("running");
        let mut cs = format!("{} connect_timeout=5", s.conn_str());
        if let Some(p) = &self.password {
            cs.push_str(&format!(" password={p}"));
        }
        let (c, conn) =
            tokio::time::timeout(Duration::from_secs(10), tokio_postgres::connect(&cs, NoTls))
                .await
                .unwrap_or_else(|_| panic!("connect to {}: timed out", self.name))
                .unwrap_or_else(|e| panic!("connect to {}: {e}\n{}", self.name, self.log()));
        tokio::spawn(conn);
        c
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("---- last lines of {}'s server log ----", self.name);
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
        if let Some(s) = &self.serve {
            // A stopped server must be able to die.
            unsafe {
                libc::kill(s.child.id() as i32, libc::SIGCONT);
            }
        }
    }
}

/// `CREATE AVAILABILITY GROUP ag1` with `a` as primary and `b` as secondary.
pub fn create_group_sql(a: &Node, b: &Node, b_mode: &str, timeout_s: u32, required: u32) -> String {
    let with = if required > 0 {
        format!("WITH (REQUIRED_SYNCHRONIZED_SECONDARIES_TO_COMMIT = {required}) ")
    } else {
        String::new()
    };
    format!(
        "CREATE AVAILABILITY GROUP ag1 {with}FOR DATABASE walden \
         REPLICA ON '{}' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = {timeout_s}), \
                    '{}' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = {b_mode}, SESSION_TIMEOUT = {timeout_s})",
        a.name,
        a.url(),
        b.name,
        b.url()
    )
}

/// Runs a statement with a deadline.
pub async fn exec(c: &Client, sql: &str) -> Result<(), tokio_postgres::Error> {
    tokio::time::timeout(Duration::from_secs(30), c.batch_execute(sql))
        .await
        .unwrap_or_else(|_| panic!("{sql}: no answer in 30 s"))
}

pub async fn must(c: &Client, sql: &str) {
    exec(c, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

pub async fn int(c: &Client, sql: &str) -> i64 {
    let row = tokio::time::timeout(Duration::from_secs(30), c.query_one(sql, &[]))
        .await
        .unwrap_or_else(|_| panic!("{sql}: no answer in 30 s"))
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    row.try_get::<_, i64>(0)
        .or_else(|_| row.try_get::<_, i32>(0).map(i64::from))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The SQLSTATE of a failed statement.
pub fn sqlstate(r: Result<(), tokio_postgres::Error>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => e
            .code()
            .map(|c| c.code().to_string())
            .unwrap_or_else(|| format!("no SQLSTATE: {e}")),
    }
}

/// One row of `sys.dm_hadr_database_replica_states`.
#[derive(Clone, Debug)]
pub struct ReplicaState {
    pub replica: String,
    pub is_local: bool,
    pub is_primary: bool,
    pub state: String,
    pub connected: bool,
    pub send_queue_kb: i64,
    pub redo_queue_kb: i64,
    pub hardened: i64,
    pub redone: i64,
    pub has_commit_time: bool,
    pub lag_seconds: Option<f64>,
}

pub async fn replica_states(c: &Client) -> Vec<ReplicaState> {
    let sql = "SELECT replica_name, is_local, is_primary_replica, synchronization_state_desc, \
               is_connected, log_send_queue_size, redo_queue_size, last_hardened_lsn, \
               last_redone_lsn, last_commit_time IS NOT NULL, secondary_lag_seconds \
               FROM sys.dm_hadr_database_replica_states";
    let rows = tokio::time::timeout(Duration::from_secs(30), c.query(sql, &[]))
        .await
        .expect("DMV answers")
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    rows.iter()
        .map(|r| ReplicaState {
            replica: r.get(0),
            is_local: r.get(1),
            is_primary: r.get(2),
            state: r.get(3),
            connected: r.get(4),
            send_queue_kb: r.get(5),
            redo_queue_kb: r.get(6),
            hardened: r.get(7),
            redone: r.get(8),
            has_commit_time: r.get(9),
            lag_seconds: r.get(10),
        })
        .collect()
}

/// The row for `replica` (on a primary: its view of that secondary).
pub async fn state_of(c: &Client, replica: &str) -> Option<ReplicaState> {
    replica_states(c)
        .await
        .into_iter()
        .find(|r| r.replica.eq_ignore_ascii_case(replica))
}

/// Waits until the primary (`c`) reports `replica` in `state`.
pub async fn wait_state(c: &Client, replica: &str, state: &str, limit: Duration) -> ReplicaState {
    let t0 = Instant::now();
    let mut last = None;
    loop {
        let r = state_of(c, replica).await;
        if let Some(r) = &r {
            if r.state == state {
                return r.clone();
            }
        }
        last = r.or(last);
        if t0.elapsed() > limit {
            panic!("{replica} not {state} after {limit:?}; last seen: {last:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A `SQLServer:Database Replica` (or other) counter of database walden.
pub async fn perf_counter(c: &Client, name: &str) -> i64 {
    int(
        c,
        &format!(
            "SELECT cntr_value FROM sys.dm_os_performance_counters \
             WHERE counter_name = '{name}' AND instance_name = 'walden'"
        ),
    )
    .await
}

/// `waiting_tasks_count` of a wait type (0 when it never waited).
pub async fn wait_count(c: &Client, wait_type: &str) -> i64 {
    let rows = c
        .query(
            &format!(
                "SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = '{wait_type}'"
            ),
            &[],
        )
        .await
        .unwrap();
    rows.first().map_or(0, |r| r.get(0))
}

/// The ids in table `t`.
pub async fn ids(c: &Client) -> BTreeSet<i32> {
    try_ids(c)
        .await
        .unwrap_or_else(|e| panic!("SELECT id FROM t: {e:?}"))
}

pub async fn try_ids(c: &Client) -> Result<BTreeSet<i32>, tokio_postgres::Error> {
    let rows = tokio::time::timeout(Duration::from_secs(30), c.query("SELECT id FROM t", &[]))
        .await
        .expect("SELECT answers")?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Waits until `c` sees at least the ids of `want`.
pub async fn wait_ids(
    c: &Client,
    want: &std::collections::BTreeSet<i32>,
    limit: Duration,
    who: &str,
) {
    let t0 = Instant::now();
    loop {
        // (Before the seed arrives, the table may not exist yet.)
        let have = try_ids(c).await.unwrap_or_default();
        let missing: Vec<_> = want.difference(&have).take(10).collect();
        if missing.is_empty() {
            return;
        }
        if t0.elapsed() > limit {
            panic!(
                "{who}: {} of {} ids missing after {limit:?}, e.g. {missing:?}",
                want.difference(&have).count(),
                want.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A primary `a` and a secondary `b` of group `ag1` (database walden),
/// with table `t (id int PRIMARY KEY, v text)` holding ids 1..=50, which
/// reached `b` by seeding.
pub struct Pair {
    pub ca: Client,
    pub cb: Client,
    pub a: Node,
    pub b: Node,
}

pub const PRELOADED: i32 = 50;

pub async fn start_pair(
    mut a: Node,
    mut b: Node,
    b_mode: &str,
    timeout_s: u32,
    required: u32,
) -> Pair {
    a.start();
    b.start();
    let ca = a.client().await;
    let cb = b.client().await;
    must(&ca, "CREATE TABLE t (id int PRIMARY KEY, v text)").await;
    let values: Vec<String> = (1..=PRELOADED)
        .map(|i| format!("({i}, 'seeded')"))
        .collect();
    must(&ca, &format!("INSERT INTO t VALUES {}", values.join(", "))).await;
    must(&ca, &create_group_sql(&a, &b, b_mode, timeout_s, required)).await;
    if b_mode == "SYNCHRONOUS_COMMIT" {
        wait_state(&ca, &b.name, "SYNCHRONIZED", Duration::from_secs(20)).await;
    }
    wait_ids(
        &cb,
        &(1..=PRELOADED).collect(),
        Duration::from_secs(20),
        "b after seeding",
    )
    .await;
    Pair { ca, cb, a, b }
}

/// `INSERT INTO t VALUES (id, v)` as one autocommit (fully durable) statement.
pub async fn insert(c: &Client, id: i32) -> Result<(), tokio_postgres::Error> {
    exec(c, &format!("INSERT INTO t VALUES ({id}, 'x')")).await
}

/// Several clients insert ids (`writer * 1_000_000 + n`) through their own
/// connections until one fails; the ids whose commit was acknowledged.
pub async fn run_writers(
    node: &Node,
    writers: i32,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<i32>>> {
    let mut out = Vec::new();
    for w in 0..writers {
        let c = node.client().await;
        let stop = stop.clone();
        out.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let stmt = c.prepare("INSERT INTO t VALUES ($1, 'w')").await.unwrap();
            for n in 0.. {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let id = (w + 1) * 1_000_000 + n;
                match tokio::time::timeout(Duration::from_secs(20), c.execute(&stmt, &[&id])).await
                {
                    Ok(Ok(_)) => acked.push(id),
                    _ => break,
                }
            }
            acked
        }));
    }
    out
}

/// Writers insert on `a`, `a` dies (SIGKILL), `b` takes over with a planned
/// failover and has every acknowledged id; `a` restarts as its secondary.
pub async fn failover_after_sigkill_keeps_acknowledged_commits(p: &mut Pair) {
    let stop = Arc::new(AtomicBool::new(false));
    let writers = run_writers(&p.a, 4, stop.clone()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    p.a.kill();
    let mut acked = BTreeSet::new();
    for w in writers {
        acked.extend(
            tokio::time::timeout(Duration::from_secs(20), w)
                .await
                .expect("writers stop once the primary is gone")
                .unwrap(),
        );
    }
    stop.store(true, Ordering::Relaxed);
    assert!(
        acked.len() >= 20,
        "only {} commits acknowledged",
        acked.len()
    );
    eprintln!("{} commits acknowledged before the SIGKILL", acked.len());

    // Planned failover: b was SYNCHRONIZED when it last heard from a.
    let rows = tokio::time::timeout(
        Duration::from_secs(30),
        p.cb.query("ALTER AVAILABILITY GROUP ag1 FAILOVER", &[]),
    )
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("FAILOVER on b: {e:?}"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, String>("database_name"), "walden");
    assert_eq!(rows[0].get::<_, i64>("epoch"), 2);

    eprintln!(
        "failover: lsn {}, primary last known {}, possible loss {} bytes",
        rows[0].get::<_, i64>("failover_lsn"),
        rows[0].get::<_, i64>("primary_last_known_lsn"),
        rows[0].get::<_, i64>("possible_loss_bytes")
    );
    let have = ids(&p.cb).await;
    eprintln!("{} rows on the new primary", have.len());
    let lost: Vec<_> = acked.difference(&have).take(10).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged commits are missing on the new primary, e.g. {lost:?}",
        acked.difference(&have).count(),
        acked.len()
    );
    let before = have.len();
    for id in 900_001..=900_020 {
        insert(&p.cb, id).await.unwrap();
    }
    let s = state_of(&p.cb, "b").await.unwrap();
    assert!(s.is_primary, "{s:?}");

    // The old primary comes back, learns of the failover, and follows b.
    p.a.start();
    let ca = p.a.client().await;
    let mut want: BTreeSet<i32> = acked.clone();
    want.extend(900_001..=900_020);
    wait_ids(&ca, &want, Duration::from_secs(20), "old primary a").await;
    wait_state(&p.cb, "a", "SYNCHRONIZED", Duration::from_secs(20)).await;
    let how = if p.a.log().contains("seeded from the primary") {
        "reseeded"
    } else {
        "resumed"
    };
    eprintln!("the old primary rejoined as a secondary ({how})");
    assert_eq!(sqlstate(insert(&ca, 900_100).await), "25006");
    insert(&p.cb, 900_021).await.unwrap();
    wait_ids(&ca, &[900_021].into(), Duration::from_secs(10), "a").await;
    assert_eq!(ids(&ca).await.len(), before + 21);
    let s = state_of(&ca, "a").await.unwrap();
    assert!(!s.is_primary && s.is_local, "{s:?}");
    p.ca = ca;
}
