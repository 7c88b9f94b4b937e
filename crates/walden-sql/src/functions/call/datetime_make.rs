//! Date and time values built from parts and moved onto grids, as
//! PostgreSQL's functions do: `make_date`, `make_time`, `make_timestamp`,
//! `make_timestamptz`, `make_interval`, `to_timestamp(seconds)`,
//! `date_bin`, `justify_days | hours | interval`, `isfinite`.

use super::super::dates::DAY;
use super::*;
use walden_engine::types::dtinput::{TIMESTAMP_INFINITY, TIMESTAMP_MINUS_INFINITY};
use walden_engine::types::Interval;

const US: i64 = 1_000_000;

fn out_of_range(what: &str, text: String) -> SqlError {
    SqlError::new(
        ErrorKind::DatetimeOverflow,
        format!("{what} field value out of range: {text}"),
    )
}

fn interval_out_of_range() -> SqlError {
    SqlError::new(ErrorKind::DatetimeOverflow, "interval out of range")
}

fn float_arg(v: &Value, what: &str) -> Result<f64> {
    crate::functions::operators::to_f64(v).ok_or_else(|| {
        SqlError::new(
            ErrorKind::DataException,
            format!("{what} must be a number, not {v}"),
        )
    })
}

fn int32_arg(v: &Value, what: &str) -> Result<i64> {
    let i = int_arg(v, what)?;
    if i32::try_from(i).is_err() {
        return Err(SqlError::new(
            ErrorKind::NumericOutOfRange,
            "integer out of range",
        ));
    }
    Ok(i)
}

/// Days since 1970-01-01 of a calendar date whose year counts as
/// PostgreSQL's `make_date` counts it (a negative year is BC: -44 is 44 BC).
fn days_of(y: i64, m: i64, d: i64) -> Result<i64> {
    let text = || format!("{y}-{m:02}-{d:02}");
    if y == 0 || !(1..=12).contains(&m) || d < 1 {
        return Err(out_of_range("date", text()));
    }
    // Astronomical numbering: 1 BC is year 0.
    let astro = if y < 0 { y + 1 } else { y };
    if d > walden_engine::types::datetime::days_in_month(astro, m as u32) as i64 {
        return Err(out_of_range("date", text()));
    }
    // PostgreSQL's dates run from 4714-11-24 BC to 5874897 AD.
    if !(-4713..=5_874_897).contains(&astro) {
        return Err(SqlError::new(
            ErrorKind::DatetimeOverflow,
            format!("date out of range: \"{}\"", text()),
        ));
    }
    Ok(walden_engine::types::days_from_civil(
        astro, m as u32, d as u32,
    ))
}

/// Microseconds since midnight of hour, minute and (fractional) second.
fn clock_of(h: i64, mi: i64, sec: f64) -> Result<i64> {
    let text = || format!("{h:02}:{mi:02}:{sec:02}");
    let us = (sec * US as f64).round();
    // 24:00:00 is a time, nothing past it.
    let fits = (0..=23).contains(&h) && (0..=59).contains(&mi) && (0.0..=60.0).contains(&sec);
    let midnight = h == 24 && mi == 0 && sec == 0.0;
    if !(fits || midnight) || !us.is_finite() {
        return Err(out_of_range("time", text()));
    }
    let t = (h * 3600 + mi * 60) * US + us as i64;
    if t > DAY {
        return Err(out_of_range("time", text()));
    }
    Ok(t)
}

