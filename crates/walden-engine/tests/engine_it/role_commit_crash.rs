//! A commit that changes rows and roles together is crash-atomic: after a
//! power loss or a SIGKILL either both the rows and the role changes are
//! there, or neither, and every acknowledged one is. The SIGKILL test runs
//! itself as a child process, which dies (`kill -9` on itself) after the
//! commit's log record is hardened and before `instance.json` is written;
//! the parent checks the files the kill left and reopens. The power-loss
//! tests unplug the project's in-memory file system (`MemVfs`) at the same
//! point, and at random moments under a stream of such commits.

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use walden_engine::roles::{privs, AclItem, ObjKind, Role, PUBLIC};

/// `public`'s id in the role catalog (its OID).
const PUBLIC_SCHEMA: u32 = 2200;
use walden_engine::*;
use walden_log::CrashMode;

/// Set in the child: the data directory to work in.
const CHILD_DIR: &str = "WALDEN_ROLE_CRASH_CHILD_DIR";

fn config(dir: &Path) -> InstanceConfig {
    InstanceConfig {
        background_checkpoints: false,
        ..InstanceConfig::new(dir)
    }
}

fn mem_config(mem: &MemVfs) -> InstanceConfig {
    InstanceConfig {
        vfs: Arc::new(mem.clone()),
        log: LogConfig {
            block_size: 8192,
            segment_size: 128 * 1024,
            buffer_size: 64 * 1024,
            max_write: 16 * 1024,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        ..InstanceConfig::new("/crash")
    }
}

fn table() -> TableDef {
    TableDef::new(
        "t",
        vec![
            ColumnDef::new("id", DataType::BigInt),
            ColumnDef::new("v", DataType::Text),
        ],
        &["id"],
    )
    .unwrap()
}

/// One transaction: role `r<i>` and row `i`.
fn commit_role_and_row(
    inst: &Instance,
    db: &Arc<Database>,
    s: &Arc<Session>,
    i: i64,
) -> Result<()> {
    let mut tx = db.begin(s);
    inst.update_roles_in(&mut tx, |c| c.create_role(Role::new(0, &format!("r{i}"))))?;
    tx.insert("t", vec![Some(Value::Int(i)), Some(Value::text("x"))])?;
    // Asked for a delayed commit: role changes make it durable anyway.
    tx.commit(CommitRequest::Delayed).map(drop)
}

/// The ids of table t's rows, in key order.
fn row_ids(inst: &Instance) -> Vec<i64> {
    let db = inst.database("walden").unwrap();
    let tx = db.begin(&inst.new_session());
    tx.scan_all("t")
        .unwrap()
        .into_iter()
        .map(|(_, r)| match r[0] {
            Value::Int(i) => i,
            ref v => panic!("{v:?}"),
        })
        .collect()
}

/// The child: a committed role and table, then a commit of rows and a new
/// role that the crash point kills between its two writes.
fn child(dir: &Path) -> ! {
    let inst = Instance::open(config(dir)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, table()).unwrap();
    // Committed before the crash point is armed: the file holds it.
    let mut tx = db.begin(&s);
    inst.update_roles_in(&mut tx, |c| c.create_role(Role::new(0, "before")))
        .unwrap();
    tx.insert("t", vec![Some(Value::Int(1)), Some(Value::text("one"))])
        .unwrap();
    tx.commit(CommitRequest::Durable).unwrap();
    inst.set_role_commit_hook(Some(Arc::new(|| {
        // SAFETY: kill(2) on our own pid; no memory is touched.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        std::thread::sleep(Duration::from_secs(60));
    })));
    let mut tx = db.begin(&s);
    let dbid = db.id();
    inst.update_roles_in(&mut tx, |c| {
        let r = c.create_role(Role::new(0, "crashed"))?;
        // A schema privilege change rides in the same record.
        c.change_grant(
            dbid,
            ObjKind::Schema,
            PUBLIC_SCHEMA,
            PUBLIC,
            privs::USAGE,
            false,
        );
        c.change_grant(dbid, ObjKind::Schema, PUBLIC_SCHEMA, r, privs::CREATE, true);
        // So do a grant with grant option, one made under it, and an
        // owner change.
        let table = AclItem {
            grantee: r,
            grantor: None,
            privs: privs::SELECT,
            options: privs::SELECT,
        };
        c.update_acl(dbid, ObjKind::Table, 77, table, true, false)
            .unwrap();
        let passed_on = AclItem {
            grantee: PUBLIC,
            grantor: Some(r),
            privs: privs::SELECT,
            options: 0,
        };
        c.update_acl(dbid, ObjKind::Table, 77, passed_on, true, false)
            .unwrap();
        c.change_owner(dbid, ObjKind::Schema, PUBLIC_SCHEMA, r);
        Ok::<_, EngineError>(())
    })
    .unwrap();
    tx.insert("t", vec![Some(Value::Int(2)), Some(Value::text("two"))])
        .unwrap();
    // Asked for a delayed commit: role changes make it durable anyway.
    let _ = tx.commit(CommitRequest::Delayed);
    eprintln!("the crash point did not kill the process");
    std::process::exit(3);
}

/// The role catalog's version in `instance.json`, and whether it names `role`.
fn file_roles(dir: &Path, role: &str) -> (u64, bool) {
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("instance.json")).unwrap()).unwrap();
    let roles = &doc["catalog"]["roles"];
    let named = roles["roles"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == role);
    (roles["version"].as_u64().unwrap_or(0), named)
}

