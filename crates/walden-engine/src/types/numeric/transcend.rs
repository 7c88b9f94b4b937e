//! numeric's logarithms, exponential and powers with a fractional (or very
//! large) exponent, at the result scales PostgreSQL 15 chooses: at least 16
//! significant digits, never fewer decimals than an input shows, at most
//! 1000. The digits come from `dashu-float`'s decimal floats, computed with
//! guard digits past the chosen scale and then rounded half away from zero.

use super::{Numeric, NumericError, MAX_RESULT_SCALE};
use dashu_float::{round::mode::HalfAway, Context, DBig};
use dashu_int::IBig;
use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive};
use std::cmp::Ordering;

type R = Result<Numeric, NumericError>;

/// The fewest significant digits a computed result shows.
const MIN_SIG_DIGITS: i64 = 16;
/// Digits computed past the last one shown.
const GUARD: i64 = 12;
/// exp(x) beyond |x| of this many is out of numeric's range (or zero).
const EXP_LIMIT: f64 = (MAX_RESULT_SCALE * 3) as f64;

fn to_dbig(x: &Numeric) -> DBig {
    let (int, scale) = x.parts().unwrap_or_default();
    let i: IBig = int.to_string().parse().unwrap_or_default();
    DBig::from_parts(i, -(scale as isize))
}

fn from_dbig(d: &DBig) -> Numeric {
    let r = d.repr();
    let int: BigInt = r.significand().to_string().parse().unwrap_or_default();
    Numeric::from_parts(int, -(r.exponent() as i64))
}

/// Significant digits of a finite value's unscaled integer.
fn digits(x: &Numeric) -> i64 {
    x.parts()
        .map_or(1, |(i, _)| i.abs().to_string().len() as i64)
}

/// The decimal weight of a finite non-zero value's first digit
/// (floor(log10 |x|)).
fn dweight(x: &Numeric) -> i64 {
    let (i, s) = x.parts().unwrap_or_default();
    i.abs().to_string().len() as i64 - 1 - s
}

fn ctx(precision: i64) -> Context<HalfAway> {
    Context::new(precision.max(20) as usize)
}

/// The decimal weight PostgreSQL estimates for ln(x) before computing it:
/// from x - 1 when x is within [0.9, 1.1], else from x's leading two
/// base-10000 groups in double precision, truncated toward zero.
fn ln_weight_estimate(x: &Numeric) -> i64 {
    if x.signum() <= 0 {
        return 0;
    }
    let (lo, hi) = (
        Numeric::from_parts(9.into(), 1),
        Numeric::from_parts(11.into(), 1),
    );
    if *x >= lo && *x <= hi {
        let d = x.sub(&Numeric::ONE).unwrap_or(Numeric::ZERO);
        return if d.is_zero() { 0 } else { dweight(&d) };
    }
    let w = dweight(x).div_euclid(4);
    let (int, scale) = x.parts().unwrap_or_default();
    // x truncated to two groups: lead * 10^(4(w-1)).
    let k = -scale - 4 * (w - 1);
    let ten = BigInt::from(10u8);
    let lead = if k >= 0 {
        int * ten.pow(k as u32)
    } else {
        int / ten.pow((-k) as u32)
    };
    let ln = lead.to_f64().unwrap_or(1.0).ln() + (4 * (w - 1)) as f64 * std::f64::consts::LN_10;
    ln.abs().log10() as i64
}

fn result_scale(weight: i64, at_least: &[i64]) -> i64 {
    at_least
        .iter()
        .fold(MIN_SIG_DIGITS - weight, |r, s| r.max(*s))
        .clamp(0, MAX_RESULT_SCALE)
}

/// ln(x) of a finite positive value to `precision` significant digits.
/// Near 1 it is ln_1p(x - 1), whose input has few digits when x is close
/// to 1; elsewhere x is given whole (never rounded to the precision first).
fn ln_digits(x: &Numeric, precision: i64) -> DBig {
    let (lo, hi) = (Numeric::from_parts(5.into(), 1), Numeric::from(2));
    if *x > lo && *x < hi {
        let d = x.sub(&Numeric::ONE).unwrap_or(Numeric::ZERO);
        if d.is_zero() {
            return DBig::ZERO;
        }
        return ctx(precision.max(digits(&d) + 5))
            .ln_1p(to_dbig(&d).repr())
            .value();
    }
    ctx(precision.max(digits(x) + 5))
        .ln(to_dbig(x).repr())
        .value()
}

fn check_log_arg(x: &Numeric) -> Result<(), NumericError> {
    match x.signum().cmp(&0) {
        Ordering::Less => Err(NumericError::LogNegative),
        Ordering::Equal if !x.is_nan() => Err(NumericError::LogZero),
        _ => Ok(()),
    }
}

impl Numeric {
    /// The natural logarithm.
    pub fn ln(&self) -> R {
        if self.is_nan() {
            return Ok(Numeric::NaN);
        }
        check_log_arg(self)?;
        if self.is_infinite() {
            return Ok(Numeric::PosInf);
        }
        let w = ln_weight_estimate(self);
        let rscale = result_scale(w, &[self.scale()]);
        let r = ln_digits(self, rscale + w + 1 + GUARD);
        Ok(from_dbig(&r).round_at(rscale))
    }

