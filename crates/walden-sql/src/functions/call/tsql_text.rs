//! SQL Server's string functions: QUOTENAME, STRING_ESCAPE, UNICODE.

use super::*;

/// Calls one of T-SQL's text functions (the dispatcher sends only those).
pub(super) fn call(f: Func, a: Vec<Value>) -> Result<Value> {
    if a.iter().any(|v| v.is_null()) {
        return Ok(Value::Null);
    }
    let arg = |i: usize| a.get(i).map(text_arg);
    Ok(match f {
        Func::QuoteName => match quotename(&arg(0).unwrap_or_default(), arg(1).as_deref()) {
            Some(s) => Value::text(s),
            None => Value::Null,
        },
        Func::StringEscape => {
            let kind = arg(1).unwrap_or_default();
            if !kind.eq_ignore_ascii_case("json") {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("The second argument of STRING_ESCAPE must be 'json', not '{kind}'."),
                ));
            }
            Value::text(json_escape(&arg(0).unwrap_or_default()))
        }
        Func::Unicode => match arg(0).unwrap_or_default().chars().next() {
            Some(c) => Value::Int(c as i64),
            None => Value::Null,
        },
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not one of T-SQL's text functions"
            )))
        }
    })
}

/// `QUOTENAME(s [, q])`: `s` between the delimiter pair `q` names (`[` by
/// default), its closing delimiter doubled; NULL for a name over 128
/// characters or a delimiter SQL Server does not take.
fn quotename(s: &str, q: Option<&str>) -> Option<String> {
    if s.chars().count() > 128 {
        return None;
    }
    let q = q.unwrap_or("[");
    let mut chars = q.chars();
    let (c, rest) = (chars.next()?, chars.next());
    if rest.is_some() {
        return None;
    }
    let (open, close) = match c {
        '[' | ']' => ('[', ']'),
        '(' | ')' => ('(', ')'),
        '<' | '>' => ('<', '>'),
        '{' | '}' => ('{', '}'),
        '"' | '\'' | '`' => (c, c),
        _ => return None,
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(open);
    for ch in s.chars() {
        out.push(ch);
        if ch == close {
            out.push(close);
        }
    }
    out.push(close);
    Some(out)
}

/// STRING_ESCAPE(s, 'json'): JSON's escapes for `"`, `\`, `/` and control
/// characters, as SQL Server writes them.
fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotename_as_sql_server() {
        assert_eq!(quotename("a]b", None).as_deref(), Some("[a]]b]"));
        assert_eq!(quotename("x", Some(")")).as_deref(), Some("(x)"));
        assert_eq!(quotename("it's", Some("'")).as_deref(), Some("'it''s'"));
        assert_eq!(quotename("", None).as_deref(), Some("[]"));
        assert_eq!(quotename("x", Some("F")), None);
        assert_eq!(quotename("x", Some("aa")), None);
        assert_eq!(quotename(&"y".repeat(129), None), None);
        assert!(quotename(&"]".repeat(128), None).is_some_and(|s| s.len() == 258));
        assert_eq!(json_escape("a\"b\\c/\n\u{1}"), "a\\\"b\\\\c\\/\\n\\u0001");
    }
}
