//! The SQL that drivers, tools and ORMs send without thinking, against a
//! scratch PostgreSQL 15 with the same statements: `search_path` deciding
//! where unqualified names are found (and created), and the outcome of
//! every statement (rows, or SQLSTATE and message) must be the same.

mod pg_diff;
mod server_support;

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
