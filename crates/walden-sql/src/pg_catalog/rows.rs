//! The rows of each catalog view, built from Walden's own catalog.

use super::*;

pub(super) fn i(v: i64) -> Value {
    Value::Int(v)
}

pub(super) fn b(v: bool) -> Value {
    Value::Bool(v)
}

pub(super) fn t(s: impl AsRef<str>) -> Value {
    Value::text(s)
}

pub(super) const NULL: Value = Value::Null;

/// Storage strategy, length and by-value flag of a column type, as
/// `pg_attribute` reports them.
pub(super) fn storage(oid: i64) -> (&'static str, i64, bool) {
    let len = TYPES.iter().find(|t| t.oid == oid).map_or(-1, |t| t.len);
    match oid {
        1700 => ("m", -1, false),
        _ if len < 0 => ("x", -1, false),
        _ => ("p", len, len <= 8),
    }
}

pub(super) fn collation_of(oid: i64) -> i64 {
    // An array collates as its elements do.
    let oid = walden_engine::types::array::elem_oid_of(oid as u32).map_or(oid, |e| e as i64);
    if TYPES.iter().any(|t| t.oid == oid && t.collatable) {
        COLL_DEFAULT
    } else {
        0
    }
}

/// One `pg_attribute` row.
pub(super) fn attribute_row(
    relid: i64,
    num: usize,
    c: &ColumnDef,
    has_def: bool,
    not_null: bool,
) -> Vec<Value> {
    let (oid, typmod) = type_oid_and_mod(&c.data_type);
    let (st, len, byval) = storage(oid);
    vec![
        i(relid),
        t(&c.name),
        i(oid),
        i(-1),
        i(len),
        i(num as i64),
        // attndims: 1 for an array column.
        i(matches!(c.data_type, DataType::Array(_)) as i64),
        i(typmod),
        b(byval),
        t(if len == 8 || len < 0 { "d" } else { "i" }),
        t(st),
        t(""),
        b(not_null),
        b(has_def),
        b(false),
        t(""),
        t(""),
        b(false),
        b(true),
        i(0),
        i(collation_of(oid)),
        NULL,
        NULL,
    ]
}

