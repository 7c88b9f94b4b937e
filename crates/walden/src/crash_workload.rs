//! The parts of `walden crash-test`'s workload beyond single-record inserts:
//! deletes, transactions of several log records, and DDL. Each comes with the
//! state it must leave after any kill, derived from what recovery kept of the
//! main workload (a session's counter) or from the DDL acknowledgements.
//!
//! * `churn`: transaction `q` of a session inserts its churn row and deletes
//!   the churn rows of its transaction `q - 5`; every 29th transaction also
//!   inserts three 120 KB rows, so it spans several log records (the engine
//!   cuts write sets at 256 KiB). With counter `n`, a session's churn rows
//!   are exactly those of `q` in `(n - 5, n]`.
//! * DDL track (session 0, now and then): `CREATE TABLE d<run>_<j>`, INSERT
//!   `j + 1` rows, two transactions, `TRUNCATE d<run>_<j-1>`, `DROP TABLE
//!   d<run>_<j-1>`, each acknowledged in a side file. The first transaction
//!   commits `CREATE TABLE e<run>_<j>`, its `j + 1` rows, a unique index
//!   built after them, a row of `d<run>_<j>` and `DROP TABLE e<run>_<j-1>`;
//!   the second writes rows of `e`, `d` and a new `x<run>_<j>`, indexes `e`
//!   after its writes, truncates `d`, drops `e` and rolls back. The run's
//!   tables (rows and index count) must be as after the acknowledged
//!   statements, or one more (the one in flight).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use walden_engine::{
    ColumnDef, CommitRequest, DataType, Database, EngineError, IndexDef, Session, Table, TableDef,
    Transaction, Value,
};

pub const CHURN: &str = "churn";
const KEEP: i64 = 5;
const BULK_ROWS: i64 = 3;
const BULK_BYTES: usize = 120_000;

pub fn churn_def() -> TableDef {
    TableDef::new(
        CHURN,
        vec![
            ColumnDef::new("id", DataType::BigInt),
            ColumnDef::new("session", DataType::Int).not_null(),
            ColumnDef::new("seq", DataType::BigInt).not_null(),
            ColumnDef::new("pad", DataType::Text),
        ],
        &["id"],
    )
    .expect("churn table definition")
}

fn churn_id(session: i64, seq: i64, k: i64) -> i64 {
    (session << 40) | (seq << 3) | k
}

/// Whether transaction `seq` of `session` writes the bulk rows.
pub fn is_big(session: i64, seq: i64) -> bool {
    (seq + session) % 29 == 0
}

/// The churn part of transaction `seq`: insert its rows, delete those of
/// `seq - 5`.
pub fn churn_ops(
    tx: &mut Transaction,
    churn: &Arc<Table>,
    session: i64,
    seq: i64,
) -> Result<(), EngineError> {
    let n = if is_big(session, seq) { BULK_ROWS } else { 0 };
    for k in 0..=n {
        let pad = if k == 0 {
            None
        } else {
            Some(Value::text("b".repeat(BULK_BYTES)))
        };
        tx.insert_into(
            churn,
            vec![
                Some(Value::Int(churn_id(session, seq, k))),
                Some(Value::Int(session)),
                Some(Value::Int(seq)),
                pad,
            ],
        )?;
    }
    let old = seq - KEEP;
    if old >= 1 {
        let m = if is_big(session, old) { BULK_ROWS } else { 0 };
        for k in 0..=m {
            tx.delete_in(churn, &[Value::Int(churn_id(session, old, k))])?;
        }
    }
    Ok(())
}

/// Checks the churn rows against each session's counter.
pub fn check_churn(db: &Database, counters: &BTreeMap<i64, i64>) -> Vec<String> {
    let Ok(t) = db.table(CHURN) else {
        return Vec::new();
    };
    let rows = match t.latest_rows() {
        Ok(rows) => rows,
        Err(e) => return vec![format!("churn: reading the table failed: {e}")],
    };
    let mut present: BTreeSet<i64> = rows.values().filter_map(|r| r[0].as_i64()).collect();
    let mut out = Vec::new();
    for (&s, &n) in counters {
        for q in (n - KEEP + 1).max(1)..=n {
            let m = if is_big(s, q) { BULK_ROWS } else { 0 };
            for k in 0..=m {
                if !present.remove(&churn_id(s, q, k)) {
                    out.push(format!(
                        "session {s} (counter {n}): churn row {k} of seq {q} is missing"
                    ));
                }
            }
        }
    }
    for id in present.iter().take(5) {
        out.push(format!(
            "churn row {id} (session {}, seq {}) should have been deleted",
            id >> 40,
            (id & ((1 << 40) - 1)) >> 3
        ));
    }
    out
}

/// Side file of acknowledged DDL statements of one run.
pub fn ddl_acks(acks: &Path) -> PathBuf {
    acks.with_extension("ddl")
}

