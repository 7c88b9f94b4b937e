//! The exposure bounds under power loss, on a slow disk that stalls.
//!
//! What `max_exposure` guarantees (README, "Guarantees"): no delayed commit
//! is acknowledged while an earlier acknowledged one has been unhardened for
//! `max_exposure` or longer. So the acknowledged commits a crash loses were
//! all acknowledged within one `max_exposure` of each other; and with
//! `max_exposure_bytes`, they hold at most that many bytes of log. Each trial
//! runs committers against a disk whose syncs take 0.1-3 ms and now and then
//! stall for 5-25x the bound, cuts the power at a random moment, recovers,
//! and checks both on what was lost.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use walden_log::*;

use rand::{Rng, SeedableRng};

const BOUND: Duration = Duration::from_millis(10);
const BOUND_BYTES: u64 = 64 * 1024;

fn cfg() -> LogConfig {
    LogConfig {
        block_size: 8192,
        segment_size: 1 << 20,
        buffer_size: 256 * 1024,
        max_write: 64 * 1024,
        max_flush_delay: Duration::from_millis(50),
        max_exposure: Some(BOUND),
        max_exposure_bytes: Some(BOUND_BYTES),
        preallocate_spare: false,
        ..LogConfig::default()
    }
}

fn rec(n: u64) -> Vec<u8> {
    let mut v = n.to_le_bytes().to_vec();
    v.extend(std::iter::repeat_n(7u8, (n % 97) as usize * 20));
    v
}

/// One acknowledged commit: when it was asked for, when it returned, its
/// end LSN and record size.
#[derive(Clone, Copy)]
struct Ack {
    n: u64,
    called: Instant,
    returned: Instant,
    lsn: Lsn,
}

struct TrialOutcome {
    acked: usize,
    lost: usize,
    lost_bytes: u64,
    lost_span: Duration,
    oldest_lost_age: Duration,
    misses: u64,
}

