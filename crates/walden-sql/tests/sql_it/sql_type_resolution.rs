//! Type resolution in the SQL layer: the common type of set operations,
//! VALUES, CASE and COALESCE (the column's type and every value agree),
//! explicit casts to varchar(n) against assignments, and UPDATE ... FROM /
//! DELETE ... USING.

use crate::common;
use crate::common::statements;
use common::engine;
use statements::{err, one, rows, tag};
use walden_engine::{DataType, Value};
use walden_sql::{ErrorKind, SqlSession};

/// The statement's column types and its rows.
fn typed(s: &mut SqlSession, sql: &str) -> (Vec<DataType>, Vec<Vec<Value>>) {
    let out = s
        .execute_batch(sql)
        .pop()
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let types = out.columns.unwrap().into_iter().map(|c| c.ty).collect();
    (types, out.rows)
}

fn numeric() -> DataType {
    DataType::Decimal {
        precision: 0,
        scale: 0,
    }
}

#[test]
fn set_operations_values_and_case_resolve_one_type() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    for sql in [
        "SELECT 1 UNION SELECT 2.5 ORDER BY 1",
        "SELECT 1 UNION ALL SELECT 2.5",
        "SELECT 1.5 INTERSECT SELECT 1 UNION SELECT 2",
        "VALUES (1), (2.5)",
        "SELECT CASE WHEN x = 1 THEN x ELSE 2.5 END FROM (VALUES (1), (2)) v(x)",
        "SELECT COALESCE(NULL, 1, 2.5)",
        "SELECT GREATEST(1, 2.5)",
    ] {
        let (types, rows) = typed(&mut s, sql);
        assert_eq!(types, vec![numeric()], "{sql}");
        for r in rows {
            assert!(matches!(r[0], Value::Decimal(_)), "{sql}: {r:?}");
        }
    }
    let (types, _) = typed(&mut s, "SELECT 1::int2 UNION SELECT 2::int8");
    assert_eq!(types, vec![DataType::BigInt]);
    let (types, _) = typed(
        &mut s,
        "SELECT 'a'::varchar(3) UNION SELECT 'b'::varchar(5)",
    );
    assert_eq!(types, vec![DataType::Varchar(None)]);
    assert_eq!(
        err(&mut s, "SELECT 1 UNION SELECT 'a'::text"),
        ErrorKind::DatatypeMismatch
    );
    assert_eq!(
        err(&mut s, "SELECT true EXCEPT SELECT 1"),
        ErrorKind::DatatypeMismatch
    );
    assert_eq!(
        err(&mut s, "VALUES (1), (true)"),
        ErrorKind::DatatypeMismatch
    );
    assert_eq!(
        err(&mut s, "SELECT 1::oid UNION SELECT 2.5::float8"),
        ErrorKind::CannotCoerce
    );
    assert_eq!(
        err(&mut s, "SELECT CASE WHEN true THEN 'a' ELSE 1 END"),
        ErrorKind::InvalidText
    );
}

#[test]
fn explicit_casts_cut_where_assignments_fail() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    assert_eq!(
        rows(
            &mut s,
            "SELECT 'abcd'::varchar(3), CAST('abcd' AS char(2)), 'héllo'::varchar(2)"
        ),
        vec![vec!["abc", "ab", "hé"]]
    );
    assert_eq!(one(&mut s, "SELECT varchar(2) 'abc'"), "ab");
    tag(&mut s, "CREATE TABLE c (v varchar(3), n numeric(5,2))");
    assert_eq!(
        err(&mut s, "INSERT INTO c VALUES ('abcd', 1)"),
        ErrorKind::StringTooLong
    );
    assert_eq!(
        err(&mut s, "INSERT INTO c VALUES ('a', 1234.5)"),
        ErrorKind::NumericOutOfRange
    );
    tag(&mut s, "INSERT INTO c VALUES ('ab   ', 1.005)");
    assert_eq!(
        rows(&mut s, "SELECT v || '|', n FROM c"),
        vec![vec!["ab |", "1.01"]]
    );
}

#[test]
fn update_from_and_delete_using_join_the_target() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    tag(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v int)");
    tag(&mut s, "CREATE TABLE o (id int, d int)");
    tag(&mut s, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)");
    tag(&mut s, "INSERT INTO o VALUES (1, 1), (1, 100), (3, 3)");
    // Row 1 joins two o rows and changes once, with the first.
    assert_eq!(
        rows(
            &mut s,
            "UPDATE t SET v = v + o.d FROM o WHERE o.id = t.id RETURNING t.id, v, o.d"
        ),
        vec![vec!["1", "11", "1"], vec!["3", "33", "3"]]
    );
    assert_eq!(
        tag(&mut s, "UPDATE t SET v = 0 FROM o WHERE o.id = 99"),
        "UPDATE 0"
    );
    assert_eq!(
        tag(
            &mut s,
            "DELETE FROM t USING o WHERE o.id = t.id AND o.d > 50"
        ),
        "DELETE 1"
    );
    assert_eq!(
        rows(&mut s, "SELECT id, v FROM t ORDER BY id"),
        vec![vec!["2", "20"], vec!["3", "33"]]
    );
    assert_eq!(
        err(&mut s, "UPDATE t SET v = 1 FROM t WHERE t.id = 1"),
        ErrorKind::DuplicateAlias
    );
}