/// Statement `k` of the run's DDL track, acknowledged in `acks` once done.
pub fn ddl_step(
    db: &Arc<Database>,
    s: &Arc<Session>,
    run: i64,
    k: u64,
    acks: &Path,
) -> Result<(), String> {
    let (j, r) = (k / STEPS, k % STEPS);
    let name = |p: &str, j: u64| format!("{p}{run}_{j}");
    let def = |name: String| {
        TableDef::new(
            name,
            vec![
                ColumnDef::new("id", DataType::BigInt),
                ColumnDef::new("v", DataType::Text),
            ],
            &["id"],
        )
    };
    let row = |i: i64, v: String| vec![Some(Value::Int(i)), Some(Value::text(v))];
    let unique = |name: String, columns: Vec<usize>| IndexDef {
        id: 0,
        name,
        columns,
        unique: true,
        constraint: false,
        options: Vec::new(),
    };
    let res = match r {
        0 => def(name("d", j)).and_then(|d| db.create_table(s, d).map(|_| ())),
        1 => {
            let t = db.table(&name("d", j)).map_err(|e| e.to_string())?;
            let mut tx = db.begin(s);
            (|| {
                for i in 0..=j as i64 {
                    tx.insert_into(&t, vec![Some(Value::Int(i)), Some(Value::text("ddl"))])?;
                }
                Ok(())
            })()
            .and_then(|()| tx.commit(CommitRequest::Durable).map(|_| ()))
        }
        2 => db.run(s, CommitRequest::Default, |tx| {
            tx.create_table(def(name("e", j))?)?;
            for i in 0..=j as i64 {
                tx.insert(&name("e", j), row(i, format!("v{i}")))?;
            }
            tx.create_index(
                &name("e", j),
                unique(format!("{}_v", name("e", j)), vec![1]),
            )?;
            tx.insert(&name("d", j), row(1000, "tx".into()))?;
            if j >= 1 {
                tx.drop_table_cascade(&name("e", j - 1), false)?;
            }
            Ok(())
        }),
        3 => {
            let mut tx = db.begin(s);
            (|| {
                tx.insert(&name("e", j), row(1000, "rolled back".into()))?;
                tx.insert(&name("d", j), row(1001, "rolled back".into()))?;
                tx.create_index(
                    &name("e", j),
                    unique(format!("{}_iv", name("e", j)), vec![0, 1]),
                )?;
                tx.create_table(def(name("x", j))?)?;
                tx.insert(&name("x", j), row(1, "rolled back".into()))?;
                tx.truncate(&name("d", j))?;
                tx.drop_table_cascade(&name("e", j), false)?;
                Ok::<_, EngineError>(())
            })()
            .map(|()| tx.rollback())
        }
        4 if j >= 1 => db.truncate(s, &name("d", j - 1)),
        5 if j >= 1 => db.drop_table(s, &name("d", j - 1)),
        _ => Ok(()),
    };
    res.map_err(|e| format!("DDL statement {k}: {e}"))?;
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(acks)
        .map_err(|e| e.to_string())?;
    f.write_all(format!("{k}\n").as_bytes())
        .and_then(|()| f.sync_data())
        .map_err(|e| format!("DDL ack file: {e}"))
}

/// Statements per cycle of the DDL track.
const STEPS: u64 = 6;

/// The run's DDL tables (name -> rows, indexes) after its first `m`
/// statements.
fn ddl_state(run: i64, m: u64) -> BTreeMap<String, (usize, usize)> {
    let mut t = BTreeMap::new();
    for k in 0..m {
        let (j, r) = (k / STEPS, k % STEPS);
        match r {
            0 => {
                t.insert(format!("d{run}_{j}"), (0, 0));
            }
            1 => {
                t.insert(format!("d{run}_{j}"), (j as usize + 1, 0));
            }
            2 => {
                t.insert(format!("e{run}_{j}"), (j as usize + 1, 1));
                t.insert(format!("d{run}_{j}"), (j as usize + 2, 0));
                if j >= 1 {
                    t.remove(&format!("e{run}_{}", j - 1));
                }
            }
            4 if j >= 1 => {
                t.insert(format!("d{run}_{}", j - 1), (0, 0));
            }
            5 if j >= 1 => {
                t.remove(&format!("d{run}_{}", j - 1));
            }
            _ => {}
        }
    }
    t
}

/// Checks the run's DDL tables against its acknowledged statements; returns
/// the statements acknowledged and the violations. With `delayed_inserts`
/// (DELAYED_DURABILITY = FORCED makes the track's INSERT a delayed commit
/// although it asks to be durable), a last acknowledged INSERT may be lost;
/// an earlier one was hardened by the DDL after it, which is always durable.
pub fn check_ddl(
    db: &Database,
    run: i64,
    acks: &Path,
    delayed_inserts: bool,
) -> (u64, Vec<String>) {
    let acked = std::fs::read_to_string(acks)
        .map(|s| s.lines().count() as u64)
        .unwrap_or(0);
    let prefixes = ["d", "e", "x"].map(|p| format!("{p}{run}_"));
    let tables: BTreeMap<String, (usize, usize)> = db
        .tables()
        .into_iter()
        .filter(|t| prefixes.iter().any(|p| t.name().starts_with(p)))
        .map(|t| (t.name().to_string(), (t.len(), t.def.indexes.len())))
        .collect();
    if tables == ddl_state(run, acked) || tables == ddl_state(run, acked + 1) {
        return (acked, Vec::new());
    }
    let last_was_insert = acked >= 1 && (acked - 1) % STEPS == 1;
    if delayed_inserts && last_was_insert && tables == ddl_state(run, acked - 1) {
        return (acked, Vec::new());
    }
    (
        acked,
        vec![format!(
            "run {run}: DDL tables {tables:?} after {acked} acknowledged statements \
             (expected {:?})",
            ddl_state(run, acked)
        )],
    )
}
