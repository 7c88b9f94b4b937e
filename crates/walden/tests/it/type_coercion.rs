//! Type resolution and coercion against a scratch PostgreSQL 15: the
//! common type of UNION / INTERSECT / EXCEPT branches, VALUES rows, CASE
//! results, COALESCE / GREATEST / LEAST / NULLIF arguments and ARRAY[...]
//! elements, and what explicit casts and assignments do with values too
//! long or too precise for their type. Each query's columns as
//! RowDescription gives them (tokio-postgres's prepare), then its rows in
//! the text format; the described type and the values must agree, as a
//! driver decodes the one by the other.

use crate::pg_diff;

use pg_diff::{assert_same, block_on_within, connect, outcome, Peers};
use std::time::Duration;

const SETUP: &[&str] = &[
    "CREATE TABLE ct (id int, n numeric(6,2), v varchar(3), c char(3), f real, t text)",
    "INSERT INTO ct VALUES (1, 1.50, 'ab', 'x', 0.5, 'abc'), (2, 2, 'abc', 'yz', 2.5, NULL)",
];

const QUERIES: &[&str] = &[
    "SELECT 1 AS x UNION SELECT 2.5 ORDER BY 1",
    "SELECT 1 AS x UNION ALL SELECT 2.5 UNION ALL SELECT 3::int8 ORDER BY 1",
    "SELECT 1::int2 AS x UNION SELECT 2::int8 ORDER BY 1",
    "SELECT 1.0 AS x INTERSECT SELECT 1",
    "SELECT 1 AS x INTERSECT ALL SELECT 1.0",
    "SELECT 1 AS x EXCEPT SELECT 1.0",
    "SELECT 2 AS x EXCEPT ALL SELECT 1.0",
    "SELECT 1 AS x UNION (SELECT 2.5 ORDER BY 1 LIMIT 1) ORDER BY 1",
    "SELECT NULL AS x UNION ALL SELECT 2.5",
    "SELECT id AS x FROM ct UNION ALL SELECT n FROM ct ORDER BY 1",
    "SELECT v AS x FROM ct UNION SELECT t FROM ct ORDER BY 1",
    "SELECT t AS x FROM ct UNION SELECT v FROM ct ORDER BY 1",
    "SELECT 'a'::varchar(3) AS x UNION SELECT 'bcd'::text ORDER BY 1",
    "SELECT 'x'::name AS x UNION SELECT 'y'::text ORDER BY 1",
    "SELECT 'x'::text AS x UNION SELECT 'y'::name ORDER BY 1",
    "SELECT 1::numeric(5,2) AS x UNION SELECT 2::numeric(6,2) ORDER BY 1",
    "SELECT f AS x FROM ct UNION ALL SELECT 1.25::float8 ORDER BY 1",
    "SELECT '2020-01-01'::date AS x UNION ALL SELECT '2020-01-02 10:00'::timestamp ORDER BY 1",
    "SELECT ARRAY[1] AS x UNION ALL SELECT ARRAY[2.5]",
    // pg_dump's pg_depend query: oid and regclass are oid.
    "SELECT 1259::oid AS x UNION ALL SELECT 'pg_class'::regclass ORDER BY 1",
    "SELECT 'pg_class'::regclass AS x UNION ALL SELECT 'pg_type'::regclass ORDER BY 1",
    "SELECT 3000000000 AS x UNION SELECT 1 ORDER BY 1",
    "SELECT * FROM (SELECT 1 AS a, 'p' AS b UNION ALL SELECT 2.5, 'q') s ORDER BY a",
    "VALUES (1), (2.5), (NULL)",
    "VALUES (1, 'a'), (2.5, 'b'), (3::int8, NULL)",
    "VALUES (1), ('2')",
    "SELECT x, pg_typeof(x) AS t FROM (VALUES (1), (2.5)) v(x) ORDER BY 1",
    "SELECT CASE WHEN true THEN 1 ELSE 2.5 END AS a, CASE WHEN false THEN 1 ELSE 2.5 END AS b, \
     CASE 1 WHEN 1 THEN 2 ELSE 3.5 END AS c, CASE WHEN false THEN 1 WHEN true THEN 2.5::float4 END AS d",
    "SELECT CASE WHEN id = 1 THEN id ELSE n END AS a FROM ct ORDER BY id",
    "SELECT COALESCE(1, 2.5) AS a, COALESCE(NULL, 2.5, 1) AS b, COALESCE(t, v) AS c, \
     COALESCE(v, t) AS d FROM ct ORDER BY id",
    "SELECT GREATEST(1, 2.5, 3::int8) AS a, LEAST(1::int2, 2) AS b, GREATEST(id, n) AS c, \
     LEAST(f, 1) AS d FROM ct ORDER BY id",
    "SELECT NULLIF(1, 2.5) AS a, NULLIF(1.5, 2) AS b, NULLIF(1, 2::float4) AS c, \
     NULLIF(1.5::float4, 2) AS d, NULLIF(v, 'x') AS e, NULLIF(1, 2::int8) AS f FROM ct ORDER BY id",
    "SELECT ARRAY[1, 2.5] AS a, ARRAY[1::int2, 2] AS b, ARRAY[id, n] AS c FROM ct ORDER BY id",
    "SELECT 1 IN (1.0, 2) AS a, 1 IN ('1', 2.5) AS b, '1' IN (1, 2) AS c, 'a' IN ('b', 'a') AS d",
];

