//! Reading the log back: segment discovery, block validation, record
//! reassembly, and the tail-versus-corruption decision of recovery.
//!
//! The rule that separates a torn tail from real damage: every block records
//! the hardened LSN at the moment it was written (`synced_through`). The
//! flusher never writes a batch before the previous one is synced, so a valid
//! block claiming `synced_through > E` proves that everything before it,
//! including the bad block at LSN `E`, had been hardened: that is corruption.
//! Valid blocks that make no such claim belong to the same unsynced batch and
//! are cut off with it.

use crate::block::{self, BlockHeader, SegmentHeader, BLOCK_HEADER, PAGE, SEGMENT_HEADER};
use crate::error::{io_err, LogError, Result};
use crate::vfs::{read_exact_at, OpenOptionsVfs, Vfs};
use crate::Lsn;
use std::path::{Path, PathBuf};

/// Receives each record: (start LSN, end LSN, bytes).
pub type RecordSink<'a> = dyn FnMut(Lsn, Lsn, &[u8]) -> Result<()> + 'a;

/// Largest block the reader accepts, whatever block size the writer uses now
/// (the header carries each block's own length).
pub const MAX_BLOCK: usize = 1 << 20;

/// Largest record the reader accepts (a sanity bound on the length prefix)
/// and the writer appends: 1.5 GiB, room for a row holding one value of the
/// engine's 1 GiB maximum.
pub const MAX_RECORD: usize = 3 << 29;

/// Refuses a record the reader would reject (and whose length would not fit
/// the 4-byte frame).
pub fn check_record_len(len: usize) -> Result<()> {
    if len > MAX_RECORD {
        return Err(LogError::RecordTooLarge {
            len: len as u64,
            max: MAX_RECORD as u64,
        });
    }
    Ok(())
}

/// A segment file found in the log directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    pub seq: u64,
    pub path: PathBuf,
    pub first_lsn: Lsn,
}

/// Reassembles records from block payloads.
#[derive(Default)]
pub struct Assembler {
    partial: Vec<u8>,
    partial_lsn: Lsn,
    in_record: bool,
    /// Records abandoned because the log was cut inside them.
    pub abandoned: u64,
}

impl Assembler {
    fn partial_total(&self) -> Option<usize> {
        (self.partial.len() >= 4)
            .then(|| 4 + u32::from_le_bytes(self.partial[..4].try_into().unwrap()) as usize)
    }

    /// Feeds one block's payload. `emit(start_lsn, end_lsn, record)` gets each
    /// complete record whose start is at or after `from`.
    pub fn feed(
        &mut self,
        lsn: Lsn,
        cont_len: u32,
        payload: &[u8],
        from: Lsn,
        emit: &mut RecordSink<'_>,
    ) -> Result<()> {
        let mut pos = 0usize;
        let cont = cont_len as usize;
        if self.in_record {
            if cont == 0 {
                self.abandon();
            } else {
                // Continue the record in progress with exactly `cont` bytes.
                self.partial.extend_from_slice(&payload[..cont]);
                pos = cont;
                match self.partial_total() {
                    Some(total) if self.partial.len() > total => self.abandon(),
                    Some(total) if self.partial.len() == total => {
                        let start = self.partial_lsn;
                        let rec = std::mem::take(&mut self.partial);
                        self.in_record = false;
                        if start >= from {
                            emit(start, start + total as u64, &rec[4..])?;
                        }
                    }
                    _ if cont < payload.len() => self.abandon(),
                    _ => {}
                }
            }
        } else {
            // Bytes continuing a record we never saw the start of (the scan began
            // inside it): skip them.
            pos = cont;
        }
        while pos < payload.len() {
            let rest = &payload[pos..];
            let rec_lsn = lsn + pos as u64;
            if rest.len() < 4 {
                self.start_partial(rec_lsn, rest);
                break;
            }
            let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
            if len > MAX_RECORD {
                return Err(LogError::Corrupt {
                    file: PathBuf::new(),
                    offset: 0,
                    lsn: rec_lsn,
                    detail: format!("record length {len} is impossible"),
                });
            }
            if rest.len() >= 4 + len {
                if rec_lsn >= from {
                    emit(rec_lsn, rec_lsn + 4 + len as u64, &rest[4..4 + len])?;
                }
                pos += 4 + len;
            } else {
                self.start_partial(rec_lsn, rest);
                break;
            }
        }
        Ok(())
    }

    fn start_partial(&mut self, lsn: Lsn, bytes: &[u8]) {
        self.partial.clear();
        self.partial.extend_from_slice(bytes);
        self.partial_lsn = lsn;
        self.in_record = true;
    }

