//! Identifiers as PostgreSQL folds them: unquoted names to lower case,
//! quoted names as written, in the catalog and in result column names.

use crate::common;
use common::engine;
use walden_sql::SqlSession;

fn session() -> SqlSession {
    engine().connect("walden", "u", "").unwrap()
}

/// The result column names of a query, and its rows as text.
fn run(s: &mut SqlSession, sql: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let out = s
        .execute_batch(sql)
        .pop()
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let names = out
        .columns
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.name)
        .collect();
    let rows = out
        .rows
        .iter()
        .map(|r| r.iter().map(|v| v.to_string()).collect())
        .collect();
    (names, rows)
}

#[test]
fn quoted_names_keep_their_case_unquoted_names_fold() {
    let mut s = session();
    run(
        &mut s,
        r#"CREATE TABLE people ("FirstName" text, LastName text, "id" int PRIMARY KEY)"#,
    );
    run(
        &mut s,
        r#"INSERT INTO people ("FirstName", lastname, id) VALUES ('Ada', 'Lovelace', 1)"#,
    );
    // RowDescription names: the catalog's for *, the reference's otherwise.
    let (names, rows) = run(&mut s, "SELECT * FROM people");
    assert_eq!(names, ["FirstName", "lastname", "id"]);
    assert_eq!(rows, [["Ada", "Lovelace", "1"]]);
    let (names, _) = run(
        &mut s,
        r#"SELECT "FirstName", LASTNAME, p.id FROM people p"#,
    );
    assert_eq!(names, ["FirstName", "lastname", "id"]);
    let (names, _) = run(
        &mut s,
        r#"SELECT x."FirstName" FROM (SELECT * FROM people) x"#,
    );
    assert_eq!(names, ["FirstName"]);
    let (names, _) = run(&mut s, r#"SELECT a AS "A", b FROM people AS t(a, "B")"#);
    assert_eq!(names, ["A", "b"]);
    // The catalog shows the stored names.
    let (_, rows) = run(
        &mut s,
        "SELECT attname FROM pg_attribute WHERE attrelid = 'people'::regclass AND attnum > 0 ORDER BY attnum",
    );
    assert_eq!(rows, [["FirstName"], ["lastname"], ["id"]]);
    // Updates and ORDER BY find the quoted column.
    run(
        &mut s,
        r#"UPDATE people SET "FirstName" = 'Augusta' WHERE id = 1"#,
    );
    let (_, rows) = run(
        &mut s,
        r#"SELECT "FirstName" FROM people ORDER BY "FirstName""#,
    );
    assert_eq!(rows, [["Augusta"]]);
}
