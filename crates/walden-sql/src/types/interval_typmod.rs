//! An interval's type modifier: its fields (`DAY TO SECOND`, `HOUR`, ...)
//! and fractional-second precision, as PostgreSQL's `interval_in` and
//! `interval_scale` apply them: the fields decide what a bare number or an
//! `mm:ss` means and which lower fields are cut off, the precision rounds
//! the seconds (half away from zero).

use crate::error::Result;
use sqlparser::ast::IntervalFields as F;
use walden_engine::types::interval_input::IntervalRange;
use walden_engine::types::{Interval, Value};

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

/// The fields of a qualifier as the interval reader takes them.
fn range_of(fields: Option<F>) -> IntervalRange {
    const Y: u8 = IntervalRange::YEAR;
    const MO: u8 = IntervalRange::MONTH;
    const D: u8 = IntervalRange::DAY;
    const H: u8 = IntervalRange::HOUR;
    const MI: u8 = IntervalRange::MINUTE;
    const S: u8 = IntervalRange::SECOND;
    IntervalRange(match fields {
        None => return IntervalRange::FULL,
        Some(F::Year) => Y,
        Some(F::Month) => MO,
        Some(F::Day) => D,
        Some(F::Hour) => H,
        Some(F::Minute) => MI,
        Some(F::Second) => S,
        Some(F::YearToMonth) => Y | MO,
        Some(F::DayToHour) => D | H,
        Some(F::DayToMinute) => D | H | MI,
        Some(F::DayToSecond) => D | H | MI | S,
        Some(F::HourToMinute) => H | MI,
        Some(F::HourToSecond) => H | MI | S,
        Some(F::MinuteToSecond) => MI | S,
    })
}

/// Reads interval text under a type modifier (`interval_in` with one).
pub fn parse(text: &str, fields: Option<F>, precision: Option<u8>) -> Result<Interval> {
    // Under IntervalStyle sql_standard a leading minus negates every field.
    let sql_standard = walden_engine::types::zone::with_current(|z| {
        z.interval_style == walden_engine::types::interval::IntervalStyle::SqlStandard
    });
    let v = walden_engine::types::interval_in_range(text, range_of(fields), sql_standard)?;
    Ok(apply(v, fields, precision))
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
