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
pub(super) fn plan_recursive_cte(
    p: &mut Planner<'_>,
    cte: &ast::Cte,
    outer: Option<Arc<Scope>>,
) -> Result<QueryPlan> {
    let name = cte.alias.name.value.to_ascii_lowercase();
    let rename = |plan: &mut QueryPlan| {
        for (c, a) in plan.columns.iter_mut().zip(cte.alias.columns.iter()) {
            c.name = a.name.value.to_ascii_lowercase();
        }
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
        rename(&mut plan);
        return Ok(plan);
    };
    let mut anchor = plan_set_expr(p, left, outer.clone())?;
    rename(&mut anchor);
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
        correlated: false,
    });
    p.ctes.push((name, placeholder.clone()));
    let step = plan_set_expr(p, right, outer.clone());
    p.ctes.pop();
    let step = step?;
    // Only the placeholder's own reference is left: the step never read the
    // CTE, so this is a plain UNION.
    let recursive = Arc::strong_count(&placeholder) > 1;
    if step.columns.len() != anchor.columns.len() {
        return Err(SqlError::syntax(
            "each UNION query must have the same number of columns",
        ));
    }
    if !recursive {
        // Planned again as a whole, with its ORDER BY and LIMIT.
        let mut plan = plan_query(p, q, outer)?;
        rename(&mut plan);
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
            all: matches!(set_quantifier, ast::SetQuantifier::All),
            work,
        },
        order: vec![],
        limit: None,
        offset: None,
        correlated,
    })
}

/// Runs a recursive CTE to its fixed point.
pub(super) fn run_recursive(
    anchor: &QueryPlan,
    step: &QueryPlan,
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
        current = keep_new(produced?);
        out.extend(current.iter().cloned());
    }
    Ok(out)
}