/// The date and time constructors (the dispatcher sends only those).
pub(super) fn call(f: Func, a: &[Value]) -> Result<Value> {
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    let int = |i: usize, what: &str| int32_arg(&arg(i), what);
    Ok(match f {
        Func::MakeDate => {
            Value::Date(days_of(int(0, "year")?, int(1, "month")?, int(2, "day")?)? as i32)
        }
        Func::MakeTime => Value::Time(clock_of(
            int(0, "hour")?,
            int(1, "min")?,
            float_arg(&arg(2), "sec")?,
        )?),
        Func::MakeTimestamp | Func::MakeTimestampTz => {
            let days = days_of(int(0, "year")?, int(1, "month")?, int(2, "mday")?)?;
            let clock = clock_of(int(3, "hour")?, int(4, "min")?, float_arg(&arg(5), "sec")?)?;
            let local = days
                .checked_mul(DAY)
                .and_then(|t| t.checked_add(clock))
                .ok_or_else(|| {
                    SqlError::new(ErrorKind::DatetimeOverflow, "timestamp out of range")
                })?;
            if f == Func::MakeTimestamp {
                Value::Timestamp(local)
            } else if a.len() > 6 {
                // A numeric zone here is east of UTC, as timestamptz input reads it.
                let text = text_arg(&arg(6));
                match walden_engine::types::zone::parse_offset(text.trim()) {
                    Some(east) => Value::TimestampTz(local - east as i64 * US),
                    None => {
                        let zone = crate::functions::temporal::zone_named(&text)?;
                        Value::TimestampTz(zone.from_local(local))
                    }
                }
            } else {
                Value::TimestampTz(walden_engine::types::datetime::local_to_tz(local))
            }
        }
        Func::MakeInterval => make_interval(a)?,
        Func::ToTimestamp => to_timestamp(float_arg(&arg(0), "to_timestamp")?)?,
        Func::DateBin => {
            let stride = as_interval(arg(0))?;
            // A literal beside a typed timestamp takes its type.
            let (src, org) = match (arg(1), arg(2)) {
                (s @ Value::Text(_), o @ Value::Timestamp(_)) => {
                    (as_type(s, DataType::Timestamp)?, o)
                }
                (s @ Value::Timestamp(_), o @ Value::Text(_)) => {
                    (s, as_type(o, DataType::Timestamp)?)
                }
                (s, o) => (
                    as_type(s, DataType::TimestampTz)?,
                    as_type(o, DataType::TimestampTz)?,
                ),
            };
            date_bin(&stride, &src, &org)?
        }
        Func::JustifyDays | Func::JustifyHours | Func::JustifyInterval => {
            let Value::Interval(i) = as_interval(arg(0))? else {
                unreachable!("as_interval gives an interval")
            };
            Value::Interval(justify(f, i).ok_or_else(interval_out_of_range)?)
        }
        Func::IsFinite => Value::Bool(match as_type(arg(0), DataType::TimestampTz)? {
            Value::Timestamp(t) | Value::TimestampTz(t) => {
                t != TIMESTAMP_INFINITY && t != TIMESTAMP_MINUS_INFINITY
            }
            Value::Date(d) => d != i32::MAX && d != i32::MIN,
            _ => true,
        }),
        other => unreachable!("{other:?} is not a date constructor"),
    })
}

/// Text (an untyped literal) read as `t`; other values as they are.
fn as_type(v: Value, t: DataType) -> Result<Value> {
    match v {
        Value::Text(_) => Ok(walden_engine::types::coerce(v, &t)?),
        other => Ok(other),
    }
}