#[test]
fn reg_types_and_oid_resolve_to_the_reg_type() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    // regclass first stays regclass (oid casts to it implicitly); the OID
    // takes its name, a quoted literal is a name looked up.
    let (types, got) = typed(&mut s, "SELECT 'pg_class'::regclass UNION SELECT 1259::oid");
    assert_eq!(types, vec![DataType::Reg(walden_engine::RegKind::Class)]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        rows(
            &mut s,
            "VALUES ('pg_class'::regclass), (1259::oid), ('pg_type')"
        ),
        vec![vec!["pg_class"], vec!["pg_class"], vec!["pg_type"]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT 'pg_catalog'::regnamespace UNION ALL SELECT 11::oid UNION ALL SELECT 99999::oid"
        ),
        vec![vec!["pg_catalog"], vec!["pg_catalog"], vec!["99999"]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT CASE WHEN true THEN 1259::oid ELSE 'pg_class'::regclass END, \
             COALESCE(NULL::regclass, 'pg_type'), GREATEST('pg_class'::regclass, 1247::oid), \
             ARRAY['pg_class'::regclass, 1259::oid]"
        ),
        vec![vec![
            "pg_class",
            "pg_type",
            "pg_class",
            "{pg_class,pg_class}"
        ]]
    );
    // The other order is oid; a name that is no relation fails when planned.
    assert_eq!(
        one(&mut s, "SELECT 1259::oid UNION SELECT 'pg_class'::regclass"),
        "1259"
    );
    assert_eq!(
        err(&mut s, "SELECT COALESCE(NULL::regclass, 'nosuch')"),
        ErrorKind::UndefinedTable
    );
    // A literal compared with a reg type is read as an OID, as there.
    assert_eq!(
        err(&mut s, "SELECT 'pg_class' IN ('pg_class'::regclass)"),
        ErrorKind::InvalidText
    );
}

#[test]
fn char_of_different_lengths_resolves_to_bpchar_without_a_length() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    tag(
        &mut s,
        "CREATE TABLE tc (id int, c1 char(1), c3 char(3), v5 varchar(5), t text)",
    );
    tag(
        &mut s,
        "INSERT INTO tc VALUES (1, 'a', 'bcd', 'xy', 'tt'), (2, 'b', 'ef', 'uvwxy', NULL)",
    );
    let bpchar = DataType::Char(0);
    for sql in [
        "SELECT c1 FROM tc UNION ALL SELECT c3 FROM tc",
        "SELECT c3 FROM tc UNION ALL SELECT c1 FROM tc",
        "SELECT x FROM (VALUES ('a'::char(1)), ('bcd'::char(3))) v(x)",
        "SELECT CASE WHEN id = 1 THEN c1 ELSE c3 END FROM tc",
        "SELECT CASE WHEN id = 1 THEN c1 END FROM tc",
        "SELECT COALESCE(c1, c3) FROM tc",
        "SELECT GREATEST(c1, c3) FROM tc",
        "SELECT c1 FROM tc UNION ALL SELECT 'zz'",
        "SELECT c3 FROM tc UNION ALL SELECT t FROM tc",
        "SELECT 'a'::char(2) UNION ALL SELECT 'bcd'::varchar(5)",
    ] {
        assert_eq!(typed(&mut s, sql).0, vec![bpchar.clone()], "{sql}");
    }
    // The same length, or a NULL dropped from COALESCE, keeps it.
    for sql in [
        "SELECT c1 FROM tc UNION ALL SELECT c1 FROM tc",
        "SELECT COALESCE(c1, NULL) FROM tc",
        "SELECT CASE WHEN id = 1 THEN c1 ELSE c1 END FROM tc",
    ] {
        assert_eq!(typed(&mut s, sql).0, vec![DataType::Char(1)], "{sql}");
    }
    assert_eq!(
        typed(&mut s, "SELECT ARRAY[c1, c3] FROM tc").0,
        vec![DataType::Array(Box::new(bpchar.clone()))]
    );
    // Each value keeps its own padding: none is cut to the first length.
    assert_eq!(
        rows(
            &mut s,
            "SELECT c1 FROM tc UNION ALL SELECT c3 FROM tc UNION ALL SELECT 'zz'"
        ),
        vec![vec!["a"], vec!["b"], vec!["bcd"], vec!["ef "], vec!["zz"]]
    );
    assert_eq!(
        rows(&mut s, "SELECT c3 FROM tc UNION ALL SELECT t FROM tc"),
        vec![vec!["bcd"], vec!["ef "], vec!["tt"], vec!["NULL"]]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT 'a'::char(2) UNION ALL SELECT 'bcd'::varchar(5) ORDER BY 1 DESC LIMIT 1"
        ),
        "bcd"
    );
    // char(n) becoming text or varchar loses its trailing blanks.
    assert_eq!(
        rows(
            &mut s,
            "SELECT 'bcd'::char(5)::text || '|', 'bcd'::char(5)::varchar || '|', COALESCE(t, c3) || '|' \
             FROM tc ORDER BY id"
        ),
        vec![vec!["bcd|", "bcd|", "tt|"], vec!["bcd|", "bcd|", "ef|"]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT v5 FROM tc UNION ALL SELECT c3 || '' FROM tc"
        ),
        rows(
            &mut s,
            "SELECT v5 FROM tc UNION ALL SELECT c3::text FROM tc"
        )
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT 'a'::varchar(2) UNION ALL SELECT 'bcd'::char(5)"
        ),
        vec![vec!["a"], vec!["bcd"]]
    );
    // bpchar alone has no length; bpchar(n) is char(n).
    assert_eq!(
        typed(&mut s, "SELECT 'ab  '::bpchar, 'ab'::bpchar(4)").0,
        vec![bpchar, DataType::Char(4)]
    );
    assert_eq!(
        rows(&mut s, "SELECT 'ab  '::bpchar, 'ab'::bpchar(4)"),
        vec![vec!["ab  ", "ab  "]]
    );
}

