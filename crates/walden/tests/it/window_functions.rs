//! Window functions through the server against a scratch PostgreSQL 15,
//! statement by statement in the text format: rows, or SQLSTATE and
//! message. The statements cover each frame mode (ROWS, RANGE, GROUPS,
//! offsets on numbers, dates and timestamps, EXCLUDE), peers, NULLs in
//! partition and order keys, NULLS FIRST/LAST, DESC, empty frames and
//! partitions, named windows, windows over grouped rows, DISTINCT / ORDER BY
//! / LIMIT around them, and the places they are refused.
//!
//! Where PostgreSQL's result depends on how it orders peers (string_agg,
//! first_value ... over a frame cut between peers), the window ORDER BY ends
//! with the unique `id`, so both servers have one right answer.

use crate::pg_diff;

use pg_diff::{assert_same, block_on_within, run_script, Peers};
use std::time::Duration;

const SETUP: &[&str] = &[
    "CREATE TABLE w (id int PRIMARY KEY, g int, x int, f float8, n numeric(8,2), s text, \
     d date, ts timestamp)",
    "INSERT INTO w VALUES \
     (1, 1, 10, 1.5, 1.25, 'a', '2024-01-01', '2024-01-01 10:00'), \
     (2, 1, 20, 2.5, 2.50, 'b', '2024-01-03', '2024-01-01 11:30'), \
     (3, 1, 20, NULL, NULL, 'c', '2024-01-03', '2024-01-01 12:00'), \
     (4, 2, NULL, 4.0, 4.00, 'd', '2024-01-10', NULL), \
     (5, 2, 5, 5.5, -5.50, NULL, NULL, '2024-01-02 00:00'), \
     (6, NULL, 7, 6.0, 6.00, 'f', '2024-02-01', '2024-01-02 01:00'), \
     (7, NULL, NULL, 7.5, NULL, 'g', '2024-02-02', '2024-01-02 01:00'), \
     (8, 2, 5, 8.0, 8.00, 'h', '2024-01-11', '2024-01-03 00:00'), \
     (9, 3, 100, 9.0, 9.99, 'i', '2024-03-01', '2024-01-04 00:00'), \
     (10, 1, 30, 10.5, 10.50, 'j', '2024-01-05', '2024-01-05 00:00'), \
     (11, 4, NULL, NULL, NULL, NULL, NULL, NULL)",
    "CREATE TABLE e (id int PRIMARY KEY, x int)",
];

