//! `WITH RECURSIVE` and SQL-level `PREPARE` / `EXECUTE` / `DEALLOCATE`
//! against a scratch PostgreSQL 15 with the same SQL, statement by statement
//! (rows, tags, SQLSTATE and message).

use crate::pg_diff;

use pg_diff::{assert_same, block_on_within, run_script, Peers};
use std::time::Duration;

const RECURSIVE: &[&str] = &[
    // Counting, and termination by the step's WHERE.
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) \
     SELECT n FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100) \
     SELECT count(*), sum(n), max(n) FROM r",
    // UNION drops rows already seen, so a cycle ends; UNION ALL keeps
    // duplicates of the anchor.
    "WITH RECURSIVE r(n) AS (VALUES (1), (1), (2) UNION SELECT (n % 3) + 1 FROM r) \
     SELECT n FROM r ORDER BY n",
    "WITH RECURSIVE r(n) AS (VALUES (1), (1) UNION ALL SELECT n + 1 FROM r WHERE n < 3) \
     SELECT n FROM r ORDER BY n",
    // A tree walk with depth and path.
    "CREATE TABLE node (id int PRIMARY KEY, parent int, name text)",
    "INSERT INTO node VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'a1'), \
     (5, 2, 'a2'), (6, 4, 'a1x'), (7, 3, 'b1')",
    "WITH RECURSIVE t(id, name, depth, path) AS ( \
       SELECT id, name, 0, name FROM node WHERE parent IS NULL \
       UNION ALL \
       SELECT n.id, n.name, t.depth + 1, t.path || '/' || n.name \
       FROM node n JOIN t ON n.parent = t.id) \
     SELECT id, depth, path FROM t ORDER BY path",
    // Ancestors of one node, the step joining the other way.
    "WITH RECURSIVE up(id, parent) AS ( \
       SELECT id, parent FROM node WHERE id = 6 \
       UNION SELECT n.id, n.parent FROM node n, up WHERE n.id = up.parent) \
     SELECT id FROM up ORDER BY id",
    // Reachability through a graph with a cycle (UNION ends it).
    "CREATE TABLE edge (a int, b int)",
    "INSERT INTO edge VALUES (1, 2), (2, 3), (3, 1), (3, 4), (5, 6)",
    "WITH RECURSIVE reach(n) AS (SELECT 1 UNION SELECT e.b FROM reach JOIN edge e ON e.a = reach.n) \
     SELECT n FROM reach ORDER BY n",
    // Paths through the cycle, cut by a depth bound (UNION ALL).
    "WITH RECURSIVE p(n, len) AS (SELECT 1, 0 UNION ALL \
       SELECT e.b, p.len + 1 FROM p JOIN edge e ON e.a = p.n WHERE p.len < 4) \
     SELECT n, len FROM p ORDER BY len, n",
    // A non-recursive CTE in a WITH RECURSIVE list, and one reading another.
    "WITH RECURSIVE base AS (SELECT 2 AS s), r(n) AS (SELECT s FROM base UNION ALL \
       SELECT n * 2 FROM r WHERE n < 20) SELECT n FROM r ORDER BY n",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) \
     SELECT a.n, b.n FROM r a JOIN r b ON b.n = a.n + 1 ORDER BY a.n",
    // The CTE in a subquery, and an empty anchor.
    "SELECT (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 4) \
       SELECT sum(n) FROM r)",
    "WITH RECURSIVE r(n) AS (SELECT 1 WHERE false UNION ALL SELECT n + 1 FROM r) \
     SELECT count(*) FROM r",
];

const PREPARE: &[&str] = &[
    "CREATE TABLE item (id int PRIMARY KEY, name text)",
    "INSERT INTO item VALUES (1, 'one'), (2, 'two'), (3, NULL)",
    // Typed parameters.
    "PREPARE get(int) AS SELECT id, name FROM item WHERE id = $1",
    "EXECUTE get(2)",
    "EXECUTE get('3')",
    "EXECUTE get(1 + 1)",
    // Untyped: the types are inferred from the use.
    "PREPARE pair AS SELECT $1::int + 1 AS a, upper($2::text) AS b",
    "EXECUTE pair(41, 'x')",
    // Several typed parameters, a write, and no parameters.
    "PREPARE ins(int, text) AS INSERT INTO item VALUES ($1, $2)",
    "EXECUTE ins(4, 'four')",
    "PREPARE upd(text, int) AS UPDATE item SET name = $1 WHERE id = $2",
    "EXECUTE upd('TWO', 2)",
    "PREPARE allrows AS SELECT count(*) FROM item",
    "EXECUTE allrows",
    "SELECT id, name FROM item ORDER BY id",
    // The session's statements.
    "SELECT name, parameter_types, from_sql FROM pg_prepared_statements ORDER BY name",
    // Errors: a name taken (42P05), none such (26000), a wrong count (42601).
    // (A bad argument, get('x'), is 22P02 in both; Walden's wording for
    // scalar input differs, as arrays.rs notes.)
    "PREPARE get(int) AS SELECT 1",
    "EXECUTE nosuch(1)",
    "EXECUTE get(1, 2)",
    "DEALLOCATE nosuch",
    // DEALLOCATE one, then ALL.
    "DEALLOCATE get",
    "EXECUTE get(1)",
    "DEALLOCATE PREPARE pair",
    "SELECT count(*) FROM pg_prepared_statements",
    "DEALLOCATE ALL",
    "SELECT count(*) FROM pg_prepared_statements",
    "EXECUTE ins(5, 'five')",
    // In a transaction block, and after an error there.
    "PREPARE cnt AS SELECT count(*) FROM item",
    "BEGIN",
    "INSERT INTO item VALUES (9, 'nine')",
    "EXECUTE cnt",
    "ROLLBACK",
    "EXECUTE cnt",
];

fn compare(script: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare WITH RECURSIVE and PREPARE") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), script, &[]).await;
        let got = run_script(&peers.walden_conn(), script, &[]).await;
        assert_same(&want, &got);
    });
}

#[test]
fn with_recursive_matches_postgres() {
    compare(RECURSIVE);
}

#[test]
fn prepare_execute_deallocate_match_postgres() {
    compare(PREPARE);
}
