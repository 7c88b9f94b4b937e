//! Data-modifying statements in WITH (`WITH t AS (DELETE ... RETURNING *)
//! SELECT ...`) and WITH attached to INSERT, UPDATE or DELETE.
//!
//! PostgreSQL runs every part of such a statement on one snapshot: each
//! data-modifying WITH query runs exactly once, to completion, whether or
//! not anything reads it; no part sees another's changes to the tables,
//! only its RETURNING rows. Walden runs the parts in order instead, each
//! data-modifying one at once with its RETURNING rows kept as the WITH
//! query's rows, then the main statement. That is PostgreSQL's answer
//! exactly when no part reads a table an earlier part changed, so a part
//! that would is refused (0A000) rather than shown the change; so is any
//! table read after a part whose changes reach further than its target
//! (row triggers, foreign keys that act on other tables). The read-only
//! WITH queries of a statement that writes are run before it too, as the
//! snapshot it started from: a read of the target in a correlated subquery
//! would otherwise see the rows the statement has already changed.

use super::Ctx;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::plpgsql::trigger::TrigOp;
use crate::query::{self, Body, LimitMode, Planner, QueryPlan};
use crate::{Column, QueryOutput};
use sqlparser::ast::{self, SetExpr, Statement};
use std::sync::Arc;
use walden_engine::{Transaction, Value};

/// The INSERT, UPDATE or DELETE a query's body is, if it is one.
fn dml_of(q: &ast::Query) -> Option<&Statement> {
    match q.body.as_ref() {
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) => Some(s),
        _ => None,
    }
}

/// Whether `q` is a statement this module runs: WITH with a data-modifying
/// query, or WITH attached to INSERT, UPDATE or DELETE.
pub(crate) fn applies(q: &ast::Query) -> bool {
    let Some(with) = &q.with else {
        return false;
    };
    dml_of(q).is_some() || with.cte_tables.iter().any(|c| dml_of(&c.query).is_some())
}

/// What the parts run so far changed.
#[derive(Default)]
struct Changed {
    /// Tables changed, by id.
    tables: Vec<u32>,
    /// A part changed more than its target (see the module comment).
    beyond: bool,
}

impl Changed {
    /// Refuses a part that read (resolved) a changed table; `own`: the
    /// table an INSERT writes, whose first resolution is not a read.
    fn check(&self, used: &[(u32, String)], own: Option<u32>) -> Result<()> {
        let mut own = own;
        for (id, name) in used {
            if own == Some(*id) {
                own = None;
                continue;
            }
            if self.beyond || self.tables.contains(id) {
                return Err(SqlError::unsupported(format!(
                    "a statement with a data-modifying WITH query that reads table \"{name}\" after another part changed {}",
                    if self.beyond { "tables" } else { "it" }
                )));
            }
        }
        Ok(())
    }
}

/// A planner for one part: the statement's, with the WITH queries so far.
fn part_planner<'a>(p: &Planner<'a>) -> Planner<'a> {
    let mut q = Planner::new(p.db.clone(), p.system, &p.params);
    q.viewer = p.viewer;
    q.path = p.path.clone();
    q.ctes = p.ctes.clone();
    q
}

/// A WITH query's rows, already made, as a plan.
fn rows_plan(columns: Vec<Column>, rows: Vec<Vec<Value>>) -> QueryPlan {
    QueryPlan {
        columns,
        body: Body::Values(
            rows.into_iter()
                .map(|r| r.into_iter().map(crate::expr::Expr::Lit).collect())
                .collect(),
        ),
        order: vec![],
        limit: None,
        offset: None,
        limit_mode: LimitMode::default(),
        correlated: false,
    }
}

/// Names a WITH query's columns from its alias's column list.
fn rename(cte: &ast::Cte, columns: &mut [Column]) -> Result<()> {
    query::cte_column_count(cte, columns.len())?;
    for (c, a) in columns.iter_mut().zip(cte.alias.columns.iter()) {
        c.name = a.name.value.to_ascii_lowercase();
    }
    Ok(())
}

/// Whether the words of `text` include `name` (an unquoted identifier
/// compares folded): a WITH query no later part names is not run, as
/// PostgreSQL does not run an unread read-only one.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .any(|w| w.eq_ignore_ascii_case(name))
}

