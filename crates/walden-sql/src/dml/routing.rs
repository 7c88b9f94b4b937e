//! Writing through a partitioned table: a row of the table goes to the
//! partition its key selects (23514 when none does), where that
//! partition's CHECK constraints apply; UPDATE and DELETE of a
//! partitioned table run on each partition its WHERE can reach, and an
//! updated row its partition no longer takes moves (deleted there,
//! inserted through the table as PostgreSQL does).

use super::*;
use crate::query::partition::{self, Constraint, Node};
use std::collections::HashMap;

/// Where the rows of one partitioned table go.
pub(crate) struct Routing {
    root: Node,
    /// Per partition id: its CHECK constraints, and for each of the root's
    /// columns its position in the partition.
    leaves: HashMap<u32, (Checks, Vec<usize>)>,
}

impl Routing {
    pub(crate) fn plan(p: &mut Planner<'_>, t: &Arc<Table>) -> Result<Routing> {
        let root = Node::load(p, t.clone())?;
        let mut leaves = HashMap::new();
        for leaf in root.leaves() {
            let lt = &leaf.table;
            let to_leaf = t
                .def
                .columns
                .iter()
                .map(|c| {
                    lt.def.column_index(&c.name).ok_or_else(|| {
                        SqlError::internal(format!(
                            "partition \"{}\" lacks column \"{}\"",
                            lt.name(),
                            c.name
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            leaves.insert(lt.id(), (Checks::compile(p, lt)?, to_leaf));
        }
        Ok(Routing { root, leaves })
    }

    /// For each of the root's columns, its position in partition `id`.
    pub(crate) fn columns_in(&self, id: u32) -> Option<&[usize]> {
        self.leaves.get(&id).map(|(_, m)| m.as_slice())
    }

    /// Inserts a complete row of the root (its column order) into the
    /// partition that takes it; returns the stored row in the root's order.
    pub(crate) fn insert(
        &self,
        tx: &mut Transaction,
        ctx: &Ctx<'_>,
        row: Vec<Value>,
    ) -> Result<Vec<Value>> {
        let (leaf, mut lrow) = {
            let env = ctx.env(tx);
            let (leaf, lrow) = self.root.route(row, &env)?;
            (leaf.table.clone(), lrow)
        };
        let (checks, to_leaf) = self
            .leaves
            .get(&leaf.id())
            .ok_or_else(|| SqlError::internal("a partition routed to is not planned"))?;
        checks.generate(&mut lrow, &ctx.env(tx))?;
        let stored = tx.insert_into(&leaf, lrow.into_iter().map(Some).collect())?;
        if !checks.is_empty() {
            checks.enforce(&stored, &ctx.env(tx))?;
        }
        Ok(to_leaf.iter().map(|&i| stored[i].clone()).collect())
    }
}

/// A statement naming a partition directly: its bound (and its
/// ancestors') as a constraint on the rows it writes; `None` otherwise.
pub(crate) fn own_constraint(p: &mut Planner<'_>, t: &Arc<Table>) -> Result<Option<Constraint>> {
    if t.def.partition_of.is_none() {
        return Ok(None);
    }
    Ok(Some(Constraint::of(p, t, None)?))
}

/// UPDATE or DELETE of a partitioned table: its plan on each partition
/// the WHERE can reach (the statement with the partition named in place
/// of the table, under the table's name or alias).
pub(crate) struct PartitionedWrite {
    pub(super) leaves: Vec<Planned>,
    pub(super) routing: Routing,
    /// The partitioned table's own partition constraint (when it is a
    /// partition itself), in its column order: what a moved row must meet.
    pub(super) root_check: Option<Constraint>,
}

/// The relation of `SELECT * FROM leaf AS label`.
fn leaf_relation(leaf: &Table, label: &str) -> Result<ast::TableFactor> {
    let sql = format!(
        "SELECT * FROM {} AS {}",
        partition::sql_name(leaf.name()),
        crate::types::quote::quote_ident(label)
    );
    match crate::front::parse_sql(&sql)? {
        ast::Statement::Query(q) => match *q.body {
            ast::SetExpr::Select(s) => Ok(s.from[0].relation.clone()),
            _ => Err(SqlError::internal("partition relation")),
        },
        _ => Err(SqlError::internal("partition relation")),
    }
}

fn leaves_for<'n>(root: &'n Node, selection: &Option<ast::Expr>, label: &str) -> Vec<&'n Node> {
    let mut conj = Vec::new();
    if let Some(w) = selection {
        query::conjuncts(w, &mut conj);
    }
    partition::prune(root, &conj, label)
}

pub(super) fn plan_update(
    p: &mut Planner<'_>,
    u: &ast::Update,
    t: Arc<Table>,
    alias: Option<String>,
) -> Result<Planned> {
    if u.output.is_some() {
        return Err(SqlError::unsupported(
            "OUTPUT of an UPDATE of a partitioned table",
        ));
    }
    let routing = Routing::plan(p, &t)?;
    let label = alias
        .clone()
        .unwrap_or_else(|| partition::display_name(&t).to_ascii_lowercase());
    let mut leaves = Vec::new();
    let chosen: Vec<Arc<Table>> = leaves_for(&routing.root, &u.selection, &label)
        .into_iter()
        .map(|n| n.table.clone())
        .collect();
    for lt in chosen {
        let mut lu = u.clone();
        lu.table.relation = leaf_relation(&lt, &label)?;
        let mut lp = super::plan_update(p, &lu)?;
        lp.moving = Some(Constraint::of(p, &lt, Some(t.id()))?);
        leaves.push(lp);
    }
    let scope = table_scope(&t, alias.as_deref());
    let returning = returning(p, &scope, &u.returning)?;
    let root_check = own_constraint(p, &t)?;
    Ok(Planned::partitioned(
        t,
        returning,
        PartitionedWrite {
            leaves,
            routing,
            root_check,
        },
    ))
}

pub(super) fn plan_delete(
    p: &mut Planner<'_>,
    d: &ast::Delete,
    t: Arc<Table>,
    alias: Option<String>,
) -> Result<Planned> {
    if d.output.is_some() || d.limit.is_some() || !d.order_by.is_empty() {
        return Err(SqlError::unsupported(
            "OUTPUT, ORDER BY or LIMIT in a DELETE of a partitioned table",
        ));
    }
    let routing = Routing::plan(p, &t)?;
    let label = alias
        .clone()
        .unwrap_or_else(|| partition::display_name(&t).to_ascii_lowercase());
    let chosen: Vec<Arc<Table>> = leaves_for(&routing.root, &d.selection, &label)
        .into_iter()
        .map(|n| n.table.clone())
        .collect();
    let mut leaves = Vec::new();
    for lt in chosen {
        let mut ld = d.clone();
        match &mut ld.from {
            ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => {
                v[0].relation = leaf_relation(&lt, &label)?;
            }
        }
        leaves.push(super::plan_delete(p, &ld)?);
    }
    let scope = table_scope(&t, alias.as_deref());
    let returning = returning(p, &scope, &d.returning)?;
    Ok(Planned::partitioned(
        t,
        returning,
        PartitionedWrite {
            leaves,
            routing,
            root_check: None,
        },
    ))
}
