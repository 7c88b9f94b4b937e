//! Reading rows from the base store: what memory no longer holds (see
//! docs/design.md, "Slices", 6).
//!
//! After each checkpoint commits, the store's newest state becomes the
//! current *generation*: one redb read transaction's tables, opened once and
//! shared. It is swapped in before that checkpoint's eviction, so a key that
//! leaves memory is always in the generation a reader finds next. A reader
//! notes the generation's number before it looks in memory and checks it
//! after reading the store; if a swap came in between (and with it perhaps
//! an eviction), it reads again.

use crate::codec::Reader;
use crate::error::{EngineError, Result};
use crate::store::layer::LayerFile;
use crate::store::{encode_key, keycode::decode_key};
use crate::types::{Key, Row, Value};
use parking_lot::{Mutex, RwLock};
use redb::{ReadOnlyTable, ReadableDatabase, ReadableTableMetadata, TableHandle};
use std::collections::HashMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

type RawTable = ReadOnlyTable<&'static [u8], &'static [u8]>;

/// redb's page size (the store is opened with its default).
const PAGE_BYTES: u64 = 4096;

/// One checkpoint's tables, as readers see them.
struct Generation {
    number: u64,
    /// Stored tables by name (`t<id>` a table's rows, `i<id>_<index>` an
    /// index's entries), each with the identity of the in-memory versions
    /// (`VersionedRows::uid`) whose state it holds.
    tables: HashMap<String, (Arc<RawTable>, u64)>,
    /// Rows that live in a transaction's spill file (`layer.rs`) rather
    /// than the store, by the in-memory versions' uid: a table created or
    /// truncated by a large transaction, until a checkpoint writes it.
    layers: HashMap<u64, (Arc<RawTable>, Arc<LayerFile>)>,
}

/// The base store's current generation, shared by every table of a database.
pub(crate) struct StoreReads {
    path: PathBuf,
    current: RwLock<Arc<Generation>>,
    numbers: AtomicU64,
    /// Serializes the changes of generation (a checkpoint's swap, a
    /// layer's), each made from the one before.
    change: Mutex<()>,
}

impl std::fmt::Debug for StoreReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreReads")
            .field("path", &self.path)
            .finish()
    }
}

impl StoreReads {
    /// The generation of `db`'s newest commit; `owners` names, for each
    /// stored table, the rows it holds the state of.
    pub fn open(db: &redb::Database, path: &Path, owners: &HashMap<String, u64>) -> Result<Self> {
        let reads = StoreReads {
            path: path.to_path_buf(),
            current: RwLock::new(Arc::new(Generation {
                number: 0,
                tables: HashMap::new(),
                layers: HashMap::new(),
            })),
            numbers: AtomicU64::new(0),
            change: Mutex::new(()),
        };
        reads.swap(db, owners)?;
        Ok(reads)
    }

    /// Makes `db`'s newest commit the current generation. `owners` gives the
    /// rows each table written by that commit holds; tables it did not
    /// write keep their owner.
    pub fn swap(&self, db: &redb::Database, owners: &HashMap<String, u64>) -> Result<()> {
        let err = |e: redb::Error| crate::store::base::corrupt(&self.path, e);
        let _change = self.change.lock();
        let r = db.begin_read().map_err(|e| err(e.into()))?;
        let old = self.current.read().clone();
        let mut tables = HashMap::new();
        for h in r.list_tables().map_err(|e| err(e.into()))? {
            let name = h.name().to_string();
            let owner = owners
                .get(&name)
                .copied()
                .or_else(|| old.tables.get(&name).map(|(_, o)| *o));
            let Some(owner) = owner else { continue };
            let def = redb::TableDefinition::<&[u8], &[u8]>::new(&name);
            let t = r.open_table(def).map_err(|e| err(e.into()))?;
            tables.insert(name, (Arc::new(t), owner));
        }
        // A layer whose rows the store now holds (a checkpoint after the
        // commit wrote them, under the same uid) is read there from now on.
        let written: std::collections::HashSet<u64> = tables.values().map(|(_, o)| *o).collect();
        let layers = old
            .layers
            .iter()
            .filter(|(uid, _)| !written.contains(uid))
            .map(|(uid, l)| (*uid, l.clone()))
            .collect();
        self.install(tables, layers);
        Ok(())
    }

    fn install(
        &self,
        tables: HashMap<String, (Arc<RawTable>, u64)>,
        layers: HashMap<u64, (Arc<RawTable>, Arc<LayerFile>)>,
    ) {
        let number = self.numbers.fetch_add(1, Ordering::AcqRel) + 1;
        *self.current.write() = Arc::new(Generation {
            number,
            tables,
            layers,
        });
    }

