//! Date and time arithmetic and functions over `timestamp`, `timestamptz`,
//! `date`, `time` and `interval`: the operators PostgreSQL defines between
//! them, `date_trunc`, `extract` / `date_part`, `age` and `to_char`.

use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::BinOp;
use rust_decimal::Decimal;
use walden_engine::types::datetime::{
    days_in_month, local_plus, local_to_tz, tz_offset, tz_plus, tz_to_local,
};
use walden_engine::types::interval::{DAY_US, US};
use walden_engine::types::{civil_from_days, days_from_civil, Interval};
use walden_engine::{DataType, Value};

fn out_of_range(what: &str) -> SqlError {
    SqlError::new(ErrorKind::DatetimeOverflow, format!("{what} out of range"))
}

/// The result type of `a op b` when a date/time type is involved.
pub fn arith_type(op: BinOp, a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType as T;
    let num = |t: &T| t.is_integer() || matches!(t, T::Real | T::Double | T::Decimal { .. });
    Some(match (op, a, b) {
        (BinOp::Add | BinOp::Sub, T::Timestamp, T::Interval)
        | (BinOp::Add, T::Interval, T::Timestamp) => T::Timestamp,
        (BinOp::Add | BinOp::Sub, T::TimestampTz, T::Interval)
        | (BinOp::Add, T::Interval, T::TimestampTz) => T::TimestampTz,
        (BinOp::Add | BinOp::Sub, T::Date, T::Interval)
        | (BinOp::Add, T::Interval, T::Date)
        | (BinOp::Add, T::Date, T::Time)
        | (BinOp::Add, T::Time, T::Date) => T::Timestamp,
        (BinOp::Sub, T::Timestamp | T::TimestampTz, T::Timestamp | T::TimestampTz)
        | (BinOp::Sub, T::Time, T::Time)
        | (BinOp::Add | BinOp::Sub, T::Interval, T::Interval) => T::Interval,
        (BinOp::Mul | BinOp::Div, T::Interval, x) if num(x) => T::Interval,
        (BinOp::Mul, x, T::Interval) if num(x) => T::Interval,
        (BinOp::Add | BinOp::Sub, T::Time, T::Interval) | (BinOp::Add, T::Interval, T::Time) => {
            T::Time
        }
        (BinOp::Add | BinOp::Sub, T::TimestampTz, x) if x.is_integer() => T::TimestampTz,
        _ => return None,
    })
}

fn to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        // As PostgreSQL's numeric-to-float8 cast: the nearest float to the
        // decimal's text (rust_decimal's own conversion can be a bit off).
        Value::Decimal(d) => Some(d.to_string().parse().unwrap_or_else(|_| d.to_f64())),
        _ => None,
    }
}

