//! Date/time text input with PostgreSQL 15's rules: every style its
//! `DateStyle` field orders read (`1999-01-08`, `January 8, 1999`,
//! `1/8/1999`, `08-Jan-1999`, `19990108`, `1999.008`, `J2451187`), BC
//! years, the special values (`epoch`, `infinity`, `now`, `today`,
//! `allballs`, ...), zone offsets, abbreviations and names; invalid field
//! values are refused (22008), never moved to a valid date.
//!
//! `lex.rs` splits the text into fields, `decode.rs` and `time_only.rs`
//! give each a meaning, `fields.rs` reads single fields, `words.rs` lists
//! the words.

mod decode;
mod fields;
mod lex;
mod time_only;
mod words;

#[cfg(test)]
mod tests;

use super::zone::{self, Zone};
use crate::error::{DatetimeErrorKind, EngineError};
use fields::{Tm, US};

/// The order of day, month and year in ambiguous input (`DateStyle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DateOrder {
    #[default]
    Mdy,
    Dmy,
    Ymd,
}

/// Why text is not a date/time value (PostgreSQL's `DTERR_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DtErr {
    BadFormat,
    FieldOverflow,
    /// A month or day out of range: maybe the field order is not the
    /// one the text was written in.
    MdFieldOverflow,
    TzDisp,
    UnknownZone(String),
    OutOfRange,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    Value,
    Epoch,
    Late,
    Early,
}

enum ZoneSpec {
    /// Seconds east of UTC.
    Offset(i32),
    Named(Zone),
    /// A dynamic abbreviation (`MSK`) and the zone that defines it.
    Abbrev(Zone, String),
}

struct Parsed {
    what: What,
    tm: Tm,
    zone: Option<ZoneSpec>,
}

/// `infinity` and `-infinity` as stored (PostgreSQL's own choice).
pub const DATE_INFINITY: i32 = i32::MAX;
pub const DATE_MINUS_INFINITY: i32 = i32::MIN;
pub const TIMESTAMP_INFINITY: i64 = i64::MAX;
pub const TIMESTAMP_MINUS_INFINITY: i64 = i64::MIN;

/// The Julian day number of 1970-01-01.
const UNIX_JULIAN: i64 = 2_440_588;
const DAY_US: i64 = 86_400 * US;
/// The first day PostgreSQL holds, 4714-11-24 BC (Julian day 0), and the
/// last date (5874897-12-31), as days since 1970-01-01.
const MIN_DAY: i64 = -UNIX_JULIAN;
const MAX_DAY: i64 = 2_147_483_493 - UNIX_JULIAN;
/// The first timestamp (4714-11-24 BC 00:00). PostgreSQL's last is in
/// 294276 AD; Walden counts microseconds from 1970 in an i64, which ends
/// in 292277 AD, one below the value kept for infinity.
const MIN_TS: i64 = MIN_DAY * DAY_US;
const MAX_TS: i64 = i64::MAX - 1;

/// A zone abbreviation (`pst`, `cest`, lower case) as seconds east.
pub fn zone_abbreviation(w: &str) -> Option<i32> {
    words::zone_abbrev(w)
}

/// The zone that defines a dynamic abbreviation (`msk`: Europe/Moscow),
/// lower case.
pub fn dynamic_zone_abbreviation(w: &str) -> Option<&'static str> {
    words::dynamic_abbrev(w)
}

/// A date as the timestamp of its midnight (infinities kept); `None` past
/// the timestamp range (PostgreSQL: "date out of range for timestamp").
pub fn date_to_timestamp(d: i32) -> Option<i64> {
    match d {
        DATE_INFINITY => Some(TIMESTAMP_INFINITY),
        DATE_MINUS_INFINITY => Some(TIMESTAMP_MINUS_INFINITY),
        _ => (d as i64).checked_mul(DAY_US).filter(|t| *t <= MAX_TS),
    }
}

/// A date as a timestamp for comparing: one past the timestamp range
/// compares beyond every timestamp.
pub fn date_to_timestamp_saturating(d: i32) -> i64 {
    date_to_timestamp(d).unwrap_or(TIMESTAMP_INFINITY)
}

pub fn date_in(s: &str) -> Result<i32, EngineError> {
    let p = parse(s).map_err(|e| error(e, "date", s))?;
    match p.what {
        What::Epoch => Ok(0),
        What::Late => Ok(DATE_INFINITY),
        What::Early => Ok(DATE_MINUS_INFINITY),
        What::Value => {
            let days = days_of(&p.tm).ok_or_else(|| error(DtErr::OutOfRange, "date", s))?;
            Ok(days as i32)
        }
    }
}

pub fn timestamp_in(s: &str) -> Result<i64, EngineError> {
    let p = parse(s).map_err(|e| error(e, "timestamp", s))?;
    special_ts(p.what).map_or_else(
        || local_of(&p.tm).ok_or_else(|| error(DtErr::OutOfRange, "timestamp", s)),
        Ok,
    )
}