/// Untyped parameters: the type each takes from where it stands.
const PARAMS: &[&str] = &[
    "SELECT $1 UNION SELECT 1",
    "SELECT 1 UNION SELECT $1",
    "VALUES (1), ($1)",
    "SELECT COALESCE($1, 2.5)",
];

/// Statements that fail, compared by their errors.
const ERRORS: &[&str] = &[
    "SELECT 1 UNION SELECT 'a'::text",
    "SELECT true UNION SELECT 1",
    "SELECT 1::oid UNION SELECT 2.5::float8",
    "SELECT gen_random_uuid() UNION SELECT 'x'::bytea",
    "SELECT '2020-01-01'::date UNION SELECT '10:00'::time",
    "SELECT '1 day'::interval UNION SELECT '10:00'::time",
    "SELECT 1 INTERSECT SELECT true",
    "SELECT 1 EXCEPT SELECT true",
    "VALUES (1), (true)",
    "SELECT CASE WHEN true THEN 1 ELSE 'a'::text END",
    "SELECT CASE WHEN true THEN 'a' ELSE 1 END",
    "SELECT COALESCE(1, true)",
    "SELECT GREATEST(1, 'x'::text)",
    "SELECT ARRAY[1, 'x'::text]",
    "SELECT 'a' IN ('a', 1)",
];

/// Explicit casts cut a string to varchar(n) / char(n); assignments fail
/// unless what is cut is blanks; numeric(p,s) rounds, or overflows.
const CAST_SETUP: &[&str] = &[
    "CREATE TABLE cx (id int, v varchar(3), c char(3), n numeric(5,2))",
    "INSERT INTO cx VALUES (1, 'abcd', NULL, NULL)",
    "INSERT INTO cx VALUES (2, 'ab   ', 'xy    ', 1.005)",
    "INSERT INTO cx VALUES (3, NULL, 'wxyz', NULL)",
    "INSERT INTO cx VALUES (4, NULL, NULL, 1234.5)",
    "INSERT INTO cx VALUES (5, 'abcd'::varchar(3), 'wxyz'::char(3), 999.994)",
    "UPDATE cx SET v = 'wxyz' WHERE id = 2",
    "UPDATE cx SET v = 'wxyz'::varchar(2) WHERE id = 2",
    "UPDATE cx SET n = n * 1000 WHERE id = 5",
];

