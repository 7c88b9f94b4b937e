//! Bounded-lag asynchronous secondaries (`MAX_LAG_BYTES`, `MAX_LAG_MS`): a
//! primary and a secondary in one process over loopback TCP, the
//! secondary's link stalled by pausing what it reads.

use crate::support;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{group, make_table, url, Node};
use walden_engine::*;
use walden_replication::{AvailabilityMode, ReplicaDef};

fn node(name: &str, endpoint: bool) -> Node {
    support::node(name, endpoint, |_| {})
}

/// A primary "a" with table t and an asynchronous secondary "b" bounded by
/// `bytes` / `ms`, counted (caught up once).
fn bounded_pair(bytes: Option<u64>, ms: Option<u64>, session_timeout_ms: u64) -> (Node, Node) {
    let p = node("a", false);
    let s = node("b", true);
    make_table(&p);
    let mut b = ReplicaDef::new("b", url(&s), AvailabilityMode::AsynchronousCommit);
    b.max_lag_bytes = bytes;
    b.max_lag_ms = ms;
    let mut g = group(&p, vec![b]);
    g.session_timeout_ms = session_timeout_ms;
    p.repl.create_group(g).unwrap();
    wait_counted(&p, true);
    (p, s)
}

fn row_b(p: &Node) -> walden_replication::ReplicaStateRow {
    p.repl
        .replica_states()
        .into_iter()
        .find(|r| r.replica_name == "b")
        .unwrap()
}

fn wait_counted(p: &Node, want: bool) {
    assert!(
        wait_until(Duration::from_secs(10), || row_b(p).is_lag_bound_counted
            == Some(want)),
        "bound never became counted={want}: {:?}",
        row_b(p)
    );
}

fn lag_waits(p: &Node) -> u64 {
    p.inst
        .wait_stats()
        .get(WaitType::HadrLagBound)
        .waiting_tasks_count
}

/// One acknowledged commit: when its commit was asked for, when it
/// returned, and its commit LSN.
#[derive(Clone, Copy, Debug)]
struct Ack {
    start: Instant,
    at: Instant,
    lsn: u64,
}

/// `n` threads inserting one row per durable commit until `stop`.
fn writers(
    p: &Node,
    n: usize,
    stop: Arc<AtomicBool>,
) -> (Arc<Mutex<Vec<Ack>>>, Vec<std::thread::JoinHandle<()>>) {
    let acks = Arc::new(Mutex::new(Vec::new()));
    let hs = (0..n)
        .map(|w| {
            let inst = p.inst.clone();
            let acks = acks.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let db = inst.database("walden").unwrap();
                let s = inst.new_session();
                let mut i = 0u64;
                while !stop.load(SeqCst) {
                    let start = Instant::now();
                    let mut tx = db.begin(&s);
                    tx.insert_named("t", &[("v", Value::text(format!("w{w}-{i}")))])
                        .unwrap();
                    match tx.commit(CommitRequest::Durable) {
                        Ok(o) => acks.lock().unwrap().push(Ack {
                            start,
                            at: Instant::now(),
                            lsn: o.lsn.unwrap(),
                        }),
                        // Only at the end (the instance closing).
                        Err(e) => {
                            assert!(stop.load(SeqCst), "commit failed: {e}");
                            return;
                        }
                    }
                    i += 1;
                }
            })
        })
        .collect();
    (acks, hs)
}

/// Pauses the secondary and returns its hardened LSN once it is frozen
/// (what a failover to it at this instant would have).
fn freeze(s: &Node) -> u64 {
    s.pause.store(true, SeqCst);
    let log = s.inst.database("walden").unwrap();
    let mut h = log.log().hardened_lsn();
    loop {
        std::thread::sleep(Duration::from_millis(30));
        let h2 = log.log().hardened_lsn();
        if h2 == h {
            return h;
        }
        h = h2;
    }
}

