//! Statements sent as text with their literals lifted into parameters
//! (`front::normalize_literals`): SELECTs whose WHERE is followed by ORDER
//! BY, LIMIT or FOR UPDATE (TPC-C's delivery, order-status and payment
//! shapes) reuse one plan across literal values, and give the rows a fresh
//! plan gives. Expected rows checked against PostgreSQL 15.

use crate::common::engine;
use crate::common::statements::{rows, tag};

#[test]
fn where_literals_are_lifted_before_order_by_and_limit() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(
        &mut s,
        "CREATE TABLE no1 (w INT NOT NULL, d INT NOT NULL, o INT NOT NULL, \
         note TEXT, PRIMARY KEY (w, d, o))",
    );
    tag(
        &mut s,
        "INSERT INTO no1 SELECT 1, d, o, 'n' || o FROM generate_series(1, 3) d, \
         generate_series(10, 14) o",
    );
    tag(&mut s, "DELETE FROM no1 WHERE d = 2 AND o < 12");
    // Multi-line, as sysbench-tpcc sends it: one template for every district.
    let lock = |d: i32| {
        format!(
            "SELECT o\n   FROM no1\n  WHERE d = {d}\n    AND w = 1\n  ORDER BY o ASC LIMIT 1 FOR UPDATE"
        )
    };
    tag(&mut s, "BEGIN");
    assert_eq!(rows(&mut s, &lock(1)), vec![vec!["10"]]);
    let hits = s.plan_cache_hits();
    assert_eq!(rows(&mut s, &lock(2)), vec![vec!["12"]]);
    assert_eq!(rows(&mut s, &lock(3)), vec![vec!["10"]]);
    assert_eq!(rows(&mut s, &lock(4)), Vec::<Vec<String>>::new());
    assert_eq!(
        s.plan_cache_hits(),
        hits + 3,
        "the locking read's plan is reused"
    );
    tag(&mut s, "COMMIT");

    // ORDER BY positions and LIMIT counts stay in the text: each is its own shape.
    let q = |w: i32, n: i32| {
        format!("SELECT d, o FROM no1 WHERE w = {w} AND o > 12 ORDER BY 2 DESC, 1 LIMIT {n}")
    };
    assert_eq!(
        rows(&mut s, &q(1, 2)),
        vec![vec!["1", "14"], vec!["2", "14"]]
    );
    let hits = s.plan_cache_hits();
    assert_eq!(
        rows(&mut s, &q(1, 4)),
        vec![
            vec!["1", "14"],
            vec!["2", "14"],
            vec!["3", "14"],
            vec!["1", "13"]
        ]
    );
    assert_eq!(rows(&mut s, &q(2, 4)), Vec::<Vec<String>>::new());
    assert_eq!(
        rows(&mut s, &q(1, 2)),
        vec![vec!["1", "14"], vec!["2", "14"]]
    );
    assert_eq!(s.plan_cache_hits(), hits + 2);

    // A literal holding a clause's words is lifted whole; what follows stays.
    tag(
        &mut s,
        "UPDATE no1 SET note = 'x order by y' WHERE d = 3 AND o = 13",
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT o FROM no1 WHERE note = 'x order by y' AND d = 3 ORDER BY o"
        ),
        vec![vec!["13"]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT d, count(*) FROM no1 WHERE w = 1 AND o >= 11 GROUP BY d HAVING count(*) > 3 ORDER BY d"
        ),
        vec![vec!["1", "4"], vec!["3", "4"]]
    );
}
