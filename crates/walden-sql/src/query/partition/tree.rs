//! A partitioned table with its partitions, loaded as the planning
//! transaction sees them; routing a row down to the partition that takes
//! it, and a partition's own constraint (what its bound, and its
//! ancestors', let in).

use super::bound::Bound;
use super::{KeySpec, Strategy};
use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::expr::{Expr, Scope, ScopeCol};
use crate::functions::Env;
use crate::query::Planner;
use std::sync::Arc;
use walden_engine::{DataType, Table, Value};

/// A partitioned table's key compiled against one table's columns (its
/// own, or a partition's: the key names columns, which partitions share).
pub struct PartKey {
    pub spec: KeySpec,
    pub exprs: Vec<Expr>,
    pub types: Vec<DataType>,
    /// How error details name each part (`a`, `lower(b)`).
    pub names: Vec<String>,
}

fn scope_of(t: &Table) -> Arc<Scope> {
    let label = walden_engine::namespace::split_engine_name(t.name())
        .1
        .to_ascii_lowercase();
    Arc::new(Scope::new(
        t.def
            .columns
            .iter()
            .map(|c| ScopeCol {
                table: Some(label.clone()),
                name: c.name.clone(),
                ty: c.data_type.clone(),
                ..Default::default()
            })
            .collect(),
    ))
}

impl PartKey {
    /// `spec` compiled against `t`'s columns.
    pub fn compile(p: &mut Planner<'_>, spec: &KeySpec, t: &Arc<Table>) -> Result<PartKey> {
        let scope = scope_of(t);
        let mut exprs = Vec::new();
        let mut types = Vec::new();
        let mut names = Vec::new();
        for (k, e) in spec.exprs.iter().enumerate() {
            let x = Expr::compile(p, &scope, e)?;
            if x.has_subquery() || crate::query::has_aggregate(e) {
                return Err(SqlError::new(
                    ErrorKind::FeatureNotSupported,
                    "cannot use subquery in partition key expression",
                ));
            }
            let ty = match spec.column_name(k) {
                Some(c) => match t.def.column_index(&c) {
                    Some(i) => t.def.columns[i].data_type.clone(),
                    None => {
                        return Err(SqlError::new(
                            ErrorKind::UndefinedColumn,
                            format!("column \"{c}\" named in partition key does not exist"),
                        ))
                    }
                },
                None => expr_type(p, e, t)?,
            };
            names.push(match spec.column_name(k) {
                Some(c) => c,
                None => e.to_string(),
            });
            exprs.push(x);
            types.push(ty);
        }
        Ok(PartKey {
            spec: spec.clone(),
            exprs,
            types,
            names,
        })
    }

    pub fn strategy(&self) -> Strategy {
        self.spec.strategy
    }

    /// The key's values for a row of the table it was compiled against.
    pub fn eval(&self, row: &[Value], env: &Env<'_>) -> Result<Vec<Value>> {
        self.exprs.iter().map(|e| e.eval(row, env)).collect()
    }

    /// `(a, b) = (1, 2)`, as PostgreSQL's details show a key.
    pub fn describe(&self, key: &[Value]) -> String {
        let vals: Vec<String> = key
            .iter()
            .map(|v| match v {
                Value::Null => "null".to_string(),
                v => v.to_string(),
            })
            .collect();
        format!("({}) = ({})", self.names.join(", "), vals.join(", "))
    }
}

/// The type of a key expression over `t`'s columns, as a query would have it.
/// (Read over a one-row VALUES list of its columns' types, so a table
/// being created, not yet in the catalog, has its key's types too.)
fn expr_type(p: &mut Planner<'_>, e: &sqlparser::ast::Expr, t: &Table) -> Result<DataType> {
    let q = crate::types::quote::quote_ident;
    let nulls: Vec<String> = t
        .def
        .columns
        .iter()
        .map(|c| format!("NULL::{}", c.data_type.sql_name()))
        .collect();
    let names: Vec<String> = t.def.columns.iter().map(|c| q(&c.name)).collect();
    let sql = format!(
        "SELECT {e} FROM (VALUES ({})) AS {}({})",
        nulls.join(", "),
        q(&display_name(t)),
        names.join(", ")
    );
    let sqlparser::ast::Statement::Query(q) = crate::front::parse_sql(&sql)? else {
        return Err(SqlError::internal("partition key query"));
    };
    let plan = crate::query::plan_query(p, &q, None)?;
    Ok(plan.columns[0].ty.clone())
}

