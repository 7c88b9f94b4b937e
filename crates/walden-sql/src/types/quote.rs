//! Identifiers and string literals written as SQL text, as PostgreSQL
//! quotes them (`quote_ident`, `quote_literal`).

/// PostgreSQL's `quote_ident`: double quotes unless the name is a lower-case
/// identifier that is not a reserved word.
pub fn quote_ident(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        && !RESERVED.contains(&s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// PostgreSQL's reserved key words (those `quote_ident` quotes).
pub(super) const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

/// `quote_literal(text)`: a string literal, `E'...'` when it holds a
/// backslash (as PostgreSQL writes it).
pub fn quote_literal_text(s: &str) -> String {
    if s.contains('\\') {
        format!("E'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
    } else {
        quote_literal(s)
    }
}

pub(crate) fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Splits `schema.name` (either part may be double-quoted) and folds
/// unquoted parts to lower case, as PostgreSQL reads a regclass literal.
pub fn split_qualified(s: &str) -> (Option<String>, String) {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = s.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            '.' if !quoted => {
                parts.push(fold(std::mem::take(&mut cur), was_quoted));
                was_quoted = false;
            }
            c => cur.push(c),
        }
    }
    parts.push(fold(cur, was_quoted));
    let name = parts.pop().unwrap_or_default();
    (parts.pop(), name)
}

/// A name part as written: quoted keeps its case, unquoted folds to lower.
fn fold(s: String, quoted: bool) -> String {
    if quoted {
        s
    } else {
        s.trim().to_ascii_lowercase()
    }
}
