//! Rows read through the base store (`[storage] read_through`): after each
//! checkpoint the rows it wrote leave memory, and every read (point,
//! range, index, an older snapshot, a writer's current row) must give
//! what a model of the committed state says, across checkpoints, power
//! losses and restarts.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use walden_engine::store::StorageConfig;
use walden_engine::*;
use walden_log::CrashMode;

use crate::model;
use model::{check, items_def, row_of, Model, Probes, Rng};

fn config(mem: &MemVfs, read_through: bool) -> InstanceConfig {
    InstanceConfig {
        vfs: Arc::new(mem.clone()),
        log: LogConfig {
            block_size: 8192,
            segment_size: 256 * 1024,
            buffer_size: 128 * 1024,
            max_write: 32 * 1024,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        // A small cache: reads of evicted rows go to the file.
        storage: StorageConfig {
            read_through,
            cache_bytes: 1 << 20,
            ..Default::default()
        },
        ..InstanceConfig::new("/inst")
    }
}

/// Point reads and index values `check` probes: every id and value `work` writes.
const PROBES: Probes = Probes {
    ids: 1000,
    step: 37,
    values: 5,
};

fn schema(db: &Arc<Database>, s: &Arc<Session>) {
    db.create_table(s, items_def("items", true)).unwrap();
    // No index: its rows are not loaded at all at open.
    db.create_table(s, items_def("plain", false)).unwrap();
}

/// One random transaction on `table`: inserts, updates and deletes of
/// random ids, applied to the model when it commits.
fn work(db: &Arc<Database>, s: &Arc<Session>, rng: &mut Rng, table: &str, model: &mut Model) {
    let mut next = model.clone();
    let ops = 1 + rng.below(6);
    let t = db.table(table).unwrap();
    let mut tx = db.begin(s);
    for _ in 0..ops {
        let id = rng.below(1000) as i64;
        let v = rng.below(5) as i64;
        let tag = "x".repeat(rng.below(40) as usize);
        let row = vec![Value::Int(id), Value::Int(v), Value::text(&tag)];
        let exists = next.contains_key(&id);
        if exists && rng.below(3) == 0 {
            assert!(tx.delete_in(&t, &[Value::Int(id)]).unwrap());
            next.remove(&id);
        } else if exists {
            tx.update_in(&t, &[Value::Int(id)], row).unwrap();
            next.insert(id, (v, tag));
        } else {
            tx.insert_into(&t, row.into_iter().map(Some).collect())
                .unwrap();
            next.insert(id, (v, tag));
        }
    }
    if rng.below(10) == 0 {
        tx.rollback();
    } else {
        tx.commit(CommitRequest::Durable).unwrap();
        *model = next;
    }
}

#[test]
fn reads_through_the_store_match_a_model_across_checkpoints_and_restarts() {
    let mut mem = MemVfs::new();
    let mut rng = Rng(0x5eed_1234_abcd);
    let mut models: BTreeMap<&str, Model> = BTreeMap::new();
    models.insert("items", Model::new());
    models.insert("plain", Model::new());
    {
        let inst = Instance::open(config(&mem, true)).unwrap();
        let db = inst.database("walden").unwrap();
        let s = inst.new_session();
        schema(&db, &s);
    }
    for round in 0..6 {
        let inst = Instance::open(config(&mem, true)).unwrap();
        let db = inst.database("walden").unwrap();
        let s = inst.new_session();
        for table in ["items", "plain"] {
            check(
                &db,
                &s,
                table,
                &models[table],
                &PROBES,
                &format!("round {round} open"),
            );
        }
        for step in 0..400 {
            let table = if rng.below(2) == 0 { "items" } else { "plain" };
            // An older snapshot, kept across commits and a checkpoint,
            // must go on seeing its state.
            let old = (step % 50 == 7).then(|| {
                let mut tx = db.begin(&s);
                tx.begin_statement();
                (tx, models.clone())
            });
            work(&db, &s, &mut rng, table, models.get_mut(table).unwrap());
            if step % 40 == 39 {
                db.checkpoint().unwrap();
            }
            if let Some((tx, seen)) = old {
                work(&db, &s, &mut rng, table, models.get_mut(table).unwrap());
                db.checkpoint().unwrap();
                for t in ["items", "plain"] {
                    let tt = db.table(t).unwrap();
                    let got: Model = tx
                        .scan_in(&tt, (Bound::Unbounded, Bound::Unbounded))
                        .unwrap()
                        .iter()
                        .map(|(_, r)| row_of(r))
                        .collect();
                    assert_eq!(
                        got, seen[t],
                        "round {round} step {step}: old snapshot of {t}"
                    );
                }
                drop(tx);
            }
            if step % 100 == 99 {
                for table in ["items", "plain"] {
                    check(
                        &db,
                        &s,
                        table,
                        &models[table],
                        &PROBES,
                        &format!("round {round} step {step}"),
                    );
                }
            }
        }
        db.checkpoint().unwrap();
        // The checkpoint sent the rows to the store: memory keeps only
        // what no checkpoint has answered for yet.
        let plain = db.table("plain").unwrap();
        assert!(
            plain.rows.has_base(),
            "round {round}: plain reads through the store"
        );
        assert!(
            plain.rows.keys_in_memory() < models["plain"].len() / 4 + 8,
            "round {round}: {} of {} rows still in memory",
            plain.rows.keys_in_memory(),
            models["plain"].len()
        );
        assert!(
            db.counters()
                .rows_evicted
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
        );
        for table in ["items", "plain"] {
            check(
                &db,
                &s,
                table,
                &models[table],
                &PROBES,
                &format!("round {round} end"),
            );
        }
        // A few commits after the checkpoint, then a power loss: the log
        // brings them back over the store.
        for _ in 0..20 {
            let table = if rng.below(2) == 0 { "items" } else { "plain" };
            work(&db, &s, &mut rng, table, models.get_mut(table).unwrap());
        }
        mem = mem.crash(CrashMode::SyncedOnly, round);
        drop(db);
        drop(inst);
    }
}

#[test]
fn truncate_and_rebuilt_tables_do_not_read_the_stores_old_rows() {
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, true)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    schema(&db, &s);
    let mut rng = Rng(99);
    let mut model = Model::new();
    for _ in 0..200 {
        work(&db, &s, &mut rng, "plain", &mut model);
    }
    db.checkpoint().unwrap();
    check(&db, &s, "plain", &model, &PROBES, "before truncate");
    db.truncate(&s, "plain").unwrap();
    model.clear();
    check(&db, &s, "plain", &model, &PROBES, "after truncate");
    for _ in 0..50 {
        work(&db, &s, &mut rng, "plain", &mut model);
    }
    check(&db, &s, "plain", &model, &PROBES, "refilled");
    db.checkpoint().unwrap();
    check(&db, &s, "plain", &model, &PROBES, "refilled, checkpointed");
    drop(db);
    drop(inst);
    let inst = Instance::open(config(&mem, true)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    check(&db, &s, "plain", &model, &PROBES, "reopened");
}

#[test]
fn a_store_written_by_either_mode_opens_in_the_other() {
    let mut mem = MemVfs::new();
    let mut rng = Rng(7);
    let mut model = Model::new();
    for (i, read_through) in [true, false, true, false].into_iter().enumerate() {
        let inst = Instance::open(config(&mem, read_through)).unwrap();
        let db = inst.database("walden").unwrap();
        let s = inst.new_session();
        if i == 0 {
            schema(&db, &s);
        }
        check(&db, &s, "items", &model, &PROBES, &format!("open {i}"));
        for step in 0..150 {
            work(&db, &s, &mut rng, "items", &mut model);
            if step % 50 == 49 {
                db.checkpoint().unwrap();
            }
        }
        check(&db, &s, "items", &model, &PROBES, &format!("worked {i}"));
        mem = mem.crash(CrashMode::SyncedOnly, i as u64);
        drop(db);
        drop(inst);
    }
}

/// A table's first checkpoint attaches the store and then evicts the rows
/// it wrote, while readers run: a reader that saw no store attached when it
/// began must not then miss a row that left memory meanwhile (point reads,
/// scans, and a writer's read of its current row).
#[test]
fn readers_racing_a_tables_first_checkpoint_miss_no_row() {
    const ROWS: i64 = 3000;
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, true)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    let mut evicted_total = 0;
    for round in 0..40 {
        let name = format!("race_{round}");
        db.create_table(
            &s,
            TableDef::new(
                name.clone(),
                vec![
                    ColumnDef::new("id", DataType::BigInt),
                    ColumnDef::new("v", DataType::BigInt),
                ],
                &["id"],
            )
            .unwrap(),
        )
        .unwrap();
        db.run(&s, CommitRequest::Durable, |tx| {
            for i in 0..ROWS {
                tx.insert(&name, vec![Some(Value::Int(i)), Some(Value::Int(i * 2))])?;
            }
            Ok(())
        })
        .unwrap();
        let t = db.table(&name).unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (t, stop) = (t.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Acquire) {
                        let i = (n as i64 * 7 + r) % ROWS;
                        let got = t.rows.latest(&[Value::Int(i)]).unwrap();
                        assert!(
                            matches!(got, Some((_, Some(_)))),
                            "round {round}: row {i} missing on a point read"
                        );
                        if n.is_multiple_of(64) {
                            let all = t
                                .rows
                                .scan_at((Bound::Unbounded, Bound::Unbounded), u64::MAX)
                                .unwrap();
                            assert_eq!(all.len() as i64, ROWS, "round {round}: a scan lost rows");
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        db.checkpoint().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Release);
        for r in readers {
            r.join().unwrap();
        }
        evicted_total += ROWS as usize - t.rows.keys_in_memory();
    }
    // The rounds raced real evictions, not a table that stayed in memory.
    assert!(evicted_total > 0, "no row was evicted");
    inst.close().unwrap();
}

/// Index entries live in the store like rows: a checkpoint evicts them, a
/// restart loads none, and lookups, a unique index's check and an older
/// snapshot's index scan still see every entry.
#[test]
fn index_entries_leave_memory_and_a_restart_loads_none() {
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, true)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    schema(&db, &s);
    db.create_index(
        &s,
        "items",
        IndexDef {
            id: 0,
            name: "items_tag".into(),
            columns: vec![2],
            unique: true,
            constraint: false,
            options: Vec::new(),
        },
    )
    .unwrap();
    let mut model = Model::new();
    db.run(&s, CommitRequest::Durable, |tx| {
        for id in 0..1000i64 {
            let tag = format!("tag{id}");
            tx.insert(
                "items",
                vec![
                    Some(Value::Int(id)),
                    Some(Value::Int(id % 5)),
                    Some(Value::text(&tag)),
                ],
            )?;
            model.insert(id, (id % 5, tag));
        }
        Ok(())
    })
    .unwrap();
    db.checkpoint().unwrap();
    let in_memory = |db: &Arc<Database>| -> Vec<usize> {
        let t = db.table("items").unwrap();
        t.indexes
            .iter()
            .map(|ix| ix.entries.keys_in_memory())
            .collect()
    };
    assert_eq!(
        in_memory(&db),
        vec![0, 0],
        "the checkpoint evicted the entries"
    );
    check(&db, &s, "items", &model, &PROBES, "entries evicted");
    // An older snapshot keeps the entries a later commit removes.
    let mut old = db.begin(&s);
    old.begin_statement();
    let t = db.table("items").unwrap();
    db.run(&s, CommitRequest::Durable, |tx| {
        tx.update(
            "items",
            &[Value::Int(3)],
            vec![Value::Int(3), Value::Int(4), Value::text("moved")],
        )
    })
    .unwrap();
    let prefix = [Value::Int(3)];
    let seen = old
        .index_scan(
            &t,
            0,
            Bound::Included(Box::new([Value::Int(3)])),
            |k: &Key| k.starts_with(&prefix),
        )
        .unwrap()
        .unwrap();
    assert!(
        seen.iter().any(|(_, r)| r[0] == Value::Int(3)),
        "the older snapshot lost row 3 from the index"
    );
    drop(old);
    model.insert(3, (4, "moved".into()));
    drop(t);
    drop(db);
    inst.close().unwrap();

    let inst = Instance::open(config(&mem, true)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    assert_eq!(in_memory(&db), vec![0, 0], "a restart loaded index entries");
    check(&db, &s, "items", &model, &PROBES, "reopened");
    // The unique index's entries are in the store only: a duplicate is
    // still refused, and a freed value can be taken.
    let dup = db.run(&s, CommitRequest::Durable, |tx| {
        tx.insert(
            "items",
            vec![
                Some(Value::Int(5000)),
                Some(Value::Int(0)),
                Some(Value::text("tag10")),
            ],
        )
    });
    assert!(
        matches!(dup, Err(EngineError::DuplicateKey(_))),
        "duplicate through an evicted unique entry: {dup:?}"
    );
    db.run(&s, CommitRequest::Durable, |tx| {
        tx.insert(
            "items",
            vec![
                Some(Value::Int(5001)),
                Some(Value::Int(0)),
                Some(Value::text("tag3")),
            ],
        )
    })
    .unwrap();
    inst.close().unwrap();
}

/// A streamed scan (`scan_each`) of a table several scan chunks long whose
/// rows left memory, while memory holds newer versions of some keys
/// (updates, deletes, keys inserted between stored ones): every snapshot
/// sees its own state, in key order, over the whole table and over ranges
/// that start and end inside chunks.
#[test]
fn streamed_scans_merge_memory_and_the_store_over_many_chunks() {
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, true)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("big", false)).unwrap();
    let t = db.table("big").unwrap();
    let mut model = Model::new();
    for batch in 0..6 {
        let mut tx = db.begin(&s);
        for id in (batch * 1000..(batch + 1) * 1000).map(|i| i * 2) {
            let tag = format!("t{id}");
            tx.insert_into(
                &t,
                vec![
                    Some(Value::Int(id)),
                    Some(Value::Int(id % 5)),
                    Some(Value::text(&tag)),
                ],
            )
            .unwrap();
            model.insert(id, (id % 5, tag));
        }
        tx.commit(CommitRequest::Durable).unwrap();
    }
    db.checkpoint().unwrap();

    let streamed = |tx: &Transaction, range: (Bound<Key>, Bound<Key>)| {
        let mut out = Vec::new();
        tx.scan_each::<EngineError>(&t, range, |r| {
            out.push(row_of(r));
            Ok(())
        })
        .unwrap();
        out
    };
    let expect = |m: &Model, lo: Bound<i64>, hi: Bound<i64>| -> Vec<(i64, (i64, String))> {
        m.range((lo, hi)).map(|(k, v)| (*k, v.clone())).collect()
    };
    let key = |i: i64| -> Key { vec![Value::Int(i)].into_boxed_slice() };
    let ranges = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Included(1), Bound::Excluded(9001)),
        (Bound::Excluded(2047), Bound::Included(2049)),
        (Bound::Included(3000), Bound::Unbounded),
    ];
    let check_all = |tx: &Transaction, m: &Model, what: &str| {
        for (lo, hi) in ranges {
            let got = streamed(tx, (lo.map(key), hi.map(key)));
            assert!(
                got == expect(m, lo, hi),
                "{what}: streamed scan of {lo:?}..{hi:?} differs"
            );
            let plain: Vec<_> = tx
                .scan_in(&t, (lo.map(key), hi.map(key)))
                .unwrap()
                .iter()
                .map(|(_, r)| row_of(r))
                .collect();
            assert!(
                plain == got,
                "{what}: scan_in and scan_each differ over {lo:?}..{hi:?}"
            );
            let mut keyed = Vec::new();
            tx.scan_each_keyed::<EngineError>(&t, (lo.map(key), hi.map(key)), |v| {
                keyed.push((v.key()?[0].as_i64().unwrap(), row_of(v.row()).0));
                Ok(())
            })
            .unwrap();
            assert!(
                keyed
                    .iter()
                    .map(|(k, _)| *k)
                    .eq(got.iter().map(|(id, _)| *id))
                    && keyed.iter().all(|(k, id)| k == id),
                "{what}: keyed scan of {lo:?}..{hi:?} differs"
            );
        }
    };

    let mut old = db.begin(&s);
    old.begin_statement();
    let before = model.clone();
    check_all(&old, &before, "after the checkpoint");
    // Newer versions in memory: updates, deletes and new keys between
    // stored ones, spread over every chunk.
    let mut tx = db.begin(&s);
    for id in (0..12_000).step_by(7) {
        if id % 2 == 0 {
            if id % 3 == 0 {
                assert!(tx.delete_in(&t, &[Value::Int(id)]).unwrap());
                model.remove(&id);
            } else {
                let row = vec![Value::Int(id), Value::Int(9), Value::text("new")];
                tx.update_in(&t, &[Value::Int(id)], row).unwrap();
                model.insert(id, (9, "new".into()));
            }
        } else {
            tx.insert_into(
                &t,
                vec![
                    Some(Value::Int(id)),
                    Some(Value::Int(1)),
                    Some(Value::text("odd")),
                ],
            )
            .unwrap();
            model.insert(id, (1, "odd".into()));
        }
    }
    tx.commit(CommitRequest::Durable).unwrap();
    let mut now = db.begin(&s);
    now.begin_statement();
    check_all(&now, &model, "memory over the store");
    check_all(&old, &before, "an older snapshot, memory over the store");
    now.rollback();
    old.rollback();
    db.checkpoint().unwrap();
    let mut last = db.begin(&s);
    last.begin_statement();
    check_all(&last, &model, "after a second checkpoint");
    last.rollback();
}

