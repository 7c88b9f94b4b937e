//! Access paths: point lookups, key ranges and index searches chosen from
//! the filters, and whether a plan can be kept for later executions.

use super::*;

/// Chooses how a table's rows are found from its filters: a point lookup
/// when equalities fix the whole primary key; else the narrowest of a
/// primary-key range (equalities on its first columns, then bounds on the
/// next), a search of a secondary index, and a union of searches (IN lists,
/// ORs). Each is scored by the columns it fixes (two per equality, one for
/// bounds); the primary key wins ties, as it needs no second lookup.
pub fn choose_lookups(s: &mut Source) {
    match s {
        Source::Table {
            table,
            lookup,
            range,
            index,
            filter,
        } => {
            if !table.def.primary_key.is_empty() {
                let key: Option<Vec<Expr>> = table
                    .def
                    .primary_key
                    .iter()
                    .map(|&pk| equal_const(pk, filter))
                    .collect();
                if let Some(key) = key {
                    *lookup = Some(key);
                    *range = None;
                    return;
                }
            }
            *range = pk_range(table, filter);
            let pk_score = range.as_deref().map_or(0, range_score);
            let search = best_search(table, filter, pk_score);
            let best = search.as_ref().map_or(pk_score, search_score);
            if let Some(path) = choose_union(table, filter, best) {
                *index = Some(Box::new(path));
                *range = None;
                return;
            }
            *index = search.map(|s| Box::new(IndexPath::Search(s)));
            if index.is_some() {
                *range = None;
            }
        }
        Source::Join {
            left,
            right,
            kind,
            keys,
            probe,
            ..
        } => {
            choose_lookups(left);
            choose_lookups(right);
            *probe = super::probe::choose_probe(kind, right, keys);
        }
        _ => {}
    }
}

/// Equalities on the primary key's first columns, then bounds on the next
/// one; `None` when neither narrows the key.
pub(super) fn pk_range(table: &Table, filter: &[Expr]) -> Option<Box<KeyRange>> {
    let pk = &table.def.primary_key;
    let prefix: Vec<Expr> = pk.iter().map_while(|&c| equal_const(c, filter)).collect();
    let mut r = pk
        .get(prefix.len())
        .and_then(|&c| choose_range(c, filter))
        .unwrap_or_default();
    r.prefix = prefix;
    (!r.prefix.is_empty() || r.lo.is_some() || r.hi.is_some()).then_some(r)
}

pub(super) fn range_score(r: &KeyRange) -> usize {
    r.prefix.len() * 2 + (r.lo.is_some() || r.hi.is_some()) as usize
}

fn search_score(s: &IndexSearch) -> usize {
    s.eq.len() * 2 + s.range.is_some() as usize
}

/// How narrow one branch of a union is (see [`choose_lookups`]).
fn probe_score(table: &Table, p: &Probe) -> usize {
    match p {
        Probe::Key(_) => table.def.primary_key.len() * 2,
        Probe::Range(r) => range_score(r),
        Probe::Index(s) => search_score(s),
    }
}

/// A constant that `filter` says column `col` equals.
pub(crate) fn equal_const(col: usize, filter: &[Expr]) -> Option<Expr> {
    filter.iter().find_map(|f| match f {
        Expr::Bin(BinOp::Eq, a, b) => match (a.as_ref(), b.as_ref()) {
            (Expr::Col(i), other) | (other, Expr::Col(i)) if *i == col && !other.uses_row() => {
                clone_const(other)
            }
            _ => None,
        },
        _ => None,
    })
}

/// The index that fixes the most leading columns by equality (a range on
/// the next one counts half a column); none when no index narrows more
/// than the primary-key range of score `pk_score` does.
pub(super) fn best_search(table: &Table, filter: &[Expr], pk_score: usize) -> Option<IndexSearch> {
    let mut best: Option<(usize, IndexSearch)> = None;
    for (n, ix) in table.indexes.iter().enumerate() {
        let mut eq = Vec::new();
        for &c in &ix.def.columns {
            match equal_const(c, filter) {
                Some(e) => eq.push(e),
                None => break,
            }
        }
        let range = ix
            .def
            .columns
            .get(eq.len())
            .and_then(|&c| choose_range(c, filter));
        let score = eq.len() * 2 + range.is_some() as usize;
        if score == 0 || score <= pk_score {
            continue;
        }
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((
                score,
                IndexSearch {
                    index: n,
                    eq,
                    range,
                },
            ));
        }
    }
    best.map(|(_, p)| p)
}

