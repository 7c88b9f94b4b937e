use super::*;
use crate::types::{format_date, format_timestamp};

fn date(s: &str) -> Result<String, DatetimeErrorKind> {
    date_in(s).map(format_date).map_err(kind)
}

fn ts(s: &str) -> Result<String, DatetimeErrorKind> {
    timestamp_in(s).map(format_timestamp).map_err(kind)
}

fn time(s: &str) -> Result<i64, DatetimeErrorKind> {
    time_in(s).map_err(kind)
}

fn kind(e: EngineError) -> DatetimeErrorKind {
    match e {
        EngineError::DatetimeInput { kind, .. } => kind,
        other => panic!("{other}"),
    }
}

fn with_order<T>(o: DateOrder, f: impl FnOnce() -> T) -> T {
    let mut z = Zone::utc();
    z.order = o;
    let _g = zone::enter(&z);
    f()
}

use DatetimeErrorKind::{FieldOverflow as Range, Format};

#[test]
fn invalid_fields_are_refused_not_moved() {
    assert_eq!(date("1997-02-29"), Err(Range));
    assert_eq!(date("2001-13-01"), Err(Range));
    assert_eq!(date("2001-04-31"), Err(Range));
    assert_eq!(date("0000-01-01"), Err(Range));
    assert_eq!(date("2000-02-29"), Ok("2000-02-29".into()));
    assert_eq!(ts("1999-01-08 24:00:01"), Err(Range));
    assert_eq!(ts("1999-01-08 24:00:00"), Ok("1999-01-09 00:00:00".into()));
    assert_eq!(ts("1999-01-08 12:60:00"), Err(Range));
    assert_eq!(time("24:00:01"), Err(Range));
    assert_eq!(time("24:00:00"), Ok(86_400 * US));
    assert_eq!(date("banana"), Err(Format));
    assert_eq!(date(""), Err(Format));
    assert_eq!(date("1999-01-08 junk"), Err(Format));
    assert_eq!(
        date("1999-01-08 Mars/Olympus"),
        Err(DatetimeErrorKind::UnknownZone)
    );
}

#[test]
fn bc_and_specials() {
    assert_eq!(date("1999-01-08 BC"), Ok("1999-01-08 BC".into()));
    assert_eq!(date("0001-01-01 BC"), Ok("0001-01-01 BC".into()));
    assert_eq!(date("4714-11-24 BC"), Ok("4714-11-24 BC".into()));
    assert_eq!(date("4714-11-23 BC"), Err(Range));
    assert_eq!(date("5874897-12-31"), Ok("5874897-12-31".into()));
    assert_eq!(date("5874898-01-01"), Err(Range));
    assert_eq!(date("epoch"), Ok("1970-01-01".into()));
    assert_eq!(date("infinity"), Ok("infinity".into()));
    assert_eq!(date("-infinity"), Ok("-infinity".into()));
    assert_eq!(date("J2451187"), Ok("1999-01-08".into()));
    assert_eq!(ts("epoch"), Ok("1970-01-01 00:00:00".into()));
    assert_eq!(
        ts("0044-03-15 12:00 BC"),
        Ok("0044-03-15 12:00:00 BC".into())
    );
    assert_eq!(time("allballs"), Ok(0));
    assert!(date("today").is_ok());
    assert_eq!(date("tomorrow").is_ok(), date("yesterday").is_ok());
}

#[test]
fn other_styles() {
    for s in [
        "January 8, 1999",
        "1/8/1999",
        "1999-Jan-08",
        "08-Jan-1999",
        "Jan-08-1999",
        "19990108",
        "990108",
        "1999.008",
        "1999-01-08",
        "Friday January 8 1999",
        "8 January 1999",
        "99-Jan-08",
    ] {
        let want = if s == "99-Jan-08" {
            Err(Range)
        } else {
            Ok("1999-01-08".into())
        };
        assert_eq!(date(s), want, "{s}");
    }
    assert_eq!(date("1/8/99"), Ok("1999-01-08".into()));
    assert_eq!(date("1/8/69"), Ok("2069-01-08".into()));
    with_order(DateOrder::Dmy, || {
        assert_eq!(date("1/8/1999"), Ok("1999-08-01".into()));
        assert_eq!(date("1999-01-08"), Ok("1999-01-08".into()));
        assert_eq!(date("13/1/1999"), Ok("1999-01-13".into()));
    });
    with_order(DateOrder::Ymd, || {
        assert_eq!(date("99-01-08"), Ok("1999-01-08".into()));
        assert_eq!(date("99-Jan-08"), Ok("1999-01-08".into()));
        assert_eq!(date("1/8/1999"), Err(Range));
    });
    assert_eq!(date("13/1/1999"), Err(Range));
}

#[test]
fn zones() {
    let tz = |s: &str| timestamptz_in(s).map_err(kind);
    let base = tz("2000-01-01 00:00+00").unwrap();
    assert_eq!(
        tz("2000-01-01 00:00 America/New_York"),
        Ok(base + 5 * 3600 * US)
    );
    assert_eq!(tz("2000-01-01 00:00 PST"), Ok(base + 8 * 3600 * US));
    assert_eq!(tz("2000-01-01 00:00-08"), Ok(base + 8 * 3600 * US));
    assert_eq!(
        tz("2000-01-01 00:00+05:30:15"),
        Ok(base - (5 * 3600 + 1815) * US)
    );
    assert_eq!(
        tz("2000-01-01 00:00+0530"),
        Ok(base - 5 * 3600 * US - 1800 * US)
    );
    assert_eq!(tz("2000-01-01T00:00:00Z"), Ok(base));
    assert_eq!(
        tz("2000-01-01 00:00+16"),
        Err(DatetimeErrorKind::ZoneDisplacement)
    );
    assert_eq!(
        tz("2000-01-01 00:00 Mars/Olympus"),
        Err(DatetimeErrorKind::UnknownZone)
    );
    assert_eq!(
        ts("2000-01-01 00:00 America/New_York"),
        Ok("2000-01-01 00:00:00".into())
    );
    assert_eq!(time("04:05:06 PST"), Ok(((4 * 60 + 5) * 60 + 6) * US));
}

#[test]
fn times() {
    assert_eq!(time("04:05"), Ok((4 * 3600 + 5 * 60) * US));
    assert_eq!(time("040506"), Ok((4 * 3600 + 5 * 60 + 6) * US));
    assert_eq!(time("4:05 PM"), Ok((16 * 3600 + 5 * 60) * US));
    assert_eq!(time("12:00 AM"), Ok(0));
    assert_eq!(time("13:00 PM"), Err(Range));
    assert_eq!(
        time("2003-04-12 04:05:06"),
        Ok((4 * 3600 + 5 * 60 + 6) * US)
    );
    assert_eq!(
        time("04:05:06.789"),
        Ok((4 * 3600 + 5 * 60 + 6) * US + 789_000)
    );
    assert_eq!(time("1999-01-08"), Err(Format));
    assert_eq!(
        ts("1999-01-08 04:05:06.5"),
        Ok("1999-01-08 04:05:06.5".into())
    );
    assert_eq!(ts("1999-01-08T040506"), Ok("1999-01-08 04:05:06".into()));
    assert_eq!(ts("19990108 040506"), Ok("1999-01-08 04:05:06".into()));
}
