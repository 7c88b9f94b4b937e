//! Command dispatch: which part of the session runs each parsed command
//! (transaction control in `txblock.rs`, SET/SHOW in `set_show.rs`,
//! DISCARD in `discard.rs`, LISTEN/NOTIFY in `notify.rs`, administration in
//! `admin.rs`, SQL statements in `statement.rs`), and the checks every
//! command passes first.

use super::{failed_tx, SqlSession};
use crate::catalog::ddl;
use crate::dml::{self, Ctx};
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::transaction::TxCommand;
use crate::front::Command;
use crate::query::Planner;
use crate::{Column, QueryOutput};
use sqlparser::ast::{self, Statement};
use std::sync::atomic::Ordering::Relaxed;
use walden_engine::{DataType, Transaction, Value};

impl SqlSession {
    pub(super) fn execute_command(
        &mut self,
        cmd: &Command,
        params: &[Value],
    ) -> Result<QueryOutput> {
        self.cancel.store(false, Relaxed);
        self.follow_reseed();
        if self.failed
            && !matches!(
                cmd,
                Command::Commit(_)
                    | Command::Rollback
                    | Command::Tx(
                        TxCommand::RollbackTo(_) | TxCommand::RollbackTran(_) | TxCommand::Chain(_)
                    )
            )
        {
            return Err(failed_tx());
        }
        let inst = self.engine.instance.clone();
        if let Some(what) = outside_block_only(cmd) {
            // As PostgreSQL's PreventInTransactionBlock: a multi-statement
            // query is a block too, from its first statement.
            let in_block = self.explicit
                || (self.implicit && !self.pipeline)
                || (self.pipeline && self.tx.is_some());
            if in_block {
                return Err(SqlError::new(
                    ErrorKind::ActiveTransaction,
                    format!("{what} cannot run inside a transaction block"),
                ));
            }
        }
        let writes = match cmd {
            Command::CreateSequence { .. } => Some("CREATE SEQUENCE"),
            Command::AlterSequence { .. } => Some("ALTER SEQUENCE"),
            Command::AlterIdentity(_) | Command::AlterConstraint(_) => Some("ALTER TABLE"),
            Command::AlterDatabase { .. } | Command::AlterDatabaseOwner { .. } => {
                Some("ALTER DATABASE")
            }
            Command::CreateDatabase(_) => Some("CREATE DATABASE"),
            Command::DropDatabase { .. } => Some("DROP DATABASE"),
            Command::Access(a) => Some(a.name()),
            _ => None,
        };
        if let Some(what) = writes {
            self.check_writable(what)?;
        }
        match cmd {
            Command::Tx(c) => self.tx_command(c),
            Command::Commit(dd) => self.commit_block(*dd),
            Command::Rollback => self.rollback_block(),
            Command::Set(..) | Command::SetLocal(..) | Command::Reset(_) | Command::Show(_) => {
                self.set_show(cmd)
            }
            Command::Prepare {
                name,
                types,
                body,
                text,
            } => self.sql_prepare(name, types, body, text),
            Command::ExecutePrepared { name, args } => self.sql_execute(name, args),
            // A PREPAREd statement is dropped here; any other name is the
            // wire server's to drop (or to report missing).
            Command::Deallocate(Some(name)) if self.sql_deallocate(Some(name)) => {
                Ok(QueryOutput::command("DEALLOCATE"))
            }
            Command::Deallocate(name) => {
                if name.is_none() {
                    self.sql_deallocate(None);
                }
                let mut out = QueryOutput::command("DEALLOCATE");
                out.deallocate = Some(match name {
                    Some(n) => crate::Deallocate::Named(n.clone()),
                    None => {
                        out.tag = "DEALLOCATE ALL".into();
                        crate::Deallocate::All
                    }
                });
                Ok(out)
            }
            Command::SetConstraints { names, deferred } => self.set_constraints(names, *deferred),
            Command::DiscardSequences
            | Command::DiscardPlans
            | Command::DiscardTemp
            | Command::DiscardAll => self.discard(cmd),
            Command::Listen(channel) => self.listen(channel),
            Command::Unlisten(channel) => self.unlisten(channel.as_deref()),
            Command::Notify { channel, payload } => self.notify(channel, payload),
            Command::Use(_)
            | Command::FlushLog
            | Command::Checkpoint
            | Command::BackupDatabase { .. }
            | Command::BackupLog { .. }
            | Command::ClearWaitStats
            | Command::CheckDb { .. }
            | Command::CreateAvailabilityGroup(_)
            | Command::AvailabilityGroupReseed { .. }
            | Command::DropAvailabilityGroup(_)
            | Command::AvailabilityGroupFailover { .. }
            | Command::ClearExposurePeaks
            | Command::CreateDatabase(_)
            | Command::DropDatabase { .. }
            | Command::AlterDatabaseOwner { .. }
            | Command::AlterDatabase { .. } => self.admin_command(cmd),
            Command::CreateSequence {
                schema,
                name,
                if_not_exists,
                options,
                owned_by,
            } => {
                let mut qualified = schema
                    .iter()
                    .map(|s| ast::Ident::new(s.as_str()))
                    .collect::<Vec<_>>();
                qualified.push(ast::Ident::new(name.as_str()));
                let name = self.path().creation(&ast::ObjectName::from(qualified))?;
                self.in_tx(|tx, _| {
                    let out = ddl::create_sequence(tx, &name, *if_not_exists, options)?;
                    if owned_by.is_some() && out.notices.is_empty() {
                        let change = crate::front::SequenceChange {
                            owned_by: Some(owned_by.clone()),
                            ..Default::default()
                        };
                        crate::catalog::alter_sequence::alter_sequence(tx, false, &name, &change)?;
                    }
                    Ok(out)
                })
            }
            Command::AlterIdentity(a) => self.dml(params, |p, tx, ctx| {
                crate::catalog::alter_table::identity::alter_identity(p, a, tx, ctx)
            }),
            Command::AlterConstraint(a) => {
                self.in_tx(|tx, _| crate::catalog::foreign_keys::alter_constraint(tx, a))
            }
            Command::AlterSequence {
                if_exists,
                sequence,
                change,
            } => self.in_tx(|tx, _| {
                crate::catalog::alter_sequence::alter_sequence(tx, *if_exists, sequence, change)
            }),
            Command::Analyze { vacuum, targets } => {
                // The session's temporary tables by their engine names.
                let targets: Vec<_> = targets
                    .iter()
                    .map(|t| match self.temp_engine_name(&t.name) {
                        Some(n) => crate::front::analyze::AnalyzeTarget {
                            name: vec![n],
                            columns: t.columns.clone(),
                        },
                        None => t.clone(),
                    })
                    .collect();
                self.dml(params, |p, tx, _| {
                    crate::catalog::analyze::analyze(p, tx, &targets, *vacuum)
                })
            }
            Command::Ignored(what) => Ok(QueryOutput::command(if what.is_empty() {
                "EMPTY".to_string()
            } else {
                what.clone()
            })),
            Command::AttachPartition(ct) => {
                self.check_writable("ALTER TABLE")?;
                let (Some(parent), Some(fv)) = (&ct.partition_of, &ct.for_values) else {
                    return Err(SqlError::syntax("syntax error in ATTACH PARTITION"));
                };
                self.dml(params, |p, tx, ctx| {
                    crate::catalog::partitions::attach(p, tx, ctx, parent, &ct.name, fv)
                })
            }
            Command::DetachPartition(ct) => {
                self.check_writable("ALTER TABLE")?;
                let Some(parent) = &ct.partition_of else {
                    return Err(SqlError::syntax("syntax error in DETACH PARTITION"));
                };
                self.dml(params, |p, tx, _| {
                    crate::catalog::partitions::detach(p, tx, parent, &ct.name)
                })
            }
            Command::PgbenchPartitionProbe(table) => {
                let rows = if self.db.table(table).is_ok() {
                    vec![vec![Value::Int(1), Value::Null, Value::Int(0)]]
                } else {
                    vec![]
                };
                Ok(QueryOutput {
                    columns: Some(probe_columns()),
                    tag: format!("SELECT {}", rows.len()),
                    rows,
                    ..Default::default()
                })
            }
            Command::DeleteTop(n, stmt) => match stmt.as_ref() {
                Statement::Delete(d) => {
                    self.dml(params, |p, tx, ctx| dml::delete(p, d, Some(*n), tx, ctx))
                }
                _ => Err(SqlError::internal("DELETE TOP without DELETE")),
            },
            Command::Declare(d) => self.declare(d, params),
            Command::Fetch(f) => self.fetch(f),
            Command::CloseCursor(name) => self.close_cursor(name.as_deref()),
            Command::Access(stmt) => {
                let (db, role) = (self.db.clone(), self.role);
                self.in_tx(|tx, s| {
                    let who = s.who_in(tx);
                    crate::catalog::roles::execute(&who, &inst, &db, tx, role, stmt)
                })
            }
            Command::CommentOnConstraint { constraint, stmt } => match stmt.as_ref() {
                Statement::Comment {
                    object_name,
                    comment,
                    ..
                } => self.in_tx(|tx, s| {
                    crate::catalog::comments::comment_on_constraint(
                        &s.who_in(tx),
                        &s.db,
                        tx,
                        constraint,
                        object_name,
                        comment.as_deref(),
                    )
                }),
                _ => Err(SqlError::syntax(
                    "COMMENT ON CONSTRAINT ... ON table IS ...",
                )),
            },
            Command::Sql(stmt) => self.statement(stmt, params),
        }
    }

