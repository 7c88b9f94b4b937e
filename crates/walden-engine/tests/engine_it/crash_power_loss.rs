//! Simulated power loss, many times over: concurrent sessions mix durable and
//! delayed commits on the in-memory file system, which is "unplugged" at a
//! random moment (keeping only synced bytes, or also a torn or scattered part
//! of the unsynced writes; directory entries and sizes only as far as they
//! were synced). The workload inserts, deletes its own older rows, writes
//! now and then a transaction of several log records (> 256 KiB), and one
//! session runs DDL (CREATE TABLE, INSERT, TRUNCATE, DROP TABLE, and
//! transactions mixing DDL and rows, committed or rolled back). Some
//! trials inject EIO or ENOSPC on a write or a sync before the power loss,
//! some damage one checkpoint image afterwards (bit rot). After recovery the
//! database must hold
//!   (a) every acknowledged durable commit and DDL statement,
//!   (b) a prefix of the acknowledged commits in commit (LSN) order,
//!   (c) exactly the rows of the surviving transactions of each session
//!       (inserts, deletes and the counter update together),
//!   (d) no lost delayed commit beyond the configured exposure bound,
//!   (e) the DDL track's tables as after its acknowledged statements (or one
//!       more, the one in flight),
//!   (f) sane counters, and take new commits.
//!
//! Every random choice of a trial (timing aside) comes from its seed; a
//! failure prints `WALDEN_CRASH_SEED=<seed> WALDEN_CRASH_TRIALS=1` to rerun it.

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use walden_engine::*;
use walden_log::{CrashMode, Faults};

const SESSIONS: i64 = 3;
/// Transaction `q` of a session deletes the rows of its transaction `q - 5`
/// when `q % 3 == 0`.
const DELETE_BACK: i64 = 5;

fn deletes_back(q: i64) -> bool {
    q > DELETE_BACK && q % 3 == 0
}

#[derive(Clone, Copy, Debug)]
struct Ack {
    session: i64,
    seq: i64,
    lsn: u64,
    durable: bool,
}

struct Shared {
    acks: Mutex<(Vec<Ack>, Option<MemVfs>)>,
    crashed: AtomicBool,
    /// Rows of each session's transactions, by seq, recorded before commit.
    parts: Mutex<HashMap<(i64, i64), i64>>,
    /// DDL track: statements started and acknowledged.
    ddl: Mutex<(u64, u64)>,
    /// CREATE / DROP DATABASE extra, alternately: started and acknowledged.
    dbops: Mutex<(u64, u64)>,
    inst: Instance,
}