    /// Reads the rows `uid` from `rows` of a spill file from now on (a new
    /// generation: readers that pinned the old one read again).
    pub(crate) fn set_layer(&self, uid: u64, rows: RawTable, file: Arc<LayerFile>) {
        let _change = self.change.lock();
        let old = self.current.read().clone();
        let mut layers = old.layers.clone();
        layers.insert(uid, (Arc::new(rows), file));
        self.install(old.tables.clone(), layers);
    }

    /// Forgets the layer of the rows `uid` (their transaction rolled back).
    pub(crate) fn drop_layer(&self, uid: u64) {
        let _change = self.change.lock();
        let old = self.current.read().clone();
        if !old.layers.contains_key(&uid) {
            return;
        }
        let mut layers = old.layers.clone();
        layers.remove(&uid);
        self.install(old.tables.clone(), layers);
    }

    fn generation(&self) -> Arc<Generation> {
        self.current.read().clone()
    }

    /// Bytes of the pages (leaves and branches) the stored table `name`
    /// takes in the newest commit, if it holds the state of the in-memory
    /// versions `uid` (a table truncated or rebuilt since has none yet).
    pub fn stored_bytes(&self, name: &str, uid: u64) -> Result<u64> {
        let gen = self.generation();
        let Some((t, owner)) = gen.tables.get(name) else {
            return Ok(0);
        };
        if *owner != uid {
            return Ok(0);
        }
        let st = t
            .stats()
            .map_err(|e| crate::store::base::corrupt(&self.path, e))?;
        Ok((st.leaf_pages() + st.branch_pages()) * PAGE_BYTES)
    }

    fn number(&self) -> u64 {
        self.current.read().number
    }
}

/// How a stored row's key is found: from its primary-key columns, or from
/// the stored key itself (a hidden row id, an index entry).
#[derive(Debug, Clone)]
pub(crate) enum KeyFrom {
    Columns(Vec<usize>),
    Stored,
}

/// One table's rows (or one index's entries) in the base store, for the
/// in-memory versions whose state it holds (`uid`).
#[derive(Debug)]
pub(crate) struct BaseRows {
    pub reads: Arc<StoreReads>,
    /// The stored table's name (see `Generation::tables`).
    pub table: String,
    /// What errors name: the SQL table (and index).
    pub name: String,
    pub uid: u64,
    pub key_from: KeyFrom,
    pub columns: usize,
}

/// A generation pinned for one read: check `still_current` after reading.
pub(crate) struct Pinned {
    gen: Arc<Generation>,
}

impl BaseRows {
    /// Pins the current generation (before memory is looked at).
    pub fn pin(&self) -> Pinned {
        Pinned {
            gen: self.reads.generation(),
        }
    }

    /// Whether no swap happened since `p` was pinned, so that what memory
    /// lacked then is in `p`'s generation.
    pub fn still_current(&self, p: &Pinned) -> bool {
        self.reads.number() == p.gen.number
    }

