//! `DBCC CHECKDB`: reads a database's data file back (every stored row and
//! index entry against its checksum, its table's shape, the key order and
//! the table's count; see walden-engine `store/check.rs`), as SQL Server's
//! command checks a database on demand. One row per stored table or index;
//! damage is an error (XX001) naming the first problem, as SQL Server
//! reports consistency errors at severity 16, so scripts see it.

use crate::error::{ErrorKind, Result, SqlError};
use crate::{Column, QueryOutput};
use std::sync::Arc;
use walden_engine::{DataType, Database, Value};

/// The result's columns (also what Describe answers).
pub(crate) fn columns() -> Vec<Column> {
    Column::computed(&[
        ("object_name", DataType::Text),
        ("stored_as", DataType::Text),
        ("entries", DataType::BigInt),
        ("count_compared", DataType::Bool),
    ])
}

pub(crate) fn run(db: &Arc<Database>, quiet: bool) -> Result<QueryOutput> {
    let r = db.check_store()?;
    if r.problem_count > 0 {
        return Err(SqlError::new(
            ErrorKind::DataCorrupted,
            format!(
                "CHECKDB found {} consistency error(s) in database '{}'; the first: {}",
                r.problem_count,
                db.name(),
                r.problems.first().cloned().unwrap_or_default()
            ),
        ));
    }
    let mut out = QueryOutput::command("DBCC");
    out.columns = Some(columns());
    for t in &r.tables {
        out.rows.push(vec![
            Value::text(&t.name),
            Value::text(&t.stored),
            Value::Int(t.entries as i64),
            Value::Bool(t.count_compared),
        ]);
    }
    if !quiet {
        out.notices.push(format!(
            "CHECKDB found 0 consistency errors in database '{}' ({} entries, {} bytes in {} stored tables, {} ms)",
            db.name(),
            r.entries,
            r.bytes,
            r.tables.len(),
            r.elapsed.as_millis()
        ));
    }
    Ok(out)
}