fn config(mem: &MemVfs, rng: &mut impl Rng) -> InstanceConfig {
    InstanceConfig {
        vfs: Arc::new(mem.clone()),
        log: LogConfig {
            block_size: 8192,
            segment_size: 128 * 1024,
            buffer_size: 64 * 1024,
            max_write: 16 * 1024,
            max_flush_delay: Duration::from_micros(rng.gen_range(200..3000)),
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        ..InstanceConfig::new("/crash")
    }
}

fn setup(inst: &Instance, bound: Option<u64>) {
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(
        &s,
        TableDef::new(
            "items",
            vec![
                ColumnDef::new("id", DataType::BigInt),
                ColumnDef::new("session", DataType::Int).not_null(),
                ColumnDef::new("seq", DataType::BigInt).not_null(),
                ColumnDef::new("parts", DataType::Int).not_null(),
                ColumnDef::new("pad", DataType::Text),
            ],
            &["id"],
        )
        .unwrap(),
    )
    .unwrap();
    db.create_table(
        &s,
        TableDef::new(
            "counters",
            vec![
                ColumnDef::new("session", DataType::Int),
                ColumnDef::new("n", DataType::BigInt).not_null(),
            ],
            &["session"],
        )
        .unwrap(),
    )
    .unwrap();
    db.run(&s, CommitRequest::Durable, |tx| {
        for i in 0..SESSIONS {
            tx.insert("counters", vec![Some(Value::Int(i)), Some(Value::Int(0))])?;
        }
        Ok(())
    })
    .unwrap();
    db.alter_settings(&s, |x| {
        x.delayed_durability = DelayedDurability::Allowed;
        x.max_exposure_bytes = bound;
    })
    .unwrap();
}

fn worker(
    db: Arc<Database>,
    s: Arc<Session>,
    session: i64,
    shared: Arc<Shared>,
    crash_at: usize,
    mode: CrashMode,
    seed: u64,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (session as u64 * 7919));
    let items = db.table("items").unwrap();
    let counters = db.table("counters").unwrap();
    for seq in 1.. {
        if shared.crashed.load(Ordering::Acquire) {
            return;
        }
        if session == 0 && rng.gen_bool(0.12) && ddl_step(&db, &s, &shared).is_err() {
            return;
        }
        if session == 1 && rng.gen_bool(0.03) && db_step(&shared).is_err() {
            return;
        }
        // Now and then a transaction of several log records (> 256 KiB).
        let big = rng.gen_bool(0.03);
        let parts = if big { 4 } else { rng.gen_range(1..=3i64) };
        let pad_len = if big {
            90_000
        } else if rng.gen_bool(0.1) {
            rng.gen_range(1000..12_000)
        } else {
            rng.gen_range(0..80)
        };
        shared.parts.lock().insert((session, seq), parts);
        let old_parts = shared
            .parts
            .lock()
            .get(&(session, seq - DELETE_BACK))
            .copied();
        let mut tx = db.begin(&s);
        let r = (|| {
            for p in 0..parts {
                tx.insert_into(
                    &items,
                    vec![
                        Some(Value::Int(item_id(session, seq, p))),
                        Some(Value::Int(session)),
                        Some(Value::Int(seq)),
                        Some(Value::Int(parts)),
                        Some(Value::text("x".repeat(pad_len))),
                    ],
                )?;
            }
            if deletes_back(seq) {
                for p in 0..old_parts.unwrap_or(0) {
                    let key = [Value::Int(item_id(session, seq - DELETE_BACK, p))];
                    if !tx.delete_in(&items, &key)? {
                        return Err(EngineError::Data(format!("row {key:?} to delete is gone")));
                    }
                }
            }
            tx.update_in(
                &counters,
                &[Value::Int(session)],
                vec![Value::Int(session), Value::Int(seq)],
            )?;
            Ok::<_, EngineError>(())
        })();
        if let Err(e) = r {
            assert!(
                !matches!(e, EngineError::Data(_)),
                "seed {seed}: workload invariant broken: {e}"
            );
            return;
        }
        let req = if rng.gen_bool(0.5) {
            CommitRequest::Delayed
        } else {
            CommitRequest::Durable
        };
        let Ok(out) = tx.commit(req) else { return };
        let mut acks = shared.acks.lock();
        if shared.crashed.load(Ordering::Acquire) {
            return;
        }
        acks.0.push(Ack {
            session,
            seq,
            lsn: out.lsn.unwrap(),
            durable: out.durable,
        });
        if acks.0.len() >= crash_at {
            // Power loss: what is on "disk" right now is all that survives.
            let crashed = db_vfs_crash(&shared, mode, seed);
            acks.1 = Some(crashed);
            shared.crashed.store(true, Ordering::Release);
            return;
        }
        drop(acks);
        if session == 0 && seq % 25 == 0 {
            let _ = db.checkpoint();
        }
    }
}

fn item_id(session: i64, seq: i64, part: i64) -> i64 {
    session * 1_000_000_000 + seq * 10 + part
}

