//! The ALTER TABLE text sqlparser does not take as it is: T-SQL's
//! `ALTER COLUMN c type [NULL | NOT NULL]` and `sp_rename`, turned into the
//! PostgreSQL statements they amount to, and PostgreSQL clauses sqlparser
//! does not parse, refused naming them (`alter_table.rs` runs the result).

use crate::error::{Result, SqlError};
use sqlparser::ast;

/// Parses an `ALTER TABLE` statement. What sqlparser does not take is
/// looked at again: T-SQL's `ALTER COLUMN c type [NULL | NOT NULL]` is
/// rewritten to PostgreSQL's form, and a PostgreSQL clause Walden does not
/// do is refused naming it (rather than reported as a syntax error).
pub(crate) fn parse(sql: &str) -> Result<ast::Statement> {
    let first = match crate::front::parse_sql(sql) {
        Ok(s) => return Ok(s),
        // A refusal or a precise error from a rewrite before parsing.
        Err(e) if e.kind != crate::error::ErrorKind::Syntax || !e.message.starts_with("syntax error: ") => {
            return Err(e)
        }
        Err(e) => e,
    };
    let words = words(sql);
    if let Some(pg) = tsql_alter_column(&words) {
        return crate::front::parse_sql(&pg);
    }
    if let Some(clause) = unparsed_clause(&words) {
        return Err(SqlError::unsupported(format!("ALTER TABLE ... {clause}")));
    }
    Err(first)
}

/// The statement's tokens, without whitespace; `[x]` and `"x"` become
/// `"x"`.
fn words(sql: &str) -> Vec<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::MsSqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize() else {
        return Vec::new();
    };
    tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .map(|t| match t {
            Token::Word(w) if w.quote_style.is_some() => {
                format!("\"{}\"", w.value.replace('"', "\"\""))
            }
            other => other.to_string(),
        })
        .collect()
}

fn is(w: &str, kw: &str) -> bool {
    w.eq_ignore_ascii_case(kw)
}

/// `ALTER TABLE t ALTER COLUMN c type [NULL | NOT NULL]` (SQL Server): the
/// type changes as SQL Server converts (an explicit conversion), and the
/// column becomes NOT NULL or, without either word, nullable, as there.
fn tsql_alter_column(w: &[String]) -> Option<String> {
    if w.len() < 7 || !is(&w[0], "ALTER") || !is(&w[1], "TABLE") {
        return None;
    }
    let mut i = 3;
    let mut table = w[2].clone();
    while w.get(i).map(String::as_str) == Some(".") {
        table = format!("{table}.{}", w.get(i + 1)?);
        i += 2;
    }
    if !is(w.get(i)?, "ALTER") || !is(w.get(i + 1)?, "COLUMN") {
        return None;
    }
    let col = w.get(i + 2)?;
    let mut ty: &[String] = &w[i + 3..];
    let mut nullability = "DROP NOT NULL";
    if ty.len() >= 2 && is(&ty[ty.len() - 2], "NOT") && is(&ty[ty.len() - 1], "NULL") {
        nullability = "SET NOT NULL";
        ty = &ty[..ty.len() - 2];
    } else if ty.last().is_some_and(|t| is(t, "NULL")) {
        ty = &ty[..ty.len() - 1];
    }
    if ty.is_empty()
        || ty.iter().any(|t| {
            ["SET", "DROP", "TYPE", "ADD", "COLLATE"]
                .iter()
                .any(|k| is(t, k))
        })
    {
        return None;
    }
    let ty = ty.join(" ").replace(" ( ", "(").replace(" )", ")");
    Some(format!(
        "ALTER TABLE {table} ALTER COLUMN {col} TYPE {ty} USING CAST({col} AS {ty}), \
         ALTER COLUMN {col} {nullability}"
    ))
}

/// The PostgreSQL ALTER TABLE clause in `w` that sqlparser does not parse
/// (and Walden does not do), if any.
fn unparsed_clause(w: &[String]) -> Option<String> {
    const CLAUSES: &[&[&str]] = &[
        &["SET", "SCHEMA"],
        &["SET", "TABLESPACE"],
        &["SET", "ACCESS", "METHOD"],
        &["SET", "WITHOUT", "CLUSTER"],
        &["SET", "WITHOUT", "OIDS"],
        &["SET", "STATISTICS"],
        &["SET", "STORAGE"],
        &["SET", "COMPRESSION"],
        &["SET", "GENERATED"],
        &["SET", "("],
        &["RESET", "("],
        &["CLUSTER", "ON"],
        &["NO", "INHERIT"],
        &["INHERIT"],
        &["NOT", "OF"],
        &["OF"],
        &["ALTER", "CONSTRAINT"],
        &["ATTACH", "PARTITION"],
        &["DETACH", "PARTITION"],
        &["DROP", "IDENTITY"],
        &["RESTART"],
        &["VALIDATE", "CONSTRAINT"],
        &["DISABLE"],
        &["ENABLE"],
        &["REPLICA", "IDENTITY"],
        &["OWNER", "TO"],
        &["USING", "INDEX"],
        &["EXCLUDE"],
    ];
    (3..w.len()).find_map(|i| {
        CLAUSES.iter().find_map(|c| {
            let hit = c
                .iter()
                .enumerate()
                .all(|(k, kw)| w.get(i + k).is_some_and(|x| is(x, kw)));
            hit.then(|| c.join(" ").replace(" (", " (...)"))
        })
    })
}

/// T-SQL's `sp_rename 'table', 'new'` and `sp_rename 'table.column', 'new',
/// 'COLUMN'`, as the ALTER TABLE they amount to. Other object types (an
/// index, a constraint, a user type) are refused.
pub(crate) fn sp_rename(args: &[String]) -> Result<ast::Statement> {
    let (Some(obj), Some(new)) = (args.first(), args.get(1)) else {
        return Err(SqlError::syntax(
            "sp_rename needs the object's name and its new name",
        ));
    };
    let ident = |s: &str| {
        let s = s.trim().trim_start_matches('[').trim_end_matches(']');
        let plain = !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit());
        if plain {
            s.to_string()
        } else {
            format!("\"{}\"", s.replace('"', "\"\""))
        }
    };
    let parts: Vec<&str> = obj.split('.').collect();
    let sql = match args.get(2).map(|k| k.to_ascii_uppercase()) {
        Some(k) if k == "COLUMN" => {
            let [.., table, column] = parts.as_slice() else {
                return Err(SqlError::syntax(
                    "sp_rename of a column needs 'table.column'",
                ));
            };
            format!(
                "ALTER TABLE {} RENAME COLUMN {} TO {}",
                ident(table),
                ident(column),
                ident(new)
            )
        }
        None => format!(
            "ALTER TABLE {} RENAME TO {}",
            ident(parts.last().copied().unwrap_or_default()),
            ident(new)
        ),
        Some(k) if k == "OBJECT" => format!(
            "ALTER TABLE {} RENAME TO {}",
            ident(parts.last().copied().unwrap_or_default()),
            ident(new)
        ),
        Some(other) => {
            return Err(SqlError::unsupported(format!(
                "sp_rename of an object of type '{other}'"
            )))
        }
    };
    crate::front::parse_sql(&sql)
}
