//! Images written and read a block at a time (image version 3), for full
//! backups and for seeding a secondary: neither side ever holds a whole
//! table's encoding, let alone the whole image, in memory.
//!
//! ```text
//! "WALDNIMG" | 3 u32 | block* | 0 u32 | crc32c(every block and the 0) u32
//! block: len u32 | bytes
//!   first block: the catalog as a whole image of version 2 with no rows
//!   then:        table id (var) | rows to the block's end
//! ```
//!
//! A row block holds about [`BLOCK`] bytes of rows (one row more at most);
//! the writer hands its output on in pieces of at most `chunk` bytes, so
//! what it holds is bounded by one scan batch of [`SCAN_BATCH`] rows, one
//! block and one chunk. Versions 1 and 2 (one encoding of everything, as
//! older backups hold) are still read, whole.

use crate::checkpoint::{decode_whole, Image, Parts, IMAGE_MAGIC};
use crate::codec::{self, put_var, Reader};
use crate::error::{io_err, EngineError, Result};
use crate::mvcc::Csn;
use crate::table::Table;
use crate::types::{Key, Row};
use std::io::Read;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use walden_log::{Lsn, OpenOptionsVfs, Vfs, VfsFile};

pub(crate) const STREAM_VERSION: u32 = 3;
/// Rows gathered before a block is handed on.
const BLOCK: usize = 256 << 10;
/// Rows read from a table per visit (its lock is taken per visit).
const SCAN_BATCH: usize = 1024;
/// Largest block a reader accepts (a row is far smaller; this only stops a
/// damaged length from asking for an absurd allocation).
const MAX_BLOCK: usize = 1 << 30;

/// Where the writer's bytes go, in pieces of at most `chunk` bytes.
pub(crate) type Emit<'a> = &'a mut dyn FnMut(&[u8]) -> Result<()>;

struct Out<'a> {
    buf: Vec<u8>,
    chunk: usize,
    crc: u32,
    total: u64,
    emit: Emit<'a>,
}

impl Out<'_> {
    fn put(&mut self, b: &[u8], summed: bool) -> Result<()> {
        if summed {
            self.crc = crc32c::crc32c_append(self.crc, b);
        }
        self.buf.extend_from_slice(b);
        self.drain(false)
    }

    fn block(&mut self, b: &[u8]) -> Result<()> {
        self.put(&(b.len() as u32).to_le_bytes(), true)?;
        self.put(b, true)
    }

    /// Hands on every whole chunk (and with `all`, the rest too).
    fn drain(&mut self, all: bool) -> Result<()> {
        let mut at = 0;
        while self.buf.len() - at >= self.chunk || (all && at < self.buf.len()) {
            let n = self.chunk.min(self.buf.len() - at);
            (self.emit)(&self.buf[at..at + n])?;
            self.total += n as u64;
            at += n;
        }
        self.buf.drain(..at);
        Ok(())
    }
}

/// Writes the image of `parts` with every table read at `csn` (versions
/// older than `horizon` are swept first); returns the image's size.
pub(crate) fn write_image(
    parts: &Parts,
    lsn: Lsn,
    commit_floor: Lsn,
    csn: Csn,
    horizon: Csn,
    chunk: usize,
    emit: Emit<'_>,
) -> Result<u64> {
    let mut out = Out {
        buf: Vec::new(),
        chunk: chunk.max(1),
        crc: 0,
        total: 0,
        emit,
    };
    out.put(IMAGE_MAGIC, false)?;
    out.put(&STREAM_VERSION.to_le_bytes(), false)?;
    out.block(&parts.header(lsn, commit_floor))?;
    let mut block = Vec::new();
    for (t, _, _) in &parts.tables {
        t.prune(horizon);
        let hidden = t.has_hidden_key();
        scan_batches(t, csn, &mut |rows| {
            for (k, r) in rows {
                if block.is_empty() {
                    put_var(&mut block, t.id() as u64);
                }
                if hidden {
                    codec::put_values(&mut block, &k);
                }
                codec::put_values(&mut block, &r);
                if block.len() >= BLOCK {
                    out.block(&block)?;
                    block.clear();
                }
            }
            Ok(())
        })?;
        if !block.is_empty() {
            out.block(&block)?;
            block.clear();
        }
    }
    out.put(&0u32.to_le_bytes(), true)?;
    let crc = out.crc;
    out.put(&crc.to_le_bytes(), false)?;
    out.drain(true)?;
    Ok(out.total)
}

