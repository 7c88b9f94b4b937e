//! Arrays of several dimensions and arrays with bounds not from 1, compared
//! with a scratch PostgreSQL 15: literals in and out (`'{{1,2},{3,4}}'`,
//! `'[0:1]={1,2}'`), `ARRAY[[...]]`, stored in a table and read back after a
//! restart, compared and keyed, subscripts, array_dims / array_ndims /
//! array_lower / array_upper / array_length / cardinality, unnest and
//! `= ANY`. Before, all of them were refused (0A000).

use crate::pg_diff;

use pg_diff::{block_on_within, connect, Peers};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "SELECT '{{1,2},{3,4}}'::int[], '[0:1]={1,2}'::int[], '[1:1][2:3]={{5,6}}'::int[], \
     '{{{1},{2}},{{3},{4}}}'::int[]",
    "SELECT '{{a,\"b c\"},{NULL,\"\"}}'::text[], '{ { 1 , 2 } , { 3 , 4 } }'::int[]",
    "SELECT '{{1,2},{3}}'::int[]",
    "SELECT '{{1,2},3}'::int[]",
    "SELECT '[1:2]={1}'::int[]",
    "SELECT '[2:1]={1}'::int[]",
    "SELECT '[0:1]{1,2}'::int[]",
    "SELECT '{{{{{{{1}}}}}}}'::int[]",
    "SELECT ARRAY[[1,2],[3,4]], ARRAY[ARRAY[1.5,2],ARRAY[3,4]], ARRAY[[[1]],[[2]]]",
    "SELECT ARRAY[[1,2],[3]]",
    "SELECT ARRAY[ARRAY[1,2], NULL]",
    "SELECT ARRAY[ARRAY[]::int[], ARRAY[]::int[]]",
    "SELECT pg_typeof(ARRAY[[1,2],[3,4]]), pg_typeof('{{1}}'::int[][])",
    "SELECT array_dims('{{1,2},{3,4}}'::int[]), array_dims('[0:1]={1,2}'::int[]), \
     array_dims('{}'::int[]), array_dims(ARRAY[1,2,3])",
    "SELECT array_ndims('{{1,2},{3,4}}'::int[]), array_ndims('{}'::int[]), array_ndims(ARRAY[1])",
    "SELECT array_lower(a, 1), array_upper(a, 1), array_lower(a, 2), array_upper(a, 2), \
     array_length(a, 1), array_length(a, 2), array_length(a, 3), cardinality(a) \
     FROM (SELECT '[0:1][-1:1]={{1,2,3},{4,5,6}}'::int[] AS a) s",
    "SELECT array_length(ARRAY[1,2,3], 1), array_length('{}'::int[], 1), array_upper(ARRAY[1,2], 1)",
    "SELECT a[1][1], a[1][2], a[2][1], a[2][2], a[3][1], a[1], a[1][1][1] \
     FROM (SELECT '{{1,2},{3,4}}'::int[] AS a) s",
    "SELECT a[0], a[1], a[2] FROM (SELECT '[0:1]={7,8}'::int[] AS a) s",
    "SELECT unnest('{{1,2},{3,4}}'::int[]), unnest('[5:6]={a,b}'::text[])",
    "SELECT 3 = ANY ('{{1,2},{3,4}}'::int[]), 5 = ANY ('{{1,2},{3,4}}'::int[]), \
     0 < ALL ('{{1,2},{3,4}}'::int[])",
    "SELECT '{{1,2},{3,4}}'::int[] = '{{1,2},{3,4}}'::int[], '{{1,2},{3,4}}'::int[] = '{1,2,3,4}'::int[], \
     '{1,2}'::int[] = '[0:1]={1,2}'::int[], '{{1,2}}'::int[] < '{{1,3}}'::int[], \
     '{1,2,3,4}'::int[] < '{{1,2},{3,4}}'::int[], '{{1,2},{3,4}}'::int[] <> '{{1,2},{3,5}}'::int[]",
    "SELECT '{{1,2},{3,4}}'::int[]::text[], '{{1.5,2},{3,4}}'::numeric[]::text, \
     '[0:1]={1,2}'::int[]::text",
    "CREATE TABLE md (id int PRIMARY KEY, a int[], t text[][])",
    "INSERT INTO md VALUES (1, '{{1,2},{3,4}}', '{{x,y}}'), (2, '[0:2]={7,8,9}', '{a}'), \
     (3, '{1,2,3}', NULL), (4, ARRAY[[5],[6]], '{}'), (5, '{}', '{{NULL}}')",
    "SELECT id, a, t, array_dims(a), cardinality(a) FROM md ORDER BY id",
    "SELECT id FROM md ORDER BY a, id",
    "SELECT id FROM md WHERE a = '{{1,2},{3,4}}' ORDER BY id",
    "CREATE INDEX md_a ON md (a)",
    "SELECT id FROM md WHERE a = '[0:2]={7,8,9}'",
    "SELECT id FROM md WHERE a = '{7,8,9}'",
    "SELECT a FROM md WHERE a > '{1}' ORDER BY a",
    "SELECT count(DISTINCT a) FROM md",
    "SELECT a, count(*) FROM md GROUP BY a ORDER BY a",
    "UPDATE md SET a = '{{9,9},{9,9}}' WHERE id = 4",
    "SELECT id, a FROM md ORDER BY id",
    "SELECT to_json('{{1,2},{3,4}}'::int[]), to_jsonb('[0:1]={1,2}'::int[]), \
     to_json('{{{a}},{{NULL}}}'::text[])",
    "SELECT array_to_string('{{1,2},{3,NULL}}'::int[], ',', '*')",
    "SELECT '{{},{}}'::text[]",
    "SELECT (now())[1]",
    "SELECT array_append(ARRAY['a'], '[b]'), 'a' || '[b]', array_remove(ARRAY['{x'], '{x')",
    // Keys order '{7,8,9}' before '[0:2]={7,8,9}'; comparison the other way:
    // ranges and ORDER BY on an array key are filtered and sorted instead.
    "INSERT INTO md VALUES (6, '{7,8,9}', NULL), (7, '[-1:1]={7,8,9}', NULL)",
    "SELECT id FROM md WHERE a < '{7,8,9}' ORDER BY id",
    "SELECT id FROM md WHERE a >= '[0:2]={7,8,9}' ORDER BY id",
    "SELECT id, a FROM md ORDER BY a LIMIT 4",
    "SELECT id, a FROM md ORDER BY a DESC LIMIT 4",
    "CREATE TABLE mk (a int[] PRIMARY KEY)",
    "INSERT INTO mk VALUES ('{7,8,9}'), ('[0:2]={7,8,9}'), ('{{7,8,9}}'), ('{7,8}')",
    "SELECT a FROM mk WHERE a < '{7,8,9}' ORDER BY a",
    "SELECT a FROM mk WHERE a > '[0:2]={7,8,9}' ORDER BY a",
    "SELECT a FROM mk ORDER BY a LIMIT 3",
    "SELECT a FROM mk ORDER BY a DESC LIMIT 3",
];

