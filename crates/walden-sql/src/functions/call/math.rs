//! Numeric functions: abs, round, trunc, floor/ceil, mod, power, random
//! (sqrt and numeric's exact functions are in `numeric_fns.rs`).

use super::*;

/// Calls one of the numeric functions (the dispatcher in `call.rs` sends only those).
pub(super) fn call(f: Func, a: Vec<Value>) -> Result<Value> {
    let null_in = a.iter().any(|v| v.is_null());
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        // The rest are strict: a NULL argument makes the result NULL.
        _ if null_in => Value::Null,
        Func::Abs => match arg(0) {
            Value::Int(i) => Value::Int(i.checked_abs().ok_or_else(|| {
                SqlError::new(ErrorKind::NumericOutOfRange, "integer out of range")
            })?),
            Value::Float(x) => Value::Float(x.abs()),
            Value::Decimal(d) => Value::Decimal(d.abs()),
            v => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function abs({v}) does not exist"),
                ))
            }
        },
        Func::Round => {
            let places = if a.len() > 1 {
                int_arg(&arg(1), "round")?
            } else {
                0
            };
            match arg(0) {
                // A negative place count rounds to tens, hundreds, ...
                Value::Int(i) if places < 0 => {
                    let d = walden_engine::types::Numeric::from(i).round_at(places);
                    Value::Int(d.to_integer(i64::MIN, i64::MAX, "integer")?)
                }
                Value::Int(i) => Value::Int(i),
                Value::Float(x) => {
                    let m = 10f64.powi(places.clamp(-400, 400) as i32);
                    // rint, as PostgreSQL's round(float8): halves to even.
                    Value::Float((x * m).round_ties_even() / m)
                }
                Value::Decimal(d) => Value::Decimal(d.round_at(places).checked()?),
                v => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedFunction,
                        format!("function round({v}) does not exist"),
                    ))
                }
            }
        }
        Func::Trunc => {
            let places = if a.len() > 1 {
                Some(int_arg(&arg(1), "trunc")?)
            } else {
                None
            };
            let d = match (arg(0), places) {
                (Value::Float(x), None) => return Ok(Value::Float(x.trunc())),
                (Value::Int(i), None) => return Ok(Value::Float(i as f64)),
                (Value::Int(i), Some(_)) => walden_engine::types::Numeric::from(i),
                (Value::Decimal(d), _) => d,
                (v, _) => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedFunction,
                        format!("function trunc({v}) does not exist"),
                    ))
                }
            };
            Value::Decimal(d.trunc_at(places.unwrap_or(0)).checked()?)
        }
        Func::Floor | Func::Ceil => match arg(0) {
            Value::Int(i) => Value::Int(i),
            Value::Float(x) => Value::Float(if f == Func::Floor {
                x.floor()
            } else {
                x.ceil()
            }),
            Value::Decimal(d) => Value::Decimal(if f == Func::Floor {
                d.floor()
            } else {
                d.ceil()
            }),
            v => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function floor({v}) does not exist"),
                ))
            }
        },
        Func::Mod => crate::functions::binary(crate::functions::BinOp::Mod, arg(0), arg(1))?,
        // numeric ^ numeric (or integer) is numeric.
        Func::Power
            if a.iter().any(|v| matches!(v, Value::Decimal(_)))
                && a.iter().all(|v| match v {
                    Value::Decimal(_) | Value::Int(_) => true,
                    Value::Text(s) => matches!(
                        crate::functions::numeric_text(s),
                        Ok(Value::Int(_) | Value::Decimal(_))
                    ),
                    _ => false,
                }) =>
        {
            let (b, e) = (
                super::numeric_fns::num(&arg(0), "power")?,
                super::numeric_fns::num(&arg(1), "power")?,
            );
            Value::Decimal(super::numeric_fns::numeric_power(b, e)?)
        }
        Func::Power => {
            let x = cast(arg(0), &DataType::Double)?;
            let y = cast(arg(1), &DataType::Double)?;
            match (x, y) {
                (Value::Float(x), Value::Float(y)) => {
                    // PostgreSQL's dpow checks.
                    let undefined =
                        |m: &str| SqlError::new(ErrorKind::InvalidArgumentForPower, m.to_string());
                    if x == 0.0 && y < 0.0 {
                        return Err(undefined("zero raised to a negative power is undefined"));
                    }
                    if x < 0.0 && y.is_finite() && y.fract() != 0.0 {
                        return Err(undefined(
                            "a negative number raised to a non-integer power yields a complex result",
                        ));
                    }
                    let r = x.powf(y);
                    if r.is_infinite() && x.is_finite() && y.is_finite() {
                        return Err(SqlError::new(
                            ErrorKind::NumericOutOfRange,
                            "value out of range: overflow",
                        ));
                    }
                    if r == 0.0 && x != 0.0 && x.is_finite() && y.is_finite() {
                        return Err(SqlError::new(
                            ErrorKind::NumericOutOfRange,
                            "value out of range: underflow",
                        ));
                    }
                    Value::Float(r)
                }
                _ => Value::Null,
            }
        }
        Func::Random => Value::Float(rand_f64()),
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not one of the numeric functions"
            )))
        }
    })
}

pub(super) fn rand_f64() -> f64 {
    use std::cell::Cell;
    thread_local!(static S: Cell<u64> = Cell::new(now_micros() as u64 | 1));
    S.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}
