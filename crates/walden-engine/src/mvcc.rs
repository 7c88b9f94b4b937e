//! Row versions and snapshots.
//!
//! Every committed change is installed as a new version of its row, tagged
//! with the commit's sequence number (CSN). A commit installs all its
//! versions, in every table, before it publishes its CSN; a reader takes the
//! published CSN as its snapshot and sees, for each key, the newest version
//! at or below it. A commit is therefore visible atomically across tables,
//! and a reader never blocks a writer for longer than the copy of one chunk
//! of a table (see [`VersionedRows::scan_at`]).
//!
//! Old versions are dropped when no snapshot can see them any more: the
//! horizon is the oldest registered snapshot (or the published CSN when none
//! is open). Pruning happens when a key gets a new version, and for keys
//! never written again, at the next checkpoint.

use crate::error::Result;
use crate::store::reads::BaseRows;
use crate::types::{Key, Row, Value};
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

mod scan;
pub(crate) use scan::range_is_empty;
pub use scan::Visited;
#[cfg(test)]
use scan::SCAN_CHUNK;

/// Keys looked at per hold of a table's lock by the checkpoint's upkeep
/// (pruning versions, evicting rows): a commit waits for at most one
/// chunk, well under a millisecond.
const UPKEEP_CHUNK: usize = 512;

/// Commit sequence number: the order in which commits became visible.
pub type Csn = u64;

/// A database's published CSN and its open snapshots.
#[derive(Debug, Default)]
pub struct Visibility {
    /// Serializes install-and-publish, so CSNs become visible in order and
    /// everything at or below the published CSN is installed.
    publish: Mutex<()>,
    visible: AtomicU64,
    /// Open snapshots by CSN, with how many hold each.
    active: Mutex<BTreeMap<Csn, usize>>,
}

impl Visibility {
    pub fn new() -> Arc<Self> {
        Arc::new(Visibility::default())
    }

    /// The newest published CSN.
    pub fn visible(&self) -> Csn {
        self.visible.load(Ordering::Acquire)
    }

    /// Takes a snapshot of what is published now, registered until dropped
    /// so that the versions it sees are kept.
    pub fn snapshot(self: &Arc<Self>) -> Snapshot {
        // Read the CSN under the registry's lock: a publisher computes its
        // horizon under the same lock, so it either sees this snapshot or
        // computed a horizon no newer than this CSN.
        let mut active = self.active.lock();
        let csn = self.visible();
        *active.entry(csn).or_default() += 1;
        Snapshot {
            csn,
            vis: self.clone(),
        }
    }

    /// Number of open snapshots.
    pub fn open_snapshots(&self) -> usize {
        self.active.lock().values().sum()
    }

    /// The oldest CSN any open or future snapshot can read at.
    pub fn horizon(&self) -> Csn {
        let active = self.active.lock();
        let v = self.visible();
        active.keys().next().map_or(v, |&c| c.min(v))
    }

    /// Holds publishing off (a checkpoint's capture).
    pub(crate) fn hold_publish(&self) -> MutexGuard<'_, ()> {
        self.publish.lock()
    }

    /// Starts installing one commit's versions: they carry the returned
    /// CSN and become visible together when the guard is dropped.
    pub(crate) fn begin_publish(&self) -> Publish<'_> {
        let guard = self.publish.lock();
        let csn = self.visible() + 1;
        let horizon = self.horizon();
        Publish {
            _guard: guard,
            vis: self,
            csn,
            horizon,
        }
    }

    fn release(&self, csn: Csn) {
        let mut active = self.active.lock();
        if let Some(n) = active.get_mut(&csn) {
            *n -= 1;
            if *n == 0 {
                active.remove(&csn);
            }
        }
    }
}

/// One commit's installation in progress (see [`Visibility::begin_publish`]).
pub(crate) struct Publish<'a> {
    _guard: MutexGuard<'a, ()>,
    vis: &'a Visibility,
    pub csn: Csn,
    /// Versions no snapshot at or above this CSN sees may be dropped.
    pub horizon: Csn,
}

impl Drop for Publish<'_> {
    fn drop(&mut self) {
        self.vis.visible.store(self.csn, Ordering::Release);
    }
}

