//! A bulk load with DDL (`pgbench -i`: TRUNCATE, then every row, in one
//! transaction) commits many redo parts. Only the last one, with the commit
//! flag, holds the commit gate exclusively; the parts before it go in
//! beside other commits and checkpoints, which see the load as an open
//! transaction. Here small durable commits run while such a load commits:
//! their records go in between its parts, and after a power cut (once the load is
//! acknowledged, or at some instant while it commits) the load is whole or
//! absent, never in part, and every acknowledged small commit is there.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use walden_engine::store::StorageConfig;
use walden_engine::*;
use walden_log::CrashMode;

use crate::model;
use model::{check, items_def, Model, Probes, Rng};

/// Rows of the load: with ~300-byte tags some 18 MB of redo, 70 parts.
const BULK: i64 = 60_000;
/// Rows the small commits rewrite.
const SMALL: i64 = 64;

const BULK_PROBES: Probes = Probes {
    ids: BULK,
    step: 997,
    values: 1,
};
const SMALL_PROBES: Probes = Probes {
    ids: SMALL,
    step: 1,
    values: 1,
};

fn config(mem: &MemVfs) -> InstanceConfig {
    InstanceConfig {
        vfs: Arc::new(mem.clone()),
        log: LogConfig {
            segment_size: 8 << 20,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        // Falls due several times while the load's parts go in.
        background_checkpoints: true,
        checkpoint_log_bytes: 2 << 20,
        checkpoint_interval: None,
        storage: StorageConfig {
            cache_bytes: 4 << 20,
            ..Default::default()
        },
        ..InstanceConfig::new("/inst")
    }
}

fn tag(generation: i64, id: i64) -> String {
    format!("g{generation}-{id}-{}", "y".repeat(280))
}

/// `generation`'s rows of the load (generation 0 is half as many).
fn bulk_model(generation: i64) -> Model {
    let n = if generation == 0 { BULK / 2 } else { BULK };
    (0..n)
        .map(|id| (id, (generation, tag(generation, id))))
        .collect()
}

/// Small durable commits, one row each, until told to stop: what was
/// acknowledged, and the end LSN of each commit record.
struct Small {
    stop: AtomicBool,
    acked: Mutex<Model>,
    commits: std::sync::atomic::AtomicU64,
    lsns: Mutex<Vec<u64>>,
}

impl Small {
    fn new(initial: Model) -> Arc<Small> {
        Arc::new(Small {
            stop: AtomicBool::new(false),
            acked: Mutex::new(initial),
            commits: Default::default(),
            lsns: Mutex::new(Vec::new()),
        })
    }

    fn run(&self, db: &Arc<Database>, s: &Arc<Session>) {
        let mut i = 0i64;
        while !self.stop.load(SeqCst) {
            i += 1;
            let id = i % SMALL;
            let row = (i, format!("s{i}"));
            let mut tx = db.begin(s);
            let r = tx
                .update(
                    "small",
                    &[Value::Int(id)],
                    vec![Value::Int(id), Value::Int(row.0), Value::text(&row.1)],
                )
                .and_then(|_| tx.commit(CommitRequest::Durable));
            // After a power cut every call fails: nothing more is acknowledged.
            let Ok(out) = r else { return };
            self.lsns.lock().unwrap().push(out.lsn.unwrap());
            self.acked.lock().unwrap().insert(id, row);
            self.commits.fetch_add(1, Relaxed);
        }
    }
}

/// Opens a fresh instance with the load's generation 0 and the small rows.
fn setup(mem: &MemVfs) -> (Instance, Arc<Database>, Arc<Session>, Model) {
    let inst = Instance::open(config(mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("bulk", false)).unwrap();
    db.create_table(&s, items_def("small", false)).unwrap();
    for chunk in bulk_model(0).into_iter().collect::<Vec<_>>().chunks(5_000) {
        db.run(&s, CommitRequest::Durable, |tx| {
            for (id, (v, t)) in chunk {
                let row = vec![Value::Int(*id), Value::Int(*v), Value::text(t)];
                tx.insert("bulk", row.into_iter().map(Some).collect())?;
            }
            Ok(())
        })
        .unwrap();
    }
    let small: Model = (0..SMALL).map(|id| (id, (0, format!("s0-{id}")))).collect();
    db.run(&s, CommitRequest::Durable, |tx| {
        for (id, (v, t)) in &small {
            let row = vec![Value::Int(*id), Value::Int(*v), Value::text(t)];
            tx.insert("small", row.into_iter().map(Some).collect())?;
        }
        Ok(())
    })
    .unwrap();
    (inst, db, s, small)
}

/// [`setup`], with the small commits running on a thread of their own.
fn start(
    mem: &MemVfs,
) -> (
    Instance,
    Arc<Database>,
    Arc<Session>,
    Arc<Small>,
    JoinHandle<()>,
) {
    let (inst, db, s, small_rows) = setup(mem);
    let small = Small::new(small_rows);
    let worker = {
        let (db, s2, small) = (db.clone(), inst.new_session(), small.clone());
        std::thread::spawn(move || small.run(&db, &s2))
    };
    (inst, db, s, small, worker)
}

/// The load of `generation` in one transaction: TRUNCATE, then every row.
fn load(db: &Arc<Database>, s: &Arc<Session>, generation: i64) -> Transaction {
    let mut tx = db.begin(s);
    tx.truncate("bulk").unwrap();
    for (id, (v, t)) in bulk_model(generation) {
        let row = vec![Value::Int(id), Value::Int(v), Value::text(&t)];
        tx.insert("bulk", row.into_iter().map(Some).collect())
            .unwrap();
    }
    tx
}

/// Both tables against their models.
fn check_both(db: &Arc<Database>, s: &Arc<Session>, bulk: &Model, small: &Model, what: &str) {
    check(db, s, "bulk", bulk, &BULK_PROBES, what);
    check(db, s, "small", small, &SMALL_PROBES, what);
}

fn wait_for_commits(small: &Small, n: u64) {
    let base = small.commits.load(Relaxed);
    while small.commits.load(Relaxed) < base + n {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn small_commits_go_on_while_a_bulk_load_with_ddl_commits() {
    let mem = MemVfs::new();
    let (inst, db, s, small, worker) = start(&mem);
    // Under a loaded machine the small writer may not be scheduled during
    // one load; a few loads in a row make that vanishingly unlikely.
    let mut during = 0;
    let mut generation = 0;
    let mut checkpoints = 0;
    while during < 10 && generation < 4 {
        generation += 1;
        let tx = load(&db, &s, generation);
        wait_for_commits(&small, 20);
        let cp = db.counters().checkpoints.load(Relaxed);
        // The load's records lie between these two LSNs: a small commit
        // whose record does went in between two of the load's parts (at
        // most one or two can land between `start` and its first part).
        let start = db.log().end_lsn();
        let began = std::time::Instant::now();
        let end = tx.commit(CommitRequest::Durable).unwrap().lsn.unwrap();
        let took = began.elapsed();
        during = small
            .lsns
            .lock()
            .unwrap()
            .iter()
            .filter(|&&l| l > start && l < end)
            .count();
        checkpoints += db.counters().checkpoints.load(Relaxed) - cp;
        println!(
            "load {generation}: {during} small commit records among its parts \
             (commit {took:?}), {checkpoints} checkpoints so far during loads"
        );
    }
    assert!(
        during >= 10,
        "only {during} small commit records among the load's parts \
         (did its parts hold the gate exclusively?)"
    );
    wait_for_commits(&small, 5);
    small.stop.store(true, SeqCst);
    worker.join().unwrap();
    let acked = small.acked.lock().unwrap().clone();
    check_both(&db, &s, &bulk_model(generation), &acked, "live");
    let after = mem.crash(CrashMode::SyncedOnly, 7);
    drop(s);
    drop(db);
    drop(inst);
    let inst = Instance::open(config(&after)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    check_both(&db, &s, &bulk_model(generation), &acked, "recovered");
}

#[test]
fn a_power_cut_while_a_bulk_load_commits_keeps_it_whole_or_absent() {
    let mut rng = Rng(0xb01d);
    for seed in 0..8u64 {
        let mem = MemVfs::new();
        let (inst, db, s, small, worker) = start(&mem);
        let tx = load(&db, &s, 1);
        wait_for_commits(&small, 20);
        // The cut lands at some instant of the commit (or after it).
        let committer = std::thread::spawn(move || tx.commit(CommitRequest::Durable).is_ok());
        std::thread::sleep(Duration::from_micros(rng.below(150_000)));
        let mode = [
            CrashMode::SyncedOnly,
            CrashMode::TornPrefix,
            CrashMode::ScatteredSectors,
        ][(seed % 3) as usize];
        // Read before the cut: the acknowledged small commits and whether
        // the load was acknowledged are what must survive.
        let load_acked = committer.is_finished();
        let acked = small.acked.lock().unwrap().clone();
        let after = mem.crash(mode, seed);
        let load_ok = committer.join().unwrap();
        small.stop.store(true, SeqCst);
        worker.join().unwrap();
        drop(s);
        drop(db);
        drop(inst);
        let what = format!("seed {seed}, {mode:?}, load acknowledged {load_ok}");
        let inst = Instance::open(config(&after)).unwrap();
        let db = inst.database("walden").unwrap();
        let s = inst.new_session();
        let t = db.table("bulk").unwrap();
        let whole = if t.len() == BULK as usize {
            bulk_model(1)
        } else {
            assert!(
                !(load_acked && load_ok),
                "{what}: the acknowledged load is lost"
            );
            bulk_model(0)
        };
        check(&db, &s, "bulk", &whole, &BULK_PROBES, &what);
        // Each small row holds what was acknowledged for it or a later
        // commit that made it to disk before the cut.
        let mut tx = db.begin(&s);
        tx.begin_statement();
        let st = db.table("small").unwrap();
        for (id, (v, _)) in &acked {
            let got = tx.get_in(&st, &[Value::Int(*id)]).unwrap().unwrap();
            let got_v = got[1].as_i64().unwrap();
            assert!(
                got_v >= *v,
                "{what}: small row {id} is {got_v}, acknowledged {v}"
            );
        }
        println!(
            "{what}: load {}",
            if whole.len() == BULK as usize {
                "whole"
            } else {
                "absent"
            }
        );
    }
}
