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

use crate::types::{Key, Row, Value};
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

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
/// stored without a vector.
#[derive(Clone, Debug)]
enum Chain {
    One(Csn, Row),
    Many(Vec<Version>),
}

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
    /// every snapshot sees).
    fn push(self, csn: Csn, row: Option<Row>, horizon: Csn) -> Option<Chain> {
        let mut vs = match self {
            Chain::One(c, r) => vec![Version {
                csn: c,
                row: Some(r),
            }],
            Chain::Many(vs) => vs,
        };
        vs.insert(0, Version { csn, row });
        Chain::from_versions(vs, horizon)
    }

    fn pruned(self, horizon: Csn) -> Option<Chain> {
        match self {
            c @ Chain::One(..) => Some(c),
            Chain::Many(vs) => Chain::from_versions(vs, horizon),
        }
    }

    fn from_versions(mut vs: Vec<Version>, horizon: Csn) -> Option<Chain> {
        // The newest version at or below the horizon is the oldest anyone
        // can still read; everything after it goes.
        if let Some(i) = vs.iter().position(|v| v.csn <= horizon) {
            vs.truncate(i + 1);
        }
        if vs.len() == 1 {
            let v = vs.pop()?;
            return match v.row {
                Some(r) => Some(Chain::One(v.csn, r)),
                // A delete seen by every snapshot: the key is gone.
                None if v.csn <= horizon => None,
                None => Some(Chain::Many(vec![v])),
            };
        }
        Some(Chain::Many(vs))
    }

    fn is_many(&self) -> bool {
        matches!(self, Chain::Many(_))
    }
}

/// Rows scanned per hold of a table's read lock: a long scan lets commits
/// to the table in between chunks.
const SCAN_CHUNK: usize = 1024;

/// A table's rows: every key's versions, in key order.
#[derive(Debug, Default)]
pub struct VersionedRows {
    map: RwLock<BTreeMap<Key, Chain>>,
    /// Keys holding more than one version (or a delete not yet seen by
    /// every snapshot): what a checkpoint's prune has to visit.
    multi: AtomicUsize,
}

impl VersionedRows {
    /// The row at `key` as a snapshot at `csn` sees it.
    pub fn get_at(&self, key: &[Value], csn: Csn) -> Option<Row> {
        self.map.read().get(key)?.at(csn).cloned()
    }

    /// The row at `key` in the newest published state, for a read that
    /// holds no snapshot: the CSN is read under the table's lock, so no
    /// install can prune the version it names (an installer keeps what the
    /// published CSN sees until its own CSN is published).
    pub fn get_visible(&self, key: &[Value], vis: &Visibility) -> Option<Row> {
        let map = self.map.read();
        let csn = vis.visible();
        map.get(key)?.at(csn).cloned()
    }

    /// The newest committed version of `key` (for a writer holding its row
    /// lock) and the CSN that wrote it (a delete gives `(csn, None)`).
    pub fn latest(&self, key: &[Value]) -> Option<(Csn, Option<Row>)> {
        let map = self.map.read();
        let (c, r) = map.get(key)?.latest();
        Some((c, r.cloned()))
    }

    /// Rows with keys in `range`, in key order, as a snapshot at `csn`
    /// sees them. The table's lock is taken per chunk of keys, so a long
    /// scan does not hold up commits; the snapshot keeps what it sees.
    pub fn scan_at(&self, range: (Bound<&Key>, Bound<&Key>), csn: Csn) -> Vec<(Key, Row)> {
        self.scan_while_at(range, csn, |_| true)
    }

    /// As `scan_at`, stopping at the first key for which `more` is false
    /// (an index scan of all entries starting with some values, whose upper
    /// end no key bound expresses).
    pub fn scan_while_at(
        &self,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        more: impl Fn(&Key) -> bool,
    ) -> Vec<(Key, Row)> {
        let mut out = Vec::new();
        let hi = range.1.cloned();
        let mut lo = range.0.cloned();
        loop {
            let map = self.map.read();
            let mut last = None;
            for (n, (k, chain)) in map.range::<Key, _>((lo.as_ref(), hi.as_ref())).enumerate() {
                if !more(k) {
                    return out;
                }
                if n == SCAN_CHUNK {
                    last = Some(k.clone());
                    break;
                }
                if let Some(r) = chain.at(csn) {
                    out.push((k.clone(), r.clone()));
                }
            }
            drop(map);
            match last {
                // Resume at the first key not yet looked at.
                Some(k) => lo = Bound::Included(k),
                None => return out,
            }
        }
    }

