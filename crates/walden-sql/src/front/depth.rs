//! Bounds on expression depth and parenthesis nesting, checked before sqlparser runs.

use super::*;
use crate::error::ErrorKind;

/// The deepest expression or set-operation chain Walden plans and evaluates
/// (PostgreSQL's default `max_stack_depth` of 2 MB allows a few thousand to a
/// few tens of thousands, depending on the operator). Statements above it
/// fail with 54001 before sqlparser builds a tree: a left-deep chain such as
/// `1+1+...+1` is parsed in a loop, but planning, evaluating and even
/// dropping that tree recurse once per operator.
pub const MAX_DEPTH: usize = 10_000;

/// The deepest nesting of parentheses (subqueries, function calls,
/// parenthesised expressions) Walden plans. Planning a nested scalar
/// subquery copies the levels inside it, so time and memory grow with the
/// square of this depth: 2,000 levels took 50 s and 15 GB before the limit.
pub const MAX_NESTING: usize = 200;

/// 54001 for a statement deeper than [`MAX_DEPTH`].
pub fn too_deep(depth: usize) -> SqlError {
    SqlError::new(
        ErrorKind::StackDepth,
        format!(
            "stack depth limit exceeded: the statement nests about {depth} operators or \
             set operations deep, more than the {MAX_DEPTH} Walden evaluates"
        ),
    )
}

/// 54001 for a statement nested deeper than [`MAX_NESTING`].
pub fn too_nested(nesting: usize) -> SqlError {
    SqlError::new(
        ErrorKind::StackDepth,
        format!(
            "stack depth limit exceeded: the statement nests parentheses or subqueries \
             {nesting} deep, more than the {MAX_NESTING} Walden plans"
        ),
    )
}

/// An upper bound on how deep the statement's expression tree can be: at
/// each parenthesis level, the operators since the last comma (a chain of
/// them nests one deeper per operator), summed over the enclosing levels;
/// and the deepest parenthesis nesting. Linear in the tokens, no recursion.
pub fn depth_bound(tokens: &[Token]) -> (usize, usize) {
    let mut levels: Vec<usize> = vec![0];
    let (mut depth, mut max, mut nest) = (0usize, 0usize, 0usize);
    for t in tokens {
        match t {
            Token::LParen | Token::LBracket | Token::LBrace => {
                levels.push(0);
                depth += 1;
                nest = nest.max(levels.len() - 1);
            }
            Token::RParen | Token::RBracket | Token::RBrace if levels.len() > 1 => {
                depth -= levels.pop().unwrap_or(0) + 1;
            }
            Token::Comma | Token::SemiColon => {
                if let Some(top) = levels.last_mut() {
                    depth -= *top;
                    *top = 0;
                }
            }
            t if chains(t) => {
                if let Some(top) = levels.last_mut() {
                    *top += 1;
                }
                depth += 1;
            }
            _ => {}
        }
        max = max.max(depth);
    }
    (max, nest)
}

/// The deepest parenthesis nesting in the text, counting parentheses inside
/// literals and comments too (an over-estimate is harmless: it sizes a
/// stack). Bytes, no tokenizer: this runs before every statement.
pub fn paren_nesting(sql: &str) -> usize {
    let (mut d, mut max) = (0usize, 0usize);
    for b in sql.bytes() {
        match b {
            b'(' | b'[' => {
                d += 1;
                max = max.max(d);
            }
            b')' | b']' => d = d.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Whether a token can add a level to a chain: operators, and the keywords
/// that join two operands (AND, OR, UNION, IS, LIKE, ...).
pub(super) fn chains(t: &Token) -> bool {
    match t {
        Token::Word(w) => {
            w.quote_style.is_none()
                && matches!(
                    w.value.to_ascii_uppercase().as_str(),
                    "AND"
                        | "OR"
                        | "NOT"
                        | "UNION"
                        | "EXCEPT"
                        | "INTERSECT"
                        | "MINUS"
                        | "IS"
                        | "LIKE"
                        | "ILIKE"
                        | "SIMILAR"
                        | "BETWEEN"
                        | "IN"
                        | "COLLATE"
                        | "AT"
                        | "OVERLAPS"
                        | "JOIN"
                        | "CASE"
                )
        }
        Token::EOF
        | Token::Number(..)
        | Token::Placeholder(_)
        | Token::Whitespace(_)
        | Token::Period
        | Token::Comma
        | Token::SemiColon
        | Token::Char(_)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::TripleSingleQuotedString(_)
        | Token::TripleDoubleQuotedString(_)
        | Token::DollarQuotedString(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_)
        | Token::TripleSingleQuotedByteStringLiteral(_)
        | Token::TripleDoubleQuotedByteStringLiteral(_)
        | Token::SingleQuotedRawStringLiteral(_)
        | Token::DoubleQuotedRawStringLiteral(_)
        | Token::TripleSingleQuotedRawStringLiteral(_)
        | Token::TripleDoubleQuotedRawStringLiteral(_)
        | Token::NationalStringLiteral(_)
        | Token::QuoteDelimitedStringLiteral(_)
        | Token::NationalQuoteDelimitedStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::UnicodeStringLiteral(_)
        | Token::HexStringLiteral(_) => false,
        _ => true,
    }
}
