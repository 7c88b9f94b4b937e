//! Triggers in the catalogs: `pg_trigger`, `information_schema.triggers`,
//! `pg_get_triggerdef`, and `pg_class.relhastriggers`, read from the rows
//! of the database's trigger table (`procedural/triggers`) that belong to
//! live tables.

use super::rows::{b, i, t, NULL};
use super::*;
use crate::front::plpgsql::trigger::{parse_stored, PgTrigger, TRIGGER_TABLE};

/// A stored trigger of a live table.
pub(super) struct Stored {
    pub table: Arc<Table>,
    pub oid: i64,
    pub def: PgTrigger,
    pub enabled: bool,
}

/// A trigger's OID: from its table's OID and name (stable, and in a range
/// Walden's other OIDs do not use).
fn trigger_oid(tbl_oid: i64, name: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tbl_oid.to_le_bytes().iter().chain(name.as_bytes()) {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    0x7000_0000 + (h % 0x0fff_ffff) as i64
}

/// The triggers the transaction sees, by table then name.
pub(super) fn stored(env: &Env<'_>) -> Vec<Stored> {
    let Ok(rows) = env.tx.scan_all(TRIGGER_TABLE) else {
        return Vec::new();
    };
    let tables = Seen::of(env).tables();
    let mut out = Vec::new();
    for (_, r) in rows {
        let (Some(tbl), Some(def)) = (r[0].as_i64(), parse_stored(&r[3].to_string())) else {
            continue;
        };
        let Some(table) = tables
            .iter()
            .find(|t| crate::types::oids::table_oid(t.id()) == tbl)
        else {
            continue;
        };
        out.push(Stored {
            table: table.clone(),
            oid: trigger_oid(tbl, &def.name),
            enabled: matches!(r[4], Value::Bool(true)),
            def,
        });
    }
    out.sort_by(|a, b| {
        (a.table.id(), a.def.name.as_bytes()).cmp(&(b.table.id(), b.def.name.as_bytes()))
    });
    out
}

/// The OIDs of the tables that have triggers.
pub(super) fn tables_with_triggers(env: &Env<'_>) -> Vec<u32> {
    stored(env).iter().map(|s| s.table.id()).collect()
}

/// The table as `pg_get_triggerdef` names it: schema-qualified.
fn qualified(table: &Table) -> String {
    let q = crate::types::quote::quote_ident;
    match crate::types::temp_names::split_temp(table.name()) {
        Some((spid, rel)) => format!("pg_temp_{spid}.{}", q(rel)),
        None => {
            let (s, n) = walden_engine::namespace::split_engine_name(table.name());
            format!("{}.{}", q(s), q(n))
        }
    }
}

/// `pg_get_triggerdef(oid)`.
pub(crate) fn triggerdef(env: &Env<'_>, oid: i64) -> Value {
    stored(env)
        .into_iter()
        .find(|s| s.oid == oid)
        .map_or(NULL, |s| t(s.def.definition(&qualified(&s.table))))
}

pub(super) fn pg_trigger_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    stored(env)
        .into_iter()
        .map(|s| {
            let cols = &s.table.def.columns;
            let attr: Vec<Value> = s
                .def
                .update_of
                .iter()
                .filter_map(|c| cols.iter().position(|x| x.name.eq_ignore_ascii_case(c)))
                .map(|k| Value::Int(k as i64 + 1))
                .collect();
            let mut args = Vec::new();
            for a in &s.def.args {
                args.extend_from_slice(a.as_bytes());
                args.push(0);
            }
            vec![
                i(s.oid),
                i(crate::types::oids::table_oid(s.table.id())),
                i(0),
                t(&s.def.name),
                i(super::user_procs::trigger_function_oid(env, &s.def.func)),
                i(s.def.tgtype()),
                t(if s.enabled { "O" } else { "D" }),
                b(false),
                i(0),
                b(false),
                b(false),
                i(s.def.args.len() as i64),
                Value::Array(attr.into()),
                Value::Bytes(args.into()),
                s.def.when.as_ref().map_or(NULL, t),
                NULL,
                NULL,
            ]
        })
        .collect()
}

pub(super) fn info_triggers_columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("trigger_catalog", DataType::Text),
        ("trigger_schema", DataType::Text),
        ("trigger_name", DataType::Text),
        ("event_manipulation", DataType::Text),
        ("event_object_catalog", DataType::Text),
        ("event_object_schema", DataType::Text),
        ("event_object_table", DataType::Text),
        ("action_order", DataType::Int),
        ("action_condition", DataType::Text),
        ("action_statement", DataType::Text),
        ("action_orientation", DataType::Text),
        ("action_timing", DataType::Text),
        ("action_reference_old_table", DataType::Text),
        ("action_reference_new_table", DataType::Text),
        ("action_reference_old_row", DataType::Text),
        ("action_reference_new_row", DataType::Text),
        ("created", DataType::TimestampTz),
    ]
}

/// `information_schema.triggers`: one row per trigger and event, its
/// `action_order` the trigger's place among the table's triggers of the
/// same event, timing and level.
pub(super) fn info_triggers_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let all = stored(env);
    let mut out = Vec::new();
    for s in &all {
        let (schema, name) = match crate::types::temp_names::split_temp(s.table.name()) {
            Some((spid, rel)) => (format!("pg_temp_{spid}"), rel.to_string()),
            None => {
                let (a, b) = walden_engine::namespace::split_engine_name(s.table.name());
                (a.to_string(), b.to_string())
            }
        };
        let args: Vec<String> = s
            .def
            .args
            .iter()
            .map(|a| crate::types::quote::quote_literal_text(a))
            .collect();
        let action = format!(
            "EXECUTE FUNCTION {}({})",
            crate::types::quote::quote_ident(&s.def.func),
            args.join(", ")
        );
        for ev in &s.def.events {
            let order = all
                .iter()
                .filter(|o| {
                    o.table.id() == s.table.id()
                        && o.def.timing == s.def.timing
                        && o.def.row == s.def.row
                        && o.def.events.contains(ev)
                        && o.def.name.as_bytes() <= s.def.name.as_bytes()
                })
                .count();
            let level = if s.def.row { "ROW" } else { "STATEMENT" };
            out.push(vec![
                t(&env.info.database),
                t(&schema),
                t(&s.def.name),
                t(ev.word()),
                t(&env.info.database),
                t(&schema),
                t(&name),
                i(order as i64),
                s.def.when.as_ref().map_or(NULL, |w| t(format!("({w})"))),
                t(&action),
                t(level),
                t(s.def.timing.word()),
                NULL,
                NULL,
                t("OLD"),
                t("NEW"),
                NULL,
            ]);
        }
    }
    out
}

/// `sys.triggers`: SQL Server's columns for each trigger (DML triggers on
/// tables: parent class 1, type `TR`).
pub(crate) fn sys_triggers_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    stored(env)
        .into_iter()
        .map(|s| {
            vec![
                t(&s.def.name),
                i(s.oid),
                i(1),
                t("OBJECT_OR_COLUMN"),
                i(crate::types::oids::table_oid(s.table.id())),
                t("TR"),
                t("SQL_TRIGGER"),
                b(false),
                b(!s.enabled),
                b(false),
                b(false),
            ]
        })
        .collect()
}
