//! The access paths TPC-C's statements need, compared with PostgreSQL 15
//! statement by statement on a TPC-C-like schema: equalities on a leading
//! part of a primary key then a range on the next column (reads, UPDATE,
//! DELETE, a transaction's own writes), equalities carried through join
//! keys, index nested-loop joins (inner and left, through the primary key
//! and through an index, NULL and mixed-type keys), `ORDER BY key LIMIT n
//! FOR UPDATE` through the key's order, and columns that depend on a
//! grouped primary key. Each new path must return exactly the rows the
//! scans gave; PostgreSQL's answers are the reference.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, run_script, Peers};
use std::time::Duration;

const SETUP: &[&str] = &[
    "CREATE TABLE warehouse (w_id int PRIMARY KEY, w_name varchar(10), w_tax numeric(4,4), \
     w_ytd numeric(12,2))",
    "INSERT INTO warehouse SELECT g, 'w' || g, g / 100.0, g * 1000 FROM generate_series(1, 3) g",
    "CREATE TABLE district (d_w_id int, d_id int, d_name text, d_ytd numeric(12,2), \
     PRIMARY KEY (d_w_id, d_id))",
    "INSERT INTO district SELECT w, d, 'd' || d, w * 100 + d FROM generate_series(1, 3) w, \
     generate_series(1, 4) d",
    "CREATE TABLE customer (c_w_id int, c_d_id int, c_id int, c_last varchar(16), \
     c_discount numeric(4,4), c_credit char(2), PRIMARY KEY (c_w_id, c_d_id, c_id))",
    "INSERT INTO customer SELECT w, d, c, 'L' || (c % 7), c / 1000.0, \
     CASE WHEN c % 5 = 0 THEN 'BC' ELSE 'GC' END \
     FROM generate_series(1, 3) w, generate_series(1, 4) d, generate_series(1, 30) c",
    "CREATE TABLE orders (o_w_id int, o_d_id int, o_id int, o_c_id int, \
     PRIMARY KEY (o_w_id, o_d_id, o_id))",
    "CREATE INDEX orders_c ON orders (o_w_id, o_d_id, o_c_id)",
    "INSERT INTO orders SELECT w, d, o, (o * 7) % 30 + 1 FROM generate_series(1, 3) w, \
     generate_series(1, 4) d, generate_series(1, 40) o",
    "CREATE TABLE order_line (ol_w_id int, ol_d_id int, ol_o_id int, ol_number int, \
     ol_i_id int, ol_amount numeric(6,2), ol_delivery_d timestamp, \
     PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
    "INSERT INTO order_line SELECT w, d, o, n, \
     CASE WHEN (o + n) % 23 = 0 THEN NULL ELSE (o * 13 + n * 7) % 1200 + 1 END, \
     (o * n) % 97 + 0.5, NULL \
     FROM generate_series(1, 3) w, generate_series(1, 4) d, generate_series(1, 40) o, \
     generate_series(1, 6) n WHERE n <= 3 + o % 4",
    "CREATE TABLE stock (s_w_id int, s_i_id int, s_quantity int, PRIMARY KEY (s_w_id, s_i_id))",
    "INSERT INTO stock SELECT w, i, (i * 31) % 100 FROM generate_series(1, 2) w, \
     generate_series(1, 1000) i",
    "CREATE TABLE new_orders (no_w_id int, no_d_id int, no_o_id int, \
     PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
    "INSERT INTO new_orders SELECT w, d, o FROM generate_series(1, 3) w, \
     generate_series(1, 4) d, generate_series(21, 40) o",
    // Other key types: bigint and smallint, text.
    "CREATE TABLE mixed (k bigint, j smallint, v text, PRIMARY KEY (k, j))",
    "INSERT INTO mixed SELECT g % 5, g, 'v' || g FROM generate_series(1, 60) g",
    "CREATE TABLE texty (a text, b text, n int, PRIMARY KEY (a, b))",
    "INSERT INTO texty SELECT chr(65 + g % 3), chr(97 + g % 5) || g, g FROM generate_series(1, 40) g",
    "INSERT INTO texty SELECT lower(chr(65 + g % 3)), chr(97 + g % 5) || g, g FROM generate_series(1, 10) g",
];

