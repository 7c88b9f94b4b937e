//! Anonymous record values against a scratch PostgreSQL 15 with the same
//! SQL: `ROW(...)` and `(a, b)`, a multi-column function's row in a select
//! list (`_pg_expandarray(...) AS keys`, `pg_get_keywords()`), `(expr).field`
//! over them and over a derived table's record column (pgjdbc's
//! getPrimaryKeys query), the text and binary wire forms, RowDescription's
//! `record` type, and the errors of field selection.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, run_script, Field, Peers};
use std::time::Duration;
use tokio_postgres::types::{FromSql, Type};

const FIELDS: &[Field] = &[Field::Detail, Field::Hint];

const SCRIPT: &[&str] = &[
    "SELECT ROW(1, 'a', NULL), (1, 2.5), ROW()",
    // Quoting of fields as record_out does it.
    "SELECT ROW('a b', '', 'x\"y', 'p\\q', '(', ',', NULL, 'plain', true)",
    "SELECT ROW(1, ROW(2, 'a b'::text)), ROW(ARRAY[1, 2], ARRAY['x y']), (ROW(1, 'x'::text)).f2",
    "SELECT (r).f1 + 1, (r).f2 FROM (SELECT ROW(41, 'y'::text) AS r) s",
    // A multi-column function's row as a whole.
    "SELECT information_schema._pg_expandarray(ARRAY[10, 20, 30])",
    "SELECT information_schema._pg_expandarray(ARRAY['a', NULL]) AS k, 1 AS one",
    "SELECT (k).x, (k).n FROM (SELECT information_schema._pg_expandarray(ARRAY[5, 6]) AS k) s",
    "SELECT jsonb_each('{\"a\": 1, \"b\": \"x y\"}'), json_each_text('{\"c\": null}')",
    "SELECT pg_get_keywords() LIMIT 3",
    "SELECT (k).word, (k).catdesc FROM (SELECT pg_get_keywords() AS k) s WHERE (k).word LIKE 'ab%'",
    // pgjdbc 42.5's getPrimaryKeys, as it sends it.
    "CREATE TABLE pk2 (a int, b text, c int, PRIMARY KEY (c, a))",
    "SELECT result.TABLE_CAT, result.TABLE_SCHEM, result.TABLE_NAME, result.COLUMN_NAME, \
     result.KEY_SEQ, result.PK_NAME FROM (SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, \
     ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME, \
     (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME, \
     information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM \
     FROM pg_catalog.pg_class ct JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid) \
     JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid) \
     JOIN pg_catalog.pg_index i ON ( a.attrelid = i.indrelid) \
     JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid) \
     WHERE true AND ct.relname = E'pk2' AND i.indisprimary ) result \
     where result.A_ATTNUM = (result.KEYS).x ORDER BY result.table_name, result.pk_name, result.key_seq",
    // Errors.
    "SELECT (ROW(1, 2)).f3",
    "SELECT (information_schema._pg_expandarray(ARRAY[1])).nope",
    "SELECT (k).nope FROM (SELECT information_schema._pg_expandarray(ARRAY[1]) AS k) s",
    "SELECT (a).x FROM (SELECT 1 AS a) s",
];

/// A value's bytes as the server sent them, whatever its type.
struct Raw(Vec<u8>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Raw, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

#[test]
fn record_values_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare record values") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, FIELDS).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, FIELDS).await;
        assert_same(&want, &got);
        // RowDescription's type and the binary form (record_send).
        let mut seen = Vec::new();
        for conn in [peers.pg_conn(), peers.walden_conn()] {
            let c = connect(&conn).await;
            let st = c
                .prepare("SELECT ROW(7::int, 'a'::text, NULL::bigint, 2.5::float8), 1")
                .await
                .unwrap();
            let types: Vec<Type> = st.columns().iter().map(|c| c.type_().clone()).collect();
            let row = c.query_one(&st, &[]).await.unwrap();
            seen.push((types, row.get::<_, Raw>(0).0));
        }
        assert_eq!(seen[0].0[0], Type::RECORD);
        assert_eq!(seen[0], seen[1], "PostgreSQL's then Walden's");
    });
}

/// Records compare field by field with NULL rules of their own in
/// PostgreSQL. Row constructors written as such compare (pg_answers.rs);
/// a record-valued expression (a column of records, a subquery's record)
/// is refused rather than answered differently.
#[test]
fn record_comparison_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(tmp.path(), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        for sql in [
            "SELECT 1 FROM (SELECT ROW(1) AS r) s WHERE r < ROW(2)",
            "SELECT 1 FROM (SELECT ROW(1, 2) AS r) s WHERE r = ROW(1, 2)",
            "SELECT 1 FROM (SELECT ROW(1, 2) AS r) s WHERE r IN (ROW(1, 2))",
        ] {
            let e = c.simple_query(sql).await.unwrap_err();
            let d = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
            assert_eq!(d.code().code(), "0A000", "{sql}: {}", d.message());
            assert!(d.message().contains("record"), "{sql}: {}", d.message());
        }
    });
}