/// A registered read point: the versions it sees stay until it is dropped.
#[derive(Debug)]
pub struct Snapshot {
    csn: Csn,
    vis: Arc<Visibility>,
}

impl Snapshot {
    pub fn csn(&self) -> Csn {
        self.csn
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.vis.release(self.csn);
    }
}

/// One version of a row; `None` records a delete.
#[derive(Clone, Debug)]
struct Version {
    csn: Csn,
    row: Option<Row>,
}

/// A key's versions, newest first. Nearly every key has one live version,
/// stored without a vector. The vector is boxed so that a chain is 24 bytes
/// (the row's pointer is the tag), not 32: a third less map to search.
#[derive(Clone, Debug)]
enum Chain {
    One(Csn, Row),
    #[allow(clippy::box_collection)]
    Many(Box<Vec<Version>>),
}

const _: () = assert!(std::mem::size_of::<Chain>() == 24);

impl Chain {
    fn at(&self, csn: Csn) -> Option<&Row> {
        match self {
            Chain::One(c, r) => (*c <= csn).then_some(r),
            Chain::Many(vs) => vs.iter().find(|v| v.csn <= csn)?.row.as_ref(),
        }
    }

    fn latest(&self) -> (Csn, Option<&Row>) {
        match self {
            Chain::One(c, r) => (*c, Some(r)),
            Chain::Many(vs) => (vs[0].csn, vs[0].row.as_ref()),
        }
    }

    /// Adds a version and drops those no snapshot at or after `horizon`
    /// sees. Returns `None` when nothing is left to keep (a delete that
    /// every snapshot sees, unless `keep_deletes`: over a base store, the
    /// marker hides the stored row until a checkpoint removes it).
    fn push(self, csn: Csn, row: Option<Row>, horizon: Csn, keep_deletes: bool) -> Option<Chain> {
        let mut vs = match self {
            Chain::One(c, r) => Box::new(vec![Version {
                csn: c,
                row: Some(r),
            }]),
            Chain::Many(vs) => vs,
        };
        vs.insert(0, Version { csn, row });
        Chain::from_versions(vs, horizon, keep_deletes)
    }

    fn pruned(self, horizon: Csn, keep_deletes: bool) -> Option<Chain> {
        match self {
            c @ Chain::One(..) => Some(c),
            Chain::Many(vs) => Chain::from_versions(vs, horizon, keep_deletes),
        }
    }

    #[allow(clippy::box_collection)]
    fn from_versions(mut vs: Box<Vec<Version>>, horizon: Csn, keep_deletes: bool) -> Option<Chain> {
        // The newest version at or below the horizon is the oldest anyone
        // can still read; everything after it goes.
        if let Some(i) = vs.iter().position(|v| v.csn <= horizon) {
            vs.truncate(i + 1);
        }
        if vs.len() == 1 {
            if vs[0].row.is_some() {
                let v = vs.pop()?;
                return v.row.map(|r| Chain::One(v.csn, r));
            }
            // A delete seen by every snapshot: the key is gone.
            if vs[0].csn <= horizon && !keep_deletes {
                return None;
            }
        }
        Some(Chain::Many(vs))
    }

    fn is_many(&self) -> bool {
        matches!(self, Chain::Many(_))
    }

    /// Whether the base store's newest commit answers every snapshot for
    /// this key: one version (or delete), at or below both the checkpoint
    /// that wrote it and the horizon.
    fn evictable(&self, upto: Csn, horizon: Csn) -> bool {
        let csn = match self {
            Chain::One(c, _) => *c,
            Chain::Many(vs) if vs.len() == 1 => vs[0].csn,
            Chain::Many(_) => return false,
        };
        csn <= upto && csn <= horizon
    }
}

/// A row to leave in a map slot while its chain is rebuilt (a `Chain::Many`
/// would allocate its box).
fn placeholder() -> Row {
    static EMPTY: OnceLock<Row> = OnceLock::new();
    EMPTY.get_or_init(|| Arc::from(Vec::new())).clone()
}

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// A number no `VersionedRows::uid` has or will have (a spill file's name).
pub(crate) fn next_uid() -> u64 {
    NEXT_UID.fetch_add(1, Ordering::Relaxed)
}

