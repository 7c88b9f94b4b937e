//! numeric's exact functions: scale, min_scale, trim_scale, sign, div,
//! gcd, lcm, factorial, width_bucket, sqrt and power with PostgreSQL's
//! result scales and its answers for NaN and ±Infinity.

use super::*;
use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use walden_engine::types::Numeric;

fn out_of_range(what: &str) -> SqlError {
    SqlError::new(ErrorKind::NumericOutOfRange, what.to_string())
}

/// The numeric a numeric function takes: integers and floats convert
/// (as PostgreSQL's implicit casts), text is read as numeric.
pub(super) fn num(v: &Value, f: &str) -> Result<Numeric> {
    match v {
        Value::Decimal(d) => Ok(d.clone()),
        Value::Int(i) => Ok(Numeric::from(*i)),
        Value::Text(s) => match crate::functions::numeric_text(s)? {
            Value::Int(i) => Ok(Numeric::from(i)),
            Value::Decimal(d) => Ok(d),
            _ => Err(SqlError::new(
                ErrorKind::InvalidText,
                format!("invalid input syntax for type numeric: \"{s}\""),
            )),
        },
        Value::Float(x) => Ok(walden_engine::types::float_to_numeric(*x, 15)?),
        other => Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("function {f}({}) does not exist", type_name(other)),
        )),
    }
}

/// Both finite operands as integers at their larger scale, and that scale.
fn aligned(a: &Numeric, b: &Numeric) -> (BigInt, BigInt, i64) {
    let (ai, as_) = a.parts().unwrap_or_default();
    let (bi, bs) = b.parts().unwrap_or_default();
    let s = as_.max(bs);
    let up = |i: BigInt, from: i64| i * BigInt::from(10u8).pow((s - from) as u32);
    (up(ai, as_), up(bi, bs), s)
}

fn gcd_u(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Calls one of the functions this file holds.
pub(super) fn call(f: Func, a: Vec<Value>) -> Result<Value> {
    if a.iter().any(|v| v.is_null()) {
        return Ok(Value::Null);
    }
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        // NaN and ±Infinity have no scale: NULL.
        Func::Scale => match num(&arg(0), "scale")? {
            d if d.is_finite() => Value::Int(d.scale()),
            _ => Value::Null,
        },
        // The fewest decimals that keep the value (0 for zero).
        Func::MinScale => match num(&arg(0), "min_scale")? {
            d if d.is_finite() => Value::Int(d.normalized().scale()),
            _ => Value::Null,
        },
        Func::TrimScale => Value::Decimal(num(&arg(0), "trim_scale")?.normalized()),
        Func::Sign => match arg(0) {
            Value::Float(x) => Value::Float(if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                // Zero (of either sign) and NaN.
                0.0
            }),
            // sign(integer) resolves to sign(double precision).
            Value::Int(i) => Value::Float(i.signum() as f64),
            v => {
                let d = num(&v, "sign")?;
                Value::Decimal(if d.is_nan() {
                    Numeric::NaN
                } else {
                    Numeric::from(d.signum())
                })
            }
        },
        // div(x, y): the quotient truncated toward zero, scale 0.
        Func::Div => Value::Decimal(num(&arg(0), "div")?.div_trunc(&num(&arg(1), "div")?)?),
        Func::Gcd | Func::Lcm => gcd_lcm(f, arg(0), arg(1))?,
        Func::Factorial => {
            let n = int_arg(&arg(0), "factorial")?;
            if n < 0 {
                return Err(out_of_range("factorial of a negative number is undefined"));
            }
            // 32177! is the largest within numeric's 131072 digits.
            if n > 32177 {
                return Err(walden_engine::types::NumericError::Overflow.into());
            }
            let mut r = BigInt::from(1u8);
            for k in 2..=n {
                r *= k;
            }
            Value::Decimal(Numeric::from_parts(r, 0))
        }
        Func::WidthBucket => width_bucket(&a)?,
        Func::Float4Numeric => match arg(0) {
            Value::Float(x) => Value::Decimal(walden_engine::types::float_to_numeric(x, 6)?),
            other => other,
        },
        Func::Sqrt => match arg(0) {
            Value::Decimal(d) => Value::Decimal(d.sqrt()?),
            other => {
                return math_sqrt_float(other);
            }
        },
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not one of the numeric functions"
            )))
        }
    })
}

