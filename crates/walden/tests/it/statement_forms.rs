//! Statement forms against a scratch PostgreSQL 15 running the same SQL:
//! `UPDATE ... SET (a, b) = (...)`, `= ROW(...)` and `= (SELECT ...)`
//! (in ON CONFLICT DO UPDATE too), with their errors; `COMMIT AND CHAIN`
//! and `ROLLBACK AND CHAIN` (modes carried over, failed blocks, outside a
//! block); data-modifying statements in WITH (each run once, whether read
//! or not, their RETURNING rows read by the rest; WITH attached to INSERT,
//! UPDATE and DELETE; PostgreSQL's errors), and the parts Walden refuses
//! (a part reading a table another part changed) refused with 0A000.

use crate::pg_diff;

use pg_diff::{compare_script, Field};

const MULTI_ASSIGN: &[&str] = &[
    "CREATE TABLE u (k int PRIMARY KEY, a int, b int, c text)",
    "INSERT INTO u VALUES (1, 10, 20, 'x'), (2, 30, 40, 'y'), (3, 50, 60, 'z')",
    "UPDATE u SET (a, b) = (b, a) WHERE k = 1 RETURNING *",
    "UPDATE u SET (c, b, a) = ('bugle', b + 11, DEFAULT) WHERE k = 2 RETURNING *",
    "UPDATE u SET (a, b) = ROW(a + 1, b + 1), c = 'r' WHERE k = 3 RETURNING *",
    "UPDATE u SET (a) = ROW(7) WHERE k = 3 RETURNING a",
    "UPDATE u SET (a, b) = (SELECT k * 100, k * 1000) RETURNING *",
    "UPDATE u SET (a, b) = (SELECT v.x, v.y FROM (VALUES (1, -1), (2, -2)) v(x, y) WHERE v.x = u.k) RETURNING *",
    "UPDATE u SET (b, c) = (SELECT count(*), max(c) FROM u u2 WHERE u2.k <= 2) WHERE k = 3 RETURNING *",
    "UPDATE u SET (a, b) = ('9', '10') WHERE k = 1 RETURNING a + b",
    "SELECT * FROM u ORDER BY k",
    // PostgreSQL's errors.
    "UPDATE u SET (a) = (5)",
    "UPDATE u SET (a, b) = (1, 2, 3)",
    "UPDATE u SET (a, b) = (SELECT 1)",
    "UPDATE u SET (a, b) = (SELECT 1, 2, 3)",
    "UPDATE u SET (a, b) = (SELECT 7, 8 UNION ALL SELECT 1, 2)",
    "UPDATE u SET (a, a) = (1, 2)",
    "UPDATE u SET (a, b) = (1, 2), b = 3",
    "UPDATE u SET (a, nope) = (1, 2)",
    // ON CONFLICT DO UPDATE.
    "INSERT INTO u VALUES (1, 0, 0, 'new') ON CONFLICT (k) DO UPDATE SET (a, c) = (excluded.a + 5, u.c || '!') RETURNING *",
    "INSERT INTO u VALUES (2, 0, 0, 'new') ON CONFLICT (k) DO UPDATE SET (b, c) = (SELECT excluded.k * 3, excluded.c || u.c) RETURNING *",
    "INSERT INTO u VALUES (2, 0, 0, 'new') ON CONFLICT (k) DO UPDATE SET (a, b) = (SELECT 1)",
    // Generated columns are not assignable this way either.
    "CREATE TABLE g (a int, b int GENERATED ALWAYS AS (a * 2) STORED)",
    "INSERT INTO g (a) VALUES (1)",
    "UPDATE g SET (a, b) = (SELECT 5, 6)",
    "UPDATE g SET (a, b) = (5, DEFAULT) RETURNING *",
];

#[test]
fn multiple_column_assignments_as_postgresql() {
    compare_script(
        "to compare UPDATE SET (a, b) = ...",
        MULTI_ASSIGN,
        &[Field::Detail],
    );
}

const CHAIN: &[&str] = &[
    "CREATE TABLE c (a int)",
    "SET default_transaction_read_only = on",
    "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ WRITE, DEFERRABLE",
    "INSERT INTO c VALUES (1)",
    "COMMIT AND CHAIN",
    "SHOW transaction_isolation",
    "SHOW transaction_read_only",
    "SHOW transaction_deferrable",
    "INSERT INTO c VALUES ('error')",
    "INSERT INTO c VALUES (2)",
    "COMMIT AND CHAIN",
    "SHOW transaction_isolation",
    "SHOW transaction_read_only",
    "INSERT INTO c VALUES (3)",
    "SAVEPOINT x",
    "COMMIT AND CHAIN",
    "SHOW transaction_isolation",
    "ROLLBACK AND CHAIN",
    "SHOW transaction_isolation",
    "INSERT INTO c VALUES (4)",
    "ROLLBACK AND CHAIN",
    "SHOW transaction_read_only",
    "COMMIT AND NO CHAIN",
    "SHOW transaction_isolation",
    "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY",
    "COMMIT AND CHAIN",
    "SHOW transaction_isolation",
    "SHOW transaction_read_only",
    "ROLLBACK AND NO CHAIN",
    "COMMIT AND CHAIN",
    "ROLLBACK AND CHAIN",
    "RESET default_transaction_read_only",
    "SELECT 1; COMMIT AND CHAIN",
    "INSERT INTO c VALUES (5); COMMIT AND CHAIN; INSERT INTO c VALUES (6)",
    "BEGIN; INSERT INTO c VALUES (7); COMMIT AND CHAIN; SHOW transaction_isolation",
    "ROLLBACK",
    "SELECT * FROM c ORDER BY a",
];

