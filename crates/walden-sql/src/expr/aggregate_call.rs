//! Binding an aggregate call: its argument, DISTINCT, ORDER BY and FILTER
//! compiled against the rows it aggregates.

use super::*;
use crate::front::{arg_expr, args_of, fname};
use crate::functions::AggKind;
use sqlparser::ast::FunctionArguments;

/// An aggregate to compute per group.
#[derive(Debug)]
pub struct AggSpec {
    pub kind: AggKind,
    pub arg: Option<Expr>,
    pub distinct: bool,
    pub separator: Option<Expr>,
    /// `agg(x ORDER BY a DESC, ...)`: the order the group's rows are fed in
    /// (expression, descending, nulls first).
    pub order: Vec<(Expr, bool, bool)>,
    /// `agg(...) FILTER (WHERE c)`: only rows where `c` is true reach it.
    pub filter: Option<Expr>,
    /// An ordered-set aggregate's direct arguments (the fraction, the
    /// hypothetical row): over the grouped row, evaluated once per group.
    pub direct: Vec<Expr>,
}

pub fn compile_aggregate(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    f: &ast::Function,
    kind: AggKind,
) -> Result<AggSpec> {
    crate::functions::refuse_empty_count(f)?;
    match kind {
        AggKind::Ordered(o) => compile_ordered(p, scope, f, o),
        _ => compile_plain(p, scope, f, kind),
    }
}

fn compile_plain(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    f: &ast::Function,
    kind: AggKind,
) -> Result<AggSpec> {
    if !f.within_group.is_empty() {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "{} is not an ordered-set aggregate, so it cannot have WITHIN GROUP",
                fname(f)
            ),
        ));
    }
    let distinct = matches!(&f.args, FunctionArguments::List(l) if matches!(l.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)));
    // `ORDER BY` inside the call orders the rows the aggregate sees (it
    // decides string_agg's, array_agg's and the json aggregates' result);
    // other clauses are refused rather than ignored.
    let mut order = Vec::new();
    if let FunctionArguments::List(l) = &f.args {
        for c in &l.clauses {
            match c {
                ast::FunctionArgumentClause::OrderBy(items) => {
                    for it in items {
                        let desc = super::sort_desc(&it.options)?;
                        let nulls_first = it.options.nulls_first.unwrap_or(desc);
                        order.push((Expr::compile(p, scope, &it.expr)?, desc, nulls_first));
                    }
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "{other} in a call of {}",
                        fname(f)
                    )))
                }
            }
        }
    }
    let args = args_of(f);
    let mut kind = kind;
    let arg = if kind == AggKind::CountStar {
        None
    } else {
        let e = args
            .first()
            .and_then(|a| arg_expr(a))
            .ok_or_else(|| SqlError::syntax(format!("{} needs an argument", fname(f))))?;
        let e = Expr::compile(p, scope, e)?;
        Some(match kind {
            AggKind::JsonAgg { jsonb, .. } => {
                let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
                let structured = !jsonb
                    && matches!(
                        query::static_type(&e, &types, &p.params),
                        Some(DataType::Record(_) | DataType::Array(_))
                    );
                kind = AggKind::JsonAgg { jsonb, structured };
                super::record::json_arg(p, scope, e)
            }
            AggKind::ArrayAgg => {
                // Of arrays (NULL ones too) the result needs one more dimension.
                let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
                if matches!(
                    query::static_type(&e, &types, &p.params),
                    Some(DataType::Array(_))
                ) {
                    return Err(SqlError::unsupported(
                        "array_agg of arrays (a multidimensional result)",
                    ));
                }
                e
            }
            _ => e,
        })
    };
    let separator = if kind == AggKind::StringAgg || kind.second_per_row() {
        let e = Expr::compile(
            p,
            scope,
            args.get(1)
                .and_then(|a| arg_expr(a))
                .ok_or_else(|| SqlError::syntax(format!("{} needs a second argument", fname(f))))?,
        )?;
        // json_object_agg's value: a record or an array as json by its type.
        Some(if matches!(kind, AggKind::JsonObjectAgg { .. }) {
            super::record::json_arg(p, scope, e)
        } else {
            e
        })
    } else {
        None
    };
    let filter = f
        .filter
        .as_ref()
        .map(|c| Expr::compile(p, scope, c))
        .transpose()?;
    Ok(AggSpec {
        kind,
        arg,
        distinct,
        separator,
        order,
        filter,
        direct: Vec::new(),
    })
}