fn math_sqrt_float(v: Value) -> Result<Value> {
    match cast(v, &DataType::Double)? {
        Value::Float(x) if x >= 0.0 || x.is_nan() => Ok(Value::Float(x.sqrt())),
        _ => Err(SqlError::new(
            ErrorKind::InvalidArgumentForPower,
            "cannot take square root of a negative number",
        )),
    }
}

/// gcd and lcm: integers stay integers; numerics at the larger scale
/// (NaN when either is NaN or infinite, as PostgreSQL).
fn gcd_lcm(f: Func, x: Value, y: Value) -> Result<Value> {
    let lcm = f == Func::Lcm;
    if let (Value::Int(x), Value::Int(y)) = (&x, &y) {
        let g = gcd_u(x.unsigned_abs() as u128, y.unsigned_abs() as u128);
        // lcm(x, 0) is 0 (g is then |x|, or 0 when both are).
        let r = if lcm {
            (x.unsigned_abs() as u128)
                .checked_div(g)
                .map_or(0, |q| q * y.unsigned_abs() as u128)
        } else {
            g
        };
        return i64::try_from(r)
            .map(Value::Int)
            .map_err(|_| out_of_range("bigint out of range"));
    }
    let name = if lcm { "lcm" } else { "gcd" };
    let (a, b) = (num(&x, name)?, num(&y, name)?);
    if !a.is_finite() || !b.is_finite() {
        return Ok(Value::Decimal(Numeric::NaN));
    }
    let (ma, mb, s) = aligned(&a, &b);
    let g = ma.abs().gcd(&mb.abs());
    let r = if lcm {
        if g.is_zero() {
            BigInt::zero()
        } else {
            (ma.abs() / &g) * mb.abs()
        }
    } else {
        g
    };
    Ok(Value::Decimal(Numeric::from_parts(r, s).checked()?))
}

fn bucket_error(m: &str) -> SqlError {
    SqlError::new(ErrorKind::InvalidArgumentForWidthBucket, m.to_string())
}

