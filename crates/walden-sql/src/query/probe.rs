//! Index nested-loop joins: for an equi-join whose right side is a table
//! with a key (its primary key or an index) on the join columns, each left
//! row's key values search that table, instead of the whole table being
//! read and hashed. Chosen at plan time when the search fixes more key
//! columns than the table's own filters do; at run time when the left side
//! has few rows beside the table.
//!
//! The rows found are checked as the hash join checks them (the table's
//! filters, every key equal by value, the residual ON condition), so the
//! search only narrows: a left value that does not convert exactly to the
//! key column's type (1.5 against an integer) is matched against the whole
//! table instead.

use super::*;
use std::ops::Bound;

#[derive(Debug)]
pub struct JoinProbe {
    /// `None`: the primary key; else the position in the table's `indexes`.
    pub index: Option<usize>,
    /// Values of the key's leading columns, in key order.
    pub eq: Vec<ProbeValue>,
}

#[derive(Debug)]
pub enum ProbeValue {
    /// The left expression of the join's `keys[i]`.
    Key(usize),
    /// A constant of the table's filter (`s_w_id = $1`).
    Const(Expr),
}

/// The best key to search the right side of `keys` through, if any.
pub(super) fn choose_probe(
    kind: &JoinKind,
    right: &Source,
    keys: &[(Expr, Expr)],
) -> Option<Box<JoinProbe>> {
    if !matches!(kind, JoinKind::Inner | JoinKind::Left) || keys.is_empty() {
        return None;
    }
    let Source::Table {
        table,
        lookup,
        range,
        index,
        filter,
    } = right
    else {
        return None;
    };
    if lookup.is_some() {
        return None;
    }
    // What the table's own filters fix already (see `choose_lookups`).
    let own = match (range.as_deref(), index.as_deref()) {
        (_, Some(IndexPath::Search(s))) => s.eq.len(),
        (_, Some(_)) => 1,
        (Some(r), None) => r.prefix.len(),
        (None, None) => 0,
    };
    let value = |c: usize| -> Option<ProbeValue> {
        keys.iter()
            .position(|(_, r)| matches!(r, Expr::Col(x) if *x == c))
            .map(ProbeValue::Key)
            .or_else(|| access::equal_const(c, filter).map(ProbeValue::Const))
    };
    let mut candidates: Vec<(Option<usize>, Vec<usize>)> = Vec::new();
    if !table.def.primary_key.is_empty() && !table.has_hidden_key() {
        candidates.push((None, table.def.primary_key.clone()));
    }
    for (n, ix) in table.indexes.iter().enumerate() {
        candidates.push((Some(n), ix.def.columns.clone()));
    }
    let mut best: Option<JoinProbe> = None;
    for (index, cols) in candidates {
        let eq: Vec<ProbeValue> = cols.iter().map_while(|&c| value(c)).collect();
        if eq.len() <= own || !eq.iter().any(|v| matches!(v, ProbeValue::Key(_))) {
            continue;
        }
        // More fixed columns win; the primary key (listed first) wins ties.
        if best.as_ref().is_none_or(|b| eq.len() > b.eq.len()) {
            best = Some(JoinProbe { index, eq });
        }
    }
    best.map(Box::new)
}

/// Whether searching per left row beats reading the table once: a search
/// costs a few times a row of a scan.
pub(super) fn worth_it(left_rows: usize, table: &Table) -> bool {
    left_rows.saturating_mul(4) <= table.len()
}

