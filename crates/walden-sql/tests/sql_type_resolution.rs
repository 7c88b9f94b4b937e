//! Type resolution in the SQL layer: the common type of set operations,
//! VALUES, CASE and COALESCE (the column's type and every value agree),
//! explicit casts to varchar(n) against assignments, and UPDATE ... FROM /
//! DELETE ... USING.

mod common;
#[path = "common/statements.rs"]
mod statements;
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
