//! Aggregates stream the rows of their input instead of holding them: on a
//! Walden whose `statement_memory_limit` is far below the table's size,
//! `count(*)`, sums and GROUP BY with few groups still answer (and answer
//! as PostgreSQL 15 does on the same rows), while a query that keeps every
//! row still fails with 53200.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, outcome, run_script, start_postgres};
use server_support::Serve;
use std::time::Duration;

/// 80,000 rows, loaded in slices small enough for the limit.
fn setup() -> Vec<String> {
    let mut s = vec!["CREATE TABLE big (id int PRIMARY KEY, g int, v bigint, s text)".to_string()];
    for i in 0..8 {
        s.push(format!(
            "INSERT INTO big SELECT x, x % 10, x * 3 - 7, 's' || (x % 4) \
             FROM generate_series({}, {}) AS x",
            i * 10_000 + 1,
            (i + 1) * 10_000
        ));
    }
    s.push("CREATE INDEX big_g ON big (g)".to_string());
    s
}

const QUERIES: &[&str] = &[
    "SELECT count(*) FROM big",
    "SELECT count(*), sum(v), min(v), max(v), avg(v)::float8, count(s) FROM big",
    "SELECT count(*), sum(id) FROM big WHERE v % 3 = 1",
    "SELECT sum(v) FILTER (WHERE g = 3), count(DISTINCT g), bool_and(v > -10) FROM big",
    "SELECT g, count(*), sum(v), min(s), max(id) FROM big GROUP BY g ORDER BY g",
    "SELECT s, count(*) FROM big GROUP BY s HAVING count(*) > 19999 ORDER BY s DESC",
    "SELECT g % 2, avg(v)::float8 FROM big WHERE id > 1000 GROUP BY g % 2 ORDER BY 1",
    "SELECT count(*), sum(v) FROM big WHERE g IN (1, 2) OR g BETWEEN 7 AND 8",
    "SELECT count(*) FROM big WHERE id < 0",
    "SELECT g, count(*) FROM big WHERE id < 0 GROUP BY g",
];

#[test]
fn aggregates_stream_past_the_statement_memory_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = start_postgres(tmp.path(), "to compare aggregates") else {
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
        // The limit holds: keeping every row (~80,000 x 4 values) is over it.
        let c = connect(&walden.conn_str()).await;
        let all = outcome(&c, "SELECT * FROM big ORDER BY v DESC", &[]).await;
        assert!(all.starts_with("ERROR 53200"), "{all}");
        let grouped = outcome(&c, "SELECT id, count(*) FROM big GROUP BY id", &[]).await;
        assert!(grouped.starts_with("ERROR 53200"), "{grouped}");
    });
}
