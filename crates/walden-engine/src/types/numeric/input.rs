//! numeric input: PostgreSQL's syntax, read exactly (every digit, up to
//! numeric's range).

use super::{Numeric, NumericError};
use crate::error::{EngineError, Result};
use num_bigint::BigInt;

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
/// exponent, `NaN`, `Infinity`, `inf`; surrounding blanks allowed).
/// `Ok(None)` when the text is not a number at all (the caller names its
/// type in the 22P02 message); 22003 past numeric's range.
pub fn parse_numeric(s: &str) -> Result<Option<Numeric>> {
    let t = s.trim();
    match shape(t) {
        Shape::Bad => return Ok(None),
        Shape::Special => {
            let neg = t.starts_with('-');
            let lower = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
            return Ok(Some(match (lower.as_str(), neg) {
                ("nan", _) => Numeric::NaN,
                (_, false) => Numeric::PosInf,
                (_, true) => Numeric::NegInf,
            }));
        }
        Shape::Number => {}
    }
    let neg = t.starts_with('-');
    let body = t.trim_start_matches(['+', '-']);
    let (mant, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, "0"),
    };
    // Any exponent whose value numeric holds (scale up to 16383, 131072
    // digits before the point); past that 22003, as PostgreSQL 15.
    let exp: i64 = match exp.parse::<i64>() {
        Ok(e) if e.abs() <= 1_000_000 => e,
        Ok(_) => return Err(EngineError::Numeric(NumericError::Overflow)),
        Err(_) => return Ok(None),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let scale = frac.len() as i64 - exp;
    // The fast path: what fits an i128 and a Decimal's scale.
    if int.len() + frac.len() <= 28 && (0..=28).contains(&scale) {
        let mut m: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            m = m * 10 + (b - b'0') as i128;
        }
        let m = if neg { -m } else { m };
        return Ok(Some(Numeric::from_parts(BigInt::from(m), scale)));
    }
    let digits: String = int.chars().chain(frac.chars()).collect();
    let digits = if digits.is_empty() { "0" } else { &digits };
    let mut m: BigInt = digits
        .parse()
        .map_err(|_| EngineError::Numeric(NumericError::Overflow))?;
    if neg {
        m = -m;
    }
    Ok(Some(Numeric::from_parts(m, scale).checked()?))
}

/// A float as numeric, the way PostgreSQL converts it: the float's text
/// at `digits` significant digits (15 for float8, 6 for float4, `%g`
/// with trailing zeros dropped) read as numeric; NaN and ±Infinity as
/// themselves.
pub fn float_to_numeric(f: f64, digits: usize) -> Result<Numeric> {
    if f.is_nan() {
        return Ok(Numeric::NaN);
    }
    if f.is_infinite() {
        return Ok(if f > 0.0 {
            Numeric::PosInf
        } else {
            Numeric::NegInf
        });
    }
    if f == 0.0 {
        return Ok(Numeric::ZERO);
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
