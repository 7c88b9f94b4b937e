//! Checkpoints (backups and restore are in `checkpoint/backup.rs`).
//!
//! A checkpoint image is the whole database at one LSN: catalog, settings,
//! rows and counters. Two images are kept, in `data/checkpoint-0.wdb` and
//! `data/checkpoint-1.wdb`: each checkpoint replaces the older one (through a
//! temporary file, a sync, a rename and a directory sync), so a crash leaves
//! the old or the new image, and a damaged newest image falls back to the
//! other one, whose log is kept for that reason. The log before the older
//! image's LSN can then be reused (SIMPLE) or kept until a log backup has it
//! (FULL). A `checkpoint.wdb` of an older build is read as a third candidate.
//!
//! ```text
//! "WALDNIMG" | version u32 | body | crc32c(body) u32
//! body: lsn, next_txid, settings, backup state, next ids,
//!       tables (definition, identity, row id, rows), sequences
//! ```
//!
//! Full backups and seeds are images of version 3, written and read a
//! block at a time (`image_stream.rs`); this whole encoding remains the base
//! store's catalog record and the first block of those.

use crate::codec::{self, put_ivar, put_var, Reader};
use crate::database::{Catalog, Database, SeqState};
use crate::error::{io_err, EngineError, Result};
use crate::mvcc::Csn;
use crate::schema::{DbSettings, RecoveryModel, SequenceDef, TableDef};
use crate::store::base::{BaseStore, TableWrite};
use crate::store::write::{Pace, StoreWrite};
use crate::table::Table;
use crate::types::{Key, Row};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use walden_log::{vfs::read_exact_at, CountingFile, FileStats, Lsn, OpenOptionsVfs, Vfs, VfsFile};

pub(crate) const IMAGE_MAGIC: &[u8; 8] = b"WALDNIMG";
/// 2: table definitions end with their indexes and CHECK constraints (see
/// `codec::put_table_def`).
const IMAGE_VERSION: u32 = 2;
pub(super) const LOG_BACKUP_MAGIC: &[u8; 8] = b"WALDNLBK";
/// Pieces a full backup is written in (see `image_stream.rs`).
pub(super) const BACKUP_CHUNK: usize = 1 << 20;
/// The two image slots; each checkpoint writes the one not holding the newest.
const SLOTS: [&str; 2] = ["checkpoint-0.wdb", "checkpoint-1.wdb"];
/// The single image of builds before the two slots.
const LEGACY_FILE: &str = "checkpoint.wdb";

/// A database's state as loaded from an image (then brought forward by redo).
#[derive(Default)]
pub struct Image {
    pub lsn: Lsn,
    pub next_txid: u64,
    pub settings: DbSettings,
    pub backup: BackupState,
    pub catalog: Catalog,
}

/// A table in an image: definition, next identity value, next row id, rows.
type ImageTable = (TableDef, i64, i64, Vec<(Key, Row)>);

/// A consistent copy of a database: its rows at one snapshot, and the LSN
/// redo starts from to bring them forward.
pub(crate) struct Snapshot {
    /// Where redo starts (the image's LSN).
    lsn: Lsn,
    next_txid: u64,
    settings: DbSettings,
    backup: BackupState,
    next_table_id: u32,
    next_seq_id: u32,
    tables: Vec<ImageTable>,
    seqs: Vec<(SequenceDef, SeqState)>,
    enums: Vec<crate::types::EnumType>,
}

/// What a copy takes from the catalog at its instant; the rows are read
/// afterwards at the copy's snapshot.
pub(crate) struct Parts {
    next_txid: u64,
    settings: DbSettings,
    backup: BackupState,
    next_table_id: u32,
    next_seq_id: u32,
    pub(crate) tables: Vec<(Arc<Table>, i64, i64)>,
    seqs: Vec<(SequenceDef, SeqState)>,
    enums: Vec<crate::types::EnumType>,
}

