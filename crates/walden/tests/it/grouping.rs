//! The select list's grouping and DISTINCT paths through the server against
//! a scratch PostgreSQL 15, statement by statement in the text format:
//! `SELECT DISTINCT ON`, `GROUPING SETS` / `ROLLUP` / `CUBE` with
//! `GROUPING()`, and the ordered-set and hypothetical-set aggregates
//! (`WITHIN GROUP`). Answers are compared row for row (NULLs of rolled-up
//! keys beside real NULLs in the data, empty inputs, thousands of rows);
//! the refusals by SQLSTATE.
//!
//! Every query's ORDER BY decides the order of all its rows (ties broken
//! by GROUPING() or a unique column), so both servers have one answer.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, run_script, sqlstate_outcomes, Peers};
use std::time::Duration;

const SETUP: &[&str] = &[
    "CREATE TABLE s (id int PRIMARY KEY, region text, product text, qty int, price numeric(8,2), \
     at date, dur interval)",
    "INSERT INTO s VALUES \
     (1, 'north', 'apple', 10, 1.50, '2024-01-01', '1 hour'), \
     (2, 'north', 'apple', 5, 1.75, '2024-01-03', '2 hours'), \
     (3, 'north', 'pear', 7, 2.00, '2024-01-02', '30 minutes'), \
     (4, 'south', 'apple', 3, 1.60, '2024-01-05', NULL), \
     (5, 'south', 'pear', NULL, 2.10, '2024-01-04', '1 day'), \
     (6, 'south', NULL, 8, NULL, '2024-01-04', '45 minutes'), \
     (7, NULL, 'apple', 4, 1.55, NULL, '3 hours'), \
     (8, NULL, NULL, NULL, NULL, NULL, NULL), \
     (9, 'east', 'plum', 12, 3.00, '2024-01-09', '10 minutes'), \
     (10, 'north', 'pear', 7, 2.20, '2024-01-08', '1 hour')",
    "CREATE TABLE e (id int, g int, x float8)",
    // Thousands of rows: groups of every size, NULL keys and values.
    "CREATE TABLE big (id int PRIMARY KEY, g int, h int, x float8, n numeric)",
    "INSERT INTO big SELECT i, CASE WHEN i % 97 = 0 THEN NULL ELSE i % 13 END, i % 7, \
     CASE WHEN i % 50 = 0 THEN NULL ELSE (i * 37 % 1009) / 8.0 END, (i * 7919 % 10007) / 100.0 \
     FROM generate_series(1, 6000) AS i",
];

