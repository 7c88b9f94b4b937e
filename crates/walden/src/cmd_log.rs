//! `walden log dump` and `walden log check`: read-only inspection of a log.
//!
//! Both run the same scan recovery runs (`walden_log::scan::scan`), through a
//! read-only file system, so what they report is what `LogManager::open`
//! would find, minus the repair: a torn tail is reported, never cut.

use crate::readonly_vfs::ReadOnlyVfs;
use clap::{Args, Subcommand};
use serde::Serialize;
use std::cell::RefCell;
use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use walden_log::block::{self, SegmentHeader};
use walden_log::scan::{self, BlockVisit, ScanOptions};
use walden_log::{LogError, Lsn, ScanOutcome, Vfs};

/// Exit code for a log that is damaged before its tail.
pub const EXIT_CORRUPT: u8 = 2;
/// Exit code for any other failure (missing directory, I/O error, ...).
pub const EXIT_ERROR: u8 = 1;

/// Largest block the scan accepts. Generous on purpose: each block header
/// carries its own length, and the tools must read logs written with any
/// `log_block_size`.
const MAX_BLOCK: usize = 1 << 20;

/// Bytes of each record shown by `dump --records`.
const HEAD_BYTES: usize = 32;

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Print the segments, blocks (and records) of a log and where it ends.
    Dump(DumpArgs),
    /// Verify a log without modifying it. Exits 0 if it is readable (a torn
    /// tail, normal after a crash, is reported but is not an error), 2 if it
    /// is corrupt before its tail, 1 on any other error.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// A database directory (the log is in DIR/log) or a log directory
    /// (holding wal-*.log files).
    pub dir: PathBuf,
    /// Also print one line per record.
    #[arg(long)]
    pub records: bool,
    /// Also write the dump as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A database directory (the log is in DIR/log) or a log directory
    /// (holding wal-*.log files).
    pub dir: PathBuf,
}

pub fn run(cmd: LogCommand) -> ExitCode {
    match cmd {
        LogCommand::Dump(a) => dump(&a),
        LogCommand::Check(a) => check(&a),
    }
}

/// The log directory for DIR: DIR itself if it holds segment or spare files,
/// else DIR/log if that is a directory.
pub fn resolve_log_dir(dir: &Path) -> Result<PathBuf, String> {
    let names = ReadOnlyVfs
        .list(dir)
        .map_err(|e| format!("cannot read directory {}: {e}", dir.display()))?;
    let is_log =
        |n: &String| block::parse_segment_name(n).is_some() || block::parse_spare_name(n).is_some();
    if names.iter().any(is_log) {
        return Ok(dir.to_path_buf());
    }
    let sub = walden_log::log_dir(dir);
    if sub.is_dir() {
        return Ok(sub);
    }
    Err(format!(
        "{} is neither a log directory (no wal-*.log files) nor a database directory (no log/ subdirectory)",
        dir.display()
    ))
}

type Listed = Vec<(u64, PathBuf, Option<SegmentHeader>)>;

/// Lists the segments and picks the LSN to scan from: the first LSN of the
/// oldest segment with a valid header (older log may have been recycled
/// after a checkpoint, so 0 is not always present).
fn prepare(dir: &Path) -> Result<(Listed, Lsn), LogError> {
    let listed = scan::list_segments(&ReadOnlyVfs, dir)?;
    let from = listed
        .iter()
        .find_map(|s| s.2.map(|h| h.first_lsn))
        .unwrap_or(0);
    Ok((listed, from))
}

