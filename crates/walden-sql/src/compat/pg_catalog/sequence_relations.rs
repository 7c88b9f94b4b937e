//! A sequence read as a relation (`SELECT last_value, is_called FROM
//! seq`), and the counters behind identity columns shown as the sequences
//! PostgreSQL would have for them (`<table>_<column>_seq`, in `pg_class`
//! and `pg_sequence`).

use super::rows::{b, i};
use super::views::BOOL;
use super::*;

/// The columns of a sequence read as a relation.
pub(super) fn sequence_relation_columns() -> Vec<(&'static str, DataType)> {
    vec![
        ("last_value", DataType::BigInt),
        ("log_cnt", DataType::BigInt),
        ("is_called", BOOL),
    ]
}

/// A sequence, or the counter behind an identity column, that a query
/// names as a relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqRel {
    Sequence(u32),
    /// The identity column of the table with this id.
    Identity(u32),
}

/// Finds the sequence `name` names: a sequence, or an identity column's
/// counter under the name its default shows (`<table>_<column>_seq`).
pub fn sequence_relation(db: &Seen<'_>, name: &str) -> Option<SeqRel> {
    if let Some(s) = db
        .sequences()
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
    {
        return Some(SeqRel::Sequence(s.id));
    }
    db.tables().into_iter().find_map(|tb| {
        let (n, _) = tb.def.identity_column()?;
        identity_seq_name(&tb, n)
            .eq_ignore_ascii_case(name)
            .then(|| SeqRel::Identity(tb.id()))
    })
}

/// The name an identity column's counter goes by (PostgreSQL's name for a
/// serial column's sequence).
pub(super) fn identity_seq_name(tb: &Table, col: usize) -> String {
    format!("{}_{}_seq", tb.name(), tb.def.columns[col].name)
}

/// `pg_class.oid` of an identity column's counter: column number 0 of the
/// `pg_attrdef` OID scheme, which no default uses.
pub(super) fn identity_seq_oid(table_id: u32) -> i64 {
    attrdef_oid(table_id, 0)
}

/// The table whose identity counter has this `pg_class` OID.
pub(super) fn decode_identity_seq_oid(oid: i64) -> Option<u32> {
    if oid & 0x7ff != 0 {
        return None;
    }
    match decode_oid(oid >> 11)? {
        (id, SLOT_TABLE) => Some(id),
        _ => None,
    }
}

/// `last_value`, `log_cnt` and `is_called` of a sequence: `last_value` is
/// the value `nextval` handed out last (`is_called`), or the one it hands
/// out next (not called yet).
pub(super) fn sequence_relation_row(db: &Seen<'_>, rel: SeqRel) -> Option<Vec<Value>> {
    let (start, increment, next) = match rel {
        SeqRel::Sequence(id) => {
            let s = db.sequences().into_iter().find(|s| s.id == id)?;
            let (last, called, log_cnt) = db.sequence_position(&s.name)?;
            return Some(vec![i(last), i(log_cnt), b(called)]);
        }
        SeqRel::Identity(id) => {
            let tb = db.tables().into_iter().find(|t| t.id() == id)?;
            let (_, ident) = tb.def.identity_column()?;
            (ident.seed, ident.increment, tb.identity_next())
        }
    };
    let called = next != start;
    let last = if called { next - increment } else { next };
    Some(vec![i(last), i(0), b(called)])
}

/// The `pg_class` rows of the identity counters.
pub(super) fn identity_class_rows(
    db: &Seen<'_>,
    path: &crate::context::search_path::SearchPath,
) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for tb in db.tables() {
        let Some((n, _)) = tb.def.identity_column() else {
            continue;
        };
        out.push(super::rows::class_row(
            path,
            identity_seq_oid(tb.id()),
            &identity_seq_name(&tb, n),
            0,
            0,
            1.0,
            false,
            "S",
            3,
        ));
    }
    out
}

/// The `pg_sequence` rows of the identity counters.
pub(super) fn identity_sequence_rows(db: &Seen<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for tb in db.tables() {
        let Some((n, ident)) = tb.def.identity_column() else {
            continue;
        };
        let (type_oid, _) = type_oid_and_mod(&tb.def.columns[n].data_type);
        let max = match tb.def.columns[n].data_type {
            DataType::SmallInt => i16::MAX as i64,
            DataType::Int => i32::MAX as i64,
            _ => i64::MAX,
        };
        let (min, max) = if ident.increment > 0 {
            (1, max)
        } else {
            (-max - 1, -1)
        };
        out.push(vec![
            i(identity_seq_oid(tb.id())),
            i(type_oid),
            i(ident.seed),
            i(ident.increment),
            i(max),
            i(min),
            i(1),
            b(false),
        ]);
    }
    out
}

/// The one row of a sequence read as a relation; `args` holds its OID.
pub fn sequence_relation_rows(env: &Env<'_>, args: &[Value]) -> Result<Vec<Vec<Value>>> {
    let db = &Seen::of(env);
    let Some(Value::Int(oid)) = args.first() else {
        return Err(SqlError::internal("a sequence relation needs its OID"));
    };
    let rel = match decode_oid(*oid) {
        Some((id, SLOT_SEQUENCE)) => Some(SeqRel::Sequence(id)),
        _ => decode_identity_seq_oid(*oid).map(SeqRel::Identity),
    };
    Ok(rel
        .and_then(|r| sequence_relation_row(db, r))
        .into_iter()
        .collect())
}

/// The OID of a sequence found by `sequence_relation`.
pub fn sequence_relation_oid(rel: SeqRel) -> i64 {
    match rel {
        SeqRel::Sequence(id) => user_oid(id, SLOT_SEQUENCE),
        SeqRel::Identity(id) => identity_seq_oid(id),
    }
}

/// The name of the identity counter with this `pg_class` OID.
pub(super) fn identity_seq_name_by_oid(db: &Seen<'_>, oid: i64) -> Option<String> {
    let id = decode_identity_seq_oid(oid)?;
    let tb = db.tables().into_iter().find(|t| t.id() == id)?;
    let (n, _) = tb.def.identity_column()?;
    Some(identity_seq_name(&tb, n))
}
