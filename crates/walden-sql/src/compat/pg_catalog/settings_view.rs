//! `pg_settings`: the run-time parameters a session can read with SHOW or
//! `current_setting`, one row each, with their current values. Drivers and
//! tools read it by name (pgjdbc: `max_index_keys`; pg_dump:
//! `restrict_nonsystem_relation_kind`, which Walden lacks, so it finds no
//! row and goes on as with an older server).

use super::rows::{t, NULL};
use super::views::{BOOL, I4};
use crate::functions::Env;
use walden_engine::{DataType, Value};

/// Parameters every session reports, whether set or not (spelled as
/// PostgreSQL lists them); those a session sets are added.
const ALWAYS: &[&str] = &[
    "application_name",
    "client_encoding",
    "DateStyle",
    "default_transaction_deferrable",
    "default_transaction_isolation",
    "default_transaction_read_only",
    "integer_datetimes",
    "IntervalStyle",
    "is_superuser",
    "max_connections",
    "max_index_keys",
    "server_encoding",
    "server_version",
    "server_version_num",
    "standard_conforming_strings",
    "synchronous_commit",
    "TimeZone",
    "transaction_deferrable",
    "transaction_isolation",
    "transaction_read_only",
];

pub(super) fn columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("name", DataType::Text),
        ("setting", DataType::Text),
        ("unit", DataType::Text),
        ("category", DataType::Text),
        ("short_desc", DataType::Text),
        ("extra_desc", DataType::Text),
        ("context", DataType::Text),
        ("vartype", DataType::Text),
        ("source", DataType::Text),
        ("min_val", DataType::Text),
        ("max_val", DataType::Text),
        ("enumvals", DataType::Text),
        ("boot_val", DataType::Text),
        ("reset_val", DataType::Text),
        ("sourcefile", DataType::Text),
        ("sourceline", I4),
        ("pending_restart", BOOL),
    ]
}

pub(super) fn rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let settings = &env.info.settings;
    let set = settings.names_set();
    let mut names: Vec<String> = ALWAYS.iter().map(|s| s.to_string()).collect();
    for n in &set {
        if !names.iter().any(|m| m.eq_ignore_ascii_case(n)) {
            names.push(n.clone());
        }
    }
    names.sort_by_key(|n| n.to_ascii_lowercase());
    names
        .into_iter()
        .filter_map(|name| {
            let value = settings.get(&name)?;
            let source = if set.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                "session"
            } else {
                "default"
            };
            Some(vec![
                t(&name),
                t(value),
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                t(source),
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                Value::Bool(false),
            ])
        })
        .collect()
}
