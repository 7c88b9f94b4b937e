//! A window frame offset written as a quoted string (`'1 year'::interval
//! PRECEDING`, `'inf' FOLLOWING`): sqlparser reads a quoted string at the
//! start of a frame bound as an interval literal, so it stops at a `::`
//! and types `'inf'` as an interval. The offset is put in parentheses
//! before parsing, which then reads it as any other expression, typed by
//! its cast or, untyped, by the window's ORDER BY column as PostgreSQL
//! types it.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// The statement with each quoted frame offset in parentheses; `None`
/// when it has none.
pub(crate) fn rewrite_frame_strings(sql: &str) -> Option<String> {
    let upper = sql.to_ascii_uppercase();
    if !(upper.contains("PRECEDING") || upper.contains("FOLLOWING")) {
        return None;
    }
    let toks = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .with_unescape(false)
        .tokenize()
        .ok()?;
    let word = |i: usize| match &toks[i] {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let significant: Vec<usize> = (0..toks.len())
        .filter(|&i| !matches!(toks[i], Token::Whitespace(_)))
        .collect();
    // (token index, text inserted before it)
    let mut inserts: Vec<(usize, &str)> = Vec::new();
    for (j, &i) in significant.iter().enumerate() {
        if !matches!(toks[i], Token::SingleQuotedString(_)) || j == 0 {
            continue;
        }
        let prev = word(significant[j - 1]);
        if !matches!(
            prev.as_deref(),
            Some("ROWS" | "RANGE" | "GROUPS" | "BETWEEN" | "AND")
        ) {
            continue;
        }
        // The bound's PRECEDING or FOLLOWING, at this nesting level and
        // before anything that ends the expression.
        let mut depth = 0i32;
        let mut end = None;
        for &k in &significant[j + 1..] {
            match &toks[k] {
                Token::LParen => depth += 1,
                Token::RParen if depth == 0 => break,
                Token::RParen => depth -= 1,
                Token::Comma if depth == 0 => break,
                _ if depth == 0 => match word(k).as_deref() {
                    Some("PRECEDING" | "FOLLOWING") => {
                        end = Some(k);
                        break;
                    }
                    Some("AND" | "BETWEEN" | "EXCLUDE" | "ROWS" | "RANGE" | "GROUPS") => break,
                    _ => {}
                },
                _ => {}
            }
        }
        let Some(end) = end else { continue };
        inserts.push((i, "("));
        inserts.push((end, ") "));
    }
    if inserts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + inserts.len());
    for (i, t) in toks.iter().enumerate() {
        for (at, text) in &inserts {
            if *at == i {
                out.push_str(text);
            }
        }
        out.push_str(&t.to_string());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_offsets_are_parenthesised() {
        let s = rewrite_frame_strings(
            "select sum(x) over (order by d range between '1 year'::interval preceding and '1 year'::interval following) from t",
        )
        .unwrap();
        assert!(
            s.contains(
                "between ('1 year'::interval ) preceding and ('1 year'::interval ) following"
            ),
            "{s}"
        );
        let s = rewrite_frame_strings(
            "select 1 from t window w as (order by f range between 'inf' preceding and 'inf' following)",
        )
        .unwrap();
        assert!(
            s.contains("between ('inf' ) preceding and ('inf' ) following"),
            "{s}"
        );
        assert!(rewrite_frame_strings("select 'a' between 'a' and 'b'").is_none());
        assert!(rewrite_frame_strings("select x from t where y = 'preceding'").is_none());
    }
}
