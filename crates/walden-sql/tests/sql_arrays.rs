//! Set-returning functions in FROM with `WITH ORDINALITY`, and arrays.
//! Every expected value below is what PostgreSQL 15 printed for the same
//! statement (`psql -A`), header line first.

mod common;
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
