//! An operator's slip or a damaged file never loses a database silently:
//! a missing instance.json, a directory the catalog does not list, a
//! control file naming another database, a damaged checkpoint image, a log
//! ending before what was hardened, and oversized values.

use std::path::Path;
use std::sync::Arc;
use walden_engine::*;
use walden_log::{CrashMode, Faults};

fn os_config(dir: &Path) -> InstanceConfig {
    InstanceConfig {
        log: small_log(),
        background_checkpoints: false,
        ..InstanceConfig::new(dir)
    }
}

fn small_log() -> LogConfig {
    LogConfig {
        block_size: 8192,
        segment_size: 128 * 1024,
        buffer_size: 64 * 1024,
        max_write: 16 * 1024,
        preallocate_spare: false,
        ..LogConfig::default()
    }
}

fn mem_config(mem: &MemVfs) -> InstanceConfig {
    InstanceConfig {
        vfs: Arc::new(mem.clone()),
        ..os_config(Path::new("/inst"))
    }
}

fn fill(inst: &Instance, rows: i64) {
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    if db.table("t").is_err() {
        db.create_table(
            &s,
            TableDef::new(
                "t",
                vec![
                    ColumnDef::new("id", DataType::BigInt),
                    ColumnDef::new("v", DataType::Text),
                ],
                &["id"],
            )
            .unwrap(),
        )
        .unwrap();
    }
    let base = db.table("t").unwrap().len() as i64;
    for i in base..base + rows {
        db.run(&s, CommitRequest::Durable, |tx| {
            tx.insert("t", vec![Some(Value::Int(i)), Some(Value::text("row"))])
                .map(|_| ())
        })
        .unwrap();
    }
}

/// The catalog inside instance.json, for editing by hand (written back bare,
/// without its checksum, as an operator would).
fn catalog_of(bytes: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    v["catalog"].take()
}

fn rows(inst: &Instance) -> usize {
    inst.database("walden").unwrap().table("t").unwrap().len()
}

#[test]
fn a_missing_instance_json_is_refused_and_nothing_is_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let inst = Instance::open(os_config(tmp.path())).unwrap();
    fill(&inst, 20);
    inst.close().unwrap();
    drop(inst);
    let cat = tmp.path().join("instance.json");
    let aside = tmp.path().join("instance.json.aside");
    std::fs::rename(&cat, &aside).unwrap();
    let e = Instance::open(os_config(tmp.path()))
        .err()
        .expect("must refuse");
    assert!(matches!(e, EngineError::CatalogMissing { .. }), "{e}");
    assert!(
        e.to_string().contains(&tmp.path().display().to_string()),
        "{e}"
    );
    assert!(tmp.path().join("walden/control").exists());
    std::fs::rename(&aside, &cat).unwrap();
    let inst = Instance::open(os_config(tmp.path())).unwrap();
    assert_eq!(rows(&inst), 20);
    inst.close().unwrap();
}

