//! Comments as PostgreSQL shows them: `pg_description` rows (objoid,
//! classoid, objsubid, description) over the engine's comments
//! (`catalog/comments.rs`) and `public`'s fixed one, and `obj_description`
//! / `col_description`, which read the same rows.

use super::foreign_keys::fk_oid;
use super::*;
use crate::types::oids::{check_oid, user_oid, SLOT_INDEX_CONSTRAINT, SLOT_PKEY_CONSTRAINT};
use walden_engine::CommentOn;

/// `pg_class`, `pg_constraint`, `pg_type`, `pg_namespace` OIDs.
const PG_CLASS: i64 = 1259;
const PG_CONSTRAINT: i64 = 2606;
const PG_TYPE: i64 = 1247;
const PG_NAMESPACE: i64 = 2615;

/// Every comment the transaction sees: (objoid, classoid, objsubid, text).
pub fn descriptions(env: &Env<'_>) -> Vec<(i64, i64, i64, String)> {
    let mut out = vec![(NS_PUBLIC, PG_NAMESPACE, 0, PUBLIC_COMMENT.to_string())];
    let db = env.tx.database();
    let txid = Some(env.tx.id());
    let comments = db.comments_as(txid);
    if comments.is_empty() {
        return out;
    }
    let seen = Seen::of(env);
    let tables = seen.tables();
    let table = |id: u32| tables.iter().find(|t| t.id() == id);
    let views = db.user_views_as(txid);
    let view = |id: u32| views.iter().find(|v| v.id == id);
    for (on, text) in comments {
        let row = match &on {
            CommentOn::Relation(id) => {
                if table(*id).is_some() || view(*id).is_some() {
                    Some((table_oid(*id), PG_CLASS, 0))
                } else if tables
                    .iter()
                    .any(|t| t.def.indexes.iter().any(|i| i.id == *id))
                {
                    Some((index_oid(*id), PG_CLASS, 0))
                } else {
                    None
                }
            }
            CommentOn::PrimaryKeyIndex(id) => Some((pkey_oid(*id), PG_CLASS, 0)),
            CommentOn::Column(id, name) => {
                let pos = match (table(*id), view(*id)) {
                    (Some(t), _) => t.def.columns.iter().position(|c| &c.name == name),
                    (None, Some(v)) => v.columns.iter().position(|c| &c.0 == name),
                    _ => None,
                };
                pos.map(|p| (table_oid(*id), PG_CLASS, p as i64 + 1))
            }
            CommentOn::Constraint(id, name) => table(*id).and_then(|t| {
                let d = &t.def;
                let oid = if !d.primary_key.is_empty() && &d.pkey_name() == name {
                    Some(user_oid(*id, SLOT_PKEY_CONSTRAINT))
                } else if let Some(n) = d.checks.iter().position(|c| &c.name == name) {
                    Some(check_oid(*id, n))
                } else if let Some(n) = d.foreign_keys.iter().position(|f| &f.name == name) {
                    Some(fk_oid(*id, n))
                } else {
                    d.indexes
                        .iter()
                        .find(|i| i.constraint && &i.name == name)
                        .map(|i| user_oid(i.id, SLOT_INDEX_CONSTRAINT))
                };
                oid.map(|o| (o, PG_CONSTRAINT, 0))
            }),
            CommentOn::Sequence(id) => Some((user_oid(*id, SLOT_SEQUENCE), PG_CLASS, 0)),
            CommentOn::Type(id) => Some((enum_oid(*id), PG_TYPE, 0)),
        };
        if let Some((objoid, classoid, sub)) = row {
            out.push((objoid, classoid, sub, text.to_string()));
        }
    }
    out
}

/// The OID a catalog name (`'pg_class'`, `'pg_catalog.pg_class'`) stands
/// for in `obj_description`; `None` for one this function does not know.
fn catalog_oid(name: &str) -> Option<i64> {
    let n = name.strip_prefix("pg_catalog.").unwrap_or(name);
    Some(match n {
        "pg_class" => PG_CLASS,
        "pg_constraint" => PG_CONSTRAINT,
        "pg_type" => PG_TYPE,
        "pg_namespace" => PG_NAMESPACE,
        _ => return None,
    })
}

/// `obj_description(oid [, catalog])`: the object's comment (sub-object 0).
pub fn obj_description(env: &Env<'_>, oid: i64, catalog: Option<&str>) -> Value {
    let class = match catalog {
        Some(c) => match catalog_oid(c) {
            Some(o) => Some(o),
            None => return Value::Null,
        },
        None => None,
    };
    descriptions(env)
        .into_iter()
        .find(|d| d.0 == oid && d.2 == 0 && class.is_none_or(|c| c == d.1))
        .map_or(Value::Null, |d| Value::text(d.3))
}

/// `col_description(table oid, column number)` (0: the relation's own
/// comment, as PostgreSQL's, which reads `pg_description` alike).
pub fn col_description(env: &Env<'_>, oid: i64, attnum: i64) -> Value {
    descriptions(env)
        .into_iter()
        .find(|d| d.0 == oid && d.1 == PG_CLASS && d.2 == attnum)
        .map_or(Value::Null, |d| Value::text(d.3))
}

/// `pg_description`'s rows.
pub fn description_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    descriptions(env)
        .into_iter()
        .map(|(o, c, s, d)| vec![Value::Int(o), Value::Int(c), Value::Int(s), Value::text(d)])
        .collect()
}