/// A union of searches for a filter that is a disjunction on key or
/// indexed columns: `c IN (consts)`, or an OR whose every branch can be
/// searched (with the other conjuncts' equalities and bounds, so
/// `a = 1 AND (b = 2 OR b = 3)` searches an index on (a, b) twice). The
/// whole filter still runs on the rows found; `None` when some branch
/// would need a scan, or would not narrow more than a single path of
/// score `single` does.
pub(super) fn choose_union(table: &Table, filter: &[Expr], single: usize) -> Option<IndexPath> {
    let rest_of = |i: usize| -> Vec<Expr> {
        filter
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .filter_map(|(_, e)| clone_sargable(e))
            .collect()
    };
    for (i, f) in filter.iter().enumerate() {
        let branches: Vec<Vec<Expr>> = match f {
            Expr::Func(crate::functions::Func::AnyArray(BinOp::Eq, false), args) => {
                let (Some(Expr::Col(c)), Some(arr)) = (args.first(), args.get(1)) else {
                    continue;
                };
                let Some(array) = clone_const(arr) else {
                    continue;
                };
                // Whether an element's branch can be searched: decided
                // now with a stand-in element, as it does not depend on it.
                let rest = rest_of(i);
                let mut probe = vec![eq_lit(*c, Value::Null)];
                probe.extend(rest.iter().filter_map(clone_sargable));
                if best_probe(table, &probe).is_some_and(|p| probe_score(table, &p) > single) {
                    return Some(IndexPath::Any {
                        col: *c,
                        array,
                        rest,
                    });
                }
                continue;
            }
            Expr::InList(x, list, false) if matches!(x.as_ref(), Expr::Col(_)) => {
                let Expr::Col(c) = x.as_ref() else {
                    continue;
                };
                let Some(items) = list.iter().map(clone_const).collect::<Option<Vec<_>>>() else {
                    continue;
                };
                items
                    .into_iter()
                    .map(|e| vec![Expr::Bin(BinOp::Eq, Box::new(Expr::Col(*c)), Box::new(e))])
                    .collect()
            }
            Expr::Bin(BinOp::Or, ..) => {
                let mut leaves = Vec::new();
                or_leaves(f, &mut leaves);
                leaves
                    .into_iter()
                    .map(|l| {
                        let mut and = Vec::new();
                        and_leaves(l, &mut and);
                        and.into_iter().filter_map(clone_sargable).collect()
                    })
                    .collect()
            }
            _ => continue,
        };
        if branches.is_empty() {
            continue;
        }
        let rest = rest_of(i);
        let probes = branches
            .into_iter()
            .map(|mut b| {
                b.extend(rest.iter().filter_map(clone_sargable));
                best_probe(table, &b)
            })
            .collect::<Option<Vec<_>>>();
        if let Some(p) = probes {
            if p.iter().all(|p| probe_score(table, p) > single) {
                return Some(IndexPath::Union(p));
            }
        }
    }
    None
}

fn eq_lit(col: usize, v: Value) -> Expr {
    Expr::Bin(BinOp::Eq, Box::new(Expr::Col(col)), Box::new(Expr::Lit(v)))
}

/// The narrowest search for one branch of a union.
fn best_probe(table: &Table, filter: &[Expr]) -> Option<Probe> {
    let pk = &table.def.primary_key;
    if !pk.is_empty() {
        if let Some(key) = pk
            .iter()
            .map(|&c| equal_const(c, filter))
            .collect::<Option<Vec<_>>>()
        {
            return Some(Probe::Key(key));
        }
    }
    let range = pk_range(table, filter);
    match best_search(table, filter, range.as_deref().map_or(0, range_score)) {
        Some(s) => Some(Probe::Index(s)),
        None => range.map(Probe::Range),
    }
}

fn or_leaves<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::Bin(BinOp::Or, a, b) => {
            or_leaves(a, out);
            or_leaves(b, out);
        }
        other => out.push(other),
    }
}

fn and_leaves<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::Bin(BinOp::And, a, b) => {
            and_leaves(a, out);
            and_leaves(b, out);
        }
        other => out.push(other),
    }
}

