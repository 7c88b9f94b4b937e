//! Regression tests for recovery problems found while building `walden log`:
//! a lost record must never come back after a later write, and reopening
//! with a smaller block size must not cut durable blocks.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use walden_log::block::{encode_block, encode_segment_header, SegmentHeader, PAGE, SEGMENT_HEADER};
use walden_log::*;

fn cfg(block_size: usize) -> LogConfig {
    LogConfig {
        block_size,
        segment_size: 256 * 1024,
        max_write: 32 * 1024,
        buffer_size: 64 * 1024,
        max_flush_delay: Duration::from_secs(30),
        preallocate_spare: false,
        ..LogConfig::default()
    }
}

fn frame(r: &[u8]) -> Vec<u8> {
    let mut v = (r.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(r);
    v
}

type Opened = (LogManager, Vec<Vec<u8>>, RecoveryReport);

fn open(dir: &Path, block_size: usize) -> Result<Opened, LogError> {
    let mut got = Vec::new();
    let (log, rep) = LogManager::open(
        Arc::new(OsVfs),
        dir,
        cfg(block_size),
        Arc::new(FileStats::default()),
        0,
        &mut |_, _, r| {
            got.push(r.to_vec());
            Ok(())
        },
    )?;
    Ok((log, got, rep))
}

/// A batch of two blocks written by one write whose first page never reached
/// the disk (still zeros) while its second block did. The scan stops at the
/// zero page and, because that page is all zeros, reports no cut, so `open`
/// zeroes nothing. A later write that happens to end at the stale block's LSN
/// makes the stale block the log's continuation: a record of the lost batch
/// comes back on the next recovery.
#[test]

fn a_record_of_a_torn_batch_never_comes_back() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("log");
    std::fs::create_dir_all(&dir).unwrap();
    let mut seg = encode_segment_header(&SegmentHeader {
        seq: 1,
        first_lsn: 0,
        segment_size: 256 * 1024,
    });
    let a = frame(b"lost-record-A");
    let b = frame(b"lost-record-B");
    encode_block(&mut seg, 0, 0, 0, &a);
    encode_block(&mut seg, a.len() as u64, 0, 0, &b);
    seg.resize(256 * 1024, 0);
    seg[SEGMENT_HEADER..SEGMENT_HEADER + PAGE].fill(0);
    std::fs::write(dir.join("wal-0000000001.log"), &seg).unwrap();

    let (log, got, _) = open(&dir, 8192).unwrap();
    assert!(got.is_empty());
    log.commit_durable(b"new-record-X!", &[]).unwrap(); // same length as A
    log.close().unwrap();
    drop(log);
    let (_log, got, _) = open(&dir, 8192).unwrap();
    assert_eq!(
        got,
        vec![b"new-record-X!".to_vec()],
        "a lost record came back"
    );
}

/// Recovery validates blocks against the configured `block_size`, so a log
/// reopened with a smaller `log_block_size` sees its larger blocks as damaged:
/// a durably committed record in the last block is cut off (and zeroed).
#[test]

fn reopening_with_a_smaller_block_size_keeps_durable_records() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("log");
    let (log, _, _) = open(&dir, 16384).unwrap();
    for i in 0..5u8 {
        log.commit_durable(&[i; 100], &[]).unwrap();
    }
    log.commit_durable(&[9u8; 10_000], &[]).unwrap(); // one 12 KiB block
    log.close().unwrap();
    drop(log);
    match open(&dir, 8192) {
        Ok((_log, got, rep)) => {
            assert_eq!(got.len(), 6, "durable records lost; cut {:?}", rep.scan.cut)
        }
        // Refusing to open with a clear error would be acceptable too.
        Err(e) => eprintln!("refused: {e}"),
    }
}
