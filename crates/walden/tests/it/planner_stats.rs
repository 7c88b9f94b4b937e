//! The planner through the server: inner joins run in the order their
//! predicates make cheap, not the order FROM lists them (a 10-table chain
//! written so that FROM order would form cross products finishes at once
//! with PostgreSQL 15's answer, and EXPLAIN shows the order chosen);
//! ANALYZE fills `pg_stats` with the values PostgreSQL 15 gives on the same
//! data, and the estimates EXPLAIN prints come from them.
//!
//! Every expected value below was checked by hand on PostgreSQL 15.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect};
use std::time::{Duration, Instant};
use tokio_postgres::{Client, SimpleQueryMessage};

/// Rows of a simple query, each as its columns' texts joined by `|`
/// (NULL as an empty string).
async fn rows(c: &Client, sql: &str) -> Vec<String> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("").to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}

async fn plan(c: &Client, sql: &str) -> String {
    rows(c, &format!("EXPLAIN {sql}")).await.join("\n")
}

async fn sqlstate(c: &Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => e.code().map(|s| s.code().to_string()).unwrap_or_default(),
    }
}

/// Ten tables of 100 rows, `jk.b` pointing at a row of `j(k+1)`.
fn chain_setup() -> String {
    let mult = [3, 7, 11, 13, 17, 19, 21, 23, 27, 29];
    let modulo = [7, 5, 3, 11, 13, 4, 6, 9, 8, 10];
    let mut sql = String::new();
    for k in 1..=10 {
        sql.push_str(&format!(
            "CREATE TABLE j{k} (a int PRIMARY KEY, b int, c int);
             INSERT INTO j{k} SELECT g, (g * {m}) % 100 + 1, g % {d} FROM generate_series(1, 100) g;\n",
            m = mult[k - 1],
            d = modulo[k - 1],
        ));
    }
    sql
}

const CHAIN: &str = "SELECT count(*), sum(j1.c), sum(j10.c), min(j1.a), max(j5.a)
  FROM j1, j3, j5, j7, j9, j2, j4, j6, j8, j10
 WHERE j1.b = j2.a AND j2.b = j3.a AND j3.b = j4.a AND j4.b = j5.a AND j5.b = j6.a
   AND j6.b = j7.a AND j7.b = j8.a AND j8.b = j9.a AND j9.b = j10.a AND j1.c < 5";

#[test]
fn joins_follow_their_predicates() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(&chain_setup()).await.unwrap();

        // In FROM order this is 100^5 rows before the first predicate.
        let t = Instant::now();
        assert_eq!(rows(&c, CHAIN).await, ["72|143|324|1|100"]);
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "took {:?}",
            t.elapsed()
        );

        // No join without a condition: each of the nine joins hashes or
        // searches on a key, from j1 (filtered to 33 rows) along the chain.
        let p = plan(&c, CHAIN).await;
        assert_eq!(
            p.matches("Hash Cond").count() + p.matches("Index Cond").count(),
            9,
            "{p}"
        );
        assert!(p.contains("Seq Scan on j1  (rows=33)"), "{p}");
        assert!(p.contains("Index Cond: (j2.a = j1.b)"), "{p}");
        for k in 1..=10 {
            assert!(p.contains(&format!(" on j{k} ")), "j{k} missing:\n{p}");
        }

        // INNER JOIN chains are reordered too, and `*` keeps FROM's order
        // of columns.
        assert_eq!(
            rows(
                &c,
                "SELECT count(*), sum(j3.c + j4.c) FROM j1 JOIN j3 ON true JOIN j4 ON j3.b = j4.a
                 JOIN j2 ON j1.b = j2.a AND j2.b = j3.a WHERE j1.c = 2"
            )
            .await,
            ["15|102"]
        );
        assert_eq!(
            rows(
                &c,
                "SELECT * FROM j3, j1, j2 WHERE j1.b = j2.a AND j2.b = j3.a AND j1.a <= 3 ORDER BY j1.a"
            )
            .await,
            [
                "29|20|2|1|4|1|4|29|4",
                "50|51|2|2|7|2|7|50|2",
                "71|82|2|3|10|3|10|71|0"
            ]
        );
        // An ON condition naming a later table is still an error.
        assert_eq!(
            sqlstate(
                &c,
                "SELECT count(*) FROM j1 JOIN j3 ON j3.b = j4.a JOIN j4 ON true
                 JOIN j2 ON j1.b = j2.a AND j2.b = j3.a"
            )
            .await,
            "42P01"
        );
    });
}

