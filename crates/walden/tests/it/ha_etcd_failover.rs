//! Automatic failover through a real etcd (one member, on loopback): three
//! nodes started with `--ha`, clients writing through a multi-host
//! connection string (`target_session_attrs=read-write`) and recording every
//! acknowledged commit; SIGKILL of the primary; the SYNCHRONIZED synchronous
//! secondary takes the leader key and promotes; nothing acknowledged is
//! missing there, no two nodes acknowledged at once; the old primary comes
//! back as a secondary. Needs etcd (Debian's etcd-server); psql for the
//! libpq check.

use crate::ha_support;
use crate::repl_support;
use crate::server_support;

use ha_support::*;
use repl_support::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;

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

// ---------------------------------------------------------------------------
// The fault matrix (not in CI: `bench/ha-failover.sh` runs it). Three etcd
// members and three nodes, each in a network namespace of its own on one
// bridge; clients in the root namespace. Env: HA_RUNS (default 20),
// HA_FAULTS (kill,stop,cut-etcd,cut-peers,cut-all,etcd-kill; default kill),
// HA_TTL (default 5).

fn ip(args: &[&str]) {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ip_quiet(args: &[&str]) {
    let _ = std::process::Command::new("ip").args(args).output();
}

/// `e1 e2 e3 a b c` at `P.1` .. `P.6` on a bridge at `P.254`.
struct Lab {
    bridge: String,
    ns: Vec<String>,
    prefix: String,
}

const LAB: [&str; 6] = ["e1", "e2", "e3", "a", "b", "c"];

impl Lab {
    fn create() -> Lab {
        let tag = std::process::id() % 100_000;
        let lab = Lab {
            bridge: format!("wh{tag}br"),
            ns: LAB.iter().map(|n| format!("wh{tag}{n}")).collect(),
            prefix: format!("10.{}.{}.", 200 + tag % 50, tag % 250),
        };
        let p = &lab.prefix;
        ip(&["link", "add", &lab.bridge, "type", "bridge"]);
        ip(&["addr", "add", &format!("{p}254/24"), "dev", &lab.bridge]);
        ip(&["link", "set", &lab.bridge, "up"]);
        for (i, ns) in lab.ns.iter().enumerate() {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            let host = format!("wh{tag}v{i}");
            let inner = format!("{host}x");
            ip(&["link", "add", &host, "type", "veth", "peer", "name", &inner]);
            ip(&["link", "set", &inner, "netns", ns]);
            ip(&["link", "set", &host, "master", &lab.bridge]);
            ip(&["link", "set", &host, "up"]);
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{p}{}/24", i + 1),
                "dev",
                &inner,
            ]);
            ip(&["-n", ns, "link", "set", &inner, "up"]);
        }
        lab
    }

    fn addr(&self, name: &str) -> String {
        let i = LAB.iter().position(|n| *n == name).unwrap();
        format!("{}{}", self.prefix, i + 1)
    }

    fn ns(&self, name: &str) -> &str {
        &self.ns[LAB.iter().position(|n| *n == name).unwrap()]
    }

    fn dev(&self, name: &str) -> String {
        let tag = std::process::id() % 100_000;
        format!("wh{tag}v{}x", LAB.iter().position(|n| *n == name).unwrap())
    }

    /// Blackhole routes in `from`'s namespace towards each of `to`.
    fn cut(&self, from: &str, to: &[&str], on: bool) {
        for t in to {
            let a = format!("{}/32", self.addr(t));
            let verb = if on { "add" } else { "del" };
            ip_quiet(&["-n", self.ns(from), "route", verb, "blackhole", &a]);
        }
    }

    fn etcd_urls(&self) -> String {
        let eps: Vec<String> = ["e1", "e2", "e3"]
            .iter()
            .map(|e| format!("{}:2379", self.addr(e)))
            .collect();
        format!("etcd://{}", eps.join(","))
    }

    fn start_etcd(&self, name: &str, dir: &std::path::Path, token: &str) -> std::process::Child {
        let me = self.addr(name);
        let cluster: Vec<String> = ["e1", "e2", "e3"]
            .iter()
            .map(|e| format!("{e}=http://{}:2380", self.addr(e)))
            .collect();
        std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                self.ns(name),
                "etcd",
                "--name",
                name,
                "--data-dir",
            ])
            .arg(dir.join(format!("{name}.etcd")))
            .args(["--listen-client-urls", &format!("http://{me}:2379")])
            .args(["--advertise-client-urls", &format!("http://{me}:2379")])
            .args(["--listen-peer-urls", &format!("http://{me}:2380")])
            .args([
                "--initial-advertise-peer-urls",
                &format!("http://{me}:2380"),
            ])
            .args(["--initial-cluster", &cluster.join(",")])
            .args(["--initial-cluster-token", token])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("{name}.etcd.log"))).unwrap())
            .spawn()
            .unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in &self.ns {
            ip_quiet(&["netns", "del", ns]);
        }
        ip_quiet(&["link", "del", &self.bridge]);
    }
}

