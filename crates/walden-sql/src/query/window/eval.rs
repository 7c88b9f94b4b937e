//! Evaluating window calls over a SELECT's rows (after grouping and HAVING).
//!
//! Each distinct PARTITION BY + ORDER BY sorts the rows once; each call then
//! walks the partitions. Aggregates over frames that only grow (those that
//! start at UNBOUNDED PRECEDING, the default) add each row once; count, sum
//! and avg of exact numbers also take rows back out when the frame's start
//! moves, so sliding frames cost one addition and one removal per row. Other
//! aggregates recompute a frame when its start moves, as PostgreSQL does.

use super::frame::{Bounds, Part, Segs};
use super::*;
use crate::functions::binary;
use crate::query::exec::check_cancel;

/// Appends each call's value to every row, in call order.
pub fn run_windows(plan: &WindowPlan, rows: &mut [Vec<Value>], env: &Env<'_>) -> Result<()> {
    let n = rows.len();
    let bounds = plan
        .calls
        .iter()
        .map(|c| Bounds::new(&c.frame, env))
        .collect::<Result<Vec<_>>>()?;
    let mut results: Vec<Vec<Value>> = plan.calls.iter().map(|_| vec![Value::Null; n]).collect();
    for (si, sort) in plan.sorts.iter().enumerate() {
        let calls: Vec<usize> = (0..plan.calls.len())
            .filter(|&c| plan.calls[c].sort == si)
            .collect();
        if calls.is_empty() {
            continue;
        }
        let mut pkeys = Vec::with_capacity(n);
        let mut okeys = Vec::with_capacity(n);
        for (i, r) in rows.iter().enumerate() {
            if i % 4096 == 0 {
                check_cancel(env)?;
            }
            pkeys.push(
                sort.partition
                    .iter()
                    .map(|e| e.eval(r, env))
                    .collect::<Result<Vec<_>>>()?,
            );
            okeys.push(
                sort.order
                    .iter()
                    .map(|(e, _, _)| e.eval(r, env))
                    .collect::<Result<Vec<_>>>()?,
            );
        }
        let pdirs = vec![(false, false); sort.partition.len()];
        let odirs: Vec<(bool, bool)> = sort.order.iter().map(|(_, d, nf)| (*d, *nf)).collect();
        let mut idx: Vec<usize> = (0..n).collect();
        if !pdirs.is_empty() || !odirs.is_empty() {
            // Stable: rows equal in both keep their input order.
            idx.sort_by(|&a, &b| {
                compare_keys(&pkeys[a], &pkeys[b], &pdirs)
                    .then_with(|| compare_keys(&okeys[a], &okeys[b], &odirs))
            });
        }
        let (desc, nulls_first) = odirs.first().copied().unwrap_or((false, false));
        let mut s = 0;
        while s < n {
            check_cancel(env)?;
            let mut e = s + 1;
            while e < n && compare_keys(&pkeys[idx[s]], &pkeys[idx[e]], &pdirs) == Ordering::Equal {
                e += 1;
            }
            let prow = &idx[s..e];
            let part = Part::new(
                prow.iter().map(|&r| okeys[r].as_slice()).collect(),
                desc,
                nulls_first,
            );
            for &c in &calls {
                eval_call(
                    &plan.calls[c],
                    &bounds[c],
                    &part,
                    prow,
                    rows,
                    env,
                    &mut results[c],
                )?;
            }
            s = e;
        }
    }
    for (i, r) in rows.iter_mut().enumerate() {
        env.info.mem.charge_row(results.len())?;
        for res in results.iter_mut() {
            r.push(std::mem::take(&mut res[i]));
        }
    }
    Ok(())
}

