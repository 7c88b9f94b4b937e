//! numeric's exact functions: scale, min_scale, trim_scale, sign, div,
//! gcd, lcm, factorial, width_bucket, and sqrt with PostgreSQL's result
//! scale. Each result is exact or refused: a result a 28-digit Walden
//! numeric cannot hold at PostgreSQL's scale is refused with 0A000.

use super::*;

fn out_of_range(what: &str) -> SqlError {
    SqlError::new(ErrorKind::NumericOutOfRange, what.to_string())
}

/// The numeric a numeric function takes: integers and floats convert
/// (as PostgreSQL's implicit casts), text is read as numeric.
pub(super) fn num(v: &Value, f: &str) -> Result<Decimal> {
    match v {
        Value::Decimal(d) => Ok(*d),
        Value::Int(i) => Ok(Decimal::from(*i)),
        Value::Text(s) => match crate::functions::numeric_text(s)? {
            Value::Int(i) => Ok(Decimal::from(i)),
            Value::Decimal(d) => Ok(d),
            _ => Err(SqlError::unsupported(format!(
                "{f}() of a numeric value Walden's numeric cannot hold ({s})"
            ))),
        },
        Value::Float(x) => Ok(walden_engine::types::float_to_numeric(*x, 15)?),
        other => Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("function {f}({}) does not exist", type_name(other)),
        )),
    }
}

/// Both operands at one scale (the larger): their mantissas and that scale.
fn aligned(a: Decimal, b: Decimal) -> Option<(i128, i128, u32)> {
    let s = a.scale().max(b.scale());
    let up = |d: Decimal| {
        d.mantissa()
            .checked_mul(10i128.checked_pow(s - d.scale())?)
            .filter(|m| m.unsigned_abs() < 1u128 << 96)
    };
    Some((up(a)?, up(b)?, s))
}

fn too_wide(f: &str) -> SqlError {
    SqlError::unsupported(format!(
        "{f}() with a result over the 28 significant digits Walden's numeric holds"
    ))
}

fn from_parts(m: i128, scale: u32, f: &str) -> Result<Decimal> {
    if m.unsigned_abs() >= 1u128 << 96 || scale > 28 {
        return Err(too_wide(f));
    }
    Ok(Decimal::from_i128_with_scale(m, scale))
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
        Func::Scale => Value::Int(num(&arg(0), "scale")?.scale() as i64),
        // The fewest decimals that keep the value (0 for zero).
        Func::MinScale => Value::Int(num(&arg(0), "min_scale")?.normalize().scale() as i64),
        Func::TrimScale => Value::Decimal(num(&arg(0), "trim_scale")?.normalize()),
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
                Value::Decimal(Decimal::from(if d.is_zero() {
                    0
                } else if d.is_sign_negative() {
                    -1
                } else {
                    1
                }))
            }
        },
        // div(x, y): the quotient truncated toward zero, scale 0.
        Func::Div => {
            let (x, y) = (num(&arg(0), "div")?, num(&arg(1), "div")?);
            if y.is_zero() {
                return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
            }
            let (mx, my, _) = aligned(x, y).ok_or_else(|| too_wide("div"))?;
            Value::Decimal(from_parts(mx / my, 0, "div")?)
        }
        Func::Gcd | Func::Lcm => gcd_lcm(f, arg(0), arg(1))?,
        Func::Factorial => {
            let n = int_arg(&arg(0), "factorial")?;
            if n < 0 {
                return Err(out_of_range("factorial of a negative number is undefined"));
            }
            let mut r: i128 = 1;
            for k in 2..=n {
                r = r
                    .checked_mul(k as i128)
                    .filter(|m| m.unsigned_abs() < 1u128 << 96)
                    .ok_or_else(|| too_wide("factorial"))?;
            }
            Value::Decimal(Decimal::from_i128_with_scale(r, 0))
        }
        Func::WidthBucket => width_bucket(&a)?,
        Func::Float4Numeric => match arg(0) {
            Value::Float(x) => Value::Decimal(walden_engine::types::float_to_numeric(x, 6)?),
            other => other,
        },
        Func::Sqrt => match arg(0) {
            Value::Decimal(d) => Value::Decimal(numeric_sqrt(d)?),
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

/// gcd and lcm: integers stay integers; numerics at the larger scale.
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
    let (ma, mb, s) = aligned(a, b).ok_or_else(|| too_wide(name))?;
    let g = gcd_u(ma.unsigned_abs(), mb.unsigned_abs());
    let r = if lcm {
        match ma.unsigned_abs().checked_div(g) {
            None => 0,
            Some(q) => q
                .checked_mul(mb.unsigned_abs())
                .ok_or_else(|| too_wide(name))?,
        }
    } else {
        g
    };
    Ok(Value::Decimal(from_parts(
        i128::try_from(r).map_err(|_| too_wide(name))?,
        s,
        name,
    )?))
}

fn bucket_error(m: &str) -> SqlError {
    SqlError::new(ErrorKind::InvalidArgumentForWidthBucket, m.to_string())
}

