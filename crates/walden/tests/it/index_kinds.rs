//! Index key columns with `DESC` / `NULLS FIRST | LAST`, against a scratch
//! PostgreSQL 15 with the same SQL: the catalogs (`pg_index.indoption`,
//! `pg_get_indexdef`, `pg_indexes`), uniqueness through such an index,
//! ordered answers over the indexed columns (NULLs included), and what is
//! still refused (expression, partial and INCLUDE indexes). Then psql's
//! `\d`, and the definition surviving a kill and a checkpointed restart.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{check_after_kill_then_checkpoint, connect, Field};
use server_support::{have, run_with_deadline};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "CREATE TABLE ix (a int, b text, c int)",
    "INSERT INTO ix VALUES (1, 'x', 10), (NULL, 'y', 20), (3, NULL, 30), (2, 'z', NULL), (NULL, NULL, 40)",
    "CREATE INDEX ix_a_desc ON ix (a DESC)",
    "CREATE INDEX ix_mix ON ix (a ASC NULLS FIRST, b DESC NULLS LAST, c)",
    "CREATE INDEX ix_dn ON ix (b DESC NULLS FIRST, a NULLS LAST)",
    "CREATE UNIQUE INDEX ix_u ON ix (c DESC)",
    "SELECT indexrelid::regclass::text, indoption::text, indkey::text FROM pg_index \
     WHERE indrelid = 'ix'::regclass ORDER BY 1",
    "SELECT pg_get_indexdef('ix_mix'::regclass), pg_get_indexdef('ix_mix'::regclass, 2, false)",
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'ix' ORDER BY 1",
    // Uniqueness holds whatever the order.
    "INSERT INTO ix VALUES (5, 'w', 10)",
    "INSERT INTO ix VALUES (5, 'w', NULL)",
    // Answers over the indexed columns, either way round.
    "SELECT a FROM ix ORDER BY a DESC LIMIT 3",
    "SELECT a FROM ix ORDER BY a DESC NULLS LAST LIMIT 3",
    "SELECT a, b FROM ix ORDER BY a NULLS FIRST, b DESC NULLS LAST",
    "SELECT c FROM ix WHERE c > 15 ORDER BY c DESC",
    "SELECT a FROM ix WHERE a >= 2 ORDER BY a",
    "DROP INDEX ix_a_desc",
    "SELECT count(*) FROM pg_index WHERE indrelid = 'ix'::regclass",
    // Still refused.
    "CREATE INDEX ix_e ON ix (lower(b))",
    "CREATE INDEX ix_p ON ix (a) WHERE a > 1",
    "CREATE INDEX ix_i ON ix (a) INCLUDE (b)",
];

#[test]
fn index_column_orders_as_postgresql() {
    // The refused forms differ in SQLSTATE only by design (PostgreSQL
    // makes them); everything else must match.
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = pg_diff::Peers::start(tmp.path(), "to compare index column orders") else {
        return;
    };
    let fields = [Field::Detail];
    let (want, got) = pg_diff::block_on_within(Duration::from_secs(120), async {
        (
            pg_diff::run_script(&peers.pg_conn(), SCRIPT, &fields).await,
            pg_diff::run_script(&peers.walden_conn(), SCRIPT, &fields).await,
        )
    });
    let refused = SCRIPT.len() - 3;
    pg_diff::assert_same(&want[..refused], &got[..refused]);
    for line in &got[refused..] {
        assert!(line.contains("ERROR 0A000"), "{line}");
    }
}

#[test]
fn psql_describes_and_a_restart_keeps_index_column_orders() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let walden = server_support::Serve::start(&dir, &[]);
    pg_diff::block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(
            "CREATE TABLE r (a int, b text); \
             CREATE INDEX r_plain ON r (a); \
             CREATE INDEX r_ord ON r (a DESC, b NULLS FIRST); \
             INSERT INTO r VALUES (1, 'x'), (2, NULL)",
        )
        .await
        .unwrap();
    });
    if have("psql", &["--version"]) {
        let out = run_with_deadline(
            std::process::Command::new("psql").args([&walden.conn_str(), "-X", "-c", "\\d r"]),
            Duration::from_secs(30),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("\"r_ord\" btree (a DESC, b NULLS FIRST)"),
            "{text}"
        );
    }
    check_after_kill_then_checkpoint(walden, &dir, |conn| async move {
        let c = connect(&conn).await;
        let rows = c
            .query(
                "SELECT pg_get_indexdef(indexrelid), indoption::text FROM pg_index \
                 WHERE indrelid = 'r'::regclass ORDER BY 1",
                &[],
            )
            .await
            .unwrap();
        let got: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            got,
            [
                (
                    "CREATE INDEX r_ord ON public.r USING btree (a DESC, b NULLS FIRST)"
                        .to_string(),
                    "3 2".to_string()
                ),
                (
                    "CREATE INDEX r_plain ON public.r USING btree (a)".to_string(),
                    "0".to_string()
                ),
            ]
        );
        let rows = c
            .query("SELECT a FROM r ORDER BY a DESC", &[])
            .await
            .unwrap();
        let a: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(a[..2], [2, 1]);
    });
}
