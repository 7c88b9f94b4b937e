//! PostgreSQL's integer bitwise operators (`&`, `|`, `#`, `~`, `<<`, `>>`)
//! against a scratch PostgreSQL 15 with the same SQL: values, result types
//! per width, precedence beside other operators, shifts past the width,
//! unknown-typed operands and parameters, and the errors for other types.

use crate::pg_diff;

use pg_diff::{assert_same, block_on_within, connect, run_script, Peers};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "CREATE TABLE bw (id int PRIMARY KEY, s smallint, i int, b bigint, t text, n numeric)",
    "INSERT INTO bw VALUES (1, 5, 12, 1099511627775, 'x', 1.5), (2, -32768, -1, -9223372036854775808, NULL, NULL), \
     (3, NULL, 7, NULL, NULL, NULL)",
    "SELECT 12 & 10, 12 | 10, 12 # 10, ~12, 1 << 4, 256 >> 4, -8 >> 1",
    "SELECT id, s & 3, s | 2, s # 1, ~s, s << 1, s >> 1, i & s, b & i, b | s, ~b, b << 3, b >> 40 \
     FROM bw ORDER BY id",
    "SELECT pg_typeof(s & s), pg_typeof(s & 1::smallint), pg_typeof(s & 1), pg_typeof(s | i), \
     pg_typeof(i # b), pg_typeof(~s), pg_typeof(~i), pg_typeof(~b), pg_typeof(s << 1), \
     pg_typeof(s >> 1::smallint), pg_typeof(b << 1), pg_typeof(1 << s) FROM bw WHERE id = 1",
    // Precedence: all of & | # << >> share one level (left to right),
    // below + and -, above comparisons; prefix ~ takes what follows up
    // to an operator of that level.
    "SELECT 5 | 1 & 4, 1 + 2 & 3, 1 & 2 + 3, 1 << 2 + 1, 6 & 3 = 2, 1 | 2 # 3, 8 >> 1 << 2",
    "SELECT ~1 + 2, 1 + ~2 + 3, 2 * ~3 + 4, ~1 + 2 - 3, ~1 & 3, ~ ~5, - ~5, ~(1) + 2",
    "SELECT ~1::smallint, pg_typeof(~1::smallint), ~1 * 2 + 3",
    // Shifts past the width wrap as PostgreSQL's do.
    "SELECT 1 << 31, 1 << 32, 1 << 33, 1 << -1, 1 >> 64, -1 >> 100, 1::bigint << 63, 1::bigint << 64",
    "SELECT 1::smallint << 15, 1::smallint << 16, (-1)::smallint << 15, 1::smallint << -1, \
     (-32768)::smallint >> 20, 255::smallint << 8",
    "SELECT NULL::int & 1, 1 | NULL::int, ~NULL::bigint, NULL::smallint << 2",
    "SELECT 6 & '3', '12' | 1::smallint, pg_typeof('3' & 1::bigint), 1 << '4'",
    "SELECT i FROM bw WHERE i & 4 = 4 ORDER BY i",
    "SELECT sum(i & 3), max(s | 1) FROM bw",
    "SELECT 1 OPERATOR(pg_catalog.&) 3, 4 OPERATOR(pg_catalog.<<) 1",
    // pgjdbc's getIndexInfo: an int2vector element & a smallint.
    "CREATE INDEX bw_ix ON bw (i, s)",
    "SELECT i.indoption[0] & 1::smallint, i.indoption[1] & 1::smallint, \
     pg_typeof(i.indoption[0] & 1::smallint) \
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'bw_ix'",
    // Errors.
    "SELECT 1 << 1::bigint",
    "SELECT 1.5 & 1",
    "SELECT n | 1 FROM bw",
    "SELECT t & 1 FROM bw",
    "SELECT ~t FROM bw",
    "SELECT ~'5'",
    "SELECT '1' & '3'",
    "SELECT true & 1",
];

#[test]
fn bitwise_operators_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare bitwise operators") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, &[]).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, &[]).await;
        assert_same(&want, &got);
        // A parameter beside an integer takes its type.
        let mut typed = Vec::new();
        for conn in [peers.pg_conn(), peers.walden_conn()] {
            let c = connect(&conn).await;
            let mut line = Vec::new();
            for sql in [
                "SELECT $1 & 6",
                "SELECT 1::smallint | $1",
                "SELECT 1::bigint << $1",
            ] {
                let st = c.prepare(sql).await.unwrap();
                line.push(format!(
                    "{sql}: {:?} -> {:?}",
                    st.params(),
                    st.columns()[0].type_()
                ));
            }
            typed.push(line);
        }
        assert_eq!(typed[0], typed[1]);
    });
}
