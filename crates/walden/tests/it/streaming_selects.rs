//! A plain SELECT streams over its table: with LIMIT the scan stops once it
//! has OFFSET + LIMIT rows, and with ORDER BY ... LIMIT only that many rows
//! are held (a bounded sort). On a Walden whose `statement_memory_limit` is
//! far below the table's size these queries answer as PostgreSQL 15 does on
//! the same rows; rows past the LIMIT are never evaluated (a division by
//! zero there is not raised, a sequence is not advanced), as in PostgreSQL.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, outcome, run_script, start_postgres};
use server_support::Serve;
use std::time::Duration;

/// 60,000 rows, loaded in slices small enough for the limit.
fn setup() -> Vec<String> {
    let mut s = vec![
        "CREATE TABLE wide (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL, pad text)"
            .to_string(),
        "CREATE SEQUENCE picks".to_string(),
    ];
    for i in 0..6 {
        s.push(format!(
            "INSERT INTO wide SELECT x, x % 7, (x * 7919) % 10007, repeat('p', 40) \
             FROM generate_series({}, {}) AS x",
            i * 10_000 + 1,
            (i + 1) * 10_000
        ));
    }
    s
}

const QUERIES: &[&str] = &[
    "SELECT id, g, v FROM wide LIMIT 3",
    "SELECT id FROM wide WHERE g = 3 LIMIT 4 OFFSET 2",
    "SELECT id, v FROM wide ORDER BY v DESC, id LIMIT 5",
    "SELECT id, v FROM wide ORDER BY v, id LIMIT 5 OFFSET 10",
    "SELECT id, g FROM wide ORDER BY g DESC, id DESC LIMIT 7 OFFSET 3000",
    "SELECT id + 1 AS n FROM wide WHERE v < 500 ORDER BY n LIMIT 6",
    "SELECT count(*), sum(v) FROM (SELECT v FROM wide ORDER BY v DESC, id LIMIT 100) t",
    "SELECT 100 / (id - 5) FROM wide LIMIT 3",
    "SELECT nextval('picks') FROM wide LIMIT 3",
    "SELECT nextval('picks')",
    "SELECT EXISTS (SELECT 1 FROM wide WHERE v = 7919)",
    "SELECT (SELECT id FROM wide WHERE g = 6 ORDER BY v, id LIMIT 1)",
    "SELECT id FROM wide ORDER BY v, id LIMIT 0",
    "SELECT count(*) FROM wide WHERE v BETWEEN 100 AND 200",
    // UPDATE and DELETE keep only the keys of the rows they select, read
    // from the store after a checkpoint (a table without a primary key
    // keys its rows by a hidden row id).
    "CREATE TABLE nokey (a int, b text)",
    "INSERT INTO nokey SELECT x, 'b' || x FROM generate_series(1, 3000) AS x",
    "CHECKPOINT",
    "UPDATE nokey SET b = 'x' WHERE a % 1000 = 7",
    "DELETE FROM nokey WHERE a % 1000 = 8",
    "UPDATE wide SET pad = 'u' WHERE v < 30",
    "DELETE FROM wide WHERE v BETWEEN 30 AND 40",
    "SELECT count(*), count(*) FILTER (WHERE b = 'x'), sum(a) FROM nokey",
    "SELECT count(*), count(*) FILTER (WHERE pad = 'u'), sum(v) FROM wide",
];

#[test]
fn selects_with_limits_stream_past_the_statement_memory_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = start_postgres(tmp.path(), "to compare streamed selects") else {
        return;
    };
    let cfg = tmp.path().join("walden.toml");
    std::fs::write(&cfg, "statement_memory_limit_mb = 2\n").unwrap();
    let walden = Serve::start(
        &tmp.path().join("walden"),
        &["--config", cfg.to_str().unwrap()],
    );
    let setup = setup();
    let script: Vec<&str> = setup
        .iter()
        .map(String::as_str)
        .chain(QUERIES.iter().copied())
        .collect();
    block_on_within(Duration::from_secs(180), async {
        let want = run_script(&pg_diff::postgres_conn(&pg), &script, &[]).await;
        let got = run_script(&walden.conn_str(), &script, &[]).await;
        assert!(want.iter().all(|w| !w.contains("-> ERROR")), "{want:#?}");
        assert_same(&want, &got);
        // Still bounded: every row sorted, or every row past the LIMIT's
        // reach, is over the limit.
        let c = connect(&walden.conn_str()).await;
        let all = outcome(&c, "SELECT * FROM wide ORDER BY v", &[]).await;
        assert!(all.starts_with("ERROR 53200"), "{all}");
        // Ties: the bounded sort keeps what the full (stable) sort would.
        for (limit, offset) in [(5, 200), (3, 0), (40, 410)] {
            let top = outcome(
                &c,
                &format!("SELECT id FROM wide ORDER BY g LIMIT {limit} OFFSET {offset}"),
                &[],
            )
            .await;
            let cfg2 = outcome(
                &c,
                &format!(
                    "SELECT id FROM wide WHERE id <= 3000 ORDER BY g LIMIT {limit} OFFSET {offset}"
                ),
                &[],
            )
            .await;
            assert!(
                !top.starts_with("ERROR") && !cfg2.starts_with("ERROR"),
                "{top} {cfg2}"
            );
            let full = outcome(
                &c,
                &format!(
                    "SELECT id FROM (SELECT id, g FROM wide WHERE id <= 3000 ORDER BY g) t \
                     LIMIT {limit} OFFSET {offset}"
                ),
                &[],
            )
            .await;
            assert_eq!(cfg2, full, "LIMIT {limit} OFFSET {offset}");
        }
        // LIMIT 0 reads nothing but locks the table, as any read of it.
        outcome(&c, "BEGIN", &[]).await;
        let none = outcome(&c, "SELECT * FROM wide LIMIT 0", &[]).await;
        assert_eq!(none, "ok 0");
        let held = outcome(
            &c,
            "SELECT mode FROM pg_locks WHERE relation = 'wide'::regclass AND pid = pg_backend_pid()",
            &[],
        )
        .await;
        assert_eq!(held, "AccessShareLock; ok 1");
        outcome(&c, "ROLLBACK", &[]).await;
        // A division by zero in a row the LIMIT reaches is raised.
        let err = outcome(&c, "SELECT 100 / (id - 5) FROM wide LIMIT 5", &[]).await;
        assert!(err.starts_with("ERROR 22012"), "{err}");
    });
}
