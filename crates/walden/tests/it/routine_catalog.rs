//! PostgreSQL routines as objects of the database, through the server:
//! a call's result column is named after the function; `DROP FUNCTION |
//! PROCEDURE | ROUTINE` of several names; an unqualified CREATE goes to
//! the first existing schema of search_path (none: 3F000) and pg_proc and
//! pg_dump show it there; `pg_get_function_arguments` /
//! `_identity_arguments` and `proargmodes` of procedures and mixed modes;
//! a multi-statement simple query with CREATE FUNCTION / DO / CALL runs
//! each statement in turn, in one implicit transaction; the tables that
//! store routines are not in the catalogs (so not in a dump). The expected
//! outcomes are PostgreSQL 15's, from the same statements.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{connect, runtime};
use server_support::{missing_tool, run_script, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;
use tokio_postgres::SimpleQueryMessage;

/// Each statement with PostgreSQL 15's outcome ([`pg_diff::outcome`]'s rendering,
/// or `ERROR <sqlstate>`).
const SCRIPT: &[(&str, &str)] = &[
    ("CREATE FUNCTION g1() RETURNS int LANGUAGE sql AS 'SELECT 1'", "ok 0"),
    (
        "CREATE FUNCTION g2(a int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN a + 1; END $$",
        "ok 0",
    ),
    ("CREATE PROCEDURE p1(n int) LANGUAGE plpgsql AS $$ BEGIN NULL; END $$", "ok 0"),
    ("CREATE PROCEDURE p2(INOUT n int, OUT m text) LANGUAGE plpgsql AS $$ BEGIN m := 'x'; END $$", "ok 0"),
    ("CREATE FUNCTION f3(a int, OUT b int, INOUT c text) LANGUAGE sql AS 'SELECT a, c'", "ok 0"),
    (
        "SELECT proname, pg_get_function_arguments(oid), pg_get_function_identity_arguments(oid), \
         proargmodes, proargnames, proallargtypes, proargtypes, pronargs \
         FROM pg_proc WHERE proname IN ('p1', 'p2', 'f3') ORDER BY proname",
        "f3|a integer, OUT b integer, INOUT c text|a integer, OUT b integer, INOUT c text|{i,o,b}|{a,b,c}|{23,23,25}|23 25|2; \
         p1|IN n integer|IN n integer|NULL|{n}|NULL|23|1; \
         p2|INOUT n integer, OUT m text|INOUT n integer, OUT m text|{b,o}|{n,m}|{23,25}|23|1; ok 3",
    ),
    // Several names in one DROP, with and without argument lists.
    ("DROP FUNCTION g1, g2", "ok 0"),
    ("SELECT count(*) FROM pg_proc WHERE proname IN ('g1', 'g2')", "0; ok 1"),
    ("DROP PROCEDURE p1, p2", "ok 0"),
    ("DROP PROCEDURE p1", "ERROR 42883"),
    ("DROP ROUTINE f3", "ok 0"),
    ("CREATE FUNCTION a1(int) RETURNS int LANGUAGE sql AS 'SELECT 1'", "ok 0"),
    ("CREATE PROCEDURE a2() LANGUAGE sql AS 'SELECT 1'", "ok 0"),
    ("DROP ROUTINE a1(int), a2()", "ok 0"),
    ("DROP ROUTINE IF EXISTS a1, a2", "ok 0"),
    // The schema a routine is created in.
    ("CREATE SCHEMA rs", "ok 0"),
    ("SET search_path = nosuch, rs, public", "ok 0"),
    ("CREATE FUNCTION h() RETURNS int LANGUAGE sql AS 'SELECT 7'", "ok 0"),
    ("CREATE PROCEDURE hp() LANGUAGE sql AS 'SELECT 1'", "ok 0"),
    ("SELECT h()", "7; ok 1"),
    ("CALL hp()", "ok 0"),
    (
        "SELECT p.proname, n.nspname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE proname IN ('h', 'hp') ORDER BY 1",
        "h|rs; hp|rs; ok 2",
    ),
    ("SET search_path = nosuch", "ok 0"),
    ("CREATE FUNCTION h2() RETURNS int LANGUAGE sql AS 'SELECT 7'", "ERROR 3F000"),
    ("CREATE FUNCTION nosuch.h2() RETURNS int LANGUAGE sql AS 'SELECT 7'", "ERROR 3F000"),
    ("RESET search_path", "ok 0"),
    ("SELECT rs.h()", "7; ok 1"),
    // The tables that hold definitions are no objects of the database.
    ("SELECT count(*) FROM pg_class WHERE relname LIKE 'walden\\_%'", "0; ok 1"),
    // Several statements with bodies in one query, each in turn; an error
    // undoes the whole query (one implicit transaction).
    (
        "CREATE TABLE m4 (x int); \
         CREATE FUNCTION m4f(a int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN a * 2; END $$; \
         DO $$ BEGIN INSERT INTO m4 VALUES (m4f(21)); END $$; \
         CREATE PROCEDURE m4p() LANGUAGE sql AS $$ INSERT INTO m4 VALUES (1) $$; \
         CALL m4p(); SELECT x FROM m4 ORDER BY x",
        "ok 0; ok 0; ok 0; ok 0; ok 0; 1; 42; ok 2",
    ),
    (
        "CREATE TABLE m5 (x int); INSERT INTO m5 VALUES (1); \
         DO $$ BEGIN INSERT INTO m5 VALUES (2); PERFORM 1 / 0; END $$; INSERT INTO m5 VALUES (3)",
        "ERROR 22012",
    ),
    ("SELECT count(*) FROM m5", "ERROR 42P01"),
];

#[test]
fn routines_as_database_objects_match_postgres() {
    run_script(SCRIPT, Duration::from_secs(60));
}

/// The columns a simple query's first result set names.
async fn column_names(c: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    let msgs = c.simple_query(sql).await.unwrap();
    for m in msgs {
        if let SimpleQueryMessage::RowDescription(cols) = m {
            return cols.iter().map(|c| c.name().to_string()).collect();
        }
    }
    Vec::new()
}

/// A call that is a select-list item is named after the function, inlined
/// or run, qualified or not; an alias or an expression around it wins.
#[test]
fn call_columns_are_named_after_the_function() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE FUNCTION g1() RETURNS int LANGUAGE sql AS 'SELECT 1'",
                "CREATE FUNCTION g2(a int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN FOR i IN 1..2 LOOP a := a + 1; END LOOP; RETURN a; END $$",
                "CREATE TABLE t (a int)",
                "INSERT INTO t VALUES (1)",
            ] {
                c.simple_query(sql).await.unwrap();
            }
            // PostgreSQL 15's names for the same statements.
            for (sql, want) in [
                ("SELECT g1()", vec!["g1"]),
                ("SELECT public.g1()", vec!["g1"]),
                ("SELECT g1() + 1", vec!["?column?"]),
                ("SELECT g1() AS x", vec!["x"]),
                ("SELECT g2(1), g1()", vec!["g2", "g1"]),
                ("SELECT a, g1() FROM t", vec!["a", "g1"]),
                ("SELECT g1(), g2(a) FROM t WHERE g1() = 1", vec!["g1", "g2"]),
                ("SELECT x FROM (SELECT g1()) s(x)", vec!["x"]),
            ] {
                assert_eq!(column_names(&c, sql).await, want, "{sql}");
            }
        })
        .await
        .expect("timed out")
    });
}

