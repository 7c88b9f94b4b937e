//! `ORDER BY ... LIMIT` read through the primary key or an index in order
//! (forward and backward, after columns an equality fixes, NULLs placed as
//! PostgreSQL places them, stopping after LIMIT + OFFSET rows). The answers
//! are compared with PostgreSQL 15 statement by statement, over rows in
//! memory, in the base store after a checkpoint, and written by an open
//! transaction; the index usage counters show the index was walked.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, run_script, Peers};
use std::time::Duration;

const SETUP: &[&str] = &[
    "CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, g int, n int, v text)",
    "CREATE INDEX t_k ON t (k)",
    "CREATE INDEX t_gn ON t (g, n)",
    "CREATE INDEX t_n ON t (n)",
    // k: each value ten times; n: NULL in every tenth row.
    "INSERT INTO t SELECT i, i % 100, i % 5, \
     CASE WHEN i % 10 = 0 THEN NULL ELSE (i * 7) % 53 END, 'v' || i \
     FROM generate_series(1, 1000) AS i",
    "CREATE TABLE c (a int, b int, x text, PRIMARY KEY (a, b))",
    "INSERT INTO c SELECT i % 7, i, 'x' || i FROM generate_series(1, 200) AS i",
];

const QUERIES: &[&str] = &[
    // The primary key, both ways, with OFFSET and filters as rows come.
    "SELECT id, v FROM t ORDER BY id LIMIT 5",
    "SELECT id FROM t ORDER BY id DESC LIMIT 5 OFFSET 3",
    "SELECT id FROM t WHERE v LIKE '%7' ORDER BY id DESC LIMIT 4",
    "SELECT id FROM t WHERE id > 990 ORDER BY id LIMIT 50",
    "SELECT id FROM t WHERE id < 10 ORDER BY id DESC LIMIT 3",
    "SELECT id FROM t WHERE id BETWEEN 100 AND 200 ORDER BY id DESC LIMIT 2 OFFSET 1",
    "SELECT id FROM t WHERE id > 2.5 ORDER BY id LIMIT 2",
    "SELECT id FROM t ORDER BY id LIMIT 0",
    "SELECT count(*) FROM (SELECT id FROM t ORDER BY id DESC LIMIT NULL) s",
    "SELECT id FROM t ORDER BY id DESC OFFSET 997 LIMIT 10",
    "SELECT id AS i FROM t ORDER BY i DESC LIMIT 2",
    "SELECT id FROM t ORDER BY 1 DESC FETCH FIRST 2 ROWS ONLY",
    // A composite primary key: after its first column fixed, and whole.
    "SELECT a, b FROM c WHERE a = 3 ORDER BY b DESC LIMIT 4",
    "SELECT a, b FROM c WHERE a = 3 AND b > 100 ORDER BY b LIMIT 3",
    "SELECT a, b FROM c ORDER BY a DESC, b DESC LIMIT 3",
    "SELECT a, b FROM c WHERE a = 3 ORDER BY a, b LIMIT 2",
    // An index with ties, the row key breaking them.
    "SELECT id, k FROM t ORDER BY k, id LIMIT 12",
    "SELECT id, k FROM t ORDER BY k DESC, id DESC LIMIT 12 OFFSET 5",
    "SELECT sum(id), min(k), max(k) FROM (SELECT id, k FROM t ORDER BY k LIMIT 30) s",
    "SELECT k FROM t ORDER BY k DESC LIMIT 25",
    "SELECT id, k FROM t WHERE k >= 50 ORDER BY k, id LIMIT 5",
    "SELECT id, k FROM t WHERE k < 3 ORDER BY k DESC, id DESC LIMIT 4",
    "SELECT id, k FROM t WHERE k > 2.5 ORDER BY k, id LIMIT 3",
    "SELECT id, k FROM t WHERE k BETWEEN 7 AND 8 AND id % 3 = 0 ORDER BY k DESC, id DESC LIMIT 4",
    // NULLs: last ascending and first descending by default, or as asked.
    "SELECT id, n FROM t ORDER BY n, id LIMIT 5",
    "SELECT id, n FROM t ORDER BY n, id LIMIT 10 OFFSET 895",
    "SELECT id, n FROM t ORDER BY n DESC, id DESC LIMIT 10",
    "SELECT id, n FROM t ORDER BY n DESC, id DESC LIMIT 10 OFFSET 95",
    "SELECT id, n FROM t ORDER BY n NULLS FIRST, id LIMIT 5 OFFSET 98",
    "SELECT id, n FROM t ORDER BY n DESC NULLS LAST, id DESC LIMIT 5 OFFSET 898",
    "SELECT id, n FROM t WHERE n > 50 ORDER BY n DESC, id LIMIT 5",
    "SELECT id, n FROM t WHERE n IS NULL ORDER BY n, id LIMIT 3",
    // After a fixed column of a two-column index.
    "SELECT id, n FROM t WHERE g = 3 ORDER BY n, id LIMIT 5",
    "SELECT id, n FROM t WHERE g = 3 ORDER BY n, id LIMIT 5 OFFSET 178",
    "SELECT n FROM t WHERE g = 3 ORDER BY n DESC LIMIT 30",
    "SELECT id, g, n FROM t WHERE g = 2 ORDER BY g, n DESC, id DESC LIMIT 3",
    "SELECT id, n FROM t WHERE g = 4 AND id > 500 ORDER BY n DESC, id DESC LIMIT 6",
    "SELECT id, n FROM t WHERE g = NULL ORDER BY n LIMIT 3",
    "SELECT id, g, n FROM t ORDER BY g, n, id LIMIT 7 OFFSET 170",
    // Orders no key gives: sorted as before.
    "SELECT id, k FROM t ORDER BY k, id DESC LIMIT 5",
    "SELECT id, g, n FROM t ORDER BY g, n NULLS FIRST, id LIMIT 5",
    "SELECT id, v FROM t ORDER BY k + 1, id LIMIT 3",
    // Parameters.
    "PREPARE p(int, int) AS SELECT id, n FROM t WHERE g = $1 ORDER BY n, id LIMIT $2",
    "EXECUTE p(1, 4)",
    "EXECUTE p(NULL, 4)",
    "EXECUTE p(4, 0)",
    "PREPARE q(int, int) AS SELECT id FROM t ORDER BY id DESC LIMIT $1 OFFSET $2",
    "EXECUTE q(3, 10)",
    "DEALLOCATE p",
    "DEALLOCATE q",
];