#[test]
fn ordered_walks_step_over_deleted_keys_without_decoding_the_rows_they_hide() {
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, true)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("queue", true)).unwrap();
    let t = db.table("queue").unwrap();
    let mut tx = db.begin(&s);
    for id in 0..3000i64 {
        let row = vec![Value::Int(id), Value::Int(id), Value::text("x")];
        tx.insert_into(&t, row.into_iter().map(Some).collect())
            .unwrap();
    }
    tx.commit(CommitRequest::Durable).unwrap();
    db.checkpoint().unwrap();
    // A reader from before the deletes, then the queue's head and tail
    // deleted (as TPC-C's deliveries take new orders): the deletions stay
    // in memory, over the stored rows, until the next checkpoint.
    let mut old = db.begin(&s);
    old.begin_statement();
    let mut tx = db.begin(&s);
    for id in (0..2500).chain(2600..3000) {
        assert!(tx.delete_in(&t, &[Value::Int(id)]).unwrap());
    }
    tx.commit(CommitRequest::Durable).unwrap();

    let first = |tx: &Transaction, reverse: bool| {
        let mut got = None;
        tx.walk_in::<EngineError>(&t, (Bound::Unbounded, Bound::Unbounded), reverse, |r| {
            got = r[0].as_i64();
            Ok(false)
        })
        .unwrap();
        got
    };
    let mut now = db.begin(&s);
    now.begin_statement();
    let before = store::rows_decoded();
    assert_eq!(first(&now, false), Some(2500));
    assert_eq!(first(&now, true), Some(2599));
    let decoded = store::rows_decoded() - before;
    // Without skipping, each walk decodes every hidden row it passes
    // (2,500 and 400).
    assert!(decoded < 100, "{decoded} stored rows decoded");
    // The same walks through the index on `v` (entries hidden alike).
    let by_index = |tx: &Transaction, reverse: bool| {
        let mut got = None;
        assert!(tx
            .index_walk::<EngineError>(
                &t,
                0,
                (Bound::Unbounded, Bound::Unbounded),
                reverse,
                Some(false),
                |r| {
                    got = r[0].as_i64();
                    Ok(false)
                },
            )
            .unwrap());
        got
    };
    assert_eq!(by_index(&now, false), Some(2500));
    assert_eq!(by_index(&now, true), Some(2599));
    // The older snapshot still sees the deleted rows, from the store.
    assert_eq!(first(&old, false), Some(0));
    assert_eq!(first(&old, true), Some(2999));
    assert_eq!(by_index(&old, false), Some(0));
    assert_eq!(by_index(&old, true), Some(2999));
    // And a walk over the middle, across chunks, sees every live row once.
    let mut ids = Vec::new();
    now.walk_in::<EngineError>(
        &t,
        (
            Bound::Included(vec![Value::Int(2400)].into_boxed_slice()),
            Bound::Unbounded,
        ),
        false,
        |r| {
            ids.push(r[0].as_i64().unwrap());
            Ok(true)
        },
    )
    .unwrap();
    assert_eq!(ids, (2500..2600).collect::<Vec<_>>());
    old.rollback();
    now.rollback();
}
