//! LATERAL: a FROM item that reads the columns of the items before it
//! (`LATERAL (SELECT ...)`, and any function in FROM, which PostgreSQL
//! treats as lateral), run once per row of what it is joined to.
//!
//! Planning: the item is compiled beside a scope holding the columns of
//! the items before it (as the parent of its own scopes, so its names find
//! them as they find an enclosing query's); that scope records which of its
//! columns the item's names reached. An item that reached none is planned
//! again without it, as an ordinary FROM item (its references to enclosing
//! queries then keep their usual depth). One that did becomes the right
//! side of a join marked lateral, which the join order keeps after the
//! items it reads.
//!
//! Execution: for each row of the join's left side, the row the item was
//! planned beside is rebuilt from it (the join order may have placed the
//! items differently) and the item runs with that row as its innermost
//! enclosing row; its rows then join the left row as any join's would
//! (ON conditions, LEFT JOIN's NULL-extended row).

use super::from::*;
use super::*;
use crate::expr::Reach;

/// A join's lateral right side: how to make, from a left row, the row it
/// was planned beside.
#[derive(Debug)]
pub struct Lateral {
    /// Width of the row the item was planned beside.
    pub width: usize,
    /// (position in that row, position in the join's left row) for each
    /// column the item reads; `None` when the two rows are the same.
    pub map: Option<Vec<(usize, usize)>>,
    /// Whether the item also reads an enclosing query's row.
    pub enclosing: bool,
}

impl Lateral {
    /// The item joined right after the items it was planned beside, in
    /// their order: the left row is that row.
    pub(super) fn in_place(reach: &Reach, width: usize) -> Box<Lateral> {
        Box::new(Lateral {
            width,
            map: None,
            enclosing: reach.beyond,
        })
    }

    /// The row the item reads, from a left row.
    fn beside(&self, left: &[Value]) -> Vec<Value> {
        match &self.map {
            None => left.to_vec(),
            Some(map) => {
                let mut row = vec![Value::Null; self.width];
                for &(at, from) in map {
                    row[at] = left[from].clone();
                }
                row
            }
        }
    }
}

/// Whether a FROM item may read the items before it: a LATERAL subquery, a
/// function, or a parenthesized join holding one.
pub(super) fn may_be_lateral(f: &TableFactor) -> bool {
    match f {
        TableFactor::Derived { lateral, .. } => *lateral,
        TableFactor::Table { args, .. } => args.is_some(),
        TableFactor::Function { .. } | TableFactor::UNNEST { .. } => true,
        TableFactor::NestedJoin {
            table_with_joins, ..
        } => chain_may_be_lateral(table_with_joins),
        _ => false,
    }
}

/// Whether a join chain holds an item that may be lateral.
pub(super) fn chain_may_be_lateral(twj: &ast::TableWithJoins) -> bool {
    may_be_lateral(&twj.relation) || twj.joins.iter().any(|j| may_be_lateral(&j.relation))
}

/// How to plan a FROM item given the enclosing scope to plan it in.
pub(super) type PlanItem<'f> =
    dyn FnMut(&mut Planner<'_>, &Option<Arc<Scope>>) -> Result<Item> + 'f;

/// Plans a FROM item beside the columns `before` of the items ahead of it
/// (see the module comment): the item, and what it reached of them when it
/// is lateral.
pub(super) fn plan_beside(
    p: &mut Planner<'_>,
    before: &[ScopeCol],
    outer: &Option<Arc<Scope>>,
    capable: bool,
    plan: &mut PlanItem<'_>,
) -> Result<(Item, Option<Reach>)> {
    if !capable || before.is_empty() {
        return Ok((plan(p, outer)?, None));
    }
    let reach = Arc::new(parking_lot::Mutex::new(Reach::default()));
    let scope = Arc::new(Scope {
        cols: before.to_vec(),
        parent: outer.clone(),
        reach: Some(reach.clone()),
    });
    let item = plan(p, &Some(scope))?;
    let mut reached = reach.lock().clone();
    if reached.cols.is_empty() {
        return Ok((plan(p, outer)?, None));
    }
    reached.cols.sort_unstable();
    reached.cols.dedup();
    Ok((item, Some(reached)))
}

/// A lateral item may not be the right side of a RIGHT or FULL join (its
/// rows exist only beside a left row): 42P10, as PostgreSQL.
pub(super) fn check_kind(kind: &JoinKind, reach: &Reach, before: &[ScopeCol]) -> Result<()> {
    if matches!(kind, JoinKind::Inner | JoinKind::Left) {
        return Ok(());
    }
    let table = reach
        .cols
        .first()
        .and_then(|&i| before.get(i))
        .and_then(|c| c.table.clone())
        .unwrap_or_default();
    Err(SqlError::new(
        ErrorKind::InvalidColumnReference,
        format!("invalid reference to FROM-clause entry for table \"{table}\""),
    )
    .with_fields(crate::error::ErrorFields {
        detail: Some(
            "The combining JOIN type must be INNER or LEFT for a LATERAL reference.".into(),
        ),
        ..Default::default()
    }))
}

/// The rows of a lateral join: the right side run once per left row.
#[allow(clippy::too_many_arguments)]
pub(super) fn lateral_rows(
    l: Vec<Vec<Value>>,
    right: &Source,
    lat: &Lateral,
    kind: &JoinKind,
    on: &[Expr],
    rw: usize,
    env: &Env<'_>,
) -> Result<Vec<Vec<Value>>> {
    let mut out = Vec::new();
    for lrow in &l {
        exec::check_cancel(env)?;
        let beside = lat.beside(lrow);
        let mut outer: Vec<&[Value]> = Vec::with_capacity(env.outer.len() + 1);
        outer.push(&beside);
        outer.extend_from_slice(env.outer);
        let inner_env = Env {
            params: env.params,
            outer: &outer,
            tx: env.tx,
            info: env.info,
            cancel: env.cancel,
            instance: env.instance,
        };
        // The right side's rows are dropped once joined: what they were
        // charged is given back for the next left row.
        let mark = env.info.mem.mark();
        let rows = exec::run_source(right, &inner_env);
        env.info.mem.release_to(mark);
        let mut matched = false;
        for r in rows? {
            let mut row = Vec::with_capacity(lrow.len() + r.len());
            row.extend_from_slice(lrow);
            row.extend(r);
            if exec::passes(on, &row, env)? {
                matched = true;
                env.info.mem.charge_row(row.len())?;
                out.push(row);
            }
        }
        if !matched && matches!(kind, JoinKind::Left) {
            let mut row = lrow.clone();
            row.extend(std::iter::repeat_n(Value::Null, rw));
            env.info.mem.charge_row(row.len())?;
            out.push(row);
        }
    }
    Ok(out)
}
