//! Result types against a scratch PostgreSQL 15: for each query, the type
//! of every column as the server describes it (RowDescription, read
//! through tokio-postgres's prepare) and the rows in the text format.
//! Drivers decode by the described type, so `length()` being `bigint`
//! where PostgreSQL says `integer` breaks a typed read even when the digits
//! agree.

use crate::pg_diff;

use pg_diff::{assert_same, block_on_within, connect, outcome, Peers};
use std::time::Duration;

const SETUP: &[&str] = &[
    "CREATE TABLE rt (id int, b bigint, s smallint, v numeric(10,2), f real, d float8, t text)",
    "INSERT INTO rt VALUES (1, 9223372036854775807, 1, 1.10, 1.5, 1.5, 'abc'), \
     (2, 9223372036854775807, 2, 2.25, 2.25, 2.5, 'héllo'), (3, 1, 3, 3, 0.5, 1, NULL)",
    "CREATE INDEX rt_i ON rt (id, b)",
    "CREATE TABLE rc (id int, c1 char(1), c3 char(3))",
    "INSERT INTO rc VALUES (1, 'a', 'bcd'), (2, 'b', 'ef')",
];

const QUERIES: &[&str] = &[
    "SELECT length(t) AS l, char_length(t) AS cl, octet_length(t) AS ol FROM rt ORDER BY id",
    "SELECT sum(id) AS si, sum(b) AS sb, sum(s) AS ss, sum(v) AS sv, sum(f) AS sf, sum(d) AS sd \
     FROM rt",
    "SELECT avg(id) AS ai, avg(b) AS ab, avg(s) AS a_s, avg(v) AS av, avg(f) AS af FROM rt",
    "SELECT count(*) AS n, min(id) AS lo, max(t) AS hi FROM rt",
    "SELECT t, sum(id) AS si, pg_typeof(sum(id))::text AS tsi, pg_typeof(sum(b))::text AS tsb, \
     pg_typeof(sum(f))::text AS tsf, pg_typeof(avg(id))::text AS tai, pg_typeof(count(*))::text AS tc, \
     pg_typeof(max(t))::text AS tm, pg_typeof(sum(id) + 1)::text AS tp, pg_typeof(t)::text AS tt \
     FROM rt GROUP BY t ORDER BY t",
    "SELECT pg_typeof(length('x')) AS a, pg_typeof(octet_length('x')) AS b",
    // pg_typeof is a regtype: it compares with one, and prints as a name.
    "SELECT pg_typeof(1) AS a, pg_typeof(pg_typeof(1)) AS b, pg_typeof(1) = 'integer'::regtype AS c, \
     pg_typeof(1)::text AS d, pg_typeof('x') AS e, pg_typeof(NULL) AS f, pg_typeof(1.5) AS g",
    "SELECT array_agg(pg_typeof(x)) AS a FROM (VALUES (1)) v(x)",
    // reg types print the name, compare and sort as the OID.
    "SELECT 'rt'::regclass AS a, 'rt'::regclass::oid > 16383 AS b, pg_typeof('rt'::regclass) AS c, \
     'rt'::regclass::text AS d, 'pg_class'::regclass AS e, 'pg_class'::regclass::int AS f",
    "SELECT oid::regclass AS a, relname::text AS n FROM pg_class WHERE relname = 'rt'",
    "SELECT relname::text AS n FROM pg_class WHERE oid = 'rt'::regclass",
    "SELECT indexrelid::regclass AS i, indrelid::regclass AS r FROM pg_index \
     WHERE indrelid = 'rt'::regclass",
    "SELECT relname FROM pg_class WHERE oid::regclass = 'rt'",
    "SELECT 'int4'::regtype AS a, 'integer'::regtype::oid AS b, 23::regtype AS c, \
     pg_typeof(23::regtype) AS d, 0::regclass AS e, 0::regtype AS f, \
     'pg_catalog'::regnamespace AS g, 11::regnamespace AS h",
    "SELECT to_regtype('int4') AS a, pg_typeof(to_regtype('int4')) AS b, to_regtype('nosuch') AS c",
    "SELECT typname::text AS n, oid::regtype AS t FROM pg_type WHERE oid IN (23, 25, 2205) ORDER BY oid::regtype",
    "SELECT 'rt'::regclass = 'rt'::regclass AS a, 'rt'::regclass < 'pg_class'::regclass AS b, \
     'rt'::regclass || 'x' AS c",
    // Reg input: `-` and digits are OIDs (so `'-1'` is a name), a type
    // modifier is dropped, a missing schema is 3F000.
    "SELECT '-'::regclass AS a, '0'::regtype AS b, '1259'::regclass AS c, 99999::regclass AS d, \
     'varchar(10)'::regtype AS e, 'timestamp(3) with time zone'::regtype AS f, \
     '_int4'::regtype AS g, 'public'::regnamespace::oid AS h, 'pg_class '::regclass AS i",
    "SELECT to_regclass('rt') AS a, to_regclass('nosuch') AS b, to_regclass('nosuch.rt') AS c, \
     to_regnamespace('public') AS d, to_regnamespace('nosuch') AS e, \
     pg_typeof(to_regclass('rt')) AS f, to_regtype('varchar(10)') AS g",
    // A cast is named after its type unless what it casts has a name.
    "SELECT 1::int4, 1::integer, 1::bigint, 1::float, 1::double precision, 1::numeric(5,2), \
     'x'::char(3), 'x'::character varying, 'x'::text, 'rt'::regclass, 'int4'::regtype, \
     'public'::regnamespace, '{1}'::int[], date '2024-01-01', CAST('1' AS real), 1::oid",
    "SELECT id::text, CAST(t AS varchar), id::regclass, (id + 1)::text, t::text::varchar, \
     CASE WHEN true THEN 1 ELSE id END, CASE WHEN true THEN 1 END::text, length(t)::text \
     FROM rt ORDER BY rt.id",
    "SELECT array_position(ARRAY[1, 2, NULL, 2], 2) AS a, array_position(ARRAY[1, 2, NULL, 2], 2, 3) AS b, \
     array_position(ARRAY[1, NULL], NULL) AS c, array_position(ARRAY[1], 5) AS d, \
     array_positions(ARRAY[1, 2, NULL, 2], 2) AS e, array_positions(ARRAY['a', 'b', 'a'], 'a') AS f, \
     array_remove(ARRAY[1, 2], 1) AS g, array_position(NULL::int[], 1) AS h",
    // Catalog identifiers are `name` (OID 19), cut to 63 bytes on input;
    // || and functions over them give text.
    "SELECT relname, 'abc'::name AS n, pg_typeof(relname) AS t, relname || 'x' AS c, \
     upper(relname) AS u, coalesce(relname, 'x') AS co, relname = 'rt'::text AS eq \
     FROM pg_class WHERE relname = 'rt'",
    "SELECT repeat('x', 70)::name AS a, length(repeat('é', 40)::name) AS b, \
     octet_length(repeat('é', 40)::name) AS c, 'abc'::text::name AS d, 'abc'::name::text AS e, \
     CAST('ab' AS name) AS f, 'ab'::name < 'b'::name AS g",
    "SELECT a.attname, t.typname, n.nspname FROM pg_attribute a \
     JOIN pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = t.typnamespace \
     WHERE a.attrelid = 'rt'::regclass AND a.attnum > 0 ORDER BY a.attnum",
    "SELECT array_agg(relname) AS a FROM pg_class WHERE relname = 'rt'",
    // A quoted literal takes the other branch's type.
    "SELECT 'x' AS a UNION SELECT relname FROM pg_class WHERE relname = 'rt' ORDER BY 1",
    "SELECT relname AS a, 1 AS b FROM pg_class WHERE relname = 'rt' UNION ALL SELECT 'y', '2' ORDER BY 1",
    "SELECT * FROM (VALUES ('a', NULL), ('b'::name, 2.5)) v(a, b) ORDER BY 1",
    "SELECT CASE WHEN id > 0 THEN 'a' ELSE relname END AS a, coalesce(NULL, id) AS b \
     FROM rt, pg_class WHERE relname = 'rt' ORDER BY 1, 2",
    // char(n) of different lengths is bpchar, each value padded to its own
    // length; as text (a cast, ||) it has no trailing blanks.
    "SELECT c1 AS a FROM rc UNION ALL SELECT c3 FROM rc UNION ALL SELECT 'zz' ORDER BY 1",
    "SELECT CASE WHEN id = 1 THEN c1 ELSE c3 END AS a, coalesce(c1, c3) AS b, c3 || '|' AS c, \
     c3::text AS d, ARRAY[c1, c3] AS e FROM rc ORDER BY id",
    // regclass beside oid stays regclass: the OID takes its name.
    "SELECT 'pg_class'::regclass AS a UNION SELECT 1259::oid",
    "VALUES ('pg_class'::regclass), (1259::oid), ('pg_type')",
    // text || anynonarray: the operand's own text; no || between non-strings.
    "SELECT 'x' || true AS a, 1 || 'x' AS b, 'x' || DATE '2024-01-02' AS c, 'x' || 1.50 AS d",
    "SELECT 1 || 2",
    // A recursive query's type is its anchor's.
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1.5 FROM r WHERE n < 3) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1::bigint UNION ALL SELECT (n + 1)::int FROM r WHERE n < 3) \
     SELECT * FROM r",
    // Catalog functions' types: name, name[].
    "SELECT current_schemas(false) AS a UNION ALL SELECT ARRAY['x'::name] ORDER BY 1",
    "SELECT pg_typeof(current_user) AS a, current_schema() AS b, \
     pg_typeof(pg_get_userbyid(10)) AS c, pg_typeof(current_database()) AS d",
    // A USING join's merged column has the common type of both sides
    // (the left one's when they agree), its sides their own.
    "SELECT * FROM rt JOIN (SELECT id, t AS u FROM rt) s USING (id) ORDER BY id",
    "SELECT * FROM rt FULL JOIN (SELECT id, b AS c FROM rt) s USING (id) ORDER BY id",
    "SELECT id, rt.id AS l, s.id AS r FROM rt JOIN (SELECT b AS id FROM rt) s USING (id)",
    "SELECT * FROM (SELECT s AS k, v AS w FROM rt) x NATURAL JOIN (SELECT id AS k, s AS w FROM rt) y",
    "SELECT * FROM (SELECT d AS k FROM rt) x RIGHT JOIN (SELECT f AS k FROM rt) y USING (k)",
    "SELECT k, j.k AS jk FROM ((SELECT v AS k FROM rt) x FULL JOIN (SELECT id AS k FROM rt) y USING (k)) j ORDER BY 1",
    "SELECT * FROM (SELECT t AS k FROM rt) x JOIN (SELECT t::varchar(10) AS k FROM rt) y USING (k)",
    "SELECT * FROM (SELECT t::varchar(10) AS k FROM rt) x JOIN (SELECT t::varchar(20) AS k FROM rt) y USING (k)",
    "SELECT * FROM (SELECT t::varchar AS k FROM rt) x JOIN (SELECT t AS k FROM rt) y USING (k)",
    "SELECT * FROM (SELECT t::varchar AS k FROM rt) x JOIN (SELECT relname AS k FROM pg_class) y USING (k)",
    "SELECT * FROM (SELECT date '2024-01-01' AS k) x JOIN (SELECT timestamp '2024-01-01' AS k) y USING (k)",
    // int2vector and oidvector subscripts start at 0.
    "SELECT array_lower(indkey, 1) AS kl, array_upper(indkey, 1) AS ku, \
     array_length(indkey, 1) AS kn, array_lower(indclass, 1) AS cl, \
     array_upper(indclass, 1) AS cu, array_length(indclass, 1) AS cn \
     FROM pg_index WHERE indrelid = 'rt'::regclass",
    // Result column names of scalar subqueries and the grammar's special forms.
    "SELECT (SELECT 1 AS x), (SELECT 1), (SELECT max(id) FROM rt), \
     (SELECT t FROM rt WHERE id = 1 UNION SELECT 'z' ORDER BY 1 LIMIT 1), \
     trim(leading 'x' FROM 'xa'), trim(trailing 'a' FROM 'ba'), trim('x' FROM 'xax'), \
     ceil(1.2), ceiling(1.2), floor(1.5), \
     substring('abc' FROM 2 FOR 1), substring('abc', 2)",
];

