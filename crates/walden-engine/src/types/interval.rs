//! `interval`: months, days and microseconds kept apart, as PostgreSQL does
//! (a month is not a fixed number of days, nor a day of hours across a DST
//! change), with its text input and its `postgres` output style.

use std::cmp::Ordering;

pub const US: i64 = 1_000_000;
pub const DAY_US: i64 = 86_400 * US;

#[derive(Clone, Copy, Debug, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    pub fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval {
            months,
            days,
            micros,
        }
    }

    /// The span with a month as 30 days and a day as 24 hours: what
    /// PostgreSQL compares (so `'1 mon' = '30 days'`) and hashes.
    pub fn span(&self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * DAY_US as i128 + self.micros as i128
    }

    pub fn checked_add(self, o: Interval) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_add(o.months)?,
            days: self.days.checked_add(o.days)?,
            micros: self.micros.checked_add(o.micros)?,
        })
    }

    pub fn checked_neg(self) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_neg()?,
            days: self.days.checked_neg()?,
            micros: self.micros.checked_neg()?,
        })
    }

    /// Multiplies by `f` as PostgreSQL's `interval_mul` does: months and
    /// days are truncated, the fractional month goes to days (30 a month,
    /// rounded to 1e-6 day) and the fractional day to seconds (rounded to
    /// a microsecond), a whole day of those seconds back to days.
    pub fn checked_mul_f64(self, f: f64) -> Option<Interval> {
        self.scale(|x| x * f)
    }

    /// Divides by `f` (not zero: the caller raises 22012) as PostgreSQL's
    /// `interval_div` does: the same cascade as `checked_mul_f64`, but each
    /// field divided (`x / f` and `x * (1 / f)` differ in the last bit).
    pub fn checked_div_f64(self, f: f64) -> Option<Interval> {
        self.scale(|x| x / f)
    }

    fn scale(self, op: impl Fn(f64) -> f64) -> Option<Interval> {
        // PostgreSQL's TSROUND: to 6 decimal places, ties to even.
        let round6 = |x: f64| (x * 1e6).round_ties_even() / 1e6;
        let int32 = |x: f64| {
            (!x.is_nan() && x >= i32::MIN as f64 && x <= i32::MAX as f64).then_some(x as i32)
        };
        let m = op(self.months as f64);
        let d = op(self.days as f64);
        let months = int32(m)?;
        let mut days = int32(d)?;
        let month_days = round6((m - months as f64) * 30.0);
        let mut secs = round6((d - days as f64 + month_days - month_days.trunc()) * 86_400.0);
        if secs.abs() >= 86_400.0 {
            let whole = (secs / 86_400.0).trunc();
            days = days.checked_add(whole as i32)?;
            secs -= whole * 86_400.0;
        }
        days = days.checked_add(month_days.trunc() as i32)?;
        let micros = (op(self.micros as f64) + secs * US as f64).round_ties_even();
        if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&micros) {
            return None;
        }
        Some(Interval::new(months, days, micros as i64))
    }

    /// Whole days out of the time part (`justify_hours`).
    pub fn justify_hours(self) -> Interval {
        let extra = self.micros / DAY_US;
        Interval::new(
            self.months,
            self.days.saturating_add(extra as i32),
            self.micros % DAY_US,
        )
    }
}

