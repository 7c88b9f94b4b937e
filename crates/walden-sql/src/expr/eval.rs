//! Evaluating compiled expressions against a row, subqueries included.

use super::*;

impl Expr {
    /// Evaluates against `row`.
    pub fn eval(&self, row: &[Value], env: &Env<'_>) -> Result<Value> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Param(i) => env.params.get(*i).cloned().ok_or_else(|| {
                SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("there is no parameter ${}", i + 1),
                )
            })?,
            Expr::Col(i) => row[*i].clone(),
            Expr::Outer(d, i) => env
                .outer
                .get(d - 1)
                .and_then(|r| r.get(*i))
                .cloned()
                .ok_or_else(|| SqlError::internal("outer reference out of range"))?,
            Expr::Not(x) => match truth(&x.eval(row, env)?)? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Expr::Neg(x) => match x.eval(row, env)? {
                Value::Null => Value::Null,
                Value::Int(i) => Value::Int(i.checked_neg().ok_or_else(overflow)?),
                Value::Float(f) => Value::Float(-f),
                // numeric has no negative zero (`Numeric` makes none).
                Value::Decimal(d) => Value::Decimal(-d),
                Value::Interval(i) => Value::Interval(i.checked_neg().ok_or_else(|| {
                    SqlError::new(ErrorKind::DatetimeOverflow, "interval out of range")
                })?),
                v => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedFunction,
                        format!("operator does not exist: - {v}"),
                    ))
                }
            },
            Expr::Bin(BinOp::And, a, b) => {
                let l = truth(&a.eval(row, env)?)?;
                if l == Some(false) {
                    return Ok(Value::Bool(false));
                }
                let r = truth(&b.eval(row, env)?)?;
                match (l, r) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                }
            }
            Expr::Bin(BinOp::Or, a, b) => {
                let l = truth(&a.eval(row, env)?)?;
                if l == Some(true) {
                    return Ok(Value::Bool(true));
                }
                let r = truth(&b.eval(row, env)?)?;
                match (l, r) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            Expr::Bin(op, a, b) => binary(*op, a.eval(row, env)?, b.eval(row, env)?)?,
            Expr::IsNull(x, neg) => Value::Bool(x.eval(row, env)?.is_null() != *neg),
            Expr::IsBool(x, want, neg) => {
                let v = truth(&x.eval(row, env)?)?;
                Value::Bool((v == Some(*want)) != *neg)
            }
            Expr::InList(x, items, neg) => {
                let v = x.eval(row, env)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for i in items {
                    let w = i.eval(row, env)?;
                    match compare(&v, &w)? {
                        Some(Ordering::Equal) => return Ok(Value::Bool(!neg)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*neg)
                }
            }
            Expr::Between(x, lo, hi, neg) => {
                let v = x.eval(row, env)?;
                let ge = binary(BinOp::GtEq, v.clone(), lo.eval(row, env)?)?;
                let le = binary(BinOp::LtEq, v, hi.eval(row, env)?)?;
                let both = match (truth(&ge)?, truth(&le)?) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                match both {
                    Some(b) => Value::Bool(b != *neg),
                    None => Value::Null,
                }
            }
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
                ci,
            } => {
                let (v, p) = (expr.eval(row, env)?, pattern.eval(row, env)?);
                let e = escape.as_ref().map(|e| e.eval(row, env)).transpose()?;
                if v.is_null() || p.is_null() || e.as_ref().is_some_and(Value::is_null) {
                    return Ok(Value::Null);
                }
                Value::Bool(like_value(&v, &p, e.as_ref(), *ci)? != *negated)
            }
            Expr::Case(operand, whens, els) => {
                let base = operand.as_ref().map(|o| o.eval(row, env)).transpose()?;
                for (w, then) in whens {
                    let hit = match &base {
                        Some(b) => compare(b, &w.eval(row, env)?)? == Some(Ordering::Equal),
                        None => truth(&w.eval(row, env)?)? == Some(true),
                    };
                    if hit {
                        return then.eval(row, env);
                    }
                }
                match els {
                    Some(e) => e.eval(row, env)?,
                    None => Value::Null,
                }
            }
            Expr::Cast(x, DataType::Reg(k)) => reg_at_run_time(x.eval(row, env)?, *k, env)?,
            // To a reg type's array (`proargtypes::regtype[]`, pgcli): each
            // element as the reg type's cast takes it, a number as an OID.
            Expr::Cast(x, DataType::Array(el)) if matches!(**el, DataType::Reg(_)) => {
                let DataType::Reg(k) = **el else {
                    unreachable!("matched above")
                };
                let items = match x.eval(row, env)? {
                    Value::Null => return Ok(Value::Null),
                    Value::Array(items) => items,
                    other => {
                        match explicit_cast(other, &DataType::Array(Box::new(DataType::Text)))? {
                            Value::Array(items) => items,
                            v => return Ok(v),
                        }
                    }
                };
                Value::Array(
                    items
                        .iter()
                        .map(|v| reg_at_run_time(v.clone(), k, env))
                        .collect::<Result<Vec<_>>>()?
                        .into(),
                )
            }
            Expr::Cast(x, t) => explicit_cast(x.eval(row, env)?, t)?,
            Expr::Func(f, args) => {
                let vals = args
                    .iter()
                    .map(|a| a.eval(row, env))
                    .collect::<Result<Vec<_>>>()?;
                functions::call(*f, vals, env)?
            }
            Expr::Sub(s) => eval_sub(s, row, env)?,
        })
    }
}

