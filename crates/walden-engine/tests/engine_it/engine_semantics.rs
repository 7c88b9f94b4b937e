//! Engine behaviour: durability resolution, visibility, locks, deadlocks,
//! checkpoints, backups, sequences, identity and poisoning.

use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use walden_engine::*;
use walden_log::{CrashMode, Faults};

fn mem_config(mem: &MemVfs) -> InstanceConfig {
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
        ..InstanceConfig::new("/inst")
    }
}

fn accounts(db: &Arc<Database>, s: &Arc<Session>) {
    db.create_table(
        s,
        TableDef::new(
            "accounts",
            vec![
                ColumnDef::new("id", DataType::Int),
                ColumnDef::new("balance", DataType::BigInt)
                    .not_null()
                    .default(DefaultExpr::Value(Value::Int(0))),
                ColumnDef::new("note", DataType::Varchar(Some(20))),
            ],
            &["id"],
        )
        .unwrap(),
    )
    .unwrap();
}

fn ins(tx: &mut Transaction, id: i64, bal: i64) {
    tx.insert(
        "accounts",
        vec![Some(Value::Int(id)), Some(Value::Int(bal)), None],
    )
    .unwrap();
}

#[test]
fn disabled_ignores_delayed_requests_allowed_honours_them_forced_forces() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    accounts(&db, &s);
    let commit = |id: i64, req: CommitRequest| {
        let mut tx = db.begin(&s);
        ins(&mut tx, id, 1);
        tx.commit(req).unwrap()
    };
    assert_eq!(
        db.settings().delayed_durability,
        DelayedDurability::Disabled
    );
    assert!(
        commit(1, CommitRequest::Delayed).durable,
        "DISABLED must ignore the request silently"
    );
    db.alter_settings(&s, |x| x.delayed_durability = DelayedDurability::Allowed)
        .unwrap();
    assert!(!commit(2, CommitRequest::Delayed).durable);
    assert!(commit(3, CommitRequest::Default).durable);
    s.set_delayed_default(true);
    assert!(
        !commit(4, CommitRequest::Default).durable,
        "session default applies"
    );
    assert!(commit(5, CommitRequest::Durable).durable);
    s.set_delayed_default(false);
    db.alter_settings(&s, |x| x.delayed_durability = DelayedDurability::Forced)
        .unwrap();
    assert!(!commit(6, CommitRequest::Durable).durable);
    assert!(!commit(7, CommitRequest::Default).durable);
    // DDL stays fully durable under FORCED.
    let before = db.log().hardened_lsn();
    db.create_sequence(&s, "seq", 1, 1).unwrap();
    assert!(db.log().hardened_lsn() > before);
    assert_eq!(db.log().hardened_lsn(), db.log().end_lsn());
}

#[test]
fn a_durable_commit_hardens_earlier_delayed_ones() {
    let mem = MemVfs::new();
    let mut cfg = mem_config(&mem);
    cfg.log.max_flush_delay = Duration::from_secs(60);
    let inst = Instance::open(cfg).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    accounts(&db, &s);
    db.alter_settings(&s, |x| x.delayed_durability = DelayedDurability::Allowed)
        .unwrap();
    for i in 0..5 {
        let mut tx = db.begin(&s);
        ins(&mut tx, i, 0);
        tx.commit(CommitRequest::Delayed).unwrap();
    }
    let e = db.exposure();
    assert_eq!(e.unhardened_commits, 5);
    let mut tx = db.begin(&s);
    ins(&mut tx, 100, 0);
    let out = tx.commit(CommitRequest::Durable).unwrap();
    assert!(db.log().hardened_lsn() >= out.lsn.unwrap());
    assert_eq!(db.exposure().unhardened_commits, 0);
    // A power loss now keeps all six.
    let crashed = mem.crash(CrashMode::SyncedOnly, 1);
    drop(db);
    drop(inst);
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    let db = inst.database("walden").unwrap();
    assert_eq!(db.table("accounts").unwrap().len(), 6);
}

#[test]
fn readers_never_see_uncommitted_rows_and_rollback_discards() {
    let inst = Instance::open(mem_config(&MemVfs::new())).unwrap();
    let db = inst.database("walden").unwrap();
    let (s1, s2) = (inst.new_session(), inst.new_session());
    accounts(&db, &s1);
    let mut t1 = db.begin(&s1);
    ins(&mut t1, 1, 10);
    assert!(
        t1.get("accounts", &[Value::Int(1)]).unwrap().is_some(),
        "own writes are visible"
    );
    let t2 = db.begin(&s2);
    assert!(t2.get("accounts", &[Value::Int(1)]).unwrap().is_none());
    assert!(t2.scan_all("accounts").unwrap().is_empty());
    t1.rollback();
    assert_eq!(db.locks_held(), 0);
    let t3 = db.begin(&s2);
    assert!(t3.scan_all("accounts").unwrap().is_empty());
}

