//! Reading a table's rows in key order, a chunk of keys per hold of the
//! table's lock: scans forward (all of a range, or while a test of the key
//! holds) and ordered walks either way, over memory and, once a checkpoint
//! attached it, the base store, memory's versions winning.

use super::{Chain, Csn, VersionedRows};
use crate::error::{EngineError, Result};
use crate::store::reads::{BaseRows, EncodedKeys, RawRows, Taken};
use crate::types::{Key, Row, Value};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BTreeMap;
use std::ops::Bound;

/// Rows scanned per hold of a table's read lock: a long scan lets commits
/// to the table in between chunks.
pub(super) const SCAN_CHUNK: usize = 1024;

/// A chunk of a scan: rows in key order, and where the next chunk starts
/// (`None`: the range is done).
pub(crate) type Chunk = (Vec<(Key, Row)>, Option<Bound<Key>>);

/// A memory entry of a merged scan: the row a snapshot sees (`None`: the
/// key is deleted or not yet visible, and hides a stored row).
type MemEntry = (Key, Option<Row>);

impl VersionedRows {
    /// Rows with keys in `range`, in key order, as a snapshot at `csn`
    /// sees them. The table's lock is taken per chunk of keys, so a long
    /// scan does not hold up commits; the snapshot keeps what it sees.
    pub fn scan_at(&self, range: (Bound<&Key>, Bound<&Key>), csn: Csn) -> Result<Vec<(Key, Row)>> {
        self.scan_while_at(range, csn, |_| true)
    }

    /// As `scan_at`, stopping at the first key for which `more` is false
    /// (an index scan of all entries starting with some values, whose upper
    /// end no key bound expresses). `more` must be a pure test of the key,
    /// true for the keys of a prefix of the range: it bounds the store's
    /// part of a chunk too, and may see a key more than once.
    pub fn scan_while_at(
        &self,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        more: impl Fn(&Key) -> bool,
    ) -> Result<Vec<(Key, Row)>> {
        let mut out = Vec::new();
        let mut lo = range.0.cloned();
        loop {
            let (rows, next) = self.chunk(
                (lo.as_ref(), range.1),
                csn,
                SCAN_CHUNK,
                SCAN_CHUNK,
                false,
                &more,
            )?;
            for (k, r) in rows {
                if !more(&k) {
                    return Ok(out);
                }
                out.push((k, r));
            }
            match next {
                Some(n) => lo = n,
                None => return Ok(out),
            }
        }
    }

    /// The first key in `range` a snapshot at `csn` sees (where a search
    /// ended, for SERIALIZABLE's tracking of what it read). Chunks start
    /// at two keys and grow, past keys the snapshot does not see.
    pub fn first_key_at(&self, range: (Bound<&Key>, Bound<&Key>), csn: Csn) -> Result<Option<Key>> {
        let mut lo = range.0.cloned();
        let mut n = 2;
        loop {
            if range_is_empty(lo.as_ref(), range.1) {
                return Ok(None);
            }
            let (rows, next) = self.chunk((lo.as_ref(), range.1), csn, n, n, false, &all)?;
            if let Some((k, _)) = rows.into_iter().next() {
                return Ok(Some(k));
            }
            match next {
                Some(b) => lo = b,
                None => return Ok(None),
            }
            n = (n * 4).min(SCAN_CHUNK);
        }
    }

    /// One chunk of a forward scan of `range` at `csn`: at most about
    /// [`SCAN_CHUNK`] rows, and where the next chunk starts (`None`: done).
    /// For a caller that writes what it reads as it goes (a checkpoint
    /// staging a table written whole).
    pub(crate) fn chunk_at(&self, range: (Bound<&Key>, Bound<&Key>), csn: Csn) -> Result<Chunk> {
        self.chunk(range, csn, SCAN_CHUNK, SCAN_CHUNK, false, &all)
    }