/// `percentile_cont(0.5) WITHIN GROUP (ORDER BY x)` and its kin: the
/// WITHIN GROUP order is what the group's rows are held in (its first
/// expression also the argument, for the result's type); the direct
/// arguments are compiled by the caller, over the grouped row.
fn compile_ordered(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    f: &ast::Function,
    o: crate::functions::OrderedFn,
) -> Result<AggSpec> {
    let name = fname(f);
    if f.within_group.is_empty() {
        // With the arguments of the whole signature it is the aggregate,
        // called wrongly; otherwise no function has those arguments.
        let n = args_of(f).len();
        if n == o.direct_count(1) + 1 {
            return Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!("WITHIN GROUP is required for ordered-set aggregate {name}"),
            ));
        }
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("function {name} with {n} arguments does not exist"),
        ));
    }
    if let FunctionArguments::List(l) = &f.args {
        if l.duplicate_treatment.is_some() {
            return Err(SqlError::syntax("cannot use DISTINCT with WITHIN GROUP"));
        }
        if !l.clauses.is_empty() {
            return Err(SqlError::syntax(
                "cannot use multiple ORDER BY clauses with WITHIN GROUP",
            ));
        }
    }
    let direct = args_of(f).len();
    let wanted = o.direct_count(f.within_group.len());
    if !o.hypothetical() && f.within_group.len() != 1 || direct != wanted {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "function {name} with {direct} direct and {} ordering arguments does not exist",
                f.within_group.len()
            ),
        ));
    }
    let mut order = Vec::new();
    for it in &f.within_group {
        let desc = super::sort_desc(&it.options)?;
        let nulls_first = it.options.nulls_first.unwrap_or(desc);
        order.push((Expr::compile(p, scope, &it.expr)?, desc, nulls_first));
    }
    let arg = Expr::compile(p, scope, &f.within_group[0].expr)?;
    if o == crate::functions::OrderedFn::PercentileCont {
        let input: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
        let t = crate::query::static_type(&arg, &input, &p.params);
        if let Some(t) = t.filter(|t| {
            !matches!(
                t,
                DataType::SmallInt
                    | DataType::Int
                    | DataType::BigInt
                    | DataType::Real
                    | DataType::Double
                    | DataType::Decimal { .. }
                    | DataType::Interval
            )
        }) {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function {name}(double precision, {}) does not exist",
                    t.sql_name()
                ),
            ));
        }
    }
    let filter = f
        .filter
        .as_ref()
        .map(|c| Expr::compile(p, scope, c))
        .transpose()?;
    Ok(AggSpec {
        kind: AggKind::Ordered(o),
        arg: Some(arg),
        distinct: false,
        separator: None,
        order,
        filter,
        direct: Vec::new(),
    })
}

/// Compiles an ordered-set aggregate's direct arguments over the grouped
/// row (they may name the group's keys, not other columns, and hold no
/// aggregate) into its spec, `slot` of the grouping context.
pub fn ordered_direct_args(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    f: &ast::Function,
    slot: usize,
) -> Result<()> {
    let mut direct = Vec::new();
    for a in args_of(f) {
        let e =
            arg_expr(a).ok_or_else(|| SqlError::syntax(format!("bad argument to {}", fname(f))))?;
        if crate::query::has_aggregate(e) {
            return Err(SqlError::new(
                ErrorKind::GroupingError,
                "aggregate function calls cannot be nested",
            ));
        }
        let win = std::mem::replace(&mut p.window, crate::query::window::WindowSlot::InAggregate);
        let r = Expr::compile(p, scope, e);
        p.window = win;
        direct.push(r?);
    }
    let Some(ctx) = p.agg.as_mut() else {
        return Ok(());
    };
    if let AggKind::Ordered(o) = ctx.aggs[slot].kind {
        if o.hypothetical() {
            // The hypothetical row takes the ordering columns' types: an
            // untyped literal is read as one, another type category is
            // 42804, as PostgreSQL.
            let input: Vec<DataType> = ctx.input_scope.cols.iter().map(|c| c.ty.clone()).collect();
            let keys = ctx.key_types.clone();
            let order_types: Vec<Option<DataType>> = ctx.aggs[slot]
                .order
                .iter()
                .map(|(e, _, _)| crate::query::static_type(e, &input, &p.params))
                .collect();
            let asts: Vec<&ast::Expr> = args_of(f).into_iter().filter_map(arg_expr).collect();
            let mut coerced = Vec::new();
            for ((d, ot), a) in direct.into_iter().zip(order_types).zip(asts) {
                let dt = crate::query::static_type(&d, &keys, &p.params);
                let literal = matches!(a, ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_)));
                coerced.push(match (ot, dt) {
                    (Some(ot), _) if literal => Expr::Cast(Box::new(d), ot),
                    (Some(ot), Some(dt)) if !same_category(&ot, &dt) => {
                        return Err(SqlError::new(
                            ErrorKind::DatatypeMismatch,
                            format!(
                                "WITHIN GROUP types {} and {} cannot be matched",
                                ot.sql_name(),
                                dt.sql_name()
                            ),
                        ))
                    }
                    _ => d,
                });
            }
            ctx.aggs[slot].direct = coerced;
            return Ok(());
        }
    }
    ctx.aggs[slot].direct = direct;
    Ok(())
}

/// Whether two types compare without a cast (numbers with numbers, text
/// with text, or the same type).
fn same_category(a: &DataType, b: &DataType) -> bool {
    let num = |t: &DataType| {
        matches!(
            t,
            DataType::SmallInt
                | DataType::Int
                | DataType::BigInt
                | DataType::Real
                | DataType::Double
                | DataType::Decimal { .. }
        )
    };
    let text =
        |t: &DataType| matches!(t, DataType::Text | DataType::Varchar(_) | DataType::Char(_));
    (num(a) && num(b)) || (text(a) && text(b)) || a == b
}

/// Whether an aggregate's arguments name columns of an enclosing query
/// and none of its own: PostgreSQL then computes it in the enclosing
/// query (an outer-level aggregate), which Walden does not, so it is
/// refused rather than computed over the wrong rows.
pub fn outer_level(spec: &AggSpec) -> bool {
    fn any(e: &Expr, f: &dyn Fn(&Expr) -> Option<bool>) -> bool {
        match f(e) {
            Some(b) => b,
            None => e.children().iter().any(|c| any(c, f)),
        }
    }
    let col = |e: &Expr| match e {
        Expr::Col(_) => Some(true),
        Expr::Sub(_) => Some(false),
        _ => None,
    };
    let outer = |e: &Expr| match e {
        Expr::Outer(..) => Some(true),
        Expr::Sub(_) => Some(false),
        _ => None,
    };
    let exprs: Vec<&Expr> = spec
        .arg
        .iter()
        .chain(spec.separator.iter())
        .chain(spec.filter.iter())
        .chain(spec.order.iter().map(|(e, _, _)| e))
        .collect();
    exprs.iter().any(|e| any(e, &outer)) && !exprs.iter().any(|e| any(e, &col))
}
