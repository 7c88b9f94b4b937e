//! Where in the query an undefined column or relation is named, for the
//! ErrorResponse's position field (psql's `LINE 1:` caret), as PostgreSQL
//! reports it. The planner works on a parsed tree without the client's text
//! (literals may have been lifted into parameters), so the name is found
//! again in that text: the first reference to it that is not a function
//! name or an alias being declared; a qualified reference (`t.c`) points at
//! its qualifier, as PostgreSQL does.

use crate::error::{ErrorKind, SqlError};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// The missing name of an undefined column or relation error.
fn missing_name(e: &SqlError) -> Option<&str> {
    if !matches!(
        e.kind,
        ErrorKind::UndefinedColumn | ErrorKind::UndefinedTable
    ) {
        return None;
    }
    // `column "c" does not exist`, `column t.c does not exist` (unquoted,
    // as PostgreSQL writes a qualified one), `relation "t" does not exist`.
    let rest = e
        .message
        .strip_prefix("column ")
        .or_else(|| e.message.strip_prefix("relation "))?;
    let (name, _) = rest.rsplit_once(" does not exist")?;
    let name = name.trim_matches('"');
    // `t.c`: the column part is what the text names last.
    Some(name.rsplit('.').next().unwrap_or(name))
}

/// The character position (from 1) of the reference to the missing name in
/// `sql`, if the error is an undefined column or relation without one.
pub(crate) fn reference_position(sql: &str, e: &SqlError) -> Option<u32> {
    if e.fields.as_ref().is_some_and(|f| f.position.is_some()) {
        return None;
    }
    let name = missing_name(e)?;
    let toks: Vec<TokenWithSpan> = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize_with_location()
        .ok()?
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let is_name = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => w.value.eq_ignore_ascii_case(name),
        Token::Word(w) => w.value == name,
        _ => false,
    };
    for (i, t) in toks.iter().enumerate() {
        if !is_name(&t.token) {
            continue;
        }
        let next = toks.get(i + 1).map(|t| &t.token);
        let prev = i.checked_sub(1).map(|j| &toks[j].token);
        if matches!(next, Some(Token::LParen))
            || matches!(prev, Some(Token::Word(w)) if w.keyword == Keyword::AS)
        {
            continue;
        }
        // `q.name`: PostgreSQL points at the qualifier.
        let mut start = i;
        while start >= 2
            && matches!(toks[start - 1].token, Token::Period)
            && matches!(toks[start - 2].token, Token::Word(_))
        {
            start -= 2;
        }
        let loc = toks[start].span.start;
        let before: usize = sql
            .split('\n')
            .take((loc.line as usize).checked_sub(1)?)
            .map(|l| l.chars().count() + 1)
            .sum();
        return u32::try_from(before + loc.column as usize).ok();
    }
    None
}

impl SqlError {
    /// Adds the position of an undefined column or relation in `sql`.
    pub(crate) fn locate_reference(self, sql: &str) -> SqlError {
        match reference_position(sql, &self) {
            Some(p) => {
                let mut fields = self.fields.clone().map(|f| *f).unwrap_or_default();
                fields.position = Some(p);
                self.with_fields(fields)
            }
            None => self,
        }
    }
}
