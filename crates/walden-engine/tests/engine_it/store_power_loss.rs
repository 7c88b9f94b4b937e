//! The base store (redb through `VfsBackend`) under simulated power loss: a
//! writer commits batches durably (inserts, deletes of an older batch, a
//! `last` marker, all in one redb commit) while the in-memory file system is
//! unplugged at a random moment (synced bytes only, or also a torn or
//! scattered part of the unsynced writes). After reopening, the store must
//! hold exactly the state after some commit at or past the last acknowledged
//! one: no acknowledged commit lost, no commit half there.
//!
//! `WALDEN_STORE_TRIALS` sets the number of power cuts (default 150);
//! a failure prints the seed to rerun with `WALDEN_STORE_SEED`.

use redb::{Database, ReadableDatabase, ReadableTableMetadata, TableDefinition};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use walden_engine::store::VfsBackend;
use walden_log::{CrashMode, MemVfs, OpenOptionsVfs, Vfs};

const ROWS: TableDefinition<u64, &[u8]> = TableDefinition::new("rows");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// Batch `j` deletes batch `j - BACK`'s rows when `j % 3 == 0`.
const BACK: u64 = 5;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

fn batch_rows(seed: u64, b: u64) -> u64 {
    mix(seed ^ b.wrapping_mul(0x9e37)) % 120 + 1
}

fn row_value(seed: u64, b: u64, r: u64) -> Vec<u8> {
    let len = (mix(seed ^ (b << 20) ^ r) % 2500) as usize;
    let mut v = Vec::with_capacity(len + 16);
    v.extend_from_slice(&b.to_le_bytes());
    v.extend_from_slice(&r.to_le_bytes());
    v.resize(len + 16, (b as u8) ^ (r as u8));
    v
}

fn key(b: u64, r: u64) -> u64 {
    (b << 16) | r
}

fn deleted_by(j: u64) -> Option<u64> {
    (j > BACK && j.is_multiple_of(3)).then(|| j - BACK)
}

fn open_store(vfs: &MemVfs, create: bool) -> Database {
    let dir = Path::new("/db");
    if create {
        vfs.create_dir_all(dir).unwrap();
        vfs.sync_dir(Path::new("/")).unwrap();
    }
    let f = vfs
        .open(
            &dir.join("store.redb"),
            OpenOptionsVfs {
                create,
                dsync: false,
            },
        )
        .unwrap();
    if create {
        vfs.sync_dir(dir).unwrap();
    }
    Database::builder()
        .set_cache_size(4 << 20)
        .create_with_backend(VfsBackend::new(f))
        .unwrap()
}

fn commit_batch(db: &Database, seed: u64, j: u64) -> Result<(), redb::Error> {
    let mut w = db.begin_write()?;
    w.set_quick_repair(true);
    {
        let mut t = w.open_table(ROWS)?;
        for r in 0..batch_rows(seed, j) {
            t.insert(key(j, r), &row_value(seed, j, r)[..])?;
        }
        if let Some(old) = deleted_by(j) {
            for r in 0..batch_rows(seed, old) {
                t.remove(key(old, r))?;
            }
        }
        w.open_table(META)?.insert("last", j)?;
    }
    w.commit()?;
    Ok(())
}

/// Checks that the store holds exactly the state after commit `last`.
fn check(db: &Database, seed: u64) -> u64 {
    let r = db.begin_read().unwrap();
    let last = match r.open_table(META) {
        Ok(m) => m.get("last").unwrap().map_or(0, |v| v.value()),
        Err(redb::TableError::TableDoesNotExist(_)) => 0,
        Err(e) => panic!("seed {seed}: meta unreadable: {e}"),
    };
    let mut expected = 0u64;
    if last > 0 {
        let rows = r.open_table(ROWS).unwrap();
        for b in 1..=last {
            let gone = (1..=last).any(|j| deleted_by(j) == Some(b));
            for i in 0..batch_rows(seed, b) {
                let got = rows.get(key(b, i)).unwrap();
                match (gone, got) {
                    (true, None) => {}
                    (false, Some(v)) => {
                        assert_eq!(
                            v.value(),
                            &row_value(seed, b, i)[..],
                            "seed {seed}: row ({b},{i}) damaged"
                        );
                        expected += 1;
                    }
                    (true, Some(_)) => {
                        panic!("seed {seed}: row ({b},{i}) should be deleted at last={last}")
                    }
                    (false, None) => panic!("seed {seed}: row ({b},{i}) missing at last={last}"),
                }
            }
        }
        assert_eq!(
            rows.len().unwrap(),
            expected,
            "seed {seed}: rows beyond commit {last}"
        );
    }
    last
}

#[test]
fn store_survives_power_cuts() {
    let trials: u64 = std::env::var("WALDEN_STORE_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let base: u64 = std::env::var("WALDEN_STORE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let (mut acked_total, mut beyond_ack) = (0, 0);
    for t in 0..trials {
        let seed = base + t;
        let mem = MemVfs::new();
        let db = Arc::new(open_store(&mem, true));
        let acked = Arc::new(AtomicU64::new(0));
        let writer = {
            let (db, acked) = (db.clone(), acked.clone());
            std::thread::spawn(move || {
                for j in 1.. {
                    if commit_batch(&db, seed, j).is_err() {
                        return;
                    }
                    acked.store(j, Ordering::SeqCst);
                }
            })
        };
        std::thread::sleep(Duration::from_millis(mix(seed) % 40 + 1));
        let mode = match mix(seed ^ 7) % 3 {
            0 => CrashMode::SyncedOnly,
            1 => CrashMode::TornPrefix,
            _ => CrashMode::ScatteredSectors,
        };
        let after = mem.crash(mode, seed);
        // Anything acknowledged by now was synced before the cut: the old
        // file system fails every call after it.
        let acked_at_cut = acked.load(Ordering::SeqCst);
        writer.join().unwrap();
        drop(db);
        let db = open_store(&after, false);
        let last = check(&db, seed);
        assert!(
            last >= acked_at_cut,
            "seed {seed} ({mode:?}): commit {acked_at_cut} was acknowledged, store is at {last} \
             (rerun: WALDEN_STORE_SEED={seed} WALDEN_STORE_TRIALS=1)"
        );
        acked_total += acked_at_cut;
        beyond_ack += last - acked_at_cut;
        // And it takes new commits.
        commit_batch(&db, seed, last + 1).unwrap();
        assert_eq!(check(&db, seed), last + 1);
    }
    println!(
        "{trials} power cuts: {acked_total} acknowledged store commits, none lost; \
         {beyond_ack} unacknowledged ones survived whole"
    );
}