fn trial(seed: u64) -> TrialOutcome {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mem = MemVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(mem.clone());
    let dir = PathBuf::from("/db/log");
    let (log, _) = LogManager::open(
        vfs,
        &dir,
        cfg(),
        Arc::new(FileStats::default()),
        0,
        &mut |_, _, _| Ok(()),
    )
    .expect("open");
    let log = Arc::new(log);
    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(Mutex::new(Vec::<Ack>::new()));
    let next = Arc::new(std::sync::atomic::AtomicU64::new(1));

    // The disk: mostly fast or slow, sometimes a stall far past the bound.
    let disk = {
        let (mem, stop) = (mem.clone(), stop.clone());
        let mut r = rand::rngs::StdRng::seed_from_u64(seed ^ 0xd15c);
        std::thread::spawn(move || {
            while !stop.load(Relaxed) {
                let d = if r.gen_bool(0.1) {
                    Duration::from_millis(r.gen_range(50..250))
                } else {
                    Duration::from_micros(r.gen_range(100..3000))
                };
                mem.set_faults(Faults {
                    sync_delay: Some(d),
                    ..Faults::default()
                });
                std::thread::sleep(Duration::from_millis(r.gen_range(5..40)));
            }
        })
    };
    let committers: Vec<_> = (0..3)
        .map(|_| {
            let (log, stop, acks, next) = (log.clone(), stop.clone(), acks.clone(), next.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let n = next.fetch_add(1, Relaxed);
                    let called = Instant::now();
                    match log.commit_delayed(&rec(n), &[]) {
                        Ok(lsn) => acks.lock().unwrap().push(Ack {
                            n,
                            called,
                            returned: Instant::now(),
                            lsn,
                        }),
                        Err(_) => break,
                    }
                }
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(rng.gen_range(50..400)));
    let mode = [CrashMode::SyncedOnly, CrashMode::TornPrefix][rng.gen_range(0..2)];
    let crashed_at = Instant::now();
    let after = mem.crash(mode, seed);
    let misses = log.counters().exposure_bound_misses.load(Relaxed);
    stop.store(true, Relaxed);
    for c in committers {
        c.join().unwrap();
    }
    disk.join().unwrap();
    drop(log);

    let mut recovered = HashSet::new();
    let vfs: Arc<dyn Vfs> = Arc::new(after);
    let (_log, _) = LogManager::open(
        vfs,
        &dir,
        cfg(),
        Arc::new(FileStats::default()),
        0,
        &mut |_, _, r| {
            recovered.insert(u64::from_le_bytes(r[..8].try_into().unwrap()));
            Ok(())
        },
    )
    .expect("recovery");

    // Commits asked for after the power was cut are not the bound's concern.
    let acks = acks.lock().unwrap().clone();
    let lost: Vec<&Ack> = acks
        .iter()
        .filter(|a| a.called < crashed_at && !recovered.contains(&a.n))
        .collect();
    let acked = acks.iter().filter(|a| a.called < crashed_at).count();
    let mut out = TrialOutcome {
        acked,
        lost: lost.len(),
        lost_bytes: 0,
        lost_span: Duration::ZERO,
        oldest_lost_age: Duration::ZERO,
        misses,
    };
    if lost.is_empty() {
        return out;
    }
    // The log acknowledged each commit between `called` and `returned`. The
    // newest lost one was acknowledged no earlier than its call, the oldest
    // no later than its return: that difference is below the true span,
    // which the bound keeps under BOUND.
    let newest_call = lost.iter().map(|a| a.called).max().unwrap();
    let oldest_return = lost.iter().map(|a| a.returned).min().unwrap();
    let span = newest_call.saturating_duration_since(oldest_return);
    assert!(
        span < BOUND,
        "seed {seed}: lost commits were acknowledged {span:?} apart (bound {BOUND:?})"
    );
    // Bytes: from the lowest LSN a lost commit's record could start at.
    let lowest_lost = lost.iter().map(|a| a.lsn).min().unwrap();
    let highest_lost = lost.iter().map(|a| a.lsn).max().unwrap();
    let first_len = 4 + rec(lost.iter().min_by_key(|a| a.lsn).unwrap().n).len() as u64;
    let bytes = highest_lost - (lowest_lost - first_len);
    assert!(
        bytes <= BOUND_BYTES + first_len,
        "seed {seed}: lost commits span {bytes} bytes of log (bound {BOUND_BYTES})"
    );
    out.lost_bytes = bytes;
    out.lost_span = span;
    out.oldest_lost_age = crashed_at.saturating_duration_since(oldest_return);
    out
}

#[test]
fn power_loss_on_a_stalling_disk_keeps_the_exposure_bounds() {
    let trials: u64 = std::env::var("WALDEN_EXPOSURE_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let (mut acked, mut lost, mut worst_span, mut worst_bytes, mut worst_age, mut misses) =
        (0, 0, Duration::ZERO, 0, Duration::ZERO, 0);
    let mut with_loss = 0;
    for seed in 0..trials {
        let o = trial(seed);
        acked += o.acked;
        lost += o.lost;
        with_loss += usize::from(o.lost > 0);
        worst_span = worst_span.max(o.lost_span);
        worst_bytes = worst_bytes.max(o.lost_bytes);
        worst_age = worst_age.max(o.oldest_lost_age);
        misses += o.misses;
    }
    println!(
        "{trials} power cuts on a stalling disk: {acked} delayed commits acknowledged, {lost} lost \
         in {with_loss} cuts; widest lost span {worst_span:?} (bound {BOUND:?}), most lost bytes \
         {worst_bytes} (bound {BOUND_BYTES}, plus the record that straddles the hardened point); oldest lost acknowledgement {worst_age:?} before the \
         cut; {misses} commits hardened later than the bound (disk stalls)"
    );
    assert!(acked > 0);
}
