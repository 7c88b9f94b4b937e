//! `to_char` of a timestamp, timestamptz, date or interval: PostgreSQL's
//! template patterns (HH24, Month, IYYY, RM, FF3, TZH, ...), its FM/TH
//! modifiers, quoted text and backslash escapes. An infinite timestamp
//! formats as NULL, as there.

use crate::error::{ErrorKind, Result, SqlError};
use walden_engine::types::datetime::{local_to_tz, tz_offset, tz_to_local};
use walden_engine::types::interval::{DAY_US, US};
use walden_engine::types::{civil_from_days, days_from_civil};
use walden_engine::{DataType, Value};

/// The broken-down time a template is filled from (PostgreSQL's `struct
/// pg_tm`): the year is astronomical (1 BC is 0) for a timestamp, a count of
/// years for an interval.
struct Tm {
    year: i64,
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
    fsec: i64,
    yday: i64,
    /// 0 is Sunday.
    wday: i64,
    /// Days since 1970-01-01 (timestamps only).
    days: i64,
    interval: bool,
    /// Seconds east of UTC, and the zone's abbreviation (timestamptz only).
    gmtoff: i32,
    tzn: Option<String>,
}

/// The keywords, longest first where one is a prefix of another (as
/// PostgreSQL's table is searched). Case matters: `Month`, `MONTH` and
/// `month` differ, while `hh24` and `HH24` are the same field.
const KEYWORDS: &[&str] = &[
    "A.D.", "A.M.", "AD", "AM", "B.C.", "BC", "CC", "DAY", "DDD", "DD", "DY", "Day", "Dy", "D",
    "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "FX", "HH24", "HH12", "HH", "IDDD", "ID", "IW",
    "IYYY", "IYY", "IY", "I", "J", "MI", "MM", "MONTH", "MON", "MS", "Month", "Mon", "OF", "P.M.",
    "PM", "Q", "RM", "SSSSS", "SSSS", "SS", "TZH", "TZM", "TZ", "US", "WW", "W", "Y,YYY", "YYYY",
    "YYY", "YY", "Y", "a.d.", "a.m.", "ad", "am", "b.c.", "bc", "cc", "day", "ddd", "dd", "dy",
    "d", "ff1", "ff2", "ff3", "ff4", "ff5", "ff6", "fx", "hh24", "hh12", "hh", "iddd", "id", "iw",
    "iyyy", "iyy", "iy", "i", "j", "mi", "mm", "month", "mon", "ms", "of", "p.m.", "pm", "q", "rm",
    "sssss", "ssss", "ss", "tzh", "tzm", "tz", "us", "ww", "w", "y,yyy", "yyyy", "yyy", "yy", "y",
];

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
/// Roman month numerals, December first (PostgreSQL's order).
const ROMAN: [&str; 12] = [
    "XII", "XI", "X", "IX", "VIII", "VII", "VI", "V", "IV", "III", "II", "I",
];

/// `to_char(v, fmt)` for a date/time value; NULL for an infinite one.
pub fn to_char(v: &Value, fmt: &str) -> Result<Value> {
    let Some(tm) = broken_down(v)? else {
        return Ok(Value::Null);
    };
    format(&tm, fmt).map(Value::text)
}

fn broken_down(v: &Value) -> Result<Option<Tm>> {
    use walden_engine::types::dtinput::{TIMESTAMP_INFINITY, TIMESTAMP_MINUS_INFINITY};
    let (local, tz) = match v {
        Value::Interval(iv) => {
            let f = iv.fields();
            let (year, mon, mday) = (f.year, f.mon, f.mday);
            return Ok(Some(Tm {
                year,
                mon,
                mday,
                hour: f.hour,
                min: f.min,
                sec: f.sec,
                fsec: f.fsec,
                yday: (year * 12 + mon) * 30 + mday,
                wday: 0,
                days: 0,
                interval: true,
                gmtoff: 0,
                tzn: None,
            }));
        }
        Value::Timestamp(t) | Value::TimestampTz(t)
            if *t == TIMESTAMP_INFINITY || *t == TIMESTAMP_MINUS_INFINITY =>
        {
            return Ok(None)
        }
        Value::Null => return Ok(None),
        // A date, or an untyped literal, is read as a timestamp.
        Value::Date(_) | Value::Text(_) => {
            let v = walden_engine::types::coerce(v.clone(), &DataType::Timestamp)?;
            return broken_down(&v);
        }
        Value::Timestamp(t) => (*t, None),
        Value::TimestampTz(t) => (tz_to_local(*t), Some(*t)),
        other => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function to_char({}, text) does not exist",
                    crate::functions::operators::type_name(other)
                ),
            ))
        }
    };
    let days = local.div_euclid(DAY_US);
    let rem = local.rem_euclid(DAY_US);
    let (y, m, d) = civil_from_days(days);
    let (gmtoff, tzn) = match tz {
        Some(utc) => {
            let off = tz_offset(local_to_tz(local));
            let name = walden_engine::types::zone::with_current(|z| z.abbreviation_at(utc));
            (off, Some(name))
        }
        None => (0, None),
    };
    Ok(Some(Tm {
        year: y,
        mon: m as i64,
        mday: d as i64,
        hour: rem / 3_600_000_000,
        min: rem / 60_000_000 % 60,
        sec: rem / US % 60,
        fsec: rem % US,
        yday: days - days_from_civil(y, 1, 1) + 1,
        wday: (days + 4).rem_euclid(7),
        days,
        interval: false,
        gmtoff,
        tzn,
    }))
}

