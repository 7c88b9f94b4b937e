//! Compiling an expression of a grouped query: group keys and aggregates
//! are columns of the grouped row; anything else must be built from them.

use super::*;

/// `e` as a value of the grouped row, if it is a group key, an aggregate or
/// a column reference (which must then be grouped); None otherwise.
pub(super) fn compile_grouped(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    e: &ast::Expr,
) -> Result<Option<Expr>> {
    let Some(agg) = p.agg.as_mut() else {
        return Ok(None);
    };
    let key = e.to_string();
    if let Some(i) = agg.group_keys.iter().position(|k| *k == key) {
        // Grouped rows are laid out as [keys..., aggregates...].
        return Ok(Some(Expr::Col(i)));
    }
    if let ast::Expr::Function(f) = e {
        if f.over.is_none() && crate::front::fname(f) == "grouping" {
            return crate::query::grouping_call(p, f).map(Some);
        }
        if let Some(kind) = functions::aggregate_kind(f) {
            let mut ctx = p.agg.take().unwrap();
            let win = std::mem::replace(&mut p.window, query::window::WindowSlot::InAggregate);
            let srf = std::mem::replace(&mut p.srf, SrfSlot::Refused("aggregate"));
            let compiled = super::compile_aggregate(p, &ctx.input_scope, f, kind);
            p.window = win;
            p.srf = srf;
            let slot = ctx.aggs.len();
            // (A window aggregate is not moved out: only here.)
            let compiled = compiled.and_then(|spec| {
                if super::aggregate_call::outer_level(&spec) {
                    return Err(SqlError::unsupported(format!(
                        "{}() over only an enclosing query's columns (an outer-level aggregate)",
                        crate::front::fname(f)
                    )));
                }
                Ok(spec)
            });
            match compiled {
                Ok(spec) => ctx.aggs.push(spec),
                Err(err) => {
                    p.agg = Some(ctx);
                    return Err(err);
                }
            }
            let keys = ctx.group_keys.len();
            p.agg = Some(ctx);
            if let functions::AggKind::Ordered(_) = kind {
                super::ordered_direct_args(p, scope, f, slot)?;
            }
            return Ok(Some(Expr::Col(keys + slot)));
        }
    }
    if let ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) = e {
        // A column of the input that is not grouped (unless it is an
        // outer reference, which is constant per group).
        let input = agg.input_scope.clone();
        let (t, n) = ident_parts(e);
        if let Ok((0, i)) = input.resolve(t.as_deref(), &n) {
            if let Some(k) = agg.dependent_key(i) {
                return Ok(Some(Expr::Col(k)));
            }
            // Named as PostgreSQL names it: qualified by its table.
            let c = &input.cols[i];
            let shown = match &c.table {
                Some(t) => format!("{t}.{}", c.name),
                None => c.name.clone(),
            };
            return Err(SqlError::new(
                ErrorKind::GroupingError,
                format!("column \"{shown}\" must appear in the GROUP BY clause or be used in an aggregate function"),
            ));
        }
        let (d, i) = input.resolve(t.as_deref(), &n)?;
        return Ok(Some(Expr::Outer(d, i)));
    }
    Ok(None)
}