    fn table<'g>(&self, p: &'g Pinned) -> Result<Option<&'g RawTable>> {
        if let Some((t, _)) = p.gen.layers.get(&self.uid) {
            return Ok(Some(t));
        }
        match p.gen.tables.get(&self.table) {
            Some((t, owner)) if *owner == self.uid => Ok(Some(t)),
            // The table's rows were replaced (TRUNCATE, a rebuild) and the
            // store holds the new ones: this reader's rows are gone.
            Some(_) => Err(EngineError::SerializationFailure(
                "TRUNCATE or rebuild of the table",
            )),
            None => Ok(None),
        }
    }

    /// The stored row at `key` in `p`'s generation.
    pub fn get(&self, p: &Pinned, key: &[Value]) -> Result<Option<Row>> {
        let Some(t) = self.table(p)? else {
            return Ok(None);
        };
        let k = crate::store::key_bytes(key);
        let Some(v) = t.get(&k[..]).map_err(|e| self.err(e.into()))? else {
            return Ok(None);
        };
        let (_, row) = self.decode(&k, v.value())?;
        Ok(Some(row))
    }

    /// The stored rows with keys in `range` as one chunk of a walk reads
    /// them: up to `limit` rows from the range's start or (`reverse`) its
    /// end, in that order, up to the first key for which `more` is false.
    /// An entry whose encoded key is in `hidden` (memory's keys of the
    /// chunk, encoded, in the walk's order: memory's version wins there) is
    /// stepped over, not decoded and not counted (there are at most as
    /// many as memory's keys): a walk over keys deleted since the last
    /// checkpoint passes the rows they hide without decoding them. Returns
    /// the rows, and where the chunk was cut (`None`: no more entries in
    /// `range`), the last entry taken.
    pub fn chunk(
        &self,
        p: &Pinned,
        range: (Bound<&Key>, Bound<&Key>),
        limit: usize,
        reverse: bool,
        more: &dyn Fn(&Key) -> bool,
        hidden: &EncodedKeys,
    ) -> Result<StoredChunk> {
        let Some(t) = self.table(p)? else {
            return Ok((Vec::new(), None));
        };
        let enc = |b: Bound<&Key>| b.map(|k| crate::store::key_bytes(k));
        let (lo, hi) = (enc(range.0), enc(range.1));
        let bounds = (lo.as_ref().map(|v| &v[..]), hi.as_ref().map(|v| &v[..]));
        let entries = t.range::<&[u8]>(bounds).map_err(|e| self.err(e.into()))?;
        let entries: Box<dyn Iterator<Item = _>> = if reverse {
            Box::new(entries.rev())
        } else {
            Box::new(entries)
        };
        let mut out = Vec::new();
        // The last entry taken: a decoded key, or a place in `hidden`.
        let mut last = None;
        let mut h = 0;
        for entry in entries {
            let (k, v) = entry.map_err(|e| self.err(e.into()))?;
            let k = k.value();
            // `hidden` is in the walk's order, as the entries are.
            while h < hidden.len() && comes_before(hidden.get(h), k, reverse) {
                h += 1;
            }
            if h < hidden.len() && hidden.get(h) == k {
                last = Some(Taken::Hidden(h));
                h += 1;
                continue;
            }
            if out.len() == limit {
                return Ok((out, last));
            }
            let (key, row) = self.decode(k, v.value())?;
            if !more(&key) {
                return Ok((out, None));
            }
            last = Some(Taken::Key(key.clone()));
            out.push((key, row));
        }
        Ok((out, None))
    }

    /// As [`BaseRows::chunk`] going forward to the end of `range`, but
    /// copying the rows' bytes into `out` (cleared first) rather than
    /// decoding them: a scan that visits each row once decodes it into one
    /// buffer (`decode_values`). Returns whether there may be more rows
    /// after them.
    pub fn raw_range(
        &self,
        p: &Pinned,
        range: (Bound<&Key>, Bound<&Key>),
        limit: usize,
        out: &mut RawRows,
    ) -> Result<bool> {
        out.clear();
        let Some(t) = self.table(p)? else {
            return Ok(false);
        };
        let enc = |b: Bound<&Key>| b.map(|k| crate::store::key_bytes(k));
        let (lo, hi) = (enc(range.0), enc(range.1));
        let bounds = (lo.as_ref().map(|v| &v[..]), hi.as_ref().map(|v| &v[..]));
        for entry in t.range::<&[u8]>(bounds).map_err(|e| self.err(e.into()))? {
            if out.len() == limit {
                return Ok(true);
            }
            let (k, v) = entry.map_err(|e| self.err(e.into()))?;
            out.push(k.value(), v.value());
        }
        Ok(false)
    }

    /// A stored row's values (checked against its checksum) into `row`.
    pub fn decode_values(&self, k: &[u8], v: &[u8], row: &mut Vec<Value>) -> Result<()> {
        decode_values(&self.reads.path, &self.name, self.columns, k, v, row)
    }

    /// The key of a stored row whose values are `row` and whose encoded
    /// key is `k` (the row was checked when it was decoded).
    pub fn key_of(&self, k: &[u8], row: &[Value]) -> Result<Key> {
        match &self.key_from {
            KeyFrom::Stored => {
                decode_key(k)
                    .map(Vec::into_boxed_slice)
                    .map_err(|e| EngineError::CorruptDataFile {
                        path: self.reads.path.clone(),
                        detail: format!("table {}: a row id does not decode: {e}", self.name),
                    })
            }
            KeyFrom::Columns(cols) => Ok(cols.iter().map(|&i| row[i].clone()).collect()),
        }
    }

    /// Rows the store holds for this table in `p`'s generation.
    pub fn len(&self, p: &Pinned) -> Result<u64> {
        match self.table(p)? {
            Some(t) => t.len().map_err(|e| self.err(e.into())),
            None => Ok(0),
        }
    }

    fn err(&self, e: redb::Error) -> EngineError {
        crate::store::base::corrupt(&self.reads.path, e)
    }

    /// A stored row, checked against its checksum.
    pub fn decode(&self, k: &[u8], v: &[u8]) -> Result<(Key, Row)> {
        decode_row(
            &self.reads.path,
            &self.name,
            &self.key_from,
            self.columns,
            k,
            v,
        )
    }
}