impl Parts {
    fn of(next_txid: u64, settings: DbSettings, backup: BackupState, cat: &Catalog) -> Parts {
        let mut tables: Vec<_> = cat
            .by_id
            .values()
            .map(|t| {
                (
                    t.clone(),
                    t.next_identity.load(Relaxed),
                    t.next_rowid.load(Relaxed),
                )
            })
            .collect();
        tables.sort_by_key(|t| t.0.id());
        let mut seqs: Vec<_> = cat
            .sequences
            .values()
            .map(|s| (s.def.clone(), *s.state.lock()))
            .collect();
        seqs.sort_by_key(|s| s.0.id);
        let mut enums: Vec<crate::types::EnumType> =
            cat.enums.values().map(|e| (**e).clone()).collect();
        enums.sort_by_key(|e| e.id);
        Parts {
            enums,
            next_txid,
            settings,
            backup,
            next_table_id: cat.next_table_id,
            next_seq_id: cat.next_seq_id,
            tables,
            seqs,
        }
    }

    /// The image of this catalog without rows: the base store's `meta`.
    pub(crate) fn header(&self, lsn: Lsn) -> Vec<u8> {
        Snapshot {
            lsn,
            next_txid: self.next_txid,
            settings: self.settings.clone(),
            backup: self.backup,
            next_table_id: self.next_table_id,
            next_seq_id: self.next_seq_id,
            tables: self
                .tables
                .iter()
                .map(|(t, ident, rowid)| (t.def.clone(), *ident, *rowid, Vec::new()))
                .collect(),
            seqs: self.seqs.clone(),
            enums: self.enums.clone(),
        }
        .encode()
    }
}

impl Snapshot {
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        put_var(&mut body, self.lsn);
        put_var(&mut body, self.next_txid);
        codec::put_settings(&mut body, &self.settings);
        put_var(&mut body, self.backup.full_backup_lsn.map_or(0, |l| l + 1));
        put_var(&mut body, self.backup.log_backup_lsn.map_or(0, |l| l + 1));
        put_var(&mut body, self.next_table_id as u64);
        put_var(&mut body, self.next_seq_id as u64);
        put_var(&mut body, self.tables.len() as u64);
        for (def, ident, rowid, rows) in &self.tables {
            codec::put_table_def(&mut body, def);
            put_ivar(&mut body, *ident);
            put_ivar(&mut body, *rowid);
            put_var(&mut body, rows.len() as u64);
            let hidden = def.primary_key.is_empty();
            for (k, r) in rows {
                if hidden {
                    codec::put_values(&mut body, k);
                }
                codec::put_values(&mut body, r);
            }
        }
        put_var(&mut body, self.seqs.len() as u64);
        for (def, st) in &self.seqs {
            codec::put_sequence(&mut body, def);
            put_ivar(&mut body, st.next);
            put_ivar(&mut body, st.reserved);
        }
        // Enum types last: an image without them (an older build's) ends
        // after the sequences.
        if !self.enums.is_empty() {
            put_var(&mut body, self.enums.len() as u64);
            for e in &self.enums {
                codec::put_enum(&mut body, e);
            }
        }
        let mut out = Vec::with_capacity(body.len() + 16);
        out.extend_from_slice(IMAGE_MAGIC);
        out.extend_from_slice(&IMAGE_VERSION.to_le_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        out
    }
}

/// Decodes an image of any version held in memory.
pub(crate) fn decode_image(bytes: &[u8], path: &Path) -> Result<Image> {
    if bytes.len() >= 12 && bytes[8..12] == crate::image_stream::STREAM_VERSION.to_le_bytes() {
        return crate::image_stream::read_image(&mut &bytes[..], path);
    }
    decode_whole(bytes, path)
}

