//! EXPLAIN [ANALYZE]: plans the statement as the plan cache would (the
//! same rules, so the same plan), checks the privileges it needs, runs it
//! when asked (its effects stay, as in PostgreSQL; a transaction block
//! undoes them with it) while the executor counts each node's rows, and
//! returns the plan as rows of one `QUERY PLAN` column.

use super::execute::plan_command;
use super::{failed_tx, SqlSession, StmtPlan};
use crate::dml::{self, Ctx};
use crate::error::{Result, SqlError};
use crate::front::{Command, ExplainFormat, ExplainOptions};
use crate::query::explain::measure::{Measured, Recording};
use crate::query::explain::{self, Builder, Node, Summary};
use crate::query::{self, Planner};
use crate::{Column, QueryOutput};
use sqlparser::ast::Statement;
use std::sync::Arc;
use std::time::Instant;
use walden_engine::{DataType, Value};

/// The result column of an EXPLAIN in `format`.
pub(crate) fn columns(format: ExplainFormat) -> Vec<Column> {
    vec![Column {
        name: "QUERY PLAN".into(),
        ty: match format {
            ExplainFormat::Text => DataType::Text,
            ExplainFormat::Json => DataType::Json,
        },
        origin: None,
    }]
}

/// The statements EXPLAIN shows a plan for.
pub(crate) fn explainable(stmt: &Statement) -> Result<()> {
    match stmt {
        Statement::Query(q) if crate::catalog::create_as::select_into(q).is_some() => {
            Err(SqlError::unsupported("EXPLAIN of SELECT ... INTO"))
        }
        Statement::Query(_)
        | Statement::Insert(_)
        | Statement::Update(_)
        | Statement::Delete(_) => Ok(()),
        _ => Err(SqlError::unsupported(
            "EXPLAIN of this statement (SELECT, VALUES, INSERT, UPDATE and DELETE are explained)",
        )),
    }
}

impl SqlSession {
    pub(super) fn explain(
        &mut self,
        opts: ExplainOptions,
        stmt: &Statement,
        params: &[Value],
    ) -> Result<QueryOutput> {
        if self.failed {
            return Err(failed_tx());
        }
        explainable(stmt)?;
        let cmd = Arc::new(Command::Sql(Box::new(stmt.clone())));
        let who = self.who();
        let info = self.info();
        let cancel = self.cancel.clone();
        let inst = self.engine.instance.clone();
        let db = self.db.clone();
        let lines = self.in_tx(|tx, _| {
            let started = Instant::now();
            let mut p = Planner::new(db.clone(), info.system, &[]);
            p.viewer = Some(tx.id());
            p.path = info.path.clone();
            let plan = plan_command(&mut p, &cmd)?;
            let needs = crate::catalog::privileges::needs(&cmd, &p);
            crate::catalog::privileges::require(&who, db.id(), &needs)?;
            let planning = started.elapsed();
            let ctx = Ctx {
                params,
                info: &info,
                cancel: &cancel,
                instance: &inst,
            };
            let mut measured = None;
            let mut execution = None;
            let mut returned = 0;
            if opts.analyze {
                let rec = Recording::start();
                let ran = Instant::now();
                let out = match &plan {
                    StmtPlan::Query(q) => {
                        let env = ctx.env(tx);
                        query::execute_plan(q, &env, None).map(|rows| rows.len())
                    }
                    StmtPlan::Locking(l) => dml::locking::run(l, tx, &ctx).map(|o| o.rows.len()),
                    StmtPlan::Insert(i) => dml::run_insert(i, tx, &ctx).map(|o| o.rows.len()),
                    StmtPlan::Update(u) => dml::run_update(u, tx, &ctx).map(|o| o.rows.len()),
                    StmtPlan::Delete(d) => dml::run_delete(d, tx, &ctx).map(|o| o.rows.len()),
                    // Refused before planning (`explainable`).
                    StmtPlan::Merge(_) => Err(SqlError::unsupported("EXPLAIN of MERGE")),
                };
                execution = Some(ran.elapsed());
                measured = Some(rec.finish());
                returned = out?;
            }
            let root = tree(&plan, measured.as_ref(), opts.verbose, returned);
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
            let summary = Summary {
                costs: opts.costs,
                planning_ms: opts.summary.then(|| ms(planning)),
                execution_ms: if opts.summary {
                    execution.map(ms)
                } else {
                    None
                },
            };
            Ok(match opts.format {
                ExplainFormat::Text => explain::render_text(&root, &summary),
                ExplainFormat::Json => vec![explain::render_json(&root, &summary)],
            })
        })?;
        let rows = lines
            .into_iter()
            .map(|l| match opts.format {
                ExplainFormat::Text => vec![Value::text(&l)],
                ExplainFormat::Json => vec![Value::Json(l.into())],
            })
            .collect();
        Ok(QueryOutput {
            tag: "EXPLAIN".into(),
            columns: Some(columns(opts.format)),
            rows,
            ..Default::default()
        })
    }
}

/// The node tree of a planned statement; `returned`: the rows it gave the
/// client when it ran.
fn tree(plan: &StmtPlan, measured: Option<&Measured>, verbose: bool, returned: usize) -> Node {
    let mut b = Builder::new(measured, verbose);
    let mut root = match plan {
        StmtPlan::Query(q) => explain::query_node(&mut b, q),
        StmtPlan::Locking(l) => l.explain(&mut b),
        StmtPlan::Insert(i) => i.explain(&mut b),
        StmtPlan::Update(u) => dml::explain::update_node(&mut b, u),
        StmtPlan::Delete(d) => dml::explain::delete_node(&mut b, d),
        // Refused before planning; a bare node if it ever gets here.
        StmtPlan::Merge(_) => Node::new("Merge"),
    };
    if measured.is_some() && !matches!(plan, StmtPlan::Query(_)) {
        // What the statement returned is what its top node produced.
        root.actual = Some((returned as u64, 1));
    }
    root
}