/// `a op b` for date/time operands; `None` when the operands are not
/// date/time ones this defines (the caller goes on with numbers and text).
pub fn binary(op: BinOp, a: &Value, b: &Value) -> Option<Result<Value>> {
    use Value as V;
    let iv_range = || out_of_range("interval");
    let ts_range = || out_of_range("timestamp");
    let neg = |i: &Interval| i.checked_neg().ok_or_else(iv_range);
    let r = match (op, a, b) {
        (
            BinOp::Add,
            V::Interval(i),
            x @ (V::Timestamp(_) | V::TimestampTz(_) | V::Date(_) | V::Time(_)),
        ) => return binary(BinOp::Add, x, &V::Interval(*i)),
        (BinOp::Add | BinOp::Sub, V::Timestamp(t), V::Interval(i)) => (|| {
            let i = if op == BinOp::Sub { neg(i)? } else { *i };
            local_plus(*t, i).map(V::Timestamp).ok_or_else(ts_range)
        })(),
        (BinOp::Add | BinOp::Sub, V::Date(d), V::Interval(i)) => (|| {
            let i = if op == BinOp::Sub { neg(i)? } else { *i };
            local_plus(*d as i64 * DAY_US, i)
                .map(V::Timestamp)
                .ok_or_else(ts_range)
        })(),
        (BinOp::Add | BinOp::Sub, V::TimestampTz(t), V::Interval(i)) => (|| {
            let i = if op == BinOp::Sub { neg(i)? } else { *i };
            tz_plus(*t, i).map(V::TimestampTz).ok_or_else(ts_range)
        })(),
        (BinOp::Add | BinOp::Sub, V::TimestampTz(t), V::Int(d)) => (|| {
            let d = if op == BinOp::Sub { -*d } else { *d };
            let days = i32::try_from(d).map_err(|_| ts_range())?;
            tz_plus(*t, Interval::new(0, days, 0))
                .map(V::TimestampTz)
                .ok_or_else(ts_range)
        })(),
        (BinOp::Add, V::Date(d), V::Time(t)) | (BinOp::Add, V::Time(t), V::Date(d)) => {
            Ok(V::Timestamp(*d as i64 * DAY_US + t))
        }
        (BinOp::Sub, V::Timestamp(x), V::Timestamp(y))
        | (BinOp::Sub, V::TimestampTz(x), V::TimestampTz(y)) => x
            .checked_sub(*y)
            .map(|d| V::Interval(Interval::new(0, 0, d).justify_hours()))
            .ok_or_else(iv_range),
        (BinOp::Sub, V::TimestampTz(x), V::Timestamp(y)) => {
            binary(op, &V::TimestampTz(*x), &V::TimestampTz(local_to_tz(*y)))?
        }
        (BinOp::Sub, V::Timestamp(x), V::TimestampTz(y)) => {
            binary(op, &V::TimestampTz(local_to_tz(*x)), &V::TimestampTz(*y))?
        }
        (BinOp::Sub, V::Time(x), V::Time(y)) => Ok(V::Interval(Interval::new(0, 0, x - y))),
        (BinOp::Add | BinOp::Sub, V::Time(t), V::Interval(i)) => {
            let m = if op == BinOp::Sub {
                -i.micros
            } else {
                i.micros
            };
            Ok(V::Time((t + m.rem_euclid(DAY_US)).rem_euclid(DAY_US)))
        }
        (BinOp::Add, V::Interval(x), V::Interval(y)) => {
            x.checked_add(*y).map(V::Interval).ok_or_else(iv_range)
        }
        (BinOp::Sub, V::Interval(x), V::Interval(y)) => {
            (|| x.checked_add(neg(y)?).map(V::Interval).ok_or_else(iv_range))()
        }
        (BinOp::Mul, V::Interval(i), n) | (BinOp::Mul, n, V::Interval(i)) => {
            let f = to_f64(n)?;
            i.checked_mul_f64(f).map(V::Interval).ok_or_else(iv_range)
        }
        (BinOp::Div, V::Interval(i), n) => {
            let f = to_f64(n)?;
            if f == 0.0 {
                Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"))
            } else {
                i.checked_div_f64(f).map(V::Interval).ok_or_else(iv_range)
            }
        }
        _ => return None,
    };
    Some(r)
}

/// Brings a `timestamp` / `date` compared with a `timestamptz` to an
/// instant (read in the session zone), and text to the other side's type.
pub fn unify(a: &Value, b: &Value) -> Option<Result<(Value, Value)>> {
    use Value as V;
    let to = |v: &Value, t: &DataType| {
        walden_engine::types::coerce(v.clone(), t).map_err(SqlError::from)
    };
    let pair = |x: Result<Value>, y: Result<Value>| Some(x.and_then(|x| Ok((x, y?))));
    match (a, b) {
        (V::TimestampTz(_), V::Timestamp(_) | V::Date(_) | V::Text(_)) => {
            pair(Ok(a.clone()), to(b, &DataType::TimestampTz))
        }
        (V::Timestamp(_) | V::Date(_) | V::Text(_), V::TimestampTz(_)) => {
            pair(to(a, &DataType::TimestampTz), Ok(b.clone()))
        }
        (V::Time(_), V::Text(_)) => pair(Ok(a.clone()), to(b, &DataType::Time)),
        (V::Text(_), V::Time(_)) => pair(to(a, &DataType::Time), Ok(b.clone())),
        (V::Interval(_), V::Text(_)) => pair(Ok(a.clone()), to(b, &DataType::Interval)),
        (V::Text(_), V::Interval(_)) => pair(to(a, &DataType::Interval), Ok(b.clone())),
        _ => None,
    }
}

/// A value as local wall-clock microseconds, and whether it was a
/// `timestamptz` (whose local time is in the session zone).
fn local_of(v: &Value) -> Result<(i64, bool)> {
    Ok(match v {
        Value::Timestamp(t) => (*t, false),
        Value::Date(d) => (*d as i64 * DAY_US, false),
        Value::TimestampTz(t) => (tz_to_local(*t), true),
        Value::Text(_) => match walden_engine::types::coerce(v.clone(), &DataType::Timestamp) {
            Ok(Value::Timestamp(t)) => (t, false),
            _ => return Err(bad_arg(v)),
        },
        other => return Err(bad_arg(other)),
    })
}

