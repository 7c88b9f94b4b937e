//! LATERAL and correlated subqueries through the server, against a scratch
//! PostgreSQL 15 with the same SQL: LATERAL subqueries and functions in
//! FROM (explicitly lateral or, for functions, implicitly), CROSS / INNER /
//! LEFT JOIN LATERAL ... ON, references to any earlier FROM item (also
//! across the join order's reordering and from inside a parenthesized
//! join), nested laterals, a lateral item inside a correlated subquery,
//! RIGHT / FULL JOIN LATERAL refused (42P10); then correlated scalar
//! aggregate, EXISTS and NOT EXISTS subqueries over tables of tens of
//! thousands of rows, which the grouped pass answers (empty groups, NULL
//! keys, count's 0), compared with PostgreSQL row for row.

use crate::pg_diff;

use pg_diff::{assert_same, connect, runtime, sqlstate_outcomes, Peers};
use std::time::Duration;

const LATERAL: &[&str] = &[
    "CREATE TABLE a (x int, y int)",
    "INSERT INTO a VALUES (1, 10), (2, 20), (3, NULL), (NULL, 40)",
    "CREATE TABLE b (x int, z int)",
    "INSERT INTO b VALUES (1, 100), (1, 101), (3, 300), (4, 400)",
    "CREATE TABLE c (k int PRIMARY KEY, w text)",
    "INSERT INTO c VALUES (1, 'one'), (2, 'two'), (3, 'three'), (100, 'hundred'), (300, 'x')",
    // Functions in FROM are lateral without the keyword.
    "SELECT * FROM a, generate_series(1, a.x) g ORDER BY 1, 3",
    "SELECT a.x, g FROM a CROSS JOIN LATERAL generate_series(a.x, 3) AS g ORDER BY 1, 2",
    "SELECT a.x, u FROM a, unnest(ARRAY[a.x, a.y]) u ORDER BY 1, 2",
    "SELECT a.x, g, o FROM a, generate_series(1, a.x) WITH ORDINALITY AS s(g, o) ORDER BY 1, 2",
    "SELECT count(*) FROM a, generate_series(1, 3) g",
    // LATERAL subqueries.
    "SELECT * FROM a, LATERAL (SELECT b.z FROM b WHERE b.x = a.x) s ORDER BY 1, 3",
    "SELECT * FROM a CROSS JOIN LATERAL (SELECT a.x + 1 AS nx, a.y * 2 AS dy) s ORDER BY 1",
    "SELECT * FROM a, LATERAL (SELECT count(*) AS n, sum(b.z) AS t FROM b WHERE b.x = a.x) s ORDER BY 1",
    "SELECT * FROM a LEFT JOIN LATERAL (SELECT b.z FROM b WHERE b.x = a.x) s ON true ORDER BY 1, 3",
    "SELECT * FROM a LEFT JOIN LATERAL (SELECT b.z FROM b WHERE b.x = a.x) s ON s.z > 100 ORDER BY 1, 3",
    "SELECT * FROM a JOIN LATERAL (SELECT b.z FROM b WHERE b.x = a.x) s ON s.z < 300 ORDER BY 1, 3",
    "SELECT * FROM a, LATERAL (SELECT b.z FROM b WHERE b.x >= a.x ORDER BY b.z DESC LIMIT 1) s ORDER BY 1",
    "SELECT a.x, s.* FROM a LEFT JOIN LATERAL (SELECT b.z FROM b WHERE b.x = a.x ORDER BY z LIMIT 1) s ON true ORDER BY 1",
    // Several items before: a lateral reads any of them.
    "SELECT a.x, b.z, s.w FROM a, b, LATERAL (SELECT c.w FROM c WHERE c.k = b.z / 100 + a.x - 1) s \
     WHERE a.x = b.x ORDER BY 1, 2",
    "SELECT a.x, b.z, c.w FROM a JOIN b ON a.x = b.x, LATERAL (SELECT * FROM c WHERE c.k = b.z) c ORDER BY 1, 2",
    "SELECT a.x, b.z, s.v FROM a, b JOIN LATERAL (SELECT a.y + b.z AS v) s ON true \
     WHERE a.x = b.x ORDER BY 1, 2",
    // Reordered joins keep the lateral item after what it reads.
    "SELECT c.w, a.x, s.g FROM c, a, LATERAL generate_series(a.x, a.x + 1) s(g), b \
     WHERE c.k = a.x AND b.x = a.x AND b.z = 100 ORDER BY 1, 2, 3",
    "SELECT s.n, c.w FROM b, LATERAL (SELECT b.z / 100 AS n) s, c WHERE c.k = s.n ORDER BY 1, 2",
    // Nested laterals; a lateral inside a parenthesized join.
    "SELECT a.x, t.z, t.m FROM a, LATERAL (SELECT b.z, m.m FROM b, LATERAL (SELECT b.z + a.x AS m) m \
     WHERE b.x = a.x) t ORDER BY 1, 2",
    "SELECT a.x, q.z, q.g FROM a, (b JOIN LATERAL generate_series(1, a.x) q2(g) ON true) q(bx, z, g) \
     WHERE q.bx = a.x ORDER BY 1, 2, 3",
    // Inside a correlated subquery, reading the enclosing row too.
    "SELECT a.x, (SELECT sum(s.v) FROM b, LATERAL (SELECT b.z + a.y AS v) s WHERE b.x = a.x) FROM a ORDER BY 1",
    "SELECT a.x FROM a WHERE EXISTS (SELECT 1 FROM b, LATERAL (SELECT b.z WHERE b.x = a.x) s) ORDER BY 1",
    // Aggregates and grouping over a lateral join.
    "SELECT a.x, count(g) FROM a LEFT JOIN LATERAL generate_series(1, a.x) g ON true GROUP BY a.x ORDER BY 1",
    "SELECT DISTINCT s.z FROM a, LATERAL (SELECT z FROM b WHERE b.x <= a.x) s ORDER BY 1",
    // USING, a lateral item without references, a LATERAL first item.
    "SELECT * FROM a JOIN LATERAL (SELECT a.x, a.x * 2 AS d) s USING (x) ORDER BY 1",
    "SELECT count(*) FROM a, LATERAL (SELECT 1 AS one) s",
    "SELECT * FROM LATERAL (SELECT 1 AS one) s",
    // Errors: RIGHT / FULL JOIN LATERAL, a non-lateral subquery reading an
    // earlier item, a lateral reading a later one.
    "SELECT * FROM a RIGHT JOIN LATERAL (SELECT a.x) s ON true",
    "SELECT * FROM a FULL JOIN LATERAL generate_series(1, a.x) g ON true",
    "SELECT * FROM LATERAL (SELECT a.x) s, a",
    // DML with a lateral FROM.
    "CREATE TABLE d (x int PRIMARY KEY, n int)",
    "INSERT INTO d SELECT a.x, s.n FROM a, LATERAL (SELECT count(*) AS n FROM b WHERE b.x = a.x) s WHERE a.x IS NOT NULL",
    "SELECT * FROM d ORDER BY x",
    "UPDATE d SET n = s.m FROM b, LATERAL (SELECT b.z * 2 AS m) s WHERE b.x = d.x AND b.z >= 101",
    "SELECT * FROM d ORDER BY x",
];

