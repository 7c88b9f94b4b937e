//! Interval text input as PostgreSQL 15's `interval_in` reads it: the
//! text split into fields as its date/time scanner splits them, then read
//! right to left (a unit names the number before it, `1 2:03:04` is a day
//! and a time, `1-2` years and months), each unit at most once; failing
//! that, ISO 8601 (`P1Y2M3DT4H5M6S`, `P0001-02-03T04:05:06`). Integer
//! parts are exact; a fraction spills into the next smaller unit (years to
//! months rounded, months to days and days to microseconds truncated), and
//! every step is checked for overflow, as there.

use super::interval::Interval;

/// Why interval text was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum IntervalInputError {
    /// Not an interval (22007).
    BadFormat,
    /// A field beyond its range (22008, "interval field value out of range").
    FieldOverflow,
    /// The whole value beyond interval's range (22008, "interval out of range").
    OutOfRange,
}

use IntervalInputError::{BadFormat, FieldOverflow};

pub(super) type R<T> = Result<T, IntervalInputError>;

/// The fields of an interval type modifier (`DAY TO SECOND`), which decide
/// what a bare number or `a:b` means; `FULL` when there is none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalRange(pub u8);

impl IntervalRange {
    pub const YEAR: u8 = 1;
    pub const MONTH: u8 = 2;
    pub const DAY: u8 = 4;
    pub const HOUR: u8 = 8;
    pub const MINUTE: u8 = 16;
    pub const SECOND: u8 = 32;
    pub const FULL: IntervalRange = IntervalRange(0xff);
}

pub(super) const USECS_PER_SEC: i64 = 1_000_000;
pub(super) const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
pub(super) const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
pub(super) const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;

/// The parts read so far (PostgreSQL's `pg_itm_in`).
#[derive(Default)]
pub(super) struct Parts {
    usec: i64,
    mday: i32,
    mon: i32,
    year: i32,
}