/// Writes that leave memory and the store holding different rows, then a
/// transaction's own writes seen through the walks.
const WRITES: &[&str] = &[
    "UPDATE t SET k = 200 + id WHERE id % 97 = 0",
    "UPDATE t SET n = NULL WHERE id IN (1, 2, 3)",
    "DELETE FROM t WHERE id IN (1000, 999, 10, 20)",
    "INSERT INTO t VALUES (1001, 0, 3, NULL, 'new'), (1002, 99, 3, 0, 'new')",
];

const IN_TRANSACTION: &[&str] = &[
    "BEGIN",
    "UPDATE t SET k = -1 WHERE id = 500",
    "DELETE FROM t WHERE id = 2",
    "INSERT INTO t VALUES (2000, 0, 1, NULL, 'mine'), (0, 300, 3, 60, 'mine')",
    "UPDATE t SET n = NULL, g = 3 WHERE id = 4",
    "SELECT id, k FROM t ORDER BY k, id LIMIT 5",
    "SELECT id, k FROM t ORDER BY k DESC, id DESC LIMIT 5",
    "SELECT id FROM t ORDER BY id LIMIT 3",
    "SELECT id FROM t ORDER BY id DESC LIMIT 3",
    "SELECT id, n FROM t ORDER BY n DESC, id DESC LIMIT 12",
    "SELECT id, n FROM t WHERE g = 3 ORDER BY n, id LIMIT 4",
    "SELECT id, n FROM t WHERE g = 3 ORDER BY n DESC, id DESC LIMIT 4",
    "ROLLBACK",
    "SELECT id, k FROM t ORDER BY k, id LIMIT 5",
    "SELECT id FROM t ORDER BY id LIMIT 3",
];

#[test]
fn ordered_limits_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare ORDER BY ... LIMIT") else {
        return;
    };
    // The queries run over rows in memory, then (after a checkpoint moved
    // them to the base store) over the store, then over both.
    let mut script: Vec<&str> = SETUP.to_vec();
    script.extend(QUERIES);
    script.push("CHECKPOINT");
    script.extend(QUERIES);
    script.extend(WRITES);
    script.extend(QUERIES);
    script.extend(IN_TRANSACTION);
    block_on_within(Duration::from_secs(180), async {
        let want = run_script(&peers.pg_conn(), &script, &[]).await;
        let got = run_script(&peers.walden_conn(), &script, &[]).await;
        assert!(want.iter().filter(|w| !w.contains("-> ERROR")).count() > 150);
        assert_same(&want, &got);
    });
}

/// (user_seeks, user_scans) of an index.
async fn usage(c: &tokio_postgres::Client, index: &str) -> (i64, i64) {
    let r = c
        .query_one(
            "SELECT user_seeks, user_scans FROM sys.dm_db_index_usage_stats \
             WHERE index_name = $1",
            &[&index],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1))
}

