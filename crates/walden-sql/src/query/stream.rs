//! A plain SELECT streamed over its source: each row is filtered and
//! projected as the scan visits it, and only what the result needs is held.
//! With LIMIT and no ORDER BY the scan stops after OFFSET + LIMIT rows; with
//! both, only the best OFFSET + LIMIT rows so far are kept (a bounded sort,
//! as PostgreSQL's top-N heapsort), so `SELECT * FROM big LIMIT 10` reads
//! ten rows and `... ORDER BY x LIMIT 10` holds ten.

use super::*;

/// Rows the bounded sort gathers past what it keeps before it sorts and
/// drops the rest (at least; twice the kept count when that is more).
const SLACK: usize = 1024;

/// The rows of a SELECT without grouping, window functions, set-returning
/// functions in its list or DISTINCT, projected with their sort keys, in
/// source order (the caller sorts); when `keep` is given, only rows that
/// can be among the first `keep` in ORDER BY order.
pub(super) fn stream_select(
    sel: &SelectPlan,
    order: &[(SortKey, bool, bool)],
    env: &Env<'_>,
    keep: Option<usize>,
) -> Result<Vec<(Vec<Value>, Vec<Value>)>> {
    let mut out = Vec::new();
    if keep == Some(0) {
        // Nothing is read (as PostgreSQL's LIMIT 0 fetches nothing), but a
        // table is locked as any read of it is: DDL on it waits for this
        // transaction.
        if let Source::Table { table, .. } = &sel.from {
            env.tx.lock_table(
                table,
                walden_engine::TableLockMode::AccessShare,
                walden_engine::WaitPolicy::Wait,
            )?;
        }
        return Ok(out);
    }
    let dirs: Vec<(bool, bool)> = order.iter().map(|(_, d, n)| (*d, *n)).collect();
    let mem = &env.info.mem;
    let width = |r: &(Vec<Value>, Vec<Value>)| r.0.len() + r.1.len();
    // Once the bounded sort has its rows, the sort keys of the last one
    // kept: a row that does not sort before them cannot be in the result
    // (on equal keys the earlier row wins, as in the full stable sort).
    let mut bound: Option<Vec<Value>> = None;
    each_source_row(&sel.from, env, &mut |r| {
        if !passes(&sel.filter, r, env)? {
            return Ok(true);
        }
        let row = project(sel, order, r, env)?;
        if let Some(b) = &bound {
            if compare_keys(&row.1, b, &dirs) != Ordering::Less {
                return Ok(true);
            }
        }
        mem.charge_row(width(&row))?;
        out.push(row);
        let Some(n) = keep else {
            return Ok(true);
        };
        if order.is_empty() {
            return Ok(out.len() < n);
        }
        if out.len() >= n.saturating_mul(2).max(n.saturating_add(SLACK)) {
            // A stable sort: rows with equal keys stay in source order, as
            // the full sort would leave them.
            out.sort_by(|a, b| compare_keys(&a.1, &b.1, &dirs));
            for dropped in out.drain(n..) {
                mem.release_row(width(&dropped));
            }
            bound = out.last().map(|r| r.1.clone());
        }
        Ok(true)
    })?;
    Ok(out)
}
