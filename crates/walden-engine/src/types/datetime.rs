//! Text forms of `timestamptz` and `time`, and the calendar arithmetic the
//! SQL layer builds on (months added with the day clamped, local/UTC).

use super::interval::{Interval, DAY_US, US};
use super::zone::{self, offset_text};
use super::{civil_from_days, days_from_civil, format_timestamp};

/// Parses `timestamptz` text (see `dtinput`): a zone in the text wins,
/// otherwise the session's. Returns UTC microseconds.
pub fn parse_timestamptz(s: &str) -> Option<i64> {
    super::dtinput::timestamptz_in(s).ok()
}

/// A `timestamp` with any zone in the text ignored, as PostgreSQL does.
pub fn parse_timestamp_local(s: &str) -> Option<i64> {
    super::dtinput::timestamp_in(s).ok()
}

/// `time` text (a zone, if written, is ignored as PostgreSQL does).
pub fn parse_time(s: &str) -> Option<i64> {
    super::dtinput::time_in(s).ok()
}

/// `2024-01-02 03:04:05.5+01` in the session zone (` BC` after the
/// offset, as PostgreSQL writes it).
pub fn format_timestamptz(utc: i64) -> String {
    if utc == super::dtinput::TIMESTAMP_INFINITY || utc == super::dtinput::TIMESTAMP_MINUS_INFINITY
    {
        return format_timestamp(utc);
    }
    zone::with_current(|z| {
        let off = z.offset_at(utc);
        let local = utc.saturating_add(off as i64 * US);
        let (mut s, bc) = super::timestamp_text(local).unwrap_or_else(|e| (e.to_string(), false));
        s.push_str(&offset_text(off));
        if bc {
            s.push_str(" BC");
        }
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

/// Microseconds rounded to `p` fractional-second digits, halves away from
/// zero (PostgreSQL's rule for `timestamp(p)`, `time(p)`, `interval(p)`).
fn round_micros(us: i64, p: u8) -> i64 {
    if p >= 6 {
        return us;
    }
    let scale = 10i64.pow(6 - p as u32);
    let half = scale / 2;
    if us >= 0 {
        us.saturating_add(half) / scale * scale
    } else {
        -(us.saturating_neg().saturating_add(half) / scale * scale)
    }
}

/// A value of a time type kept to `p` fractional-second digits, as a
/// `timestamp(p)` column or cast keeps it; other values pass unchanged.
pub fn round_to_precision(v: super::Value, p: u8) -> super::Value {
    use super::dtinput::{TIMESTAMP_INFINITY, TIMESTAMP_MINUS_INFINITY};
    use super::Value as V;
    let finite = |t: i64| t != TIMESTAMP_INFINITY && t != TIMESTAMP_MINUS_INFINITY;
    match v {
        V::Timestamp(t) if finite(t) => V::Timestamp(round_micros(t, p)),
        V::TimestampTz(t) if finite(t) => V::TimestampTz(round_micros(t, p)),
        V::Time(t) => V::Time(round_micros(t, p)),
        V::Interval(i) => V::Interval(Interval {
            micros: round_micros(i.micros, p),
            ..i
        }),
        other => other,
    }
}
