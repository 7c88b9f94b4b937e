//! `PREPARE name [(type, ...)] AS statement` and `EXECUTE name [(arg, ...)]`
//! as the front end reads them; the statements are kept and run by the
//! session (`session/prepare_stmt.rs`).

use super::Command;
use crate::error::{Result, SqlError};
use sqlparser::ast::Statement;
use walden_engine::DataType;

/// Reads an identifier at the start of `s`: a quoted one keeps its case,
/// an unquoted one folds to lower case. Returns it and the rest.
fn ident(s: &str) -> Option<(String, &str)> {
    if let Some(q) = s.strip_prefix('"') {
        let mut out = String::new();
        let mut it = q.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if c == '"' {
                if matches!(it.peek(), Some((_, '"'))) {
                    it.next();
                    out.push('"');
                    continue;
                }
                return Some((out, &q[i + 1..]));
            }
            out.push(c);
        }
        return None;
    }
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    (end > 0).then(|| (s[..end].to_lowercase(), &s[end..]))
}

/// Splits `(...)` at the start of `s`: the text inside and the rest. Quotes
/// and nested parentheses are skipped over.
fn parenthesized(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_prefix('(')?;
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in body.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => return Some((&body[..i], &body[i + 1..])),
            (None, ')') => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Splits a list at its top-level commas.
fn split_list(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<char>, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[') => depth += 1,
            (None, ')' | ']') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim());
    }
    out
}

/// A type named in text (`int`, `pg_catalog.oid`, `varchar(10)`, `text[]`).
fn type_named(text: &str) -> Result<DataType> {
    let stmt = crate::front::parse_sql(&format!("SELECT CAST(NULL AS {text})"))?;
    if let Statement::Query(q) = &stmt {
        if let sqlparser::ast::SetExpr::Select(s) = q.body.as_ref() {
            if let Some(sqlparser::ast::SelectItem::UnnamedExpr(sqlparser::ast::Expr::Cast {
                data_type,
                ..
            })) = s.projection.first()
            {
                return crate::types::names::data_type(data_type);
            }
        }
    }
    Err(SqlError::syntax(format!("syntax error in type \"{text}\"")))
}

fn strip_keyword<'a>(s: &'a str, kw: &str) -> Option<&'a str> {
    let head = s.get(..kw.len())?;
    let rest = &s[kw.len()..];
    (head.eq_ignore_ascii_case(kw)
        && rest
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_')))
    .then_some(rest)
}

/// Parses `PREPARE name [(type, ...)] AS statement`.
pub fn parse_prepare(sql: &str) -> Result<Command> {
    let syntax = || SqlError::syntax("syntax error: PREPARE name [(type, ...)] AS statement");
    let rest = strip_keyword(sql.trim(), "PREPARE").ok_or_else(syntax)?;
    let rest = rest.trim_start();
    if strip_keyword(rest, "TRANSACTION").is_some() {
        return Err(SqlError::unsupported(
            "PREPARE TRANSACTION (two-phase commit)",
        ));
    }
    let (name, rest) = ident(rest).ok_or_else(syntax)?;
    let mut rest = rest.trim_start();
    let mut types = Vec::new();
    if rest.starts_with('(') {
        let (list, after) = parenthesized(rest).ok_or_else(syntax)?;
        for t in split_list(list) {
            types.push(type_named(t)?);
        }
        rest = after.trim_start();
    }
    let body = strip_keyword(rest, "AS").ok_or_else(syntax)?.trim();
    let body = body.trim_end_matches(';').trim_end();
    if body.is_empty() {
        return Err(syntax());
    }
    Ok(Command::Prepare {
        name,
        types,
        body: body.to_string(),
        text: sql.trim().trim_end_matches(';').trim_end().to_string(),
    })
}

/// Parses `EXECUTE name [(arg, ...)]`; `None` when the text is not that
/// form (T-SQL's `EXECUTE procedure ...`).
pub fn parse_execute(sql: &str) -> Option<Command> {
    let rest = strip_keyword(sql.trim(), "EXECUTE")?.trim_start();
    let (name, rest) = ident(rest)?;
    let rest = rest.trim().trim_end_matches(';').trim_end();
    let args = if rest.is_empty() {
        Vec::new()
    } else {
        let (inner, after) = parenthesized(rest)?;
        if !after.trim().is_empty() {
            return None;
        }
        split_list(inner).into_iter().map(String::from).collect()
    };
    Some(Command::ExecutePrepared { name, args })
}
