//! Enum types in the catalogs: their `pg_type` rows (and their array
//! types'), `pg_enum`, and their names for `format_type` and `regtype`.

use super::rows::{b, i, t};
use super::views::{NAME, OID};
use super::*;
use walden_engine::types::EnumType;

/// The enum types the statement's transaction sees.
fn types(env: &Env<'_>) -> Vec<Arc<EnumType>> {
    env.tx.database().enum_types_as(Some(env.tx.id()))
}

/// `pg_type` rows of the enum types and their array types (columns as
/// `PgView::Type`'s).
pub(super) fn type_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for e in types(env) {
        let (oid, array) = (enum_oid(e.id), enum_array_oid(e.id));
        out.push(vec![
            i(oid),
            t(&e.name),
            i(NS_PUBLIC),
            i(OWNER_OID),
            i(4),
            b(true),
            t("e"),
            t("E"),
            b(true),
            i(0),
            i(0),
            i(array),
            b(false),
            i(0),
            i(-1),
            i(0),
            i(0),
            t(","),
            t("enum_in"),
            t("enum_out"),
            t("enum_recv"),
            t("enum_send"),
            t("i"),
            t("p"),
            NULL,
        ]);
        out.push(vec![
            i(array),
            t(format!("_{}", e.name)),
            i(NS_PUBLIC),
            i(OWNER_OID),
            i(-1),
            b(false),
            t("b"),
            t("A"),
            b(true),
            i(0),
            i(oid),
            i(0),
            b(false),
            i(0),
            i(-1),
            i(0),
            i(0),
            t(","),
            t("array_in"),
            t("array_out"),
            t("array_recv"),
            t("array_send"),
            t("i"),
            t("x"),
            NULL,
        ]);
    }
    out
}

pub(super) fn enum_columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("oid", OID),
        ("enumtypid", OID),
        ("enumsortorder", DataType::Real),
        ("enumlabel", NAME),
    ]
}

/// `pg_enum`: one row per label.
pub(super) fn enum_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for e in types(env) {
        for l in &e.labels {
            out.push(vec![
                i(enum_label_oid(e.id, l.member)),
                i(enum_oid(e.id)),
                Value::Float(l.sort as f32 as f64),
                t(&l.name),
            ]);
        }
    }
    out
}

/// The name of enum type (or enum array type) `oid`, as `format_type`
/// prints it; `None` if no enum type has that OID.
pub fn enum_type_name(db: &Database, viewer: Option<u64>, oid: i64) -> Option<String> {
    let (id, array) = decode_enum_oid(oid)?;
    let e = db.enum_types_as(viewer).into_iter().find(|e| e.id == id)?;
    let name = quote_ident(&e.name);
    Some(if array { format!("{name}[]") } else { name })
}

/// `format_type(oid, typmod)` with the database's enum types.
pub fn format_type_in(env: &Env<'_>, oid: i64, typmod: Option<i64>) -> Option<String> {
    format_type(oid, typmod)
        .or_else(|| enum_type_name(env.tx.database(), Some(env.tx.id()), oid))
        .or_else(|| match decode_oid(oid) {
            // A table's row type is named after the table.
            Some((id, SLOT_TABLE_TYPE)) => Seen::of(env)
                .tables()
                .into_iter()
                .find(|t| t.id() == id)
                .map(|t| quote_ident(t.name())),
            _ => None,
        })
}

/// `'name'::regtype` for an enum type (or its array type).
pub fn enum_regtype_oid(env: &Env<'_>, name: &str) -> Option<i64> {
    let (base, array) = match name.strip_suffix("[]") {
        Some(b) => (b, true),
        None => match name.strip_prefix('_') {
            Some(b) => (b, true),
            None => (name, false),
        },
    };
    let e = env
        .tx
        .database()
        .enum_type_as(Some(env.tx.id()), base.trim_matches('"'))?;
    Some(if array {
        enum_array_oid(e.id)
    } else {
        enum_oid(e.id)
    })
}
