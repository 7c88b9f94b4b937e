//! Interval answers compared with a scratch PostgreSQL 15: `avg(interval)`
//! (it returned the sum), interval times and divided by fractions on a
//! grid (PostgreSQL cascades a fractional month into days and a fractional
//! day into time, rounded to a microsecond), interval precision and field
//! qualifiers on literals, casts and columns (the precision was ignored),
//! and `DISCARD` (TEMP and PLANS were accepted and did nothing).

use crate::pg_diff;

use pg_diff::{block_on_within, connect, Peers};
use std::time::Duration;

const INTERVALS: &[&str] = &[
    "1 mon",
    "1 day",
    "-1 mon",
    "1 mon 1 day 1 hour",
    "2 years 3 mons 4 days 05:06:07.891234",
    "1 mon -2 days 3 hours",
    "35 days",
    "00:00:00.000001",
    "1 year 2 mons 29 days 23:59:59.999999",
    "-3 mons 10 days -00:00:01.5",
];

const FACTORS: &[&str] = &[
    "0.5",
    "3",
    "-1.5",
    "0.1",
    "7",
    "0.0000001",
    "0.001",
    "2.7",
    "1.0/3",
    "1.0/7",
    "1e-9",
    "123456.789",
];

const SCRIPT: &[&str] = &[
    "SET TimeZone = 'UTC'",
    "CREATE TABLE iv (g int, x interval)",
    "INSERT INTO iv VALUES (1, '1 day'), (1, '2 days 1 hour'), (1, '1 mon'), (2, '-1 day'), \
     (2, NULL), (3, '1 year 1 mon 1 day 00:00:00.000001'), (3, '1 sec'), (3, '3 mons')",
    "SELECT g, avg(x), sum(x), count(x) FROM iv GROUP BY g ORDER BY g",
    "SELECT avg(x), sum(x) FROM iv",
    "SELECT avg(x) FROM iv WHERE false",
    "SELECT pg_typeof(avg(x)), pg_typeof(sum(x)) FROM iv",
    "SELECT g, avg(x) OVER (ORDER BY g, x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM iv \
     ORDER BY g, x",
    "SELECT avg(x) FROM (VALUES (interval '1 mon'), (interval '1 mon'), (interval '1 day')) v(x)",
    "SELECT interval '1 day' / 0",
    "SELECT interval '1 day' / 0.0",
    "SELECT interval '2147483647 mons' * 2",
    "SELECT interval '1 mon' * 'NaN'::float8",
    "SELECT interval '1.234567 s' * 0.5, interval '1 mon' / 3 * 3, 3 * interval '1 day'",
    // Precision and fields.
    "SELECT interval '1.23456 s' second(2), interval '-1.235 s' second(2), \
     interval '1 day 2:03:04.5678' day to second(1), interval '12.5' second(0)",
    "SELECT '1.23456 seconds'::interval(2), CAST('1 day 00:00:01.7' AS interval(0)), \
     '-0.5 s'::interval(0), '0.5 s'::interval(0)",
    "SELECT interval '3' day, interval '3' hour, interval '3' day to hour, \
     interval '3' year, interval '3' minute to second, interval '1.5' year",
    "SELECT interval '1 year 2 mons 3 days 04:05:06.7' year, \
     interval '1 year 2 mons 3 days 04:05:06.7' month, \
     interval '1 year 2 mons 3 days 04:05:06.7' year to month, \
     interval '1 year 2 mons 3 days 04:05:06.7' day, \
     interval '1 year 2 mons 3 days 04:05:06.7' hour, \
     interval '1 year 2 mons 3 days 04:05:06.7' day to minute, \
     interval '1 year 2 mons 3 days 04:05:06.7' hour to second",
    "SELECT interval '1:2' minute to second, interval '1:2' hour to minute, interval '-1:2' minute to second",
    "SELECT '1 day 02:03:04.56'::interval day to minute, \
     '1 day 02:03:04.56'::interval hour to second(1), \
     '1 year 2 mons'::interval year",
    "SELECT x::interval(0), x::interval hour FROM iv ORDER BY g, 1",
    "CREATE TABLE ivp (a interval(1), b interval(0))",
    "INSERT INTO ivp VALUES ('1.25 s', '2.5 s'), ('-1.25 s', '1 day 0.49 s')",
    "SELECT * FROM ivp ORDER BY a",
    "SELECT attname, format_type(atttypid, atttypmod), atttypmod FROM pg_attribute \
     WHERE attrelid = 'ivp'::regclass AND attnum > 0 ORDER BY attnum",
    // DISCARD.
    "CREATE TEMP TABLE dt (a int)",
    "INSERT INTO dt VALUES (1)",
    "DISCARD TEMP",
    "SELECT * FROM dt",
    "CREATE TEMP TABLE dt (a int)",
    "DISCARD TEMPORARY",
    "SELECT * FROM dt",
    "CREATE TEMP TABLE dt (a int)",
    "PREPARE q AS SELECT 1",
    "DISCARD PLANS",
    "EXECUTE q",
    "DISCARD SEQUENCES",
    "DISCARD ALL",
    "SELECT * FROM dt",
    "DEALLOCATE q",
    "DISCARD nothing",
    "BEGIN",
    "DISCARD ALL",
    "ROLLBACK",
    "BEGIN",
    "DISCARD PLANS",
    "COMMIT",
];

fn grid() -> Vec<String> {
    let mut out = Vec::new();
    for i in INTERVALS {
        for op in ["*", "/"] {
            let cols: Vec<String> = FACTORS
                .iter()
                .map(|f| format!("interval '{i}' {op} ({f})"))
                .collect();
            out.push(format!("SELECT {}", cols.join(", ")));
        }
    }
    out
}

#[test]
fn interval_answers_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare interval answers") else {
        return;
    };
    let mut script: Vec<String> = SCRIPT.iter().map(|s| s.to_string()).collect();
    script.extend(grid());
    block_on_within(Duration::from_secs(120), async {
        let want = pg_diff::sqlstate_outcomes(&connect(&peers.pg_conn()).await, &script).await;
        let got = pg_diff::sqlstate_outcomes(&connect(&peers.walden_conn()).await, &script).await;
        pg_diff::assert_same(&want, &got);
        // PostgreSQL drops temporary tables in the open transaction; Walden
        // refuses DISCARD TEMP there rather than ignore it.
        let w = connect(&peers.walden_conn()).await;
        let block = [
            "CREATE TEMP TABLE dt2 (a int)",
            "BEGIN",
            "DISCARD TEMP",
            "ROLLBACK",
            "SELECT count(*) FROM dt2",
        ];
        let got = pg_diff::sqlstate_outcomes(&w, &block).await;
        assert!(got[2].ends_with("-> ERROR 0A000"), "{got:?}");
        assert!(got[4].ends_with("-> 0; ok 1"), "{got:?}");
    });
}
