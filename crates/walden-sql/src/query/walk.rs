//! `ORDER BY ... LIMIT` through the primary key or an index: the rows are
//! read in the key's order (forward or backward), filtered as they come,
//! and the read stops once LIMIT + OFFSET rows have passed, with no sort.

use super::*;
use std::ops::Bound;
use walden_engine::Key;

/// How a single-table SELECT's ORDER BY is served by a key's order.
#[derive(Debug)]
pub struct OrderedWalk {
    /// `None`: the primary key; else the position in the table's `indexes`.
    pub index: Option<usize>,
    /// Values of the key's leading columns, fixed by equalities in the filter.
    pub eq: Vec<Expr>,
    /// Bounds on the first ordered column (its conjuncts still filter).
    pub range: Option<Box<KeyRange>>,
    /// Walk backward (ORDER BY ... DESC).
    pub reverse: bool,
    /// The first ordered column's NULLs go where the key order does not put
    /// them (keys hold NULL lowest; PostgreSQL's default puts NULLs last
    /// ascending, first descending): its non-NULL entries and its NULLs are
    /// walked as two segments.
    pub split_nulls: bool,
}

/// The walk for a SELECT with ORDER BY and LIMIT over one table, when a key
/// (the primary key or an index) gives its order after a prefix of columns
/// fixed by equalities, and it fixes at least as many columns as the
/// search the filters would use otherwise (a rough estimate: a walk that
/// must pass over many rows to find a few loses to a search by value).
pub(super) fn choose_walk(
    sel: &SelectPlan,
    order: &[(SortKey, bool, bool)],
    limited: bool,
) -> Option<Box<OrderedWalk>> {
    if !limited
        || sel.group.is_some()
        || sel.having.is_some()
        || sel.distinct
        || sel.distinct_on.is_some()
        || sel.window.is_some()
        || sel.srf.is_some()
    {
        return None;
    }
    let Source::Table {
        table,
        lookup: None,
        range,
        index,
        filter,
    } = &sel.from
    else {
        return None;
    };
    let mut cols = Vec::new();
    for (k, desc, nulls_first) in order {
        let c = match k {
            SortKey::Input(Expr::Col(c)) => *c,
            SortKey::Output(j) => match sel.projection.get(*j) {
                Some(Expr::Col(c)) => *c,
                _ => return None,
            },
            _ => return None,
        };
        // A column an equality fixes orders nothing.
        if equal_const(c, filter).is_none() {
            cols.push((c, *desc, *nulls_first));
        }
    }
    let &(first, reverse, first_nulls) = cols.first()?;
    // An array's key order differs from its comparison order in one case
    // (see `access::range_bound_value`): the rows are sorted instead.
    if cols
        .iter()
        .any(|&(c, _, _)| matches!(table.def.columns[c].data_type, DataType::Array(_)))
    {
        return None;
    }
    if cols.iter().any(|&(_, d, _)| d != reverse) {
        return None;
    }
    let not_null = |c: usize| !table.def.columns[c].nullable || table.def.primary_key.contains(&c);
    // Walking forward, the key order puts NULLs first; backward, last.
    let natural = !reverse;
    if cols[1..]
        .iter()
        .any(|&(c, _, nf)| !not_null(c) && nf != natural)
    {
        return None;
    }
    let mut keys: Vec<Option<usize>> = Vec::new();
    if !table.def.primary_key.is_empty() {
        keys.push(None);
    }
    keys.extend((0..table.indexes.len()).map(Some));
    let mut best: Option<(usize, OrderedWalk)> = None;
    for ix in keys {
        let Some(key) = key_columns(table, ix) else {
            continue;
        };
        let eq: Vec<Expr> = key.iter().map_while(|&c| equal_const(c, filter)).collect();
        let p = eq.len();
        let ordered = key.get(p..p + cols.len());
        if ordered.is_none_or(|o| o.iter().zip(&cols).any(|(&k, &(c, _, _))| k != c)) {
            continue;
        }
        let range = choose_range(first, filter);
        let score = p * 2 + range.is_some() as usize;
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            let split_nulls = !not_null(first) && first_nulls != natural && range.is_none();
            best = Some((
                score,
                OrderedWalk {
                    index: ix,
                    eq,
                    range,
                    reverse,
                    split_nulls,
                },
            ));
        }
    }
    let (score, walk) = best?;
    let other = match index.as_deref() {
        Some(IndexPath::Search(s)) => s.eq.len() * 2 + s.range.is_some() as usize,
        // A union of searches finds its rows by value.
        Some(_) => 2,
        None => range.as_deref().map_or(0, range_score),
    };
    (score >= other).then(|| Box::new(walk))
}