#[test]
fn commit_and_chain_as_postgresql() {
    compare_script("to compare COMMIT AND CHAIN", CHAIN, &[]);
}

const WITH_DML: &[&str] = &[
    "CREATE TABLE y (a int)",
    "INSERT INTO y SELECT generate_series(1, 10)",
    "WITH t AS (INSERT INTO y VALUES (11), (12) RETURNING *) SELECT * FROM t",
    "WITH t AS (UPDATE y SET a = a + 1 RETURNING *) SELECT * FROM t",
    "WITH t AS (DELETE FROM y WHERE a <= 5 RETURNING *) SELECT * FROM t",
    "SELECT * FROM y",
    // Run once, to completion, even when read in part or not at all.
    "WITH t AS (UPDATE y SET a = a * 100 RETURNING *) SELECT * FROM t ORDER BY a LIMIT 2",
    "WITH t AS (DELETE FROM y WHERE a > 1200 RETURNING *) SELECT 1",
    "WITH t AS (INSERT INTO y VALUES (1)) SELECT count(*) FROM y2_unused_name_is_absent",
    "SELECT * FROM y",
    // Read twice: run once.
    "WITH t AS (INSERT INTO y VALUES (7) RETURNING a) SELECT * FROM t UNION ALL SELECT * FROM t",
    "SELECT count(*) FROM y WHERE a = 7",
    // WITH attached to INSERT, UPDATE, DELETE; data-modifying in both.
    "CREATE TABLE z (a int, note text)",
    "WITH t AS (SELECT a FROM y WHERE a < 800) INSERT INTO z SELECT a, 'copied' FROM t RETURNING *",
    "WITH t AS (DELETE FROM y WHERE a = 7 RETURNING a) INSERT INTO z SELECT -a, 'moved' FROM t RETURNING *",
    "WITH t AS (SELECT max(a) AS m FROM z) UPDATE z SET note = 'max' FROM t WHERE z.a = t.m RETURNING z.*",
    "WITH t AS (INSERT INTO y VALUES (42) RETURNING a) UPDATE z SET a = z.a + t.a FROM t WHERE z.a < 0 RETURNING z.*",
    "WITH t AS (SELECT min(a) AS m FROM z) DELETE FROM z USING t WHERE z.a = t.m RETURNING z.*",
    "WITH t AS (SELECT a FROM z) UPDATE z SET a = (SELECT max(t.a) FROM t) + z.a RETURNING *",
    "WITH d AS (DELETE FROM z RETURNING *) INSERT INTO z SELECT a, note || '+' FROM d RETURNING *",
    "SELECT * FROM z ORDER BY a",
    // Two data-modifying parts, the second reading the first's rows.
    "CREATE TABLE yy (a int)",
    "WITH t1 AS (INSERT INTO yy VALUES (1), (2) RETURNING *), t2 AS (INSERT INTO z SELECT a, 'from t1' FROM t1 RETURNING *) SELECT * FROM t2",
    "SELECT * FROM yy",
    // Column names, RETURNING expressions, ON CONFLICT inside.
    "CREATE TABLE w (k int PRIMARY KEY, v text)",
    "INSERT INTO w VALUES (1, 'one')",
    "WITH t (key, val) AS (INSERT INTO w VALUES (1, 'x'), (2, 'two') ON CONFLICT (k) DO UPDATE SET v = w.v || ' again' RETURNING k, v) SELECT key, val FROM t ORDER BY key",
    // PostgreSQL's errors.
    "WITH t AS (INSERT INTO y VALUES (0)) SELECT * FROM t",
    "SELECT * FROM (WITH t AS (UPDATE y SET a = a + 1 RETURNING *) SELECT * FROM t) ss",
    "WITH t AS (INSERT INTO y VALUES (0) RETURNING nope) SELECT * FROM t",
    "WITH t (x, y2) AS (DELETE FROM w WHERE k = 2 RETURNING k) SELECT * FROM t",
    "SELECT * FROM w ORDER BY k",
    // An error undoes every part.
    "WITH t AS (DELETE FROM w RETURNING k) SELECT k / 0 FROM t",
    "SELECT count(*) FROM w",
];

#[test]
fn data_modifying_with_as_postgresql() {
    compare_script("to compare data-modifying WITH", WITH_DML, &[]);
}

/// Parts reading a table another part changed: PostgreSQL shows them the
/// statement's starting snapshot, Walden refuses them (nothing changes).
const REFUSED: &[&str] = &[
    "CREATE TABLE y (a int)",
    "INSERT INTO y VALUES (1), (2)",
    "WITH t AS (UPDATE y SET a = a + 10 RETURNING *) SELECT * FROM y",
    "WITH t AS (DELETE FROM y RETURNING *), t2 AS (UPDATE y SET a = 0 RETURNING *) SELECT 1",
    "WITH t AS (INSERT INTO y VALUES (3) RETURNING *) SELECT * FROM t JOIN y USING (a)",
    "WITH t AS (DELETE FROM y RETURNING a) INSERT INTO y SELECT a FROM y",
    "SELECT * FROM y ORDER BY a",
];

#[test]
fn data_modifying_with_reading_a_changed_table_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = crate::server_support::Serve::start(&tmp.path().join("data"), &[]);
    let got = pg_diff::block_on_within(std::time::Duration::from_secs(60), async {
        let c = pg_diff::connect(&walden.conn_str()).await;
        pg_diff::sqlstate_outcomes(&c, REFUSED).await
    });
    let codes: Vec<&str> = got
        .iter()
        .map(|l| l.rsplit("-> ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        codes,
        [
            "ok 0",
            "ok 2",
            "ERROR 0A000",
            "ERROR 0A000",
            "ERROR 0A000",
            "ERROR 0A000",
            "1; 2; ok 2",
        ],
        "{got:#?}"
    );
}
