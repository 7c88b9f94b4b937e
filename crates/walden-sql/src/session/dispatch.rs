//! Statement dispatch: what each parsed command does, and SET/SHOW.

use super::copy::copy_columns;
use super::{failed_tx, SqlSession};
use crate::catalog::ddl;
use crate::context::search_path;
use crate::dml::{self, Ctx};
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::transaction::TxCommand;
use crate::front::Command;
use crate::query::{self, Planner};
use crate::session::copy::{CopyFormat, CopyIn};
use crate::{Column, QueryOutput};
use sqlparser::ast::{self, Statement};
use std::sync::atomic::Ordering::Relaxed;
use walden_engine::{
    CommitRequest, DataType, DelayedDurability, RecoveryModel, Transaction, Value,
};

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
                    | Command::Tx(TxCommand::RollbackTo(_) | TxCommand::RollbackTran(_))
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
            Command::Commit(dd) => {
                if self.failed {
                    self.failed = false;
                    self.explicit = false;
                    if let Some(tx) = self.tx.take() {
                        tx.rollback();
                    }
                    self.settings.end_tx(false);
                    return Ok(QueryOutput::command("ROLLBACK"));
                }
                if !self.explicit {
                    // An implicit block ends here, as in PostgreSQL.
                    if let Some(mut tx) = self.tx.take() {
                        let id = tx.id();
                        self.before_commit(&mut tx)?;
                        self.commit_tx(tx, CommitRequest::Default)?;
                        self.cursors_committed(id);
                    }
                    let mut out = QueryOutput::command("COMMIT");
                    out.notices
                        .push("there is no transaction in progress".into());
                    return Ok(out);
                }
                self.explicit = false;
                let req = match dd {
                    Some(true) => CommitRequest::Delayed,
                    Some(false) => CommitRequest::Durable,
                    None => CommitRequest::Default,
                };
                // The commit uses the block's settings (SET LOCAL
                // synchronous_commit = off), then they end with it.
                let r = match self.tx.take() {
                    Some(mut tx) => {
                        let id = tx.id();
                        let r = match self.before_commit(&mut tx) {
                            Ok(()) => self.commit_tx(tx, req).map(|_| ()),
                            Err(e) => {
                                tx.rollback();
                                self.settings.end_tx(false);
                                return Err(e);
                            }
                        };
                        if r.is_ok() {
                            self.cursors_committed(id);
                        }
                        r
                    }
                    None => Ok(()),
                };
                self.settings.end_tx(r.is_ok());
                r?;
                Ok(QueryOutput::command("COMMIT"))
            }
            Command::Rollback => {
                let mut out = QueryOutput::command("ROLLBACK");
                if !self.explicit && !self.failed {
                    out.notices
                        .push("there is no transaction in progress".into());
                }
                self.explicit = false;
                self.failed = false;
                if let Some(tx) = self.tx.take() {
                    tx.rollback();
                }
                self.settings.end_tx(false);
                Ok(out)
            }
            Command::Set(name, value)
                if matches!(
                    name.as_str(),
                    "transaction_isolation" | "transaction_read_only" | "transaction_deferrable"
                ) =>
            {
                self.set_tx_parameter(name, value)
            }
            Command::Set(name, value) => self.set(name, value),
            Command::SetLocal(name, value) => {
                let mut out = QueryOutput::command("SET");
                if !self.settings.set_local(name, value)? {
                    out.notices
                        .push("SET LOCAL can only be used in transaction blocks".into());
                }
                Ok(out)
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
            Command::DiscardSequences => {
                self.session.discard_sequences();
                Ok(QueryOutput::command("DISCARD SEQUENCES"))
            }
            Command::Listen(channel) => {
                let mut out = QueryOutput::command("LISTEN");
                let c = truncated_channel(channel, &mut out.notices);
                self.in_tx(|tx, _| {
                    crate::context::notify::listen(tx, crate::context::notify::Pending::Listen(c))
                })?;
                Ok(out)
            }
            Command::Unlisten(channel) => {
                let mut out = QueryOutput::command("UNLISTEN");
                let c = channel
                    .as_ref()
                    .map(|c| truncated_channel(c, &mut out.notices));
                self.in_tx(|tx, _| {
                    crate::context::notify::listen(tx, crate::context::notify::Pending::Unlisten(c))
                })?;
                Ok(out)
            }
            Command::Notify { channel, payload } => {
                let mut out = QueryOutput::command("NOTIFY");
                let c = truncated_channel(channel, &mut out.notices);
                self.in_tx(|tx, _| crate::context::notify::notify(tx, &c, payload))?;
                Ok(out)
            }
            Command::DiscardPlans => {
                self.forget_plans();
                Ok(QueryOutput::command("DISCARD PLANS"))
            }
            Command::DiscardTemp => {
                // PostgreSQL drops them in the open transaction; Walden
                // drops them in a transaction of their own (as at session
                // end), so only outside one (refused in a block).
                if self.explicit || self.implicit || self.tx.is_some() {
                    return Err(SqlError::unsupported(
                        "DISCARD TEMP inside a transaction block",
                    ));
                }
                self.drop_temp_tables();
                self.forget_plans();
                Ok(QueryOutput::command("DISCARD TEMP"))
            }
            Command::DiscardAll => {
                self.drop_temp_tables();
                self.forget_plans();
                self.session.discard_sequences();
                self.settings.reset_all();
                self.engine.advisory.unlock_all(self.session.id);
                // UNLISTEN * (DISCARD ALL runs outside a block: at once).
                self.engine.notify.committed(
                    &self.listener,
                    vec![crate::context::notify::Pending::Unlisten(None)],
                );
                self.close_all_cursors();
                self.sql_deallocate(None);
                let mut out = QueryOutput::command("DISCARD ALL");
                out.deallocate = Some(crate::Deallocate::All);
                Ok(out)
            }
            Command::Reset(name) => {
                match name {
                    Some(n) => self.settings.reset(n)?,
                    None => self.settings.reset_all(),
                }
                Ok(QueryOutput::command("RESET"))
            }
            Command::Show(name) => {
                let v = self.show(name)?;
                Ok(QueryOutput {
                    columns: Some(vec![Column {
                        name: name.clone(),
                        ty: DataType::Text,
                        origin: None,
                    }]),
                    rows: vec![vec![Value::text(v)]],
                    tag: "SHOW".into(),
                    ..Default::default()
                })
            }
            Command::Use(name) => {
                // The open transaction belongs to the current database.
                if self.explicit || self.tx.is_some() {
                    return Err(SqlError::new(
                        ErrorKind::ActiveTransaction,
                        "cannot change database inside a transaction",
                    ));
                }
                let db = inst.database(name).map_err(|_| {
                    SqlError::new(
                        ErrorKind::UndefinedDatabase,
                        format!("database \"{name}\" does not exist"),
                    )
                })?;
                if !self.who().can_connect(db.id()) {
                    return Err(crate::catalog::privileges::denied(format!(
                        "permission denied for database \"{}\"",
                        db.name()
                    )));
                }
                self.session
                    .set_identity(&self.user, self.role, db.name(), db.id());
                self.db = db;
                Ok(QueryOutput::command("SET"))
            }
            Command::FlushLog => {
                self.db.flush_log(&self.session)?;
                Ok(QueryOutput::command("EXECUTE"))
            }
            Command::Checkpoint => {
                self.db.checkpoint()?;
                Ok(QueryOutput::command("CHECKPOINT"))
            }
            Command::BackupDatabase { name, path } => {
                let file =
                    crate::admin::backup::resolve(self.engine.backup_dir.read().as_deref(), path)?;
                inst.database(name)?.backup_database(&self.session, &file)?;
                Ok(QueryOutput::command("BACKUP DATABASE"))
            }
            Command::BackupLog { name, path } => {
                let file =
                    crate::admin::backup::resolve(self.engine.backup_dir.read().as_deref(), path)?;
                inst.database(name)?.backup_log(&self.session, &file)?;
                Ok(QueryOutput::command("BACKUP LOG"))
            }
            Command::ClearWaitStats => {
                inst.wait_stats().clear();
                Ok(QueryOutput::command("DBCC"))
            }
            Command::CheckDb { name, quiet } => {
                let db = match name {
                    Some(n) => inst.database(n)?,
                    None => self.db.clone(),
                };
                crate::admin::checkdb::run(&db, *quiet)
            }
            Command::CreateAvailabilityGroup(def) => {
                self.hadr()?
                    .create_group((**def).clone())
                    .map_err(hadr_err)?;
                Ok(QueryOutput::command("CREATE AVAILABILITY GROUP"))
            }
            Command::AvailabilityGroupReseed { name, replica } => {
                self.hadr()?.reseed(name, replica).map_err(hadr_err)?;
                Ok(QueryOutput::command("ALTER AVAILABILITY GROUP"))
            }
            Command::DropAvailabilityGroup(name) => {
                self.hadr()?.drop_group(name).map_err(hadr_err)?;
                Ok(QueryOutput::command("DROP AVAILABILITY GROUP"))
            }
            Command::AvailabilityGroupFailover { name, force } => {
                let rows = self.hadr()?.failover(name, *force).map_err(hadr_err)?;
                let mut out = QueryOutput::command(format!("SELECT {}", rows.len()));
                out.columns = Some(failover_columns());
                for r in rows {
                    if r.possible_loss_bytes > 0 {
                        out.notices.push(format!(
                            "database \"{}\": log from LSN {} to {} on the old primary was not received here; transactions in it may be lost",
                            r.database, r.failover_lsn, r.primary_last_known_lsn
                        ));
                    }
                    out.rows.push(vec![
                        Value::text(&r.database),
                        Value::Int(r.failover_lsn as i64),
                        Value::Int(r.primary_last_known_lsn as i64),
                        Value::Int(r.possible_loss_bytes as i64),
                        Value::Int(r.epoch as i64),
                    ]);
                }
                Ok(out)
            }
            Command::ClearExposurePeaks => {
                for db in inst.databases() {
                    db.log().counters().reset_peaks();
                }
                Ok(QueryOutput::command("DBCC"))
            }
            Command::CreateDatabase(name) => {
                inst.create_database(name)?;
                Ok(QueryOutput::command("CREATE DATABASE"))
            }
            Command::DropDatabase { name, if_exists } => {
                if name.eq_ignore_ascii_case(self.db.name()) {
                    return Err(SqlError::new(
                        ErrorKind::ObjectInUse,
                        "cannot drop the currently open database",
                    ));
                }
                if let Some(g) = self
                    .engine
                    .replication()
                    .and_then(|r| r.groups().into_iter().find(|g| g.def.has_database(name)))
                {
                    return Err(SqlError::new(
                        ErrorKind::ObjectInUse,
                        format!(
                            "database \"{name}\" belongs to availability group \"{}\"; DROP AVAILABILITY GROUP first",
                            g.def.name
                        ),
                    ));
                }
                match inst.drop_database(name) {
                    Ok(()) => Ok(QueryOutput::command("DROP DATABASE")),
                    Err(walden_engine::EngineError::UnknownDatabase(_)) if *if_exists => {
                        let mut out = QueryOutput::command("DROP DATABASE");
                        out.notices
                            .push(format!("database \"{name}\" does not exist, skipping"));
                        Ok(out)
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Command::AlterDatabaseOwner { name, owner } => self.in_tx(|tx, s| {
                let who = s.who_in(tx);
                crate::catalog::owner::alter_database_owner(
                    &who,
                    &s.engine.instance,
                    tx,
                    name,
                    owner.as_deref(),
                )
            }),
            Command::AlterDatabase {
                name,
                option,
                value,
            } => {
                let db = if name.eq_ignore_ascii_case("current") {
                    self.db.clone()
                } else {
                    inst.database(name).map_err(|_| {
                        SqlError::new(
                            ErrorKind::UndefinedDatabase,
                            format!("database \"{name}\" does not exist"),
                        )
                    })?
                };
                let bound = |v: &str| -> Result<Option<u64>> {
                    match v.to_ascii_uppercase().as_str() {
                        "NONE" | "OFF" | "0" | "NULL" => Ok(None),
                        n => n.parse::<u64>().map(Some).map_err(|_| {
                            SqlError::new(
                                ErrorKind::InvalidParameter,
                                format!("{option} must be a number or NONE"),
                            )
                        }),
                    }
                };
                match option.as_str() {
                    "DELAYED_DURABILITY" => {
                        let dd: DelayedDurability = value.parse()?;
                        db.alter_settings(&self.session, |s| s.delayed_durability = dd)?;
                    }
                    "RECOVERY" => {
                        let rm: RecoveryModel = value.parse()?;
                        db.alter_settings(&self.session, |s| s.recovery_model = rm)?;
                    }
                    "MAX_EXPOSURE_BYTES" => {
                        let b = bound(value)?;
                        db.alter_settings(&self.session, |s| s.max_exposure_bytes = b)?;
                    }
                    "MAX_EXPOSURE_MS" => {
                        let b = bound(value)?;
                        db.alter_settings(&self.session, |s| s.max_exposure_ms = b)?;
                    }
                    other => {
                        return Err(SqlError::new(
                            ErrorKind::InvalidParameter,
                            format!("unknown database option {other} (DELAYED_DURABILITY, RECOVERY, MAX_EXPOSURE_BYTES, MAX_EXPOSURE_MS)"),
                        ))
                    }
                }
                Ok(QueryOutput::command("ALTER DATABASE"))
            }
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

    pub(super) fn statement(&mut self, stmt: &Statement, params: &[Value]) -> Result<QueryOutput> {
        if let Some(what) = ddl_name(stmt) {
            self.check_writable(what)?;
        }
        let rewritten;
        let stmt = match search_path::check_statement(stmt, &self.path(), &self.db)? {
            Some(s) => {
                rewritten = s;
                &rewritten
            }
            None => stmt,
        };
        match stmt {
            Statement::Query(q) if crate::catalog::create_as::select_into(q).is_some() => {
                let (target, plain) = crate::catalog::create_as::select_into(q).expect("checked")?;
                self.check_writable("SELECT INTO")?;
                let who = self.who();
                self.dml(params, |p, tx, ctx| {
                    crate::catalog::create_as::run_select_into(&who, p, tx, ctx, &target, &plain)
                })
            }
            Statement::Query(q) => {
                let info = self.info();
                let cancel = self.cancel.clone();
                let inst = self.engine.instance.clone();
                let db = self.db.clone();
                let who = self.who();
                self.in_tx(|tx, _| {
                    let dbid = db.id();
                    let mut p = Planner::new(db, info.system, &[]);
                    p.viewer = Some(tx.id());
                    p.path = info.path.clone();
                    if crate::dml::locking::wanted(q) {
                        let plan = crate::dml::locking::plan(&mut p, q)?;
                        crate::catalog::privileges::require(&who, dbid, &crate::catalog::privileges::reads(&p))?;
                        let ctx = Ctx {
                            params,
                            info: &info,
                            cancel: &cancel,
                            instance: &inst,
                        };
                        return crate::dml::locking::run(&plan, tx, &ctx);
                    }
                    let plan = query::plan_query(&mut p, q, None)?;
                    crate::catalog::privileges::require(&who, dbid, &crate::catalog::privileges::reads(&p))?;
                    let ctx = Ctx {
                        params,
                        info: &info,
                        cancel: &cancel,
                        instance: &inst,
                    };
                    let env = ctx.env(tx);
                    let rows = query::execute_plan(&plan, &env, None)?;
                    Ok(QueryOutput {
                        tag: format!("SELECT {}", rows.len()),
                        columns: Some(plan.columns),
                        rows,
                        ..Default::default()
                    })
                })
            }
            Statement::Insert(ins) => self.dml(params, |p, tx, ctx| dml::insert(p, ins, tx, ctx)),
            Statement::Update(u) => self.dml(params, |p, tx, ctx| dml::update(p, u, tx, ctx)),
            Statement::Delete(d) => self.dml(params, |p, tx, ctx| dml::delete(p, d, None, tx, ctx)),
            Statement::CreateTable(ct) if ct.query.is_some() => {
                let who = self.who();
                self.dml(params, |p, tx, ctx| crate::catalog::create_as::create_table_as(&who, p, tx, ctx, ct))
            }
            Statement::CreateTable(ct) if ct.query.is_none() && (ct.partition_by.is_some() || ct.partition_of.is_some()) => {
                self.dml(params, |p, tx, ctx| crate::catalog::partitions::create(p, tx, ctx, ct))
            }
            Statement::CreateTable(ct) => {
                let db = self.db.clone();
                self.in_tx(|tx, _| ddl::create_table(&db, &crate::compat::CATALOGS, tx, ct))
            }
            Statement::CreateView(cv) => {
                let (who, dbid) = (self.who(), self.db.id());
                self.dml(params, |p, tx, _| {
                    let out = crate::catalog::views::create_view(p, tx, cv)?;
                    crate::catalog::privileges::require(&who, dbid, &crate::catalog::privileges::reads(p))?;
                    Ok(out)
                })
            }
            Statement::AlterView {
                name,
                columns,
                query,
                with_options,
            } => {
                let (who, dbid) = (self.who(), self.db.id());
                self.dml(params, |p, tx, _| {
                    let out = crate::catalog::views::alter_view(p, tx, name, columns, query, with_options)?;
                    crate::catalog::privileges::require(&who, dbid, &crate::catalog::privileges::reads(p))?;
                    Ok(out)
                })
            }
            Statement::Drop {
                object_type: ast::ObjectType::Schema,
                if_exists,
                names,
                cascade,
                ..
            } => {
                let db = self.db.clone();
                self.in_tx(|tx, s| {
                    crate::catalog::schemas::drop_schemas(&s.who_in(tx), &db, tx, names, *if_exists, *cascade)
                })
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => {
                let db = self.db.clone();
                self.in_tx(|tx, _| ddl::drop(&db, tx, object_type, *if_exists, names, *cascade))
            }
            Statement::AlterTable(at) if crate::catalog::owner::handles(at) => {
                let (db, inst) = (self.db.clone(), self.engine.instance.clone());
                self.in_tx(|tx, s| {
                    let who = s.who_in(tx);
                    crate::catalog::owner::alter_owner(&who, &inst, &db, tx, at)
                })
            }
            Statement::AlterTable(at) if crate::catalog::foreign_keys::handles(&self.db, at) => {
                let db = self.db.clone();
                self.in_tx(|tx, _| crate::catalog::foreign_keys::alter_table(&db, tx, at))
            }
            Statement::CreateType {
                name,
                representation,
            } => self.in_tx(|tx, _| crate::catalog::enums::create_type(tx, name, representation)),
            Statement::AlterType(at) => self.in_tx(|tx, _| crate::catalog::enums::alter_type(tx, at)),
            Statement::Lock(l) => {
                // A multi-statement query's implicit block counts, as in
                // PostgreSQL (not the extended protocol's).
                if !(self.explicit || (self.implicit && !self.pipeline)) {
                    return Err(SqlError::new(
                        ErrorKind::NoActiveTransaction,
                        "LOCK TABLE can only be used in transaction blocks",
                    ));
                }
                self.in_tx(|tx, _| ddl::lock_table(tx, l))
            }
            Statement::Truncate(t) => {
                let db = self.db.clone();
                self.in_tx(|tx, _| ddl::truncate(&db, tx, t))
            }
            Statement::CreateIndex(ci) => {
                let db = self.db.clone();
                self.in_tx(|tx, _| crate::catalog::index::create_index(&db, tx, ci))
            }
            Statement::AlterTable(at) => {
                self.dml(params, |p, tx, ctx| crate::catalog::alter_table::alter_table(p, at, tx, ctx))
            }
            Statement::AlterSchema(a) if !crate::catalog::public_schema::names_public(&a.name) => {
                let db = self.db.clone();
                self.in_tx(|tx, s| crate::catalog::schemas::alter_schema(&s.who_in(tx), &db, tx, a))
            }
            Statement::CreateSchema {
                schema_name,
                if_not_exists,
                or_replace: false,
                with: None,
                options: None,
                default_collate_spec: None,
                clone: None,
                ..
            } => {
                let db = self.db.clone();
                self.in_tx(|tx, s| {
                    crate::catalog::schemas::create_schema(&s.who_in(tx), &db, tx, schema_name, *if_not_exists)
                })
            }
            Statement::AlterSchema(a) => {
                let db = self.db.id();
                self.in_tx(|tx, s| {
                    crate::catalog::public_schema::alter_schema(&s.who_in(tx), &s.engine.instance, db, tx, a)
                })
            }
            Statement::Comment {
                object_type,
                object_name,
                comment,
                if_exists: false,
            } if *object_type != ast::CommentObject::Schema => self.in_tx(|tx, s| {
                crate::catalog::comments::comment_on(
                    &s.who_in(tx),
                    &s.db,
                    tx,
                    object_type,
                    object_name,
                    comment.as_deref(),
                )
            }),
            Statement::Comment {
                object_type: ast::CommentObject::Schema,
                object_name,
                comment,
                ..
            } => self.in_tx(|tx, s| {
                let named = query::object_last(object_name);
                if s.db.schemas_as(Some(tx.id())).iter().any(|x| x.name == named) {
                    return Err(SqlError::unsupported(format!(
                        "COMMENT ON SCHEMA {named} (comments are kept on public only)"
                    )));
                }
                crate::catalog::public_schema::comment_on_schema(
                    &s.who_in(tx),
                    s.db.id(),
                    object_name,
                    comment.as_deref(),
                )
            }),
            Statement::Copy {
                source:
                    ast::CopySource::Table {
                        table_name,
                        columns,
                    },
                to: false,
                target: ast::CopyTarget::Stdin,
                options,
                legacy_options,
                ..
            } => {
                let table = self.db.table(&query::object_last(table_name))?;
                if self.settings.tx_read_only()
                    && crate::types::temp_names::split_temp(table.name()).is_none()
                {
                    return Err(walden_engine::EngineError::ReadOnlyTransaction("COPY FROM".into()).into());
                }
                let columns: Vec<String> = columns.iter().map(|c| c.value.clone()).collect();
                let types = copy_columns(&table, &columns)?
                    .into_iter()
                    .map(|i| table.def.columns[i].data_type.clone())
                    .collect();
                let copy = CopyIn {
                    table: table.name().to_string(),
                    columns,
                    format: CopyFormat::from_options(options, legacy_options, false)?,
                    types,
                };
                Ok(QueryOutput {
                    tag: "COPY".into(),
                    copy_in: Some(copy),
                    ..Default::default()
                })
            }
            Statement::Copy {
                source,
                to: true,
                target: ast::CopyTarget::Stdout,
                options,
                legacy_options,
                ..
            } => self.copy_to(source, options, legacy_options, params),
            // The server reads and writes no files of its own: data goes
            // through the client (psql's \copy does exactly that).
            Statement::Copy {
                to,
                target: ast::CopyTarget::File { .. } | ast::CopyTarget::Program { .. },
                ..
            } => Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                format!(
                    "COPY {} a server file or program is not supported; use COPY ... {} and psql's \\copy",
                    if *to { "to" } else { "from" },
                    if *to { "TO STDOUT" } else { "FROM STDIN" },
                ),
            )),
            Statement::Copy { .. } => Err(SqlError::syntax(
                "syntax error: COPY FROM needs STDIN and COPY TO needs STDOUT",
            )),
            Statement::StartTransaction { .. } => self.execute_command(
                &Command::Tx(TxCommand::Begin(Default::default())),
                params,
            ),
            Statement::Commit { .. } => self.execute_command(&Command::Commit(None), params),
            Statement::Rollback { .. } => self.execute_command(&Command::Rollback, params),
            other => Err(SqlError::unsupported(format!(
                "statement {}",
                other
                    .to_string()
                    .split_whitespace()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ")
            ))),
        }
    }

    fn set(&mut self, name: &str, value: &str) -> Result<QueryOutput> {
        // `SET name TO DEFAULT` is RESET.
        if value.eq_ignore_ascii_case("default") {
            self.settings.reset(name)?;
            return Ok(QueryOutput::command("SET"));
        }
        self.settings.set(name, value)?;
        Ok(QueryOutput::command("SET"))
    }

    fn show(&self, name: &str) -> Result<String> {
        if name.eq_ignore_ascii_case("is_superuser") {
            return Ok(if self.is_superuser() { "on" } else { "off" }.into());
        }
        self.settings
            .get(name)
            .ok_or_else(|| crate::context::settings::unrecognized(name))
    }
}

fn hadr_err(e: walden_replication::ReplicationError) -> SqlError {
    use walden_replication::ReplicationError as R;
    match e {
        R::Engine(e) => e.into(),
        R::UnknownGroup(_) => SqlError::new(ErrorKind::UndefinedObject, e.to_string()),
        R::Invalid(_) => SqlError::new(ErrorKind::InvalidParameter, e.to_string()),
        R::State(_) => SqlError::new(ErrorKind::PrerequisiteState, e.to_string()),
        R::Io(_) => SqlError::new(ErrorKind::Io, e.to_string()),
    }
}

/// The row `ALTER AVAILABILITY GROUP ... [FORCE_]FAILOVER` returns per
/// database (also its description for the extended protocol).
pub(super) fn failover_columns() -> Vec<Column> {
    Column::computed(&[
        ("database_name", DataType::Varchar(None)),
        ("failover_lsn", DataType::BigInt),
        ("primary_last_known_lsn", DataType::BigInt),
        ("possible_loss_bytes", DataType::BigInt),
        ("epoch", DataType::BigInt),
    ])
}

/// A LISTEN / UNLISTEN / NOTIFY channel: an identifier, which PostgreSQL
/// truncates to 63 bytes with a notice.
fn truncated_channel(channel: &str, notices: &mut Vec<String>) -> String {
    let max = crate::context::notify::MAX_CHANNEL;
    if channel.len() <= max {
        return channel.to_string();
    }
    let mut end = max;
    while !channel.is_char_boundary(end) {
        end -= 1;
    }
    let short = &channel[..end];
    notices.push(format!(
        "identifier \"{channel}\" will be truncated to \"{short}\""
    ));
    short.to_string()
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

/// The name of a DDL statement a read-only transaction refuses.
fn ddl_name(stmt: &Statement) -> Option<&'static str> {
    Some(match stmt {
        Statement::CreateTable(_) => "CREATE TABLE",
        Statement::CreateView(_) => "CREATE VIEW",
        Statement::AlterView { .. } => "ALTER VIEW",
        Statement::Drop { .. } => "DROP",
        Statement::Truncate(_) => "TRUNCATE TABLE",
        Statement::CreateIndex(_) => "CREATE INDEX",
        Statement::AlterTable(_) => "ALTER TABLE",
        Statement::CreateType { .. } => "CREATE TYPE",
        Statement::AlterType(_) => "ALTER TYPE",
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
