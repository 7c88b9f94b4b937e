//! CHECK constraints as writing statements enforce them: a table's stored
//! CHECK texts compiled against its columns once per statement, and each
//! new row tested (23514 on the first that is false). Declaring and naming
//! them is the catalog's (`catalog/constraints.rs`).

use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::expr::{Expr, Scope, ScopeCol};
use crate::functions::Env;
use crate::query::{self, Planner};
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::{ColumnDef, Table, Value};

pub(crate) fn scope_of(table: &str, columns: &[ColumnDef]) -> Arc<Scope> {
    let label = table.to_ascii_lowercase();
    Arc::new(Scope::new(
        columns
            .iter()
            .map(|c| ScopeCol {
                table: Some(label.clone()),
                name: c.name.clone(),
                ty: c.data_type.clone(),
                origin: None,
                ..Default::default()
            })
            .collect(),
    ))
}

/// Strips the parentheses around a whole expression (they are not kept).
pub(crate) fn unnest(e: &ast::Expr) -> &ast::Expr {
    match e {
        ast::Expr::Nested(inner) => unnest(inner),
        other => other,
    }
}

/// Compiles one CHECK expression, refusing what PostgreSQL refuses there.
pub(crate) fn compile_check(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    e: &ast::Expr,
) -> Result<Expr> {
    if query::has_aggregate(e) {
        return Err(SqlError::new(
            ErrorKind::GroupingError,
            "aggregate functions are not allowed in check constraints",
        ));
    }
    let x = Expr::compile(p, scope, e)?;
    if x.has_subquery() {
        return Err(SqlError::new(
            ErrorKind::FeatureNotSupported,
            "cannot use subquery in check constraint",
        ));
    }
    Ok(x)
}

pub(crate) fn parse_stored(text: &str) -> Result<ast::Expr> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::internal(format!("stored CHECK expression {text:?}: {e}")))
}

/// The compiled CHECK constraints of one table, in PostgreSQL's order of
/// evaluation (by name), so the one reported among several is the same;
/// with them its generated columns' expressions (see `generated.rs`), which
/// every writing path that enforces the checks computes before its write.
pub(crate) struct Checks {
    table: String,
    list: Vec<(String, Expr)>,
    generated: crate::dml::generated::Generated,
}

impl Checks {
    pub(crate) fn compile(p: &mut Planner<'_>, t: &Table) -> Result<Checks> {
        let scope = scope_of(t.name(), &t.def.columns);
        let mut list = Vec::with_capacity(t.def.checks.len());
        for c in &t.def.checks {
            let e = parse_stored(&c.expr)?;
            list.push((c.name.clone(), compile_check(p, &scope, &e)?));
        }
        list.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Checks {
            table: t.name().to_string(),
            list,
            generated: crate::dml::generated::Generated::compile(p, t)?,
        })
    }

    /// Neither a CHECK to enforce nor a column to generate.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty() && self.generated.is_empty()
    }

    pub(crate) fn reusable(&self) -> bool {
        self.list.iter().all(|(_, e)| !e.has_subquery())
    }

    /// The table's generated columns.
    pub(crate) fn generated(&self) -> &crate::dml::generated::Generated {
        &self.generated
    }

    /// Computes the row's generated columns (a complete row, before it is
    /// written).
    pub(crate) fn generate(&self, row: &mut [Value], env: &Env<'_>) -> Result<()> {
        self.generated.compute(row, env)
    }

    /// Fails with 23514 on the first constraint the row makes false; a
    /// NULL result passes, as in SQL.
    pub(crate) fn enforce(&self, row: &[Value], env: &Env<'_>) -> Result<()> {
        for (name, e) in &self.list {
            if let Value::Bool(false) = e.eval(row, env)? {
                let values: Vec<String> = row
                    .iter()
                    .map(|v| match v {
                        Value::Null => "null".to_string(),
                        v => v.to_string(),
                    })
                    .collect();
                return Err(SqlError::new(
                    ErrorKind::CheckViolation,
                    format!(
                        "new row for relation \"{}\" violates check constraint \"{name}\"",
                        self.table
                    ),
                )
                .with_fields(ErrorFields {
                    detail: Some(format!("Failing row contains ({}).", values.join(", "))),
                    table: Some(self.table.clone()),
                    constraint: Some(name.clone()),
                    ..Default::default()
                }));
            }
        }
        Ok(())
    }
}
