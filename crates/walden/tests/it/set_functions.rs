//! Set-returning and OUT-parameter functions, overloading and `pg_proc`,
//! and T-SQL inline table-valued functions, through the server:
//! `RETURNS SETOF type | table`, `RETURNS TABLE (...)`, OUT / INOUT
//! parameters in LANGUAGE sql and PL/pgSQL (`RETURN NEXT`, `RETURN QUERY
//! [EXECUTE]`), called in FROM (aliases, column aliases, joins, WITH
//! ORDINALITY) and in select lists; overloads chosen by argument types,
//! 42725 / 42883, DROP FUNCTION name(types). The expected outcomes are
//! PostgreSQL 15's, checked by hand with the same statements.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{connect, outcome, runtime};
use server_support::{run_script, Serve};
use std::time::Duration;

/// Each statement with PostgreSQL 15's outcome (`ok n`: a command's row
/// count), or `ERROR <sqlstate>`.
const SCRIPT: &[(&str, &str)] = &[
    ("CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(8,2))", "ok 0"),
    ("INSERT INTO items VALUES (1, 'apple', 1.50), (2, 'pear', 2.25), (3, 'plum', 0.75)", "ok 3"),
    // SETOF a type, LANGUAGE sql: every row of the last query.
    ("CREATE FUNCTION nums(n int) RETURNS SETOF int LANGUAGE sql AS $$ SELECT generate_series(1, n) $$", "ok 0"),
    ("SELECT * FROM nums(3)", "1; 2; 3; ok 3"),
    ("SELECT x FROM nums(3) AS x", "1; 2; 3; ok 3"),
    ("SELECT x.v FROM nums(2) AS x(v)", "1; 2; ok 2"),
    ("SELECT nums(3)", "1; 2; 3; ok 3"),
    ("SELECT nums(2), nums(3)", "1|1; 2|2; NULL|3; ok 3"),
    // No limit on the rows a function gives.
    ("SELECT count(*), sum(n) FROM nums(100000) AS n", "100000|5000050000; ok 1"),
    ("SELECT * FROM nums(0)", "ok 0"),
    ("SELECT a.n, b.n FROM nums(2) a JOIN nums(3) b ON b.n = a.n + 1", "ERROR 42703"),
    ("SELECT a, b FROM nums(2) a JOIN nums(3) b ON b = a + 1", "1|2; 2|3; ok 2"),
    ("SELECT i.name FROM items i JOIN nums(2) n ON n.n = i.id ORDER BY 1", "apple; pear; ok 2"),
    ("SELECT * FROM nums(2) WITH ORDINALITY", "1|1; 2|2; ok 2"),
    // SETOF a table's row type.
    ("CREATE FUNCTION cheap(maxp numeric) RETURNS SETOF items LANGUAGE sql STABLE AS $$ SELECT * FROM items WHERE price <= $1 ORDER BY id $$", "ok 0"),
    ("SELECT * FROM cheap(2)", "1|apple|1.50; 3|plum|0.75; ok 2"),
    ("SELECT name FROM cheap(1) c", "plum; ok 1"),
    ("SELECT count(*) FROM cheap(10)", "3; ok 1"),
    ("CREATE FUNCTION nosuch() RETURNS SETOF nosuchtable LANGUAGE sql AS $$ SELECT 1 $$", "ERROR 42704"),
    // RETURNS TABLE.
    ("CREATE FUNCTION pairs(n int) RETURNS TABLE (k int, label text) LANGUAGE sql AS $$ SELECT i, 'n' || i FROM generate_series(1, $1) i $$", "ok 0"),
    ("SELECT * FROM pairs(2)", "1|n1; 2|n2; ok 2"),
    ("SELECT label FROM pairs(3) WHERE k > 1 ORDER BY k DESC", "n3; n2; ok 2"),
    ("SELECT pairs(2)", "(1,n1); (2,n2); ok 2"),
    ("SELECT (pairs(2)).label", "n1; n2; ok 2"),
    ("SELECT * FROM pairs(2) AS p(a)", "1|n1; 2|n2; ok 2"),
    ("SELECT * FROM pairs(2) AS p(a, b, c)", "ERROR 42P10"),
    ("SELECT n, p.label FROM nums(3) n, pairs(2) p WHERE p.k = n ORDER BY 1", "1|n1; 2|n2; ok 2"),
    // OUT parameters: one row of named columns.
    ("CREATE FUNCTION divmod(a int, b int, OUT q int, OUT r int) LANGUAGE sql AS $$ SELECT a / b, a % b $$", "ok 0"),
    ("SELECT * FROM divmod(17, 5)", "3|2; ok 1"),
    ("SELECT divmod(17, 5)", "(3,2); ok 1"),
    ("SELECT q FROM divmod(7, 2)", "3; ok 1"),
    ("SELECT * FROM divmod(1, 0)", "ERROR 22012"),
    ("CREATE FUNCTION sq(x int, OUT y int) LANGUAGE plpgsql AS $$ BEGIN y := x * x; END $$", "ok 0"),
    ("SELECT * FROM sq(4)", "16; ok 1"),
    ("SELECT sq(5)", "25; ok 1"),
    ("SELECT * FROM sq(4) AS t", "16; ok 1"),
    ("CREATE FUNCTION inc(INOUT x int, OUT y text) LANGUAGE plpgsql AS $$ BEGIN x := x + 1; y := 'was ' || (x - 1); END $$", "ok 0"),
    ("SELECT * FROM inc(41)", "42|was 41; ok 1"),
    ("CREATE FUNCTION badrec(OUT a int, OUT b int) RETURNS int LANGUAGE sql AS $$ SELECT 1, 2 $$", "ERROR 42P13"),
    // PL/pgSQL: RETURN NEXT, RETURN QUERY [EXECUTE].
    ("CREATE FUNCTION evens(n int) RETURNS SETOF int LANGUAGE plpgsql AS $$ BEGIN FOR i IN 1..n LOOP IF i % 2 = 0 THEN RETURN NEXT i; END IF; END LOOP; RETURN; END $$", "ok 0"),
    ("SELECT * FROM evens(7)", "2; 4; 6; ok 3"),
    ("SELECT evens(5)", "2; 4; ok 2"),
    ("SELECT sum(e) FROM evens(200000) e", "10000100000; ok 1"),
    ("CREATE FUNCTION tab(n int) RETURNS TABLE (i int, sq int) LANGUAGE plpgsql AS $$ BEGIN FOR j IN 1..n LOOP i := j; sq := j * j; RETURN NEXT; END LOOP; END $$", "ok 0"),
    ("SELECT * FROM tab(3)", "1|1; 2|4; 3|9; ok 3"),
    ("SELECT * FROM tab(3) WHERE sq > 1", "2|4; 3|9; ok 2"),
    ("CREATE FUNCTION q_items(minp numeric) RETURNS SETOF items LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT * FROM items WHERE price >= minp ORDER BY id; RETURN QUERY SELECT * FROM items WHERE id = 3; END $$", "ok 0"),
    ("SELECT id, name FROM q_items(1.00)", "1|apple; 2|pear; 3|plum; ok 3"),
    ("CREATE FUNCTION dyn(t text) RETURNS SETOF int LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY EXECUTE 'SELECT id FROM ' || t || ' WHERE id > $1 ORDER BY id' USING 1; END $$", "ok 0"),
    ("SELECT * FROM dyn('items')", "2; 3; ok 2"),
    ("CREATE FUNCTION bad_width() RETURNS SETOF int LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT 1, 2; END $$", "ok 0"),
    ("SELECT * FROM bad_width()", "ERROR 42804"),
    // STRICT: no rows for a set, a row of NULLs for OUT parameters.
    ("CREATE FUNCTION sstrict(n int) RETURNS SETOF int LANGUAGE sql STRICT AS $$ SELECT 1 $$", "ok 0"),
    ("SELECT * FROM sstrict(NULL)", "ok 0"),
    ("CREATE FUNCTION rstrict(a int, OUT x int, OUT y int) STRICT LANGUAGE sql AS $$ SELECT 1, 2 $$", "ok 0"),
    ("SELECT * FROM rstrict(NULL)", "NULL|NULL; ok 1"),
    // A scalar function in FROM is one row.
    ("CREATE FUNCTION plus1(x int) RETURNS int LANGUAGE sql AS $$ SELECT x + 1 $$", "ok 0"),
    ("SELECT * FROM plus1(4)", "5; ok 1"),
    ("SELECT z FROM plus1(4) AS z", "5; ok 1"),
    ("DROP FUNCTION nums(int)", "ok 0"),
    ("SELECT * FROM nums(2)", "ERROR 42883"),
    ("DROP FUNCTION divmod(int, int)", "ok 0"),
    ("DROP FUNCTION inc(int)", "ok 0"),
    // Overloading.
    ("CREATE FUNCTION ov(a int) RETURNS text LANGUAGE sql AS $$ SELECT 'int' $$", "ok 0"),
    ("CREATE FUNCTION ov(a text) RETURNS text LANGUAGE sql AS $$ SELECT 'text' $$", "ok 0"),
    ("CREATE FUNCTION ov(a int, b int) RETURNS text LANGUAGE sql AS $$ SELECT 'int,int' $$", "ok 0"),
    ("CREATE FUNCTION ov(a numeric) RETURNS text LANGUAGE plpgsql AS $$ BEGIN RETURN 'numeric'; END $$", "ok 0"),
    ("SELECT ov(1), ov('x'), ov(1.5), ov(1, 2), ov(NULL), ov(2::bigint)", "int|text|numeric|int,int|text|numeric; ok 1"),
    ("SELECT ov(2::smallint)", "ERROR 42725"),
    ("SELECT ov(true)", "ERROR 42883"),
    ("SELECT ov(1, 2, 3)", "ERROR 42883"),
    ("CREATE FUNCTION ov(a int) RETURNS text LANGUAGE sql AS $$ SELECT 'again' $$", "ERROR 42723"),
    ("CREATE OR REPLACE FUNCTION ov(a int) RETURNS text LANGUAGE sql AS $$ SELECT 'int2' $$", "ok 0"),
    ("CREATE OR REPLACE FUNCTION ov(a int) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$", "ERROR 42P13"),
    ("SELECT ov(7)", "int2; ok 1"),
    (
        "SELECT proname, pronargs, proretset, prokind, prorettype FROM pg_proc WHERE proname = 'ov' ORDER BY pronargs",
        "ov|1|f|f|25; ov|1|f|f|25; ov|1|f|f|25; ov|2|f|f|25; ok 4",
    ),
    (
        "SELECT pg_get_function_arguments(oid), pg_get_function_result(oid) FROM pg_proc WHERE proname IN ('pairs', 'sq', 'cheap') ORDER BY proname",
        "maxp numeric|SETOF items; n integer|TABLE(k integer, label text); x integer, OUT y integer|integer; ok 3",
    ),
    ("DROP FUNCTION ov", "ERROR 42725"),
    ("DROP FUNCTION ov(numeric)", "ok 0"),
    ("DROP FUNCTION ov(numeric)", "ERROR 42883"),
    ("DROP FUNCTION IF EXISTS ov(numeric)", "ok 0"),
    ("SELECT ov(1.5)", "ERROR 42883"),
    ("DROP FUNCTION ov(text)", "ok 0"),
    ("SELECT ov('5')", "int2; ok 1"),
    ("DROP FUNCTION ov(int, int)", "ok 0"),
    ("DROP FUNCTION ov", "ok 0"),
    ("SELECT count(*) FROM pg_proc WHERE proname = 'ov'", "0; ok 1"),
];