/// Untyped parameters (node-postgres sends arrays as untyped text): the
/// types the server infers for them, as ParameterDescription reports them.
const PARAMS: &[&str] = &[
    "SELECT id FROM rt WHERE id = ANY($1)",
    "SELECT id FROM rt WHERE b <> ALL($1)",
    "SELECT 'a' = ANY($1) AS a, 1.5 = ANY($2) AS b",
    "SELECT $1 = ANY(ARRAY[1, 2]) AS a",
    "SELECT array_cat(ARRAY[1], $1) AS a",
    "SELECT array_append($1, 2) AS a, array_prepend($2, ARRAY['x']) AS b",
    "SELECT array_remove(ARRAY[1], $1) AS a, array_position($2, 'x') AS b",
    "SELECT array_positions(ARRAY[1.5], $1) AS a",
    "SELECT $1::int[] AS a",
    "SELECT ARRAY[1] @> $1 AS a, ARRAY['x'] || $2 AS b",
    "SELECT relname FROM pg_class WHERE relname = $1",
    // An unknown name in a reg constant fails Parse.
    "SELECT 'nosuch'::regclass AS a, $1::int AS b",
    "SELECT 'nosuch'::regtype AS a, $1::int AS b",
    "SELECT 'nosuch'::regnamespace AS a, $1::int AS b",
    "SELECT 'rt'::regclass AS a, 'int4'::regtype AS b, 'public'::regnamespace AS c, $1::int AS d",
];

