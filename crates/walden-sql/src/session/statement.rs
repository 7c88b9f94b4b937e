//! What a parsed SQL statement does (`Command::Sql`): queries, DML, DDL
//! on tables, views, schemas, types and indexes, COMMENT ON, COPY.

use super::copy::copy_columns;
use super::SqlSession;
use crate::catalog::ddl;
use crate::context::search_path;
use crate::dml::{self, Ctx};
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::transaction::TxCommand;
use crate::front::Command;
use crate::query::{self, Planner};
use crate::session::copy::{CopyFormat, CopyIn};
use crate::QueryOutput;
use sqlparser::ast::{self, Statement};
use walden_engine::Value;

impl SqlSession {
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
            Statement::Query(q) if crate::dml::with_dml::applies(q) => {
                use crate::catalog::privileges;
                let who = self.who();
                let check = |p: &Planner<'_>, stmt: Option<&Statement>| -> Result<()> {
                    let needs = match stmt {
                        Some(s) => privileges::needs(&Command::Sql(Box::new(s.clone())), p),
                        None => privileges::reads(p),
                    };
                    privileges::require(&who, p.db.id(), &needs)
                };
                self.dml(params, |p, tx, ctx| crate::dml::with_dml::run(p, &check, q, tx, ctx))
            }
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