/// The DDL track's statement `k`: for j = k / 6, CREATE TABLE s_j, INSERT
/// j + 1 rows into it, two transactions, TRUNCATE s_{j-1}, DROP TABLE
/// s_{j-1}. The first transaction commits: CREATE TABLE e_j with j + 1 rows and a
/// unique index built after them (the transaction's own rows), one more row
/// in s_j, DROP TABLE e_{j-1}. The second writes rows of e_j, s_j and a new
/// x_j, indexes e_j after its writes, drops e_j, truncates s_j and rolls
/// back: nothing of it may survive.
fn ddl_step(db: &Arc<Database>, s: &Arc<Session>, shared: &Shared) -> Result<()> {
    let k = {
        let mut d = shared.ddl.lock();
        d.0 += 1;
        d.0 - 1
    };
    let (j, r) = (k / 6, k % 6);
    let def = |name: String| {
        TableDef::new(
            name,
            vec![
                ColumnDef::new("id", DataType::BigInt),
                ColumnDef::new("v", DataType::Text),
            ],
            &["id"],
        )
    };
    let row = |i: i64, v: String| vec![Some(Value::Int(i)), Some(Value::text(v))];
    let unique = |name: String, columns: Vec<usize>| IndexDef {
        id: 0,
        name,
        columns,
        unique: true,
        constraint: false,
        options: Vec::new(),
    };
    match r {
        0 => db.create_table(s, def(format!("s_{j}"))?).map(|_| ())?,
        1 => db.run(s, CommitRequest::Durable, |tx| {
            for i in 0..=j as i64 {
                tx.insert(&format!("s_{j}"), row(i, "ddl".into()))?;
            }
            Ok(())
        })?,
        4 if j >= 1 => db.truncate(s, &format!("s_{}", j - 1))?,
        5 if j >= 1 => db.drop_table(s, &format!("s_{}", j - 1))?,
        2 => db.run(s, CommitRequest::Default, |tx| {
            tx.create_table(def(format!("e_{j}"))?)?;
            for i in 0..=j as i64 {
                tx.insert(&format!("e_{j}"), row(i, format!("v{i}")))?;
            }
            tx.create_index(&format!("e_{j}"), unique(format!("e_{j}_v"), vec![1]))?;
            tx.insert(&format!("s_{j}"), row(1000, "tx".into()))?;
            if j >= 1 {
                tx.drop_table_cascade(&format!("e_{}", j - 1), false)?;
            }
            Ok(())
        })?,
        3 => {
            let mut tx = db.begin(s);
            tx.insert(&format!("e_{j}"), row(1000, "rolled back".into()))?;
            tx.insert(&format!("s_{j}"), row(1001, "rolled back".into()))?;
            tx.create_index(&format!("e_{j}"), unique(format!("e_{j}_iv"), vec![0, 1]))?;
            tx.create_table(def(format!("x_{j}"))?)?;
            tx.insert(&format!("x_{j}"), row(1, "rolled back".into()))?;
            tx.truncate(&format!("s_{j}"))?;
            tx.drop_table_cascade(&format!("e_{j}"), false)?;
            tx.rollback();
        }
        _ => {}
    }
    shared.ddl.lock().1 = k + 1;
    Ok(())
}

/// CREATE DATABASE extra or DROP DATABASE extra, alternately.
fn db_step(shared: &Shared) -> Result<()> {
    let k = {
        let mut d = shared.dbops.lock();
        d.0 += 1;
        d.0 - 1
    };
    if k % 2 == 0 {
        shared.inst.create_database("extra")?;
    } else {
        shared.inst.drop_database("extra")?;
    }
    shared.dbops.lock().1 = k + 1;
    Ok(())
}

/// The DDL track's tables (name -> rows, indexes) after its first `m`
/// statements.
fn ddl_state(m: u64) -> BTreeMap<String, (usize, usize)> {
    let mut t = BTreeMap::new();
    for k in 0..m {
        let (j, r) = (k / 6, k % 6);
        match r {
            0 => {
                t.insert(format!("s_{j}"), (0, 0));
            }
            1 => {
                t.insert(format!("s_{j}"), (j as usize + 1, 0));
            }
            4 if j >= 1 => {
                t.insert(format!("s_{}", j - 1), (0, 0));
            }
            5 if j >= 1 => {
                t.remove(&format!("s_{}", j - 1));
            }
            2 => {
                t.insert(format!("e_{j}"), (j as usize + 1, 1));
                t.insert(format!("s_{j}"), (j as usize + 2, 0));
                if j >= 1 {
                    t.remove(&format!("e_{}", j - 1));
                }
            }
            _ => {}
        }
    }
    t
}