/// Decodes an image of version 1 or 2 (one encoding of everything).
pub(crate) fn decode_whole(bytes: &[u8], path: &Path) -> Result<Image> {
    let bad = |d: &str| EngineError::CorruptDataFile {
        path: path.to_path_buf(),
        detail: d.to_string(),
    };
    if bytes.len() < 16 || &bytes[..8] != IMAGE_MAGIC {
        return Err(bad("not a Walden image (bad magic)"));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if !(1..=IMAGE_VERSION).contains(&version) {
        return Err(bad("unsupported image version"));
    }
    let body = &bytes[12..bytes.len() - 4];
    let crc = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap());
    if crc32c::crc32c(body) != crc {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader::new(body);
    let dec = |r: &mut Reader<'_>| -> Result<Image> {
        let lsn = r.var()?;
        let next_txid = r.var()?;
        let settings = codec::get_settings(r)?;
        let opt = |v: u64| (v > 0).then(|| v - 1);
        let backup = BackupState {
            full_backup_lsn: opt(r.var()?),
            log_backup_lsn: opt(r.var()?),
        };
        let mut catalog = Catalog {
            next_table_id: r.var()? as u32,
            next_seq_id: r.var()? as u32,
            ..Catalog::default()
        };
        for _ in 0..r.var()? {
            let def = codec::get_table_def(r, version >= 2)?;
            let t = Table::new(def);
            t.next_identity.store(r.ivar()?, Relaxed);
            t.next_rowid.store(r.ivar()?, Relaxed);
            for _ in 0..r.var()? {
                load_row(&t, r)?;
            }
            catalog.add_table(Arc::new(t));
        }
        for _ in 0..r.var()? {
            let def = codec::get_sequence(r)?;
            let next = r.ivar()?;
            let reserved = r.ivar()?;
            // Values up to the reservation may have been used after the image.
            let _ = next;
            catalog.add_sequence(
                def,
                SeqState {
                    next: reserved,
                    reserved,
                },
            );
        }
        if !r.is_empty() {
            for _ in 0..r.var()? {
                catalog.put_enum(codec::get_enum(r)?);
            }
        }
        Ok(Image {
            lsn,
            next_txid,
            settings,
            backup,
            catalog,
        })
    };
    dec(&mut r).map_err(|e| bad(&e.to_string()))
}

/// Reads one row of `t` from an image (its hidden key first, if it has one)
/// and loads it.
pub(crate) fn load_row(t: &Table, r: &mut Reader<'_>) -> Result<()> {
    let k: Option<Key> = if t.has_hidden_key() {
        Some(r.values()?.into_boxed_slice())
    } else {
        None
    };
    let row: Row = Arc::from(r.values()?);
    if row.len() != t.def.columns.len() {
        return Err(EngineError::Data(format!(
            "a row of table {} has {} values for {} columns",
            t.def.name,
            row.len(),
            t.def.columns.len()
        )));
    }
    let k = match k {
        Some(k) => k,
        None => t.key_of(&row).ok_or_else(|| {
            EngineError::Data(format!("a row of table {} has no key", t.def.name))
        })?,
    };
    t.load_row(k, row);
    Ok(())
}

/// Writes a file atomically (temporary file, sync, rename, directory sync),
/// counting the writes in `stats`.
pub(super) fn write_atomic(
    vfs: &dyn Vfs,
    path: &Path,
    bytes: &[u8],
    stats: &Arc<FileStats>,
) -> Result<()> {
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
    let f = CountingFile::new(f, stats.clone());
    f.set_len(0).map_err(io_err(&tmp))?;
    for (i, chunk) in bytes.chunks(1 << 20).enumerate() {
        f.write_at(chunk, (i << 20) as u64).map_err(io_err(&tmp))?;
    }
    f.sync_data().map_err(io_err(&tmp))?;
    drop(f);
    vfs.rename(&tmp, path).map_err(io_err(path))?;
    vfs.sync_dir(path.parent().unwrap_or(Path::new(".")))
        .map_err(io_err(path))?;
    stats.size_on_disk_bytes.store(bytes.len() as u64, Relaxed);
    Ok(())
}

pub(super) fn read_all(vfs: &dyn Vfs, path: &Path, stats: &Arc<FileStats>) -> Result<Vec<u8>> {
    let f = vfs
        .open(path, OpenOptionsVfs::default())
        .map_err(io_err(path))?;
    let f = CountingFile::new(f, stats.clone());
    let len = f.len().map_err(io_err(path))? as usize;
    let mut buf = vec![0u8; len];
    read_exact_at(&f, &mut buf, 0).map_err(io_err(path))?;
    Ok(buf)
}

