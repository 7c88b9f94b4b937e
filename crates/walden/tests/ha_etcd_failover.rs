//! Automatic failover through a real etcd (one member, on loopback): three
//! nodes started with `--ha`, clients writing through a multi-host
//! connection string (`target_session_attrs=read-write`) and recording every
//! acknowledged commit; SIGKILL of the primary; the SYNCHRONIZED synchronous
//! secondary takes the leader key and promotes; nothing acknowledged is
//! missing there, no two nodes acknowledged at once; the old primary comes
//! back as a secondary. Needs etcd (Debian's etcd-server); psql for the
//! libpq check.

#[macro_use]
mod repl_support;
mod ha_support;
mod server_support;

use ha_support::*;
use repl_support::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;

/// One acknowledged commit: writer, sequence, the node that acknowledged
/// it, when.
type Ack = (i32, i32, String, Instant);

fn multi_host(nodes: &[&Node], attrs: &str) -> String {
    let hosts: Vec<&str> = nodes.iter().map(|_| "127.0.0.1").collect();
    let ports: Vec<String> = nodes
        .iter()
        .map(|n| n.serve.as_ref().unwrap().port.to_string())
        .collect();
    format!(
        "host={} port={} user=walden dbname=walden target_session_attrs={attrs} connect_timeout=2",
        hosts.join(","),
        ports.join(",")
    )
}

fn health(n: &Node, path: &str) -> u16 {
    let s = n.serve.as_ref().unwrap();
    http_get("127.0.0.1", s.metrics_port.unwrap(), path).0
}

