//! An interval's type modifier: its fields (`DAY TO SECOND`, `HOUR`, ...)
//! and fractional-second precision, as PostgreSQL's `interval_in` and
//! `interval_scale` apply them: the fields decide what a bare number or an
//! `mm:ss` means and which lower fields are cut off, the precision rounds
//! the seconds (half away from zero).

use crate::error::{Result, SqlError};
use sqlparser::ast::IntervalFields as F;
use walden_engine::types::{DataType, Interval, Value};

const HOUR_US: i64 = 3_600_000_000;
const MINUTE_US: i64 = 60_000_000;

/// The fields of `INTERVAL '...' leading [TO last]` as one qualifier; `None`
/// for a pair PostgreSQL does not have (`MONTH TO DAY`).
pub fn fields_of(
    leading: &sqlparser::ast::DateTimeField,
    last: Option<&sqlparser::ast::DateTimeField>,
) -> Option<F> {
    use sqlparser::ast::DateTimeField as D;
    Some(match (leading, last) {
        (D::Year, None) => F::Year,
        (D::Month, None) => F::Month,
        (D::Day, None) => F::Day,
        (D::Hour, None) => F::Hour,
        (D::Minute, None) => F::Minute,
        (D::Second, None) => F::Second,
        (D::Year, Some(D::Month)) => F::YearToMonth,
        (D::Day, Some(D::Hour)) => F::DayToHour,
        (D::Day, Some(D::Minute)) => F::DayToMinute,
        (D::Day, Some(D::Second)) => F::DayToSecond,
        (D::Hour, Some(D::Minute)) => F::HourToMinute,
        (D::Hour, Some(D::Second)) => F::HourToSecond,
        (D::Minute, Some(D::Second)) => F::MinuteToSecond,
        _ => return None,
    })
}

/// The unit a bare number counts under these fields: the rightmost one.
fn number_unit(fields: Option<F>) -> &'static str {
    match fields {
        Some(F::Year) => "year",
        Some(F::Month | F::YearToMonth) => "month",
        Some(F::Day) => "day",
        Some(F::Hour | F::DayToHour) => "hour",
        Some(F::Minute | F::DayToMinute | F::HourToMinute) => "minute",
        _ => "second",
    }
}

/// Reads interval text under a type modifier (`interval_in` with one).
pub fn parse(text: &str, fields: Option<F>, precision: Option<u8>) -> Result<Interval> {
    let t = text.trim();
    let owned;
    let t = if fields.is_some() && !t.is_empty() && t.parse::<f64>().is_ok() {
        owned = format!("{t} {}", number_unit(fields));
        owned.as_str()
    } else if fields == Some(F::MinuteToSecond) {
        // Under MINUTE TO SECOND, `a:b` is minutes and seconds.
        owned = t
            .split_whitespace()
            .map(|tok| {
                if tok.matches(':').count() == 1 {
                    let (sign, rest) = match tok.strip_prefix(['-', '+']) {
                        Some(r) => (&tok[..1], r),
                        None => ("", tok),
                    };
                    format!("{sign}0:{rest}")
                } else {
                    tok.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        owned.as_str()
    } else {
        t
    };
    match walden_engine::types::coerce(Value::text(t), &DataType::Interval)? {
        Value::Interval(v) => Ok(apply(v, fields, precision)),
        other => Err(SqlError::internal(format!("interval input gave {other:?}"))),
    }
}

/// An interval kept to its type modifier's fields and precision
/// (`interval_scale`).
pub fn apply(mut v: Interval, fields: Option<F>, precision: Option<u8>) -> Interval {
    let cut = |t: i64, unit: i64| t / unit * unit;
    match fields {
        None | Some(F::Second | F::DayToSecond | F::HourToSecond | F::MinuteToSecond) => {}
        Some(F::Year) => {
            v.months = v.months / 12 * 12;
            v.days = 0;
            v.micros = 0;
        }
        Some(F::Month | F::YearToMonth) => {
            v.days = 0;
            v.micros = 0;
        }
        Some(F::Day) => v.micros = 0,
        Some(F::Hour | F::DayToHour) => v.micros = cut(v.micros, HOUR_US),
        Some(F::Minute | F::DayToMinute | F::HourToMinute) => v.micros = cut(v.micros, MINUTE_US),
    }
    match precision {
        Some(p) => {
            match walden_engine::types::datetime::round_to_precision(Value::Interval(v), p) {
                Value::Interval(r) => r,
                _ => v,
            }
        }
        None => v,
    }
}