/// Writes `image` as the base store's first checkpoint (a new database,
/// a restored one, or a secondary's seed).
pub(crate) fn write_image(
    vfs: &dyn Vfs,
    data_dir: &Path,
    image: &Image,
    stats: &Arc<FileStats>,
) -> Result<()> {
    // Written once and dropped: no reads through it, a small cache.
    let once = crate::store::StorageConfig {
        read_through: false,
        cache_bytes: 16 << 20,
    };
    let store = BaseStore::open(vfs, data_dir, stats, once)?;
    let parts = Parts::of(
        image.next_txid,
        image.settings.clone(),
        image.backup,
        &image.catalog,
    );
    let tables: Vec<TableWrite> = parts
        .tables
        .iter()
        .map(|(t, _, _)| TableWrite::whole(t.clone()))
        .collect();
    store.write(&parts.header(image.lsn), &tables, Csn::MAX, &mut |_| {})?;
    Ok(())
}

/// Evictions of at least this many rows hand freed memory back to the
/// operating system.
const TRIM_AFTER_EVICTED: usize = 4096;

/// Returns the allocator's free pages to the operating system: without it,
/// glibc keeps the memory of evicted rows mapped, and a server that loaded
/// a large table stays at that size after the checkpoint moved it to the
/// store.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it takes the
    // allocator's own locks and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Removes the image files of builds before the base store, once the store
/// holds a newer checkpoint.
fn remove_images(vfs: &dyn Vfs, data_dir: &Path) -> Result<()> {
    let mut removed = false;
    for name in [SLOTS[0], SLOTS[1], LEGACY_FILE] {
        let p = data_dir.join(name);
        if vfs.exists(&p).map_err(io_err(&p))? {
            vfs.remove_file(&p).map_err(io_err(&p))?;
            removed = true;
        }
    }
    if removed {
        vfs.sync_dir(data_dir).map_err(io_err(data_dir))?;
    }
    Ok(())
}

/// What one checkpoint writes to the base store, captured at one instant:
/// the catalog (an image without rows), and each table's changes since the
/// last checkpoint, read at `snapshot`.
struct Cut {
    /// Where redo starts.
    lsn: Lsn,
    /// The log end at the capture: harden through it before writing.
    through: Lsn,
    header: Vec<u8>,
    snapshot: crate::mvcc::Snapshot,
    tables: Vec<TableWrite>,
}

/// Checks an image's frame and checksum and returns its LSN, without
/// building its tables.
fn peek_lsn(bytes: &[u8], path: &Path) -> Result<Lsn> {
    let bad = |d: &str| EngineError::CorruptDataFile {
        path: path.to_path_buf(),
        detail: d.to_string(),
    };
    if bytes.len() < 16 || &bytes[..8] != IMAGE_MAGIC {
        return Err(bad("not a Walden image (bad magic)"));
    }
    let body = &bytes[12..bytes.len() - 4];
    let crc = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap());
    if crc32c::crc32c(body) != crc {
        return Err(bad("checksum mismatch"));
    }
    Reader::new(body).var().map_err(|e| bad(&e.to_string()))
}

/// The images found at open: the one to recover from and what else is known.
pub(crate) struct Loaded {
    pub image: Image,
    /// LSN of the other valid image, if any (its log is kept).
    pub other_lsn: Option<Lsn>,
    /// Highest LSN of any valid image (the log must reach it).
    pub max_lsn: Lsn,
    /// Images that could not be used, with why.
    pub damaged: Vec<String>,
}

