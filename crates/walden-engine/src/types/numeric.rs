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
}