/// Inserts (w, n) rows, reconnecting through `conn` after any error.
async fn writer(w: i32, conn: String, stop: Arc<AtomicBool>, acks: Arc<Mutex<Vec<Ack>>>) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let connected = tokio::time::timeout(
            Duration::from_secs(3),
            tokio_postgres::connect(&conn, NoTls),
        )
        .await;
        let Ok(Ok((c, task))) = connected else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        tokio::spawn(task);
        let node = match c
            .query_one(
                "SELECT replica_name FROM sys.dm_hadr_database_replica_states WHERE is_local",
                &[],
            )
            .await
        {
            Ok(r) => r.get::<_, String>(0),
            Err(_) => continue,
        };
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let r = tokio::time::timeout(
                Duration::from_secs(10),
                c.execute("INSERT INTO acks VALUES ($1, $2)", &[&w, &n]),
            )
            .await;
            match r {
                Ok(Ok(_)) => acks
                    .lock()
                    .unwrap()
                    .push((w, n, node.clone(), Instant::now())),
                _ => break,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_of_the_primary_elects_the_synchronized_secondary() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(etcd) = EtcdServer::start(tmp.path()) else {
        return;
    };
    let cluster = format!("t{}", std::process::id());
    let ha_args = |n: &mut Node| {
        n.extra = vec![
            "--ha".into(),
            etcd.url(),
            "--ha-cluster".into(),
            cluster.clone(),
            "--ha-ttl".into(),
            "3".into(),
        ];
    };
    let mut a = Node::local("a", tmp.path());
    let mut b = Node::local("b", tmp.path());
    let mut c = Node::local("c", tmp.path());
    for n in [&mut a, &mut b, &mut c] {
        ha_args(n);
        n.start();
    }
    let ca = a.client().await;
    must(&ca, "CREATE TABLE acks (w int, n int, PRIMARY KEY (w, n))").await;
    must(
        &ca,
        &format!(
            "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden \
             REPLICA ON 'a' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 5), \
                        'b' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 5), \
                        'c' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = ASYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 5)",
            a.url(),
            b.url(),
            c.url()
        ),
    )
    .await;
    // a holds the leader key, and b (synchronous) is counted in the sync set.
    let etc = etcd.client();
    eventually!(Duration::from_secs(20), "a primary with b counted", {
        let v = walden_replication::ha::read_cluster(&etc, &cluster).unwrap();
        let ok = v.groups.iter().any(|g| {
            g.leader.as_ref().is_some_and(|l| l.name == "a")
                && g.sync.as_ref().is_some_and(|s| s.members == ["b"])
        }) && health(&a, "/primary") == 200;
        ok.then_some(())
    });
    assert_eq!(health(&b, "/primary"), 503);
    eventually!(Duration::from_secs(20), "b and c as replicas", {
        (health(&b, "/replica") == 200 && health(&c, "/replica") == 200).then_some(())
    });
    assert_eq!(health(&a, "/health"), 200);

    // Writers through every node, the primary found by the client.
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
    tokio::time::sleep(Duration::from_millis(500)).await;
    a.kill();
    let killed = Instant::now();
    let first = eventually!(
        Duration::from_secs(30),
        "a write acknowledged after the kill",
        {
            acks.lock()
                .unwrap()
                .iter()
                .find(|x| x.3 > killed)
                .map(|x| (x.2.clone(), x.3))
        }
    );
    let to_new_primary = first.1 - killed;
    assert_eq!(first.0, "b", "the synchronous secondary is the new primary");
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let acks = acks.lock().unwrap().clone();
    let on_a = acks.iter().filter(|x| x.2 == "a").count();
    let on_b = acks.iter().filter(|x| x.2 == "b").count();
    assert!(on_a > 0 && on_b > 0, "acks: {on_a} on a, {on_b} on b");
    assert!(
        acks.iter().all(|x| x.2 == "a" || x.2 == "b"),
        "only a and b acknowledged"
    );
    // Never two nodes at once: every acknowledgement of a precedes every
    // acknowledgement of b.
    let last_a = acks
        .iter()
        .filter(|x| x.2 == "a")
        .map(|x| x.3)
        .max()
        .unwrap();
    let first_b = acks
        .iter()
        .filter(|x| x.2 == "b")
        .map(|x| x.3)
        .min()
        .unwrap();
    assert!(last_a < first_b, "a acknowledged after b began to");

    // Nothing acknowledged is missing on the new primary.
    let cb = b.client().await;
    let rows = cb.query("SELECT w, n FROM acks", &[]).await.unwrap();
    let have: BTreeSet<(i32, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let missing: Vec<_> = acks
        .iter()
        .filter(|x| !have.contains(&(x.0, x.1)))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but missing on b: {missing:?}"
    );
    assert_eq!(health(&b, "/primary"), 200);
    assert_eq!(health(&c, "/primary"), 503);

    // libpq (psql) picks the primary and the secondary by the parameters
    // reported at startup.
    if server_support::have("psql", &["--version"]) {
        for (attrs, want) in [
            ("read-write", "off"),
            ("read-only", "on"),
            ("prefer-standby", "on"),
        ] {
            let out = server_support::run_with_deadline(
                std::process::Command::new("psql")
                    .arg(multi_host(&[&b, &c], attrs))
                    .args(["-XAtc", "SHOW transaction_read_only"]),
                Duration::from_secs(20),
            );
            assert!(
                out.status.success(),
                "psql {attrs}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                want,
                "psql {attrs}"
            );
        }
    } else {
        server_support::missing_tool("psql is not installed");
    }

    // The old primary returns as a secondary of b, with every acknowledged row.
    a.start();
    eventually!(Duration::from_secs(30), "a back as a replica", {
        (health(&a, "/replica") == 200).then_some(())
    });
    let ca = a.client().await;
    let n_acks = acks.len() as i64;
    eventually!(Duration::from_secs(30), "a caught up", {
        let n = int(&ca, "SELECT count(*) FROM acks").await;
        (n >= n_acks).then_some(())
    });
    assert!(a.log().contains("stepping down") || a.log().contains("secondary"));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_walden"))
        .args([
            "ha",
            "status",
            "--ha",
            &etcd.url(),
            "--ha-cluster",
            &cluster,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{text}");
    assert!(text.contains("group ag1: primary b (epoch 2)"), "{text}");
    eprintln!("{text}");
    eprintln!(
        "time from SIGKILL of the primary to the first write acknowledged by the new one: {} ms (TTL 3 s); {} commits acknowledged, {} by a, {} by b",
        to_new_primary.as_millis(),
        acks.len(),
        on_a,
        on_b
    );
}