fn exit_for(e: &LogError) -> ExitCode {
    match e {
        LogError::Corrupt { .. } => ExitCode::from(EXIT_CORRUPT),
        _ => ExitCode::from(EXIT_ERROR),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

// ---------------------------------------------------------------- check

fn check(args: &CheckArgs) -> ExitCode {
    let dir = match resolve_log_dir(&args.dir) {
        Ok(d) => d,
        Err(msg) => {
            eprintln!("walden: error: {msg}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let res = prepare(&dir).and_then(|(_, from)| {
        scan::scan(
            &ReadOnlyVfs,
            &dir,
            ScanOptions {
                from,
                max_block: MAX_BLOCK,
                on_record: &mut |_, _, _| Ok(()),
                on_block: None,
            },
        )
    });
    match res {
        Ok(o) => {
            println!(
                "log OK: {} segments, {} blocks, {} records, end LSN {}",
                o.segments.len(),
                o.blocks,
                o.records,
                o.end_lsn
            );
            if let Some(cut) = &o.cut {
                println!(
                    "torn tail: the log ends at {} offset {} (LSN {}): {}; recovery cuts it off there (normal after a crash)",
                    file_name(&cut.file),
                    cut.offset,
                    cut.lsn,
                    cut.reason
                );
            }
            if o.abandoned_records > 0 {
                println!(
                    "{} incomplete record(s) at the end are ignored",
                    o.abandoned_records
                );
            }
            if !o.discard.is_empty() {
                let names: Vec<String> = o.discard.iter().map(|p| file_name(p)).collect();
                println!(
                    "{} segment file(s) past the end will be recycled on open: {}",
                    names.len(),
                    names.join(", ")
                );
            }
            ExitCode::SUCCESS
        }
        Err(e @ LogError::Corrupt { .. }) => {
            println!("log CORRUPT: {e}");
            exit_for(&e)
        }
        Err(e) => {
            eprintln!("walden: error: {e}");
            exit_for(&e)
        }
    }
}

// ----------------------------------------------------------------- dump

#[derive(Debug, Serialize)]
struct JsonDump {
    log_dir: PathBuf,
    scan_from: Lsn,
    segments: Vec<JsonSegment>,
    spares: Vec<PathBuf>,
    blocks: Vec<JsonBlock>,
    /// Present only with `--records`.
    records: Option<Vec<JsonRecord>>,
    /// The scan's result; absent when it failed.
    outcome: Option<JsonOutcome>,
    error: Option<JsonError>,
}

#[derive(Debug, Serialize)]
struct JsonSegment {
    seq: u64,
    path: PathBuf,
    header_valid: bool,
    first_lsn: Option<Lsn>,
    segment_size: Option<u64>,
}

#[derive(Debug, Serialize)]
struct JsonBlock {
    segment: PathBuf,
    offset: u64,
    lsn: Lsn,
    end_lsn: Lsn,
    payload_len: u32,
    block_len: u32,
    cont_len: u32,
    synced_through: Lsn,
}

#[derive(Debug, Serialize)]
struct JsonRecord {
    start_lsn: Lsn,
    end_lsn: Lsn,
    len: usize,
    head_hex: String,
}

#[derive(Debug, Serialize)]
struct JsonCut {
    file: PathBuf,
    offset: u64,
    lsn: Lsn,
    reason: String,
}

#[derive(Debug, Serialize)]
struct JsonOutcome {
    end_lsn: Lsn,
    append_offset: u64,
    segments_used: usize,
    cut: Option<JsonCut>,
    discard: Vec<PathBuf>,
    blocks: u64,
    records: u64,
    bytes_read: u64,
    abandoned_records: u64,
}

#[derive(Debug, Serialize)]
struct JsonError {
    kind: &'static str,
    message: String,
    file: Option<PathBuf>,
    offset: Option<u64>,
    lsn: Option<Lsn>,
}

impl JsonOutcome {
    fn from(o: &ScanOutcome) -> Self {
        JsonOutcome {
            end_lsn: o.end_lsn,
            append_offset: o.append_offset,
            segments_used: o.segments.len(),
            cut: o.cut.as_ref().map(|c| JsonCut {
                file: c.file.clone(),
                offset: c.offset,
                lsn: c.lsn,
                reason: c.reason.clone(),
            }),
            discard: o.discard.clone(),
            blocks: o.blocks,
            records: o.records,
            bytes_read: o.bytes_read,
            abandoned_records: o.abandoned_records,
        }
    }
}

impl JsonError {
    fn from(e: &LogError) -> Self {
        let (kind, file, offset, lsn) = match e {
            LogError::Corrupt {
                file, offset, lsn, ..
            } => ("corrupt", Some(file.clone()), Some(*offset), Some(*lsn)),
            LogError::Io { path, .. } => ("io", Some(path.clone()), None, None),
            LogError::Missing(lsn, _) => ("missing", None, None, Some(*lsn)),
            _ => ("other", None, None, None),
        };
        JsonError {
            kind,
            message: e.to_string(),
            file,
            offset,
            lsn,
        }
    }
}

/// Line-oriented stdout that stops quietly on a closed pipe (`| head`).
struct Out {
    w: BufWriter<io::Stdout>,
    failed: bool,
}

impl Out {
    fn new() -> Self {
        Out {
            w: BufWriter::new(io::stdout()),
            failed: false,
        }
    }
    fn line(&mut self, args: fmt::Arguments<'_>) {
        if !self.failed && writeln!(self.w, "{args}").is_err() {
            self.failed = true;
        }
    }
    fn flush(&mut self) {
        if !self.failed && self.w.flush().is_err() {
            self.failed = true;
        }
    }
}

macro_rules! outln {
    ($out:expr, $($arg:tt)*) => { $out.line(format_args!($($arg)*)) };
}

/// What the scan callbacks share.
struct Dumper {
    out: Out,
    records: bool,
    json: Option<JsonDump>,
}

impl Dumper {
    fn block(&mut self, v: &BlockVisit<'_>) {
        let h = &v.header;
        outln!(
            self.out,
            "block segment={} offset={} lsn={} payload_len={} block_len={} cont_len={} synced_through={}",
            file_name(v.segment),
            v.offset,
            h.lsn,
            h.payload_len,
            h.block_len,
            h.cont_len,
            h.synced_through
        );
        if let Some(j) = &mut self.json {
            j.blocks.push(JsonBlock {
                segment: v.segment.to_path_buf(),
                offset: v.offset,
                lsn: h.lsn,
                end_lsn: h.end_lsn(),
                payload_len: h.payload_len,
                block_len: h.block_len,
                cont_len: h.cont_len,
                synced_through: h.synced_through,
            });
        }
    }

    fn record(&mut self, start: Lsn, end: Lsn, rec: &[u8]) {
        if !self.records {
            return;
        }
        let head = hex(&rec[..rec.len().min(HEAD_BYTES)]);
        outln!(
            self.out,
            "  record start={start} end={end} len={} head={head}",
            rec.len()
        );
        if let Some(recs) = self.json.as_mut().and_then(|j| j.records.as_mut()) {
            recs.push(JsonRecord {
                start_lsn: start,
                end_lsn: end,
                len: rec.len(),
                head_hex: head,
            });
        }
    }
}

fn dump(args: &DumpArgs) -> ExitCode {
    let dir = match resolve_log_dir(&args.dir) {
        Ok(d) => d,
        Err(msg) => {
            eprintln!("walden: error: {msg}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let (listed, from) = match prepare(&dir) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("walden: error: {e}");
            return exit_for(&e);
        }
    };
    let spares: Vec<PathBuf> = ReadOnlyVfs
        .list(&dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| block::parse_spare_name(n).is_some())
        .map(|n| dir.join(n))
        .collect();

    let mut d = Dumper {
        out: Out::new(),
        records: args.records,
        json: args.json.as_ref().map(|_| JsonDump {
            log_dir: dir.clone(),
            scan_from: from,
            segments: Vec::new(),
            spares: spares.clone(),
            blocks: Vec::new(),
            records: args.records.then(Vec::new),
            outcome: None,
            error: None,
        }),
    };
    outln!(
        d.out,
        "log directory {} (scan from LSN {from})",
        dir.display()
    );
    for (seq, path, h) in &listed {
        match h {
            Some(h) => outln!(
                d.out,
                "segment seq={seq} first_lsn={} size={} path={}",
                h.first_lsn,
                h.segment_size,
                path.display()
            ),
            None => outln!(
                d.out,
                "segment seq={seq} header=invalid path={}",
                path.display()
            ),
        }
        if let Some(j) = &mut d.json {
            j.segments.push(JsonSegment {
                seq: *seq,
                path: path.clone(),
                header_valid: h.is_some(),
                first_lsn: h.map(|h| h.first_lsn),
                segment_size: h.map(|h| h.segment_size),
            });
        }
    }
    for p in &spares {
        outln!(d.out, "spare path={}", p.display());
    }

    let cell = RefCell::new(d);
    let mut on_block = |v: BlockVisit<'_>| cell.borrow_mut().block(&v);
    let mut on_record = |s: Lsn, e: Lsn, r: &[u8]| {
        cell.borrow_mut().record(s, e, r);
        Ok(())
    };
    let res = scan::scan(
        &ReadOnlyVfs,
        &dir,
        ScanOptions {
            from,
            max_block: MAX_BLOCK,
            on_record: &mut on_record,
            on_block: Some(&mut on_block),
        },
    );
    let mut d = cell.into_inner();
    let code = match &res {
        Ok(o) => {
            outln!(
                d.out,
                "end_lsn={} append_offset={} segments_used={}",
                o.end_lsn,
                o.append_offset,
                o.segments.len()
            );
            match &o.cut {
                Some(c) => outln!(
                    d.out,
                    "tail cut: file={} offset={} lsn={} reason={}",
                    c.file.display(),
                    c.offset,
                    c.lsn,
                    c.reason
                ),
                None => outln!(d.out, "tail cut: none"),
            }
            for p in &o.discard {
                outln!(d.out, "discard path={}", p.display());
            }
            outln!(
                d.out,
                "read: {} blocks, {} records, {} bytes, {} abandoned records",
                o.blocks,
                o.records,
                o.bytes_read,
                o.abandoned_records
            );
            if let Some(j) = &mut d.json {
                j.outcome = Some(JsonOutcome::from(o));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            outln!(d.out, "scan failed: {e}");
            if let Some(j) = &mut d.json {
                j.error = Some(JsonError::from(e));
            }
            exit_for(e)
        }
    };
    d.out.flush();
    if let Err(e) = &res {
        eprintln!("walden: error: {e}");
    }
    if let (Some(path), Some(j)) = (&args.json, &d.json) {
        let written = std::fs::File::create(path).and_then(|f| {
            let mut w = BufWriter::new(f);
            serde_json::to_writer_pretty(&mut w, j).map_err(io::Error::other)?;
            writeln!(w)?;
            w.flush()
        });
        if let Err(e) = written {
            eprintln!("walden: error: cannot write {}: {e}", path.display());
            return ExitCode::from(EXIT_ERROR);
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lowercase_pairs() {
        assert_eq!(hex(&[0, 1, 0xab, 0xff]), "0001abff");
    }

    #[test]
    fn resolve_prefers_segment_files_then_log_subdir() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path();
        assert!(resolve_log_dir(db).is_err());
        std::fs::create_dir(db.join("log")).unwrap();
        assert_eq!(resolve_log_dir(db).unwrap(), db.join("log"));
        std::fs::write(db.join("log").join(block::segment_name(1)), b"").unwrap();
        assert_eq!(resolve_log_dir(&db.join("log")).unwrap(), db.join("log"));
    }
}