fn stop_all(stop: &AtomicBool, s: &Node, hs: Vec<std::thread::JoinHandle<()>>) {
    stop.store(true, SeqCst);
    s.pause.store(false, SeqCst);
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn commits_wait_at_max_lag_bytes_and_resume_when_the_secondary_catches_up() {
    const MAX: u64 = 32 << 10;
    let (p, s) = bounded_pair(Some(MAX), None, 10_000);
    let row = row_b(&p);
    assert_eq!(row.max_lag_bytes, Some(MAX));
    assert_eq!(row.max_lag_ms, None);
    let before = lag_waits(&p);
    let h = freeze(&s);
    let stop = Arc::new(AtomicBool::new(false));
    let (acks, hs) = writers(&p, 2, stop.clone());
    // The writers reach the bound and stop there.
    std::thread::sleep(Duration::from_millis(1500));
    let n = acks.lock().unwrap().len();
    let top = acks
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.lsn)
        .max()
        .unwrap_or(0);
    assert!(n > 0, "some commits fit in the bound");
    assert!(
        top <= h + MAX,
        "acknowledged LSN {top} beyond hardened {h} + {MAX}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        acks.lock().unwrap().len(),
        n,
        "commits went on past the bound"
    );
    let row = row_b(&p);
    assert!(row.lag_bytes.unwrap() > 0, "{row:?}");
    assert_eq!(row.is_lag_bound_counted, Some(true));
    // The secondary catches up: commits resume.
    s.pause.store(false, SeqCst);
    assert!(
        wait_until(Duration::from_secs(10), || acks.lock().unwrap().len()
            > n + 50),
        "commits did not resume"
    );
    // A wait is counted when it ends.
    assert!(
        lag_waits(&p) > before,
        "HADR_LAG_BOUND counted: {:?}",
        p.inst.wait_stats().rows()
    );
    stop_all(&stop, &s, hs);
}

#[test]
fn commits_wait_at_max_lag_ms_and_resume_when_the_secondary_catches_up() {
    const MS: u64 = 200;
    let (p, s) = bounded_pair(None, Some(MS), 10_000);
    let before = lag_waits(&p);
    let h = freeze(&s);
    let stop = Arc::new(AtomicBool::new(false));
    let (acks, hs) = writers(&p, 2, stop.clone());
    std::thread::sleep(Duration::from_millis(1200));
    let got = acks.lock().unwrap().clone();
    // Every commit the secondary lacks was acknowledged within MAX_LAG_MS
    // of the first one it lacks (measured from the client, which sees an
    // acknowledgement after the primary made it: `start` bounds it below).
    let first = got
        .iter()
        .filter(|a| a.lsn > h)
        .map(|a| a.at)
        .min()
        .expect("some commits were acknowledged");
    for a in got.iter().filter(|a| a.lsn > h) {
        assert!(
            a.start <= first + Duration::from_millis(MS),
            "a commit asked for {:?} after the first unhardened acknowledgement was acknowledged",
            a.start - first
        );
    }
    assert_eq!(acks.lock().unwrap().len(), got.len(), "commits went on");
    assert!(row_b(&p).lag_ms.unwrap() >= MS as f64, "{:?}", row_b(&p));
    s.pause.store(false, SeqCst);
    let n = got.len();
    assert!(
        wait_until(Duration::from_secs(10), || acks.lock().unwrap().len()
            > n + 50),
        "commits did not resume"
    );
    assert!(lag_waits(&p) > before, "HADR_LAG_BOUND counted");
    stop_all(&stop, &s, hs);
}

#[test]
fn a_bounded_secondary_held_out_for_the_session_timeout_stops_counting_then_returns() {
    const MAX: u64 = 16 << 10;
    let (p, s) = bounded_pair(Some(MAX), Some(300), 1500);
    freeze(&s);
    let stop = Arc::new(AtomicBool::new(false));
    let (acks, hs) = writers(&p, 2, stop.clone());
    let t0 = Instant::now();
    // Held back, then (after SESSION_TIMEOUT) dropped from the bound:
    // commits go on without it.
    wait_counted(&p, false);
    assert!(
        t0.elapsed() >= Duration::from_millis(1400),
        "dropped too soon"
    );
    let n = acks.lock().unwrap().len();
    assert!(
        wait_until(Duration::from_secs(5), || acks.lock().unwrap().len()
            > n + 50),
        "commits did not go on without the dropped secondary"
    );
    // Back: it catches up and counts again.
    s.pause.store(false, SeqCst);
    wait_counted(&p, true);
    stop_all(&stop, &s, hs);
}