/// The rows of the join (inner or left) of `l` with `right` through `pr`.
#[allow(clippy::too_many_arguments)]
pub(super) fn probe_join(
    l: Vec<Vec<Value>>,
    right: &Source,
    pr: &JoinProbe,
    rw: usize,
    kind: &JoinKind,
    keys: &[(Expr, Expr)],
    on: &[Expr],
    env: &Env<'_>,
) -> Result<Vec<Vec<Value>>> {
    let Source::Table { table, filter, .. } = right else {
        return Err(SqlError::internal(
            "a join probe on a source that is not a table",
        ));
    };
    env.tx.lock_table(
        table,
        walden_engine::TableLockMode::AccessShare,
        walden_engine::WaitPolicy::Wait,
    )?;
    // The right side read whole, for a left row the key cannot serve.
    let mut whole: Option<Vec<walden_engine::Row>> = None;
    let mut out = Vec::new();
    for (n, lrow) in l.iter().enumerate() {
        if n % 256 == 0 {
            check_cancel(env)?;
        }
        let k = keys
            .iter()
            .map(|(le, _)| le.eval(lrow, env))
            .collect::<Result<Vec<_>>>()?;
        let mut matched = false;
        if !k.iter().any(Value::is_null) {
            let found = search(table, pr, &k, env)?;
            let (rows, filtered) = match found {
                Some(rows) => (rows, false),
                None => {
                    if whole.is_none() {
                        let rows = run_source(right, env)?;
                        whole = Some(rows.into_iter().map(walden_engine::Row::from).collect());
                    }
                    (whole.clone().unwrap_or_default(), true)
                }
            };
            let nk = normalize_key(k);
            let mut found = 0usize;
            for rrow in rows {
                if !filtered && !passes(filter, &rrow, env)? {
                    continue;
                }
                let rk = keys
                    .iter()
                    .map(|(_, re)| re.eval(&rrow, env))
                    .collect::<Result<Vec<_>>>()?;
                if rk.iter().any(Value::is_null) || normalize_key(rk) != nk {
                    continue;
                }
                found += 1;
                let mut row = Vec::with_capacity(lrow.len() + rrow.len());
                row.extend_from_slice(lrow);
                row.extend_from_slice(&rrow[..]);
                if passes(on, &row, env)? {
                    matched = true;
                    env.info.mem.charge_row(row.len())?;
                    out.push(row);
                }
            }
            // The inner index scan's rows, one loop per search.
            explain::measure::ran(right, explain::measure::Part::Source, found);
        }
        if !matched && matches!(kind, JoinKind::Left) {
            env.info.mem.charge_row(lrow.len() + rw)?;
            let mut row = lrow.clone();
            row.extend(std::iter::repeat_n(Value::Null, rw));
            out.push(row);
        }
    }
    Ok(out)
}

/// The table's rows whose key starts with the probe's values for one left
/// row (`k`: its join-key values), as the transaction sees them. `None`
/// when the key cannot serve it (a value that does not convert exactly to
/// its column's type, a snapshot older than the index).
fn search(
    table: &Table,
    pr: &JoinProbe,
    k: &[Value],
    env: &Env<'_>,
) -> Result<Option<Vec<walden_engine::Row>>> {
    let cols: &[usize] = match pr.index {
        None => &table.def.primary_key,
        Some(n) => match table.indexes.get(n) {
            Some(ix) => &ix.def.columns,
            None => return Ok(None),
        },
    };
    let mut prefix = Vec::with_capacity(pr.eq.len());
    for (pv, &c) in pr.eq.iter().zip(cols) {
        let e = match pv {
            ProbeValue::Key(i) => Expr::Lit(k[*i].clone()),
            ProbeValue::Const(e) => access::clone_const(e)
                .ok_or_else(|| SqlError::internal("a join probe's constant is not constant"))?,
        };
        match access::bound_value(&e, &table.def.columns[c].data_type, env)? {
            // NULL equals nothing.
            None => return Ok(Some(Vec::new())),
            Some(Ok(v)) => prefix.push(v),
            Some(Err(())) => return Ok(None),
        }
    }
    let tx = env.tx;
    match pr.index {
        None if prefix.len() == cols.len() => {
            Ok(Some(tx.get_in(table, &prefix)?.into_iter().collect()))
        }
        None => {
            let lo: walden_engine::Key = prefix.clone().into_boxed_slice();
            let mut hi = prefix;
            hi.push(super::walk::above());
            let rows = tx.scan_in(
                table,
                (Bound::Included(lo), Bound::Included(hi.into_boxed_slice())),
            )?;
            Ok(Some(rows.into_iter().map(|(_, r)| r).collect()))
        }
        Some(n) => {
            let lo: walden_engine::Key = prefix.clone().into_boxed_slice();
            let rows = tx.index_scan(table, n, Bound::Included(lo), |e| e.starts_with(&prefix))?;
            Ok(rows.map(|rows| rows.into_iter().map(|(_, r)| r).collect()))
        }
    }
}
