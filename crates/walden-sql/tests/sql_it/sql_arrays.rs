//! Set-returning functions in FROM with `WITH ORDINALITY`, and arrays.
//! Every expected value below is what PostgreSQL 15 printed for the same
//! statement (`psql -A`), header line first.

use crate::common;
use common::engine;
use walden_sql::{ErrorKind, SqlSession};

/// The header (column names) and every row of the last statement's result,
/// columns joined with `|` (NULL as empty), as `psql -A` prints them.
fn table(s: &mut SqlSession, sql: &str) -> String {
    let out = s
        .execute_batch(sql)
        .pop()
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut lines = vec![out
        .columns
        .as_ref()
        .map(|cs| {
            cs.iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
                .join("|")
        })
        .unwrap_or_default()];
    for r in &out.rows {
        lines.push(
            r.iter()
                .map(|v| {
                    if v.is_null() {
                        String::new()
                    } else {
                        v.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("|"),
        );
    }
    lines.join("\n")
}

fn err(s: &mut SqlSession, sql: &str) -> walden_sql::SqlError {
    match s.execute_batch(sql).pop().unwrap() {
        Ok(o) => panic!("{sql} succeeded: {}", o.tag),
        Err(e) => e,
    }
}

#[test]
fn with_ordinality_numbers_function_rows() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    for (sql, want) in [
        (
            "select * from generate_series(1,3) with ordinality",
            "generate_series|ordinality\n1|1\n2|2\n3|3",
        ),
        // The filter applies after numbering: the numbers do not move.
        (
            "select * from generate_series(10,30,10) with ordinality as t(v, n) where n > 1",
            "v|n\n20|2\n30|3",
        ),
        (
            "select * from unnest('{a,b,NULL}'::text[]) with ordinality",
            "unnest|ordinality\na|1\nb|2\n|3",
        ),
        (
            "select * from pg_catalog.unnest('{x,y}'::text[]) with ordinality as u(e, i) order by i desc",
            "e|i\ny|2\nx|1",
        ),
        (
            "select * from unnest('{a,b}'::text[], '{1,2,3}'::text[]) with ordinality as x(p,q,r)",
            "p|q|r\na|1|1\nb|2|2\n|3|3",
        ),
        (
            "select * from jsonb_array_elements('[1,\"x\"]') with ordinality",
            "value|ordinality\n1|1\n\"x\"|2",
        ),
        (
            "select * from jsonb_each('{\"a\":1}') with ordinality as j(k)",
            "k|value|ordinality\na|1|1",
        ),
        (
            "select * from generate_series(1,2) with ordinality as t",
            "t|ordinality\n1|1\n2|2",
        ),
        (
            "select t.ordinality, t.generate_series * 2 as d from generate_series(5,6) with ordinality t(generate_series)",
            "ordinality|d\n1|10\n2|12",
        ),
        // Without it there is no extra column.
        (
            "select * from generate_series(1,2) as g",
            "g\n1\n2",
        ),
    ] {
        assert_eq!(table(&mut s, sql), want, "{sql}");
    }
    // A table has no ordinality: a syntax error, as in PostgreSQL.
    s.execute_batch("create table t (a int primary key)");
    let e = err(&mut s, "select * from t with ordinality");
    assert_eq!(e.kind, ErrorKind::Syntax, "{e}");
}

/// Array columns, literals, operators and functions: each statement's
/// result as PostgreSQL 15 printed it, or its error class. Forms Walden
/// refuses (several dimensions, explicit bounds, array_agg of arrays) are
/// 0A000 here.
#[test]
fn arrays_behave_as_postgresql() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    let cases: &[(&str, Result<&str, ErrorKind>)] = &[
        (
            r#"create table a (id int primary key, xs int[], ts text[], ns numeric(6,2)[], vs varchar(5)[])"#,
            Ok(r#""#),
        ),
        (
            r#"insert into a values (1, '{1,2,3}', '{a,"b c",NULL}', '{1.5,2}', '{x,yy}'), (2, ARRAY[4,NULL], ARRAY['q'], NULL, '{}'), (3, '{}', '{}', '{3}', NULL)"#,
            Ok(r#""#),
        ),
        (
            r#"select * from a order by id"#,
            Ok(r#"id|xs|ts|ns|vs
1|{1,2,3}|{a,"b c",NULL}|{1.50,2.00}|{x,yy}
2|{4,NULL}|{q}||{}
3|{}|{}|{3.00}|"#),
        ),
        (
            r#"select id, xs[1], xs[2], xs[5], ts[2], cardinality(xs), array_length(xs, 1), array_upper(xs, 1), array_lower(xs, 1), array_length(xs, 2) from a order by id"#,
            Ok(
                r#"id|xs|xs|xs|ts|cardinality|array_length|array_upper|array_lower|array_length
1|1|2||b c|3|3|3|1|
2|4||||2|2|2|1|
3|||||0||||"#,
            ),
        ),
        (
            r#"select id from a where 2 = any(xs) order by id"#,
            Ok(r#"id
1"#),
        ),
        (
            r#"select id from a where 4 <> all(xs) order by id"#,
            Ok(r#"id
1
3"#),
        ),
        (
            r#"select id from a where xs @> '{1,3}' order by id"#,
            Ok(r#"id
1"#),
        ),
        (
            r#"select id from a where xs <@ '{1,2,3,4}' order by id"#,
            Ok(r#"id
1
3"#),
        ),
        (
            r#"select id from a where xs && ARRAY[3,4] order by id"#,
            Ok(r#"id
1
2"#),
        ),
        (
            r#"select id, xs || 9, 0 || xs, xs || ARRAY[7,8], xs || '{10}' from a order by id"#,
            Ok(r#"id|?column?|?column?|?column?|?column?
1|{1,2,3,9}|{0,1,2,3}|{1,2,3,7,8}|{1,2,3,10}
2|{4,NULL,9}|{0,4,NULL}|{4,NULL,7,8}|{4,NULL,10}
3|{9}|{0}|{7,8}|{10}"#),
        ),
        (
            r#"select array_to_string(ts, ','), array_to_string(ts, ',', '*'), array_to_string(xs, '-') from a order by id"#,
            Ok(r#"array_to_string|array_to_string|array_to_string
a,b c|a,b c,*|1-2-3
q|q|4
||"#),
        ),
        (
            r#"select string_to_array('a,b,,c', ','), string_to_array('a,b,,c', ',', ''), string_to_array('abc', NULL), string_to_array('', ','), string_to_array('abc', '')"#,
            Ok(
                r#"string_to_array|string_to_array|string_to_array|string_to_array|string_to_array
{a,b,"",c}|{a,b,NULL,c}|{a,b,c}|{}|{abc}"#,
            ),
        ),
        (
            r#"select array_agg(id order by id desc) from a"#,
            Ok(r#"array_agg
{3,2,1}"#),
        ),
        (
            r#"select array_agg(x) from (values (1), (NULL), (3)) v(x)"#,
            Ok(r#"array_agg
{1,NULL,3}"#),
        ),
        (
            r#"select array_agg(id) from a where id > 10"#,
            Ok(r#"array_agg
"#),
        ),
        (
            r#"select * from unnest(ARRAY[10,20,NULL]) with ordinality as u(v, n) where v > 10 or v is null"#,
            Ok(r#"v|n
20|2
|3"#),
        ),
        (
            r#"select u.v + 1 from unnest('{5,6}'::int[]) u(v)"#,
            Ok(r#"?column?
6
7"#),
        ),
        (
            r#"select xs from a where xs = '{1,2,3}'"#,
            Ok(r#"xs
{1,2,3}"#),
        ),
        (
            r#"select xs, xs < '{1,3}', xs > '{}' from a order by xs"#,
            Ok(r#"xs|?column?|?column?
{}|t|f
{1,2,3}|t|t
{4,NULL}|f|t"#),
        ),
        (
            r#"select ARRAY[1,2] = ARRAY[1,2], ARRAY[1,2] < ARRAY[1,2,0], ARRAY[2] > ARRAY[1,9], ARRAY[NULL::int] > ARRAY[5]"#,
            Ok(r#"?column?|?column?|?column?|?column?
t|t|t|t"#),
        ),
        (
            r#"select '{1,2}'::int[] as i, '{"a b", c}'::text[] as t, '{t,f,NULL}'::bool[] as b, '{1.5,NaN}'::float8[] as f, '{2024-01-02}'::date[] as d, '{"2024-01-02 03:04:05"}'::timestamp[] as ts"#,
            Ok(r#"i|t|b|f|d|ts
{1,2}|{"a b",c}|{t,f,NULL}|{1.5,NaN}|{2024-01-02}|{"2024-01-02 03:04:05"}"#),
        ),
        (
            r#"select '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}'::uuid[] as u, ARRAY[1::bigint, 2], ARRAY['x', 'y'], ARRAY[1.5, 2]"#,
            Ok(r#"u|array|array|array
{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}|{1,2}|{x,y}|{1.5,2}"#),
        ),
        (
            r#"select array(select id from a order by id)"#,
            Ok(r#"array
{1,2,3}"#),
        ),
        (r#"select '{1,2'::int[]"#, Err(ErrorKind::InvalidText)),
        (
            r#"select '{{1,2},{3,4}}'::int[]"#,
            Ok("int4\n{{1,2},{3,4}}"),
        ),
        (r#"select '{1,x}'::int[]"#, Err(ErrorKind::InvalidText)),
        (r#"select '[0:1]={1,2}'::int[]"#, Ok("int4\n[0:1]={1,2}")),
        (r#"create table b (k int[] primary key, v text)"#, Ok(r#""#)),
        (
            r#"insert into b values ('{1,2}', 'a'), ('{1}', 'b'), ('{1,NULL}', 'c'), ('{}', 'd')"#,
            Ok(r#""#),
        ),
        (
            r#"select * from b order by k"#,
            Ok(r#"k|v
{}|d
{1}|b
{1,2}|a
{1,NULL}|c"#),
        ),
        (
            r#"select v from b where k = '{1,NULL}'"#,
            Ok(r#"v
c"#),
        ),
        (
            r#"insert into b values ('{1,2}', 'dup')"#,
            Err(ErrorKind::UniqueViolation),
        ),
        (
            r#"select pg_typeof(xs), pg_typeof(ts), pg_typeof(xs[1]) from a where id = 1"#,
            Ok(r#"pg_typeof|pg_typeof|pg_typeof
integer[]|text[]|integer"#),
        ),
        (r#"select ARRAY[1,2] || '3'"#, Err(ErrorKind::InvalidText)),
        (
            r#"select id, xs from a where xs is null or cardinality(xs) = 0 order by id"#,
            Ok(r#"id|xs
3|{}"#),
        ),
        (r#"create table c (m int[][])"#, Ok("")),
        // PostgreSQL: 2202E (the rows' arrays differ in dimensions);
        // Walden refuses every array_agg of arrays for now.
        (
            r#"select array_agg(xs) from a"#,
            Err(ErrorKind::FeatureNotSupported),
        ),
        // Two-dimensional, as PostgreSQL's (values checked on PostgreSQL 15).
        (
            r#"select cardinality(ARRAY[[1,2],[3,4]])"#,
            Ok("cardinality\n4"),
        ),
        (
            r#"select 3 = any(ARRAY[ARRAY[1,2], ARRAY[3,4]])"#,
            Ok("?column?\nt"),
        ),
        (
            r#"select ARRAY[xs, xs] from a order by id"#,
            Ok("array\n{{1,2,3},{1,2,3}}\n{{4,NULL},{4,NULL}}\n{}"),
        ),
        (
            r#"select xs || '{10}' from a where id = 1"#,
            Ok(r#"?column?
{1,2,3,10}"#),
        ),
        (
            r#"select id from a where xs @> '{2}' and ts && '{q,a}'"#,
            Ok(r#"id
1"#),
        ),
        (
            r#"select '{1,2}'::int[] @> '{1}', '{"a":1}'::jsonb @> '{"a":1}'"#,
            Ok(r#"?column?|?column?
t|t"#),
        ),
        (
            r#"select typname, typelem::regtype, typarray::regtype, typcategory from pg_type where typname in ('_int4', 'int4', '_text') order by typname"#,
            Ok(r#"typname|typelem|typarray|typcategory
_int4|integer|-|A
_text|text|-|A
int4|-|integer[]|N"#),
        ),
        (
            r#"select attname, atttypid::regtype, attndims, format_type(atttypid, atttypmod) from pg_attribute where attrelid = 'a'::regclass and attnum > 0 order by attnum"#,
            Ok(r#"attname|atttypid|attndims|format_type
id|integer|0|integer
xs|integer[]|1|integer[]
ts|text[]|1|text[]
ns|numeric[]|1|numeric(6,2)[]
vs|character varying[]|1|character varying(5)[]"#),
        ),
        (
            r#"select column_name, data_type from information_schema.columns where table_name = 'a' order by ordinal_position"#,
            Ok(r#"column_name|data_type
id|integer
xs|ARRAY
ts|ARRAY
ns|ARRAY
vs|ARRAY"#),
        ),
        (
            r#"select '_text'::regtype::oid as oid, pg_typeof(ARRAY[1.5]), pg_typeof(ARRAY['a'::varchar])"#,
            Ok(r#"oid|pg_typeof|pg_typeof
1009|numeric[]|character varying[]"#),
        ),
        (
            r#"select array_append(NULL::int[], 3), array_cat(NULL, ARRAY[1]), array_prepend(1, NULL), array_append(ARRAY[1], NULL)"#,
            Ok(r#"array_append|array_cat|array_prepend|array_append
{3}|{1}|{1}|{1,NULL}"#),
        ),
    ];
    for (sql, want) in cases {
        match want {
            Ok(want) => assert_eq!(table(&mut s, sql), *want, "{sql}"),
            Err(kind) => assert_eq!(err(&mut s, sql).kind, *kind, "{sql}"),
        }
    }
}