    /// The logarithm of `self` to `base` (log(base, x)).
    pub fn log(base: &Numeric, x: &Numeric) -> R {
        if base.is_nan() || x.is_nan() {
            return Ok(Numeric::NaN);
        }
        check_log_arg(base)?;
        check_log_arg(x)?;
        match (base.is_infinite(), x.is_infinite()) {
            (true, true) => return Ok(Numeric::NaN),
            (true, false) => return Ok(Numeric::ZERO),
            (false, true) => return Ok(Numeric::PosInf),
            _ => {}
        }
        if *base == Numeric::ONE {
            return Err(NumericError::DivisionByZero);
        }
        let (wb, wx) = (ln_weight_estimate(base), ln_weight_estimate(x));
        let w = wx - wb;
        let rscale = result_scale(w, &[base.scale(), x.scale()]);
        let p = (rscale + w + 1 + GUARD).max(1);
        let (lb, lx) = (ln_digits(base, p), ln_digits(x, p));
        let q = ctx(p).div(lx.repr(), lb.repr()).value();
        Ok(from_dbig(&q).round_at(rscale))
    }

    /// e raised to the value.
    pub fn exp(&self) -> R {
        match self {
            Numeric::NaN => return Ok(Numeric::NaN),
            Numeric::PosInf => return Ok(Numeric::PosInf),
            Numeric::NegInf => return Ok(Numeric::ZERO),
            _ => {}
        }
        let val = self.to_f64();
        let w10 = (val * std::f64::consts::LOG10_E)
            .clamp(-(MAX_RESULT_SCALE as f64), MAX_RESULT_SCALE as f64);
        let rscale = result_scale(w10 as i64, &[self.scale()]);
        if val.abs() >= EXP_LIMIT {
            if val > 0.0 {
                return Err(NumericError::Overflow);
            }
            return Ok(Numeric::ZERO.round_at(rscale));
        }
        let p = (w10.floor() as i64 + rscale + 1 + GUARD).max(digits(self) + 5);
        let r = ctx(p).exp(to_dbig(self).repr()).value();
        from_dbig(&r).round_at(rscale).checked()
    }

    /// |base| ^ exp (base non-zero, finite; exp finite) through
    /// exp(exp * ln |base|), negated when `negate`, at `rscale` decimals
    /// (`None`: PostgreSQL's scale for a fractional power).
    pub fn pow_by_ln(&self, exp: &Numeric, rscale: Option<i64>, negate: bool) -> R {
        let base = self.abs();
        let lnw = ln_weight_estimate(&base);
        // A first, rough exp * ln(base): the result's decimal weight.
        let rough = ln_digits(&base, 20);
        let val = from_dbig(&rough).to_f64() * exp.to_f64();
        if val.abs() > EXP_LIMIT * 1.0033 {
            if val > 0.0 {
                return Err(NumericError::Overflow);
            }
            return Ok(Numeric::ZERO.round_at(rscale.unwrap_or(MAX_RESULT_SCALE)));
        }
        let w10 = val * std::f64::consts::LOG10_E;
        let rscale =
            rscale.unwrap_or_else(|| result_scale(w10 as i64, &[base.scale(), exp.scale()]));
        let sig = (rscale + w10 as i64).max(0);
        let ew = if exp.is_zero() {
            0
        } else {
            dweight(exp).max(0)
        };
        let yw = if val == 0.0 {
            0
        } else {
            (val.abs().log10().floor() as i64).max(0)
        };
        // Significant digits: of ln(base), so that exp * ln(base) is
        // exact to 10^-(sig + guard); of that product and its exp.
        let ln_b = ln_digits(&base, sig + 2 * GUARD + ew + lnw + 2);
        let c = ctx(sig + 2 * GUARD + yw + 2);
        let y = c.mul(ln_b.repr(), to_dbig(exp).repr()).value();
        let r = from_dbig(&c.exp(y.repr()).value()).round_at(rscale);
        (if negate { -r } else { r }).checked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Numeric {
        s.parse().unwrap()
    }

    #[test]
    fn as_postgres() {
        assert_eq!(
            n("0.0456789").ln().unwrap().to_string(),
            "-3.0861187944847439"
        );
        assert_eq!(
            n("1.2345678e-28").ln().unwrap().to_string(),
            "-64.26166165451762991204894255882820859"
        );
        assert_eq!(
            n("0.99949452").ln().unwrap().to_string(),
            "-0.00050560779808326467"
        );
        assert_eq!(
            n("32.999").exp().unwrap().to_string(),
            "214429043492155.053"
        );
        assert_eq!(
            n("-32.999").exp().unwrap().to_string(),
            "0.000000000000004663547361468248"
        );
        assert_eq!(
            Numeric::log(&n("10"), &n("9.999999999999999999"))
                .unwrap()
                .to_string(),
            "1.000000000000000000"
        );
        assert_eq!(
            Numeric::log(&n("0.99923"), &n("4.58934e34"))
                .unwrap()
                .to_string(),
            "-103611.55579544132"
        );
        assert_eq!(
            n("32.1")
                .pow_by_ln(&n("9.8"), None, false)
                .unwrap()
                .to_string(),
            "580429286790711.10"
        );
        assert_eq!(n("0").ln(), Err(NumericError::LogZero));
        assert_eq!(n("-1").ln(), Err(NumericError::LogNegative));
    }
}
