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
    Exact(i64, Numeric, Numeric),
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
                let sq = x.mul(&x)?;
                *self = match std::mem::take(self) {
                    StatAcc::Exact(n, s, s2) => StatAcc::Exact(n + 1, s.add(&x)?, s2.add(&sq)?),
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
                let nd = Numeric::from(n);
                let num = nd.mul(&s2)?.sub(&s.mul(&s)?)?;
                if num <= Numeric::ZERO {
                    return Ok(Value::Decimal(Numeric::ZERO));
                }
                let den = nd.mul(&if f.sample() {
                    Numeric::from(n - 1)
                } else {
                    nd.clone()
                })?;
                // NaN or ±Infinity among the values makes the result NaN.
                let var = num.div(&den)?;
                if !var.is_finite() {
                    return Ok(Value::Decimal(Numeric::NaN));
                }
                Ok(Value::Decimal(if f.root() {
                    let scale = var.scale();
                    var.sqrt_at(scale)?
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

/// The two-argument aggregates over (y, x) pairs, in float8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegrFn {
    Count,
    Sxx,
    Syy,
    Sxy,
    AvgX,
    AvgY,
    R2,
    Slope,
    Intercept,
    CovarPop,
    CovarSamp,
    Corr,
}

impl RegrFn {
    pub fn from_name(name: &str) -> Option<RegrFn> {
        Some(match name {
            "regr_count" => RegrFn::Count,
            "regr_sxx" => RegrFn::Sxx,
            "regr_syy" => RegrFn::Syy,
            "regr_sxy" => RegrFn::Sxy,
            "regr_avgx" => RegrFn::AvgX,
            "regr_avgy" => RegrFn::AvgY,
            "regr_r2" => RegrFn::R2,
            "regr_slope" => RegrFn::Slope,
            "regr_intercept" => RegrFn::Intercept,
            "covar_pop" => RegrFn::CovarPop,
            "covar_samp" => RegrFn::CovarSamp,
            "corr" => RegrFn::Corr,
            _ => return None,
        })
    }

    pub fn result_type(self) -> DataType {
        if self == RegrFn::Count {
            DataType::BigInt
        } else {
            DataType::Double
        }
    }
}

/// (n, sum x, sum y, and the sums of squared and crossed deviations),
/// updated as Youngs and Cramer's method, as PostgreSQL does.
#[derive(Clone, Debug, Default)]
pub struct RegrAcc {
    n: f64,
    sx: f64,
    sxx: f64,
    sy: f64,
    syy: f64,
    sxy: f64,
}

fn float_of(v: &Value) -> Result<f64> {
    match cast(v.clone(), &DataType::Double)? {
        Value::Float(x) => Ok(x),
        other => Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "function regr_count({}) does not exist",
                crate::functions::type_name(&other)
            ),
        )),
    }
}

impl RegrAcc {
    /// Adds the pair (y, x); a pair with a NULL is skipped.
    pub fn add(&mut self, y: &Value, x: &Value) -> Result<()> {
        if y.is_null() || x.is_null() {
            return Ok(());
        }
        let (y, x) = (float_of(y)?, float_of(x)?);
        let old = self.clone();
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        if old.n > 0.0 {
            let dx = x * self.n - self.sx;
            let dy = y * self.n - self.sy;
            let scale = 1.0 / (self.n * old.n);
            self.sxx += dx * dx * scale;
            self.syy += dy * dy * scale;
            self.sxy += dx * dy * scale;
            let overflow =
                || SqlError::new(ErrorKind::NumericOutOfRange, "value out of range: overflow");
            // An infinite sum from finite inputs overflowed; from an
            // infinite input the deviations are NaN.
            if self.sx.is_infinite() || self.sxx.is_infinite() {
                if !old.sx.is_infinite() && !x.is_infinite() {
                    return Err(overflow());
                }
                self.sxx = f64::NAN;
            }
            if self.sy.is_infinite() || self.syy.is_infinite() {
                if !old.sy.is_infinite() && !y.is_infinite() {
                    return Err(overflow());
                }
                self.syy = f64::NAN;
            }
            if self.sxy.is_infinite() {
                if !old.sx.is_infinite()
                    && !x.is_infinite()
                    && !old.sy.is_infinite()
                    && !y.is_infinite()
                {
                    return Err(overflow());
                }
                self.sxy = f64::NAN;
            }
        } else {
            if !x.is_finite() {
                self.sxx = f64::NAN;
                self.sxy = f64::NAN;
            }
            if !y.is_finite() {
                self.syy = f64::NAN;
                self.sxy = f64::NAN;
            }
        }
        Ok(())
    }

    pub fn finish(self, f: RegrFn) -> Value {
        let RegrAcc {
            n,
            sx,
            sxx,
            sy,
            syy,
            sxy,
        } = self;
        if f == RegrFn::Count {
            return Value::Int(n as i64);
        }
        let need = if f == RegrFn::CovarSamp { 2.0 } else { 1.0 };
        if n < need {
            return Value::Null;
        }
        let r = match f {
            RegrFn::Count => n,
            RegrFn::Sxx => sxx,
            RegrFn::Syy => syy,
            RegrFn::Sxy => sxy,
            RegrFn::AvgX => sx / n,
            RegrFn::AvgY => sy / n,
            RegrFn::CovarPop => sxy / n,
            RegrFn::CovarSamp => sxy / (n - 1.0),
            RegrFn::Corr if sxx == 0.0 || syy == 0.0 => return Value::Null,
            RegrFn::Corr => sxy / (sxx * syy).sqrt(),
            RegrFn::R2 if sxx == 0.0 => return Value::Null,
            RegrFn::R2 if syy == 0.0 => 1.0,
            RegrFn::R2 => (sxy * sxy) / (sxx * syy),
            RegrFn::Slope | RegrFn::Intercept if sxx == 0.0 => return Value::Null,
            RegrFn::Slope => sxy / sxx,
            RegrFn::Intercept => (sy - sx * sxy / sxx) / n,
        };
        Value::Float(r)
    }
}
