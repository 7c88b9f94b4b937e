//! Aggregates: recognising and compiling them, their running state and result types.

use super::*;
use crate::front::{args_of, fname};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggKind {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    StringAgg,
    BoolAnd,
    BoolOr,
    /// array_agg(x): the inputs, NULLs included, in the order fed.
    ArrayAgg,
    /// json_agg / jsonb_agg. `structured`: json_agg of records or arrays,
    /// whose elements PostgreSQL writes one per line.
    JsonAgg {
        jsonb: bool,
        structured: bool,
    },
    /// json_object_agg / jsonb_object_agg(key, value): the value
    /// expression rides in the separator slot, evaluated per row.
    JsonObjectAgg {
        jsonb: bool,
    },
    /// var_pop, var_samp, stddev_pop, stddev_samp (`stats.rs`).
    Stat(StatFn),
    /// regr_*, covar_*, corr (y, x): x rides in the separator slot,
    /// evaluated per row.
    Regr(RegrFn),
    /// An ordered-set or hypothetical-set aggregate (`WITHIN GROUP`):
    /// computed from the group's rows held in their order.
    Ordered(OrderedFn),
}

impl AggKind {
    /// Whether the separator slot holds a second argument evaluated per
    /// row (rather than a constant separator).
    pub fn second_per_row(self) -> bool {
        matches!(self, AggKind::JsonObjectAgg { .. } | AggKind::Regr(_))
    }
}

/// `count()`: PostgreSQL calls a parameterless aggregate only as
/// `count(*)` (42809).
pub fn refuse_empty_count(f: &ast::Function) -> Result<()> {
    let name = fname(f);
    if matches!(name.as_str(), "count" | "count_big")
        && args_of(f).is_empty()
        && matches!(f.args, ast::FunctionArguments::List(_))
    {
        return Err(SqlError::new(
            ErrorKind::WrongObjectType,
            "count(*) must be used to call a parameterless aggregate function",
        ));
    }
    Ok(())
}

pub fn aggregate_kind(f: &ast::Function) -> Option<AggKind> {
    if f.over.is_some() {
        return None;
    }
    let star = args_of(f)
        .first()
        .is_some_and(|a| matches!(a, FunctionArg::Unnamed(FunctionArgExpr::Wildcard)));
    if let Some(o) = OrderedFn::from_name(&fname(f), !f.within_group.is_empty()) {
        return Some(AggKind::Ordered(o));
    }
    Some(match fname(f).as_str() {
        "count" | "count_big" if star || args_of(f).is_empty() => AggKind::CountStar,
        "count" | "count_big" => AggKind::Count,
        "sum" => AggKind::Sum,
        "avg" => AggKind::Avg,
        "min" => AggKind::Min,
        "max" => AggKind::Max,
        "string_agg" => AggKind::StringAgg,
        "bool_and" | "every" => AggKind::BoolAnd,
        "bool_or" => AggKind::BoolOr,
        "array_agg" => AggKind::ArrayAgg,
        "jsonb_agg" => AggKind::JsonAgg {
            jsonb: true,
            structured: false,
        },
        "json_agg" => AggKind::JsonAgg {
            jsonb: false,
            structured: false,
        },
        "jsonb_object_agg" => AggKind::JsonObjectAgg { jsonb: true },
        "json_object_agg" => AggKind::JsonObjectAgg { jsonb: false },
        name => match RegrFn::from_name(name) {
            Some(r) => AggKind::Regr(r),
            None => AggKind::Stat(StatFn::from_name(name)?),
        },
    })
}

/// Running state of one aggregate in one group.
#[derive(Clone, Debug)]
pub enum Acc {
    Count(i64),
    Sum(Option<Value>),
    Avg(Option<Value>, i64),
    MinMax(Option<Value>),
    Str(Option<String>),
    Bool(Option<bool>),
    Json(crate::functions::json::JsonAcc),
    Array(Option<Vec<Value>>),
    Stat(StatAcc),
    Regr(RegrAcc),
}