/// Refuses what PostgreSQL refuses, and what this module cannot order:
/// a data-modifying WITH query in a WITH RECURSIVE list that names a later
/// query (PostgreSQL lets it read one, on its shared snapshot).
fn check_order(with: &ast::With) -> Result<()> {
    for (i, cte) in with.cte_tables.iter().enumerate() {
        if dml_of(&cte.query).is_none() {
            continue;
        }
        let text = cte.query.to_string();
        let name = &cte.alias.name.value;
        if with.recursive && mentions(&text, name) {
            return Err(SqlError::new(
                ErrorKind::InvalidRecursion,
                format!("recursive query \"{name}\" must not contain data-modifying statements"),
            ));
        }
        // Its own WITH list would hide names from the statement it runs.
        if cte.query.with.is_some() {
            return Err(SqlError::unsupported(
                "a WITH list inside a data-modifying WITH query",
            ));
        }
        if with.recursive
            && with.cte_tables[i + 1..]
                .iter()
                .any(|later| mentions(&text, &later.alias.name.value))
        {
            return Err(SqlError::unsupported(
                "a data-modifying WITH query that reads itself or a later WITH query",
            ));
        }
    }
    Ok(())
}

/// The table a data-modifying statement writes, and whether its changes
/// may reach further (row triggers, foreign keys that act).
fn target_of(
    p: &Planner<'_>,
    tx: &Transaction,
    ctx: &Ctx<'_>,
    stmt: &Statement,
) -> Result<(u32, bool)> {
    let (name, op) = match stmt {
        Statement::Insert(ins) => match &ins.table {
            ast::TableObject::TableName(n) => (n, TrigOp::Insert),
            _ => {
                return Err(SqlError::unsupported(
                    "INSERT INTO a table function in WITH",
                ))
            }
        },
        Statement::Update(u) => match &u.table.relation {
            ast::TableFactor::Table { name, .. } => (name, TrigOp::Update),
            _ => return Err(SqlError::unsupported("UPDATE of this target in WITH")),
        },
        Statement::Delete(d) => {
            let tables = match &d.from {
                ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
            };
            match tables.first().map(|t| &t.relation) {
                Some(ast::TableFactor::Table { name, .. }) => (name, TrigOp::Delete),
                _ => return Err(SqlError::unsupported("DELETE of this target in WITH")),
            }
        }
        _ => return Err(SqlError::internal("not a data-modifying statement")),
    };
    let t = p.table(name)?;
    let triggers = super::triggers::Firing::load(tx, ctx, &t, op, &[])?.is_some()
        || super::triggers::Firing::load(tx, ctx, &t, TrigOp::Update, &[])?.is_some();
    let acts = op != TrigOp::Insert && !tx.database().referencing(t.id()).is_empty();
    Ok((t.id(), triggers || acts))
}