thread_local! {
    static MEM: std::cell::RefCell<Option<MemVfs>> = const { std::cell::RefCell::new(None) };
}

fn db_vfs_crash(_shared: &Shared, mode: CrashMode, seed: u64) -> MemVfs {
    MEM.with(|m| {
        m.borrow()
            .as_ref()
            .expect("vfs registered")
            .crash(mode, seed)
    })
}

#[derive(Default)]
struct Outcome {
    /// Recovery refused a log with a rotten hardened block.
    refused: bool,
    /// A transient read error was injected.
    read_flip: bool,
    acked: usize,
    lost_delayed: usize,
    faulted: bool,
    rotted: bool,
    ddl: u64,
    big: usize,
    dbops: u64,
}

fn trial(seed: u64) -> Outcome {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mode = [
        CrashMode::SyncedOnly,
        CrashMode::TornPrefix,
        CrashMode::ScatteredSectors,
    ][rng.gen_range(0..3)];
    let bound = match rng.gen_range(0..3) {
        0 => None,
        1 => Some(8 * 1024),
        _ => Some(32 * 1024),
    };
    let crash_at = rng.gen_range(1..120usize);
    let mem = MemVfs::new();
    let cfg = config(&mem, &mut rng);
    let inst = Instance::open(cfg.clone()).unwrap();
    setup(&inst, bound);
    let db = inst.database("walden").unwrap();
    // One trial in four: the disk fails (EIO or full) before the power loss.
    let fault = match rng.gen_range(0..12) {
        0 => Some(Faults {
            fail_write_after: Some(rng.gen_range(0..300)),
            ..Faults::default()
        }),
        1 => Some(Faults {
            fail_sync_after: Some(rng.gen_range(0..150)),
            ..Faults::default()
        }),
        2 => Some(Faults {
            enospc_write_after: Some(rng.gen_range(0..300)),
            ..Faults::default()
        }),
        _ => None,
    };
    if let Some(f) = fault {
        mem.set_faults(f);
    }
    let rot = rng.gen_bool(0.2);
    let rot_seed: u64 = rng.gen();
    // One trial in ten: bit rot in a log block below the hardened LSN the
    // control file recorded.
    let rot_log = rng.gen_bool(0.1);
    let rot_log_seed: u64 = rng.gen();
    // One trial in ten: one read during recovery returns a flipped bit
    // (transient: the stored bytes are intact).
    let read_flip = rng.gen_bool(0.1).then(|| rng.gen_range(0..40u64));
    let shared = Arc::new(Shared {
        acks: Mutex::new((Vec::new(), None)),
        crashed: AtomicBool::new(false),
        parts: Mutex::new(HashMap::new()),
        ddl: Mutex::new((0, 0)),
        dbops: Mutex::new((0, 0)),
        inst: inst.clone(),
    });
    let threads: Vec<_> = (0..SESSIONS)
        .map(|i| {
            let (db, s, sh, mem) = (db.clone(), inst.new_session(), shared.clone(), mem.clone());
            std::thread::spawn(move || {
                MEM.with(|m| *m.borrow_mut() = Some(mem));
                worker(db, s, i, sh, crash_at, mode, seed)
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let (acks, crashed) = {
        let mut g = shared.acks.lock();
        let c = g.1.take();
        (std::mem::take(&mut g.0), c)
    };
    // Fewer acks than the crash point: the workers stopped on their own (they
    // never do unless an error occurred), so crash now.
    let crashed = crashed.unwrap_or_else(|| mem.crash(mode, seed));
    drop(db);
    drop(inst);
    let store_rotted = rot && rot_store(&crashed, rot_seed);
    let log_rotted = rot_log && rot_hardened_log_block(&crashed, rot_log_seed);
    if let Some(n) = read_flip {
        crashed.set_faults(Faults {
            flip_read_after: Some(n),
            ..Faults::default()
        });
    }

    let opened = Instance::open(InstanceConfig {
        vfs: Arc::new(crashed.clone()),
        ..cfg
    });
    let inst = match opened {
        Ok(i) => i,
        // Damage to hardened log must stop the open, never be cut off; a
        // block recovery does not need may also go unread.
        Err(EngineError::Log(
            walden_log::LogError::EndsEarly { .. } | walden_log::LogError::Corrupt { .. },
        )) if log_rotted => {
            return Outcome {
                acked: acks.len(),
                refused: true,
                ..Outcome::default()
            };
        }
        // Bit rot in the store that the open needed refuses it.
        Err(EngineError::Store { .. } | EngineError::CorruptDataFile { .. }) if store_rotted => {
            return Outcome {
                acked: acks.len(),
                rotted: true,
                refused: true,
                ..Outcome::default()
            };
        }
        // A transient read error (every file read at open has a checksum,
        // and a mismatch is read again) must not stop the open either.
        Err(e) => panic!(
            "seed {seed}: recovery failed: {e}{}",
            if read_flip.is_some() {
                " (after a transient read error)"
            } else {
                ""
            }
        ),
    };
    crashed.set_faults(Faults::default());
    let db = inst.database("walden").unwrap();
    // The open does not read every page: bit rot it did not need is found
    // by the check (which stops the checkpoints) or is harmless, and then
    // every row below must be right.
    if store_rotted && db.check_store().unwrap().problem_count > 0 {
        assert!(db.store_damaged().is_some());
        return Outcome {
            acked: acks.len(),
            rotted: true,
            refused: true,
            ..Outcome::default()
        };
    }
    let end = db.log().end_lsn();
    let items = db.table("items").unwrap().latest_rows().unwrap();
    let counters = db.table("counters").unwrap().latest_rows().unwrap();

    // (c) exactly the rows of each session's surviving transactions: its
    // counter says which was the last, and every one before it survived.
    let mut last: HashMap<i64, i64> = HashMap::new();
    for row in counters.values() {
        last.insert(row[0].as_i64().unwrap(), row[1].as_i64().unwrap());
    }
    let parts = shared.parts.lock().clone();
    let mut expected: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for (&s, &n) in &last {
        for q in 1..=n {
            let deleted = q + DELETE_BACK <= n && deletes_back(q + DELETE_BACK);
            if deleted {
                continue;
            }
            let p = *parts
                .get(&(s, q))
                .unwrap_or_else(|| panic!("seed {seed}: session {s} counter {n} past its work"));
            for part in 0..p {
                expected.insert(item_id(s, q, part), (s, q));
            }
        }
    }
    for row in items.values() {
        let id = row[0].as_i64().unwrap();
        let (s, q) = (row[1].as_i64().unwrap(), row[2].as_i64().unwrap());
        assert_eq!(
            expected.remove(&id),
            Some((s, q)),
            "seed {seed} ({mode:?}): row {id} of transaction ({s},{q}) should not be there \
             (counters {last:?})"
        );
    }
    assert!(
        expected.is_empty(),
        "seed {seed} ({mode:?}): rows of surviving transactions missing: {:?}",
        expected.values().take(5).collect::<Vec<_>>()
    );
    let survived = |a: &Ack| last.get(&a.session).is_some_and(|&n| a.seq <= n);
    // (e) the DDL track: acknowledged statements all survived, and at most
    // the one in flight besides.
    let (started, acked_ddl) = *shared.ddl.lock();
    let mut tables: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for t in db.tables() {
        if ["s_", "e_", "x_"].iter().any(|p| t.name().starts_with(p)) {
            tables.insert(t.name().to_string(), (t.len(), t.def.indexes.len()));
        }
    }
    assert!(
        tables == ddl_state(acked_ddl) || (started > acked_ddl && tables == ddl_state(started)),
        "seed {seed} ({mode:?}): DDL tables {tables:?} after {acked_ddl} acknowledged statements \
         (expected {:?})",
        ddl_state(acked_ddl)
    );
    // (a), (b), (d)
    let mut by_lsn: BTreeMap<u64, Ack> = BTreeMap::new();
    for a in &acks {
        by_lsn.insert(a.lsn, *a);
    }
    let mut seen_missing: Option<Ack> = None;
    let mut lost_delayed = 0;
    for a in by_lsn.values() {
        let here = survived(a);
        if a.durable {
            assert!(
                here,
                "seed {seed} ({mode:?}): acknowledged durable commit {a:?} lost (end {end})"
            );
        }
        if here {
            assert!(
                seen_missing.is_none(),
                "seed {seed}: {a:?} survived but earlier {:?} was lost: not a prefix",
                seen_missing
            );
        } else {
            seen_missing.get_or_insert(*a);
            lost_delayed += 1;
            if let Some(b) = bound {
                assert!(
                    a.lsn.saturating_sub(end) <= b,
                    "seed {seed}: lost delayed commit {a:?} is {} bytes past the recovered end {end}, bound {b}",
                    a.lsn - end
                );
            }
        }
    }
    // CREATE / DROP DATABASE: as acknowledged, or as the one in flight.
    let (started, acked_db) = *shared.dbops.lock();
    let extra = inst.database("extra").is_ok();
    assert!(
        extra == (acked_db % 2 == 1) || (started > acked_db && extra == (started % 2 == 1)),
        "seed {seed} ({mode:?}): database extra exists: {extra}, after {acked_db} \
         acknowledged CREATE/DROP DATABASE ({started} started)"
    );
    // (f) sane counters, and the database takes new work.
    let e = db.exposure();
    assert_eq!(e.unhardened_commits, 0);
    assert_eq!(e.hardened_lsn, e.end_lsn);
    assert!(db.log_file_stats().snapshot().num_of_reads > 0);
    assert!(db.data_file_stats().snapshot().num_of_reads > 0);
    let s = inst.new_session();
    db.run(&s, CommitRequest::Durable, |tx| {
        tx.insert(
            "items",
            vec![
                Some(Value::Int(-1)),
                Some(Value::Int(-1)),
                Some(Value::Int(0)),
                Some(Value::Int(1)),
                None,
            ],
        )
    })
    .unwrap_or_else(|e| panic!("seed {seed}: commit after recovery failed: {e}"));
    match inst.close() {
        Ok(()) => {}
        // Rot in pages only a store write reads (redb's allocator state, its
        // free lists): the closing checkpoint fails and the log keeps it all.
        Err(EngineError::Store { .. } | EngineError::CorruptDataFile { .. }) if store_rotted => {}
        Err(e) => panic!("seed {seed}: close failed: {e}"),
    }
    Outcome {
        acked: acks.len(),
        lost_delayed,
        faulted: fault.is_some(),
        rotted: rot,
        ddl: acked_ddl,
        big: parts.values().filter(|&&p| p == 4).count(),
        dbops: acked_db,
        refused: false,
        read_flip: read_flip.is_some(),
    }
}

/// Bit rot in the base store (`data/store.redb`): recovery must refuse to
/// open, or the check (`Database::check_store`) must find it, or it must be
/// in bytes nothing needs (free space, the older commit slot); the rows
/// must never be wrong. Returns whether a bit was flipped.
fn rot_store(vfs: &MemVfs, seed: u64) -> bool {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let path = std::path::Path::new("/crash/walden/data/store.redb");
    let len = vfs
        .files()
        .into_iter()
        .find(|f| f.0 == path)
        .map_or(0, |f| f.1);
    if len == 0 {
        return false;
    }
    vfs.flip_bit(path, rng.gen_range(0..len), rng.gen_range(0..8))
        .unwrap();
    true
}

/// Flips a bit in a log block that ends at or below the hardened LSN of
/// the control file (so it was durable once); returns whether it found one.
fn rot_hardened_log_block(vfs: &MemVfs, seed: u64) -> bool {
    use walden_log::block;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = std::path::Path::new("/crash/walden");
    let Ok(ctl) = walden_log::vfs::read_file(vfs, &dir.join("control")) else {
        return false;
    };
    let len = u32::from_le_bytes(ctl[12..16].try_into().unwrap()) as usize;
    let body: serde_json::Value = serde_json::from_slice(&ctl[16..16 + len]).unwrap();
    let hardened = body["hardened_lsn"].as_u64().unwrap();
    let mut blocks = Vec::new();
    for (path, _) in vfs.files() {
        let is_seg = path.starts_with(dir.join("log"))
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(block::parse_segment_name)
                .is_some();
        if !is_seg {
            continue;
        }
        let data = walden_log::vfs::read_file(vfs, &path).unwrap();
        let mut off = block::SEGMENT_HEADER;
        while off + block::BLOCK_HEADER <= data.len() {
            if let Some(h) = block::decode_header(&data[off..], 1 << 20) {
                let end = off + h.block_len as usize;
                if end <= data.len()
                    && block::verify_block(&h, &data[off..end])
                    && h.end_lsn() <= hardened
                    && h.payload_len > 0
                {
                    let span = block::BLOCK_HEADER + h.payload_len as usize;
                    blocks.push((path.clone(), off, span));
                }
            }
            off += block::PAGE;
        }
    }
    if blocks.is_empty() {
        return false;
    }
    let (path, off, span) = &blocks[rng.gen_range(0..blocks.len())];
    let at = *off as u64 + rng.gen_range(0..*span as u64);
    vfs.flip_bit(path, at, rng.gen_range(0..8)).unwrap();
    true
}

#[test]
fn a_thousand_simulated_power_losses() {
    let trials: u64 = std::env::var("WALDEN_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let base: u64 = std::env::var("WALDEN_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let (mut acked, mut lost, mut faulted, mut rotted, mut ddl, mut big) = (0, 0, 0, 0, 0, 0);
    let (mut dbops, mut refused, mut flips) = (0, 0, 0);
    let t0 = std::time::Instant::now();
    // A panic that aborts (one in a destructor while unwinding) never
    // reaches the catch below: the hook names the trial first.
    static SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        eprintln!(
            "panic in the trial with WALDEN_CRASH_SEED={}",
            SEED.load(Ordering::Relaxed)
        );
        hook(info)
    }));
    for i in 0..trials {
        let seed = base + i;
        SEED.store(seed, Ordering::Relaxed);
        let o = std::panic::catch_unwind(|| trial(seed)).unwrap_or_else(|p| {
            eprintln!(
                "trial failed; rerun it with WALDEN_CRASH_SEED={seed} WALDEN_CRASH_TRIALS=1 \
                 cargo test --release -p walden-engine --test engine_it crash_power_loss::"
            );
            std::panic::resume_unwind(p)
        });
        acked += o.acked;
        lost += o.lost_delayed;
        faulted += o.faulted as u64;
        rotted += o.rotted as u64;
        ddl += o.ddl;
        big += o.big;
        dbops += o.dbops;
        refused += o.refused as u64;
        flips += o.read_flip as u64;
    }
    println!(
        "{trials} simulated power losses in {:.1} s: {acked} acknowledged commits checked, \
         {lost} acknowledged delayed commits lost (allowed), 0 violations; \
         {faulted} trials with EIO/ENOSPC injected, {rotted} with a rotten base store, \
         {ddl} DDL statements, {dbops} CREATE/DROP DATABASE, {big} transactions of several \
         log records begun; {refused} opens refused for bit rot (hardened log or store); \
         {flips} recoveries with a transient read error",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        acked > trials as usize,
        "the trials must acknowledge commits"
    );
}