impl Acc {
    pub fn new(kind: AggKind) -> Acc {
        match kind {
            // An ordered-set aggregate's rows are held by the grouping.
            AggKind::CountStar | AggKind::Count | AggKind::Ordered(_) => Acc::Count(0),
            AggKind::Sum => Acc::Sum(None),
            AggKind::Avg => Acc::Avg(None, 0),
            AggKind::Min | AggKind::Max => Acc::MinMax(None),
            AggKind::StringAgg => Acc::Str(None),
            AggKind::BoolAnd | AggKind::BoolOr => Acc::Bool(None),
            AggKind::ArrayAgg => Acc::Array(None),
            AggKind::Stat(_) => Acc::Stat(StatAcc::Empty),
            AggKind::Regr(_) => Acc::Regr(RegrAcc::default()),
            AggKind::JsonAgg { .. } | AggKind::JsonObjectAgg { .. } => {
                Acc::Json(Default::default())
            }
        }
    }

    pub fn add(&mut self, kind: AggKind, v: Value, sep: &Value) -> Result<()> {
        if kind == AggKind::CountStar {
            if let Acc::Count(n) = self {
                *n += 1;
            }
            return Ok(());
        }
        // json aggregates keep NULL inputs (as json null).
        if let Acc::Json(acc) = self {
            match kind {
                AggKind::JsonObjectAgg { .. } => acc.push_pair(v, sep.clone())?,
                _ => acc.push(v),
            }
            return Ok(());
        }
        // The pair aggregates skip a pair with a NULL on either side.
        if let Acc::Regr(acc) = self {
            return acc.add(&v, sep);
        }
        // array_agg keeps NULL inputs as NULL elements.
        if let Acc::Array(items) = self {
            if matches!(v, Value::Array(_) | Value::MdArray(_)) {
                return Err(SqlError::unsupported(
                    "array_agg of arrays (a multidimensional result)",
                ));
            }
            items.get_or_insert_with(Vec::new).push(v);
            return Ok(());
        }
        if v.is_null() {
            return Ok(());
        }
        match self {
            Acc::Count(n) => *n += 1,
            Acc::Sum(s) => {
                *s = Some(match s.take() {
                    None => match v {
                        Value::Int(_)
                        | Value::Float(_)
                        | Value::Decimal(_)
                        | Value::Interval(_) => v,
                        other => crate::functions::binary(
                            crate::functions::BinOp::Add,
                            Value::Int(0),
                            other,
                        )?,
                    },
                    Some(acc) => sum_add(acc, v)?,
                })
            }
            Acc::Avg(s, n) => {
                *s = Some(match s.take() {
                    None => v,
                    Some(acc) => sum_add(acc, v)?,
                });
                *n += 1;
            }
            Acc::MinMax(m) => {
                let replace = match m {
                    None => true,
                    Some(cur) => {
                        let o = compare(&v, cur)?.unwrap_or(Ordering::Equal);
                        (kind == AggKind::Min && o == Ordering::Less)
                            || (kind == AggKind::Max && o == Ordering::Greater)
                    }
                };
                if replace {
                    *m = Some(v);
                }
            }
            Acc::Str(s) => {
                let t = v.to_string();
                *s = Some(match s.take() {
                    None => t,
                    Some(mut acc) => {
                        acc.push_str(&sep.to_string());
                        acc.push_str(&t);
                        acc
                    }
                })
            }
            Acc::Bool(b) => {
                let x = crate::functions::truth(&v)?.unwrap_or(false);
                *b = Some(match (*b, kind) {
                    (None, _) => x,
                    (Some(p), AggKind::BoolAnd) => p && x,
                    (Some(p), _) => p || x,
                })
            }
            Acc::Stat(s) => s.add(&v)?,
            Acc::Json(_) | Acc::Array(_) | Acc::Regr(_) => {}
        }
        Ok(())
    }

