//! An operator's failovers in HA mode go through etcd's leader key (a real
//! etcd, one member on loopback, started here; Debian's etcd-server):
//! `ALTER AVAILABILITY GROUP ... FAILOVER` on a counted synchronous
//! secondary makes the primary stop acknowledging and hand the key over,
//! with every acknowledged commit kept and the old primary following as a
//! secondary without a restart; `FORCE_FAILOVER_ALLOW_DATA_LOSS` is refused
//! while a primary holds the key and takes it once the key has lapsed, for
//! an asynchronous secondary that the automatic election never picks.

use crate::ha_support;
use crate::repl_support;

use ha_support::*;
use repl_support::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

fn replica_clause(n: &Node, mode: &str) -> String {
    format!(
        "'{}' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = {mode}, SESSION_TIMEOUT = 5)",
        n.name,
        n.url()
    )
}

fn metric(n: &Node, name: &str) -> f64 {
    let s = n.serve.as_ref().unwrap();
    let (_, body) = http_get("127.0.0.1", s.metrics_port.unwrap(), "/metrics");
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

async fn fails_with(c: &tokio_postgres::Client, sql: &str, needle: &str) {
    let r = tokio::time::timeout(Duration::from_secs(40), c.query(sql, &[]))
        .await
        .unwrap_or_else(|_| panic!("{sql}: no answer in 40 s"));
    let e = r.err().unwrap_or_else(|| panic!("{sql} succeeded"));
    let msg = e
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| e.to_string());
    assert!(msg.contains(needle), "{sql}: {msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failover_on_a_counted_secondary_goes_through_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(etcd) = EtcdServer::start(tmp.path()) else {
        return;
    };
    let cluster = format!("s{}", std::process::id());
    let a = ha_node("a", tmp.path(), &etcd, &cluster);
    let b = ha_node("b", tmp.path(), &etcd, &cluster);
    let c = ha_node("c", tmp.path(), &etcd, &cluster);
    let ca = a.client().await;
    must(&ca, "CREATE TABLE acks (w int, n int, PRIMARY KEY (w, n))").await;
    must(
        &ca,
        &format!(
            "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON {}, {}, {}",
            replica_clause(&a, "SYNCHRONOUS_COMMIT"),
            replica_clause(&b, "SYNCHRONOUS_COMMIT"),
            replica_clause(&c, "ASYNCHRONOUS_COMMIT")
        ),
    )
    .await;
    let etc = etcd.client();
    eventually!(Duration::from_secs(20), "a primary with b counted", {
        let v = walden_replication::ha::read_cluster(&etc, &cluster).unwrap();
        let ok = v.groups.iter().any(|g| {
            g.leader.as_ref().is_some_and(|l| l.name == "a")
                && g.sync.as_ref().is_some_and(|s| s.members == ["b"])
        }) && health(&c, "/replica") == 200;
        ok.then_some(())
    });

    // The asynchronous secondary may lack acknowledged commits: refused.
    let cc = c.client().await;
    fails_with(&cc, "ALTER AVAILABILITY GROUP ag1 FAILOVER", "SYNCHRONIZED").await;

    let conn = multi_host(&[&a, &b, &c], "read-write");
    let stop = Arc::new(AtomicBool::new(false));
    let acks: Arc<Mutex<Vec<Ack>>> = Default::default();
    let mut tasks = Vec::new();
    for w in 0..3 {
        tasks.push(tokio::spawn(writer(
            w,
            conn.clone(),
            stop.clone(),
            acks.clone(),
        )));
    }
    eventually!(Duration::from_secs(20), "writes on a", {
        (acks.lock().unwrap().len() > 50).then_some(())
    });

    let cb = b.client().await;
    let asked = Instant::now();
    let rows = tokio::time::timeout(
        Duration::from_secs(40),
        cb.query("ALTER AVAILABILITY GROUP ag1 FAILOVER", &[]),
    )
    .await
    .expect("FAILOVER answers")
    .unwrap_or_else(|e| panic!("FAILOVER on b: {e:?}"));
    let took = asked.elapsed();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i64>("epoch"), 2);
    assert_eq!(health(&b, "/primary"), 200);
    let first_b = eventually!(Duration::from_secs(20), "a write acknowledged by b", {
        acks.lock()
            .unwrap()
            .iter()
            .find(|x| x.2 == "b")
            .map(|x| x.3)
    });
    // The old primary follows b without a restart.
    eventually!(Duration::from_secs(20), "a as a replica of b", {
        (health(&a, "/replica") == 200).then_some(())
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let acks = acks.lock().unwrap().clone();
    assert!(
        acks.iter().all(|x| x.2 == "a" || x.2 == "b"),
        "only a and b acknowledged"
    );
    let last_a = acks
        .iter()
        .filter(|x| x.2 == "a")
        .map(|x| x.3)
        .max()
        .unwrap();
    assert!(last_a < first_b, "a acknowledged after b began to");
    let rows = cb.query("SELECT w, n FROM acks", &[]).await.unwrap();
    let have: BTreeSet<(i32, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let missing: Vec<_> = acks
        .iter()
        .filter(|x| !have.contains(&(x.0, x.1)))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged, missing on b: {missing:?}"
    );
    let ca = a.client().await;
    eventually!(Duration::from_secs(30), "a caught up with b", {
        let n = int(&ca, "SELECT count(*) FROM acks").await;
        (n == have.len() as i64).then_some(())
    });
    assert_eq!(metric(&a, "walden_ha_switchovers_total"), 1.0);
    let text = ha_status(&etcd, &cluster);
    assert!(text.contains("group ag1: primary b (epoch 2)"), "{text}");

    // And back to a with `walden ha switchover`, once b counts it.
    eventually!(Duration::from_secs(20), "a counted by b", {
        let v = walden_replication::ha::read_cluster(&etc, &cluster).unwrap();
        v.groups
            .iter()
            .any(|g| {
                g.sync
                    .as_ref()
                    .is_some_and(|s| s.leader == "b" && s.members.iter().any(|m| m == "a"))
            })
            .then_some(())
    });
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_walden"))
        .args(["ha", "switchover", "--ha", &etcd.url(), "--ha-cluster"])
        .args([&cluster, "--group", "ag1", "--to", "a"])
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "walden ha switchover: {said}");
    assert!(said.contains("primary a (epoch 3), was b"), "{said}");
    eventually!(Duration::from_secs(20), "b as a replica of a", {
        (health(&a, "/primary") == 200 && health(&b, "/replica") == 200).then_some(())
    });
    let ca = a.client().await;
    must(&ca, "INSERT INTO acks VALUES (99, 1)").await;
    let text = ha_status(&etcd, &cluster);
    assert!(text.contains("group ag1: primary a (epoch 3)"), "{text}");
    eprintln!(
        "switchover: FAILOVER answered in {} ms; {} commits acknowledged ({} by a, {} by b)",
        took.as_millis(),
        acks.len(),
        acks.iter().filter(|x| x.2 == "a").count(),
        acks.iter().filter(|x| x.2 == "b").count()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forced_failover_takes_only_a_lapsed_key() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(etcd) = EtcdServer::start(tmp.path()) else {
        return;
    };
    let cluster = format!("f{}", std::process::id());
    let mut a = ha_node("a", tmp.path(), &etcd, &cluster);
    let b = ha_node("b", tmp.path(), &etcd, &cluster);
    let ca = a.client().await;
    must(&ca, "CREATE TABLE t (id int PRIMARY KEY)").await;
    must(
        &ca,
        &format!(
            "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON {}, {}",
            replica_clause(&a, "SYNCHRONOUS_COMMIT"),
            replica_clause(&b, "ASYNCHRONOUS_COMMIT")
        ),
    )
    .await;
    eventually!(Duration::from_secs(20), "a primary, b replica", {
        (health(&a, "/primary") == 200 && health(&b, "/replica") == 200).then_some(())
    });
    must(&ca, "INSERT INTO t SELECT generate_series(1, 100)").await;
    let cb = b.client().await;
    eventually!(Duration::from_secs(20), "the rows on b", {
        let n = cb.query_one("SELECT count(*) FROM t", &[]).await;
        n.is_ok_and(|r| r.get::<_, i64>(0) == 100).then_some(())
    });

    // a holds the key: a forced failover could make two primaries.
    fails_with(
        &cb,
        "ALTER AVAILABILITY GROUP ag1 FORCE_FAILOVER_ALLOW_DATA_LOSS",
        "holds the leader key",
    )
    .await;
    assert_eq!(health(&a, "/primary"), 200);
    assert_eq!(health(&b, "/replica"), 200);

    // a dies: nobody takes over by itself (b is asynchronous).
    a.kill();
    tokio::time::sleep(Duration::from_secs(3 + 3)).await;
    assert_eq!(health(&b, "/primary"), 503, "b took over by itself");
    let etc = etcd.client();
    let v = walden_replication::ha::read_cluster(&etc, &cluster).unwrap();
    assert!(
        v.groups.iter().all(|g| g.leader.is_none()),
        "the leader key lapsed"
    );

    // The operator accepts the loss.
    let rows = tokio::time::timeout(
        Duration::from_secs(40),
        cb.query(
            "ALTER AVAILABILITY GROUP ag1 FORCE_FAILOVER_ALLOW_DATA_LOSS",
            &[],
        ),
    )
    .await
    .expect("FORCE_FAILOVER_ALLOW_DATA_LOSS answers")
    .unwrap_or_else(|e| panic!("FORCE_FAILOVER_ALLOW_DATA_LOSS on b: {e:?}"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i64>("epoch"), 2);
    assert_eq!(health(&b, "/primary"), 200);
    must(&cb, "INSERT INTO t VALUES (1000)").await;
    assert_eq!(metric(&b, "walden_ha_forced_failovers_total"), 1.0);

    // The old primary returns as b's secondary.
    a.start();
    eventually!(Duration::from_secs(30), "a back as a replica", {
        (health(&a, "/replica") == 200).then_some(())
    });
    let ca = a.client().await;
    eventually!(Duration::from_secs(30), "a has b's row", {
        let n = ca
            .query_one("SELECT count(*) FROM t WHERE id = 1000", &[])
            .await;
        n.is_ok_and(|r| r.get::<_, i64>(0) == 1).then_some(())
    });
    let text = ha_status(&etcd, &cluster);
    assert!(text.contains("group ag1: primary b (epoch 2)"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_secondary_of_another_cluster_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(etcd) = EtcdServer::start(tmp.path()) else {
        return;
    };
    let pid = std::process::id();
    let a = ha_node("a", tmp.path(), &etcd, &format!("x{pid}"));
    let b = ha_node("b", tmp.path(), &etcd, &format!("y{pid}"));
    let ca = a.client().await;
    must(
        &ca,
        &format!(
            "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON {}, {}",
            replica_clause(&a, "SYNCHRONOUS_COMMIT"),
            replica_clause(&b, "ASYNCHRONOUS_COMMIT")
        ),
    )
    .await;
    eventually!(Duration::from_secs(20), "b refuses a", {
        b.log().contains("another HA cluster").then_some(())
    });
    // b never follows a: it has no replica of the group's database, and
    // a counts it nowhere.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let s = state_of(&ca, "b").await;
    assert!(
        s.as_ref().is_none_or(|s| !s.connected),
        "b follows a primary of another cluster: {s:?}"
    );
}
