//! Foreign keys in the catalogs: `pg_constraint` rows (contype 'f') and
//! `pg_get_constraintdef`, which psql's `\d` ("Foreign-key constraints",
//! "Referenced by") and drivers read.

use crate::compat::pg_catalog::Seen;
use crate::types::oids::{index_oid, pkey_oid, table_oid, NS_PUBLIC};
use walden_engine::{Database, ForeignKeyDef, Table, Value};

/// Above the CHECK constraints' numbers in the same OID scheme
/// (`pg_catalog::check_oid`): bit 11 of the low 12 bits marks a foreign key.
const FK_BIT: i64 = 0x800;

/// `pg_constraint.oid` of a table's n-th (0-based) foreign key.
pub(crate) fn fk_oid(table_id: u32, n: usize) -> i64 {
    (table_oid(table_id) << 12) | FK_BIT | (n as i64 + 1)
}

/// The table and foreign key an OID stands for.
pub(crate) fn by_oid(db: &Seen<'_>, oid: i64) -> Option<(std::sync::Arc<Table>, usize)> {
    if oid & FK_BIT == 0 {
        return None;
    }
    let n = (oid & (FK_BIT - 1)) as usize;
    let rel = oid >> 12;
    let t = db.tables().into_iter().find(|t| table_oid(t.id()) == rel)?;
    (n > 0 && n <= t.def.foreign_keys.len()).then_some((t, n - 1))
}

/// `pg_get_constraintdef` of a foreign key's OID.
pub(crate) fn constraintdef(db: &Seen<'_>, oid: i64) -> Option<String> {
    let (t, n) = by_oid(db, oid)?;
    let fk = &t.def.foreign_keys[n];
    let r = db.table_by_id(fk.ref_table)?;
    Some(crate::catalog::foreign_keys::constraint_def(
        &t.def, &r.def, fk,
    ))
}

/// The OID of the referenced table's index behind the referenced columns.
pub(crate) fn referenced_index(r: &Table, fk: &ForeignKeyDef) -> i64 {
    let mut want = fk.ref_columns.clone();
    want.sort_unstable();
    let same = |c: &[usize]| {
        let mut c = c.to_vec();
        c.sort_unstable();
        c == want
    };
    if !r.def.primary_key.is_empty() && same(&r.def.primary_key) {
        return pkey_oid(r.id());
    }
    r.def
        .indexes
        .iter()
        .find(|ix| ix.unique && same(&ix.columns))
        .map_or(0, |ix| index_oid(ix.id))
}

fn int_array(cols: &[usize]) -> Value {
    Value::Array(cols.iter().map(|&c| Value::Int(c as i64 + 1)).collect())
}

/// `pg_constraint` rows of every foreign key (its column order).
pub(crate) fn pg_constraint_rows(db: &Seen<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for t in db.tables() {
        for (n, fk) in t.def.foreign_keys.iter().enumerate() {
            let Some(r) = db.table_by_id(fk.ref_table) else {
                continue;
            };
            let c = |ch: char| Value::text(ch.to_string());
            out.push(vec![
                Value::Int(fk_oid(t.id(), n)),
                Value::text(&fk.name),
                Value::Int(NS_PUBLIC),
                c('f'),
                Value::Bool(fk.deferrable),
                Value::Bool(fk.initially_deferred),
                Value::Bool(true),
                Value::Int(table_oid(t.id())),
                Value::Int(0),
                Value::Int(referenced_index(&r, fk)),
                Value::Int(0),
                Value::Int(table_oid(r.id())),
                c(fk.on_update.code()),
                c(fk.on_delete.code()),
                c(if fk.match_full { 'f' } else { 's' }),
                Value::Bool(true),
                Value::Int(0),
                Value::Bool(true),
                int_array(&fk.columns),
                int_array(&fk.ref_columns),
                Value::Null,
            ]);
        }
    }
    out
}