/// Loads the newest valid image, falling back to an older one when the
/// newest is damaged.
pub(crate) fn load_newest(
    vfs: &dyn Vfs,
    data_dir: &Path,
    stats: &Arc<FileStats>,
) -> Result<Loaded> {
    let mut found: Vec<(usize, Lsn, Vec<u8>)> = Vec::new();
    let mut damaged = Vec::new();
    let names = [SLOTS[0], SLOTS[1], LEGACY_FILE];
    for (slot, name) in names.iter().enumerate() {
        let path = data_dir.join(name);
        if !vfs.exists(&path).map_err(io_err(&path))? {
            continue;
        }
        let mut bytes = read_all(vfs, &path, stats)?;
        let mut peeked = peek_lsn(&bytes, &path);
        if peeked.is_err() {
            // Once more before falling back: the error may be the read's.
            bytes = read_all(vfs, &path, stats)?;
            peeked = peek_lsn(&bytes, &path);
        }
        match peeked {
            Ok(lsn) => found.push((slot, lsn, bytes)),
            Err(e) => damaged.push(e.to_string()),
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.1));
    let max_lsn = found.first().map_or(0, |f| f.1);
    let mut last_err = None;
    for i in 0..found.len() {
        let (slot, _, bytes) = &found[i];
        let path = data_dir.join(names[*slot]);
        match decode_image(bytes, &path) {
            Ok(image) => {
                stats.size_on_disk_bytes.store(bytes.len() as u64, Relaxed);
                let other_lsn = found
                    .iter()
                    .enumerate()
                    .find(|(j, f)| *j != i && f.0 < 2)
                    .map(|(_, f)| f.1);
                return Ok(Loaded {
                    image,
                    other_lsn,
                    max_lsn,
                    damaged,
                });
            }
            Err(e) => {
                damaged.push(e.to_string());
                last_err = Some(e);
            }
        }
    }
    Err(last_err.unwrap_or_else(|| EngineError::CorruptDataFile {
        path: data_dir.to_path_buf(),
        detail: if damaged.is_empty() {
            "no checkpoint image exists".into()
        } else {
            format!("no usable checkpoint image: {}", damaged.join("; "))
        },
    }))
}

/// The longest pause between two batches of a spread checkpoint.
const MAX_PAUSE: Duration = Duration::from_millis(200);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What a checkpoint or backup did.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointInfo {
    pub lsn: Lsn,
    /// Bytes written to the data file (for an image: its size).
    pub bytes: u64,
    pub elapsed: Duration,
    /// Log segments made reusable.
    pub segments_released: usize,
}

/// The checkpointer's bookkeeping: where the base store stands in the log
/// and when it last moved.
pub(crate) struct Checkpoints {
    /// Redo start of the last checkpoint (the base store's commit).
    pub(crate) lsn: AtomicU64,
    /// Redo start of the checkpoint before the last: the base store's
    /// previous commit, whose log is kept until the next checkpoint.
    pub(crate) prior_lsn: AtomicU64,
    /// Log file bytes written when the last checkpoint was taken.
    pub(crate) log_written_at: AtomicU64,
    pub(crate) last: Mutex<Instant>,
    /// One checkpoint or backup at a time.
    pub(crate) lock: Mutex<()>,
}

impl Checkpoints {
    pub(crate) fn new(lsn: Lsn, prior_lsn: Lsn) -> Self {
        Checkpoints {
            lsn: AtomicU64::new(lsn),
            prior_lsn: AtomicU64::new(prior_lsn),
            log_written_at: AtomicU64::new(0),
            last: Mutex::new(Instant::now()),
            lock: Mutex::new(()),
        }
    }
}

impl Database {
    /// A copy's start while commits go on (see `inflight.rs`): the gate is
    /// held shared only for the instant of the capture (it keeps DDL out);
    /// the rows are read afterwards at the captured snapshot, which the
    /// capture keeps open until it is dropped.
    pub(crate) fn capture_parts(&self) -> (crate::inflight::Capture, Parts) {
        let _gate = self.txns.gate.read();
        let cap = self.txns.inflight.capture(&self.txns.vis, &self.log, || {});
        // Without open transactions' DDL (see `txn/ddl.rs`).
        let cat = self.image_catalog();
        let parts = Parts::of(
            self.txns.next_txid.load(Relaxed),
            self.settings(),
            *self.backup.lock(),
            &cat,
        );
        (cap, parts)
    }

