//! A user view named in FROM: its stored query, planned where it is named
//! as a derived table would be, under the view's name and column names.

use super::*;
use from::{rename_cols, Item};

/// Views nested in views deeper than this are refused (a definition can
/// only reach itself through a view replaced later, which `CREATE OR
/// REPLACE` refuses; the bound keeps a damaged catalog from recursing).
const MAX_VIEW_DEPTH: usize = 64;

/// The query of view `v`, parsed from its stored text.
pub fn view_query(v: &walden_engine::ViewDef) -> Result<ast::Query> {
    match crate::front::parse_sql(&v.query)? {
        ast::Statement::Query(q) => Ok(*q),
        _ => Err(SqlError::internal(format!(
            "view \"{}\" holds a definition that is not a query",
            v.name
        ))),
    }
}

/// The FROM item of `name` when it is a view the planner's transaction
/// sees; `None` otherwise (a table, or nothing: the caller's error).
pub(super) fn view_item(
    p: &mut Planner<'_>,
    name: &ast::ObjectName,
    label: &str,
    alias: &Option<ast::TableAlias>,
) -> Result<Option<Item>> {
    let Ok(n) = p.path.user_relation(name) else {
        return Ok(None);
    };
    let Some(v) = p.db.user_view_as(p.viewer, &n) else {
        return Ok(None);
    };
    if p.view_depth >= MAX_VIEW_DEPTH {
        return Err(SqlError::new(
            ErrorKind::InvalidObjectDefinition,
            format!(
                "infinite recursion detected in rules for relation \"{}\"",
                v.name
            ),
        ));
    }
    let q = view_query(&v)?;
    // The view's query sees none of the naming query's CTEs.
    let ctes = std::mem::take(&mut p.ctes);
    p.view_depth += 1;
    let planned = plan_query(p, &q, None);
    p.view_depth -= 1;
    p.ctes = ctes;
    let plan = Arc::new(planned?);
    if plan.columns.len() != v.columns.len() {
        return Err(SqlError::internal(format!(
            "view \"{}\" plans to {} columns, its definition has {}",
            v.name,
            plan.columns.len(),
            v.columns.len()
        )));
    }
    p.note_view(v.id);
    let mut cols: Vec<ScopeCol> = plan
        .columns
        .iter()
        .zip(&v.columns)
        .enumerate()
        .map(|(k, (c, (vn, _)))| ScopeCol {
            table: Some(label.to_string()),
            name: vn.clone(),
            ty: c.ty.clone(),
            origin: crate::ColumnOrigin::of_table(v.id, k),
            ..Default::default()
        })
        .collect();
    rename_cols(&mut cols, alias)?;
    Ok(Some(Item {
        // Each reference expands the view anew, as PostgreSQL inlines it.
        source: Source::Derived {
            plan,
            filter: vec![],
            shared: false,
            label: label.to_string(),
        },
        cols,
    }))
}
