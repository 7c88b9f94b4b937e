//! Secondary indexes in the engine: built on existing rows, kept by every
//! commit, read through snapshots, unique ones enforced, and the same after
//! a power loss (redo of the log) and after a checkpoint (the image).

use std::ops::Bound;
use std::sync::Arc;
use walden_engine::*;
use walden_log::CrashMode;

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

fn items(db: &Arc<Database>, s: &Arc<Session>) {
    db.create_table(
        s,
        TableDef::new(
            "items",
            vec![
                ColumnDef::new("id", DataType::Int),
                ColumnDef::new("v", DataType::Int),
                ColumnDef::new("tag", DataType::Varchar(None)),
            ],
            &["id"],
        )
        .unwrap(),
    )
    .unwrap();
}

fn index(name: &str, columns: Vec<usize>, unique: bool) -> IndexDef {
    IndexDef {
        id: 0,
        name: name.into(),
        columns,
        unique,
        constraint: false,
        options: Vec::new(),
    }
}

fn put(db: &Arc<Database>, s: &Arc<Session>, id: i64, v: Option<i64>, tag: &str) -> Result<()> {
    db.run(s, CommitRequest::Default, |tx| {
        let t = db.table("items")?;
        let row = vec![
            Value::Int(id),
            v.map(Value::Int).unwrap_or(Value::Null),
            Value::text(tag),
        ];
        if tx.get_in(&t, &[Value::Int(id)])?.is_some() {
            tx.update_in(&t, &[Value::Int(id)], row)?;
        } else {
            tx.insert_into(&t, row.into_iter().map(Some).collect())?;
        }
        Ok(())
    })
}