/// Statements that fail, compared by their errors in the simple protocol.
const ERRORS: &[&str] = &[
    "SELECT 'nosuch'::regclass",
    "SELECT 'nosuch.rt'::regclass",
    "SELECT 'pg_catalog.nosuch'::regclass",
    "SELECT 'nosuch'::regtype",
    "SELECT 'nosuch'::regnamespace",
    "SELECT '-1'::regclass",
    "SELECT '4294967296'::regclass",
    "SELECT 4294967296::regclass",
    "SELECT array_position(ARRAY[1, 2], 1, NULL)",
];

/// One query: `name type` for each column, then the rows (or the error).
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

async fn run(conn: String) -> Vec<String> {
    let c = connect(&conn).await;
    let mut out = Vec::new();
    for sql in SETUP {
        out.push(format!("{sql} -> {}", outcome(&c, sql, &[]).await));
    }
    for sql in QUERIES {
        out.push(describe(&c, sql).await);
    }
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
    for sql in ERRORS {
        out.push(format!("{sql} -> {}", outcome(&c, sql, &[]).await));
    }
    // `name` in the binary format, both ways: the parameter is typed
    // `name` from the column, the driver sends and reads it in binary.
    let sql = "SELECT relname, $1::name AS n FROM pg_class WHERE relname = $1";
    let got = match c.query_one(sql, &[&"rt"]).await {
        Ok(row) => format!("{} {}", row.get::<_, String>(0), row.get::<_, String>(1)),
        Err(e) => pg_diff::render_error(&e, &[]),
    };
    out.push(format!("{sql} (binary) -> {got}"));
    out
}