const QUERIES: &[&str] = &[
    // DISTINCT ON: the first row of each group in ORDER BY order.
    "SELECT DISTINCT ON (region) region, id, at FROM s ORDER BY region, at DESC, id",
    "SELECT DISTINCT ON (region) region, id, at FROM s ORDER BY region NULLS FIRST, at, id",
    "SELECT DISTINCT ON (region, product) region, product, qty FROM s \
     ORDER BY region, product, qty DESC NULLS LAST, id",
    "SELECT DISTINCT ON (product, region) region, product, id FROM s \
     ORDER BY region DESC, product, id DESC",
    "SELECT DISTINCT ON (1) region, id FROM s ORDER BY 1, 2 DESC",
    "SELECT DISTINCT ON (r) region AS r, id FROM s ORDER BY r, id",
    "SELECT DISTINCT ON (upper(region)) upper(region), id FROM s ORDER BY upper(region), id DESC",
    "SELECT DISTINCT ON (qty % 2) qty % 2, id, qty FROM s ORDER BY qty % 2, qty, id",
    "SELECT DISTINCT ON (region) region, id FROM s ORDER BY region, id LIMIT 2",
    "SELECT DISTINCT ON (region) region, id FROM s ORDER BY region, id LIMIT 2 OFFSET 1",
    "SELECT DISTINCT ON (region) id FROM s ORDER BY region, id DESC",
    // Without ORDER BY, some row per group: one row each.
    "SELECT count(*) FROM (SELECT DISTINCT ON (region) region, id FROM s) d",
    "SELECT DISTINCT ON (a.region) a.region, b.id FROM s a JOIN s b ON a.product = b.product \
     ORDER BY a.region, b.id DESC",
    "SELECT * FROM (SELECT DISTINCT ON (product) product, id, qty FROM s \
     ORDER BY product, qty DESC NULLS LAST, id) d WHERE qty > 4 ORDER BY id",
    "SELECT DISTINCT ON (region) region, count(*) FROM s GROUP BY region, product \
     ORDER BY region, count(*) DESC, product",
    "SELECT DISTINCT ON (g) g, id, x FROM big ORDER BY g, x DESC NULLS LAST, id",
    "SELECT count(*), sum(id) FROM (SELECT DISTINCT ON (g, h) id FROM big ORDER BY g, h, id) d",
    "SELECT DISTINCT ON (g) g, id FROM e ORDER BY g, id",
    // ORDER BY may be shorter than DISTINCT ON.
    "SELECT * FROM (SELECT DISTINCT ON (region, product) region, product FROM s \
     ORDER BY product) d ORDER BY 1, 2",
    // GROUPING SETS, ROLLUP, CUBE; GROUPING tells rolled-up NULLs from NULL data.
    "SELECT region, product, sum(qty), count(*), grouping(region), grouping(region, product) \
     FROM s GROUP BY ROLLUP (region, product) \
     ORDER BY region, product, grouping(region, product)",
    "SELECT region, product, sum(qty), count(*), grouping(product, region) \
     FROM s GROUP BY CUBE (region, product) ORDER BY region, product, grouping(product, region)",
    "SELECT region, product, count(*) FROM s GROUP BY GROUPING SETS ((region), (product), ()) \
     ORDER BY grouping(region, product), region, product",
    "SELECT region, product, count(qty) FROM s GROUP BY GROUPING SETS (region, product, \
     (region, product)) ORDER BY grouping(region, product), region, product",
    "SELECT region, product, qty, count(*) FROM s GROUP BY region, ROLLUP (product, qty) \
     ORDER BY region, product, qty, grouping(product, qty)",
    "SELECT region, product, count(*) FROM s GROUP BY GROUPING SETS ((region, product), \
     ROLLUP (region), CUBE (product)) ORDER BY grouping(region, product), region, product, 3",
    "SELECT region, product, count(*) FROM s GROUP BY ROLLUP (region), CUBE (product) \
     ORDER BY grouping(region, product), region, product, 3",
    "SELECT region, product, count(*) FROM s GROUP BY ROLLUP ((region, product)) \
     ORDER BY grouping(region, product), region, product",
    "SELECT count(*) FROM s GROUP BY ()",
    "SELECT region, count(*) FROM s GROUP BY (), region ORDER BY region",
    "SELECT region, count(*) FROM s GROUP BY GROUPING SETS ((region), (region)) \
     ORDER BY region, 2",
    "SELECT 1 AS one, count(*) FROM s GROUP BY GROUPING SETS ((), ())",
    // Empty input: only the empty grouping sets give a row.
    "SELECT g, count(*), sum(x) FROM e GROUP BY ROLLUP (g) ORDER BY g",
    "SELECT g, count(*) FROM e GROUP BY GROUPING SETS ((), (), (g))",
    "SELECT count(*) FROM e GROUP BY ()",
    // Positions, aliases and expressions as keys.
    "SELECT region AS r, product, count(*) FROM s GROUP BY ROLLUP (1, 2) \
     ORDER BY grouping(region, product), 1, 2",
    "SELECT upper(region), count(*) FROM s GROUP BY ROLLUP (upper(region)) \
     ORDER BY grouping(upper(region)), 1",
    "SELECT region || '/' || product, count(*) FROM s GROUP BY CUBE (region, product) \
     ORDER BY 1, 2",
    // Aggregates with DISTINCT, ORDER BY and FILTER; HAVING.
    "SELECT region, count(DISTINCT product), string_agg(product, ',' ORDER BY product DESC), \
     sum(qty) FILTER (WHERE qty > 5), array_agg(id ORDER BY id) \
     FROM s GROUP BY ROLLUP (region) ORDER BY grouping(region), region",
    "SELECT region, product, sum(qty) FROM s GROUP BY ROLLUP (region, product) \
     HAVING sum(qty) > 10 OR grouping(region) = 1 ORDER BY grouping(region, product), 1, 2",
    "SELECT region, count(*) FROM s GROUP BY CUBE (region) HAVING grouping(region) = 0 \
     AND region IS NULL",
    "SELECT g, h, count(*), sum(x), avg(n), min(id), max(id) FROM big \
     GROUP BY CUBE (g, h) ORDER BY g, h, grouping(g, h)",
    "SELECT count(*), sum(c), sum(s) FROM (SELECT g, h, count(*) AS c, sum(id) AS s FROM big \
     GROUP BY GROUPING SETS ((g, h), (g), (h), ())) q",
    "SELECT grouping(region), count(*) FROM s GROUP BY region ORDER BY region",
    "SELECT region, product, rank() OVER (PARTITION BY grouping(region, product) \
     ORDER BY count(*) DESC, region, product) FROM s GROUP BY ROLLUP (region, product) \
     ORDER BY grouping(region, product), region, product",
    // Ordered-set aggregates.
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY qty), \
     percentile_cont(0.25) WITHIN GROUP (ORDER BY price), \
     percentile_disc(0.5) WITHIN GROUP (ORDER BY qty), \
     percentile_disc(0.25) WITHIN GROUP (ORDER BY price), mode() WITHIN GROUP (ORDER BY product) \
     FROM s",
    "SELECT percentile_cont(0) WITHIN GROUP (ORDER BY qty), \
     percentile_cont(1) WITHIN GROUP (ORDER BY qty), percentile_disc(0) WITHIN GROUP (ORDER BY qty), \
     percentile_disc(1) WITHIN GROUP (ORDER BY qty), percentile_cont(0.5) WITHIN GROUP \
     (ORDER BY qty DESC), percentile_disc(0.3) WITHIN GROUP (ORDER BY at DESC) FROM s",
    "SELECT percentile_cont(ARRAY[0, 0.1, NULL, 0.5, 1]) WITHIN GROUP (ORDER BY qty), \
     percentile_disc(ARRAY[0.2, 0.8]) WITHIN GROUP (ORDER BY product) FROM s",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY dur), \
     percentile_cont(0.4) WITHIN GROUP (ORDER BY dur), percentile_disc(0.5) WITHIN GROUP (ORDER BY dur) FROM s",
    "SELECT pg_typeof(percentile_cont(0.5) WITHIN GROUP (ORDER BY qty)), \
     pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY price)), \
     pg_typeof(mode() WITHIN GROUP (ORDER BY at)), \
     pg_typeof(percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY qty)) FROM s",
    "SELECT region, percentile_cont(0.5) WITHIN GROUP (ORDER BY qty), mode() WITHIN GROUP \
     (ORDER BY product), mode() WITHIN GROUP (ORDER BY product DESC) FROM s GROUP BY region \
     ORDER BY region",
    "SELECT qty, percentile_cont(qty / 20.0) WITHIN GROUP (ORDER BY price) FROM s \
     GROUP BY qty ORDER BY qty",
    "SELECT percentile_cont(NULL) WITHIN GROUP (ORDER BY qty), \
     percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM s LEFT JOIN e ON false",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY g) \
     FROM e",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY qty) FILTER (WHERE region = 'north') \
     FROM s",
    "SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.9) WITHIN \
     GROUP (ORDER BY n), mode() WITHIN GROUP (ORDER BY h) FROM big GROUP BY g ORDER BY g",
    "SELECT region, product, percentile_disc(0.5) WITHIN GROUP (ORDER BY qty) FROM s \
     GROUP BY ROLLUP (region, product) ORDER BY grouping(region, product), region, product",
    "SELECT x FROM (VALUES (1), (1), (2)) v(x) GROUP BY (x) ORDER BY 1",
    // Hypothetical-set aggregates.
    "SELECT dense_rank(x) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (1), (2), (2), (3)) v(x) \
     GROUP BY (x) ORDER BY 1",
    "SELECT rank('b') WITHIN GROUP (ORDER BY product), rank('pear') WITHIN GROUP \
     (ORDER BY product DESC) FROM s",
    "SELECT rank(5) WITHIN GROUP (ORDER BY qty), dense_rank(7) WITHIN GROUP (ORDER BY qty), \
     percent_rank(7) WITHIN GROUP (ORDER BY qty), cume_dist(7) WITHIN GROUP (ORDER BY qty) FROM s",
    "SELECT rank(7) WITHIN GROUP (ORDER BY qty DESC), rank(NULL) WITHIN GROUP (ORDER BY qty), \
     rank(NULL) WITHIN GROUP (ORDER BY qty NULLS FIRST), \
     rank('north', 7) WITHIN GROUP (ORDER BY region, qty) FROM s",
    "SELECT rank(1) WITHIN GROUP (ORDER BY x), percent_rank(1) WITHIN GROUP (ORDER BY x), \
     cume_dist(1) WITHIN GROUP (ORDER BY x), dense_rank(1) WITHIN GROUP (ORDER BY x) FROM e",
    "SELECT g, rank(50) WITHIN GROUP (ORDER BY x), cume_dist(50) WITHIN GROUP (ORDER BY x) \
     FROM big GROUP BY g ORDER BY g",
];

