//! ISO 8601 interval text, which PostgreSQL's `interval_in` tries when the
//! text is not in its own form: designators (`P1Y2M3DT4H5M6S`, `P1W`) or
//! the alternative format (`P0001-02-03T04:05:06`, `P00010203T040506`),
//! numbers read as C's strtod reads them (exponents too), fractions
//! spilling into the next smaller unit.

use super::interval::Interval;
use super::interval_input::IntervalInputError::{BadFormat, FieldOverflow};
use super::interval_input::{
    Parts, R, USECS_PER_DAY, USECS_PER_HOUR, USECS_PER_MINUTE, USECS_PER_SEC,
};

/// A number as C's strtod reads the start of `s`: its integer part
/// (towards zero), its fraction, and the rest.
fn iso_number(s: &str) -> R<(i64, f64, &str)> {
    let b = s.as_bytes();
    if !b
        .first()
        .is_some_and(|c| c.is_ascii_digit() || *c == b'-' || *c == b'.')
    {
        return Err(BadFormat);
    }
    let mut end = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits_from = end;
    while end < b.len() && b[end].is_ascii_digit() {
        end += 1;
    }
    if end < b.len() && b[end] == b'.' {
        end += 1;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
    }
    if end == digits_from || (end == digits_from + 1 && b[digits_from] == b'.') {
        return Err(BadFormat);
    }
    if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
        let mut e = end + 1;
        if e < b.len() && (b[e] == b'+' || b[e] == b'-') {
            e += 1;
        }
        let exp_digits = e;
        while e < b.len() && b[e].is_ascii_digit() {
            e += 1;
        }
        if e > exp_digits {
            end = e;
        }
    }
    let v: f64 = s[..end].parse().map_err(|_| BadFormat)?;
    if v.is_nan() || !(-1.0e15..=1.0e15).contains(&v) {
        return Err(FieldOverflow);
    }
    let ipart = v.trunc() as i64;
    Ok((ipart, v - ipart as f64, &s[end..]))
}

fn iso_width(field: &str) -> usize {
    let f = field.strip_prefix('-').unwrap_or(field);
    f.bytes().take_while(u8::is_ascii_digit).count()
}

/// ISO 8601 interval text: designators (`P1Y2M3DT4H5M6S`, `P1W`) or the
/// alternative format (`P0001-02-03T04:05:06`, `P00010203T040506`).
pub(super) fn iso8601(s: &str) -> R<Interval> {
    let mut p = Parts::default();
    let Some(mut str) = s.strip_prefix('P').filter(|r| !r.is_empty()) else {
        return Err(BadFormat);
    };
    let mut datepart = true;
    let mut havefield = false;
    while !str.is_empty() {
        if let Some(r) = str.strip_prefix('T') {
            datepart = false;
            havefield = false;
            str = r;
            continue;
        }
        let fieldstart = str;
        let (val, fval, rest) = iso_number(str)?;
        let mut chars = rest.chars();
        let unit = chars.next();
        str = chars.as_str();
        if datepart {
            match unit {
                Some('Y') => {
                    p.add_years(val, 1)?;
                    p.add_fract_years(fval, 1)?;
                }
                Some('M') => {
                    p.add_months(val)?;
                    p.add_fract_days(fval, 30)?;
                }
                Some('W') => {
                    p.add_days(val, 7)?;
                    p.add_fract_days(fval, 7)?;
                }
                Some('D') => {
                    p.add_days(val, 1)?;
                    p.add_fract_usec(fval, USECS_PER_DAY)?;
                }
                Some('T') | None if iso_width(fieldstart) == 8 && !havefield => {
                    p.add_years(val / 10000, 1)?;
                    p.add_months((val / 100) % 100)?;
                    p.add_days(val % 100, 1)?;
                    p.add_fract_usec(fval, USECS_PER_DAY)?;
                    if unit.is_none() {
                        return p.into_interval();
                    }
                    datepart = false;
                    havefield = false;
                    continue;
                }
                Some('T' | '-') | None => {
                    if havefield {
                        return Err(BadFormat);
                    }
                    p.add_years(val, 1)?;
                    p.add_fract_years(fval, 1)?;
                    if unit.is_none() {
                        return p.into_interval();
                    }
                    if unit == Some('T') {
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    let (val, fval, rest) = iso_number(str)?;
                    p.add_months(val)?;
                    p.add_fract_days(fval, 30)?;
                    str = rest;
                    if str.is_empty() {
                        return p.into_interval();
                    }
                    if let Some(r) = str.strip_prefix('T') {
                        str = r;
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    str = str.strip_prefix('-').ok_or(BadFormat)?;
                    let (val, fval, rest) = iso_number(str)?;
                    p.add_days(val, 1)?;
                    p.add_fract_usec(fval, USECS_PER_DAY)?;
                    str = rest;
                    if str.is_empty() {
                        return p.into_interval();
                    }
                    if let Some(r) = str.strip_prefix('T') {
                        str = r;
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    return Err(BadFormat);
                }
                _ => return Err(BadFormat),
            }
        } else {
            match unit {
                Some('H') => p.add_usec(val, fval, USECS_PER_HOUR)?,
                Some('M') => p.add_usec(val, fval, USECS_PER_MINUTE)?,
                Some('S') => p.add_usec(val, fval, USECS_PER_SEC)?,
                None if iso_width(fieldstart) == 6 && !havefield => {
                    p.add_usec(val / 10000, 0.0, USECS_PER_HOUR)?;
                    p.add_usec((val / 100) % 100, 0.0, USECS_PER_MINUTE)?;
                    p.add_usec(val % 100, 0.0, USECS_PER_SEC)?;
                    p.add_fract_usec(fval, 1)?;
                    return p.into_interval();
                }
                Some(':') | None => {
                    if havefield {
                        return Err(BadFormat);
                    }
                    p.add_usec(val, fval, USECS_PER_HOUR)?;
                    if unit.is_none() {
                        return p.into_interval();
                    }
                    let (val, fval, rest) = iso_number(str)?;
                    p.add_usec(val, fval, USECS_PER_MINUTE)?;
                    str = rest;
                    if str.is_empty() {
                        return p.into_interval();
                    }
                    str = str.strip_prefix(':').ok_or(BadFormat)?;
                    let (val, fval, rest) = iso_number(str)?;
                    p.add_usec(val, fval, USECS_PER_SEC)?;
                    if rest.is_empty() {
                        return p.into_interval();
                    }
                    return Err(BadFormat);
                }
                _ => return Err(BadFormat),
            }
        }
        havefield = true;
    }
    p.into_interval()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        iso8601(s).unwrap().to_string()
    }

    #[test]
    fn iso_8601() {
        assert_eq!(show("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(show("P1.1Y0M3DT4H5M6S"), "1 year 1 mon 3 days 04:05:06");
        assert_eq!(show("P.1Y0M3DT4H5M6S"), "1 mon 3 days 04:05:06");
        assert_eq!(show("P10.5e4Y"), "105000 years");
        assert_eq!(show("P00021015T103020"), "2 years 10 mons 15 days 10:30:20");
        assert_eq!(
            show("P0002-10-15T10:30:20"),
            "2 years 10 mons 15 days 10:30:20"
        );
        assert_eq!(show("P0002"), "2 years");
        assert_eq!(show("PT10"), "10:00:00");
        assert_eq!(show("PT2562047788H54.775807S"), "2562047788:00:54.775807");
        assert_eq!(show("P1W"), "7 days");
    }
}
