//! Result types against a scratch PostgreSQL 15: for each query, the type
//! of every column as the server describes it (RowDescription, read
//! through tokio-postgres's prepare) and the rows in the text format.
//! Drivers decode by the described type, so `length()` being `bigint`
//! where PostgreSQL says `integer` breaks a typed read even when the digits
//! agree.

mod pg_diff;
mod server_support;

use pg_diff::{assert_same, block_on_within, connect, outcome, Peers};
use std::time::Duration;

const SETUP: &[&str] = &[
    "CREATE TABLE rt (id int, b bigint, s smallint, v numeric(10,2), f real, d float8, t text)",
    "INSERT INTO rt VALUES (1, 9223372036854775807, 1, 1.10, 1.5, 1.5, 'abc'), \
     (2, 9223372036854775807, 2, 2.25, 2.25, 2.5, 'héllo'), (3, 1, 3, 3, 0.5, 1, NULL)",
    "CREATE INDEX rt_i ON rt (id, b)",
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
    "SELECT pg_typeof(length('x'))::text AS a, pg_typeof(octet_length('x'))::text AS b",
    // int2vector and oidvector subscripts start at 0.
    "SELECT array_lower(indkey, 1) AS kl, array_upper(indkey, 1) AS ku, \
     array_length(indkey, 1) AS kn, array_lower(indclass, 1) AS cl, \
     array_upper(indclass, 1) AS cu, array_length(indclass, 1) AS cn \
     FROM pg_index WHERE indrelid = 'rt'::regclass",
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
