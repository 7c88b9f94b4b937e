//! INSERT ... ON CONFLICT, as PostgreSQL 15: the conflict target picks the
//! arbiter constraints (42P10 when none matches), `DO NOTHING` skips a
//! conflicting row, `DO UPDATE SET ... [WHERE ...]` updates it with the
//! proposed row as `EXCLUDED`. A row inserted or updated earlier in the same
//! command cannot be updated again (21000).

use crate::dml::checks::Checks;
use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::expr::{Expr, Scope, ScopeCol};
use crate::query::{object_last, Planner};
use sqlparser::ast;
use std::collections::HashSet;
use std::sync::Arc;
use walden_engine::{Arbiters, Key, Table};

/// A planned ON CONFLICT clause.
pub(crate) struct OnConflict {
    pub(crate) arbiters: Arbiters,
    pub(crate) action: Action,
}

pub(crate) enum Action {
    Nothing,
    /// Expressions see the existing row's columns, then `EXCLUDED`'s.
    Update {
        assignments: Vec<(usize, Expr)>,
        /// `SET (a, b) = (SELECT ...)` assignments.
        rows: Vec<super::assign::RowAssignment>,
        filter: Option<Expr>,
        checks: Checks,
    },
}

impl OnConflict {
    pub(crate) fn reusable(&self) -> bool {
        match &self.action {
            Action::Nothing => true,
            Action::Update {
                assignments,
                rows,
                filter,
                checks,
            } => {
                rows.is_empty()
                    && assignments.iter().all(|(_, e)| !e.has_subquery())
                    && filter.as_ref().is_none_or(|e| !e.has_subquery())
                    && checks.reusable()
            }
        }
    }

    pub(crate) fn locks_existing(&self) -> bool {
        matches!(self.action, Action::Update { .. })
    }
}

/// Plans `ins.on` for table `t` (whose rows are named `label`).
pub(crate) fn plan(
    p: &mut Planner<'_>,
    ins: &ast::Insert,
    t: &Arc<Table>,
    label: &str,
) -> Result<Option<OnConflict>> {
    let oc = match &ins.on {
        None => return Ok(None),
        Some(ast::OnInsert::OnConflict(oc)) => oc,
        Some(ast::OnInsert::DuplicateKeyUpdate(_)) => {
            return Err(SqlError::unsupported("INSERT ... ON DUPLICATE KEY UPDATE"))
        }
        Some(other) => return Err(SqlError::unsupported(format!("INSERT ...{other}"))),
    };
    let arbiters = match &oc.conflict_target {
        None => {
            if matches!(oc.action, ast::OnConflictAction::DoUpdate(_)) {
                return Err(SqlError::syntax(
                    "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                )
                .with_fields(ErrorFields {
                    hint: Some("For example, ON CONFLICT (column_name).".into()),
                    ..Default::default()
                }));
            }
            Arbiters::all(t)
        }
        Some(ast::ConflictTarget::Columns(cols)) => infer(t, cols)?,
        Some(ast::ConflictTarget::OnConstraint(name)) => by_constraint(t, &object_last(name))?,
    };
    let action = match &oc.action {
        ast::OnConflictAction::DoNothing => Action::Nothing,
        ast::OnConflictAction::DoUpdate(du) => plan_update(p, t, label, du)?,
    };
    Ok(Some(OnConflict { arbiters, action }))
}

/// The unique constraints whose columns are exactly `cols` (in any order),
/// as PostgreSQL infers arbiter indexes.
fn infer(t: &Table, cols: &[ast::Ident]) -> Result<Arbiters> {
    let mut want = HashSet::new();
    for c in cols {
        let i = t.def.column_index(&c.value).ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedColumn,
                format!("column \"{}\" does not exist", c.value),
            )
        })?;
        want.insert(i);
    }
    let same = |cs: &[usize]| cs.len() == want.len() && cs.iter().all(|c| want.contains(c));
    let arbiters = Arbiters {
        primary_key: !t.has_hidden_key() && same(&t.def.primary_key),
        indexes: t
            .indexes
            .iter()
            .filter(|ix| ix.def.unique && same(&ix.def.columns))
            .map(|ix| ix.def.id)
            .collect(),
    };
    if !arbiters.primary_key && arbiters.indexes.is_empty() {
        return Err(SqlError::new(
            ErrorKind::InvalidColumnReference,
            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
        ));
    }
    Ok(arbiters)
}