/// What Walden cannot yet do with these arrays it refuses (0A000) rather
/// than flatten them or lose their bounds; PostgreSQL answers all of them.
const REFUSED: &[&str] = &[
    "SELECT '{{1,2}}'::int[] || '{{3,4}}'::int[]",
    "SELECT '[0:1]={1,2}'::int[] || 3",
    "SELECT 0 || '{{1,2}}'::int[]",
    "SELECT '{1}'::int[] || '[0:0]={2}'::int[]",
    "SELECT array_cat('{{1}}'::int[], '{{2}}'::int[])",
    "SELECT array_append('[0:0]={1}'::int[], 2)",
    "SELECT array_prepend(0, '{{1}}'::int[])",
    "SELECT array_remove('[0:1]={1,2}'::int[], 1)",
    "SELECT array_position('[0:1]={1,2}'::int[], 2)",
    "SELECT array_positions('{{1,2}}'::int[], 2)",
    "SELECT generate_subscripts('{{1,2}}'::int[], 1)",
    "SELECT array_agg(a) FROM md",
    "SELECT array_agg(x) FROM (VALUES ('{1,2}'::int[]), ('{3,4}'::int[])) v(x)",
    "SELECT array_agg(NULL::int[])",
    "SELECT ARRAY(SELECT ARRAY[i, i + 1] FROM generate_series(1, 2) i)",
    "SELECT array_remove('{{1,2,2},{1,4,3}}', 2)",
    "SELECT array_position('[2:4]={1,2,3}', 1)",
];

#[test]
fn md_arrays_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare multidimensional arrays") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = pg_diff::sqlstate_outcomes(&connect(&peers.pg_conn()).await, SCRIPT).await;
        let got = pg_diff::sqlstate_outcomes(&connect(&peers.walden_conn()).await, SCRIPT).await;
        pg_diff::assert_same(&want, &got);
        let walden = connect(&peers.walden_conn()).await;
        let got = pg_diff::sqlstate_outcomes(&walden, REFUSED).await;
        for line in got {
            assert!(line.ends_with("-> ERROR 0A000"), "{line}");
        }
    });
}
