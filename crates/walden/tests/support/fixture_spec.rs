//! What the committed log fixtures under `tests/fixtures/` hold.
//!
//! Shared by the generator (`examples/make_log_fixtures.rs`) and the tests
//! (`tests/it/log_cli.rs`) through `#[path]`, so both agree on the records.
//!
//! The log is written as batches: each batch's records are appended and then
//! hardened with one `flush()`. With `max_flush_delay` far longer than the
//! generator runs, the flusher writes only on those requests (or when a block
//! fills), so a batch smaller than one block payload becomes exactly one block
//! whose `cont_len` is 0, and each flush is synced before the next begins.
#![allow(dead_code)]

use std::time::Duration;
use walden_log::LogConfig;

pub const SEGMENT_FILE: &str = "wal-0000000001.log";
pub const CLEAN: &str = "log-clean";
pub const TORN: &str = "log-torn-tail";
pub const CORRUPT: &str = "log-corrupt-middle";

/// The batch whose block is damaged in the corrupt-middle fixture.
pub const CORRUPT_BATCH: usize = 15;

/// Bytes overwritten (XOR 0xA5) in a damaged block, relative to the block
/// start: inside the payload, which starts after the 40-byte header.
pub const DAMAGE: std::ops::Range<usize> = 46..50;

pub fn config() -> LogConfig {
    LogConfig {
        block_size: 8192,
        segment_size: 256 * 1024,
        max_write: 32 * 1024,
        buffer_size: 64 * 1024,
        max_flush_delay: Duration::from_secs(30),
        preallocate_spare: false,
        ..LogConfig::default()
    }
}

/// A record: its number as 8 little-endian bytes, then `body` copies of the
/// byte `n % 251`.
pub fn record(n: u64, body: usize) -> Vec<u8> {
    let mut v = n.to_le_bytes().to_vec();
    v.resize(8 + body, (n % 251) as u8);
    v
}

/// Decodes a record read back, checking its contents: `(n, body)`.
pub fn parse_record(r: &[u8]) -> (u64, usize) {
    assert!(r.len() >= 8, "record too short: {} bytes", r.len());
    let n = u64::from_le_bytes(r[..8].try_into().unwrap());
    assert!(
        r[8..].iter().all(|&b| b == (n % 251) as u8),
        "record {n} is damaged"
    );
    (n, r.len() - 8)
}

/// The batches of `(record number, body length)`. Batch 5 is one record
/// spanning three blocks, batch 12 one spanning two, batch 20 a single block
/// of two pages; the others are one-page blocks of 1 to 4 small records.
pub fn batches() -> Vec<Vec<(u64, usize)>> {
    let mut n = 0u64;
    let mut out = Vec::new();
    for b in 0..30usize {
        let sizes: Vec<usize> = match b {
            5 => vec![20_000],
            12 => vec![9_000],
            20 => vec![3_000, 2_500, 1_800],
            _ => (0..1 + b % 4)
                .map(|i| 16 + ((b * 7 + i * 13) * 37) % 300)
                .collect(),
        };
        out.push(
            sizes
                .into_iter()
                .map(|s| {
                    n += 1;
                    (n, s)
                })
                .collect(),
        );
    }
    out
}

/// Every record, in log order.
pub fn all_records() -> Vec<(u64, usize)> {
    batches().into_iter().flatten().collect()
}

/// The records that survive recovery of the torn-tail fixture: all but the
/// last batch (the last block).
pub fn torn_records() -> Vec<(u64, usize)> {
    let mut b = batches();
    b.pop();
    b.into_iter().flatten().collect()
}
