//! User views in the catalogs: `pg_class` (relkind `v`), `pg_attribute`,
//! `pg_type` (the row type), `pg_views`, `information_schema.views`,
//! `.tables` and `.columns`, and `pg_get_viewdef`.

use super::rows::{attribute_row, class_row, i, t};
use super::*;
use walden_engine::ViewDef;

impl Seen<'_> {
    pub fn views(&self) -> Vec<Arc<ViewDef>> {
        self.db.user_views_as(self.viewer)
    }
}

/// A view's column as the catalogs show it: nullable, no default.
fn column_def(name: &str, ty: &DataType) -> ColumnDef {
    ColumnDef::new(name, ty.clone())
}

pub(super) fn class_rows(env: &Env<'_>, out: &mut Vec<Vec<Value>>) {
    for v in Seen::of(env).views() {
        let mut row = class_row(
            &env.info.path,
            user_oid(v.id, SLOT_TABLE),
            &v.name,
            user_oid(v.id, SLOT_TABLE_TYPE),
            0,
            0.0,
            false,
            "v",
            v.columns.len(),
        );
        let (acl, owner) = crate::catalog::privileges::table_acl(env, v.id);
        row[5] = i(owner);
        let n = row.len();
        row[n - 3] = acl;
        out.push(row);
    }
}

pub(super) fn attribute_rows(env: &Env<'_>, out: &mut Vec<Vec<Value>>) {
    for v in Seen::of(env).views() {
        let relid = user_oid(v.id, SLOT_TABLE);
        for (n, (name, ty)) in v.columns.iter().enumerate() {
            out.push(attribute_row(
                relid,
                n + 1,
                &column_def(name, ty),
                false,
                false,
            ));
        }
    }
}

/// The relations whose row types `pg_type` lists: tables', then views'
/// (id, name).
pub(super) fn row_type_owners(env: &Env<'_>) -> Vec<(u32, String)> {
    let seen = Seen::of(env);
    let mut out: Vec<(u32, String)> = seen
        .tables()
        .iter()
        .map(|tb| (tb.id(), tb.name().to_string()))
        .collect();
    out.extend(seen.views().iter().map(|v| (v.id, v.name.clone())));
    out
}

/// `pg_views`: schemaname, viewname, viewowner, definition.
pub(super) fn pg_views_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let roles = env.instance.roles_for(env.tx);
    Seen::of(env)
        .views()
        .iter()
        .map(|v| {
            let (_, owner) = crate::catalog::privileges::table_acl(env, v.id);
            vec![
                t("public"),
                t(&v.name),
                t(roles.name_of(owner as u32)),
                t(definition(v)),
            ]
        })
        .collect()
}

/// `information_schema.views`: the views are not updatable here.
pub(super) fn info_views_rows(db: &Seen<'_>) -> Vec<Vec<Value>> {
    db.views()
        .iter()
        .map(|v| {
            vec![
                t(db.name()),
                t("public"),
                t(&v.name),
                t(definition(v)),
                t("NONE"),
                t("NO"),
                t("NO"),
                t("NO"),
                t("NO"),
                t("NO"),
            ]
        })
        .collect()
}

pub(super) fn info_views_columns() -> Vec<(&'static str, DataType)> {
    [
        "table_catalog",
        "table_schema",
        "table_name",
        "view_definition",
        "check_option",
        "is_updatable",
        "is_insertable_into",
        "is_trigger_updatable",
        "is_trigger_deletable",
        "is_trigger_insertable_into",
    ]
    .into_iter()
    .map(|n| (n, DataType::Text))
    .collect()
}

pub(super) fn info_tables_rows(db: &Seen<'_>, out: &mut Vec<Vec<Value>>) {
    for v in db.views() {
        out.push(vec![t(db.name()), t("public"), t(&v.name), t("VIEW")]);
    }
}

pub(super) fn info_columns_rows(db: &Seen<'_>, out: &mut Vec<Vec<Value>>) {
    for v in db.views() {
        for (n, (name, ty)) in v.columns.iter().enumerate() {
            out.push(super::rows::info_column_row(
                db.name(),
                &v.name,
                n,
                &column_def(name, ty),
                None,
            ));
        }
    }
}

/// A view's query as `pg_get_viewdef` and `pg_views` print it: the stored
/// text with PostgreSQL's leading space and closing semicolon.
fn definition(v: &ViewDef) -> String {
    format!(" {};", v.query)
}

/// `pg_get_viewdef(oid)`; `None` when the OID is no view.
pub fn viewdef_by_oid(env: &Env<'_>, oid: i64) -> Option<String> {
    let (id, slot) = decode_oid(oid)?;
    if slot != SLOT_TABLE {
        return None;
    }
    let seen = Seen::of(env);
    seen.views()
        .iter()
        .find(|v| v.id == id)
        .map(|v| definition(v))
}

/// `pg_get_viewdef('name')`.
pub fn viewdef_by_name(env: &Env<'_>, name: &str) -> Option<String> {
    let (_, last) = crate::types::split_qualified(name);
    let seen = Seen::of(env);
    let v = seen.db.user_view_as(seen.viewer, &last)?;
    Some(definition(&v))
}
