//! The SQL that drivers, tools and ORMs send without thinking, against a
//! scratch PostgreSQL 15 with the same statements: `search_path` deciding
//! where unqualified names are found (and created), and the outcome of
//! every statement (rows, or SQLSTATE and message) must be the same.

use crate::pg_diff;

use pg_diff::{assert_same, block_on_within, run_script, Field, Peers};
use std::time::Duration;

const FIELDS: &[Field] = &[Field::Detail, Field::Hint];

const SEARCH_PATH: &[&str] = &[
    "CREATE TABLE t (id serial PRIMARY KEY, v int)",
    "CREATE SEQUENCE s",
    "CREATE TYPE mood AS ENUM ('sad', 'ok')",
    "INSERT INTO t (v) VALUES (1)",
    "SELECT current_schema(), current_schemas(false), current_schemas(true)",
    // Off the path: user objects are not found, catalogs still are.
    "SET search_path = ''",
    "SHOW search_path",
    "SELECT current_schema(), current_schemas(false), current_schemas(true)",
    "SELECT * FROM t",
    "INSERT INTO t (v) VALUES (2)",
    "UPDATE t SET v = 3",
    "DELETE FROM t",
    "SELECT nextval('s')",
    "SELECT 't'::regclass",
    "CREATE TABLE u (a int)",
    "CREATE SEQUENCE s2",
    "CREATE TYPE m2 AS ENUM ('x')",
    "CREATE TABLE public.u (a public.mood)",
    "CREATE TABLE public.u2 (a mood)",
    "DROP TABLE u",
    "DROP TABLE IF EXISTS u",
    "TRUNCATE t",
    "ALTER TABLE t ADD COLUMN w int",
    "CREATE INDEX ON t (v)",
    "SELECT count(*) FROM pg_class WHERE relname = 't'",
    "SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 'u'",
    // Qualified names still work.
    "INSERT INTO public.t (v) VALUES (2)",
    "SELECT id, v FROM public.t ORDER BY id",
    "SELECT nextval('public.s')",
    "SELECT 'public.t'::regclass::oid = 'public.t'::regclass",
    "SELECT a FROM public.u",
    "DROP TABLE public.u",
    "SELECT * FROM nosuch.t",
    "CREATE TABLE nosuch.x (a int)",
    "CREATE TABLE pg_catalog.x (a int)",
    "SELECT * FROM pg_catalog.t",
    // "$user" names no schema and is skipped; pg_catalog listed first.
    "SET search_path = \"$user\", public",
    "SHOW search_path",
    "SELECT current_schema(), current_schemas(true)",
    "SELECT id, v FROM t ORDER BY id",
    "SET search_path TO pg_catalog, public",
    "SELECT current_schema(), current_schemas(false)",
    "SELECT count(*) FROM t",
    "CREATE TABLE v (a int)",
    "SET search_path = nosuch, public",
    "SELECT current_schema(), current_schemas(false)",
    "CREATE TABLE w (a int)",
    "SELECT count(*) FROM w",
    "RESET search_path",
    "SELECT current_schemas(false)",
    "SET search_path = ''",
    "SET search_path TO DEFAULT",
    "SHOW search_path",
    "SELECT count(*) FROM t",
    // A plan made under one path is not reused under another.
    "PREPARE q AS SELECT count(*) FROM t",
    "EXECUTE q",
    "SET search_path = ''",
    "EXECUTE q",
    "RESET search_path",
    // SET LOCAL lasts until the transaction ends.
    "BEGIN",
    "SET LOCAL search_path = ''",
    "SELECT count(*) FROM t",
    "ROLLBACK",
    "SELECT count(*) FROM t",
];

#[test]
fn search_path_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare search_path") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SEARCH_PATH, FIELDS).await;
        let got = run_script(&peers.walden_conn(), SEARCH_PATH, FIELDS).await;
        assert_same(&want, &got);
    });
}

