//! PostgreSQL's regular-expression functions (`regexp_replace`,
//! `regexp_match`, `regexp_split_to_array`) and `split_part`, over the
//! `regex` crate. PostgreSQL's flags map onto the crate's options; a flag
//! the crate has no counterpart for is refused, not ignored.

use crate::error::{ErrorKind, Result, SqlError};
use regex::{Regex, RegexBuilder};
use walden_engine::Value;

fn bad_option(c: char) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidParameter,
        format!("invalid regular expression option: \"{c}\""),
    )
}

/// Compiles `pattern` with PostgreSQL's flag letters; returns the regex
/// and whether `g` (global) was given.
fn compile(pattern: &str, flags: &str) -> Result<(Regex, bool)> {
    let mut b = RegexBuilder::new(pattern);
    // PostgreSQL's default: `.` and bracket expressions match a newline.
    b.dot_matches_new_line(true);
    let mut global = false;
    for c in flags.chars() {
        match c {
            'g' => global = true,
            'i' => {
                b.case_insensitive(true);
            }
            'c' => {
                b.case_insensitive(false);
            }
            // Newline-sensitive: `.` stops at newlines, ^ and $ match at them.
            'n' | 'm' => {
                b.dot_matches_new_line(false).multi_line(true);
            }
            's' => {
                b.dot_matches_new_line(true).multi_line(false);
            }
            'x' => {
                b.ignore_whitespace(true);
            }
            't' => {
                b.ignore_whitespace(false);
            }
            other => return Err(bad_option(other)),
        }
    }
    let re = b.build().map_err(|e| {
        SqlError::new(
            ErrorKind::InvalidRegex,
            format!("invalid regular expression: {e}"),
        )
    })?;
    Ok((re, global))
}

/// PostgreSQL's replacement text in the crate's syntax: `\1`..`\9` a
/// group, `\&` the match, `\\` a backslash; `$` is literal.
fn replacement(r: &str) -> String {
    let mut out = String::with_capacity(r.len());
    let mut it = r.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match it.peek().copied() {
                Some(d @ '1'..='9') => {
                    it.next();
                    out.push_str(&format!("${{{d}}}"));
                }
                Some('&') => {
                    it.next();
                    out.push_str("${0}");
                }
                Some('\\') => {
                    it.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

/// `regexp_replace(source, pattern, replacement [, flags])`.
pub fn regexp_replace(s: &str, pattern: &str, repl: &str, flags: &str) -> Result<Value> {
    let (re, global) = compile(pattern, flags)?;
    let repl = replacement(repl);
    Ok(Value::text(if global {
        re.replace_all(s, repl.as_str())
    } else {
        re.replace(s, repl.as_str())
    }))
}

/// `regexp_match(string, pattern [, flags])`: the first match's groups
/// (or the whole match when the pattern has none) as text[]; NULL when
/// nothing matches.
pub fn regexp_match(s: &str, pattern: &str, flags: &str) -> Result<Value> {
    let (re, global) = compile(pattern, flags)?;
    if global {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            "regexp_match() does not support the \"global\" option",
        ));
    }
    let Some(caps) = re.captures(s) else {
        return Ok(Value::Null);
    };
    let items: Vec<Value> = if caps.len() == 1 {
        vec![Value::text(&caps[0])]
    } else {
        (1..caps.len())
            .map(|i| caps.get(i).map_or(Value::Null, |m| Value::text(m.as_str())))
            .collect()
    };
    Ok(Value::Array(items.into()))
}

/// `regexp_split_to_array(string, pattern [, flags])`. As PostgreSQL,
/// an empty match at the start or end of the string, or right after the
/// previous match, does not split.
pub fn regexp_split_to_array(s: &str, pattern: &str, flags: &str) -> Result<Value> {
    let (re, global) = compile(pattern, flags)?;
    if global {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            "regexp_split_to_array() does not support the \"global\" option",
        ));
    }
    let mut parts = Vec::new();
    let (mut from, mut prev_end) = (0usize, None);
    for m in re.find_iter(s) {
        if m.is_empty() && (m.start() == 0 || m.start() == s.len() || Some(m.start()) == prev_end) {
            continue;
        }
        parts.push(Value::text(&s[from..m.start()]));
        from = m.end();
        prev_end = Some(m.end());
    }
    parts.push(Value::text(&s[from..]));
    Ok(Value::Array(parts.into()))
}

fn param(name: &str, v: i64) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidParameter,
        format!("invalid value for parameter \"{name}\": {v}"),
    )
}

