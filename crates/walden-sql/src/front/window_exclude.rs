//! `EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS` after a window frame.
//! sqlparser has no place for it in its AST, so before parsing the clause
//! is removed from the text and its choice written as a marker name at the
//! head of the window's PARTITION BY, which planning takes out again.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// A frame's `EXCLUDE` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exclude {
    NoOthers,
    CurrentRow,
    Group,
    Ties,
}

const MARKER: &str = "walden:exclude:";

fn marker_of(e: Exclude) -> &'static str {
    match e {
        Exclude::CurrentRow => "current row",
        Exclude::Group => "group",
        Exclude::Ties => "ties",
        Exclude::NoOthers => "no others",
    }
}

/// The PARTITION BY list without the marker, and the exclusion it named.
pub(crate) fn take_marker(partition: &[ast::Expr]) -> (Exclude, Vec<ast::Expr>) {
    let mut exclude = Exclude::NoOthers;
    let rest = partition
        .iter()
        .filter(|e| match e {
            ast::Expr::Identifier(id)
                if id.quote_style == Some('"') && id.value.starts_with(MARKER) =>
            {
                let which = &id.value[MARKER.len()..];
                for x in [
                    Exclude::CurrentRow,
                    Exclude::Group,
                    Exclude::Ties,
                    Exclude::NoOthers,
                ] {
                    if marker_of(x) == which {
                        exclude = x;
                    }
                }
                false
            }
            _ => true,
        })
        .cloned()
        .collect();
    (exclude, rest)
}

/// The statement with each frame's EXCLUDE clause turned into a marker;
/// `None` when it has none.
pub(crate) fn rewrite_exclude(sql: &str) -> Option<String> {
    if !sql.to_ascii_uppercase().contains("EXCLUDE") {
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
    // Token index -> text inserted before it; token ranges dropped.
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let mut drops: Vec<(usize, usize)> = Vec::new();
    for (j, &i) in significant.iter().enumerate() {
        if word(i).as_deref() != Some("EXCLUDE") || j == 0 {
            continue;
        }
        let prev = word(significant[j - 1]);
        if !matches!(prev.as_deref(), Some("ROW" | "PRECEDING" | "FOLLOWING")) {
            continue;
        }
        let next = |k: usize| significant.get(j + k).and_then(|&t| word(t));
        let (which, len) = match (next(1).as_deref(), next(2).as_deref()) {
            (Some("CURRENT"), Some("ROW")) => (Exclude::CurrentRow, 2),
            (Some("GROUP"), _) => (Exclude::Group, 1),
            (Some("TIES"), _) => (Exclude::Ties, 1),
            (Some("NO"), Some("OTHERS")) => (Exclude::NoOthers, 2),
            _ => continue,
        };
        // The window's opening parenthesis.
        let mut depth = 0i32;
        let mut k = j;
        let open = loop {
            if k == 0 {
                break None;
            }
            k -= 1;
            match toks[significant[k]] {
                Token::RParen => depth += 1,
                Token::LParen if depth == 0 => break Some(k),
                Token::LParen => depth -= 1,
                _ => {}
            }
        }?;
        let first = significant.get(open + 1).and_then(|&t| word(t));
        let marker = format!("\"{MARKER}{}\"", marker_of(which));
        match first.as_deref() {
            Some("PARTITION") => {
                // After `PARTITION BY`.
                let by = *significant.get(open + 2)?;
                inserts.push((by + 1, format!(" {marker},")));
            }
            Some("ORDER" | "ROWS" | "RANGE" | "GROUPS") | None => {
                inserts.push((significant[open] + 1, format!("PARTITION BY {marker} ")));
            }
            // A window name comes first.
            Some(_) => {
                inserts.push((
                    significant[open + 1] + 1,
                    format!(" PARTITION BY {marker} "),
                ));
            }
        }
        drops.push((i, significant[j + len]));
    }
    if drops.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 64);
    for (i, t) in toks.iter().enumerate() {
        for (at, text) in &inserts {
            if *at == i {
                out.push_str(text);
            }
        }
        if drops.iter().any(|&(a, b)| a <= i && i <= b) {
            continue;
        }
        out.push_str(&t.to_string());
    }
    for (at, text) in &inserts {
        if *at == toks.len() {
            out.push_str(text);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_becomes_a_marker() {
        let s = rewrite_exclude(
            "select sum(x) over (order by x rows between 1 preceding and 1 following exclude current row) from t",
        )
        .unwrap();
        assert!(s.contains("(PARTITION BY \"walden:exclude:current row\" order by x"));
        assert!(!s.to_ascii_lowercase().contains("exclude current"));
        let s = rewrite_exclude(
            "select sum(x) over (partition by a order by x groups current row exclude ties) from t",
        )
        .unwrap();
        assert!(s.contains("partition by \"walden:exclude:ties\", a order by"));
        let s = rewrite_exclude("select sum(x) over (w rows unbounded preceding exclude group) from t window w as (order by x)").unwrap();
        assert!(s.contains("(w PARTITION BY \"walden:exclude:group\" "));
        assert!(rewrite_exclude("select 1 as exclude").is_none());
    }
}
