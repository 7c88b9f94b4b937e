//! `timestamp(p)`, `timestamptz(p)` and `time(p)` keep `p` fractional-second
//! digits (columns on INSERT, UPDATE, DEFAULT, ADD COLUMN and ALTER TYPE;
//! casts), and the date and time constructors and grids (`make_*`,
//! `to_timestamp`, `date_bin`, `justify_*`, `isfinite`), each compared with
//! a scratch PostgreSQL 15. Before, `timestamp(2)` was refused and
//! `timestamptz(2)` accepted with its precision ignored.

use crate::pg_diff;

use pg_diff::{block_on_within, connect, Peers};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "SET TimeZone = 'UTC'",
    "CREATE TABLE tp (a timestamp(2), b timestamptz(0), c time(3), d timestamp(6), \
     e timestamp(0) DEFAULT '2020-01-01 10:00:00.7')",
    "INSERT INTO tp VALUES ('2020-01-01 10:00:00.125', '2020-01-01 10:00:00.5+00', \
     '10:00:00.12345', '2020-01-01 10:00:00.1234567', DEFAULT)",
    "INSERT INTO tp VALUES ('2020-01-01 10:00:00.135', '2020-01-01 10:00:00.49+00', \
     '23:59:59.9999', '2020-01-01 10:00:00.1234565', '1969-12-31 23:59:59.5')",
    "SELECT * FROM tp ORDER BY a",
    "UPDATE tp SET a = a + interval '0.004 s'",
    "SELECT a FROM tp ORDER BY a",
    "SELECT '2020-01-01 10:00:00.125'::timestamp(2), CAST('12:00:00.5' AS time(0)), \
     '2020-01-01 10:00:00.5+00'::timestamptz(0), '1960-01-01 10:00:00.125'::timestamp(2)",
    "SELECT 'infinity'::timestamp(2), '-infinity'::timestamptz(0)",
    "SELECT attname, format_type(atttypid, atttypmod), atttypmod FROM pg_attribute \
     WHERE attrelid = 'tp'::regclass AND attnum > 0 ORDER BY attnum",
    "ALTER TABLE tp ALTER COLUMN d TYPE timestamp(1)",
    "SELECT d FROM tp ORDER BY d",
    "ALTER TABLE tp ADD COLUMN f timestamp(0) DEFAULT '2021-01-01 00:00:00.6'",
    "SELECT f FROM tp",
    "SELECT make_date(2020, 1, 2), make_date(-44, 3, 15), make_time(1, 2, 3.5), make_time(24, 0, 0)",
    "SELECT make_date(2013, 2, 30)",
    "SELECT make_date(0, 7, 15)",
    "SELECT make_timestamp(2014, 12, 28, 6, 30, 45.887), make_timestamp(-44, 3, 15, 12, 30, 15)",
    "SELECT make_timestamptz(1973, 07, 15, 08, 15, 55.33), make_timestamptz(1973, 07, 15, 08, 15, 55.33, '+2'), \
     make_timestamptz(2014, 12, 10, 10, 10, 10, 'Europe/Prague')",
    "SELECT make_interval(days => 3), make_interval(1, 2, 3, 4, 5, 6, 7.5), make_interval(secs => 1.5, hours => 2)",
    "SELECT make_interval(foo => 1)",
    "SELECT round(1.5, x => 1)",
    "SELECT to_timestamp(0), to_timestamp(1284352323.5), to_timestamp('infinity'::float8), to_timestamp(-1.5)",
    "SELECT to_timestamp('NaN'::float8)",
    "SELECT date_bin('15 minutes', timestamp '2020-02-11 15:45:00', timestamp '2020-02-11 16:00:00'), \
     date_bin('15 minutes', timestamp '2020-02-11 15:44:00', timestamp '2020-02-11 16:00:00')",
    "SELECT date_bin('5 min'::interval, timestamptz '2020-02-01 01:01:01+00', timestamptz '2020-02-01 00:02:30+00')",
    "SELECT date_bin('5 months'::interval, timestamp '2020-02-01 01:01:01', timestamp '2001-01-01')",
    "SELECT date_bin('0 days'::interval, timestamp '2020-02-01 01:01:01', timestamp '2001-01-01')",
    "SELECT justify_interval(interval '1 mon -1 hour'), justify_days(interval '35 days'), \
     justify_hours(interval '27 hours'), justify_days(interval '-35 days 1 mon'), \
     justify_hours(interval '-27 hours 2 days')",
    "SELECT justify_interval(interval '2147483647 months 30 days')",
    "SELECT isfinite(date '2020-01-01'), isfinite('infinity'::timestamp), isfinite(interval '1 day')",
];

#[test]
fn time_precision_and_constructors_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare time precisions") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = pg_diff::sqlstate_outcomes(&connect(&peers.pg_conn()).await, SCRIPT).await;
        let got = pg_diff::sqlstate_outcomes(&connect(&peers.walden_conn()).await, SCRIPT).await;
        pg_diff::assert_same(&want, &got);
    });
}