fn eval_call(
    call: &WinCall,
    bounds: &Bounds,
    part: &Part<'_>,
    prow: &[usize],
    rows: &[Vec<Value>],
    env: &Env<'_>,
    out: &mut [Value],
) -> Result<()> {
    let n = part.n;
    let row = |pos: usize| rows[prow[pos]].as_slice();
    let arg_at = |a: usize, pos: usize| -> Result<Value> {
        match call.args.get(a) {
            Some(e) => e.eval(row(pos), env),
            None => Ok(Value::Null),
        }
    };
    let values = || (0..n).map(|pos| arg_at(0, pos)).collect::<Result<Vec<_>>>();
    match call.func {
        WinFunc::RowNumber => {
            for pos in 0..n {
                out[prow[pos]] = Value::Int(pos as i64 + 1);
            }
        }
        WinFunc::Rank => {
            for pos in 0..n {
                out[prow[pos]] = Value::Int(part.gstart[part.group_of[pos]] as i64 + 1);
            }
        }
        WinFunc::DenseRank => {
            for pos in 0..n {
                out[prow[pos]] = Value::Int(part.group_of[pos] as i64 + 1);
            }
        }
        WinFunc::PercentRank => {
            for pos in 0..n {
                let rank = part.gstart[part.group_of[pos]];
                out[prow[pos]] = Value::Float(if n <= 1 {
                    0.0
                } else {
                    rank as f64 / (n - 1) as f64
                });
            }
        }
        WinFunc::CumeDist => {
            for pos in 0..n {
                out[prow[pos]] = Value::Float(part.gend[part.group_of[pos]] as f64 / n as f64);
            }
        }
        WinFunc::Ntile => ntile(n, &arg_at, |pos, v| out[prow[pos]] = v)?,
        WinFunc::Lag | WinFunc::Lead => {
            let vals = values()?;
            for pos in 0..n {
                let off = match call.args.get(1) {
                    Some(e) => e.eval(row(pos), env)?,
                    None => Value::Int(1),
                };
                if off.is_null() {
                    out[prow[pos]] = Value::Null;
                    continue;
                }
                let off = crate::functions::cast(off, &DataType::BigInt)?
                    .as_i64()
                    .unwrap_or(0);
                let off = if call.func == WinFunc::Lag { -off } else { off };
                let target = (pos as i64).checked_add(off);
                out[prow[pos]] = match target {
                    Some(t) if t >= 0 && (t as usize) < n => vals[t as usize].clone(),
                    _ => arg_at(2, pos)?,
                };
            }
        }
        WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue => {
            let vals = values()?;
            for pos in 0..n {
                let segs = bounds.segments(part, pos)?;
                let at = match call.func {
                    WinFunc::FirstValue => segs.positions().next(),
                    WinFunc::LastValue => segs.positions().next_back(),
                    _ => {
                        let k = arg_at(1, pos)?;
                        if k.is_null() {
                            None
                        } else {
                            let k = crate::functions::cast(k, &DataType::BigInt)?
                                .as_i64()
                                .unwrap_or(0);
                            if k <= 0 {
                                return Err(SqlError::new(
                                    ErrorKind::InvalidNthValueArgument,
                                    "argument of nth_value must be greater than zero",
                                ));
                            }
                            usize::try_from(k - 1)
                                .ok()
                                .and_then(|k| segs.positions().nth(k))
                        }
                    }
                };
                out[prow[pos]] = at.map(|a| vals[a].clone()).unwrap_or(Value::Null);
            }
        }
        WinFunc::Agg(kind) => {
            let passes = |pos: usize| -> Result<bool> {
                match &call.filter {
                    Some(f) => Ok(truth(&f.eval(row(pos), env)?)? == Some(true)),
                    None => Ok(true),
                }
            };
            aggregate(call, kind, bounds, part, &arg_at, &passes, |pos, v| {
                out[prow[pos]] = v
            })?
        }
    }
    Ok(())
}

/// ntile(k): the partition cut into k buckets as even as they can be, the
/// larger ones first; k is read from the first row where it is not NULL.
fn ntile(
    n: usize,
    arg_at: &dyn Fn(usize, usize) -> Result<Value>,
    mut put: impl FnMut(usize, Value),
) -> Result<()> {
    // (bucket, rows in it so far, rows per bucket now, buckets still larger)
    let mut state: Option<(i64, usize, usize, usize)> = None;
    for pos in 0..n {
        if state.is_none() {
            let k = arg_at(0, pos)?;
            if k.is_null() {
                put(pos, Value::Null);
                continue;
            }
            let k = crate::functions::cast(k, &DataType::BigInt)?
                .as_i64()
                .unwrap_or(0);
            if k <= 0 {
                return Err(SqlError::new(
                    ErrorKind::InvalidNtileArgument,
                    "argument of ntile must be greater than zero",
                ));
            }
            let k = usize::try_from(k).unwrap_or(usize::MAX);
            let (per, extra) = if n / k == 0 {
                (1, 0)
            } else if !n.is_multiple_of(k) {
                (n / k + 1, n % k)
            } else {
                (n / k, 0)
            };
            state = Some((1, 0, per, extra));
        }
        let (bucket, seen, per, extra) = state.as_mut().expect("set above");
        *seen += 1;
        if *seen > *per {
            if *extra != 0 && *bucket as usize == *extra {
                *extra = 0;
                *per -= 1;
            }
            *bucket += 1;
            *seen = 1;
        }
        put(pos, Value::Int(*bucket));
    }
    Ok(())
}

/// count, sum and avg of exact numbers: a state rows can leave.
#[derive(Clone, Default)]
struct Removable {
    rows: i64,
    nonnull: i64,
    sum: Option<Value>,
    /// How many numerics in the frame have each scale: a sum shows the
    /// largest scale still in the frame (`1.5 + 0.125 - 0.125` is 1.5,
    /// as PostgreSQL recomputes it), not the largest it ever saw.
    scales: Vec<i64>,
}

fn plus(a: Value, b: &Value, add: bool) -> Result<Value> {
    if let (Value::Int(x), Value::Int(y)) = (&a, b) {
        let r = if add {
            x.checked_add(*y)
        } else {
            x.checked_sub(*y)
        };
        if let Some(r) = r {
            return Ok(Value::Int(r));
        }
    }
    binary(if add { BinOp::Add } else { BinOp::Sub }, a, b.clone())
}