impl PartialEq for Interval {
    fn eq(&self, o: &Self) -> bool {
        self.span() == o.span()
    }
}
impl Eq for Interval {}
impl PartialOrd for Interval {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Interval {
    fn cmp(&self, o: &Self) -> Ordering {
        self.span().cmp(&o.span())
    }
}

/// Appends `hh:mm:ss[.ffffff]` (trailing zeros of the fraction dropped).
pub fn push_clock(out: &mut String, micros: u64) {
    let (h, m, s, f) = (
        micros / 3_600_000_000,
        micros / 60_000_000 % 60,
        micros / 1_000_000 % 60,
        micros % 1_000_000,
    );
    out.push_str(&format!("{h:02}:{m:02}:{s:02}"));
    if f != 0 {
        let frac = format!("{f:06}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
}

impl std::fmt::Display for Interval {
    /// PostgreSQL's default `IntervalStyle` (`postgres`): `1 year 2 mons
    /// -3 days +04:05:06.5`; a field after a negative one carries its sign.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        let (years, mons) = (self.months / 12, self.months % 12);
        let mut before_negative = false;
        let mut field = |out: &mut String, v: i32, unit: &str| {
            if v == 0 {
                return;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            let sign = if v < 0 {
                "-"
            } else if before_negative {
                "+"
            } else {
                ""
            };
            let plural = if v != 1 { "s" } else { "" };
            out.push_str(&format!("{sign}{} {unit}{plural}", v.unsigned_abs()));
            before_negative = v < 0;
        };
        field(&mut out, years, "year");
        field(&mut out, mons, "mon");
        field(&mut out, self.days, "day");
        if self.micros != 0 || out.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            if self.micros < 0 {
                out.push('-');
            } else if before_negative {
                out.push('+');
            }
            push_clock(&mut out, self.micros.unsigned_abs());
        }
        f.write_str(&out)
    }
}

/// Parses interval input: `1 year 2 mons 3 days 04:05:06.5`, `-1 day`,
/// `3 hours ago`, `@ 1 minute`, `1.5 days`, `P1Y2M3DT4H5M6S`.
pub fn parse_interval(s: &str) -> Option<Interval> {
    let t = s.trim();
    if t.starts_with('P') || t.starts_with('p') {
        return parse_iso(&t[1..]);
    }
    let t = t.strip_prefix('@').unwrap_or(t).trim();
    let lower = t.to_ascii_lowercase();
    let mut toks: Vec<&str> = lower.split_whitespace().collect();
    let ago = toks.last() == Some(&"ago");
    if ago {
        toks.pop();
    }
    if toks.is_empty() {
        return None;
    }
    let (mut months, mut days, mut micros) = (0f64, 0f64, 0f64);
    let mut i = 0;
    while i < toks.len() {
        let tok = toks[i];
        if tok.contains(':') {
            micros += parse_clock(tok)? as f64;
            i += 1;
            continue;
        }
        // A number with its unit attached (`5min`) or in the next token.
        let split = tok
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(tok.len());
        let (num, unit) = if split < tok.len() {
            (&tok[..split], &tok[split..])
        } else {
            i += 1;
            match toks.get(i) {
                Some(u) => (tok, *u),
                // A bare number is seconds.
                None => (tok, "s"),
            }
        };
        let n: f64 = num.parse().ok()?;
        if !n.is_finite() {
            return None;
        }
        match unit.trim_end_matches(',') {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => micros += n,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => micros += n * 1e3,
            "second" | "seconds" | "s" | "sec" | "secs" => micros += n * 1e6,
            "minute" | "minutes" | "m" | "min" | "mins" => micros += n * 6e7,
            "hour" | "hours" | "h" | "hr" | "hrs" => micros += n * 3.6e9,
            "day" | "days" | "d" => days += n,
            "week" | "weeks" | "w" => days += n * 7.0,
            "month" | "months" | "mon" | "mons" => months += n,
            "year" | "years" | "y" | "yr" | "yrs" => months += n * 12.0,
            "decade" | "decades" => months += n * 120.0,
            "century" | "centuries" => months += n * 1200.0,
            "millennium" | "millennia" | "millenniums" => months += n * 12000.0,
            _ => return None,
        }
        i += 1;
    }
    let v = build(months, days, micros)?;
    if ago {
        v.checked_neg()
    } else {
        Some(v)
    }
}

/// Fractions spill down: 1.5 months is 1 month 15 days.
fn build(months: f64, days: f64, micros: f64) -> Option<Interval> {
    let m = months.trunc();
    let d = days + (months - m) * 30.0;
    let dd = d.trunc();
    let us = (micros + (d - dd) * DAY_US as f64).round();
    let ok = |x: f64, lim: f64| x.is_finite() && x.abs() <= lim;
    if !ok(m, i32::MAX as f64) || !ok(dd, i32::MAX as f64) || !ok(us, 9.2e18) {
        return None;
    }
    Some(Interval::new(m as i32, dd as i32, us as i64))
}

/// `[-]h:mm[:ss[.f]]` as microseconds.
fn parse_clock(t: &str) -> Option<i64> {
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let parts: Vec<&str> = t.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return None;
    }
    let h: i64 = parts[0].parse().ok()?;
    let m: i64 = parts[1].parse().ok()?;
    let sec = parts.get(2).copied().unwrap_or("0");
    let s = parse_seconds(sec)?;
    if !(0..60).contains(&m) || h.abs() > 2_562_047_788 {
        return None;
    }
    let v = (h * 3600 + m * 60) * US + s;
    Some(if neg { -v } else { v })
}

/// `ss[.ffffff]` as microseconds (rounded to 6 places).
pub fn parse_seconds(sec: &str) -> Option<i64> {
    let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || whole.len() > 2 {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let s: i64 = whole.parse().ok()?;
    if s > 60 {
        return None;
    }
    let mut f: String = frac.chars().take(7).collect();
    while f.len() < 7 {
        f.push('0');
    }
    // Round the seventh digit half up.
    let f: i64 = f.parse().ok()?;
    Some(s * US + (f + 5) / 10)
}

fn parse_iso(t: &str) -> Option<Interval> {
    let (mut months, mut days, mut micros) = (0f64, 0f64, 0f64);
    let mut in_time = false;
    let mut num = String::new();
    for c in t.chars() {
        match c {
            'T' | 't' => in_time = true,
            '0'..='9' | '.' | '-' => num.push(c),
            _ => {
                let n: f64 = num.parse().ok()?;
                num.clear();
                match (c.to_ascii_uppercase(), in_time) {
                    ('Y', false) => months += n * 12.0,
                    ('M', false) => months += n,
                    ('W', false) => days += n * 7.0,
                    ('D', false) => days += n,
                    ('H', true) => micros += n * 3.6e9,
                    ('M', true) => micros += n * 6e7,
                    ('S', true) => micros += n * 1e6,
                    _ => return None,
                }
            }
        }
    }
    if !num.is_empty() {
        return None;
    }
    build(months, days, micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        parse_interval(s).unwrap().to_string()
    }

    #[test]
    fn postgres_style_output() {
        assert_eq!(
            show("1 year 2 months 3 days 4 hours 5 minutes 6.5 seconds"),
            "1 year 2 mons 3 days 04:05:06.5"
        );
        assert_eq!(show("-1 day"), "-1 days");
        assert_eq!(show("-1 mon"), "-1 mons");
        assert_eq!(show("1 mon"), "1 mon");
        assert_eq!(show("0"), "00:00:00");
        assert_eq!(show("1 day -1 hour"), "1 day -01:00:00");
        assert_eq!(show("-1 day 1 hour"), "-1 days +01:00:00");
        assert_eq!(show("3 hours ago"), "-03:00:00");
        assert_eq!(show("1.5 days"), "1 day 12:00:00");
        assert_eq!(show("1.5 months"), "1 mon 15 days");
        assert_eq!(show("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(show("@ 2 weeks"), "14 days");
        assert_eq!(show("100:00:00"), "100:00:00");
        assert!(parse_interval("1 fortnight").is_none());
        assert!(parse_interval("").is_none());
    }

    #[test]
    fn compares_by_span() {
        assert_eq!(parse_interval("1 mon"), parse_interval("30 days"));
        assert!(parse_interval("1 day") < parse_interval("25 hours"));
    }
}