const OPERATORS_AND_ONLY: &[&str] = &[
    "CREATE TABLE op (id int PRIMARY KEY, k text)",
    "INSERT INTO op VALUES (1, 'r'), (2, 'S'), (3, 'v')",
    "SELECT id FROM op WHERE k OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'v']) ORDER BY id",
    "SELECT id FROM op WHERE id OPERATOR(pg_catalog.<>) ALL (ARRAY[1, 2]) ORDER BY id",
    "SELECT id FROM op WHERE id OPERATOR(pg_catalog.>) 1 AND k OPERATOR(pg_catalog.~) '^[a-z]$'",
    "SELECT 'a' OPERATOR(pg_catalog.||) 'b', 7 OPERATOR(pg_catalog.%) 4, 1 OPERATOR(=) 1",
    "SELECT 1 OPERATOR(nosuch.=) 1",
    "SELECT count(*) FROM ONLY op",
    "SELECT a.id FROM op a JOIN ONLY public.op b ON a.id = b.id ORDER BY 1",
    "UPDATE ONLY op SET k = 'x' WHERE id = 1",
    "DELETE FROM ONLY op WHERE id = 2",
    "SELECT * FROM op ORDER BY id",
    "SELECT pg_table_is_visible('op'::regclass), pg_table_is_visible('pg_class'::regclass)",
    "SET search_path = ''",
    "SELECT pg_catalog.pg_table_is_visible('public.op'::regclass)",
    "RESET search_path",
];

const FUNCTIONS: &[&str] = &[
    "SELECT md5('a'), md5(''), md5(NULL), md5('héllo')",
    "SELECT lpad('ab', 5, 'xy'), rpad('ab', 5), lpad('abcdef', 3), rpad('ab', 4, ''), lpad('ab', -1), lpad(NULL, 3)",
    "SELECT rpad('ab', 6, 'xyz'), lpad('é', 3, 'ü')",
    "SELECT repeat('ab', 3), repeat('x', 0), repeat('x', -1), repeat(NULL, 2), repeat('é', 2)",
    "SELECT octet_length('héllo'), octet_length('\\x0102'::bytea), octet_length(NULL::text), octet_length('')",
    "SELECT avg(x), sum(x) FROM (VALUES (1), (2)) v(x)",
    "SELECT avg(x) FROM (VALUES (1), (2), (4)) v(x)",
    "SELECT avg(x) FROM (VALUES (100000000), (3)) v(x)",
    "SELECT avg(x), sum(x) FROM (VALUES (1.5), (2.25)) v(x)",
    "SELECT avg(x) FROM (VALUES (1.0), (2.0)) v(x)",
    "SELECT 1/3::numeric, 10::numeric/4, 2.50 * 3, 1::numeric/300000, 7.0/2, 100::numeric/7",
    "SELECT 12345678.9::numeric / 3, 0.001::numeric / 7",
    "CREATE TABLE d1 (a int, b date)",
    "INSERT INTO d1 SELECT g, date '2024-01-01' + g FROM generate_series(1, 3) g",
    "INSERT INTO d1 VALUES (9, date '2024-02-01')",
    "UPDATE d1 SET b = date '2025-01-01' + 1 WHERE a = 9",
    "SELECT * FROM d1 ORDER BY a",
];

#[test]
fn operators_only_and_functions_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare operators and functions") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        for script in [OPERATORS_AND_ONLY, FUNCTIONS] {
            let want = run_script(&peers.pg_conn(), script, FIELDS).await;
            let got = run_script(&peers.walden_conn(), script, FIELDS).await;
            assert_same(&want, &got);
        }
    });
}