    /// Calls `f` with each row in `range`, in key order, as a snapshot at
    /// `csn` sees it, without copying keys: a chunk of rows is taken under
    /// the table's lock and visited after it is released (so `f` may read
    /// the table again). Rows from the store are decoded one at a time into
    /// one buffer as they are visited. Stops at `f`'s first error.
    pub fn for_each_at<E: From<EngineError>>(
        &self,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        mut f: impl FnMut(&[Value]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        self.for_each_keyed_at(range, csn, |v| f(v.row()))
    }

    /// As [`VersionedRows::for_each_at`], each row with its key, which a
    /// row from the store decodes only when asked ([`Visited::key`]).
    pub fn for_each_keyed_at<E: From<EngineError>>(
        &self,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        mut f: impl FnMut(&Visited<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut lo = range.0.cloned();
        let mut raw = RawChunk::default();
        let mut row = Vec::new();
        loop {
            let next = match self.base_at(csn) {
                Some(base) => {
                    let next = self.raw_chunk(base, (lo.as_ref(), range.1), csn, &mut raw)?;
                    raw.visit(base, &mut row, &mut f)?;
                    next
                }
                None => {
                    let (rows, next) = self.chunk(
                        (lo.as_ref(), range.1),
                        csn,
                        SCAN_CHUNK,
                        SCAN_CHUNK,
                        false,
                        &all,
                    )?;
                    for (k, r) in &rows {
                        f(&Visited::held(k, r))?;
                    }
                    next
                }
            };
            match next {
                Some(n) => lo = n,
                None => return Ok(()),
            }
        }
    }

    /// One chunk of a forward scan over memory and the store, as
    /// `merged_chunk` takes it, with the stored rows left as bytes in
    /// `raw`; returns where the next chunk starts (`None`: done).
    fn raw_chunk(
        &self,
        base: &BaseRows,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        raw: &mut RawChunk,
    ) -> Result<Option<Bound<Key>>> {
        loop {
            let p = base.pin();
            raw.mem.clear();
            let stop = take_keys(&self.map.read(), range, SCAN_CHUNK, false, &all, |k, c| {
                raw.mem.push((k.clone(), c.at(csn).cloned()))
            });
            let store_range = match stop.key() {
                Some(k) => (range.0, Bound::Excluded(k)),
                None => range,
            };
            let cut = base.raw_range(&p, store_range, SCAN_CHUNK, &mut raw.stored)?;
            if !base.still_current(&p) {
                continue;
            }
            // Compared as encoded keys with the stored rows' (the encoding
            // orders as keys do).
            raw.mem_keys.clear();
            raw.mem_keys
                .extend(raw.mem.iter().map(|(k, _)| crate::store::key_bytes(k)));
            if !cut {
                return Ok(stop.resume_at());
            }
            // A chunk cut short in the store ends at its last stored key;
            // memory's keys beyond it belong to the next chunk.
            let (k, v) = raw.stored.get(raw.stored.len() - 1);
            let keep = raw
                .mem_keys
                .iter()
                .take_while(|m| m.as_slice() <= k)
                .count();
            raw.mem.truncate(keep);
            raw.mem_keys.truncate(keep);
            let (last, _) = base.decode(k, v)?;
            return Ok(Some(Bound::Excluded(last)));
        }
    }
    /// One chunk of a scan from the start of `range` and where the next
    /// starts (`None`: the range is done), for a caller that walks a table
    /// a chunk at a time.
    pub(crate) fn scan_chunk_at(
        &self,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
    ) -> Result<Chunk> {
        self.chunk(range, csn, SCAN_CHUNK, SCAN_CHUNK, false, &all)
    }

    /// Calls `f` with each row in `range` as a snapshot at `csn` sees it,
    /// in key order or (`reverse`) the opposite, until `f` returns false:
    /// the ordered walk behind `ORDER BY ... LIMIT`. Chunks start small and
    /// grow, so a walk that stops after a few rows copies few; each is
    /// visited after the table's lock is released (`f` may read the table).
    /// The keys a chunk takes from memory grow with every chunk, the stored
    /// rows it decodes only once `f` has taken rows and asked for more: a
    /// walk past many deleted keys (each a marker in memory over its stored
    /// row) reaches the first live rows in a few chunks, and decodes few of
    /// them when it wants one.
    pub fn walk_at<E: From<EngineError>>(
        &self,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        reverse: bool,
        mut f: impl FnMut(&Key, &Row) -> std::result::Result<bool, E>,
    ) -> std::result::Result<(), E> {
        let (mut lo, mut hi) = (range.0.cloned(), range.1.cloned());
        let (mut n, mut decode) = (16, 16);
        loop {
            if range_is_empty(lo.as_ref(), hi.as_ref()) {
                return Ok(());
            }
            let (rows, next) =
                self.chunk((lo.as_ref(), hi.as_ref()), csn, n, decode, reverse, &all)?;
            for (k, r) in &rows {
                if !f(k, r)? {
                    return Ok(());
                }
            }
            match next {
                Some(b) if reverse => hi = b,
                Some(b) => lo = b,
                None => return Ok(()),
            }
            n = (n * 4).min(SCAN_CHUNK);
            if !rows.is_empty() {
                decode = (decode * 4).min(SCAN_CHUNK);
            }
        }
    }

    /// One chunk of a walk over `range`: the rows a snapshot at `csn` sees
    /// among the next `n` keys from the range's start (or, `reverse`, its
    /// end), up to the first key for which `more` is false, decoding at
    /// most `decode` stored rows; and the bound the next chunk resumes at
    /// (the range's new start, or new end; `None`: the range is done).
    fn chunk<M: Fn(&Key) -> bool>(
        &self,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        n: usize,
        decode: usize,
        reverse: bool,
        more: &M,
    ) -> Result<Chunk> {
        loop {
            if let Some(base) = self.base_at(csn) {
                return self.merged_chunk(base, range, csn, n, decode, reverse, more);
            }
            let mut rows = Vec::new();
            let stop = take_keys(&self.map.read(), range, n, reverse, more, |k, c| {
                if let Some(r) = c.at(csn) {
                    rows.push((k.clone(), r.clone()));
                }
            });
            // A checkpoint attaches the store before it evicts: if it is
            // attached now, keys may have left memory during this chunk,
            // which is read again through the store.
            if self.base_at(csn).is_none() {
                return Ok((rows, stop.resume_at()));
            }
        }
    }

    /// `chunk` over memory and the store: memory's next `n` keys, the
    /// store's rows up to where memory's stopped (at most `decode` of them
    /// decoded, besides those memory's keys hide), merged in the walk's
    /// order, memory's version winning for keys it holds.
    #[allow(clippy::too_many_arguments)]
    fn merged_chunk(
        &self,
        base: &BaseRows,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        n: usize,
        decode: usize,
        reverse: bool,
        more: &dyn Fn(&Key) -> bool,
    ) -> Result<Chunk> {
        loop {
            let p = base.pin();
            let mut mem: Vec<MemEntry> = Vec::new();
            let stop = take_keys(&self.map.read(), range, n, reverse, &more, |k, c| {
                mem.push((k.clone(), c.at(csn).cloned()))
            });
            // The store's part stops where memory's chunk stopped.
            let store_range = match stop.key() {
                Some(k) if reverse => (Bound::Excluded(k), range.1),
                Some(k) => (range.0, Bound::Excluded(k)),
                None => range,
            };
            // Memory's keys hide the stored rows under them: those are
            // stepped over without being decoded.
            let mut hidden = EncodedKeys::default();
            for (k, _) in &mem {
                hidden.push(k);
            }
            let (stored, last) = base.chunk(&p, store_range, decode, reverse, more, &hidden)?;
            if !base.still_current(&p) {
                continue;
            }
            // A chunk cut short in the store ends at its last stored key;
            // memory's keys beyond it belong to the next chunk.
            let (end, next) = match last {
                Some(last) => {
                    let last = match last {
                        Taken::Key(k) => k,
                        Taken::Hidden(h) => mem[h].0.clone(),
                    };
                    (Some(last.clone()), Some(Bound::Excluded(last)))
                }
                None => (None, stop.resume_at()),
            };
            if let Some(end) = &end {
                mem.retain(|(k, _)| if reverse { k >= end } else { k <= end });
            }
            return Ok((merge(mem, stored, reverse), next));
        }
    }

    /// Keys starting with `prefix` whose newest committed version is a row
    /// (a unique index's check, by a writer holding the prefix's lock).
    pub fn latest_with_prefix(&self, prefix: &[Value]) -> Result<Vec<Key>> {
        let lo: Key = prefix.into();
        Ok(self
            .scan_while_at((Bound::Included(&lo), Bound::Unbounded), Csn::MAX, |k| {
                k.starts_with(prefix)
            })?
            .into_iter()
            .map(|(k, _)| k)
            .collect())
    }
}

/// A chunk of a forward scan whose stored rows are still bytes (see
/// [`VersionedRows::for_each_at`]); reused from chunk to chunk.
#[derive(Default)]
struct RawChunk {
    mem: Vec<MemEntry>,
    /// `mem`'s keys, encoded as the store's are.
    mem_keys: Vec<Vec<u8>>,
    stored: RawRows,
}

impl RawChunk {
    /// Calls `f` with the chunk's rows in key order, memory's version
    /// winning for a key both hold; stored rows are decoded into `row`.
    fn visit<E: From<EngineError>>(
        &self,
        base: &BaseRows,
        row: &mut Vec<Value>,
        f: &mut impl FnMut(&Visited<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut m = 0;
        // Memory's entry `m`: its row, or nothing (a deletion, or a key
        // this snapshot does not see yet).
        let held = |m: usize| match &self.mem[m] {
            (k, Some(r)) => Some(Visited::held(k, r)),
            (_, None) => None,
        };
        for i in 0..self.stored.len() {
            let (k, v) = self.stored.get(i);
            while m < self.mem.len() && self.mem_keys[m].as_slice() < k {
                held(m).map_or(Ok(()), |h| f(&h))?;
                m += 1;
            }
            if m < self.mem.len() && self.mem_keys[m].as_slice() == k {
                held(m).map_or(Ok(()), |h| f(&h))?;
                m += 1;
                continue;
            }
            base.decode_values(k, v, row)?;
            f(&Visited {
                row,
                key: KeyOf::Stored(base, k),
            })?;
        }
        for m in m..self.mem.len() {
            held(m).map_or(Ok(()), |h| f(&h))?;
        }
        Ok(())
    }
}

/// A row a keyed scan visits (see [`VersionedRows::for_each_keyed_at`]).
pub struct Visited<'a> {
    row: &'a [Value],
    key: KeyOf<'a>,
}

enum KeyOf<'a> {
    /// A row memory holds, with its key.
    Held(&'a Key),
    /// A row from the store: its encoded key.
    Stored(&'a BaseRows, &'a [u8]),
}

impl<'a> Visited<'a> {
    pub(crate) fn held(key: &'a Key, row: &'a [Value]) -> Self {
        Visited {
            row,
            key: KeyOf::Held(key),
        }
    }

    pub fn row(&self) -> &[Value] {
        self.row
    }

    /// The row's key.
    pub fn key(&self) -> Result<Key> {
        match self.key {
            KeyOf::Held(k) => Ok(k.clone()),
            KeyOf::Stored(base, k) => base.key_of(k, self.row),
        }
    }
}

/// A `more` for a chunk that goes to the end of its range.
fn all(_: &Key) -> bool {
    true
}

/// Where a chunk's pass over memory stopped.
enum MemStop {
    /// At the end of the range.
    Done,
    /// At the first key for which `more` was false.
    Ended(Key),
    /// After its `n` keys, at the first key not taken.
    Full(Key),
}

impl MemStop {
    /// The key memory stopped at: the store's part of the chunk ends before it.
    fn key(&self) -> Option<&Key> {
        match self {
            MemStop::Done => None,
            MemStop::Ended(k) | MemStop::Full(k) => Some(k),
        }
    }

    /// Where the next chunk resumes, when memory decided the chunk's end.
    fn resume_at(self) -> Option<Bound<Key>> {
        match self {
            MemStop::Full(k) => Some(Bound::Included(k)),
            MemStop::Done | MemStop::Ended(_) => None,
        }
    }
}

/// Passes memory's next `n` keys of `range` (from its end, if `reverse`)
/// to `take`, up to the first key for which `more` is false.
fn take_keys<'m>(
    map: &'m BTreeMap<Key, Chain>,
    range: (Bound<&Key>, Bound<&Key>),
    n: usize,
    reverse: bool,
    more: &impl Fn(&Key) -> bool,
    take: impl FnMut(&'m Key, &'m Chain),
) -> MemStop {
    // Two loops rather than one boxed iterator: the forward scan is the hot path.
    let keys = map.range::<Key, _>(range);
    if reverse {
        take_from(keys.rev(), n, more, take)
    } else {
        take_from(keys, n, more, take)
    }
}

fn take_from<'m>(
    keys: impl Iterator<Item = (&'m Key, &'m Chain)>,
    n: usize,
    more: &impl Fn(&Key) -> bool,
    mut take: impl FnMut(&'m Key, &'m Chain),
) -> MemStop {
    for (i, (k, c)) in keys.enumerate() {
        if !more(k) {
            return MemStop::Ended(k.clone());
        }
        if i == n {
            return MemStop::Full(k.clone());
        }
        take(k, c);
    }
    MemStop::Done
}

