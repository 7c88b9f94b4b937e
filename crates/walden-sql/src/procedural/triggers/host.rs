//! The host a trigger function runs on: the firing statement's
//! transaction, writable (an audit table's INSERT is a statement like any
//! other), with the caller's privileges. Transaction control is refused;
//! savepoints (an EXCEPTION block) are the transaction's own.

use super::super::*;
use super::PgTriggers;
use crate::dml::Ctx;
use crate::front::transaction::TxCommand;
use crate::functions::SessionInfo;
use crate::query::{Planner, QueryPlan};
use sqlparser::ast::Statement;
use std::sync::atomic::AtomicBool;
use walden_engine::{Instance, Transaction};

pub(super) struct TxHost<'t, 'o> {
    pub tx: &'t mut Transaction,
    pub info: &'t SessionInfo,
    pub cancel: &'t AtomicBool,
    pub instance: &'t Instance,
    pub owner: &'o PgTriggers,
    pub state: TsqlState,
}

/// A statement planned for the trigger host.
pub(super) enum Planned {
    Query(QueryPlan),
    Insert(crate::dml::InsertPlan),
    Update(crate::dml::Planned),
    Delete(crate::dml::DeletePlan),
    Locking(crate::dml::locking::LockingPlan),
}

fn refuse(what: &str) -> SqlError {
    SqlError::unsupported(format!("{what} in a trigger function"))
}

fn plan(p: &mut Planner<'_>, cmd: &Command) -> Result<Planned> {
    match cmd {
        Command::Sql(stmt) => match stmt.as_ref() {
            Statement::Query(q) if crate::dml::is_merge(q).is_some() => Err(refuse("MERGE")),
            Statement::Query(q) if crate::catalog::create_as::select_into(q).is_some() => {
                Err(refuse("SELECT INTO a table"))
            }
            Statement::Query(q) if crate::dml::locking::wanted(q) => {
                Ok(Planned::Locking(crate::dml::locking::plan(p, q)?))
            }
            Statement::Query(q) => Ok(Planned::Query(crate::query::plan_query(p, q, None)?)),
            Statement::Insert(ins) => Ok(Planned::Insert(crate::dml::plan_insert(p, ins)?)),
            Statement::Update(u) => Ok(Planned::Update(crate::dml::plan_update(p, u)?)),
            Statement::Delete(d) => Ok(Planned::Delete(crate::dml::plan_delete_limit(p, d, None)?)),
            Statement::Merge(_) => Err(refuse("MERGE")),
            other => {
                let text = other.to_string();
                let head: Vec<&str> = text.split_whitespace().take(2).collect();
                Err(refuse(&head.join(" ").to_ascii_uppercase()))
            }
        },
        _ => Err(refuse("this statement")),
    }
}

impl Host for TxHost<'_, '_> {
    fn parse(&mut self, sql: &str) -> Result<Arc<Command>> {
        self.owner.parsed.parse(sql)
    }

    fn run(&mut self, cmd: &Arc<Command>, params: &[Value]) -> Result<QueryOutput> {
        self.run_typed(cmd, params, &[])
    }

    fn run_typed(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
        types: &[Option<DataType>],
    ) -> Result<QueryOutput> {
        self.check_cancel()?;
        match cmd.as_ref() {
            Command::Tx(TxCommand::Savepoint(n)) => {
                self.tx.savepoint(n)?;
                return Ok(QueryOutput::command("SAVEPOINT"));
            }
            Command::Tx(TxCommand::Release(n)) => {
                self.tx.release_savepoint(n)?;
                return Ok(QueryOutput::command("RELEASE"));
            }
            Command::Tx(TxCommand::RollbackTo(n)) => {
                self.tx.rollback_to_savepoint(n)?;
                return Ok(QueryOutput::command("ROLLBACK"));
            }
            Command::Sql(_) => {}
            _ => return Err(refuse("transaction control")),
        }
        let key = (Arc::as_ptr(cmd) as usize, types.to_vec());
        let cached = self
            .owner
            .plans
            .lock()
            .ok()
            .and_then(|p| p.get(&key).cloned());
        let pl = match cached {
            Some(p) => p,
            None => {
                let mut p = Planner::new(self.owner.db.clone(), self.info.system, types);
                p.viewer = Some(self.tx.id());
                p.path = self.info.path.clone();
                let pl = Arc::new(plan(&mut p, cmd)?);
                let needs = crate::catalog::privileges::needs(cmd, &p);
                crate::catalog::privileges::require(&self.owner.who, self.owner.db.id(), &needs)?;
                if let Ok(mut m) = self.owner.plans.lock() {
                    m.insert(key, pl.clone());
                }
                pl
            }
        };
        let ctx = Ctx {
            params,
            info: self.info,
            cancel: self.cancel,
            instance: self.instance,
        };
        let tx = &mut *self.tx;
        Ok(match pl.as_ref() {
            Planned::Query(q) => {
                let rows = crate::query::execute_plan(q, &ctx.env(tx), None)?;
                QueryOutput {
                    tag: format!("SELECT {}", rows.len()),
                    columns: Some(q.columns.clone()),
                    rows,
                    ..Default::default()
                }
            }
            Planned::Locking(l) => crate::dml::locking::run(l, tx, &ctx)?,
            Planned::Insert(i) => crate::dml::run_insert(i, tx, &ctx)?,
            Planned::Update(u) => crate::dml::run_update(u, tx, &ctx)?,
            Planned::Delete(d) => crate::dml::run_delete(d, tx, &ctx)?,
        })
    }

    fn in_transaction(&self) -> bool {
        true
    }

    fn transaction_failed(&self) -> bool {
        false
    }

    fn doom(&mut self) {}

    fn doomed(&self) -> bool {
        false
    }

    fn check_cancel(&self) -> Result<()> {
        if self.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SqlError::new(
                ErrorKind::Cancelled,
                "canceling statement due to user request",
            ));
        }
        Ok(())
    }

    fn state(&mut self) -> &mut TsqlState {
        &mut self.state
    }
}