#[test]
fn set_returning_functions_answer_as_postgres() {
    run_script(SCRIPT, Duration::from_secs(120));
}

/// T-SQL inline table-valued functions in FROM (with and without an
/// alias, parameters, defaults); SQL Server's answers.
#[test]
fn tsql_inline_table_valued_functions() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE TABLE emp (id int PRIMARY KEY, dept int, name varchar(20))",
                "INSERT INTO emp VALUES (1, 1, 'ann'), (2, 2, 'bob'), (3, 1, 'cy')",
                "CREATE FUNCTION dbo.in_dept(@d int, @min int = 0) RETURNS TABLE AS RETURN (SELECT id, name FROM emp WHERE dept = @d AND id > @min)",
            ] {
                let o = outcome(&c, sql, &[]).await;
                assert!(!o.starts_with("ERROR"), "{sql}: {o}");
            }
            for (sql, want) in [
                ("SELECT * FROM dbo.in_dept(1, 0) ORDER BY id", "1|ann; 3|cy; ok 2"),
                ("SELECT e.name FROM dbo.in_dept(2, 0) AS e", "bob; ok 1"),
                ("SELECT in_dept.name FROM in_dept(1, 1)", "cy; ok 1"),
                ("SELECT count(*) FROM emp JOIN dbo.in_dept(1, 0) d ON d.id = emp.id", "2; ok 1"),
            ] {
                assert_eq!(outcome(&c, sql, &[]).await, want, "{sql}");
            }
            let o = outcome(&c, "CREATE FUNCTION dbo.multi() RETURNS @t TABLE (a int) AS BEGIN INSERT @t VALUES (1) RETURN END", &[]).await;
            assert!(o.starts_with("ERROR 0A000"), "{o}");
        })
        .await
        .expect("timed out")
    });
}

/// Set-returning functions and overloads survive a crash, and `pg_proc`
/// lists them after it.
#[test]
fn set_functions_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(&c, "SELECT * FROM upto(3)", &[]).await,
            "1; 2; 3; ok 3"
        );
        assert_eq!(
            outcome(&c, "SELECT two(1), two('a')", &[]).await,
            "int|text; ok 1"
        );
        assert_eq!(
            outcome(&c, "SELECT proname, proretset FROM pg_proc WHERE proname IN ('upto', 'two') ORDER BY 1, 2", &[]).await,
            "two|f; two|f; upto|t; ok 3"
        );
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE FUNCTION upto(n int) RETURNS SETOF int LANGUAGE plpgsql AS $$BEGIN FOR i IN 1..n LOOP RETURN NEXT i; END LOOP; END$$",
                "CREATE FUNCTION two(a int) RETURNS text LANGUAGE sql AS $$SELECT 'int'$$",
                "CREATE FUNCTION two(a text) RETURNS text LANGUAGE sql AS $$SELECT 'text'$$",
            ] {
                c.simple_query(sql).await.unwrap();
            }
        })
        .await
        .expect("timed out")
    });
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}