/// The information_schema views about constraints (SQL standard), which
/// drivers and tools read: `table_constraints`, `key_column_usage`,
/// `referential_constraints`, `constraint_column_usage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoView {
    TableConstraints,
    KeyColumnUsage,
    ReferentialConstraints,
    ConstraintColumnUsage,
}

impl InfoView {
    pub fn lookup(name: &str) -> Option<InfoView> {
        Some(match name {
            "table_constraints" => InfoView::TableConstraints,
            "key_column_usage" => InfoView::KeyColumnUsage,
            "referential_constraints" => InfoView::ReferentialConstraints,
            "constraint_column_usage" => InfoView::ConstraintColumnUsage,
            _ => return None,
        })
    }

    pub fn columns(self) -> Vec<(&'static str, walden_engine::DataType)> {
        use walden_engine::DataType::{Int, Text};
        let names: &[&'static str] = match self {
            InfoView::TableConstraints => &[
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
                "table_catalog",
                "table_schema",
                "table_name",
                "constraint_type",
                "is_deferrable",
                "initially_deferred",
                "enforced",
                "nulls_distinct",
            ],
            InfoView::KeyColumnUsage => &[
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
                "table_catalog",
                "table_schema",
                "table_name",
                "column_name",
                "ordinal_position",
                "position_in_unique_constraint",
            ],
            InfoView::ReferentialConstraints => &[
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
                "unique_constraint_catalog",
                "unique_constraint_schema",
                "unique_constraint_name",
                "match_option",
                "update_rule",
                "delete_rule",
            ],
            InfoView::ConstraintColumnUsage => &[
                "table_catalog",
                "table_schema",
                "table_name",
                "column_name",
                "constraint_catalog",
                "constraint_schema",
                "constraint_name",
            ],
        };
        names
            .iter()
            .map(|&n| {
                let ty = if n == "ordinal_position" || n == "position_in_unique_constraint" {
                    Int
                } else {
                    Text
                };
                (n, ty)
            })
            .collect()
    }

    pub fn rows(self, db: &Seen<'_>) -> Vec<Vec<Value>> {
        fn t(s: impl AsRef<str>) -> Value {
            Value::text(s)
        }
        let cat = db.name().to_string();
        let mut out = Vec::new();
        for tb in db.tables() {
            let d = &tb.def;
            for k in keys_of(db, &tb) {
                match self {
                    InfoView::TableConstraints => out.push(vec![
                        t(&cat),
                        t("public"),
                        t(&k.name),
                        t(&cat),
                        t("public"),
                        t(d.name.as_str()),
                        t(k.kind),
                        t(if k.deferrable.0 { "YES" } else { "NO" }),
                        t(if k.deferrable.1 { "YES" } else { "NO" }),
                        t("YES"),
                        if k.kind == "UNIQUE" {
                            t("YES")
                        } else {
                            Value::Null
                        },
                    ]),
                    InfoView::KeyColumnUsage | InfoView::ConstraintColumnUsage
                        if k.kind == "CHECK" => {}
                    InfoView::KeyColumnUsage => {
                        for (n, &c) in k.columns.iter().enumerate() {
                            out.push(vec![
                                t(&cat),
                                t("public"),
                                t(&k.name),
                                t(&cat),
                                t("public"),
                                t(d.name.as_str()),
                                t(d.columns[c].name.as_str()),
                                Value::Int(n as i64 + 1),
                                k.ref_positions
                                    .as_ref()
                                    .map_or(Value::Null, |p| Value::Int(p[n])),
                            ]);
                        }
                    }
                    InfoView::ConstraintColumnUsage => {
                        // A foreign key uses the referenced columns; the
                        // others their own.
                        let (table, cols) = match &k.references {
                            Some((r, cols)) => (r.def.clone(), cols.clone()),
                            None => (d.clone(), k.columns.clone()),
                        };
                        let mut cols = cols;
                        cols.sort_unstable();
                        for c in cols {
                            out.push(vec![
                                t(&cat),
                                t("public"),
                                t(table.name.as_str()),
                                t(table.columns[c].name.as_str()),
                                t(&cat),
                                t("public"),
                                t(&k.name),
                            ]);
                        }
                    }
                    InfoView::ReferentialConstraints => {
                        let Some((r, _)) = &k.references else {
                            continue;
                        };
                        let fk = &d.foreign_keys[k.fk.expect("a foreign key")];
                        out.push(vec![
                            t(&cat),
                            t("public"),
                            t(&k.name),
                            t(&cat),
                            t("public"),
                            unique_name(r, fk).map_or(Value::Null, Value::text),
                            t(if fk.match_full { "FULL" } else { "NONE" }),
                            t(fk.on_update.sql()),
                            t(fk.on_delete.sql()),
                        ]);
                    }
                }
            }
        }
        out
    }
}

