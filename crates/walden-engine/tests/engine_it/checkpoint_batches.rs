//! A checkpoint of more changed rows than one batch is several base-store
//! commits, and only the last moves the redo start. Here the disk fails at
//! every sync (and at scattered writes) of such a checkpoint in turn, then
//! the power goes: whatever batches reached the disk, recovery must give
//! exactly the committed rows, the secondary index must agree with them,
//! and the database must take commits and checkpoint again.
//!
//! `WALDEN_CKPT_SEED` changes the data and crash modes.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use walden_engine::store::StorageConfig;
use walden_engine::*;
use walden_log::{CrashMode, Faults};

use crate::model;
use model::{check, items_def, Model, Probes, Rng};

/// More changed keys than three batches of 2,048.
const ROWS: i64 = 7000;
const VALUES: i64 = 40;

fn config(mem: &MemVfs, read_through: bool) -> InstanceConfig {
    InstanceConfig {
        vfs: Arc::new(mem.clone()),
        log: LogConfig {
            block_size: 8192,
            segment_size: 1 << 20,
            buffer_size: 256 * 1024,
            max_write: 64 * 1024,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        storage: StorageConfig {
            read_through,
            cache_bytes: 1 << 20,
            ..Default::default()
        },
        ..InstanceConfig::new("/inst")
    }
}

/// Point reads and index values `check` probes.
const PROBES: Probes = Probes {
    ids: 2 * ROWS,
    step: 97,
    values: VALUES,
};

/// Rows in `ROWS` ids, then a first checkpoint (the table written whole).
fn setup(inst: &Instance, rng: &mut Rng) -> Model {
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("items", true)).unwrap();
    let mut model = Model::new();
    db.run(&s, CommitRequest::Durable, |tx| {
        for id in 0..ROWS {
            let v = rng.below(VALUES as u64) as i64;
            let tag = format!("r{id}-{}", "x".repeat(rng.below(30) as usize));
            tx.insert(
                "items",
                vec![
                    Some(Value::Int(id)),
                    Some(Value::Int(v)),
                    Some(Value::text(&tag)),
                ],
            )?;
            model.insert(id, (v, tag));
        }
        Ok(())
    })
    .unwrap();
    db.checkpoint().unwrap();
    model
}

/// Changes most keys (updates that move index entries, deletes, inserts
/// beyond `ROWS`), in several durable transactions.
fn churn(db: &Arc<Database>, s: &Arc<Session>, rng: &mut Rng, model: &mut Model, round: i64) {
    let t = db.table("items").unwrap();
    for chunk in 0..7 {
        let mut tx = db.begin(s);
        for id in (chunk * 1000)..((chunk + 1) * 1000) {
            let id = if rng.below(8) == 0 {
                ROWS + round * ROWS + id
            } else {
                id
            };
            let v = rng.below(VALUES as u64) as i64;
            let tag = format!("c{round}-{id}");
            let row = vec![Value::Int(id), Value::Int(v), Value::text(&tag)];
            let exists = model.contains_key(&id);
            if exists {
                if rng.below(6) == 0 {
                    assert!(tx.delete_in(&t, &[Value::Int(id)]).unwrap());
                    model.remove(&id);
                } else {
                    tx.update_in(&t, &[Value::Int(id)], row).unwrap();
                    model.insert(id, (v, tag));
                }
            } else {
                tx.insert_into(&t, row.into_iter().map(Some).collect())
                    .unwrap();
                model.insert(id, (v, tag));
            }
        }
        tx.commit(CommitRequest::Durable).unwrap();
    }
}

enum Cut {
    /// Every sync from this many on fails.
    Sync(u64),
    /// Every write from this many on fails.
    Write(u64),
}

/// One trial: returns whether the cut made the checkpoint fail.
fn trial(seed: u64, cut: Cut, read_through: bool) -> bool {
    let mut rng = Rng(seed | 1);
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, read_through)).unwrap();
    let mut model = setup(&inst, &mut rng);
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    churn(&db, &s, &mut rng, &mut model, 1);
    let what = match cut {
        Cut::Sync(n) => {
            mem.set_faults(Faults {
                fail_sync_after: Some(n),
                ..Faults::default()
            });
            format!("seed {seed}, sync {n} fails")
        }
        Cut::Write(n) => {
            mem.set_faults(Faults {
                fail_write_after: Some(n),
                ..Faults::default()
            });
            format!("seed {seed}, write {n} fails")
        }
    };
    let failed = db.checkpoint().is_err();
    let mode = [
        CrashMode::SyncedOnly,
        CrashMode::TornPrefix,
        CrashMode::ScatteredSectors,
    ][(seed % 3) as usize];
    let after = mem.crash(mode, seed);
    drop(s);
    drop(db);
    drop(inst);
    let what = format!("{what}, {mode:?}, read_through {read_through}");
    let inst = Instance::open(config(&after, read_through)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    check(
        &db,
        &s,
        "items",
        &model,
        &PROBES,
        &format!("{what}: recovered"),
    );
    // It goes on: more changes, a clean checkpoint, a restart.
    churn(&db, &s, &mut rng, &mut model, 2);
    let commits = db.counters().checkpoint_commits.load(Relaxed);
    db.checkpoint().unwrap();
    let made = db.counters().checkpoint_commits.load(Relaxed) - commits;
    assert!(
        made >= 4,
        "{what}: a checkpoint of ~7,000 keys made {made} commits"
    );
    check(
        &db,
        &s,
        "items",
        &model,
        &PROBES,
        &format!("{what}: checkpointed again"),
    );
    drop(s);
    drop(db);
    drop(inst);
    let inst = Instance::open(config(&after, read_through)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    check(
        &db,
        &s,
        "items",
        &model,
        &PROBES,
        &format!("{what}: reopened"),
    );
    failed
}

#[test]
fn a_power_cut_at_any_sync_of_a_batched_checkpoint_loses_nothing() {
    let seed: u64 = std::env::var("WALDEN_CKPT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xc0ffee);
    // Each sync in turn, until a checkpoint gets through untouched.
    let mut failed = 0;
    for n in 0.. {
        if !trial(seed + n, Cut::Sync(n), n % 2 == 0) {
            break;
        }
        failed += 1;
        assert!(n < 200, "the checkpoint never completed");
    }
    // Two syncs per batch commit at least: the cuts fell between batches
    // as well as inside them.
    assert!(failed >= 6, "only {failed} sync points in the checkpoint");
    println!("{failed} sync points cut");
}

#[test]
fn a_power_cut_at_scattered_writes_of_a_batched_checkpoint_loses_nothing() {
    let seed: u64 = std::env::var("WALDEN_CKPT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xbeef);
    let mut rng = Rng(seed);
    let mut failed = 0;
    for i in 0..12 {
        let n = rng.below(600);
        if trial(seed + i, Cut::Write(n), i % 2 == 1) {
            failed += 1;
        }
    }
    assert!(failed > 0, "no write cut fell inside the checkpoint");
}