    /// Streams the image of a capture to `emit` (after hardening the log
    /// through the capture's end: the image may hold delayed commits, and
    /// nothing may use them before their log is safe). `begin` learns the
    /// image's LSN before the first byte. Returns the LSN and the size.
    pub(crate) fn stream_image(
        &self,
        chunk: usize,
        waits: walden_log::WaitSinks<'_>,
        begin: &mut dyn FnMut(Lsn) -> Result<()>,
        emit: crate::image_stream::Emit<'_>,
    ) -> Result<(Lsn, u64)> {
        let (cap, parts) = self.capture_parts();
        self.log.wait_hardened(cap.log_end, waits)?;
        let lsn = cap.redo_start;
        begin(lsn)?;
        let horizon = self.txns.vis.horizon();
        let n = crate::image_stream::write_image(
            &parts,
            lsn,
            cap.snapshot.csn(),
            horizon,
            chunk,
            emit,
        )?;
        drop(cap);
        Ok((lsn, n))
    }

    /// A checkpoint's cut while commits go on: the changed keys are taken
    /// at the capture's instant, so they are exactly the commits at or below
    /// its snapshot, and read afterwards with no lock held.
    fn cut_online(&self) -> Cut {
        let _gate = self.txns.gate.read();
        // The gate keeps DDL out: this list stays the catalog's.
        // Without open transactions' DDL (see `txn/ddl.rs`).
        let image = self.image_catalog();
        let tables: Vec<Arc<Table>> = image.by_id.values().cloned().collect();
        let mut writes = Vec::new();
        let cap = self.txns.inflight.capture(&self.txns.vis, &self.log, || {
            writes = tables.iter().cloned().map(TableWrite::take).collect();
        });
        let parts = Parts::of(
            self.txns.next_txid.load(Relaxed),
            self.settings(),
            *self.backup.lock(),
            &image,
        );
        Cut {
            lsn: cap.redo_start,
            through: cap.log_end,
            header: parts.header(cap.redo_start),
            snapshot: cap.snapshot,
            tables: writes,
        }
    }

    /// A secondary's cut: only between transactions, with its redo stopped.
    fn cut_between_transactions(&self) -> Option<Cut> {
        let _gate = self.txns.gate.write();
        let lsn = self.replica_checkpoint_lsn()?;
        let cat = self.catalog.read();
        let (snapshot, tables) = {
            let _publish = self.txns.vis.hold_publish();
            let tables: Vec<TableWrite> =
                cat.by_id.values().cloned().map(TableWrite::take).collect();
            (self.txns.vis.snapshot(), tables)
        };
        let parts = Parts::of(
            self.txns.next_txid.load(Relaxed),
            self.settings(),
            *self.backup.lock(),
            &cat,
        );
        Some(Cut {
            lsn,
            through: lsn,
            header: parts.header(lsn),
            snapshot,
            tables,
        })
    }

    /// Hardens the log through the cut (the WAL rule: a delayed commit the
    /// log could still lose must not reach the store) and commits it to the
    /// base store. On failure the changes go back to their tables for the
    /// next checkpoint.
    fn write_cut(&self, cut: Cut, pace: Pace<'_>) -> Result<StoreWrite> {
        let t0 = Instant::now();
        let horizon = self.txns.vis.horizon();
        for tw in &cut.tables {
            tw.table.prune(horizon);
        }
        let t1 = Instant::now();
        let written = self
            .log
            .wait_hardened(cut.through, &[])
            .map_err(EngineError::from)
            .and_then(|_| {
                self.store
                    .write(&cut.header, &cut.tables, cut.snapshot.csn(), pace)
            });
        let t2 = Instant::now();
        if written.is_err() {
            for tw in cut.tables {
                tw.restore();
            }
            return written;
        }
        // The store's new commit answers for what it holds: those rows can
        // leave memory.
        let mut evicted = 0;
        if self.store.reads_through() {
            let upto = cut.snapshot.csn();
            drop(cut.snapshot);
            evicted = cut
                .tables
                .iter()
                .map(|tw| tw.table.evict(&self.txns.vis, upto))
                .sum();
            self.counters
                .rows_evicted
                .fetch_add(evicted as u64, Relaxed);
            if evicted >= TRIM_AFTER_EVICTED {
                release_free_memory();
            }
        }
        let w = written?;
        // As PostgreSQL's log_checkpoints: where a checkpoint's time went.
        tracing::info!(
            database = %self.name,
            rows = w.rows,
            bytes = w.bytes,
            commits = w.commits,
            evicted,
            prune_ms = ms(t1 - t0),
            write_ms = ms(w.write),
            commit_ms = ms(w.commit),
            paused_ms = ms(w.paused),
            wait_log_ms = ms((t2 - t1).saturating_sub(w.write + w.commit + w.paused)),
            evict_ms = ms(t2.elapsed()),
            "checkpoint written"
        );
        Ok(w)
    }