/// The rows of a catalog view for the session's database.
pub fn rows(view: PgView, env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
    use PgView as V;
    let db = &Seen::of(env);
    let mut out = Vec::new();
    match view {
        V::Cursors => out = crate::cursor::pg_cursors_rows(&env.info.cursors),
        V::Settings => out = super::settings_view::rows(env),
        V::Opclass => out = super::opclass::rows(),
        V::Empty(_) => {}
        V::PreparedStatements => out = env.info.prepared.clone(),
        V::SequenceRel | V::OptionsTable => {
            return Err(SqlError::internal(format!("{view:?} is read with its argument")))
        }
        V::Enum => out = super::enums::enum_rows(env),
        V::Range => {}
        V::Database => {
            for d in env.instance.databases() {
                out.push(vec![
                    i(d.id() as i64),
                    t(d.name()),
                    i(OWNER_OID),
                    i(6),
                    t("C.UTF-8"),
                    t("C.UTF-8"),
                    NULL,
                    t("c"),
                    b(false),
                    b(true),
                    i(-1),
                    i(1663),
                    NULL,
                ]);
            }
        }
        V::Namespace => {
            // Every role may use and create in `public` (Walden has no
            // schema privileges), which PostgreSQL writes as this ACL.
            let owner = env.instance.roles_for(env.tx).name_of(OWNER_OID as u32);
            for (oid, name) in NAMESPACES {
                let acl = if *oid == NS_PUBLIC {
                    t(format!("{{{owner}=UC/{owner},=UC/{owner}}}"))
                } else {
                    NULL
                };
                out.push(vec![i(*oid), t(name), i(OWNER_OID), acl]);
            }
        }
        V::Am => {
            out.push(vec![i(AM_HEAP), t("heap"), t("heap_tableam_handler"), t("t")]);
            out.push(vec![i(AM_BTREE), t("btree"), t("bthandler"), t("i")]);
        }
        V::Collation => {
            for (oid, name, provider) in [
                (COLL_DEFAULT, "default", "d"),
                (COLL_C, "C", "c"),
                (COLL_POSIX, "POSIX", "c"),
            ] {
                let locale = if oid == COLL_DEFAULT { NULL } else { t(name) };
                out.push(vec![
                    i(oid),
                    t(name),
                    i(NS_PG_CATALOG),
                    i(OWNER_OID),
                    t(provider),
                    b(true),
                    i(-1),
                    locale.clone(),
                    locale,
                ]);
            }
        }
        V::Type => {
            use walden_engine::types::array::ARRAY_TYPES;
            let align = |len: i64| match len {
                8 => "d",
                4 | -1 => "i",
                2 => "s",
                _ => "c",
            };
            for ty in TYPES {
                let array = ARRAY_TYPES
                    .iter()
                    .find(|(e, _, _)| *e as i64 == ty.oid)
                    .map_or(0, |(_, a, _)| *a as i64);
                out.push(vec![
                    i(ty.oid),
                    t(ty.name),
                    i(NS_PG_CATALOG),
                    i(OWNER_OID),
                    i(ty.len),
                    b(ty.len > 0 && ty.len <= 8),
                    t("b"),
                    t(ty.category),
                    b(true),
                    i(0),
                    i(0),
                    i(array),
                    b(false),
                    i(0),
                    i(-1),
                    i(0),
                    i(if ty.collatable { COLL_DEFAULT } else { 0 }),
                    t(","),
                    t(format!("{}in", ty.name)),
                    t(format!("{}out", ty.name)),
                    t(format!("{}recv", ty.name)),
                    t(format!("{}send", ty.name)),
                    t(align(ty.len)),
                    // As pg_attribute.attstorage says (numeric is main).
                    t(storage(ty.oid).0),
                    NULL,
                ]);
            }
            // The array types (`_int4`, typelem int4), as PostgreSQL's.
            for (elem, oid, name) in ARRAY_TYPES {
                let Some(e) = TYPES.iter().find(|t| t.oid == *elem as i64) else {
                    continue;
                };
                out.push(vec![
                    i(*oid as i64),
                    t(*name),
                    i(NS_PG_CATALOG),
                    i(OWNER_OID),
                    i(-1),
                    b(false),
                    t("b"),
                    t("A"),
                    b(true),
                    i(0),
                    i(*elem as i64),
                    i(0),
                    b(false),
                    i(0),
                    i(-1),
                    i(0),
                    i(if e.collatable { COLL_DEFAULT } else { 0 }),
                    t(","),
                    t("array_in"),
                    t("array_out"),
                    t("array_recv"),
                    t("array_send"),
                    t(if e.len == 8 { "d" } else { "i" }),
                    t("x"),
                    NULL,
                ]);
            }
            out.extend(super::enums::type_rows(env));
        }
        V::Roles => out = crate::privileges::role_rows(env, false)?,
        V::Authid => out = crate::privileges::role_rows(env, true)?,
        V::AuthMembers => out = crate::privileges::member_rows(env),
        V::Class => {
            for tb in db.tables() {
                let has_index = !tb.has_hidden_key() || !tb.def.indexes.is_empty();
                out.push(class_row(
                    user_oid(tb.id(), SLOT_TABLE),
                    tb.name(),
                    user_oid(tb.id(), SLOT_TABLE_TYPE),
                    AM_HEAP,
                    tb.len() as f64,
                    has_index,
                    "r",
                    tb.def.columns.len(),
                ));
                // Owner and grants from the role catalog (`privileges.rs`).
                let (acl, owner) = crate::privileges::table_acl(env, tb.id());
                if let Some(r) = out.last_mut() {
                    r[5] = i(owner);
                    r[18] = i(tb.def.checks.len() as i64);
                    // PostgreSQL enforces foreign keys with triggers on both
                    // tables; psql's \d lists them only when this is set.
                    r[20] = b(!tb.def.foreign_keys.is_empty()
                        || !db.referencing(tb.id()).is_empty());
                    let n = r.len();
                    r[n - 3] = acl;
                }
                for ix in indexes_of(&tb) {
                    out.push(class_row(
                        ix.oid,
                        &ix.name,
                        0,
                        AM_BTREE,
                        tb.len() as f64,
                        false,
                        "i",
                        ix.columns.len(),
                    ));
                }
            }
            for s in db.sequences() {
                out.push(class_row(
                    user_oid(s.id, SLOT_SEQUENCE),
                    &s.name,
                    user_oid(s.id, SLOT_SEQUENCE_TYPE),
                    0,
                    1.0,
                    false,
                    "S",
                    3,
                ));
            }
            out.extend(super::sequence_relations::identity_class_rows(db));
        }
        V::Attribute => {
            for tb in db.tables() {
                let relid = user_oid(tb.id(), SLOT_TABLE);
                for (n, c) in tb.def.columns.iter().enumerate() {
                    let has_def = default_text(&tb, c).is_some();
                    out.push(attribute_row(relid, n + 1, c, has_def, !c.nullable));
                }
                for ix in indexes_of(&tb) {
                    for (n, &k) in ix.columns.iter().enumerate() {
                        out.push(attribute_row(ix.oid, n + 1, &tb.def.columns[k], false, false));
                    }
                }
            }
        }
        V::Attrdef => {
            for tb in db.tables() {
                for (n, c) in tb.def.columns.iter().enumerate() {
                    if let Some(d) = default_text(&tb, c) {
                        out.push(vec![
                            i(attrdef_oid(tb.id(), n + 1)),
                            i(user_oid(tb.id(), SLOT_TABLE)),
                            i(n as i64 + 1),
                            t(d),
                        ]);
                    }
                }
            }
        }
        V::Index => {
            for ix in all_indexes(db) {
                let tb = &ix.table;
                let n = ix.columns.len();
                let ints = |xs: Vec<i64>| Value::Array(xs.into_iter().map(Value::Int).collect());
                let keys = ints(ix.columns.iter().map(|k| *k as i64 + 1).collect());
                let zeros = ints(vec![0; n]);
                let classes = ints(
                    ix.columns
                        .iter()
                        .map(|&k| {
                            let (oid, _) = type_oid_and_mod(&tb.def.columns[k].data_type);
                            super::opclass::default_btree(oid)
                        })
                        .collect(),
                );
                let colls = ints(
                    ix.columns
                        .iter()
                        .map(|&k| {
                            let (oid, _) = type_oid_and_mod(&tb.def.columns[k].data_type);
                            collation_of(oid)
                        })
                        .collect(),
                );
                out.push(vec![
                    i(ix.oid),
                    i(user_oid(tb.id(), SLOT_TABLE)),
                    i(n as i64),
                    i(n as i64),
                    b(ix.unique),
                    b(false),
                    b(ix.primary),
                    b(false),
                    b(true),
                    b(false),
                    b(true),
                    b(false),
                    b(true),
                    b(true),
                    b(false),
                    keys,
                    colls,
                    classes,
                    zeros,
                    NULL,
                    NULL,
                ]);
            }
        }
        V::Constraint => {
            out.extend(crate::foreign_keys::catalog::pg_constraint_rows(db));
            for tb in db.tables() {
                for (n, c) in tb.def.checks.iter().enumerate() {
                    let conkey = crate::constraints::check_columns(env, &tb, c)
                        .map(|k| Value::Array(k.iter().map(|&i| Value::Int(i as i64)).collect()))
                        .unwrap_or(NULL);
                    out.push(vec![
                        i(check_oid(tb.id(), n)),
                        t(&c.name),
                        i(NS_PUBLIC),
                        t("c"),
                        b(false),
                        b(false),
                        b(true),
                        i(user_oid(tb.id(), SLOT_TABLE)),
                        i(0),
                        i(0),
                        i(0),
                        i(0),
                        t(" "),
                        t(" "),
                        t(" "),
                        b(true),
                        i(0),
                        b(false),
                        conkey,
                        NULL,
                        t(&c.expr),
                    ]);
                }
            }
            for ix in all_indexes(db) {
                let Some((contype, con_oid)) = ix.constraint else {
                    continue;
                };
                let keys: Vec<Value> = ix.columns.iter().map(|&k| Value::Int(k as i64 + 1)).collect();
                out.push(vec![
                    i(con_oid),
                    t(&ix.name),
                    i(NS_PUBLIC),
                    t(contype),
                    b(false),
                    b(false),
                    b(true),
                    i(user_oid(ix.table.id(), SLOT_TABLE)),
                    i(0),
                    i(ix.oid),
                    i(0),
                    i(0),
                    t(" "),
                    t(" "),
                    t(" "),
                    b(true),
                    i(0),
                    b(true),
                    Value::Array(keys.into()),
                    NULL,
                    NULL,
                ]);
            }
        }
        V::Sequence => {
            for s in db.sequences() {
                let typid = match s.data_type {
                    walden_engine::SeqType::SmallInt => 21,
                    walden_engine::SeqType::Int => 23,
                    walden_engine::SeqType::BigInt => 20,
                };
                out.push(vec![
                    i(user_oid(s.id, SLOT_SEQUENCE)),
                    i(typid),
                    i(s.start),
                    i(s.increment),
                    i(s.max),
                    i(s.min),
                    i(1),
                    b(s.cycle),
                ]);
            }
            out.extend(super::sequence_relations::identity_sequence_rows(db));
        }
        V::Tablespace => {
            for (oid, name) in [(1663, "pg_default"), (1664, "pg_global")] {
                out.push(vec![i(oid), t(name), i(OWNER_OID), NULL, NULL]);
            }
        }
        V::Tables => {
            let roles = env.instance.roles_for(env.tx);
            for tb in db.tables() {
                // The owner from the role catalog, as pg_class.relowner.
                let (_, owner) = crate::privileges::table_acl(env, tb.id());
                out.push(vec![
                    t("public"),
                    t(tb.name()),
                    t(roles.name_of(owner as u32)),
                    NULL,
                    b(!tb.has_hidden_key()),
                    b(false),
                    b(false),
                    b(false),
                ]);
            }
        }
        V::Indexes => {
            for ix in all_indexes(db) {
                out.push(vec![
                    t("public"),
                    t(ix.table.name()),
                    t(&ix.name),
                    NULL,
                    t(ix.definition()),
                ]);
            }
        }
        V::Info(v) => out.extend(v.rows(db)),
        V::Depend => out = super::dump_catalogs::depend_rows(env),
        V::InfoTables => {
            for tb in db.tables() {
                out.push(vec![
                    t(db.name()),
                    t("public"),
                    t(tb.name()),
                    t("BASE TABLE"),
                ]);
            }
        }
        V::InfoColumns => {
            for tb in db.tables() {
                for (n, c) in tb.def.columns.iter().enumerate() {
                    let (oid, _) = type_oid_and_mod(&c.data_type);
                    let (len, prec, scale) = match c.data_type {
                        DataType::Varchar(n) => (n.map(|n| i(n as i64)), NULL, NULL),
                        DataType::Decimal { precision, scale } if precision > 0 => {
                            (None, i(precision as i64), i(scale as i64))
                        }
                        DataType::SmallInt => (None, i(16), i(0)),
                        DataType::Int => (None, i(32), i(0)),
                        DataType::BigInt => (None, i(64), i(0)),
                        _ => (None, NULL, NULL),
                    };
                    out.push(vec![
                        t(db.name()),
                        t("public"),
                        t(tb.name()),
                        t(&c.name),
                        i(n as i64 + 1),
                        default_text(&tb, c).map(t).unwrap_or(NULL),
                        t(if c.nullable { "YES" } else { "NO" }),
                        t(if matches!(c.data_type, DataType::Array(_)) {
                            "ARRAY".to_string()
                        } else if matches!(c.data_type, DataType::Enum(_)) {
                            "USER-DEFINED".to_string()
                        } else {
                            format_type(oid, None).unwrap_or_default()
                        }),
                        len.unwrap_or(NULL),
                        prec,
                        scale,
                    ]);
                }
            }
        }
        // Features Walden does not have: no rows.
        V::Inherits
        | V::PartitionedTable
        | V::Policy
        | V::StatisticExt
        | V::Publication
        | V::PublicationNamespace
        | V::PublicationRel
        | V::Description
        | V::Trigger
        | V::Rewrite
        | V::Extension
        // Walden's functions are built in and not listed.
        | V::Proc => {}
    }
    let trailing = super::dump_catalogs::trailing(view);
    let tableoid = super::dump_catalogs::catalog_relation_oid(view);
    if !trailing.is_empty() || tableoid.is_some() {
        for r in &mut out {
            r.extend(trailing.iter().map(|(_, _, v)| v.clone()));
            r.extend(tableoid.map(i));
        }
    }
    // Rows are built by hand next to the column lists above; a mismatch
    // would make column references read the wrong value (or past the row),
    // so it is an error rather than a wrong answer.
    let width = view.columns().len();
    if let Some(r) = out.iter().find(|r| r.len() != width) {
        return Err(SqlError::internal(format!(
            "catalog view {view:?} built a row of {} values for {width} columns",
            r.len()
        )));
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn class_row(
    oid: i64,
    name: &str,
    reltype: i64,
    am: i64,
    tuples: f64,
    has_index: bool,
    kind: &str,
    natts: usize,
) -> Vec<Value> {
    vec![
        i(oid),
        t(name),
        i(NS_PUBLIC),
        i(reltype),
        i(0),
        i(OWNER_OID),
        i(am),
        i(oid),
        i(0),
        // relpages: Walden keeps no pages. An index shows PostgreSQL's
        // least (a btree's metapage, what CREATE INDEX records for an
        // index built on an empty table); a table PostgreSQL's 0 before
        // its first VACUUM or ANALYZE.
        i(if kind == "i" { 1 } else { 0 }),
        Value::Float(tuples),
        i(0),
        i(0),
        b(has_index),
        b(false),
        t("p"),
        t(kind),
        i(natts as i64),
        i(0),
        b(false),
        b(false),
        b(false),
        b(false),
        b(false),
        b(true),
        t(if kind == "r" { "d" } else { "n" }),
        b(false),
        i(0),
        NULL,
        NULL,
        NULL,
    ]
}