/// A copy of a comparison that can bound a search (`col op const`,
/// `col BETWEEN const AND const`); others are left to the filter.
fn clone_sargable(e: &Expr) -> Option<Expr> {
    match e {
        Expr::Bin(op @ (BinOp::Eq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq), a, b) => {
            match (a.as_ref(), b.as_ref()) {
                (Expr::Col(i), other) if !other.uses_row() => Some(Expr::Bin(
                    *op,
                    Box::new(Expr::Col(*i)),
                    Box::new(clone_const(other)?),
                )),
                (other, Expr::Col(i)) if !other.uses_row() => Some(Expr::Bin(
                    *op,
                    Box::new(clone_const(other)?),
                    Box::new(Expr::Col(*i)),
                )),
                _ => None,
            }
        }
        Expr::Between(x, lo, hi, false) => match x.as_ref() {
            Expr::Col(i) if !lo.uses_row() && !hi.uses_row() => Some(Expr::Between(
                Box::new(Expr::Col(*i)),
                Box::new(clone_const(lo)?),
                Box::new(clone_const(hi)?),
                false,
            )),
            _ => None,
        },
        _ => None,
    }
}

/// A value for a bound or lookup on a column of type `ty`: `None` when it
/// is NULL (nothing equals it), `Some(Err(()))` when it does not convert
/// without loss (it then cannot narrow a search: `id > 2.5` on an integer).
pub(super) fn bound_value(
    e: &Expr,
    ty: &DataType,
    env: &Env<'_>,
) -> Result<Option<std::result::Result<Value, ()>>> {
    let v = e.eval(&[], env)?;
    if v.is_null() {
        return Ok(None);
    }
    Ok(Some(match walden_engine::types::coerce(v.clone(), ty) {
        Ok(c)
            if matches!(
                crate::functions::compare(&c, &v),
                Ok(Some(std::cmp::Ordering::Equal))
            ) =>
        {
            Ok(c)
        }
        _ => Err(()),
    }))
}

/// [`bound_value`] for one end of a range. An array narrows nothing: its
/// key order differs from its comparison order in one case (an array with
/// one dimension from below 1 sorts before the same elements from 1).
pub(super) fn range_bound_value(
    e: &Expr,
    ty: &DataType,
    env: &Env<'_>,
) -> Result<Option<std::result::Result<Value, ()>>> {
    Ok(match bound_value(e, ty, env)? {
        Some(Ok(Value::Array(_) | Value::MdArray(_))) => Some(Err(())),
        other => other,
    })
}

/// The rows an index search finds, as the transaction sees them, in key
/// order (the caller applies the filter). `None` when the index cannot
/// serve this execution (a value that does not convert, or a snapshot
/// older than the index): the caller scans instead.
pub(crate) fn index_rows(
    table: &Table,
    ip: &IndexPath,
    env: &Env<'_>,
) -> Result<Option<Vec<(walden_engine::Key, walden_engine::Row)>>> {
    // Keyed by row key: a row two branches find (`k IN (1, 1)`,
    // overlapping ranges) comes once, and the rows come in key order.
    let mut found = std::collections::BTreeMap::new();
    match ip {
        IndexPath::Search(s) => return search_rows(table, s, env),
        IndexPath::Union(probes) => {
            for (n, probe) in probes.iter().enumerate() {
                if n % 256 == 255 {
                    check_cancel(env)?;
                }
                if !probe_rows(table, probe, env, &mut found)? {
                    return Ok(None);
                }
            }
        }
        IndexPath::Any { col, array, rest } => {
            let ty = &table.def.columns[*col].data_type;
            let items = crate::functions::arrays::elements(&array.eval(&[], env)?);
            for (n, item) in items.into_iter().enumerate() {
                if n % 256 == 255 {
                    check_cancel(env)?;
                }
                // Each element in the column's type, or a scan when one
                // does not convert exactly; NULL elements match nothing.
                let v = match bound_value(&Expr::Lit(item), ty, env)? {
                    None => continue,
                    Some(Ok(v)) => v,
                    Some(Err(())) => return Ok(None),
                };
                let mut branch = vec![eq_lit(*col, v)];
                branch.extend(rest.iter().filter_map(clone_sargable));
                let Some(probe) = best_probe(table, &branch) else {
                    return Ok(None);
                };
                if !probe_rows(table, &probe, env, &mut found)? {
                    return Ok(None);
                }
            }
        }
    }
    Ok(Some(found.into_iter().collect()))
}