fn bad_arg(v: &Value) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedFunction,
        format!(
            "function does not exist for an argument of type {}",
            crate::functions::type_name(v)
        ),
    )
}

fn bad_unit(unit: &str, ty: &str) -> SqlError {
    // A word that is no unit at all is 22023; a unit the type has not, 0A000.
    if canonical_unit(unit) == unit && !KNOWN_UNITS.contains(&unit) {
        return SqlError::new(
            ErrorKind::InvalidParameter,
            format!("unit \"{unit}\" not recognized for type {ty}"),
        );
    }
    SqlError::new(
        ErrorKind::FeatureNotSupported,
        format!("unit \"{unit}\" not supported for type {ty}"),
    )
}

const KNOWN_UNITS: &[&str] = &[
    "microseconds",
    "milliseconds",
    "second",
    "minute",
    "hour",
    "day",
    "week",
    "month",
    "quarter",
    "year",
    "decade",
    "century",
    "millennium",
    "dow",
    "isodow",
    "doy",
    "isoyear",
    "julian",
    "epoch",
    "timezone",
    "timezone_hour",
    "timezone_minute",
    "timezone_m",
    "timezone_h",
];

/// A date/time unit as PostgreSQL's units table reads it (its first ten
/// characters: `msec`, `usecs`, `millisecond`, `hrs`, `centuries`, ...),
/// in the spelling this module matches; other words unchanged.
fn canonical_unit(u: &str) -> &str {
    let w: String = u.chars().take(10).collect();
    match w.as_str() {
        "microsecon" | "us" | "usec" | "usecond" | "useconds" | "usecs" => "microseconds",
        "millisecon" | "ms" | "msec" | "msecond" | "mseconds" | "msecs" => "milliseconds",
        "s" | "sec" | "second" | "seconds" | "secs" => "second",
        "m" | "min" | "mins" | "minute" | "minutes" => "minute",
        "h" | "hour" | "hours" | "hr" | "hrs" => "hour",
        "d" | "day" | "days" => "day",
        "w" | "week" | "weeks" => "week",
        "mon" | "mons" | "month" | "months" => "month",
        "qtr" | "quarter" => "quarter",
        "y" | "year" | "years" | "yr" | "yrs" => "year",
        "dec" | "decade" | "decades" | "decs" => "decade",
        "c" | "cent" | "century" | "centuries" => "century",
        "mil" | "millennia" | "millennium" | "mils" => "millennium",
        _ => u,
    }
}

/// `date_trunc(unit, value)`.
pub fn date_trunc(unit: &str, v: &Value) -> Result<Value> {
    let unit = unit.to_ascii_lowercase();
    let unit = canonical_unit(&unit).to_string();
    // Truncated, infinity is still infinity.
    if is_infinite(v) {
        return Ok(match v {
            Value::Date(d) => Value::TimestampTz(if *d > 0 { i64::MAX } else { i64::MIN }),
            other => other.clone(),
        });
    }
    if let Value::Interval(i) = v {
        let (m, d, us) = (i.months, i.days, i.micros);
        let t = |step: i64| us - us % step;
        let r = match unit.as_str() {
            "microseconds" => *i,
            "milliseconds" => Interval::new(m, d, t(1000)),
            "second" => Interval::new(m, d, t(US)),
            "minute" => Interval::new(m, d, t(60 * US)),
            "hour" => Interval::new(m, d, t(3600 * US)),
            "day" => Interval::new(m, d, 0),
            "month" => Interval::new(m, 0, 0),
            "quarter" => Interval::new(m - m % 3, 0, 0),
            "year" => Interval::new(m - m % 12, 0, 0),
            "decade" => Interval::new(m - m % 120, 0, 0),
            "century" => Interval::new(m - m % 1200, 0, 0),
            "millennium" => Interval::new(m - m % 12000, 0, 0),
            other => return Err(bad_unit(other, "interval")),
        };
        return Ok(Value::Interval(r));
    }
    let (t, tz) = local_of(v)?;
    // date_trunc(text, date) is the timestamptz form, as in PostgreSQL.
    let tz = tz || matches!(v, Value::Date(_));
    let days = t.div_euclid(DAY_US);
    let (y, mo, _) = civil_from_days(days);
    let step = |s: i64| t - t.rem_euclid(s);
    let ymd = |y: i64, m: u32| days_from_civil(y, m, 1) * DAY_US;
    let r = match unit.as_str() {
        "microseconds" => t,
        "milliseconds" => step(1000),
        "second" => step(US),
        "minute" => step(60 * US),
        "hour" => step(3600 * US),
        "day" => step(DAY_US),
        // Weeks start on Monday; 1970-01-01 was a Thursday.
        "week" => (days - (days + 3).rem_euclid(7)) * DAY_US,
        "month" => ymd(y, mo),
        "quarter" => ymd(y, (mo - 1) / 3 * 3 + 1),
        "year" => ymd(y, 1),
        "decade" => ymd(y.div_euclid(10) * 10, 1),
        "century" => ymd(if y > 0 { (y - 1) / 100 * 100 + 1 } else { y }, 1),
        "millennium" => ymd(if y > 0 { (y - 1) / 1000 * 1000 + 1 } else { y }, 1),
        other => return Err(bad_unit(other, crate::functions::type_name(v))),
    };
    Ok(if tz {
        Value::TimestampTz(local_to_tz(r))
    } else {
        Value::Timestamp(r)
    })
}

