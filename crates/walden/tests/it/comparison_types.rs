//! Comparisons between values of different types. Where PostgreSQL has no
//! operator and SQL Server none either (a date and an integer, a uuid and
//! an integer, a boolean and a date), Walden refuses as PostgreSQL does
//! (42883), checked against a scratch PostgreSQL 15. Where SQL Server
//! converts (a string beside a number, a bit beside an integer), Walden
//! converts, and every way of asking gives the same rows: a WHERE, a join
//! (hash, index nested loop, left), an IN subquery and an EXISTS. Before,
//! `WHERE q1 = c1` over a bigint and a text column found rows that
//! `JOIN ... ON q1 = c1` did not, and `WHERE bitcol = 1` found none.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect, Peers};
use std::time::Duration;
use tokio_postgres::Client;

const REFUSED: &[&str] = &[
    "CREATE TABLE cmpt (d date, u uuid, n int, f bool, ts timestamp)",
    "INSERT INTO cmpt VALUES ('2020-01-02', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 5, true, '2020-01-02')",
    "SELECT * FROM cmpt WHERE d = n",
    "SELECT * FROM cmpt WHERE n < d",
    "SELECT * FROM cmpt WHERE u = n",
    "SELECT * FROM cmpt WHERE f = d",
    "SELECT * FROM cmpt WHERE ts > n",
    "SELECT * FROM cmpt WHERE d = 5",
    "SELECT * FROM cmpt WHERE u = 5",
    "SELECT '2020-01-01'::date = 5",
    "SELECT n FROM cmpt WHERE d IN (SELECT n FROM cmpt)",
    "SELECT n FROM cmpt a JOIN cmpt b ON a.d = b.n",
    "SELECT n FROM cmpt WHERE d = ANY (ARRAY[1, 2])",
    "SELECT d IS DISTINCT FROM n FROM cmpt",
    // Same kinds keep comparing.
    "SELECT d = ts, d < '2021-01-01', n = 5.0, n < 5.5::float8, f = true FROM cmpt",
];

#[test]
fn pairs_without_an_operator_are_refused_as_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare comparisons") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = pg_diff::sqlstate_outcomes(&connect(&peers.pg_conn()).await, REFUSED).await;
        let got = pg_diff::sqlstate_outcomes(&connect(&peers.walden_conn()).await, REFUSED).await;
        pg_diff::assert_same(&want, &got);
    });
}

async fn rows(c: &Client, sql: &str) -> Vec<String> {
    let msgs = c
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    msgs.iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}

/// A string beside a number, a bit beside an integer: SQL Server's
/// conversion, the same rows whichever way the query is planned.
#[test]
fn converted_pairs_give_the_same_rows_every_way() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(
            "CREATE TABLE a (q1 int8, q2 int8); \
             CREATE TABLE b (c1 text, c2 varchar(10)); \
             CREATE TABLE k (c1 varchar(10) PRIMARY KEY, v int); \
             INSERT INTO a VALUES (123, 1), (456, 2), (7, 3); \
             INSERT INTO b VALUES ('123', 'x'), ('0456', 'y'), ('12.5', 'z'); \
             INSERT INTO k SELECT i::text, i FROM generate_series(1, 500) i;",
        )
        .await
        .unwrap();
        let want = vec!["123|123".to_string(), "456|0456".to_string()];
        for sql in [
            "SELECT q1, c1 FROM a, b WHERE q1 = c1 ORDER BY q1",
            "SELECT q1, c1 FROM a JOIN b ON q1 = c1 ORDER BY q1",
            "SELECT q1, c1 FROM a JOIN b ON c1 = q1 ORDER BY q1",
            "SELECT q1, c1 FROM a LEFT JOIN b ON q1 = c1 WHERE c1 IS NOT NULL ORDER BY q1",
            "SELECT q1, c1 FROM b JOIN a ON q1 = c1 ORDER BY q1",
            "SELECT q1, (SELECT c1 FROM b WHERE c1 = q1) FROM a WHERE q1 IN (SELECT c1 FROM b) ORDER BY q1",
            "SELECT q1, (SELECT c1 FROM b WHERE c1 = q1) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE c1 = q1) ORDER BY q1",
        ] {
            assert_eq!(rows(&c, sql).await, want, "{sql}");
        }
        // A numeric string against an integer compares numbers.
        assert_eq!(
            rows(&c, "SELECT c1 FROM b WHERE c1 > 100 ORDER BY c1").await,
            vec!["0456", "123"],
        );
        // An index nested-loop join over a varchar key, probed by integers
        // (500 rows on the indexed side against 3).
        assert_eq!(
            rows(&c, "SELECT q2, v FROM a JOIN k ON k.c1 = a.q2 ORDER BY q2").await,
            vec!["1|1", "2|2", "3|3"],
        );
        assert_eq!(
            rows(&c, "SELECT q2, v FROM a, k WHERE k.c1 = a.q2 ORDER BY q2").await,
            vec!["1|1", "2|2", "3|3"],
        );
        // A string that is no number is an error, not a non-match.
        let e = c
            .simple_query("SELECT * FROM a JOIN (VALUES ('x'::text)) v(s) ON q1 = s")
            .await
            .expect_err("not a number");
        assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("22P02"));

        // bit = 1, as SQL Server (T-SQL scripts' `WHERE IsActive = 1`).
        c.batch_execute(
            "CREATE TABLE flags (id int PRIMARY KEY, on_ bit, n int); \
             INSERT INTO flags VALUES (1, 1, 1), (2, 0, 0), (3, 1, 2);",
        )
        .await
        .unwrap();
        for sql in [
            "SELECT id FROM flags WHERE on_ = 1 ORDER BY id",
            "SELECT id FROM flags WHERE 1 = on_ ORDER BY id",
            "SELECT id FROM flags WHERE on_ = '1' ORDER BY id",
            "SELECT id FROM flags WHERE on_ = true ORDER BY id",
        ] {
            assert_eq!(rows(&c, sql).await, vec!["1", "3"], "{sql}");
        }
        assert_eq!(
            rows(&c, "SELECT id FROM flags WHERE on_ = 0").await,
            vec!["2"]
        );
        // A bit against an integer column compares integers: 1 = 2 is false.
        assert_eq!(
            rows(&c, "SELECT id FROM flags WHERE on_ = n ORDER BY id").await,
            vec!["1", "2"]
        );
        assert_eq!(
            rows(
                &c,
                "SELECT a.id, b.id FROM flags a JOIN flags b ON a.on_ = b.n ORDER BY 1, 2"
            )
            .await,
            vec!["1|1", "2|2", "3|1"]
        );
    });
}