/// Adds the rows one branch of a union finds to `found`; false when the
/// index cannot serve this execution (the caller scans instead).
fn probe_rows(
    table: &Table,
    probe: &Probe,
    env: &Env<'_>,
    found: &mut std::collections::BTreeMap<walden_engine::Key, walden_engine::Row>,
) -> Result<bool> {
    match probe {
        Probe::Key(key) => {
            let k = lookup_key(table, key, env)?;
            if let Some(r) = env.tx.get_in(table, &k)? {
                found.insert(k.into_boxed_slice(), r);
            }
        }
        Probe::Range(r) => {
            for (k, row) in env.tx.scan_in(table, key_bounds(table, Some(r), env)?)? {
                found.insert(k, row);
            }
        }
        Probe::Index(s) => match search_rows(table, s, env)? {
            Some(rows) => found.extend(rows),
            None => return Ok(false),
        },
    }
    Ok(true)
}

/// The rows one index search finds (see [`index_rows`]).
fn search_rows(
    table: &Table,
    ip: &IndexSearch,
    env: &Env<'_>,
) -> Result<Option<Vec<(walden_engine::Key, walden_engine::Row)>>> {
    use std::ops::Bound;
    let Some(ix) = table.indexes.get(ip.index) else {
        return Ok(None);
    };
    let col_type = |k: usize| &table.def.columns[ix.def.columns[k]].data_type;
    let mut prefix = Vec::with_capacity(ip.eq.len() + 1);
    for (k, e) in ip.eq.iter().enumerate() {
        match bound_value(e, col_type(k), env)? {
            None => return Ok(Some(Vec::new())),
            Some(Ok(v)) => prefix.push(v),
            Some(Err(())) => return Ok(None),
        }
    }
    let n = prefix.len();
    let mut lo_val = None;
    let mut hi = None;
    if let Some(r) = &ip.range {
        let ty = col_type(n);
        if let Some((e, _)) = &r.lo {
            match range_bound_value(e, ty, env)? {
                None => return Ok(Some(Vec::new())),
                Some(Ok(v)) => lo_val = Some(v),
                Some(Err(())) => {}
            }
        }
        if let Some((e, inclusive)) = &r.hi {
            match range_bound_value(e, ty, env)? {
                None => return Ok(Some(Vec::new())),
                Some(Ok(v)) => hi = Some((v, *inclusive)),
                Some(Err(())) => {}
            }
        }
    }
    // Entries are the values followed by the row key, so they sort after
    // the bare values: an inclusive start at the values finds them all
    // (an exclusive lower bound is left to the filter).
    let mut start = prefix.clone();
    if let Some(v) = lo_val {
        start.push(v);
    }
    let lo = if start.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Included(start.into_boxed_slice())
    };
    let more = |k: &walden_engine::Key| {
        k.starts_with(&prefix)
            && hi.as_ref().is_none_or(|(h, inclusive)| match k.get(n) {
                Some(v) if v.is_null() => true,
                Some(v) => {
                    if *inclusive {
                        v <= h
                    } else {
                        v < h
                    }
                }
                None => false,
            })
    };
    Ok(env.tx.index_scan(table, ip.index, lo, more)?)
}

/// Bounds on key column `col` from comparisons and BETWEEN in `filter`.
pub(super) fn choose_range(col: usize, filter: &[Expr]) -> Option<Box<KeyRange>> {
    let mut r = KeyRange::default();
    // Keeps the first bound found on each side; any one is a valid superset.
    let mut set = |lo: bool, e: &Expr, inclusive: bool| {
        let slot = if lo { &mut r.lo } else { &mut r.hi };
        if slot.is_none() {
            if let Some(c) = clone_const(e) {
                *slot = Some((c, inclusive));
            }
        }
    };
    for f in filter {
        match f {
            Expr::Bin(op @ (BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq), a, b) => {
                // `col op e` or `e op col` (mirrored).
                let (e, op) = match (a.as_ref(), b.as_ref()) {
                    (Expr::Col(i), e) if *i == col && !e.uses_row() => (e, *op),
                    (e, Expr::Col(i)) if *i == col && !e.uses_row() => (
                        e,
                        match op {
                            BinOp::Lt => BinOp::Gt,
                            BinOp::LtEq => BinOp::GtEq,
                            BinOp::Gt => BinOp::Lt,
                            _ => BinOp::LtEq,
                        },
                    ),
                    _ => continue,
                };
                match op {
                    BinOp::Gt => set(true, e, false),
                    BinOp::GtEq => set(true, e, true),
                    BinOp::Lt => set(false, e, false),
                    _ => set(false, e, true),
                }
            }
            Expr::Between(x, lo, hi, false)
                if matches!(x.as_ref(), Expr::Col(i) if *i == col)
                    && !lo.uses_row()
                    && !hi.uses_row() =>
            {
                set(true, lo, true);
                set(false, hi, true);
            }
            _ => {}
        }
    }
    (r.lo.is_some() || r.hi.is_some()).then(|| Box::new(r))
}

