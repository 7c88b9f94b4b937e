//! `pg_opclass`: the btree operator class each indexable type uses, with
//! PostgreSQL 15's OIDs, names and families (Walden's indexes order keys as
//! those classes do). Only default classes exist, so tools that look for
//! non-default ones (Alembic, pg_dump) find none; `pg_index.indclass` names
//! the class of each key column.

use super::rows::{b, i, t};
use super::views::{BOOL, NAME, OID};
use super::AM_BTREE;
use walden_engine::{DataType, Value};

/// (opclass OID, name, family OID, input type OID).
const DEFAULT_BTREE: &[(i64, &str, i64, i64)] = &[
    (10003, "bool_ops", 424, 16),
    (10006, "bytea_ops", 428, 17),
    (3124, "int8_ops", 1976, 20),
    (1979, "int2_ops", 1976, 21),
    (1978, "int4_ops", 1976, 23),
    (3126, "text_ops", 1994, 25),
    (10012, "float4_ops", 1970, 700),
    (3123, "float8_ops", 1970, 701),
    (10004, "bpchar_ops", 426, 1042),
    (3122, "date_ops", 434, 1082),
    (10038, "time_ops", 1996, 1083),
    (3128, "timestamp_ops", 434, 1114),
    (3127, "timestamptz_ops", 434, 1184),
    (10022, "interval_ops", 1982, 1186),
    (3125, "numeric_ops", 1988, 1700),
    (10065, "uuid_ops", 2968, 2950),
    // Every enum type's (input type anyenum).
    (3522, "enum_ops", 3522, 3500),
];

/// The default btree class of a column type (varchar uses text's, as in
/// PostgreSQL); 0 for a type without one.
pub(super) fn default_btree(type_oid: i64) -> i64 {
    let t = match type_oid {
        1043 => 25,
        t if matches!(super::decode_enum_oid(t), Some((_, false))) => 3500,
        t => t,
    };
    DEFAULT_BTREE.iter().find(|c| c.3 == t).map_or(0, |c| c.0)
}

pub(super) fn columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("oid", OID),
        ("opcmethod", OID),
        ("opcname", NAME),
        ("opcnamespace", OID),
        ("opcowner", OID),
        ("opcfamily", OID),
        ("opcintype", OID),
        ("opcdefault", BOOL),
        ("opckeytype", OID),
    ]
}

pub(super) fn rows() -> Vec<Vec<Value>> {
    DEFAULT_BTREE
        .iter()
        .map(|&(oid, name, family, intype)| {
            vec![
                i(oid),
                i(AM_BTREE),
                t(name),
                i(super::NS_PG_CATALOG),
                i(super::OWNER_OID),
                i(family),
                i(intype),
                b(true),
                i(0),
            ]
        })
        .collect()
}
