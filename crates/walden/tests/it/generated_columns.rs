//! Generated columns (`GENERATED ALWAYS AS (expr) STORED`) through the
//! server, against a scratch PostgreSQL 15 with the same SQL: computed on
//! INSERT (VALUES, DEFAULT, SELECT), UPDATE, upsert, MERGE, COPY and a
//! foreign key's cascade; values given for them refused (428C9) and COPY
//! naming one refused; the declaration's checks (another generated column,
//! a volatile function, a subquery, an aggregate, DEFAULT beside it); the
//! catalogs (`pg_attribute.attgenerated`, `pg_get_expr`,
//! `information_schema.columns`) and psql's `\d`; ALTER TABLE (rename,
//! drop and retype of a column one reads). Then the columns surviving a
//! kill and a checkpointed restart, and computing afterwards.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{check_after_kill_then_checkpoint, compare_script, connect, Field};
use server_support::{have, run_with_deadline};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "CREATE TABLE g (id int PRIMARY KEY, a int, b int GENERATED ALWAYS AS (a * 2) STORED, \
     note text, loud text GENERATED ALWAYS AS (upper(note) || '!') STORED, \
     f float8 GENERATED ALWAYS AS (a / 4.0) STORED)",
    "INSERT INTO g (id, a, note) VALUES (1, 10, 'x'), (2, NULL, NULL)",
    "INSERT INTO g VALUES (3, 5, DEFAULT, 'y', DEFAULT, DEFAULT)",
    "INSERT INTO g (id, a, b) VALUES (4, 1, 2)",
    "INSERT INTO g VALUES (4, 1, 2, 'z', 'Z', 1)",
    "INSERT INTO g (id, a, b) SELECT 5, 1, 2",
    "INSERT INTO g (id, a) SELECT 10 + n, n FROM generate_series(1, 3) n",
    "INSERT INTO g (id, a) VALUES (20, 7) RETURNING b, loud, f",
    "SELECT * FROM g ORDER BY id",
    "UPDATE g SET a = a + 1 WHERE id <= 3 RETURNING id, b",
    "UPDATE g SET b = 1",
    "UPDATE g SET b = DEFAULT, note = 'w' WHERE id = 2",
    "INSERT INTO g (id, a) VALUES (1, 100) ON CONFLICT (id) DO UPDATE SET a = excluded.a + 1",
    "INSERT INTO g (id, a) VALUES (1, 100) ON CONFLICT (id) DO UPDATE SET b = 3",
    "MERGE INTO g USING (VALUES (2, 50), (30, 60)) s(id, a) ON g.id = s.id \
     WHEN MATCHED THEN UPDATE SET a = s.a WHEN NOT MATCHED THEN INSERT (id, a) VALUES (s.id, s.a)",
    "SELECT * FROM g ORDER BY id",
    "COPY g (id, b) FROM STDIN",
    "SELECT attname, attgenerated, atthasdef FROM pg_attribute \
     WHERE attrelid = 'g'::regclass AND attnum > 0 ORDER BY attnum",
    "SELECT a.attname, pg_get_expr(d.adbin, d.adrelid), pg_get_expr(d.adbin, d.adrelid, true) \
     FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
     WHERE d.adrelid = 'g'::regclass AND a.attname IN ('b') ORDER BY 1",
    "SELECT column_name, column_default, is_generated, generation_expression \
     FROM information_schema.columns WHERE table_name = 'g' AND column_name IN ('a', 'b') \
     ORDER BY ordinal_position",
    // The declaration's checks.
    "CREATE TABLE bad (a int, b int GENERATED ALWAYS AS (b * 2) STORED)",
    "CREATE TABLE bad (a int, b int GENERATED ALWAYS AS (a) STORED, c int GENERATED ALWAYS AS (b) STORED)",
    "CREATE TABLE bad (a int, b float8 GENERATED ALWAYS AS (random()) STORED)",
    "CREATE TABLE bad (a int, b int GENERATED ALWAYS AS ((SELECT 1)) STORED)",
    "CREATE TABLE bad (a int, b bigint GENERATED ALWAYS AS (count(a)) STORED)",
    "CREATE TABLE bad (a int, b int GENERATED ALWAYS AS (z) STORED)",
    "CREATE TABLE bad (a int, b int GENERATED ALWAYS AS (a) STORED DEFAULT 1)",
    // A foreign key's cascade recomputes the child's generated column.
    "CREATE TABLE parent (k int PRIMARY KEY)",
    "CREATE TABLE child (k int REFERENCES parent ON UPDATE CASCADE, k2 int GENERATED ALWAYS AS (k * 100) STORED)",
    "INSERT INTO parent VALUES (1)",
    "INSERT INTO child (k) VALUES (1)",
    "UPDATE parent SET k = 2",
    "SELECT * FROM child",
    // ALTER TABLE.
    "ALTER TABLE g ALTER b SET DEFAULT 5",
    "ALTER TABLE g DROP COLUMN a",
    "ALTER TABLE g ALTER a TYPE bigint",
    "ALTER TABLE g RENAME a TO aa",
    "INSERT INTO g (id, aa) VALUES (40, 4) RETURNING b",
    "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d \
     WHERE d.adrelid = 'g'::regclass AND d.adnum = 3",
    "CREATE TABLE later (a int)",
    "ALTER TABLE later ADD COLUMN b int GENERATED ALWAYS AS (a + 1) STORED",
    "INSERT INTO later (a) VALUES (1) RETURNING *",
];

#[test]
fn generated_columns_as_postgresql() {
    compare_script("to compare generated columns", SCRIPT, &[Field::Detail]);
}

#[test]
fn psql_describes_and_a_restart_keeps_generated_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let walden = server_support::Serve::start(&dir, &[]);
    pg_diff::block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(
            "CREATE TABLE r (a int, b int GENERATED ALWAYS AS (a * 3) STORED); \
             INSERT INTO r (a) VALUES (1), (2)",
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
            text.contains("generated always as (a * 3) stored"),
            "{text}"
        );
    }
    check_after_kill_then_checkpoint(walden, &dir, |conn| async move {
        let c = connect(&conn).await;
        let rows = c.query("SELECT a, b FROM r ORDER BY a", &[]).await.unwrap();
        let got: Vec<(i32, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(got[..2], [(1, 3), (2, 6)]);
        // Still generated: computed for a new row, refused when given.
        let e = c
            .execute("INSERT INTO r VALUES (9, 9)", &[])
            .await
            .unwrap_err();
        assert_eq!(e.code().unwrap().code(), "428C9");
        c.execute("INSERT INTO r (a) VALUES (10)", &[])
            .await
            .unwrap();
        c.execute("DELETE FROM r WHERE a = 10", &[]).await.unwrap();
    });
}
