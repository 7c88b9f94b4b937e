//! numeric input: PostgreSQL's syntax, read exactly or refused.
//!
//! Walden's numeric is a 96-bit decimal (28 significant digits). A value
//! it cannot hold exactly (more digits, a larger magnitude, NaN or
//! ±Infinity) is refused with 0A000 rather than rounded: a numeric never
//! changes on the way in.

use crate::error::{EngineError, Result};
use rust_decimal::Decimal;

/// What numeric text is, once its syntax is checked.
enum Shape {
    Number,
    Special,
    Bad,
}

fn shape(t: &str) -> Shape {
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "nan" | "infinity" | "inf") {
        // PostgreSQL takes no sign on NaN.
        return if lower == "nan" && body.len() != t.len() {
            Shape::Bad
        } else {
            Shape::Special
        };
    }
    let (mant, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mant_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exp_ok = exp.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    if mant_ok && exp_ok {
        Shape::Number
    } else {
        Shape::Bad
    }
}

/// Reads numeric text (PostgreSQL's syntax: sign, digits, point,
/// exponent; surrounding blanks allowed). `Ok(None)` when the text is not
/// a number at all (the caller names its type in the 22P02 message).
pub fn parse_numeric(s: &str) -> Result<Option<Decimal>> {
    let t = s.trim();
    match shape(t) {
        Shape::Bad => return Ok(None),
        Shape::Special => {
            return Err(EngineError::NumericUnsupported(
                "numeric NaN and Infinity are not supported".into(),
            ))
        }
        Shape::Number => {}
    }
    let exact = if t.contains(['e', 'E']) {
        // from_scientific fails rather than round when digits are lost.
        Decimal::from_scientific(t).ok().filter(|d| {
            // Confirm no digit was dropped: compare the significant digits.
            significant(&d.to_string()) == significant(t.split(['e', 'E']).next().unwrap_or(""))
        })
    } else {
        // `from_str_exact` refuses (instead of rounding) what needs more
        // than 28 digits.
        let unsigned = t.strip_prefix('+').unwrap_or(t);
        Decimal::from_str_exact(unsigned).ok()
    };
    exact.map(Some).ok_or_else(|| {
        EngineError::NumericUnsupported(format!(
            "numeric value {t} needs more than the 28 significant digits Walden's numeric holds"
        ))
    })
}

/// A float as numeric, the way PostgreSQL converts it: the float's text
/// at `digits` significant digits (15 for float8, 6 for float4, `%g`
/// with trailing zeros dropped) read as numeric. Refused (0A000) when
/// Walden's numeric cannot hold that exactly, or for NaN and ±Infinity,
/// which PostgreSQL converts and Walden's numeric cannot hold.
pub fn float_to_numeric(f: f64, digits: usize) -> Result<Decimal> {
    if !f.is_finite() {
        return Err(EngineError::NumericUnsupported(
            "numeric NaN and Infinity are not supported".into(),
        ));
    }
    if f == 0.0 {
        return Ok(Decimal::ZERO);
    }
    // `{:.N$e}` rounds to N + 1 significant digits as `%g` does.
    let sci = format!("{:.*e}", digits.saturating_sub(1), f.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sig: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sig = sig.trim_end_matches('0');
    let sig = if sig.is_empty() { "0" } else { sig };
    // Written out in positional form: the scale is the digits after the
    // point, as numeric_in gives `%g`'s text.
    let n = sig.len() as i32;
    let body = if exp >= n - 1 {
        format!("{sig}{}", "0".repeat((exp - (n - 1)) as usize))
    } else if exp >= 0 {
        let (i, fr) = sig.split_at(exp as usize + 1);
        format!("{i}.{fr}")
    } else {
        format!("0.{}{sig}", "0".repeat((-exp - 1) as usize))
    };
    let text = if f < 0.0 { format!("-{body}") } else { body };
    parse_numeric(&text)?.ok_or_else(|| EngineError::NumericUnsupported(text))
}

/// The significant digits of a decimal's text (no sign, point, leading
/// or trailing zeros).
fn significant(s: &str) -> String {
    let d: String = s.chars().filter(char::is_ascii_digit).collect();
    d.trim_start_matches('0').trim_end_matches('0').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_exactly_or_refuses() {
        for (s, want) in [
            ("9.4999999", "9.4999999"),
            ("1.000000000000000000001", "1.000000000000000000001"),
            (" -0.50 ", "-0.50"),
            ("+3", "3"),
            (".5", "0.5"),
            ("5.", "5"),
            ("1.5e3", "1500"),
            ("12E-2", "0.12"),
        ] {
            assert_eq!(parse_numeric(s).unwrap().unwrap().to_string(), want, "{s}");
        }
        for s in ["", "abc", "1.2.3", "1e", "e5", "1_000", "-nan", "0x10", "."] {
            assert!(matches!(parse_numeric(s), Ok(None)), "{s}");
        }
        for s in [
            "NaN",
            "-Infinity",
            "inf",
            "123456789012345678901234567890.5",
            "1.0000000000000000000000000000001",
            "1e40",
        ] {
            assert!(
                matches!(parse_numeric(s), Err(EngineError::NumericUnsupported(_))),
                "{s}"
            );
        }
    }

    #[test]
    fn floats_convert_at_postgres_digits() {
        for (f, digits, want) in [
            (0.1 + 0.2, 15, "0.3"),
            (0.1, 15, "0.1"),
            (
                1.234_567_890_123_456_8e-10,
                15,
                "0.000000000123456789012346",
            ),
            (1.5e20, 15, "150000000000000000000"),
            (-3.0, 15, "-3"),
            (0.000012345, 15, "0.000012345"),
            (123456.7890625, 6, "123457"),
            (-0.0, 15, "0"),
            (1e27, 15, "1000000000000000000000000000"),
        ] {
            assert_eq!(
                float_to_numeric(f, digits).unwrap().to_string(),
                want,
                "{f}"
            );
        }
        for f in [f64::NAN, f64::INFINITY, 1e30, 1e-30, 1e300] {
            assert!(
                matches!(
                    float_to_numeric(f, 15),
                    Err(EngineError::NumericUnsupported(_))
                ),
                "{f}"
            );
        }
    }
}