/// Ids of rows whose `v` equals `v`, found through index 0, checked against
/// a scan of the table.
fn ids_with(db: &Arc<Database>, s: &Arc<Session>, v: i64) -> Vec<i64> {
    let mut tx = db.begin(s);
    tx.begin_statement();
    let t = db.table("items").unwrap();
    let prefix = [Value::Int(v)];
    let found = tx
        .index_scan(
            &t,
            0,
            Bound::Included(Box::new([Value::Int(v)])),
            |k: &Key| k.starts_with(&prefix),
        )
        .unwrap()
        .expect("the index serves a snapshot newer than itself");
    let via_index: Vec<i64> = found
        .iter()
        .filter(|(_, r)| r[1] == Value::Int(v))
        .map(|(k, _)| match k[0] {
            Value::Int(i) => i,
            _ => unreachable!(),
        })
        .collect();
    let via_scan: Vec<i64> = tx
        .scan_in(&t, (Bound::Unbounded, Bound::Unbounded))
        .unwrap()
        .into_iter()
        .filter(|(_, r)| r[1] == Value::Int(v))
        .map(|(k, _)| match k[0] {
            Value::Int(i) => i,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(via_index, via_scan, "index and scan disagree for v = {v}");
    via_index
}

#[test]
fn an_index_is_built_on_existing_rows_and_kept_by_commits() {
    let inst = Instance::open(mem_config(&MemVfs::new())).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    items(&db, &s);
    for id in 0..200 {
        put(&db, &s, id, Some(id % 10), "a").unwrap();
    }
    db.create_index(&s, "items", index("items_v", vec![1], false))
        .unwrap();
    assert_eq!(ids_with(&db, &s, 3).len(), 20);
    // Updates move rows between values; deletes remove them; rollbacks
    // leave nothing behind.
    put(&db, &s, 3, Some(4), "b").unwrap();
    assert_eq!(ids_with(&db, &s, 3).len(), 19);
    assert!(ids_with(&db, &s, 4).contains(&3));
    db.run(&s, CommitRequest::Default, |tx| {
        tx.delete("items", &[Value::Int(13)])?;
        Ok(())
    })
    .unwrap();
    assert_eq!(ids_with(&db, &s, 3).len(), 18);
    let mut tx = db.begin(&s);
    tx.insert(
        "items",
        vec![Some(Value::Int(1000)), Some(Value::Int(3)), None],
    )
    .unwrap();
    tx.rollback();
    assert_eq!(ids_with(&db, &s, 3).len(), 18);
    // A snapshot taken before a commit keeps reading the index as it was.
    let mut old = db.begin(&s);
    old.begin_statement();
    put(&db, &s, 23, Some(7), "c").unwrap();
    let t = db.table("items").unwrap();
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
    assert!(seen.iter().any(|(k, _)| k[0] == Value::Int(23)));
    assert!(!ids_with(&db, &s, 3).contains(&23));
}

#[test]
fn a_unique_index_refuses_a_second_holder_of_a_value() {
    let inst = Instance::open(mem_config(&MemVfs::new())).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    items(&db, &s);
    put(&db, &s, 1, Some(5), "a").unwrap();
    put(&db, &s, 2, Some(5), "a").unwrap();
    let e = db
        .create_index(&s, "items", index("items_v_key", vec![1], true))
        .unwrap_err();
    assert!(matches!(e, EngineError::UniqueBuildFailed(_)), "{e}");
    put(&db, &s, 2, Some(6), "a").unwrap();
    db.create_index(&s, "items", index("items_v_key", vec![1], true))
        .unwrap();
    let e = put(&db, &s, 3, Some(5), "x").unwrap_err();
    match e {
        EngineError::DuplicateKey(k) => {
            assert_eq!(k.constraint, "items_v_key");
            assert_eq!(k.columns, "(v)");
            assert_eq!(k.key, "5");
        }
        other => panic!("{other}"),
    }
    // NULLs are distinct; a value given up in the same transaction can be
    // taken; an update to a held value fails.
    put(&db, &s, 3, None, "x").unwrap();
    put(&db, &s, 4, None, "x").unwrap();
    db.run(&s, CommitRequest::Default, |tx| {
        tx.delete("items", &[Value::Int(1)])?;
        tx.insert(
            "items",
            vec![Some(Value::Int(9)), Some(Value::Int(5)), None],
        )?;
        Ok(())
    })
    .unwrap();
    assert!(matches!(
        put(&db, &s, 4, Some(6), "x"),
        Err(EngineError::DuplicateKey(_))
    ));
    // Two values swapped through a third in one transaction.
    db.run(&s, CommitRequest::Default, |tx| {
        let t = db.table("items")?;
        tx.update_in(
            &t,
            &[Value::Int(9)],
            vec![Value::Int(9), Value::Int(100), Value::Null],
        )?;
        tx.update_in(
            &t,
            &[Value::Int(2)],
            vec![Value::Int(2), Value::Int(5), Value::Null],
        )?;
        tx.update_in(
            &t,
            &[Value::Int(9)],
            vec![Value::Int(9), Value::Int(6), Value::Null],
        )?;
        Ok(())
    })
    .unwrap();
    assert_eq!(ids_with(&db, &s, 5), vec![2]);
    assert_eq!(ids_with(&db, &s, 6), vec![9]);
}

#[test]
fn a_second_writer_of_a_unique_value_waits_for_the_first() {
    let inst = Instance::open(mem_config(&MemVfs::new())).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    items(&db, &s);
    db.create_index(&s, "items", index("items_v_key", vec![1], true))
        .unwrap();
    for commit_first in [true, false] {
        let id = if commit_first { 10 } else { 20 };
        let v = id * 7;
        let mut first = db.begin(&s);
        first
            .insert(
                "items",
                vec![Some(Value::Int(id)), Some(Value::Int(v)), None],
            )
            .unwrap();
        let db2 = db.clone();
        let s2 = inst.new_session();
        let second = std::thread::spawn(move || put(&db2, &s2, id + 1, Some(v), "second"));
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!second.is_finished(), "the second writer must wait");
        if commit_first {
            first.commit(CommitRequest::Durable).unwrap();
            assert!(matches!(
                second.join().unwrap(),
                Err(EngineError::DuplicateKey(_))
            ));
        } else {
            first.rollback();
            second.join().unwrap().unwrap();
        }
    }
}

#[test]
fn indexes_come_back_after_power_loss_and_from_a_checkpoint() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    items(&db, &s);
    for id in 0..300 {
        put(&db, &s, id, Some(id % 7), "a").unwrap();
    }
    db.create_index(&s, "items", index("items_v", vec![1], false))
        .unwrap();
    db.create_index(&s, "items", index("items_tag_v", vec![2, 1], false))
        .unwrap();
    for id in 0..50 {
        put(&db, &s, id, Some(100 + id), "b").unwrap();
    }
    db.drop_index(&s, "items_tag_v").unwrap();
    let expect: Vec<Vec<i64>> = (0..7).map(|v| ids_with(&db, &s, v)).collect();
    // Redo only: the index's creation and every change come from the log.
    let crashed = mem.crash(CrashMode::SyncedOnly, 11);
    drop(db);
    drop(inst);
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    let t = db.table("items").unwrap();
    assert_eq!(t.def.indexes.len(), 1);
    assert!(t.def.index("items_tag_v").is_none());
    for v in 0..7 {
        assert_eq!(ids_with(&db, &s, v), expect[v as usize]);
    }
    // From the image: a checkpoint, then a crash with nothing after it.
    let mut def = TableDef::new(
        "people",
        vec![
            ColumnDef::new("id", DataType::Int),
            ColumnDef::new("email", DataType::Varchar(None)),
        ],
        &["id"],
    )
    .unwrap();
    def.indexes.push(IndexDef {
        constraint: true,
        options: Vec::new(),
        ..index("people_email_key", vec![1], true)
    });
    db.create_table(&s, def).unwrap();
    for (id, e) in [(1, "a@x"), (2, "b@x")] {
        db.run(&s, CommitRequest::Default, |tx| {
            tx.insert("people", vec![Some(Value::Int(id)), Some(Value::text(e))])
                .map(drop)
        })
        .unwrap();
    }
    db.checkpoint().unwrap();
    let crashed = crashed.crash(CrashMode::SyncedOnly, 12);
    drop(db);
    drop(inst);
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    let t = db.table("people").unwrap();
    assert!(t
        .def
        .index("people_email_key")
        .is_some_and(|(_, d)| d.unique && d.constraint));
    for v in 0..7 {
        assert_eq!(ids_with(&db, &s, v), expect[v as usize]);
    }
    let e = db
        .run(&s, CommitRequest::Default, |tx| {
            tx.insert(
                "people",
                vec![Some(Value::Int(3)), Some(Value::text("b@x"))],
            )
            .map(drop)
        })
        .unwrap_err();
    assert!(matches!(e, EngineError::DuplicateKey(_)), "{e}");
}