impl Parts {
    pub(super) fn add_fract_usec(&mut self, frac: f64, scale: i64) -> R<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let f = frac * scale as f64;
        let mut usec = f as i64;
        usec += (f - usec as f64).round_ties_even() as i64;
        self.usec = self.usec.checked_add(usec).ok_or(FieldOverflow)?;
        Ok(())
    }

    pub(super) fn add_fract_days(&mut self, frac: f64, scale: i32) -> R<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let f = frac * f64::from(scale);
        let extra = f as i32;
        self.mday = self.mday.checked_add(extra).ok_or(FieldOverflow)?;
        self.add_fract_usec(f - f64::from(extra), USECS_PER_DAY)
    }

    pub(super) fn add_fract_years(&mut self, frac: f64, scale: i32) -> R<()> {
        let extra = (frac * f64::from(scale) * 12.0).round_ties_even() as i32;
        self.mon = self.mon.checked_add(extra).ok_or(FieldOverflow)?;
        Ok(())
    }

    pub(super) fn add_usec(&mut self, val: i64, frac: f64, scale: i64) -> R<()> {
        let us = val.checked_mul(scale).ok_or(FieldOverflow)?;
        self.usec = self.usec.checked_add(us).ok_or(FieldOverflow)?;
        self.add_fract_usec(frac, scale)
    }

    pub(super) fn add_days(&mut self, val: i64, scale: i32) -> R<()> {
        let v = i32::try_from(val).map_err(|_| FieldOverflow)?;
        let d = v.checked_mul(scale).ok_or(FieldOverflow)?;
        self.mday = self.mday.checked_add(d).ok_or(FieldOverflow)?;
        Ok(())
    }

    pub(super) fn add_months(&mut self, val: i64) -> R<()> {
        let v = i32::try_from(val).map_err(|_| FieldOverflow)?;
        self.mon = self.mon.checked_add(v).ok_or(FieldOverflow)?;
        Ok(())
    }

    pub(super) fn add_years(&mut self, val: i64, scale: i32) -> R<()> {
        let v = i32::try_from(val).map_err(|_| FieldOverflow)?;
        let y = v.checked_mul(scale).ok_or(FieldOverflow)?;
        self.year = self.year.checked_add(y).ok_or(FieldOverflow)?;
        Ok(())
    }

    pub(super) fn into_interval(self) -> R<Interval> {
        let months = self
            .year
            .checked_mul(12)
            .and_then(|m| m.checked_add(self.mon))
            .ok_or(IntervalInputError::OutOfRange)?;
        Ok(Interval::new(months, self.mday, self.usec))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum FieldType {
    Number,
    Date,
    Time,
    /// A signed number, time or year-month (`+2:03`, `-1-2`).
    Signed,
    Text,
    /// A signed word (`-infinity`).
    Special,
}

/// Splits text into fields as PostgreSQL's `ParseDateTime` does.
fn scan(s: &str) -> R<Vec<(String, FieldType)>> {
    let b: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let digit = |c: Option<&char>| c.is_some_and(|c| c.is_ascii_digit());
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let mut f = String::new();
        let ty;
        if c.is_ascii_digit() {
            while digit(b.get(i)) {
                f.push(b[i]);
                i += 1;
            }
            match b.get(i) {
                Some(':') => {
                    ty = FieldType::Time;
                    while b
                        .get(i)
                        .is_some_and(|c| c.is_ascii_digit() || *c == ':' || *c == '.')
                    {
                        f.push(b[i]);
                        i += 1;
                    }
                }
                Some(&delim @ ('-' | '/' | '.')) => {
                    f.push(delim);
                    i += 1;
                    if digit(b.get(i)) {
                        let mut t = if delim == '.' {
                            FieldType::Number
                        } else {
                            FieldType::Date
                        };
                        while digit(b.get(i)) {
                            f.push(b[i]);
                            i += 1;
                        }
                        if b.get(i) == Some(&delim) {
                            t = FieldType::Date;
                            while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == delim) {
                                f.push(b[i]);
                                i += 1;
                            }
                        }
                        ty = t;
                    } else {
                        ty = FieldType::Date;
                        while b
                            .get(i)
                            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == delim)
                        {
                            f.push(b[i].to_ascii_lowercase());
                            i += 1;
                        }
                    }
                }
                _ => ty = FieldType::Number,
            }
        } else if c == '.' {
            f.push(c);
            i += 1;
            while digit(b.get(i)) {
                f.push(b[i]);
                i += 1;
            }
            ty = FieldType::Number;
        } else if c.is_alphabetic() {
            while b.get(i).is_some_and(|c| c.is_alphabetic()) {
                f.extend(b[i].to_lowercase());
                i += 1;
            }
            // A word followed by a digit or `-./+` that is not a unit is
            // read on as one field (which then is no interval).
            let next = b.get(i).copied();
            let joined = matches!(next, Some('-' | '/' | '.'))
                || (matches!(next, Some('+')) || digit(next.as_ref())) && unit(&f).is_none();
            if joined {
                loop {
                    f.extend(b[i].to_lowercase());
                    i += 1;
                    if !b.get(i).is_some_and(|c| {
                        matches!(c, '+' | '-' | '/' | '_' | '.' | ':') || c.is_ascii_alphanumeric()
                    }) {
                        break;
                    }
                }
                ty = FieldType::Date;
            } else {
                ty = FieldType::Text;
            }
        } else if c == '+' || c == '-' {
            f.push(c);
            i += 1;
            while b.get(i).is_some_and(|c| c.is_whitespace()) {
                i += 1;
            }
            if digit(b.get(i)) {
                ty = FieldType::Signed;
                while b
                    .get(i)
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, ':' | '.' | '-'))
                {
                    f.push(b[i]);
                    i += 1;
                }
            } else if b.get(i).is_some_and(|c| c.is_alphabetic()) {
                ty = FieldType::Special;
                while b.get(i).is_some_and(|c| c.is_alphabetic()) {
                    f.extend(b[i].to_lowercase());
                    i += 1;
                }
            } else {
                return Err(BadFormat);
            }
        } else if c.is_ascii_punctuation() {
            i += 1;
            continue;
        } else {
            return Err(BadFormat);
        }
        out.push((f, ty));
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unit {
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
    Decade,
    Century,
    Millennium,
    Quarter,
    Ago,
}

/// A unit word (PostgreSQL compares the first ten characters).
fn unit(word: &str) -> Option<Unit> {
    use Unit::*;
    let w: String = word.chars().take(10).collect();
    Some(match w.as_str() {
        "ago" => Ago,
        "c" | "cent" | "centuries" | "century" => Century,
        "d" | "day" | "days" => Day,
        "dec" | "decade" | "decades" | "decs" => Decade,
        "h" | "hour" | "hours" | "hr" | "hrs" => Hour,
        "m" | "min" | "mins" | "minute" | "minutes" => Minute,
        "microsecon" | "us" | "usec" | "usecond" | "useconds" | "usecs" => Microsecond,
        "mil" | "millennia" | "millennium" | "mils" => Millennium,
        "millisecon" | "ms" | "msec" | "msecond" | "mseconds" | "msecs" => Millisecond,
        "mon" | "mons" | "month" | "months" => Month,
        "qtr" | "quarter" => Quarter,
        "s" | "sec" | "second" | "seconds" | "secs" => Second,
        "w" | "week" | "weeks" => Week,
        "y" | "year" | "years" | "yr" | "yrs" => Year,
        _ => return None,
    })
}

