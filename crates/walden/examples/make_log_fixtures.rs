//! Regenerates the log fixtures used by `tests/it/log_cli.rs`:
//!
//! ```text
//! cargo run -p walden --example make_log_fixtures [OUT_DIR]
//! ```
//!
//! OUT_DIR defaults to `crates/walden/tests/fixtures`. It writes a log with
//! `walden_log::LogManager` on the real file system (records and batches from
//! `tests/support/fixture_spec.rs`), closes it, and derives three log
//! directories, each one 256 KiB segment:
//!
//! - `log-clean/`: the log as closed;
//! - `log-torn-tail/`: a few payload bytes of the last block overwritten (what
//!   a torn last write looks like; recovery cuts that block off);
//! - `log-corrupt-middle/`: the same damage in the block of batch
//!   `CORRUPT_BATCH`, with valid, later-synced blocks after it (corruption;
//!   recovery refuses to open).
//!
//! Then it checks that a scan sees each as intended.

#[path = "../tests/support/fixture_spec.rs"]
mod fixture_spec;

use fixture_spec::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use walden_log::scan::{self, ScanOptions};
use walden_log::{FileStats, LogError, LogManager, Lsn, OsVfs, ScanOutcome};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn scan_dir(dir: &Path, blocks: &mut Vec<(Lsn, u64, u32)>) -> Result<ScanOutcome, LogError> {
    let mut on_block = |v: scan::BlockVisit<'_>| {
        blocks.push((v.header.lsn, v.offset, v.header.payload_len));
    };
    scan::scan(
        &OsVfs,
        dir,
        ScanOptions {
            from: 0,
            max_block: config().block_size,
            on_record: &mut |_, _, _| Ok(()),
            on_block: Some(&mut on_block),
        },
    )
}

fn damage(bytes: &mut [u8], block_off: u64) {
    for i in DAMAGE {
        bytes[block_off as usize + i] ^= 0xA5;
    }
}

fn write_fixture(out: &Path, name: &str, segment: &[u8]) -> Res<PathBuf> {
    let dir = out.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(SEGMENT_FILE), segment)?;
    Ok(dir)
}

fn main() -> Res<()> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
    let work = tempfile::tempdir()?;
    let gen = work.path().join("log");

    // Write the log.
    let (log, _) = LogManager::open(
        Arc::new(OsVfs),
        &gen,
        config(),
        Arc::new(FileStats::default()),
        0,
        &mut |_, _, _| Ok(()),
    )?;
    let mut batch_lsn = Vec::new();
    for batch in batches() {
        batch_lsn.push(log.end_lsn());
        for (n, body) in batch {
            log.append(&record(n, body), &[])?;
        }
        log.flush(&[])?;
    }
    let end = log.end_lsn();
    log.close()?;
    drop(log);

    let names: Vec<_> = std::fs::read_dir(&gen)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    assert_eq!(
        names,
        vec![SEGMENT_FILE.to_string()],
        "expected one segment"
    );
    let clean = std::fs::read(gen.join(SEGMENT_FILE))?;

    let mut blocks = Vec::new();
    let o = scan_dir(&gen, &mut blocks)?;
    assert_eq!(o.end_lsn, end);
    assert!(o.cut.is_none());
    assert_eq!(o.records as usize, all_records().len());

    // The last block must be exactly the last batch, and the damaged middle
    // block exactly batch CORRUPT_BATCH, so the tests can count records.
    let &(last_lsn, last_off, last_len) = blocks.last().unwrap();
    assert_eq!(last_lsn, *batch_lsn.last().unwrap());
    assert_eq!(last_lsn + last_len as u64, end);
    let &(_, mid_off, mid_len) = blocks
        .iter()
        .find(|b| b.0 == batch_lsn[CORRUPT_BATCH])
        .expect("a block starts at the corrupt batch");
    assert_eq!(
        batch_lsn[CORRUPT_BATCH] + mid_len as u64,
        batch_lsn[CORRUPT_BATCH + 1]
    );

    let clean_dir = write_fixture(&out, CLEAN, &clean)?;
    let mut torn = clean.clone();
    damage(&mut torn, last_off);
    let torn_dir = write_fixture(&out, TORN, &torn)?;
    let mut corrupt = clean.clone();
    damage(&mut corrupt, mid_off);
    let corrupt_dir = write_fixture(&out, CORRUPT, &corrupt)?;

    // Check each fixture reads as intended.
    let o = scan_dir(&clean_dir, &mut Vec::new())?;
    assert!(o.cut.is_none());
    let o = scan_dir(&torn_dir, &mut Vec::new())?;
    let cut = o.cut.expect("the torn fixture has a tail cut");
    assert_eq!((cut.offset, cut.lsn), (last_off, last_lsn));
    assert_eq!(o.records as usize, torn_records().len());
    match scan_dir(&corrupt_dir, &mut Vec::new()) {
        Err(LogError::Corrupt { offset, .. }) => assert_eq!(offset, mid_off),
        other => panic!("the corrupt fixture must not scan: {other:?}"),
    }
    println!(
        "wrote {} blocks, {} records, end LSN {end} into {}; torn block at offset {last_off}, \
         corrupt block at offset {mid_off}",
        blocks.len(),
        all_records().len(),
        out.display()
    );
    Ok(())
}
