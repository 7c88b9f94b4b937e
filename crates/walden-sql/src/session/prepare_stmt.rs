//! SQL-level prepared statements: `PREPARE name [(type, ...)] AS statement`,
//! `EXECUTE name [(arg, ...)]`, `DEALLOCATE [PREPARE] name | ALL`, and the
//! `pg_prepared_statements` rows of them.
//!
//! They live in the session, beside the wire protocol's named statements
//! (kept by the server): a protocol Parse of a name taken here fails as in
//! PostgreSQL, and DEALLOCATE drops a statement of either kind. EXECUTE runs
//! the statements PREPARE made (not the protocol's).

use super::*;
use crate::QueryOutput;
use sqlparser::ast::Statement;
use walden_engine::Value;

/// A statement `PREPARE` made.
#[derive(Clone, Debug)]
pub(crate) struct SqlPrepared {
    pub name: String,
    /// The whole `PREPARE` text, as `pg_prepared_statements` shows it.
    pub text: String,
    pub prepared: Prepared,
    /// When it was prepared (microseconds since the Unix epoch, UTC).
    pub at: i64,
}

/// `pg_prepared_statements` columns.
pub fn prepared_statements_columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("name", DataType::Text),
        ("statement", DataType::Text),
        ("prepare_time", DataType::TimestampTz),
        ("parameter_types", DataType::Text),
        ("from_sql", DataType::Bool),
        ("generic_plans", DataType::BigInt),
        ("custom_plans", DataType::BigInt),
    ]
}

/// `pg_prepared_statements` rows of the session's SQL-level statements.
pub fn prepared_statements_rows(list: &[SqlPrepared]) -> Vec<Vec<Value>> {
    list.iter()
        .map(|s| {
            let types: Vec<String> = s
                .prepared
                .param_types
                .iter()
                .map(|t| {
                    let (oid, _) = crate::compat::pg_catalog::type_oid_and_mod(t);
                    crate::compat::pg_catalog::regtype_name(oid)
                })
                .collect();
            vec![
                Value::text(&s.name),
                Value::text(&s.text),
                Value::TimestampTz(s.at),
                Value::text(crate::compat::pg_catalog::array_format(
                    types.iter().map(|t| Some(t.as_str())),
                )),
                Value::Bool(true),
                Value::Int(0),
                Value::Int(0),
            ]
        })
        .collect()
}

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
                return crate::expr::typing::data_type(data_type);
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

impl SqlSession {
    /// Whether `PREPARE` made a statement of this name (a protocol Parse of
    /// it must fail).
    pub fn has_sql_prepared(&self, name: &str) -> bool {
        self.sql_prepared.iter().any(|s| s.name == name)
    }

    pub(super) fn sql_prepare(
        &mut self,
        name: &str,
        types: &[DataType],
        body: &str,
        text: &str,
    ) -> Result<QueryOutput> {
        if self.has_sql_prepared(name) {
            return Err(SqlError::new(
                ErrorKind::DuplicatePreparedStatement,
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let given: Vec<Option<DataType>> = types.iter().cloned().map(Some).collect();
        let prepared = self.prepare(body, &given)?;
        if !matches!(prepared.command.as_ref(), Command::Sql(s) if matches!(
            s.as_ref(),
            Statement::Query(_) | Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
        )) {
            return Err(SqlError::syntax(
                "syntax error: PREPARE takes SELECT, VALUES, INSERT, UPDATE or DELETE",
            ));
        }
        self.sql_prepared.push(SqlPrepared {
            name: name.to_string(),
            text: text.to_string(),
            prepared,
            at: walden_engine::types::now_micros(),
        });
        Ok(QueryOutput::command("PREPARE"))
    }

    pub(super) fn sql_execute(&mut self, name: &str, args: &[String]) -> Result<QueryOutput> {
        let Some(stmt) = self.sql_prepared.iter().find(|s| s.name == name).cloned() else {
            return Err(SqlError::new(
                ErrorKind::UndefinedPreparedStatement,
                format!("prepared statement \"{name}\" does not exist"),
            ));
        };
        let want = stmt.prepared.param_types.len();
        if args.len() != want {
            // (PostgreSQL's DETAIL: Expected n parameters but got m.)
            return Err(SqlError::syntax(format!(
                "wrong number of parameters for prepared statement \"{name}\""
            )));
        }
        let mut params = Vec::with_capacity(want);
        if want > 0 {
            // The arguments are expressions over no table, evaluated as a
            // SELECT of them in the session's transaction.
            let select = crate::front::parse_sql(&format!("SELECT {}", args.join(", ")))?;
            let out = self.statement(&select, &[])?;
            let row = out.rows.into_iter().next().unwrap_or_default();
            for (v, t) in row.into_iter().zip(&stmt.prepared.param_types) {
                params.push(if v.is_null() {
                    v
                } else {
                    walden_engine::types::coerce(v, t)?
                });
            }
        }
        self.execute_prepared(&stmt.prepared, params)
    }

    /// Drops SQL-level statements: one (true if it was one of them) or all.
    pub(super) fn sql_deallocate(&mut self, name: Option<&str>) -> bool {
        match name {
            Some(n) => {
                let before = self.sql_prepared.len();
                self.sql_prepared.retain(|s| s.name != n);
                self.sql_prepared.len() != before
            }
            None => {
                self.sql_prepared.clear();
                true
            }
        }
    }
}
