//! String functions: `strpos` / `position`, `ascii`, `chr` and `format`,
//! with PostgreSQL 15's results and errors.

use super::*;

/// `strpos(s, sub)`: the 1-based character position of the first `sub` in
/// `s`, 0 when absent (an empty `sub` is at 1).
pub(super) fn strpos(s: &str, sub: &str) -> i64 {
    match s.find(sub) {
        Some(b) => s[..b].chars().count() as i64 + 1,
        None => 0,
    }
}

/// `ascii(s)`: the code point of the first character, 0 for `''`.
pub(super) fn ascii(s: &str) -> i64 {
    s.chars().next().map_or(0, |c| c as i64)
}

/// `chr(n)`: the character with code point `n` (an `integer` argument).
pub(super) fn chr(n: i64) -> Result<String> {
    let limit = |m: String| Err(SqlError::new(ErrorKind::ProgramLimit, m));
    if i32::try_from(n).is_err() {
        return Err(SqlError::new(
            ErrorKind::NumericOutOfRange,
            "integer out of range",
        ));
    }
    if n < 0 {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            "character number must be positive",
        ));
    }
    if n == 0 {
        return limit("null character not permitted".into());
    }
    if n > 0x10_FFFF {
        return limit(format!("requested character too large for encoding: {n}"));
    }
    match char::from_u32(n as u32) {
        Some(c) => Ok(c.to_string()),
        None => limit(format!("requested character not valid for encoding: {n}")),
    }
}

fn bad_format(msg: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::InvalidParameter, msg)
}

/// PostgreSQL's hint for a `%` that starts no valid specifier.
fn percent_hint(e: SqlError) -> SqlError {
    e.with_fields(crate::error::ErrorFields {
        hint: Some("For a single \"%\" use \"%%\".".into()),
        ..Default::default()
    })
}

fn unterminated() -> SqlError {
    percent_hint(bad_format("unterminated format() type specifier"))
}

fn too_few() -> SqlError {
    bad_format("too few arguments for format()")
}

/// A cursor over the format string's characters.
struct Spec<'a> {
    chars: &'a [char],
    at: usize,
}

impl Spec<'_> {
    /// The current character; running off the end is an unterminated
    /// specifier, as PostgreSQL reports it.
    fn cur(&self) -> Result<char> {
        self.chars.get(self.at).copied().ok_or_else(unterminated)
    }

    fn advance(&mut self) -> Result<()> {
        self.at += 1;
        self.cur().map(|_| ())
    }

    /// Digits, if any (PostgreSQL's int limit: 22003 past it).
    fn digits(&mut self) -> Result<Option<i64>> {
        let mut n: Option<i64> = None;
        while let Some(d) = self.cur()?.to_digit(10) {
            let v = n.unwrap_or(0) * 10 + d as i64;
            if v > i32::MAX as i64 {
                return Err(SqlError::new(
                    ErrorKind::NumericOutOfRange,
                    "number is out of range",
                ));
            }
            n = Some(v);
            self.advance()?;
        }
        Ok(n)
    }
}

fn arg_zero() -> SqlError {
    bad_format("format specifies argument 0, but arguments are numbered from 1")
}

/// `format(fmt, args...)`: `%s` (NULL is empty), `%I` (quoted as an
/// identifier; NULL is 22004), `%L` (quoted as a literal; NULL is `NULL`),
/// `%%`; `%n$` picks argument n (later plain specifiers continue after it),
/// `-` aligns left, a width pads with spaces, `*` / `*n$` reads the width
/// from an argument (negative aligns left, NULL is no width).
pub(super) fn format(fmt: &str, args: &[Value]) -> Result<String> {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::with_capacity(fmt.len());
    let mut s = Spec {
        chars: &chars,
        at: 0,
    };
    // The next argument, 0-based over `args`.
    let mut next = 0usize;
    while s.at < chars.len() {
        let c = chars[s.at];
        s.at += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        s.cur()?;
        if s.cur()? == '%' {
            out.push('%');
            s.at += 1;
            continue;
        }
        let (mut left, mut width, mut argpos, mut widthpos) = (false, 0i64, None, None);
        // Leading digits are a position (`%2$s`) or, alone, the width.
        let mut width_given = false;
        match s.digits()? {
            Some(n) if s.cur()? == '$' => {
                if n == 0 {
                    return Err(arg_zero());
                }
                argpos = Some(n as usize);
                s.advance()?;
            }
            Some(n) => {
                width = n;
                width_given = true;
            }
            None => {}
        }
        if !width_given {
            while s.cur()? == '-' {
                left = true;
                s.advance()?;
            }
            if s.cur()? == '*' {
                s.advance()?;
                match s.digits()? {
                    Some(n) => {
                        if s.cur()? != '$' {
                            return Err(bad_format(
                                "width argument position must be ended by \"$\"",
                            ));
                        }
                        if n == 0 {
                            return Err(arg_zero());
                        }
                        widthpos = Some(n as usize);
                        s.advance()?;
                    }
                    None => widthpos = Some(0),
                }
            } else if let Some(n) = s.digits()? {
                width = n;
            }
        }
        let conv = s.cur()?;
        if !matches!(conv, 's' | 'I' | 'L') {
            return Err(percent_hint(bad_format(format!(
                "unrecognized format() type specifier \"{conv}\""
            ))));
        }
        s.at += 1;
        if let Some(wp) = widthpos {
            if wp > 0 {
                next = wp - 1;
            }
            let w = args.get(next).ok_or_else(too_few)?;
            next += 1;
            width = match w {
                Value::Null => 0,
                v => call::int_arg(v, "width")?,
            };
            if width < 0 {
                left = true;
                width = width
                    .checked_neg()
                    .filter(|w| *w <= i32::MAX as i64)
                    .ok_or_else(|| {
                        SqlError::new(ErrorKind::NumericOutOfRange, "number is out of range")
                    })?;
            }
        }
        if let Some(ap) = argpos {
            next = ap - 1;
        }
        let v = args.get(next).ok_or_else(too_few)?;
        next += 1;
        let text = match (conv, v) {
            ('s', Value::Null) => String::new(),
            ('L', Value::Null) => "NULL".into(),
            ('I', Value::Null) => {
                return Err(SqlError::new(
                    ErrorKind::NullValueNotAllowed,
                    "null values cannot be formatted as an SQL identifier",
                ))
            }
            ('I', v) => crate::types::quote_ident(&call::text_arg(v)),
            ('L', v) => crate::types::quote_literal_text(&call::text_arg(v)),
            (_, v) => call::text_arg(v),
        };
        let pad = (width as usize).saturating_sub(text.chars().count());
        if out.len().saturating_add(text.len()).saturating_add(pad) > call::MAX_TEXT_CHARS {
            return Err(SqlError::new(
                ErrorKind::ProgramLimit,
                "requested length too large",
            ));
        }
        if !left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(&text);
        if left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
    }
    Ok(out)
}
