//! The field readers shared by date/time and time-only decoding:
//! PostgreSQL's `DecodeDate`, `DecodeNumber`, `DecodeNumberField`,
//! `DecodeTime`, `DecodeTimezone` and `ValidateDate`.

use super::words::{self, Word};
use super::{DateOrder, DtErr};

pub(super) const YEAR: u32 = 1;
pub(super) const MONTH: u32 = 1 << 1;
pub(super) const DAY: u32 = 1 << 2;
pub(super) const HOUR: u32 = 1 << 3;
pub(super) const MINUTE: u32 = 1 << 4;
pub(super) const SECOND: u32 = 1 << 5;
pub(super) const TZ: u32 = 1 << 6;
pub(super) const DOY: u32 = 1 << 7;
pub(super) const RESERV: u32 = 1 << 8;
pub(super) const ADBC: u32 = 1 << 9;
pub(super) const AMPM: u32 = 1 << 10;
pub(super) const DOW: u32 = 1 << 11;
pub(super) const DATE_M: u32 = YEAR | MONTH | DAY;
pub(super) const TIME_M: u32 = HOUR | MINUTE | SECOND;

pub(super) const US: i64 = 1_000_000;

/// The broken-down fields read so far (PostgreSQL's `pg_tm` and `fsec`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tm {
    pub year: i64,
    pub mon: i64,
    pub mday: i64,
    pub hour: i64,
    pub min: i64,
    pub sec: i64,
    /// Microseconds.
    pub fsec: i64,
    pub yday: i64,
}

/// State the number readers share.
pub(super) struct Ctx {
    pub tm: Tm,
    pub is2digits: bool,
    pub order: DateOrder,
}

/// Leading digits as a number, and the rest; a value past i32 overflows
/// as PostgreSQL's `strtoint` does.
pub(super) fn leading_int(s: &str) -> Result<(i64, &str), DtErr> {
    let end = s.bytes().take_while(|b| b.is_ascii_digit()).count();
    if end == 0 {
        return Ok((0, s));
    }
    let v: i64 = s[..end].parse().map_err(|_| DtErr::FieldOverflow)?;
    if v > i32::MAX as i64 {
        return Err(DtErr::FieldOverflow);
    }
    Ok((v, &s[end..]))
}

/// `.123456789` as microseconds (rounded); nothing else may follow.
pub(super) fn fraction(s: &str) -> Result<i64, DtErr> {
    let digits = s.strip_prefix('.').ok_or(DtErr::BadFormat)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DtErr::BadFormat);
    }
    let f: f64 = format!("0.{digits}")
        .parse()
        .map_err(|_| DtErr::BadFormat)?;
    Ok((f * US as f64).round_ties_even() as i64)
}

/// A field of digits and `-`/`/`/`.` or a text month: PostgreSQL's
/// `DecodeDate`. Returns the mask of fields set.
pub(super) fn decode_date(s: &str, fmask: u32, cx: &mut Ctx) -> Result<u32, DtErr> {
    let mut parts: Vec<&str> = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && !b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i >= b.len() {
            return Err(DtErr::BadFormat);
        }
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        } else {
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
        }
        parts.push(&s[start..i]);
        // The character after a part ends it, whatever it is.
        if i < b.len() {
            i += 1;
        }
        if parts.len() >= 25 {
            break;
        }
    }
    let mut fmask = fmask;
    let mut tmask = 0;
    let mut text_month = false;
    let mut numeric = Vec::new();
    for p in &parts {
        if p.as_bytes()[0].is_ascii_alphabetic() {
            match words::lookup(p) {
                Some(Word::Ignore) => continue,
                Some(Word::Month(m)) => {
                    cx.tm.mon = m;
                    text_month = true;
                    if fmask & MONTH != 0 {
                        return Err(DtErr::BadFormat);
                    }
                    fmask |= MONTH;
                    tmask |= MONTH;
                }
                _ => return Err(DtErr::BadFormat),
            }
        } else {
            numeric.push(*p);
        }
    }
    for p in numeric {
        let d = decode_number(p, text_month, fmask, cx)?;
        if fmask & d != 0 {
            return Err(DtErr::BadFormat);
        }
        fmask |= d;
        tmask |= d;
    }
    if fmask & !(DOY | TZ) != DATE_M {
        return Err(DtErr::BadFormat);
    }
    Ok(tmask)
}