#[test]
fn a_kill_between_the_log_record_and_the_role_file_keeps_rows_and_roles() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        child(Path::new(&dir));
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("inst");
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "role_commit_crash::a_kill_between_the_log_record_and_the_role_file_keeps_rows_and_roles",
            "--nocapture",
        ])
        .env(CHILD_DIR, &dir)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = proc.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = proc.kill();
            panic!("the child did not end within 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.signal(), Some(libc::SIGKILL), "child: {status}");
    // The kill came between the writes: the file has the first commit's
    // roles only.
    let (version, crashed) = file_roles(&dir, "crashed");
    assert!(!crashed, "instance.json was written before the kill");
    assert!(file_roles(&dir, "before").1);

    let inst = Instance::open(config(&dir)).unwrap();
    let roles = inst.roles();
    assert!(roles.role("before").is_some());
    assert!(
        roles.role("crashed").is_some(),
        "recovery did not reinstall the logged role catalog"
    );
    assert_eq!(roles.version, version + 1);
    let dbid = inst.database("walden").unwrap().id();
    assert_eq!(
        roles
            .acl_text(dbid, ObjKind::Schema, PUBLIC_SCHEMA)
            .as_deref(),
        Some("{crashed=UC/crashed}"),
        "the schema privileges and owner of the logged commit were not recovered"
    );
    assert_eq!(
        roles.acl_text(dbid, ObjKind::Table, 77).as_deref(),
        Some("{walden=arwdD/walden,crashed=r*/walden,=r/crashed}"),
        "the grant options of the logged commit were not recovered"
    );
    assert_eq!(row_ids(&inst), vec![1, 2]);
    // Reinstalled durably: the file has it before anything else ran.
    assert_eq!(file_roles(&dir, "crashed"), (version + 1, true));
    // A later role change numbers on from the recovered version.
    inst.update_roles(|c| c.create_role(Role::new(0, "after")).map(drop))
        .unwrap();
    assert_eq!(inst.roles().version, version + 2);
    inst.close().unwrap();
    let inst = Instance::open(config(&dir)).unwrap();
    for r in ["before", "crashed", "after"] {
        assert!(inst.roles().role(r).is_some(), "{r} lost");
    }
    assert_eq!(inst.roles().version, version + 2);
    inst.close().unwrap();
}

/// The power goes out after the commit's log record is hardened and
/// before `instance.json` is renamed into place: the commit is not
/// acknowledged, and recovery brings back its rows and its role together.
#[test]
fn a_power_loss_between_the_log_record_and_the_role_file_keeps_rows_and_roles() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, table()).unwrap();
    commit_role_and_row(&inst, &db, &s, 1).unwrap();
    let version = inst.roles().version;
    let after: Arc<Mutex<Option<MemVfs>>> = Arc::default();
    {
        let (mem, after) = (mem.clone(), after.clone());
        inst.set_role_commit_hook(Some(Arc::new(move || {
            *after.lock() = Some(mem.crash(CrashMode::SyncedOnly, 7));
        })));
    }
    // The role file cannot be written on the dead disk: no acknowledgement.
    let err = commit_role_and_row(&inst, &db, &s, 2).unwrap_err();
    assert!(matches!(err, EngineError::ApplyFailed { .. }), "{err:?}");
    let crashed = after.lock().take().expect("the hook ran");
    drop(db);
    drop(inst);

    let inst = Instance::open(mem_config(&crashed)).unwrap();
    assert!(inst.roles().role("r1").is_some());
    assert!(
        inst.roles().role("r2").is_some(),
        "the logged roles were lost"
    );
    assert_eq!(inst.roles().version, version + 1);
    assert_eq!(row_ids(&inst), vec![1, 2]);
    inst.close().unwrap();
}

