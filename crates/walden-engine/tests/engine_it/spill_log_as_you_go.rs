//! A large transaction logs its changes as it goes (`txn/spill.rs`): past
//! `Limits::spill_transaction_bytes` its changes are appended as non-commit
//! parts while it runs, its commit record follows the last one, a rollback
//! appends an abort record and a `ROLLBACK TO` the restored entries (or
//! forget ops for keys the write set loses). Small durable commits run
//! beside it and checkpoints fall due while its parts go in. After a power
//! cut at any instant of its life (while parts are appended, at its
//! commit, after it) it is whole or absent, never in part, and every
//! acknowledged small commit is there; a rolled-back one (or one rolled
//! back to a savepoint) leaves nothing behind after a restart.

use std::ops::Bound;
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

/// Rows of the load: ~300-byte tags, some 20 MB of redo in many parts.
const BULK: i64 = 40_000;
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
            segment_size: 4 << 20,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        // Falls due several times while the load's parts go in: each must
        // keep the segments of its parts.
        background_checkpoints: true,
        checkpoint_log_bytes: 2 << 20,
        checkpoint_interval: None,
        storage: StorageConfig {
            cache_bytes: 4 << 20,
            ..Default::default()
        },
        limits: Limits {
            spill_transaction_bytes: 1 << 20,
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

fn row(id: i64, v: i64, t: &str) -> Vec<Option<Value>> {
    vec![
        Some(Value::Int(id)),
        Some(Value::Int(v)),
        Some(Value::text(t)),
    ]
}

/// Small durable commits, one row each, until told to stop.
struct Small {
    stop: AtomicBool,
    acked: Mutex<Model>,
    commits: std::sync::atomic::AtomicU64,
}

impl Small {
    fn run(&self, db: &Arc<Database>, s: &Arc<Session>) {
        let mut i = 0i64;
        while !self.stop.load(SeqCst) {
            i += 1;
            let id = i % SMALL;
            let r = (i, format!("s{i}"));
            let mut tx = db.begin(s);
            let res = tx
                .update(
                    "small",
                    &[Value::Int(id)],
                    vec![Value::Int(id), Value::Int(r.0), Value::text(&r.1)],
                )
                .and_then(|_| tx.commit(CommitRequest::Durable));
            // After a power cut every call fails: nothing more is acknowledged.
            if res.is_err() {
                return;
            }
            self.acked.lock().unwrap().insert(id, r);
            self.commits.fetch_add(1, Relaxed);
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

struct Running {
    _inst: Instance,
    db: Arc<Database>,
    s: Arc<Session>,
    small: Arc<Small>,
    worker: Option<(JoinHandle<()>, JoinHandle<()>)>,
}

impl Running {
    /// A fresh instance with the load's generation 0 and the small rows,
    /// the small commits running on a thread of their own.
    /// With `checkpoints`, a thread checkpoints back to back.
    fn start(mem: &MemVfs, checkpoints: bool) -> Running {
        let inst = Instance::open(config(mem)).unwrap();
        let db = inst.database("walden").unwrap();
        let s = inst.new_session();
        db.create_table(&s, items_def("bulk", false)).unwrap();
        db.create_table(&s, items_def("small", false)).unwrap();
        for chunk in bulk_model(0).into_iter().collect::<Vec<_>>().chunks(2_000) {
            db.run(&s, CommitRequest::Durable, |tx| {
                for (id, (v, t)) in chunk {
                    tx.insert("bulk", row(*id, *v, t))?;
                }
                Ok(())
            })
            .unwrap();
        }
        let small_rows: Model = (0..SMALL).map(|id| (id, (0, format!("s0-{id}")))).collect();
        db.run(&s, CommitRequest::Durable, |tx| {
            for (id, (v, t)) in &small_rows {
                tx.insert("small", row(*id, *v, t))?;
            }
            Ok(())
        })
        .unwrap();
        let small = Arc::new(Small {
            stop: AtomicBool::new(false),
            acked: Mutex::new(small_rows),
            commits: Default::default(),
        });
        let worker = {
            let (db, s2, small) = (db.clone(), inst.new_session(), small.clone());
            std::thread::spawn(move || small.run(&db, &s2))
        };
        // Checkpoints one after another while the load's parts go in: each
        // must keep the segments of its parts.
        let checkpointer = {
            let (db, small) = (db.clone(), small.clone());
            std::thread::spawn(move || {
                while checkpoints && !small.stop.load(SeqCst) {
                    if let Err(e) = db.checkpoint() {
                        eprintln!("checkpoint: {e}");
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        Running {
            _inst: inst,
            db,
            s,
            small,
            worker: Some((worker, checkpointer)),
        }
    }

    fn stop(&mut self) -> Model {
        self.small.stop.store(true, SeqCst);
        if let Some((w, c)) = self.worker.take() {
            w.join().unwrap();
            c.join().unwrap();
        }
        self.small.acked.lock().unwrap().clone()
    }

    fn wait_for_commits(&self, n: u64) {
        let base = self.small.commits.load(Relaxed);
        while self.small.commits.load(Relaxed) < base + n {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The load of `generation` in one transaction, made so that its parts
/// change keys more than once and void some: TRUNCATE; every row, a
/// seventh of them with a provisional tag; a savepoint, then rows past the
/// load's and rewrites of others, undone by `ROLLBACK TO`; then the
/// provisional rows rewritten to their final tag. Its model is
/// `bulk_model(generation)`.
fn load(tx: &mut Transaction, generation: i64) -> Result<()> {
    tx.truncate("bulk")?;
    for (id, (v, t)) in bulk_model(generation) {
        let t = if id % 7 == 0 { format!("p-{t}") } else { t };
        tx.insert("bulk", row(id, v, &t))?;
    }
    tx.savepoint("a")?;
    for id in BULK..BULK + 3_000 {
        tx.insert("bulk", row(id, generation, "extra"))?;
    }
    for id in (0..BULK).step_by(5) {
        tx.update(
            "bulk",
            &[Value::Int(id)],
            vec![Value::Int(id), Value::Int(-1), Value::text("undone")],
        )?;
    }
    tx.delete("bulk", &[Value::Int(1)])?;
    tx.rollback_to_savepoint("a")?;
    for id in (0..BULK).step_by(7) {
        tx.update(
            "bulk",
            &[Value::Int(id)],
            vec![
                Value::Int(id),
                Value::Int(generation),
                Value::text(tag(generation, id)),
            ],
        )?;
    }
    Ok(())
}

fn reopen(after: &MemVfs) -> (Instance, Arc<Database>, Arc<Session>) {
    let inst = Instance::open(config(after)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    (inst, db, s)
}

/// Each small row holds what was acknowledged for it or a later commit
/// that made it to disk before the cut.
fn check_small(db: &Arc<Database>, s: &Arc<Session>, acked: &Model, what: &str) {
    let mut tx = db.begin(s);
    tx.begin_statement();
    let st = db.table("small").unwrap();
    for (id, (v, _)) in acked {
        let got = tx.get_in(&st, &[Value::Int(*id)]).unwrap().unwrap();
        let got_v = got[1].as_i64().unwrap();
        assert!(
            got_v >= *v,
            "{what}: small row {id} is {got_v}, acknowledged {v}"
        );
    }
}

#[test]
fn a_large_transaction_logs_as_it_goes_and_commits_whole() {
    let mem = MemVfs::new();
    let mut r = Running::start(&mem, true);
    let mut tx = r.db.begin(&r.s);
    let start = r.db.log().end_lsn();
    let began = std::time::Instant::now();
    let cps = r.db.counters().checkpoints.load(Relaxed);
    load(&mut tx, 1).unwrap();
    // Between its parts and its commit: the redo start stays at or below
    // its first part, so none of its segments is released.
    let info = r.db.checkpoint().unwrap();
    let end = r.db.log().end_lsn();
    println!(
        "load from {start} to {end}, checkpoint's redo start {}",
        info.lsn
    );
    // Its first part goes in once it holds 1 MiB (a few small commits
    // may land in between).
    assert!(
        info.lsn < start + (1 << 20),
        "the checkpoint's redo start passed the load's parts"
    );
    let cps = r.db.counters().checkpoints.load(Relaxed) - cps;
    let took = began.elapsed();
    assert!(tx.is_spilled(), "the load did not log as it went");
    assert_eq!(tx.spill_files(), 1, "the load's rows did not leave memory");
    let logged = r.db.log().end_lsn() - start;
    assert!(logged > 8 << 20, "only {logged} bytes logged before COMMIT");
    r.wait_for_commits(5);
    let before = r.db.log().end_lsn();
    tx.commit(CommitRequest::Durable).unwrap();
    let at_commit = r.db.log().end_lsn() - before;
    println!(
        "logged {logged} bytes while the load ran ({took:?}, {cps} checkpoints), \
         {at_commit} at its commit"
    );
    assert!(
        at_commit < logged / 4,
        "COMMIT appended {at_commit} bytes of {logged}"
    );
    r.wait_for_commits(5);
    let acked = r.stop();
    check(&r.db, &r.s, "bulk", &bulk_model(1), &BULK_PROBES, "live");
    check(&r.db, &r.s, "small", &acked, &SMALL_PROBES, "live");
    let after = mem.crash(CrashMode::SyncedOnly, 7);
    drop(r);
    let (_inst, db, s) = reopen(&after);
    check(&db, &s, "bulk", &bulk_model(1), &BULK_PROBES, "recovered");
    check(&db, &s, "small", &acked, &SMALL_PROBES, "recovered");
}

#[test]
fn a_power_cut_in_a_large_transactions_life_keeps_it_whole_or_absent() {
    let mut rng = Rng(0x5b111);
    let mut seen = [0usize; 2];
    for seed in 0..10u64 {
        let mem = MemVfs::new();
        let mut r = Running::start(&mem, true);
        r.wait_for_commits(5);
        let (db, s) = (r.db.clone(), r.s.clone());
        let acknowledged = Arc::new(AtomicBool::new(false));
        let loader = {
            let acknowledged = acknowledged.clone();
            std::thread::spawn(move || {
                let mut tx = db.begin(&s);
                let ok = load(&mut tx, 1).is_ok() && tx.commit(CommitRequest::Durable).is_ok();
                acknowledged.store(ok, SeqCst);
            })
        };
        // The cut lands while parts go in, at the commit, or after it.
        std::thread::sleep(Duration::from_micros(rng.below(600_000)));
        let mode = [
            CrashMode::SyncedOnly,
            CrashMode::TornPrefix,
            CrashMode::ScatteredSectors,
        ][(seed % 3) as usize];
        let load_acked = acknowledged.load(SeqCst);
        let acked = r.small.acked.lock().unwrap().clone();
        let after = mem.crash(mode, seed);
        loader.join().unwrap();
        r.stop();
        drop(r);
        let what = format!("seed {seed}, {mode:?}, load acknowledged {load_acked}");
        let (_inst, db, s) = reopen(&after);
        let whole = db.table("bulk").unwrap().len() == BULK as usize;
        if !whole {
            assert!(!load_acked, "{what}: the acknowledged load is lost");
        }
        seen[whole as usize] += 1;
        let model = bulk_model(if whole { 1 } else { 0 });
        check(&db, &s, "bulk", &model, &BULK_PROBES, &what);
        check_small(&db, &s, &acked, &what);
        println!("{what}: load {}", if whole { "whole" } else { "absent" });
    }
    println!("absent {}, whole {}", seen[0], seen[1]);
}

#[test]
fn a_rolled_back_large_transaction_leaves_nothing_after_restart() {
    let mem = MemVfs::new();
    // No checkpoints: recovery replays all three transactions.
    let mut r = Running::start(&mem, false);
    // ROLLBACK: an abort record voids the parts.
    let mut tx = r.db.begin(&r.s);
    load(&mut tx, 1).unwrap();
    assert!(tx.is_spilled());
    tx.rollback();
    // ROLLBACK TO a savepoint set before the transaction logged anything:
    // forget ops void every part; the commit keeps one row.
    let mut tx = r.db.begin(&r.s);
    tx.savepoint("before").unwrap();
    load(&mut tx, 2).unwrap();
    assert!(tx.is_spilled());
    tx.rollback_to_savepoint("before").unwrap();
    tx.update(
        "bulk",
        &[Value::Int(3)],
        vec![Value::Int(3), Value::Int(7), Value::text("kept")],
    )
    .unwrap();
    tx.commit(CommitRequest::Durable).unwrap();
    let mut model = bulk_model(0);
    model.insert(3, (7, "kept".into()));
    check(&r.db, &r.s, "bulk", &model, &BULK_PROBES, "live");
    // A transaction whose parts are followed by neither record (the
    // session is gone at the cut) is absent too.
    let mut open = r.db.begin(&r.s);
    load(&mut open, 3).unwrap();
    assert!(open.is_spilled());
    r.wait_for_commits(5);
    let acked = r.stop();
    let after = mem.crash(CrashMode::SyncedOnly, 3);
    drop(open);
    drop(r);
    let (_inst, db, s) = reopen(&after);
    check(&db, &s, "bulk", &model, &BULK_PROBES, "recovered");
    check(&db, &s, "small", &acked, &SMALL_PROBES, "recovered");
}

fn dir_config(dir: &std::path::Path) -> InstanceConfig {
    InstanceConfig {
        background_checkpoints: false,
        limits: Limits {
            spill_transaction_bytes: 1 << 20,
            ..Default::default()
        },
        ..InstanceConfig::new(dir)
    }
}

/// Seeds `to`'s "walden" from `from` in one piece, as the replication link
/// does in many.
fn seed(from: &Arc<Database>, to: &Instance) {
    let rx = std::cell::RefCell::new(None);
    let bytes = std::cell::RefCell::new(Vec::new());
    let (_, len) = from
        .seed_stream(
            1 << 20,
            &mut |lsn| {
                *rx.borrow_mut() = Some(to.begin_seed("walden", lsn)?);
                Ok(())
            },
            &mut |b| {
                bytes.borrow_mut().extend_from_slice(b);
                rx.borrow_mut().as_mut().unwrap().write(b)
            },
        )
        .unwrap();
    let crc = crc32c_of(&bytes.borrow());
    rx.into_inner().unwrap().finish(len, crc).unwrap();
}

/// CRC-32C (Castagnoli), bit by bit: the test's own, not the engine's.
fn crc32c_of(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// A durable one-row commit on the primary: everything before it is
/// hardened, so the link may ship it. Returns its end LSN.
fn harden(db: &Arc<Database>, s: &Arc<Session>, i: i64) -> u64 {
    let mut tx = db.begin(s);
    tx.update(
        "small",
        &[Value::Int(0)],
        vec![Value::Int(0), Value::Int(i), Value::text("h")],
    )
    .unwrap();
    tx.commit(CommitRequest::Durable).unwrap().lsn.unwrap()
}

/// Ships the primary's records in `[from, to)` to the secondary as the link
/// does: framed, appended, then redone. Returns `to`.
fn ship(p: &Arc<Database>, sec: &Arc<Database>, from: u64, to: u64) -> u64 {
    let mut frames = Vec::new();
    p.log()
        .read_range(from, to, &mut |_, _, rec| {
            frames.extend_from_slice(&(rec.len() as u32).to_le_bytes());
            frames.extend_from_slice(rec);
            Ok(())
        })
        .unwrap();
    sec.replica_append(from, &frames).unwrap();
    sec.replica_redo(from, &frames).unwrap();
    to
}

/// A secondary receives a large transaction's parts before its commit
/// record: its readers see none of it until the commit record arrives,
/// then all of it; an abort record voids the parts; a secondary that
/// restarts between the parts and the commit record reads the parts back
/// from its own log.
#[test]
fn a_secondary_receives_a_large_transaction_whole() {
    let (pd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let p = Instance::open(dir_config(pd.path())).unwrap();
    let pdb = p.database("walden").unwrap();
    let s = p.new_session();
    pdb.create_table(&s, items_def("bulk", false)).unwrap();
    pdb.create_table(&s, items_def("small", false)).unwrap();
    pdb.run(&s, CommitRequest::Durable, |tx| {
        for (id, (v, t)) in bulk_model(0) {
            tx.insert("bulk", row(id, v, &t))?;
        }
        tx.insert("small", row(0, 0, "h"))?;
        Ok(())
    })
    .unwrap();
    let mut sec = Instance::open(dir_config(sd.path())).unwrap();
    seed(&pdb, &sec);
    let mut sdb = sec.database("walden").unwrap();
    assert!(sdb.is_secondary());
    let mut at = sdb.log().end_lsn();
    let gen0 = bulk_model(0);

    // Rolled back: the parts arrive, then the abort record.
    let mut tx = pdb.begin(&s);
    load(&mut tx, 1).unwrap();
    assert!(tx.is_spilled());
    at = ship(&pdb, &sdb, at, harden(&pdb, &s, 1));
    check(
        &sdb,
        &sec.new_session(),
        "bulk",
        &gen0,
        &BULK_PROBES,
        "parts of 1",
    );
    tx.rollback();
    at = ship(&pdb, &sdb, at, harden(&pdb, &s, 2));
    check(
        &sdb,
        &sec.new_session(),
        "bulk",
        &gen0,
        &BULK_PROBES,
        "rolled back",
    );

    // Committed, the secondary restarting between the parts and the commit.
    let mut tx = pdb.begin(&s);
    load(&mut tx, 2).unwrap();
    assert!(tx.is_spilled());
    at = ship(&pdb, &sdb, at, harden(&pdb, &s, 3));
    check(
        &sdb,
        &sec.new_session(),
        "bulk",
        &gen0,
        &BULK_PROBES,
        "parts of 2",
    );
    sec.shutdown_nowait().unwrap();
    drop(sdb);
    drop(sec);
    sec = Instance::open(dir_config(sd.path())).unwrap();
    sdb = sec.database("walden").unwrap();
    assert_eq!(sdb.log().end_lsn(), at);
    check(
        &sdb,
        &sec.new_session(),
        "bulk",
        &gen0,
        &BULK_PROBES,
        "restarted",
    );
    let lsn = tx.commit(CommitRequest::Durable).unwrap().lsn.unwrap();
    ship(&pdb, &sdb, at, lsn);
    check(
        &sdb,
        &sec.new_session(),
        "bulk",
        &bulk_model(2),
        &BULK_PROBES,
        "committed",
    );
    check(&pdb, &s, "bulk", &bulk_model(2), &BULK_PROBES, "primary");
    sec.close().unwrap();
    p.close().unwrap();
}

/// `BEGIN; CREATE TABLE` (keyed by a hidden row id)`; a load; ALTER TABLE
/// ADD PRIMARY KEY; more rows; COMMIT`: the key's build folds the logged
/// rows into its DDL record (`txn/fold.rs`), so forget ops void them in
/// the parts and recovery re-keys the table once, from the fold. After a
/// power cut the table is as committed, rows under their new key.
#[test]
fn ddl_folding_a_logged_load_recovers_as_committed() {
    let mem = MemVfs::new();
    let mut r = Running::start(&mem, true);
    let mut tx = r.db.begin(&r.s);
    let mut def = items_def("h", false);
    def.primary_key.clear();
    tx.create_table(def).unwrap();
    let mut model = Model::new();
    for id in 0..20_000 {
        let t = tag(5, id);
        tx.insert("h", row(id, 5, &t)).unwrap();
        model.insert(id, (5, t));
    }
    assert!(tx.is_spilled());
    tx.add_primary_key("h", &["id"]).unwrap();
    for id in 20_000..25_000 {
        let t = tag(6, id);
        tx.insert("h", row(id, 6, &t)).unwrap();
        model.insert(id, (6, t));
    }
    tx.update(
        "h",
        &[Value::Int(7)],
        vec![Value::Int(7), Value::Int(9), Value::text("after the key")],
    )
    .unwrap();
    model.insert(7, (9, "after the key".into()));
    tx.commit(CommitRequest::Durable).unwrap();
    let probes = Probes {
        ids: 25_000,
        step: 499,
        values: 1,
    };
    check(&r.db, &r.s, "h", &model, &probes, "live");
    let acked = r.stop();
    let after = mem.crash(CrashMode::SyncedOnly, 5);
    drop(r);
    let (_inst, db, s) = reopen(&after);
    check(&db, &s, "h", &model, &probes, "recovered");
    check(&db, &s, "small", &acked, &SMALL_PROBES, "recovered");
}

/// Files in the database's spill directory (`store/layer.rs`).
fn spill_files(mem: &MemVfs, db: &Arc<Database>) -> usize {
    use walden_log::Vfs;
    let dir = db.dir().join("spill");
    if !mem.exists(&dir).unwrap() {
        return 0;
    }
    mem.list(&dir).unwrap().len()
}

/// Past the bound a load into a table its transaction truncated leaves
/// memory for a spill file (slices 2 and 3): the transaction reads its
/// rows (and changes some) through the file, DDL that would replace the
/// table is refused (0A000), the commit installs the file as a layer that
/// a snapshot older than the commit does not see, and the next checkpoint
/// writes it into the store and removes it. After a power cut the load is
/// as committed.
#[test]
fn a_load_into_a_truncated_table_leaves_memory_and_commits_whole() {
    let mem = MemVfs::new();
    let mut r = Running::start(&mem, false);
    let s2 = r._inst.new_session();
    let mut old = r.db.begin(&s2);
    old.set_isolation(Isolation::RepeatableRead);
    old.begin_statement();
    let mut tx = r.db.begin(&r.s);
    tx.truncate("bulk").unwrap();
    let mut model = Model::new();
    for id in 0..BULK {
        let t = tag(4, id);
        tx.insert("bulk", row(id, 4, &t)).unwrap();
        model.insert(id, (4, t));
    }
    assert_eq!(tx.spill_files(), 1, "the load's rows did not leave memory");
    let t = r.db.table("bulk").unwrap();
    let in_memory = t.rows.keys_in_memory();
    assert_eq!(in_memory, 0, "the truncated table holds rows in memory");
    assert_eq!(spill_files(&mem, &r.db), 1);
    // Its own rows, read through the file, changed over it.
    tx.begin_statement();
    tx.update(
        "bulk",
        &[Value::Int(5)],
        vec![Value::Int(5), Value::Int(8), Value::text("changed")],
    )
    .unwrap();
    model.insert(5, (8, "changed".into()));
    assert!(tx.delete("bulk", &[Value::Int(6)]).unwrap());
    model.remove(&6);
    assert!(matches!(
        tx.insert("bulk", row(7, 0, "again")),
        Err(EngineError::DuplicateKey(_))
    ));
    let t = r.db.table("bulk").unwrap();
    let seen: Model = tx
        .scan_in(&t, (Bound::Unbounded, Bound::Unbounded))
        .unwrap()
        .iter()
        .map(|(_, r)| model::row_of(r))
        .collect();
    assert!(seen == model, "the transaction's own rows differ");
    assert_eq!(
        tx.get_in(&t, &[Value::Int(BULK - 1)])
            .unwrap()
            .map(|r| model::row_of(&r).1),
        model.get(&(BULK - 1)).cloned()
    );
    // Its parts hold the rows: DDL replacing the table is refused.
    assert!(matches!(
        tx.truncate("bulk"),
        Err(EngineError::DdlAfterSpill(_))
    ));
    tx.commit(CommitRequest::Durable).unwrap();
    check(&r.db, &r.s, "bulk", &model, &BULK_PROBES, "live, layered");
    // A snapshot older than the commit sees the truncated table empty, as
    // it would the commit's versions in memory.
    let t = r.db.table("bulk").unwrap();
    assert_eq!(
        old.scan_in(&t, (Bound::Unbounded, Bound::Unbounded))
            .unwrap()
            .len(),
        0
    );
    drop(old);
    r.db.checkpoint().unwrap();
    assert_eq!(
        spill_files(&mem, &r.db),
        0,
        "the checkpoint left the spill file"
    );
    check(
        &r.db,
        &r.s,
        "bulk",
        &model,
        &BULK_PROBES,
        "live, checkpointed",
    );
    let acked = r.stop();
    let after = mem.crash(CrashMode::SyncedOnly, 11);
    drop(r);
    let (_inst, db, s) = reopen(&after);
    check(&db, &s, "bulk", &model, &BULK_PROBES, "recovered");
    check(&db, &s, "small", &acked, &SMALL_PROBES, "recovered");
}

/// A power cut between a layered commit and the checkpoint that writes the
/// layer: the spill file is gone after the restart, redo brings the rows
/// back from the log. And ROLLBACK of a layered load leaves nothing.
#[test]
fn a_layered_commit_survives_a_power_cut_before_its_checkpoint() {
    let mem = MemVfs::new();
    let mut r = Running::start(&mem, false);
    let mut tx = r.db.begin(&r.s);
    tx.truncate("bulk").unwrap();
    for id in 0..BULK {
        tx.insert("bulk", row(id, 9, "rolled back")).unwrap();
    }
    assert_eq!(tx.spill_files(), 1);
    tx.rollback();
    assert_eq!(
        spill_files(&mem, &r.db),
        0,
        "a rollback left its spill file"
    );
    check(
        &r.db,
        &r.s,
        "bulk",
        &bulk_model(0),
        &BULK_PROBES,
        "rolled back",
    );
    let mut tx = r.db.begin(&r.s);
    tx.truncate("bulk").unwrap();
    let mut model = Model::new();
    for id in 0..BULK {
        let t = tag(2, id);
        tx.insert("bulk", row(id, 2, &t)).unwrap();
        model.insert(id, (2, t));
    }
    assert_eq!(tx.spill_files(), 1);
    tx.commit(CommitRequest::Durable).unwrap();
    assert_eq!(spill_files(&mem, &r.db), 1);
    let acked = r.stop();
    let after = mem.crash(CrashMode::TornPrefix, 12);
    drop(r);
    let (_inst, db, s) = reopen(&after);
    assert_eq!(spill_files(&after, &db), 0, "the open left a spill file");
    check(&db, &s, "bulk", &model, &BULK_PROBES, "recovered");
    check(&db, &s, "small", &acked, &SMALL_PROBES, "recovered");
}

/// `ALTER TABLE ADD PRIMARY KEY` of a large table re-keys it into a spill
/// file, not memory; a duplicate is still found (nothing changes), and the
/// re-keyed table is as committed after a checkpoint and a power cut.
#[test]
fn a_large_primary_key_build_goes_through_a_spill_file() {
    let mem = MemVfs::new();
    let mut r = Running::start(&mem, false);
    for name in ["h", "d"] {
        let mut def = items_def(name, false);
        def.primary_key.clear();
        r.db.create_table(&r.s, def).unwrap();
    }
    let mut model = Model::new();
    for chunk in (0..BULK).collect::<Vec<_>>().chunks(5_000) {
        r.db.run(&r.s, CommitRequest::Durable, |tx| {
            for &id in chunk {
                tx.insert("h", row(BULK - id, 3, &tag(3, id)))?;
                // `d` repeats its first id at its end (another batch).
                tx.insert("d", row(if id == BULK - 1 { 0 } else { id }, 3, "d"))?;
            }
            Ok(())
        })
        .unwrap();
        for &id in chunk {
            model.insert(BULK - id, (3, tag(3, id)));
        }
    }
    r.db.checkpoint().unwrap();
    let mut tx = r.db.begin(&r.s);
    assert!(matches!(
        tx.add_primary_key("d", &["id"]),
        Err(EngineError::UniqueBuildFailed(_))
    ));
    drop(tx);
    let mut tx = r.db.begin(&r.s);
    tx.add_primary_key("h", &["id"]).unwrap();
    assert_eq!(tx.spill_files(), 1, "the build was held in memory");
    tx.commit(CommitRequest::Durable).unwrap();
    let t = r.db.table("h").unwrap();
    assert_eq!(t.rows.keys_in_memory(), 0);
    let probes = Probes {
        ids: BULK + 1,
        step: 331,
        values: 1,
    };
    check(&r.db, &r.s, "h", &model, &probes, "live, layered");
    r.db.checkpoint().unwrap();
    assert_eq!(spill_files(&mem, &r.db), 0);
    check(&r.db, &r.s, "h", &model, &probes, "live, checkpointed");
    r.stop();
    let after = mem.crash(CrashMode::SyncedOnly, 13);
    drop(r);
    let (_inst, db, s) = reopen(&after);
    check(&db, &s, "h", &model, &probes, "recovered");
}