/// Simulated kills of the primary under a write load with a slowed link:
/// the secondary is frozen at an instant `K` (what a failover then would
/// have; stricter than a real kill, after which bytes in flight may still
/// arrive), and every commit acknowledged by `K` must be within the bound of
/// its hardened log.
fn kills(rounds: usize) -> (u64, u64) {
    const MAX: u64 = 64 << 10;
    const MS: u64 = 250;
    let (p, s) = bounded_pair(Some(MAX), Some(MS), 10_000);
    let stop = Arc::new(AtomicBool::new(false));
    let (acks, hs) = writers(&p, 4, stop.clone());
    // A slow, jittery link: the secondary reads in bursts.
    let slow_stop = Arc::new(AtomicBool::new(false));
    let frozen = Arc::new(AtomicBool::new(false));
    let slow = {
        let pause = s.pause.clone();
        let (slow_stop, frozen) = (slow_stop.clone(), frozen.clone());
        std::thread::spawn(move || {
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            while !slow_stop.load(SeqCst) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if !frozen.load(SeqCst) {
                    pause.store(!x.is_multiple_of(3), SeqCst);
                }
                std::thread::sleep(Duration::from_millis(x % 120));
            }
        })
    };
    let (mut worst_bytes, mut worst_ms, mut worst_rel) = (0u64, 0u64, 0u64);
    for round in 0..rounds {
        std::thread::sleep(Duration::from_millis(300 + 97 * (round as u64 % 5)));
        frozen.store(true, SeqCst);
        let h = freeze(&s);
        let k = Instant::now();
        let got: Vec<Ack> = acks
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.at <= k)
            .copied()
            .collect();
        // Every acknowledgement was made after its `start`; the primary
        // acknowledged the latest of them with every commit older than
        // MAX_LAG_MS before it hardened on the secondary.
        let latest_start = got.iter().map(|a| a.start).max().unwrap();
        for a in got.iter().filter(|a| a.lsn > h) {
            assert!(
                a.lsn <= h + MAX,
                "kill {round}: acknowledged LSN {} is {} bytes past the secondary's hardened {h}",
                a.lsn,
                a.lsn - h
            );
            worst_bytes = worst_bytes.max(a.lsn - h);
            let age = latest_start.saturating_duration_since(a.at);
            assert!(
                age <= Duration::from_millis(MS),
                "kill {round}: a commit the secondary lacks was acknowledged {age:?} before a later one"
            );
            worst_rel = worst_rel.max(age.as_millis() as u64);
            worst_ms = worst_ms.max(k.saturating_duration_since(a.at).as_millis() as u64);
        }
        assert!(got.len() > round, "the load made commits");
        frozen.store(false, SeqCst);
        s.pause.store(false, SeqCst);
    }
    slow_stop.store(true, SeqCst);
    slow.join().unwrap();
    stop_all(&stop, &s, hs);
    let n = acks.lock().unwrap().len();
    eprintln!(
        "{rounds} kills, {n} commits: worst missing {worst_bytes} bytes (bound {MAX}); a missing commit acknowledged at most {worst_rel} ms before the latest acknowledged request was sent (bound {MS} ms), {worst_ms} ms before the freeze"
    );
    (worst_bytes, worst_ms)
}

#[test]
fn a_failover_to_a_bounded_secondary_loses_at_most_the_bound() {
    kills(4);
}

/// `cargo test --release -p walden-replication --test replication_it lag_bound:: -- --ignored`.
#[test]
#[ignore]
fn many_kills_stay_within_the_bound() {
    kills(25);
}