/// Whether a range selects nothing (`BTreeMap::range` panics on some).
pub(crate) fn range_is_empty(lo: Bound<&Key>, hi: Bound<&Key>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a >= b
        }
        _ => false,
    }
}

/// Merges a chunk's memory entries and stored rows (both in key order, or
/// both in reverse): memory's entry wins for a key both hold.
fn merge(mem: Vec<MemEntry>, stored: Vec<(Key, Row)>, reverse: bool) -> Vec<(Key, Row)> {
    let mut out = Vec::with_capacity(mem.len() + stored.len());
    let mut m = mem.into_iter().peekable();
    let mut s = stored.into_iter().peekable();
    loop {
        let step = match (m.peek(), s.peek()) {
            (None, None) => return out,
            (Some(_), None) => CmpOrdering::Less,
            (None, Some(_)) => CmpOrdering::Greater,
            (Some((mk, _)), Some((sk, _))) if reverse => sk.cmp(mk),
            (Some((mk, _)), Some((sk, _))) => mk.cmp(sk),
        };
        if step == CmpOrdering::Equal {
            s.next();
        }
        if step == CmpOrdering::Greater {
            if let Some(kr) = s.next() {
                out.push(kr);
            }
        } else if let Some((k, Some(r))) = m.next() {
            out.push((k, r));
        }
    }
}
