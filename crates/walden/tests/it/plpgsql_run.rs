//! PostgreSQL functions that run (not inlined) and procedures, through the
//! server: loops, recursion, data changes, RAISE with SQLSTATEs, exception
//! blocks, STRICT, calls per row in WHERE / select lists / VALUES / INSERT,
//! bounded recursion (54001), a missing RETURN (2F005); CREATE PROCEDURE,
//! CALL with INOUT results, DROP PROCEDURE. The expected outcomes are
//! PostgreSQL 15's, checked by hand with the same script.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{connect, outcome, runtime};
use server_support::{run_script, Serve};
use std::time::Duration;

/// Each statement with PostgreSQL 15's outcome: its rows and tags as
/// [`outcome`] renders them (`ok n`: a command's row count), or
/// `ERROR <sqlstate>`.
const SCRIPT: &[(&str, &str)] = &[
    ("CREATE TABLE t (a int PRIMARY KEY, b text)", "ok 0"),
    ("INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')", "ok 3"),
    ("CREATE TABLE audit (n int, what text)", "ok 0"),
    // A loop: runs at each call, per row in WHERE and the select list.
    (
        "CREATE FUNCTION fact(n int) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$\n\
         DECLARE r bigint := 1;\n\
         BEGIN\n\
           FOR i IN 2..n LOOP r := r * i; END LOOP;\n\
           RETURN r;\n\
         END $$",
        "ok 0",
    ),
    ("SELECT fact(5), fact(0), fact(NULL)", "ERROR 22004"),
    ("SELECT fact(5), fact(0)", "120|1; ok 1"),
    (
        "SELECT a, fact(a + 2) FROM t WHERE fact(a) < 6 ORDER BY a",
        "1|6; 2|24; ok 2",
    ),
    // Recursion, and recursion without end.
    (
        "CREATE FUNCTION fib(n int) RETURNS int LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           IF n < 2 THEN RETURN n; END IF;\n\
           RETURN fib(n - 1) + fib(n - 2);\n\
         END $$",
        "ok 0",
    ),
    ("SELECT fib(10)", "55; ok 1"),
    // Variables keep their declared types in the statements that use them:
    // `x / 2` divides a numeric (was 13: `$1` taken for an integer), a
    // float8 and a date likewise.
    (
        "CREATE FUNCTION typed_vars() RETURNS text LANGUAGE plpgsql AS $$\n\
         DECLARE x numeric := 25; z float8 := 1.5; d date := '2024-01-31'; n int := 7;\n\
         BEGIN\n\
           FOR i IN 1..1 LOOP x := x / 2; z := z / 3; n := n / 2; END LOOP;\n\
           RETURN x || ' ' || z || ' ' || (d + 1) || ' ' || n;\n\
         END $$",
        "ok 0",
    ),
    ("SELECT typed_vars()", "12.5000000000000000 0.5 2024-02-01 3; ok 1"),
    ("SELECT a, fib(a * 3) FROM t ORDER BY a", "1|2; 2|8; 3|34; ok 3"),
    (
        "CREATE FUNCTION forever(n int) RETURNS int LANGUAGE plpgsql AS $$\n\
         BEGIN RETURN forever(n + 1); END $$",
        "ok 0",
    ),
    (
        "CREATE FUNCTION rec_inl(n int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN IF n < 2 THEN RETURN n; END IF; RETURN rec_inl(n - 1) + 1; END $$",
        "ok 0",
    ),
    ("SELECT rec_inl(40)", "40; ok 1"),
    ("SELECT forever(1)", "ERROR 54001"),
    ("SELECT a FROM t WHERE forever(a) > 0", "ERROR 54001"),
    ("SELECT 1", "1; ok 1"),
    // Data changes, seen by the caller's next statements.
    (
        "CREATE FUNCTION bump(k int, w text) RETURNS int LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           INSERT INTO audit VALUES (k, w);\n\
           UPDATE t SET b = b || '!' WHERE a = k;\n\
           RETURN (SELECT count(*) FROM audit);\n\
         END $$",
        "ok 0",
    ),
    ("SELECT bump(1, 'first')", "1; ok 1"),
    ("SELECT bump(2, 'second')", "2; ok 1"),
    ("SELECT * FROM audit ORDER BY n", "1|first; 2|second; ok 2"),
    ("SELECT a, b FROM t ORDER BY a", "1|one!; 2|two!; 3|three; ok 3"),
    // An error keeps its SQLSTATE and undoes the call's changes.
    (
        "CREATE FUNCTION boom(x int) RETURNS int LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           INSERT INTO audit VALUES (x, 'boom');\n\
           IF x > 5 THEN RAISE EXCEPTION 'too big: %', x USING ERRCODE = '22003'; END IF;\n\
           RETURN x;\n\
         END $$",
        "ok 0",
    ),
    ("SELECT boom(9)", "ERROR 22003"),
    ("SELECT count(*) FROM audit WHERE what = 'boom'", "0; ok 1"),
    ("SELECT boom(3)", "3; ok 1"),
    ("SELECT count(*) FROM audit WHERE what = 'boom'", "1; ok 1"),
    (
        "CREATE FUNCTION noret(x int) RETURNS int LANGUAGE plpgsql AS $$\n\
         BEGIN IF x > 0 THEN RETURN 1; END IF; END $$",
        "ok 0",
    ),
    ("SELECT noret(1)", "1; ok 1"),
    ("SELECT noret(-1)", "ERROR 2F005"),
    // STRICT, a WHILE loop, the result cast to the declared type.
    (
        "CREATE FUNCTION half(x int) RETURNS numeric LANGUAGE plpgsql STRICT AS $$\n\
         BEGIN WHILE x > 10 LOOP x := x / 2; END LOOP; RETURN x; END $$",
        "ok 0",
    ),
    ("SELECT half(100), half(7), half(NULL)", "6|7|NULL; ok 1"),
    ("SELECT a FROM t WHERE half(a * 30) = 7 ORDER BY a", "1; 2; ok 2"),
    ("SELECT a FROM t WHERE half(a * 30) = 8 ORDER BY a", "ok 0"),
    // LANGUAGE sql bodies of several statements, and DML ... RETURNING.
    (
        "CREATE FUNCTION total_after(k int) RETURNS bigint LANGUAGE sql AS $$\n\
           INSERT INTO audit VALUES ($1, 'sql');\n\
           SELECT count(*) FROM audit WHERE what = 'sql';\n\
         $$",
        "ok 0",
    ),
    ("SELECT total_after(1)", "1; ok 1"),
    ("SELECT total_after(2)", "2; ok 1"),
    (
        "CREATE FUNCTION ins_ret(k int) RETURNS int LANGUAGE sql AS $$ INSERT INTO audit VALUES ($1, 'ret') RETURNING n * 10 $$",
        "ok 0",
    ),
    ("SELECT ins_ret(4)", "40; ok 1"),
    (
        "CREATE FUNCTION bad_last(k int) RETURNS int LANGUAGE sql AS $$ INSERT INTO audit VALUES ($1, 'x') $$",
        "ERROR 42P13",
    ),
    // Calls in a select list over rows, INSERT ... VALUES, VALUES.
    (
        "CREATE FUNCTION texty(x int) RETURNS text LANGUAGE plpgsql AS $$\n\
         DECLARE s text := '';\n\
         BEGIN\n\
           FOR i IN 1..x LOOP s := s || i::text; END LOOP;\n\
           RETURN s;\n\
         END $$",
        "ok 0",
    ),
    ("SELECT texty(a) FROM t ORDER BY a", "1; 12; 123; ok 3"),
    ("INSERT INTO t VALUES (10, texty(4))", "ok 1"),
    ("SELECT b FROM t WHERE a = 10", "1234; ok 1"),
    (
        "SELECT * FROM (VALUES (texty(2)), (texty(3))) v(x) ORDER BY x",
        "12; 123; ok 2",
    ),
    // From PL/pgSQL: an assignment and PERFORM run the callee's changes.
    (
        "DO $$ DECLARE v int; BEGIN v := bump(3, 'from do'); PERFORM bump(3, 'perform'); END $$",
        "ok 0",
    ),
    (
        "SELECT n, what FROM audit WHERE n = 3 ORDER BY what",
        "3|boom; 3|from do; 3|perform; ok 3",
    ),
    // An exception block in a function.
    (
        "CREATE FUNCTION safe_div(a int, b int) RETURNS int LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           RETURN a / b;\n\
         EXCEPTION WHEN division_by_zero THEN\n\
           RETURN -1;\n\
         END $$",
        "ok 0",
    ),
    ("SELECT safe_div(7, 2)", "3; ok 1"),
    ("SELECT safe_div(1, 0)", "-1; ok 1"),
    // Procedures.
    (
        "CREATE PROCEDURE addrow(k int, w text) LANGUAGE plpgsql AS $$\n\
         BEGIN INSERT INTO audit VALUES (k, w); END $$",
        "ok 0",
    ),
    ("CALL addrow(20, 'proc')", "ok 0"),
    ("SELECT n, what FROM audit WHERE what = 'proc'", "20|proc; ok 1"),
    (
        "CREATE PROCEDURE twice_it(INOUT x int, INOUT y text DEFAULT 'd') LANGUAGE plpgsql AS $$\n\
         BEGIN x := x * 2; y := y || '!'; END $$",
        "ok 0",
    ),
    ("CALL twice_it(21, 'hi')", "42|hi!; ok 0"),
    ("CALL twice_it(5)", "10|d!; ok 0"),
    (
        "CREATE PROCEDURE sqlproc(k int) LANGUAGE sql AS $$ INSERT INTO audit VALUES (k, 'sqlproc'); DELETE FROM audit WHERE what = 'vol' $$",
        "ok 0",
    ),
    ("CALL sqlproc(30)", "ok 0"),
    ("SELECT count(*) FROM audit WHERE what = 'sqlproc'", "1; ok 1"),
    ("SELECT addrow(1, 'x')", "ERROR 42809"),
    ("CALL fact(3)", "ERROR 42809"),
    ("CALL nosuch(1)", "ERROR 42883"),
    ("DROP PROCEDURE addrow(int, text)", "ok 0"),
    ("CALL addrow(20, 'proc')", "ERROR 42883"),
    ("DROP PROCEDURE fact(int)", "ERROR 42809"),
    ("DROP FUNCTION fact(int)", "ok 0"),
    ("SELECT fact(3)", "ERROR 42883"),
    (
        "CREATE PROCEDURE failing() LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES (99, 'fail'); RAISE EXCEPTION 'no'; END $$",
        "ok 0",
    ),
    ("CALL failing()", "ERROR P0001"),
    ("SELECT count(*) FROM audit WHERE n = 99", "0; ok 1"),
];

