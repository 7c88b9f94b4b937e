//! `pg_sequences` and `information_schema.sequences`: every sequence's
//! definition, and (`pg_sequences.last_value`) the value it handed out
//! last, NULL before its first `nextval`.

use super::rows::{b, i, t};
use super::views::{BOOL, NAME};
use super::*;

pub(super) fn pg_sequences_columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("schemaname", NAME),
        ("sequencename", NAME),
        ("sequenceowner", NAME),
        ("data_type", DataType::Text),
        ("start_value", DataType::BigInt),
        ("min_value", DataType::BigInt),
        ("max_value", DataType::BigInt),
        ("increment_by", DataType::BigInt),
        ("cycle", BOOL),
        ("cache_size", DataType::BigInt),
        ("last_value", DataType::BigInt),
    ]
}

pub(super) fn info_sequences_columns() -> Vec<(&'static str, DataType)> {
    [
        "sequence_catalog",
        "sequence_schema",
        "sequence_name",
        "data_type",
    ]
    .into_iter()
    .map(|c| (c, DataType::Text))
    .chain([
        ("numeric_precision", DataType::Int),
        ("numeric_precision_radix", DataType::Int),
        ("numeric_scale", DataType::Int),
    ])
    .chain(
        [
            "start_value",
            "minimum_value",
            "maximum_value",
            "increment",
            "cycle_option",
        ]
        .into_iter()
        .map(|c| (c, DataType::Text)),
    )
    .collect()
}

fn sorted(db: &Seen<'_>) -> Vec<walden_engine::SequenceDef> {
    let mut seqs = db.sequences();
    seqs.sort_by_key(|s| s.id);
    seqs
}

pub(super) fn pg_sequences_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let db = &Seen::of(env);
    let roles = env.instance.roles_for(env.tx);
    let owner = roles.name_of(crate::types::oids::OWNER_OID as u32);
    sorted(db)
        .into_iter()
        .map(|s| {
            let (sch, rel) = walden_engine::namespace::split_engine_name(&s.name);
            let last = match db.sequence_last(&s.name) {
                Some((v, true)) => i(v),
                _ => Value::Null,
            };
            vec![
                t(sch),
                t(rel),
                t(&owner),
                t(s.data_type.name()),
                i(s.start),
                i(s.min),
                i(s.max),
                i(s.increment),
                b(s.cycle),
                i(1),
                last,
            ]
        })
        .collect()
}

pub(super) fn info_sequences_rows(db: &Seen<'_>) -> Vec<Vec<Value>> {
    sorted(db)
        .into_iter()
        .map(|s| {
            let (sch, rel) = walden_engine::namespace::split_engine_name(&s.name);
            let precision = match s.data_type {
                walden_engine::SeqType::SmallInt => 16,
                walden_engine::SeqType::Int => 32,
                walden_engine::SeqType::BigInt => 64,
            };
            vec![
                t(db.name()),
                t(sch),
                t(rel),
                t(s.data_type.name()),
                i(precision),
                i(2),
                i(0),
                t(s.start.to_string()),
                t(s.min.to_string()),
                t(s.max.to_string()),
                t(s.increment.to_string()),
                t(if s.cycle { "YES" } else { "NO" }),
            ]
        })
        .collect()
}
