//! Checkpoint images: the whole database at one LSN (catalog, settings,
//! rows and counters) in one checksummed frame. Builds before the base
//! store kept two, in `data/checkpoint-0.wdb` and `data/checkpoint-1.wdb`:
//! each checkpoint replaced the older one (through a temporary file, a
//! sync, a rename and a directory sync), so a crash left the old or the
//! new image, and a damaged newest image fell back to the other one. They
//! are still read at open (and a `checkpoint.wdb` of an older build as a
//! third candidate), written into the store, then removed.
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

use super::BackupState;
use crate::codec::{self, put_ivar, put_var, Reader};
use crate::database::{Catalog, SeqState};
use crate::error::{io_err, EngineError, Result};
use crate::mvcc::Csn;
use crate::schema::{DbSettings, SequenceDef, TableDef};
use crate::store::base::{BaseStore, TableWrite};
use crate::table::Table;
use crate::types::{Key, Row};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
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
    /// Commit records ending at or below it are in the image: redo skips
    /// them (`inflight.rs`). Equal to `lsn` in images of older builds.
    pub commit_floor: Lsn,
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
    /// See [`Image::commit_floor`].
    commit_floor: Lsn,
    next_txid: u64,
    settings: DbSettings,
    backup: BackupState,
    next_table_id: u32,
    next_seq_id: u32,
    tables: Vec<ImageTable>,
    seqs: Vec<(SequenceDef, SeqState)>,
    enums: Vec<crate::types::EnumType>,
    views: Vec<crate::view::ViewDef>,
    comments: Vec<(crate::comment::CommentOn, Arc<str>)>,
    schemas: Vec<crate::namespace::SchemaDef>,
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
    views: Vec<crate::view::ViewDef>,
    comments: Vec<(crate::comment::CommentOn, Arc<str>)>,
    schemas: Vec<crate::namespace::SchemaDef>,
}

impl Parts {
    pub(super) fn of(
        next_txid: u64,
        settings: DbSettings,
        backup: BackupState,
        cat: &Catalog,
    ) -> Parts {
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
        let mut views: Vec<crate::view::ViewDef> =
            cat.views.values().map(|v| (**v).clone()).collect();
        views.sort_by_key(|v| v.id);
        Parts {
            enums,
            views,
            comments: cat.comments(),
            schemas: {
                let mut s: Vec<_> = cat.schemas.values().map(|s| (**s).clone()).collect();
                s.sort_by_key(|s| s.id);
                s
            },
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
    pub(crate) fn header(&self, lsn: Lsn, commit_floor: Lsn) -> Vec<u8> {
        Snapshot {
            lsn,
            commit_floor,
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
            views: self.views.clone(),
            comments: self.comments.clone(),
            schemas: self.schemas.clone(),
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
        // Enum types, then views, then comments, then schemas, last: an
        // image without them (an older build's) ends after the sequences,
        // or after the enum types, the views or the comments.
        // them (an older build's) ends after the sequences, or after the
        // enum types, or after the views.
        // The commit floor comes last of all, after every list (empty ones
        // too); an image without it has its floor at its LSN.
        let floor = self.commit_floor > self.lsn;
        let schemas = !self.schemas.is_empty() || floor;
        let comments = !self.comments.is_empty() || schemas;
        if !self.enums.is_empty() || !self.views.is_empty() || comments {
            put_var(&mut body, self.enums.len() as u64);
            for e in &self.enums {
                codec::put_enum(&mut body, e);
            }
        }
        if !self.views.is_empty() || comments {
            put_var(&mut body, self.views.len() as u64);
            for v in &self.views {
                crate::view::put_view(&mut body, v);
            }
        }
        if comments {
            put_var(&mut body, self.comments.len() as u64);
            for (on, text) in &self.comments {
                crate::comment::put_comment(&mut body, on, Some(text));
            }
        }
        if schemas {
            put_var(&mut body, self.schemas.len() as u64);
            for s in &self.schemas {
                crate::namespace::put_schema(&mut body, s);
            }
        }
        if floor {
            put_var(&mut body, self.commit_floor - self.lsn);
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
            let state = Catalog::resumed_state(&def, reserved);
            catalog.add_sequence(def, state);
        }
        if !r.is_empty() {
            for _ in 0..r.var()? {
                catalog.put_enum(codec::get_enum(r)?);
            }
        }
        if !r.is_empty() {
            for _ in 0..r.var()? {
                catalog.put_view(crate::view::get_view(r)?);
            }
        }
        if !r.is_empty() {
            for _ in 0..r.var()? {
                let (on, text) = crate::comment::get_comment(r)?;
                catalog.set_comment(on, text);
            }
        }
        if !r.is_empty() {
            for _ in 0..r.var()? {
                catalog.put_schema(crate::namespace::get_schema(r)?);
            }
        }
        let commit_floor = if r.is_empty() {
            lsn
        } else {
            lsn.checked_add(r.var()?)
                .ok_or_else(|| EngineError::Data("image's commit floor overflows".into()))?
        };
        Ok(Image {
            lsn,
            commit_floor,
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
        ..Default::default()
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
    store.write(
        &parts.header(image.lsn, image.commit_floor),
        &tables,
        Csn::MAX,
        &mut |_| {},
    )?;
    Ok(())
}

/// Removes the image files of builds before the base store, once the store
/// holds a newer checkpoint.
pub(super) fn remove_images(vfs: &dyn Vfs, data_dir: &Path) -> Result<()> {
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

#[cfg(test)]
mod tests;