const STATS_SETUP: &str = "
    CREATE TABLE st (id int PRIMARY KEY, grp int, name text, maybe int);
    INSERT INTO st SELECT g, g % 4, 'n' || (g % 10),
        CASE WHEN g % 5 = 0 THEN NULL ELSE g % 30 END FROM generate_series(1, 200) g;
    CREATE TABLE e1 (a int, b int);
    INSERT INTO e1 SELECT g, g % 7 FROM generate_series(1, 1000) g;
";

#[test]
fn analyze_gathers_postgresql_statistics() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(STATS_SETUP).await.unwrap();
        assert!(rows(&c, "SELECT * FROM pg_stats WHERE tablename = 'st'")
            .await
            .is_empty());
        c.batch_execute("ANALYZE st").await.unwrap();
        assert_eq!(
            rows(
                &c,
                "SELECT attname, null_frac, n_distinct, avg_width, most_common_vals, most_common_freqs
                   FROM pg_stats WHERE tablename = 'st' ORDER BY attname"
            )
            .await,
            [
                "grp|0|4|4|{0,1,2,3}|{0.25,0.25,0.25,0.25}",
                "id|0|-1|4||",
                "maybe|0.2|-0.12|4|{1,2,3,4,6,7,8,9,11,12,13,14,16,17,18,19,21,22,23,24,26,27,28,29}\
                 |{0.035,0.035,0.035,0.035,0.035,0.035,0.035,0.035,0.035,0.035,0.035,0.035,\
                 0.035,0.035,0.035,0.035,0.03,0.03,0.03,0.03,0.03,0.03,0.03,0.03}",
                "name|0|10|3|{n0,n1,n2,n3,n4,n5,n6,n7,n8,n9}|{0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1}",
            ]
        );
        let hist: String = (0..=100)
            .map(|k| if k == 0 { 1 } else { 2 * k }.to_string())
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(
            rows(
                &c,
                "SELECT histogram_bounds FROM pg_stats WHERE tablename = 'st' AND attname IN ('id', 'maybe') ORDER BY attname"
            )
            .await,
            [format!("{{{hist}}}"), String::new()]
        );
        assert_eq!(
            rows(
                &c,
                "SELECT reltuples, relpages FROM pg_class WHERE relname = 'st'"
            )
            .await,
            ["200|2"]
        );

        // Errors as PostgreSQL's; a column list, VACUUM ANALYZE.
        assert_eq!(sqlstate(&c, "ANALYZE nosuch").await, "42P01");
        assert_eq!(sqlstate(&c, "ANALYZE st (nosuch)").await, "42703");
        // (VACUUM alone: a multi-statement query is a transaction block.)
        c.batch_execute("ANALYZE st (grp, name)").await.unwrap();
        c.batch_execute("VACUUM ANALYZE st").await.unwrap();
        // A temporary table, by its own name.
        c.batch_execute(
            "CREATE TEMP TABLE tt (a int); INSERT INTO tt SELECT g % 3 FROM generate_series(1, 30) g;
             ANALYZE tt",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(
                &c,
                "SELECT n_distinct, most_common_vals FROM pg_stats WHERE tablename = 'tt'"
            )
            .await,
            ["3|{0,1,2}"]
        );
        c.batch_execute("BEGIN").await.unwrap();
        assert_eq!(sqlstate(&c, "VACUUM ANALYZE st").await, "25001");
        c.batch_execute("ROLLBACK").await.unwrap();

        // Estimates from the statistics, as PostgreSQL's.
        c.batch_execute("ANALYZE").await.unwrap();
        let p = plan(&c, "SELECT * FROM e1 WHERE b = 3").await;
        assert!(p.contains("Seq Scan on e1  (rows=143)"), "{p}");
        let p = plan(&c, "SELECT * FROM e1 WHERE a < 100").await;
        // (PostgreSQL 15: 99, from the same histogram.)
        assert!(p.contains("Seq Scan on e1  (rows=100)"), "{p}");
        let p = plan(&c, "SELECT * FROM e1 WHERE b IS NULL").await;
        assert!(p.contains("Seq Scan on e1  (rows=1)"), "{p}");
    });
}