/// Runs a SELECT through its walk: the projected rows in ORDER BY order,
/// OFFSET skipped, at most `cap` of them. `None` when the walk cannot serve
/// this execution (a value that does not convert to its column's type, a
/// snapshot older than the index): the caller reads and sorts instead.
pub(super) fn run_walk(
    sel: &SelectPlan,
    w: &OrderedWalk,
    env: &Env<'_>,
    cap: Option<usize>,
    offset: usize,
) -> Result<Option<Vec<Vec<Value>>>> {
    let Source::Table { table, filter, .. } = &sel.from else {
        return Ok(None);
    };
    check_cancel(env)?;
    let Some(segments) = segments(table, w, env)? else {
        return Ok(None);
    };
    let tx = env.tx;
    // ACCESS SHARE to the end of the transaction, as any read of the table.
    tx.lock_table(
        table,
        walden_engine::TableLockMode::AccessShare,
        walden_engine::WaitPolicy::Wait,
    )?;
    let need = cap.map(|c| c.saturating_add(offset));
    let mut out = Vec::new();
    if need == Some(0) {
        return Ok(Some(out));
    }
    let (mut seen, mut visited) = (0usize, 0usize);
    let done = std::cell::Cell::new(false);
    let mut visit = |r: &walden_engine::Row| -> Result<bool> {
        if visited.is_multiple_of(4096) {
            check_cancel(env)?;
        }
        visited += 1;
        if !passes(filter, r, env)? || !passes(&sel.filter, r, env)? {
            return Ok(true);
        }
        seen += 1;
        if seen > offset {
            let row = sel
                .projection
                .iter()
                .map(|e| e.eval(r, env))
                .collect::<Result<Vec<_>>>()?;
            env.info.mem.charge_row(row.len())?;
            out.push(row);
        }
        done.set(need.is_some_and(|n| seen >= n));
        Ok(!done.get())
    };
    for (i, seg) in segments.into_iter().enumerate() {
        match w.index {
            None => tx.walk_in(table, seg, w.reverse, &mut visit)?,
            Some(ix) => {
                // The NULLs walked apart are part of the same walk.
                let seek = (i == 0).then_some(!w.eq.is_empty());
                if !tx.index_walk(table, ix, seg, w.reverse, seek, &mut visit)? {
                    return Ok(None);
                }
            }
        }
        if done.get() {
            break;
        }
    }
    Ok(Some(out))
}

type Segment = (Bound<Key>, Bound<Key>);

/// The columns a walk's keys order by: the primary key's, or an index's
/// followed by the primary key's (its entries end with the row's key).
fn key_columns(table: &Table, index: Option<usize>) -> Option<Vec<usize>> {
    let pk = &table.def.primary_key;
    match index {
        None => Some(pk.clone()),
        Some(n) => {
            let mut cols = table.indexes.get(n)?.def.columns.clone();
            cols.extend(pk);
            Some(cols)
        }
    }
}

/// The key ranges to walk, in order (two when NULLs are walked apart);
/// none when an equality's value is NULL; `None` when a fixed value does
/// not convert to its column's type.
fn segments(table: &Table, w: &OrderedWalk, env: &Env<'_>) -> Result<Option<Vec<Segment>>> {
    let Some(key_cols) = key_columns(table, w.index) else {
        return Ok(None);
    };
    let ty = |k: usize| &table.def.columns[key_cols[k]].data_type;
    let mut prefix = Vec::with_capacity(w.eq.len() + 2);
    for (k, e) in w.eq.iter().enumerate() {
        match bound_value(e, ty(k), env)? {
            None => return Ok(Some(Vec::new())),
            Some(Ok(v)) => prefix.push(v),
            Some(Err(())) => return Ok(None),
        }
    }
    let with = |extra: &[Value]| -> Key {
        let mut k = prefix.clone();
        k.extend_from_slice(extra);
        k.into_boxed_slice()
    };
    // The whole prefix: its entries sort from the bare prefix up to the
    // prefix followed by a value above every other.
    let whole_hi = || {
        if prefix.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Included(with(&[above()]))
        }
    };
    let mut lo = if prefix.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Included(with(&[]))
    };
    let mut hi = whole_hi();
    if let Some(r) = &w.range {
        // A bound that does not convert exactly leaves its side open (the
        // filter decides); a NULL bound passes no row.
        let first = ty(prefix.len());
        if let Some((e, _)) = &r.lo {
            match super::access::range_bound_value(e, first, env)? {
                None => return Ok(Some(Vec::new())),
                Some(Ok(v)) => lo = Bound::Included(with(&[v])),
                Some(Err(())) => {}
            }
        }
        if let Some((e, _)) = &r.hi {
            match super::access::range_bound_value(e, first, env)? {
                None => return Ok(Some(Vec::new())),
                Some(Ok(v)) => hi = Bound::Included(with(&[v, above()])),
                Some(Err(())) => {}
            }
        }
    }
    if !w.split_nulls {
        return Ok(Some(vec![(lo, hi)]));
    }
    let nulls = (
        Bound::Included(with(&[Value::Null])),
        Bound::Included(with(&[Value::Null, above()])),
    );
    let values = (Bound::Included(with(&[below()])), whole_hi());
    Ok(Some(if w.reverse {
        vec![nulls, values]
    } else {
        vec![values, nulls]
    }))
}

/// A bound below every non-NULL value: `false` is the lowest of them in
/// the key order (and in the store's encoding of keys).
pub(super) fn below() -> Value {
    Value::Bool(false)
}

/// A bound above every value a key holds: the enum sort position that
/// orders last (a NaN no enum label has), enums being the highest type in
/// the key order and the store's encoding.
pub(super) fn above() -> Value {
    Value::Enum(f64::from_bits(u64::MAX >> 1), std::sync::Arc::from(""))
}