/// Inserts (w, n) rows with a short statement timeout (a stalled primary
/// must not hold a writer for long), reconnecting after any error. Each
/// host is tried on its own with a 1 s limit for the whole connection
/// (libpq's connect_timeout is per host too; tokio-postgres's covers only
/// the socket), so a stopped or cut-off primary does not hide the others.
async fn quick_writer(
    w: i32,
    hosts: Vec<String>,
    stop: Arc<AtomicBool>,
    acks: Arc<Mutex<Vec<Ack>>>,
) {
    let mut n = 0;
    let mut next = 0;
    while !stop.load(Ordering::Relaxed) {
        let conn = &hosts[next % hosts.len()];
        let connected =
            tokio::time::timeout(Duration::from_secs(1), tokio_postgres::connect(conn, NoTls))
                .await;
        let Ok(Ok((c, task))) = connected else {
            next += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        tokio::spawn(task);
        let q = c.query_one(
            "SELECT replica_name FROM sys.dm_hadr_database_replica_states WHERE is_local",
            &[],
        );
        let Ok(Ok(r)) = tokio::time::timeout(Duration::from_secs(1), q).await else {
            next += 1;
            continue;
        };
        let node: String = r.get(0);
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let r = tokio::time::timeout(
                Duration::from_secs(1),
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
        next += 1;
    }
}

/// Polls etcd every 50 ms: when the group's leader key first names
/// another node than `old`.
async fn watch_leader(
    etc: walden_replication::ha::Etcd,
    cluster: String,
    old: &'static str,
    stop: Arc<AtomicBool>,
) -> Option<Instant> {
    while !stop.load(Ordering::Relaxed) {
        let v =
            tokio::task::block_in_place(|| walden_replication::ha::read_cluster(&etc, &cluster));
        if let Ok(v) = v {
            let moved = v
                .groups
                .iter()
                .any(|g| g.leader.as_ref().is_some_and(|l| l.name != old));
            if moved {
                return Some(Instant::now());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

struct RunResult {
    fault: String,
    /// From the fault to the first commit acknowledged by another node
    /// (`None`: the old primary kept or regained the key).
    to_new_primary: Option<Duration>,
    /// From the fault to the first acknowledged commit by anyone.
    to_first_ack: Option<Duration>,
    /// From the fault to the leader key naming another node.
    key_moved: Option<Duration>,
    new_primary: String,
    acks: usize,
    missing: usize,
    /// Acknowledgements of the old primary received after the new primary's first.
    late: usize,
}

async fn one_run(lab: &Lab, fault: &str, ttl: u64, run: usize) -> RunResult {
    let tmp = tempfile::tempdir().unwrap();
    let token = format!("t{}r{run}", std::process::id());
    let mut etcds: Vec<std::process::Child> = ["e1", "e2", "e3"]
        .iter()
        .map(|e| lab.start_etcd(e, tmp.path(), &token))
        .collect();
    let eps: Vec<String> = ["e1", "e2", "e3"]
        .iter()
        .map(|e| format!("{}:2379", lab.addr(e)))
        .collect();
    let etc = walden_replication::ha::Etcd::new(eps, Duration::from_secs(2));
    eventually!(Duration::from_secs(30), "etcd up", {
        etc.get_prefix("/").is_ok().then_some(())
    });
    let cluster = format!("m{run}");
    // Off loopback, replication needs a secret.
    let toml = tmp.path().join("walden.toml");
    std::fs::write(
        &toml,
        "[replication]\nsecret = \"ha-matrix-secret-0123456789\"\n",
    )
    .unwrap();
    let mut nodes: Vec<Node> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            let addr = lab.addr(n);
            let mut node = Node::new(n, tmp.path().join(n), &addr, format!("{addr}:5022"));
            node.prefix = vec!["ip".into(), "netns".into(), "exec".into(), lab.ns(n).into()];
            node.extra = vec![
                "--ha".into(),
                lab.etcd_urls(),
                "--ha-cluster".into(),
                cluster.clone(),
                "--ha-ttl".into(),
                ttl.to_string(),
                "--config".into(),
                toml.display().to_string(),
            ];
            node.start();
            node
        })
        .collect();
    let ca = nodes[0].client().await;
    must(&ca, "CREATE TABLE acks (w int, n int, PRIMARY KEY (w, n))").await;
    let reps: Vec<String> = nodes
        .iter()
        .map(|n| {
            format!(
                "'{}' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 5)",
                n.name,
                n.url()
            )
        })
        .collect();
    must(
        &ca,
        &format!(
            "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON {}",
            reps.join(", ")
        ),
    )
    .await;
    eventually!(Duration::from_secs(30), "a primary with b and c counted", {
        walden_replication::ha::read_cluster(&etc, &cluster)
            .ok()
            .filter(|v| {
                v.groups.iter().any(|g| {
                    g.sync
                        .as_ref()
                        .is_some_and(|s| s.leader == "a" && s.members.len() == 2)
                })
            })
            .map(|_| ())
    });
    let hosts: Vec<String> = nodes
        .iter()
        .map(|n| {
            format!(
                "host={} port={} user=walden dbname=walden target_session_attrs=read-write connect_timeout=1",
                n.host,
                n.serve.as_ref().unwrap().port
            )
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let acks: Arc<Mutex<Vec<Ack>>> = Default::default();
    let tasks: Vec<_> = (0..4)
        .map(|w| tokio::spawn(quick_writer(w, hosts.clone(), stop.clone(), acks.clone())))
        .collect();
    eventually!(Duration::from_secs(30), "writes on a", {
        (acks.lock().unwrap().len() > 200).then_some(())
    });
    let hold = Duration::from_secs(2 * ttl);
    let watch_stop = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch_leader(
        walden_replication::ha::Etcd::new(etc.endpoints().to_vec(), Duration::from_secs(1)),
        cluster.clone(),
        "a",
        watch_stop.clone(),
    ));
    let t0 = Instant::now();
    let mut etcd_killed = None;
    match fault {
        "kill" => nodes[0].kill(),
        "stop" => nodes[0].stop(),
        "cut-etcd" => lab.cut("a", &["e1", "e2", "e3"], true),
        "cut-peers" => {
            lab.cut("a", &["b", "c"], true);
            lab.cut("b", &["a"], true);
            lab.cut("c", &["a"], true);
        }
        "cut-all" => ip(&["-n", lab.ns("a"), "link", "set", &lab.dev("a"), "down"]),
        "etcd-kill" => {
            let _ = etcds[0].kill();
            let _ = etcds[0].wait();
            etcd_killed = Some(0);
        }
        other => panic!("unknown fault {other}"),
    }
    // Wait for a write acknowledged after the fault, then hold the fault
    // for 2 x TTL in all (the old primary stays cut off or stopped).
    let limit = Duration::from_secs(3 * ttl + 20);
    while t0.elapsed() < limit {
        let by_other = acks.lock().unwrap().iter().any(|x| x.3 > t0 && x.2 != "a");
        if by_other || (t0.elapsed() > hold && acks.lock().unwrap().iter().any(|x| x.3 > t0)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if t0.elapsed() < hold {
        tokio::time::sleep(hold - t0.elapsed()).await;
    }
    // Heal.
    match fault {
        "kill" => nodes[0].start(),
        "stop" => nodes[0].signal(libc::SIGCONT),
        "cut-etcd" => lab.cut("a", &["e1", "e2", "e3"], false),
        "cut-peers" => {
            lab.cut("a", &["b", "c"], false);
            lab.cut("b", &["a"], false);
            lab.cut("c", &["a"], false);
        }
        "cut-all" => ip(&["-n", lab.ns("a"), "link", "set", &lab.dev("a"), "up"]),
        _ => {}
    }
    if let Some(i) = etcd_killed {
        etcds[i] = lab.start_etcd(["e1", "e2", "e3"][i], tmp.path(), &token);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    watch_stop.store(true, Ordering::Relaxed);
    let key_moved = watcher.await.unwrap().map(|t| t - t0);
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let acks = acks.lock().unwrap().clone();
    // Exactly one primary in the end, holding every acknowledged commit.
    let primary = eventually!(Duration::from_secs(30), "one primary after healing", {
        let p: Vec<usize> = (0..3)
            .filter(|i| {
                let s = nodes[*i].serve.as_ref().unwrap();
                http_get(&nodes[*i].host, s.metrics_port.unwrap(), "/primary").0 == 200
            })
            .collect();
        (p.len() == 1).then(|| p[0])
    });
    let cp = nodes[primary].client().await;
    let rows = cp.query("SELECT w, n FROM acks", &[]).await.unwrap();
    let have: BTreeSet<(i32, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let missing = acks.iter().filter(|x| !have.contains(&(x.0, x.1))).count();
    let first_other = acks
        .iter()
        .filter(|x| x.3 > t0 && x.2 != "a")
        .map(|x| x.3)
        .min();
    let late = first_other.map_or(0, |f| acks.iter().filter(|x| x.2 == "a" && x.3 > f).count());
    let r = RunResult {
        fault: fault.into(),
        to_new_primary: first_other.map(|f| f - t0),
        to_first_ack: acks.iter().filter(|x| x.3 > t0).map(|x| x.3 - t0).min(),
        key_moved,
        new_primary: nodes[primary].name.clone(),
        acks: acks.len(),
        missing,
        late,
    };
    for mut e in etcds {
        let _ = e.kill();
        let _ = e.wait();
    }
    for n in nodes.iter_mut() {
        if n.serve.is_some() {
            n.signal(libc::SIGCONT);
            n.kill();
        }
    }
    r
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| d.as_millis().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "the fault matrix: minutes long, needs root; run by bench/ha-failover.sh"]
async fn fault_matrix_in_network_namespaces() {
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "needs root (network namespaces)"
    );
    let runs: usize = std::env::var("HA_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let ttl: u64 = std::env::var("HA_TTL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let faults = std::env::var("HA_FAULTS").unwrap_or_else(|_| "kill".into());
    let lab = Lab::create();
    let mut all = Vec::new();
    for fault in faults.split(',') {
        for run in 0..runs {
            let r = one_run(&lab, fault, ttl, all.len()).await;
            eprintln!(
                "{fault} run {run}: new primary {} acknowledged after {} ms (leader key moved after {} ms; first ack {} ms), {} acks, {} missing, {} late",
                r.new_primary,
                ms(r.to_new_primary),
                ms(r.key_moved),
                ms(r.to_first_ack),
                r.acks,
                r.missing,
                r.late
            );
            all.push(r);
        }
    }
    println!("fault       runs  first ack by the new primary (ms): min  median  p90  max | key moved median | missing  late  final primaries");
    for fault in faults.split(',') {
        let rs: Vec<&RunResult> = all.iter().filter(|r| r.fault == fault).collect();
        let mut t: Vec<u128> = rs
            .iter()
            .filter_map(|r| r.to_new_primary.map(|d| d.as_millis()))
            .collect();
        t.sort();
        let q = |v: &Vec<u128>, p: f64| -> String {
            if v.is_empty() {
                "-".into()
            } else {
                v[((v.len() - 1) as f64 * p).round() as usize].to_string()
            }
        };
        let mut k: Vec<u128> = rs
            .iter()
            .filter_map(|r| r.key_moved.map(|d| d.as_millis()))
            .collect();
        k.sort();
        let prim: BTreeSet<String> = rs.iter().map(|r| r.new_primary.clone()).collect();
        println!(
            "{fault:<11} {:>4}  {:>38} {:>7} {:>4} {:>4} | {:>16} | {:>7} {:>5}  {prim:?}",
            rs.len(),
            q(&t, 0.0),
            q(&t, 0.5),
            q(&t, 0.9),
            q(&t, 1.0),
            q(&k, 0.5),
            rs.iter().map(|r| r.missing).sum::<usize>(),
            rs.iter().map(|r| r.late).sum::<usize>(),
        );
    }
    assert_eq!(
        all.iter().map(|r| r.missing).sum::<usize>(),
        0,
        "acknowledged commits missing"
    );
}
