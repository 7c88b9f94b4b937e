//! Date/time input against a scratch PostgreSQL 15 (issue 32): every
//! input below is cast to date, timestamp, timestamptz and time under
//! three DateStyle field orders and two session zones, and each answer
//! (the value's text, or the error's SQLSTATE) must be PostgreSQL's.
//! Invalid field values must fail with 22008, not move to another date.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect, render_messages, Peers};
use std::time::Duration;

/// Inputs every type is asked to read.
const INPUTS: &[&str] = &[
    // ISO, and what ISO forbids.
    "1999-01-08",
    "1999-1-8",
    "2000-02-29",
    "1997-02-29",
    "1900-02-29",
    "2001-13-01",
    "2001-00-10",
    "2001-04-31",
    "2001-04-00",
    "0000-01-01",
    "0001-01-01",
    "10000-01-01",
    "5874897-12-31",
    "5874898-01-01",
    // (PostgreSQL's last 2,000 years of timestamps, past 292277 AD, are
    // beyond Walden's i64 from 1970 and refused with 22008: not compared.)
    "292276-12-31",
    // BC.
    "1999-01-08 BC",
    "0001-01-01 BC",
    "0044-03-15 BC",
    "4714-11-24 BC",
    "4714-11-23 BC",
    "4713-01-01 BC",
    "0000-01-01 BC",
    "1999-01-08 AD",
    "1999-01-08 BC AD",
    // Other styles.
    "January 8, 1999",
    "Jan 8 1999",
    "8 January 1999",
    "Friday, January 8, 1999",
    "1/8/1999",
    "1/18/1999",
    "18/1/1999",
    "01/02/03",
    "1/8/99",
    "1/8/69",
    "1/8/70",
    "1999-Jan-08",
    "Jan-08-1999",
    "08-Jan-1999",
    "99-Jan-08",
    "08-Jan-99",
    "Jan-08-99",
    "19990108",
    "990108",
    "1999.008",
    "1999.366",
    "2000.366",
    "1999.0080",
    "J2451187",
    "Julian 2451187",
    "j 2451187",
    "1999 Jan 08",
    "1999 08 Jan",
    "Jan 08 1999 BC",
    "February 30, 2001",
    "2001-February-28",
    // Special values.
    "epoch",
    "infinity",
    "-infinity",
    "+infinity",
    "allballs",
    "EPOCH",
    // With times.
    "1999-01-08 04:05:06",
    "1999-01-08 04:05:06.789",
    "1999-01-08 04:05:06.7891234",
    "1999-01-08 4:5:6",
    "1999-01-08 04:05",
    "1999-01-08T04:05:06",
    "1999-01-08t04:05:06",
    "1999-01-08 040506",
    "19990108T040506",
    "19990108 040506",
    "1999-01-08 24:00:00",
    "1999-01-08 24:00:01",
    "1999-01-08 23:59:60",
    "1999-01-08 23:59:61",
    "1999-01-08 23:60:00",
    "1999-01-08 25:00:00",
    "1999-01-08 04:05:06 PM",
    "1999-01-08 11:05:06 am",
    "1999-01-08 12:00 AM",
    "1999-01-08 13:00 PM",
    "January 8 04:05:06 1999",
    "Jan 8 04:05:06 1999 PST",
    "Fri Jan 08 04:05:06 1999 PST",
    "1999-01-08 04:05:06 -8:00",
    "1999-01-08 04:05:06-08",
    "1999-01-08 04:05:06+05:30",
    "1999-01-08 04:05:06+05:30:15",
    "1999-01-08 04:05:06+0530",
    "1999-01-08 04:05:06 +16",
    "1999-01-08 04:05:06+15:59",
    "1999-01-08 04:05:06Z",
    "1999-01-08 04:05:06 UTC",
    "1999-01-08 04:05:06 zulu",
    "1999-01-08 04:05:06 PST",
    "1999-01-08 04:05:06 EDT",
    "1999-01-08 04:05:06 CET",
    "1999-01-08 04:05:06 America/New_York",
    "1999-07-08 04:05:06 America/New_York",
    "1999-01-08 04:05:06 europe/paris",
    "1999-01-08 04:05:06 Asia/Kolkata",
    "1999-01-08 04:05:06 Mars/Olympus",
    "1999-01-08 04:05:06 Japan",
    "1999-01-08 04:05:06 nowhere",
    "2000-01-01 00:00 America/New_York",
    "1800-01-01 00:00 America/New_York",
    "2020-03-08 02:30 America/New_York",
    "2020-11-01 01:30 America/New_York",
    // Times alone.
    "04:05:06",
    "04:05",
    "4:05 PM",
    "04:05:06.789",
    "040506",
    "0405",
    "04:05:06 PST",
    "04:05:06-08:00",
    "24:00:00",
    "24:00:01",
    "23:59:60",
    "12:60",
    "T040506",
    // Not dates or times.
    "",
    " ",
    "banana",
    "1999-01-08 junk",
    "1999--01-08",
    "1999/01/08/",
    "99",
    "1999",
    "January",
    "1999-01",
    "1999-01-08 04:05:06 04:05:06",
    "2147483648-01-01",
    "99999999999-01-01",
    "1999-01-08 99999999999:00",
    "1e10",
    "1999-01-08 +",
];