/// One number: which date field it is depends on the fields read so far
/// and the DateStyle order (PostgreSQL's `DecodeNumber`).
pub(super) fn decode_number(
    s: &str,
    text_month: bool,
    fmask: u32,
    cx: &mut Ctx,
) -> Result<u32, DtErr> {
    let flen = s.len();
    let (val, rest) = leading_int(s)?;
    if rest.len() == s.len() {
        return Err(DtErr::BadFormat);
    }
    if rest.starts_with('.') {
        // `2001.360`, `20011225.5`, `040506.789`
        if s.len() - rest.len() > 2 {
            return decode_number_field(s, fmask | DATE_M, cx).map(|(m, _)| m);
        }
        cx.tm.fsec = fraction(rest)?;
    } else if !rest.is_empty() {
        return Err(DtErr::BadFormat);
    }
    // A day of the year after a year: `1999.008`, `1999-008`.
    if flen == 3 && fmask & DATE_M == YEAR && (1..=366).contains(&val) {
        cx.tm.yday = val;
        return Ok(DOY | MONTH | DAY);
    }
    let tm = &mut cx.tm;
    let tmask = match fmask & DATE_M {
        0 => {
            if flen >= 3 || cx.order == DateOrder::Ymd {
                tm.year = val;
                YEAR
            } else if cx.order == DateOrder::Dmy {
                tm.mday = val;
                DAY
            } else {
                tm.mon = val;
                MONTH
            }
        }
        YEAR => {
            tm.mon = val;
            MONTH
        }
        MONTH => {
            // MON-DD-YYYY, DD-MON-YYYY, YYYY-MON-DD; YY-MON-DD in YMD.
            if text_month && (flen >= 3 || cx.order == DateOrder::Ymd) {
                tm.year = val;
                YEAR
            } else {
                tm.mday = val;
                DAY
            }
        }
        m if m == YEAR | MONTH => {
            if text_month && flen >= 3 && cx.is2digits {
                // DD-MON-YYYY in YMD order: the first number was the day.
                tm.mday = tm.year;
                tm.year = val;
                cx.is2digits = false;
            } else {
                tm.mday = val;
            }
            DAY
        }
        DAY => {
            tm.mon = val;
            MONTH
        }
        m if m == MONTH | DAY => {
            tm.year = val;
            YEAR
        }
        DATE_M => return decode_number_field(s, fmask, cx).map(|(m, _)| m),
        _ => return Err(DtErr::BadFormat),
    };
    if tmask == YEAR {
        cx.is2digits = flen <= 2;
    }
    Ok(tmask)
}

/// A run of digits that is a whole date or time: `19990108`, `990108`,
/// `040506`, `0405`, with an optional fraction (PostgreSQL's
/// `DecodeNumberField`). Returns the mask set and whether it was a date.
pub(super) fn decode_number_field(s: &str, fmask: u32, cx: &mut Ctx) -> Result<(u32, bool), DtErr> {
    let mut s = s;
    if let Some(dot) = s.find('.') {
        let frac = &s[dot..];
        if !frac[1..].bytes().all(|b| b.is_ascii_digit()) {
            return Err(DtErr::BadFormat);
        }
        let f: f64 = format!("0{frac}").parse().map_err(|_| DtErr::BadFormat)?;
        cx.tm.fsec = (f * US as f64).round_ties_even() as i64;
        s = &s[..dot];
    } else if fmask & DATE_M != DATE_M && s.len() >= 6 {
        let n = s.len();
        if !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(DtErr::BadFormat);
        }
        cx.tm.mday = atoi(&s[n - 2..]);
        cx.tm.mon = atoi(&s[n - 4..n - 2]);
        cx.tm.year = atoi(&s[..n - 4]);
        if n - 4 == 2 {
            cx.is2digits = true;
        }
        return Ok((DATE_M, true));
    }
    if fmask & TIME_M != TIME_M && s.bytes().all(|b| b.is_ascii_digit()) {
        if s.len() == 6 {
            cx.tm.hour = atoi(&s[..2]);
            cx.tm.min = atoi(&s[2..4]);
            cx.tm.sec = atoi(&s[4..]);
            return Ok((TIME_M, false));
        } else if s.len() == 4 {
            cx.tm.hour = atoi(&s[..2]);
            cx.tm.min = atoi(&s[2..]);
            cx.tm.sec = 0;
            return Ok((TIME_M, false));
        }
    }
    Err(DtErr::BadFormat)
}

/// Leading digits of an all-digit slice (a long year saturates, and is
/// refused later as out of range).
fn atoi(s: &str) -> i64 {
    s.parse::<i64>().unwrap_or(i32::MAX as i64 + 1)
}

