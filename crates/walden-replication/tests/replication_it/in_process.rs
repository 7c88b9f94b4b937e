//! A primary and a secondary instance in one process, over loopback TCP.

use crate::support;
use std::time::Duration;

use support::{count, insert, make_table, state_of, url, Node};
use walden_engine::*;
use walden_replication::{AgDef, AvailabilityMode, ReplicaDef};

fn node(name: &str, endpoint: bool) -> Node {
    support::node(name, endpoint, |_| {})
}

fn node_in(dir: tempfile::TempDir, name: &str, endpoint: Option<String>) -> Node {
    support::node_in(dir, name, endpoint, |_| {})
}

/// A primary "a" and a SYNCHRONIZED synchronous secondary "b" holding
/// table t with 20 rows (values `prefix0..prefix19`).
fn synchronized_pair(prefix: &str) -> (Node, Node) {
    let p = node("a", false);
    let s = node("b", true);
    make_table(&p);
    p.repl
        .create_group(group(&p, &s, AvailabilityMode::SynchronousCommit, 2000))
        .unwrap();
    wait_state(&p, "b", "SYNCHRONIZED");
    for i in 0..20 {
        insert(&p, &format!("{prefix}{i}")).unwrap();
    }
    (p, s)
}

/// Where a node's log begins (a seed starts it at the image's LSN).
fn first_lsn(n: &Node) -> walden_log::Lsn {
    n.inst.database("walden").unwrap().log().segments()[0].first_lsn
}

fn wait_state(n: &Node, replica: &str, want: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || state_of(n, replica) == want),
        "replica {replica} never became {want} (is {})",
        state_of(n, replica)
    );
}

fn group(p: &Node, s: &Node, mode: AvailabilityMode, timeout_ms: u64) -> AgDef {
    let mut g = support::group(p, vec![ReplicaDef::new(s.repl.name(), url(s), mode)]);
    g.session_timeout_ms = timeout_ms;
    g
}

#[test]
fn seeds_streams_and_waits_for_a_synchronous_secondary() {
    let p = node("a", false);
    let s = node("b", true);
    make_table(&p);
    let db = p.inst.database("walden").unwrap();
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

#[test]
fn a_secondary_that_was_down_resumes_from_its_hardened_lsn() {
    let (p, s) = synchronized_pair("a");
    let seeded_at = first_lsn(&s);
    let (sdir, addr) = s.stop();
    wait_state(&p, "b", "NOT SYNCHRONIZING");
    // Commits go on without it; a checkpoint must keep the log it needs.
    for i in 0..200 {
        insert(&p, &format!("b{i}")).unwrap();
    }
    p.inst.database("walden").unwrap().checkpoint().unwrap();
    let s = node_in(sdir, "b", Some(addr));
    wait_state(&p, "b", "SYNCHRONIZED");
    assert!(wait_until(Duration::from_secs(5), || count(&s.inst) == 220));
    // Resumed, not reseeded: its log still starts where the first seed put it.
    assert_eq!(first_lsn(&s), seeded_at);
    let db = p.inst.database("walden").unwrap();
    assert_eq!(
        s.inst.database("walden").unwrap().log().end_lsn(),
        db.log().end_lsn()
    );
}

#[test]
fn required_synchronized_secondaries_refuse_commits_without_one() {
    let p = node("a", false);
    let s = node("b", true);
    make_table(&p);
    let mut g = group(&p, &s, AvailabilityMode::SynchronousCommit, 2000);
    g.required_synchronized_secondaries_to_commit = 1;
    p.repl.create_group(g).unwrap();
    wait_state(&p, "b", "SYNCHRONIZED");
    insert(&p, "with the secondary").unwrap();
    let (sdir, addr) = s.stop();
    wait_state(&p, "b", "NOT SYNCHRONIZING");
    let err = insert(&p, "without it").unwrap_err();
    assert!(matches!(err, EngineError::ReplicaQuorum(_)), "{err}");
    assert_eq!(count(&p.inst), 1, "the refused commit left nothing behind");
    let s = node_in(sdir, "b", Some(addr));
    wait_state(&p, "b", "SYNCHRONIZED");
    insert(&p, "with it again").unwrap();
    assert!(wait_until(Duration::from_secs(5), || count(&s.inst) == 2));
}

#[test]
fn ddl_and_large_transactions_replicate() {
    let p = node("a", false);
    let s = node("b", true);
    p.repl
        .create_group(group(&p, &s, AvailabilityMode::AsynchronousCommit, 2000))
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || state_of(&p, "b")
        == "SYNCHRONIZING"));
    make_table(&p);
    let db = p.inst.database("walden").unwrap();
    let ses = p.inst.new_session();
    // Over 256 KiB: the commit is logged in several records.
    let big = "x".repeat(1000);
    db.run(&ses, CommitRequest::Durable, |tx| {
        for _ in 0..600 {
            tx.insert_named("t", &[("v", Value::text(&big))])?;
        }
        Ok(())
    })
    .unwrap();
    assert!(wait_until(Duration::from_secs(10), || count(&s.inst) == 600));
    // Asynchronous: never SYNCHRONIZED, and commits never wait for it.
    assert_eq!(state_of(&p, "b"), "SYNCHRONIZING");
    assert_eq!(
        db.replica_counters()
            .mirrored_write_transactions
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    db.drop_table(&ses, "t").unwrap();
    let sdb = s.inst.database("walden").unwrap();
    assert!(wait_until(Duration::from_secs(5), || sdb
        .table("t")
        .is_err()));
}

