//! `numeric`: PostgreSQL's exact decimal, with its range (131072 digits
//! before the point, 16383 after), its display scale and NaN / ±Infinity.
//!
//! A finite value is held as a `rust_decimal::Decimal` when it fits there
//! exactly (at most 28 decimals and a 96-bit mantissa: every TPC-C and
//! pgbench amount), so the common case neither allocates nor pays for
//! big-number arithmetic; beyond that it is a `bigdecimal::BigDecimal`
//! (an arbitrary-size integer and a scale). The scale of either is the
//! value's display scale (`1.50` keeps its zero), always >= 0. A value is
//! `Small` whenever it fits, so the two forms never both hold one value
//! at one scale.

mod arith;
mod input;
#[cfg(test)]
mod tests;
mod transcend;

pub use input::{float_to_numeric, parse_numeric};

use bigdecimal::BigDecimal;
use num_bigint::{BigInt, Sign};
use num_traits::{ToPrimitive, Zero};
use rust_decimal::Decimal;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Digits before the decimal point PostgreSQL's numeric holds.
pub const MAX_INT_DIGITS: i64 = 131_072;
/// Digits after the decimal point (the largest display scale).
pub const MAX_SCALE: i64 = 16_383;
/// The largest display scale a computed result (a quotient, a root) gets.
pub const MAX_RESULT_SCALE: i64 = 1000;