pub fn timestamptz_in(s: &str) -> Result<i64, EngineError> {
    let ty = "timestamp with time zone";
    let p = parse(s).map_err(|e| error(e, ty, s))?;
    if let Some(v) = special_ts(p.what) {
        return Ok(v);
    }
    let out = || error(DtErr::OutOfRange, ty, s);
    let local = local_of(&p.tm).ok_or_else(out)?;
    let utc = match p.zone {
        Some(ZoneSpec::Offset(off)) => local.checked_sub(off as i64 * US),
        Some(ZoneSpec::Named(z)) => Some(z.from_local(local)),
        Some(ZoneSpec::Abbrev(z, abbr)) => {
            match z.abbreviation_offset(&abbr, z.from_local(local)) {
                Some(off) => local.checked_sub(off as i64 * US),
                None => Some(z.from_local(local)),
            }
        }
        None => Some(zone::with_current(|z| z.from_local(local))),
    };
    utc.filter(|u| (MIN_TS..=MAX_TS).contains(u))
        .ok_or_else(out)
}

/// `time` text: microseconds since midnight (24:00:00 allowed).
pub fn time_in(s: &str) -> Result<i64, EngineError> {
    let err = |e| error(e, "time without time zone", s);
    let fields = lex::split(s).map_err(err)?;
    let tm = time_only::decode_time_only(&fields, order(), &now_fields).map_err(err)?;
    Ok(((tm.hour * 60 + tm.min) * 60 + tm.sec) * US + tm.fsec)
}

fn parse(s: &str) -> Result<Parsed, DtErr> {
    let fields = lex::split(s)?;
    decode::decode_date_time(&fields, order(), &now_fields)
}

fn special_ts(w: What) -> Option<i64> {
    match w {
        What::Value => None,
        What::Epoch => Some(0),
        What::Late => Some(TIMESTAMP_INFINITY),
        What::Early => Some(TIMESTAMP_MINUS_INFINITY),
    }
}

/// The day number of a valid date in PostgreSQL's range.
fn days_of(tm: &Tm) -> Option<i64> {
    // Years are bounded by the field readers (at most 2^31), so the day
    // arithmetic cannot overflow.
    if tm.year < -4713 || tm.year > 5_874_897 {
        return None;
    }
    let d = super::days_from_civil(tm.year, tm.mon as u32, tm.mday as u32);
    (MIN_DAY..=MAX_DAY).contains(&d).then_some(d)
}

/// A local timestamp from its fields.
fn local_of(tm: &Tm) -> Option<i64> {
    let days = days_of(tm)?;
    let t = days
        .checked_mul(DAY_US)?
        .checked_add(((tm.hour * 60 + tm.min) * 60 + tm.sec) * US + tm.fsec)?;
    (MIN_TS..=MAX_TS).contains(&t).then_some(t)
}

/// The session's DateStyle field order.
fn order() -> DateOrder {
    zone::with_current(|z| z.order)
}

/// The current transaction's instant in the session zone, as fields,
/// and the zone's offset then.
fn now_fields() -> (Tm, i32) {
    let utc = zone::current_now();
    let off = zone::with_current(|z| z.offset_at(utc));
    let local = utc + off as i64 * US;
    let days = local.div_euclid(DAY_US);
    let rem = local.rem_euclid(DAY_US);
    let (y, m, d) = super::civil_from_days(days);
    let tm = Tm {
        year: y,
        mon: m as i64,
        mday: d as i64,
        hour: rem / (3600 * US),
        min: rem / (60 * US) % 60,
        sec: rem / US % 60,
        fsec: rem % US,
        yday: 0,
    };
    (tm, off)
}

fn error(e: DtErr, ty: &str, s: &str) -> EngineError {
    let (kind, message) = match e {
        DtErr::BadFormat => (
            DatetimeErrorKind::Format,
            format!("invalid input syntax for type {ty}: \"{s}\""),
        ),
        DtErr::FieldOverflow | DtErr::MdFieldOverflow => (
            DatetimeErrorKind::FieldOverflow,
            format!("date/time field value out of range: \"{s}\""),
        ),
        DtErr::TzDisp => (
            DatetimeErrorKind::ZoneDisplacement,
            format!("time zone displacement out of range: \"{s}\""),
        ),
        DtErr::UnknownZone(z) => (
            DatetimeErrorKind::UnknownZone,
            format!("time zone \"{z}\" not recognized"),
        ),
        DtErr::OutOfRange => {
            let what = if ty == "date" { "date" } else { "timestamp" };
            (
                DatetimeErrorKind::FieldOverflow,
                format!("{what} out of range: \"{s}\""),
            )
        }
    };
    EngineError::DatetimeInput { kind, message }
}