/// width_bucket(operand, low, high, count): float8 when any of the three
/// is a float, else numeric (computed exactly).
fn width_bucket(a: &[Value]) -> Result<Value> {
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
        (x - lo, hi - lo)
    } else {
        if x > lo {
            return Ok(Value::Int(0));
        }
        if x <= hi {
            return past();
        }
        (lo - x, lo - hi)
    };
    // floor(count * num / den) + 1, in integers at one scale.
    let (mn, md, _) = aligned(num_d, den_d).ok_or_else(|| too_wide("width_bucket"))?;
    let q = mn
        .checked_mul(count as i128)
        .map(|p| p / md)
        .ok_or_else(|| too_wide("width_bucket"))?;
    Ok(Value::Int(q as i64 + 1))
}

/// sqrt(numeric) as PostgreSQL: at least 16 significant digits, no fewer
/// decimals than the argument, the last digit rounded half away from zero.
pub(crate) fn numeric_sqrt(d: Decimal) -> Result<Decimal> {
    if d.is_sign_negative() && !d.is_zero() {
        return Err(SqlError::new(
            ErrorKind::InvalidArgumentForPower,
            "cannot take square root of a negative number",
        ));
    }
    let w = base_weight(d);
    // The result's weight in decimal digits is about half the argument's.
    let sweight = (w + 1) * 4 / 2 - 1;
    let rscale = (16 - sweight).max(d.scale() as i64).max(0);
    sqrt_at(d, rscale)
}

/// The weight of a decimal's first base-10000 digit (0 for zero), as
/// PostgreSQL's numeric stores it.
pub(crate) fn base_weight(d: Decimal) -> i64 {
    let m = d.mantissa().unsigned_abs();
    if m == 0 {
        return 0;
    }
    let e10 = m.ilog10() as i64 - d.scale() as i64;
    e10.div_euclid(4)
}

/// The square root of `d` at `rscale` decimals, rounded half away from
/// zero; refused when that needs more than Walden's numeric holds.
pub(crate) fn sqrt_at(d: Decimal, rscale: i64) -> Result<Decimal> {
    if rscale > 28 {
        return Err(too_wide("sqrt"));
    }
    // sqrt(m / 10^s) * 10^(r+1) = sqrt(m * 10^(2r + 2 - s)): one digit
    // more than wanted, truncated, then rounded.
    let m = d.mantissa().unsigned_abs();
    let shift = 2 * (rscale + 1) - d.scale() as i64;
    let n = if shift >= 0 {
        10u128
            .checked_pow(shift as u32)
            .and_then(|p| m.checked_mul(p))
            .ok_or_else(|| too_wide("sqrt"))?
    } else {
        // Dropped digits only lower the radicand below the next integer,
        // which floor(sqrt) does not see.
        m / 10u128.pow((-shift) as u32)
    };
    let mut r = isqrt(n);
    r = r / 10 + u128::from(r % 10 >= 5);
    from_parts(
        i128::try_from(r).map_err(|_| too_wide("sqrt"))?,
        rscale as u32,
        "sqrt",
    )
}

/// power(numeric, numeric) for an integer exponent, as PostgreSQL: at
/// least 16 decimals and no fewer than the base has, rounded half away
/// from zero. The exact power must fit Walden's numeric; a fractional
/// exponent (PostgreSQL goes through exp and ln) is refused.
pub(crate) fn numeric_power(base: Decimal, exp: Decimal) -> Result<Decimal> {
    let undefined = |m: &str| SqlError::new(ErrorKind::InvalidArgumentForPower, m.to_string());
    if base.is_zero() && exp.is_sign_negative() && !exp.is_zero() {
        return Err(undefined("zero raised to a negative power is undefined"));
    }
    if base.is_sign_negative() && !base.is_zero() && !exp.fract().is_zero() {
        return Err(undefined(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let n = exp
        .normalize()
        .to_i32()
        .filter(|_| exp.fract().is_zero())
        .ok_or_else(|| {
            SqlError::unsupported("numeric power() with a fractional or very large exponent")
        })?;
    let rscale = base.scale().max(16);
    let mut p = Decimal::ONE;
    for _ in 0..n.unsigned_abs() {
        p = crate::functions::exact_mul(p, base).map_err(|_| too_wide("power"))?;
    }
    if n < 0 {
        return crate::functions::div_round(Decimal::ONE, p, rscale);
    }
    let mut r =
        p.round_dp_with_strategy(rscale, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
    r.rescale(rscale);
    if r.scale() != rscale {
        return Err(too_wide("power"));
    }
    Ok(r)
}

/// floor(sqrt(n)).
fn isqrt(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    let mut x = (n as f64).sqrt() as u128;
    // Correct the float estimate to the exact floor.
    while x.checked_mul(x).is_none_or(|sq| sq > n) {
        x -= 1;
    }
    while (x + 1).checked_mul(x + 1).is_some_and(|sq| sq <= n) {
        x += 1;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqrt_scales_and_rounds() {
        let d = |s: &str| s.parse::<Decimal>().unwrap();
        assert_eq!(
            numeric_sqrt(d("2")).unwrap().to_string(),
            "1.414213562373095"
        );
        assert_eq!(
            numeric_sqrt(d("4.00")).unwrap().to_string(),
            "2.000000000000000"
        );
        assert_eq!(
            numeric_sqrt(d("0")).unwrap().to_string(),
            "0.000000000000000"
        );
        assert_eq!(isqrt(99), 9);
        assert_eq!(isqrt(100), 10);
    }
}