#[test]
fn a_directory_the_catalog_does_not_list_or_names_otherwise_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let inst = Instance::open(os_config(tmp.path())).unwrap();
    fill(&inst, 3);
    inst.create_database("other").unwrap();
    inst.close().unwrap();
    drop(inst);
    let cat = tmp.path().join("instance.json");
    let good = std::fs::read(&cat).unwrap();

    // The catalog loses an entry: the unlisted directory is refused, not
    // ignored or deleted.
    let mut v = catalog_of(&good);
    v["databases"]
        .as_array_mut()
        .unwrap()
        .retain(|d| d["name"] != "other");
    std::fs::write(&cat, serde_json::to_vec(&v).unwrap()).unwrap();
    let e = Instance::open(os_config(tmp.path()))
        .err()
        .expect("must refuse");
    assert!(matches!(e, EngineError::DirectoryMismatch { .. }), "{e}");
    assert!(e.to_string().contains("other"), "{e}");
    assert!(tmp.path().join("other/control").exists());

    // Two directories swapped under the catalog: the control files say so.
    std::fs::write(&cat, &good).unwrap();
    let aside = tempfile::tempdir_in(tmp.path().parent().unwrap()).unwrap();
    let (a, b, t) = (
        tmp.path().join("walden"),
        tmp.path().join("other"),
        aside.path().join("swap"),
    );
    std::fs::rename(&a, &t).unwrap();
    std::fs::rename(&b, &a).unwrap();
    std::fs::rename(&t, &b).unwrap();
    let e = Instance::open(os_config(tmp.path()))
        .err()
        .expect("must refuse");
    assert!(matches!(e, EngineError::DirectoryMismatch { .. }), "{e}");
    std::fs::rename(&a, &t).unwrap();
    std::fs::rename(&b, &a).unwrap();
    std::fs::rename(&t, &b).unwrap();

    // A listed directory gone missing.
    std::fs::rename(&b, &t).unwrap();
    let e = Instance::open(os_config(tmp.path()))
        .err()
        .expect("must refuse");
    assert!(e.to_string().contains("missing"), "{e}");
    std::fs::rename(&t, &b).unwrap();

    let inst = Instance::open(os_config(tmp.path())).unwrap();
    assert_eq!(rows(&inst), 3);
    // CREATE DATABASE never removes a directory it did not make.
    std::fs::create_dir(tmp.path().join("mine")).unwrap();
    std::fs::write(tmp.path().join("mine/keep"), b"x").unwrap();
    let e = inst.create_database("mine").expect_err("must refuse");
    assert!(matches!(e, EngineError::DirectoryExists { .. }), "{e}");
    assert!(tmp.path().join("mine/keep").exists());
    inst.close().unwrap();
}

#[test]
fn an_unreadable_data_directory_is_an_error_not_a_new_instance() {
    // Root reads everything: the check needs an unprivileged user.
    if unsafe { libc_geteuid() } == 0 {
        println!("running as root: permission checks do not apply");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let inst = Instance::open(os_config(&data)).unwrap();
    fill(&inst, 2);
    inst.close().unwrap();
    drop(inst);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o000)).unwrap();
    let r = Instance::open(os_config(&data));
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(r.is_err());
    let inst = Instance::open(os_config(&data)).unwrap();
    assert_eq!(rows(&inst), 2);
    inst.close().unwrap();
}

unsafe extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

#[test]
fn a_damaged_base_store_is_refused_at_open_not_trusted() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    fill(&inst, 30);
    let db = inst.database("walden").unwrap();
    db.checkpoint().unwrap();
    fill(&inst, 30);
    db.checkpoint().unwrap();
    fill(&inst, 5);
    let crashed = mem.crash(walden_log::CrashMode::SyncedOnly, 1);
    drop(db);
    drop(inst);
    // A flipped bit in every page: whatever redb reads, it reads damage.
    let store = Path::new("/inst/walden/data/store.redb");
    let len = walden_log::vfs::read_file(&crashed, store).unwrap().len() as u64;
    assert!(len > 4096, "the store holds the checkpoints");
    for page in (0..len).step_by(4096) {
        crashed.flip_bit(store, page + 100, 2).unwrap();
    }
    match Instance::open(mem_config(&crashed)) {
        Err(walden_engine::EngineError::Store { .. }) => {}
        Err(e) => panic!("refused, but not as a damaged store: {e}"),
        Ok(_) => panic!("a store with every page damaged opened"),
    }
    // The same crash without the damage recovers every acknowledged row.
    let again = mem.crash(walden_log::CrashMode::SyncedOnly, 1);
    let inst = Instance::open(mem_config(&again)).unwrap();
    assert_eq!(rows(&inst), 65);
    inst.close().unwrap();
}

