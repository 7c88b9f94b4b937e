//! Identity columns in INSERT and UPDATE: `GENERATED ALWAYS` refuses
//! explicit values (428C9) unless the INSERT says `OVERRIDING SYSTEM
//! VALUE`; `OVERRIDING USER VALUE` drops the values given for identity
//! columns (the clause reaches the parsed INSERT as in `front`).

use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast;
use walden_engine::Table;

/// A value for a `GENERATED ALWAYS` identity column (428C9, as
/// PostgreSQL's message, detail and hint).
pub(crate) fn generated_always(col: &str, update: bool) -> SqlError {
    let (message, hint) = if update {
        (
            format!("column \"{col}\" can only be updated to DEFAULT"),
            None,
        )
    } else {
        (
            format!("cannot insert a non-DEFAULT value into column \"{col}\""),
            Some("Use OVERRIDING SYSTEM VALUE to override.".to_string()),
        )
    };
    SqlError::new(ErrorKind::GeneratedAlways, message).with_fields(crate::error::ErrorFields {
        detail: Some(format!(
            "Column \"{col}\" is an identity column defined as GENERATED ALWAYS."
        )),
        hint,
        ..Default::default()
    })
}

/// Whether column `i` is a `GENERATED ALWAYS` identity column.
pub(crate) fn is_generated_always(t: &Table, i: usize) -> bool {
    t.def.columns[i]
        .identity
        .is_some_and(|id| id.generated == Some(walden_engine::IdentityGeneration::Always))
}

/// Target positions whose given values are dropped (the column takes its
/// next identity value): identity columns under `OVERRIDING USER VALUE`.
/// A value for a `GENERATED ALWAYS` column is 428C9 unless the INSERT says
/// `OVERRIDING SYSTEM VALUE` (or USER), as PostgreSQL; DEFAULT is allowed.
pub(crate) fn identity_overrides(
    t: &Table,
    ins: &ast::Insert,
    cols: &[usize],
    given: impl Fn(usize) -> bool,
) -> Result<Vec<usize>> {
    use walden_engine::IdentityGeneration as G;
    let over = crate::front::overriding(ins);
    let mut skip = Vec::new();
    for (k, &c) in cols.iter().enumerate() {
        // A generated column takes DEFAULT only, whatever OVERRIDING says.
        if crate::dml::generated::is_generated(t, c) && given(k) {
            return Err(crate::dml::generated::value_refused(
                &t.def.columns[c].name,
                false,
            ));
        }
        let Some(generated) = t.def.columns[c].identity.and_then(|i| i.generated) else {
            continue;
        };
        let given = given(k);
        match over {
            Some(crate::front::Overriding::User) => skip.push(k),
            Some(crate::front::Overriding::System) => {}
            None if given && generated == G::Always => {
                return Err(generated_always(&t.def.columns[c].name, false))
            }
            None => {}
        }
    }
    Ok(skip)
}

/// The T-SQL IDENTITY column an INSERT gives a value (target positions
/// `cols`, `given` as in [`identity_overrides`]), if any.
pub(crate) fn tsql_explicit(
    t: &Table,
    cols: &[usize],
    dropped: &[usize],
    given: impl Fn(usize) -> bool,
) -> Option<String> {
    cols.iter().enumerate().find_map(|(k, &c)| {
        let col = &t.def.columns[c];
        (col.identity.is_some_and(|i| i.tsql) && given(k) && !dropped.contains(&k))
            .then(|| col.name.clone())
    })
}

/// SQL Server's rule: an explicit value for an IDENTITY column needs `SET
/// IDENTITY_INSERT t ON` for the table.
pub(crate) fn check_identity_insert(t: &Table, col: &str, ctx: &super::Ctx<'_>) -> Result<()> {
    let on = ctx
        .info
        .identity
        .lock()
        .ok()
        .and_then(|l| l.insert_on.clone());
    // A temporary table is named as its session knows it (`#t`).
    let visible = crate::types::temp_names::split_temp(t.name()).map_or(t.name(), |(_, n)| n);
    if on.is_some_and(|n| n.eq_ignore_ascii_case(t.name()) || n.eq_ignore_ascii_case(visible)) {
        return Ok(());
    }
    Err(SqlError::new(
        ErrorKind::GeneratedAlways,
        format!(
            "Cannot insert explicit value for identity column in table '{}' when IDENTITY_INSERT is set to OFF.",
            t.name()
        ),
    )
    .with_fields(crate::error::ErrorFields {
        detail: Some(format!("Column \"{col}\" is an IDENTITY column.")),
        ..Default::default()
    }))
}
