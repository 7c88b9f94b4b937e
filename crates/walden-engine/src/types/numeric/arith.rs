//! numeric arithmetic with PostgreSQL's result scales and its rules for
//! NaN and ±Infinity. Two `Decimal`s are combined in 128-bit integers
//! when the exact result fits; otherwise the big integers of `num-bigint`
//! (through which `bigdecimal` computes) take over.

use super::{is_zero_int, Numeric, NumericError, MAX_RESULT_SCALE, MAX_SCALE};
use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};

type R = Result<Numeric, NumericError>;

fn pow10(n: i64) -> BigInt {
    BigInt::from(10u8).pow(n as u32)
}

/// `x` and `y` as integers at their larger scale, and that scale.
fn aligned(x: &Numeric, y: &Numeric) -> (BigInt, BigInt, i64) {
    let (xi, xs) = x.parts().unwrap_or_default();
    let (yi, ys) = y.parts().unwrap_or_default();
    let s = xs.max(ys);
    (xi * pow10(s - xs), yi * pow10(s - ys), s)
}

/// The i128 mantissas of two small values at their larger scale.
fn aligned_small(x: &Numeric, y: &Numeric) -> Option<(i128, i128, u32)> {
    let (a, b) = (x.as_small()?, y.as_small()?);
    let s = a.scale().max(b.scale());
    let up = |d: rust_decimal::Decimal| {
        10i128
            .checked_pow(s - d.scale())
            .and_then(|p| d.mantissa().checked_mul(p))
    };
    Some((up(a)?, up(b)?, s))
}

fn small_parts(m: i128, scale: u32) -> Option<Numeric> {
    (m.unsigned_abs() < 1u128 << 96 && scale <= 28)
        .then(|| Numeric::small(rust_decimal::Decimal::from_i128_with_scale(m, scale)))
}