fn dec(i: i64) -> Decimal {
    Decimal::from(i)
}

/// Seconds with six decimals from microseconds (PostgreSQL's scale).
fn secs(us: i64) -> Decimal {
    Decimal::new(us, 6)
}

/// `extract(field from value)` as numeric (`date_part` casts to double).
pub fn extract(field: &str, v: &Value) -> Result<Value> {
    let f = field.to_ascii_lowercase();
    let f = canonical_unit(f.trim_matches('\'').trim_matches('"'));
    if let Value::Interval(i) = v {
        let us = i.micros;
        let r = match f {
            "microsecond" | "microseconds" => dec(us % 60_000_000),
            "millisecond" | "milliseconds" => Decimal::new(us % 60_000_000, 3),
            "second" | "seconds" => secs(us % 60_000_000),
            "minute" | "minutes" => dec(us / 60_000_000 % 60),
            "hour" | "hours" => dec(us / 3_600_000_000),
            "day" | "days" => dec(i.days as i64),
            "month" | "months" | "mon" => dec(i.months as i64 % 12),
            "year" | "years" => dec(i.months as i64 / 12),
            "quarter" => dec(i.months as i64 % 12 / 3 + 1),
            "decade" => dec(i.months as i64 / 120),
            "century" => dec(i.months as i64 / 1200),
            "millennium" => dec(i.months as i64 / 12000),
            "epoch" => {
                // A year is 365.25 days, a month 30, as PostgreSQL counts.
                let years = i.months as i64 / 12;
                let months = i.months as i64 % 12;
                Decimal::new(years * 36_525 * 864, 0)
                    + dec((months * 30 + i.days as i64) * 86_400)
                    + secs(us)
            }
            other => return Err(bad_unit(other, "interval")),
        };
        return Ok(Value::Decimal(r.into()));
    }
    if let Value::Time(t) = v {
        let r = match f {
            "hour" => dec(t / 3_600_000_000),
            "minute" => dec(t / 60_000_000 % 60),
            "second" => secs(t % 60_000_000),
            "millisecond" | "milliseconds" => Decimal::new(t % 60_000_000, 3),
            "microsecond" | "microseconds" => dec(t % 60_000_000),
            "epoch" => secs(*t),
            other => return Err(bad_unit(other, "time without time zone")),
        };
        return Ok(Value::Decimal(r.into()));
    }
    if is_infinite(v) {
        // PostgreSQL: fields that grow with time are ±Infinity, the
        // others NULL.
        use walden_engine::types::dtinput::{DATE_MINUS_INFINITY, TIMESTAMP_MINUS_INFINITY};
        let neg = match v {
            Value::Date(d) => *d == DATE_MINUS_INFINITY,
            Value::Timestamp(t) | Value::TimestampTz(t) => *t == TIMESTAMP_MINUS_INFINITY,
            _ => false,
        };
        return Ok(match f {
            "year" | "years" | "decade" | "decades" | "century" | "centuries" | "millennium"
            | "millennia" | "julian" | "isoyear" | "epoch" => Value::Decimal(if neg {
                walden_engine::types::Numeric::NegInf
            } else {
                walden_engine::types::Numeric::PosInf
            }),
            "month" | "months" | "mon" | "day" | "days" | "hour" | "hours" | "minute"
            | "minutes" | "second" | "seconds" | "millisecond" | "milliseconds" | "microsecond"
            | "microseconds" | "dow" | "isodow" | "doy" | "week" | "quarter" | "timezone"
            | "timezone_hour" | "timezone_minute" => Value::Null,
            other => return Err(bad_unit(other, crate::functions::type_name(v))),
        });
    }
    let (t, tz) = local_of(v)?;
    let is_date = matches!(v, Value::Date(_));
    let days = t.div_euclid(DAY_US);
    let rem = t.rem_euclid(DAY_US);
    let (y, m, d) = civil_from_days(days);
    let dow = (days + 4).rem_euclid(7);
    let isodow = if dow == 0 { 7 } else { dow };
    // ISO week: the week with the year's first Thursday is week 1.
    let thursday = days - isodow + 4;
    let (iso_year, _, _) = civil_from_days(thursday);
    let iso_week = (thursday - days_from_civil(iso_year, 1, 1)) / 7 + 1;
    let time_field = |x: Decimal| {
        if is_date {
            Err(bad_unit(f, "date"))
        } else {
            Ok(x)
        }
    };
    let r = match f {
        "year" | "years" => dec(if y > 0 { y } else { y - 1 }),
        "month" | "months" | "mon" => dec(m as i64),
        "day" | "days" => dec(d as i64),
        "hour" | "hours" => time_field(dec(rem / 3_600_000_000))?,
        "minute" | "minutes" => time_field(dec(rem / 60_000_000 % 60))?,
        "second" | "seconds" => time_field(secs(rem % 60_000_000))?,
        "millisecond" | "milliseconds" => time_field(Decimal::new(rem % 60_000_000, 3))?,
        "microsecond" | "microseconds" => time_field(dec(rem % 60_000_000))?,
        "dow" => dec(dow),
        "isodow" => dec(isodow),
        "doy" => dec(days - days_from_civil(y, 1, 1) + 1),
        "week" => dec(iso_week),
        "isoyear" => dec(iso_year),
        "quarter" => dec((m as i64 - 1) / 3 + 1),
        "decade" => dec(y.div_euclid(10)),
        "century" => dec(if y > 0 {
            (y + 99) / 100
        } else {
            -((99 - y) / 100)
        }),
        "millennium" => dec(if y > 0 {
            (y + 999) / 1000
        } else {
            -((999 - y) / 1000)
        }),
        "julian" => dec(days + 2_440_588),
        "epoch" => match v {
            Value::TimestampTz(u) => secs(*u),
            _ => secs(t),
        },
        "timezone" if tz => dec(tz_offset(local_to_tz(t)) as i64),
        "timezone_hour" if tz => dec(tz_offset(local_to_tz(t)) as i64 / 3600),
        "timezone_minute" if tz => dec(tz_offset(local_to_tz(t)) as i64 / 60 % 60),
        other => return Err(bad_unit(other, crate::functions::type_name(v))),
    };
    Ok(Value::Decimal(r.into()))
}

