//! Foreign keys in the catalogs: `pg_constraint` rows (contype 'f') and
//! `pg_get_constraintdef`, which psql's `\d` ("Foreign-key constraints",
//! "Referenced by") and drivers read.

use crate::pg_catalog::{array_format, index_oid, pkey_oid, table_oid, NS_PUBLIC};
use walden_engine::{Database, ForeignKeyDef, Table, Value};

/// Above the CHECK constraints' numbers in the same OID scheme
/// (`pg_catalog::check_oid`): bit 11 of the low 12 bits marks a foreign key.
const FK_BIT: i64 = 0x800;

/// `pg_constraint.oid` of a table's n-th (0-based) foreign key.
pub(crate) fn fk_oid(table_id: u32, n: usize) -> i64 {
    (table_oid(table_id) << 12) | FK_BIT | (n as i64 + 1)
}

/// The table and foreign key an OID stands for.
pub(crate) fn by_oid(db: &Database, oid: i64) -> Option<(std::sync::Arc<Table>, usize)> {
    if oid & FK_BIT == 0 {
        return None;
    }
    let n = (oid & (FK_BIT - 1)) as usize;
    let rel = oid >> 12;
    let t = db.tables().into_iter().find(|t| table_oid(t.id()) == rel)?;
    (n > 0 && n <= t.def.foreign_keys.len()).then_some((t, n - 1))
}

/// `pg_get_constraintdef` of a foreign key's OID.
pub(crate) fn constraintdef(db: &Database, oid: i64) -> Option<String> {
    let (t, n) = by_oid(db, oid)?;
    let fk = &t.def.foreign_keys[n];
    let r = db.table_by_id(fk.ref_table)?;
    Some(super::constraint_def(&t.def, &r.def, fk))
}

/// The OID of the referenced table's index behind the referenced columns.
fn referenced_index(r: &Table, fk: &ForeignKeyDef) -> i64 {
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
    let k: Vec<String> = cols.iter().map(|c| (c + 1).to_string()).collect();
    Value::text(array_format(k.iter().map(|s| Some(s.as_str()))))
}

/// `pg_constraint` rows of every foreign key (its column order).
pub(crate) fn pg_constraint_rows(db: &Database) -> Vec<Vec<Value>> {
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
                Value::Bool(false),
                Value::Bool(false),
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
