//! CHECK constraints: declared at CREATE TABLE (named as PostgreSQL names
//! them), stored as SQL text in the table's definition (so the log, images
//! and secondaries carry them), compiled with each writing statement and
//! enforced on every row INSERT, UPDATE and COPY FROM write.

use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::expr::{Expr, Scope, ScopeCol};
use crate::functions::Env;
use crate::query::{self, Planner};
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::{CheckDef, ColumnDef, DataType, Database, Table, Value};

/// A CHECK as written in CREATE TABLE, before it has its name.
pub(crate) struct Declared {
    pub name: Option<String>,
    pub expr: ast::Expr,
}

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
fn unnest(e: &ast::Expr) -> &ast::Expr {
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

/// Names, validates and encodes the CHECK constraints of a new table.
/// `taken` holds the constraint names already used in the schema (generated
/// names avoid them, as PostgreSQL's do).
pub(crate) fn declare(
    p: &mut Planner<'_>,
    table: &str,
    columns: &[ColumnDef],
    declared: Vec<Declared>,
    mut taken: Vec<String>,
) -> Result<Vec<CheckDef>> {
    let scope = scope_of(table, columns);
    let types: Vec<DataType> = columns.iter().map(|c| c.data_type.clone()).collect();
    let mut out: Vec<CheckDef> = Vec::new();
    for d in declared {
        let e = unnest(&d.expr);
        let x = compile_check(p, &scope, e)?;
        if let Some(t) = query::static_type(&x, &types, &p.params) {
            if t != DataType::Bool {
                return Err(SqlError::new(
                    ErrorKind::DatatypeMismatch,
                    format!(
                        "argument of CHECK must be type boolean, not type {}",
                        t.sql_name()
                    ),
                ));
            }
        }
        let name = match d.name {
            Some(n) => {
                if out.iter().any(|c| c.name == n) {
                    return Err(SqlError::new(
                        ErrorKind::DuplicateObject,
                        format!("check constraint \"{n}\" already exists"),
                    ));
                }
                n
            }
            None => {
                // PostgreSQL's rule: "<table>_<column>_check" when the
                // expression uses exactly one column, else "<table>_check";
                // a number is appended until the name is free.
                let mut used = Vec::new();
                query::cols_used(&x, &mut used);
                used.sort_unstable();
                used.dedup();
                let base = match used.as_slice() {
                    [one] => format!("{table}_{}_check", columns[*one].name),
                    _ => format!("{table}_check"),
                };
                let free =
                    |n: &str| !taken.iter().any(|t| t == n) && !out.iter().any(|c| c.name == n);
                let mut name = base.clone();
                let mut pass = 0;
                while !free(&name) {
                    pass += 1;
                    name = format!("{base}{pass}");
                }
                name
            }
        };
        taken.push(name.clone());
        out.push(CheckDef {
            name,
            expr: e.to_string(),
        });
    }
    Ok(out)
}

/// Every constraint name in use in the database (primary keys and checks).
pub(crate) fn names_in_use(db: &Database) -> Vec<String> {
    let mut out = Vec::new();
    for t in db.tables() {
        if !t.has_hidden_key() {
            out.push(t.def.pkey_name());
        }
        out.extend(t.def.checks.iter().map(|c| c.name.clone()));
    }
    out
}

pub(crate) fn parse_stored(text: &str) -> Result<ast::Expr> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::internal(format!("stored CHECK expression {text:?}: {e}")))
}

/// The compiled CHECK constraints of one table, in PostgreSQL's order of
/// evaluation (by name), so the one reported among several is the same.
pub(crate) struct Checks {
    table: String,
    list: Vec<(String, Expr)>,
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
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(crate) fn reusable(&self) -> bool {
        self.list.iter().all(|(_, e)| !e.has_subquery())
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

/// The columns (1-based) a stored CHECK uses, for `pg_constraint.conkey`.
pub(crate) fn check_columns(env: &Env<'_>, t: &Table, c: &CheckDef) -> Option<Vec<usize>> {
    let mut p = Planner::new(env.tx.database().clone(), env.instance, &[]);
    let e = parse_stored(&c.expr).ok()?;
    let x = compile_check(&mut p, &scope_of(t.name(), &t.def.columns), &e).ok()?;
    let mut used = Vec::new();
    query::cols_used(&x, &mut used);
    used.sort_unstable();
    used.dedup();
    Some(used.into_iter().map(|i| i + 1).collect())
}

/// `pg_get_constraintdef` of a CHECK: PostgreSQL's pretty form keeps the
/// expression as written; the plain form parenthesizes every operator.
pub(crate) fn check_def_text(c: &CheckDef, pretty: bool) -> String {
    match parse_stored(&c.expr) {
        Ok(e) if pretty => format!("CHECK ({})", plain(&e)),
        Ok(e) => format!("CHECK ({})", parenthesized(&e)),
        Err(_) => format!("CHECK ({})", c.expr),
    }
}

/// The pretty form: as written, with BETWEEN expanded as PostgreSQL stores it.
fn plain(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } => format!("{expr} >= {low} AND {expr} <= {high}"),
        other => other.to_string(),
    }
}

fn parenthesized(e: &ast::Expr) -> String {
    use ast::Expr as A;
    match e {
        A::Nested(inner) => parenthesized(inner),
        A::BinaryOp { left, op, right } => {
            format!("({} {op} {})", parenthesized(left), parenthesized(right))
        }
        A::UnaryOp {
            op: ast::UnaryOperator::Not,
            expr,
        } => format!("(NOT {})", parenthesized(expr)),
        A::IsNull(x) => format!("({} IS NULL)", parenthesized(x)),
        A::IsNotNull(x) => format!("({} IS NOT NULL)", parenthesized(x)),
        A::Between {
            expr,
            negated: false,
            low,
            high,
        } => {
            let x = parenthesized(expr);
            format!(
                "(({x} >= {}) AND ({x} <= {}))",
                parenthesized(low),
                parenthesized(high)
            )
        }
        A::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => format!("'{}'::text", s.replace('\'', "''")),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}
