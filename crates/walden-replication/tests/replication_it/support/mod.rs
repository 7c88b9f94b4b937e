//! What the replication crate's integration tests share: a node (an
//! instance with replication started), the two-replica group most tests
//! build, test certificates made by openssl, and a one-member etcd.
//! Each test file uses a part of it.
#![allow(dead_code)]

pub mod etcd;
pub mod pki;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use walden_engine::*;
use walden_replication::{AgDef, AvailabilityMode, ReplicaDef, Replication, ReplicationConfig};

/// A tool the test needs is missing: with WALDEN_REQUIRE_TOOLS set that
/// fails the test, else it is skipped with a line saying why.
pub fn missing_tool(why: &str) {
    let required = std::env::var("WALDEN_REQUIRE_TOOLS").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{why} (WALDEN_REQUIRE_TOOLS is set: a missing tool fails the test)"
    );
    eprintln!("skipped: {why}");
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Node {
    pub inst: Instance,
    pub repl: Replication,
    /// Set, the node stops reading what its primary sends (a stalled link).
    pub pause: Arc<AtomicBool>,
    pub dir: tempfile::TempDir,
}

/// A fresh instance named `name` with replication started (heartbeat
/// 100 ms, endpoint on a loopback port when `endpoint`), after `tune` has
/// changed its config.
pub fn node(name: &str, endpoint: bool, tune: impl FnOnce(&mut ReplicationConfig)) -> Node {
    node_in(
        tempfile::tempdir().unwrap(),
        name,
        endpoint.then(|| "127.0.0.1:0".into()),
        tune,
    )
}

/// A node on the files in `dir` (a fresh or a stopped node's), its
/// endpoint listening on `endpoint`.
pub fn node_in(
    dir: tempfile::TempDir,
    name: &str,
    endpoint: Option<String>,
    tune: impl FnOnce(&mut ReplicationConfig),
) -> Node {
    let mut cfg = InstanceConfig::new(dir.path());
    cfg.background_checkpoints = false;
    let inst = Instance::open(cfg).unwrap();
    let mut rc = ReplicationConfig::new(name);
    rc.endpoint_listen = endpoint;
    rc.heartbeat = Duration::from_millis(100);
    tune(&mut rc);
    let pause = rc.test_pause_receive.clone();
    let repl = Replication::start(inst.clone(), rc).unwrap();
    Node {
        inst,
        repl,
        pause,
        dir,
    }
}

impl Node {
    /// Stops replication and closes the instance, keeping the files and
    /// saying where the endpoint listened.
    pub fn stop(self) -> (tempfile::TempDir, String) {
        let addr = self
            .repl
            .endpoint_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        self.repl.shutdown();
        self.inst.close().unwrap();
        (self.dir, addr)
    }
}

/// `t (id bigint identity primary key, v text)` on `p`.
pub fn make_table(p: &Node) {
    let db = p.inst.database("walden").unwrap();
    db.create_table(
        &p.inst.new_session(),
        TableDef::new(
            "t",
            vec![
                ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                ColumnDef::new("v", DataType::Text),
            ],
            &["id"],
        )
        .unwrap(),
    )
    .unwrap();
}

/// One durable row into `t`.
pub fn insert(p: &Node, v: &str) -> Result<()> {
    let db = p.inst.database("walden")?;
    let s = p.inst.new_session();
    db.run(&s, CommitRequest::Durable, |tx| {
        tx.insert_named("t", &[("v", Value::text(v))])
    })
    .map(|_| ())
}

/// Group `ag1` of database `walden`: `p` as primary (its own endpoint is
/// never dialled) and `secondaries`.
pub fn group(p: &Node, secondaries: Vec<ReplicaDef>) -> AgDef {
    let mut replicas = vec![ReplicaDef::new(
        p.repl.name(),
        "tcp://127.0.0.1:1",
        AvailabilityMode::SynchronousCommit,
    )];
    replicas.extend(secondaries);
    AgDef {
        name: "ag1".into(),
        databases: vec!["walden".into()],
        replicas,
        session_timeout_ms: 2000,
        required_synchronized_secondaries_to_commit: 0,
    }
}

/// The replication endpoint of `n` as a replica URL.
pub fn url(n: &Node) -> String {
    format!("tcp://{}", n.repl.endpoint_addr().unwrap())
}

/// Rows in `t` (0 when it cannot be read).
pub fn count(inst: &Instance) -> usize {
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.run(&s, CommitRequest::Default, |tx| Ok(tx.scan_all("t")?.len()))
        .unwrap_or(0)
}

/// `replica`'s synchronization state as `n` reports it.
pub fn state_of(n: &Node, replica: &str) -> String {
    n.repl
        .replica_states()
        .into_iter()
        .find(|r| r.replica_name == replica)
        .map(|r| r.synchronization_state_desc.to_string())
        .unwrap_or_default()
}
