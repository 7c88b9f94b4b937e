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
}

pub fn compile_aggregate(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    f: &ast::Function,
    kind: AggKind,
) -> Result<AggSpec> {
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
    })
}