/// A table's rows: every key's versions, in key order. Keys may also live
/// only in the base store (after a checkpoint evicted them): a read that
/// finds no key in memory reads the store.
#[derive(Debug)]
pub struct VersionedRows {
    map: RwLock<BTreeMap<Key, Chain>>,
    /// Keys holding more than one version (or a delete not yet seen by
    /// every snapshot): what a checkpoint's prune has to visit.
    multi: AtomicUsize,
    /// Rows in the newest committed state.
    live: AtomicI64,
    /// Which rows these are, for the base store's generations (a table's
    /// rows replaced by TRUNCATE get a new one).
    uid: u64,
    /// The base store's copy, once a checkpoint wrote these rows (or a
    /// transaction's spill file, see `store/layer.rs`).
    base: OnceLock<BaseRows>,
    /// Snapshots older than this CSN do not see `base`: rows a large
    /// commit left in its spill file are its own versions, at its CSN
    /// (0: every snapshot sees the store's rows).
    hidden_below: AtomicU64,
}

impl Default for VersionedRows {
    fn default() -> Self {
        VersionedRows {
            map: RwLock::default(),
            multi: AtomicUsize::new(0),
            live: AtomicI64::new(0),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            base: OnceLock::new(),
            hidden_below: AtomicU64::new(0),
        }
    }
}

impl VersionedRows {
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// Whether some keys may live only in the base store.
    pub fn has_base(&self) -> bool {
        self.base.get().is_some()
    }

    /// Reads absent keys from `base` from now on (`rows`: the number of
    /// rows it holds, when memory holds none of them).
    pub(crate) fn attach(&self, base: BaseRows, rows: Option<u64>) {
        if self.base.set(base).is_ok() {
            if let Some(n) = rows {
                self.live.store(n as i64, Ordering::Relaxed);
            }
        }
    }

    /// The base rows a snapshot at `csn` sees (see `hidden_below`).
    #[inline]
    fn base_at(&self, csn: Csn) -> Option<&BaseRows> {
        let base = self.base.get()?;
        (csn >= self.hidden_below.load(Ordering::Acquire)).then_some(base)
    }

    /// From now on snapshots older than `csn` do not see the base rows: a
    /// commit at `csn` installed them (a spill file, `txn/spill.rs`).
    pub(crate) fn hide_base_below(&self, csn: Csn) {
        self.hidden_below.store(csn, Ordering::Release);
    }

    /// Sets the number of rows in the newest state (a spill file's count).
    pub(crate) fn set_live(&self, n: u64) {
        self.live.store(n as i64, Ordering::Relaxed);
    }

    /// Reads one key as a snapshot at `csn` does (memory's answer if it
    /// holds the key, else the store's, when that snapshot sees the store).
    fn read_key<T>(
        &self,
        key: &[Value],
        csn: Csn,
        mem: impl Fn(&Chain) -> T,
        stored: impl Fn(Option<Row>) -> T,
    ) -> Result<Option<T>> {
        let base = loop {
            if let Some(base) = self.base_at(csn) {
                break base;
            }
            let found = {
                let map = self.map.read();
                // Ascending inserts: a key past the last one is absent,
                // found without a search.
                match map.last_key_value() {
                    Some((last, _)) if key > &last[..] => None,
                    _ => map.get(key).map(&mem),
                }
            };
            // A checkpoint attaches the store before it evicts: a key gone
            // from memory while the store was not attached yet shows as an
            // attached store now, and is read again through it.
            if found.is_some() || self.base_at(csn).is_none() {
                return Ok(found);
            }
        };
        loop {
            let p = base.pin();
            if let Some(c) = self.map.read().get(key) {
                return Ok(Some(mem(c)));
            }
            let row = base.get(&p, key)?;
            if base.still_current(&p) {
                return Ok(row.map(|r| stored(Some(r))));
            }
        }
    }

    /// The row at `key` as a snapshot at `csn` sees it.
    pub fn get_at(&self, key: &[Value], csn: Csn) -> Result<Option<Row>> {
        Ok(self
            .read_key(key, csn, |c| c.at(csn).cloned(), |r| r)?
            .flatten())
    }

