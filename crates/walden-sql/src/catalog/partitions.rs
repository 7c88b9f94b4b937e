//! Partitioned tables' DDL: `CREATE TABLE ... PARTITION BY`, `CREATE TABLE
//! ... PARTITION OF`, `ALTER TABLE ... ATTACH | DETACH PARTITION`, and what
//! DROP and TRUNCATE of a partitioned table do to its partitions. The
//! key and bounds are stored as text in the tables' definitions (logged,
//! recovered and replicated with them); `query::partition` reads them.

use crate::dml::Ctx;
use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::{Expr, Scope};
use crate::query::partition::{Bound, KeySpec, Node, PartKey};
use crate::query::{object_last, Planner};
use crate::QueryOutput;
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::{PartitionOf, Table, TableDef, Transaction, Value};

fn invalid_def(m: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::InvalidObjectDefinition, m)
}

fn display(t: &Table) -> String {
    crate::query::partition::display_name(t)
}

/// Refuses the parts of a partitioned table Walden does not carry.
fn refuse_unsupported_parent(def: &TableDef) -> Result<()> {
    if def.indexes.iter().any(|ix| !ix.unique || ix.constraint) && !def.indexes.is_empty() {
        return Err(SqlError::unsupported(
            "UNIQUE constraints and indexes on partitioned tables",
        ));
    }
    if !def.foreign_keys.is_empty() {
        return Err(SqlError::unsupported(
            "FOREIGN KEY constraints on partitioned tables",
        ));
    }
    if def.identity_column().is_some() {
        return Err(SqlError::unsupported(
            "identity and serial columns of partitioned tables",
        ));
    }
    Ok(())
}

/// A PRIMARY KEY of a partitioned table must hold the key's columns.
fn check_key_covers(def: &TableDef, spec: &KeySpec) -> Result<()> {
    if def.primary_key.is_empty() {
        return Ok(());
    }
    for k in 0..spec.exprs.len() {
        let Some(col) = spec.column_name(k) else {
            return Err(SqlError::unsupported(
                "PRIMARY KEY constraint with partition key definition",
            ));
        };
        let covered = def
            .primary_key
            .iter()
            .any(|&i| def.columns[i].name.eq_ignore_ascii_case(&col));
        if !covered {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "unique constraint on partitioned table must include all partitioning columns",
            )
            .with_fields(crate::error::ErrorFields {
                detail: Some(format!(
                    "PRIMARY KEY constraint on table \"{}\" lacks column \"{col}\" which is part of the partition key.",
                    def.name
                )),
                ..Default::default()
            }));
        }
    }
    Ok(())
}

/// `CREATE TABLE` with `PARTITION BY` and/or `PARTITION OF`.
pub(crate) fn create(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    ct: &ast::CreateTable,
) -> Result<QueryOutput> {
    let name = object_last(&ct.name);
    if ct.if_not_exists && p.db.table_as(p.viewer, &name).is_ok() {
        let mut out = QueryOutput::command("CREATE TABLE");
        out.notices
            .push(format!("relation \"{name}\" already exists, skipping"));
        return Ok(out);
    }
    let spec = ct
        .partition_by
        .as_deref()
        .map(KeySpec::from_ast)
        .transpose()?;
    let mut plain = ct.clone();
    plain.partition_by = None;
    plain.partition_of = None;
    plain.for_values = None;
    crate::catalog::create_table_clauses::refuse_unhonoured(&plain)?;
    let mut made = match &ct.partition_of {
        None => crate::catalog::ddl::table_def(&p.db, p.system, tx, &plain)?,
        Some(parent_name) => {
            let parent = p.table(parent_name)?;
            crate::catalog::ddl::NewTable::plain(partition_def(
                p,
                tx,
                ctx,
                &plain,
                &parent,
                ct.for_values.as_ref(),
            )?)
        }
    };
    let def = &mut made.def;
    if let Some(spec) = &spec {
        refuse_unsupported_parent(def)?;
        check_key_covers(def, spec)?;
        // The key must compile against the columns (42703 otherwise).
        let t = Arc::new(Table::new(def.clone()));
        PartKey::compile(p, spec, &t)?;
        def.partition_key = Some(spec.text());
    }
    made.create(&p.db, tx)?;
    Ok(QueryOutput::command("CREATE TABLE"))
}