thread_local! {
    static DECODED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Stored rows decoded on this thread so far: how many rows a read took
/// from the store (what tests of the read paths measure).
pub fn rows_decoded() -> u64 {
    DECODED.with(|d| d.get())
}

/// Decodes a stored row (value: the row's values and a CRC-32C over the
/// encoded key and values); its key comes from `key_from`.
pub(crate) fn decode_row(
    path: &Path,
    table: &str,
    key_from: &KeyFrom,
    columns: usize,
    k: &[u8],
    v: &[u8],
) -> Result<(Key, Row)> {
    let bad = |d: String| EngineError::CorruptDataFile {
        path: path.to_path_buf(),
        detail: format!("table {table}: {d}"),
    };
    let mut values = Vec::new();
    decode_values(path, table, columns, k, v, &mut values)?;
    let row: Row = Arc::from(values);
    let key: Key = match key_from {
        KeyFrom::Stored => decode_key(k)
            .map_err(|e| bad(format!("a row id does not decode: {e}")))?
            .into_boxed_slice(),
        KeyFrom::Columns(cols) => cols
            .iter()
            .map(|&i| row.get(i).cloned())
            .collect::<Option<Key>>()
            .ok_or_else(|| bad("a row has no key".into()))?,
    };
    Ok((key, row))
}

/// A stored row's values into `row`, checked against the row's checksum
/// and the table's column count.
fn decode_values(
    path: &Path,
    table: &str,
    columns: usize,
    k: &[u8],
    v: &[u8],
    row: &mut Vec<Value>,
) -> Result<()> {
    let bad = |d: String| EngineError::CorruptDataFile {
        path: path.to_path_buf(),
        detail: format!("table {table}: {d}"),
    };
    DECODED.with(|d| d.set(d.get() + 1));
    // redb checks page checksums only at open; this catches a damaged read
    // (or file) later.
    let Some(n) = v.len().checked_sub(4) else {
        return Err(bad("a row is shorter than its checksum".into()));
    };
    let (v, crc) = v.split_at(n);
    if row_crc(k, v) != u32::from_le_bytes(crc.try_into().unwrap()) {
        return Err(bad("a row's checksum does not match".into()));
    }
    Reader::new(v)
        .values_into(row)
        .map_err(|e| bad(format!("a row does not decode: {e}")))?;
    if row.len() != columns {
        return Err(bad(format!(
            "a row has {} values for {columns} columns",
            row.len()
        )));
    }
    Ok(())
}

/// Stored rows' key and value bytes, copied out of the store's pages into
/// one buffer that a scan reuses from chunk to chunk.
#[derive(Debug, Default)]
pub(crate) struct RawRows {
    bytes: Vec<u8>,
    /// Per row: where its key starts, where its value starts, where it ends.
    rows: Vec<(usize, usize, usize)>,
}

impl RawRows {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.rows.clear();
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    fn push(&mut self, k: &[u8], v: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(k);
        self.bytes.extend_from_slice(v);
        self.rows.push((start, start + k.len(), self.bytes.len()));
    }

    /// Row `i`'s encoded key and stored value.
    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let (k, v, end) = self.rows[i];
        (&self.bytes[k..v], &self.bytes[v..end])
    }
}

/// A chunk's stored rows, and the last entry it took when it was cut.
pub(crate) type StoredChunk = (Vec<(Key, Row)>, Option<Taken>);

/// The last stored entry a chunk took: its key, or, for one memory's
/// keys hide, its place among them.
pub(crate) enum Taken {
    Key(Key),
    Hidden(usize),
}

/// Encoded keys, one after another in one buffer (a chunk's memory keys,
/// compared with stored ones as bytes: the encoding orders as keys do).
#[derive(Debug, Default)]
pub(crate) struct EncodedKeys {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl EncodedKeys {
    pub fn push(&mut self, key: &[Value]) {
        encode_key(key, &mut self.bytes);
        self.ends.push(self.bytes.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// Whether encoded key `a` comes before `b` in a walk's order.
fn comes_before(a: &[u8], b: &[u8], reverse: bool) -> bool {
    if reverse {
        a > b
    } else {
        a < b
    }
}

/// A stored row's checksum covers its key too (a hidden row id is read
/// from the key).
pub(crate) fn row_crc(key: &[u8], value: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(key), value)
}

/// The stored form of a row: its values and their checksum.
pub(crate) fn encode_row(key: &[Value], row: &[Value], kbuf: &mut Vec<u8>, buf: &mut Vec<u8>) {
    kbuf.clear();
    encode_key(key, kbuf);
    buf.clear();
    crate::codec::put_values(buf, row);
    let crc = row_crc(kbuf, buf);
    buf.extend_from_slice(&crc.to_le_bytes());
}