/// `n / d` rounded half away from zero (d != 0).
fn div_round_int(n: &BigInt, d: &BigInt) -> BigInt {
    let (q, r) = n.div_rem(d);
    if (r.abs() * 2u8) >= d.abs() {
        if (n.sign() == Sign::Minus) != (d.sign() == Sign::Minus) {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

/// The weight of |v|'s leading base-10000 digit and that digit (PostgreSQL
/// stores numerics in base 10000; its result scales count in those).
/// (0, 0) for zero.
pub(crate) fn base_weight(v: &Numeric) -> (i64, u32) {
    let Some((int, scale)) = v.parts() else {
        return (0, 0);
    };
    if int.is_zero() {
        return (0, 0);
    }
    let digits = int.magnitude().to_string();
    let n = digits.len() as i64;
    let e10 = n - 1 - scale;
    let w = e10.div_euclid(4);
    let lead = (e10 - 4 * w + 1) as usize;
    let first: String = digits
        .chars()
        .chain(std::iter::repeat('0'))
        .take(lead)
        .collect();
    (w, first.parse().unwrap_or(0))
}

impl Numeric {
    /// `self + other`, exactly, at the larger scale.
    pub fn add(&self, other: &Numeric) -> R {
        use Numeric::*;
        match (self, other) {
            (NaN, _) | (_, NaN) => Ok(NaN),
            (PosInf, NegInf) | (NegInf, PosInf) => Ok(NaN),
            (PosInf, _) | (_, PosInf) => Ok(PosInf),
            (NegInf, _) | (_, NegInf) => Ok(NegInf),
            _ => {
                if let Some((a, b, s)) = aligned_small(self, other) {
                    if let Some(r) = a.checked_add(b).and_then(|m| small_parts(m, s)) {
                        return Ok(r);
                    }
                }
                let (a, b, s) = aligned(self, other);
                Numeric::from_parts(a + b, s).checked()
            }
        }
    }

    /// `self - other`.
    pub fn sub(&self, other: &Numeric) -> R {
        self.add(&-other)
    }

    /// `self * other`, exactly, at the sum of the scales (PostgreSQL rounds
    /// a scale past 16383 to it).
    pub fn mul(&self, other: &Numeric) -> R {
        use Numeric::*;
        match (self, other) {
            (NaN, _) | (_, NaN) => return Ok(NaN),
            (a, b) if a.is_infinite() || b.is_infinite() => {
                let s = a.signum() * b.signum();
                return Ok(match s {
                    0 => NaN,
                    1 => PosInf,
                    _ => NegInf,
                });
            }
            _ => {}
        }
        if let (Some(a), Some(b)) = (self.as_small(), other.as_small()) {
            if let Some(r) = a
                .mantissa()
                .checked_mul(b.mantissa())
                .and_then(|m| small_parts(m, a.scale() + b.scale()))
            {
                return Ok(r);
            }
        }
        let (xi, xs) = self.parts().unwrap_or_default();
        let (yi, ys) = other.parts().unwrap_or_default();
        let r = Numeric::from_parts(xi * yi, xs + ys);
        if xs + ys > MAX_SCALE {
            return r.round_at(MAX_SCALE).checked();
        }
        r.checked()
    }

    /// `self / other` at PostgreSQL's scale for a quotient: at least 16
    /// significant digits, no fewer decimals than either operand shows.
    pub fn div(&self, other: &Numeric) -> R {
        self.div_special(other).unwrap_or_else(|| {
            let scale = div_scale(self, other);
            self.div_at(other, scale)
        })
    }

    /// A quotient's answer when an operand is NaN, infinite or a zero
    /// divisor (the same for `/` and `div`); `None` for two finite
    /// operands and a divisor that is not zero.
    fn div_special(&self, other: &Numeric) -> Option<R> {
        use Numeric::*;
        Some(match (self, other) {
            (NaN, _) | (_, NaN) => Ok(NaN),
            (a, b) if a.is_infinite() => {
                if b.is_infinite() {
                    Ok(NaN)
                } else if b.is_zero() {
                    Err(NumericError::DivisionByZero)
                } else if a.signum() * b.signum() > 0 {
                    Ok(PosInf)
                } else {
                    Ok(NegInf)
                }
            }
            (_, b) if b.is_infinite() => Ok(Numeric::ZERO),
            (_, b) if b.is_zero() => Err(NumericError::DivisionByZero),
            _ => return None,
        })
    }

    /// A finite `self / other` (other != 0) rounded half away from zero at
    /// `scale` decimals.
    pub fn div_at(&self, other: &Numeric, scale: i64) -> R {
        if other.is_zero() {
            return Err(NumericError::DivisionByZero);
        }
        let (xi, xs) = self.parts().ok_or(NumericError::Overflow)?;
        let (yi, ys) = other.parts().ok_or(NumericError::Overflow)?;
        // q = round(xi * 10^(scale + ys - xs) / yi)
        let e = scale + ys - xs;
        let (n, d) = if e >= 0 {
            (xi * pow10(e), yi)
        } else {
            (xi, yi * pow10(-e))
        };
        Numeric::from_parts(div_round_int(&n, &d), scale).checked()
    }

    /// PostgreSQL's `div(x, y)`: the quotient truncated to an integer.
    pub fn div_trunc(&self, other: &Numeric) -> R {
        self.div_special(other).unwrap_or_else(|| {
            let (a, b, _) = aligned(self, other);
            Numeric::from_parts(a / b, 0).checked()
        })
    }

    /// `self % other`: the remainder of the truncated quotient, at the
    /// larger scale.
    pub fn rem(&self, other: &Numeric) -> R {
        use Numeric::*;
        match (self, other) {
            (NaN, _) | (_, NaN) => Ok(NaN),
            (a, b) if a.is_infinite() => {
                if b.is_zero() {
                    Err(NumericError::DivisionByZero)
                } else {
                    Ok(NaN)
                }
            }
            (a, b) if b.is_infinite() => Ok(a.clone()),
            (_, b) if b.is_zero() => Err(NumericError::DivisionByZero),
            _ => {
                if let Some((a, b, s)) = aligned_small(self, other) {
                    if let Some(r) = small_parts(a % b, s) {
                        return Ok(r);
                    }
                }
                let (a, b, s) = aligned(self, other);
                Numeric::from_parts(a % b, s).checked()
            }
        }
    }

    pub fn abs(&self) -> Numeric {
        if self.is_negative() {
            -self
        } else {
            self.clone()
        }
    }

    /// Rounded half away from zero at `scale` decimals (negative: tens,
    /// hundreds...); the result shows max(scale, 0) decimals. NaN and
    /// ±Infinity stay as they are.
    pub fn round_at(&self, scale: i64) -> Numeric {
        self.to_places(scale, Mode::HalfAway)
    }

    /// Truncated toward zero at `scale` decimals.
    pub fn trunc_at(&self, scale: i64) -> Numeric {
        self.to_places(scale, Mode::Down)
    }

    /// The smallest integer not below the value.
    pub fn ceil(&self) -> Numeric {
        self.to_places(0, Mode::Ceiling)
    }

    /// The largest integer not above the value.
    pub fn floor(&self) -> Numeric {
        self.to_places(0, Mode::Floor)
    }

    fn to_places(&self, scale: i64, mode: Mode) -> Numeric {
        let Some((int, s)) = self.parts() else {
            return self.clone();
        };
        let scale = scale.clamp(-(super::MAX_INT_DIGITS + 1), MAX_SCALE);
        let show = scale.max(0);
        if s <= scale {
            // Nothing to drop: only the shown decimals grow.
            return Numeric::from_parts(int * pow10(show - s), show);
        }
        let unit = pow10(s - scale);
        let (q, r) = int.div_rem(&unit);
        let neg = int.sign() == Sign::Minus;
        let up = match mode {
            Mode::Down => false,
            Mode::HalfAway => r.abs() * 2u8 >= unit,
            Mode::Ceiling => !neg && !is_zero_int(&r),
            Mode::Floor => neg && !is_zero_int(&r),
        };
        let q = if up {
            if neg {
                q - 1
            } else {
                q + 1
            }
        } else {
            q
        };
        // q counts units of 10^-scale; shown at `show` decimals.
        if scale >= 0 {
            Numeric::from_parts(q, scale)
        } else {
            Numeric::from_parts(q * pow10(-scale), 0)
        }
    }

    /// The square root at PostgreSQL's scale (at least 16 significant
    /// digits, no fewer decimals than the input shows).
    pub fn sqrt(&self) -> R {
        match self {
            Numeric::NaN => return Ok(Numeric::NaN),
            Numeric::PosInf => return Ok(Numeric::PosInf),
            v if v.is_negative() => return Err(NumericError::NegativeSqrt),
            _ => {}
        }
        let (w, _) = base_weight(self);
        let sweight = (w + 1) * 4 / 2 - 1;
        let rscale = (16 - sweight).max(self.scale()).clamp(0, MAX_RESULT_SCALE);
        self.sqrt_at(rscale)
    }

    /// The square root of a finite value >= 0, rounded half away from zero
    /// at `rscale` decimals.
    pub fn sqrt_at(&self, rscale: i64) -> R {
        if self.is_negative() {
            return Err(NumericError::NegativeSqrt);
        }
        let (int, s) = self.parts().ok_or(NumericError::Overflow)?;
        // floor(sqrt(x) * 10^(rscale + 1)), then its last digit rounds.
        let e = 2 * (rscale + 1) - s;
        let n = if e >= 0 {
            int * pow10(e)
        } else {
            int / pow10(-e)
        };
        let t = n.sqrt();
        let (q, last) = t.div_rem(&BigInt::from(10u8));
        let q = if last.to_u8().unwrap_or(0) >= 5 {
            q + 1
        } else {
            q
        };
        Numeric::from_parts(q, rscale).checked()
    }

    /// The value at `scale` decimals, rounded half away from zero, when it
    /// has fewer than `precision - scale` digits before the point (the
    /// column type `numeric(precision, scale)`); `None` when it has more.
    /// NaN passes; ±Infinity does not fit any precision.
    pub fn fit(&self, precision: i64, scale: i64) -> Option<Numeric> {
        if self.is_nan() {
            return Some(Numeric::NaN);
        }
        if self.is_infinite() {
            return None;
        }
        let r = self.round_at(scale);
        if r.is_zero() {
            return Some(r);
        }
        let (int, s) = r.parts()?;
        // |r| < 10^(precision - scale): its digits count at most
        // `precision` when expressed at `scale` decimals.
        let digits = int.magnitude().to_string().len() as i64;
        let at_scale = digits - s + scale;
        (at_scale <= precision).then_some(r)
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Down,
    HalfAway,
    Ceiling,
    Floor,
}

/// PostgreSQL's `select_div_scale`.
fn div_scale(x: &Numeric, y: &Numeric) -> i64 {
    let (w1, f1) = base_weight(x);
    let (w2, f2) = base_weight(y);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    (16 - qweight * 4)
        .max(x.scale())
        .max(y.scale())
        .clamp(0, MAX_RESULT_SCALE)
}