/// Refusals: the same SQLSTATE as PostgreSQL (the wording may differ).
const ERRORS: &[&str] = &[
    "SELECT DISTINCT ON (region) region, id FROM s ORDER BY id",
    "SELECT DISTINCT ON (region) region, id FROM s ORDER BY id, region",
    "SELECT DISTINCT ON (region, qty) region, id FROM s ORDER BY region, id",
    "SELECT DISTINCT ON (5) region FROM s",
    "SELECT region, product FROM s GROUP BY ROLLUP (region)",
    "SELECT grouping(qty) FROM s GROUP BY region",
    "SELECT count(*) FROM s GROUP BY CUBE (id, id, id, id, id, id, id, id, id, id, id, id, id)",
    "SELECT count(*) FROM s GROUP BY CUBE (id, id, id, id, id, id, id, id, id, id, id, id), \
     CUBE (id, qty)",
    "SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY qty) FROM s",
    "SELECT percentile_cont(-0.1) WITHIN GROUP (ORDER BY x) FROM e",
    "SELECT percentile_disc(ARRAY[0.5, 2]) WITHIN GROUP (ORDER BY qty) FROM s",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY region) FROM s",
    "SELECT percentile_cont(0.5) FROM s",
    "SELECT sum(qty) WITHIN GROUP (ORDER BY id) FROM s",
    "SELECT region, percentile_cont(qty / 10.0) WITHIN GROUP (ORDER BY price) FROM s \
     GROUP BY region",
    "SELECT rank(1, 2) WITHIN GROUP (ORDER BY qty) FROM s",
    "SELECT mode(product) FROM s",
    "SELECT rank(3) WITHIN GROUP (ORDER BY region) FROM s",
    "SELECT rank('fred') WITHIN GROUP (ORDER BY qty) FROM s",
];