fn as_interval(v: Value) -> Result<Value> {
    match as_type(v, DataType::Interval)? {
        i @ Value::Interval(_) => Ok(i),
        other => Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!("an interval was expected, not {other}"),
        )),
    }
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`, each
/// defaulting to 0 (the caller has put named arguments in their places).
fn make_interval(a: &[Value]) -> Result<Value> {
    let int = |i: usize| match a.get(i) {
        None => Ok(0),
        Some(v) => int32_arg(v, "make_interval"),
    };
    let (years, months, weeks, days) = (int(0)?, int(1)?, int(2)?, int(3)?);
    let months = years
        .checked_mul(12)
        .and_then(|m| m.checked_add(months))
        .and_then(|m| i32::try_from(m).ok())
        .ok_or_else(interval_out_of_range)?;
    let days = weeks
        .checked_mul(7)
        .and_then(|d| d.checked_add(days))
        .and_then(|d| i32::try_from(d).ok())
        .ok_or_else(interval_out_of_range)?;
    let secs = match a.get(6) {
        None => 0.0,
        Some(v) => float_arg(v, "make_interval")?,
    };
    let micros = (int(4)? as f64 * 3600.0 + int(5)? as f64 * 60.0 + secs) * US as f64;
    if !micros.is_finite() || micros.abs() >= i64::MAX as f64 {
        return Err(interval_out_of_range());
    }
    Ok(Value::Interval(Interval::new(
        months,
        days,
        micros.round() as i64,
    )))
}

/// `to_timestamp(seconds since the epoch)`.
fn to_timestamp(secs: f64) -> Result<Value> {
    if secs.is_nan() {
        return Err(SqlError::new(
            ErrorKind::DatetimeOverflow,
            "timestamp cannot be NaN",
        ));
    }
    if secs.is_infinite() {
        return Ok(Value::TimestampTz(if secs > 0.0 {
            TIMESTAMP_INFINITY
        } else {
            TIMESTAMP_MINUS_INFINITY
        }));
    }
    // PostgreSQL's range: 4714-11-24 BC to 294277-01-01 AD (exclusive).
    const MIN_SECS: f64 = -210_866_803_200.0;
    const END_SECS: f64 = 9_224_318_016_000.0;
    if !(MIN_SECS..END_SECS).contains(&secs) {
        return Err(SqlError::new(
            ErrorKind::DatetimeOverflow,
            format!("timestamp out of range: \"{secs}\""),
        ));
    }
    Ok(Value::TimestampTz((secs * US as f64).round() as i64))
}

/// `date_bin(stride, source, origin)`: the start of the stride-wide bin,
/// counted from `origin`, that holds `source`.
fn date_bin(stride: &Value, source: &Value, origin: &Value) -> Result<Value> {
    let Value::Interval(s) = stride else {
        return Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            "date_bin's stride must be an interval",
        ));
    };
    let (src, org, tz) = match (source, origin) {
        (Value::Timestamp(a), Value::Timestamp(b)) => (*a, *b, false),
        (Value::TimestampTz(a), Value::TimestampTz(b)) => (*a, *b, true),
        _ => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                "function date_bin takes an interval and two timestamps of one type",
            ))
        }
    };
    let infinite = |t: i64| t == TIMESTAMP_INFINITY || t == TIMESTAMP_MINUS_INFINITY;
    if infinite(org) {
        return Err(SqlError::new(
            ErrorKind::DatetimeOverflow,
            "origin out of range",
        ));
    }
    if infinite(src) {
        return Ok(source.clone());
    }
    if s.months != 0 {
        return Err(SqlError::unsupported(
            "timestamps binned into intervals containing months or years",
        ));
    }
    let stride = (s.days as i64)
        .checked_mul(DAY)
        .and_then(|d| d.checked_add(s.micros))
        .filter(|st| *st > 0)
        .ok_or_else(|| {
            SqlError::new(
                ErrorKind::DatetimeOverflow,
                "stride must be greater than zero",
            )
        })?;
    let diff = src.checked_sub(org).ok_or_else(interval_out_of_range)?;
    let mut delta = diff - diff % stride;
    // The bin's start, also when the origin lies after the source.
    if diff < 0 && diff % stride != 0 {
        delta -= stride;
    }
    let start = org
        .checked_add(delta)
        .ok_or_else(|| SqlError::new(ErrorKind::DatetimeOverflow, "timestamp out of range"))?;
    Ok(if tz {
        Value::TimestampTz(start)
    } else {
        Value::Timestamp(start)
    })
}

/// PostgreSQL's justify functions: whole days out of the time part
/// (hours), whole 30-day months out of the days (days), both (interval),
/// with the parts' signs made to agree. `None` on overflow.
fn justify(f: Func, i: Interval) -> Option<Interval> {
    let (mut months, mut days, mut time) = (i.months as i64, i.days as i64, i.micros);
    if matches!(f, Func::JustifyHours | Func::JustifyInterval) {
        days += time / DAY;
        time %= DAY;
    }
    if matches!(f, Func::JustifyDays | Func::JustifyInterval) {
        months += days / 30;
        days %= 30;
    }
    match f {
        Func::JustifyDays => {
            if months > 0 && days < 0 {
                days += 30;
                months -= 1;
            } else if months < 0 && days > 0 {
                days -= 30;
                months += 1;
            }
        }
        Func::JustifyHours => {
            if days > 0 && time < 0 {
                time += DAY;
                days -= 1;
            } else if days < 0 && time > 0 {
                time -= DAY;
                days += 1;
            }
        }
        _ => {
            if months > 0 && (days < 0 || (days == 0 && time < 0)) {
                days += 30;
                months -= 1;
            } else if months < 0 && (days > 0 || (days == 0 && time > 0)) {
                days -= 30;
                months += 1;
            }
            if days > 0 && time < 0 {
                time += DAY;
                days -= 1;
            } else if days < 0 && time > 0 {
                time -= DAY;
                days += 1;
            }
        }
    }
    Some(Interval::new(
        i32::try_from(months).ok()?,
        i32::try_from(days).ok()?,
        time,
    ))
}