/// Tables of tens of thousands of rows (TPC-C's customer, orders and
/// order_line in small), and correlated subqueries over them that the
/// grouped pass answers: scalar aggregates (an empty group is `count`'s 0,
/// `sum`'s NULL), EXISTS and NOT EXISTS, NULL keys, a join inside.
const CORRELATED: &[&str] = &[
    "CREATE TABLE cust (w int, d int, id int, balance numeric(12,2), name text, PRIMARY KEY (w, d, id))",
    "INSERT INTO cust SELECT w, d, id, ((w * 7 + d * 3 + id) % 40)::numeric, 'n' || (id % 97) \
     FROM generate_series(1, 2) w, generate_series(1, 10) d, generate_series(1, 1000) id",
    "CREATE TABLE ord (w int, d int, o int, c_id int, PRIMARY KEY (w, d, o))",
    "INSERT INTO ord SELECT w, d, o, (o * 7) % 1000 + 1 \
     FROM generate_series(1, 2) w, generate_series(1, 10) d, generate_series(1, 600) o",
    "CREATE TABLE ol (w int, d int, o int, n int, amount numeric(6,2), delivered date, tag text, \
     PRIMARY KEY (w, d, o, n))",
    "INSERT INTO ol SELECT w, d, o, n, ((o + n) % 10)::numeric, \
     CASE WHEN o % 3 = 0 THEN NULL ELSE DATE '2026-01-01' END, 'n' || (o % 89) \
     FROM generate_series(1, 2) w, generate_series(1, 10) d, generate_series(1, 600) o, generate_series(1, 4) n",
    "SELECT count(*) FROM cust c WHERE c.balance <> (SELECT sum(ol.amount) FROM ord, ol \
     WHERE ord.w = c.w AND ord.d = c.d AND ord.c_id = c.id \
     AND ol.w = ord.w AND ol.d = ord.d AND ol.o = ord.o AND ol.delivered IS NOT NULL)",
    "SELECT count(*), sum(n), count(n) FROM (SELECT (SELECT count(*) FROM ord \
     WHERE ord.w = c.w AND ord.d = c.d AND ord.c_id = c.id) AS n FROM cust c) s",
    "SELECT count(*), sum(t), count(t) FROM (SELECT (SELECT sum(amount) FROM ol \
     WHERE ol.w = c.w AND ol.d = c.d AND ol.o = c.id AND ol.delivered IS NULL) AS t FROM cust c) s",
    "SELECT sum(v) FROM (SELECT (SELECT coalesce(max(ol.n), -1) + count(*) FROM ol \
     WHERE ol.w = c.w AND ol.o = c.id) AS v FROM cust c) s",
    "SELECT count(*) FROM cust c WHERE EXISTS (SELECT 1 FROM ord \
     WHERE ord.w = c.w AND ord.d = c.d AND ord.c_id = c.id)",
    "SELECT count(*) FROM cust c WHERE NOT EXISTS (SELECT 1 FROM ol \
     WHERE c.w = ol.w AND c.d = ol.d AND c.id = ol.o AND ol.amount > 7)",
    "SELECT count(*) FROM cust c WHERE EXISTS (SELECT 1 FROM ol WHERE ol.tag = c.name AND ol.w = 1)",
    "SELECT c.w, c.d, c.id, (SELECT max(amount) FROM ol WHERE ol.w = c.w AND ol.d = c.d AND ol.o = c.id) \
     FROM cust c WHERE c.id BETWEEN 590 AND 610 AND c.d = 3 ORDER BY 1, 2, 3",
    "CREATE TABLE k (a int, b int)",
    "INSERT INTO k SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE i % 50 END, i FROM generate_series(1, 200) i",
    "SELECT a, b, (SELECT count(*) FROM k k2 WHERE k2.a = k.a), \
     EXISTS (SELECT 1 FROM k k2 WHERE k2.a = k.a AND k2.b > 150), \
     NOT EXISTS (SELECT 1 FROM k k2 WHERE k2.a = k.a AND k2.b < 0) FROM k ORDER BY b",
    "SELECT count(*) FROM k WHERE (SELECT sum(b) FROM k k2 WHERE k2.a = k.a) > 300",
    // EXISTS with other conditions on the enclosing row besides the keys
    // (the key's rows kept whole and tested per row), and keys that are
    // expressions of the enclosing row.
    "SELECT count(*) FROM cust c WHERE EXISTS (SELECT 1 FROM ord \
     WHERE ord.w = c.w AND ord.d = c.d AND ord.c_id = c.id AND ord.o > c.id % 600)",
    "SELECT count(*) FROM cust c WHERE NOT EXISTS (SELECT 1 FROM ol \
     WHERE ol.w = c.w AND ol.d = c.d AND ol.o = c.id AND (ol.amount > c.balance / 4 OR ol.tag = c.name))",
    "SELECT count(*) FROM cust c WHERE EXISTS (SELECT 1 FROM ord \
     WHERE ord.c_id = c.id + 1 AND ord.w = c.w AND ord.d = c.d)",
    "SELECT count(*) FROM cust c WHERE EXISTS (SELECT 1 FROM ord JOIN ol \
     ON ol.w = ord.w AND ol.d = ord.d AND ol.o = ord.o \
     WHERE ord.w = c.w AND ord.c_id = c.id AND ol.amount > c.balance / 5 AND ol.delivered IS NULL)",
    "SELECT count(*) FROM cust c WHERE c.id < 40 AND EXISTS (SELECT 1 FROM ord \
     WHERE ord.w = c.w AND ord.d = c.d AND EXISTS (SELECT 1 FROM ol \
     WHERE ol.w = ord.w AND ol.d = ord.d AND ol.o = ord.o AND ol.n > c.id % 5))",
    "SELECT a, b, EXISTS (SELECT 1 FROM k k2 WHERE k2.a = k.a AND k2.b > k.b), \
     NOT EXISTS (SELECT 1 FROM k k2 WHERE k2.a = k.a AND k2.b < k.b - 100), \
     EXISTS (SELECT 1 FROM k k2 WHERE k2.a = k.a AND k2.b <> k.b AND k2.b > k.a) FROM k ORDER BY b",
    "SELECT count(*) FROM k WHERE EXISTS (SELECT 1 FROM k k2 WHERE k2.a = k.a + 1 AND k2.b > k.b)",
];