#[test]
fn grouping_and_distinct_on_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare grouping and DISTINCT ON") else {
        return;
    };
    let script: Vec<&str> = SETUP.iter().chain(QUERIES).copied().collect();
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), &script, &[]).await;
        let got = run_script(&peers.walden_conn(), &script, &[]).await;
        // The queries answer with rows, not errors: none is vacuous.
        let answered = want.iter().filter(|w| !w.contains("-> ERROR")).count();
        assert_eq!(answered, script.len(), "{want:#?}");
        assert_same(&want, &got);
        let pg = connect(&peers.pg_conn()).await;
        let walden = connect(&peers.walden_conn()).await;
        let want = sqlstate_outcomes(&pg, ERRORS).await;
        let got = sqlstate_outcomes(&walden, ERRORS).await;
        assert!(want.iter().all(|w| w.contains("-> ERROR")), "{want:#?}");
        assert_same(&want, &got);
    });
}

/// An aggregate over only an enclosing query's columns belongs to that
/// query in PostgreSQL; Walden refuses it (it computed it per inner group).
#[test]
fn outer_level_aggregates_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(30), async {
        let c = connect(&walden.conn_str()).await;
        let got = sqlstate_outcomes(
            &c,
            &[
                "SELECT (SELECT sum(x) FROM (VALUES (1), (2)) v(a)) FROM generate_series(1, 3) g(x)",
                "SELECT (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) \
                 FROM (VALUES (1)) v(a)) FROM generate_series(1, 3) g(x)",
                "SELECT (SELECT sum(x + a) FROM (VALUES (1), (2)) v(a)) FROM generate_series(1, 2) g(x)",
            ],
        )
        .await;
        assert!(got[0].ends_with("-> ERROR 0A000"), "{got:#?}");
        assert!(got[1].ends_with("-> ERROR 0A000"), "{got:#?}");
        // Inner and outer columns together: the inner query's aggregate.
        assert!(got[2].ends_with("-> 5; 7; ok 2"), "{got:#?}");
    });
}