#[test]
fn writers_of_the_same_row_wait_and_deadlocks_pick_a_victim() {
    let inst = Instance::open(mem_config(&MemVfs::new())).unwrap();
    let db = inst.database("walden").unwrap();
    let (s1, s2) = (inst.new_session(), inst.new_session());
    accounts(&db, &s1);
    db.run(&s1, CommitRequest::Default, |tx| {
        ins(tx, 1, 100);
        ins(tx, 2, 100);
        Ok(())
    })
    .unwrap();
    let mut t1 = db.begin(&s1);
    let r = t1
        .get_for_update("accounts", &[Value::Int(1)])
        .unwrap()
        .unwrap();
    t1.update(
        "accounts",
        &[Value::Int(1)],
        vec![r[0].clone(), Value::Int(50), Value::Null],
    )
    .unwrap();
    // Session 2 blocks on row 1 while holding row 2.
    let db2 = db.clone();
    let s2c = s2.clone();
    let h = std::thread::spawn(move || {
        let mut t2 = db2.begin(&s2c);
        t2.get_for_update("accounts", &[Value::Int(2)]).unwrap();
        let got = t2.get_for_update("accounts", &[Value::Int(1)]);
        match got {
            Ok(row) => {
                let bal = row.unwrap()[1].as_i64().unwrap();
                t2.commit(CommitRequest::Default).unwrap();
                Ok(bal)
            }
            Err(e) => Err(e),
        }
    });
    // Wait until session 2 is waiting, then close the cycle from session 1.
    // (Session 2 holds row 2 once two locks are held; give it time to block on row 1.)
    while db.locks_held() < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    let err = t1.get_for_update("accounts", &[Value::Int(2)]).unwrap_err();
    assert!(matches!(err, EngineError::Deadlock { .. }), "{err}");
    t1.rollback();
    // The survivor proceeds and sees the committed (not the rolled back) balance.
    assert_eq!(h.join().unwrap().unwrap(), 100);
    assert!(s2.waits.get(WaitType::LckMX).waiting_tasks_count >= 1);
    assert_eq!(db.counters().deadlocks.load(Relaxed), 1);
}

#[test]
fn constraints_give_clear_errors() {
    let inst = Instance::open(mem_config(&MemVfs::new())).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    accounts(&db, &s);
    let mut tx = db.begin(&s);
    ins(&mut tx, 1, 1);
    let e = tx
        .insert("accounts", vec![Some(Value::Int(1)), None, None])
        .unwrap_err();
    assert!(matches!(e, EngineError::DuplicateKey(_)), "{e}");
    let e = tx
        .insert(
            "accounts",
            vec![Some(Value::Int(2)), Some(Value::Null), None],
        )
        .unwrap_err();
    assert!(matches!(e, EngineError::NotNull { .. }), "{e}");
    let e = tx
        .insert(
            "accounts",
            vec![
                Some(Value::Int(3)),
                None,
                Some(Value::text("this is far too long for twenty")),
            ],
        )
        .unwrap_err();
    assert!(matches!(e, EngineError::Data(_)), "{e}");
    let e = tx
        .insert("accounts", vec![Some(Value::Int(1 << 40)), None, None])
        .unwrap_err();
    assert!(matches!(e, EngineError::OutOfRange(_)), "{e}");
    let row = tx
        .insert("accounts", vec![Some(Value::Int(4)), None, None])
        .unwrap();
    assert_eq!(row[1], Value::Int(0), "default applied");
    tx.commit(CommitRequest::Default).unwrap();
    assert!(matches!(
        db.table("nope"),
        Err(EngineError::UnknownTable(_))
    ));
}

#[test]
fn identity_sequences_and_scans() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_sequence(&s, "order_no", 1000, 10).unwrap();
    db.create_table(
        &s,
        TableDef::new(
            "orders",
            vec![
                ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                ColumnDef::new("no", DataType::BigInt)
                    .default(DefaultExpr::NextVal("order_no".into())),
                ColumnDef::new("at", DataType::Timestamp).default(DefaultExpr::Now),
                ColumnDef::new("ref", DataType::Uuid).default(DefaultExpr::NewUuid),
            ],
            &["id"],
        )
        .unwrap(),
    )
    .unwrap();
    for _ in 0..40 {
        db.run(&s, CommitRequest::Default, |tx| {
            tx.insert("orders", vec![None, None, None, None])
        })
        .unwrap();
    }
    let tx = db.begin(&s);
    let rows = tx.scan_all("orders").unwrap();
    assert_eq!(rows.len(), 40);
    assert_eq!(rows[0].1[0], Value::Int(1));
    assert_eq!(rows[39].1[1], Value::Int(1000 + 39 * 10));
    let mid = tx
        .scan(
            "orders",
            (
                Bound::Included(vec![Value::Int(10)].into()),
                Bound::Excluded(vec![Value::Int(20)].into()),
            ),
        )
        .unwrap();
    assert_eq!(mid.len(), 10);
    drop(tx);
    // After a power loss, identity and sequence values are never reused.
    let crashed = mem.crash(CrashMode::SyncedOnly, 7);
    drop(db);
    drop(inst);
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    let row = db
        .run(&s, CommitRequest::Default, |tx| {
            tx.insert("orders", vec![None, None, None, None])
        })
        .unwrap();
    assert_eq!(row[0], Value::Int(41));
    assert!(row[1].as_i64().unwrap() > 1000 + 39 * 10);
}

