//! The date and time functions: the clock (now(), LOCALTIMESTAMP, ...),
//! PostgreSQL's (date_trunc, extract, date_part, to_char, age) and T-SQL's
//! (DATEADD, DATEDIFF, DATEPART).

use super::super::dates::*;
use super::*;

/// Calls one of the date and time functions (the dispatcher in `call.rs` sends only those).
pub(super) fn call(f: Func, a: Vec<Value>, env: &Env<'_>) -> Result<Value> {
    let null_in = a.iter().any(|v| v.is_null());
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        Func::Now => Value::TimestampTz(env.info.now),
        Func::LocalTimestamp => {
            Value::Timestamp(walden_engine::types::datetime::tz_to_local(env.info.now))
        }
        Func::StatementTimestamp => Value::TimestampTz(env.info.statement_now),
        Func::ClockTimestamp => Value::TimestampTz(now_micros()),
        Func::Today => Value::Date(
            walden_engine::types::datetime::tz_to_local(env.info.now).div_euclid(DAY) as i32,
        ),
        // The rest are strict: a NULL argument makes the result NULL.
        _ if null_in => Value::Null,
        Func::DateAdd => {
            let unit = text_arg(&arg(0));
            let n = int_arg(&arg(1), "DATEADD")?;
            let is_date = matches!(arg(2), Value::Date(_));
            let t = to_ts(&arg(2))?;
            let r = if let Some(m) = month_units(&unit) {
                add_months(t, n * m)
            } else if let Some(u) = unit_micros(&unit) {
                t + n * u
            } else {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("unknown date part \"{unit}\""),
                ));
            };
            if is_date {
                Value::Date(r.div_euclid(DAY) as i32)
            } else {
                Value::Timestamp(r)
            }
        }
        Func::DateDiff => {
            let unit = text_arg(&arg(0));
            let (x, y) = (to_ts(&arg(1))?, to_ts(&arg(2))?);
            if let Some(m) = month_units(&unit) {
                let (ya, ma, _) = civil_from_days(x.div_euclid(DAY));
                let (yb, mb, _) = civil_from_days(y.div_euclid(DAY));
                Value::Int(((yb * 12 + mb as i64) - (ya * 12 + ma as i64)) / m)
            } else if let Some(u) = unit_micros(&unit) {
                // T-SQL counts boundaries crossed.
                Value::Int(y.div_euclid(u) - x.div_euclid(u))
            } else {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("unknown date part \"{unit}\""),
                ));
            }
        }
        Func::DatePart => {
            let unit = text_arg(&arg(0)).to_ascii_lowercase();
            let t = to_ts(&arg(1))?;
            let days = t.div_euclid(DAY);
            let rem = t.rem_euclid(DAY);
            let (y, m, d) = civil_from_days(days);
            Value::Int(match unit.as_str() {
                "year" | "yy" | "yyyy" => y,
                "month" | "mm" | "m" => m as i64,
                "day" | "dd" | "d" => d as i64,
                "hour" | "hh" => rem / 3_600_000_000,
                "minute" | "mi" => rem / 60_000_000 % 60,
                "second" | "ss" => rem / 1_000_000 % 60,
                "epoch" => t / 1_000_000,
                "dow" => (days + 4).rem_euclid(7),
                "doy" | "dayofyear" => days - days_from_civil(y, 1, 1) + 1,
                other => {
                    return Err(SqlError::new(
                        ErrorKind::InvalidParameter,
                        format!("unknown date part \"{other}\""),
                    ))
                }
            })
        }
        Func::TimePrecision(p) => walden_engine::types::datetime::round_to_precision(arg(0), p),
        Func::IntervalTypmod(fields, p) => match arg(0) {
            Value::Null => Value::Null,
            Value::Text(t) => Value::Interval(crate::types::interval_typmod::parse(&t, fields, p)?),
            v => match walden_engine::types::coerce(v, &DataType::Interval)? {
                Value::Interval(i) => {
                    Value::Interval(crate::types::interval_typmod::apply(i, fields, p))
                }
                other => other,
            },
        },
        Func::ToChar => crate::functions::temporal::to_char(&arg(0), &text_arg(&arg(1)))?,
        // date_trunc(field, timestamptz, zone): truncated on the wall
        // clock of that zone.
        Func::DateTrunc if a.len() == 3 => {
            let z = crate::functions::temporal::zone_named(&text_arg(&arg(2)))?;
            let v = walden_engine::types::coerce(arg(1), &DataType::TimestampTz)?;
            let _zone = walden_engine::types::zone::enter(&z);
            crate::functions::temporal::date_trunc(&text_arg(&arg(0)), &v)?
        }
        Func::DateTrunc => crate::functions::temporal::date_trunc(&text_arg(&arg(0)), &arg(1))?,
        Func::Extract => crate::functions::temporal::extract(&text_arg(&arg(0)), &arg(1))?,
        Func::AtTimeZone => crate::functions::temporal::at_time_zone(arg(0), &text_arg(&arg(1)))?,
        Func::DatePartPg => match crate::functions::temporal::extract(&text_arg(&arg(0)), &arg(1))?
        {
            Value::Decimal(d) => Value::Float(d.to_f64()),
            other => other,
        },
        Func::Age => {
            let b = if a.len() == 2 {
                arg(1)
            } else {
                // age(x) counts from today's midnight.
                let local = walden_engine::types::datetime::tz_to_local(env.info.now);
                Value::Timestamp(local - local.rem_euclid(DAY))
            };
            let x = if a.len() == 2 { arg(0) } else { b.clone() };
            let y = if a.len() == 2 { b } else { arg(0) };
            crate::functions::temporal::age(&x, &y)?
        }
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not one of the date and time functions"
            )))
        }
    })
}
