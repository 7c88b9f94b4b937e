//! CHECK constraints: declared at CREATE TABLE (named as PostgreSQL names
//! them), stored as SQL text in the table's definition (so the log, images
//! and secondaries carry them), compiled with each writing statement and
//! enforced on every row INSERT, UPDATE and COPY FROM write
//! (`dml/checks.rs`).

use crate::dml::checks::{compile_check, parse_stored, scope_of, unnest};
use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::Env;
use crate::query::{self, Planner};
use sqlparser::ast;
use walden_engine::{CheckDef, ColumnDef, DataType, Database, Table};

/// A CHECK as written in CREATE TABLE, before it has its name.
pub(crate) struct Declared {
    pub name: Option<String>,
    pub expr: ast::Expr,
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

/// The columns (1-based) a stored CHECK uses, for `pg_constraint.conkey`.
pub(crate) fn check_columns(env: &Env<'_>, t: &Table, c: &CheckDef) -> Option<Vec<usize>> {
    let mut p = Planner::new(env.tx.database().clone(), env.info.system, &[]);
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

/// A stored expression (a generated column's) as `pg_get_expr` prints it:
/// parenthesized as PostgreSQL's deparser does, or as written when pretty.
pub(crate) fn expr_def_text(sql: &str, pretty: bool) -> String {
    match parse_stored(sql) {
        Ok(e) if pretty => plain(&e),
        Ok(e) => parenthesized(&e),
        Err(_) => sql.to_string(),
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
