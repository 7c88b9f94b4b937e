//! PostgreSQL spellings sqlparser does not take, rewritten before parsing
//! into ones it does that mean the same in Walden: `FROM ONLY t` (and
//! `UPDATE ONLY`, `JOIN ONLY`; Walden has no table inheritance, so a table
//! without its descendants is the table) and `x OPERATOR(pg_catalog.=) ANY
//! (...)` (pg_catalog's operators are the built-in ones; other forms of
//! `OPERATOR(...)` parse as they are and are compiled in `expr/`), and
//! `INTERVAL(p) 'text'` (as a cast to `interval(p)`), and
//! `f(a, VARIADIC arr)`, whose last argument is marked by a call of
//! `__walden_variadic(arr)` for `functions/compile.rs`.

use sqlparser::tokenizer::Token;

/// The function name a `VARIADIC` argument is wrapped in (sqlparser has no
/// VARIADIC in calls); compiling the call takes it out (`functions/variadic.rs`).
pub const VARIADIC_MARK: &str = "__walden_variadic";

/// The comparison operators `OPERATOR(pg_catalog.op) ANY` is rewritten for.
const COMPARISONS: &[&str] = &["=", "<>", "!=", "<", ">", "<=", ">="];

/// `sql` with those forms rewritten; `None` when it has none.
pub(super) fn rewrite(sql: &str) -> Option<String> {
    let upper = sql.to_ascii_uppercase();
    if !upper.contains("ONLY")
        && !upper.contains("OPERATOR")
        && !upper.contains("VARIADIC")
        && !upper.contains("INTERVAL")
    {
        return None;
    }
    let raw = super::toks::Raw::new(sql)?;
    let (toks, solid) = (&raw.toks, &raw.solid);
    let word = |k: usize| raw.word(k);
    // VARIADIC in a routine's declaration (CREATE / DROP FUNCTION) is a
    // parameter mode, left for those statements' own refusal.
    let routine = (0..solid.len()).any(|k| {
        matches!(
            word(k).as_str(),
            "FUNCTION" | "PROCEDURE" | "AGGREGATE" | "ROUTINE"
        )
    });
    // (first token, last token, replacement)
    let mut cuts: Vec<(usize, usize, String)> = Vec::new();
    for k in 0..solid.len() {
        match word(k).as_str() {
            "ONLY"
                if k > 0
                    && matches!(word(k - 1).as_str(), "FROM" | "JOIN" | "UPDATE")
                    && matches!(solid.get(k + 1).map(|i| &toks[*i]), Some(Token::Word(_))) =>
            {
                cuts.push((solid[k], solid[k], String::new()));
            }
            "OPERATOR" => {
                let tok = |j: usize| solid.get(k + j).map(|i| &toks[*i]);
                if tok(1) != Some(&Token::LParen) {
                    continue;
                }
                // OPERATOR(op) or OPERATOR(pg_catalog.op), then ANY/ALL/SOME.
                let (op, close) = match (tok(2), tok(3), tok(4), tok(5)) {
                    (Some(Token::Word(s)), Some(Token::Period), Some(op), Some(Token::RParen))
                        if is_pg_catalog(s) =>
                    {
                        (op.to_string(), 5)
                    }
                    (Some(op), Some(Token::RParen), _, _) => (op.to_string(), 3),
                    _ => continue,
                };
                if COMPARISONS.contains(&op.as_str())
                    && matches!(word(k + close + 1).as_str(), "ANY" | "ALL" | "SOME")
                {
                    cuts.push((solid[k], solid[k + close], op));
                }
            }
            // `INTERVAL(p) 'text'`: sqlparser drops the `(p)`; spelled as
            // the cast it means, which keeps it.
            "INTERVAL" => {
                let tok = |j: usize| solid.get(k + j).map(|i| &toks[*i]);
                if let (
                    Some(Token::LParen),
                    Some(Token::Number(n, _)),
                    Some(Token::RParen),
                    Some(
                        lit @ (Token::SingleQuotedString(_)
                        | Token::EscapedStringLiteral(_)
                        | Token::DollarQuotedString(_)),
                    ),
                ) = (tok(1), tok(2), tok(3), tok(4))
                {
                    cuts.push((
                        solid[k],
                        solid[k + 4],
                        format!("CAST({lit} AS INTERVAL({n}))"),
                    ));
                }
            }
            "VARIADIC"
                if !routine
                    && k > 0
                    && matches!(toks[solid[k - 1]], Token::LParen | Token::Comma) =>
            {
                // The argument runs to the call's closing parenthesis.
                let mut depth = 0usize;
                let close = (k + 1..solid.len()).find(|&j| match toks[solid[j]] {
                    Token::LParen | Token::LBracket => {
                        depth += 1;
                        false
                    }
                    Token::RBracket => {
                        depth = depth.saturating_sub(1);
                        false
                    }
                    Token::RParen if depth == 0 => true,
                    Token::RParen => {
                        depth -= 1;
                        false
                    }
                    _ => false,
                });
                if let Some(close) = close {
                    cuts.push((solid[k], solid[k], format!("{}(", VARIADIC_MARK)));
                    cuts.push((solid[close], solid[close], "))".into()));
                }
            }
            _ => {}
        }
    }
    if cuts.is_empty() {
        return None;
    }
    cuts.sort_by_key(|c| c.0);
    super::toks::splice(toks, cuts)
}

fn is_pg_catalog(w: &sqlparser::tokenizer::Word) -> bool {
    match w.quote_style {
        None => w.value.eq_ignore_ascii_case("pg_catalog"),
        Some(_) => w.value == "pg_catalog",
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn only_and_operator_any_are_rewritten() {
        assert_eq!(
            rewrite("SELECT a FROM ONLY public.t").as_deref(),
            Some("SELECT a FROM  public.t")
        );
        assert_eq!(
            rewrite("UPDATE ONLY t SET a = 1").as_deref(),
            Some("UPDATE  t SET a = 1")
        );
        assert_eq!(
            rewrite("SELECT 1 WHERE k OPERATOR(pg_catalog.=) ANY (array['r'])").as_deref(),
            Some("SELECT 1 WHERE k = ANY (array['r'])")
        );
        assert_eq!(rewrite("SELECT 1 FETCH FIRST 1 ROW ONLY"), None);
        assert_eq!(
            rewrite("SELECT interval(2) '1.234 s', interval '1 s'").as_deref(),
            Some("SELECT CAST('1.234 s' AS INTERVAL(2)), interval '1 s'")
        );
        assert_eq!(rewrite("SELECT 1 WHERE a OPERATOR(pg_catalog.=) b"), None);
        assert_eq!(rewrite("SELECT 1 WHERE a OPERATOR(other.=) ANY (x)"), None);
        assert_eq!(rewrite("SELECT 'FROM ONLY t'"), None);
        assert_eq!(
            rewrite("CREATE FUNCTION f(VARIADIC a int[]) RETURNS int AS 'x' LANGUAGE sql"),
            None
        );
        assert_eq!(
            rewrite("SELECT format('%s', VARIADIC array[f(1), 2]) FROM t").as_deref(),
            Some("SELECT format('%s', __walden_variadic( array[f(1), 2])) FROM t")
        );
    }
}
