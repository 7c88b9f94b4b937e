//! ANALYZE: reads each table asked for (every table when none is named),
//! a sample of at most `stats::SAMPLE_ROWS` rows spread evenly over its key
//! order, and stores the columns' statistics (`query/stats.rs`) that
//! `pg_stats` shows and the planner's estimates use.

use crate::error::{ErrorKind, Result, SqlError};
use crate::front::analyze::AnalyzeTarget;
use crate::query::stats;
use crate::query::Planner;
use crate::QueryOutput;
use sqlparser::ast;
use std::ops::Bound;
use std::sync::Arc;
use walden_engine::{Table, Transaction};

pub(crate) fn analyze(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    targets: &[AnalyzeTarget],
    vacuum: bool,
) -> Result<QueryOutput> {
    let mut work: Vec<(Arc<Table>, Vec<usize>)> = Vec::new();
    if targets.is_empty() {
        for t in p.db.tables() {
            work.push((t, Vec::new()));
        }
    }
    for target in targets {
        let name = ast::ObjectName::from(
            target
                .name
                .iter()
                .map(|n| ast::Ident::with_quote('"', n.clone()))
                .collect::<Vec<_>>(),
        );
        let table = p.table(&name)?;
        let mut cols = Vec::new();
        for c in &target.columns {
            let k = table
                .def
                .columns
                .iter()
                .position(|col| col.name == *c)
                .ok_or_else(|| {
                    SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!(
                            "column \"{c}\" of relation \"{}\" does not exist",
                            target.name.last().map(String::as_str).unwrap_or("")
                        ),
                    )
                })?;
            if !cols.contains(&k) {
                cols.push(k);
            }
        }
        work.push((table, cols));
    }
    for (table, cols) in work {
        analyze_table(tx, &table, &cols)?;
    }
    Ok(QueryOutput::command(if vacuum {
        "VACUUM"
    } else {
        "ANALYZE"
    }))
}

/// Samples `table` as `tx` sees it and stores its columns' statistics.
fn analyze_table(tx: &Transaction, table: &Table, cols: &[usize]) -> Result<()> {
    tx.lock_table(
        table,
        walden_engine::TableLockMode::AccessShare,
        walden_engine::WaitPolicy::Wait,
    )?;
    // Every `stride`-th row, the stride from the newest committed count.
    let stride = table.len().div_ceil(stats::SAMPLE_ROWS).max(1);
    let mut sample = Vec::new();
    let mut total = 0usize;
    tx.scan_each::<walden_engine::EngineError>(table, (Bound::Unbounded, Bound::Unbounded), |r| {
        if total.is_multiple_of(stride) && sample.len() < stats::SAMPLE_ROWS {
            sample.push(walden_engine::Row::from(r.to_vec()));
        }
        total += 1;
        Ok(())
    })?;
    stats::store(table, stats::gather(table, &sample, total, cols));
    Ok(())
}