/// The scan bounds of `range` on `table`. Only what is certain narrows the
/// scan: a value that does not convert exactly to its key column's type
/// (`id > 2.5` on an integer) narrows nothing from there on; a NULL one
/// gives an empty range (nothing equals or compares with NULL); a bound
/// on a column followed by more key columns takes in every key under it.
pub(crate) fn key_bounds(
    table: &Table,
    range: Option<&KeyRange>,
    env: &Env<'_>,
) -> Result<(
    std::ops::Bound<walden_engine::Key>,
    std::ops::Bound<walden_engine::Key>,
)> {
    use std::ops::Bound;
    let empty = || {
        Ok((
            Bound::Included(Box::new([]) as Key),
            Bound::Excluded(Box::new([]) as Key),
        ))
    };
    type Key = walden_engine::Key;
    let Some(r) = range else {
        return Ok((Bound::Unbounded, Bound::Unbounded));
    };
    let pk = &table.def.primary_key;
    let ty = |k: usize| &table.def.columns[pk[k]].data_type;
    let mut prefix = Vec::with_capacity(r.prefix.len() + 2);
    let mut exact = true;
    for (k, e) in r.prefix.iter().enumerate() {
        match bound_value(e, ty(k), env)? {
            None => return empty(),
            Some(Ok(v)) => prefix.push(v),
            Some(Err(())) => {
                exact = false;
                break;
            }
        }
    }
    let n = prefix.len();
    let with = |extra: &[Value]| -> Key {
        let mut k = prefix.clone();
        k.extend_from_slice(extra);
        k.into_boxed_slice()
    };
    // Bounds apply to column `n` only when every equality before it did.
    let bound = |b: &Option<(Expr, bool)>| -> Result<Option<Option<(Value, bool)>>> {
        match b {
            Some((e, inc)) if exact && n < pk.len() => {
                Ok(match range_bound_value(e, ty(n), env)? {
                    None => None,
                    Some(Ok(v)) => Some(Some((v, *inc))),
                    Some(Err(())) => Some(None),
                })
            }
            _ => Ok(Some(None)),
        }
    };
    let (Some(lo), Some(hi)) = (bound(&r.lo)?, bound(&r.hi)?) else {
        return empty();
    };
    // Whether column `n` is the key's last: a bound on it is exact.
    let last = n + 1 == pk.len();
    let above = super::walk::above;
    let lo = match lo {
        Some((v, true)) => Bound::Included(with(&[v])),
        Some((v, false)) if last => Bound::Excluded(with(&[v])),
        Some((v, false)) => Bound::Excluded(with(&[v, above()])),
        None if n == 0 => Bound::Unbounded,
        None => Bound::Included(with(&[])),
    };
    let hi = match hi {
        Some((v, false)) => Bound::Excluded(with(&[v])),
        Some((v, true)) if last => Bound::Included(with(&[v])),
        Some((v, true)) => Bound::Included(with(&[v, above()])),
        None if n == 0 => Bound::Unbounded,
        None => Bound::Included(with(&[above()])),
    };
    // An empty or inverted range would make BTreeMap::range panic.
    let inverted = match (&lo, &hi) {
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a > b
                || (a == b
                    && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
        }
        _ => false,
    };
    if inverted {
        return empty();
    }
    Ok((lo, hi))
}

/// A copy of a row-independent expression (literals, parameters, casts of them).
pub(super) fn clone_const(e: &Expr) -> Option<Expr> {
    Some(match e {
        Expr::Lit(v) => Expr::Lit(v.clone()),
        Expr::Param(i) => Expr::Param(*i),
        Expr::Outer(d, i) => Expr::Outer(*d, *i),
        Expr::Neg(x) => Expr::Neg(Box::new(clone_const(x)?)),
        Expr::Cast(x, t) => Expr::Cast(Box::new(clone_const(x)?), t.clone()),
        Expr::Bin(op, a, b) => Expr::Bin(*op, Box::new(clone_const(a)?), Box::new(clone_const(b)?)),
        _ => return None,
    })
}

