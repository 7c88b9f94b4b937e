//! Declarative partitioning: a partitioned table's key and its partitions'
//! bounds, as stored (text in the engine's table definitions), read back
//! and compiled against the tables' columns. `tree.rs` loads a table's
//! partitions and routes rows; `prune.rs` picks the partitions a query's
//! WHERE can reach and expands a partitioned table read in FROM.

mod bound;
mod prune;
mod tree;

pub use bound::{cmp_bounds, Bound};
pub use prune::{expand_sql, prune};
pub use tree::{column_map, display_name, partitions_of, table_by_id, Constraint, Node, PartKey};

use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast;

/// How a partitioned table divides its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Range,
    List,
}

impl Strategy {
    pub fn word(self) -> &'static str {
        match self {
            Strategy::Range => "RANGE",
            Strategy::List => "LIST",
        }
    }

    /// `pg_partitioned_table.partstrat`.
    pub fn code(self) -> &'static str {
        match self {
            Strategy::Range => "r",
            Strategy::List => "l",
        }
    }
}

/// A partition key as written: its strategy and its columns or expressions.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySpec {
    pub strategy: Strategy,
    pub exprs: Vec<ast::Expr>,
}

impl KeySpec {
    /// From `PARTITION BY` (sqlparser reads `RANGE (a, b)` as a call).
    pub fn from_ast(e: &ast::Expr) -> Result<KeySpec> {
        let bad = || {
            SqlError::syntax(format!(
                "syntax error in PARTITION BY {e}: expected RANGE, LIST or HASH (columns)"
            ))
        };
        let ast::Expr::Function(f) = e else {
            return Err(bad());
        };
        let word = crate::query::object_last(&f.name).to_ascii_uppercase();
        let strategy = match word.as_str() {
            "RANGE" => Strategy::Range,
            "LIST" => Strategy::List,
            // PostgreSQL places a row by its hash functions' values, which
            // Walden does not compute: refused rather than placed otherwise.
            "HASH" => {
                return Err(SqlError::unsupported(
                    "PARTITION BY HASH (hash partitioning)",
                ))
            }
            other => {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!(
                        "unrecognized partitioning strategy \"{}\"",
                        other.to_ascii_lowercase()
                    ),
                ))
            }
        };
        let ast::FunctionArguments::List(list) = &f.args else {
            return Err(bad());
        };
        if !list.clauses.is_empty() || list.duplicate_treatment.is_some() {
            return Err(bad());
        }
        let mut exprs = Vec::new();
        for a in &list.args {
            match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => exprs.push(x.clone()),
                _ => return Err(bad()),
            }
        }
        if exprs.is_empty() {
            return Err(bad());
        }
        if strategy == Strategy::List && exprs.len() > 1 {
            return Err(SqlError::new(
                ErrorKind::InvalidTableDefinition,
                "cannot use \"list\" partition strategy with more than one column",
            ));
        }
        Ok(KeySpec { strategy, exprs })
    }

    /// Reads the stored text back.
    pub fn parse(text: &str) -> Result<KeySpec> {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let e = sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(text)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| SqlError::internal(format!("stored partition key {text:?}: {e}")))?;
        KeySpec::from_ast(&e)
    }

    /// The stored text, as `pg_get_partkeydef` shows it: `RANGE (a, b)`.
    pub fn text(&self) -> String {
        let parts: Vec<String> = self.exprs.iter().map(key_expr_text).collect();
        format!("{} ({})", self.strategy.word(), parts.join(", "))
    }

    /// The column a key part is, when it is a plain column.
    pub fn column_name(&self, i: usize) -> Option<String> {
        match &self.exprs[i] {
            ast::Expr::Identifier(id) => Some(crate::expr::fold_ident(id)),
            ast::Expr::Nested(inner) => match inner.as_ref() {
                ast::Expr::Identifier(id) => Some(crate::expr::fold_ident(id)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A key part's text: a column by its (quoted if needed) name, an
/// expression in parentheses, as PostgreSQL prints them.
fn key_expr_text(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(id) => crate::types::quote::quote_ident(&crate::expr::fold_ident(id)),
        ast::Expr::Nested(inner) => key_expr_text(inner),
        ast::Expr::Function(_) => e.to_string(),
        other => format!("({other})"),
    }
}

/// The SQL spelling of a table's engine name (`s.t` for schema `s`).
pub fn sql_name(engine_name: &str) -> String {
    let (schema, name) = walden_engine::namespace::split_engine_name(engine_name);
    let q = crate::types::quote::quote_ident;
    if schema.is_empty() || schema == "public" {
        q(name)
    } else {
        format!("{}.{}", q(schema), q(name))
    }
}