/// Checks the privileges a planned part needs: a data-modifying statement's
/// (`Some`) or a query's (`None`). The session supplies it (the catalogs
/// that know privileges are a stage above this one).
pub(crate) type Privileges<'c> = &'c dyn Fn(&Planner<'_>, Option<&Statement>) -> Result<()>;

/// Plans and runs one INSERT, UPDATE or DELETE in `p`, after checking the
/// privileges it needs and that it reads nothing `changed` holds.
fn run_dml(
    p: &mut Planner<'_>,
    who: Privileges<'_>,
    stmt: &Statement,
    changed: &Changed,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    enum Plan {
        Insert(super::InsertPlan),
        Update(super::Planned),
        Delete(super::DeletePlan),
    }
    let (plan, own) = match stmt {
        Statement::Insert(ins) => {
            let pl = super::plan_insert(p, ins)?;
            // ON CONFLICT reads the target's rows.
            let own = ins.on.is_none().then(|| pl.table.id());
            (Plan::Insert(pl), own)
        }
        Statement::Update(u) => (Plan::Update(super::plan_update(p, u)?), None),
        Statement::Delete(d) => (Plan::Delete(super::plan_delete_limit(p, d, None)?), None),
        _ => return Err(SqlError::internal("not a data-modifying statement")),
    };
    changed.check(&p.used_tables(), own)?;
    who(p, Some(stmt))?;
    match &plan {
        Plan::Insert(i) => super::run_insert(i, tx, ctx),
        Plan::Update(u) => super::run_update(u, tx, ctx),
        Plan::Delete(d) => super::run_delete(d, tx, ctx),
    }
}

/// Runs `q` (see [`applies`]) in `tx`.
pub(crate) fn run(
    p: &mut Planner<'_>,
    who: Privileges<'_>,
    q: &ast::Query,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    let with = q.with.as_ref().expect("applies");
    check_order(with)?;
    let main = dml_of(q);
    let mut changed = Changed::default();
    // What follows each WITH query, to see whether anything reads it.
    let main_text = match main {
        Some(s) => s.to_string(),
        None => {
            q.body.to_string()
                + &q.order_by
                    .as_ref()
                    .map(|o| o.to_string())
                    .unwrap_or_default()
        }
    };
    for (i, cte) in with.cte_tables.iter().enumerate() {
        let name = cte.alias.name.value.to_ascii_lowercase();
        let mut part = part_planner(p);
        let plan = match dml_of(&cte.query) {
            Some(stmt) => {
                let (target, beyond) = target_of(&part_planner(p), tx, ctx, stmt)?;
                let out = run_dml(&mut part, who, stmt, &changed, tx, ctx)?;
                changed.tables.push(target);
                changed.beyond |= beyond;
                match out.columns {
                    Some(mut columns) => {
                        rename(cte, &mut columns)?;
                        rows_plan(columns, out.rows)
                    }
                    None => {
                        // Read nowhere (as PostgreSQL requires): not listed.
                        let later = with.cte_tables[i + 1..]
                            .iter()
                            .map(|c| c.query.to_string())
                            .chain(std::iter::once(main_text.clone()));
                        if later.into_iter().any(|t| mentions(&t, &name)) {
                            return Err(SqlError::new(
                                ErrorKind::FeatureNotSupported,
                                format!("WITH query \"{name}\" does not have a RETURNING clause"),
                            ));
                        }
                        continue;
                    }
                }
            }
            None => {
                let later_reads = with.cte_tables[i + 1..]
                    .iter()
                    .any(|c| mentions(&c.query.to_string(), &name))
                    || mentions(&main_text, &name);
                if !later_reads {
                    continue;
                }
                let mut plan = if with.recursive {
                    query::plan_recursive_cte(&mut part, cte, None)?
                } else {
                    query::plan_query(&mut part, &cte.query, None)?
                };
                changed.check(&part.used_tables(), None)?;
                who(&part, None)?;
                if !with.recursive {
                    rename(cte, &mut plan.columns)?;
                }
                // Made now, from the snapshot the statement started with.
                let rows = query::execute_plan(&plan, &ctx.env(tx), None)?;
                rows_plan(plan.columns, rows)
            }
        };
        p.ctes.push((name, Arc::new(plan)));
    }
    let mut part = part_planner(p);
    match main {
        Some(stmt) => run_dml(&mut part, who, stmt, &changed, tx, ctx),
        None => {
            let mut body = q.clone();
            body.with = None;
            let plan = query::plan_query(&mut part, &body, None)?;
            changed.check(&part.used_tables(), None)?;
            who(&part, None)?;
            let rows = query::execute_plan(&plan, &ctx.env(tx), None)?;
            Ok(QueryOutput {
                tag: format!("SELECT {}", rows.len()),
                columns: Some(plan.columns),
                rows,
                ..Default::default()
            })
        }
    }
}

/// The columns `q` returns, planned without running anything (the
/// extended protocol's Describe).
pub(crate) fn describe(p: &mut Planner<'_>, q: &ast::Query) -> Result<Option<Vec<Column>>> {
    let with = q.with.as_ref().expect("applies");
    for cte in &with.cte_tables {
        let name = cte.alias.name.value.to_ascii_lowercase();
        let mut part = part_planner(p);
        let columns = match dml_of(&cte.query) {
            Some(stmt) => match super::describe(&mut part, stmt)? {
                Some(c) => c,
                None => continue,
            },
            None if with.recursive => query::plan_recursive_cte(&mut part, cte, None)?.columns,
            None => query::plan_query(&mut part, &cte.query, None)?.columns,
        };
        p.params = part.params;
        let mut columns = columns;
        if !with.recursive {
            rename(cte, &mut columns)?;
        }
        p.ctes.push((name, Arc::new(rows_plan(columns, vec![]))));
    }
    let mut part = part_planner(p);
    let out = match dml_of(q) {
        Some(stmt) => super::describe(&mut part, stmt)?,
        None => {
            let mut body = q.clone();
            body.with = None;
            Some(query::plan_query(&mut part, &body, None)?.columns)
        }
    };
    p.params = part.params;
    Ok(out)
}