#[test]
fn forced_failover_reports_what_may_be_lost_and_the_old_primary_rejoins() {
    let p = node("a", true);
    let s = node("b", true);
    make_table(&p);
    let mut g = group(&p, &s, AvailabilityMode::AsynchronousCommit, 2000);
    g.replicas[0].endpoint_url = format!("tcp://{}", p.repl.endpoint_addr().unwrap());
    p.repl.create_group(g).unwrap();
    for i in 0..30 {
        insert(&p, &format!("r{i}")).unwrap();
    }
    assert!(wait_until(Duration::from_secs(5), || count(&s.inst) == 30));
    // A planned failover needs a SYNCHRONIZED synchronous replica.
    let err = s.repl.failover("ag1", false).unwrap_err();
    assert!(
        err.to_string().contains("FORCE_FAILOVER_ALLOW_DATA_LOSS"),
        "{err}"
    );
    let rows = s.repl.failover("ag1", true).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].epoch, 2);
    let sdb = s.inst.database("walden").unwrap();
    assert_eq!(rows[0].failover_lsn, sdb.log().end_lsn());
    assert!(!sdb.is_secondary());
    insert(&s, "on the new primary").unwrap();
    // The new primary reaches the old one, which steps down and follows.
    let pdb_is_secondary = || p.inst.database("walden").unwrap().is_secondary();
    assert!(wait_until(Duration::from_secs(10), pdb_is_secondary));
    assert!(wait_until(Duration::from_secs(10), || count(&p.inst) == 31));
    assert!(matches!(
        insert(&p, "old primary").unwrap_err(),
        EngineError::ReadOnlyReplica(_)
    ));
}

