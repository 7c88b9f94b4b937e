//! HA through a real etcd (one member on loopback, started here), in one
//! process: a primary that cannot renew its lease stops acknowledging and
//! demotes itself before the lease can expire, and takes writes again when
//! etcd comes back; a synchronous secondary that drops leaves the published
//! sync set before any commit is acknowledged without it. Needs etcd
//! (Debian's etcd-server): with WALDEN_REQUIRE_TOOLS set a missing etcd
//! fails the test.

use crate::support;

use std::time::{Duration, Instant};
use support::etcd::Etcd;
use support::{group, insert, make_table, node, url, Node};
use walden_engine::*;
use walden_replication::ha::{self, HaConfig};
use walden_replication::{AvailabilityMode, ReplicaDef};

const TTL: Duration = Duration::from_secs(2);

fn ha_node(name: &str, endpoint: bool, e: &Etcd, cluster: &str) -> Node {
    node(name, endpoint, |rc| {
        let mut h = HaConfig::new(vec![e.endpoint()], cluster);
        h.ttl = TTL;
        rc.ha = Some(h);
    })
}

/// Primary `a` and synchronous secondary `b` of ag1, with `b` in the
/// published sync set.
fn pair(e: &Etcd, cluster: &str) -> (Node, Node) {
    let a = ha_node("a", false, e, cluster);
    let b = ha_node("b", true, e, cluster);
    make_table(&a);
    a.repl
        .create_group(group(
            &a,
            vec![ReplicaDef::new(
                "b",
                url(&b),
                AvailabilityMode::SynchronousCommit,
            )],
        ))
        .unwrap();
    let c = e.client();
    assert!(
        wait_until(Duration::from_secs(20), || sync_members(&c, cluster)
            == Some(vec!["b".to_string()])),
        "b never counted in the sync set: {:?}",
        sync_members(&c, cluster)
    );
    insert(&a, "first").unwrap();
    (a, b)
}

fn sync_members(c: &ha::Etcd, cluster: &str) -> Option<Vec<String>> {
    let v = ha::read_cluster(c, cluster).ok()?;
    v.groups
        .iter()
        .find(|g| g.name == "ag1")
        .and_then(|g| g.sync.as_ref())
        .map(|s| s.members.clone())
}

#[test]
fn a_primary_that_cannot_renew_stops_acknowledging_before_its_lease_expires() {
    let Some(e) = Etcd::start(None) else {
        return;
    };
    let (a, b) = pair(&e, "fence");
    // etcd stops answering: no renewal from now on.
    e.signal("-STOP");
    let t0 = Instant::now();
    let mut last_ok = t0;
    let mut failed = false;
    while t0.elapsed() < TTL + Duration::from_secs(2) {
        match insert(&a, "x") {
            Ok(()) => last_ok = Instant::now(),
            Err(_) => failed = true,
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(failed, "the primary went on acknowledging without etcd");
    // The lease was last renewed before t0, so it cannot expire in etcd
    // before t0 + TTL: every acknowledgement came before that.
    assert!(
        last_ok < t0 + TTL,
        "acknowledged {:?} after etcd stopped (TTL {TTL:?})",
        last_ok - t0
    );
    assert!(a.inst.database("walden").unwrap().is_secondary());
    assert!(a.repl.roles().iter().all(|(_, p)| !p));
    assert!(insert(&b, "y").is_err(), "b has no lease either");
    // etcd comes back: one of them holds the key and takes writes again,
    // without a restart (on a loaded machine the first renewals may be
    // late and the key change hands once more: wait for a steady state).
    e.signal("-CONT");
    let one_primary = || {
        let p: Vec<&Node> = [&a, &b]
            .into_iter()
            .filter(|n| n.repl.roles().iter().all(|(_, p)| *p))
            .collect();
        p.len() == 1 && insert(p[0], "z").is_ok()
    };
    assert!(
        wait_until(Duration::from_secs(30), one_primary),
        "no single primary after etcd came back: a {:?}, b {:?}",
        a.repl.roles(),
        b.repl.roles()
    );
    b.repl.shutdown();
    a.repl.shutdown();
}

#[test]
fn a_dropped_secondary_leaves_the_sync_set_before_a_commit_goes_on_without_it() {
    let Some(e) = Etcd::start(None) else {
        return;
    };
    let (a, b) = pair(&e, "syncset");
    let c = e.client();
    // b goes away: its link fails, and commits may go on without it only
    // once the sync set in etcd no longer names it (else b could be
    // elected without them).
    b.repl.shutdown();
    let t0 = Instant::now();
    insert(&a, "after").unwrap();
    let members = sync_members(&c, "syncset");
    assert_eq!(
        members,
        Some(Vec::new()),
        "a commit was acknowledged while etcd still counted b"
    );
    eprintln!(
        "commit acknowledged {:?} after the secondary went away",
        t0.elapsed()
    );
    a.repl.shutdown();
}