    pub(super) fn dml(
        &mut self,
        params: &[Value],
        f: impl FnOnce(&mut Planner<'_>, &mut Transaction, &Ctx<'_>) -> Result<QueryOutput>,
    ) -> Result<QueryOutput> {
        let info = self.info();
        let cancel = self.cancel.clone();
        let inst = self.engine.instance.clone();
        let db = self.db.clone();
        self.in_tx(|tx, _| {
            let mut p = Planner::new(db, info.system, &[]);
            p.viewer = Some(tx.id());
            p.path = info.path.clone();
            let ctx = Ctx {
                params,
                info: &info,
                cancel: &cancel,
                instance: &inst,
            };
            f(&mut p, tx, &ctx)
        })
    }
}

/// Statements that cannot run inside a transaction block, by name: those
/// PostgreSQL refuses there (25001) and Walden's database-level changes,
/// which take effect at once and could not be undone with the block (SQL
/// Server refuses them in a transaction too). CHECKPOINT, `sp_flush_log`
/// and DBCC are allowed, as PostgreSQL allows CHECKPOINT.
fn outside_block_only(cmd: &Command) -> Option<&'static str> {
    Some(match cmd {
        Command::CreateDatabase(_) => "CREATE DATABASE",
        Command::DropDatabase { .. } => "DROP DATABASE",
        Command::AlterDatabase { .. } | Command::AlterDatabaseOwner { .. } => "ALTER DATABASE",
        Command::BackupDatabase { .. } => "BACKUP DATABASE",
        Command::BackupLog { .. } => "BACKUP LOG",
        Command::CreateAvailabilityGroup(_) => "CREATE AVAILABILITY GROUP",
        Command::DropAvailabilityGroup(_) => "DROP AVAILABILITY GROUP",
        Command::AvailabilityGroupFailover { .. } | Command::AvailabilityGroupReseed { .. } => {
            "ALTER AVAILABILITY GROUP"
        }
        Command::DiscardAll => "DISCARD ALL",
        Command::Ignored(w) if w.eq_ignore_ascii_case("VACUUM") => "VACUUM",
        Command::Analyze { vacuum: true, .. } => "VACUUM",
        Command::Sql(s) => match s.as_ref() {
            Statement::CreateIndex(ci) if ci.concurrently => "CREATE INDEX CONCURRENTLY",
            _ => return None,
        },
        _ => return None,
    })
}

pub(super) fn probe_columns() -> Vec<Column> {
    Column::computed(&[
        ("n", DataType::Int),
        ("partstrat", DataType::Text),
        ("count", DataType::BigInt),
    ])
}