const CAST_QUERIES: &[&str] = &[
    "SELECT id, v, c, n, length(v) AS lv, octet_length(c) AS lc FROM cx ORDER BY id",
    "SELECT 'abcd'::varchar(3) AS a, CAST('abcd' AS varchar(3)) AS b, varchar(3) 'abcd' AS c, \
     'abcd'::text::varchar(3) AS d, 'héllo'::varchar(2) AS e, 12345::varchar(3) AS f, \
     'ab   '::varchar(3) AS g",
    "SELECT 'abcd'::char(3) AS a, 'ab'::char(3) AS b, 'abcd'::text::char(2) AS c, \
     length('abcd  '::char(6)) AS d, 1.25::char(2) AS e",
    "SELECT true::text AS a, false::varchar AS b, true::varchar(3) AS c",
    "SELECT ARRAY['abcd', 'x']::varchar(2)[] AS a, '{abcd}'::varchar(3)[] AS b",
    "SELECT 'abcd'::varchar(3) = 'abc' AS a",
    "SELECT 'abcd' IN (v, v) AS a, 'abcd' = v AS b, v IN ('abcd', 'x') AS c FROM cx WHERE id = 5",
    "SELECT 123.456::numeric(5,2) AS a, 123.455::numeric(5,2) AS b, -1.005::numeric(4,2) AS c, \
     1.5::numeric(2,0) AS d, 2.5::float8::numeric(3,1) AS e",
    "SELECT COALESCE(v, 'abcdef') AS a FROM cx ORDER BY id",
    "VALUES ('ab'::varchar(2)), ('abcdef')",
    "SELECT 'abcdef' AS a UNION SELECT 'ab'::varchar(2) ORDER BY 1",
];

const CAST_ERRORS: &[&str] = &[
    "SELECT 1234.5::numeric(5,2)",
    "SELECT 999.995::numeric(5,2)",
    "SELECT '99.995'::numeric(4,2)",
    "SELECT 12345::int::numeric(3,0)",
    "SELECT 0.5::numeric(2,2)",
    "INSERT INTO cx (v) VALUES ('abcd')",
    "INSERT INTO cx (c) VALUES ('abcd')",
    "INSERT INTO cx (n) VALUES (1000)",
    "UPDATE cx SET v = v || 'zz' WHERE id = 1",
];

async fn describe(c: &tokio_postgres::Client, sql: &str) -> String {
    let cols = match c.prepare(sql).await {
        Ok(st) => st
            .columns()
            .iter()
            .map(|col| format!("{} {}", col.name(), col.type_().name()))
            .collect::<Vec<_>>()
            .join(", "),
        Err(e) => pg_diff::render_error(&e, &[]),
    };
    format!("{sql}\n  [{cols}]\n  -> {}", outcome(c, sql, &[]).await)
}

async fn run(conn: String, setup: &[&str], queries: &[&str], errors: &[&str]) -> Vec<String> {
    let c = connect(&conn).await;
    let mut out = Vec::new();
    for sql in setup {
        out.push(format!("{sql} -> {}", outcome(&c, sql, &[]).await));
    }
    for sql in queries {
        out.push(describe(&c, sql).await);
    }
    for sql in errors {
        out.push(format!("{sql} -> {}", outcome(&c, sql, &[]).await));
    }
    out
}

async fn params(conn: String) -> Vec<String> {
    let c = connect(&conn).await;
    let mut out = Vec::new();
    for sql in PARAMS {
        let types = match c.prepare(sql).await {
            Ok(st) => st
                .params()
                .iter()
                .map(|t| t.name().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            Err(e) => pg_diff::render_error(&e, &[]),
        };
        out.push(format!("{sql} -> ({types})"));
    }
    out
}

#[test]
fn common_types_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare common types") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run(peers.pg_conn(), SETUP, QUERIES, ERRORS).await;
        let got = run(peers.walden_conn(), SETUP, QUERIES, ERRORS).await;
        assert_same(&want, &got);
        assert_same(
            &params(peers.pg_conn()).await,
            &params(peers.walden_conn()).await,
        );
    });
}

#[test]
fn casts_and_assignments_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare casts") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run(peers.pg_conn(), CAST_SETUP, CAST_QUERIES, CAST_ERRORS).await;
        let got = run(peers.walden_conn(), CAST_SETUP, CAST_QUERIES, CAST_ERRORS).await;
        assert_same(&want, &got);
    });
}