/// pg_dump prints routines as PostgreSQL 15's pg_dump prints the same
/// definitions (checked with it): schema, argument modes, no storage table.
#[test]
fn pg_dump_prints_routines_as_postgres() {
    if !server_support::have("pg_dump", &["--version"]) {
        missing_tool("pg_dump is needed (postgresql-client-15)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE SCHEMA rs; SET search_path = rs, public;
                 CREATE PROCEDURE p(n int) LANGUAGE plpgsql AS $$ BEGIN NULL; END $$;
                 RESET search_path;
                 CREATE PROCEDURE public.q(INOUT n int, OUT m text) LANGUAGE plpgsql AS $$ BEGIN m := 'x'; END $$;
                 CREATE FUNCTION f(a int) RETURNS int LANGUAGE sql AS 'SELECT a';",
            )
            .await
            .unwrap();
        })
        .await
        .expect("timed out")
    });
    let o = run_with_deadline(
        Command::new("pg_dump")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &walden.port.to_string(),
                "-U",
                "walden",
                "-s",
            ])
            .arg("walden"),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dump = String::from_utf8_lossy(&o.stdout);
    for line in [
        "CREATE PROCEDURE rs.p(IN n integer)",
        "ALTER PROCEDURE rs.p(IN n integer) OWNER TO walden;",
        "CREATE PROCEDURE public.q(INOUT n integer, OUT m text)",
        "ALTER PROCEDURE public.q(INOUT n integer, OUT m text) OWNER TO walden;",
        "CREATE FUNCTION public.f(a integer) RETURNS integer",
        "ALTER FUNCTION public.f(a integer) OWNER TO walden;",
    ] {
        assert!(
            dump.lines().any(|l| l == line),
            "missing {line:?} in:\n{dump}"
        );
    }
    assert!(!dump.contains("walden_functions"), "{dump}");
}

