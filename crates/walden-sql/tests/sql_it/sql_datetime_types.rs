//! timestamptz, time, interval, char(n) and numeric(p,s) as PostgreSQL 15
//! has them (every expected value below is what PostgreSQL 15 printed for
//! the same statement): the session TimeZone on input and output, date
//! arithmetic across DST, date_trunc, extract, age and to_char.

use crate::common;
use common::engine;
use walden_sql::{ErrorKind, SqlSession};

/// The first value as text, converted by the server (`::text`) so it is
/// shown in the session's zone.
fn one(s: &mut SqlSession, sql: &str) -> String {
    let out = s
        .execute_batch(&format!("SELECT ({sql})::text"))
        .pop()
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let v = &out.rows[0][0];
    if v.is_null() {
        "NULL".into()
    } else {
        v.to_string()
    }
}

fn run(s: &mut SqlSession, sql: &str) {
    for r in s.execute_batch(sql) {
        r.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

fn err(s: &mut SqlSession, sql: &str) -> ErrorKind {
    match s.execute_batch(sql).pop().unwrap() {
        Ok(o) => panic!("{sql} succeeded: {}", o.tag),
        Err(e) => e.kind,
    }
}

#[test]
fn timestamptz_follows_the_session_time_zone() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    run(
        &mut s,
        "CREATE TABLE tz (id int PRIMARY KEY, ts timestamptz, l timestamp)",
    );
    run(
        &mut s,
        "INSERT INTO tz VALUES (1, '2024-03-10 12:00:00-05', '2024-01-31 10:00')",
    );
    assert_eq!(one(&mut s, "SELECT ts FROM tz"), "2024-03-10 17:00:00+00");
    run(&mut s, "SET TIME ZONE 'America/New_York'");
    assert_eq!(one(&mut s, "SELECT ts FROM tz"), "2024-03-10 13:00:00-04");
    // A day across the DST change is 23 hours of the instant.
    assert_eq!(
        one(&mut s, "SELECT ts - interval '1 day' FROM tz"),
        "2024-03-09 13:00:00-05"
    );
    assert_eq!(
        one(&mut s, "SELECT l + '1 month' FROM tz"),
        "2024-02-29 10:00:00"
    );
    // A repeated local time is read as standard time, a skipped one moves on.
    assert_eq!(
        one(&mut s, "SELECT '2024-11-03 01:30'::timestamptz"),
        "2024-11-03 01:30:00-05"
    );
    assert_eq!(
        one(&mut s, "SELECT '2024-03-10 02:30'::timestamptz"),
        "2024-03-10 03:30:00-04"
    );
    assert_eq!(
        one(&mut s, "SELECT date_trunc('day', ts) FROM tz"),
        "2024-03-10 00:00:00-05"
    );
    assert_eq!(one(&mut s, "SELECT extract(hour FROM ts) FROM tz"), "13");
    assert_eq!(
        one(
            &mut s,
            "SELECT to_char(ts, 'YYYY-MM-DD HH24:MI:SS OF') FROM tz"
        ),
        "2024-03-10 13:00:00 -04"
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT to_char(ts, 'FMMonth DD, YYYY HH12:MI AM') FROM tz"
        ),
        "March 10, 2024 01:00 PM"
    );
    // A stored instant is unchanged by the zone; a comparison with a
    // timestamp reads the timestamp in the zone.
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM tz WHERE ts = timestamp '2024-03-10 13:00'"
        ),
        "1"
    );
    run(&mut s, "SET TIME ZONE -5");
    assert_eq!(one(&mut s, "SELECT ts FROM tz"), "2024-03-10 12:00:00-05");
    run(&mut s, "SET TIME ZONE 'Asia/Kolkata'");
    assert_eq!(
        one(&mut s, "SELECT ts FROM tz"),
        "2024-03-10 22:30:00+05:30"
    );
    assert_eq!(
        err(&mut s, "SET TIME ZONE 'Nowhere/Bogus'"),
        ErrorKind::InvalidParameter
    );
    run(&mut s, "RESET TIME ZONE");
    assert_eq!(one(&mut s, "SELECT ts FROM tz"), "2024-03-10 17:00:00+00");
    // now() is the transaction's start, a timestamptz.
    run(&mut s, "BEGIN");
    let a = one(&mut s, "SELECT now()");
    let b = one(&mut s, "SELECT current_timestamp");
    assert_eq!(a, b);
    run(&mut s, "COMMIT");
}

