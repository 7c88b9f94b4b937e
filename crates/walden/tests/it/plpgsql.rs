//! PostgreSQL's routines through the server, against a scratch PostgreSQL
//! 15 with the same SQL: CREATE [OR REPLACE] FUNCTION ... LANGUAGE sql and
//! plpgsql (parameters by name and `$n`, defaults, named arguments, STRICT,
//! calls in WHERE), DROP FUNCTION, DO blocks (variables, IF / CASE, LOOP /
//! WHILE / FOR, EXIT / CONTINUE, SELECT INTO [STRICT], DML ... RETURNING
//! INTO, FOUND, GET DIAGNOSTICS, EXECUTE ... USING, RAISE with SQLSTATEs,
//! exception blocks undoing their changes, ASSERT); then the forms Walden
//! refuses (0A000), and a function surviving restarts. Functions that run
//! (loops, data changes) and procedures: `plpgsql_run.rs`.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, connect, outcome, runtime, sqlstate_outcomes, Peers};
use server_support::Serve;
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "CREATE TABLE t (a int PRIMARY KEY, b text)",
    "INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')",
    // LANGUAGE sql, scalar.
    "CREATE FUNCTION add1(a int) RETURNS int LANGUAGE sql AS 'select a+1'",
    "SELECT add1(41), add1(NULL)",
    "CREATE FUNCTION twice(int) RETURNS int AS $$ SELECT $1 * 2 $$ LANGUAGE sql IMMUTABLE",
    "SELECT a, twice(a) FROM t WHERE twice(a) > 2 ORDER BY a",
    "CREATE FUNCTION label(n int, prefix text DEFAULT 'n=') RETURNS text LANGUAGE sql AS $$ SELECT prefix || n $$",
    "SELECT label(3), label(4, 'x'), label(prefix => 'p', n => 5)",
    "CREATE FUNCTION cnt(int) RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT count(*) FROM t WHERE a >= $1 $$",
    "SELECT cnt(2), cnt(9)",
    "CREATE FUNCTION strict_f(x int) RETURNS int LANGUAGE sql STRICT AS $$ SELECT coalesce(x, 7) $$",
    "SELECT strict_f(NULL) IS NULL, strict_f(1)",
    "CREATE FUNCTION add1(a int) RETURNS int LANGUAGE sql AS 'select a+2'",
    "CREATE OR REPLACE FUNCTION add1(a int) RETURNS int LANGUAGE sql AS 'select a+2'",
    "SELECT add1(1)",
    "CREATE FUNCTION f_lang(int) RETURNS int LANGUAGE nosuch AS 'x'",
    "SELECT add1(1, 2)",
    // PL/pgSQL functions.
    "CREATE FUNCTION sign_of(x numeric) RETURNS text LANGUAGE plpgsql AS $$\n\
     DECLARE r text := 'zero';\n\
     BEGIN\n\
       IF x > 0 THEN r := 'pos';\n\
       ELSIF x < 0 THEN r := 'neg';\n\
       END IF;\n\
       RETURN r;\n\
     END $$",
    "SELECT sign_of(5), sign_of(-2.5), sign_of(0), sign_of(NULL)",
    "CREATE FUNCTION grade(n int) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$\n\
     BEGIN\n\
       CASE WHEN n >= 90 THEN RETURN 'A'; WHEN n >= 50 THEN RETURN 'B'; ELSE RETURN 'C'; END CASE;\n\
     END $$",
    "SELECT grade(95), grade(60), grade(1)",
    "CREATE FUNCTION name_of(k int) RETURNS text LANGUAGE plpgsql AS $$\n\
     DECLARE v text;\n\
     BEGIN SELECT b INTO v FROM t WHERE a = k; RETURN coalesce(v, 'none'); END $$",
    "SELECT name_of(2), name_of(9)",
    "SELECT a FROM t WHERE name_of(a) LIKE 't%' ORDER BY a",
    "DROP FUNCTION sign_of(numeric)",
    "SELECT sign_of(1)",
    "DROP FUNCTION sign_of(numeric)",
    "DROP FUNCTION IF EXISTS sign_of(numeric)",
    "DROP FUNCTION grade(text)",
    // DO blocks.
    "CREATE TABLE log (n int, msg text)",
    "DO $$\n\
     DECLARE i int := 0; total int := 0;\n\
     BEGIN\n\
       LOOP\n\
         i := i + 1;\n\
         CONTINUE WHEN i % 2 = 0;\n\
         EXIT WHEN i > 9;\n\
         total := total + i;\n\
       END LOOP;\n\
       INSERT INTO log VALUES (total, 'loop');\n\
       WHILE i > 0 LOOP i := i - 3; END LOOP;\n\
       INSERT INTO log VALUES (i, 'while');\n\
       FOR k IN 1..10 BY 3 LOOP INSERT INTO log VALUES (k, 'for'); END LOOP;\n\
       FOR k IN REVERSE 3..1 LOOP INSERT INTO log VALUES (k, 'reverse'); END LOOP;\n\
     END $$",
    "SELECT * FROM log ORDER BY msg, n",
    "DO $$\n\
     DECLARE v text; n int;\n\
     BEGIN\n\
       SELECT b INTO v FROM t WHERE a = 99;\n\
       INSERT INTO log VALUES (CASE WHEN FOUND THEN 1 ELSE 0 END, coalesce(v, 'null'));\n\
       UPDATE t SET b = upper(b) WHERE a >= 2;\n\
       GET DIAGNOSTICS n = ROW_COUNT;\n\
       INSERT INTO log VALUES (n, 'updated');\n\
       INSERT INTO t VALUES (4, 'four') RETURNING a * 10 INTO n;\n\
       INSERT INTO log VALUES (n, 'returning');\n\
       EXECUTE 'SELECT count(*) FROM t WHERE a > $1' INTO n USING 1;\n\
       INSERT INTO log VALUES (n, 'execute');\n\
       EXECUTE format('INSERT INTO log VALUES (%s, %L)', 5, 'dynamic');\n\
       PERFORM 1 FROM t WHERE a = 4;\n\
       IF FOUND THEN INSERT INTO log VALUES (1, 'perform'); END IF;\n\
     END $$",
    "SELECT * FROM log WHERE msg NOT IN ('loop', 'while', 'for', 'reverse') ORDER BY msg, n",
    "SELECT * FROM t ORDER BY a",
    // Errors: STRICT, RAISE, the DO's own transaction rolled back.
    "DO $$ DECLARE v text; BEGIN SELECT b INTO STRICT v FROM t WHERE a = 99; END $$",
    "DO $$ DECLARE v text; BEGIN SELECT b INTO STRICT v FROM t; END $$",
    "DO $$ BEGIN INSERT INTO log VALUES (0, 'undone'); RAISE EXCEPTION 'no: %', 42; END $$",
    "DO $$ BEGIN RAISE EXCEPTION 'custom' USING ERRCODE = '22012'; END $$",
    "DO $$ BEGIN RAISE SQLSTATE 'U0001'; END $$",
    "DO $$ BEGIN RAISE unique_violation USING MESSAGE = 'dup'; END $$",
    "DO $$ BEGIN ASSERT 1 = 2, 'one is not two'; END $$",
    "DO $$ BEGIN PERFORM 1 / 0; END $$",
    "DO $$ BEGIN SELECT 1; END $$",
    "SELECT count(*) FROM log WHERE msg = 'undone'",
    // Exception blocks: the block's changes undone, SQLSTATE / SQLERRM.
    "DO $$\n\
     BEGIN\n\
       INSERT INTO log VALUES (1, 'kept');\n\
       BEGIN\n\
         INSERT INTO log VALUES (2, 'rolled back');\n\
         PERFORM 1 / 0;\n\
       EXCEPTION WHEN division_by_zero THEN\n\
         INSERT INTO log VALUES (3, SQLSTATE || ' ' || SQLERRM);\n\
       END;\n\
       BEGIN\n\
         INSERT INTO t VALUES (1, 'dup');\n\
       EXCEPTION WHEN unique_violation OR check_violation THEN\n\
         INSERT INTO log VALUES (4, 'caught ' || SQLSTATE);\n\
       END;\n\
       BEGIN\n\
         RAISE EXCEPTION 'mine' USING ERRCODE = 'P0001';\n\
       EXCEPTION WHEN others THEN\n\
         INSERT INTO log VALUES (5, SQLERRM);\n\
       END;\n\
       BEGIN\n\
         BEGIN\n\
           PERFORM 1 / 0;\n\
         EXCEPTION WHEN unique_violation THEN\n\
           INSERT INTO log VALUES (6, 'wrong handler');\n\
         END;\n\
       EXCEPTION WHEN SQLSTATE '22012' THEN\n\
         INSERT INTO log VALUES (7, 'outer handler');\n\
       END;\n\
     END $$",
    "SELECT * FROM log WHERE n BETWEEN 1 AND 7 AND msg NOT IN ('loop', 'while', 'for', 'reverse', 'updated', 'perform', 'dynamic') ORDER BY n",
    // Inside an explicit transaction: a failed DO fails it.
    "BEGIN",
    "DO $$ BEGIN INSERT INTO log VALUES (8, 'in tx'); END $$",
    "DO $$ BEGIN RAISE EXCEPTION 'stop'; END $$",
    "SELECT 1",
    "ROLLBACK",
    "SELECT count(*) FROM log WHERE n = 8",
    // Calls from DO bodies.
    "DO $$ DECLARE x int; BEGIN x := add1(10); INSERT INTO log VALUES (x, 'called'); END $$",
    "SELECT n FROM log WHERE msg = 'called'",
];