    pub fn finish(self, kind: AggKind) -> Result<Value> {
        Ok(match self {
            Acc::Json(acc) => match kind {
                AggKind::JsonObjectAgg { jsonb } => acc.finish(true, jsonb, false)?,
                AggKind::JsonAgg { jsonb, structured } => acc.finish(false, jsonb, structured)?,
                _ => Value::Null,
            },
            Acc::Count(n) => Value::Int(n),
            Acc::Regr(s) => match kind {
                AggKind::Regr(f) => s.finish(f),
                _ => Value::Null,
            },
            Acc::Stat(s) => match kind {
                AggKind::Stat(f) => s.finish(f)?,
                _ => Value::Null,
            },
            Acc::Sum(s) => s.unwrap_or(Value::Null),
            Acc::Avg(None, _) => Value::Null,
            Acc::Avg(Some(s), n) => match s {
                Value::Float(f) => Value::Float(f / n as f64),
                // numeric division, with its result scale.
                Value::Int(i) => Value::Decimal(Numeric::from(i).div(&Numeric::from(n))?),
                Value::Decimal(d) => Value::Decimal(d.div(&Numeric::from(n))?),
                // PostgreSQL's interval_avg: the sum divided by the count.
                Value::Interval(i) => {
                    Value::Interval(i.checked_div_f64(n as f64).ok_or_else(|| {
                        SqlError::new(ErrorKind::DatetimeOverflow, "interval out of range")
                    })?)
                }
                other => other,
            },
            Acc::MinMax(m) => m.unwrap_or(Value::Null),
            Acc::Str(s) => s.map(Value::text).unwrap_or(Value::Null),
            Acc::Bool(b) => b.map(Value::Bool).unwrap_or(Value::Null),
            // No rows: NULL, not an empty array.
            Acc::Array(items) => items.map(|v| Value::Array(v.into())).unwrap_or(Value::Null),
        })
    }
}

pub(super) fn sum_add(acc: Value, v: Value) -> Result<Value> {
    match (&acc, &v) {
        // Integer sums that overflow i64 continue as decimals, as PostgreSQL's
        // sum(bigint) returns numeric.
        (Value::Int(a), Value::Int(b)) => Ok(match a.checked_add(*b) {
            Some(s) => Value::Int(s),
            None => Value::Decimal(Numeric::from(*a).add(&Numeric::from(*b))?),
        }),
        _ => crate::functions::binary(crate::functions::BinOp::Add, acc, v),
    }
}

/// The static type of an aggregate's result.
pub fn aggregate_type(kind: AggKind, arg: Option<&DataType>) -> DataType {
    match kind {
        AggKind::CountStar | AggKind::Count => DataType::BigInt,
        AggKind::Ordered(o) => o.result_type(arg, None),
        // As PostgreSQL: sum(bigint) is numeric (it cannot overflow),
        // sum(real) stays real.
        AggKind::Sum => match arg {
            Some(DataType::SmallInt | DataType::Int) => DataType::BigInt,
            Some(DataType::Real) => DataType::Real,
            Some(DataType::Double) => DataType::Double,
            Some(DataType::Interval) => DataType::Interval,
            _ => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
        },
        AggKind::Avg => match arg {
            Some(DataType::Real | DataType::Double) => DataType::Double,
            Some(DataType::Interval) => DataType::Interval,
            _ => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
        },
        AggKind::Min | AggKind::Max => arg.cloned().unwrap_or(DataType::Text),
        AggKind::Stat(_) => stat_type(arg),
        AggKind::Regr(f) => f.result_type(),
        AggKind::StringAgg => DataType::Text,
        AggKind::BoolAnd | AggKind::BoolOr => DataType::Bool,
        AggKind::ArrayAgg => match arg {
            Some(DataType::Array(_)) | None => DataType::Array(Box::new(DataType::Text)),
            Some(t) => DataType::Array(Box::new(t.clone())),
        },
        AggKind::JsonAgg { jsonb, .. } | AggKind::JsonObjectAgg { jsonb } => {
            if jsonb {
                DataType::Jsonb
            } else {
                DataType::Json
            }
        }
    }
}