const QUERIES: &[&str] = &[
    // Correlated subqueries whose join filters on the outer row (consistency
    // check 10's shape), inner and left joins.
    "SELECT c.c_d_id, c.c_id, (SELECT sum(ol_amount) FROM orders, order_line \
     WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id AND o_w_id = c.c_w_id \
     AND o_d_id = c.c_d_id AND o_c_id = c.c_id) FROM customer c WHERE c.c_w_id = 2 ORDER BY 1, 2",
    "SELECT c.c_d_id, c.c_id, (SELECT count(*) || '/' || count(ol_number) FROM orders \
     LEFT JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
     AND ol_number = c.c_id % 5 WHERE o_w_id = c.c_w_id AND o_d_id = c.c_d_id \
     AND o_c_id = c.c_id) FROM customer c WHERE c.c_w_id = 3 AND c.c_d_id = 2 ORDER BY 1, 2",
    // Three of order_line's four key columns (order-status, delivery's SUM).
    "SELECT ol_number, ol_i_id, ol_amount FROM order_line \
     WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7 ORDER BY ol_number",
    "SELECT sum(ol_amount), count(*) FROM order_line WHERE ol_o_id = 7 AND ol_d_id = 2 AND ol_w_id = 1",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 999",
    // Two of them, one, and a range on the next column.
    "SELECT count(*), sum(ol_amount) FROM order_line WHERE ol_w_id = 2 AND ol_d_id = 3",
    "SELECT count(*), sum(ol_amount) FROM order_line WHERE ol_w_id = 3",
    "SELECT ol_o_id, ol_number FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 \
     AND ol_o_id BETWEEN 5 AND 9 ORDER BY 1, 2",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id < 4",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id <= 4",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id > 37",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id >= 37",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id >= 28 AND ol_o_id < 30",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id BETWEEN 9 AND 5",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id > 9 AND ol_o_id < 9",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7 AND ol_number > 2",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7 AND ol_number < 3",
    "SELECT ol_o_id, ol_number FROM order_line WHERE ol_w_id = 2 AND ol_d_id = 1 \
     AND ol_o_id > 35 ORDER BY ol_o_id DESC, ol_number DESC",
    "SELECT ol_o_id, ol_number FROM order_line WHERE ol_w_id = 2 AND ol_d_id = 1 \
     AND ol_o_id < 5 ORDER BY ol_o_id DESC, ol_number DESC LIMIT 4",
    // Constants of other types: exact conversions narrow, others do not.
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7.0",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7.5",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2.0 AND ol_o_id > 6.5 AND ol_o_id < 8.5",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2::bigint AND ol_o_id = '7'",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id > 38.5",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1.5 AND ol_d_id = 2",
    "SELECT count(*) FROM order_line WHERE ol_w_id = NULL AND ol_d_id = 2",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id < NULL",
    "SELECT count(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id IN (3, 4.0, NULL, 4)",
    "SELECT count(*) FROM mixed WHERE k = 2 AND j > 30",
    "SELECT count(*) FROM mixed WHERE k = 2 AND j > 40000",
    "SELECT count(*) FROM mixed WHERE k = 2 AND j < 40000",
    "SELECT count(*) FROM mixed WHERE k = 1099511627776 AND j = 1",
    "SELECT count(*) FROM mixed WHERE k = 3 AND j BETWEEN 10.5 AND 20",
    "SELECT count(*), sum(n) FROM texty WHERE a = 'A'",
    "SELECT count(*), sum(n) FROM texty WHERE a = 'a'",
    "SELECT count(*), sum(n) FROM texty WHERE a = 'B' AND b >= 'c' AND b < 'd'",
    "SELECT count(*), sum(n) FROM texty WHERE a = 'b' AND b > 'a'",
    // Prepared, with parameters (NULL among them).
    "PREPARE os(int, int, int) AS SELECT ol_number, ol_amount FROM order_line \
     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 ORDER BY ol_number",
    "EXECUTE os(1, 2, 7)",
    "EXECUTE os(3, 4, 40)",
    "EXECUTE os(1, NULL, 7)",
    "PREPARE sl(int, int, int, int) AS SELECT count(*) FROM order_line \
     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4",
    "EXECUTE sl(1, 2, 20, 10)",
    "EXECUTE sl(2, 2, 10, 20)",
    // Writes find their rows the same way (delivery's UPDATE).
    "UPDATE order_line SET ol_delivery_d = '2024-01-02 03:04:05' \
     WHERE ol_o_id = 7 AND ol_d_id = 2 AND ol_w_id = 1",
    "SELECT count(*) FROM order_line WHERE ol_delivery_d IS NOT NULL",
    "DELETE FROM order_line WHERE ol_w_id = 3 AND ol_d_id = 4 AND ol_o_id > 38",
    "SELECT count(*) FROM order_line",
    // A transaction's own writes, seen through the prefix.
    "BEGIN",
    "INSERT INTO order_line VALUES (1, 2, 7, 9, 5, 1.25, NULL), (1, 2, 8, 1, 5, 1.25, NULL)",
    "UPDATE order_line SET ol_amount = 99 WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7 AND ol_number = 1",
    "DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7 AND ol_number = 2",
    "SELECT ol_number, ol_amount FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7 ORDER BY 1",
    "SELECT ol_o_id, ol_number FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 \
     AND ol_o_id BETWEEN 7 AND 8 ORDER BY 1 DESC, 2 DESC",
    "ROLLBACK",
    "SELECT ol_number, ol_amount FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 7 ORDER BY 1",
    // Equalities carried through join keys (new-order's customer, warehouse).
    "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
     WHERE w_id = 1 AND c_w_id = w_id AND c_d_id = 2 AND c_id = 5",
    "SELECT c_id, w_name FROM customer JOIN warehouse ON c_w_id = w_id \
     WHERE c_w_id = 2 AND c_d_id = 3 AND c_id < 4 ORDER BY c_id",
    "SELECT count(*) FROM customer, district, warehouse \
     WHERE c_w_id = d_w_id AND c_d_id = d_id AND d_w_id = w_id AND w_id = 3 AND d_id = 1",
    "SELECT count(*) FROM customer, warehouse WHERE c_w_id = w_id AND w_id = 1.5",
    "SELECT count(*) FROM customer, warehouse WHERE c_w_id = w_id AND w_id = NULL",
    "SELECT count(*) FROM mixed, warehouse WHERE k = w_id AND w_id = 2",
    "SELECT count(*) FROM customer LEFT JOIN warehouse ON c_w_id = w_id AND w_id = 2 WHERE c_d_id = 1",
    // Index nested-loop joins (stock-level).
    "SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = 1 AND ol_d_id = 2 \
     AND ol_o_id < 20 AND ol_o_id >= 10 AND s_w_id = 1 AND s_i_id = ol_i_id AND s_quantity < 50",
    "SELECT ol_o_id, ol_number, s_quantity FROM order_line JOIN stock ON s_i_id = ol_i_id \
     AND s_w_id = ol_w_id WHERE ol_w_id = 2 AND ol_d_id = 1 AND ol_o_id BETWEEN 3 AND 6 ORDER BY 1, 2",
    "SELECT ol_o_id, ol_number, ol_i_id, s_quantity FROM order_line LEFT JOIN stock \
     ON s_i_id = ol_i_id AND s_w_id = 2 AND s_quantity > 20 \
     WHERE ol_w_id = 3 AND ol_d_id = 1 AND ol_o_id BETWEEN 20 AND 24 ORDER BY 1, 2",
    "SELECT count(*), sum(s_quantity) FROM order_line JOIN stock ON s_i_id = ol_amount \
     AND s_w_id = 1 WHERE ol_w_id = 1 AND ol_d_id = 1",
    "SELECT count(*) FROM order_line JOIN stock ON s_i_id = ol_i_id + 0 AND s_w_id = 1 \
     WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id < 10",
    "SELECT c_id, o_id FROM customer JOIN orders ON o_w_id = c_w_id AND o_d_id = c_d_id \
     AND o_c_id = c_id WHERE c_w_id = 1 AND c_d_id = 1 AND c_id BETWEEN 3 AND 6 ORDER BY 1, 2",
    "SELECT c_id, count(o_id) FROM customer LEFT JOIN orders ON o_w_id = c_w_id AND o_d_id = c_d_id \
     AND o_c_id = c_id WHERE c_w_id = 2 AND c_d_id = 4 GROUP BY c_id ORDER BY 1",
    // A condition on an outer join's rows from a later join's ON filters
    // the joined rows; it does not join the outer join's condition.
    "SELECT count(*), count(s_i_id) FROM order_line LEFT JOIN stock ON s_i_id = ol_i_id \
     AND s_w_id = ol_w_id JOIN warehouse ON w_id = ol_w_id AND s_quantity > 50 WHERE ol_d_id = 1",
    "SELECT count(*), count(s_i_id) FROM order_line LEFT JOIN stock ON s_i_id = ol_i_id \
     AND s_w_id = 1 JOIN warehouse ON w_id = ol_w_id AND s_w_id = ol_w_id WHERE ol_d_id = 1",
    "SELECT count(*), count(s_i_id) FROM stock RIGHT JOIN order_line ON s_i_id = ol_i_id \
     AND s_w_id = 2 AND s_quantity < 30 WHERE ol_w_id = 2 AND ol_d_id = 2",
    "PREPARE stl(int, int, int, int, int) AS SELECT count(DISTINCT s_i_id) FROM order_line, stock \
     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 AND s_w_id = $1 \
     AND s_i_id = ol_i_id AND s_quantity < $5",
    "EXECUTE stl(1, 2, 20, 10, 50)",
    "EXECUTE stl(2, 3, 40, 1, 90)",
    "EXECUTE stl(3, 3, 40, 1, 90)",
    "BEGIN",
    "UPDATE stock SET s_quantity = 0 WHERE s_w_id = 1 AND s_i_id < 400",
    "DELETE FROM stock WHERE s_w_id = 1 AND s_i_id BETWEEN 400 AND 600",
    "EXECUTE stl(1, 2, 40, 1, 50)",
    "ROLLBACK",
    "EXECUTE stl(1, 2, 40, 1, 50)",
    // Columns that depend on a grouped primary key.
    "SELECT w_id, w_ytd, w_name FROM warehouse GROUP BY w_id ORDER BY w_id",
    "SELECT warehouse.w_id, warehouse.w_ytd, sum(d_ytd) FROM warehouse, district \
     WHERE d_w_id = w_id GROUP BY warehouse.w_id ORDER BY 1",
    "SELECT d_w_id, d_id, d_name, d_ytd FROM district GROUP BY d_id, d_w_id HAVING d_ytd > 200 ORDER BY 1, 2",
    "SELECT w_id, w_ytd FROM warehouse GROUP BY w_id HAVING w_ytd <> (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id) ORDER BY 1",
    "SELECT d_w_id, d_ytd FROM district GROUP BY d_w_id",
    "SELECT w_id, d_name FROM warehouse, district WHERE d_w_id = w_id GROUP BY w_id",
    "SELECT d_w_id, d_id, w_name FROM warehouse, district WHERE d_w_id = w_id GROUP BY d_w_id, d_id",
    // ORDER BY key LIMIT n FOR UPDATE (delivery), in either direction.
    "BEGIN",
    "SELECT no_o_id FROM new_orders WHERE no_d_id = 2 AND no_w_id = 1 ORDER BY no_o_id LIMIT 1 FOR UPDATE",
    "DELETE FROM new_orders WHERE no_w_id = 1 AND no_d_id = 2 AND no_o_id = 21",
    "SELECT no_o_id FROM new_orders WHERE no_d_id = 2 AND no_w_id = 1 ORDER BY no_o_id LIMIT 1 FOR UPDATE",
    "INSERT INTO new_orders VALUES (1, 2, 5), (1, 2, 50)",
    "SELECT no_o_id FROM new_orders WHERE no_d_id = 2 AND no_w_id = 1 ORDER BY no_o_id LIMIT 2 FOR UPDATE",
    "SELECT no_o_id FROM new_orders WHERE no_d_id = 2 AND no_w_id = 1 ORDER BY no_o_id DESC LIMIT 3 FOR UPDATE",
    "SELECT no_o_id FROM new_orders WHERE no_w_id = 1 AND no_d_id = 2 AND no_o_id > 30 \
     ORDER BY no_w_id, no_d_id, no_o_id LIMIT 2 OFFSET 3 FOR UPDATE",
    "SELECT no_d_id, no_o_id FROM new_orders WHERE no_w_id = 3 ORDER BY no_d_id DESC, no_o_id DESC LIMIT 3 FOR UPDATE",
    "SELECT no_o_id FROM new_orders WHERE no_w_id = 3 AND no_d_id = 9 ORDER BY no_o_id LIMIT 1 FOR UPDATE",
    "SELECT no_o_id FROM new_orders WHERE no_w_id = 3 AND no_d_id = 1 ORDER BY no_o_id LIMIT 0 FOR UPDATE",
    "SELECT no_o_id FROM new_orders WHERE no_w_id = 3 AND no_d_id = 1 AND no_o_id % 7 = 0 \
     ORDER BY no_o_id LIMIT 2 FOR UPDATE",
    "SELECT no_o_id FROM new_orders WHERE no_w_id = NULL AND no_d_id = 1 ORDER BY no_o_id LIMIT 1 FOR UPDATE",
    "COMMIT",
    "SELECT count(*), min(no_o_id), max(no_o_id) FROM new_orders WHERE no_w_id = 1 AND no_d_id = 2",
];

