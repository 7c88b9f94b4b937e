//! Timestamp arithmetic the date functions share: conversion, months, units.

use super::*;

pub(super) fn to_ts(v: &Value) -> Result<i64> {
    match cast(v.clone(), &DataType::Timestamp)? {
        Value::Timestamp(t) => Ok(t),
        _ => Err(SqlError::new(
            ErrorKind::DataException,
            "expected a timestamp",
        )),
    }
}

pub(super) const DAY: i64 = 86_400_000_000;

pub(super) fn add_months(t: i64, months: i64) -> i64 {
    let days = t.div_euclid(DAY);
    let rem = t.rem_euclid(DAY);
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m as i64 - 1) + months;
    let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    let last = [
        31,
        if (ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0 {
            29
        } else {
            28
        },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ][nm as usize - 1];
    days_from_civil(ny, nm, d.min(last)) * DAY + rem
}

pub(super) fn unit_micros(unit: &str) -> Option<i64> {
    Some(match unit {
        "day" | "dd" | "d" | "dayofyear" | "dy" | "y" | "weekday" | "dw" => DAY,
        "week" | "wk" | "ww" => 7 * DAY,
        "hour" | "hh" => 3_600_000_000,
        "minute" | "mi" | "n" => 60_000_000,
        "second" | "ss" | "s" => 1_000_000,
        "millisecond" | "ms" => 1000,
        "microsecond" | "mcs" => 1,
        _ => return None,
    })
}

pub(super) fn month_units(unit: &str) -> Option<i64> {
    Some(match unit {
        "month" | "mm" | "m" => 1,
        "quarter" | "qq" | "q" => 3,
        "year" | "yy" | "yyyy" => 12,
        _ => return None,
    })
}