/// One table of a partition tree.
pub struct Node {
    pub table: Arc<Table>,
    /// Its bound in its parent (set below the root).
    pub bound: Option<Bound>,
    /// Its key, compiled against its own columns, if it is partitioned.
    pub key: Option<PartKey>,
    /// Its partitions, in bound order (default last).
    pub children: Vec<Node>,
    /// For each of its columns, the position of the same-named column in
    /// its parent (below the root).
    pub from_parent: Vec<usize>,
}

/// The partitions of table `id` the planner's transaction sees.
pub fn partitions_of(p: &Planner<'_>, id: u32) -> Vec<Arc<Table>> {
    p.db.tables_as(p.viewer)
        .into_iter()
        .filter(|t| {
            t.def
                .partition_of
                .as_ref()
                .is_some_and(|po| po.parent == id)
        })
        .collect()
}

/// The table with this id, as the planner's transaction sees it.
pub fn table_by_id(p: &Planner<'_>, id: u32) -> Option<Arc<Table>> {
    p.db.tables_as(p.viewer).into_iter().find(|t| t.id() == id)
}

impl Node {
    /// `t` and the partitions below it.
    pub fn load(p: &mut Planner<'_>, t: Arc<Table>) -> Result<Node> {
        Node::load_below(p, t, None)
    }

    fn load_below(
        p: &mut Planner<'_>,
        t: Arc<Table>,
        parent: Option<(&Arc<Table>, &PartKey)>,
    ) -> Result<Node> {
        let (bound, from_parent) = match parent {
            None => (None, Vec::new()),
            Some((pt, pk)) => {
                let po = t.def.partition_of.as_ref().expect("a partition");
                let b = Bound::parse(&po.bound, pk.strategy(), &pk.types)?;
                (Some(b), column_map(&t, pt)?)
            }
        };
        let key = match &t.def.partition_key {
            Some(text) => Some(PartKey::compile(p, &KeySpec::parse(text)?, &t)?),
            None => None,
        };
        let mut children = Vec::new();
        if let Some(k) = &key {
            for c in partitions_of(p, t.id()) {
                children.push(Node::load_below(p, c, Some((&t, k)))?);
            }
            children.sort_by(|a, b| {
                let (x, y) = (a.bound.as_ref().unwrap(), b.bound.as_ref().unwrap());
                x.order(y)
            });
        }
        Ok(Node {
            table: t,
            bound,
            key,
            children,
            from_parent,
        })
    }

    /// The tables below that hold rows (partitions not partitioned
    /// themselves), in order.
    pub fn leaves(&self) -> Vec<&Node> {
        let mut out = Vec::new();
        self.collect_leaves(&mut out);
        out
    }

    fn collect_leaves<'n>(&'n self, out: &mut Vec<&'n Node>) {
        if self.key.is_none() {
            out.push(self);
        }
        for c in &self.children {
            c.collect_leaves(out);
        }
    }

    /// The partition among `self.children` that takes a key (a default
    /// one when no other does).
    fn child_for(&self, key: &[Value]) -> Option<&Node> {
        // (Hash partitioning is refused when a table is created.)
        let hit = self
            .children
            .iter()
            .find(|c| c.bound.as_ref().is_some_and(|b| b.contains(key)));
        hit.or_else(|| {
            self.children
                .iter()
                .find(|c| matches!(c.bound, Some(Bound::Default)))
        })
    }

    /// The leaf that takes `row` (this table's column order) and the row
    /// in the leaf's column order; 23514 when none does.
    pub fn route(&self, row: Vec<Value>, env: &Env<'_>) -> Result<(&Node, Vec<Value>)> {
        let Some(key_def) = &self.key else {
            return Ok((self, row));
        };
        let key = key_def.eval(&row, env)?;
        let Some(child) = self.child_for(&key) else {
            return Err(SqlError::new(
                ErrorKind::CheckViolation,
                format!(
                    "no partition of relation \"{}\" found for row",
                    display_name(&self.table)
                ),
            )
            .with_fields(ErrorFields {
                detail: Some(format!(
                    "Partition key of the failing row contains {}.",
                    key_def.describe(&key)
                )),
                table: Some(display_name(&self.table)),
                ..Default::default()
            }));
        };
        let mapped: Vec<Value> = child.from_parent.iter().map(|&i| row[i].clone()).collect();
        child.route(mapped, env)
    }
}

