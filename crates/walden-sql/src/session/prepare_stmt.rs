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

/// `pg_prepared_statements` rows of the session's SQL-level statements.
pub fn prepared_statements_rows(list: &[SqlPrepared]) -> Vec<Vec<Value>> {
    list.iter()
        .map(|s| {
            let types: Vec<String> = s
                .prepared
                .param_types
                .iter()
                .map(|t| {
                    let (oid, _) = crate::types::type_oid_and_mod(t);
                    crate::types::regtype_name(oid)
                })
                .collect();
            vec![
                Value::text(&s.name),
                Value::text(&s.text),
                Value::TimestampTz(s.at),
                Value::text(crate::types::array_format(
                    types.iter().map(|t| Some(t.as_str())),
                )),
                Value::Bool(true),
                Value::Int(0),
                Value::Int(0),
            ]
        })
        .collect()
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
            Statement::Query(_)
                | Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
                | Statement::Merge(_)
        )) {
            return Err(SqlError::syntax(
                "syntax error: PREPARE takes SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE",
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