// JOIN ... USING and NATURAL JOIN: the merged column named unqualified,
// listed once and first by `*`, COALESCE of both sides for FULL joins;
// each side's column still reachable qualified.
const USING_JOINS: &[&str] = &[
    "CREATE TABLE ua (id int, x text)",
    "CREATE TABLE ub (id int, y text)",
    "CREATE TABLE uc (id int, x text, z int)",
    "INSERT INTO ua VALUES (1, 'a1'), (2, 'a2')",
    "INSERT INTO ub VALUES (2, 'b2'), (3, 'b3')",
    "INSERT INTO uc VALUES (3, 'c3', 1), (2, 'a2', 7)",
    "SELECT * FROM ua JOIN ub USING (id)",
    "SELECT id, ua.id, ub.id, x, y FROM ua JOIN ub USING (id)",
    "SELECT * FROM ua LEFT JOIN ub USING (id) ORDER BY id",
    "SELECT id, ua.id, ub.id FROM ua RIGHT JOIN ub USING (id) ORDER BY 1",
    "SELECT * FROM ua FULL JOIN ub USING (id) ORDER BY id",
    "SELECT id, ua.id AS a, ub.id AS b FROM ua FULL JOIN ub USING (id) WHERE id > 1 ORDER BY id",
    "SELECT id, count(*) FROM ua FULL JOIN ub USING (id) GROUP BY id ORDER BY id",
    "SELECT * FROM ua NATURAL JOIN uc",
    "SELECT * FROM ua NATURAL FULL JOIN uc ORDER BY 1, 2",
    "SELECT * FROM ua NATURAL JOIN ub",
    "SELECT * FROM ua JOIN ub USING (id) JOIN uc USING (id)",
    "SELECT * FROM ua FULL JOIN ub USING (id) FULL JOIN uc USING (id) ORDER BY id",
    "SELECT ua.*, ub.* FROM ua JOIN ub USING (id)",
    "SELECT j.id, j.y FROM (ua FULL JOIN ub USING (id)) j ORDER BY 1",
    "SELECT id FROM ua JOIN ub USING (id) WHERE id IN (SELECT id FROM uc)",
    "SELECT (SELECT count(*) FROM uc WHERE uc.id = id) FROM ua FULL JOIN ub USING (id) ORDER BY id",
    "SELECT * FROM ua JOIN ub USING (nosuch)",
    "SELECT * FROM ua JOIN ub USING (id, id)",
    "SELECT * FROM ua JOIN uc USING (x) JOIN ub USING (id)",
    "SELECT id FROM ua JOIN ub ON ua.id = ub.id",
    "SELECT * FROM ua RIGHT JOIN ub USING (id) ORDER BY id",
    "SELECT * FROM ua NATURAL LEFT JOIN uc ORDER BY 1",
    "SELECT id, max(y) FROM ua FULL JOIN ub USING (id) GROUP BY id HAVING id < 3 ORDER BY id DESC",
    "SELECT * FROM ub JOIN (ua JOIN uc USING (id)) USING (id)",
    // Columns of different types join in their common type, which the
    // merged column has; types that have none are 42804.
    "CREATE TABLE ud (id bigint, x varchar(5), n numeric)",
    "INSERT INTO ud VALUES (2, 'a2', 2), (4, 'x', 4.5)",
    "SELECT id, pg_typeof(id), pg_typeof(ua.id), pg_typeof(ud.id) FROM ua JOIN ud USING (id)",
    "SELECT id, pg_typeof(id) FROM ua FULL JOIN ud USING (id) ORDER BY id",
    "SELECT x, pg_typeof(x) FROM ud RIGHT JOIN ua USING (x) ORDER BY x",
    "SELECT *, pg_typeof(n) FROM uc JOIN ud ON true JOIN (SELECT 7 AS n) q USING (n)",
    "SELECT pg_typeof(j.id) FROM (ua JOIN ud USING (id)) j",
    "SELECT * FROM ua JOIN (SELECT date '2024-01-01' AS id) q USING (id)",
    "SELECT * FROM ua JOIN (SELECT true AS x) q USING (x)",
    "SELECT * FROM ua JOIN (SELECT 1 AS x) q USING (x)",
    // A sequence has no row type; a table and its indexes as PostgreSQL.
    "CREATE SEQUENCE us",
    "CREATE INDEX ua_x ON ua (x)",
    "SELECT relname, relkind, reltype <> 0 AS has_type FROM pg_class \
     WHERE relname IN ('ua', 'us', 'ua_x') ORDER BY 1",
];