/// The table's name as messages give it (without its schema).
pub fn display_name(t: &Table) -> String {
    walden_engine::namespace::split_engine_name(t.name())
        .1
        .to_string()
}

/// For each column of `child`, the position of the same-named column in
/// `parent`; partitions have their parent's columns (42P16 otherwise).
pub fn column_map(child: &Table, parent: &Table) -> Result<Vec<usize>> {
    if child.def.columns.len() != parent.def.columns.len() {
        return Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!(
                "table \"{}\" contains {} columns, parent \"{}\" has {}",
                display_name(child),
                child.def.columns.len(),
                display_name(parent),
                parent.def.columns.len()
            ),
        ));
    }
    child
        .def
        .columns
        .iter()
        .map(|c| {
            let i = parent.def.column_index(&c.name).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::DatatypeMismatch,
                    format!(
                        "table \"{}\" contains column \"{}\" not found in parent \"{}\"",
                        display_name(child),
                        c.name,
                        display_name(parent)
                    ),
                )
            })?;
            if parent.def.columns[i].data_type != c.data_type {
                return Err(SqlError::new(
                    ErrorKind::DatatypeMismatch,
                    format!(
                        "child table \"{}\" has different type for column \"{}\"",
                        display_name(child),
                        c.name
                    ),
                ));
            }
            Ok(i)
        })
        .collect()
}

/// What a partition's bounds let in, up to (not including) an ancestor:
/// per level, the parent's key compiled against this table's columns,
/// the bound, and for a default partition its siblings' bounds.
pub struct Constraint {
    table: String,
    levels: Vec<(PartKey, Bound, Vec<Bound>)>,
}

impl Constraint {
    /// The constraint of `t` below `upto` (`None`: all its ancestors).
    /// Empty when `t` is not a partition.
    pub fn of(p: &mut Planner<'_>, t: &Arc<Table>, upto: Option<u32>) -> Result<Constraint> {
        let mut levels = Vec::new();
        let mut cur = t.clone();
        while let Some(po) = cur.def.partition_of.clone() {
            // (The level below `upto` is the last one kept.)
            if Some(cur.id()) == upto {
                break;
            }
            let Some(parent) = table_by_id(p, po.parent) else {
                break;
            };
            let spec = KeySpec::parse(parent.def.partition_key.as_deref().unwrap_or(""))?;
            let key = PartKey::compile(p, &spec, t)?;
            let bound = Bound::parse(&po.bound, spec.strategy, &key.types)?;
            let siblings = if bound == Bound::Default {
                partitions_of(p, parent.id())
                    .iter()
                    .filter(|s| s.id() != cur.id())
                    .map(|s| {
                        let b = &s.def.partition_of.as_ref().unwrap().bound;
                        Bound::parse(b, spec.strategy, &key.types)
                    })
                    .collect::<Result<Vec<_>>>()?
            } else {
                Vec::new()
            };
            levels.push((key, bound, siblings));
            cur = parent;
        }
        Ok(Constraint {
            table: display_name(t),
            levels,
        })
    }

    /// Whether a row of the table satisfies its partition constraint.
    pub fn admits(&self, row: &[Value], env: &Env<'_>) -> Result<bool> {
        for (key, bound, siblings) in &self.levels {
            let k = key.eval(row, env)?;
            let ok = match bound {
                Bound::Default => !siblings.iter().any(|s| s.contains(&k)),
                b => b.contains(&k),
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// 23514 unless the row satisfies the constraint.
    pub fn enforce(&self, row: &[Value], env: &Env<'_>) -> Result<()> {
        if self.admits(row, env)? {
            return Ok(());
        }
        let values: Vec<String> = row
            .iter()
            .map(|v| match v {
                Value::Null => "null".to_string(),
                v => v.to_string(),
            })
            .collect();
        Err(SqlError::new(
            ErrorKind::CheckViolation,
            format!(
                "new row for relation \"{}\" violates partition constraint",
                self.table
            ),
        )
        .with_fields(ErrorFields {
            detail: Some(format!("Failing row contains ({}).", values.join(", "))),
            table: Some(self.table.clone()),
            ..Default::default()
        }))
    }
}