    /// Calls `f` with each row in `range`, in key order, as a snapshot at
    /// `csn` sees it, without copying keys: a chunk of rows is taken under
    /// the table's lock and visited after it is released (so `f` may read
    /// the table again). Stops at `f`'s first error.
    pub fn for_each_at<E>(
        &self,
        range: (Bound<&Key>, Bound<&Key>),
        csn: Csn,
        mut f: impl FnMut(&Row) -> Result<(), E>,
    ) -> Result<(), E> {
        let hi = range.1.cloned();
        let mut lo = range.0.cloned();
        let mut chunk: Vec<Row> = Vec::with_capacity(SCAN_CHUNK);
        loop {
            let mut last = None;
            {
                let map = self.map.read();
                for (n, (k, c)) in map.range::<Key, _>((lo.as_ref(), hi.as_ref())).enumerate() {
                    if n == SCAN_CHUNK {
                        last = Some(k.clone());
                        break;
                    }
                    if let Some(r) = c.at(csn) {
                        chunk.push(r.clone());
                    }
                }
            }
            for r in chunk.drain(..) {
                f(&r)?;
            }
            match last {
                Some(k) => lo = Bound::Included(k),
                None => return Ok(()),
            }
        }
    }

    /// Keys starting with `prefix` whose newest committed version is a row
    /// (a unique index's check, by a writer holding the prefix's lock).
    pub fn latest_with_prefix(&self, prefix: &[Value]) -> Vec<Key> {
        let map = self.map.read();
        let lo: Key = prefix.into();
        map.range::<Key, _>((Bound::Included(&lo), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, c)| c.latest().1.is_some())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Installs one commit's versions of this table's keys.
    pub(crate) fn install(
        &self,
        changes: impl IntoIterator<Item = (Key, Option<Row>)>,
        csn: Csn,
        horizon: Csn,
    ) {
        let mut map = self.map.write();
        for (key, row) in changes {
            self.install_one(&mut map, key, row, csn, horizon);
        }
    }

    fn install_one(
        &self,
        map: &mut BTreeMap<Key, Chain>,
        key: Key,
        row: Option<Row>,
        csn: Csn,
        horizon: Csn,
    ) {
        let old = map.remove(&key);
        let was_many = old.as_ref().is_some_and(Chain::is_many);
        let new = match old {
            Some(c) => c.push(csn, row, horizon),
            None => match row {
                Some(r) => Some(Chain::One(csn, r)),
                None if csn <= horizon => None,
                None => Some(Chain::Many(vec![Version { csn, row: None }])),
            },
        };
        let is_many = new.as_ref().is_some_and(Chain::is_many);
        if let Some(c) = new {
            map.insert(key, c);
        }
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
        old.and_then(|c| c.latest().1.cloned())
    }

    /// Drops the versions no snapshot at or after `horizon` sees (the
    /// checkpoint's sweep of keys not written since a long reader ended).
    /// Works a chunk of keys per hold of the write lock, so commits to the
    /// table go on in between.
    pub(crate) fn prune(&self, horizon: Csn) {
        let mut from: Bound<Key> = Bound::Unbounded;
        while self.multi.load(Ordering::Relaxed) > 0 {
            let mut map = self.map.write();
            let mut keys = Vec::new();
            let mut next = None;
            for (n, (k, c)) in map
                .range::<Key, _>((from.as_ref(), Bound::Unbounded))
                .enumerate()
            {
                if n == SCAN_CHUNK * 8 {
                    next = Some(k.clone());
                    break;
                }
                if c.is_many() {
                    keys.push(k.clone());
                }
            }
            self.prune_keys(&mut map, keys, horizon);
            drop(map);
            match next {
                Some(k) => from = Bound::Included(k),
                None => return,
            }
        }
    }

    fn prune_keys(&self, map: &mut BTreeMap<Key, Chain>, keys: Vec<Key>, horizon: Csn) {
        for k in keys {
            if let Some(c) = map.remove(&k) {
                match c.pruned(horizon) {
                    Some(c) => {
                        if !c.is_many() {
                            self.multi.fetch_sub(1, Ordering::Relaxed);
                        }
                        map.insert(k, c);
                    }
                    None => {
                        self.multi.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// The newest committed rows (under the database's gate, when no
    /// commit is being installed: what a checkpoint image holds).
    pub(crate) fn latest_rows(&self) -> BTreeMap<Key, Row> {
        self.map
            .read()
            .iter()
            .filter_map(|(k, c)| c.latest().1.map(|r| (k.clone(), r.clone())))
            .collect()
    }

    /// Rows in the newest committed state.
    pub fn len_latest(&self) -> usize {
        let map = self.map.read();
        if self.multi.load(Ordering::Relaxed) == 0 {
            return map.len();
        }
        map.values().filter(|c| c.latest().1.is_some()).count()
    }

    /// Keys holding more than one version.
    pub fn multi_version_keys(&self) -> usize {
        self.multi.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Value;

    fn k(i: i64) -> Key {
        vec![Value::Int(i)].into_boxed_slice()
    }
    fn r(i: i64) -> Row {
        Arc::from(vec![Value::Int(i)])
    }

    #[test]
    fn a_snapshot_keeps_seeing_its_version() {
        let vis = Visibility::new();
        let rows = VersionedRows::default();
        {
            let p = vis.begin_publish();
            rows.install([(k(1), Some(r(10)))], p.csn, p.horizon);
        }
        let s = vis.snapshot();
        {
            let p = vis.begin_publish();
            rows.install([(k(1), Some(r(11))), (k(2), Some(r(20)))], p.csn, p.horizon);
        }
        assert_eq!(rows.get_at(&k(1), s.csn()), Some(r(10)));
        assert_eq!(rows.get_at(&k(2), s.csn()), None);
        assert_eq!(
            rows.scan_at((Bound::Unbounded, Bound::Unbounded), s.csn())
                .len(),
            1
        );
        let now = vis.visible();
        assert_eq!(rows.get_at(&k(1), now), Some(r(11)));
        assert_eq!(rows.multi_version_keys(), 1);
        drop(s);
        // The next write after the reader is gone drops the oldest version;
        // the one a snapshot taken before this commit publishes would see
        // stays until a later write or a prune.
        {
            let p = vis.begin_publish();
            rows.install([(k(1), None)], p.csn, p.horizon);
        }
        assert!(matches!(rows.latest(&k(1)), Some((3, None))));
        assert_eq!(rows.get_visible(&k(1), &vis), None);
        assert_eq!(rows.len_latest(), 1);
        rows.prune(vis.horizon());
        assert_eq!(rows.multi_version_keys(), 0);
        assert!(rows.latest(&k(1)).is_none());
    }

    #[test]
    fn a_delete_stays_visible_to_older_snapshots_until_pruned() {
        let vis = Visibility::new();
        let rows = VersionedRows::default();
        {
            let p = vis.begin_publish();
            rows.install([(k(1), Some(r(10)))], p.csn, p.horizon);
        }
        let s = vis.snapshot();
        {
            let p = vis.begin_publish();
            rows.install([(k(1), None)], p.csn, p.horizon);
        }
        assert_eq!(rows.get_at(&k(1), s.csn()), Some(r(10)));
        assert_eq!(rows.get_at(&k(1), vis.visible()), None);
        assert!(matches!(rows.latest(&k(1)), Some((_, None))));
        rows.prune(vis.horizon());
        assert_eq!(rows.get_at(&k(1), s.csn()), Some(r(10)));
        drop(s);
        rows.prune(vis.horizon());
        assert_eq!(rows.latest(&k(1)), None);
        assert_eq!(rows.multi_version_keys(), 0);
    }

    #[test]
    fn a_scan_crosses_chunks_in_order() {
        let vis = Visibility::new();
        let rows = VersionedRows::default();
        let n = (SCAN_CHUNK * 3 + 7) as i64;
        {
            let p = vis.begin_publish();
            rows.install((0..n).map(|i| (k(i), Some(r(i)))), p.csn, p.horizon);
        }
        let all = rows.scan_at((Bound::Unbounded, Bound::Unbounded), vis.visible());
        assert_eq!(all.len(), n as usize);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        let lo = k(5);
        let hi = k(n - 5);
        let part = rows.scan_at((Bound::Excluded(&lo), Bound::Included(&hi)), vis.visible());
        assert_eq!(part.len(), (n - 10) as usize);
        assert_eq!(part[0].0, k(6));
    }
}