#[test]
fn key_prefixes_joins_and_dependencies_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare key-prefix access paths") else {
        return;
    };
    let script: Vec<&str> = SETUP.iter().chain(QUERIES).copied().collect();
    block_on_within(Duration::from_secs(240), async {
        let want = run_script(&peers.pg_conn(), &script, &[]).await;
        let got = run_script(&peers.walden_conn(), &script, &[]).await;
        assert!(want.iter().filter(|w| !w.contains("-> ERROR")).count() > 100);
        assert_same(&want, &got);
    });
}

/// The seeks `orders_c` has served so far.
async fn seeks(c: &tokio_postgres::Client) -> i64 {
    c.query_one(
        "SELECT user_seeks FROM sys.dm_db_index_usage_stats WHERE index_name = 'orders_c'",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// A join on an index's columns searches it once per outer row, instead of
/// reading the inner table whole.
#[test]
fn joins_search_the_inner_index_per_row() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        for s in SETUP {
            c.batch_execute(s).await.unwrap();
        }
        let before = seeks(&c).await;
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM customer JOIN orders ON o_w_id = c_w_id \
                 AND o_d_id = c_d_id AND o_c_id = c_id \
                 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id BETWEEN 3 AND 6",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        // Four customers, each with the orders whose (o * 7) % 30 + 1 is its id.
        assert_eq!((n, seeks(&c).await - before), (6, 4));
    });
}