// Field masks: which units a value has given, so that none is given twice.
const M_YEAR: u32 = 1;
const M_MONTH: u32 = 2;
const M_DAY: u32 = 4;
const M_HOUR: u32 = 8;
const M_MINUTE: u32 = 16;
const M_SECOND: u32 = 32;
const M_MILLISEC: u32 = 64;
const M_MICROSEC: u32 = 128;
const M_WEEK: u32 = 256;
const M_DECADE: u32 = 512;
const M_CENTURY: u32 = 1024;
const M_MILLENNIUM: u32 = 2048;
const M_ALL_SECS: u32 = M_SECOND | M_MILLISEC | M_MICROSEC;
const M_TIME: u32 = M_HOUR | M_MINUTE | M_ALL_SECS;

/// Reads interval text (no type modifier) under the session's
/// IntervalStyle (sql_standard reads a leading minus as the whole value's).
pub fn parse_interval_text(s: &str) -> R<Interval> {
    let sql_standard = super::zone::with_current(|z| {
        z.interval_style == super::interval::IntervalStyle::SqlStandard
    });
    parse_with_range(s, IntervalRange::FULL, sql_standard)
}

/// Reads interval text under a type modifier's fields; `sql_standard`:
/// IntervalStyle is sql_standard, where a leading `-` negates every field
/// when no other is signed.
pub fn parse_with_range(s: &str, range: IntervalRange, sql_standard: bool) -> R<Interval> {
    let r = scan(s).and_then(|fields| decode(&fields, range, sql_standard));
    match r {
        Err(BadFormat) => super::interval_iso::iso8601(s),
        other => other,
    }
}

/// `strtoi64` then the rest of the text.
fn leading_int(s: &str) -> R<(i64, &str)> {
    let b = s.as_bytes();
    let mut end = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let start = end;
    while end < b.len() && b[end].is_ascii_digit() {
        end += 1;
    }
    if end == start {
        return Ok((0, s));
    }
    let v: i64 = s[..end].parse().map_err(|_| FieldOverflow)?;
    Ok((v, &s[end..]))
}

/// `.ddd` as a fraction (`.` alone is 0).
fn fraction(s: &str) -> R<f64> {
    let digits = s.strip_prefix('.').ok_or(BadFormat)?;
    if digits.is_empty() {
        return Ok(0.0);
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BadFormat);
    }
    s.parse::<f64>().map_err(|_| BadFormat)
}

/// `h:m[:s[.f]]` or `m:s.f` into microseconds (PostgreSQL's
/// DecodeTimeCommon for an interval).
fn time_field(s: &str, range: IntervalRange) -> R<i64> {
    let (hour, rest) = leading_int(s)?;
    let rest = rest.strip_prefix(':').ok_or(BadFormat)?;
    let (min, rest) = leading_int(rest)?;
    let (mut hour, mut min, mut sec, mut fsec) = (hour, min, 0i64, 0i64);
    let minute_to_second = range.0 == IntervalRange::MINUTE | IntervalRange::SECOND;
    if rest.is_empty() {
        if minute_to_second {
            sec = min;
            min = hour;
            hour = 0;
        }
    } else if rest.starts_with('.') {
        // mm:ss.sss is always minutes and seconds.
        fsec = (fraction(rest)? * 1e6).round_ties_even() as i64;
        sec = min;
        min = hour;
        hour = 0;
    } else if let Some(r) = rest.strip_prefix(':') {
        let (s2, r) = leading_int(r)?;
        sec = s2;
        if r.starts_with('.') {
            fsec = (fraction(r)? * 1e6).round_ties_even() as i64;
        } else if !r.is_empty() {
            return Err(BadFormat);
        }
    } else {
        return Err(BadFormat);
    }
    if hour < 0
        || !(0..60).contains(&min)
        || !(0..=60).contains(&sec)
        || !(0..=USECS_PER_SEC).contains(&fsec)
    {
        return Err(FieldOverflow);
    }
    hour.checked_mul(USECS_PER_HOUR)
        .and_then(|h| h.checked_add(min * USECS_PER_MINUTE + sec * USECS_PER_SEC + fsec))
        .ok_or(FieldOverflow)
}