/// VARIADIC parameters (SQL and PL/pgSQL): the trailing arguments make the
/// array, `VARIADIC arr` passes one, a default stands for none; pg_proc's
/// modes and types. PostgreSQL 15's outcomes for the same statements.
const VARIADIC: &[(&str, &str)] = &[
    (
        "CREATE FUNCTION vsum(VARIADIC xs int[]) RETURNS int LANGUAGE sql AS 'SELECT sum(x)::int FROM unnest($1) x'",
        "ok 0",
    ),
    (
        "CREATE FUNCTION vcat(sep text, VARIADIC parts text[]) RETURNS text LANGUAGE plpgsql AS $$ BEGIN RETURN sep || array_to_string(parts, sep); END $$",
        "ok 0",
    ),
    (
        "CREATE FUNCTION vcnt(VARIADIC xs int[] DEFAULT ARRAY[]::int[]) RETURNS int LANGUAGE sql AS 'SELECT cardinality(xs)'",
        "ok 0",
    ),
    ("SELECT vsum(1, 2, 3)", "6; ok 1"),
    ("SELECT vsum(5)", "5; ok 1"),
    ("SELECT vsum(VARIADIC ARRAY[4, 5])", "9; ok 1"),
    ("SELECT vcat('-', 'a', 'b', 'c')", "-a-b-c; ok 1"),
    ("SELECT vcat('-', VARIADIC ARRAY['x', 'y'])", "-x-y; ok 1"),
    ("SELECT vcnt()", "0; ok 1"),
    ("SELECT vcnt(1, 2)", "2; ok 1"),
    ("SELECT vsum()", "ERROR 42883"),
    ("CREATE TABLE vt (a int, b int)", "ok 0"),
    ("INSERT INTO vt VALUES (1, 2), (3, 4)", "ok 2"),
    ("SELECT a, vsum(a, b, 10) FROM vt ORDER BY a", "1|13; 3|17; ok 2"),
    (
        "SELECT proname, pg_get_function_arguments(oid), proargmodes, proallargtypes, proargtypes, pronargs \
         FROM pg_proc WHERE proname IN ('vsum', 'vcat') ORDER BY 1",
        "vcat|sep text, VARIADIC parts text[]|{i,v}|{25,1009}|25 1009|2; \
         vsum|VARIADIC xs integer[]|{v}|{1007}|1007|1; ok 2",
    ),
    ("DROP FUNCTION vsum(int[])", "ok 0"),
    ("DROP FUNCTION vcat(text, VARIADIC text[])", "ok 0"),
    ("CREATE FUNCTION bad(VARIADIC xs int) RETURNS int LANGUAGE sql AS 'SELECT 1'", "ERROR 42P13"),
    (
        "CREATE FUNCTION bad(VARIADIC xs int[], y int) RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "ERROR 42P13",
    ),
];

#[test]
fn variadic_parameters_match_postgres() {
    run_script(VARIADIC, Duration::from_secs(60));
}