/// A correlated subquery over a join (TPC-C's consistency check 10: each
/// customer's delivered order lines) searches `orders_c` once per outer
/// row with the outer row's values, instead of joining both tables whole
/// for each; and what each execution materialized is given back to the
/// statement's memory budget, so 3,000 executions fit in 8 MB.
#[test]
fn correlated_subqueries_search_per_row_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("walden.toml");
    std::fs::write(&cfg, "statement_memory_limit_mb = 8\n").unwrap();
    let walden = server_support::Serve::start(
        &tmp.path().join("walden"),
        &["--config", cfg.to_str().unwrap()],
    );
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(
            "CREATE TABLE customer (c_w_id int, c_d_id int, c_id int, c_balance numeric(12,2), \
             PRIMARY KEY (c_w_id, c_d_id, c_id)); \
             INSERT INTO customer SELECT 1, d, c, c % 17 FROM generate_series(1, 2) d, \
             generate_series(1, 1500) c; \
             CREATE TABLE orders (o_w_id int, o_d_id int, o_id int, o_c_id int, \
             PRIMARY KEY (o_w_id, o_d_id, o_id)); \
             CREATE INDEX orders_c ON orders (o_w_id, o_d_id, o_c_id, o_id); \
             INSERT INTO orders SELECT 1, d, o, (o * 7) % 1500 + 1 FROM generate_series(1, 2) d, \
             generate_series(1, 4500) o; \
             CREATE TABLE order_line (ol_w_id int, ol_d_id int, ol_o_id int, ol_number int, \
             ol_amount numeric(6,2), ol_delivery_d timestamp, \
             PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
        )
        .await
        .unwrap();
        // In parts that each fit the 8 MB limit.
        for d in 1..=2 {
            for from in [1, 1501, 3001] {
                c.batch_execute(&format!(
                    "INSERT INTO order_line SELECT 1, {d}, o, n, (o * n) % 97, \
                     CASE WHEN o % 3 = 0 THEN NULL ELSE timestamp '2026-01-01' END \
                     FROM generate_series({from}, {from} + 1499) o, generate_series(1, 5) n"
                ))
                .await
                .unwrap();
            }
        }
        let before = seeks(&c).await;
        let per_row: Vec<String> = c
            .simple_query(
                "SELECT c.c_d_id, c.c_id, (SELECT sum(ol_amount) FROM orders, order_line \
                 WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id \
                 AND ol_delivery_d IS NOT NULL AND o_w_id = c.c_w_id AND o_d_id = c.c_d_id \
                 AND o_c_id = c.c_id) FROM customer c WHERE c.c_w_id = 1 ORDER BY 1, 2",
            )
            .await
            .unwrap()
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => Some(format!(
                    "{} {} {}",
                    r.get(0).unwrap(),
                    r.get(1).unwrap(),
                    r.get(2).unwrap_or("NULL")
                )),
                _ => None,
            })
            .collect();
        assert_eq!(seeks(&c).await - before, 3000, "one search per customer");
        // The same sums from the rows' formulas: customer c's orders are the
        // o with (o * 7) % 1500 + 1 = c, their lines delivered unless o % 3 = 0.
        let mut expected = Vec::new();
        for d in 1..=2 {
            for cust in 1..=1500i64 {
                let lines: Vec<i64> = (1..=4500i64)
                    .filter(|o| (o * 7) % 1500 + 1 == cust && o % 3 != 0)
                    .flat_map(|o| (1..=5).map(move |n| (o * n) % 97))
                    .collect();
                let sum = if lines.is_empty() {
                    "NULL".to_string()
                } else {
                    format!("{}.00", lines.iter().sum::<i64>())
                };
                expected.push(format!("{d} {cust} {sum}"));
            }
        }
        assert_eq!(per_row.len(), 3000);
        assert_eq!(per_row, expected);
    });
}