    /// How far back the log must be kept.
    fn retention_lsn(&self, checkpoint: Lsn) -> Lsn {
        let b = *self.backup.lock();
        // Log a secondary still needs stays.
        let checkpoint = checkpoint.min(self.replica_retention());
        match (
            self.settings().recovery_model,
            b.full_backup_lsn,
            b.log_backup_lsn,
        ) {
            (RecoveryModel::Full, Some(_), Some(l)) => checkpoint.min(l),
            _ => checkpoint,
        }
    }

    /// Writes what changed since the last checkpoint to the base store, so
    /// the log before the new redo start can be reused (SIMPLE) or kept
    /// only until backed up (FULL). At once, as `CHECKPOINT` asks.
    pub fn checkpoint(&self) -> Result<CheckpointInfo> {
        self.checkpoint_paced(&mut |_| {})
    }

    /// The background checkpointer's: pauses after each batch as long as
    /// the batch took, so a checkpoint takes at most about half of a core
    /// and of the disk's time while commits go on (PostgreSQL spreads its
    /// checkpoints with `checkpoint_completion_target` likewise).
    pub(crate) fn checkpoint_spread(&self) -> Result<CheckpointInfo> {
        self.checkpoint_paced(&mut |took| std::thread::sleep(took.min(MAX_PAUSE)))
    }

    fn checkpoint_paced(&self, pace: Pace<'_>) -> Result<CheckpointInfo> {
        let _one = self.checkpoints.lock.lock();
        let t0 = Instant::now();
        let cut = if self.is_secondary() {
            self.cut_between_transactions()
        } else {
            Some(self.cut_online())
        };
        let Some(cut) = cut else {
            // A secondary between a transaction's parts: try again later.
            return Ok(CheckpointInfo {
                lsn: self.checkpoints.lsn.load(Relaxed),
                bytes: 0,
                elapsed: t0.elapsed(),
                segments_released: 0,
            });
        };
        let lsn = cut.lsn;
        let StoreWrite {
            bytes,
            rows,
            commits,
            ..
        } = self.write_cut(cut, pace)?;
        self.counters.checkpoint_bytes.fetch_add(bytes, Relaxed);
        self.counters.checkpoint_rows.fetch_add(rows, Relaxed);
        self.counters.checkpoint_commits.fetch_add(commits, Relaxed);
        let previous = self.checkpoints.lsn.load(Relaxed);
        self.checkpoints.prior_lsn.store(previous, Relaxed);
        self.checkpoints.lsn.store(lsn, Relaxed);
        self.write_control(false)?;
        remove_images(&*self.vfs, &Database::data_dir(&self.dir))?;
        self.checkpoints.log_written_at.store(
            self.log_file_stats().num_of_bytes_written.load(Relaxed),
            Relaxed,
        );
        *self.checkpoints.last.lock() = Instant::now();
        // The store's previous commit is redb's fallback: keep its log.
        let released = self.log.release_before(self.retention_lsn(previous))?;
        self.counters.checkpoints.fetch_add(1, Relaxed);
        Ok(CheckpointInfo {
            lsn,
            bytes,
            elapsed: t0.elapsed(),
            segments_released: released,
        })
    }
}

mod backup;

pub(crate) use backup::restore_image;
pub use backup::{BackupInfo, BackupState};

#[cfg(test)]
mod tests;
