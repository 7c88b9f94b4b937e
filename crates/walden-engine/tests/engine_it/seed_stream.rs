//! Seeds and full backups stream: a seed in many small pieces arrives
//! whole, an interrupted or damaged seed leaves the old copy, a crash at any
//! step of the swap leaves one whole database, and a backup larger than its
//! chunk restores every row.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use walden_engine::*;

fn os_config(dir: &Path) -> InstanceConfig {
    InstanceConfig {
        log: LogConfig {
            block_size: 8192,
            segment_size: 256 * 1024,
            buffer_size: 64 * 1024,
            max_write: 16 * 1024,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        ..InstanceConfig::new(dir)
    }
}

/// Table `t` (keyed by `id`) and `h` (no primary key: a hidden one).
fn make_tables(db: &Arc<Database>, s: &Arc<Session>) {
    for (name, key) in [("t", &["id"][..]), ("h", &[][..])] {
        db.create_table(
            s,
            TableDef::new(
                name,
                vec![
                    ColumnDef::new("id", DataType::BigInt),
                    ColumnDef::new("v", DataType::Text),
                ],
                key,
            )
            .unwrap(),
        )
        .unwrap();
    }
}

/// Rows `from..from + n` in both tables, with ~100-byte values.
fn fill(db: &Arc<Database>, s: &Arc<Session>, from: i64, n: i64) {
    for lo in (from..from + n).step_by(500) {
        db.run(s, CommitRequest::Default, |tx| {
            for i in lo..(lo + 500).min(from + n) {
                let v = Value::text(format!("row {i} {}", "x".repeat(90)));
                tx.insert("t", vec![Some(Value::Int(i)), Some(v.clone())])?;
                if i % 4 == 0 {
                    tx.insert("h", vec![Some(Value::Int(i)), Some(v)])?;
                }
            }
            Ok(())
        })
        .unwrap();
    }
}

type Rows = (BTreeMap<Key, Row>, Vec<Row>);

/// Both tables' rows (`h` by value: its hidden keys are the copy's own).
fn rows_of(db: &Arc<Database>) -> Rows {
    let mut h: Vec<Row> = db
        .table("h")
        .unwrap()
        .latest_rows()
        .unwrap()
        .into_values()
        .collect();
    h.sort_by_key(|r| format!("{r:?}"));
    (db.table("t").unwrap().latest_rows().unwrap(), h)
}

fn primary(dir: &Path, rows: i64) -> (Instance, Arc<Database>) {
    let inst = Instance::open(os_config(dir)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    make_tables(&db, &s);
    fill(&db, &s, 0, rows);
    (inst, db)
}

/// Seeds `to`'s database "walden" from `from` in pieces of `chunk` bytes,
/// as the replication link does; `cut`: the link dies after that many
/// pieces. Returns the number of pieces.
fn seed(from: &Arc<Database>, to: &Instance, chunk: usize, cut: Option<usize>) -> Result<usize> {
    let rx: RefCell<Option<SeedReceiver>> = RefCell::new(None);
    let mut pieces = 0;
    let mut crc = 0u32;
    let sent = from.seed_stream(
        chunk,
        &mut |lsn| {
            *rx.borrow_mut() = Some(to.begin_seed("walden", lsn)?);
            Ok(())
        },
        &mut |b| {
            if Some(pieces) == cut {
                return Err(EngineError::Replica("connection lost".into()));
            }
            assert!(b.len() <= chunk);
            pieces += 1;
            crc = crc32c_of(crc, b);
            rx.borrow_mut().as_mut().unwrap().write(b)
        },
    );
    let r = rx.borrow_mut().take();
    let (_, len) = sent?;
    r.unwrap().finish(len, crc)?;
    Ok(pieces)
}

/// CRC-32C (Castagnoli), bit by bit: the test's own, not the engine's.
fn crc32c_of(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
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

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains('.') && n != "instance.json")
        .collect()
}

#[test]
fn a_seed_in_many_small_pieces_arrives_whole() {
    let (pd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_p, pdb) = primary(pd.path(), 3000);
    let sec = Instance::open(os_config(sd.path())).unwrap();
    let pieces = seed(&pdb, &sec, 4096, None).unwrap();
    assert!(pieces > 50, "only {pieces} pieces");
    let sdb = sec.database("walden").unwrap();
    assert!(sdb.is_secondary());
    assert_eq!(rows_of(&sdb), rows_of(&pdb));
    assert_eq!(sdb.log().end_lsn(), sdb.applied_lsn());
    assert!(
        leftovers(sd.path()).is_empty(),
        "{:?}",
        leftovers(sd.path())
    );
    sec.close().unwrap();
    let sec = Instance::open(os_config(sd.path())).unwrap();
    assert_eq!(rows_of(&sec.database("walden").unwrap()), rows_of(&pdb));
}

#[test]
fn an_interrupted_or_damaged_seed_leaves_the_old_copy_and_a_retry_completes() {
    let (pd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (p, pdb) = primary(pd.path(), 1000);
    let sec = Instance::open(os_config(sd.path())).unwrap();
    seed(&pdb, &sec, 64 << 10, None).unwrap();
    let old = rows_of(&pdb);
    fill(&pdb, &p.new_session(), 1000, 1500);
    let e = seed(&pdb, &sec, 4096, Some(7)).unwrap_err();
    assert!(e.to_string().contains("connection lost"), "{e}");
    let sdb = sec.database("walden").unwrap();
    assert!(!sdb.is_superseded());
    assert_eq!(rows_of(&sdb), old, "the old copy stays readable");
    assert!(
        leftovers(sd.path()).is_empty(),
        "{:?}",
        leftovers(sd.path())
    );
    // Pieces that do not add up to what the primary says are refused.
    let mut rx = sec.begin_seed("walden", 0).unwrap();
    rx.write(b"WALDNIMG\x03\0\0\0garbage").unwrap();
    let e = rx.finish(19, 0).unwrap_err();
    assert!(e.to_string().contains("damaged"), "{e}");
    assert_eq!(rows_of(&sec.database("walden").unwrap()), old);
    assert!(
        leftovers(sd.path()).is_empty(),
        "{:?}",
        leftovers(sd.path())
    );
    // The retry brings the new rows.
    seed(&pdb, &sec, 4096, None).unwrap();
    assert!(sdb.is_superseded());
    assert_eq!(rows_of(&sec.database("walden").unwrap()), rows_of(&pdb));
}

#[test]
fn a_crash_at_any_step_of_the_swap_leaves_one_whole_database() {
    let pd = tempfile::tempdir().unwrap();
    let (p, pdb) = primary(pd.path(), 800);
    let s = p.new_session();
    for step in 1..=4u32 {
        let sd = tempfile::tempdir().unwrap();
        let sec = Instance::open(os_config(sd.path())).unwrap();
        seed(&pdb, &sec, 16 << 10, None).unwrap();
        let old = rows_of(&sec.database("walden").unwrap());
        fill(&pdb, &s, 10_000 * step as i64, 300);
        let new = rows_of(&pdb);
        sec.set_seed_fault(step);
        let e = seed(&pdb, &sec, 16 << 10, None).unwrap_err();
        assert!(e.to_string().contains("simulated crash"), "{e}");
        // The process dies here: nothing is closed or cleaned up.
        drop(sec);
        let sec = Instance::open(os_config(sd.path())).unwrap();
        let db = sec.database("walden").unwrap();
        assert!(db.is_secondary(), "step {step}");
        let got = rows_of(&db);
        if step == 1 {
            assert!(
                got == old,
                "step {step}: the swap was not recorded: the old copy"
            );
        } else {
            assert!(
                got == new,
                "step {step}: the swap was recorded: the new copy"
            );
        }
        assert!(
            leftovers(sd.path()).is_empty(),
            "step {step}: {:?}",
            leftovers(sd.path())
        );
        // And it can be seeded again.
        seed(&pdb, &sec, 16 << 10, None).unwrap();
        assert!(rows_of(&sec.database("walden").unwrap()) == new);
        sec.close().unwrap();
    }
}

#[test]
fn a_backup_larger_than_its_chunk_restores_the_same_rows() {
    let (pd, bd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (inst, db) = primary(pd.path(), 20_000);
    let s = inst.new_session();
    let path: PathBuf = bd.path().join("full.bak");
    let info = db.backup_database(&s, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(info.bytes, bytes.len() as u64);
    assert!(bytes.len() > 2 << 20, "{} bytes", bytes.len());
    assert_eq!(&bytes[..12], b"WALDNIMG\x03\0\0\0");
    let copy = inst.restore_database("copy", &path, &[]).unwrap();
    assert_eq!(rows_of(&copy), rows_of(&db));
    // A damaged backup is refused, not half restored.
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x10;
    let bad_path = bd.path().join("bad.bak");
    std::fs::write(&bad_path, &bad).unwrap();
    assert!(inst.restore_database("bad", &bad_path, &[]).is_err());
    assert!(inst.database("bad").is_err());
}

#[test]
fn an_image_of_an_older_build_still_restores() {
    // A version 1 image (one encoding of everything), as older backups
    // hold; and the same catalog as the first block of a version 3 image.
    let dir = tempfile::tempdir().unwrap();
    let inst = Instance::open(os_config(&dir.path().join("inst"))).unwrap();
    for (name, file) in [
        (
            "v1",
            &include_bytes!("../../../../fuzz/corpus/checkpoint_image/seed-1-raw")[1..],
        ),
        (
            "v3",
            &include_bytes!("../../../../fuzz/corpus/checkpoint_image/seed-stream-v3-raw")[1..],
        ),
    ] {
        let path = dir.path().join(format!("{name}.bak"));
        std::fs::write(&path, file).unwrap();
        let db = inst.restore_database(name, &path, &[]).unwrap();
        assert!(!db.tables().is_empty(), "{name}");
    }
}
