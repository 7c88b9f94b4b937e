//! The OID scheme: PostgreSQL's fixed OIDs, and the OIDs of user objects
//! derived from their engine ids, so that one object has the same OID in
//! every catalog, every session and across restarts.

use crate::error::{ErrorKind, Result, SqlError};
use crate::types::quote::split_qualified;
use walden_engine::Value;

// Fixed OIDs, as PostgreSQL assigns them.
pub(crate) const NS_PG_CATALOG: i64 = 11;
pub(crate) const NS_PG_TOAST: i64 = 99;
pub(crate) const NS_PUBLIC: i64 = 2200;
/// `public`'s comment (`obj_description`, `pg_description`).
pub(crate) const PUBLIC_COMMENT: &str = "standard public schema";
/// PostgreSQL assigns this one at initdb; any OID below 16384 will do.
pub(crate) const NS_INFORMATION_SCHEMA: i64 = 13_000;
pub(crate) const AM_HEAP: i64 = 2;
pub(crate) const AM_BTREE: i64 = 403;
pub(crate) const COLL_DEFAULT: i64 = 100;
pub(crate) const COLL_C: i64 = 950;
pub(crate) const COLL_POSIX: i64 = 951;
/// The one role (the bootstrap superuser's OID).
pub(crate) const OWNER_OID: i64 = 10;

/// OIDs of user objects start here, as in PostgreSQL.
pub(crate) const FIRST_USER_OID: i64 = 16_384;
/// Each table and sequence id owns a block of OIDs: table, its primary-key
/// index, that index's constraint, its row type; sequence. Tables and
/// sequences are numbered separately by the engine, so they use different
/// slots of the block. Slot 5 is unused: a sequence has no row type
/// (`pg_class.reltype` 0, as PostgreSQL 15).
pub(crate) const STRIDE: i64 = 8;
pub(crate) const SLOT_TABLE: i64 = 0;
pub(crate) const SLOT_PKEY: i64 = 1;
pub(crate) const SLOT_PKEY_CONSTRAINT: i64 = 2;
pub(crate) const SLOT_TABLE_TYPE: i64 = 3;
pub(crate) const SLOT_SEQUENCE: i64 = 4;
/// A secondary index (its id comes from the tables' id space).
pub(crate) const SLOT_INDEX: i64 = 6;
/// The UNIQUE constraint behind an index.
pub(crate) const SLOT_INDEX_CONSTRAINT: i64 = 7;

/// The OIDs of session N's `pg_temp_N` and (one more) `pg_toast_temp_N`:
/// far above any user object's block.
pub(crate) fn temp_namespace_oid(session: u32) -> i64 {
    0xF000_0000 + 2 * session as i64
}

/// The session whose `pg_temp_N` an OID is.
pub(crate) fn temp_namespace_session(oid: i64) -> Option<u32> {
    let off = oid.checked_sub(0xF000_0000)?;
    (off >= 0 && off % 2 == 0).then(|| u32::try_from(off / 2).ok())?
}

pub(crate) fn user_oid(id: u32, slot: i64) -> i64 {
    FIRST_USER_OID + STRIDE * id as i64 + slot
}

/// The OID of an enum type (`pg_type.oid`). Enum types take their ids from
/// the tables' id space, so an enum's block holds no table.
pub fn enum_oid(id: u32) -> i64 {
    user_oid(id, SLOT_TABLE)
}

/// The OID of an enum type's array type.
pub fn enum_array_oid(id: u32) -> i64 {
    user_oid(id, SLOT_TABLE_TYPE)
}

/// The enum type id an OID names, and whether it is the array type's.
pub fn decode_enum_oid(oid: i64) -> Option<(u32, bool)> {
    match decode_oid(oid)? {
        (id, SLOT_TABLE) => Some((id, false)),
        (id, SLOT_TABLE_TYPE) => Some((id, true)),
        _ => None,
    }
}

/// `pg_enum.oid` of label number `member` of enum type `id`: above every
/// OID of the slot scheme.
pub fn enum_label_oid(id: u32, member: u32) -> i64 {
    (enum_oid(id) << 16) | member as i64
}

/// The OID of a table (`pg_class.oid`).
pub fn table_oid(id: u32) -> i64 {
    user_oid(id, SLOT_TABLE)
}

/// The OID of a table's primary key index.
pub fn pkey_oid(id: u32) -> i64 {
    user_oid(id, SLOT_PKEY)
}

/// The OID of a secondary index (`pg_class.oid`, `pg_index.indexrelid`).
pub fn index_oid(id: u32) -> i64 {
    user_oid(id, SLOT_INDEX)
}

/// The engine id and slot an OID stands for.
pub(crate) fn decode_oid(oid: i64) -> Option<(u32, i64)> {
    if oid < FIRST_USER_OID {
        return None;
    }
    let off = oid - FIRST_USER_OID;
    u32::try_from(off / STRIDE)
        .ok()
        .map(|id| (id, off % STRIDE))
}

/// `pg_attrdef.oid`: unique within `pg_attrdef` (a table has at most 1600
/// columns in PostgreSQL, so 11 bits for the column number suffice).
pub(crate) fn attrdef_oid(table_id: u32, attnum: usize) -> i64 {
    (table_oid(table_id) << 11) | attnum as i64
}

/// `pg_constraint.oid` of a table's n-th (0-based) CHECK constraint: above
/// every OID of the slot scheme, and unique within `pg_constraint`.
pub(crate) fn check_oid(table_id: u32, n: usize) -> i64 {
    (table_oid(table_id) << 12) | (n as i64 + 1)
}

pub(crate) fn decode_check_oid(oid: i64) -> Option<(u32, usize)> {
    let n = (oid & 0xfff) as usize;
    let (id, slot) = decode_oid(oid >> 12)?;
    (slot == SLOT_TABLE && n > 0).then_some((id, n - 1))
}

// --- Schemas ----------------------------------------------------------------

pub(crate) const NAMESPACES: &[(i64, &str)] = &[
    (NS_PG_CATALOG, "pg_catalog"),
    (NS_PG_TOAST, "pg_toast"),
    (NS_PUBLIC, "public"),
    (NS_INFORMATION_SCHEMA, "information_schema"),
];

/// `oid::regnamespace` as text.
pub fn regnamespace_name(oid: i64) -> String {
    NAMESPACES
        .iter()
        .find(|(o, _)| *o == oid)
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| oid.to_string())
}

/// The OID of the schema `text` names.
pub fn regnamespace_lookup(text: &str) -> Result<Value> {
    let (_, name) = split_qualified(text);
    NAMESPACES
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(o, _)| Value::Int(*o))
        .ok_or_else(|| {
            SqlError::new(
                ErrorKind::InvalidSchemaName,
                format!("schema \"{name}\" does not exist"),
            )
        })
}