pub(super) fn eval_sub(s: &SubPlan, row: &[Value], env: &Env<'_>) -> Result<Value> {
    if !s.correlated {
        return eval_sub_once(s, row, env);
    }
    let empty = match &s.grouped {
        Some(g) => match query::decorrelate::answer(g, &s.kind, row, env)? {
            query::decorrelate::Answer::Value(v) => return Ok(v),
            query::decorrelate::Answer::Empty => Some(g),
            query::decorrelate::Answer::PerRow => None,
        },
        None => None,
    };
    // A correlated subquery's rows are dropped once its value is known:
    // what they were charged is given back for the next execution.
    let mark = env.info.mem.mark();
    let v = eval_sub_once(s, row, env);
    env.info.mem.release_to(mark);
    if let (Some(g), Ok(v)) = (empty, &v) {
        g.set_empty(v.clone());
    }
    v
}

fn eval_sub_once(s: &SubPlan, row: &[Value], env: &Env<'_>) -> Result<Value> {
    let cached = if s.correlated {
        None
    } else {
        s.cache.lock().clone()
    };
    let data = match cached {
        Some(c) => c,
        None => {
            let mut outer: Vec<&[Value]> = Vec::with_capacity(env.outer.len() + 1);
            outer.push(row);
            outer.extend_from_slice(env.outer);
            let sub_env = Env {
                params: env.params,
                outer: &outer,
                tx: env.tx,
                info: env.info,
                cancel: env.cancel,
                instance: env.instance,
            };
            let limit = match s.kind {
                SubKind::Exists { .. } => Some(1),
                SubKind::Scalar | SubKind::Row => Some(2),
                _ => None,
            };
            let rows = query::execute_plan(&s.plan, &sub_env, limit)?;
            let mut set = HashSet::new();
            let mut has_null = false;
            if matches!(s.kind, SubKind::In { .. }) {
                for r in &rows {
                    if r[0].is_null() {
                        has_null = true;
                    } else {
                        set.insert(r[0].clone());
                    }
                }
            }
            let c = Arc::new(SubCache {
                rows,
                set,
                has_null,
            });
            if !s.correlated {
                *s.cache.lock() = Some(c.clone());
            }
            c
        }
    };
    Ok(match &s.kind {
        SubKind::Exists { negated } => Value::Bool(data.rows.is_empty() == *negated),
        // Arrays of arrays would need one more dimension (PostgreSQL stacks
        // them); refused rather than nested as elements.
        SubKind::Array
            if data
                .rows
                .iter()
                .any(|r| matches!(r[0], Value::Array(_) | Value::MdArray(_))) =>
        {
            return Err(SqlError::unsupported("ARRAY(subquery) of arrays"));
        }
        SubKind::Array => Value::Array(data.rows.iter().map(|r| r[0].clone()).collect()),
        SubKind::Scalar | SubKind::Row => match data.rows.len() {
            0 => Value::Null,
            1 if matches!(s.kind, SubKind::Row) => Value::Array(data.rows[0].clone().into()),
            1 => data.rows[0][0].clone(),
            _ => {
                return Err(SqlError::new(
                    ErrorKind::CardinalityViolation,
                    "more than one row returned by a subquery used as an expression",
                ))
            }
        },
        SubKind::In { expr, negated } => {
            let v = expr.eval(row, env)?;
            if data.rows.is_empty() {
                // Nothing to compare with: IN is false, NOT IN true, even
                // for a NULL operand.
                Value::Bool(*negated)
            } else if v.is_null() {
                Value::Null
            } else if data.set.contains(&v)
                || data
                    .set
                    .iter()
                    .any(|w| compare(&v, w).ok().flatten() == Some(Ordering::Equal))
            {
                Value::Bool(!negated)
            } else if data.has_null {
                Value::Null
            } else {
                Value::Bool(*negated)
            }
        }
        SubKind::Quantified { expr, op, all } => {
            let v = expr.eval(row, env)?;
            let mut saw_null = false;
            for r in &data.rows {
                match truth(&binary(*op, v.clone(), r[0].clone())?)? {
                    Some(true) if !all => return Ok(Value::Bool(true)),
                    Some(false) if *all => return Ok(Value::Bool(false)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bool(*all)
            }
        }
    })
}