/// Visits a table's rows as `csn` sees them, in key order, about
/// [`SCAN_BATCH`] keys at a time.
fn scan_batches(
    t: &Table,
    csn: Csn,
    f: &mut dyn FnMut(Vec<(Key, Row)>) -> Result<()>,
) -> Result<()> {
    let mut from: Bound<Key> = Bound::Unbounded;
    let mut batch: Vec<(Key, Row)> = Vec::new();
    loop {
        let (rows, next) = t
            .rows
            .scan_chunk_at((from.as_ref(), Bound::Unbounded), csn)?;
        batch.extend(rows);
        let done = next.is_none();
        if batch.len() >= SCAN_BATCH || (done && !batch.is_empty()) {
            f(std::mem::take(&mut batch))?;
        }
        match next {
            Some(n) => from = n,
            None => return Ok(()),
        }
    }
}

/// Reads an image of any version from `src`; a version 3 image a block at
/// a time.
pub(crate) fn read_image(src: &mut dyn Read, path: &Path) -> Result<Image> {
    let bad = |d: &str| EngineError::CorruptDataFile {
        path: path.to_path_buf(),
        detail: d.to_string(),
    };
    let mut head = [0u8; 12];
    src.read_exact(&mut head)
        .map_err(|_| bad("not a Walden image (too short)"))?;
    if &head[..8] != IMAGE_MAGIC {
        return Err(bad("not a Walden image (bad magic)"));
    }
    let version = u32::from_le_bytes(head[8..12].try_into().unwrap());
    if version < STREAM_VERSION {
        let mut whole = head.to_vec();
        src.read_to_end(&mut whole).map_err(io_err(path))?;
        return decode_whole(&whole, path);
    }
    if version != STREAM_VERSION {
        return Err(bad("unsupported image version"));
    }
    let mut crc = 0u32;
    let mut image: Option<Image> = None;
    let mut block = Vec::new();
    loop {
        let mut len = [0u8; 4];
        src.read_exact(&mut len)
            .map_err(|_| bad("truncated image (no end marker)"))?;
        crc = crc32c::crc32c_append(crc, &len);
        let n = u32::from_le_bytes(len) as usize;
        if n == 0 {
            break;
        }
        if n > MAX_BLOCK {
            return Err(bad("image block too large"));
        }
        block.clear();
        // Grows as bytes arrive: a damaged length cannot allocate ahead.
        src.take(n as u64)
            .read_to_end(&mut block)
            .map_err(io_err(path))?;
        if block.len() != n {
            return Err(bad("truncated image block"));
        }
        crc = crc32c::crc32c_append(crc, &block);
        match &image {
            None => image = Some(decode_whole(&block, path)?),
            Some(img) => load_block(img, &block).map_err(|e| bad(&e.to_string()))?,
        }
    }
    let mut sum = [0u8; 4];
    src.read_exact(&mut sum)
        .map_err(|_| bad("truncated image (no checksum)"))?;
    if u32::from_le_bytes(sum) != crc {
        return Err(bad("checksum mismatch"));
    }
    image.ok_or_else(|| bad("image without a catalog"))
}

/// Loads one row block into its table.
fn load_block(img: &Image, block: &[u8]) -> Result<()> {
    let mut r = Reader::new(block);
    let id = r.var()?;
    let t = u32::try_from(id)
        .ok()
        .and_then(|id| img.catalog.by_id.get(&id))
        .ok_or_else(|| EngineError::Data(format!("rows of table id {id}, which is not listed")))?;
    while !r.is_empty() {
        crate::checkpoint::load_row(t, &mut r)?;
    }
    Ok(())
}

/// Reads an image file through the VFS, a block at a time.
pub(crate) fn read_image_file(vfs: &dyn Vfs, path: &Path) -> Result<Image> {
    let f = vfs
        .open(path, OpenOptionsVfs::default())
        .map_err(io_err(path))?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, FileReader { f, at: 0 });
    read_image(&mut r, path)
}

/// `Read` over a VFS file.
struct FileReader {
    f: Arc<dyn VfsFile>,
    at: u64,
}

impl Read for FileReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.f.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// Writes a file atomically from pieces `write` hands over (temporary file,
/// sync, rename, directory sync); returns the file's size.
pub(crate) fn write_file_streaming(
    vfs: &dyn Vfs,
    path: &Path,
    write: impl FnOnce(Emit<'_>) -> Result<u64>,
) -> Result<u64> {
    let tmp = path.with_extension("tmp");
    let f = vfs
        .open(
            &tmp,
            OpenOptionsVfs {
                create: true,
                dsync: false,
            },
        )
        .map_err(io_err(&tmp))?;
    f.set_len(0).map_err(io_err(&tmp))?;
    let mut at = 0u64;
    let n = write(&mut |b| {
        f.write_at(b, at).map_err(io_err(&tmp))?;
        at += b.len() as u64;
        Ok(())
    })?;
    f.sync_data().map_err(io_err(&tmp))?;
    drop(f);
    vfs.rename(&tmp, path).map_err(io_err(path))?;
    vfs.sync_dir(path.parent().unwrap_or(Path::new(".")))
        .map_err(io_err(path))?;
    Ok(n)
}
