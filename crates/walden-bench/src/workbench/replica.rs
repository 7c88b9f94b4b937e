//! SPEC §6.4, auto-commit vs explicit transactions with a synchronous
//! replica: a primary and a secondary instance in this process, under the
//! scratch directory (so on the disk the other experiments measure), log
//! shipped over loopback TCP.
//!
//! Every mode gets a database of its own on the primary (each in an
//! availability group of its own, except the local baseline), so the
//! counters of one mode are never mixed with another's and nothing has to
//! be reseeded between cells. A delay is one more group whose secondary's
//! ENDPOINT_URL is a [`DelayProxy`] in front of the same secondary.
//!
//! The cells run one batch each per round, in one order on even rounds and
//! the reverse on odd ones: the disk flips between a fast and a slow state
//! for minutes at a time, and interleaving spreads that over every cell.
//! Between batches (untimed) the secondary is let catch up, so a lagging
//! asynchronous or delayed cell does not load the next one.

use super::delay_proxy::DelayProxy;
use super::experiments::{ExperimentDef, ReplicaPlan};
use super::harness::TABLE;
use super::result::{ReplicaCell, ReplicaReport};
use super::target::{insert_sql, Conn, Db, Dialect, Durability, Target};
use super::walden::WaldenTarget;
use crate::stats;
use crate::{BenchError, Result};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use walden_engine::{Instance, InstanceConfig};
use walden_replication::{AgDef, AvailabilityMode, ReplicaDef, Replication, ReplicationConfig};
use walden_sql::SqlEngine;

/// The target: durable commit p50 with a loopback synchronous
/// secondary at most this many times the local-only p50.
pub const P50_TARGET: f64 = 1.3;

/// Said wherever delayed figures are shown.
pub const DELAY_NOTE: &str = "Network delay is injected by a userspace TCP proxy in the \
    workbench that holds every chunk for the delay in each direction (a round trip pays it \
    twice, as with netem on one link): tc netem needs root and the sch_netem kernel module, \
    which this kind of machine lacks (\"Specified qdisc kind is unknown\").";

const PRIMARY: &str = "primary";
const SECONDARY: &str = "secondary";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Local,
    Sync,
    SyncDelayed,
    Async,
    /// Asynchronous with a lag bound ([`BOUND_BYTES`], [`BOUND_MS`]).
    AsyncBounded,
}

/// The bounded-lag cell's bound: tight enough that a secondary a few ms
/// away holds commits back now and then, so its cost shows.
const BOUND_BYTES: u64 = 64 << 10;
const BOUND_MS: u64 = 10;

impl Mode {
    fn short(self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::Sync => "sync",
            Mode::SyncDelayed => "sync + delayed",
            Mode::Async => "async",
            Mode::AsyncBounded => "async + bound",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Mode::Local => "no availability group, DELAYED_DURABILITY = DISABLED",
            Mode::Sync => "SYNCHRONOUS_COMMIT secondary, DELAYED_DURABILITY = DISABLED",
            Mode::SyncDelayed => "SYNCHRONOUS_COMMIT secondary, DELAYED_DURABILITY = FORCED",
            Mode::Async => "ASYNCHRONOUS_COMMIT secondary, DELAYED_DURABILITY = DISABLED",
            Mode::AsyncBounded => {
                "ASYNCHRONOUS_COMMIT secondary with MAX_LAG_BYTES = 65536, MAX_LAG_MS = 10, DELAYED_DURABILITY = DISABLED"
            }
        }
    }
    fn tag(self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::Sync => "sync",
            Mode::SyncDelayed => "syncdd",
            Mode::Async => "async",
            Mode::AsyncBounded => "asyncb",
        }
    }
    fn availability(self) -> Option<AvailabilityMode> {
        match self {
            Mode::Local => None,
            Mode::Sync | Mode::SyncDelayed => Some(AvailabilityMode::SynchronousCommit),
            Mode::Async | Mode::AsyncBounded => Some(AvailabilityMode::AsynchronousCommit),
        }
    }
}

/// One database of the primary, set up for one mode and delay.
struct Setup {
    mode: Mode,
    delay_ms: u64,
    name: String,
    db: Box<dyn Db>,
    monitor: Box<dyn Conn>,
}

/// One cell: a workload on a setup, and what it measured so far.
struct CellRun {
    setup: usize,
    autocommit: bool,
    conn: Box<dyn Conn>,
    latencies_ms: Vec<f64>,
    round_ms_per_insert: Vec<f64>,
    duration_s: f64,
    log_flushes: u64,
    write_transactions: u64,
    mirrored: u64,
    delay_us: u64,
    /// (writes, stall µs) of the primary's and the secondary's log.
    primary_io: (u64, u64),
    secondary_io: (u64, u64),
}