impl Removable {
    fn step(&mut self, v: &Value, add: bool) -> Result<()> {
        let d = if add { 1 } else { -1 };
        self.rows += d;
        if v.is_null() {
            return Ok(());
        }
        self.nonnull += d;
        if let Value::Decimal(x) = v {
            let at = x.scale() as usize;
            if self.scales.len() <= at {
                self.scales.resize(at + 1, 0);
            }
            self.scales[at] += d;
        }
        self.sum = if self.nonnull == 0 {
            None
        } else {
            Some(match self.sum.take() {
                None => v.clone(),
                Some(s) => plus(s, v, add)?,
            })
        };
        Ok(())
    }

    fn value(&self, kind: AggKind, all_int: bool) -> Result<Value> {
        let sum = self.sum.clone().map(|s| match s {
            // A sum of integers that left i64 and came back is an integer
            // again, as recomputing it would give.
            Value::Decimal(d) if all_int && d.is_finite() => d
                .to_integer(i64::MIN, i64::MAX, "bigint")
                .map(Value::Int)
                .unwrap_or(Value::Decimal(d)),
            // Down to the frame's largest scale: the digits dropped are
            // zeros (the sum is exact), so nothing rounds.
            Value::Decimal(d) => {
                let top = self.scales.iter().rposition(|n| *n > 0).unwrap_or(0) as i64;
                if d.is_finite() && d.scale() > top {
                    Value::Decimal(d.round_at(top))
                } else {
                    Value::Decimal(d)
                }
            }
            other => other,
        });
        Ok(match kind {
            AggKind::CountStar => Value::Int(self.rows),
            AggKind::Count => Value::Int(self.nonnull),
            AggKind::Sum => sum.unwrap_or(Value::Null),
            _ => Acc::Avg(sum, self.nonnull).finish(AggKind::Avg)?,
        })
    }
}

enum State {
    Plain(Acc),
    Removable(Removable),
}

#[allow(clippy::too_many_arguments)]
fn aggregate(
    call: &WinCall,
    kind: AggKind,
    bounds: &Bounds,
    part: &Part<'_>,
    arg_at: &dyn Fn(usize, usize) -> Result<Value>,
    passes: &dyn Fn(usize) -> Result<bool>,
    mut put: impl FnMut(usize, Value),
) -> Result<()> {
    let n = part.n;
    // Each row's input: (passes FILTER, argument, second argument).
    let mut input = Vec::with_capacity(n);
    for pos in 0..n {
        let pass = call.filter.is_none() || passes(pos)?;
        input.push((pass, arg_at(0, pos)?, arg_at(1, pos)?));
    }
    // NaN and ±Infinity cannot leave a running sum (Infinity - Infinity
    // is NaN): frames holding them are recomputed.
    let exact = |v: &Value| match v {
        Value::Null | Value::Int(_) => true,
        Value::Decimal(d) => d.is_finite(),
        _ => false,
    };
    let removable = matches!(
        kind,
        AggKind::Count | AggKind::CountStar | AggKind::Sum | AggKind::Avg
    ) && input.iter().all(|(p, v, _)| !p || exact(v));
    let all_int = input
        .iter()
        .all(|(p, v, _)| !p || matches!(v, Value::Null | Value::Int(_)));
    let step = |st: &mut State, pos: usize, add: bool| -> Result<()> {
        let (pass, v, second) = &input[pos];
        if !pass {
            return Ok(());
        }
        match st {
            State::Plain(acc) => acc.add(kind, v.clone(), second),
            State::Removable(r) => r.step(v, add),
        }
    };
    let value = |st: &State| -> Result<Value> {
        match st {
            State::Plain(acc) => acc.clone().finish(kind),
            State::Removable(r) => r.value(kind, all_int),
        }
    };
    let fresh = || {
        if removable {
            State::Removable(Removable::default())
        } else {
            State::Plain(Acc::new(kind))
        }
    };
    // The state over the run [s, e) of the previous row, when one run.
    let mut running: Option<(State, usize, usize)> = None;
    let mut prev: Option<(Segs, Value)> = None;
    for pos in 0..n {
        let segs = bounds.segments(part, pos)?;
        if let Some((ps, v)) = &prev {
            if *ps == segs {
                put(pos, v.clone());
                continue;
            }
        }
        let v = match segs.single() {
            Some((s, e)) => {
                let reuse = matches!(&running, Some((st, rs, re))
                    if *re <= e && (*rs == s || (*rs <= s && matches!(st, State::Removable(_)))));
                if !reuse {
                    running = Some((fresh(), s, s));
                }
                let (st, rs, re) = running.as_mut().expect("set above");
                for q in *re..e {
                    step(st, q, true)?;
                }
                for q in *rs..s {
                    step(st, q, false)?;
                }
                (*rs, *re) = (s, e);
                value(st)?
            }
            None => {
                let mut st = State::Plain(Acc::new(kind));
                for q in segs.positions() {
                    step(&mut st, q, true)?;
                }
                value(&st)?
            }
        };
        put(pos, v.clone());
        prev = Some((segs, v));
    }
    Ok(())
}
