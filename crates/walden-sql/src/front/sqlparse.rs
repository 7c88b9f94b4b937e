//! Parsing with sqlparser, and the text rewrites applied before it.

use super::*;

/// The front end spells `FOR NO KEY UPDATE` / `FOR KEY SHARE` (which
/// sqlparser does not parse) as this clause followed by `FOR UPDATE` /
/// `FOR SHARE`: it makes the next clause the weaker mode.
pub const WEAKER: &str = "walden:weaker row lock";

/// sqlparser parses `FOR UPDATE` and `FOR SHARE` only: `FOR NO KEY UPDATE`
/// and `FOR KEY SHARE` are spelled as a marker clause (see `locking.rs`)
/// followed by the stronger form. `None` when the text has neither.
pub(super) fn weaker_row_locks(sql: &str) -> Option<String> {
    if !sql.to_ascii_uppercase().contains("KEY") {
        return None;
    }
    let toks = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .with_unescape(false)
        .tokenize()
        .ok()?;
    let words: Vec<(usize, String)> = toks
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)))
        .map(|(i, t)| match t {
            Token::Word(w) if w.quote_style.is_none() => (i, w.value.to_ascii_uppercase()),
            _ => (i, String::new()),
        })
        .collect();
    let marker = format!("\"{}\"", WEAKER);
    // (first token, last token, replacement)
    let mut cuts: Vec<(usize, usize, String)> = Vec::new();
    for (j, (i, w)) in words.iter().enumerate() {
        if w != "FOR" {
            continue;
        }
        let next = |k: usize| words.get(j + k).map(|(_, w)| w.as_str());
        if next(1) == Some("NO") && next(2) == Some("KEY") && next(3) == Some("UPDATE") {
            cuts.push((
                *i,
                words[j + 3].0,
                format!("FOR UPDATE OF {marker} FOR UPDATE"),
            ));
        } else if next(1) == Some("KEY") && next(2) == Some("SHARE") {
            cuts.push((
                *i,
                words[j + 2].0,
                format!("FOR SHARE OF {marker} FOR SHARE"),
            ));
        }
    }
    if cuts.is_empty() {
        return None;
    }
    super::toks::splice(&toks, cuts)
}