/// One constraint of a table as the information_schema views see it.
struct KeyInfo {
    name: String,
    kind: &'static str,
    columns: Vec<usize>,
    /// For a foreign key: the position of each column's referenced column
    /// in the referenced unique constraint (1-based).
    ref_positions: Option<Vec<i64>>,
    references: Option<(std::sync::Arc<Table>, Vec<usize>)>,
    fk: Option<usize>,
    /// DEFERRABLE, INITIALLY DEFERRED.
    deferrable: (bool, bool),
}

fn keys_of(db: &Database, tb: &Table) -> Vec<KeyInfo> {
    let d = &tb.def;
    let plain = |name: String, kind: &'static str, columns: Vec<usize>| KeyInfo {
        name,
        kind,
        columns,
        ref_positions: None,
        references: None,
        fk: None,
        deferrable: (false, false),
    };
    let mut out = Vec::new();
    if !d.primary_key.is_empty() {
        out.push(plain(d.pkey_name(), "PRIMARY KEY", d.primary_key.clone()));
    }
    for ix in d.indexes.iter().filter(|ix| ix.unique && ix.constraint) {
        out.push(plain(ix.name.clone(), "UNIQUE", ix.columns.clone()));
    }
    for c in &d.checks {
        out.push(plain(c.name.clone(), "CHECK", vec![]));
    }
    for (n, fk) in d.foreign_keys.iter().enumerate() {
        let Some(r) = db.table_by_id(fk.ref_table) else {
            continue;
        };
        let order = unique_columns(&r, fk);
        let ref_positions = fk
            .ref_columns
            .iter()
            .map(|c| {
                order
                    .iter()
                    .position(|o| o == c)
                    .map_or(0, |p| p as i64 + 1)
            })
            .collect();
        out.push(KeyInfo {
            name: fk.name.clone(),
            kind: "FOREIGN KEY",
            columns: fk.columns.clone(),
            ref_positions: Some(ref_positions),
            references: Some((r, fk.ref_columns.clone())),
            fk: Some(n),
            deferrable: (fk.deferrable, fk.initially_deferred),
        });
    }
    out
}

/// The name of the referenced table's constraint behind a foreign key.
fn unique_name(r: &Table, fk: &ForeignKeyDef) -> Option<String> {
    let mut want = fk.ref_columns.clone();
    want.sort_unstable();
    let same = |c: &[usize]| {
        let mut c = c.to_vec();
        c.sort_unstable();
        c == want
    };
    if !r.def.primary_key.is_empty() && same(&r.def.primary_key) {
        return Some(r.def.pkey_name());
    }
    r.def
        .indexes
        .iter()
        .find(|ix| ix.unique && same(&ix.columns))
        .map(|ix| ix.name.clone())
}

/// The columns of the referenced unique constraint, in its order.
fn unique_columns(r: &Table, fk: &ForeignKeyDef) -> Vec<usize> {
    let name = unique_name(r, fk);
    if name.as_deref() == Some(r.def.pkey_name().as_str()) && !r.def.primary_key.is_empty() {
        return r.def.primary_key.clone();
    }
    r.def
        .indexes
        .iter()
        .find(|ix| Some(&ix.name) == name.as_ref())
        .map_or_else(|| fk.ref_columns.clone(), |ix| ix.columns.clone())
}