#[test]
fn lateral_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare LATERAL") else {
        return;
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let want = sqlstate_outcomes(&connect(&peers.pg_conn()).await, LATERAL).await;
            let walden = connect(&peers.walden_conn()).await;
            let got = sqlstate_outcomes(&walden, LATERAL).await;
            assert_same(&want, &got);
            // EXPLAIN shows the lateral join: a nested loop running its
            // inner side per outer row.
            let plan = explain(
                &walden,
                "EXPLAIN SELECT * FROM a, LATERAL (SELECT b.z FROM b WHERE b.x = a.x) s",
            )
            .await;
            assert!(
                plan.contains("Nested Loop") && plan.contains("Lateral"),
                "{plan}"
            );
        })
        .await
        .expect("timed out")
    });
}

#[test]
fn correlated_subqueries_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare correlated subqueries") else {
        return;
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let want = sqlstate_outcomes(&connect(&peers.pg_conn()).await, CORRELATED).await;
            let walden = connect(&peers.walden_conn()).await;
            let got = sqlstate_outcomes(&walden, CORRELATED).await;
            assert_same(&want, &got);
            // EXPLAIN shows the grouped plan under the subquery.
            let plan = explain(
                &walden,
                "EXPLAIN SELECT count(*) FROM cust c WHERE EXISTS (SELECT 1 FROM ord \
                 WHERE ord.w = c.w AND ord.d = c.d AND ord.c_id = c.id)",
            )
            .await;
            assert!(plan.contains("Grouped Pass"), "{plan}");
            // So is an EXISTS testing the enclosing row besides its keys.
            let plan = explain(
                &walden,
                "EXPLAIN SELECT count(*) FROM cust c WHERE EXISTS (SELECT 1 FROM ord \
                 WHERE ord.w = c.w AND ord.c_id = c.id AND ord.o > c.d)",
            )
            .await;
            assert!(
                plan.contains("then tested by the other conditions"),
                "{plan}"
            );
        })
        .await
        .expect("timed out")
    });
}

/// EXPLAIN's lines, joined.
async fn explain(c: &tokio_postgres::Client, sql: &str) -> String {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
