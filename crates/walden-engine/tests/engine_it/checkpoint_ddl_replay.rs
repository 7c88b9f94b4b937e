//! A checkpoint's redo start can sit below DDL its image already holds: a
//! large transaction logging as it goes (`txn/spill.rs`) stays registered
//! in flight from its first part, so every checkpoint taken meanwhile
//! starts redo there, while other sessions' DDL commits after it and is in
//! the checkpoint's image. Recovery then meets that DDL again on a catalog
//! that already has it. These tests cut the power after such a checkpoint
//! and check that the database opens with each table as committed.

use std::ops::Bound;
use std::sync::Arc;
use walden_engine::store::StorageConfig;
use walden_engine::*;
use walden_log::CrashMode;

#[allow(dead_code)]
use crate::model;
use model::items_def;

fn config(mem: &MemVfs) -> InstanceConfig {
    InstanceConfig {
        vfs: Arc::new(mem.clone()),
        log: LogConfig {
            segment_size: 4 << 20,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
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

fn row(id: i64, v: i64, t: &str) -> Vec<Option<Value>> {
    vec![
        Some(Value::Int(id)),
        Some(Value::Int(v)),
        Some(Value::text(t)),
    ]
}

/// Starts a transaction on `bulk` that logs its changes as it goes, and
/// leaves it open: the redo start of every checkpoint stays at its first
/// part until it ends.
fn open_large(db: &Arc<Database>, s: &Arc<Session>) -> Transaction {
    let mut tx = db.begin(s);
    let mut id = 0;
    while !tx.is_spilled() {
        for _ in 0..500 {
            tx.insert("bulk", row(id, id, &"z".repeat(300))).unwrap();
            id += 1;
        }
    }
    tx
}

fn rows_of(db: &Arc<Database>, s: &Arc<Session>, table: &str) -> Vec<Vec<Value>> {
    let mut tx = db.begin(s);
    tx.begin_statement();
    let t = db.table(table).unwrap();
    let mut out: Vec<Vec<Value>> = tx
        .scan_in(&t, (Bound::Unbounded, Bound::Unbounded))
        .unwrap()
        .into_iter()
        .map(|(_, r)| r.to_vec())
        .collect();
    out.sort_by(|a, b| a[0].cmp(&b[0]));
    out
}

/// How many rows `tx` sees in `table` (its own writes included).
fn rows_of_tx(tx: &Transaction, db: &Arc<Database>, table: &str) -> usize {
    let t = db.table(table).unwrap();
    tx.scan_in(&t, (Bound::Unbounded, Bound::Unbounded))
        .unwrap()
        .len()
}

fn reopen(after: &MemVfs) -> (Instance, Arc<Database>, Arc<Session>) {
    let inst = Instance::open(config(after)).expect("the database opens after the power cut");
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    (inst, db, s)
}

/// `ALTER TABLE t DROP COLUMN v` commits while the large transaction runs,
/// rows go in under the new shape, a checkpoint writes the altered table
/// with its redo start below the ALTER, then the large transaction commits;
/// after a power cut both are as committed.
#[test]
fn a_dropped_column_is_not_dropped_twice_by_recovery() {
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("bulk", false)).unwrap();
    db.create_table(&s, items_def("t", false)).unwrap();
    db.run(&s, CommitRequest::Durable, |tx| {
        for id in 0..50 {
            tx.insert("t", row(id, id * 10, &format!("before-{id}")))?;
        }
        Ok(())
    })
    .unwrap();
    let s2 = inst.new_session();
    let large = open_large(&db, &s2);
    let bulk_rows = rows_of_tx(&large, &db, "bulk");
    let before_alter = db.log().end_lsn();
    db.alter_table::<EngineError>(&s, "t", |t| {
        let mut def = t.def.clone();
        def.columns.remove(1);
        Ok(Some(Alteration {
            def,
            rewrite: Some(vec![ColumnSource::Old(0), ColumnSource::Old(2)]),
        }))
    })
    .unwrap();
    db.run(&s, CommitRequest::Durable, |tx| {
        for id in 50..60 {
            tx.insert(
                "t",
                vec![
                    Some(Value::Int(id)),
                    Some(Value::text(format!("after-{id}"))),
                ],
            )?;
        }
        tx.update(
            "t",
            &[Value::Int(3)],
            vec![Value::Int(3), Value::text("updated after")],
        )?;
        Ok(())
    })
    .unwrap();
    let info = db.checkpoint().unwrap();
    assert!(
        info.lsn < before_alter,
        "the checkpoint's redo start {} is not below the ALTER at {before_alter}: \
         the test does not reach the case it is for",
        info.lsn
    );
    let live = rows_of(&db, &s, "t");
    assert_eq!(live.len(), 60);
    assert!(live.iter().all(|r| r.len() == 2));
    // Its parts start below the checkpoint's commit floor, its commit
    // record comes after it: recovery takes it whole.
    large.commit(CommitRequest::Durable).unwrap();
    let after = mem.crash(CrashMode::SyncedOnly, 11);
    drop(inst);
    let (_inst, db, s) = reopen(&after);
    assert_eq!(db.table("t").unwrap().def.columns.len(), 2);
    assert_eq!(rows_of(&db, &s, "t"), live, "t after recovery");
    assert_eq!(
        rows_of(&db, &s, "bulk").len(),
        bulk_rows,
        "bulk after recovery"
    );
}

/// An index and a foreign key added while the large transaction runs are
/// in the checkpoint's image and again in the redo after its start: the
/// table comes back with each once.
#[test]
fn an_index_and_a_foreign_key_are_not_added_twice_by_recovery() {
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, items_def("bulk", false)).unwrap();
    db.create_table(&s, items_def("parent", false)).unwrap();
    db.create_table(&s, items_def("child", false)).unwrap();
    db.run(&s, CommitRequest::Durable, |tx| {
        for id in 0..20 {
            tx.insert("parent", row(id, id, "p"))?;
            tx.insert("child", row(id, id % 5, "c"))?;
        }
        Ok(())
    })
    .unwrap();
    let s2 = inst.new_session();
    let large = open_large(&db, &s2);
    let before_ddl = db.log().end_lsn();
    db.run(&s, CommitRequest::Durable, |tx| {
        tx.create_index(
            "child",
            IndexDef {
                id: 0,
                name: "child_v".into(),
                columns: vec![1],
                unique: false,
                constraint: false,
                options: Vec::new(),
            },
        )?;
        tx.add_foreign_key(
            "child",
            ForeignKeyDef {
                name: "child_v_fkey".into(),
                columns: vec![1],
                ref_table: db.table("parent").unwrap().id(),
                ref_columns: vec![0],
                on_update: FkAction::NoAction,
                on_delete: FkAction::NoAction,
                match_full: false,
                deferrable: false,
                initially_deferred: false,
            },
        )
    })
    .unwrap();
    let info = db.checkpoint().unwrap();
    assert!(info.lsn < before_ddl, "redo start not below the DDL");
    let after = mem.crash(CrashMode::SyncedOnly, 12);
    // Never committed: nothing of it after the cut.
    drop(large);
    drop(inst);
    let (_inst, db, s) = reopen(&after);
    let child = db.table("child").unwrap();
    assert_eq!(child.def.indexes.len(), 1, "{:?}", child.def.indexes);
    assert_eq!(
        child.def.foreign_keys.len(),
        1,
        "{:?}",
        child.def.foreign_keys
    );
    assert_eq!(rows_of(&db, &s, "child").len(), 20);
    assert!(rows_of(&db, &s, "bulk").is_empty());
}
