//! HA mode with a bounded-lag asynchronous secondary (a real etcd, one
//! member on loopback): the primary publishes it in the sync key, and when
//! the primary is SIGKILLed with no synchronous secondary left, it is
//! elected by itself, losing at most the commits of its MAX_LAG_MS window.

use crate::ha_support;
use crate::repl_support;

use ha_support::*;
use repl_support::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MAX_MS: u64 = 500;

fn ha_node(name: &str, tmp: &std::path::Path, etcd: &EtcdServer, cluster: &str) -> Node {
    let mut n = Node::local(name, tmp);
    n.extra = vec![
        "--ha".into(),
        etcd.url(),
        "--ha-cluster".into(),
        cluster.into(),
        "--ha-ttl".into(),
        "3".into(),
    ];
    n.start();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bounded_secondary_is_elected_after_the_primary_dies() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd =
        EtcdServer::start(tmp.path()).expect("etcd (Debian's etcd-server) must be installed");
    let cluster = format!("l{}", std::process::id());
    let mut a = ha_node("a", tmp.path(), &etcd, &cluster);
    let b = ha_node("b", tmp.path(), &etcd, &cluster);
    let ca = a.client().await;
    must(&ca, "CREATE TABLE acks (w int, n int, PRIMARY KEY (w, n))").await;
    must(
        &ca,
        &format!(
            "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON \
             '{}' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 5), \
             '{}' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = ASYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 5, \
                        MAX_LAG_BYTES = 65536, MAX_LAG_MS = {MAX_MS})",
            a.name,
            a.url(),
            b.name,
            b.url()
        ),
    )
    .await;
    let etc = etcd.client();
    eventually!(Duration::from_secs(20), "b published as bounded", {
        walden_replication::ha::read_cluster(&etc, &cluster)
            .ok()
            .filter(|v| {
                v.groups
                    .iter()
                    .any(|g| g.sync.as_ref().is_some_and(|s| s.bounded == ["b"]))
            })
            .map(|_| ())
    });
    assert!(
        ha_status(&etcd, &cluster).contains("bounded-lag asynchronous secondaries counted: b"),
        "{}",
        ha_status(&etcd, &cluster)
    );

    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(Mutex::new(Vec::new()));
    let conn = multi_host(&[&a, &b], "read-write");
    let ws: Vec<_> = (1..=3)
        .map(|w| tokio::spawn(writer(w, conn.clone(), stop.clone(), acks.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    a.kill();
    eventually!(Duration::from_secs(20), "b to take over by itself", {
        (health(&b, "/primary") == 200).then_some(())
    });
    // Writers go on through b.
    eventually!(Duration::from_secs(20), "a commit on b", {
        acks.lock()
            .unwrap()
            .iter()
            .any(|x| x.2 == "b")
            .then_some(())
    });
    stop.store(true, Ordering::Relaxed);
    for w in ws {
        let _ = tokio::time::timeout(Duration::from_secs(20), w).await;
    }
    let acked: Vec<_> = acks.lock().unwrap().clone();
    let by_a: Vec<_> = acked.iter().filter(|x| x.2 == "a").collect();
    assert!(
        by_a.len() >= 20,
        "only {} commits acknowledged by a",
        by_a.len()
    );
    let cb = b.client().await;
    let have: BTreeSet<(i32, i32)> = cb
        .query("SELECT w, n FROM acks", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let last = by_a.iter().map(|x| x.3).max().unwrap();
    let missing: Vec<_> = by_a
        .iter()
        .filter(|x| !have.contains(&(x.0, x.1)))
        .collect();
    for m in &missing {
        // Client times: an acknowledgement reaches its client a little
        // after the primary made it (hence the slack).
        let age = last.saturating_duration_since(m.3);
        assert!(
            age <= Duration::from_millis(MAX_MS + 200),
            "commit {:?} is missing on b and was acknowledged {age:?} before a's last",
            (m.0, m.1)
        );
    }
    eprintln!(
        "{} commits acknowledged by a, {} missing on the elected bounded secondary b",
        by_a.len(),
        missing.len()
    );
}