/// `ON CONSTRAINT name`: the primary key or a UNIQUE constraint (a unique
/// index made by CREATE UNIQUE INDEX is not a constraint, as in PostgreSQL).
fn by_constraint(t: &Table, name: &str) -> Result<Arbiters> {
    if !t.has_hidden_key() && t.def.pkey_name().eq_ignore_ascii_case(name) {
        return Ok(Arbiters {
            primary_key: true,
            indexes: vec![],
        });
    }
    match t
        .indexes
        .iter()
        .find(|ix| ix.def.unique && ix.def.constraint && ix.def.name.eq_ignore_ascii_case(name))
    {
        Some(ix) => Ok(Arbiters {
            primary_key: false,
            indexes: vec![ix.def.id],
        }),
        None => Err(SqlError::new(
            ErrorKind::UndefinedObject,
            format!(
                "constraint \"{name}\" for table \"{}\" does not exist",
                t.name()
            ),
        )),
    }
}

fn plan_update(
    p: &mut Planner<'_>,
    t: &Arc<Table>,
    label: &str,
    du: &ast::DoUpdate,
) -> Result<Action> {
    let mut cols: Vec<ScopeCol> = Vec::with_capacity(2 * t.def.columns.len());
    for table in [label, "excluded"] {
        cols.extend(t.def.columns.iter().map(|c| ScopeCol {
            table: Some(table.to_string()),
            name: c.name.clone(),
            ty: c.data_type.clone(),
            origin: None,
            ..Default::default()
        }));
    }
    let scope = Arc::new(Scope::new(cols));
    let mut assignments: Vec<(usize, Expr)> = Vec::new();
    let mut rows = Vec::new();
    for a in super::assign::spread(t, &du.assignments, None)? {
        let (col, i, value) = match a {
            super::assign::Assigned::One { col, i, value } => (col, i, value),
            super::assign::Assigned::Row { cols, query } => {
                rows.push(super::assign::compile_row(p, t, &scope, &cols, query)?);
                continue;
            }
        };
        if crate::dml::generated::is_generated(t, i) {
            if !crate::dml::is_default_kw(value) {
                return Err(crate::dml::generated::value_refused(&col, true));
            }
            continue;
        }
        if crate::dml::is_default_kw(value) && t.def.columns[i].identity.is_some() {
            return Err(SqlError::unsupported(
                "SET col = DEFAULT of an identity column",
            ));
        }
        if crate::dml::identity::is_generated_always(t, i) {
            return Err(crate::dml::identity::generated_always(
                &t.def.columns[i].name,
                true,
            ));
        }
        let e = if crate::dml::is_default_kw(value) {
            crate::dml::defaults::default_of(p, &t.def.columns[i])?
        } else {
            Expr::compile(p, &scope, value)?
        };
        if let Expr::Param(pi) = &e {
            p.infer_param(*pi, t.def.columns[i].data_type.clone());
        }
        assignments.push((i, e));
    }
    let filter = du
        .selection
        .as_ref()
        .map(|w| Expr::compile(p, &scope, w))
        .transpose()?;
    let checks = Checks::compile(p, t)?;
    Ok(Action::Update {
        assignments,
        rows,
        filter,
        checks,
    })
}

/// The error for a second change of one row by one ON CONFLICT DO UPDATE.
pub(crate) fn affected_twice() -> SqlError {
    SqlError::new(
        ErrorKind::CardinalityViolation,
        "ON CONFLICT DO UPDATE command cannot affect row a second time",
    )
    .with_fields(ErrorFields {
        hint: Some(
            "Ensure that no rows proposed for insertion within the same command have \
             duplicate constrained values."
                .into(),
        ),
        ..Default::default()
    })
}

/// Keys a command inserted or updated (only tracked for DO UPDATE).
pub(crate) type Touched = HashSet<Key>;
