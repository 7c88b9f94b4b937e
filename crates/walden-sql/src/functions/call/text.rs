//! String functions: length, substring, trim, pad, replace, format,
//! concat, quoting (`functions/strings.rs` holds format's own parsing).

use super::*;

/// Calls one of the text functions (the dispatcher in `call.rs` sends only those).
pub(super) fn call(f: Func, a: Vec<Value>) -> Result<Value> {
    let null_in = a.iter().any(|v| v.is_null());
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        // Only a NULL format string makes the result NULL.
        Func::Format => match arg(0) {
            Value::Null => Value::Null,
            fmt => Value::text(strings::format(&text_arg(&fmt), &a[1..])?),
        },
        // NULL arguments are skipped, only a NULL separator gives NULL.
        Func::ConcatWs => match arg(0) {
            Value::Null => Value::Null,
            sep => Value::text(
                a[1..]
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(&text_arg(&sep)),
            ),
        },
        // The rest are strict: a NULL argument makes the result NULL.
        _ if null_in && f != Func::Concat => Value::Null,
        Func::StrPos => Value::Int(strings::strpos(&text_arg(&arg(0)), &text_arg(&arg(1)))),
        Func::Ascii => Value::Int(strings::ascii(&text_arg(&arg(0)))),
        Func::Chr => Value::text(strings::chr(int_arg(&arg(0), "chr")?)?),
        Func::BitLength => Value::Int(
            8 * match arg(0) {
                Value::Bytes(b) => b.len() as i64,
                v => text_arg(&v).len() as i64,
            },
        ),
        Func::Concat => Value::text(
            a.iter()
                .filter(|v| !v.is_null())
                .map(|v| v.to_string())
                .collect::<String>(),
        ),
        Func::Upper => Value::text(text_arg(&arg(0)).to_uppercase()),
        Func::Lower => Value::text(text_arg(&arg(0)).to_lowercase()),
        Func::Initcap => Value::text(initcap(&text_arg(&arg(0)))),
        Func::Length => Value::Int(match arg(0) {
            Value::Bytes(b) => b.len() as i64,
            v => text_arg(&v).chars().count() as i64,
        }),
        Func::OctetLength => Value::Int(match arg(0) {
            Value::Bytes(b) => b.len() as i64,
            v => text_arg(&v).len() as i64,
        }),
        Func::Repeat => {
            let s = text_arg(&arg(0));
            let n = int_arg(&arg(1), "repeat")?.max(0) as usize;
            if s.len().saturating_mul(n) > MAX_TEXT_CHARS {
                return Err(SqlError::new(
                    ErrorKind::ProgramLimit,
                    "requested length too large",
                ));
            }
            Value::text(s.repeat(n))
        }
        Func::Substring => {
            let start = int_arg(&arg(1), "substring")?;
            let len = if a.len() > 2 {
                let l = int_arg(&arg(2), "substring")?;
                if l < 0 {
                    return Err(SqlError::new(
                        ErrorKind::SubstringError,
                        "negative substring length not allowed",
                    ));
                }
                Some(l)
            } else {
                None
            };
            // Positions count from 1; a start before the first still
            // counts toward the length.
            let span = |n: usize| {
                let from = (start - 1).clamp(0, n as i64) as usize;
                let end = match len {
                    Some(l) => (start - 1).saturating_add(l).clamp(0, n as i64) as usize,
                    None => n,
                };
                from..end.max(from)
            };
            match arg(0) {
                Value::Bytes(b) => Value::Bytes(b[span(b.len())].to_vec().into()),
                v => {
                    let s: Vec<char> = text_arg(&v).chars().collect();
                    Value::text(s[span(s.len())].iter().collect::<String>())
                }
            }
        }
        Func::Trim | Func::Ltrim | Func::Rtrim if matches!(arg(0), Value::Bytes(_)) => {
            let (Value::Bytes(s), Some(Value::Bytes(set))) = (arg(0), a.get(1).cloned()) else {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    "trimming a bytea needs a bytea of the bytes to remove",
                ));
            };
            let keep = |b: &u8| !set.contains(b);
            let first = match f {
                Func::Rtrim => 0,
                _ => s.iter().position(keep).unwrap_or(s.len()),
            };
            let last = match f {
                Func::Ltrim => s.len(),
                _ => s.iter().rposition(keep).map_or(first, |i| i + 1),
            };
            Value::Bytes(s[first..last.max(first)].to_vec().into())
        }
        Func::Trim | Func::Ltrim | Func::Rtrim => {
            let s = text_arg(&arg(0));
            // The characters to strip: spaces unless given.
            let chars: Vec<char> = match a.get(1) {
                Some(c) => text_arg(c).chars().collect(),
                None => vec![' '],
            };
            let strip = |c: char| chars.contains(&c);
            Value::text(match f {
                Func::Ltrim => s.trim_start_matches(strip),
                Func::Rtrim => s.trim_end_matches(strip),
                _ => s.trim_matches(strip),
            })
        }
        Func::Replace => {
            Value::text(text_arg(&arg(0)).replace(&text_arg(&arg(1)), &text_arg(&arg(2))))
        }
        // The start [, N [, flags]] form.
        Func::RegexpReplace if matches!(a.get(3), Some(Value::Int(_))) => {
            // Given, N alone says which matches are replaced (the `g` flag
            // then changes nothing); else `g` means all, as PostgreSQL 15.
            let n = match a.get(4) {
                Some(Value::Int(n)) => *n,
                Some(v) => int_arg(v, "regexp_replace")?,
                None => i64::from(!a.get(5).map(text_arg).unwrap_or_default().contains('g')),
            };
            crate::functions::regex_fns::regexp_replace_at(
                &text_arg(&arg(0)),
                &text_arg(&arg(1)),
                &text_arg(&arg(2)),
                int_arg(&arg(3), "regexp_replace")?,
                n,
                &a.get(5).map(text_arg).unwrap_or_default(),
            )?
        }
        Func::RegexpReplace => crate::functions::regex_fns::regexp_replace(
            &text_arg(&arg(0)),
            &text_arg(&arg(1)),
            &text_arg(&arg(2)),
            &a.get(3).map(text_arg).unwrap_or_default(),
        )?,
        Func::RegexpMatch => crate::functions::regex_fns::regexp_match(
            &text_arg(&arg(0)),
            &text_arg(&arg(1)),
            &a.get(2).map(text_arg).unwrap_or_default(),
        )?,
        Func::RegexpSplitToArray => crate::functions::regex_fns::regexp_split_to_array(
            &text_arg(&arg(0)),
            &text_arg(&arg(1)),
            &a.get(2).map(text_arg).unwrap_or_default(),
        )?,
        Func::SplitPart => crate::functions::regex_fns::split_part(
            &text_arg(&arg(0)),
            &text_arg(&arg(1)),
            int_arg(&arg(2), "split_part")?,
        )?,
        Func::Md5 => match arg(0) {
            Value::Null => Value::Null,
            Value::Bytes(b) => Value::text(format!("{:x}", md5::compute(&b[..]))),
            v => Value::text(format!("{:x}", md5::compute(text_arg(&v).as_bytes()))),
        },
        Func::Lpad | Func::Rpad => {
            if null_in {
                return Ok(Value::Null);
            }
            let s: Vec<char> = text_arg(&arg(0)).chars().collect();
            let n = int_arg(&arg(1), "length")?.max(0) as usize;
            if n > MAX_TEXT_CHARS {
                return Err(SqlError::new(
                    ErrorKind::ProgramLimit,
                    "requested length too large",
                ));
            }
            let fill: Vec<char> = match a.get(2) {
                Some(v) => text_arg(v).chars().collect(),
                None => vec![' '],
            };
            // Longer strings are cut to the length; an empty fill pads nothing.
            if s.len() >= n || fill.is_empty() {
                Value::text(s[..n.min(s.len())].iter().collect::<String>())
            } else {
                let pad = fill.iter().cycle().take(n - s.len());
                Value::text(if f == Func::Lpad {
                    pad.chain(s.iter()).collect::<String>()
                } else {
                    s.iter().chain(pad).collect::<String>()
                })
            }
        }
        Func::Left | Func::Right => {
            let s: Vec<char> = text_arg(&arg(0)).chars().collect();
            let n = (int_arg(&arg(1), "length")?.max(0) as usize).min(s.len());
            Value::text(if f == Func::Left {
                s[..n].iter().collect::<String>()
            } else {
                s[s.len() - n..].iter().collect()
            })
        }
        Func::QuoteIdent => Value::text(crate::types::quote_ident(&text_arg(&arg(0)))),
        Func::QuoteLiteral => Value::text(crate::types::quote_literal_text(&text_arg(&arg(0)))),
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not one of the text functions"
            )))
        }
    })
}

/// PostgreSQL's initcap: a word is a run of letters and digits; its first
/// character is upper-cased and the rest lower-cased.
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
    out
}