#[test]
fn intervals_and_date_arithmetic() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    for (sql, want) in [
        (
            "SELECT interval '1 year 2 months 3 days 4 hours 5 minutes 6 seconds'",
            "1 year 2 mons 3 days 04:05:06",
        ),
        ("SELECT -interval '1 day'", "-1 days"),
        ("SELECT interval '1 hour' * 2.5", "02:30:00"),
        (
            "SELECT CASE WHEN interval '1 mon' = interval '30 days' THEN 'same' END",
            "same",
        ),
        (
            "SELECT '2024-01-02 01:00'::timestamp - '2024-01-01'::timestamp",
            "1 day 01:00:00",
        ),
        ("SELECT time '10:00' + interval '3 hours'", "13:00:00"),
        (
            "SELECT date '2024-01-31' + interval '1 month'",
            "2024-02-29 00:00:00",
        ),
        (
            "SELECT age(date '2024-03-15', date '2023-01-31')",
            "1 year 1 mon 15 days",
        ),
        (
            "SELECT age(timestamp '2024-01-01', timestamp '2024-02-15 10:00')",
            "-1 mons -14 days -10:00:00",
        ),
        (
            "SELECT extract(epoch FROM interval '1 year 2 mons 3 days 04:05:06')",
            "37015506.000000",
        ),
        ("SELECT date_part('dow', date '2024-03-10')", "0"),
        ("SELECT extract(second FROM time '12:34:56.5')", "56.500000"),
        (
            "SELECT date_trunc('week', timestamp '2024-03-14 10:00')",
            "2024-03-11 00:00:00",
        ),
        (
            "SELECT date_trunc('quarter', timestamp '2024-05-14 10:00')",
            "2024-04-01 00:00:00",
        ),
        ("SELECT trim(both 'x' from 'xxaxx')", "a"),
    ] {
        assert_eq!(one(&mut s, sql), want, "{sql}");
    }
    // Numbers format by PostgreSQL's template (checked on PostgreSQL 15).
    assert_eq!(one(&mut s, "SELECT to_char(12.5, '999.99')"), "  12.50");
    // A cast to a precision rounds to it.
    assert_eq!(
        one(&mut s, "SELECT '2020-01-01 10:00:00.1236'::timestamp(3)"),
        "2020-01-01 10:00:00.124"
    );
    assert_eq!(
        err(&mut s, "SELECT 'soon'::interval"),
        ErrorKind::InvalidDatetimeFormat
    );
}

#[test]
fn char_is_padded_and_numeric_keeps_its_scale() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    run(
        &mut s,
        "CREATE TABLE c (id int PRIMARY KEY, c char(5), n numeric(6,2))",
    );
    run(&mut s, "INSERT INTO c VALUES (1, 'ab', 2)");
    // Padded when stored; as text (this helper's cast) without the blanks,
    // as PostgreSQL's char(n)::text.
    assert_eq!(one(&mut s, "SELECT octet_length(c) FROM c"), "5");
    assert_eq!(one(&mut s, "SELECT c FROM c"), "ab");
    assert_eq!(one(&mut s, "SELECT n FROM c"), "2.00");
    assert_eq!(one(&mut s, "SELECT length(c) FROM c"), "2");
    assert_eq!(one(&mut s, "SELECT count(*) FROM c WHERE c = 'ab'"), "1");
    assert_eq!(
        err(&mut s, "INSERT INTO c VALUES (2, 'abcdef', 1)"),
        ErrorKind::StringTooLong
    );
    // Survives a restart of the value codec (stored and read back).
    run(
        &mut s,
        "CREATE TABLE tt (id int PRIMARY KEY, t time, i interval, ts timestamptz)",
    );
    run(
        &mut s,
        "INSERT INTO tt VALUES (1, '23:59:59.999999', '-2 days 05:00', '2000-01-01 00:00+00')",
    );
    assert_eq!(one(&mut s, "SELECT t FROM tt"), "23:59:59.999999");
    assert_eq!(one(&mut s, "SELECT i FROM tt"), "-2 days +05:00:00");
    assert_eq!(one(&mut s, "SELECT ts FROM tt"), "2000-01-01 00:00:00+00");
}
