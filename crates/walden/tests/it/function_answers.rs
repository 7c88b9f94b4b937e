//! Built-in function answers compared with a scratch PostgreSQL 15:
//! `to_char` of dates, times and intervals (an infinite timestamp gave
//! text, `SSSS`, `FF1`..`FF6`, `of`/`tzh` were copied through, many
//! patterns were refused), interval input (fractional years spilled into
//! days, a unit given twice was accepted, SQL-standard and ISO 8601
//! alternative forms were refused), `regexp_replace` with N and `g`, the
//! trigonometric functions, the binary string functions, `IntervalStyle`
//! (only `postgres` was accepted) and quoted window frame offsets
//! (`'1 year'::interval PRECEDING` was a syntax error); `NaN / 0`,
//! `count()` and a subscript on a scalar as PostgreSQL answers them.

use crate::pg_diff;

use pg_diff::{block_on_within, connect, Peers};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "SET TimeZone = 'PST8PDT'",
    "CREATE TABLE ts (d timestamp, z timestamptz)",
    "INSERT INTO ts VALUES ('1997-02-10 17:32:01.4', '1997-02-10 17:32:01.4-08'), \
     ('2001-09-22 18:19:20', '2001-09-22 18:19:20+00'), ('infinity', '-infinity'), \
     ('0097-02-16 BC', '0097-02-16 BC'), ('2000-01-02 00:00:00.789012', '2000-12-31 23:59:59.999')",
    "SELECT to_char(d, 'DAY Day day DY Dy dy MONTH Month month RM MON Mon mon'), \
     to_char(z, 'DAY Day day DY Dy dy MONTH Month month RM MON Mon mon') FROM ts ORDER BY d",
    "SELECT to_char(d, 'FMDAY FMDay FMday FMMONTH FMMonth FMmonth FMRM') FROM ts ORDER BY d",
    "SELECT to_char(d, 'Y,YYY YYYY YYY YY Y CC Q MM WW DDD DD D J'), \
     to_char(d, 'FMY,YYY FMYYYY FMYYY FMYY FMY FMCC FMQ FMMM FMWW FMDDD FMDD FMD FMJ') \
     FROM ts ORDER BY d",
    "SELECT to_char(d, 'HH HH12 HH24 MI SS SSSS'), to_char(z, 'hh24:mi:ss sssss') \
     FROM ts ORDER BY d",
    "SELECT to_char(d, E'\"HH:MI:SS is\" HH:MI:SS \"\\\\\"text between quote marks\\\\\"\"') \
     FROM ts ORDER BY d",
    "SELECT to_char(d, 'YYYYTH YYYYth Jth DDth MMTH') FROM ts ORDER BY d",
    "SELECT to_char(d, 'YYYY A.D. YYYY a.d. YYYY bc HH:MI:SS P.M. HH:MI:SS p.m. HH:MI:SS pm') \
     FROM ts ORDER BY d",
    "SELECT to_char(d, 'IYYY IYY IY I IW IDDD ID'), to_char(d, 'FMIYYY FMIW FMIDDD') \
     FROM ts ORDER BY d",
    "SELECT to_char(d, 'FF1 FF2 FF3 FF4 FF5 FF6  ff1 ff2 ff3 ff4 ff5 ff6  MS US') \
     FROM ts ORDER BY d",
    "SELECT to_char(z, 'TZ tz OF TZH:TZM') FROM ts ORDER BY d",
    "SELECT to_char(date '2024-03-01', 'YYYY-MM-DD Day'), to_char(NULL::timestamp, 'YYYY')",
    "SELECT timestamp(2) '2024-01-02 03:04:05.678', timestamp(0) with time zone '2024-01-02 03:04:05.5+00', \
     time(1) '10:00:00.25', pg_typeof(timestamp(2) '2024-01-02')",
    "SELECT i, to_char(i * interval '1mon', 'rm'), to_char(i * interval '1mon', 'RM') \
     FROM generate_series(-13, 13) i",
    "SELECT to_char(interval '1 year 2 mons 3 days 04:05:06.789', 'YYYY MM DD HH24 MI SS MS')",
    "SELECT to_char(interval '1 mon', 'Month')",
    "SET TimeZone = '+02:00'",
    "SELECT to_char(timestamptz '2024-01-01 00:00:00+00', 'OF TZH:TZM of tzh:tzm')",
    "SET TimeZone = '-04:30'",
    "SELECT to_char(timestamptz '2024-01-01 00:00:00+00', 'OF TZH:TZM')",
    "SET TimeZone = 'UTC'",
    "SET TimeZone = 'PST8PDT'",
    "SELECT date_trunc('day', timestamptz '2001-02-16 20:38:40+00', 'Australia/Sydney'), \
     date_trunc('day', timestamptz '2001-02-16 20:38:40+00', 'GMT'), \
     date_trunc('month', timestamptz '2001-02-16 20:38:40+00', 'Asia/Tokyo'), \
     date_trunc('hour', timestamptz '2001-02-16 20:38:40+00', '+05:30')",
    "SELECT date_trunc('day', timestamptz '2001-02-16 20:38:40+00', 'No/Such_Zone')",
    "SELECT date_trunc('millisecond', timestamp '2020-02-29 15:44:17.71393'), \
     date_trunc('microsecond', timestamp '2020-02-29 15:44:17.71393'), \
     date_trunc('mins', timestamp '2020-02-29 15:44:17.71393'), \
     date_part('msec', timestamp '2020-02-29 15:44:17.71393'), \
     date_part('usec', timestamptz '2020-02-29 15:44:17.71393+00'), \
     extract(hrs from interval '3 days 04:05:06')",
    "SELECT extract(fortnight from interval '2 days')",
    "SELECT extract(timezone from timestamp '2020-01-01')",
    "SET IntervalStyle = sql_standard",
    "SELECT interval '-23 hours 45 min 12.34 sec', interval '-1 day 23 hours 45 min 12.34 sec', \
     interval '-1 year 2 months 1 day 23 hours 45 min 12.34 sec', \
     interval '-1 year 2 months 1 day 23 hours 45 min +12.34 sec'",
    "RESET IntervalStyle",
    "SET TimeZone = 'UTC'",
    // Abbreviations whose meaning changed (Moscow: +03, +04 from 2011-03-27, +03 from 2014-10-26).
    "SELECT '2011-03-26 21:00:00 MSK'::timestamptz, '2011-03-27 02:00:00 MSK'::timestamptz, \
     '2011-03-27 04:00:00 MSK'::timestamptz, '2014-10-26 00:00:00 MSK'::timestamptz, \
     '2014-10-26 02:00:00 MSK'::timestamptz, '2020-06-01 12:00 MSK'::timestamptz, \
     '2020-06-01 12:00 VET'::timestamptz, '2005-06-01 12:00 VET'::timestamptz",
    "SELECT '2011-03-27 02:00:00'::timestamp AT TIME ZONE 'MSK', \
     '2014-10-26 00:59:59'::timestamp AT TIME ZONE 'MSK', \
     '2011-03-26 23:00:00 UTC'::timestamptz AT TIME ZONE 'MSK', \
     '2014-10-25 21:59:59 UTC'::timestamptz AT TIME ZONE 'msk'",
    // Interval input.
    "SELECT '1.1 years'::interval, '1.5 months'::interval, '1.25 years'::interval, \
     '0.7 decades'::interval, '1.5 weeks'::interval, '1.1 days 1.5 hours'::interval",
    "SELECT '1 day 1 day'::interval",
    "SELECT '1 second 2 seconds'::interval",
    "SELECT '5.5 seconds 3 milliseconds'::interval",
    "SELECT '1:20:05 5 microseconds'::interval",
    "SELECT interval '-1 +02:03', interval '1-2', interval '+1 -1:00:00', \
     interval '-1 +1:00:00', interval '+1-2 -3 +4:05:06.789', interval '-1-2 +3 -4:05:06.789'",
    "SELECT interval '1-2' year to month, interval '1 2' day to hour, \
     interval '1 2:03:04' day to hour, interval '1 2:03' day to minute, \
     interval '1 2:03:04' day to second, interval '1 2:03' minute to second, \
     interval '1 -2:03' minute to second, interval '123 11' day to hour",
    "SELECT interval '1 2:03.4567' day to second(2), interval '1 2:03:04.5678' hour to second(2)",
    "SELECT interval 'P1.1Y0M3DT4H5M6S', interval 'P.1Y0M3DT4H5M6S', interval 'P10.5e4Y', \
     interval 'P00021015T103020', interval 'P0002-10-15T10:30:20', interval 'P0002', \
     interval 'P0002-10', interval 'PT10', interval 'PT10:30'",
    "SELECT interval '2562047788.01521550194 hours', interval '-9223372036854775808 microseconds', \
     interval '-2147483648 months -2147483648 days -9223372036854775808 us'",
    "SELECT interval '2147483648 days'",
    "SELECT interval '1 ago 2 days'",
    "SELECT '@ 1 minute'::interval, '3 hours ago'::interval, '5min'::interval, \
     '4 millenniums 5 centuries 4 decades 1 year 4 months 4 days 17 minutes 31 seconds'::interval",
    // regexp_replace: N replaces one match whatever the flags say.
    "SELECT regexp_replace('A PostgreSQL function', 'a|e|i|o|u', 'X', 1, 1, 'g'), \
     regexp_replace('A PostgreSQL function', 'a|e|i|o|u', 'X', 1, 0), \
     regexp_replace('A PostgreSQL function', 'a|e|i|o|u', 'X', 1, 3, 'i'), \
     regexp_replace('A PostgreSQL function', 'a|e|i|o|u', 'X', 3)",
    // Trigonometry.
    "SELECT x, sind(x), cosd(x), tand(x), cotd(x) \
     FROM (VALUES (0), (30), (45), (60), (90), (135), (180), (210), (270), (330), (360), (-45)) t(x)",
    "SELECT x, asind(x), acosd(x), atand(x) FROM (VALUES (-1), (-0.5), (0), (0.5), (1)) t(x)",
    "SELECT atan2d(1, 0), atan2d(-10, 0), atan2d(0, -10), sin(1), cos(1), tan(1), cot(1), \
     asin(0.5), acos(0.5), atan(1), atan2(1, 2), pi(), degrees(pi()), radians(180)",
    "SELECT sind('infinity'::float8)",
    "SELECT asin(2)",
    "SELECT sin('nan'::float8), pg_typeof(pi())",
    // Binary strings.
    "SELECT encode('\\x1234567890abcdef00', 'hex'), decode('1234567890abcdef00', 'hex'), \
     encode('\\x1234567890abcdef00', 'escape'), decode(encode('\\x1234567890abcdef00', 'escape'), 'escape')",
    "SELECT encode(('\\x' || repeat('1234567890abcdef0001', 7))::bytea, 'base64')",
    "SELECT decode(encode(('\\x' || repeat('1234567890abcdef0001', 7))::bytea, 'base64'), 'base64')",
    "SELECT decode('123', 'hex')",
    "SELECT encode('\\x01', 'rot13')",
    "SELECT sha224(''), sha256('The quick brown fox jumps over the lazy dog.'), \
     sha384('abc'::bytea), sha512('')",
    "SELECT get_bit('\\x1234567890abcdef00'::bytea, 43), set_bit('\\x1234567890abcdef00'::bytea, 43, 0), \
     get_byte('\\x1234567890abcdef00'::bytea, 3), set_byte('\\x1234567890abcdef00'::bytea, 7, 11), \
     bit_count('\\x1234567890'::bytea)",
    "SELECT get_bit('\\x1234567890abcdef00'::bytea, 99)",
    "SELECT set_byte('\\x1234567890abcdef00'::bytea, 99, 11)",
    "SELECT translate('12345', '14', 'ax'), translate('12345', '134', 'a'), translate('', '14', 'ax'), \
     to_hex(256*256*256 - 1), to_hex(-1), to_hex(-1::bigint), to_hex(256::bigint*256*256*256 - 1)",
    "SELECT unistr('\\0064at\\+0000610'), unistr('d\\u0061t\\U000000610'), unistr('a\\\\b')",
    "SELECT unistr('wrong: \\db99')",
    "SELECT unistr('wrong: \\+2FFFFF')",
    "SELECT overlay('abcdef' placing '45' from 4), overlay('yabadoo' placing 'daba' from 5), \
     overlay('yabadoo' placing 'daba' from 5 for 0), overlay('babosa' placing 'ubb' from 2 for 4), \
     overlay('\\x0102030405'::bytea placing '\\xff'::bytea from 2 for 2)",
    "SELECT pg_typeof(decode('00', 'hex')), pg_typeof(to_hex(1)), pg_typeof(bit_count('\\x01'::bytea)), \
     pg_typeof(get_bit('\\x01'::bytea, 0))",
    // IntervalStyle.
    "CREATE TABLE ivs (i interval)",
    "INSERT INTO ivs VALUES ('0'), ('1 year 2 mons'), ('-1 year -2 mons'), ('3 days 04:05:06.5'), \
     ('-3 days -04:05:06.5'), ('1 year 2 mons -3 days 04:05:06.789'), ('-1 day +02:03:00'), \
     ('1 min'), ('-0.1 s'), ('1 s'), ('-1 s'), ('2 hours ago'), ('-1 year 2 mons 1 day 23:45:12.34')",
    "SET IntervalStyle TO postgres_verbose",
    "SELECT i FROM ivs ORDER BY i",
    "SELECT '@ 1 hour 2 mins ago'::interval",
    "SET IntervalStyle TO sql_standard",
    "SELECT i FROM ivs ORDER BY i",
    "SELECT interval '-1 2:03:04', interval '-1-2', interval '1 day -1 hours'",
    "SET IntervalStyle TO iso_8601",
    "SELECT i FROM ivs ORDER BY i",
    "SHOW IntervalStyle",
    "RESET IntervalStyle",
    "SELECT i FROM ivs ORDER BY i",
    // Quoted window frame offsets.
    "CREATE TABLE wf (d date, f float8, n int)",
    "INSERT INTO wf VALUES ('2006-10-01', 1, 1), ('2007-08-01', 2, 2), ('2007-10-01', 3, 3), \
     ('2008-01-01', 'infinity', 4), ('2006-01-01', '-infinity', 5)",
    "SELECT n, sum(n) OVER (ORDER BY d RANGE BETWEEN '1 year'::interval PRECEDING AND '1 year'::interval FOLLOWING) \
     FROM wf ORDER BY n",
    "SELECT n, sum(n) OVER (ORDER BY d DESC RANGE BETWEEN '1 year'::interval FOLLOWING AND '2 years'::interval FOLLOWING) \
     FROM wf ORDER BY n",
    "SELECT n, first_value(n) OVER w, last_value(n) OVER w FROM wf \
     WINDOW w AS (ORDER BY f RANGE BETWEEN 'inf' PRECEDING AND 'inf' FOLLOWING) ORDER BY n",
    "SELECT n, count(*) OVER (ORDER BY d RANGE '1 year'::interval PRECEDING) FROM wf ORDER BY n",
    // Refused as PostgreSQL refuses them (they gave answers).
    "SELECT 'nan'::float8 / '0'::float8, 'nan'::float8 / 0",
    "SELECT 1::float8 / 0",
    "SELECT count() FROM wf",
    "SELECT count() OVER () FROM wf",
    "SELECT count(*), count(n) FROM wf",
    "SELECT (('{{1,2},{3,4}}'::int[])[1])[1]",
    "SELECT ('{{1,2},{3,4}}'::int[])[2][1], (ARRAY[[1,2],[3,4]])[1][2], ('{5,6}'::int[])[2]",
    "SELECT (now())[1]",
];

#[test]
fn function_answers_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare function answers") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = pg_diff::sqlstate_outcomes(&connect(&peers.pg_conn()).await, SCRIPT).await;
        let got = pg_diff::sqlstate_outcomes(&connect(&peers.walden_conn()).await, SCRIPT).await;
        pg_diff::assert_same(&want, &got);
    });
}
