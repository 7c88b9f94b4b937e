//! A primary and a secondary instance in one process, over loopback TCP.

use std::time::Duration;
use walden_engine::*;
use walden_replication::{AgDef, AvailabilityMode, ReplicaDef, Replication, ReplicationConfig};

struct Node {
    inst: Instance,
    repl: Replication,
    _dir: tempfile::TempDir,
}

fn node(name: &str, endpoint: bool) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = InstanceConfig::new(dir.path());
    cfg.background_checkpoints = false;
    let inst = Instance::open(cfg).unwrap();
    let mut rc = ReplicationConfig::new(name);
    if endpoint {
        rc.endpoint_listen = Some("127.0.0.1:0".into());
    }
    rc.heartbeat = Duration::from_millis(100);
    let repl = Replication::start(inst.clone(), rc).unwrap();
    Node {
        inst,
        repl,
        _dir: dir,
    }
}

fn group(p: &Node, s: &Node, mode: AvailabilityMode, timeout_ms: u64) -> AgDef {
    AgDef {
        name: "ag1".into(),
        databases: vec!["walden".into()],
        replicas: vec![
            ReplicaDef {
                name: p.repl.name().into(),
                endpoint_url: "tcp://127.0.0.1:1".into(),
                mode: AvailabilityMode::SynchronousCommit,
            },
            ReplicaDef {
                name: s.repl.name().into(),
                endpoint_url: format!("tcp://{}", s.repl.endpoint_addr().unwrap()),
                mode,
            },
        ],
        session_timeout_ms: timeout_ms,
        required_synchronized_secondaries_to_commit: 0,
    }
}

fn count(inst: &Instance) -> usize {
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.run(&s, CommitRequest::Default, |tx| Ok(tx.scan_all("t")?.len()))
        .unwrap_or(0)
}

fn state_of(n: &Node, replica: &str) -> String {
    n.repl
        .replica_states()
        .into_iter()
        .find(|r| r.replica_name == replica)
        .map(|r| r.synchronization_state_desc.to_string())
        .unwrap_or_default()
}

fn insert(p: &Node, v: &str) -> Result<()> {
    let db = p.inst.database("walden").unwrap();
    let s = p.inst.new_session();
    db.run(&s, CommitRequest::Durable, |tx| {
        tx.insert_named("t", &[("v", Value::text(v))])
    })
    .map(|_| ())
}

#[test]
fn seeds_streams_and_waits_for_a_synchronous_secondary() {
    let p = node("a", false);
    let s = node("b", true);
    let db = p.inst.database("walden").unwrap();
    let ses = p.inst.new_session();
    db.create_table(
        &ses,
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
    insert(&p, "before the group").unwrap();
    p.repl
        .create_group(group(&p, &s, AvailabilityMode::SynchronousCommit, 2000))
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || state_of(&p, "b")
        == "SYNCHRONIZED"));
    assert_eq!(count(&s.inst), 1, "seeded image has the table and its row");
    for i in 0..50 {
        insert(&p, &format!("row {i}")).unwrap();
    }
    // Durable commits waited for the secondary's harden: its hardened LSN
    // covers the primary's.
    let row = p
        .repl
        .replica_states()
        .into_iter()
        .find(|r| r.replica_name == "b")
        .unwrap();
    assert!(row.last_hardened_lsn >= db.log().hardened_lsn());
    assert!(wait_until(Duration::from_secs(5), || count(&s.inst) == 51));
    let sdb = s.inst.database("walden").unwrap();
    assert!(sdb.is_secondary());
    let err = insert(&s, "on the secondary").unwrap_err();
    assert!(matches!(err, EngineError::ReadOnlyReplica(_)), "{err}");
    assert!(
        db.replica_counters()
            .mirrored_write_transactions
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 50
    );
    // LSNs are the same on both sides.
    assert_eq!(sdb.log().end_lsn(), db.log().end_lsn());
}
