//! EXPLAIN through the server: the plan tree names PostgreSQL's nodes and
//! the access path, index and join method Walden's planner chose; EXPLAIN
//! ANALYZE runs the statement (a DELETE deletes) and its row counts are
//! the query's; FORMAT JSON has PostgreSQL's keys; options Walden cannot
//! honour are refused with 0A000, unknown ones with 42601, and the session
//! goes on; `$n` parameters work through the extended protocol.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect};
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

const SETUP: &str = "
    CREATE TABLE ol (w int, d int, o int, n int, amount int, PRIMARY KEY (w, d, o, n));
    CREATE INDEX ol_amount ON ol (amount);
    INSERT INTO ol SELECT w, d, o, n, (o * n) % 50 FROM generate_series(1, 2) w,
        generate_series(1, 3) d, generate_series(1, 20) o, generate_series(1, 3) n;
    CREATE TABLE cust (w int, d int, c int, name text, PRIMARY KEY (w, d, c));
    INSERT INTO cust SELECT w, d, c, 'c' || c FROM generate_series(1, 2) w,
        generate_series(1, 3) d, generate_series(1, 20) c;
    CREATE TABLE item (i int PRIMARY KEY, price int);
    INSERT INTO item SELECT g, g * 10 FROM generate_series(1, 1000) g;
";

/// The rows of a simple query's result, each as text.
async fn lines(c: &Client, sql: &str) -> Vec<String> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("").to_string()),
            _ => None,
        })
        .collect()
}

async fn plan(c: &Client, sql: &str) -> String {
    lines(c, sql).await.join("\n")
}

async fn count(c: &Client, sql: &str) -> i64 {
    lines(c, sql).await[0].parse().unwrap()
}

/// Asserts `plan` holds each of `parts`.
fn has(plan: &str, parts: &[&str]) {
    for p in parts {
        assert!(plan.contains(p), "expected {p:?} in the plan:\n{plan}");
    }
}

async fn sqlstate(c: &Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => e.code().map(|s| s.code().to_string()).unwrap_or_default(),
    }
}