// VARIADIC arrays, concat_ws, bytea input in the escape form.
const VARIADIC_AND_BYTEA: &[&str] = &[
    "SELECT format('%s-%s', VARIADIC ARRAY['a', 'b']), concat(VARIADIC ARRAY[1, 2]), concat_ws(',', VARIADIC ARRAY['a', NULL, 'b']), json_build_object(VARIADIC ARRAY['a', '1'])",
    "SELECT format('%s', VARIADIC NULL::text[])",
    "SELECT concat(VARIADIC NULL::text[]) IS NULL, concat_ws(',', VARIADIC NULL::int[]) IS NULL, json_build_array(VARIADIC ARRAY[1, 2]), jsonb_build_object(VARIADIC ARRAY[]::text[])",
    "SELECT format(VARIADIC ARRAY['%s', 'x'])",
    "SELECT concat(VARIADIC '{a,b}')",
    "SELECT concat(VARIADIC 5)",
    "SELECT concat_ws(NULL, 'a'), concat_ws(',', 'a', NULL, 2), concat_ws('-', 'x')",
    "SELECT 'abc\\000'::bytea, 'a\\\\b'::bytea, 'abc'::bytea, '\\101\\102\\003'::bytea, '\\x41 42'::bytea, 'é'::bytea, '0x41'::bytea, ''::bytea, '\\\\'::bytea, '\\x'::bytea",
    "SELECT 'a\\'::bytea",
    "SELECT '\\400'::bytea",
    "SELECT '\\12'::bytea",
    "SELECT '\\xzz'::bytea",
    "SELECT '\\x414'::bytea",
    "SELECT '\\x4 1'::bytea",
    "CREATE TABLE bt (b bytea)",
    "INSERT INTO bt VALUES ('a\\000b'), ('\\x00ff')",
    "SELECT b, length(b) FROM bt ORDER BY b",
    // Quoted literals and NULLs (unknown) take the other branch's or
    // value's type in UNION, VALUES, CASE and COALESCE.
    "SELECT x, pg_typeof(x) FROM (SELECT 'x' AS x UNION SELECT relname FROM pg_class WHERE relname = 'bt') s ORDER BY 1",
    "SELECT pg_typeof(x) FROM (SELECT relname AS x FROM pg_class UNION ALL SELECT NULL LIMIT 1) s",
    "SELECT x, pg_typeof(x) FROM (SELECT 1 AS x UNION SELECT '2') s ORDER BY 1",
    "SELECT pg_typeof(x) FROM (SELECT 'x' AS x UNION SELECT 'y' UNION SELECT relname FROM pg_class) s LIMIT 1",
    "SELECT pg_typeof(x) FROM (SELECT relname FROM pg_class UNION VALUES ('x'), ('y') LIMIT 1) s(x)",
    "SELECT 'abc' UNION SELECT 1",
    "SELECT x, pg_typeof(x) FROM (VALUES ('a'), ('b'::name)) v(x) ORDER BY 1",
    "SELECT x, pg_typeof(x) FROM (VALUES (NULL), (2.5)) v(x) ORDER BY 1",
    "SELECT x FROM (VALUES ('a'), (1)) v(x)",
    "SELECT pg_typeof(CASE WHEN true THEN 'a' ELSE relname END), pg_typeof(coalesce('a', relname)), \
     pg_typeof(greatest('a', relname)) FROM pg_class LIMIT 1",
    "SELECT coalesce(NULL, 1), pg_typeof(coalesce(NULL, 1)), coalesce('5', 2) + 1, greatest(1, '7'), least('3', 2)",
    "SELECT CASE WHEN false THEN 'abc' ELSE 1 END",
];

#[test]
fn using_joins_variadic_and_bytea_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare USING joins") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        for script in [USING_JOINS, VARIADIC_AND_BYTEA] {
            let want = run_script(&peers.pg_conn(), script, FIELDS).await;
            let got = run_script(&peers.walden_conn(), script, FIELDS).await;
            assert_same(&want, &got);
        }
    });
}

// pg_get_keywords(): every word with its category and label columns, in
// PostgreSQL's order, and pgjdbc's getSQLKeywords query over it.
const KEYWORDS: &[&str] = &[
    "SELECT * FROM pg_get_keywords()",
    "SELECT count(*), count(*) FILTER (WHERE barelabel) FROM pg_catalog.pg_get_keywords()",
    "SELECT catcode, catdesc, barelabel, baredesc, count(*) FROM pg_get_keywords() \
     GROUP BY 1, 2, 3, 4 ORDER BY 1, 3",
    "SELECT k.word FROM pg_get_keywords() AS k WHERE k.catcode = 'R' AND NOT k.barelabel ORDER BY 1",
    "SELECT string_agg(word, ',') FROM pg_catalog.pg_get_keywords() \
     WHERE word <> ALL ('{a,abs,absolute,action,ada,add,admin,after,all}'::text[])",
];

#[test]
fn pg_get_keywords_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare pg_get_keywords()") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), KEYWORDS, FIELDS).await;
        let got = run_script(&peers.walden_conn(), KEYWORDS, FIELDS).await;
        assert_same(&want, &got);
    });
}