    fn abandon(&mut self) {
        self.partial.clear();
        self.in_record = false;
        self.abandoned += 1;
    }

    /// Whether a record is incomplete at the end of what was fed.
    pub fn has_partial(&self) -> bool {
        self.in_record
    }
}

/// Lists the segment files of a log directory, sorted by sequence number,
/// with their headers. Segments whose header is unreadable get `first_lsn`
/// `None`.
pub fn list_segments(
    vfs: &dyn Vfs,
    dir: &Path,
) -> Result<Vec<(u64, PathBuf, Option<SegmentHeader>)>> {
    let mut out = Vec::new();
    for name in vfs.list(dir).map_err(io_err(dir))? {
        if let Some(seq) = block::parse_segment_name(&name) {
            let path = dir.join(&name);
            let f = vfs
                .open(&path, OpenOptionsVfs::default())
                .map_err(io_err(&path))?;
            let read_header = || {
                let mut buf = vec![0u8; 64];
                match read_exact_at(&*f, &mut buf, 0) {
                    Ok(()) => block::decode_segment_header(&buf).filter(|h| h.seq == seq),
                    Err(_) => None,
                }
            };
            // Read twice before calling a header bad: a bad last header
            // discards the segment.
            let h = read_header().or_else(read_header);
            out.push((seq, path, h));
        }
    }
    out.sort_by_key(|s| s.0);
    Ok(out)
}

/// What a block visit sees (for `walden log dump`).
#[derive(Clone, Debug)]
pub struct BlockVisit<'a> {
    pub segment: &'a Path,
    pub offset: u64,
    pub header: BlockHeader,
}

/// The result of a full scan.
#[derive(Clone, Debug, Default)]
pub struct ScanOutcome {
    /// End of the valid log: the next append goes here.
    pub end_lsn: Lsn,
    /// Segments that hold the valid log, oldest first.
    pub segments: Vec<SegmentInfo>,
    /// Byte offset in the last segment where the next block goes.
    pub append_offset: u64,
    /// Where a torn tail was cut off, if one was.
    pub cut: Option<TailCut>,
    /// Segment files past the cut (torn or never used) to recycle.
    pub discard: Vec<PathBuf>,
    pub blocks: u64,
    pub records: u64,
    pub bytes_read: u64,
    pub abandoned_records: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TailCut {
    pub file: PathBuf,
    pub offset: u64,
    pub lsn: Lsn,
    pub reason: String,
}

/// Options of a scan.
pub struct ScanOptions<'a> {
    /// First LSN whose records are delivered (a checkpoint's LSN; a record boundary).
    pub from: Lsn,
    pub max_block: usize,
    pub on_record: &'a mut RecordSink<'a>,
    pub on_block: Option<&'a mut dyn FnMut(BlockVisit<'_>)>,
}

fn read_segment(vfs: &dyn Vfs, path: &Path) -> Result<Vec<u8>> {
    let f = vfs
        .open(path, OpenOptionsVfs::default())
        .map_err(io_err(path))?;
    let len = f.len().map_err(io_err(path))? as usize;
    let mut buf = vec![0u8; len];
    read_exact_at(&*f, &mut buf, 0).map_err(io_err(path))?;
    Ok(buf)
}

/// A block at `off` of `data` if its header and checksum are valid.
fn valid_block_at(data: &[u8], off: usize, max_block: usize) -> Option<BlockHeader> {
    if off + BLOCK_HEADER > data.len() {
        return None;
    }
    let h = block::decode_header(&data[off..], max_block)?;
    if off + h.block_len as usize > data.len() {
        return None;
    }
    block::verify_block(&h, &data[off..off + h.block_len as usize]).then_some(h)
}