/// The role file cannot be written after the commit record hardened: the
/// commit fails with `ApplyFailed` and poisons the log. A `CHECKPOINT`
/// then must not move the redo start past that record, or a restart
/// would keep the rows (in the store) and lose the roles.
#[test]
fn a_checkpoint_after_an_unapplied_role_commit_is_refused() {
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    let s = inst.new_session();
    db.create_table(&s, table()).unwrap();
    commit_role_and_row(&inst, &db, &s, 1).unwrap();
    {
        let mem = mem.clone();
        inst.set_role_commit_hook(Some(Arc::new(move || {
            mem.set_faults(walden_log::Faults {
                fail_write_after: Some(0),
                ..walden_log::Faults::default()
            });
        })));
    }
    let err = commit_role_and_row(&inst, &db, &s, 2).unwrap_err();
    assert!(matches!(err, EngineError::ApplyFailed { .. }), "{err:?}");
    inst.set_role_commit_hook(None);
    // The disk works again; the log stays poisoned.
    mem.set_faults(walden_log::Faults::default());
    let err = db.checkpoint().unwrap_err();
    assert!(
        matches!(err, EngineError::Log(walden_log::LogError::Poisoned(_))),
        "{err:?}"
    );
    let crashed = mem.crash(CrashMode::SyncedOnly, 11);
    drop(db);
    drop(inst);
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    assert!(
        inst.roles().role("r2").is_some(),
        "the logged roles were lost"
    );
    assert_eq!(row_ids(&inst), vec![1, 2]);
    inst.close().unwrap();
}