/// Whether a plan can run again for a later execution of the same statement:
/// it reads only tables (no system views, table functions or derived tables,
/// whose plans are not worth keeping) and holds no subquery, whose rows are
/// cached in the plan for one statement.
pub(crate) fn reusable(plan: &QueryPlan) -> bool {
    let body = match &plan.body {
        Body::Select(sel) => {
            let group_ok = sel.group.as_ref().is_none_or(|(keys, aggs)| {
                no_subquery(keys)
                    && no_subquery(aggs.iter().flat_map(|a| {
                        a.arg
                            .iter()
                            .chain(a.separator.iter())
                            .chain(a.filter.iter())
                            .chain(a.direct.iter())
                            .chain(a.order.iter().map(|(e, _, _)| e))
                    }))
            });
            source_reusable(&sel.from)
                && no_subquery(&sel.filter)
                && no_subquery(&sel.projection)
                && no_subquery(&sel.having)
                && sel.distinct_on.as_ref().is_none_or(|keys| {
                    keys.iter().all(|k| match k {
                        SortKey::Output(_) => true,
                        SortKey::Input(e) => !e.has_subquery(),
                    })
                })
                && sel.window.as_ref().is_none_or(|w| no_subquery(w.exprs()))
                && sel
                    .srf
                    .as_ref()
                    .is_none_or(|s| no_subquery(s.calls.iter().flat_map(|c| c.args.iter())))
                && group_ok
        }
        Body::SetOp { left, right, .. } => reusable(left) && reusable(right),
        Body::Values(rows) => no_subquery(rows.iter().flatten()),
        Body::Recursive { .. } | Body::WorkTable(_) => false,
    };
    let order_ok = plan.order.iter().all(|(k, _, _)| match k {
        SortKey::Output(_) => true,
        SortKey::Input(e) => !e.has_subquery(),
    });
    body && order_ok && no_subquery(plan.limit.iter().chain(plan.offset.iter()))
}

/// The expressions an index search (or union of them) evaluates.
pub(crate) fn index_exprs(ip: &IndexPath) -> Vec<&Expr> {
    fn range_exprs(r: &KeyRange) -> impl Iterator<Item = &Expr> {
        r.exprs()
    }
    fn search_exprs(s: &IndexSearch) -> impl Iterator<Item = &Expr> {
        s.eq.iter()
            .chain(s.range.iter().flat_map(|r| range_exprs(r)))
    }
    match ip {
        IndexPath::Search(s) => search_exprs(s).collect(),
        IndexPath::Any { array, rest, .. } => std::iter::once(array).chain(rest).collect(),
        IndexPath::Union(probes) => probes
            .iter()
            .flat_map(|p| -> Box<dyn Iterator<Item = &Expr> + '_> {
                match p {
                    Probe::Key(k) => Box::new(k.iter()),
                    Probe::Range(r) => Box::new(range_exprs(r)),
                    Probe::Index(s) => Box::new(search_exprs(s)),
                }
            })
            .collect(),
    }
}

pub(super) fn no_subquery<'a>(es: impl IntoIterator<Item = &'a Expr>) -> bool {
    es.into_iter().all(|e| !e.has_subquery())
}

pub(super) fn source_reusable(s: &Source) -> bool {
    match s {
        Source::Single => true,
        Source::Table {
            lookup,
            range,
            index,
            filter,
            ..
        } => {
            no_subquery(lookup.iter().flatten())
                && range.as_deref().is_none_or(|r| no_subquery(r.exprs()))
                && index
                    .as_deref()
                    .is_none_or(|ip| no_subquery(index_exprs(ip)))
                && no_subquery(filter)
        }
        Source::Join {
            left,
            right,
            keys,
            on,
            ..
        } => {
            source_reusable(left)
                && source_reusable(right)
                && keys
                    .iter()
                    .all(|(a, b)| !a.has_subquery() && !b.has_subquery())
                && no_subquery(on)
        }
        Source::Derived { .. }
        | Source::SysView { .. }
        | Source::Srf { .. }
        | Source::Unnest { .. }
        | Source::Ordinality { .. }
        | Source::Ancestors { .. }
        | Source::JsonRows { .. } => false,
    }
}