/// The unit a bare number counts in under `range`: its rightmost field.
fn rightmost(range: IntervalRange) -> Unit {
    use IntervalRange as I;
    match range.0 {
        I::YEAR => Unit::Year,
        I::MONTH => Unit::Month,
        x if x == I::YEAR | I::MONTH => Unit::Month,
        I::DAY => Unit::Day,
        I::HOUR => Unit::Hour,
        x if x == I::DAY | I::HOUR => Unit::Hour,
        I::MINUTE => Unit::Minute,
        x if x == I::HOUR | I::MINUTE || x == I::DAY | I::HOUR | I::MINUTE => Unit::Minute,
        _ => Unit::Second,
    }
}

fn decode(fields: &[(String, FieldType)], range: IntervalRange, sql_standard: bool) -> R<Interval> {
    let mut p = Parts::default();
    let force_negative = sql_standard
        && fields.first().is_some_and(|(f, _)| f.starts_with('-'))
        && !fields[1..]
            .iter()
            .any(|(f, _)| f.starts_with('-') || f.starts_with('+'));
    let mut unit_now: Option<Unit> = None;
    let mut pending_unit = false;
    let mut is_before = false;
    let mut fmask = 0u32;
    for (i, (f, ty)) in fields.iter().enumerate().rev() {
        let mut tmask = 0u32;
        let mut ty = *ty;
        if ty == FieldType::Time {
            p.usec = p
                .usec
                .checked_add(time_field(f, range)?)
                .ok_or(FieldOverflow)?;
            if force_negative && p.usec > 0 {
                p.usec = -p.usec;
            }
            tmask = M_TIME;
            unit_now = Some(Unit::Day);
            pending_unit = false;
        } else if ty == FieldType::Signed && f[1..].contains(':') {
            let mut t = time_field(&f[1..], range)?;
            if f.starts_with('-') {
                t = -t;
            }
            if force_negative && t > 0 {
                t = -t;
            }
            p.usec = p.usec.checked_add(t).ok_or(FieldOverflow)?;
            tmask = M_TIME;
            unit_now = Some(Unit::Day);
            pending_unit = false;
        } else if matches!(ty, FieldType::Signed | FieldType::Date | FieldType::Number) {
            ty = FieldType::Number;
            let _ = ty;
            let mut u = unit_now.unwrap_or_else(|| rightmost(range));
            let (mut val, rest) = leading_int(f)?;
            let mut fval;
            if let Some(r) = rest.strip_prefix('-') {
                // SQL's years-months: `1-2`.
                let (v2, r2) = leading_int(r)?;
                if r.starts_with(['+', '-']) || !(0..12).contains(&v2) {
                    return Err(FieldOverflow);
                }
                if !r2.is_empty() {
                    return Err(BadFormat);
                }
                u = Unit::Month;
                let v2 = if f.starts_with('-') { -v2 } else { v2 };
                val = val
                    .checked_mul(12)
                    .and_then(|v| v.checked_add(v2))
                    .ok_or(FieldOverflow)?;
                fval = 0.0;
            } else if rest.starts_with('.') {
                fval = fraction(rest)?;
                if f.starts_with('-') {
                    fval = -fval;
                }
            } else if rest.is_empty() {
                fval = 0.0;
            } else {
                return Err(BadFormat);
            }
            if force_negative {
                if val > 0 {
                    val = -val;
                }
                if fval > 0.0 {
                    fval = -fval;
                }
            }
            match u {
                Unit::Microsecond => {
                    p.add_usec(val, fval, 1)?;
                    tmask = M_MICROSEC;
                }
                Unit::Millisecond => {
                    p.add_usec(val, fval, 1000)?;
                    tmask = M_MILLISEC;
                }
                Unit::Second => {
                    p.add_usec(val, fval, USECS_PER_SEC)?;
                    tmask = if fval == 0.0 { M_SECOND } else { M_ALL_SECS };
                }
                Unit::Minute => {
                    p.add_usec(val, fval, USECS_PER_MINUTE)?;
                    tmask = M_MINUTE;
                }
                Unit::Hour => {
                    p.add_usec(val, fval, USECS_PER_HOUR)?;
                    tmask = M_HOUR;
                    u = Unit::Day;
                }
                Unit::Day => {
                    p.add_days(val, 1)?;
                    p.add_fract_usec(fval, USECS_PER_DAY)?;
                    tmask = M_DAY;
                }
                Unit::Week => {
                    p.add_days(val, 7)?;
                    p.add_fract_days(fval, 7)?;
                    tmask = M_WEEK;
                }
                Unit::Month => {
                    p.add_months(val)?;
                    p.add_fract_days(fval, 30)?;
                    tmask = M_MONTH;
                }
                Unit::Year => {
                    p.add_years(val, 1)?;
                    p.add_fract_years(fval, 1)?;
                    tmask = M_YEAR;
                }
                Unit::Decade => {
                    p.add_years(val, 10)?;
                    p.add_fract_years(fval, 10)?;
                    tmask = M_DECADE;
                }
                Unit::Century => {
                    p.add_years(val, 100)?;
                    p.add_fract_years(fval, 100)?;
                    tmask = M_CENTURY;
                }
                Unit::Millennium => {
                    p.add_years(val, 1000)?;
                    p.add_fract_years(fval, 1000)?;
                    tmask = M_MILLENNIUM;
                }
                Unit::Quarter | Unit::Ago => return Err(BadFormat),
            }
            unit_now = Some(u);
            pending_unit = false;
        } else {
            // A word: a unit for the number before it, or `ago` last.
            if pending_unit {
                return Err(BadFormat);
            }
            match unit(f) {
                Some(Unit::Ago) => {
                    if i != fields.len() - 1 {
                        return Err(BadFormat);
                    }
                    is_before = true;
                }
                Some(u) => {
                    unit_now = Some(u);
                    pending_unit = true;
                }
                None => return Err(BadFormat),
            }
        }
        if tmask & fmask != 0 {
            return Err(BadFormat);
        }
        fmask |= tmask;
    }
    if fmask == 0 || pending_unit {
        return Err(BadFormat);
    }
    if is_before {
        p.usec = p.usec.checked_neg().ok_or(FieldOverflow)?;
        p.mday = p.mday.checked_neg().ok_or(FieldOverflow)?;
        p.mon = p.mon.checked_neg().ok_or(FieldOverflow)?;
        p.year = p.year.checked_neg().ok_or(FieldOverflow)?;
    }
    p.into_interval()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        parse_interval_text(s).unwrap().to_string()
    }

    fn ranged(s: &str, r: u8) -> String {
        parse_with_range(s, IntervalRange(r), false)
            .unwrap()
            .to_string()
    }

    // Every expected text is PostgreSQL 15's.
    #[test]
    fn postgres_and_sql_forms() {
        assert_eq!(show("1.1 years"), "1 year 1 mon");
        assert_eq!(show("1.5 months"), "1 mon 15 days");
        assert_eq!(show("1.1 days 1.5 hours"), "1 day 03:54:00");
        assert_eq!(show("-1 +02:03"), "-1 days +02:03:00");
        assert_eq!(show("1-2"), "1 year 2 mons");
        assert_eq!(show("+1 -1:00:00"), "1 day -01:00:00");
        assert_eq!(
            show("+1-2 -3 +4:05:06.789"),
            "1 year 2 mons -3 days +04:05:06.789"
        );
        assert_eq!(show("@ 1 minute"), "00:01:00");
        assert_eq!(show("3 hours ago"), "-03:00:00");
        assert_eq!(show("5min"), "00:05:00");
        assert_eq!(
            show(
                "4 millenniums 5 centuries 4 decades 1 year 4 months 4 days 17 minutes 31 seconds"
            ),
            "4541 years 4 mons 4 days 00:17:31"
        );
        assert_eq!(
            show("-2147483648 months -2147483648 days -9223372036854775808 us"),
            "-178956970 years -8 mons -2147483648 days -2562047788:00:54.775808"
        );
        assert_eq!(
            show("9223372036854.775807 seconds"),
            "2562047788:00:54.775807"
        );
        for bad in [
            "1 day 1 day",
            "1 second 2 seconds",
            "5.5 seconds 3 milliseconds",
            "1:20:05 5 microseconds",
            "xyz",
            "1 ago 2 days",
        ] {
            assert_eq!(parse_interval_text(bad), Err(BadFormat), "{bad}");
        }
    }

    #[test]
    fn field_qualifiers() {
        use IntervalRange as I;
        assert_eq!(ranged("1 2", I::DAY | I::HOUR), "1 day 02:00:00");
        assert_eq!(ranged("1 2:03", I::MINUTE | I::SECOND), "1 day 00:02:03");
        assert_eq!(
            ranged("1 2:03.4567", I::DAY | I::HOUR | I::MINUTE | I::SECOND),
            "1 day 00:02:03.4567"
        );
        assert_eq!(ranged("123 11", I::DAY | I::HOUR), "123 days 11:00:00");
        assert_eq!(ranged("1 -2:03", I::MINUTE | I::SECOND), "1 day -00:02:03");
    }
}
