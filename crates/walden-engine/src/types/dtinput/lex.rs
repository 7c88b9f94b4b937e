//! Splitting date/time text into fields, as PostgreSQL's `ParseDateTime`
//! does: each field gets a kind from its first characters, and the decoder
//! (`decode.rs`) reads the kinds together to decide what each one means.

use super::words;
use super::DtErr;

/// What a field looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FieldKind {
    /// Digits, maybe with one `.` (`1999`, `19990108`, `1999.008`, `.5`).
    Number,
    /// Digits then `:` (`04:05:06.789`).
    Time,
    /// Parts joined by one of `-` `/` `.`, or a word with embedded
    /// punctuation (`1999-01-08`, `jan-08-1999`, `america/new_york`).
    Date,
    /// A word (`january`, `pst`, `bc`, `epoch`).
    Word,
    /// A sign and digits: a numeric zone (`-08`, `+05:30:15`).
    Zone,
    /// A sign and a word (`-infinity`).
    Special,
}

#[derive(Clone, Debug)]
pub(super) struct Field {
    pub kind: FieldKind,
    pub text: String,
}

/// The most fields PostgreSQL reads (MAXDATEFIELDS).
const MAX_FIELDS: usize = 25;

pub(super) fn split(s: &str) -> Result<Vec<Field>, DtErr> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let digit = |i: usize| b.get(i).is_some_and(|c| c.is_ascii_digit());
    let alpha = |i: usize| b.get(i).is_some_and(|c| c.is_ascii_alphabetic());
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let kind;
        if c.is_ascii_digit() {
            while digit(i) {
                i += 1;
            }
            if at(i) == b':' {
                kind = FieldKind::Time;
                i += 1;
                while digit(i) || at(i) == b':' || at(i) == b'.' {
                    i += 1;
                }
            } else if matches!(at(i), b'-' | b'/' | b'.') {
                let delim = at(i);
                i += 1;
                if digit(i) {
                    let mut k = if delim == b'.' {
                        FieldKind::Number
                    } else {
                        FieldKind::Date
                    };
                    while digit(i) {
                        i += 1;
                    }
                    // Three parts only when the delimiters match.
                    if at(i) == delim {
                        k = FieldKind::Date;
                        i += 1;
                        while digit(i) || at(i) == delim {
                            i += 1;
                        }
                    }
                    kind = k;
                } else {
                    // A text month inside: `08-jan-1999`.
                    kind = FieldKind::Date;
                    while b.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) || at(i) == delim {
                        i += 1;
                    }
                }
            } else {
                kind = FieldKind::Number;
            }
        } else if c == b'.' {
            i += 1;
            while digit(i) {
                i += 1;
            }
            kind = FieldKind::Number;
        } else if c.is_ascii_alphabetic() {
            while alpha(i) {
                i += 1;
            }
            // A date with a text month (`jan-08-1999`) or a zone name
            // (`america/new_york`, `etc/gmt+8`); but `j2451187` and
            // `t04:05` are a keyword then a number.
            let is_date = match at(i) {
                b'-' | b'/' | b'.' => true,
                b'+' | b'0'..=b'9' => !words::is_keyword(&s[start..i].to_ascii_lowercase()),
                _ => false,
            };
            if is_date {
                i += 1;
                while b.get(i).is_some_and(|c| {
                    c.is_ascii_alphanumeric()
                        || matches!(c, b'+' | b'-' | b'/' | b'_' | b'.' | b':')
                }) {
                    i += 1;
                }
                kind = FieldKind::Date;
            } else {
                kind = FieldKind::Word;
            }
        } else if c == b'+' || c == b'-' {
            i += 1;
            while at(i).is_ascii_whitespace() && at(i) != 0 {
                i += 1;
            }
            if digit(i) {
                let sign = c as char;
                let body = i;
                while digit(i) || matches!(at(i), b':' | b'.' | b'-') {
                    i += 1;
                }
                push(&mut out, FieldKind::Zone, format!("{sign}{}", &s[body..i]))?;
                continue;
            } else if alpha(i) {
                let sign = c as char;
                let body = i;
                while alpha(i) {
                    i += 1;
                }
                push(
                    &mut out,
                    FieldKind::Special,
                    format!("{sign}{}", s[body..i].to_ascii_lowercase()),
                )?;
                continue;
            } else {
                return Err(DtErr::BadFormat);
            }
        } else if c.is_ascii_punctuation() {
            // Other punctuation only separates fields.
            i += 1;
            continue;
        } else {
            return Err(DtErr::BadFormat);
        }
        push(&mut out, kind, s[start..i].to_ascii_lowercase())?;
    }
    Ok(out)
}

fn push(out: &mut Vec<Field>, kind: FieldKind, text: String) -> Result<(), DtErr> {
    if out.len() >= MAX_FIELDS {
        return Err(DtErr::BadFormat);
    }
    out.push(Field { kind, text });
    Ok(())
}