    /// The row at `key` in the newest published state, for a read that
    /// holds no snapshot: the CSN is read under the table's lock, so no
    /// install can prune the version it names (an installer keeps what the
    /// published CSN sees until its own CSN is published).
    pub fn get_visible(&self, key: &[Value], vis: &Visibility) -> Result<Option<Row>> {
        Ok(self
            .read_key(key, vis.visible(), |c| c.at(vis.visible()).cloned(), |r| r)?
            .flatten())
    }

    /// The newest committed version of `key` (for a writer holding its row
    /// lock) and the CSN that wrote it (a delete gives `(csn, None)`; a
    /// row only the store holds, CSN 0).
    pub fn latest(&self, key: &[Value]) -> Result<Option<(Csn, Option<Row>)>> {
        self.read_key(
            key,
            Csn::MAX,
            |c| {
                let (c, r) = c.latest();
                (c, r.cloned())
            },
            |r| (0, r),
        )
    }

    /// For each key about to get a new version, the row only the store
    /// holds (`None` when memory holds the key, or nobody does); empty when
    /// there is no store to read. Read under the publish lock, before the
    /// first change of a commit, so a failed read changes nothing.
    pub(crate) fn priors<'k>(
        &self,
        keys: impl Iterator<Item = &'k Key>,
    ) -> Result<Vec<Option<Row>>> {
        let mut priors = Vec::new();
        if self.has_base() {
            for key in keys {
                priors.push(self.read_key(key, Csn::MAX, |_| None, |r| r)?.flatten());
            }
        }
        Ok(priors)
    }

    /// Installs one commit's versions of this table's keys and returns each
    /// key's newest committed row before them (for the index entries they
    /// end). `priors` (see [`Self::priors`]) become version 0 of their
    /// chains, so that older snapshots keep seeing them.
    #[cfg(test)]
    pub(crate) fn install(
        &self,
        changes: Vec<(Key, Option<Row>)>,
        priors: Vec<Option<Row>>,
        csn: Csn,
        horizon: Csn,
    ) -> Vec<Option<Row>> {
        self.install_with(changes, priors, csn, horizon, true)
    }

    /// [`Self::install`], returning the prior rows only when `want_olds`
    /// (a table with indexes needs them; one without skips the vector).
    pub(crate) fn install_with(
        &self,
        changes: Vec<(Key, Option<Row>)>,
        priors: Vec<Option<Row>>,
        csn: Csn,
        horizon: Csn,
        want_olds: bool,
    ) -> Vec<Option<Row>> {
        let keep_deletes = self.has_base();
        let mut map = self.map.write();
        // Rows into an empty table (a new one, or one TRUNCATE emptied, as
        // a bulk load does): the map is built in one pass from the sorted
        // changes, not searched once per key; every other commit waits
        // for this under the publish lock.
        if map.is_empty() && priors.iter().all(Option::is_none) {
            let n = changes.len();
            let mut live = 0;
            let mut many = 0;
            let built: BTreeMap<Key, Chain> = changes
                .into_iter()
                .filter_map(|(key, row)| {
                    let chain = match row {
                        Some(r) => {
                            live += 1;
                            Chain::One(csn, r)
                        }
                        None if csn <= horizon && !keep_deletes => return None,
                        None => {
                            many += 1;
                            Chain::Many(Box::new(vec![Version { csn, row: None }]))
                        }
                    };
                    Some((key, chain))
                })
                .collect();
            *map = built;
            self.live.fetch_add(live, Ordering::Relaxed);
            self.multi.fetch_add(many, Ordering::Relaxed);
            return if want_olds { vec![None; n] } else { Vec::new() };
        }
        let mut olds = Vec::with_capacity(if want_olds { changes.len() } else { 0 });
        let mut live = 0_i64;
        let (mut to_many, mut from_many) = (0_usize, 0_usize);
        for (i, (key, row)) in changes.into_iter().enumerate() {
            use std::collections::btree_map::Entry;
            let prior = || match priors.get(i) {
                Some(Some(r)) => Some(Chain::One(0, r.clone())),
                _ => None,
            };
            // One search per key: the chain is taken out of its slot (an
            // empty chain left behind) and the new one put back in place.
            let (old, slot) = match map.entry(key) {
                Entry::Occupied(mut e) => (
                    Some(std::mem::replace(e.get_mut(), Chain::One(0, placeholder()))),
                    Ok(e),
                ),
                Entry::Vacant(v) => (prior(), Err(v)),
            };
            if want_olds {
                olds.push(old.as_ref().and_then(|c| c.latest().1.cloned()));
            }
            let had = old.as_ref().is_some_and(|c| c.latest().1.is_some());
            live += row.is_some() as i64 - had as i64;
            let was_many = old.as_ref().is_some_and(Chain::is_many);
            let new = match old {
                Some(c) => c.push(csn, row, horizon, keep_deletes),
                None => match row {
                    Some(r) => Some(Chain::One(csn, r)),
                    None if csn <= horizon && !keep_deletes => None,
                    None => Some(Chain::Many(Box::new(vec![Version { csn, row: None }]))),
                },
            };
            let is_many = new.as_ref().is_some_and(Chain::is_many);
            match (slot, new) {
                (Ok(mut e), Some(c)) => *e.get_mut() = c,
                (Ok(e), None) => {
                    e.remove();
                }
                (Err(v), Some(c)) => {
                    v.insert(c);
                }
                (Err(_), None) => {}
            }
            match (was_many, is_many) {
                (false, true) => to_many += 1,
                (true, false) => from_many += 1,
                _ => {}
            }
        }
        self.live.fetch_add(live, Ordering::Relaxed);
        self.multi.fetch_add(to_many, Ordering::Relaxed);
        self.multi.fetch_sub(from_many, Ordering::Relaxed);
        olds
    }

    /// Marks keys a commit deleted and inserted again (rather than
    /// updated): a delete at the commit's CSN goes behind its new version.
    /// No snapshot reads the marker (the new version, at the same CSN,
    /// comes first); a READ COMMITTED writer that waited for the commit
    /// finds it (see [`Self::deleted_since`]), as PostgreSQL finds the row
    /// it waited for deleted, the new row being another tuple. Pruning
    /// drops it with the older versions once every snapshot sees the commit.
    pub(crate) fn mark_replaced(&self, keys: &[Key], csn: Csn) {
        let mut map = self.map.write();
        for key in keys {
            if let Some(Chain::Many(vs)) = map.get_mut(key) {
                if vs.len() > 1 && vs[0].csn == csn && vs[0].row.is_some() {
                    vs.insert(1, Version { csn, row: None });
                }
            }
        }
    }

    /// Whether a commit after `csn` deleted the key's row (and perhaps
    /// inserted another with the same key).
    pub fn deleted_since(&self, key: &[Value], csn: Csn) -> bool {
        match self.map.read().get(key) {
            Some(Chain::Many(vs)) => vs
                .iter()
                .take_while(|v| v.csn > csn)
                .any(|v| v.row.is_none()),
            _ => false,
        }
    }

    fn count_multi(&self, was_many: bool, is_many: bool) {
        match (was_many, is_many) {
            (false, true) => {
                self.multi.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                self.multi.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// Loads a row that every snapshot sees (a checkpoint image's rows).
    pub(crate) fn load(&self, key: Key, row: Row) -> Option<Row> {
        let old = self.map.write().insert(key, Chain::One(0, row));
        let old = old.and_then(|c| c.latest().1.cloned());
        if old.is_none() {
            self.live.fetch_add(1, Ordering::Relaxed);
        }
        old
    }

    /// Loads rows every snapshot sees under one hold of the lock (an index
    /// build's entries, a chunk at a time).
    pub(crate) fn load_many(&self, rows: impl IntoIterator<Item = (Key, Row)>) {
        let mut map = self.map.write();
        let mut added = 0;
        for (key, row) in rows {
            if map
                .insert(key, Chain::One(0, row))
                .is_none_or(|c| c.latest().1.is_none())
            {
                added += 1;
            }
        }
        self.live.fetch_add(added, Ordering::Relaxed);
    }

    /// Drops the versions no snapshot at or after `horizon` sees (the
    /// checkpoint's sweep of keys not written since a long reader ended).
    /// Works [`UPKEEP_CHUNK`] keys per hold of the write lock, so commits
    /// to the table and its readers wait at most for one chunk; what it
    /// frees is dropped after the lock is released.
    pub(crate) fn prune(&self, horizon: Csn) {
        let mut from: Bound<Key> = Bound::Unbounded;
        let keep_deletes = self.has_base();
        while self.multi.load(Ordering::Relaxed) > 0 {
            let mut map = self.map.write();
            let (keys, next) = Self::upkeep_chunk(&map, &from, Chain::is_many);
            let mut freed = Vec::with_capacity(keys.len());
            for k in keys {
                if let Some(c) = map.remove(&k) {
                    let c = c.pruned(horizon, keep_deletes);
                    self.count_multi(true, c.as_ref().is_some_and(Chain::is_many));
                    if let Some(c) = c {
                        map.insert(k, c);
                    } else {
                        freed.push(k);
                    }
                }
            }
            drop(map);
            drop(freed);
            match next {
                Some(k) => from = Bound::Included(k),
                None => return,
            }
        }
    }

    /// The keys from `from` on (at most [`UPKEEP_CHUNK`] looked at) whose
    /// chains `pick` chooses, and the key to go on from.
    fn upkeep_chunk(
        map: &BTreeMap<Key, Chain>,
        from: &Bound<Key>,
        mut pick: impl FnMut(&Chain) -> bool,
    ) -> (Vec<Key>, Option<Key>) {
        let mut keys = Vec::new();
        for (n, (k, c)) in map
            .range::<Key, _>((from.as_ref(), Bound::Unbounded))
            .enumerate()
        {
            if n == UPKEEP_CHUNK {
                return (keys, Some(k.clone()));
            }
            if pick(c) {
                keys.push(k.clone());
            }
        }
        (keys, None)
    }

    /// Drops from memory every key the base store's newest commit answers
    /// for every snapshot (see `Chain::evictable`; `upto`: the CSN that
    /// commit was read at). Runs after that commit became the store's
    /// current generation, [`UPKEEP_CHUNK`] keys per hold of the publish
    /// lock (so no install is between its look at memory and its change):
    /// every commit waits while it is held, so the chunk is small and the
    /// evicted rows are freed after the locks are released.
    /// Returns the number of keys evicted.
    pub(crate) fn evict(&self, vis: &Visibility, upto: Csn) -> usize {
        if !self.has_base() {
            return 0;
        }
        let mut evicted = 0;
        let mut from: Bound<Key> = Bound::Unbounded;
        loop {
            let hold = vis.hold_publish();
            let horizon = vis.horizon();
            let mut map = self.map.write();
            let (keys, next) =
                Self::upkeep_chunk(&map, &from, |c| c.is_many() || c.evictable(upto, horizon));
            let mut freed = Vec::with_capacity(keys.len());
            for k in keys {
                let Some(c) = map.remove(&k) else { continue };
                let was_many = c.is_many();
                let Some(c) = c.pruned(horizon, true) else {
                    continue;
                };
                if c.evictable(upto, horizon) {
                    self.count_multi(was_many, false);
                    evicted += 1;
                    freed.push((k, c));
                } else {
                    self.count_multi(was_many, c.is_many());
                    map.insert(k, c);
                }
            }
            drop(map);
            drop(hold);
            drop(freed);
            match next {
                Some(k) => from = Bound::Included(k),
                None => return evicted,
            }
        }
    }

    /// Keys held in memory (for the DMVs and tests).
    pub fn keys_in_memory(&self) -> usize {
        self.map.read().len()
    }

    /// The newest committed rows (under the database's gate, when no
    /// commit is being installed: what a checkpoint image holds).
    pub(crate) fn latest_rows(&self) -> Result<BTreeMap<Key, Row>> {
        if !self.has_base() {
            let rows = self
                .map
                .read()
                .iter()
                .filter_map(|(k, c)| c.latest().1.map(|r| (k.clone(), r.clone())))
                .collect();
            // Attached meanwhile (see `chunk`): read through the store.
            if !self.has_base() {
                return Ok(rows);
            }
        }
        Ok(self
            .scan_at((Bound::Unbounded, Bound::Unbounded), Csn::MAX)?
            .into_iter()
            .collect())
    }

    /// Rows in the newest committed state.
    pub fn len_latest(&self) -> usize {
        self.live.load(Ordering::Relaxed).max(0) as usize
    }

    /// Keys holding more than one version.
    pub fn multi_version_keys(&self) -> usize {
        self.multi.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests;