#[test]
fn routines_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare PL/pgSQL") else {
        return;
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let pg = connect(&peers.pg_conn()).await;
            let want = sqlstate_outcomes(&pg, SCRIPT).await;
            let w = connect(&peers.walden_conn()).await;
            let got = sqlstate_outcomes(&w, SCRIPT).await;
            assert_same(&want, &got);
        })
        .await
        .expect("timed out")
    });
}

/// What Walden cannot do yet is refused, naming it (0A000).
#[test]
fn unhonoured_forms_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE FUNCTION f() RETURNS record LANGUAGE sql AS 'select 1'",
                "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$BEGIN END$$",
                "CREATE PROCEDURE p() LANGUAGE plpgsql AS $$BEGIN COMMIT; END$$",
                "CREATE FUNCTION f() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'select 1'",
                "DO $$ DECLARE r record; BEGIN END $$",
                "DO $$ BEGIN FOR r IN SELECT 1 LOOP END LOOP; END $$",
                "DO $$ BEGIN COMMIT; END $$",
            ] {
                let o = outcome(&c, sql, &[]).await;
                assert!(o.starts_with("ERROR 0A000"), "{sql}: {o}");
            }
        })
        .await
        .expect("timed out")
    });
}

#[test]
fn functions_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(&c, "SELECT kept(20), kept2(1)", &[]).await,
            "21|big; ok 1"
        );
        assert_eq!(
            outcome(&c, "SELECT gone(1)", &[]).await.get(..11),
            Some("ERROR 42883")
        );
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE FUNCTION kept(a int) RETURNS int LANGUAGE sql AS 'SELECT a + 1'",
                "CREATE FUNCTION kept2(a int) RETURNS text LANGUAGE plpgsql AS $$BEGIN IF a > 0 THEN RETURN 'big'; END IF; RETURN 'small'; END$$",
                "CREATE FUNCTION gone(a int) RETURNS int LANGUAGE sql AS 'SELECT a'",
                "DROP FUNCTION gone(int)",
                "BEGIN",
                "CREATE FUNCTION rolled(a int) RETURNS int LANGUAGE sql AS 'SELECT a'",
                "ROLLBACK",
            ] {
                c.simple_query(sql).await.unwrap();
            }
            assert_eq!(
                outcome(&c, "SELECT rolled(1)", &[]).await.get(..11),
                Some("ERROR 42883")
            );
        })
        .await
        .expect("timed out")
    });
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}
