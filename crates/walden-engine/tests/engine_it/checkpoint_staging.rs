//! A table written whole (a first checkpoint, a table truncated and
//! refilled) is staged: its rows and index entries go into staging tables
//! in batches, and the checkpoint's last commit renames them into place.
//! Here the disk fails at every sync of such a checkpoint in turn, then
//! the power goes: recovery must give exactly the committed rows, with
//! the index agreeing, and the next checkpoint must drop what a cut
//! staging left behind.

use std::sync::Arc;
use walden_engine::store::StorageConfig;
use walden_engine::*;
use walden_log::{CrashMode, Faults};

use crate::model;
use model::{check, items_def, Model, Probes, Rng};

const ROWS: i64 = 4000;
const VALUES: i64 = 40;

/// Staging batches of 16 KiB (a batch takes whole scan chunks of 1,024
/// keys, so the table and its index take four each).
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
            stage_bytes: 16 << 10,
            ..Default::default()
        },
        ..InstanceConfig::new("/inst")
    }
}

const PROBES: Probes = Probes {
    ids: 2 * ROWS,
    step: 61,
    values: VALUES,
};

/// Fills `items` in one transaction, after emptying it when `truncate`.
fn fill(db: &Arc<Database>, s: &Arc<Session>, rng: &mut Rng, truncate: bool) -> Model {
    let mut model = Model::new();
    db.run(s, CommitRequest::Durable, |tx| {
        if truncate {
            tx.truncate("items")?;
        }
        for id in 0..ROWS {
            let id = if truncate { id * 2 } else { id };
            let v = rng.below(VALUES as u64) as i64;
            let tag = format!("r{id}-{}", "y".repeat(rng.below(40) as usize));
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
    model
}

fn staging_left(db: &Database) -> Vec<String> {
    db.stored_table_names()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with('s'))
        .collect()
}

/// One trial: the `n`th sync of the staged checkpoint and all after it
/// fail, then the power goes. Returns whether the cut made it fail.
fn trial(seed: u64, n: u64, refill: bool, read_through: bool) -> bool {
    let mut rng = Rng(seed | 1);
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, read_through)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("items", true)).unwrap();
    let mut model = fill(&db, &s, &mut rng, false);
    if refill {
        db.checkpoint().unwrap();
        model = fill(&db, &s, &mut rng, true);
    }
    mem.set_faults(Faults {
        fail_sync_after: Some(n),
        ..Faults::default()
    });
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
    let what = format!(
        "seed {seed}, sync {n} fails, refill {refill}, {mode:?}, read_through {read_through}"
    );
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
    db.checkpoint().unwrap();
    assert_eq!(
        staging_left(&db),
        Vec::<String>::new(),
        "{what}: staging left"
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

fn every_sync(refill: bool, seed: u64) {
    let mut failed = 0;
    for n in 0.. {
        if !trial(seed + n, n, refill, n % 2 == 0) {
            break;
        }
        failed += 1;
        assert!(n < 400, "the checkpoint never completed");
    }
    // Two syncs per staged batch: the cuts fell inside and between them.
    assert!(failed >= 20, "only {failed} sync points in the checkpoint");
    println!("{failed} sync points cut");
}

#[test]
fn a_power_cut_at_any_sync_of_a_staged_first_checkpoint_loses_nothing() {
    every_sync(false, 0x5ea1);
}

#[test]
fn a_power_cut_at_any_sync_of_staging_a_refilled_table_loses_nothing() {
    every_sync(true, 0x7ab1e);
}

/// The staged checkpoint made many commits, and its data file holds the
/// table under its own name only.
#[test]
fn a_table_written_whole_is_staged_in_batches() {
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, true)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("items", true)).unwrap();
    let model = fill(&db, &s, &mut Rng(3), false);
    let before = db
        .counters()
        .checkpoint_commits
        .load(std::sync::atomic::Ordering::Relaxed);
    db.checkpoint().unwrap();
    let made = db
        .counters()
        .checkpoint_commits
        .load(std::sync::atomic::Ordering::Relaxed)
        - before;
    // A batch is at least one chunk of a scan (1,024 keys): four of rows,
    // four of index entries, then the last commit.
    assert!(made >= 9, "a staged checkpoint made {made} commits");
    assert_eq!(staging_left(&db), Vec::<String>::new());
    check(&db, &s, "items", &model, &PROBES, "staged");
}