#[test]
fn checkpoint_recycles_log_and_recovery_replays_the_tail() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    accounts(&db, &s);
    for i in 0..3000 {
        db.run(&s, CommitRequest::Default, |tx| {
            ins(tx, i, i);
            Ok(())
        })
        .unwrap();
    }
    let segs_before = db.log().segments().len();
    assert!(segs_before > 2);
    // The first checkpoint keeps the log of the previous image (the
    // fallback); the second releases the log before the first.
    let first = db.checkpoint().unwrap();
    assert_eq!(first.segments_released, 0, "{first:?}");
    let info = db.checkpoint().unwrap();
    assert!(info.segments_released >= segs_before - 1, "{info:?}");
    assert!(db.data_file_stats().snapshot().num_of_writes > 0);
    for i in 3000..3100 {
        db.run(&s, CommitRequest::Default, |tx| {
            ins(tx, i, i);
            Ok(())
        })
        .unwrap();
    }
    let crashed = mem.crash(CrashMode::SyncedOnly, 3);
    drop(db);
    drop(inst);
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    let db = inst.database("walden").unwrap();
    assert_eq!(db.table("accounts").unwrap().len(), 3100);
    assert_eq!(
        db.recovery_report().scan.records,
        100,
        "only the tail after the checkpoint is replayed"
    );
}

#[test]
fn full_recovery_backup_log_and_restore() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    accounts(&db, &s);
    let e = db
        .backup_log(&s, &PathBuf::from("/inst/b1.trn"))
        .unwrap_err();
    assert!(e.to_string().contains("SIMPLE"), "{e}");
    db.alter_settings(&s, |x| x.recovery_model = RecoveryModel::Full)
        .unwrap();
    let e = db
        .backup_log(&s, &PathBuf::from("/inst/b1.trn"))
        .unwrap_err();
    assert!(e.to_string().contains("BACKUP DATABASE"), "{e}");
    for i in 0..10 {
        db.run(&s, CommitRequest::Default, |tx| {
            ins(tx, i, i);
            Ok(())
        })
        .unwrap();
    }
    db.backup_database(&s, &PathBuf::from("/inst/full.bak"))
        .unwrap();
    for i in 10..500 {
        db.run(&s, CommitRequest::Default, |tx| {
            ins(tx, i, i);
            Ok(())
        })
        .unwrap();
    }
    // A checkpoint in FULL keeps the log that is not yet backed up.
    db.checkpoint().unwrap();
    let l1 = db.backup_log(&s, &PathBuf::from("/inst/l1.trn")).unwrap();
    assert!(l1.to_lsn > l1.from_lsn);
    for i in 500..700 {
        db.run(&s, CommitRequest::Default, |tx| {
            ins(tx, i, i);
            Ok(())
        })
        .unwrap();
    }
    db.run(&s, CommitRequest::Default, |tx| {
        tx.delete("accounts", &[Value::Int(3)])
    })
    .unwrap();
    let l2 = db.backup_log(&s, &PathBuf::from("/inst/l2.trn")).unwrap();
    assert_eq!(l2.from_lsn, l1.to_lsn);
    // Out of order is refused with a clear message.
    let e = inst
        .restore_database(
            "copy",
            &PathBuf::from("/inst/full.bak"),
            &[PathBuf::from("/inst/l2.trn")],
        )
        .err()
        .unwrap();
    assert!(e.to_string().contains("needs LSN"), "{e}");
    let copy = inst
        .restore_database(
            "copy",
            &PathBuf::from("/inst/full.bak"),
            &[PathBuf::from("/inst/l1.trn"), PathBuf::from("/inst/l2.trn")],
        )
        .unwrap();
    assert_eq!(copy.table("accounts").unwrap().len(), 699);
    // The restored database takes new commits and survives a restart.
    db.run(&s, CommitRequest::Default, |tx| {
        ins(tx, 9999, 1);
        Ok(())
    })
    .unwrap();
    copy.run(&s, CommitRequest::Default, |tx| {
        ins(tx, 9999, 1);
        Ok(())
    })
    .unwrap();
    inst.close().unwrap();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    assert_eq!(
        inst.database("copy")
            .unwrap()
            .table("accounts")
            .unwrap()
            .len(),
        700
    );
    assert_eq!(inst.databases().len(), 2);
}