#[test]
fn plans_name_the_access_paths_and_joins() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(SETUP).await.unwrap();
        // The whole composite key: a point lookup.
        let p = plan(
            &c,
            "EXPLAIN SELECT * FROM ol WHERE w = 1 AND d = 2 AND o = 3 AND n = 1",
        )
        .await;
        has(
            &p,
            &[
                "Index Scan using ol_pkey on ol  (rows=1)",
                "Index Cond: ((w = 1) AND (d = 2) AND (o = 3) AND (n = 1))",
            ],
        );
        // A key prefix then a range on the next column.
        let p = plan(
            &c,
            "EXPLAIN SELECT * FROM ol WHERE w = 1 AND d = 2 AND o BETWEEN 3 AND 5",
        )
        .await;
        has(
            &p,
            &[
                "Index Scan using ol_pkey on ol",
                "(w = 1) AND (d = 2) AND (o >= 3) AND (o <= 5)",
            ],
        );
        // A secondary index.
        let p = plan(&c, "EXPLAIN SELECT * FROM ol WHERE amount = 7").await;
        has(
            &p,
            &[
                "Index Scan using ol_amount on ol",
                "Index Cond: (amount = 7)",
                "Filter: (amount = 7)",
            ],
        );
        // A whole table: its row count is known.
        let p = plan(&c, "EXPLAIN SELECT * FROM cust").await;
        assert_eq!(p, "Seq Scan on cust  (rows=120)");
        let p = plan(
            &c,
            "EXPLAIN (COSTS OFF) SELECT * FROM cust WHERE name = 'c1'",
        )
        .await;
        assert_eq!(p, "Seq Scan on cust\n  Filter: (name = 'c1')");
        // An index nested-loop join through the primary key, in FROM order.
        let p = plan(
            &c,
            "EXPLAIN SELECT * FROM cust JOIN ol ON ol.w = cust.w AND ol.d = cust.d AND ol.o = cust.c \
             WHERE cust.w = 1 AND cust.d = 1 AND cust.c < 4",
        )
        .await;
        has(
            &p,
            &[
                "Nested Loop",
                "Run-time Choice:",
                "->  Index Scan using cust_pkey on cust",
                "->  Index Scan using ol_pkey on ol",
                "(ol.o = cust.c)",
            ],
        );
        assert!(p.find("on cust").unwrap() < p.find("on ol").unwrap(), "{p}");
        // A hash join where the inner table has no key on the join column.
        let p = plan(
            &c,
            "EXPLAIN SELECT count(*) FROM cust JOIN item ON item.price = cust.c",
        )
        .await;
        has(
            &p,
            &[
                "Aggregate",
                "->  Hash Join",
                "Hash Cond: (cust.c = item.price)",
                "->  Seq Scan on cust",
                "->  Hash",
                "->  Seq Scan on item",
            ],
        );
        let p = plan(
            &c,
            "EXPLAIN SELECT * FROM cust LEFT JOIN item ON item.price = cust.c",
        )
        .await;
        has(&p, &["Hash Left Join"]);
        // ORDER BY ... LIMIT ... FOR UPDATE: LockRows over the key's order.
        let p = plan(
            &c,
            "EXPLAIN SELECT * FROM ol WHERE w = 1 AND d = 1 ORDER BY o, n LIMIT 2 FOR UPDATE",
        )
        .await;
        has(
            &p,
            &[
                "Limit",
                "->  LockRows",
                "->  Index Scan using ol_pkey on ol",
            ],
        );
        let p = plan(&c, "EXPLAIN SELECT * FROM item ORDER BY i DESC LIMIT 3").await;
        has(
            &p,
            &["Limit", "Index Scan Backward using item_pkey on item"],
        );
        assert!(!p.contains("Sort"), "{p}");
        // Sorting, grouping.
        let p = plan(&c, "EXPLAIN SELECT * FROM cust ORDER BY name DESC LIMIT 5").await;
        has(
            &p,
            &[
                "Limit",
                "->  Sort",
                "Sort Key: name DESC",
                "->  Seq Scan on cust",
            ],
        );
        let p = plan(&c, "EXPLAIN SELECT d, count(*) FROM ol GROUP BY d").await;
        has(&p, &["HashAggregate", "Group Key: d", "->  Seq Scan on ol"]);
        let p = plan(&c, "EXPLAIN SELECT count(*) FROM ol HAVING count(*) > 1").await;
        has(&p, &["Aggregate", "Filter: (count(*) > 1)"]);
        // A WITH query, a derived table, set operations, VALUES.
        let p = plan(
            &c,
            "EXPLAIN WITH x AS (SELECT * FROM cust WHERE w = 2) SELECT count(*) FROM x",
        )
        .await;
        has(
            &p,
            &[
                "CTE Scan on x",
                "CTE x",
                "Index Scan using cust_pkey on cust",
            ],
        );
        let p = plan(
            &c,
            "EXPLAIN SELECT * FROM (SELECT w FROM cust) s WHERE s.w = 1",
        )
        .await;
        has(&p, &["Subquery Scan on s"]);
        let p = plan(
            &c,
            "EXPLAIN SELECT i FROM item UNION ALL SELECT c FROM cust",
        )
        .await;
        has(&p, &["Append", "Seq Scan on item", "Seq Scan on cust"]);
        let p = plan(&c, "EXPLAIN VALUES (1), (2)").await;
        has(&p, &["Values Scan on \"*VALUES*\""]);
        let p = plan(
            &c,
            "EXPLAIN SELECT * FROM item WHERE i IN (SELECT c FROM cust)",
        )
        .await;
        has(&p, &["SubPlan 1", "Seq Scan on cust"]);
        // Writes, not run.
        let p = plan(&c, "EXPLAIN INSERT INTO item VALUES (2000, 1)").await;
        has(&p, &["Insert on item", "->  Result"]);
        let p = plan(&c, "EXPLAIN UPDATE item SET price = 0 WHERE i = 5").await;
        has(
            &p,
            &[
                "Update on item",
                "->  Index Scan using item_pkey on item",
                "Index Cond: (i = 5)",
            ],
        );
        let p = plan(&c, "EXPLAIN DELETE FROM item WHERE price > 100").await;
        has(
            &p,
            &[
                "Delete on item",
                "->  Seq Scan on item",
                "Filter: (price > 100)",
            ],
        );
        assert_eq!(count(&c, "SELECT count(*) FROM item").await, 1000);
        assert_eq!(count(&c, "SELECT price FROM item WHERE i = 5").await, 50);
        // The old form's flags.
        let p = plan(
            &c,
            "EXPLAIN VERBOSE SELECT i, price + 1 FROM item WHERE i = 3",
        )
        .await;
        has(
            &p,
            &["Index Scan using item_pkey on item", "  Output: i, ("],
        );
    });
}