/// PostgreSQL's ADJUST_YEAR: a BC year shown as a positive number.
fn adjust_year(year: i64, interval: bool) -> i64 {
    if interval || year > 0 {
        year
    } else {
        1 - year
    }
}

/// Day number (days since 1970-01-01) of the Monday starting ISO week 1
/// of ISO year `year`.
fn iso_week1(year: i64) -> i64 {
    let jan4 = days_from_civil(year, 1, 4);
    // Days back from Jan 4 to its Monday (Monday is 0).
    jan4 - (jan4 + 3).rem_euclid(7)
}

/// The ISO year a day belongs to.
fn iso_year(days: i64, year: i64) -> i64 {
    if days >= iso_week1(year + 1) {
        year + 1
    } else if days < iso_week1(year) {
        year - 1
    } else {
        year
    }
}

fn iso_week(days: i64, year: i64) -> i64 {
    (days - iso_week1(iso_year(days, year))) / 7 + 1
}

fn iso_yday(days: i64, year: i64) -> i64 {
    days - iso_week1(iso_year(days, year)) + 1
}

/// The ordinal suffix of a number's text (`1st`, `12th`, `23rd`).
fn ordinal(num: &str, upper: bool) -> &'static str {
    let b = num.as_bytes();
    let last = match b {
        [.., b'1', _] => b'0',
        [.., l] => *l,
        [] => b'0',
    };
    match (last, upper) {
        (b'1', false) => "st",
        (b'2', false) => "nd",
        (b'3', false) => "rd",
        (_, false) => "th",
        (b'1', true) => "ST",
        (b'2', true) => "ND",
        (b'3', true) => "RD",
        (_, true) => "TH",
    }
}

fn invalid_for_interval() -> SqlError {
    SqlError::new(
        ErrorKind::InvalidDatetimeFormat,
        "invalid format specification for an interval value",
    )
}

/// A number zero-padded to `width` (its sign counted), or as is in fill mode.
fn num(v: i64, width: usize, fm: bool) -> String {
    if fm {
        v.to_string()
    } else {
        format!("{v:0width$}")
    }
}

/// Text padded to `width` on the right, or as is in fill mode.
fn pad(s: &str, width: usize, fm: bool) -> String {
    if fm {
        s.to_string()
    } else {
        format!("{s:<width$}")
    }
}

fn case_as(s: &str, key: &str) -> String {
    let first = key.chars().next().unwrap_or('A');
    let second = key.chars().nth(1).unwrap_or('A');
    if first.is_ascii_lowercase() {
        s.to_lowercase()
    } else if second.is_ascii_uppercase() {
        s.to_uppercase()
    } else {
        s.to_string()
    }
}

