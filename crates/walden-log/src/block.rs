//! The on-disk log block and segment header.
//!
//! A block holds a slice of the record stream. Blocks start on 4 KiB
//! boundaries and are padded to a multiple of 4 KiB, so a later flush never
//! rewrites a page an earlier flush made durable.
//!
//! ```text
//! offset size field
//!  0     4    magic "WLB1"
//!  4     4    block_len       total bytes including header and padding (multiple of 4096)
//!  8     8    lsn             stream offset of payload[0]
//! 16     8    synced_through  hardened LSN when this block was written
//! 24     4    payload_len
//! 28     4    cont_len        leading payload bytes that continue an earlier record
//! 32     4    crc32c          over bytes 0..32 and the payload
//! 36     4    reserved (0)
//! 40     ..   payload, then zero padding
//! ```

use crate::Lsn;

pub const PAGE: usize = 4096;
pub const BLOCK_HEADER: usize = 40;
pub const BLOCK_MAGIC: [u8; 4] = *b"WLB1";
pub const SEGMENT_MAGIC: [u8; 8] = *b"WALDNSEG";
/// The segment header occupies the first page of a segment file.
pub const SEGMENT_HEADER: usize = PAGE;

/// A decoded block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub block_len: u32,
    pub lsn: Lsn,
    pub synced_through: Lsn,
    pub payload_len: u32,
    pub cont_len: u32,
    pub crc: u32,
}

impl BlockHeader {
    pub fn end_lsn(&self) -> Lsn {
        self.lsn + self.payload_len as u64
    }
}

/// Rounds up to whole pages.
pub fn pad_to_page(n: usize) -> usize {
    n.div_ceil(PAGE) * PAGE
}

/// Appends one encoded block (header, payload, padding) to `out`.
pub fn encode_block(
    out: &mut Vec<u8>,
    lsn: Lsn,
    synced_through: Lsn,
    cont_len: u32,
    payload: &[u8],
) {
    let block_len = pad_to_page(BLOCK_HEADER + payload.len());
    let start = out.len();
    out.extend_from_slice(&BLOCK_MAGIC);
    out.extend_from_slice(&(block_len as u32).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(&synced_through.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&cont_len.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[start..start + 32]), payload);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(payload);
    out.resize(start + block_len, 0);
}

/// Decodes a header; `None` if the magic or the lengths are impossible.
pub fn decode_header(buf: &[u8], max_block: usize) -> Option<BlockHeader> {
    if buf.len() < BLOCK_HEADER || buf[0..4] != BLOCK_MAGIC {
        return None;
    }
    let u32_at = |o: usize| u32::from_le_bytes(buf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(buf[o..o + 8].try_into().unwrap());
    let h = BlockHeader {
        block_len: u32_at(4),
        lsn: u64_at(8),
        synced_through: u64_at(16),
        payload_len: u32_at(24),
        cont_len: u32_at(28),
        crc: u32_at(32),
    };
    let bl = h.block_len as usize;
    if bl == 0
        || !bl.is_multiple_of(PAGE)
        || bl > max_block.max(PAGE)
        || BLOCK_HEADER + h.payload_len as usize > bl
        || h.cont_len > h.payload_len
        // A damaged LSN near u64::MAX would wrap in end_lsn().
        || h.lsn.checked_add(h.payload_len as u64).is_none()
    {
        return None;
    }
    Some(h)
}

/// Checks a whole block (header already decoded from `block[..40]`).
pub fn verify_block(h: &BlockHeader, block: &[u8]) -> bool {
    let end = BLOCK_HEADER + h.payload_len as usize;
    if block.len() < end {
        return false;
    }
    let crc = crc32c::crc32c_append(crc32c::crc32c(&block[..32]), &block[BLOCK_HEADER..end]);
    crc == h.crc
}

/// A decoded segment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    pub seq: u64,
    pub first_lsn: Lsn,
    pub segment_size: u64,
}

pub fn encode_segment_header(h: &SegmentHeader) -> Vec<u8> {
    let mut out = Vec::with_capacity(SEGMENT_HEADER);
    out.extend_from_slice(&SEGMENT_MAGIC);
    out.extend_from_slice(&1u32.to_le_bytes()); // format version
    out.extend_from_slice(&h.seq.to_le_bytes());
    out.extend_from_slice(&h.first_lsn.to_le_bytes());
    out.extend_from_slice(&h.segment_size.to_le_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out.resize(SEGMENT_HEADER, 0);
    out
}

pub fn decode_segment_header(buf: &[u8]) -> Option<SegmentHeader> {
    if buf.len() < 40 || buf[0..8] != SEGMENT_MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(buf[36..40].try_into().unwrap());
    if crc32c::crc32c(&buf[..36]) != crc {
        return None;
    }
    if u32::from_le_bytes(buf[8..12].try_into().unwrap()) != 1 {
        return None;
    }
    Some(SegmentHeader {
        seq: u64::from_le_bytes(buf[12..20].try_into().unwrap()),
        first_lsn: u64::from_le_bytes(buf[20..28].try_into().unwrap()),
        segment_size: u64::from_le_bytes(buf[28..36].try_into().unwrap()),
    })
}

/// Name of the segment file with sequence number `seq`.
pub fn segment_name(seq: u64) -> String {
    format!("wal-{seq:010}.log")
}

/// Parses a segment file name.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    name.strip_prefix("wal-")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

/// Name of a recycled or preallocated segment file waiting for reuse.
pub fn spare_name(n: u64) -> String {
    format!("spare-{n:010}.log")
}

pub fn parse_spare_name(name: &str) -> Option<u64> {
    name.strip_prefix("spare-")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_round_trip_and_padding() {
        let mut out = Vec::new();
        encode_block(&mut out, 1234, 1000, 3, b"hello world");
        assert_eq!(out.len(), PAGE);
        let h = decode_header(&out, 61440).unwrap();
        assert_eq!(h.lsn, 1234);
        assert_eq!(h.synced_through, 1000);
        assert_eq!(h.payload_len, 11);
        assert_eq!(h.cont_len, 3);
        assert!(verify_block(&h, &out));
        out[45] ^= 1;
        assert!(!verify_block(&h, &out));
    }

    #[test]
    fn a_header_whose_lsn_range_wraps_is_refused() {
        // Found by fuzz/fuzz_targets/log_block.rs: end_lsn() overflowed.
        let mut out = Vec::new();
        encode_block(&mut out, u64::MAX - 4, 0, 0, b"hello");
        assert_eq!(decode_header(&out, PAGE), None);
        out.clear();
        encode_block(&mut out, u64::MAX - 5, 0, 0, b"hello");
        assert_eq!(decode_header(&out, PAGE).unwrap().end_lsn(), u64::MAX);
    }

    #[test]
    fn segment_header_round_trip() {
        let h = SegmentHeader {
            seq: 7,
            first_lsn: 99,
            segment_size: 1 << 20,
        };
        let b = encode_segment_header(&h);
        assert_eq!(decode_segment_header(&b), Some(h));
        assert_eq!(parse_segment_name(&segment_name(7)), Some(7));
    }
}
