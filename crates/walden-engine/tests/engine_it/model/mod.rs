//! A model of an `items (id, v, tag)` table's committed rows, and a check
//! of every way of reading the table against it (a scan, a scan in two
//! halves, point reads, the index on `v`): shared by the store and
//! checkpoint tests.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use walden_engine::*;

/// A deterministic generator (xorshift), so a failure repeats.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Rows by id: `(v, tag)`.
pub type Model = BTreeMap<i64, (i64, String)>;

/// `name (id bigint primary key, v bigint, tag varchar)`, with an index
/// on `v` when `indexed`.
pub fn items_def(name: &str, indexed: bool) -> TableDef {
    let mut def = TableDef::new(
        name,
        vec![
            ColumnDef::new("id", DataType::BigInt),
            ColumnDef::new("v", DataType::BigInt),
            ColumnDef::new("tag", DataType::Varchar(None)),
        ],
        &["id"],
    )
    .unwrap();
    if indexed {
        def.indexes.push(IndexDef {
            id: 0,
            name: format!("{name}_v"),
            columns: vec![1],
            unique: false,
            constraint: false,
            options: Vec::new(),
        });
    }
    def
}

/// A row as the model holds it: `(id, (v, tag))`.
pub fn row_of(r: &[Value]) -> (i64, (i64, String)) {
    let tag = match &r[2] {
        Value::Text(t) => t.to_string(),
        other => panic!("tag {other:?}"),
    };
    (r[0].as_i64().unwrap(), (r[1].as_i64().unwrap(), tag))
}

/// What `check` reads besides whole scans: ids `0..ids` every `step`
/// (the halves split at `ids / 2`), and, when the table has an index on
/// `v`, its entries for each value in `0..values` (every row's `v`).
pub struct Probes {
    pub ids: i64,
    pub step: usize,
    pub values: i64,
}

/// Everything a new statement's snapshot sees in `table`, against `model`:
/// a full scan, a range scan in two halves, point reads, the row count,
/// and the rows found through the index on `v`.
pub fn check(
    db: &Arc<Database>,
    s: &Arc<Session>,
    table: &str,
    model: &Model,
    probes: &Probes,
    what: &str,
) {
    let mut tx = db.begin(s);
    tx.begin_statement();
    let t = db.table(table).unwrap();
    let all: Model = tx
        .scan_in(&t, (Bound::Unbounded, Bound::Unbounded))
        .unwrap()
        .iter()
        .map(|(_, r)| row_of(r))
        .collect();
    if all != *model {
        let missing = model.keys().filter(|k| !all.contains_key(k)).count();
        let extra = all.keys().filter(|k| !model.contains_key(k)).count();
        let wrong = model
            .iter()
            .filter(|(k, v)| all.get(k).is_some_and(|a| a != *v))
            .count();
        panic!("{what}: {table} scan differs: {missing} missing, {extra} extra, {wrong} wrong");
    }
    // The streamed scan (stored rows decoded as they are visited) agrees.
    let mut streamed = Vec::new();
    tx.scan_each::<EngineError>(&t, (Bound::Unbounded, Bound::Unbounded), |r| {
        streamed.push(row_of(r));
        Ok(())
    })
    .unwrap();
    let want: Vec<_> = model.iter().map(|(k, v)| (*k, v.clone())).collect();
    assert!(streamed == want, "{what}: {table} streamed scan differs");
    let mid: Key = vec![Value::Int(probes.ids / 2)].into_boxed_slice();
    let lo = tx
        .scan_in(&t, (Bound::Unbounded, Bound::Excluded(mid.clone())))
        .unwrap();
    let hi = tx
        .scan_in(&t, (Bound::Included(mid), Bound::Unbounded))
        .unwrap();
    assert_eq!(lo.len() + hi.len(), model.len(), "{what}: {table} halves");
    for id in (0..probes.ids).step_by(probes.step) {
        let got = tx.get_in(&t, &[Value::Int(id)]).unwrap();
        assert_eq!(
            got.as_ref().map(|r| row_of(r).1),
            model.get(&id).cloned(),
            "{what}: {table} get {id}"
        );
    }
    assert_eq!(t.len(), model.len(), "{what}: {table} row count");
    if t.indexes.is_empty() {
        return;
    }
    let mut through_index = 0;
    for v in 0..probes.values {
        let prefix = [Value::Int(v)];
        let found = tx
            .index_scan(
                &t,
                0,
                Bound::Included(Box::new([Value::Int(v)])),
                |k: &Key| k.starts_with(&prefix),
            )
            .unwrap()
            .expect("index usable");
        let mut ids: Vec<i64> = found.iter().map(|(_, r)| row_of(r).0).collect();
        ids.sort();
        let want: Vec<i64> = model
            .iter()
            .filter(|(_, (mv, _))| *mv == v)
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(ids, want, "{what}: {table} index v = {v}");
        through_index += ids.len();
    }
    assert_eq!(through_index, model.len(), "{what}: {table} index entries");
}