/// The definition of a new partition of `parent`: the parent's columns
/// and primary key, the statement's CHECK constraints, and its bound.
fn partition_def(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    ct: &ast::CreateTable,
    parent: &Arc<Table>,
    fv: Option<&ast::ForValues>,
) -> Result<TableDef> {
    let name = object_last(&ct.name);
    if !ct.columns.is_empty() {
        return Err(SqlError::unsupported(
            "column definitions in CREATE TABLE ... PARTITION OF",
        ));
    }
    if ct
        .constraints
        .iter()
        .any(|c| !matches!(c, ast::TableConstraint::Check(_)))
    {
        return Err(SqlError::unsupported(
            "constraints other than CHECK in CREATE TABLE ... PARTITION OF",
        ));
    }
    let mut columns = parent.def.columns.clone();
    for c in &mut columns {
        c.identity = None;
    }
    // The parent's CHECK constraints hold in each partition, as PostgreSQL
    // copies them; then the statement's own.
    let mut checks = parent.def.checks.clone();
    checks.extend(checks_of(p, &name, &columns, ct)?);
    let mut def = TableDef {
        id: 0,
        name: name.clone(),
        columns,
        primary_key: parent.def.primary_key.clone(),
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        indexes: Vec::new(),
        pk_name: None,
        partition_key: None,
        partition_of: None,
    }
    .with_checks(checks)
    .map_err(crate::catalog::ddl::map_def_err)?;
    let bound = new_bound(p, tx, ctx, parent, &name, fv)?;
    def.partition_of = Some(PartitionOf {
        parent: parent.id(),
        bound: bound.text(),
    });
    Ok(def)
}

/// The CHECK constraints a `PARTITION OF` statement declares, compiled
/// against the parent's columns.
fn checks_of(
    p: &mut Planner<'_>,
    name: &str,
    columns: &[walden_engine::ColumnDef],
    ct: &ast::CreateTable,
) -> Result<Vec<walden_engine::CheckDef>> {
    let mut declared = Vec::new();
    for c in &ct.constraints {
        if let ast::TableConstraint::Check(ck) = c {
            declared.push(crate::catalog::ddl::declared_check(None, ck)?);
        }
    }
    crate::catalog::constraints::declare(
        p,
        name,
        columns,
        declared,
        crate::catalog::constraints::names_in_use(&p.db),
    )
}

