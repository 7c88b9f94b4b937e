//! Logarithms, exponentials, roots and the hyperbolic functions. A numeric
//! argument gives a numeric result (its digits and scale from
//! walden-engine's numeric, as PostgreSQL 15 chooses them); integers and
//! floats give double precision, with PostgreSQL's errors: 2201E for the
//! logarithm of zero or a negative number, 22003 when the result leaves
//! the type's range or the argument the function's domain.

use super::*;
use walden_engine::types::Numeric;

fn out_of_range(m: &str) -> SqlError {
    SqlError::new(ErrorKind::NumericOutOfRange, m.to_string())
}

fn log_error(zero: bool) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidArgumentForLog,
        if zero {
            "cannot take logarithm of zero"
        } else {
            "cannot take logarithm of a negative number"
        },
    )
}

/// Calls ln, exp, log, log10 or one of the float functions.
pub(super) fn call(f: Func, a: Vec<Value>) -> Result<Value> {
    if a.iter().any(|v| v.is_null()) {
        return Ok(Value::Null);
    }
    let numeric = match f {
        Func::Log if a.len() == 2 => true,
        Func::FloatFn(_) => false,
        _ => {
            a.iter().any(|v| matches!(v, Value::Decimal(_)))
                && !a.iter().any(|v| matches!(v, Value::Float(_)))
        }
    };
    if numeric {
        let name = match f {
            Func::Ln => "ln",
            Func::Exp => "exp",
            Func::Log10 => "log10",
            _ => "log",
        };
        let x = super::numeric_fns::num(a.last().unwrap_or(&Value::Null), name)?;
        let ten = Numeric::from(10);
        return Ok(Value::Decimal(match f {
            Func::Ln => x.ln()?,
            Func::Exp => x.exp()?,
            Func::Log if a.len() == 2 => Numeric::log(&super::numeric_fns::num(&a[0], name)?, &x)?,
            _ => Numeric::log(&ten, &x)?,
        }));
    }
    if f == Func::FloatFn(FloatFn::Pi) {
        return Ok(Value::Float(std::f64::consts::PI));
    }
    let float = |v: &Value| match cast(v.clone(), &DataType::Double) {
        Ok(Value::Float(x)) => Ok(x),
        _ => Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("function {f:?}({}) does not exist", type_name(v)),
        )),
    };
    if let Func::FloatFn(
        g @ (FloatFn::Sin
        | FloatFn::Cos
        | FloatFn::Tan
        | FloatFn::Cot
        | FloatFn::Asin
        | FloatFn::Acos
        | FloatFn::Atan
        | FloatFn::Atan2
        | FloatFn::Sind
        | FloatFn::Cosd
        | FloatFn::Tand
        | FloatFn::Cotd
        | FloatFn::Asind
        | FloatFn::Acosd
        | FloatFn::Atand
        | FloatFn::Atan2d
        | FloatFn::Degrees
        | FloatFn::Radians),
    ) = f
    {
        let y = match a.get(1) {
            Some(v) => float(v)?,
            None => 0.0,
        };
        return Ok(Value::Float(super::trig::trig(g, float(&a[0])?, y)?));
    }
    let x = match cast(a[0].clone(), &DataType::Double)? {
        Value::Float(x) => x,
        v => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!("function {f:?}({}) does not exist", type_name(&v)),
            ))
        }
    };
    let logarithm = |x: f64, log: fn(f64) -> f64| {
        if x == 0.0 {
            Err(log_error(true))
        } else if x < 0.0 {
            Err(log_error(false))
        } else {
            Ok(log(x))
        }
    };
    let r = match f {
        Func::Ln => logarithm(x, f64::ln)?,
        Func::Log | Func::Log10 => logarithm(x, f64::log10)?,
        Func::Exp => {
            let r = x.exp();
            if r.is_infinite() && x.is_finite() {
                return Err(out_of_range("value out of range: overflow"));
            }
            if r == 0.0 && x.is_finite() {
                return Err(out_of_range("value out of range: underflow"));
            }
            r
        }
        Func::FloatFn(g) => float_fn(g, x)?,
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not a transcendental function"
            )))
        }
    };
    Ok(Value::Float(r))
}

fn float_fn(g: FloatFn, x: f64) -> Result<f64> {
    let domain = || out_of_range("input is out of range");
    Ok(match g {
        FloatFn::Sqrt => {
            if x < 0.0 {
                return Err(SqlError::new(
                    ErrorKind::InvalidArgumentForPower,
                    "cannot take square root of a negative number",
                ));
            }
            x.sqrt()
        }
        FloatFn::Cbrt => x.cbrt(),
        FloatFn::Sinh => x.sinh(),
        FloatFn::Cosh => x.cosh(),
        FloatFn::Tanh => x.tanh(),
        FloatFn::Asinh => x.asinh(),
        FloatFn::Acosh => {
            if x < 1.0 {
                return Err(domain());
            }
            x.acosh()
        }
        FloatFn::Atanh => {
            if x.abs() > 1.0 {
                return Err(domain());
            }
            x.atanh()
        }
        other => return super::trig::trig(other, x, 0.0),
    })
}