#[test]
fn an_old_primary_with_an_unshipped_tail_is_reseeded_and_loses_that_tail() {
    let p = node("a", true);
    let s = node("b", true);
    make_table(&p);
    let mut g = group(&p, &s, AvailabilityMode::AsynchronousCommit, 2000);
    g.replicas[0].endpoint_url = format!("tcp://{}", p.repl.endpoint_addr().unwrap());
    p.repl.create_group(g).unwrap();
    for i in 0..10 {
        insert(&p, &format!("shipped {i}")).unwrap();
    }
    assert!(wait_until(Duration::from_secs(5), || count(&s.inst) == 10));
    let (sdir, saddr) = s.stop();
    // The tail the secondary never receives.
    for i in 0..5 {
        insert(&p, &format!("tail {i}")).unwrap();
    }
    let (pdir, paddr) = p.stop();
    let s = node_in(sdir, "b", Some(saddr));
    let rows = s.repl.failover("ag1", true).unwrap();
    assert_eq!(rows[0].possible_loss_bytes, 0, "b never heard of the tail");
    insert(&s, "after failover").unwrap();
    // The old primary comes back: RESOLVING, then told of epoch 2.
    let p = node_in(pdir, "a", Some(paddr));
    assert!(wait_until(Duration::from_secs(10), || {
        p.inst.database("walden").unwrap().is_secondary() && count(&p.inst) == 11
    }));
    let db = p.inst.database("walden").unwrap();
    let s2 = p.inst.new_session();
    let vals: Vec<String> = db
        .run(&s2, CommitRequest::Default, |tx| {
            Ok(tx
                .scan_all("t")?
                .into_iter()
                .map(|(_, r)| format!("{:?}", r[1]))
                .collect())
        })
        .unwrap();
    assert!(vals.iter().all(|v| !v.contains("tail")), "{vals:?}");
    assert!(
        vals.iter().any(|v| v.contains("after failover")),
        "{vals:?}"
    );
    assert_eq!(
        db.log().end_lsn(),
        s.inst.database("walden").unwrap().log().end_lsn()
    );
}

#[test]
fn reseed_gives_a_secondary_a_fresh_image_and_the_log_after_it() {
    let (p, s) = synchronized_pair("r");
    let before = first_lsn(&s);
    assert!(p.repl.reseed("ag1", "nobody").is_err());
    p.repl.reseed("ag1", "b").unwrap();
    // The new seed starts the secondary's log where the image was taken.
    assert!(wait_until(Duration::from_secs(10), || first_lsn(&s) > before));
    wait_state(&p, "b", "SYNCHRONIZED");
    insert(&p, "after the reseed").unwrap();
    assert!(wait_until(Duration::from_secs(5), || count(&s.inst) == 21));
    assert!(p.repl.replica_states().iter().all(|r| !r.needs_reseed));
}

#[test]
fn a_seed_in_many_chunks_arrives_whole_and_one_cut_off_midway_keeps_the_old_copy() {
    let cuts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cuts2 = cuts.clone();
    let p = support::node("a", false, move |rc| {
        rc.seed_chunk_bytes = 512;
        rc.test_seed_cuts = cuts2;
        rc.test_seed_cut_after = 3;
    });
    let s = node("b", true);
    make_table(&p);
    for i in 0..300 {
        insert(&p, &format!("before the group {i}")).unwrap();
    }
    // The first seed goes in chunks of 512 bytes (the image is some 10 KB).
    p.repl
        .create_group(group(&p, &s, AvailabilityMode::SynchronousCommit, 2000))
        .unwrap();
    wait_state(&p, "b", "SYNCHRONIZED");
    assert_eq!(count(&s.inst), 300);
    let before = first_lsn(&s);
    for i in 0..200 {
        insert(&p, &format!("after the seed {i}")).unwrap();
    }
    assert!(wait_until(Duration::from_secs(10), || count(&s.inst) == 500));
    // The next seed is cut off after 3 chunks: the old copy stays readable
    // and the link seeds again.
    cuts.store(1, std::sync::atomic::Ordering::SeqCst);
    p.repl.reseed("ag1", "b").unwrap();
    assert!(wait_until(Duration::from_secs(10), || cuts
        .load(std::sync::atomic::Ordering::SeqCst)
        == 0));
    assert_eq!(count(&s.inst), 500, "the old copy, readable");
    assert!(wait_until(Duration::from_secs(10), || first_lsn(&s) > before));
    wait_state(&p, "b", "SYNCHRONIZED");
    insert(&p, "after the reseed").unwrap();
    assert!(wait_until(Duration::from_secs(5), || count(&s.inst) == 501));
    assert!(p.repl.replica_states().iter().all(|r| !r.needs_reseed));
    let left: Vec<String> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".seeding") || n.ends_with(".old"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
