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