const QUERIES: &[&str] = &[
    // Ranking: peers share a rank; NULL order keys sort last ascending.
    "SELECT id, x, row_number() OVER (ORDER BY x, id), rank() OVER (ORDER BY x), \
     dense_rank() OVER (ORDER BY x), percent_rank() OVER (ORDER BY x), \
     cume_dist() OVER (ORDER BY x) FROM w ORDER BY id",
    "SELECT id, rank() OVER (ORDER BY x DESC), rank() OVER (ORDER BY x NULLS FIRST), \
     rank() OVER (ORDER BY x DESC NULLS LAST) FROM w ORDER BY id",
    "SELECT id, g, rank() OVER (PARTITION BY g ORDER BY x), \
     row_number() OVER (PARTITION BY g ORDER BY id DESC), cume_dist() OVER (PARTITION BY g) \
     FROM w ORDER BY id",
    "SELECT id, ntile(3) OVER (ORDER BY id), ntile(4) OVER (PARTITION BY g ORDER BY id), \
     ntile(20) OVER (ORDER BY id) FROM w ORDER BY id",
    "SELECT id, percent_rank() OVER (PARTITION BY id) FROM w ORDER BY id",
    // Default frames: whole partition without ORDER BY, up to the last peer with it.
    "SELECT id, g, sum(x) OVER (PARTITION BY g), sum(x) OVER (PARTITION BY g ORDER BY x), \
     count(*) OVER (PARTITION BY g ORDER BY x), count(x) OVER (ORDER BY x) FROM w ORDER BY id",
    "SELECT id, sum(x) OVER (), count(*) OVER (), min(s) OVER (), max(d) OVER () \
     FROM w ORDER BY id",
    // ROWS.
    "SELECT id, sum(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
     sum(x) OVER (ORDER BY id ROWS 2 PRECEDING), \
     sum(x) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), \
     sum(x) OVER (ORDER BY id ROWS BETWEEN 2 FOLLOWING AND 4 FOLLOWING), \
     sum(x) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) FROM w ORDER BY id",
    "SELECT id, count(*) OVER (ORDER BY id ROWS BETWEEN 0 PRECEDING AND 0 FOLLOWING), \
     count(*) OVER (ORDER BY id ROWS BETWEEN 20 PRECEDING AND 20 FOLLOWING), \
     count(*) OVER (ORDER BY id ROWS BETWEEN 5 FOLLOWING AND UNBOUNDED FOLLOWING) \
     FROM w ORDER BY id",
    "SELECT id, sum(f) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), \
     min(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
     max(s) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING), \
     sum(n) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) \
     FROM w ORDER BY id",
    "SELECT id, avg(f) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), \
     (avg(x) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW))::float8 \
     FROM w ORDER BY id",
    // GROUPS.
    "SELECT id, x, count(*) OVER (ORDER BY x GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
     sum(x) OVER (ORDER BY x GROUPS BETWEEN CURRENT ROW AND 1 FOLLOWING), \
     sum(x) OVER (ORDER BY x DESC GROUPS BETWEEN 2 PRECEDING AND 1 PRECEDING), \
     count(*) OVER (ORDER BY x GROUPS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) \
     FROM w ORDER BY id",
    // RANGE with offsets: numbers, NULL keys, DESC, NULLS FIRST.
    "SELECT id, x, sum(x) OVER (ORDER BY x RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING), \
     count(*) OVER (ORDER BY x RANGE BETWEEN 10 PRECEDING AND CURRENT ROW), \
     count(*) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND 10 FOLLOWING) FROM w ORDER BY id",
    "SELECT id, x, sum(x) OVER (ORDER BY x DESC RANGE BETWEEN 5 PRECEDING AND CURRENT ROW), \
     count(*) OVER (ORDER BY x DESC NULLS LAST RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING), \
     count(*) OVER (ORDER BY x NULLS FIRST RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING), \
     count(*) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND 5 PRECEDING) \
     FROM w ORDER BY id",
    "SELECT id, count(*) OVER (ORDER BY x RANGE BETWEEN 5 FOLLOWING AND 20 FOLLOWING), \
     count(*) OVER (ORDER BY f RANGE BETWEEN 1.5 PRECEDING AND 1.5 FOLLOWING), \
     count(*) OVER (ORDER BY n RANGE BETWEEN 2.5 PRECEDING AND 0.5 FOLLOWING) \
     FROM w ORDER BY id",
    "SELECT id, count(*) OVER (ORDER BY d RANGE BETWEEN '2 days' PRECEDING AND '1 day' FOLLOWING), \
     count(*) OVER (ORDER BY ts RANGE BETWEEN '1 hour' PRECEDING AND CURRENT ROW), \
     count(*) OVER (ORDER BY ts DESC RANGE BETWEEN '1 day' PRECEDING AND '1 hour' FOLLOWING) \
     FROM w ORDER BY id",
    "SELECT id, count(*) OVER (PARTITION BY g ORDER BY x RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING) \
     FROM w ORDER BY id",
    // EXCLUDE.
    "SELECT id, x, \
     sum(x) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE CURRENT ROW), \
     sum(x) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE GROUP), \
     count(*) OVER (ORDER BY x GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE TIES), \
     count(*) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE NO OTHERS) \
     FROM w ORDER BY id",
    "SELECT id, string_agg(s, ',') OVER (ORDER BY x, id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING \
     EXCLUDE CURRENT ROW), \
     first_value(id) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE CURRENT ROW), \
     last_value(id) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) \
     FROM w ORDER BY id",
    // Value functions.
    "SELECT id, lag(x) OVER (ORDER BY id), lead(x) OVER (ORDER BY id), \
     lag(x, 2) OVER (ORDER BY id), lead(x, 3, -1) OVER (ORDER BY id), \
     lag(s, 1, 'none') OVER (PARTITION BY g ORDER BY id), lag(id, 0) OVER (ORDER BY id), \
     lead(id, -1) OVER (ORDER BY id), lag(id, NULL) OVER (ORDER BY id) FROM w ORDER BY id",
    "SELECT id, first_value(s) OVER w, last_value(s) OVER w, nth_value(s, 2) OVER w, \
     nth_value(id, 5) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) \
     FROM w WINDOW w AS (PARTITION BY g ORDER BY id) ORDER BY id",
    "SELECT id, last_value(id) OVER (ORDER BY x, id), \
     last_value(id) OVER (ORDER BY id RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), \
     first_value(x) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 1 FOLLOWING) FROM w ORDER BY id",
    // Aggregates with FILTER, and the rest of the aggregates.
    "SELECT id, count(x) FILTER (WHERE x > 10) OVER (ORDER BY id), \
     sum(x) FILTER (WHERE g = 1) OVER (PARTITION BY g), \
     sum(x) FILTER (WHERE false) OVER (), count(*) FILTER (WHERE s IS NULL) OVER (ORDER BY id ROWS 1 PRECEDING) \
     FROM w ORDER BY id",
    "SELECT id, bool_and(x > 5) OVER (PARTITION BY g), bool_or(x > 20) OVER (ORDER BY id), \
     array_agg(id) OVER (PARTITION BY g ORDER BY id), \
     array_agg(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
     string_agg(s, '-') OVER (PARTITION BY g ORDER BY id), every(x < 50) OVER (ORDER BY id) \
     FROM w ORDER BY id",
    "SELECT id, jsonb_agg(x) OVER (ORDER BY id ROWS 1 PRECEDING), \
     json_object_agg(id, s) OVER (PARTITION BY g ORDER BY id) FROM w WHERE id < 6 ORDER BY id",
    "SELECT id, sum(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
     min(ts) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
     max(n) OVER (PARTITION BY g ORDER BY n) FROM w ORDER BY id",
    // Named windows and refinement; several windows in one list.
    "SELECT id, sum(x) OVER w, count(*) OVER (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
     rank() OVER (p ORDER BY x), row_number() OVER p2 \
     FROM w WINDOW w AS (ORDER BY id), p AS (PARTITION BY g), p2 AS (p ORDER BY id DESC) \
     ORDER BY id",
    // Over grouped rows.
    "SELECT g, sum(x), sum(sum(x)) OVER (), rank() OVER (ORDER BY sum(x) DESC NULLS LAST), \
     count(*) OVER (ORDER BY g), (avg(count(*)) OVER ())::float8 FROM w GROUP BY g ORDER BY g",
    "SELECT g, max(x), lag(max(x)) OVER (ORDER BY g) FROM w GROUP BY g HAVING count(*) > 1 \
     ORDER BY g",
    "SELECT count(*), sum(count(*)) OVER () FROM w",
    // DISTINCT, ORDER BY and LIMIT after windows.
    "SELECT DISTINCT g, count(*) OVER (PARTITION BY g) FROM w ORDER BY 1",
    "SELECT id FROM w ORDER BY row_number() OVER (ORDER BY x DESC NULLS LAST, id) LIMIT 4",
    "SELECT id, rank() OVER (ORDER BY x) AS r FROM w ORDER BY r DESC, id LIMIT 3 OFFSET 2",
    "SELECT * FROM (SELECT id, row_number() OVER (PARTITION BY g ORDER BY x DESC, id) AS rn \
     FROM w) q WHERE rn = 1 ORDER BY id",
    "SELECT id, sum(x) OVER (ORDER BY id) + 1, coalesce(lag(x) OVER (ORDER BY id), 0) * 2 \
     FROM w ORDER BY id",
    "SELECT id, (SELECT count(*) FROM w w2 WHERE w2.g = w.g) + sum(x) OVER (PARTITION BY g) \
     FROM w ORDER BY id",
    "SELECT id, (SELECT max(r) FROM (SELECT rank() OVER (ORDER BY x) AS r FROM w w3 \
     WHERE w3.g = w.g) q) FROM w ORDER BY id",
    // Empty input and empty partitions.
    "SELECT x, row_number() OVER (), sum(x) OVER () FROM e",
    "SELECT id, sum(x) OVER (PARTITION BY g) FROM w WHERE id > 100",
    "SELECT id, count(*) OVER (ORDER BY id ROWS BETWEEN 100 FOLLOWING AND 200 FOLLOWING), \
     sum(x) OVER (ORDER BY id ROWS BETWEEN 100 PRECEDING AND 50 PRECEDING) FROM w ORDER BY id",
    // Refused as PostgreSQL refuses.
    "SELECT id FROM w WHERE row_number() OVER () > 1",
    "SELECT g FROM w GROUP BY g HAVING rank() OVER () > 1",
    "SELECT count(*) FROM w GROUP BY row_number() OVER ()",
    "SELECT sum(row_number() OVER ()) OVER () FROM w",
    "SELECT sum(row_number() OVER ()) FROM w",
    "SELECT lower(s) OVER () FROM w",
    "SELECT ntile(0) OVER () FROM w",
    "SELECT nth_value(x, 0) OVER () FROM w",
    "SELECT sum(x) OVER (ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x RANGE BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ROWS BETWEEN NULL PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY x, id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (GROUPS 1 PRECEDING) FROM w",
    "SELECT sum(x) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM w",
    "SELECT sum(x) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER w2 FROM w WINDOW w AS (ORDER BY id ROWS 1 PRECEDING), w2 AS (w)",
    "SELECT sum(x) OVER (p PARTITION BY id) FROM w WINDOW p AS (PARTITION BY g)",
    "SELECT sum(x) OVER (o ORDER BY id) FROM w WINDOW o AS (ORDER BY x)",
    "SELECT sum(x) OVER (nosuch) FROM w",
    "SELECT sum(x) OVER w FROM w WINDOW w AS (), w AS (ORDER BY id)",
    "SELECT sum(x) OVER (ORDER BY s RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY ts RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(x) OVER (ORDER BY d RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT id, row_number() OVER () FROM w FOR UPDATE",
    "SELECT 1 FROM w a JOIN w b ON a.id = row_number() OVER ()",
    "VALUES (row_number() OVER ())",
    "SELECT sum(DISTINCT x) OVER () FROM w",
    "SELECT string_agg(s, ',' ORDER BY s) OVER () FROM w",
    "SELECT row_number() FILTER (WHERE x > 1) OVER () FROM w",
];

#[test]
fn window_functions_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare window functions") else {
        return;
    };
    let script: Vec<&str> = SETUP.iter().chain(QUERIES).copied().collect();
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), &script, &[]).await;
        let got = run_script(&peers.walden_conn(), &script, &[]).await;
        // The queries answer with rows, not only errors: none is vacuous.
        assert!(want.iter().filter(|w| !w.contains("-> ERROR")).count() > 40);
        assert_same(&want, &got);
    });
}