/// Why a numeric operation has no result (PostgreSQL's errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NumericError {
    /// 22003.
    #[error("value overflows numeric format")]
    Overflow,
    /// 22012.
    #[error("division by zero")]
    DivisionByZero,
    /// 2201F.
    #[error("cannot take square root of a negative number")]
    NegativeSqrt,
    /// 2201E.
    #[error("cannot take logarithm of zero")]
    LogZero,
    /// 2201E.
    #[error("cannot take logarithm of a negative number")]
    LogNegative,
    /// 0A000: NaN cast to an integer type (the type's name).
    #[error("cannot convert NaN to {0}")]
    NaNTo(&'static str),
    /// 0A000: ±Infinity cast to an integer type.
    #[error("cannot convert infinity to {0}")]
    InfinityTo(&'static str),
    /// 22003: a finite value outside an integer type's range.
    #[error("{0} out of range")]
    IntegerRange(&'static str),
}

/// A numeric value.
#[derive(Clone, Debug)]
pub enum Numeric {
    /// A finite value that fits a `Decimal` exactly (never negative zero).
    Small(Decimal),
    /// A finite value that does not (scale >= 0).
    Big(Arc<BigDecimal>),
    NaN,
    PosInf,
    NegInf,
}

impl Numeric {
    pub const ZERO: Numeric = Numeric::Small(Decimal::ZERO);
    pub const ONE: Numeric = Numeric::Small(Decimal::ONE);

    /// A `Decimal` as a numeric (negative zero made zero).
    pub fn small(mut d: Decimal) -> Numeric {
        if d.is_zero() {
            d.set_sign_positive(true);
        }
        Numeric::Small(d)
    }

    /// An unscaled integer and a scale, in whichever form holds it.
    pub fn from_parts(int: BigInt, scale: i64) -> Numeric {
        let (int, scale) = if scale < 0 {
            (int * BigInt::from(10u8).pow((-scale) as u32), 0)
        } else {
            (int, scale)
        };
        if scale <= 28 {
            if let Some(m) = int.to_i128() {
                if m.unsigned_abs() < 1u128 << 96 {
                    return Numeric::small(Decimal::from_i128_with_scale(m, scale as u32));
                }
            }
        }
        Numeric::Big(Arc::new(BigDecimal::new(int, scale)))
    }

    /// A `BigDecimal` as a numeric.
    pub fn from_big(b: BigDecimal) -> Numeric {
        let (int, scale) = b.into_bigint_and_scale();
        Numeric::from_parts(int, scale)
    }

    /// The finite value as an unscaled integer and its scale.
    pub fn parts(&self) -> Option<(BigInt, i64)> {
        match self {
            Numeric::Small(d) => Some((BigInt::from(d.mantissa()), d.scale() as i64)),
            Numeric::Big(b) => {
                let (i, s) = b.as_bigint_and_scale();
                Some((i.into_owned(), s))
            }
            _ => None,
        }
    }

    /// The finite value as a `BigDecimal`.
    pub fn to_big(&self) -> Option<BigDecimal> {
        self.parts().map(|(i, s)| BigDecimal::new(i, s))
    }

    pub fn is_nan(&self) -> bool {
        matches!(self, Numeric::NaN)
    }

    pub fn is_finite(&self) -> bool {
        matches!(self, Numeric::Small(_) | Numeric::Big(_))
    }

    pub fn is_infinite(&self) -> bool {
        matches!(self, Numeric::PosInf | Numeric::NegInf)
    }

    pub fn is_zero(&self) -> bool {
        match self {
            Numeric::Small(d) => d.is_zero(),
            Numeric::Big(b) => b.is_zero(),
            _ => false,
        }
    }

    /// -1, 0 or 1 (NaN: 0; PostgreSQL's sign(NaN) is NaN, handled by
    /// the caller).
    pub fn signum(&self) -> i32 {
        match self {
            Numeric::Small(d) if d.is_zero() => 0,
            Numeric::Small(d) => {
                if d.is_sign_negative() {
                    -1
                } else {
                    1
                }
            }
            Numeric::Big(b) => match b.sign() {
                Sign::Minus => -1,
                Sign::NoSign => 0,
                Sign::Plus => 1,
            },
            Numeric::PosInf => 1,
            Numeric::NegInf => -1,
            Numeric::NaN => 0,
        }
    }

    pub fn is_negative(&self) -> bool {
        self.signum() < 0
    }

    /// The display scale (decimals shown); 0 for NaN and ±Infinity.
    pub fn scale(&self) -> i64 {
        match self {
            Numeric::Small(d) => d.scale() as i64,
            Numeric::Big(b) => b.fractional_digit_count(),
            _ => 0,
        }
    }

    /// Whether a finite value has no fractional part.
    pub fn is_integral(&self) -> bool {
        match self {
            Numeric::Small(d) => d.fract().is_zero(),
            Numeric::Big(b) => b.is_integer(),
            _ => false,
        }
    }

    /// The value as a float (NaN and ±Infinity as themselves; beyond
    /// float8's range ±Infinity).
    pub fn to_f64(&self) -> f64 {
        match self {
            Numeric::Small(d) => d.to_f64().unwrap_or(f64::NAN),
            Numeric::Big(b) => {
                // Through its plain text: Rust's reader rounds to the
                // nearest float (beyond the range: ±Infinity).
                let (int, scale) = b.as_bigint_and_scale();
                plain(&int, scale).parse().unwrap_or(f64::NAN)
            }
            Numeric::NaN => f64::NAN,
            Numeric::PosInf => f64::INFINITY,
            Numeric::NegInf => f64::NEG_INFINITY,
        }
    }

    /// The value rounded half away from zero to an integer of the range
    /// `lo..=hi` (an integer type `ty`), PostgreSQL's errors otherwise.
    pub fn to_integer(&self, lo: i64, hi: i64, ty: &'static str) -> Result<i64, NumericError> {
        let r = match self {
            Numeric::NaN => return Err(NumericError::NaNTo(ty)),
            Numeric::PosInf | Numeric::NegInf => return Err(NumericError::InfinityTo(ty)),
            Numeric::Small(d) => d
                .round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
                .to_i64(),
            Numeric::Big(b) => b
                .with_scale_round(0, bigdecimal::RoundingMode::HalfUp)
                .to_i64(),
        };
        r.filter(|i| (lo..=hi).contains(i))
            .ok_or(NumericError::IntegerRange(ty))
    }

    /// The finite value as `Decimal` when it is one (the fast paths).
    pub fn as_small(&self) -> Option<Decimal> {
        match self {
            Numeric::Small(d) => Some(*d),
            _ => None,
        }
    }

    /// Checks PostgreSQL's limits: digits before the point and scale.
    pub fn checked(self) -> Result<Numeric, NumericError> {
        if let Numeric::Big(b) = &self {
            if b.fractional_digit_count() > MAX_SCALE {
                return Err(NumericError::Overflow);
            }
            if !b.is_zero() && b.order_of_magnitude() + 1 > MAX_INT_DIGITS {
                return Err(NumericError::Overflow);
            }
        }
        Ok(self)
    }

    /// Rank among the special values for ordering: -Inf, finite, +Inf, NaN.
    fn rank(&self) -> u8 {
        match self {
            Numeric::NegInf => 0,
            Numeric::Small(_) | Numeric::Big(_) => 1,
            Numeric::PosInf => 2,
            Numeric::NaN => 3,
        }
    }

    /// The value with trailing fractional zeros dropped (the canonical
    /// form equal values share).
    pub fn normalized(&self) -> Numeric {
        match self {
            Numeric::Small(d) => Numeric::small(d.normalize()),
            Numeric::Big(b) => {
                let n = b.normalized();
                if n.fractional_digit_count() < 0 {
                    Numeric::from_big(n.with_scale(0))
                } else {
                    Numeric::from_big(n)
                }
            }
            other => other.clone(),
        }
    }
}

impl From<Decimal> for Numeric {
    fn from(d: Decimal) -> Numeric {
        Numeric::small(d)
    }
}

impl From<i64> for Numeric {
    fn from(i: i64) -> Numeric {
        Numeric::Small(Decimal::from(i))
    }
}

impl From<i32> for Numeric {
    fn from(i: i32) -> Numeric {
        Numeric::Small(Decimal::from(i))
    }
}

impl PartialEq for Numeric {
    fn eq(&self, other: &Numeric) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Numeric {}

impl PartialOrd for Numeric {
    fn partial_cmp(&self, other: &Numeric) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// PostgreSQL's order: -Infinity < every number < Infinity < NaN, and NaN
/// equals NaN.
impl Ord for Numeric {
    fn cmp(&self, other: &Numeric) -> Ordering {
        match (self, other) {
            (Numeric::Small(a), Numeric::Small(b)) => a.cmp(b),
            (a, b) if a.is_finite() && b.is_finite() => {
                let (x, y) = (
                    a.to_big().unwrap_or_default(),
                    b.to_big().unwrap_or_default(),
                );
                x.cmp(&y)
            }
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

/// Equal values hash alike whatever their scale or form, and like the
/// `Value::Int` or `Value::Float` they equal: integral values as an i64,
/// others by their float's bits.
impl Hash for Numeric {
    fn hash<H: Hasher>(&self, state: &mut H) {
        if self.is_integral() {
            let i = match self {
                Numeric::Small(d) => d.to_i64(),
                Numeric::Big(b) => b.to_i64(),
                _ => None,
            };
            if let Some(i) = i {
                return i.hash(state);
            }
        }
        self.to_f64().to_bits().hash(state)
    }
}

/// PostgreSQL's text: plain digits at the display scale, `NaN`,
/// `Infinity`, `-Infinity`.
impl fmt::Display for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Numeric::Small(d) => fmt::Display::fmt(d, f),
            Numeric::Big(b) => {
                let (int, scale) = b.as_bigint_and_scale();
                f.write_str(&plain(&int, scale))
            }
            Numeric::NaN => f.write_str("NaN"),
            Numeric::PosInf => f.write_str("Infinity"),
            Numeric::NegInf => f.write_str("-Infinity"),
        }
    }
}

/// An unscaled integer at a scale (>= 0) as plain decimal text.
fn plain(int: &BigInt, scale: i64) -> String {
    let digits = int.magnitude().to_string();
    let scale = scale.max(0) as usize;
    let mut s = String::with_capacity(digits.len() + scale + 3);
    if int.sign() == Sign::Minus {
        s.push('-');
    }
    if scale == 0 {
        s.push_str(&digits);
    } else if digits.len() > scale {
        let (i, fr) = digits.split_at(digits.len() - scale);
        s.push_str(i);
        s.push('.');
        s.push_str(fr);
    } else {
        s.push_str("0.");
        s.extend(std::iter::repeat_n('0', scale - digits.len()));
        s.push_str(&digits);
    }
    s
}

impl std::str::FromStr for Numeric {
    type Err = crate::error::EngineError;
    /// PostgreSQL's numeric input (22P02 for text that is no number).
    fn from_str(s: &str) -> crate::error::Result<Numeric> {
        parse_numeric(s)?.ok_or_else(|| {
            crate::error::EngineError::Data(format!(
                "invalid input syntax for type numeric: \"{s}\""
            ))
        })
    }
}

impl Default for Numeric {
    fn default() -> Numeric {
        Numeric::ZERO
    }
}

impl std::ops::Neg for Numeric {
    type Output = Numeric;
    fn neg(self) -> Numeric {
        match self {
            Numeric::Small(d) => Numeric::small(-d),
            Numeric::Big(b) => Numeric::Big(Arc::new(-(*b).clone())),
            Numeric::NaN => Numeric::NaN,
            Numeric::PosInf => Numeric::NegInf,
            Numeric::NegInf => Numeric::PosInf,
        }
    }
}

impl std::ops::Neg for &Numeric {
    type Output = Numeric;
    fn neg(self) -> Numeric {
        -(self.clone())
    }
}

/// Big integers' zero test, for the arithmetic module.
fn is_zero_int(i: &BigInt) -> bool {
    i.is_zero()
}