/// A walk with no leading value counts as a scan of the index, one after
/// an equality as a seek; a query no index orders touches neither.
#[test]
fn walks_use_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        for s in SETUP {
            c.batch_execute(s).await.unwrap();
        }
        let ids = |sql: &'static str| {
            let c = &c;
            async move {
                c.query(sql, &[])
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.get::<_, i32>(0))
                    .collect::<Vec<_>>()
            }
        };
        let before = usage(&c, "t_k").await;
        assert_eq!(
            ids("SELECT id FROM t ORDER BY k DESC, id DESC LIMIT 3").await,
            vec![999, 899, 799]
        );
        assert_eq!(usage(&c, "t_k").await, (before.0, before.1 + 1));
        let before = usage(&c, "t_gn").await;
        assert_eq!(
            ids("SELECT id FROM t WHERE g = 0 ORDER BY n DESC, id DESC LIMIT 2").await,
            vec![1000, 990]
        );
        assert_eq!(usage(&c, "t_gn").await, (before.0 + 1, before.1));
        let before = usage(&c, "t_n").await;
        assert_eq!(
            ids("SELECT id FROM t ORDER BY n NULLS FIRST, id DESC LIMIT 1").await,
            vec![1000]
        );
        assert_eq!(usage(&c, "t_n").await, before);
        // A snapshot older than a later commit walks what it saw.
        let other = connect(&walden.conn_str()).await;
        c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .await
            .unwrap();
        assert_eq!(
            ids("SELECT id FROM t ORDER BY k, id LIMIT 2").await,
            vec![100, 200]
        );
        other
            .batch_execute("UPDATE t SET k = -5 WHERE id = 7; DELETE FROM t WHERE id = 100")
            .await
            .unwrap();
        assert_eq!(
            ids("SELECT id FROM t ORDER BY k, id LIMIT 2").await,
            vec![100, 200]
        );
        c.batch_execute("COMMIT").await.unwrap();
        assert_eq!(
            ids("SELECT id FROM t ORDER BY k, id LIMIT 2").await,
            vec![7, 200]
        );
    });
}

/// Sum of searches and scans over a table's indexes.
async fn index_uses(c: &tokio_postgres::Client, table: &str) -> i64 {
    c.query_one(
        "SELECT coalesce(sum(user_seeks + user_scans), 0)::bigint \
         FROM sys.dm_db_index_usage_stats WHERE table_name = $1",
        &[&table],
    )
    .await
    .unwrap()
    .get(0)
}

/// Without PostgreSQL: every walk gives the rows a full sort gives (the same
/// ORDER BY over `n + 0`, an expression no index orders), in both
/// directions, with each NULL placement, after an equality, at several
/// LIMITs and OFFSETs, over rows in memory and in the store; each walk with
/// no leading value shows in the index counters.
#[test]
fn walks_give_what_a_full_sort_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(240), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(
            "CREATE TABLE r (id int PRIMARY KEY, g int NOT NULL, n int, k int NOT NULL);
             CREATE INDEX r_n ON r (n);
             CREATE INDEX r_gn ON r (g, n);
             INSERT INTO r SELECT i, i % 4, CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 7919) % 211 END, \
               (i * 104729) % 997 FROM generate_series(1, 3000) AS i",
        )
        .await
        .unwrap();
        let ids = |sql: String| {
            let c = &c;
            async move {
                c.query(sql.as_str(), &[])
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"))
                    .iter()
                    .map(|r| r.get::<_, i32>(0))
                    .collect::<Vec<_>>()
            }
        };
        let mut compared = 0;
        for round in ["memory", "store", "both"] {
            match round {
                "store" => c.batch_execute("CHECKPOINT").await.unwrap(),
                "both" => c
                    .batch_execute(
                        "UPDATE r SET n = NULL WHERE id % 11 = 0; \
                         UPDATE r SET n = n + 1 WHERE id % 13 = 0; \
                         DELETE FROM r WHERE id % 17 = 0",
                    )
                    .await
                    .unwrap(),
                _ => {}
            }
            for dir in ["ASC", "DESC"] {
                for nulls in ["", "NULLS FIRST", "NULLS LAST"] {
                    for (limit, offset) in [(1, 0), (7, 0), (50, 13), (40, 2600), (10, 5000)] {
                        for filter in ["", "WHERE g = 2"] {
                            let order = |col: &str| {
                                format!(
                                    "SELECT id FROM r {filter} ORDER BY {col} {dir} {nulls}, \
                                     id {dir} LIMIT {limit} OFFSET {offset}"
                                )
                            };
                            let before = index_uses(&c, "r").await;
                            let walked = ids(order("n")).await;
                            let uses = index_uses(&c, "r").await - before;
                            let sorted = ids(order("n + 0")).await;
                            assert_eq!(walked, sorted, "{} ({round})", order("n"));
                            assert_eq!(walked.len(), sorted.len());
                            if filter.is_empty() {
                                assert_eq!(uses, 1, "{} walks r_n", order("n"));
                            }
                            compared += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(compared, 180);
    });
}
