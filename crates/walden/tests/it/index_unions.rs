//! IN lists and ORs of equalities and ranges on key and indexed columns:
//! Walden answers them with a union of index searches (each row once, the
//! rest of WHERE still applied). The answers are compared with PostgreSQL
//! 15 statement by statement, and the index's seek counter shows the
//! searches were made (a scan would leave it unchanged).

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, run_script, Peers};
use std::time::Duration;

const SETUP: &[&str] = &[
    "CREATE TABLE t (id int PRIMARY KEY, k int, a int, b text)",
    "CREATE INDEX t_k ON t (k)",
    "CREATE INDEX t_ab ON t (a, b)",
    "INSERT INTO t SELECT g, g % 50, g % 7, 'x' || (g % 3) FROM generate_series(1, 500) AS g",
    "INSERT INTO t VALUES (501, NULL, NULL, NULL), (502, NULL, 1, NULL)",
    "CREATE TABLE c (x int, y int, z text, PRIMARY KEY (x, y))",
    "INSERT INTO c SELECT g % 10, g, 'z' || g FROM generate_series(1, 100) AS g",
];

const QUERIES: &[&str] = &[
    // IN on an indexed column: plain, duplicates, NULLs, no match.
    "SELECT id, k FROM t WHERE k IN (1, 2, 3) ORDER BY id",
    "SELECT count(*), sum(id) FROM t WHERE k IN (3, 3, 1, 3)",
    "SELECT count(*) FROM t WHERE k IN (1, NULL)",
    "SELECT count(*) FROM t WHERE k IN (NULL)",
    "SELECT count(*) FROM t WHERE k IN (NULL, NULL) OR k = 7",
    "SELECT count(*) FROM t WHERE k IN (1000, -1)",
    "SELECT count(*) FROM t WHERE k IN (2.5, 2)",
    "SELECT count(*) FROM t WHERE k IN ('4', '5')",
    "SELECT count(*) FROM t WHERE k NOT IN (1, 2)",
    // The rest of WHERE still filters.
    "SELECT id, k FROM t WHERE k IN (4, 5) AND id > 400 ORDER BY id",
    "SELECT id FROM t WHERE k IN (4, 5) AND b = 'x1' ORDER BY id DESC LIMIT 3",
    // ORs of ranges and equalities, overlapping.
    "SELECT count(*), min(id), max(id) FROM t WHERE k BETWEEN 1 AND 3 OR k BETWEEN 2 AND 5",
    "SELECT count(*) FROM t WHERE k BETWEEN 10 AND 12 OR k = 40 OR k > 48",
    "SELECT count(*) FROM t WHERE k < 2 OR k >= 47 OR k IN (20, 21)",
    "SELECT count(*) FROM t WHERE (k = 1 AND id < 100) OR (k = 2 AND id > 400)",
    "SELECT count(*) FROM t WHERE k BETWEEN 5 AND 3 OR k = 9",
    // A branch no index serves: the whole table is scanned.
    "SELECT count(*) FROM t WHERE k IN (1, 2) OR b = 'x1'",
    "SELECT count(*) FROM t WHERE k = 1 OR k IS NULL",
    // The primary key.
    "SELECT id FROM t WHERE id IN (5, 7, 5, 1000, NULL) ORDER BY id",
    "SELECT count(*), sum(id) FROM t WHERE id BETWEEN 1 AND 10 OR id BETWEEN 5 AND 20 OR id = 499",
    "SELECT id FROM t WHERE id > 495 OR id < 3 ORDER BY id",
    // A multi-column index: IN on its first column, then on its second.
    "SELECT count(*), sum(id) FROM t WHERE a IN (1, 2)",
    "SELECT id FROM t WHERE a = 3 AND b IN ('x0', 'x2') AND id < 60 ORDER BY id",
    "SELECT count(*) FROM t WHERE (a = 1 AND b = 'x1') OR (a = 2 AND b = 'x2')",
    "SELECT count(*) FROM t WHERE a = 1 AND (b = 'x1' OR b IS NULL)",
    // A composite primary key: IN on its first column, on both.
    "SELECT x, y FROM c WHERE x IN (1, 3) AND y < 30 ORDER BY x, y",
    "SELECT x, y, z FROM c WHERE (x = 2 AND y = 12) OR (x = 5 AND y IN (15, 25, 26)) ORDER BY y",
    // Joins and subqueries over a union.
    "SELECT t.id, c.z FROM t JOIN c ON c.y = t.id WHERE t.k IN (3, 4) ORDER BY t.id",
    "SELECT count(*) FROM c WHERE EXISTS (SELECT 1 FROM t WHERE t.k IN (c.x, c.x + 1) AND t.id = c.y)",
    // Prepared with parameters.
    "PREPARE q(int, int) AS SELECT count(*), sum(id) FROM t WHERE k IN ($1, $2)",
    "EXECUTE q(1, 2)",
    "EXECUTE q(3, NULL)",
    "PREPARE r(int, int, int, int) AS SELECT count(*) FROM t \
     WHERE k BETWEEN $1 AND $2 OR k BETWEEN $3 AND $4",
    "EXECUTE r(1, 3, 2, 5)",
    "EXECUTE r(10, 11, 30, 30)",
    // `= ANY(array)`: one branch per element, chosen at execution.
    "SELECT id FROM t WHERE k = ANY('{1,2,NULL,2}'::int[]) ORDER BY id",
    "SELECT count(*), sum(id) FROM t WHERE k = ANY(ARRAY[3, 4]) AND a = 2",
    "SELECT id FROM t WHERE id = ANY(ARRAY[1, 5, 5, 900]) ORDER BY id",
    "SELECT count(*) FROM t WHERE k = ANY('{}'::int[])",
    "SELECT count(*) FROM t WHERE k <> ALL(ARRAY[1, 2])",
    "PREPARE a(int[]) AS SELECT count(*), sum(id) FROM t WHERE k = ANY($1)",
    "EXECUTE a('{1,2,3}')",
    "EXECUTE a(ARRAY[5, NULL])",
    "EXECUTE a(NULL)",
    // Writes and locking reads find their rows the same way.
    "UPDATE t SET a = a + 100 WHERE k IN (6, 7) OR id = 1",
    "SELECT count(*) FROM t WHERE a >= 100",
    "DELETE FROM t WHERE k IN (49) OR id BETWEEN 2 AND 4",
    "SELECT count(*) FROM t",
    "BEGIN",
    "INSERT INTO t VALUES (600, 1, 1, 'x1')",
    "UPDATE t SET k = 2 WHERE id = 51",
    "DELETE FROM t WHERE id = 101",
    "SELECT id, k FROM t WHERE k IN (1, 2) ORDER BY id",
    "SELECT id FROM t WHERE k IN (8, 9) ORDER BY id FOR UPDATE",
    "ROLLBACK",
    "SELECT id, k FROM t WHERE k IN (1, 2) ORDER BY id",
];