#[test]
fn result_types_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare result types") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run(peers.pg_conn()).await;
        let got = run(peers.walden_conn()).await;
        assert_same(&want, &got);
    });
}

const ORIGIN_SETUP: &[&str] = &[
    "CREATE TABLE ro_parent (id serial PRIMARY KEY, code varchar(12) NOT NULL, name text)",
    "CREATE TABLE ro_child (cid int PRIMARY KEY, parent_id int REFERENCES ro_parent (id), tag text)",
];

/// Statements whose result columns are, or are not, plain table columns.
/// (Not here: information_schema's columns, where PostgreSQL names the
/// view, and Walden gives zero.)
const ORIGIN_QUERIES: &[&str] = &[
    "SELECT * FROM ro_parent",
    "SELECT p.id, p.code AS c, (p.name), p.id + 1 AS e, 1 AS k, p.name::text AS n2, \
     ch.tag, ch.cid AS child FROM ro_parent p JOIN ro_child ch ON ch.parent_id = p.id",
    "SELECT code, count(*) AS n, max(id) AS m FROM ro_parent GROUP BY code",
    "SELECT DISTINCT name FROM ro_parent ORDER BY name",
    "SELECT x, y FROM (SELECT id AS x, id * 2 AS y FROM ro_parent) s",
    "WITH c AS (SELECT code, name FROM ro_parent) SELECT c.code, upper(c.name) AS u FROM c",
    "SELECT id FROM ro_parent UNION SELECT cid FROM ro_child",
    "WITH RECURSIVE r(n) AS (SELECT id FROM ro_parent UNION ALL SELECT n + 1 FROM r WHERE n < 3) \
     SELECT n FROM r",
    "SELECT id, (SELECT max(tag) FROM ro_child WHERE parent_id = p.id) AS t FROM ro_parent p",
    "SELECT ro_child.* FROM ro_parent JOIN ro_child ON parent_id = id",
    "SELECT 1 AS one, 'x' AS s",
    "SELECT id, code::varchar AS v, code::varchar(12) AS v12, id::int AS i, id::bigint AS b \
     FROM ro_parent",
    "SELECT a.cid, a.tag, b.tag AS t2 FROM ro_child a LEFT JOIN ro_child b ON a.cid = b.cid",
    "INSERT INTO ro_parent (code) VALUES ('a') RETURNING id, code, id + 1 AS nxt, *",
    "UPDATE ro_child SET tag = 'z' WHERE cid = 0 RETURNING tag, cid",
    "DELETE FROM ro_child WHERE cid = 0 RETURNING *",
    // A USING column is the left side's (the right one's in a RIGHT
    // join), and no column's in a FULL join, where it is a COALESCE.
    "SELECT * FROM ro_parent a JOIN ro_parent b USING (id)",
    "SELECT id, a.id AS l, b.id AS r FROM ro_parent a RIGHT JOIN ro_parent b USING (id)",
    "SELECT *, id AS i FROM ro_parent a FULL JOIN ro_parent b USING (id, code)",
    // Catalog relations: the catalog's OID and PostgreSQL's column number
    // (pg_class.relacl is 31: Walden's pg_class leaves two columns out).
    "SELECT c.relname, c.relkind, c.oid, c.relacl, n.nspname FROM pg_class c \
     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'ro_parent'",
    "SELECT attname, attnum, atttypid FROM pg_attribute WHERE attrelid = 'ro_parent'::regclass",
    "SELECT t.typname AS tn, t.oid FROM pg_catalog.pg_type t WHERE t.typname = 'int4'",
    "SELECT x.relname FROM (SELECT relname FROM pg_class) x WHERE false",
];