/// The bound of a partition `name` to be of `parent`, checked against its
/// siblings (42P17 on an overlap) and against the rows of a default
/// partition that the new one would take (23514).
fn new_bound(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    parent: &Arc<Table>,
    name: &str,
    fv: Option<&ast::ForValues>,
) -> Result<Bound> {
    let Some(key_text) = &parent.def.partition_key else {
        return Err(invalid_def(format!(
            "\"{}\" is not partitioned",
            display(parent)
        )));
    };
    let fv = fv.ok_or_else(|| SqlError::syntax("PARTITION OF needs FOR VALUES or DEFAULT"))?;
    let spec = KeySpec::parse(key_text)?;
    let key = PartKey::compile(p, &spec, parent)?;
    let empty = Arc::new(Scope::default());
    let mut compiled: Vec<Expr> = Vec::new();
    let mut eval = |e: &ast::Expr| -> Result<Value> {
        let x = Expr::compile(p, &empty, e)?;
        let v = x.eval(&[], &ctx.env(tx));
        compiled.push(x);
        v
    };
    let bound = Bound::from_ast(fv, spec.strategy, &key.types, &key.names, &mut eval)?;
    if let Bound::Range { from, to } = &bound {
        if crate::query::partition::cmp_bounds(from, to) != std::cmp::Ordering::Less {
            let b = Bound::Range {
                from: from.clone(),
                to: to.clone(),
            }
            .text();
            let (lo, hi) = b
                .strip_prefix("FOR VALUES FROM ")
                .and_then(|r| r.split_once(" TO "))
                .unwrap_or(("", ""));
            return Err(invalid_def(format!(
                "empty range bound specified for partition \"{name}\""
            ))
            .with_fields(crate::error::ErrorFields {
                detail: Some(format!(
                    "Specified lower bound {lo} is greater than or equal to upper bound {hi}."
                )),
                ..Default::default()
            }));
        }
    }
    let siblings = crate::query::partition::partitions_of(p, parent.id());
    for s in &siblings {
        let sb = Bound::parse(
            &s.def.partition_of.as_ref().expect("a partition").bound,
            spec.strategy,
            &key.types,
        )?;
        if bound == Bound::Default && sb == Bound::Default {
            return Err(invalid_def(format!(
                "partition \"{name}\" conflicts with existing default partition \"{}\"",
                display(s)
            )));
        }
        if bound.overlaps(&sb) {
            return Err(invalid_def(format!(
                "partition \"{name}\" would overlap partition \"{}\"",
                display(s)
            )));
        }
    }
    // A default partition's rows the new partition would take.
    if bound != Bound::Default {
        let default = siblings.iter().find(|s| {
            s.def
                .partition_of
                .as_ref()
                .is_some_and(|po| po.bound == "DEFAULT")
        });
        if let Some(d) = default {
            let node = Node::load(p, d.clone())?;
            for leaf in node.leaves() {
                let k = PartKey::compile(p, &spec, &leaf.table)?;
                let rows = tx.scan(
                    leaf.table.name(),
                    (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
                )?;
                let env = ctx.env(tx);
                for (_, r) in rows {
                    if bound.contains(&k.eval(&r, &env)?) {
                        return Err(SqlError::new(
                            ErrorKind::CheckViolation,
                            format!(
                                "updated partition constraint for default partition \"{}\" would be violated by some row",
                                display(d)
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(bound)
}

/// `ALTER TABLE parent ATTACH PARTITION child FOR VALUES ...`: the child's
/// columns must be the parent's (by name and type), its rows must fit the
/// bound (23514 otherwise).
pub(crate) fn attach(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    parent_name: &ast::ObjectName,
    child_name: &ast::ObjectName,
    fv: &ast::ForValues,
) -> Result<QueryOutput> {
    let parent = p.table(parent_name)?;
    let child = p.table(child_name)?;
    let cname = display(&child);
    if child.def.partition_of.is_some() {
        return Err(SqlError::new(
            ErrorKind::WrongObjectType,
            format!("\"{cname}\" is already a partition"),
        ));
    }
    if child.id() == parent.id() || is_ancestor(p, child.id(), &parent) {
        return Err(SqlError::new(
            ErrorKind::DuplicateTable,
            "circular inheritance not allowed".to_string(),
        )
        .with_fields(crate::error::ErrorFields {
            detail: Some(format!(
                "\"{cname}\" is already a child of \"{}\".",
                display(&parent)
            )),
            ..Default::default()
        }));
    }
    crate::query::partition::column_map(&child, &parent)?;
    // As PostgreSQL: the parent's NOT NULL and CHECK constraints must be
    // the table's too.
    for c in &parent.def.columns {
        let i = child.def.column_index(&c.name).unwrap_or(0);
        if !c.nullable && child.def.columns[i].nullable {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!(
                    "column \"{}\" in child table must be marked NOT NULL",
                    c.name
                ),
            ));
        }
    }
    for ck in &parent.def.checks {
        if !child.def.checks.iter().any(|c| c.name == ck.name) {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!("child table is missing constraint \"{}\"", ck.name),
            ));
        }
    }
    if !child.def.foreign_keys.is_empty() || !p.db.referencing(child.id()).is_empty() {
        return Err(SqlError::unsupported(
            "ATTACH PARTITION of a table with foreign keys",
        ));
    }
    if parent.def.primary_key.len() != child.def.primary_key.len()
        || parent
            .def
            .primary_key
            .iter()
            .zip(&child.def.primary_key)
            .any(|(&a, &b)| {
                !parent.def.columns[a]
                    .name
                    .eq_ignore_ascii_case(&child.def.columns[b].name)
            })
    {
        return Err(SqlError::unsupported(
            "ATTACH PARTITION of a table whose primary key differs from its parent's",
        ));
    }
    let bound = new_bound(p, tx, ctx, &parent, &cname, Some(fv))?;
    let mut def = child.def.clone();
    def.partition_of = Some(PartitionOf {
        parent: parent.id(),
        bound: bound.text(),
    });
    let name = child.name().to_string();
    tx.alter_table(&name, |_| -> Result<_> {
        Ok(Some(walden_engine::Alteration { def, rewrite: None }))
    })?;
    // Its rows must satisfy their new partition constraint: a failure
    // fails the statement, and with it the transaction's change.
    let child = p.db.table_as(p.viewer, &name)?;
    let node = Node::load(p, child.clone())?;
    for leaf in node.leaves() {
        let cons = crate::query::partition::Constraint::of(p, &leaf.table, None)?;
        let rows = tx.scan(
            leaf.table.name(),
            (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
        )?;
        let env = ctx.env(tx);
        for (_, r) in rows {
            if !cons.admits(&r, &env)? {
                return Err(SqlError::new(
                    ErrorKind::CheckViolation,
                    format!(
                        "partition constraint of relation \"{}\" is violated by some row",
                        display(&leaf.table)
                    ),
                ));
            }
        }
    }
    Ok(QueryOutput::command("ALTER TABLE"))
}

fn is_ancestor(p: &Planner<'_>, id: u32, t: &Table) -> bool {
    let mut cur = t.def.partition_of.as_ref().map(|po| po.parent);
    while let Some(pid) = cur {
        if pid == id {
            return true;
        }
        cur = crate::query::partition::table_by_id(p, pid)
            .and_then(|t| t.def.partition_of.as_ref().map(|po| po.parent));
    }
    false
}

/// `ALTER TABLE parent DETACH PARTITION child`.
pub(crate) fn detach(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    parent_name: &ast::ObjectName,
    child_name: &ast::ObjectName,
) -> Result<QueryOutput> {
    let parent = p.table(parent_name)?;
    let child = p.table(child_name)?;
    if child.def.partition_of.as_ref().map(|po| po.parent) != Some(parent.id()) {
        return Err(SqlError::new(
            ErrorKind::UndefinedTable,
            format!(
                "relation \"{}\" is not a partition of relation \"{}\"",
                display(&child),
                display(&parent)
            ),
        ));
    }
    let mut def = child.def.clone();
    def.partition_of = None;
    let name = child.name().to_string();
    tx.alter_table(&name, |_| -> Result<_> {
        Ok(Some(walden_engine::Alteration { def, rewrite: None }))
    })?;
    Ok(QueryOutput::command("ALTER TABLE"))
}

/// The partitions of table `t` (all levels, deepest first), which DROP
/// TABLE drops before it.
pub(crate) fn all_partitions(
    db: &walden_engine::Database,
    viewer: Option<u64>,
    t: &Table,
) -> Vec<Arc<Table>> {
    let tables = db.tables_as(viewer);
    let mut out = Vec::new();
    fn walk(tables: &[Arc<Table>], id: u32, out: &mut Vec<Arc<Table>>) {
        for c in tables.iter().filter(|c| {
            c.def
                .partition_of
                .as_ref()
                .is_some_and(|po| po.parent == id)
        }) {
            walk(tables, c.id(), out);
            out.push(c.clone());
        }
    }
    walk(&tables, t.id(), &mut out);
    out
}