#[test]
fn bit_rot_in_the_last_hardened_block_after_a_clean_shutdown_is_corruption() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    fill(&inst, 10);
    let db = inst.database("walden").unwrap();
    db.checkpoint().unwrap();
    fill(&inst, 10);
    let seg = db.log().segments().last().unwrap().path.clone();
    drop(db);
    // Clean shutdown hardens, checkpoints, and records the hardened LSN.
    inst.close().unwrap();
    drop(inst);
    // Find the last block of the log and damage its payload.
    let bytes = walden_log::vfs::read_file(&mem, &seg).unwrap();
    let mut off = 4096;
    let mut last = None;
    while off + 40 <= bytes.len() && &bytes[off..off + 4] == b"WLB1" {
        last = Some(off);
        let len = u32::from_le_bytes(bytes[off + 4..off + 8].try_into().unwrap()) as usize;
        off += len;
    }
    let last = last.expect("a block");
    mem.flip_bit(&seg, last as u64 + 45, 0).unwrap();
    let e = Instance::open(mem_config(&mem)).err().expect("must refuse");
    assert!(
        matches!(e, EngineError::Log(walden_log::LogError::EndsEarly { .. })),
        "{e}"
    );
}

#[test]
fn a_lost_segment_is_refused_not_overwritten() {
    let mem = MemVfs::new();
    let cfg = mem_config(&mem);
    let inst = Instance::open(cfg.clone()).unwrap();
    fill(&inst, 10);
    let db = inst.database("walden").unwrap();
    db.checkpoint().unwrap();
    // Enough log for several 128 KiB segments.
    let s = inst.new_session();
    for i in 0..400 {
        db.run(&s, CommitRequest::Durable, |tx| {
            tx.insert(
                "t",
                vec![
                    Some(Value::Int(1000 + i)),
                    Some(Value::text("y".repeat(600))),
                ],
            )
            .map(|_| ())
        })
        .unwrap();
    }
    db.checkpoint().unwrap();
    let segs = db.log().segments();
    assert!(segs.len() >= 2, "{segs:?}");
    let last = segs.last().unwrap().path.clone();
    drop(db);
    inst.close().unwrap();
    drop(inst);
    walden_log::Vfs::remove_file(&mem, &last).unwrap();
    let e = Instance::open(mem_config(&mem)).err().expect("must refuse");
    assert!(
        matches!(
            e,
            EngineError::Log(
                walden_log::LogError::EndsEarly { .. } | walden_log::LogError::Missing(..)
            )
        ),
        "{e}"
    );
}

#[test]
fn oversized_values_and_rows_are_refused_when_made() {
    let mem = MemVfs::new();
    let inst = Instance::open(InstanceConfig {
        limits: Limits {
            max_value_bytes: 1000,
            max_row_bytes: 1500,
            ..Default::default()
        },
        ..mem_config(&mem)
    })
    .unwrap();
    fill(&inst, 1);
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    let e = db
        .run(&s, CommitRequest::Durable, |tx| {
            tx.insert(
                "t",
                vec![Some(Value::Int(7)), Some(Value::text("x".repeat(1001)))],
            )
        })
        .unwrap_err();
    assert!(
        matches!(
            e,
            EngineError::ValueTooLarge {
                size: 1001,
                max: 1000
            }
        ),
        "{e}"
    );
    let e = db
        .run(&s, CommitRequest::Durable, |tx| {
            tx.update(
                "t",
                &[Value::Int(0)],
                vec![Value::Int(0), Value::text("x".repeat(2000))],
            )
        })
        .unwrap_err();
    assert!(matches!(e, EngineError::ValueTooLarge { .. }), "{e}");
    // Values within the limit go through, and the database reopens.
    fill(&inst, 2);
    inst.close().unwrap();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    assert_eq!(rows(&inst), 3);
}