#[test]
fn analyze_counts_what_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(SETUP).await.unwrap();
        // The top node's rows are the query's rows, a scan's are its own.
        for q in [
            "SELECT * FROM ol WHERE amount = 7",
            "SELECT * FROM ol WHERE w = 1 AND d = 2 AND o BETWEEN 3 AND 5",
            "SELECT d, count(*) FROM ol GROUP BY d",
            "SELECT * FROM cust JOIN item ON item.price = cust.c * 10",
            "SELECT * FROM cust ORDER BY name LIMIT 7",
            "WITH x AS (SELECT * FROM cust WHERE w = 2) SELECT * FROM x WHERE c < 5",
        ] {
            let want = lines(&c, q).await.len() as u64;
            let doc = lines(&c, &format!("EXPLAIN (ANALYZE, FORMAT JSON) {q}")).await;
            assert_eq!(doc.len(), 1);
            let v: serde_json::Value = serde_json::from_str(&doc[0]).unwrap();
            let top = &v[0]["Plan"];
            assert_eq!(top["Actual Rows"].as_u64(), Some(want), "{q}: {}", doc[0]);
            assert_eq!(top["Actual Loops"].as_u64(), Some(1), "{q}");
            assert!(v[0]["Execution Time"].as_f64().is_some(), "{q}");
            assert!(v[0]["Planning Time"].as_f64().is_some(), "{q}");
        }
        let p = plan(&c, "EXPLAIN ANALYZE SELECT * FROM ol WHERE amount = 7").await;
        let n = count(&c, "SELECT count(*) FROM ol WHERE amount = 7").await;
        has(
            &p,
            &[
                &format!("Index Scan using ol_amount on ol  (rows=2) (actual rows={n} loops=1)"),
                "Planning Time: ",
                "Execution Time: ",
            ],
        );
        // The join's inner side: one search per outer row.
        let p = plan(
            &c,
            "EXPLAIN ANALYZE SELECT * FROM cust JOIN ol ON ol.w = cust.w AND ol.d = cust.d AND ol.o = cust.c \
             WHERE cust.w = 1 AND cust.d = 1 AND cust.c < 4",
        )
        .await;
        has(
            &p,
            &[
                "Nested Loop  (rows=1) (actual rows=9 loops=1)",
                "Index Scan using cust_pkey on cust  (rows=1) (actual rows=3 loops=1)",
                "Index Scan using ol_pkey on ol  (rows=1) (actual rows=3 loops=3)",
            ],
        );
        // The grouping's input and output.
        let p = plan(&c, "EXPLAIN ANALYZE SELECT d, count(*) FROM ol GROUP BY d").await;
        has(
            &p,
            &[
                "HashAggregate  (actual rows=3 loops=1)",
                "Seq Scan on ol  (rows=360) (actual rows=360 loops=1)",
            ],
        );
        // A DELETE deletes, an INSERT inserts; in a block they roll back with it.
        let p = plan(&c, "EXPLAIN ANALYZE DELETE FROM item WHERE i <= 10").await;
        has(
            &p,
            &[
                "Delete on item  (actual rows=0 loops=1)",
                "Execution Time: ",
            ],
        );
        assert_eq!(count(&c, "SELECT count(*) FROM item").await, 990);
        let p = plan(
            &c,
            "EXPLAIN ANALYZE INSERT INTO item VALUES (5000, 1), (5001, 2) RETURNING i",
        )
        .await;
        has(
            &p,
            &["Insert on item  (actual rows=2 loops=1)", "Values Scan"],
        );
        assert_eq!(count(&c, "SELECT count(*) FROM item").await, 992);
        c.batch_execute("BEGIN").await.unwrap();
        lines(&c, "EXPLAIN ANALYZE DELETE FROM item").await;
        assert_eq!(count(&c, "SELECT count(*) FROM item").await, 0);
        c.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(count(&c, "SELECT count(*) FROM item").await, 992);
        // Without ANALYZE nothing runs and nothing is measured.
        let p = plan(&c, "EXPLAIN DELETE FROM item").await;
        assert!(!p.contains("actual"), "{p}");
        assert_eq!(count(&c, "SELECT count(*) FROM item").await, 992);
        // SUMMARY OFF drops the times.
        let p = plan(
            &c,
            "EXPLAIN (ANALYZE, SUMMARY OFF) SELECT * FROM item WHERE i = 20",
        )
        .await;
        assert!(!p.contains("Time"), "{p}");
        has(&p, &["(actual rows=1 loops=1)"]);
    });
}

