//! Trigonometric functions of double precision, in radians and in degrees,
//! with PostgreSQL 15's errors (22003 for an argument outside the domain or
//! an infinite one) and its exact results at the standard angles in degrees
//! (`sind(30)` is exactly 0.5, `tand(45)` exactly 1): the degree functions
//! reduce to the first quadrant and scale by the function's value at a
//! reference angle, as PostgreSQL's float.c documents.

use super::*;

fn out_of_range() -> SqlError {
    SqlError::new(ErrorKind::NumericOutOfRange, "input is out of range")
}

const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295;

fn sind_0_to_30(x: f64) -> f64 {
    let sin_30 = (30.0 * RADIANS_PER_DEGREE).sin();
    ((x * RADIANS_PER_DEGREE).sin() / sin_30) / 2.0
}

fn cosd_0_to_60(x: f64) -> f64 {
    let one_minus_cos_60 = 1.0 - (60.0 * RADIANS_PER_DEGREE).cos();
    1.0 - ((1.0 - (x * RADIANS_PER_DEGREE).cos()) / one_minus_cos_60) / 2.0
}

fn sind_q1(x: f64) -> f64 {
    if x <= 30.0 {
        sind_0_to_30(x)
    } else {
        cosd_0_to_60(90.0 - x)
    }
}

fn cosd_q1(x: f64) -> f64 {
    if x <= 60.0 {
        cosd_0_to_60(x)
    } else {
        sind_0_to_30(90.0 - x)
    }
}

fn asind_q1(x: f64) -> f64 {
    if x <= 0.5 {
        (x.asin() / 0.5f64.asin()) * 30.0
    } else {
        90.0 - (x.acos() / 0.5f64.acos()) * 60.0
    }
}

fn acosd_q1(x: f64) -> f64 {
    if x <= 0.5 {
        90.0 - (x.asin() / 0.5f64.asin()) * 30.0
    } else {
        (x.acos() / 0.5f64.acos()) * 60.0
    }
}

/// An angle in degrees folded into [0, 90], with the sign the folding
/// gives sine (`cosine`: false) or cosine and tangent.
fn fold(x: f64, sign_below_zero: bool, sign_past_90: bool) -> (f64, f64) {
    let mut a = x % 360.0;
    let mut sign = 1.0;
    if a < 0.0 {
        a = -a;
        if sign_below_zero {
            sign = -sign;
        }
    }
    if a > 180.0 {
        a = 360.0 - a;
        if sign_below_zero {
            sign = -sign;
        }
    }
    if a > 90.0 {
        a = 180.0 - a;
        if sign_past_90 {
            sign = -sign;
        }
    }
    (a, sign)
}

/// Zero without its sign (PostgreSQL returns 0, not -0, from tand/cotd).
fn unsigned_zero(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// One of the trigonometric functions of `x` (and `y` for atan2/atan2d).
pub(super) fn trig(g: FloatFn, x: f64, y: f64) -> Result<f64> {
    use FloatFn as F;
    let finite = || {
        if x.is_infinite() {
            Err(out_of_range())
        } else {
            Ok(())
        }
    };
    let unit = || {
        if !(-1.0..=1.0).contains(&x) {
            Err(out_of_range())
        } else {
            Ok(())
        }
    };
    if x.is_nan() || y.is_nan() {
        return Ok(f64::NAN);
    }
    Ok(match g {
        F::Sin => {
            finite()?;
            x.sin()
        }
        F::Cos => {
            finite()?;
            x.cos()
        }
        F::Tan => {
            finite()?;
            x.tan()
        }
        F::Cot => {
            finite()?;
            1.0 / x.tan()
        }
        F::Asin => {
            unit()?;
            x.asin()
        }
        F::Acos => {
            unit()?;
            x.acos()
        }
        F::Atan => x.atan(),
        F::Atan2 => x.atan2(y),
        F::Sind => {
            finite()?;
            let (a, sign) = fold(x, true, false);
            sign * sind_q1(a)
        }
        F::Cosd => {
            finite()?;
            let (a, sign) = fold(x, false, true);
            sign * cosd_q1(a)
        }
        F::Tand => {
            finite()?;
            let (a, sign) = fold(x, true, true);
            let tan_45 = sind_q1(45.0) / cosd_q1(45.0);
            unsigned_zero(sign * ((sind_q1(a) / cosd_q1(a)) / tan_45))
        }
        F::Cotd => {
            finite()?;
            let (a, sign) = fold(x, true, true);
            let cot_45 = cosd_q1(45.0) / sind_q1(45.0);
            unsigned_zero(sign * ((cosd_q1(a) / sind_q1(a)) / cot_45))
        }
        F::Asind => {
            unit()?;
            if x >= 0.0 {
                asind_q1(x)
            } else {
                -asind_q1(-x)
            }
        }
        F::Acosd => {
            unit()?;
            if x >= 0.0 {
                acosd_q1(x)
            } else {
                90.0 + asind_q1(-x)
            }
        }
        F::Atand => (x.atan() / 1f64.atan()) * 45.0,
        F::Atan2d => (x.atan2(y) / 1f64.atan()) * 45.0,
        F::Degrees => x / RADIANS_PER_DEGREE,
        F::Radians => x * RADIANS_PER_DEGREE,
        _ => {
            return Err(SqlError::internal(format!(
                "{g:?} is not a trigonometric function"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degrees_are_exact_at_the_standard_angles() {
        // PostgreSQL 15: every one of these is exact.
        for (x, s) in [
            (0.0, 0.0),
            (30.0, 0.5),
            (90.0, 1.0),
            (150.0, 0.5),
            (180.0, 0.0),
            (210.0, -0.5),
            (270.0, -1.0),
            (330.0, -0.5),
            (360.0, 0.0),
        ] {
            assert_eq!(trig(FloatFn::Sind, x, 0.0).unwrap(), s, "sind({x})");
        }
        for (x, c) in [(60.0, 0.5), (120.0, -0.5), (180.0, -1.0), (300.0, 0.5)] {
            assert_eq!(trig(FloatFn::Cosd, x, 0.0).unwrap(), c, "cosd({x})");
        }
        assert_eq!(trig(FloatFn::Tand, 45.0, 0.0).unwrap(), 1.0);
        assert_eq!(trig(FloatFn::Tand, 90.0, 0.0).unwrap(), f64::INFINITY);
        assert_eq!(trig(FloatFn::Cotd, 180.0, 0.0).unwrap(), f64::NEG_INFINITY);
        assert_eq!(trig(FloatFn::Asind, -0.5, 0.0).unwrap(), -30.0);
        assert_eq!(trig(FloatFn::Acosd, -0.5, 0.0).unwrap(), 120.0);
        assert_eq!(trig(FloatFn::Atan2d, -10.0, 0.0).unwrap(), -90.0);
        assert!(trig(FloatFn::Sin, f64::INFINITY, 0.0).is_err());
        assert!(trig(FloatFn::Asin, 2.0, 0.0).is_err());
    }
}