#[test]
fn a_damaged_catalog_is_refused() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    fill(&inst, 1);
    inst.close().unwrap();
    drop(inst);
    let cat = Path::new("/inst/instance.json");
    let bytes = walden_log::vfs::read_file(&mem, cat).unwrap();
    // A digit of an id: still JSON, but not the catalog that was written.
    let at = bytes
        .windows(4)
        .position(|w| w == b"\"id\"")
        .expect("an id")
        + 6;
    mem.flip_bit(cat, at as u64, 0).unwrap();
    let e = Instance::open(mem_config(&mem)).err().expect("must refuse");
    assert!(e.to_string().contains("checksum"), "{e}");
}

#[test]
fn an_interrupted_create_is_undone_and_an_interrupted_drop_finished() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    fill(&inst, 4);
    inst.create_database("gone").unwrap();
    inst.close().unwrap();
    drop(inst);
    let cat = Path::new("/inst/instance.json");
    let bytes = walden_log::vfs::read_file(&mem, cat).unwrap();
    let mut v = catalog_of(&bytes);
    for d in v["databases"].as_array_mut().unwrap() {
        if d["name"] == "gone" {
            d["state"] = "dropping".into();
        }
    }
    let dbs = v["databases"].as_array_mut().unwrap();
    dbs.push(serde_json::json!({"name": "half", "id": 99, "state": "creating"}));
    walden_log::vfs::write_file_atomic(&mem, cat, &serde_json::to_vec(&v).unwrap()).unwrap();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    assert_eq!(rows(&inst), 4);
    assert!(inst.database("gone").is_err() && inst.database("half").is_err());
    assert!(!walden_log::Vfs::exists(&mem, Path::new("/inst/gone")).unwrap());
    inst.create_database("half").unwrap();
    inst.close().unwrap();
}

/// instance.json is written in the order the catalog changed: concurrent
/// CREATE DATABASE and CREATE ROLE never leave an older catalog on disk
/// than the one in memory (each save used to snapshot the catalog, let go
/// of its lock and write, so a slower writer could put back a state from
/// before another's change).
#[test]
fn concurrent_catalog_changes_are_all_on_disk_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let inst = Instance::open(os_config(dir.path())).unwrap();
    const N: usize = 24;
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..N {
                inst.create_database(&format!("d{i}")).unwrap();
            }
        });
        s.spawn(|| {
            for i in 0..N {
                inst.update_roles(|c| -> Result<()> {
                    c.create_role(roles::Role::new(0, &format!("r{i}")))?;
                    Ok(())
                })
                .unwrap();
            }
        });
    });
    let before_roles = inst.roles().roles.len();
    inst.close().unwrap();
    let inst = Instance::open(os_config(dir.path())).unwrap();
    for i in 0..N {
        assert!(
            inst.database(&format!("d{i}")).is_ok(),
            "database d{i} lost across the restart"
        );
        assert!(
            inst.roles().role(&format!("r{i}")).is_some(),
            "role r{i} lost across the restart"
        );
    }
    assert_eq!(inst.roles().roles.len(), before_roles);
    inst.close().unwrap();
}

/// A power cut at any sync of an instance's first open (the catalog, the
/// default database's directory and files, the mark that the instance is
/// initialized) leaves an instance that opens, with its default database.
/// A cut after the database was made but before the mark used to leave
/// one that refused every later open ("database already exists").
#[test]
fn a_power_cut_during_the_first_open_leaves_an_instance_that_opens() {
    let mut k = 0;
    loop {
        let mem = MemVfs::new();
        mem.set_faults(Faults {
            fail_sync_after: Some(k),
            ..Faults::default()
        });
        let first = Instance::open(mem_config(&mem));
        let failed = first.is_err();
        drop(first);
        let after = mem.crash(CrashMode::SyncedOnly, k);
        after.set_faults(Faults::default());
        let inst = Instance::open(mem_config(&after))
            .unwrap_or_else(|e| panic!("cut at sync {k}: the next open failed: {e}"));
        fill(&inst, 3);
        assert_eq!(rows(&inst), 3, "cut at sync {k}");
        drop(inst);
        if !failed {
            break;
        }
        k += 1;
    }
    assert!(k > 3, "the first open synced only {k} times");
}
