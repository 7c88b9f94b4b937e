//! The assignments of UPDATE, ON CONFLICT DO UPDATE and MERGE's UPDATE,
//! one target column each. PostgreSQL's multiple-column forms are spread
//! here: `SET (a, b) = (x, y)` and `= ROW(x, y)` become `a = x, b = y`;
//! `SET (a, b) = (SELECT x, y ...)` sets each column from a field of the
//! subquery's one row, evaluated once per updated row (no row: NULLs;
//! several: 21000), as PostgreSQL's MULTIEXPR subplan does.

use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::{Expr, Scope};
use crate::query::{object_last, Planner};
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::{Table, Value};

/// One target column's source.
pub(crate) enum Assigned<'a> {
    /// `col = value` (`value` may be the DEFAULT keyword).
    One {
        col: String,
        i: usize,
        value: &'a ast::Expr,
    },
    /// `(cols) = (SELECT ...)`: the columns, in order, set from the row.
    Row {
        cols: Vec<(String, usize)>,
        query: &'a ast::Query,
    },
}

/// The target columns a row subquery sets and the record it yields (see
/// [`Assigned::Row`]); compiled by [`compile_row`].
pub(crate) struct RowAssignment {
    pub cols: Vec<usize>,
    pub source: Expr,
}

impl RowAssignment {
    /// Sets `row`'s target columns from `source` evaluated on `input`.
    pub(crate) fn apply(
        &self,
        input: &[Value],
        env: &crate::functions::Env<'_>,
        row: &mut [Value],
    ) -> Result<()> {
        match self.source.eval(input, env)? {
            Value::Null => {
                for &i in &self.cols {
                    row[i] = Value::Null;
                }
            }
            Value::Array(fields) if fields.len() == self.cols.len() => {
                for (&i, v) in self.cols.iter().zip(fields.iter()) {
                    row[i] = v.clone();
                }
            }
            _ => return Err(SqlError::internal("row subquery of the wrong width")),
        }
        Ok(())
    }
}

/// Compiles `(cols) = (SELECT ...)`'s subquery in `scope`; its width must
/// be the number of columns (42601), none of them generated (428C9).
pub(crate) fn compile_row(
    p: &mut Planner<'_>,
    t: &Table,
    scope: &Arc<Scope>,
    cols: &[(String, usize)],
    query: &ast::Query,
) -> Result<RowAssignment> {
    for (col, i) in cols {
        if crate::dml::generated::is_generated(t, *i) {
            return Err(crate::dml::generated::value_refused(col, true));
        }
        if crate::dml::identity::is_generated_always(t, *i) {
            return Err(crate::dml::identity::generated_always(col, true));
        }
    }
    let (source, width) = crate::expr::row_subquery(p, scope, query)?;
    if width != cols.len() {
        return Err(mismatch());
    }
    Ok(RowAssignment {
        cols: cols.iter().map(|(_, i)| *i).collect(),
        source,
    })
}

fn mismatch() -> SqlError {
    SqlError::syntax("number of columns does not match number of values")
}

/// `list` spread one column each (see the module comment); `multi` names
/// the statement when `(a, b) = (SELECT ...)` is refused there. A column
/// assigned twice is 42601, as in PostgreSQL.
pub(crate) fn spread<'a>(
    t: &Table,
    list: &'a [ast::Assignment],
    multi: Option<&str>,
) -> Result<Vec<Assigned<'a>>> {
    let mut out = Vec::with_capacity(list.len());
    let mut seen: Vec<usize> = Vec::with_capacity(list.len());
    let mut note = |col: &str, i: usize| -> Result<()> {
        if seen.contains(&i) {
            return Err(SqlError::syntax(format!(
                "multiple assignments to same column \"{col}\""
            )));
        }
        seen.push(i);
        Ok(())
    };
    for a in list {
        match &a.target {
            ast::AssignmentTarget::ColumnName(n) => {
                let col = object_last(n);
                let i = column(t, &col)?;
                note(&col, i)?;
                out.push(Assigned::One {
                    col,
                    i,
                    value: &a.value,
                });
            }
            ast::AssignmentTarget::Tuple(names) => {
                let mut cols = Vec::with_capacity(names.len());
                for n in names {
                    let col = object_last(n);
                    let i = column(t, &col)?;
                    note(&col, i)?;
                    cols.push((col, i));
                }
                if let Some(q) = subquery(&a.value) {
                    if let Some(what) = multi {
                        return Err(SqlError::unsupported(format!(
                            "{what} SET (...) = (SELECT ...)"
                        )));
                    }
                    out.push(Assigned::Row { cols, query: q });
                    continue;
                }
                let Some(items) = row_items(&a.value)? else {
                    return Err(SqlError::new(
                        ErrorKind::FeatureNotSupported,
                        "source for a multiple-column UPDATE item must be a sub-SELECT or ROW() expression",
                    ));
                };
                if items.len() != cols.len() {
                    return Err(mismatch());
                }
                for ((col, i), value) in cols.into_iter().zip(items) {
                    out.push(Assigned::One { col, i, value });
                }
            }
        }
    }
    Ok(out)
}

/// The column `col` of `t` (42703 when it has none).
pub(crate) fn column(t: &Table, col: &str) -> Result<usize> {
    t.def.column_index(col).ok_or_else(|| {
        SqlError::new(
            ErrorKind::UndefinedColumn,
            format!(
                "column \"{col}\" of relation \"{}\" does not exist",
                t.name()
            ),
        )
    })
}

fn subquery(e: &ast::Expr) -> Option<&ast::Query> {
    match e {
        ast::Expr::Subquery(q) => Some(q),
        ast::Expr::Nested(inner) => subquery(inner),
        _ => None,
    }
}

/// The fields of `(x, y)` or `ROW(x, ...)`; a parenthesised single value
/// is not a row (PostgreSQL wants `ROW(x)` for one column). A field that
/// is not a plain expression (`ROW(v.*)`) is refused.
fn row_items(e: &ast::Expr) -> Result<Option<Vec<&ast::Expr>>> {
    Ok(match e {
        ast::Expr::Tuple(items) => Some(items.iter().collect()),
        ast::Expr::Function(f) if crate::front::fname(f).eq_ignore_ascii_case("row") => Some(
            crate::front::args_of(f)
                .into_iter()
                .map(|a| {
                    crate::front::arg_expr(a)
                        .ok_or_else(|| SqlError::unsupported("SET (...) = ROW(t.*)"))
                })
                .collect::<Result<_>>()?,
        ),
        ast::Expr::Nested(inner)
            if matches!(
                **inner,
                ast::Expr::QualifiedWildcard(..) | ast::Expr::Wildcard(_)
            ) =>
        {
            return Err(SqlError::unsupported("SET (...) = (t.*)"))
        }
        _ => None,
    })
}