fn int_of(v: &Value, name: &str) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Text(t) => t.trim().parse().map_err(|_| {
            SqlError::new(
                ErrorKind::InvalidText,
                format!("invalid input syntax for type integer: \"{t}\""),
            )
        }),
        other => Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("{name} must be an integer, not {other}"),
        )),
    }
}

fn no_global(f: &str) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidParameter,
        format!("{f}() does not support the \"global\" option"),
    )
}

/// The matches from character `start` (1-based) on, without overlap; an
/// empty match moves the search on by one character.
fn matches_from<'s>(re: &Regex, s: &'s str, start: i64) -> Vec<regex::Captures<'s>> {
    let Some((mut at, _)) = s.char_indices().nth((start - 1) as usize).or(
        // Just past the end: an empty match may still be found there.
        if (start - 1) as usize == s.chars().count() {
            Some((s.len(), ' '))
        } else {
            None
        },
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while at <= s.len() {
        let Some(c) = re.captures_at(s, at) else {
            break;
        };
        let m = c.get(0).map_or((at, at), |m| (m.start(), m.end()));
        at = if m.1 > m.0 {
            m.1
        } else {
            m.1 + s[m.1..].chars().next().map_or(1, char::len_utf8)
        };
        out.push(c);
    }
    out
}

fn char_pos(s: &str, byte: usize) -> i64 {
    s[..byte].chars().count() as i64 + 1
}

/// regexp_count(string, pattern [, start [, flags]]).
pub fn regexp_count(a: &[String], start: i64) -> Result<Value> {
    if start < 1 {
        return Err(param("start", start));
    }
    let (re, global) = compile(&a[1], a.get(2).map_or("", String::as_str))?;
    if global {
        return Err(no_global("regexp_count"));
    }
    Ok(Value::Int(matches_from(&re, &a[0], start).len() as i64))
}

/// regexp_like(string, pattern [, flags]).
pub fn regexp_like(s: &str, pattern: &str, flags: &str) -> Result<Value> {
    let (re, global) = compile(pattern, flags)?;
    if global {
        return Err(no_global("regexp_like"));
    }
    Ok(Value::Bool(re.is_match(s)))
}

/// The n-th match from `start` and the span of its group `sub` (0: the
/// whole match), in bytes; `None` when there is no such match or group.
fn nth_match(
    s: &str,
    pattern: &str,
    flags: &str,
    start: i64,
    n: i64,
    sub: i64,
    f: &str,
) -> Result<Option<(usize, usize)>> {
    if start < 1 {
        return Err(param("start", start));
    }
    if n < 1 {
        return Err(param("n", n));
    }
    if sub < 0 {
        return Err(param("subexpr", sub));
    }
    let (re, global) = compile(pattern, flags)?;
    if global {
        return Err(no_global(f));
    }
    let all = matches_from(&re, s, start);
    Ok(all
        .get((n - 1) as usize)
        .and_then(|c| c.get(sub as usize))
        .map(|m| (m.start(), m.end())))
}

/// regexp_instr(string, pattern [, start [, N [, endoption [, flags [, subexpr]]]]]).
pub fn regexp_instr(
    s: &str,
    pattern: &str,
    ints: [i64; 3],
    flags: &str,
    sub: i64,
) -> Result<Value> {
    let [start, n, end] = ints;
    if !(0..=1).contains(&end) {
        return Err(param("endoption", end));
    }
    Ok(Value::Int(
        match nth_match(s, pattern, flags, start, n, sub, "regexp_instr")? {
            Some((b, e)) => char_pos(s, if end == 1 { e } else { b }),
            None => 0,
        },
    ))
}

/// regexp_substr(string, pattern [, start [, N [, flags [, subexpr]]]]).
pub fn regexp_substr(
    s: &str,
    pattern: &str,
    start: i64,
    n: i64,
    flags: &str,
    sub: i64,
) -> Result<Value> {
    Ok(
        match nth_match(s, pattern, flags, start, n, sub, "regexp_substr")? {
            Some((b, e)) => Value::text(&s[b..e]),
            None => Value::Null,
        },
    )
}