fn format(tm: &Tm, fmt: &str) -> Result<String> {
    let mut out = String::new();
    let mut rest = fmt;
    while !rest.is_empty() {
        // A prefix modifier: FM (fill mode) or TM (translation; the
        // names are English either way).
        let mut fm = false;
        for p in ["FM", "fm", "TM", "tm"] {
            if let Some(r) = rest.strip_prefix(p) {
                fm |= p.eq_ignore_ascii_case("fm");
                rest = r;
                break;
            }
        }
        if rest.is_empty() {
            break;
        }
        if let Some(key) = KEYWORDS.iter().find(|k| rest.starts_with(**k)) {
            rest = &rest[key.len()..];
            let mut th = None;
            for (p, upper) in [("TH", true), ("th", false), ("SP", false), ("sp", false)] {
                if let Some(r) = rest.strip_prefix(p) {
                    if p.eq_ignore_ascii_case("th") {
                        th = Some(upper);
                    }
                    rest = r;
                    break;
                }
            }
            let (text, numeric) = field(tm, key, fm)?;
            out.push_str(&text);
            if let (Some(upper), true) = (th, numeric) {
                if !text.is_empty() {
                    out.push_str(ordinal(&text, upper));
                }
            }
            continue;
        }
        if let Some(r) = rest.strip_prefix('"') {
            // Quoted text; a backslash quotes the next character.
            let mut chars = r.char_indices();
            let mut end = r.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some((_, n)) => out.push(n),
                        None => out.push('\\'),
                    },
                    c => out.push(c),
                }
            }
            rest = &r[end.min(r.len())..];
            continue;
        }
        // Outside quotes a backslash is special only before a quote.
        if let Some(r) = rest.strip_prefix("\\\"") {
            out.push('"');
            rest = r;
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

/// One field's text, and whether it is a number (which TH can follow).
fn field(tm: &Tm, key: &str, fm: bool) -> Result<(String, bool)> {
    let iv = tm.interval;
    let year = adjust_year(tm.year, iv);
    let iso = || adjust_year(iso_year(tm.days, tm.year), iv);
    let upper = key.to_ascii_uppercase();
    let n = |s: String| Ok((s, true));
    let t = |s: String| Ok((s, false));
    match upper.as_str() {
        "A.M." | "P.M." | "AM" | "PM" => {
            let pm = tm.hour % 24 >= 12;
            let s = match (upper.len(), pm) {
                (4, false) => "A.M.",
                (4, true) => "P.M.",
                (_, false) => "AM",
                (_, true) => "PM",
            };
            t(case_as(s, key))
        }
        "HH" | "HH12" => {
            let h = if tm.hour % 12 == 0 { 12 } else { tm.hour % 12 };
            n(num(h, 2, fm))
        }
        "HH24" => n(num(tm.hour, 2, fm)),
        "MI" => n(num(tm.min, 2, fm)),
        "SS" => n(num(tm.sec, 2, fm)),
        "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" | "MS" | "US" => {
            let digits = match upper.as_str() {
                "MS" => 3,
                "US" => 6,
                _ => (upper.as_bytes()[2] - b'0') as u32,
            };
            let v = tm.fsec / 10i64.pow(6 - digits);
            n(format!("{v:0w$}", w = digits as usize))
        }
        "SSSS" | "SSSSS" => n((tm.hour * 3600 + tm.min * 60 + tm.sec).to_string()),
        "TZ" => {
            if iv {
                return Err(invalid_for_interval());
            }
            t(case_as(tm.tzn.as_deref().unwrap_or(""), key))
        }
        "TZH" | "TZM" | "OF" => {
            if iv {
                return Err(invalid_for_interval());
            }
            let sign = if tm.gmtoff >= 0 { '+' } else { '-' };
            let a = tm.gmtoff.unsigned_abs();
            t(match upper.as_str() {
                "TZH" => format!("{sign}{:02}", a / 3600),
                "TZM" => format!("{:02}", a % 3600 / 60),
                _ => {
                    let mut s = format!("{sign}{}", num((a / 3600) as i64, 2, fm));
                    if !a.is_multiple_of(3600) {
                        s.push_str(&format!(":{:02}", a % 3600 / 60));
                    }
                    s
                }
            })
        }
        "A.D." | "B.C." | "AD" | "BC" => {
            if iv {
                return Err(invalid_for_interval());
            }
            let s = match (upper.len(), tm.year <= 0) {
                (4, true) => "B.C.",
                (4, false) => "A.D.",
                (_, true) => "BC",
                (_, false) => "AD",
            };
            t(case_as(s, key))
        }
        "MONTH" | "MON" => {
            if iv {
                return Err(invalid_for_interval());
            }
            let name = MONTHS[(tm.mon - 1).clamp(0, 11) as usize];
            if upper == "MONTH" {
                t(pad(&case_as(name, key), 9, fm))
            } else {
                t(case_as(&name[..3], key))
            }
        }
        "MM" => n(num(tm.mon, if tm.mon >= 0 { 2 } else { 3 }, fm)),
        "DAY" | "DY" => {
            if iv {
                return Err(invalid_for_interval());
            }
            let name = DAYS[tm.wday as usize];
            if upper == "DAY" {
                t(pad(&case_as(name, key), 9, fm))
            } else {
                t(case_as(&name[..3], key))
            }
        }
        "DDD" => n(num(tm.yday, 3, fm)),
        "IDDD" => n(num(iso_yday(tm.days, tm.year), 3, fm)),
        "DD" => n(num(tm.mday, 2, fm)),
        "D" | "ID" => {
            if iv {
                return Err(invalid_for_interval());
            }
            let d = if upper == "D" {
                tm.wday + 1
            } else if tm.wday == 0 {
                7
            } else {
                tm.wday
            };
            n(d.to_string())
        }
        "WW" => n(num((tm.yday - 1) / 7 + 1, 2, fm)),
        "IW" => n(num(iso_week(tm.days, tm.year), 2, fm)),
        "Q" => {
            if tm.mon == 0 {
                return t(String::new());
            }
            n(((tm.mon - 1) / 3 + 1).to_string())
        }
        "CC" => {
            let c = if iv {
                tm.year / 100
            } else if tm.year > 0 {
                (tm.year + 99) / 100
            } else {
                tm.year / 100 - 1
            };
            if (-99..=99).contains(&c) {
                n(num(c, if c >= 0 { 2 } else { 3 }, fm))
            } else {
                n(c.to_string())
            }
        }
        "Y,YYY" => {
            let k = year / 1000;
            n(format!("{k},{:03}", year - k * 1000))
        }
        "YYYY" | "IYYY" => {
            let y = if upper == "YYYY" { year } else { iso() };
            if (-9998..=9999).contains(&tm.year) {
                n(num(y, 4, fm))
            } else {
                n(y.to_string())
            }
        }
        "YYY" | "IYY" | "YY" | "IY" | "Y" | "I" => {
            let y = if upper.starts_with('I') { iso() } else { year };
            let digits = upper.len() as u32;
            let w = digits as usize + usize::from(y < 0);
            n(num(y % 10i64.pow(digits), w, fm))
        }
        "RM" => {
            if tm.mon == 0 && tm.year == 0 {
                return t(String::new());
            }
            let i = if tm.mon == 0 {
                if tm.year >= 0 {
                    0
                } else {
                    11
                }
            } else if tm.mon < 0 {
                -(tm.mon + 1)
            } else {
                12 - tm.mon
            };
            let r = case_as(ROMAN[i.clamp(0, 11) as usize], key);
            t(pad(&r, 4, fm))
        }
        "W" => n(((tm.mday - 1) / 7 + 1).to_string()),
        "J" => n((tm.days + 2_440_588).to_string()),
        // FX (fixed format) only matters when parsing.
        _ => t(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Value {
        walden_engine::types::coerce(Value::text(s), &DataType::Timestamp).unwrap()
    }

    fn fmt(v: &Value, f: &str) -> String {
        match to_char(v, f).unwrap() {
            Value::Text(s) => s.to_string(),
            other => panic!("{other:?}"),
        }
    }

    // Expected values are PostgreSQL 15's.
    #[test]
    fn timestamp_fields_as_postgresql_writes_them() {
        let t = ts("1997-02-10 17:32:01.4");
        assert_eq!(
            fmt(&t, "DAY Day day DY Dy dy MONTH Month month RM MON Mon mon"),
            "MONDAY    Monday    monday    MON Mon mon FEBRUARY  February  february  II   FEB Feb feb"
        );
        assert_eq!(
            fmt(&t, "Y,YYY YYYY YYY YY Y CC Q MM WW DDD DD D J"),
            "1,997 1997 997 97 7 20 1 02 06 041 10 2 2450490"
        );
        assert_eq!(
            fmt(
                &t,
                "FMY,YYY FMYYYY FMYYY FMYY FMY FMCC FMQ FMMM FMWW FMDDD FMDD FMD FMJ"
            ),
            "1,997 1997 997 97 7 20 1 2 6 41 10 2 2450490"
        );
        assert_eq!(fmt(&t, "HH HH12 HH24 MI SS SSSS"), "05 05 17 32 01 63121");
        assert_eq!(
            fmt(
                &t,
                r#""HH:MI:SS is" HH:MI:SS "\"text between quote marks\"""#
            ),
            r#"HH:MI:SS is 05:32:01 "text between quote marks""#
        );
        assert_eq!(fmt(&t, "YYYYTH YYYYth Jth"), "1997TH 1997th 2450490th");
        assert_eq!(
            fmt(
                &t,
                "YYYY A.D. YYYY a.d. YYYY bc HH:MI:SS P.M. HH:MI:SS p.m. HH:MI:SS pm"
            ),
            "1997 A.D. 1997 a.d. 1997 ad 05:32:01 P.M. 05:32:01 p.m. 05:32:01 pm"
        );
        assert_eq!(
            fmt(&t, "IYYY IYY IY I IW IDDD ID"),
            "1997 997 97 7 07 043 1"
        );
        assert_eq!(
            fmt(&t, "FF1 FF2 FF3 ff6 MS US"),
            "4 40 400 400000 400 400000"
        );
        assert_eq!(fmt(&ts("0097-02-16 BC"), "YYYY BC CC"), "0097 BC -01");
        assert_eq!(to_char(&ts("infinity"), "YYYY").unwrap(), Value::Null);
    }

    #[test]
    fn interval_fields_and_roman_months() {
        let iv = |m| Value::Interval(walden_engine::types::Interval::new(m, 0, 0));
        assert_eq!(fmt(&iv(-13), "rm"), "xii ");
        assert_eq!(fmt(&iv(-12), "RM"), "I   ");
        assert_eq!(fmt(&iv(-11), "RM"), "II  ");
        assert_eq!(fmt(&iv(0), "RM"), "");
        assert_eq!(fmt(&iv(13), "FMRM"), "I");
        assert!(to_char(&iv(1), "Month").is_err());
    }
}