/// Parses a statement with sqlparser: PostgreSQL first, then MS SQL for
/// T-SQL forms; the PostgreSQL error is reported if both fail.
/// The character position (from 1) of sqlparser's `Line: l, Column: c` in
/// `sql`, as PostgreSQL's ErrorResponse reports it.
pub(super) fn error_position(sql: &str, msg: &str) -> Option<u32> {
    let at = msg.rfind("Line: ")?;
    let rest = &msg[at + 6..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let line: usize = line.trim().parse().ok()?;
    let col: usize = rest
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .ok()?;
    let before: usize = sql
        .split('\n')
        .take(line.checked_sub(1)?)
        .map(|l| l.chars().count() + 1)
        .sum();
    u32::try_from(before + col).ok()
}

pub fn parse_sql(sql: &str) -> Result<Statement> {
    let original = sql;
    // T-SQL's @@SPID and @@VERSION parse as operators in the PostgreSQL
    // dialect; spell them as the equivalent functions.
    let rewritten;
    let sql = if sql.contains("@@") {
        rewritten = replace_ci(
            &replace_ci(
                &replace_ci(sql, "@@spid", "pg_backend_pid()"),
                "@@version",
                "version()",
            ),
            "@@identity",
            "walden_last_identity()",
        );
        rewritten.as_str()
    } else {
        sql
    };
    let rewritten3;
    let sql = match tsql_create_index(sql)? {
        Some(s) => {
            rewritten3 = s;
            rewritten3.as_str()
        }
        None => sql,
    };
    let rewritten2;
    let sql = if sql.to_ascii_lowercase().contains("next value for") {
        rewritten2 = next_value_for(sql);
        rewritten2.as_str()
    } else {
        sql
    };
    let rewritten3;
    let sql = match weaker_row_locks(sql) {
        Some(s) => {
            rewritten3 = s;
            rewritten3.as_str()
        }
        None => sql,
    };
    let rewritten5;
    let sql = match super::pg_forms::rewrite(sql) {
        Some(s) => {
            rewritten5 = s;
            rewritten5.as_str()
        }
        None => sql,
    };
    let rewritten6;
    let sql = match super::identity_options::rewrite(sql)? {
        Some(s) => {
            rewritten6 = s;
            rewritten6.as_str()
        }
        None => sql,
    };
    let rewritten7;
    let sql = match super::identity_options::rewrite_overriding(sql) {
        Some(s) => {
            rewritten7 = s;
            rewritten7.as_str()
        }
        None => sql,
    };
    let rewritten8;
    let sql = match super::frame_bounds::rewrite_frame_strings(sql) {
        Some(s) => {
            rewritten8 = s;
            rewritten8.as_str()
        }
        None => sql,
    };
    let rewritten4;
    let sql = match super::window_exclude::rewrite_exclude(sql) {
        Some(s) => {
            rewritten4 = s;
            rewritten4.as_str()
        }
        None => sql,
    };
    // Nesting is bounded by `depth_bound` before parsing (sqlparser's own
    // default of 50 refused ordinary nested CASEs and subqueries, and turned
    // into a misleading syntax error where it backtracks).
    let parse = |dialect: &dyn sqlparser::dialect::Dialect| {
        Parser::new(dialect)
            .with_recursion_limit(MAX_DEPTH + MAX_NESTING + 1)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_statements())
    };
    // sqlparser's PostgreSQL dialect consumes a bare T-SQL `IDENTITY`
    // column option and drops it (`id int IDENTITY, x int` parses as a
    // plain column): such text is read as T-SQL first.
    let pg = if bare_identity(sql) {
        parse(&MsSqlDialect {}).or_else(|_| parse(&PostgreSqlDialect {}))
    } else {
        parse(&PostgreSqlDialect {})
    };
    let stmts = match pg {
        Ok(s) => s,
        Err(pg_err) => match parse(&MsSqlDialect {}) {
            Ok(s) => s,
            Err(_) => {
                if matches!(
                    pg_err,
                    sqlparser::parser::ParserError::RecursionLimitExceeded
                ) {
                    return Err(SqlError::new(
                        crate::error::ErrorKind::StackDepth,
                        "stack depth limit exceeded: the statement nests parentheses, \
                         subqueries or CASE expressions more than 50 deep",
                    ));
                }
                // sqlparser reads `NULLS NOT DISTINCT` only in a table's
                // UNIQUE constraint, which Walden refuses by name; the
                // column's form is refused the same way, not as bad syntax.
                let words: Vec<String> = sql
                    .split_whitespace()
                    .map(|w| w.to_ascii_uppercase())
                    .collect();
                if words
                    .windows(4)
                    .any(|w| w == ["UNIQUE", "NULLS", "NOT", "DISTINCT"])
                {
                    return Err(SqlError::unsupported("NULLS NOT DISTINCT"));
                }
                let msg = pg_err.to_string();
                let msg = msg
                    .strip_prefix("sql parser error: ")
                    .unwrap_or(&msg)
                    .to_string();
                let e = SqlError::syntax(format!("syntax error: {msg}"));
                // A rewritten text's columns are not the client's.
                return Err(match error_position(original, &msg) {
                    Some(p) if std::ptr::eq(original, sql) => {
                        e.with_fields(crate::error::ErrorFields {
                            position: Some(p),
                            ..Default::default()
                        })
                    }
                    _ => e,
                });
            }
        },
    };
    let mut it = stmts.into_iter();
    let first = it
        .next()
        .ok_or_else(|| SqlError::syntax("empty statement"))?;
    if it.next().is_some() {
        return Err(SqlError::syntax("syntax error: more than one statement"));
    }
    Ok(first)
}

/// Removes a COPY option list's `FREEZE [ON|OFF|TRUE|FALSE]`.
pub(super) fn drop_freeze(sql: &str) -> String {
    let mut out = String::new();
    let words: Vec<&str> = sql.split_inclusive([' ', ',', '(', ')']).collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i]
            .trim_matches([' ', ',', '(', ')'])
            .to_ascii_lowercase();
        if w == "freeze" {
            let keep_tail: String = words[i]
                .chars()
                .filter(|c| *c == ')' || *c == '(')
                .collect();
            i += 1;
            if i < words.len() {
                let v = words[i]
                    .trim_matches([' ', ',', '(', ')'])
                    .to_ascii_lowercase();
                if matches!(v.as_str(), "on" | "off" | "true" | "false") {
                    let tail: String = words[i].chars().filter(|c| *c == ')').collect();
                    out.push_str(&keep_tail);
                    out.push_str(&tail);
                    i += 1;
                    continue;
                }
            }
            out.push_str(&keep_tail);
            continue;
        }
        out.push_str(words[i]);
        i += 1;
    }
    // "(format text, )" or "()" left behind.
    let out = out.replace(", )", ")").replace(",)", ")");
    out.replace("with ()", "")
        .replace("WITH ()", "")
        .replace("with ( )", "")
}

/// `NEXT VALUE FOR [schema.]seq` becomes `nextval('seq')`.
pub(super) fn next_value_for(sql: &str) -> String {
    let lower = sql.to_ascii_lowercase();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    while let Some(pos) = lower[i..].find("next value for") {
        let start = i + pos;
        out.push_str(&sql[i..start]);
        let mut j = start + "next value for".len();
        while j < sql.len() && sql.as_bytes()[j].is_ascii_whitespace() {
            j += 1;
        }
        let k = sql[j..]
            .find(|c: char| {
                !(c.is_ascii_alphanumeric()
                    || c == '_'
                    || c == '.'
                    || c == '"'
                    || c == '['
                    || c == ']')
            })
            .map_or(sql.len(), |e| j + e);
        let name = sql[j..k]
            .rsplit('.')
            .next()
            .unwrap_or("")
            .trim_matches(['"', '[', ']']);
        out.push_str(&format!("nextval('{name}')"));
        i = k;
    }
    out.push_str(&sql[i..]);
    out
}