/// One statement's result columns as `name table.attnum` (`-` for none),
/// with the table named rather than numbered (OIDs differ between servers).
async fn origins(c: &tokio_postgres::Client, sql: &str) -> String {
    let st = match c.prepare(sql).await {
        Ok(st) => st,
        Err(e) => return format!("{sql}\n  {}", pg_diff::render_error(&e, &[])),
    };
    let mut cols = Vec::new();
    for col in st.columns() {
        let at = match (col.table_oid(), col.column_id()) {
            // A system catalog's OID is fixed (and Walden's pg_class does
            // not list the catalogs themselves).
            (Some(oid), Some(n)) if oid != 0 && oid < 16384 => format!("catalog {oid}.{n}"),
            (Some(oid), Some(n)) if oid != 0 => {
                let q = format!("SELECT relname::text FROM pg_class WHERE oid = {oid}");
                let rel = match c.query_opt(q.as_str(), &[]).await {
                    Ok(Some(row)) => row.get::<_, String>(0),
                    other => format!("unknown relation {oid} ({other:?})"),
                };
                format!("{rel}.{n}")
            }
            (oid, n) => format!("- ({oid:?}, {n:?})"),
        };
        cols.push(format!("{} {at}", col.name()));
    }
    format!("{sql}\n  [{}]", cols.join(", "))
}

async fn run_origins(conn: String) -> Vec<String> {
    let c = connect(&conn).await;
    let mut out = Vec::new();
    for sql in ORIGIN_SETUP {
        out.push(format!("{sql} -> {}", outcome(&c, sql, &[]).await));
    }
    for sql in ORIGIN_QUERIES {
        out.push(origins(&c, sql).await);
    }
    out
}

/// RowDescription's table OID and column number: set, as PostgreSQL sets
/// them, for a column that is a plain reference to a table column (through
/// derived tables and CTEs, in RETURNING), zero for anything else. pgjdbc's
/// ResultSetMetaData (getTableName, isNullable, isAutoIncrement) reads them.
#[test]
fn column_origins_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare column origins") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_origins(peers.pg_conn()).await;
        let got = run_origins(peers.walden_conn()).await;
        assert_same(&want, &got);
    });
}