#[test]
fn recursive_queries_keep_the_anchor_types() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    // The anchor's types are the query's: a step whose common type with
    // them is another (or another modifier) is 42804, as PostgreSQL's.
    for sql in [
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1.5 FROM r WHERE n < 3) SELECT * FROM r",
        "WITH RECURSIVE r(n) AS (SELECT 1::int UNION ALL SELECT (n + 1)::bigint FROM r WHERE n < 3) SELECT * FROM r",
        "WITH RECURSIVE r(s) AS (SELECT 'a'::varchar(5) UNION ALL SELECT s || 'b' FROM r WHERE length(s) < 3) SELECT * FROM r",
        "WITH RECURSIVE r(n, m) AS (SELECT 1, 2 UNION ALL SELECT n + 1, m::numeric FROM r WHERE n < 2) SELECT * FROM r",
    ] {
        assert_eq!(err(&mut s, sql), ErrorKind::DatatypeMismatch, "{sql}");
    }
    let msg = s
        .execute_batch("WITH RECURSIVE r(s) AS (SELECT 'a'::char(1) UNION ALL SELECT 'b'::char(2) FROM r WHERE false) SELECT * FROM r")
        .pop()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        msg.message,
        "recursive query \"r\" column 1 has type character(1) in non-recursive term but type bpchar overall"
    );
    // A step that casts to the anchor's type implicitly runs in it.
    let (types, got) = typed(
        &mut s,
        "WITH RECURSIVE r(n) AS (SELECT 1::bigint UNION ALL SELECT (n + 1)::int FROM r WHERE n < 3) SELECT * FROM r",
    );
    assert_eq!(types, vec![DataType::BigInt]);
    assert_eq!(got.len(), 3);
    assert_eq!(
        rows(
            &mut s,
            "WITH RECURSIVE r(s) AS (SELECT 'a'::text UNION ALL SELECT (s || 'b')::varchar FROM r WHERE length(s) < 3) SELECT * FROM r"
        ),
        vec![vec!["a"], vec!["ab"], vec!["abb"]]
    );
    assert_eq!(
        rows(
            &mut s,
            "WITH RECURSIVE r(x) AS (SELECT 'pg_class'::regclass UNION ALL SELECT 1259::oid FROM r WHERE x::oid <> 1259) SELECT * FROM r"
        ),
        vec![vec!["pg_class"]]
    );
    // A quoted literal in the step is read as the anchor's type, when planned.
    assert_eq!(
        err(
            &mut s,
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT 'x' FROM r WHERE false) SELECT * FROM r"
        ),
        ErrorKind::InvalidText
    );
    let (types, got) = typed(
        &mut s,
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT '5' FROM r WHERE n < 3) SELECT * FROM r",
    );
    assert_eq!(types, vec![DataType::Int]);
    assert_eq!(got, vec![vec![Value::Int(1)], vec![Value::Int(5)]]);
}

