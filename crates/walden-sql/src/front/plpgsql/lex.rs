//! A small PostgreSQL lexer for routine definitions and PL/pgSQL bodies:
//! tokens with their byte spans, so the SQL inside a body keeps its text
//! (only variable references are replaced).

use crate::error::{Result, SqlError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum K {
    /// An unquoted word (`w` is lower case).
    Word,
    /// A `"quoted"` identifier (`w` is its name).
    QIdent,
    /// A string literal of any form (`w` is its value for plain and
    /// dollar-quoted strings).
    Str,
    Num,
    /// `$n` (`w` is n).
    Param,
    /// An operator or other punctuation (`w` is its text).
    Op,
}

#[derive(Clone, Debug)]
pub struct Tok {
    pub k: K,
    pub s: usize,
    pub e: usize,
    pub w: String,
}

impl Tok {
    pub fn is(&self, word: &str) -> bool {
        self.k == K::Word && self.w == word
    }
    pub fn op(&self, o: &str) -> bool {
        self.k == K::Op && self.w == o
    }
}

fn unterminated(what: &str) -> SqlError {
    SqlError::syntax(format!("unterminated {what}"))
}

const OP_CHARS: &str = "+-*/<>=~!@#%^&|`?:";

pub fn lex(src: &str) -> Result<Vec<Tok>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let push = |out: &mut Vec<Tok>, k, s, e, w: String| out.push(Tok { k, s, e, w });
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            if depth != 0 {
                return Err(unterminated("/* comment"));
            }
            continue;
        }
        let s = i;
        // Prefixed strings: E'..', B'..', X'..', N'..'.
        if matches!(c.to_ascii_lowercase(), b'e' | b'b' | b'x' | b'n')
            && b.get(i + 1) == Some(&b'\'')
        {
            let esc = c.eq_ignore_ascii_case(&b'e');
            let (v, e) = quoted(src, i + 1, b'\'', esc)?;
            push(&mut out, K::Str, s, e, v);
            i = e;
            continue;
        }
        if c == b'\'' {
            let (v, e) = quoted(src, i, b'\'', false)?;
            push(&mut out, K::Str, s, e, v);
            i = e;
            continue;
        }
        if c == b'"' {
            let (v, e) = quoted(src, i, b'"', false)?;
            push(&mut out, K::QIdent, s, e, v);
            i = e;
            continue;
        }
        if c == b'$' {
            let mut j = i + 1;
            if b.get(j).is_some_and(|d| d.is_ascii_digit()) {
                while b.get(j).is_some_and(|d| d.is_ascii_digit()) {
                    j += 1;
                }
                push(&mut out, K::Param, s, j, src[i + 1..j].to_string());
                i = j;
                continue;
            }
            while b
                .get(j)
                .is_some_and(|d| d.is_ascii_alphanumeric() || *d == b'_' || *d >= 0x80)
            {
                j += 1;
            }
            if b.get(j) == Some(&b'$') {
                let tag = &src[i..=j];
                let body = j + 1;
                let Some(end) = src[body..].find(tag) else {
                    return Err(unterminated("dollar-quoted string"));
                };
                let e = body + end + tag.len();
                push(&mut out, K::Str, s, e, src[body..body + end].to_string());
                i = e;
                continue;
            }
        }
        if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let mut j = i;
            while j < b.len()
                && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'$' || b[j] >= 0x80)
            {
                j += 1;
            }
            push(&mut out, K::Word, s, j, src[i..j].to_ascii_lowercase());
            i = j;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let mut j = i;
            while j < b.len() {
                let d = b[j];
                if d.is_ascii_digit() || (d == b'.' && b.get(j + 1) != Some(&b'.')) {
                    j += 1;
                } else if (d == b'e' || d == b'E')
                    && (b.get(j + 1).is_some_and(|x| x.is_ascii_digit())
                        || (matches!(b.get(j + 1), Some(b'+' | b'-'))
                            && b.get(j + 2).is_some_and(|x| x.is_ascii_digit())))
                {
                    j += 2;
                } else {
                    break;
                }
            }
            push(&mut out, K::Num, s, j, src[i..j].to_string());
            i = j;
            continue;
        }
        if c == b'.' && b.get(i + 1) == Some(&b'.') {
            push(&mut out, K::Op, s, i + 2, "..".into());
            i += 2;
            continue;
        }
        if src[i..].starts_with(":=") || src[i..].starts_with("=>") || src[i..].starts_with("::") {
            push(&mut out, K::Op, s, i + 2, src[i..i + 2].to_string());
            i += 2;
            continue;
        }
        if OP_CHARS.as_bytes().contains(&c) {
            let mut j = i;
            while j < b.len()
                && OP_CHARS.as_bytes().contains(&b[j])
                && !src[j..].starts_with("--")
                && !src[j..].starts_with("/*")
            {
                j += 1;
            }
            // `=-1`: a trailing sign is the operand's (PostgreSQL's rule).
            while j > i + 1
                && matches!(b[j - 1], b'+' | b'-')
                && !src[i..j].chars().any(|x| "~!@#%^&|`?".contains(x))
            {
                j -= 1;
            }
            push(&mut out, K::Op, s, j, src[i..j].to_string());
            i = j;
            continue;
        }
        let ch = src[i..].chars().next().unwrap_or(' ');
        push(&mut out, K::Op, s, i + ch.len_utf8(), ch.to_string());
        i += ch.len_utf8();
    }
    Ok(out)
}

/// A quoted token from `at` (its opening quote): its value and its end.
fn quoted(src: &str, at: usize, q: u8, esc: bool) -> Result<(String, usize)> {
    let b = src.as_bytes();
    let mut v = Vec::new();
    let mut i = at + 1;
    loop {
        let Some(&c) = b.get(i) else {
            return Err(unterminated("quoted string"));
        };
        if c == q {
            if b.get(i + 1) == Some(&q) {
                v.push(q);
                i += 2;
                continue;
            }
            return Ok((String::from_utf8_lossy(&v).into_owned(), i + 1));
        }
        if esc && c == b'\\' {
            if let Some(&d) = b.get(i + 1) {
                v.push(match d {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    other => other,
                });
                i += 2;
                continue;
            }
        }
        v.push(c);
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let t = lex("x := $1 + 'a''b' -- c\n FOR i IN 1..10 $f$ q $f$ E'\\n' a.b").unwrap();
        let w: Vec<&str> = t.iter().map(|t| t.w.as_str()).collect();
        assert_eq!(
            w,
            vec![
                "x", ":=", "1", "+", "a'b", "for", "i", "in", "1", "..", "10", " q ", "\n", "a",
                ".", "b"
            ]
        );
        assert_eq!(t[2].k, K::Param);
    }
}