/// `age(a, b)`: the difference in years, months and days (and time), as
/// a person counts it, not a fixed number of days.
pub fn age(a: &Value, b: &Value) -> Result<Value> {
    let (x, _) = local_of(a)?;
    let (y, _) = local_of(b)?;
    let (big, small, sign) = if x >= y { (x, y, 1) } else { (y, x, -1) };
    let (by, bm, bd) = civil_from_days(big.div_euclid(DAY_US));
    let (sy, sm, sd) = civil_from_days(small.div_euclid(DAY_US));
    let mut us = big.rem_euclid(DAY_US) - small.rem_euclid(DAY_US);
    let mut days = bd as i64 - sd as i64;
    let mut months = (by * 12 + bm as i64) - (sy * 12 + sm as i64);
    if us < 0 {
        us += DAY_US;
        days -= 1;
    }
    if days < 0 {
        // Borrow the length of the earlier date's month.
        days += days_in_month(sy, sm) as i64;
        months -= 1;
    }
    let iv = Interval::new(
        i32::try_from(months * sign).map_err(|_| out_of_range("interval"))?,
        (days * sign) as i32,
        us * sign,
    );
    Ok(Value::Interval(iv))
}

/// `to_char(v, format)`: numbers by their template, dates and times by
/// theirs ([`crate::functions::to_char_dt`]).
pub fn to_char(v: &Value, fmt: &str) -> Result<Value> {
    if let Value::Int(_) | Value::Float(_) | Value::Decimal(_) = v {
        return crate::functions::num_format::to_char(v, fmt).map(Value::text);
    }
    crate::functions::to_char_dt::to_char(v, fmt)
}