#[test]
fn in_lists_and_ors_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare IN lists and ORs") else {
        return;
    };
    let script: Vec<&str> = SETUP.iter().chain(QUERIES).copied().collect();
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), &script, &[]).await;
        let got = run_script(&peers.walden_conn(), &script, &[]).await;
        assert!(want.iter().filter(|w| !w.contains("-> ERROR")).count() > 40);
        assert_same(&want, &got);
    });
}

/// The seeks `t_k` has served so far.
async fn seeks(c: &tokio_postgres::Client) -> i64 {
    c.query_one(
        "SELECT user_seeks FROM sys.dm_db_index_usage_stats WHERE index_name = 't_k'",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Each branch of a union is one search of the index; a scan makes none.
#[test]
fn unions_search_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        for s in SETUP {
            c.batch_execute(s).await.unwrap();
        }
        let count = |sql: &'static str| {
            let c = &c;
            async move {
                let before = seeks(c).await;
                let n: i64 = c.query_one(sql, &[]).await.unwrap().get(0);
                (n, seeks(c).await - before)
            }
        };
        assert_eq!(
            count("SELECT count(*) FROM t WHERE k IN (1, 2, 3)").await,
            (30, 3)
        );
        assert_eq!(
            count("SELECT count(*) FROM t WHERE k BETWEEN 1 AND 3 OR k BETWEEN 2 AND 5").await,
            (50, 2)
        );
        // A branch the index cannot serve: one scan, no seeks.
        assert_eq!(
            count("SELECT count(*) FROM t WHERE k IN (1, 2) OR b = 'x1'").await,
            (180, 0)
        );
        // Parameters, over the extended protocol.
        let before = seeks(&c).await;
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM t WHERE k IN ($1, $2) AND id > $3",
                &[&4i32, &5i32, &0i32],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!((n, seeks(&c).await - before), (20, 2));
        let before = seeks(&c).await;
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM t WHERE k = ANY($1)",
                &[&vec![1i32, 2, 3]],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!((n, seeks(&c).await - before), (30, 3));
    });
}
