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
        rows.install(vec![(k(1), Some(r(10)))], Vec::new(), p.csn, p.horizon);
    }
    let s = vis.snapshot();
    {
        let p = vis.begin_publish();
        rows.install(
            vec![(k(1), Some(r(11))), (k(2), Some(r(20)))],
            Vec::new(),
            p.csn,
            p.horizon,
        );
    }
    assert_eq!(rows.get_at(&k(1), s.csn()).unwrap(), Some(r(10)));
    assert_eq!(rows.get_at(&k(2), s.csn()).unwrap(), None);
    assert_eq!(
        rows.scan_at((Bound::Unbounded, Bound::Unbounded), s.csn())
            .unwrap()
            .len(),
        1
    );
    let now = vis.visible();
    assert_eq!(rows.get_at(&k(1), now).unwrap(), Some(r(11)));
    assert_eq!(rows.multi_version_keys(), 1);
    drop(s);
    // The next write after the reader is gone drops the oldest version;
    // the one a snapshot taken before this commit publishes would see
    // stays until a later write or a prune.
    {
        let p = vis.begin_publish();
        rows.install(vec![(k(1), None)], Vec::new(), p.csn, p.horizon);
    }
    assert!(matches!(rows.latest(&k(1)).unwrap(), Some((3, None))));
    assert_eq!(rows.get_visible(&k(1), &vis).unwrap(), None);
    assert_eq!(rows.len_latest(), 1);
    rows.prune(vis.horizon());
    assert_eq!(rows.multi_version_keys(), 0);
    assert!(rows.latest(&k(1)).unwrap().is_none());
}

#[test]
fn a_delete_stays_visible_to_older_snapshots_until_pruned() {
    let vis = Visibility::new();
    let rows = VersionedRows::default();
    {
        let p = vis.begin_publish();
        rows.install(vec![(k(1), Some(r(10)))], Vec::new(), p.csn, p.horizon);
    }
    let s = vis.snapshot();
    {
        let p = vis.begin_publish();
        rows.install(vec![(k(1), None)], Vec::new(), p.csn, p.horizon);
    }
    assert_eq!(rows.get_at(&k(1), s.csn()).unwrap(), Some(r(10)));
    assert_eq!(rows.get_at(&k(1), vis.visible()).unwrap(), None);
    assert!(matches!(rows.latest(&k(1)).unwrap(), Some((_, None))));
    rows.prune(vis.horizon());
    assert_eq!(rows.get_at(&k(1), s.csn()).unwrap(), Some(r(10)));
    drop(s);
    rows.prune(vis.horizon());
    assert_eq!(rows.latest(&k(1)).unwrap(), None);
    assert_eq!(rows.multi_version_keys(), 0);
}

#[test]
fn a_scan_crosses_chunks_in_order() {
    let vis = Visibility::new();
    let rows = VersionedRows::default();
    let n = (SCAN_CHUNK * 3 + 7) as i64;
    {
        let p = vis.begin_publish();
        rows.install(
            (0..n).map(|i| (k(i), Some(r(i)))).collect(),
            Vec::new(),
            p.csn,
            p.horizon,
        );
    }
    let all = rows
        .scan_at((Bound::Unbounded, Bound::Unbounded), vis.visible())
        .unwrap();
    assert_eq!(all.len(), n as usize);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
    let lo = k(5);
    let hi = k(n - 5);
    let part = rows
        .scan_at((Bound::Excluded(&lo), Bound::Included(&hi)), vis.visible())
        .unwrap();
    assert_eq!(part.len(), (n - 10) as usize);
    assert_eq!(part[0].0, k(6));
}

/// A commit into an empty map is built in one pass (`install`'s fast
/// path); into a map holding other keys it is installed key by key. Both
/// must leave the same versions: the same commits go into an empty map and
/// into one holding a sentinel key, with snapshots held at random, and
/// every key reads the same at every CSN after every commit.
#[test]
fn a_commit_into_an_empty_map_reads_as_one_installed_key_by_key() {
    let vis = Visibility::new();
    let (bulk, keyed) = (VersionedRows::default(), VersionedRows::default());
    keyed.load(k(-1), r(-1));
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut held = Vec::new();
    let mut fast = 0;
    for round in 0..400 {
        let mut changes: BTreeMap<Key, Option<Row>> = BTreeMap::new();
        if round % 5 == 4 {
            // Every key deleted, and pruned once no snapshot is left: the
            // map empties, so the next commit takes the one-pass path.
            held.clear();
            changes.extend((0..40).map(|key| (k(key), None)));
        } else {
            for _ in 0..1 + next(12) {
                let key = next(40) as i64;
                let row = (next(10) >= 3).then(|| r(round * 100 + key));
                changes.insert(k(key), row);
            }
        }
        bulk.prune(vis.horizon());
        keyed.prune(vis.horizon());
        if next(4) == 0 {
            held.push(vis.snapshot());
        }
        if next(3) == 0 && !held.is_empty() {
            held.remove(next(held.len() as u64) as usize);
        }
        fast += bulk.map.read().is_empty() as usize;
        let p = vis.begin_publish();
        let changes: Vec<(Key, Option<Row>)> = changes.into_iter().collect();
        let a = bulk.install(changes.clone(), Vec::new(), p.csn, p.horizon);
        let b = keyed.install(changes, Vec::new(), p.csn, p.horizon);
        assert_eq!(a, b, "round {round}: the rows the commit ended");
        let csn = p.csn;
        drop(p);
        for key in 0..40 {
            for at in 0..=csn {
                assert_eq!(
                    bulk.get_at(&k(key), at).unwrap(),
                    keyed.get_at(&k(key), at).unwrap(),
                    "round {round}: key {key} at CSN {at}"
                );
            }
        }
        assert_eq!(bulk.len_latest() + 1, keyed.len_latest(), "round {round}");
        assert_eq!(bulk.multi_version_keys(), keyed.multi_version_keys());
    }
    assert!(fast > 20, "the empty-map path ran {fast} times");
}
