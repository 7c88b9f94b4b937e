//! Failed records, grouped: what became of each (wrong result, error,
//! timeout, memory limit) and its category, a normalized form of its
//! message, with a few examples per category.

use super::db::{DbError, Failure};
use serde::Serialize;
use sqllogictest::{TestError, TestErrorKind};
use std::collections::HashMap;

#[derive(Clone, Debug, Serialize)]
pub(super) struct Example {
    pub(super) file: String,
    pub(super) line: u32,
    pub(super) sql: String,
}

#[derive(Clone, Debug, Serialize)]
pub(super) struct Category {
    pub(super) category: String,
    pub(super) count: u64,
    pub(super) statements: u64,
    pub(super) queries: u64,
    pub(super) examples: Vec<Example>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum RecordKind {
    Statement,
    Query,
}

/// What became of a failed record.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Outcome {
    Failed,
    Errored,
    Timeout,
    Memory,
}

#[derive(Default)]
pub(super) struct Categories {
    by_name: HashMap<String, Category>,
}

impl Categories {
    pub(super) fn add(&mut self, name: &str, kind: RecordKind, ex: Example, keep: usize) {
        let c = self
            .by_name
            .entry(name.to_string())
            .or_insert_with(|| Category {
                category: name.to_string(),
                count: 0,
                statements: 0,
                queries: 0,
                examples: Vec::new(),
            });
        c.count += 1;
        match kind {
            RecordKind::Statement => c.statements += 1,
            RecordKind::Query => c.queries += 1,
        }
        if c.examples.len() < keep {
            c.examples.push(ex);
        }
    }

    pub(super) fn sorted(&self) -> Vec<Category> {
        let mut v: Vec<Category> = self.by_name.values().cloned().collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.category.cmp(&b.category)));
        v
    }
}

/// Classifies a failed record: its outcome, its category, and a short
/// description for the failure listing.
pub(super) fn classify(err: &TestError) -> (Outcome, String, String) {
    // The message without the SQL text (shown separately).
    let full = err.kind().to_string();
    let detail = first_lines(full.split("\n[SQL]").next().unwrap_or(""), 8);
    match err.kind() {
        TestErrorKind::Fail { err, .. } => match err.downcast_ref::<DbError>() {
            Some(DbError {
                failure: Failure::Timeout,
                ..
            }) => (Outcome::Timeout, "timeout".into(), detail),
            Some(DbError {
                failure: Failure::Memory,
                ..
            }) => (Outcome::Memory, "memory limit".into(), detail),
            Some(DbError {
                failure: Failure::Panic,
                message,
            }) => (
                Outcome::Errored,
                format!("panic: {}", normalize_message(message)),
                detail,
            ),
            Some(DbError {
                failure: Failure::Sql(kind),
                message,
            }) => (
                Outcome::Errored,
                format!("{kind:?}: {}", normalize_message(message)),
                detail,
            ),
            None => (
                Outcome::Errored,
                normalize_message(&err.to_string()),
                detail,
            ),
        },
        TestErrorKind::QueryResultMismatch {
            expected, actual, ..
        } => (
            Outcome::Failed,
            mismatch_category(&expected, &actual),
            format!(
                "expected: {}\nactual:   {}",
                one_line(&expected, 160),
                one_line(&actual, 160)
            ),
        ),
        TestErrorKind::Ok { .. } => (
            Outcome::Failed,
            "succeeded where an error was expected".into(),
            detail,
        ),
        TestErrorKind::ErrorMismatch { .. } => {
            (Outcome::Failed, "a different error message".into(), detail)
        }
        TestErrorKind::StatementResultMismatch { .. } => {
            (Outcome::Failed, "wrong affected-row count".into(), detail)
        }
        TestErrorKind::QueryResultColumnsMismatch { .. } => {
            (Outcome::Failed, "wrong column types".into(), detail)
        }
        other => (
            Outcome::Failed,
            normalize_message(&first_lines(&other.to_string(), 1)),
            detail,
        ),
    }
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines().take(n).collect::<Vec<_>>().join("\n")
}

/// How many values a printed result holds: `N values hashing to ...` or the
/// whitespace-separated tokens.
fn value_count(s: &str) -> usize {
    let t = s.trim();
    if let Some((n, _)) = t.split_once(" values hashing to ") {
        if let Ok(n) = n.trim().parse() {
            return n;
        }
    }
    t.split_ascii_whitespace().count()
}

fn mismatch_category(expected: &str, actual: &str) -> String {
    let (e, a) = (value_count(expected), value_count(actual));
    let what = if a == 0 {
        "no rows where rows were expected"
    } else if e == 0 {
        "rows where none were expected"
    } else if a < e {
        "fewer values"
    } else if a > e {
        "more values"
    } else {
        "same number of values, different values"
    };
    format!("result mismatch: {what}")
}

/// Groups messages that differ only in names, literals and numbers: quoted
/// text becomes `…`, numbers `N`; for "X is not supported" only the first
/// words of X are kept.
fn normalize_message(m: &str) -> String {
    let m = m.lines().next().unwrap_or("").trim();
    let mut out = String::new();
    let mut chars = m.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' | '`' => {
                // Keep the quote marks, drop what they enclose.
                out.push(c);
                out.push('…');
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                }
                out.push(c);
            }
            '0'..='9' => {
                let prev_word = out
                    .chars()
                    .last()
                    .is_some_and(|p| p.is_alphanumeric() || p == '_');
                while chars
                    .peek()
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.')
                {
                    chars.next();
                }
                if prev_word {
                    // Part of an identifier (t1, col2): the digits go.
                } else {
                    out.push('N');
                }
            }
            _ => out.push(c),
        }
    }
    if let Some(what) = out.strip_suffix(" is not supported") {
        let mut words = what.split_whitespace();
        let head = words.next().unwrap_or("");
        let rest: Vec<&str> = words.take(3).collect();
        let more = what.split_whitespace().count() > 4;
        return format!(
            "{head} {}{} is not supported",
            rest.join(" "),
            if more { " …" } else { "" }
        );
    }
    const MAX: usize = 100;
    if out.chars().count() > MAX {
        let cut: String = out.chars().take(MAX).collect();
        return format!("{cut}…");
    }
    out
}

pub(super) fn one_line(sql: &str, max: usize) -> String {
    let s = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > max {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_grouped() {
        assert_eq!(
            normalize_message("column \"x1\" does not exist"),
            "column \"…\" does not exist"
        );
        assert_eq!(
            normalize_message("expression CASE WHEN a > 3 THEN b END is not supported"),
            "expression CASE WHEN a … is not supported"
        );
        assert_eq!(
            normalize_message("value 12 out of range"),
            "value N out of range"
        );
        assert_eq!(normalize_message("table t1 missing"), "table t missing");
    }

    #[test]
    fn mismatches_are_grouped() {
        assert_eq!(
            mismatch_category("30 values hashing to ab", "27 values hashing to cd"),
            "result mismatch: fewer values"
        );
        assert_eq!(
            mismatch_category("1\n2", "3 4"),
            "result mismatch: same number of values, different values"
        );
        assert_eq!(
            mismatch_category("1", ""),
            "result mismatch: no rows where rows were expected"
        );
    }
}
