//! Text forms of `timestamptz` and `time`, and the calendar arithmetic the
//! SQL layer builds on (months added with the day clamped, local/UTC).

use super::interval::{Interval, DAY_US, US};
use super::zone::{self, offset_text, parse_offset, Zone};
use super::{civil_from_days, days_from_civil, format_timestamp, parse_date};

/// Splits `HH:MM:SS.f+05:30` / `... Z` / `... UTC` / `... Europe/Paris`
/// into the clock and the zone text (if any).
fn split_zone(t: &str) -> (&str, Option<&str>) {
    let t = t.trim();
    if let Some(i) = t.find(' ') {
        return (&t[..i], Some(t[i + 1..].trim()));
    }
    if let Some(c) = t.strip_suffix(['Z', 'z']) {
        return (c, Some("Z"));
    }
    // A sign after the first character starts an offset (char indices:
    // the text may hold any character).
    match t
        .char_indices()
        .skip(1)
        .find(|(_, c)| *c == '+' || *c == '-')
    {
        Some((i, _)) => (&t[..i], Some(&t[i..])),
        None => (t, None),
    }
}

/// `HH:MM[:SS[.f]]` as microseconds since midnight (24:00:00 allowed).
pub fn parse_clock(t: &str) -> Option<i64> {
    let mut parts = t.split(':');
    let h = parts.next()?;
    let m = parts.next()?;
    let s = parts.next().unwrap_or("0");
    if parts.next().is_some()
        || h.is_empty()
        || h.len() > 2
        || m.len() != 2
        || !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    let s = super::interval::parse_seconds(s)?;
    let v = (h * 3600 + m * 60) * US + s;
    (h <= 24 && m < 60 && v <= DAY_US).then_some(v)
}

/// A zone written after a timestamp, as seconds east of UTC at local time
/// `local` (a named zone's offset depends on the date).
fn zone_offset(z: &str, local: i64) -> Option<i32> {
    if let Some(o) = parse_offset(z) {
        return Some(o);
    }
    let zone = Zone::parse(z)?;
    let utc = zone.from_local(local);
    Some(((local - utc) / US) as i32)
}

/// Parses `timestamptz` text: a zone in the text wins, otherwise the
/// session's. Returns UTC microseconds.
pub fn parse_timestamptz(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, rest) = match s.find([' ', 'T', 't']) {
        Some(i) => (&s[..i], s[i + 1..].trim()),
        None => (s, ""),
    };
    let days = parse_date(date)? as i64;
    let (clock, zone) = if rest.is_empty() {
        ("", None)
    } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
        split_zone(rest)
    } else {
        ("", Some(rest))
    };
    let micros = if clock.is_empty() {
        0
    } else {
        parse_clock(clock)?
    };
    let local = days.checked_mul(DAY_US)?.checked_add(micros)?;
    match zone {
        Some(z) => Some(local - zone_offset(z, local)? as i64 * US),
        None => Some(zone::with_current(|zn| zn.from_local(local))),
    }
}

/// A `timestamp` with any zone in the text ignored, as PostgreSQL does.
pub fn parse_timestamp_local(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, rest) = match s.find([' ', 'T', 't']) {
        Some(i) => (&s[..i], s[i + 1..].trim()),
        None => (s, ""),
    };
    let days = parse_date(date)? as i64;
    let micros = if rest.is_empty() {
        0
    } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
        let (clock, zone) = split_zone(rest);
        // The zone is ignored, but it must be one.
        if let Some(z) = zone {
            zone_offset(z, 0)?;
        }
        parse_clock(clock)?
    } else {
        return None;
    };
    days.checked_mul(DAY_US)?.checked_add(micros)
}

/// `time` text (a zone, if written, is ignored as PostgreSQL does).
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    // `2024-01-01 12:00` gives its time of day.
    if let Some(t) = parse_timestamp_local(s).filter(|_| s.contains('-') && s.len() > 8) {
        return Some(t.rem_euclid(DAY_US));
    }
    parse_clock(split_zone(s).0)
}

/// `2024-01-02 03:04:05.5+01` in the session zone.
pub fn format_timestamptz(utc: i64) -> String {
    zone::with_current(|z| {
        let off = z.offset_at(utc);
        let mut s = format_timestamp(utc + off as i64 * US);
        s.push_str(&offset_text(off));
        s
    })
}

pub fn format_time(t: i64) -> String {
    let mut s = String::new();
    super::interval::push_clock(&mut s, t.max(0) as u64);
    s
}

/// The last day of a month.
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Adds months to a local timestamp, clamping the day to the month's end.
pub fn add_months_local(t: i64, months: i64) -> Option<i64> {
    let days = t.div_euclid(DAY_US);
    let rem = t.rem_euclid(DAY_US);
    let (y, m, d) = civil_from_days(days);
    let total = (y * 12 + m as i64 - 1).checked_add(months)?;
    let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    if !(-4713..=294_276).contains(&ny) {
        return None;
    }
    Some(days_from_civil(ny, nm, d.min(days_in_month(ny, nm))) * DAY_US + rem)
}

/// A local (zone-less) timestamp plus an interval.
pub fn local_plus(t: i64, iv: Interval) -> Option<i64> {
    let t = add_months_local(t, iv.months as i64)?;
    t.checked_add((iv.days as i64).checked_mul(DAY_US)?)?
        .checked_add(iv.micros)
}

/// A `timestamptz` plus an interval: months and days move the local date in
/// the session zone (so a day across a DST change is 23 or 25 hours), the
/// time part moves the instant.
pub fn tz_plus(utc: i64, iv: Interval) -> Option<i64> {
    let base = if iv.months != 0 || iv.days != 0 {
        zone::with_current(|z| {
            let local = local_plus(z.to_local(utc), Interval::new(iv.months, iv.days, 0))?;
            Some(z.from_local(local))
        })?
    } else {
        utc
    };
    base.checked_add(iv.micros)
}

/// The session-local wall clock of a `timestamptz`.
pub fn tz_to_local(utc: i64) -> i64 {
    zone::with_current(|z| z.to_local(utc))
}

/// The instant of a session-local wall clock.
pub fn local_to_tz(local: i64) -> i64 {
    zone::with_current(|z| z.from_local(local))
}

/// The session zone's offset at an instant, in seconds.
pub fn tz_offset(utc: i64) -> i32 {
    zone::with_current(|z| z.offset_at(utc))
}
