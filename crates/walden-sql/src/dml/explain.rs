//! EXPLAIN of writes: PostgreSQL's ModifyTable (`Insert on t`, `Update on
//! t`, `Delete on t`) over how the rows are found, and LockRows for a
//! locking read.

use super::*;
use crate::query::explain::{table_node, Builder, Node, TablePath};

/// The node of a ModifyTable on `table`.
pub(crate) fn modify(op: &'static str, table: &Table) -> Node {
    let mut n = Node::new("ModifyTable");
    n.operation = Some(op);
    n.label = Some(format!("{op} on {}", table.name()));
    n.relation = Some(table.name().to_string());
    n.alias = Some(table.name().to_string());
    n
}

/// An UPDATE's or DELETE's rows: the target's scan, joined with its FROM
/// or USING list when it has one.
fn rows_node<'p>(b: &mut Builder<'p, '_>, pl: &'p Planned) -> Node {
    let scan = table_node(
        b,
        &pl.table,
        TablePath {
            lookup: pl.lookup.as_deref(),
            range: pl.range.as_deref(),
            index: pl.index.as_deref(),
            filter: &pl.filter,
        },
        pl.from.is_some(),
    );
    match &pl.from {
        Some(f) => f.explain(b, scan, &pl.table),
        None => scan,
    }
}

pub(crate) fn update_node<'p>(b: &mut Builder<'p, '_>, pl: &'p Planned) -> Node {
    let rows = rows_node(b, pl);
    let mut n = modify("Update", &pl.table);
    n.child("Outer", rows);
    n
}

pub(crate) fn delete_node<'p>(b: &mut Builder<'p, '_>, dp: &'p DeletePlan) -> Node {
    let mut rows = rows_node(b, &dp.planned);
    if dp.top.is_some() || dp.limit.is_some() {
        let mut l = Node::new("Limit");
        if let Some(t) = dp.top {
            l.prop("Row Count", t.to_string());
        }
        if let Some(e) = &dp.limit {
            let c = b.d.expr(e, &[]);
            l.prop("Row Count", c);
        }
        rows = rows.under(l);
    }
    let mut n = modify("Delete", &dp.planned.table);
    n.child("Outer", rows);
    n
}
