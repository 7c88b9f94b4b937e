//! float4/float8 text: PostgreSQL's input range checks and its shortest
//! round-trip output (extra_float_digits = 1, the default), or C's `%g`
//! with fewer digits (extra_float_digits of 0 or less).

/// Why float text was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum FloatInputError {
    /// Not a number (22P02).
    Syntax,
    /// A finite number too large or too small for the type (22003).
    Range,
}

/// Reads float text as PostgreSQL's float8in / float4in do: a number that
/// overflows to infinity or underflows to zero is out of range, only the
/// spelled-out infinities are infinite.
pub fn parse_float(s: &str, single: bool) -> Result<f64, FloatInputError> {
    let t = s.trim();
    let v = if single {
        t.parse::<f32>().map(f64::from)
    } else {
        t.parse::<f64>()
    }
    .map_err(|_| FloatInputError::Syntax)?;
    let body = t.strip_prefix(['+', '-']).unwrap_or(t).to_ascii_lowercase();
    let spelled = matches!(body.as_str(), "inf" | "infinity" | "nan");
    if v.is_infinite() && !spelled {
        return Err(FloatInputError::Range);
    }
    if v == 0.0 {
        let mantissa = body.split('e').next().unwrap_or("");
        if mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
            return Err(FloatInputError::Range);
        }
    }
    Ok(v)
}

/// PostgreSQL's text for a float: the fewest digits that read back to the
/// same value, in fixed notation when the decimal exponent is in
/// [-4, 15) (float4: [-4, 6)), otherwise as `d.ddde+XX`.
pub fn format_float(x: f64, single: bool) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let extra = super::zone::with_current(|z| z.float_digits);
    if extra <= 0 {
        let digits = if single { 6 } else { 15 } + i32::from(extra);
        return format_g(x, digits.max(1) as usize);
    }
    // Rust's `{:e}` prints the shortest round-trip digits.
    let sci = if single {
        format!("{:e}", x as f32)
    } else {
        format!("{x:e}")
    };
    let (mant, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent");
    let (sign, mant) = match mant.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let limit = if single { 6 } else { 15 };
    if digits == "0" {
        return format!("{sign}0");
    }
    if (-4..limit).contains(&exp) {
        let n = digits.len() as i32;
        if exp < 0 {
            format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
        } else if exp + 1 >= n {
            format!("{sign}{digits}{}", "0".repeat((exp + 1 - n) as usize))
        } else {
            let (i, f) = digits.split_at((exp + 1) as usize);
            format!("{sign}{i}.{f}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{point}{rest}e{esign}{:02}", exp.abs())
    }
}

/// C's `%.{precision}g`, which PostgreSQL writes floats with when
/// `extra_float_digits` is 0 or less.
fn format_g(x: f64, precision: usize) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:.*e}", precision - 1, x);
    let (mant, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent");
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if exp < -4 || exp >= precision as i32 {
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{}e{esign}{:02}", trim(mant.to_string()), exp.abs())
    } else {
        let decimals = (precision as i32 - 1 - exp).max(0) as usize;
        trim(format!("{x:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_as_postgres() {
        // Each expected text is PostgreSQL 15's float8out.
        for (x, want) in [
            (1e200, "1e+200"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.5e-10, "1.5e-10"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (100.0, "100"),
            (1e-7, "1e-07"),
            (1e15, "1e+15"),
            (1e14, "100000000000000"),
            (0.0001, "0.0001"),
            (-0.0, "-0"),
            (0.0, "0"),
            (-1.5, "-1.5"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(format_float(x, false), want, "{x}");
        }
        for (x, want) in [(1e6f32, "1e+06"), (123456.0, "123456"), (0.1, "0.1")] {
            assert_eq!(format_float(f64::from(x), true), want, "{x}");
        }
    }

    #[test]
    fn fewer_digits_as_c_g_writes_them() {
        // PostgreSQL 15 with extra_float_digits = 0.
        for (x, p, want) in [
            (31.690692639953454, 15, "31.6906926399535"),
            (1.1111111061110856e100, 15, "1.11111110611109e+100"),
            (1004.3000000000004, 15, "1004.3"),
            (431.7726f32 as f64, 6, "431.773"),
            (1e-5, 15, "1e-05"),
            (123456789012345.0, 15, "123456789012345"),
            (1234567890123456.0, 15, "1.23456789012346e+15"),
            (0.0001, 15, "0.0001"),
        ] {
            assert_eq!(format_g(x, p), want, "{x}");
        }
    }

    #[test]
    fn input_range() {
        assert_eq!(parse_float("1e400", false), Err(FloatInputError::Range));
        assert_eq!(parse_float("-1e400", false), Err(FloatInputError::Range));
        assert_eq!(parse_float("1e-400", false), Err(FloatInputError::Range));
        assert_eq!(parse_float("1e40", true), Err(FloatInputError::Range));
        assert_eq!(parse_float("x", false), Err(FloatInputError::Syntax));
        assert_eq!(parse_float(" -Infinity ", false), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_float("0e10", false), Ok(0.0));
        assert_eq!(parse_float("4.9e-324", false), Ok(5e-324));
    }
}