#[test]
fn options_json_errors_and_parameters() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(SETUP).await.unwrap();
        // JSON: one value with PostgreSQL's keys.
        let doc = lines(
            &c,
            "EXPLAIN (FORMAT JSON) SELECT * FROM cust JOIN item ON item.price = cust.c WHERE cust.name = 'c2'",
        )
        .await;
        assert_eq!(doc.len(), 1);
        let v: serde_json::Value = serde_json::from_str(&doc[0]).unwrap();
        let top = &v[0]["Plan"];
        assert_eq!(top["Node Type"], "Hash Join");
        assert_eq!(top["Join Type"], "Inner");
        assert_eq!(top["Hash Cond"], "(cust.c = item.price)");
        let plans = top["Plans"].as_array().unwrap();
        assert_eq!(plans[0]["Node Type"], "Seq Scan");
        assert_eq!(plans[0]["Relation Name"], "cust");
        assert_eq!(plans[0]["Parent Relationship"], "Outer");
        assert_eq!(plans[1]["Node Type"], "Hash");
        assert_eq!(plans[1]["Plans"][0]["Relation Name"], "item");
        assert_eq!(plans[1]["Plans"][0]["Plan Rows"], 1000);
        let doc = lines(
            &c,
            "EXPLAIN (FORMAT JSON) SELECT * FROM ol WHERE amount = 3",
        )
        .await;
        let v: serde_json::Value = serde_json::from_str(&doc[0]).unwrap();
        assert_eq!(v[0]["Plan"]["Index Name"], "ol_amount");
        assert_eq!(v[0]["Plan"]["Node Type"], "Index Scan");
        // The column: `QUERY PLAN`, json for FORMAT JSON.
        let st = c.prepare("EXPLAIN (FORMAT JSON) SELECT 1").await.unwrap();
        assert_eq!(st.columns()[0].name(), "QUERY PLAN");
        assert_eq!(st.columns()[0].type_().name(), "json");
        let st = c.prepare("EXPLAIN SELECT 1").await.unwrap();
        assert_eq!(st.columns()[0].type_().name(), "text");
        // What Walden cannot show: 0A000 naming it; unknown options 42601;
        // bad values 22023. The session goes on after each.
        for (sql, code) in [
            ("EXPLAIN (FORMAT XML) SELECT 1", "0A000"),
            ("EXPLAIN (FORMAT YAML) SELECT 1", "0A000"),
            ("EXPLAIN (BUFFERS) SELECT 1", "0A000"),
            ("EXPLAIN (ANALYZE, BUFFERS ON) SELECT 1", "0A000"),
            ("EXPLAIN (SETTINGS) SELECT 1", "0A000"),
            ("EXPLAIN (ANALYZE, WAL) SELECT 1", "0A000"),
            ("EXPLAIN (GENERIC_PLAN) SELECT 1", "0A000"),
            ("EXPLAIN (ANALYZE, TIMING) SELECT 1", "0A000"),
            ("EXPLAIN (FOO) SELECT 1", "42601"),
            ("EXPLAIN (ANALYZE maybe) SELECT 1", "42601"),
            ("EXPLAIN (FORMAT BAR) SELECT 1", "22023"),
            ("EXPLAIN (TIMING) SELECT 1", "22023"),
            ("EXPLAIN SELECT * FROM nosuch", "42P01"),
            ("EXPLAIN CREATE TABLE z (a int)", "0A000"),
        ] {
            assert_eq!(sqlstate(&c, sql).await, code, "{sql}");
            assert_eq!(count(&c, "SELECT 1").await, 1);
        }
        // Turned off, they are accepted.
        let p = plan(&c, "EXPLAIN (BUFFERS OFF, SETTINGS OFF, TIMING OFF, ANALYZE) SELECT * FROM item WHERE i = 1").await;
        has(&p, &["(actual rows=1 loops=1)"]);
        // An error inside a block fails the block, as any statement's.
        c.batch_execute("BEGIN").await.unwrap();
        assert_eq!(sqlstate(&c, "EXPLAIN (FORMAT XML) SELECT 1").await, "0A000");
        assert_eq!(sqlstate(&c, "EXPLAIN SELECT 1").await, "25P02");
        c.batch_execute("ROLLBACK").await.unwrap();
        // Parameters through the extended protocol.
        let rows = c
            .query("EXPLAIN SELECT * FROM item WHERE i = $1", &[&5i32])
            .await
            .unwrap();
        let p: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
        has(
            &p.join("\n"),
            &["Index Scan using item_pkey on item", "Index Cond: (i = $1)"],
        );
        let rows = c
            .query(
                "EXPLAIN ANALYZE SELECT * FROM item WHERE price > $1",
                &[&9990i32],
            )
            .await
            .unwrap();
        let p: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
        has(
            &p.join("\n"),
            &[
                "Seq Scan on item  (rows=333) (actual rows=1 loops=1)",
                "Filter: (price > $1)",
            ],
        );
    });
}
