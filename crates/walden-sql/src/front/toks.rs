//! The tokens of one statement and `Toks`, the cursor Walden's own parsers read them with.

use super::*;

pub(super) fn words_and_tokens(sql: &str) -> Vec<Token> {
    let dialect = PostgreSqlDialect {};
    match Tokenizer::new(&dialect, sql).tokenize() {
        Ok(t) => t
            .into_iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect(),
        Err(_) => vec![Token::make_word("?", None)],
    }
}

/// A statement's raw tokens (escapes kept, so [`splice`] rebuilds its
/// text) and where the ones that are not whitespace are: what the rewrites
/// before parsing read.
pub(super) struct Raw {
    pub toks: Vec<Token>,
    /// Positions in `toks` of the tokens that are not whitespace.
    pub solid: Vec<usize>,
}

impl Raw {
    pub fn new(sql: &str) -> Option<Raw> {
        let toks = Tokenizer::new(&PostgreSqlDialect {}, sql)
            .with_unescape(false)
            .tokenize()
            .ok()?;
        let solid = (0..toks.len())
            .filter(|i| !matches!(toks[*i], Token::Whitespace(_)))
            .collect();
        Some(Raw { toks, solid })
    }

    /// The `k`th token that is not whitespace.
    pub fn tok(&self, k: usize) -> Option<&Token> {
        self.solid.get(k).map(|i| &self.toks[*i])
    }

    /// The `k`th such token as an unquoted word, upper-cased ("" if not one).
    pub fn word(&self, k: usize) -> String {
        bare_word(self.tok(k))
    }
}

/// An unquoted word, upper-cased; "" for anything else.
pub(super) fn bare_word(t: Option<&Token>) -> String {
    match t {
        Some(Token::Word(w)) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
        _ => String::new(),
    }
}

/// The statement's text with each cut `(from, to, with)` (token positions,
/// inclusive) replaced by `with`: the rewrites that turn PostgreSQL forms
/// sqlparser lacks into ones it parses. `None` when the cuts are out of
/// order or overlap (two forms claiming one token, as in `f(VARIADIC a,
/// VARIADIC b)`): the statement is then parsed as written, and refused.
pub(super) fn splice(toks: &[Token], cuts: Vec<(usize, usize, String)>) -> Option<String> {
    let mut out = String::new();
    let mut i = 0;
    for (from, to, with) in cuts {
        if from < i || to < from || to >= toks.len() {
            return None;
        }
        for t in &toks[i..from] {
            out.push_str(&t.to_string());
        }
        out.push_str(&with);
        i = to + 1;
    }
    for t in &toks[i..] {
        out.push_str(&t.to_string());
    }
    Some(out)
}

/// A cursor over the significant tokens of one statement.
pub(crate) struct Toks {
    pub(super) t: Vec<Token>,
    pub(super) i: usize,
}

impl Toks {
    pub(crate) fn word(&self, k: usize) -> Option<String> {
        match self.t.get(self.i + k) {
            Some(Token::Word(w)) => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }
    pub(crate) fn is(&self, k: usize, w: &str) -> bool {
        self.word(k).as_deref() == Some(w)
    }
    pub(crate) fn next(&mut self) -> Option<Token> {
        let t = self.t.get(self.i).cloned();
        self.i += 1;
        t
    }
    pub(crate) fn eat(&mut self, w: &str) -> bool {
        if self.is(0, w) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(crate) fn eat_tok(&mut self, tok: &Token) -> bool {
        if self.t.get(self.i) == Some(tok) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(crate) fn ident(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w.value),
            Some(Token::SingleQuotedString(s)) => Ok(s),
            other => Err(SqlError::syntax(format!(
                "syntax error: expected a name, found {}",
                other
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "end of input".into())
            ))),
        }
    }
    pub(crate) fn value(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(w.value),
            Some(Token::SingleQuotedString(s)) => Ok(s),
            Some(Token::Number(n, _)) => Ok(n),
            Some(Token::Minus) => Ok(format!("-{}", self.value()?)),
            other => Err(SqlError::syntax(format!(
                "syntax error: expected a value, found {}",
                other
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "end of input".into())
            ))),
        }
    }
    /// Whether the token at `k` is a quoted identifier.
    pub(crate) fn quoted(&self, k: usize) -> bool {
        matches!(self.t.get(self.i + k), Some(Token::Word(w)) if w.quote_style.is_some())
    }
    pub(crate) fn peek_is(&self, tok: &Token) -> bool {
        self.t.get(self.i) == Some(tok)
    }
    pub(crate) fn peek_text(&self) -> Option<String> {
        self.t.get(self.i).map(|t| t.to_string())
    }
    pub(crate) fn at_end(&self) -> bool {
        self.i >= self.t.len()
    }
    pub(crate) fn end(&self, what: &str) -> Result<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\" in {what}",
                self.t[self.i]
            )))
        }
    }
}
