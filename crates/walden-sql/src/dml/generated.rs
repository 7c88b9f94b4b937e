//! Generated columns, `GENERATED ALWAYS AS (expr) STORED` as PostgreSQL 15
//! has them: the expression's text is stored with the column
//! (`ColumnDef::generated`, logged and recovered with the table's
//! definition), checked when declared, compiled against the table's columns
//! with its CHECK constraints (`Checks`), and computed from the row's other
//! columns by every path that writes a row (INSERT, UPDATE, COPY, upsert,
//! MERGE, a foreign key's action), after the row's defaults and BEFORE
//! triggers, before the write. A value given for one is refused (428C9);
//! `DEFAULT` is taken.

use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::expr::Expr;
use crate::functions::{Env, Func};
use crate::query::Planner;
use walden_engine::{ColumnDef, DataType, Table, Value};

/// One table's generated columns, compiled: position, expression, type.
#[derive(Default)]
pub(crate) struct Generated {
    list: Vec<(usize, Expr, DataType)>,
}

impl Generated {
    pub(crate) fn compile(p: &mut Planner<'_>, t: &Table) -> Result<Generated> {
        let cols = &t.def.columns;
        if cols.iter().all(|c| c.generated.is_none()) {
            return Ok(Generated::default());
        }
        let scope = crate::dml::checks::scope_of(t.name(), cols);
        let mut list = Vec::new();
        for (i, c) in cols.iter().enumerate() {
            if let Some(sql) = &c.generated {
                let e = crate::dml::checks::parse_stored(sql)?;
                list.push((i, Expr::compile(p, &scope, &e)?, c.data_type.clone()));
            }
        }
        Ok(Generated { list })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Sets the generated columns of a complete row from its other
    /// columns (which is all they may read).
    pub(crate) fn compute(&self, row: &mut [Value], env: &Env<'_>) -> Result<()> {
        for (i, e, ty) in &self.list {
            let v = e.eval(row, env)?;
            row[*i] = crate::functions::cast(v, ty)?;
        }
        Ok(())
    }
}

/// Whether column `i` of `t` is generated.
pub(crate) fn is_generated(t: &Table, i: usize) -> bool {
    t.def.columns.get(i).is_some_and(|c| c.generated.is_some())
}

/// A value given for a generated column (428C9, PostgreSQL's words).
pub(crate) fn value_refused(col: &str, update: bool) -> SqlError {
    let message = if update {
        format!("column \"{col}\" can only be updated to DEFAULT")
    } else {
        format!("cannot insert a non-DEFAULT value into column \"{col}\"")
    };
    SqlError::new(ErrorKind::GeneratedAlways, message).with_fields(ErrorFields {
        detail: Some(format!("Column \"{col}\" is a generated column.")),
        ..Default::default()
    })
}

/// COPY names a generated column (42P10).
pub(crate) fn copy_refused(col: &str) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidColumnReference,
        format!("column \"{col}\" is a generated column"),
    )
    .with_fields(ErrorFields {
        detail: Some("Generated columns cannot be used in COPY.".into()),
        ..Default::default()
    })
}

/// Checks the generated columns of a table being created, as PostgreSQL
/// does: an expression may read the table's other plain columns, only
/// through immutable functions, without subqueries or aggregates.
pub(crate) fn check_declared(p: &mut Planner<'_>, table: &str, cols: &[ColumnDef]) -> Result<()> {
    if cols.iter().all(|c| c.generated.is_none()) {
        return Ok(());
    }
    let scope = crate::dml::checks::scope_of(table, cols);
    for c in cols {
        let Some(sql) = &c.generated else { continue };
        let e = crate::dml::checks::parse_stored(sql)?;
        if crate::query::has_aggregate(&e) {
            return Err(SqlError::new(
                ErrorKind::GroupingError,
                "aggregate functions are not allowed in column generation expressions",
            ));
        }
        let x = Expr::compile(p, &scope, &e)?;
        if x.has_subquery() {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "cannot use subquery in column generation expression",
            ));
        }
        let mut used = Vec::new();
        crate::query::cols_used(&x, &mut used);
        if let Some(g) = used.iter().find(|&&k| cols[k].generated.is_some()) {
            return Err(SqlError::new(
                ErrorKind::InvalidObjectDefinition,
                format!(
                    "cannot use generated column \"{}\" in column generation expression",
                    cols[*g].name
                ),
            )
            .with_fields(ErrorFields {
                detail: Some(
                    "A generated column cannot reference another generated column.".into(),
                ),
                ..Default::default()
            }));
        }
        if !immutable(&x) {
            return Err(SqlError::new(
                ErrorKind::InvalidObjectDefinition,
                "generation expression is not immutable",
            ));
        }
    }
    Ok(())
}

/// The columns of `cols` whose generation expression reads column `i`.
pub(crate) fn readers_of(
    p: &mut Planner<'_>,
    table: &str,
    cols: &[ColumnDef],
    i: usize,
) -> Result<Vec<usize>> {
    let scope = crate::dml::checks::scope_of(table, cols);
    let mut out = Vec::new();
    for (k, c) in cols.iter().enumerate() {
        let Some(sql) = &c.generated else { continue };
        let x = Expr::compile(p, &scope, &crate::dml::checks::parse_stored(sql)?)?;
        let mut used = Vec::new();
        crate::query::cols_used(&x, &mut used);
        if used.contains(&i) {
            out.push(k);
        }
    }
    Ok(out)
}

/// No function whose result can change between calls with the same
/// arguments (volatile) or within a session (the clock, the user, the
/// settings).
fn immutable(e: &Expr) -> bool {
    let own = match e {
        Expr::Func(f, _) => {
            f.is_pure()
                && !matches!(
                    f,
                    Func::Now
                        | Func::Today
                        | Func::LocalTimestamp
                        | Func::StatementTimestamp
                        | Func::ClockTimestamp
                        | Func::CurrentUser
                        | Func::CurrentSetting
                        | Func::CurrentSchema
                        | Func::CurrentSchemas
                        | Func::DbName
                        | Func::DbId
                        | Func::Spid
                )
        }
        _ => true,
    };
    own && e.children().iter().all(|c| immutable(c))
}