/// width_bucket(operand, low, high, count): float8 when any of the three
/// is a float, else numeric (computed exactly).
fn width_bucket(a: &[Value]) -> Result<Value> {
    if let [x, thresholds] = a {
        return width_bucket_array(x, thresholds);
    }
    let count = int_arg(&a[3], "width_bucket")?;
    if count <= 0 {
        return Err(bucket_error("count must be greater than zero"));
    }
    if count > i32::MAX as i64 {
        return Err(out_of_range("integer out of range"));
    }
    let past = || {
        count
            .checked_add(1)
            .filter(|c| *c <= i32::MAX as i64)
            .map(Value::Int)
            .ok_or_else(|| out_of_range("integer out of range"))
    };
    if a[..3].iter().any(|v| matches!(v, Value::Float(_))) {
        let fl = |v: &Value| match cast(v.clone(), &DataType::Double)? {
            Value::Float(x) => Ok(x),
            _ => Err(SqlError::internal("width_bucket: not a float")),
        };
        let (x, lo, hi) = (fl(&a[0])?, fl(&a[1])?, fl(&a[2])?);
        if x.is_nan() || lo.is_nan() || hi.is_nan() {
            return Err(bucket_error(
                "operand, lower bound, and upper bound cannot be NaN",
            ));
        }
        if lo.is_infinite() || hi.is_infinite() {
            return Err(bucket_error("lower and upper bounds must be finite"));
        }
        if lo == hi {
            return Err(bucket_error("lower bound cannot equal upper bound"));
        }
        let c = count as f64;
        let r = if lo < hi {
            if x < lo {
                0
            } else if x >= hi {
                return past();
            } else {
                ((c * ((x - lo) / (hi - lo))) as i64 + 1).min(count)
            }
        } else if x > lo {
            0
        } else if x <= hi {
            return past();
        } else {
            ((c * ((lo - x) / (lo - hi))) as i64 + 1).min(count)
        };
        return Ok(Value::Int(r));
    }
    let (x, lo, hi) = (
        num(&a[0], "width_bucket")?,
        num(&a[1], "width_bucket")?,
        num(&a[2], "width_bucket")?,
    );
    if x.is_nan() || lo.is_nan() || hi.is_nan() {
        return Err(bucket_error(
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    if lo.is_infinite() || hi.is_infinite() {
        return Err(bucket_error("lower and upper bounds must be finite"));
    }
    if lo == hi {
        return Err(bucket_error("lower bound cannot equal upper bound"));
    }
    let (num_d, den_d) = if lo < hi {
        if x < lo {
            return Ok(Value::Int(0));
        }
        if x >= hi {
            return past();
        }
        (x.sub(&lo)?, hi.sub(&lo)?)
    } else {
        if x > lo {
            return Ok(Value::Int(0));
        }
        if x <= hi {
            return past();
        }
        (lo.sub(&x)?, lo.sub(&hi)?)
    };
    // floor(count * num / den) + 1, in integers at one scale.
    let (mn, md, _) = aligned(&num_d, &den_d);
    let q = (mn * count) / md;
    Ok(Value::Int(q.to_i64().unwrap_or(count) + 1))
}

/// width_bucket(operand, thresholds): how many of the (sorted) thresholds
/// are at or below the operand, found by bisection as PostgreSQL does.
fn width_bucket_array(x: &Value, thresholds: &Value) -> Result<Value> {
    let arr = match thresholds {
        Value::Array(a) => a.clone(),
        // An untyped '{...}' literal, read with the operand's type.
        Value::Text(_) => {
            let elem = match x {
                Value::Int(_) => DataType::BigInt,
                Value::Float(_) => DataType::Double,
                Value::Decimal(_) => DataType::Decimal {
                    precision: 0,
                    scale: 0,
                },
                _ => DataType::Text,
            };
            match cast(thresholds.clone(), &DataType::Array(Box::new(elem)))? {
                Value::Array(a) => a,
                _ => return Err(SqlError::internal("width_bucket: not an array")),
            }
        }
        other => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function width_bucket({}, {}) does not exist",
                    type_name(x),
                    type_name(other)
                ),
            ))
        }
    };
    if arr.iter().any(Value::is_null) {
        return Err(SqlError::new(
            ErrorKind::NullValueNotAllowed,
            "thresholds array must not contain NULLs",
        ));
    }
    let (mut lo, mut hi) = (0usize, arr.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if crate::functions::compare(x, &arr[mid])? == Some(std::cmp::Ordering::Less) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(Value::Int(lo as i64))
}