#[test]
fn functions_and_procedures_run_as_in_postgres() {
    run_script(SCRIPT, Duration::from_secs(120));
}

/// A function called inside a query cannot change data there (the
/// caller's statement holds the transaction): refused, naming it.
#[test]
fn data_changes_inside_a_query_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE TABLE t (a int)",
                "INSERT INTO t VALUES (1), (2)",
                "CREATE FUNCTION w(x int) RETURNS int LANGUAGE plpgsql AS $$BEGIN INSERT INTO t VALUES (x); RETURN x; END$$",
            ] {
                c.simple_query(sql).await.unwrap();
            }
            let o = outcome(&c, "SELECT w(a) FROM t", &[]).await;
            assert!(o.starts_with("ERROR 0A000") && o.contains("INSERT"), "{o}");
            assert_eq!(outcome(&c, "SELECT count(*) FROM t", &[]).await, "2; ok 1");
            // The call alone runs it.
            assert_eq!(outcome(&c, "SELECT w(5)", &[]).await, "5; ok 1");
            assert_eq!(outcome(&c, "SELECT count(*) FROM t", &[]).await, "3; ok 1");
        })
        .await
        .expect("timed out")
    });
}

/// Procedures and functions that run survive a crash.
#[test]
fn routines_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(outcome(&c, "SELECT loop_sum(4)", &[]).await, "10; ok 1");
        assert_eq!(outcome(&c, "CALL dbl(4)", &[]).await, "8; ok 0");
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE FUNCTION loop_sum(n int) RETURNS int LANGUAGE plpgsql AS $$DECLARE s int := 0; BEGIN FOR i IN 1..n LOOP s := s + i; END LOOP; RETURN s; END$$",
                "CREATE PROCEDURE dbl(INOUT x int) LANGUAGE plpgsql AS $$BEGIN x := x * 2; END$$",
            ] {
                c.simple_query(sql).await.unwrap();
            }
        })
        .await
        .expect("timed out")
    });
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}