/// `x AT TIME ZONE zone`: a timestamptz as the wall clock in `zone`, a
/// timestamp (a wall clock in `zone`) as the instant. Text and dates are
/// read as timestamptz, as PostgreSQL resolves them.
pub fn at_time_zone(v: Value, zone: &str) -> Result<Value> {
    use walden_engine::types::dtinput::{TIMESTAMP_INFINITY, TIMESTAMP_MINUS_INFINITY};
    let infinite = |t: i64| t == TIMESTAMP_INFINITY || t == TIMESTAMP_MINUS_INFINITY;
    // A dynamic abbreviation (`MSK`) means what its zone meant by it then:
    // at the wall-clock time for a timestamp, at the instant for a
    // timestamptz, as PostgreSQL reads it.
    let lower = zone.trim().to_ascii_lowercase();
    if let Some(name) = walden_engine::types::dtinput::dynamic_zone_abbreviation(&lower) {
        if let (Some(z), Value::Timestamp(t) | Value::TimestampTz(t)) =
            (walden_engine::types::zone::Zone::named(name), &v)
        {
            let t = *t;
            if !infinite(t) {
                let abbr = lower.to_ascii_uppercase();
                return Ok(match v {
                    Value::Timestamp(_) => {
                        Value::TimestampTz(match z.abbreviation_offset(&abbr, z.from_local(t)) {
                            Some(off) => t - off as i64 * 1_000_000,
                            None => z.from_local(t),
                        })
                    }
                    _ => Value::Timestamp(match z.abbreviation_offset(&abbr, t) {
                        Some(off) => t + off as i64 * 1_000_000,
                        None => z.to_local(t),
                    }),
                });
            }
        }
    }
    let z = zone_named(zone)?;
    Ok(match v {
        Value::Null => Value::Null,
        Value::Timestamp(t) if infinite(t) => Value::TimestampTz(t),
        Value::Timestamp(t) => Value::TimestampTz(z.from_local(t)),
        Value::TimestampTz(t) if infinite(t) => Value::Timestamp(t),
        Value::TimestampTz(t) => Value::Timestamp(z.to_local(t)),
        Value::Text(_) | Value::Date(_) => {
            return at_time_zone(
                walden_engine::types::coerce(v, &DataType::TimestampTz)?,
                zone,
            )
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "AT TIME ZONE on a value of type {}",
                crate::functions::operators::type_name(&other)
            )))
        }
    })
}

/// A zone for AT TIME ZONE: a tz database name, a POSIX zone or a
/// numeric one (`'+05:30'` is 5:30 *west*, POSIX's sign, as PostgreSQL
/// reads text here), a zone abbreviation.
pub(crate) fn zone_named(s: &str) -> Result<walden_engine::types::zone::Zone> {
    use walden_engine::types::zone::{self, Zone};
    let t = s.trim();
    let unknown = || {
        SqlError::new(
            ErrorKind::InvalidParameter,
            format!("time zone \"{s}\" not recognized"),
        )
    };
    if let Some(secs) = zone::parse_offset(t) {
        return Zone::fixed(t.to_string(), -secs).ok_or_else(unknown);
    }
    if let Some(secs) = walden_engine::types::dtinput::zone_abbreviation(&t.to_ascii_lowercase()) {
        return Zone::fixed(t.to_string(), secs).ok_or_else(unknown);
    }
    Zone::named(t).ok_or_else(unknown)
}

/// `infinity` / `-infinity` as a date or timestamp stores them.
fn is_infinite(v: &Value) -> bool {
    use walden_engine::types::dtinput::{
        DATE_INFINITY, DATE_MINUS_INFINITY, TIMESTAMP_INFINITY, TIMESTAMP_MINUS_INFINITY,
    };
    match v {
        Value::Date(d) => *d == DATE_INFINITY || *d == DATE_MINUS_INFINITY,
        Value::Timestamp(t) | Value::TimestampTz(t) => {
            *t == TIMESTAMP_INFINITY || *t == TIMESTAMP_MINUS_INFINITY
        }
        _ => false,
    }
}
