//! Executing a plan over a transaction: sources, joins, sorting, set
//! operations and grouping.

use super::*;

pub(super) fn check_cancel(env: &Env<'_>) -> Result<()> {
    if env.cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(SqlError::new(
            ErrorKind::Cancelled,
            "canceling statement due to user request",
        ));
    }
    Ok(())
}

/// The primary key a point lookup names, each part in its column's type (a
/// text parameter against an integer key).
pub(crate) fn lookup_key(table: &Table, key: &[Expr], env: &Env<'_>) -> Result<Vec<Value>> {
    key.iter()
        .zip(&table.def.primary_key)
        .map(|(e, &col)| {
            let v = e.eval(&[], env)?;
            Ok(
                walden_engine::types::coerce(v.clone(), &table.def.columns[col].data_type)
                    .unwrap_or(v),
            )
        })
        .collect()
}

/// Whether a row satisfies every filter (NULL counts as false).
pub(crate) fn passes(filters: &[Expr], row: &[Value], env: &Env<'_>) -> Result<bool> {
    for f in filters {
        if truth(&f.eval(row, env)?)? != Some(true) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Why a table's scan ended before the end of its rows: the caller had all
/// it needed, or an error.
pub(crate) enum Halt {
    Enough,
    Failed(SqlError),
}

impl From<walden_engine::EngineError> for Halt {
    fn from(e: walden_engine::EngineError) -> Halt {
        Halt::Failed(e.into())
    }
}

/// Calls `f` with each row of `s` that passes its filters, until `f`
/// returns false (it has all it needs). A table's rows stream from its scan
/// or search; other sources are produced whole first.
pub(super) fn each_source_row(
    s: &Source,
    env: &Env<'_>,
    f: &mut dyn FnMut(&[Value]) -> Result<bool>,
) -> Result<()> {
    let Source::Table {
        table,
        lookup,
        range,
        index,
        filter,
    } = s
    else {
        for r in run_source(s, env)? {
            if !f(&r)? {
                break;
            }
        }
        return Ok(());
    };
    check_cancel(env)?;
    // Rows given to `f`, for EXPLAIN ANALYZE.
    let mut given = 0usize;
    let f = &mut |r: &[Value]| -> Result<bool> {
        given += 1;
        f(r)
    };
    let tx = env.tx;
    // ACCESS SHARE, to the end of the transaction: DDL on the table
    // waits for this transaction, and this read for uncommitted DDL.
    tx.lock_table(
        table,
        walden_engine::TableLockMode::AccessShare,
        walden_engine::WaitPolicy::Wait,
    )?;
    if let Some(key) = lookup {
        let k = lookup_key(table, key, env)?;
        if let Some(r) = tx.get_in(table, &k)? {
            if passes(filter, &r, env)? {
                f(&r)?;
            }
        }
        explain::measure::ran(s, explain::measure::Part::Source, given);
        return Ok(());
    }
    let found = match index {
        Some(ip) => index_rows(table, ip, env)?,
        None => None,
    };
    let mut i = 0usize;
    let mut visit = |r: &[Value]| -> std::result::Result<(), Halt> {
        if i.is_multiple_of(4096) {
            check_cancel(env).map_err(Halt::Failed)?;
        }
        i += 1;
        if passes(filter, r, env).map_err(Halt::Failed)? && !f(r).map_err(Halt::Failed)? {
            return Err(Halt::Enough);
        }
        Ok(())
    };
    let visited = match found {
        Some(rows) => rows.iter().try_for_each(|(_, r)| visit(r)),
        None => tx.scan_each(table, key_bounds(table, range.as_deref(), env)?, visit),
    };
    match visited {
        Ok(()) | Err(Halt::Enough) => {
            explain::measure::ran(s, explain::measure::Part::Source, given);
            Ok(())
        }
        Err(Halt::Failed(e)) => Err(e),
    }
}

pub(super) fn run_source(s: &Source, env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
    let rows = run_source_once(s, env)?;
    // A table's rows were counted as its scan gave them.
    if !matches!(s, Source::Table { .. }) {
        explain::measure::ran(s, explain::measure::Part::Source, rows.len());
    }
    Ok(rows)
}

fn run_source_once(s: &Source, env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
    check_cancel(env)?;
    Ok(match s {
        Source::Single => vec![vec![]],
        Source::Table { .. } => {
            let mut out = Vec::new();
            each_source_row(s, env, &mut |r| {
                env.info.mem.charge_row(r.len())?;
                out.push(r.to_vec());
                Ok(true)
            })?;
            out
        }
        Source::Derived {
            plan,
            filter,
            shared,
            ..
        } => {
            // Read more than once (the planner's `ctes` entry is gone by
            // now, so each reference holds one count): made once.
            let rows = if *shared && Arc::strong_count(plan) > 1 {
                let key = Arc::as_ptr(plan) as usize;
                let rows = match env.info.mem.shared_rows(key) {
                    Some(rows) => rows,
                    None => env
                        .info
                        .mem
                        .keep_shared_rows(key, execute_plan(plan, env, None)?),
                };
                rows.as_ref().clone()
            } else {
                execute_plan(plan, env, None)?
            };
            let mut out = Vec::new();
            for r in rows {
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::SysView { view, args, filter } => {
            let a = args
                .iter()
                .map(|e| e.eval(&[], env))
                .collect::<Result<Vec<_>>>()?;
            let rows = view.rows(&a, env)?;
            let mut out = Vec::new();
            for r in rows {
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::JsonRows { func, arg, filter } => {
            let mut out = Vec::new();
            for r in func.rows(&arg.eval(&[], env)?)? {
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::Ancestors { rel, filter } => {
            let rel = match rel.eval(&[], env)? {
                Value::Text(t) => env.info.system.regclass_oid(env, &t)?,
                other => other,
            };
            let r = vec![rel, Value::Int(1)];
            if !r[0].is_null() && passes(filter, &r, env)? {
                vec![r]
            } else {
                vec![]
            }
        }
        Source::Unnest { arrays, filter } => {
            let mut columns = Vec::with_capacity(arrays.len());
            for a in arrays {
                columns.push(crate::functions::arrays::elements(&a.eval(&[], env)?));
            }
            let n = columns.iter().map(Vec::len).max().unwrap_or(0);
            let mut out = Vec::new();
            for i in 0..n {
                let r: Vec<Value> = columns
                    .iter()
                    .map(|c| c.get(i).cloned().unwrap_or(Value::Null))
                    .collect();
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::Ordinality { inner, filter } => {
            let mut out = Vec::new();
            for (i, mut r) in run_source(inner, env)?.into_iter().enumerate() {
                r.push(Value::Int(i as i64 + 1));
                if passes(filter, &r, env)? {
                    out.push(r);
                }
            }
            out
        }
        Source::Srf {
            func,
            args,
            ty,
            filter,
            ..
        } => {
            let args = args
                .iter()
                .map(|e| e.eval(&[], env))
                .collect::<Result<Vec<_>>>()?;
            let mut out = Vec::new();
            srf::run(*func, &args, ty, env, &mut |r| {
                if passes(filter, &r, env)? {
                    env.info.mem.charge_row(r.len())?;
                    out.push(r);
                }
                Ok(true)
            })?;
            out
        }
        Source::Join {
            left,
            right,
            kind,
            keys,
            on,
            right_width,
            probe,
            lateral,
        } => {
            let l = run_source(left, env)?;
            if let Some(lat) = lateral {
                return super::lateral::lateral_rows(l, right, lat, kind, on, *right_width, env);
            }
            if let (Some(pr), Source::Table { table, .. }) = (probe, right.as_ref()) {
                let searched = super::probe::worth_it(l.len(), table);
                explain::measure::note(s, explain::measure::Part::Source, |c| {
                    if searched {
                        c.searched += 1
                    } else {
                        c.hashed += 1
                    }
                });
                if searched {
                    return super::probe::probe_join(
                        l,
                        right,
                        pr,
                        *right_width,
                        kind,
                        keys,
                        on,
                        env,
                    );
                }
            }
            let r = run_source(right, env)?;
            let lw = source_width(left);
            join_rows(l, r, lw, *right_width, kind, keys, on, env)?
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn join_rows(
    l: Vec<Vec<Value>>,
    r: Vec<Vec<Value>>,
    lw: usize,
    rw: usize,
    kind: &JoinKind,
    keys: &[(Expr, Expr)],
    on: &[Expr],
    env: &Env<'_>,
) -> Result<Vec<Vec<Value>>> {
    let mut out = Vec::new();
    let mut right_matched = vec![false; r.len()];
    let combine = |a: &[Value], b: &[Value]| {
        let mut row = Vec::with_capacity(a.len() + b.len());
        row.extend_from_slice(a);
        row.extend_from_slice(b);
        row
    };
    if !keys.is_empty() {
        let mut index: HashMap<Vec<Value>, Vec<usize>> = HashMap::new();
        for (i, row) in r.iter().enumerate() {
            let k = keys
                .iter()
                .map(|(_, re)| re.eval(row, env))
                .collect::<Result<Vec<_>>>()?;
            if k.iter().any(|v| v.is_null()) {
                continue;
            }
            index.entry(normalize_key(k)).or_default().push(i);
        }
        for (n, lrow) in l.iter().enumerate() {
            if n % 4096 == 0 {
                check_cancel(env)?;
            }
            let k = keys
                .iter()
                .map(|(le, _)| le.eval(lrow, env))
                .collect::<Result<Vec<_>>>()?;
            let mut matched = false;
            if !k.iter().any(|v| v.is_null()) {
                if let Some(hits) = index.get(&normalize_key(k)) {
                    for &i in hits {
                        let row = combine(lrow, &r[i]);
                        if passes(on, &row, env)? {
                            matched = true;
                            right_matched[i] = true;
                            env.info.mem.charge_row(row.len())?;
                            out.push(row);
                        }
                    }
                }
            }
            if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                env.info.mem.charge_row(lw + rw)?;
                out.push(combine(lrow, &vec![Value::Null; rw]));
            }
        }
    } else {
        for (n, lrow) in l.iter().enumerate() {
            if n % 256 == 0 {
                check_cancel(env)?;
            }
            let mut matched = false;
            for (i, rrow) in r.iter().enumerate() {
                let row = combine(lrow, rrow);
                if passes(on, &row, env)? {
                    matched = true;
                    right_matched[i] = true;
                    env.info.mem.charge_row(row.len())?;
                    out.push(row);
                }
            }
            if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                env.info.mem.charge_row(lw + rw)?;
                out.push(combine(lrow, &vec![Value::Null; rw]));
            }
        }
    }
    if matches!(kind, JoinKind::Right | JoinKind::Full) {
        for (i, rrow) in r.iter().enumerate() {
            if !right_matched[i] {
                out.push(combine(&vec![Value::Null; lw], rrow));
            }
        }
    }
    Ok(out)
}

/// Keys of a hash join compare numbers by value (1 = 1.0).
pub(crate) fn normalize_key(k: Vec<Value>) -> Vec<Value> {
    k.into_iter()
        .map(|v| match v {
            Value::Decimal(d) if d.is_integral() => d
                .to_integer(i64::MIN, i64::MAX, "bigint")
                .map(Value::Int)
                .unwrap_or(Value::Decimal(d)),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::Int(f as i64),
            other => other,
        })
        .collect()
}

pub(crate) fn sort_rows(rows: &mut [(Vec<Value>, Vec<Value>)], order: &[(SortKey, bool, bool)]) {
    let dirs: Vec<(bool, bool)> = order.iter().map(|(_, d, n)| (*d, *n)).collect();
    rows.sort_by(|a, b| compare_keys(&a.1, &b.1, &dirs));
}

/// Orders two sort keys column by column, each (descending, nulls first).
pub(super) fn compare_keys(a: &[Value], b: &[Value], dirs: &[(bool, bool)]) -> Ordering {
    {
        for (i, (desc, nulls_first)) in dirs.iter().enumerate() {
            let (x, y) = (&a[i], &b[i]);
            let o = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) => {
                    if *nulls_first {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    }
                }
                (false, true) => {
                    if *nulls_first {
                        Ordering::Greater
                    } else {
                        Ordering::Less
                    }
                }
                _ => {
                    let o = compare(x, y).ok().flatten().unwrap_or(Ordering::Equal);
                    if *desc {
                        o.reverse()
                    } else {
                        o
                    }
                }
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }
}

pub(crate) fn eval_count(e: &Option<Expr>, env: &Env<'_>) -> Result<Option<usize>> {
    match e {
        None => Ok(None),
        Some(e) => match e.eval(&[], env)? {
            Value::Null => Ok(None),
            v => {
                let n = crate::functions::cast(v, &DataType::BigInt)?
                    .as_i64()
                    .unwrap_or(0);
                if n < 0 {
                    return Err(SqlError::new(
                        ErrorKind::InvalidParameter,
                        "LIMIT/OFFSET must not be negative",
                    ));
                }
                Ok(Some(n as usize))
            }
        },
    }
}

/// Runs a plan; `limit_hint` stops early when only a few rows are needed
/// (EXISTS, scalar subqueries).
pub fn execute_plan(
    plan: &QueryPlan,
    env: &Env<'_>,
    limit_hint: Option<usize>,
) -> Result<Vec<Vec<Value>>> {
    let rows = execute_plan_once(plan, env, limit_hint)?;
    explain::measure::ran(plan, explain::measure::Part::Query, rows.len());
    Ok(rows)
}

fn execute_plan_once(
    plan: &QueryPlan,
    env: &Env<'_>,
    limit_hint: Option<usize>,
) -> Result<Vec<Vec<Value>>> {
    let mode = plan.limit_mode;
    let limit = match eval_count(&plan.limit, env)? {
        None if mode.with_ties && plan.limit.is_some() => {
            return Err(SqlError::new(
                ErrorKind::InvalidRowCount,
                "row count cannot be null in FETCH FIRST ... WITH TIES clause",
            ))
        }
        n => n,
    };
    let offset = eval_count(&plan.offset, env)?.unwrap_or(0);
    // Ties and percentages are known only once every row is sorted.
    let (limit, limit_hint) = if mode.is_plain() {
        (limit, limit_hint)
    } else {
        (None, None)
    };
    let cap = match (limit, limit_hint) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if let Body::Select(sel) = &plan.body {
        if let Some(w) = &sel.walk {
            let walked = super::walk::run_walk(sel, w, env, cap, offset)?;
            explain::measure::note(w.as_ref(), explain::measure::Part::Source, |c| {
                if walked.is_some() {
                    c.walked += 1
                } else {
                    c.sorted += 1
                }
            });
            if let Some(rows) = walked {
                return Ok(rows);
            }
        }
    }
    let mut rows: Vec<(Vec<Value>, Vec<Value>)> = match &plan.body {
        Body::Select(sel) => {
            run_select(sel, &plan.order, env, cap.map(|c| c.saturating_add(offset)))?
        }
        Body::Values(rows) => rows
            .iter()
            .map(|r| {
                Ok((
                    r.iter()
                        .map(|e| e.eval(&[], env))
                        .collect::<Result<Vec<_>>>()?,
                    vec![],
                ))
            })
            .collect::<Result<Vec<_>>>()?,
        Body::SetOp {
            left,
            right,
            op,
            all,
            casts,
        } => {
            let l = cast_rows(execute_plan(left, env, None)?, &casts[0], env)?;
            let r = cast_rows(execute_plan(right, env, None)?, &casts[1], env)?;
            set_op(l, r, *op, *all)?
                .into_iter()
                .map(|r| (r, vec![]))
                .collect()
        }
        Body::Recursive {
            anchor,
            step,
            step_casts,
            all,
            work,
        } => super::recursive::run_recursive(anchor, step, step_casts, *all, work, env)?
            .into_iter()
            .map(|r| (r, vec![]))
            .collect(),
        Body::WorkTable(work) => work.lock().iter().map(|r| (r.clone(), vec![])).collect(),
    };
    if !plan.order.is_empty() {
        if !matches!(plan.body, Body::Select(_)) {
            for (out, keys) in rows.iter_mut() {
                *keys = plan
                    .order
                    .iter()
                    .map(|(k, _, _)| match k {
                        SortKey::Output(i) => out[*i].clone(),
                        SortKey::Input(_) => Value::Null,
                    })
                    .collect();
            }
        }
        sort_rows(&mut rows, &plan.order);
    }
    if !mode.is_plain() {
        let count = eval_count(&plan.limit, env)?;
        return Ok(take_counted(rows, &plan.order, count, offset, mode));
    }
    let mut out: Vec<Vec<Value>> = rows.into_iter().skip(offset).map(|(r, _)| r).collect();
    if let Some(n) = cap {
        out.truncate(n);
    }
    Ok(out)
}

/// The rows a WITH TIES or PERCENT count keeps, of `rows` sorted by
/// `order`: after `offset`, `count` rows (or `count` percent of them,
/// rounded up), then every row sorting equal to the last one kept.
fn take_counted(
    rows: Vec<(Vec<Value>, Vec<Value>)>,
    order: &[(SortKey, bool, bool)],
    count: Option<usize>,
    offset: usize,
    mode: LimitMode,
) -> Vec<Vec<Value>> {
    let rest: Vec<_> = rows.into_iter().skip(offset).collect();
    let mut n = match count {
        None => rest.len(),
        Some(c) if mode.percent => (c.min(100) * rest.len()).div_ceil(100),
        Some(c) => c,
    }
    .min(rest.len());
    if mode.with_ties && n > 0 {
        let dirs: Vec<(bool, bool)> = order.iter().map(|(_, d, nf)| (*d, *nf)).collect();
        let last = &rest[n - 1].1;
        while n < rest.len() && compare_keys(last, &rest[n].1, &dirs) == Ordering::Equal {
            n += 1;
        }
    }
    rest.into_iter().take(n).map(|(r, _)| r).collect()
}

/// A set operation's branch rows with the columns `casts` names cast to
/// the operation's common type.
pub(super) fn cast_rows(
    mut rows: Vec<Vec<Value>>,
    casts: &[Option<ColumnCast>],
    env: &Env<'_>,
) -> Result<Vec<Vec<Value>>> {
    if casts.iter().all(Option::is_none) {
        return Ok(rows);
    }
    for row in &mut rows {
        for (v, t) in row.iter_mut().zip(casts) {
            let v0 = std::mem::replace(v, Value::Null);
            let Some(c) = t else {
                *v = v0;
                continue;
            };
            let v0 = match v0 {
                Value::Text(s) if c.unpad => Value::text(s.trim_end_matches(' ')),
                v0 => v0,
            };
            *v = match &c.to {
                DataType::Reg(k) => crate::expr::reg_at_run_time(v0, *k, env)?,
                to => crate::functions::cast(v0, to)?,
            };
        }
    }
    Ok(rows)
}

pub(super) fn set_op(
    l: Vec<Vec<Value>>,
    r: Vec<Vec<Value>>,
    op: ast::SetOperator,
    all: bool,
) -> Result<Vec<Vec<Value>>> {
    let norm = |row: &Vec<Value>| normalize_key(row.clone());
    Ok(match op {
        ast::SetOperator::Union => {
            let mut out = l;
            out.extend(r);
            if !all {
                let mut seen = HashSet::new();
                out.retain(|row| seen.insert(norm(row)));
            }
            out
        }
        ast::SetOperator::Except | ast::SetOperator::Minus => {
            if all {
                let mut counts: HashMap<Vec<Value>, usize> = HashMap::new();
                for row in &r {
                    *counts.entry(norm(row)).or_default() += 1;
                }
                l.into_iter()
                    .filter(|row| match counts.get_mut(&norm(row)) {
                        Some(c) if *c > 0 => {
                            *c -= 1;
                            false
                        }
                        _ => true,
                    })
                    .collect()
            } else {
                let rs: HashSet<Vec<Value>> = r.iter().map(norm).collect();
                let mut seen = HashSet::new();
                l.into_iter()
                    .filter(|row| !rs.contains(&norm(row)) && seen.insert(norm(row)))
                    .collect()
            }
        }
        ast::SetOperator::Intersect => {
            let mut counts: HashMap<Vec<Value>, usize> = HashMap::new();
            for row in &r {
                *counts.entry(norm(row)).or_default() += 1;
            }
            let mut seen = HashSet::new();
            l.into_iter()
                .filter(|row| match counts.get_mut(&norm(row)) {
                    Some(c) if *c > 0 => {
                        if all {
                            *c -= 1;
                            true
                        } else {
                            seen.insert(norm(row))
                        }
                    }
                    _ => false,
                })
                .collect()
        }
    })
}

/// A SELECT's rows, each projected with its sort keys; `keep`, when
/// known, is how many of them (in ORDER BY order) the result needs.
pub(super) fn run_select(
    sel: &SelectPlan,
    order: &[(SortKey, bool, bool)],
    env: &Env<'_>,
    keep: Option<usize>,
) -> Result<Vec<(Vec<Value>, Vec<Value>)>> {
    if sel.group.is_none()
        && sel.window.is_none()
        && sel.srf.is_none()
        && !sel.distinct
        && sel.distinct_on.is_none()
    {
        return super::stream::stream_select(sel, order, env, keep);
    }
    let mut rows;
    if let Some((keys, aggs)) = &sel.group {
        // The input streams through the aggregates: only the groups are
        // held, so `count(*)` over a table larger than the statement's
        // memory limit works.
        let mut g = Grouper::new(keys, sel.grouping_sets.as_deref(), aggs, env)?;
        each_source_row(&sel.from, env, &mut |r| {
            if passes(&sel.filter, r, env)? {
                g.add(r)?;
            }
            Ok(true)
        })?;
        rows = g.finish()?;
        if let Some(h) = &sel.having {
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                if truth(&h.eval(&r, env)?)? == Some(true) {
                    kept.push(r);
                }
            }
            rows = kept;
        }
        explain::measure::ran(sel, explain::measure::Part::Groups, rows.len());
    } else {
        rows = run_source(&sel.from, env)?;
        if !sel.filter.is_empty() {
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                if passes(&sel.filter, &r, env)? {
                    kept.push(r);
                }
            }
            rows = kept;
        }
    }
    if let Some(w) = &sel.window {
        window::run_windows(w, &mut rows, env)?;
    }
    if let Some(ps) = &sel.srf {
        rows = ps.run(rows, env)?;
    }
    let mut out = Vec::with_capacity(rows.len());
    let mut on_keys = Vec::new();
    for r in &rows {
        let row = project(sel, order, r, env)?;
        if let Some(on) = &sel.distinct_on {
            on_keys.push(super::distinct_on::key_of(on, &row.0, r, env)?);
        }
        out.push(row);
    }
    if sel.distinct_on.is_some() {
        out = super::distinct_on::first_of_each(out, on_keys, order);
    }
    if sel.distinct {
        let mut seen = HashSet::new();
        out.retain(|(r, _)| seen.insert(normalize_key(r.clone())));
    }
    Ok(out)
}

/// A row's projection and its sort keys.
pub(super) fn project(
    sel: &SelectPlan,
    order: &[(SortKey, bool, bool)],
    r: &[Value],
    env: &Env<'_>,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let projected = sel
        .projection
        .iter()
        .map(|e| e.eval(r, env))
        .collect::<Result<Vec<_>>>()?;
    let keys = order
        .iter()
        .map(|(k, _, _)| match k {
            SortKey::Output(i) => Ok(projected[*i].clone()),
            SortKey::Input(e) => e.eval(r, env),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((projected, keys))
}