/// regexp_replace(source, pattern, replacement, start [, N [, flags]]):
/// the N-th match from `start` (every one from there when N is 0).
pub fn regexp_replace_at(
    s: &str,
    pattern: &str,
    repl: &str,
    start: i64,
    n: i64,
    flags: &str,
) -> Result<Value> {
    if start < 1 {
        return Err(param("start", start));
    }
    if n < 0 {
        return Err(param("n", n));
    }
    let (re, _) = compile(pattern, flags)?;
    let repl = replacement(repl);
    let all = matches_from(&re, s, start);
    let mut out = String::new();
    let mut last = 0;
    let every = n == 0;
    for (i, c) in all.iter().enumerate() {
        if !every && i as i64 + 1 != n {
            continue;
        }
        let m = c.get(0).map_or((last, last), |m| (m.start(), m.end()));
        out.push_str(&s[last..m.0]);
        c.expand(&repl, &mut out);
        last = m.1;
        if !every {
            break;
        }
    }
    out.push_str(&s[last..]);
    Ok(Value::text(out))
}

/// Calls regexp_count, regexp_instr, regexp_substr, regexp_like (strict).
pub fn call_positional(f: crate::functions::Func, a: &[Value]) -> Result<Value> {
    use crate::functions::Func;
    if a.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let text = |i: usize| a.get(i).map(crate::functions::text_arg);
    let int = |i: usize, name: &str, d: i64| a.get(i).map_or(Ok(d), |v| int_of(v, name));
    let (s, p) = (text(0).unwrap_or_default(), text(1).unwrap_or_default());
    match f {
        Func::RegexpCount => {
            regexp_count(&[s, p, text(3).unwrap_or_default()], int(2, "start", 1)?)
        }
        Func::RegexpLike => regexp_like(&s, &p, &text(2).unwrap_or_default()),
        Func::RegexpInstr => regexp_instr(
            &s,
            &p,
            [
                int(2, "start", 1)?,
                int(3, "n", 1)?,
                int(4, "endoption", 0)?,
            ],
            &text(5).unwrap_or_default(),
            int(6, "subexpr", 0)?,
        ),
        _ => regexp_substr(
            &s,
            &p,
            int(2, "start", 1)?,
            int(3, "n", 1)?,
            &text(4).unwrap_or_default(),
            int(5, "subexpr", 0)?,
        ),
    }
}

/// `split_part(string, delimiter, n)`: the n-th field (from the end when
/// n is negative); '' past the last.
pub fn split_part(s: &str, delim: &str, n: i64) -> Result<Value> {
    if n == 0 {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            "field position must not be zero",
        ));
    }
    let fields: Vec<&str> = if delim.is_empty() {
        if s.is_empty() {
            vec![]
        } else {
            vec![s]
        }
    } else if s.is_empty() {
        vec![]
    } else {
        s.split(delim).collect()
    };
    let k = fields.len() as i64;
    let i = if n > 0 { n - 1 } else { k + n };
    Ok(Value::text(if (0..k).contains(&i) {
        fields[i as usize]
    } else {
        ""
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(v: Value) -> Vec<String> {
        match v {
            Value::Array(a) => a.iter().map(|x| x.to_string()).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn as_postgres() {
        // Expected values are PostgreSQL 15's.
        let r = |s, p, t, f| regexp_replace(s, p, t, f).unwrap().to_string();
        assert_eq!(r("abcabc", "b", "X", ""), "aXcabc");
        assert_eq!(r("abcabc", "B", "X", "gi"), "aXcaXc");
        assert_eq!(
            r("1222-333", "(\\d)(\\d)", "\\2\\1-\\&", "g"),
            "21-1222-22-33-333"
        );
        assert_eq!(r("a$b", "\\$", "$1", ""), "a$1b");
        assert_eq!(
            arr(regexp_match("foobarbequebaz", "(bar)(beque)", "").unwrap()),
            ["bar", "beque"]
        );
        assert_eq!(arr(regexp_match("foobar", "o+", "").unwrap()), ["oo"]);
        assert!(regexp_match("foo", "x", "").unwrap().is_null());
        assert_eq!(
            arr(regexp_split_to_array("hello world", "\\s+", "").unwrap()),
            ["hello", "world"]
        );
        assert_eq!(
            arr(regexp_split_to_array("abc", "", "").unwrap()),
            ["a", "b", "c"]
        );
        assert_eq!(
            arr(regexp_split_to_array("abc", "x*", "").unwrap()),
            ["a", "b", "c"]
        );
        assert!(regexp_replace("a", "a", "b", "z").is_err());
        let sp = |s, d, n| split_part(s, d, n).unwrap().to_string();
        assert_eq!(sp("abc~@~def~@~ghi", "~@~", 2), "def");
        assert_eq!(sp("abc,def,ghi", ",", -1), "ghi");
        assert_eq!(sp("abc,def", ",", 5), "");
        assert_eq!(sp("abc", "", 1), "abc");
        assert_eq!(sp("abc", "", 2), "");
        assert!(split_part("a", ",", 0).is_err());
    }
}