/// Many power losses at random moments (keeping synced bytes only, or a
/// torn or scattered part of the unsynced ones) under one session
/// committing a role and a row per transaction, another committing rows
/// alone, and checkpoints. After each: the roles and the rows of the
/// role-changing transactions are the same set, a prefix of them holding
/// every acknowledged one, and the catalog's version counts them.
#[test]
fn power_losses_at_random_moments_keep_roles_and_rows_together() {
    let trials: u64 = std::env::var("WALDEN_ROLE_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let first: u64 = std::env::var("WALDEN_ROLE_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut hit_window = 0;
    for seed in first..first + trials {
        eprintln!("WALDEN_ROLE_CRASH_SEED={seed} WALDEN_ROLE_CRASH_TRIALS=1");
        if power_loss_trial(seed) {
            hit_window += 1;
        }
    }
    eprintln!("{hit_window} of {trials} trials recovered a commit that was not acknowledged");
}

/// One trial; whether recovery brought back a commit the session was not
/// told of (its log record survived, its role file write may not have).
fn power_loss_trial(seed: u64) -> bool {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mode = [
        CrashMode::SyncedOnly,
        CrashMode::TornPrefix,
        CrashMode::ScatteredSectors,
    ][rng.gen_range(0..3)];
    let mem = MemVfs::new();
    let inst = Instance::open(mem_config(&mem)).unwrap();
    let db = inst.database("walden").unwrap();
    db.create_table(&inst.new_session(), table()).unwrap();
    let base = inst.roles().version;
    let stop = Arc::new(AtomicBool::new(false));
    let roles = {
        let (inst, db, stop) = (inst.clone(), db.clone(), stop.clone());
        std::thread::spawn(move || {
            let s = inst.new_session();
            let mut acked = Vec::new();
            for i in 1.. {
                if stop.load(Ordering::Relaxed) || commit_role_and_row(&inst, &db, &s, i).is_err() {
                    break;
                }
                acked.push(i);
            }
            acked
        })
    };
    let rows = {
        let (inst, db, stop) = (inst.clone(), db.clone(), stop.clone());
        std::thread::spawn(move || {
            let s = inst.new_session();
            for i in 1_000_000.. {
                let mut tx = db.begin(&s);
                let ok = tx
                    .insert("t", vec![Some(Value::Int(i)), Some(Value::text("y"))])
                    .is_ok()
                    && tx.commit(CommitRequest::Delayed).is_ok();
                if !ok || stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        })
    };
    let checkpoints = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) && db.checkpoint().is_ok() {
                std::thread::sleep(Duration::from_millis(3));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(rng.gen_range(5..60)));
    let crashed = mem.crash(mode, seed);
    stop.store(true, Ordering::Relaxed);
    let acked = roles.join().unwrap();
    rows.join().unwrap();
    checkpoints.join().unwrap();
    drop(db);
    drop(inst);

    let inst = Instance::open(mem_config(&crashed)).unwrap();
    let ids: Vec<i64> = row_ids(&inst)
        .into_iter()
        .filter(|&i| i < 1_000_000)
        .collect();
    let cat = inst.roles();
    let named: Vec<i64> = (1..=ids.len() as i64 + 2)
        .filter(|i| cat.role(&format!("r{i}")).is_some())
        .collect();
    assert_eq!(named, ids, "seed {seed}: roles and rows differ");
    let k = ids.len() as i64;
    assert_eq!(
        ids,
        (1..=k).collect::<Vec<_>>(),
        "seed {seed}: not a prefix"
    );
    assert!(
        k >= acked.len() as i64,
        "seed {seed}: {} acknowledged, {k} recovered",
        acked.len()
    );
    assert_eq!(cat.version, base + k as u64, "seed {seed}");
    // The instance works on: one more commit of both, which survives a
    // restart.
    let db = inst.database("walden").unwrap();
    commit_role_and_row(&inst, &db, &inst.new_session(), k + 1).unwrap();
    drop(db);
    inst.close().unwrap();
    let inst = Instance::open(mem_config(&crashed)).unwrap();
    assert!(inst.roles().role(&format!("r{}", k + 1)).is_some());
    inst.close().unwrap();
    k > acked.len() as i64
}

/// Seeds `to`'s "walden" from `from` in one piece, as the replication link
/// does in many.
fn seed(from: &std::sync::Arc<Database>, to: &Instance) {
    let rx = std::cell::RefCell::new(None);
    let bytes = std::cell::RefCell::new(Vec::new());
    let (_, len) = from
        .seed_stream(
            1 << 20,
            &mut |lsn| {
                *rx.borrow_mut() = Some(to.begin_seed("walden", lsn)?);
                Ok(())
            },
            &mut |b| {
                bytes.borrow_mut().extend_from_slice(b);
                rx.borrow_mut().as_mut().unwrap().write(b)
            },
        )
        .unwrap();
    let crc = crc32c_of(&bytes.borrow());
    rx.into_inner().unwrap().finish(len, crc).unwrap();
}

/// CRC-32C (Castagnoli), bit by bit: the test's own, not the engine's.
fn crc32c_of(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
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

/// A secondary replays the primary's commit of rows and roles: it gets the
/// rows, and its own instance's roles stay as they are (roles belong to an
/// instance, as SQL Server's logins do), also when it restarts and
/// recovery reads the record from its own log.
#[test]
fn a_secondary_takes_the_rows_of_a_role_commit_and_keeps_its_own_roles() {
    let (pd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let p = Instance::open(config(pd.path())).unwrap();
    let pdb = p.database("walden").unwrap();
    let s = p.new_session();
    pdb.create_table(&s, table()).unwrap();
    let sec = Instance::open(config(sd.path())).unwrap();
    seed(&pdb, &sec);
    let sdb = sec.database("walden").unwrap();
    assert!(sdb.is_secondary());
    let from = sdb.log().end_lsn();

    let mut tx = pdb.begin(&s);
    p.update_roles_in(&mut tx, |c| c.create_role(Role::new(0, "primary_only")))
        .unwrap();
    tx.insert("t", vec![Some(Value::Int(7)), Some(Value::text("seven"))])
        .unwrap();
    let lsn = tx.commit(CommitRequest::Default).unwrap().lsn.unwrap();
    assert!(p.roles().role("primary_only").is_some());

    // Ship the records as the link does: framed, appended, then redone.
    let mut frames = Vec::new();
    pdb.log()
        .read_range(from, lsn, &mut |_, _, rec| {
            frames.extend_from_slice(&(rec.len() as u32).to_le_bytes());
            frames.extend_from_slice(rec);
            Ok(())
        })
        .unwrap();
    sdb.replica_append(from, &frames).unwrap();
    sdb.replica_redo(from, &frames).unwrap();
    let stx = sdb.begin(&sec.new_session());
    assert_eq!(stx.scan_all("t").unwrap().len(), 1);
    drop(stx);
    let version = sec.roles().version;
    assert!(sec.roles().role("primary_only").is_none());

    // Recovery of the secondary reads the record again: not its instance's.
    sec.shutdown_nowait().unwrap();
    drop(sec);
    let sec = Instance::open(config(sd.path())).unwrap();
    let sdb = sec.database("walden").unwrap();
    let stx = sdb.begin(&sec.new_session());
    assert_eq!(stx.scan_all("t").unwrap().len(), 1);
    drop(stx);
    assert!(sec.roles().role("primary_only").is_none());
    assert_eq!(sec.roles().version, version);
    sec.close().unwrap();
    p.close().unwrap();
}