/// Scans the whole log from the segment holding `opts.from`, delivering records,
/// and decides where the valid log ends.
pub fn scan(vfs: &dyn Vfs, dir: &Path, opts: ScanOptions<'_>) -> Result<ScanOutcome> {
    let ScanOptions {
        from,
        max_block,
        on_record,
        mut on_block,
    } = opts;
    let listed = list_segments(vfs, dir)?;
    let mut out = ScanOutcome {
        end_lsn: from,
        ..Default::default()
    };
    // Segments with a bad header are unused only if no valid segment follows.
    let last_valid = listed.iter().rposition(|s| s.2.is_some());
    for (i, (_, path, h)) in listed.iter().enumerate() {
        if h.is_none() && Some(i) < last_valid {
            return Err(LogError::Corrupt {
                file: path.clone(),
                offset: 0,
                lsn: 0,
                detail: "segment header is damaged but later segments are valid".into(),
            });
        }
    }
    let valid: Vec<SegmentInfo> = listed
        .iter()
        .filter_map(|(seq, path, h)| {
            h.map(|h| SegmentInfo {
                seq: *seq,
                path: path.clone(),
                first_lsn: h.first_lsn,
            })
        })
        .collect();
    out.discard = listed
        .iter()
        .filter(|s| s.2.is_none())
        .map(|s| s.1.clone())
        .collect();
    if valid.is_empty() {
        if from > 0 {
            return Err(LogError::Missing(from, "no log segment exists".into()));
        }
        return Ok(out);
    }
    let Some(start) = valid.iter().rposition(|s| s.first_lsn <= from) else {
        return Err(LogError::Missing(
            from,
            format!(
                "the oldest segment {} starts at LSN {}",
                valid[0].path.display(),
                valid[0].first_lsn
            ),
        ));
    };
    let mut asm = Assembler::default();
    let mut expected = valid[start].first_lsn;
    let mut si = start;
    let mut on_rec = |s: Lsn, e: Lsn, r: &[u8]| {
        out.records += 1;
        on_record(s, e, r)
    };
    loop {
        let seg = &valid[si];
        if seg.first_lsn != expected {
            // A later segment that does not continue the log: decide below.
            break;
        }
        let mut data = read_segment(vfs, &seg.path)?;
        out.bytes_read += data.len() as u64;
        let mut off = SEGMENT_HEADER;
        let mut stop: Option<(usize, String)> = None;
        let mut reread = false;
        'blocks: while off + BLOCK_HEADER <= data.len() {
            match valid_block_at(&data, off, max_block) {
                Some(h) if h.lsn == expected => {
                    if let Some(cb) = on_block.as_deref_mut() {
                        cb(BlockVisit {
                            segment: &seg.path,
                            offset: off as u64,
                            header: h,
                        });
                    }
                    let payload =
                        &data[off + BLOCK_HEADER..off + BLOCK_HEADER + h.payload_len as usize];
                    asm.feed(h.lsn, h.cont_len, payload, from, &mut on_rec)
                        .map_err(|e| with_location(e, &seg.path, off as u64))?;
                    out.blocks += 1;
                    expected = h.end_lsn();
                    off += h.block_len as usize;
                }
                Some(h) if h.lsn < expected => {
                    stop = Some((
                        off,
                        format!(
                            "stale block (LSN {} from an earlier use of the file)",
                            h.lsn
                        ),
                    ));
                    break;
                }
                Some(h) => {
                    stop = Some((
                        off,
                        format!("block LSN {} where {} was expected", h.lsn, expected),
                    ));
                    break;
                }
                None => {
                    // A bad block that is not zeros may be a transient read
                    // error: read the segment again once before taking it
                    // for the end of the log (whatever follows is zeroed).
                    let page = &data[off..(off + PAGE).min(data.len())];
                    if !reread && !all_zero(page) {
                        reread = true;
                        let again = read_segment(vfs, &seg.path)?;
                        out.bytes_read += again.len() as u64;
                        if again != data {
                            data = again;
                            continue 'blocks;
                        }
                    }
                    stop = Some((
                        off,
                        "no valid block (torn write, zeros or checksum mismatch)".into(),
                    ));
                    break;
                }
            }
        }
        let (stop_off, reason) = stop.unwrap_or((data.len(), "end of segment".into()));
        out.segments.push(seg.clone());
        out.append_offset = stop_off as u64;
        // A clean switch: the next segment starts exactly where this one ended.
        if si + 1 < valid.len() && valid[si + 1].first_lsn == expected {
            si += 1;
            continue;
        }
        // Otherwise this is the end of the log, unless something hardened follows.
        check_nothing_hardened_after(vfs, &valid[si..], stop_off, expected, max_block, &data)?;
        let clean = reason.starts_with("stale")
            || stop_off >= data.len()
            || all_zero(&data[stop_off..(stop_off + PAGE).min(data.len())]);
        if !clean || si + 1 < valid.len() {
            out.cut = Some(TailCut {
                file: seg.path.clone(),
                offset: stop_off as u64,
                lsn: expected,
                reason,
            });
        }
        out.discard
            .extend(valid[si + 1..].iter().map(|s| s.path.clone()));
        break;
    }
    out.end_lsn = expected;
    out.abandoned_records = asm.abandoned + asm.has_partial() as u64;
    Ok(out)
}

fn all_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

fn with_location(e: LogError, file: &Path, offset: u64) -> LogError {
    match e {
        LogError::Corrupt { lsn, detail, .. } => LogError::Corrupt {
            file: file.to_path_buf(),
            offset,
            lsn,
            detail,
        },
        e => e,
    }
}

