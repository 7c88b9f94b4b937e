//! `WITH RECURSIVE`: a CTE whose query is `anchor UNION [ALL] step`, the
//! step reading the CTE's own name. As PostgreSQL evaluates it: the anchor's
//! rows are the first working table; each round runs the step over the
//! working table alone, and its new rows (with UNION, those not seen before)
//! become the next working table, until a round yields none.

use super::*;
use parking_lot::Mutex;

/// The rows of the current round, read by the step through the CTE's name.
pub type WorkTable = Arc<Mutex<Vec<Vec<Value>>>>;

/// Plans `name AS (query)` of a `WITH RECURSIVE` list. A CTE that does not
/// refer to itself is planned as an ordinary one.
pub(crate) fn plan_recursive_cte(
    p: &mut Planner<'_>,
    cte: &ast::Cte,
    outer: Option<Arc<Scope>>,
) -> Result<QueryPlan> {
    let name = cte.alias.name.value.to_ascii_lowercase();
    let rename = |plan: &mut QueryPlan| -> Result<()> {
        super::select::cte_column_count(cte, plan.columns.len())?;
        for (c, a) in plan.columns.iter_mut().zip(cte.alias.columns.iter()) {
            c.name = a.name.value.to_ascii_lowercase();
        }
        Ok(())
    };
    let q = &cte.query;
    let SetExpr::SetOperation {
        left,
        op: ast::SetOperator::Union,
        set_quantifier,
        right,
    } = q.body.as_ref()
    else {
        let mut plan = plan_query(p, q, outer)?;
        rename(&mut plan)?;
        return Ok(plan);
    };
    let mut anchor = plan_set_expr(p, left, outer.clone())?;
    rename(&mut anchor)?;
    // A recursive query's columns are a UNION's: no table column origin.
    for c in &mut anchor.columns {
        c.origin = None;
    }
    let work: WorkTable = Arc::new(Mutex::new(Vec::new()));
    let placeholder = Arc::new(QueryPlan {
        columns: anchor.columns.clone(),
        body: Body::WorkTable(work.clone()),
        order: vec![],
        limit: None,
        offset: None,
        limit_mode: LimitMode::default(),
        correlated: false,
    });
    p.ctes.push((name, placeholder.clone()));
    let step = plan_set_expr(p, right, outer.clone());
    p.ctes.pop();
    let mut step = step?;
    // Only the placeholder's own reference is left: the step never read the
    // CTE, so this is a plain UNION.
    let recursive = Arc::strong_count(&placeholder) > 1;
    if step.columns.len() != anchor.columns.len() {
        return Err(SqlError::syntax(
            "each UNION query must have the same number of columns",
        ));
    }
    let step_casts = if recursive {
        step_casts(p, &name_of_cte(cte), &anchor, &mut step)?
    } else {
        vec![]
    };
    if !recursive {
        // Planned again as a whole, with its ORDER BY and LIMIT.
        let mut plan = plan_query(p, q, outer)?;
        rename(&mut plan)?;
        return Ok(plan);
    }
    if q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return Err(SqlError::unsupported(
            "ORDER BY, LIMIT or OFFSET in a recursive query",
        ));
    }
    let columns = anchor.columns.clone();
    let correlated = anchor.correlated || step.correlated;
    Ok(QueryPlan {
        columns,
        body: Body::Recursive {
            anchor: Box::new(anchor),
            step: Box::new(step),
            step_casts,
            all: matches!(set_quantifier, ast::SetQuantifier::All),
            work,
        },
        order: vec![],
        limit: None,
        offset: None,
        limit_mode: LimitMode::default(),
        correlated,
    })
}

fn name_of_cte(cte: &ast::Cte) -> String {
    cte.alias.name.value.clone()
}

/// The casts of the step's columns to the anchor's types. As PostgreSQL's:
/// the anchor's types are the query's, so a column whose common type with
/// the step's differs from the anchor's (type or modifier) is 42804
/// (`SELECT 1 UNION ALL SELECT n + 1.5` is numeric overall); a quoted
/// literal in the step takes the anchor's type, checked now.
fn step_casts(
    p: &mut Planner<'_>,
    name: &str,
    anchor: &QueryPlan,
    step: &mut QueryPlan,
) -> Result<Vec<Option<ColumnCast>>> {
    let mut casts = Vec::with_capacity(anchor.columns.len());
    for i in 0..anchor.columns.len() {
        let at = anchor.columns[i].ty.clone();
        if unknown_column(step, i, true) {
            if let Body::Select(s) = &step.body {
                if let Some(Expr::Lit(v @ Value::Text(_))) = s.projection.get(i) {
                    if !matches!(at, DataType::Reg(_)) {
                        crate::functions::cast(v.clone(), &unmodified(&at))?;
                    }
                }
            }
            cast_column(step, i, unmodified(&at));
        }
        let st = branch_type(p, step, i);
        let common = select_common(&[Some(at.clone()), st.clone()], "UNION")?;
        if common != at {
            let shown = |t: &DataType| {
                let (oid, m) = crate::types::type_oid_and_mod(t);
                crate::types::format_type(oid, (m >= 0).then_some(m))
                    .unwrap_or_else(|| t.sql_name())
            };
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!(
                    "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                    i + 1,
                    shown(&at),
                    shown(&common)
                ),
            )
            .with_fields(crate::error::ErrorFields {
                hint: Some("Cast the output of the non-recursive term to the correct type.".into()),
                ..Default::default()
            }));
        }
        casts.push(match st {
            Some(t) if needs_cast(&t, &at) => Some(ColumnCast::new(&t, &at)),
            _ => None,
        });
    }
    Ok(casts)
}

/// Runs a recursive CTE to its fixed point.
pub(super) fn run_recursive(
    anchor: &QueryPlan,
    step: &QueryPlan,
    step_casts: &[Option<ColumnCast>],
    all: bool,
    work: &WorkTable,
    env: &Env<'_>,
) -> Result<Vec<Vec<Value>>> {
    let mut seen: HashSet<Vec<Value>> = HashSet::new();
    let mut keep_new = |rows: Vec<Vec<Value>>| -> Vec<Vec<Value>> {
        if all {
            return rows;
        }
        rows.into_iter()
            .filter(|r| seen.insert(normalize_key(r.clone())))
            .collect()
    };
    let mut out = keep_new(execute_plan(anchor, env, None)?);
    let mut current = out.clone();
    while !current.is_empty() {
        check_cancel(env)?;
        *work.lock() = std::mem::take(&mut current);
        let produced = execute_plan(step, env, None);
        work.lock().clear();
        current = keep_new(super::exec::cast_rows(produced?, step_casts, env)?);
        out.extend(current.iter().cloned());
    }
    Ok(out)
}