#[test]
fn a_failed_fsync_poisons_the_database() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    accounts(&db, &s);
    mem.set_faults(Faults {
        fail_sync_after: Some(0),
        ..Faults::default()
    });
    let mut tx = db.begin(&s);
    ins(&mut tx, 1, 1);
    // The commit record reached the log buffer before the sync failed: the
    // client must be told the outcome is unknown (08007 at the wire), since
    // the record may have reached the disk and be replayed after a restart.
    let e = tx.commit(CommitRequest::Default).unwrap_err();
    assert!(
        matches!(
            e,
            EngineError::CommitOutcomeUnknown {
                source: walden_log::LogError::Poisoned(_),
                ..
            }
        ),
        "{e}"
    );
    mem.set_faults(Faults::default());
    // Later commits are refused before their record is appended: known not
    // to have committed.
    for req in [CommitRequest::Default, CommitRequest::Delayed] {
        let mut tx = db.begin(&s);
        ins(&mut tx, 2, 1);
        let e = tx.commit(req).unwrap_err();
        assert!(
            matches!(e, EngineError::Log(walden_log::LogError::Poisoned(_))),
            "{e}"
        );
    }
    assert_eq!(db.locks_held(), 0);
    // Nothing was made visible.
    assert_eq!(db.table("accounts").unwrap().len(), 0);
    // Nor does a checkpoint move the redo start past a hardened commit that
    // was never applied.
    let e = db.checkpoint().unwrap_err();
    assert!(
        matches!(e, EngineError::Log(walden_log::LogError::Poisoned(_))),
        "{e}"
    );
}

#[test]
fn a_large_transaction_streams_over_many_records_and_stays_atomic() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    accounts(&db, &s);
    let mut tx = db.begin(&s);
    for i in 0..30_000 {
        ins(&mut tx, i, i);
    }
    tx.commit(CommitRequest::Default).unwrap();
    // A second large one that is cut by a crash before its commit record.
    let crashed = {
        let t = db.table("accounts").unwrap();
        let mut tx = db.begin(&s);
        for i in 0..30_000 {
            tx.update_in(
                &t,
                &[Value::Int(i)],
                vec![Value::Int(i), Value::Int(-1), Value::Null],
            )
            .unwrap();
        }
        // Simulate the crash mid-commit by crashing from another thread while it streams.
        let mem2 = mem.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(2));
            mem2.crash(CrashMode::TornPrefix, 5)
        });
        let _ = tx.commit(CommitRequest::Default);
        h.join().unwrap()
    };
    drop(db);
    drop(inst);
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    let db = inst.database("walden").unwrap();
    let t = db.table("accounts").unwrap();
    let rows = t.latest_rows().unwrap();
    assert_eq!(rows.len(), 30_000);
    let negative = rows.values().filter(|r| r[1] == Value::Int(-1)).count();
    assert!(
        negative == 0 || negative == 30_000,
        "partial transaction: {negative}"
    );
}

#[test]
fn clean_shutdown_loses_no_delayed_commit_and_databases_are_separate() {
    let mem = MemVfs::new();
    let mut cfg = mem_config(&mem);
    cfg.log.max_flush_delay = Duration::from_secs(60);
    let inst = Instance::open(cfg.clone()).unwrap();
    let s = inst.new_session();
    let other = inst.create_database("other").unwrap();
    assert!(matches!(
        inst.create_database("other"),
        Err(EngineError::DatabaseExists(_))
    ));
    for db in [inst.database("walden").unwrap(), other.clone()] {
        accounts(&db, &s);
        db.alter_settings(&s, |x| x.delayed_durability = DelayedDurability::Forced)
            .unwrap();
        for i in 0..200 {
            db.run(&s, CommitRequest::Default, |tx| {
                ins(tx, i, i);
                Ok(())
            })
            .unwrap();
        }
    }
    assert!(other.exposure().unhardened_commits > 0);
    inst.close().unwrap();
    let crashed = mem.crash(CrashMode::SyncedOnly, 0);
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    for name in ["walden", "other"] {
        let db = inst.database(name).unwrap();
        assert_eq!(db.table("accounts").unwrap().len(), 200, "{name}");
        assert_eq!(db.settings().delayed_durability, DelayedDurability::Forced);
    }
    assert_ne!(
        inst.database("walden").unwrap().id(),
        inst.database("other").unwrap().id()
    );
    inst.drop_database("other").unwrap();
    assert!(inst.database("other").is_err());
}