/// `hh:mm[:ss[.f]]`, or `mm:ss.f` (PostgreSQL's `DecodeTime`).
pub(super) fn decode_time(s: &str, tm: &mut Tm) -> Result<u32, DtErr> {
    let (h, rest) = leading_int(s)?;
    let rest = rest.strip_prefix(':').ok_or(DtErr::BadFormat)?;
    let (m, rest) = leading_int(rest)?;
    tm.hour = h;
    tm.min = m;
    tm.sec = 0;
    tm.fsec = 0;
    if rest.starts_with('.') {
        // `mm:ss.fff`
        tm.fsec = fraction(rest)?;
        tm.sec = m;
        tm.min = h;
        tm.hour = 0;
    } else if let Some(rest) = rest.strip_prefix(':') {
        let (sec, rest) = leading_int(rest)?;
        tm.sec = sec;
        if !rest.is_empty() {
            tm.fsec = fraction(rest)?;
        }
    } else if !rest.is_empty() {
        return Err(DtErr::BadFormat);
    }
    if tm.min > 59 || tm.sec > 60 || tm.fsec > US {
        return Err(DtErr::FieldOverflow);
    }
    Ok(TIME_M)
}

/// Whether a clock is past 24:00:00.
pub(super) fn time_overflows(tm: &Tm) -> bool {
    tm.hour > 24
        || tm.min > 59
        || tm.sec > 60
        || tm.fsec > US
        || ((tm.hour * 60 + tm.min) * 60 + tm.sec) * US + tm.fsec > 86_400 * US
}

/// A numeric zone `+hh`, `-hhmm`, `+hh:mm`, `+hh:mm:ss`: seconds east.
pub(super) fn decode_zone(s: &str) -> Result<i32, DtErr> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => return Err(DtErr::BadFormat),
    };
    let tzdisp = |e: DtErr| match e {
        DtErr::FieldOverflow => DtErr::TzDisp,
        e => e,
    };
    // The hour is read as strtol would: a second sign makes it negative.
    let body = match body.as_bytes() {
        [b'-', d, ..] if d.is_ascii_digit() => return Err(DtErr::TzDisp),
        [b'+', d, ..] if d.is_ascii_digit() => &body[1..],
        _ => body,
    };
    let (mut hr, rest) = leading_int(body).map_err(tzdisp)?;
    let (mut min, mut sec) = (0, 0);
    let mut rest = rest;
    if let Some(r) = rest.strip_prefix(':') {
        let (m, r) = leading_int(r).map_err(tzdisp)?;
        min = m;
        rest = r;
        if let Some(r) = rest.strip_prefix(':') {
            let (sv, r) = leading_int(r).map_err(tzdisp)?;
            sec = sv;
            rest = r;
        }
    } else if rest.is_empty() && s.len() > 3 {
        min = hr % 100;
        hr /= 100;
    }
    if hr > 15 || min > 59 || sec > 59 {
        return Err(DtErr::TzDisp);
    }
    if !rest.is_empty() {
        return Err(DtErr::BadFormat);
    }
    let secs = ((hr * 60 + min) * 60 + sec) as i32;
    Ok(if neg { -secs } else { secs })
}

/// Year conventions and the month/day checks once every field is read
/// (PostgreSQL's `ValidateDate`).
pub(super) fn validate_date(
    fmask: u32,
    julian: bool,
    is2digits: bool,
    bc: bool,
    tm: &mut Tm,
) -> Result<(), DtErr> {
    // A Julian day (or a date from the clock) already has its full year.
    if fmask & YEAR != 0 && !julian {
        if bc {
            // No year zero in AD/BC: 1 BC is year 0, 2 BC is -1.
            if tm.year <= 0 {
                return Err(DtErr::FieldOverflow);
            }
            tm.year = -(tm.year - 1);
        } else if is2digits {
            // One or two digits: 1970 to 2069.
            if tm.year < 70 {
                tm.year += 2000;
            } else if tm.year < 100 {
                tm.year += 1900;
            }
        } else if tm.year <= 0 {
            return Err(DtErr::FieldOverflow);
        }
    }
    if fmask & DOY != 0 {
        let days = super::super::days_from_civil(tm.year, 1, 1) + tm.yday - 1;
        let (y, m, d) = super::super::civil_from_days(days);
        tm.year = y;
        tm.mon = m as i64;
        tm.mday = d as i64;
    }
    if fmask & MONTH != 0 && !(1..=12).contains(&tm.mon) {
        return Err(DtErr::MdFieldOverflow);
    }
    if fmask & DAY != 0 && !(1..=31).contains(&tm.mday) {
        return Err(DtErr::MdFieldOverflow);
    }
    if fmask & DATE_M == DATE_M
        && tm.mday > super::super::datetime::days_in_month(tm.year, tm.mon as u32) as i64
    {
        return Err(DtErr::FieldOverflow);
    }
    Ok(())
}
