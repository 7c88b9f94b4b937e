//! Set-returning functions in the select list (and the same functions in
//! FROM), against a scratch PostgreSQL 15 with the same SQL: lockstep
//! iteration with NULL padding, rows dropped when every SRF is empty,
//! nesting, ordering against aggregates, windows, DISTINCT, ORDER BY and
//! LIMIT, and PostgreSQL's errors where it refuses. What Walden refuses
//! and PostgreSQL runs is checked to be refused with 0A000.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, outcome, run_script, Peers};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "SET TIME ZONE 'UTC'",
    "CREATE TABLE few (id int PRIMARY KEY, dataa text, datab text, arr int[])",
    "INSERT INTO few VALUES (1, 'a', 'foo', '{1,2}'), (2, 'a', 'bar', '{}'), \
     (3, 'b', 'bar', NULL), (4, 'c', 'baz', '{7,8,9}')",
    "SELECT generate_series(1, 3)",
    "SELECT generate_series(1, 3), generate_series(3, 5)",
    "SELECT generate_series(1, 2), generate_series(1, 4)",
    "SELECT generate_series(1, generate_series(1, 3))",
    "SELECT generate_series(generate_series(1, 3), generate_series(2, 4))",
    "SELECT generate_series(1, 3), unnest(ARRAY[1, 2])",
    "SELECT unnest(ARRAY[]::int[]), 1",
    "SELECT id, unnest(arr) FROM few ORDER BY id",
    "SELECT id, unnest(arr), generate_series(1, 2) FROM few ORDER BY id, 3",
    "SELECT few.id, generate_series(1, 3) g FROM few ORDER BY id DESC",
    "SELECT few.id, generate_series(1, 3) g FROM few ORDER BY id, g DESC",
    "SELECT few.id, generate_series(1, 3) g FROM few ORDER BY id, generate_series(1, 3) DESC",
    "SELECT dataa, count(*), generate_series(1, 2) FROM few GROUP BY dataa ORDER BY 1, 3",
    "SELECT count(*), generate_series(1, count(*)::int) FROM few",
    "SELECT dataa, unnest(array_agg(id ORDER BY id)) FROM few GROUP BY dataa ORDER BY 1, 2",
    "SELECT row_number() OVER (ORDER BY id), generate_series(1, 2), id FROM few ORDER BY id, 2",
    "SELECT DISTINCT unnest(ARRAY[3, 1, 1, 2]) ORDER BY 1",
    "SELECT generate_series(1, 10) LIMIT 3",
    "SELECT generate_series(1, 10) OFFSET 8",
    "SELECT generate_series(1, 3) + 1, abs(-generate_series(1, 2))",
    "SELECT generate_series(3, 1, -1), generate_series(1, NULL)",
    "SELECT generate_series(1, 3, 0)",
    "SELECT generate_series(1.5, 3), generate_series(0, 1, 0.25)",
    "SELECT generate_series(9000000000, 9000000002)",
    "SELECT generate_series('2024-01-01'::timestamp, '2024-01-02', '12 hours')",
    "SELECT generate_series('2024-01-01 00:00+00'::timestamptz, '2024-01-01 02:00+00', '1 hour')",
    "SELECT generate_series('2024-03-01'::timestamp, '2024-01-01', '-1 month')",
    "SELECT pg_typeof(generate_series(1, 2)), pg_typeof(generate_series(1::bigint, 2)), \
     pg_typeof(unnest(ARRAY['a']))",
    "SELECT generate_subscripts(ARRAY[5, 6, 7], 1), generate_subscripts(ARRAY[5, 6, 7], 1, true)",
    "SELECT generate_subscripts(ARRAY[5, 6], 2)",
    "SELECT (information_schema._pg_expandarray(ARRAY[10, 20])).x, \
     (information_schema._pg_expandarray(ARRAY[10, 20])).n",
    "SELECT regexp_split_to_table('a,b,,c', ','), regexp_split_to_table('hello', '')",
    "SELECT regexp_matches('foobarbequebaz', '(b[^b]+)(b[^b]+)', 'g')",
    "SELECT regexp_matches('foobarbequebaz', 'b..')",
    "SELECT regexp_matches('abc', 'x')",
    "SELECT jsonb_array_elements('[1,2,{\"a\":3}]'), jsonb_object_keys('{\"a\":1,\"b\":2}')",
    "SELECT jsonb_array_elements_text('[1,\"x\",null]')",
    "SELECT x FROM (SELECT unnest(ARRAY[4, 5]) AS x) s WHERE x > 4",
    "SELECT (SELECT max(g) FROM (SELECT generate_series(1, f.id) AS g) s) FROM few f ORDER BY id",
    "INSERT INTO few (id, dataa) SELECT generate_series(10, 12), 'z'",
    "SELECT id FROM few WHERE dataa = 'z' ORDER BY id",
    // Where PostgreSQL refuses them.
    "SELECT * FROM few WHERE generate_series(1, 2) = 1",
    "SELECT sum(generate_series(1, 3))",
    "SELECT CASE WHEN true THEN generate_series(1, 2) END",
    "SELECT coalesce(generate_series(1, 2), 0)",
    "SELECT dataa FROM few GROUP BY dataa HAVING generate_series(1, 2) > 0",
    // The same functions in FROM.
    "SELECT * FROM generate_series(1, 3) g WHERE g > 1",
    "SELECT * FROM generate_series(1, 5, 2) WITH ORDINALITY AS t(v, n)",
    "SELECT * FROM generate_subscripts(ARRAY[4, 5], 1) s",
    "SELECT * FROM information_schema._pg_expandarray(ARRAY['a', 'b'])",
    "SELECT * FROM regexp_split_to_table('x y  z', ' ') AS t(w)",
    "SELECT pg_typeof(g) FROM generate_series(1, 1) g",
    // Catalog array columns: int2vector and oidvector (subscripts from 0,
    // text form with spaces), int2[] constraint keys.
    "CREATE TABLE ck (a int, b text, c int, PRIMARY KEY (a, c), UNIQUE (b))",
    "CREATE INDEX ck_ix ON ck (c, b)",
    "SELECT c.relname, i.indkey, i.indkey[0], i.indkey[1], i.indkey[2], pg_typeof(i.indkey), \
     i.indclass, i.indclass[0], pg_typeof(i.indclass), i.indoption, i.indcollation, \
     i.indkey::text, i.indclass::text || '!' \
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
     WHERE i.indrelid = 'ck'::regclass ORDER BY c.relname",
    "SELECT conname, conkey, conkey[1], conkey[2], pg_typeof(conkey), 3 = ANY (conkey), \
     conkey @> '{1}', array_to_string(conkey, ',') \
     FROM pg_constraint WHERE conrelid = 'ck'::regclass ORDER BY conname",
    "SELECT unnest(i.indkey) AS attnum, generate_subscripts(i.indkey, 1) AS ord, \
     unnest(i.indclass) AS opc FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
     WHERE c.relname = 'ck_ix'",
    "SELECT (information_schema._pg_expandarray(i.indkey)).x, \
     (information_schema._pg_expandarray(i.indkey)).n \
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'ck_ix'",
    "SELECT a.attname FROM pg_attribute a JOIN pg_constraint con \
     ON a.attrelid = con.conrelid AND a.attnum = ANY (con.conkey) \
     WHERE con.conname = 'ck_pkey' ORDER BY a.attnum",
];

#[test]
fn select_list_srfs_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare set-returning functions") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, &[]).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, &[]).await;
        assert_same(&want, &got);
    });
}

/// What PostgreSQL runs and Walden does not is refused with 0A000 naming
/// it, never answered differently.
#[test]
fn srfs_walden_cannot_run_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        for (sql, names) in [
            // PostgreSQL runs the SRF below the grouping in this case.
            (
                "SELECT generate_series(1, 2) FROM (VALUES (1)) v(x) GROUP BY generate_series(1, 2)",
                "GROUP BY",
            ),
            // PostgreSQL partitions by the SRF's rows here.
            (
                "SELECT count(*) OVER (PARTITION BY generate_series(1, 2))",
                "set-returning function",
            ),
        ] {
            let got = outcome(&c, sql, &[]).await;
            assert!(
                got.starts_with("ERROR 0A000") && got.contains(names),
                "{sql}: {got}"
            );
        }
    });
}