const TYPES: &[&str] = &["date", "timestamp", "timestamptz", "time"];

/// The statements: each input under each type, for one session setup.
fn script() -> Vec<String> {
    let mut out = Vec::new();
    for setup in [
        "SET DateStyle = 'ISO, MDY'",
        "SET DateStyle = 'ISO, DMY'",
        "SET DateStyle = 'YMD'",
    ] {
        out.push(setup.to_string());
        for zone in [
            "SET TimeZone = 'America/Los_Angeles'",
            "SET TimeZone = 'UTC'",
        ] {
            out.push(zone.to_string());
            for input in INPUTS {
                for ty in TYPES {
                    out.push(format!("SELECT '{input}'::{ty}"));
                }
            }
        }
        out.push("SHOW DateStyle".into());
    }
    // Values that move with the clock: compared to the clock.
    out.extend(
        [
            "SELECT 'today'::date = current_date, 'tomorrow'::date - 'yesterday'::date",
            "SELECT 'today'::timestamp = date_trunc('day', localtimestamp)",
            "SELECT 'yesterday'::timestamptz < now()",
            "BEGIN",
            "SELECT 'now'::timestamptz = now(), 'now'::timestamp = localtimestamp",
            "COMMIT",
            // Stored values keep what was written.
            "CREATE TABLE d (d date, t timestamp, z timestamptz)",
            "INSERT INTO d VALUES ('0001-01-01 BC', '0044-03-15 12:00 BC', '1999-01-08 04:05:06+05:30:15')",
            "INSERT INTO d VALUES ('infinity', '-infinity', 'epoch')",
            "INSERT INTO d VALUES ('1997-02-29', NULL, NULL)",
            "SELECT d, t, z FROM d ORDER BY d",
            "SELECT d < '0001-01-01'::date, t < '0001-01-01'::timestamp FROM d WHERE t IS NOT NULL ORDER BY 1",
            "SELECT count(*) FROM d WHERE d > '1999-01-08'",
            "SET DateStyle = 'ISO, MDY, DMY'",
            "SET DateStyle = 'nonsense'",
            "SET DateStyle = 'ISO, DMY'",
            "SHOW DateStyle",
            "SELECT '1/2/2003'::date",
        ]
        .map(String::from),
    );
    out
}

#[test]
fn date_time_input_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare date/time input") else {
        return;
    };
    let script = script();
    assert!(script.len() > 1000, "{} statements", script.len());
    block_on_within(Duration::from_secs(300), async {
        let want = pg_diff::sqlstate_outcomes(&connect(&peers.pg_conn()).await, &script).await;
        let got = pg_diff::sqlstate_outcomes(&connect(&peers.walden_conn()).await, &script).await;
        pg_diff::assert_same(&want, &got);
    });
}

/// Output styles other than ISO are refused (0A000), not accepted and
/// ignored; PostgreSQL accepts them.
#[test]
fn other_output_styles_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        for style in ["SQL", "Postgres, MDY", "German"] {
            let e = c
                .simple_query(&format!("SET DateStyle = '{style}'"))
                .await
                .expect_err(style);
            assert_eq!(e.as_db_error().unwrap().code().code(), "0A000", "{style}");
        }
        let rows = c.simple_query("SHOW DateStyle").await.unwrap();
        let shown = render_messages(&rows);
        assert!(shown.starts_with("ISO, MDY"), "{shown}");
    });
}

/// extract and date_part of an infinite date or timestamp are ±Infinity
/// (numeric), as in PostgreSQL 15; date_trunc keeps infinity.
#[test]
fn extract_from_infinity_is_infinite() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        let r = c
            .simple_query(
                "SELECT extract(year FROM 'infinity'::date), \
                 date_part('year', '-infinity'::timestamp), \
                 extract(epoch FROM 'infinity'::timestamptz)",
            )
            .await
            .unwrap();
        assert_eq!(render_messages(&r), "Infinity|-Infinity|Infinity; ok 1");
        let rows = c
            .simple_query("SELECT date_trunc('day', 'infinity'::timestamp), date_trunc('year', '-infinity'::timestamptz)")
            .await
            .unwrap();
        assert_eq!(render_messages(&rows), "infinity|-infinity; ok 1");
    });
}