/// `ORDER BY key LIMIT 1 FOR UPDATE` locks the first row that is free to
/// lock and still matches: rows another transaction holds are skipped
/// (SKIP LOCKED) or waited for, and a row deleted meanwhile is passed over
/// for the next one, as PostgreSQL's delivery transaction relies on.
#[test]
fn ordered_locking_reads_lock_as_they_go() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let a = connect(&walden.conn_str()).await;
        let b = connect(&walden.conn_str()).await;
        a.batch_execute(
            "CREATE TABLE new_orders (no_w_id int, no_d_id int, no_o_id int, \
             PRIMARY KEY (no_w_id, no_d_id, no_o_id)); \
             INSERT INTO new_orders SELECT 1, d, o FROM generate_series(1, 3) d, \
             generate_series(1, 50) o",
        )
        .await
        .unwrap();
        let first = "SELECT no_o_id FROM new_orders WHERE no_w_id = 1 AND no_d_id = 2 \
                     ORDER BY no_o_id LIMIT 1 FOR UPDATE";
        let ids = |rows: Vec<tokio_postgres::Row>| -> Vec<i32> {
            rows.iter().map(|r| r.get(0)).collect()
        };
        a.batch_execute("BEGIN").await.unwrap();
        assert_eq!(ids(a.query(first, &[]).await.unwrap()), vec![1]);
        b.batch_execute("BEGIN").await.unwrap();
        let skip = format!("{first} SKIP LOCKED");
        assert_eq!(ids(b.query(skip.as_str(), &[]).await.unwrap()), vec![2]);
        let err = b
            .query(format!("{first} NOWAIT").as_str(), &[])
            .await
            .unwrap_err();
        assert_eq!(err.code().unwrap().code(), "55P03");
        b.batch_execute("ROLLBACK; BEGIN").await.unwrap();
        // B waits for A's row; A deletes it and commits: B gets the next.
        let waiting = tokio::spawn({
            let q = first.to_string();
            async move {
                let r = b.query(q.as_str(), &[]).await.unwrap();
                b.batch_execute("COMMIT").await.unwrap();
                r.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>()
            }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        a.batch_execute(
            "DELETE FROM new_orders WHERE no_w_id = 1 AND no_d_id = 2 AND no_o_id = 1; COMMIT",
        )
        .await
        .unwrap();
        assert_eq!(waiting.await.unwrap(), vec![2]);
    });
}