/// Refuses to cut the log at `expected` if any valid block after the stop
/// point (in this segment or a later one) proves the cut part was hardened.
fn check_nothing_hardened_after(
    vfs: &dyn Vfs,
    segs: &[SegmentInfo],
    stop_off: usize,
    expected: Lsn,
    max_block: usize,
    first_data: &[u8],
) -> Result<()> {
    let damaged = &segs[0].path;
    let check = |data: &[u8], from_off: usize, path: &Path| -> Result<()> {
        let mut off = from_off.div_ceil(PAGE) * PAGE;
        while off + BLOCK_HEADER <= data.len() {
            if let Some(h) = valid_block_at(data, off, max_block) {
                if h.lsn >= expected && h.synced_through > expected {
                    return Err(LogError::Corrupt {
                        file: damaged.clone(),
                        offset: stop_off as u64,
                        lsn: expected,
                        detail: format!(
                            "damaged block before the tail: a valid block in {} at offset {off} \
                             (LSN {}) was written after LSN {} had been hardened",
                            path.display(),
                            h.lsn,
                            h.synced_through
                        ),
                    });
                }
            }
            off += PAGE;
        }
        Ok(())
    };
    check(first_data, stop_off, damaged)?;
    for seg in &segs[1..] {
        let data = read_segment(vfs, &seg.path)?;
        check(&data, SEGMENT_HEADER, &seg.path)?;
    }
    Ok(())
}

/// Reads records in `[from, to)` from hardened segments (for log backups and
/// replica catch-up). `from` must be a record boundary.
pub fn read_range(
    vfs: &dyn Vfs,
    segments: &[SegmentInfo],
    from: Lsn,
    to: Lsn,
    max_block: usize,
    emit: &mut RecordSink<'_>,
) -> Result<()> {
    let Some(start) = segments.iter().rposition(|s| s.first_lsn <= from) else {
        return Err(LogError::Missing(from, "no segment holds it".into()));
    };
    let mut asm = Assembler::default();
    let mut expected = segments[start].first_lsn;
    'segs: for seg in &segments[start..] {
        if seg.first_lsn != expected {
            break;
        }
        let data = read_segment(vfs, &seg.path)?;
        let mut off = SEGMENT_HEADER;
        while off + BLOCK_HEADER <= data.len() && expected < to {
            match valid_block_at(&data, off, max_block) {
                Some(h) if h.lsn == expected => {
                    let payload =
                        &data[off + BLOCK_HEADER..off + BLOCK_HEADER + h.payload_len as usize];
                    let mut inner =
                        |s: Lsn, e: Lsn, r: &[u8]| if e <= to { emit(s, e, r) } else { Ok(()) };
                    asm.feed(h.lsn, h.cont_len, payload, from, &mut inner)?;
                    expected = h.end_lsn();
                    off += h.block_len as usize;
                }
                _ => break,
            }
        }
        if expected >= to {
            break 'segs;
        }
    }
    if expected < to {
        return Err(LogError::Missing(
            expected,
            format!("log ends before LSN {to}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(recs: &[&[u8]]) -> Vec<u8> {
        let mut v = Vec::new();
        for r in recs {
            v.extend_from_slice(&(r.len() as u32).to_le_bytes());
            v.extend_from_slice(r);
        }
        v
    }

    #[test]
    fn assembler_joins_records_across_blocks() {
        let stream = frame(&[b"alpha", b"a much longer record body", b"z"]);
        let mut got = Vec::new();
        let mut asm = Assembler::default();
        // Split at 7 bytes: the second record's prefix straddles.
        let (a, b) = stream.split_at(11);
        asm.feed(0, 0, a, 0, &mut |s, _, r| {
            got.push((s, r.to_vec()));
            Ok(())
        })
        .unwrap();
        asm.feed(11, 27, b, 0, &mut |s, _, r| {
            got.push((s, r.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].1, b"a much longer record body");
        assert_eq!(got[2].0, 38);
    }

    #[test]
    fn assembler_abandons_a_record_cut_by_recovery() {
        let first = frame(&[b"0123456789"]);
        let mut got = Vec::new();
        let mut asm = Assembler::default();
        asm.feed(0, 0, &first[..6], 0, &mut |_, _, r| {
            got.push(r.to_vec());
            Ok(())
        })
        .unwrap();
        // After a cut the writer starts fresh with cont_len 0.
        let next = frame(&[b"new"]);
        asm.feed(6, 0, &next, 0, &mut |_, _, r| {
            got.push(r.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(got, vec![b"new".to_vec()]);
        assert_eq!(asm.abandoned, 1);
    }
}
