//! The data file is not verified page by page at open (restart time would
//! grow with it); the check of `store/check.rs` reads it back instead, in
//! the background and for `DBCC CHECKDB`. What it must guarantee: damage
//! anywhere in the file is either refused at open, found by the check, or
//! harmless (free space, an old commit's pages), so a database whose check
//! passed never reads a wrong row. Damage it finds stops the checkpoints.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;
use walden_engine::store::StorageConfig;
use walden_engine::*;
use walden_log::{CrashMode, OpenOptionsVfs, Vfs};

const ROWS: i64 = 3_000;

fn config(mem: &MemVfs, verify_on_open: bool) -> InstanceConfig {
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
        storage: StorageConfig {
            read_through: true,
            cache_bytes: 1 << 20,
            verify_on_open,
            background_check: false,
            ..Default::default()
        },
        ..InstanceConfig::new("/inst")
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Text(t) => t.to_string(),
        other => panic!("tag {other:?}"),
    }
}

fn tag(id: i64) -> String {
    format!("needle-{id:06}-{}", "y".repeat(60))
}

/// A table of `ROWS` rows with a secondary index, checkpointed and closed
/// cleanly (every byte synced).
fn build() -> MemVfs {
    let mem = MemVfs::new();
    let inst = Instance::open(config(&mem, false)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    let mut def = TableDef::new(
        "items",
        vec![
            ColumnDef::new("id", DataType::BigInt),
            ColumnDef::new("v", DataType::BigInt),
            ColumnDef::new("tag", DataType::Varchar(None)),
        ],
        &["id"],
    )
    .unwrap();
    def.indexes.push(IndexDef {
        id: 0,
        name: "items_v".into(),
        columns: vec![1],
        unique: false,
        constraint: false,
        options: Vec::new(),
    });
    db.create_table(&s, def).unwrap();
    let t = db.table("items").unwrap();
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(500) {
        let mut tx = db.begin(&s);
        for &id in chunk {
            let row = vec![Value::Int(id), Value::Int(id % 7), Value::text(tag(id))];
            tx.insert_into(&t, row.into_iter().map(Some).collect())
                .unwrap();
        }
        tx.commit(CommitRequest::Durable).unwrap();
    }
    db.checkpoint().unwrap();
    inst.close().unwrap();
    mem
}

fn store_path(mem: &MemVfs) -> (PathBuf, u64) {
    mem.files()
        .into_iter()
        .find(|(p, _)| p.ends_with("store.redb"))
        .expect("a store file")
}

fn file_bytes(mem: &MemVfs, path: &std::path::Path) -> Vec<u8> {
    let f = mem
        .open(
            path,
            OpenOptionsVfs {
                create: false,
                dsync: false,
            },
        )
        .unwrap();
    let mut buf = vec![0u8; f.len().unwrap() as usize];
    walden_log::vfs::read_exact_at(&*f, &mut buf, 0).unwrap();
    buf
}

/// Every row read three ways (scan, point reads, the index) must be the
/// model's; any error is a failure.
fn rows_are_right(db: &Arc<Database>, s: &Arc<Session>, what: &str) {
    let t = db.table("items").unwrap();
    let mut tx = db.begin(s);
    tx.begin_statement();
    let all: BTreeMap<i64, String> = tx
        .scan_in(&t, (Bound::Unbounded, Bound::Unbounded))
        .unwrap_or_else(|e| panic!("{what}: scan: {e}"))
        .iter()
        .map(|(_, r)| (r[0].as_i64().unwrap(), text(&r[2])))
        .collect();
    assert_eq!(all.len() as i64, ROWS, "{what}: rows scanned");
    for (id, tg) in &all {
        assert_eq!(*tg, tag(*id), "{what}: row {id}");
    }
    for id in (0..ROWS).step_by(97) {
        let got = tx
            .get_in(&t, &[Value::Int(id)])
            .unwrap_or_else(|e| panic!("{what}: get {id}: {e}"));
        assert_eq!(got.map(|r| text(&r[2])), Some(tag(id)), "{what}: get {id}");
    }
    for v in 0..7 {
        let prefix = [Value::Int(v)];
        let found = tx
            .index_scan(
                &t,
                0,
                Bound::Included(Box::new([Value::Int(v)])),
                |k: &Key| k.starts_with(&prefix),
            )
            .unwrap_or_else(|e| panic!("{what}: index v = {v}: {e}"))
            .expect("index usable");
        let want = (0..ROWS).filter(|id| id % 7 == v).count();
        assert_eq!(found.len(), want, "{what}: index v = {v}");
    }
}

#[test]
fn a_clean_file_passes_with_every_count_compared() {
    let mem = build();
    let inst = Instance::open(config(&mem, false)).unwrap();
    let db = inst.database("walden").unwrap();
    let r = db.check_store().unwrap();
    assert_eq!(r.problem_count, 0, "{:?}", r.problems);
    let by: BTreeMap<&str, (u64, bool)> = r
        .tables
        .iter()
        .map(|t| (t.name.as_str(), (t.entries, t.count_compared)))
        .collect();
    assert_eq!(by.get("items"), Some(&(ROWS as u64, true)), "{by:?}");
    assert_eq!(
        by.get("items (index items_v)"),
        Some(&(ROWS as u64, true)),
        "{by:?}"
    );
    assert!(db.store_damaged().is_none());
    db.checkpoint().unwrap();
}

#[test]
fn a_damaged_row_is_found_and_stops_checkpoints() {
    let mem = build();
    let (path, _) = store_path(&mem);
    let bytes = file_bytes(&mem, &path);
    // Every copy of row 1234's text (an older commit's page may hold one
    // too): the live one is among them.
    let needle = tag(1234);
    let mut hits = 0;
    for at in 0..bytes.len().saturating_sub(needle.len()) {
        if bytes[at..].starts_with(needle.as_bytes()) {
            mem.flip_bit(&path, (at + 3) as u64, 1).unwrap();
            hits += 1;
        }
    }
    assert!(hits > 0, "row 1234 not found in the file");

    // Verified at open, the file is refused.
    match Instance::open(config(&mem, true)) {
        Err(EngineError::Store { .. } | EngineError::CorruptDataFile { .. }) => {}
        Err(e) => panic!("refused with an unexpected error: {e}"),
        Ok(_) => {
            // redb's check covers its own pages; a row's bytes are ours,
            // so the open may pass. The check below must find it.
        }
    }

    let inst = Instance::open(config(&mem, false)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    let t = db.table("items").unwrap();
    {
        let mut tx = db.begin(&s);
        tx.begin_statement();
        assert!(matches!(
            tx.get_in(&t, &[Value::Int(1234)]),
            Err(EngineError::CorruptDataFile { .. })
        ));
        let other = tx.get_in(&t, &[Value::Int(17)]).unwrap();
        assert_eq!(other.map(|r| text(&r[2])), Some(tag(17)));
    }
    let r = db.check_store().unwrap();
    assert!(r.problem_count >= 1, "the check missed the damaged row");
    assert!(
        r.problems[0].starts_with("items: ") && r.problems[0].contains("checksum"),
        "{:?}",
        r.problems
    );
    let why = db.store_damaged().expect("marked damaged");
    assert!(why.contains("items"), "{why}");
    // Writes go on (the log keeps them); checkpoints do not.
    let mut tx = db.begin(&s);
    tx.insert_into(
        &t,
        vec![
            Some(Value::Int(ROWS + 1)),
            Some(Value::Int(0)),
            Some(Value::text("new")),
        ],
    )
    .unwrap();
    tx.commit(CommitRequest::Durable).unwrap();
    assert!(matches!(
        db.checkpoint(),
        Err(EngineError::CorruptDataFile { .. })
    ));
}

/// Bit rot at random places: refused at open, found by the check, or
/// harmless; never a passed check with wrong rows.
#[test]
fn random_damage_is_refused_found_or_harmless() {
    let base = build();
    let (path, len) = store_path(&base);
    let (mut refused, mut found, mut harmless) = (0, 0, 0);
    for seed in 0..80u64 {
        let mem = base.crash(CrashMode::SyncedOnly, seed);
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        x ^= x >> 29;
        let at = x % len;
        mem.flip_bit(&path, at, (x >> 40) as u8 % 8).unwrap();
        let what = format!("seed {seed}: bit at {at} of {len}");
        let inst = match Instance::open(config(&mem, false)) {
            Ok(i) => i,
            Err(EngineError::Store { .. } | EngineError::CorruptDataFile { .. }) => {
                refused += 1;
                continue;
            }
            Err(e) => panic!("{what}: open failed: {e}"),
        };
        let db = inst.database("walden").unwrap();
        let r = db.check_store().unwrap();
        if r.problem_count > 0 {
            assert!(db.store_damaged().is_some(), "{what}");
            assert!(db.checkpoint().is_err(), "{what}: a checkpoint ran");
            found += 1;
            continue;
        }
        let s = inst.new_session();
        rows_are_right(&db, &s, &what);
        harmless += 1;
    }
    eprintln!(
        "80 flips: {refused} refused at open, {found} found by the check, {harmless} harmless"
    );
    assert!(found > 0, "no flip was found by the check");
}