pub(super) fn replace_ci(s: &str, from: &str, to: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(pos) = lower[i..].find(from) {
        out.push_str(&s[i..i + pos]);
        out.push_str(to);
        i += pos + from.len();
    }
    out.push_str(&s[i..]);
    out
}

/// T-SQL's `CREATE [UNIQUE] NONCLUSTERED INDEX`: the same statement without
/// the word (every secondary index here is nonclustered). `CLUSTERED` is
/// refused: a table is ordered by its primary key. `None` when the
/// statement is not of this form.
pub fn tsql_create_index(sql: &str) -> Result<Option<String>> {
    let lead = sql.trim_start();
    let mut words = lead.split_ascii_whitespace();
    if !words
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("create"))
    {
        return Ok(None);
    }
    let mut w = words.next();
    if w.is_some_and(|w| w.eq_ignore_ascii_case("unique")) {
        w = words.next();
    }
    let Some(kind) = w else { return Ok(None) };
    if kind.eq_ignore_ascii_case("clustered") {
        return Err(SqlError::unsupported(
            "CLUSTERED index (a table is ordered by its primary key; create a NONCLUSTERED index)",
        ));
    }
    if !kind.eq_ignore_ascii_case("nonclustered") {
        return Ok(None);
    }
    let at = lead.len() - lead[lead.find(kind).unwrap_or(0)..].len();
    Ok(Some(format!("{}{}", &lead[..at], &lead[at + kind.len()..])))
}

/// Whether a CREATE / ALTER TABLE gives T-SQL's `IDENTITY` column option
/// right after a type (`int IDENTITY`, `numeric(9,0) IDENTITY`), as
/// opposed to PostgreSQL's `AS IDENTITY`, `DROP IDENTITY` or a column
/// named identity.
fn bare_identity(sql: &str) -> bool {
    if !sql.to_ascii_uppercase().contains("IDENTITY") {
        return false;
    }
    let Ok(toks) = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .with_unescape(false)
        .tokenize()
    else {
        return false;
    };
    let solid: Vec<&Token> = toks
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let head: Vec<String> = solid.iter().take(2).filter_map(|t| word(t)).collect();
    if !(head.len() == 2 && matches!(head[0].as_str(), "CREATE" | "ALTER") && head[1] == "TABLE") {
        return false;
    }
    solid.windows(2).any(|w| {
        word(w[1]).as_deref() == Some("IDENTITY")
            && match w[0] {
                Token::RParen => true,
                t => word(t).is_some_and(|p| {
                    !matches!(
                        p.as_str(),
                        "AS" | "DROP" | "REPLICA" | "RESTART" | "ADD" | "SET"
                    )
                }),
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_tsql_identity_is_kept() {
        use sqlparser::ast::{ColumnOption, Statement};
        for sql in [
            "CREATE TABLE t (id int IDENTITY, x int)",
            "CREATE TABLE t (id numeric(9,0) IDENTITY, x int)",
            "CREATE TABLE t (x int, id bigint IDENTITY)",
        ] {
            let Ok(Statement::CreateTable(ct)) = parse_sql(sql) else {
                panic!("{sql} did not parse as CREATE TABLE");
            };
            let id = ct.columns.iter().find(|c| c.name.value == "id").unwrap();
            assert!(
                id.options
                    .iter()
                    .any(|o| matches!(o.option, ColumnOption::Identity(_))),
                "{sql}: {:?}",
                id.options
            );
        }
        for sql in [
            "CREATE TABLE t (id int GENERATED BY DEFAULT AS IDENTITY, x int)",
            "CREATE TABLE t (identity int, x int)",
            "ALTER TABLE t ALTER COLUMN id DROP IDENTITY",
            "ALTER TABLE t REPLICA IDENTITY FULL",
            "SELECT 1 AS identity",
        ] {
            assert!(!bare_identity(sql), "{sql}");
        }
    }

    #[test]
    fn copy_freeze_is_dropped() {
        for sql in [
            "copy pgbench_accounts from stdin with (freeze on)",
            "COPY t FROM STDIN WITH (FORMAT text, FREEZE ON)",
            "COPY t FROM STDIN WITH (FREEZE, FORMAT csv)",
        ] {
            assert!(
                matches!(parse(sql), Ok(Command::Sql(_))),
                "{sql}: {:?}",
                drop_freeze(sql)
            );
        }
    }
}