/// One instance with its replication layer. Dropped in field order: the
/// replication layer stops before the instance closes.
struct Node {
    repl: Replication,
    target: WaldenTarget,
    instance: Instance,
}

impl Node {
    fn open(dir: &Path, name: &str, endpoint: bool) -> Result<Node> {
        let mut cfg = InstanceConfig::new(dir);
        cfg.checkpoint_interval = None;
        cfg.background_checkpoints = false;
        // Ten databases per instance: 16 MB segments (instead of 64) keep
        // the zero-filling of their preallocated files short.
        cfg.log.segment_size = 16 << 20;
        let instance = Instance::open(cfg)?;
        let mut rc = ReplicationConfig::new(name);
        if endpoint {
            rc.endpoint_listen = Some("127.0.0.1:0".into());
        }
        let repl = Replication::start(instance.clone(), rc)
            .map_err(|e| BenchError::Other(format!("starting replication on {name}: {e}")))?;
        let engine = SqlEngine::new(instance.clone());
        engine.set_replication(Some(repl.clone()));
        Ok(Node {
            repl,
            target: WaldenTarget::from_engine(format!("walden ({name})"), engine),
            instance,
        })
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.repl.shutdown();
    }
}

/// Runs the experiment in `dir` (a scratch directory on the measured disk).
/// `secondary_dir`: where the secondary instance lives (default: beside
/// the primary, on the same disk).
pub fn run(
    def: &ExperimentDef,
    plan: &ReplicaPlan,
    dir: &Path,
    secondary_dir: Option<&Path>,
    progress: bool,
    interrupted: &dyn Fn() -> bool,
) -> Result<ReplicaReport> {
    let t_setup = Instant::now();
    std::fs::create_dir_all(dir)?;
    let probe = crate::disk::CeilingFile::create(dir, 4 << 20)?;
    let disk_before = probe.fdatasync_rate(4096, 0.5)?;
    let primary_dir = dir.join("primary");
    let secondary_dir = secondary_dir
        .map(|d| d.join("walden-bench-secondary"))
        .unwrap_or_else(|| dir.join("secondary"));
    std::fs::create_dir_all(&secondary_dir).map_err(|e| {
        BenchError::Other(format!(
            "cannot make the secondary's directory {}: {e}",
            secondary_dir.display()
        ))
    })?;
    let floor_before = pair_floor(&primary_dir, &secondary_dir)?;
    let secondary = Node::open(&secondary_dir, SECONDARY, true)?;
    let primary = Node::open(&primary_dir, PRIMARY, false)?;
    let endpoint = secondary
        .repl
        .endpoint_addr()
        .ok_or_else(|| BenchError::Other("the secondary's endpoint did not start".into()))?;
    let mut proxies = Vec::new();
    for &d in plan.delays_ms.iter().filter(|&&d| d > 0) {
        proxies.push((d, DelayProxy::start(endpoint, Duration::from_millis(d))?));
    }

    let mut modes = vec![(Mode::Local, 0)];
    for &d in &plan.delays_ms {
        for m in [
            Mode::Sync,
            Mode::SyncDelayed,
            Mode::Async,
            Mode::AsyncBounded,
        ] {
            modes.push((m, d));
        }
    }
    let mut setups = Vec::new();
    for (mode, delay_ms) in modes {
        let name = format!("wb_sr_{}_d{delay_ms}", mode.tag());
        let durability = if mode == Mode::SyncDelayed {
            Durability::Relaxed
        } else {
            Durability::Full
        };
        let db = primary.target.fresh_db(&name, durability, None)?;
        let mut monitor = db.connect()?;
        monitor.exec(&Dialect::Walden.create_table(TABLE))?;
        if let Some(am) = mode.availability() {
            let addr = if delay_ms == 0 {
                endpoint
            } else {
                proxies
                    .iter()
                    .find(|p| p.0 == delay_ms)
                    .map(|p| p.1.addr())
                    .expect("a proxy per delay")
            };
            primary
                .repl
                .create_group(AgDef {
                    name: format!("ag_{}_d{delay_ms}", mode.tag()),
                    databases: vec![name.clone()],
                    replicas: vec![
                        ReplicaDef {
                            name: PRIMARY.into(),
                            // The primary has no endpoint: nothing fails over here.
                            endpoint_url: "tcp://127.0.0.1:1".into(),
                            mode: AvailabilityMode::SynchronousCommit,
                            max_lag_bytes: None,
                            max_lag_ms: None,
                        },
                        ReplicaDef {
                            name: SECONDARY.into(),
                            endpoint_url: format!("tcp://{addr}"),
                            mode: am,
                            max_lag_bytes: (mode == Mode::AsyncBounded).then_some(BOUND_BYTES),
                            max_lag_ms: (mode == Mode::AsyncBounded).then_some(BOUND_MS),
                        },
                    ],
                    session_timeout_ms: 10_000,
                    required_synchronized_secondaries_to_commit: 0,
                })
                .map_err(|e| BenchError::Other(format!("CREATE AVAILABILITY GROUP: {e}")))?;
        }
        setups.push(Setup {
            mode,
            delay_ms,
            name,
            db,
            monitor,
        });
    }
    wait_ready(&primary, &secondary, &setups)?;
    if progress {
        eprintln!(
            "{}: primary and secondary ready ({} databases) in {:.1} s",
            def.name,
            setups.len(),
            t_setup.elapsed().as_secs_f64()
        );
    }

    let n = plan.rows_per_batch;
    let mut cells = Vec::new();
    for (si, s) in setups.iter().enumerate() {
        for autocommit in [true, false] {
            cells.push(CellRun {
                setup: si,
                autocommit,
                conn: s.db.connect()?,
                latencies_ms: Vec::new(),
                round_ms_per_insert: Vec::new(),
                duration_s: 0.0,
                log_flushes: 0,
                write_transactions: 0,
                mirrored: 0,
                delay_us: 0,
                primary_io: (0, 0),
                secondary_io: (0, 0),
            });
        }
    }
    for round in 0..plan.batches {
        if interrupted() {
            break;
        }
        let t_round = Instant::now();
        let mut order: Vec<usize> = (0..cells.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for ci in order {
            let c = &mut cells[ci];
            let s = &mut setups[c.setup];
            run_batch(&primary, &secondary, s, c, round, n)?;
        }
        if progress {
            eprintln!(
                "{} | round {}/{} | {:.2} s",
                def.name,
                round + 1,
                plan.batches,
                t_round.elapsed().as_secs_f64()
            );
        }
    }

    let mut out = Vec::new();
    for c in &mut cells {
        let s = &setups[c.setup];
        let waits = session_waits(c.conn.as_mut())?;
        let rows = c.round_ms_per_insert.len() as u64 * n;
        let transactions = if c.autocommit {
            rows
        } else {
            c.round_ms_per_insert.len() as u64
        };
        let mut lat = c.latencies_ms.clone();
        lat.sort_by(|a, b| a.total_cmp(b));
        let secs = c.duration_s.max(1e-9);
        out.push(ReplicaCell {
            workload: workload_name(c.autocommit, n),
            autocommit: c.autocommit,
            mode: s.mode.short().into(),
            mode_label: s.mode.label().into(),
            delay_ms: s.delay_ms,
            rows,
            transactions,
            duration_s: c.duration_s,
            ms_per_insert: c.duration_s * 1000.0 / rows.max(1) as f64,
            median_ms_per_insert: stats::median(&c.round_ms_per_insert),
            ms_per_insert_rounds: c.round_ms_per_insert.clone(),
            commit_p50_ms: stats::percentile_sorted(&lat, 0.5),
            commit_p99_ms: stats::percentile_sorted(&lat, 0.99),
            hadr_sync_commit_waits: waits.hadr.0,
            hadr_sync_commit_wait_ms: waits.hadr.1,
            hadr_lag_bound_waits: waits.lag.0,
            hadr_lag_bound_wait_ms: waits.lag.1,
            writelog_waits: waits.writelog.0,
            writelog_wait_ms: waits.writelog.1,
            log_flushes: c.log_flushes,
            write_transactions: c.write_transactions,
            log_flushes_per_s: c.log_flushes as f64 / secs,
            write_transactions_per_s: c.write_transactions as f64 / secs,
            log_writes: c.primary_io.0,
            log_write_avg_ms: avg_ms(c.primary_io),
            secondary_log_writes: c.secondary_io.0,
            secondary_log_write_avg_ms: avg_ms(c.secondary_io),
            mirrored_write_transactions: c.mirrored,
            transaction_delay_ms: c.delay_us as f64 / 1000.0,
            transaction_delay_ms_per_txn: (c.mirrored > 0)
                .then(|| c.delay_us as f64 / 1000.0 / c.mirrored as f64),
            vs_local: None,
        });
    }
    let local: Vec<(bool, f64)> = out
        .iter()
        .filter(|c| c.mode == Mode::Local.short())
        .map(|c| (c.autocommit, c.median_ms_per_insert))
        .collect();
    for c in &mut out {
        c.vs_local = local
            .iter()
            .find(|l| l.0 == c.autocommit)
            .filter(|l| l.1 > 0.0)
            .map(|l| c.median_ms_per_insert / l.1);
    }
    let find = |m: Mode| {
        out.iter()
            .find(|c| c.autocommit && c.delay_ms == 0 && c.mode == m.short() && c.rows > 0)
    };
    let p50_vs_async = match (find(Mode::Sync), find(Mode::Async)) {
        (Some(s), Some(a)) if a.commit_p50_ms > 0.0 => Some(s.commit_p50_ms / a.commit_p50_ms),
        _ => None,
    };
    let (p50_ratio, ms_ratio) = match (find(Mode::Sync), find(Mode::Local)) {
        (Some(s), Some(l)) if l.commit_p50_ms > 0.0 => (
            Some(s.commit_p50_ms / l.commit_p50_ms),
            (l.median_ms_per_insert > 0.0).then(|| s.median_ms_per_insert / l.median_ms_per_insert),
        ),
        _ => (None, None),
    };

    let disk_after = probe.fdatasync_rate(4096, 0.5)?;
    let floor_after = pair_floor(&primary_dir, &secondary_dir)?;
    // Close sessions before the instances go.
    drop(cells);
    for s in setups {
        drop(s.monitor);
    }
    drop(primary);
    // Let the secondary's connections see the primary go before it closes.
    std::thread::sleep(Duration::from_millis(200));
    drop(proxies);
    drop(secondary);
    if secondary_dir.parent() != Some(dir) {
        let _ = std::fs::remove_dir_all(&secondary_dir);
    }

    Ok(ReplicaReport {
        batches: plan.batches,
        rows_per_batch: n,
        delays_ms: plan.delays_ms.clone(),
        delay_note: DELAY_NOTE.into(),
        cells: out,
        p50_ratio_sync_local: p50_ratio,
        p50_ratio_target: P50_TARGET,
        pass: p50_ratio.map(|r| r <= P50_TARGET),
        p50_ratio_sync_async: p50_vs_async,
        ms_per_insert_ratio_sync_local: ms_ratio,
        disk_fdatasync_4k_per_s: [disk_before, disk_after],
        sync_pair_floor: [floor_before, floor_after],
        secondary_dir: secondary_dir.display().to_string(),
        disk_state: crate::disk::DiskState::span(
            crate::disk::DiskState::of(disk_before),
            crate::disk::DiskState::of(disk_after),
        ),
    })
}

/// The disk's own floor for this pair of directories (before the instances
/// open there, and after the cells), in its own scratch files.
fn pair_floor(primary: &Path, secondary: &Path) -> Result<crate::disk::SyncPairFloor> {
    let (a, b) = (primary.join("floor-probe"), secondary.join("floor-probe"));
    std::fs::create_dir_all(&a)?;
    let f = crate::disk::sync_pair_floor(&a, &b, 3, 300);
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
    Ok(f?)
}

fn avg_ms((writes, us): (u64, u64)) -> Option<f64> {
    (writes > 0).then(|| us as f64 / 1000.0 / writes as f64)
}

/// Log writes and their stall (µs) so far of `db` on `node`, if it has it.
fn log_io(node: &Node, db: &str) -> (u64, u64) {
    node.instance.database(db).map_or((0, 0), |d| {
        let f = d.log_file_stats();
        (
            f.num_of_writes.load(Relaxed),
            f.io_stall_write_us.load(Relaxed),
        )
    })
}

fn workload_name(autocommit: bool, n: u64) -> String {
    if autocommit {
        "auto-commit".into()
    } else {
        format!("1 transaction per {}", super::table::int(n))
    }
}

/// Waits until every synchronous secondary is SYNCHRONIZED and every
/// asynchronous one connected, and the log files' spare segments are filled.
fn wait_ready(primary: &Node, secondary: &Node, setups: &[Setup]) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = primary.repl.replica_states();
        let pending: Vec<&str> = setups
            .iter()
            .filter(|s| {
                let Some(am) = s.mode.availability() else {
                    return false;
                };
                let row = rows.iter().find(|r| {
                    !r.is_local
                        && r.replica_name == SECONDARY
                        && r.database_name.eq_ignore_ascii_case(&s.name)
                });
                !row.is_some_and(|r| {
                    r.is_connected
                        && (am == AvailabilityMode::AsynchronousCommit
                            || r.synchronization_state_desc == "SYNCHRONIZED")
                        && (s.mode != Mode::AsyncBounded || r.is_lag_bound_counted == Some(true))
                })
            })
            .map(|s| s.name.as_str())
            .collect();
        if pending.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            return Err(BenchError::Other(format!(
                "secondary not ready after 60 s for {}: {:?}",
                pending.join(", "),
                rows.iter()
                    .filter(|r| !r.is_local)
                    .map(|r| (
                        &r.database_name,
                        r.synchronization_state_desc,
                        &r.last_error
                    ))
                    .collect::<Vec<_>>()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for node in [primary, secondary] {
        for s in setups {
            if let Ok(db) = node.instance.database(&s.name) {
                db.log().prepare_spare(Duration::from_secs(30));
            }
        }
    }
    Ok(())
}

/// Runs one batch of a cell and adds its figures.
fn run_batch(
    primary: &Node,
    secondary: &Node,
    s: &mut Setup,
    c: &mut CellRun,
    round: u64,
    n: u64,
) -> Result<()> {
    let pdb = primary.instance.database(&s.name)?;
    let rc = pdb.replica_counters();
    let before = s.db.counters(s.monitor.as_mut())?;
    let (m0, d0) = (
        rc.mirrored_write_transactions.load(Relaxed),
        rc.transaction_delay_us.load(Relaxed),
    );
    let (p0, s0) = (log_io(primary, &s.name), log_io(secondary, &s.name));
    // Ids of the two workloads never collide in their shared table.
    let base = if c.autocommit { 1 } else { 1 << 40 } + round * n;
    let t0 = Instant::now();
    if c.autocommit {
        for i in 0..n {
            let sql = insert_sql(TABLE, base + i, 0);
            let t = Instant::now();
            c.conn.exec(&sql)?;
            c.latencies_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    } else {
        c.conn.exec("BEGIN")?;
        for i in 0..n {
            c.conn.exec(&insert_sql(TABLE, base + i, 0))?;
        }
        let t = Instant::now();
        c.conn.exec("COMMIT")?;
        c.latencies_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let took = t0.elapsed().as_secs_f64();
    c.duration_s += took;
    c.round_ms_per_insert.push(took * 1000.0 / n as f64);
    let after = s.db.counters(s.monitor.as_mut())?;
    let d = after.since(&before);
    c.log_flushes += d.log_flushes.unwrap_or(0);
    c.write_transactions += d.write_transactions.unwrap_or(0);
    c.mirrored += rc.mirrored_write_transactions.load(Relaxed) - m0;
    c.delay_us += rc.transaction_delay_us.load(Relaxed) - d0;

    let p1 = log_io(primary, &s.name);
    c.primary_io.0 += p1.0 - p0.0;
    c.primary_io.1 += p1.1 - p0.1;
    // Untimed: let delayed commits harden and the secondary catch up.
    if s.mode.availability().is_some() {
        let end = pdb.log().end_lsn();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let hardened_here = pdb.log().hardened_lsn() >= end;
            let there = secondary
                .instance
                .database(&s.name)
                .map(|d| d.log().hardened_lsn())
                .unwrap_or(0);
            if hardened_here && there >= end {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // After the catch-up, so the secondary's writes of this batch count here.
    let s1 = log_io(secondary, &s.name);
    c.secondary_io.0 += s1.0 - s0.0;
    c.secondary_io.1 += s1.1 - s0.1;
    Ok(())
}

struct Waits {
    hadr: (u64, f64),
    lag: (u64, f64),
    writelog: (u64, f64),
}

/// The session's HADR_SYNC_COMMIT and WRITELOG waits (cumulative).
fn session_waits(conn: &mut dyn Conn) -> Result<Waits> {
    let rows = conn.query(
        "SELECT wait_type, waiting_tasks_count, wait_time_ms FROM sys.dm_exec_session_wait_stats \
         WHERE session_id = @@SPID",
    )?;
    let get = |name: &str| {
        rows.iter()
            .find(|r| r[0].as_deref().map(str::trim) == Some(name))
            .map(|r| {
                let f = |v: &Option<String>| {
                    v.as_deref()
                        .and_then(|s| s.trim().parse::<f64>().ok())
                        .unwrap_or(0.0)
                };
                (f(&r[1]) as u64, f(&r[2]))
            })
            .unwrap_or((0, 0.0))
    };
    Ok(Waits {
        hadr: get("HADR_SYNC_COMMIT"),
        lag: get("HADR_LAG_BOUND"),
        writelog: get("WRITELOG"),
    })
}

/// Whether the run has an embedded Walden target (the experiment runs next
/// to it, in its scratch directory).
pub fn embedded_dir(targets: &[Box<dyn Target>]) -> Option<std::path::PathBuf> {
    targets
        .iter()
        .find_map(|t| t.embedded_dir().map(|d| d.to_path_buf()))
}
