//! A statement of a batch or body made ready to run: its variables and the
//! batch-wide values (`@@ROWCOUNT`, `ERROR_MESSAGE()` ...) become
//! parameters `$1..$n`, so the text is parsed once and its plan is cached
//! like a prepared statement's, whatever values the variables hold.

use crate::error::{Result, SqlError};
use sqlparser::dialect::MsSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// A statement's text with its references lifted out.
#[derive(Debug)]
pub struct Lifted {
    pub text: String,
    /// What each `$k` stands for: a variable (`@name`, lower case) or a
    /// batch-wide value (`@@rowcount`, `error_message()`).
    pub refs: Vec<String>,
}

/// The batch-wide values a statement may name, as `@@name`.
const GLOBALS: &[&str] = &[
    "@@rowcount",
    "@@trancount",
    "@@error",
    "@@nestlevel",
    "@@options",
];

/// The `ERROR_*()` functions of a CATCH block.
const ERROR_FUNCS: &[&str] = &[
    "error_message",
    "error_number",
    "error_severity",
    "error_state",
    "error_line",
    "error_procedure",
    "xact_state",
];

/// Lifts the variables out of `sql`; the table variables and shadowed
/// `#t` names of `tables` (name, temporary table) become their tables'
/// names.
pub fn lift(sql: &str, tables: &[(String, String)]) -> Result<Lifted> {
    let lower = sql.to_ascii_lowercase();
    let temps = sql.contains('#') && tables.iter().any(|(n, _)| n.starts_with('#'));
    if !sql.contains('@') && !temps && !lower.contains("error_") && !lower.contains("xact_state") {
        return Ok(Lifted {
            text: sql.to_string(),
            refs: Vec::new(),
        });
    }
    let toks = Tokenizer::new(&MsSqlDialect {}, sql)
        .with_unescape(false)
        .tokenize()
        .map_err(|e| SqlError::syntax(format!("syntax error: {e}")))?;
    let mut refs: Vec<String> = Vec::new();
    let mut out = String::with_capacity(sql.len());
    let slot = |name: String, refs: &mut Vec<String>| -> String {
        let k = match refs.iter().position(|r| *r == name) {
            Some(k) => k,
            None => {
                refs.push(name);
                refs.len() - 1
            }
        };
        format!("${}", k + 1)
    };
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if let Token::Word(w) = t {
            let lower = w.value.to_ascii_lowercase();
            if w.quote_style.is_none() && lower.starts_with("@@") {
                if GLOBALS.contains(&lower.as_str()) {
                    out.push_str(&slot(lower, &mut refs));
                    i += 1;
                    continue;
                }
            } else if w.quote_style.is_none() && lower.starts_with('@') && lower.len() > 1 {
                match tables.iter().find(|(n, _)| *n == lower) {
                    Some((_, t)) => out.push_str(t),
                    None => out.push_str(&slot(lower, &mut refs)),
                }
                i += 1;
                continue;
            } else if w.quote_style.is_none() && lower.starts_with('#') {
                if let Some((_, t)) = tables.iter().find(|(n, _)| *n == lower) {
                    out.push_str(t);
                    i += 1;
                    continue;
                }
            } else if w.quote_style.is_none()
                && ERROR_FUNCS.contains(&lower.as_str())
                && matches!(toks.get(i + 1), Some(Token::LParen))
                && matches!(toks.get(i + 2), Some(Token::RParen))
            {
                out.push_str(&slot(format!("{lower}()"), &mut refs));
                i += 3;
                continue;
            }
        }
        out.push_str(&t.to_string());
        i += 1;
    }
    Ok(Lifted { text: out, refs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_become_parameters() {
        let l = lift(
            "INSERT INTO t VALUES (@i, @Name, @i + @@ROWCOUNT, '@x')",
            &[],
        )
        .unwrap();
        assert_eq!(l.text, "INSERT INTO t VALUES ($1, $2, $1 + $3, '@x')");
        assert_eq!(l.refs, vec!["@i", "@name", "@@rowcount"]);
        let l = lift("SELECT ERROR_MESSAGE(), @@version", &[]).unwrap();
        assert_eq!(l.text, "SELECT $1, @@version");
        let t = [("@t".to_string(), "#tv0_t".to_string())];
        let l = lift("INSERT INTO @t SELECT a FROM @t JOIN x ON @v = 1", &t).unwrap();
        assert_eq!(
            l.text,
            "INSERT INTO #tv0_t SELECT a FROM #tv0_t JOIN x ON $1 = 1"
        );
        assert_eq!(l.refs, vec!["@v"]);
        // A call's own #t in place of its caller's.
        let t = [("#tt".to_string(), "#tt__scope1".to_string())];
        let l = lift("INSERT INTO #TT SELECT a FROM #tt2, #tt", &t).unwrap();
        assert_eq!(
            l.text,
            "INSERT INTO #tt__scope1 SELECT a FROM #tt2, #tt__scope1"
        );
    }
}