/// power(numeric, numeric) as PostgreSQL 15: its answers for NaN and
/// ±Infinity; an integer exponent computed exactly, then rounded half
/// away from zero to at least 16 decimals and no fewer than the base has;
/// a fractional exponent (or one past int4) through exp and ln, at the
/// scale PostgreSQL gives that (16 significant digits at least).
pub(crate) fn numeric_power(base: Numeric, exp: Numeric) -> Result<Numeric> {
    let undefined = |m: &str| SqlError::new(ErrorKind::InvalidArgumentForPower, m.to_string());
    let one = Numeric::ONE;
    if base.is_nan() || exp.is_nan() {
        // 1 ^ NaN and NaN ^ 0 are 1.
        if (exp.is_nan() && base == one) || (base.is_nan() && exp.is_zero()) {
            return Ok(one);
        }
        return Ok(Numeric::NaN);
    }
    if base.is_zero() && exp.is_negative() {
        return Err(undefined("zero raised to a negative power is undefined"));
    }
    if base.is_negative() && exp.is_finite() && !exp.is_integral() {
        return Err(undefined(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if exp.is_infinite() {
        let mag = base.abs().cmp(&one);
        return Ok(match (mag, exp.is_negative()) {
            (std::cmp::Ordering::Equal, _) => one,
            (std::cmp::Ordering::Greater, false) | (std::cmp::Ordering::Less, true) => {
                Numeric::PosInf
            }
            _ => Numeric::ZERO,
        });
    }
    if base.is_infinite() {
        if exp.is_zero() {
            return Ok(one);
        }
        if exp.is_negative() {
            return Ok(Numeric::ZERO);
        }
        let odd = exp.is_integral() && exp.rem(&Numeric::from(2))?.abs() == one;
        return Ok(if base.is_negative() && odd {
            Numeric::NegInf
        } else {
            Numeric::PosInf
        });
    }
    let odd = || {
        exp.rem(&Numeric::from(2))
            .is_ok_and(|r| r.abs() == Numeric::ONE)
    };
    let Some(n) = exp
        .is_integral()
        .then(|| {
            exp.to_integer(i32::MIN as i64, i32::MAX as i64, "integer")
                .ok()
        })
        .flatten()
    else {
        // A fractional exponent, or an integer past int4: through
        // exp(exp * ln |base|), at PostgreSQL's scale for it.
        if base.is_zero() {
            return Ok(Numeric::ZERO.round_at(16));
        }
        let negate = base.is_negative() && odd();
        return Ok(base.pow_by_ln(&exp, None, negate)?);
    };
    let rscale = base.scale().clamp(16, 1000);
    if n == 0 {
        return Ok(one.round_at(rscale));
    }
    if base.is_zero() {
        return Ok(Numeric::ZERO.round_at(rscale));
    }
    // The result's magnitude decides before its digits are computed:
    // past numeric's range it overflows, far below the last shown
    // decimal it is zero.
    let log10 = n as f64 * base.abs().to_f64().log10();
    if log10 > 131_072.0 {
        return Err(walden_engine::types::NumericError::Overflow.into());
    }
    if log10 < -(rscale as f64) - 2.0 {
        return Ok(Numeric::ZERO.round_at(rscale));
    }
    let (int, scale) = base.parts().unwrap_or_default();
    let work = (int.magnitude().bits() as f64 * 0.302 + 1.0) * n.unsigned_abs() as f64;
    if work > 2_000_000.0 {
        // Too many exact digits to compute them all: through logarithms,
        // to the same scale.
        return Ok(base.pow_by_ln(&exp, Some(rscale), base.is_negative() && odd())?);
    }
    let p = Numeric::from_parts(
        int.pow(n.unsigned_abs() as u32),
        scale * n.unsigned_abs() as i64,
    );
    if n < 0 {
        return Ok(one.div_at(&p, rscale)?);
    }
    Ok(p.round_at(rscale).checked()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_as_postgres() {
        let n = |s: &str| s.parse::<Numeric>().unwrap();
        for (b, e, want) in [
            (
                "2",
                "100",
                "1267650600228229401496703205376.0000000000000000",
            ),
            ("2", "-2", "0.2500000000000000"),
            ("NaN", "0", "1"),
            ("1", "NaN", "1"),
            ("-inf", "3", "-Infinity"),
            ("-inf", "2", "Infinity"),
            ("0.5", "inf", "0"),
            ("2", "-inf", "0"),
        ] {
            assert_eq!(
                numeric_power(n(b), n(e)).unwrap().to_string(),
                want,
                "{b}^{e}"
            );
        }
    }
}