#[test]
fn concatenation_reads_each_operand_as_its_text() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    tag(&mut s, "CREATE TABLE tc (id int, c3 char(3))");
    tag(&mut s, "INSERT INTO tc VALUES (1, 'ef')");
    assert_eq!(
        rows(
            &mut s,
            "SELECT 'x' || true, false || 'x', 'x' || NULL::bool, 'x' || 1, 1 || 'x', 'x' || 1.50, \
             'x' || DATE '2024-01-02', 'x' || TIMESTAMP '2024-01-02 03:04:05', \
             'x' || INTERVAL '1 day 2 hours', NULL || 1, 'a'::varchar || true, 'x'::name || false"
        ),
        vec![vec![
            "xtrue",
            "falsex",
            "NULL",
            "x1",
            "1x",
            "x1.50",
            "x2024-01-02",
            "x2024-01-02 03:04:05",
            "x1 day 02:00:00",
            "NULL",
            "atrue",
            "xfalse"
        ]]
    );
    // char(n) as text has no trailing blanks.
    assert_eq!(
        rows(&mut s, "SELECT c3 || '|', '|' || c3, c3 || 1 FROM tc"),
        vec![vec!["ef|", "|ef", "ef1"]]
    );
    // Arrays, jsonb and bytea keep their own ||.
    assert_eq!(
        rows(
            &mut s,
            "SELECT ARRAY[1] || 2, '{\"a\":1}'::jsonb || '{\"b\":2}', '\\x01'::bytea || '\\x02'::bytea"
        ),
        vec![vec!["{1,2}", "{\"a\": 1, \"b\": 2}", "\\x0102"]]
    );
    assert_eq!(
        typed(&mut s, "SELECT '\\x01'::bytea || '\\x02'::bytea").0,
        vec![DataType::Bytes]
    );
    // Neither operand a string: no operator, as PostgreSQL's.
    for sql in [
        "SELECT 1 || 2",
        "SELECT true || false",
        "SELECT DATE '2024-01-01' || 1",
    ] {
        assert_eq!(err(&mut s, sql), ErrorKind::UndefinedFunction, "{sql}");
    }
}

#[test]
fn catalog_functions_have_postgresql_types() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    let name = DataType::Name;
    assert_eq!(
        typed(
            &mut s,
            "SELECT current_user, session_user, current_schema(), current_database(), \
             pg_get_userbyid(10), pg_encoding_to_char(6), current_schemas(true)"
        )
        .0,
        vec![
            name.clone(),
            name.clone(),
            name.clone(),
            name.clone(),
            name.clone(),
            name.clone(),
            DataType::Array(Box::new(name.clone()))
        ]
    );
    // A UNION with a name[] ran as text before (42804 text and name[]).
    assert_eq!(
        rows(
            &mut s,
            "SELECT current_schemas(false) UNION ALL SELECT ARRAY['x'::name]"
        ),
        vec![vec!["{public}"], vec!["{x}"]]
    );
    assert_eq!(
        one(&mut s, "SELECT 'public' = ANY (current_schemas(false))"),
        "t"
    );
    assert_eq!(
        typed(&mut s, "SELECT rolvaliduntil FROM pg_roles LIMIT 1").0,
        vec![DataType::TimestampTz]
    );
}

/// An enclosing query's column read inside a subquery's derived table (or
/// by a set-returning function there) has its own type, not text: pgcli's
/// foreign-key query joins `unnest(fk.confkey)` with `pg_attribute.attnum`
/// `USING (attnum)`, which needs smallint on both sides. And an array cast
/// to `regtype[]` takes numbers as OIDs.
#[test]
fn outer_columns_keep_their_types_in_derived_tables() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "t").unwrap();
    s.execute_batch(
        "CREATE TABLE op (id int PRIMARY KEY, k int); \
         CREATE TABLE oc (id int PRIMARY KEY, p int REFERENCES op (id))",
    )
    .into_iter()
    .for_each(|r| {
        r.unwrap();
    });
    let (types, got) = typed(
        &mut s,
        "SELECT (SELECT x.a FROM (SELECT o.k AS a) x) FROM (VALUES (1)) v(z), \
         (SELECT 7 AS k) o",
    );
    assert_eq!(types, vec![DataType::Int]);
    assert_eq!(got, vec![vec![Value::Int(7)]]);
    assert_eq!(
        rows(
            &mut s,
            "SELECT (SELECT pg_typeof(x.a) FROM (SELECT unnest(fk.confkey) AS a) x), \
             (SELECT array_agg(attname ORDER BY i) FROM \
                (SELECT unnest(fk.confkey) AS attnum, generate_subscripts(fk.confkey, 1) AS i) x \
                JOIN pg_attribute c USING (attnum) WHERE c.attrelid = fk.confrelid) \
             FROM pg_constraint fk WHERE fk.contype = 'f'"
        ),
        vec![vec!["smallint", "{id}"]]
    );
    assert_eq!(
        one(&mut s, "SELECT '{23,25}'::oid[]::regtype[]::text[]"),
        "{integer,text}"
    );
}
