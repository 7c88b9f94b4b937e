//! The statistical aggregates var_pop, var_samp (variance), stddev_pop,
//! stddev_samp (stddev), as PostgreSQL computes them: over floats a
//! running (count, sum, sum of squared deviations) updated as Youngs and
//! Cramer's method, in float8; over integers and numerics exact sums of
//! the values and their squares, then one numeric division (and square
//! root) at PostgreSQL's result scale.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatFn {
    VarPop,
    VarSamp,
    StddevPop,
    StddevSamp,
}

impl StatFn {
    pub fn from_name(name: &str) -> Option<StatFn> {
        Some(match name {
            "var_pop" => StatFn::VarPop,
            "var_samp" | "variance" => StatFn::VarSamp,
            "stddev_pop" => StatFn::StddevPop,
            "stddev_samp" | "stddev" => StatFn::StddevSamp,
            _ => return None,
        })
    }

    fn sample(self) -> bool {
        matches!(self, StatFn::VarSamp | StatFn::StddevSamp)
    }

    fn root(self) -> bool {
        matches!(self, StatFn::StddevPop | StatFn::StddevSamp)
    }
}

/// The running state: which one is decided by the first value.
#[derive(Clone, Debug, Default)]
pub enum StatAcc {
    #[default]
    Empty,
    /// (n, sum, sum of squared deviations from the mean).
    Float(f64, f64, f64),
    /// (n, sum, sum of squares), exact.
    Exact(i64, Decimal, Decimal),
}

impl StatAcc {
    pub fn add(&mut self, v: &Value) -> Result<()> {
        match v {
            Value::Null => {}
            Value::Float(x) => {
                let x = *x;
                let (n0, sx0, sxx0) = match self {
                    StatAcc::Float(n, sx, sxx) => (*n, *sx, *sxx),
                    _ => (0.0, 0.0, 0.0),
                };
                let n = n0 + 1.0;
                let sx = sx0 + x;
                let mut sxx = sxx0;
                if n0 > 0.0 {
                    let d = x * n - sx;
                    sxx += d * d / (n * n0);
                    if sx.is_infinite() || sxx.is_infinite() {
                        if !sx0.is_infinite() && !x.is_infinite() {
                            return Err(SqlError::new(
                                ErrorKind::NumericOutOfRange,
                                "value out of range: overflow",
                            ));
                        }
                        sxx = f64::NAN;
                    }
                } else if !x.is_finite() {
                    // One infinite or NaN input makes the deviation NaN.
                    sxx = f64::NAN;
                }
                *self = StatAcc::Float(n, sx, sxx);
            }
            Value::Int(_) | Value::Decimal(_) => {
                let x = to_dec(v).unwrap_or_default();
                let sq = exact_mul(x, x)?;
                *self = match std::mem::take(self) {
                    StatAcc::Exact(n, s, s2) => {
                        StatAcc::Exact(n + 1, exact_add(s, x)?, exact_add(s2, sq)?)
                    }
                    _ => StatAcc::Exact(1, x, sq),
                };
            }
            other => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!(
                        "function var_pop({}) does not exist",
                        crate::functions::type_name(other)
                    ),
                ))
            }
        }
        Ok(())
    }

    pub fn finish(self, f: StatFn) -> Result<Value> {
        match self {
            StatAcc::Empty => Ok(Value::Null),
            StatAcc::Float(n, _, sxx) => {
                if f.sample() && n <= 1.0 {
                    return Ok(Value::Null);
                }
                let var = sxx / if f.sample() { n - 1.0 } else { n };
                Ok(Value::Float(if f.root() { var.sqrt() } else { var }))
            }
            StatAcc::Exact(n, s, s2) => {
                if f.sample() && n <= 1 {
                    return Ok(Value::Null);
                }
                let nd = Decimal::from(n);
                let num = exact_add(exact_mul(nd, s2)?, -exact_mul(s, s)?)?;
                if num <= Decimal::ZERO {
                    return Ok(Value::Decimal(Decimal::ZERO));
                }
                let den = exact_mul(nd, if f.sample() { nd - Decimal::ONE } else { nd })?;
                let var = numeric_div(num, den)?;
                Ok(Value::Decimal(if f.root() {
                    crate::functions::sqrt_at(var, var.scale() as i64)?
                } else {
                    var
                }))
            }
        }
    }
}

/// The result type: double precision over floats, else numeric.
pub fn stat_type(arg: Option<&DataType>) -> DataType {
    match arg {
        Some(DataType::Real | DataType::Double) => DataType::Double,
        _ => DataType::Decimal {
            precision: 0,
            scale: 0,
        },
    }
}
