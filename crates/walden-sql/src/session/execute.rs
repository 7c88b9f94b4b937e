//! The execution path: batches, parse and plan caches, prepared statements, implicit blocks.

use super::admin::failover_columns;
use super::dispatch::probe_columns;
use super::{failed_tx, CachedPlan, Prepared, SqlSession, StmtPlan, PARSE_CACHE};
use crate::dml::{self, Ctx};
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::{self, Command};
use crate::query::{self, Planner};
use crate::{Column, QueryOutput};
use sqlparser::ast::Statement;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use walden_engine::{CommitRequest, DataType, Transaction, Value};

impl SqlSession {
    /// Runs a batch (simple query protocol): one result per statement,
    /// stopping after the first error.
    pub fn execute_batch(&mut self, sql: &str) -> Vec<Result<QueryOutput>> {
        // T-SQL triggers' result sets reach the client in a simple query.
        self.collect_trigger_sets(true);
        let out = crate::session::stack::with_stack_for(sql, || self.execute_batch_inner(sql));
        self.collect_trigger_sets(false);
        out
    }

    fn collect_trigger_sets(&self, on: bool) {
        if let Ok(mut g) = self.tsql.trigger_sets.lock() {
            *g = on.then(Vec::new);
        }
    }

    /// The result sets of the T-SQL triggers the last statement fired.
    fn take_trigger_sets(&self) -> Vec<QueryOutput> {
        self.tsql
            .trigger_sets
            .lock()
            .ok()
            .and_then(|mut g| g.as_mut().map(std::mem::take))
            .unwrap_or_default()
    }

    fn execute_batch_inner(&mut self, sql: &str) -> Vec<Result<QueryOutput>> {
        let mut out = Vec::new();
        self.tsql.handled_errors = 0;
        let stmts = front::split(sql);
        // PostgreSQL's routines (CREATE FUNCTION ... LANGUAGE, DO) run
        // through the procedural runtime too.
        if !self.implicit {
            if let Some(r) = self.pg_routine(sql, &stmts) {
                return vec![r];
            }
        }
        // Several statements of which some are PostgreSQL routine
        // statements (a CREATE FUNCTION's body, DO, CALL): PostgreSQL's
        // batch, each statement in turn (below), not a T-SQL one.
        let routines = !self.implicit && stmts.len() > 1 && self.has_pg_routine(&stmts);
        // A T-SQL batch (variables, control flow, procedures) runs through
        // the procedural runtime; unless in the extended protocol's block.
        if !self.implicit && !routines {
            if front::is_tsql_batch(sql) {
                self.tsql.speaks = true;
                return self.run_tsql_batch(sql);
            }
            if self.tsql_execute(&stmts)
                || crate::procedural::calls_user_function(self, sql)
                || self.tsql_statement_in_transaction(sql)
            {
                return self.run_tsql_batch(sql);
            }
        }
        // Each piece's template, once: a piece whose template parses is one
        // statement, which spares `newline_batch` parsing its text.
        let mut templates: Vec<_> = stmts.iter().map(|s| self.fast_template(s)).collect();
        if !self.implicit && !routines && self.newline_batch(&stmts, &templates) {
            self.tsql.speaks = true;
            return self.run_tsql_batch(sql);
        }
        if stmts.is_empty() {
            return out;
        }
        // Several statements in one simple query run as one implicit
        // transaction, as in PostgreSQL: an error undoes the whole message's
        // work, a BEGIN in it turns the block into an explicit one, and a
        // COMMIT or ROLLBACK in it ends the block (later statements start
        // another). One statement alone simply auto-commits.
        let block = stmts.len() > 1 && !self.implicit;
        if block {
            self.implicit = true;
        }
        let mut failed = false;
        for (s, template) in stmts.into_iter().zip(templates.iter_mut()) {
            // A syntax error's position counts from the start of the query string.
            let before = &sql[..(s.as_ptr() as usize - sql.as_ptr() as usize).min(sql.len())];
            if routines {
                if let Some(rs) = self.routine_piece(s) {
                    let err = rs.iter().any(|r| r.is_err());
                    out.extend(rs);
                    if err {
                        self.note_error();
                        failed = true;
                        break;
                    }
                    continue;
                }
            }
            let r = match template.take() {
                Some((c, params)) => self.execute_shared(&c, &params),
                None => self
                    .parse_cached(s)
                    .map_err(|e| e.shift_position(before))
                    .and_then(|c| self.execute_shared(&c, &[])),
            };
            // An undefined column or relation: where the text names it.
            let r = r.map_err(|e| match crate::front::reference_position(s, &e) {
                Some(_) => e.locate_reference(s).shift_position(before),
                None => e,
            });
            let err = r.is_err();
            // The copy data follows; statements after COPY FROM STDIN in the
            // same query are not run (PostgreSQL does the same).
            let copy = matches!(&r, Ok(o) if o.copy_in.is_some());
            if err {
                self.note_error();
                failed = true;
            }
            out.extend(self.take_trigger_sets().into_iter().map(Ok));
            out.push(r);
            if err || copy {
                break;
            }
        }
        if block {
            if failed {
                self.implicit = false;
            } else if let Err(e) = self.end_implicit() {
                // The commit of the implicit block failed after its last
                // statement completed.
                self.note_error();
                out.push(Err(e));
            }
        }
        out
    }

    /// A keyed write whose literals were lifted into parameters, with its
    /// cached parse (see `front::normalize_literals`); `None` to parse the
    /// text as it is.
    fn fast_template(&mut self, sql: &str) -> Option<(Arc<Command>, Vec<Value>)> {
        let (template, params) = front::normalize_literals(sql)?;
        if let Some(c) = self.templates.get(&template) {
            return c.clone().map(|c| (c, params));
        }
        // Templates that do not parse (a literal where the grammar wants a
        // keyword or a type modifier) are remembered as such.
        let parsed = front::parse(&template).ok().map(Arc::new);
        if self.templates.len() >= PARSE_CACHE {
            self.templates.clear();
        }
        self.templates.insert(template, parsed.clone());
        parsed.map(|c| (c, params))
    }

    pub(super) fn parse_cached(&mut self, sql: &str) -> Result<Arc<Command>> {
        if let Some(c) = self.parsed.get(sql) {
            return Ok(c.clone());
        }
        let c = Arc::new(front::parse(sql)?);
        if self.parsed.len() >= PARSE_CACHE {
            self.parsed.clear();
        }
        self.parsed.insert(sql.to_string(), c.clone());
        Ok(c)
    }

    /// Parses and describes a statement (extended protocol Parse).
    pub fn prepare(&mut self, sql: &str, param_types: &[Option<DataType>]) -> Result<Prepared> {
        crate::session::stack::with_stack_for(sql, || self.prepare_inner(sql, param_types))
            .map_err(|e| e.locate_reference(sql))
    }

    fn prepare_inner(&mut self, sql: &str, param_types: &[Option<DataType>]) -> Result<Prepared> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        let _now = walden_engine::types::zone::enter_now(self.explicit.then_some(self.tx_start));
        self.follow_reseed();
        let stmts = front::split(sql);
        if stmts.len() > 1 {
            return Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let command = match stmts.first() {
            Some(s) => {
                let before = &sql[..(s.as_ptr() as usize - sql.as_ptr() as usize).min(sql.len())];
                self.parse_cached(s).map_err(|e| e.shift_position(before))?
            }
            None => Arc::new(Command::Ignored(String::new())),
        };
        let mut p = Planner::new(self.db.clone(), &crate::compat::CATALOGS, param_types);
        p.path = self.path();
        // The open transaction's own DDL is seen (a table it created).
        p.viewer = self.tx.as_ref().map(|t| t.id());
        // Described as it will run: with the session's temporary tables
        // (the rewrite is made again at each execution).
        let resolved = if self.temps.is_empty() {
            command.clone()
        } else {
            self.temp_rewrite(&command)?
        };
        let columns = match resolved.as_ref() {
            Command::Sql(stmt) => match stmt.as_ref() {
                Statement::Query(q) if crate::catalog::create_as::select_into(q).is_some() => None,
                Statement::Query(q) if crate::dml::with_dml::applies(q) => {
                    crate::dml::with_dml::describe(&mut p, q)?
                }
                Statement::Query(q) if dml::is_merge(q).is_some() => {
                    dml::plan_merge(&mut p, dml::is_merge(q).expect("checked"), q.with.as_ref())?
                        .columns()
                }
                Statement::Merge(m) => dml::plan_merge(&mut p, m, None)?.columns(),
                Statement::Query(q) if crate::dml::locking::wanted(q) => {
                    Some(crate::dml::locking::plan(&mut p, q)?.columns())
                }
                Statement::Query(q) => Some(query::plan_query(&mut p, q, None)?.columns),
                Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                    dml::describe(&mut p, stmt)?
                }
                Statement::Explain { .. } => match front::explain_parts(stmt)? {
                    Some((opts, inner)) => {
                        // Planned to type its parameters.
                        super::explain::explainable(inner)?;
                        let cmd = Command::Sql(Box::new(inner.clone()));
                        super::execute::plan_command(&mut p, &cmd)?;
                        Some(super::explain::columns(opts.format))
                    }
                    None => None,
                },
                _ => None,
            },
            Command::DeleteTop(_, stmt) => dml::describe(&mut p, stmt)?,
            Command::Show(name) => Some(vec![Column {
                name: name.clone(),
                ty: DataType::Text,
                origin: None,
            }]),
            Command::PgbenchPartitionProbe(_) => Some(probe_columns()),
            Command::Declare(d) => {
                // Plans the query for its parameters' types; DECLARE returns no rows.
                query::plan_query(&mut p, &d.query, None)?;
                None
            }
            // The cursor's columns, if it is open now (PostgreSQL describes
            // a FETCH by its cursor).
            Command::Fetch(f) if !f.is_move => self.cursor_columns(&f.name),
            Command::AvailabilityGroupFailover { .. } => Some(failover_columns()),
            Command::CheckDb { .. } => Some(crate::admin::checkdb::columns()),
            _ => None,
        };
        let param_types = p
            .params
            .into_iter()
            .map(|t| t.unwrap_or(DataType::Text))
            .collect();
        Ok(Prepared {
            sql: sql.to_string(),
            command,
            param_types,
            columns,
        })
    }

    /// Executes a prepared statement with bound parameters.
    pub fn execute_prepared(&mut self, p: &Prepared, params: Vec<Value>) -> Result<QueryOutput> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        let _now = walden_engine::types::zone::enter_now(self.explicit.then_some(self.tx_start));
        crate::session::stack::with_stack_for(&p.sql, || self.execute_prepared_inner(p, params))
    }

    fn execute_prepared_inner(&mut self, p: &Prepared, params: Vec<Value>) -> Result<QueryOutput> {
        let params: Vec<Value> = params
            .into_iter()
            .enumerate()
            .map(|(i, v)| match p.param_types.get(i) {
                Some(t) if !v.is_null() && *t != DataType::Text => {
                    walden_engine::types::coerce(v.clone(), t).or(Ok(v))
                }
                _ => Ok(v),
            })
            .collect::<Result<Vec<_>>>()?;
        let r = self.execute_shared(&p.command, &params);
        if r.is_err() {
            self.note_error();
        }
        r
    }

    /// Marks the current statement as failed from outside the SQL layer (a
    /// parameter that cannot be decoded, a client's CopyFail): an explicit
    /// transaction becomes failed, as PostgreSQL does.
    pub fn abort_statement(&mut self) {
        // The errors a T-SQL batch returned were handled when they happened
        // (the statement alone undone, see `tsql.rs`).
        if self.tsql.handled_errors > 0 {
            self.tsql.handled_errors -= 1;
            return;
        }
        self.note_error();
    }

    /// Starts an implicit transaction block: until [`SqlSession::end_implicit`],
    /// statements outside an explicit transaction share one transaction
    /// instead of committing each (the extended protocol runs everything
    /// between two Syncs this way, so an error undoes the whole group).
    pub fn begin_implicit(&mut self) {
        self.implicit = true;
        self.pipeline = true;
    }

    /// Ends the implicit block (the client's Sync): commits what it did
    /// unless an explicit transaction took it over.
    pub fn end_implicit(&mut self) -> Result<()> {
        self.implicit = false;
        self.pipeline = false;
        if self.explicit {
            return Ok(());
        }
        match self.tx.take() {
            Some(mut tx) => {
                let id = tx.id();
                self.before_commit(&mut tx)?;
                self.commit_tx(tx, CommitRequest::Default)?;
                self.cursors_committed(id);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Runs `f` in the current transaction block, or in its own auto-commit
    /// transaction.
    pub(super) fn in_tx<T>(
        &mut self,
        f: impl FnOnce(&mut Transaction, &Self) -> Result<T>,
    ) -> Result<T> {
        if self.explicit || self.implicit {
            let mut tx = match self.tx.take() {
                Some(t) => t,
                None => self.new_tx(),
            };
            self.tx_queried = true;
            let r = match self.begin_statement(&mut tx) {
                Ok(()) => f(&mut tx, self),
                Err(e) => Err(e),
            };
            self.tx = Some(tx);
            r
        } else {
            let mut tx = self.new_tx();
            self.begin_statement(&mut tx)?;
            let v = f(&mut tx, self)?;
            self.before_commit(&mut tx)?;
            self.commit_tx(tx, CommitRequest::Default)?;
            Ok(v)
        }
    }

    /// A statement starts in `tx`: its first statement fixes the isolation
    /// level; each takes its snapshot (or keeps the transaction's).
    pub(super) fn begin_statement(&self, tx: &mut Transaction) -> Result<()> {
        if !tx.has_snapshot() {
            let level = crate::front::transaction::engine_isolation(
                self.settings.get("transaction_isolation").as_deref(),
            );
            // A secondary's writes arrive as redo, outside SSI's tracking:
            // refused there, as PostgreSQL refuses it on a hot standby.
            if level == walden_engine::Isolation::Serializable && tx.database().is_secondary() {
                return Err(crate::error::SqlError::new(
                    crate::error::ErrorKind::FeatureNotSupported,
                    "cannot use serializable mode in a hot standby",
                )
                .with_fields(crate::error::ErrorFields {
                    hint: Some("You can use REPEATABLE READ instead.".into()),
                    ..Default::default()
                }));
            }
            tx.set_isolation(level);
        }
        tx.begin_statement();
        Ok(())
    }

    /// A secondary's database is replaced by a fresh copy when the primary
    /// seeds it: between transactions, follow the name to the new copy (the
    /// old one no longer changes).
    pub(super) fn follow_reseed(&mut self) {
        if self.db.is_superseded() && !self.explicit && self.tx.is_none() {
            if let Ok(d) = self.engine.instance.database(self.db.name()) {
                self.db = d;
            }
        }
    }

    /// Runs a command from the parse caches or a prepared statement: DML
    /// and queries through the plan cache, everything else as it comes.
    pub(super) fn execute_shared(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
    ) -> Result<QueryOutput> {
        // The statement reads and shows times in the session's zone.
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        let _now = walden_engine::types::zone::enter_now(self.explicit.then_some(self.tx_start));
        // Per statement, also within a multi-statement query, as PostgreSQL.
        let deadline = crate::context::timeouts::arm(
            crate::context::timeouts::statement(&self.settings),
            &self.cancel,
            &self.timed_out,
        );
        let r = self.execute_shared_inner(cmd, params);
        drop(deadline);
        match r {
            Err(e) if e.kind == ErrorKind::Cancelled && self.timed_out.swap(false, Relaxed) => {
                Err(SqlError::new(
                    ErrorKind::Cancelled,
                    "canceling statement due to statement timeout",
                ))
            }
            // Walden's notices are NOTICEs: `client_min_messages` above
            // that level, as it stands after the statement, drops them.
            Ok(mut out) => {
                if !out.notices.is_empty() && !self.settings.notices_shown() {
                    out.notices.clear();
                }
                if !out.warnings.is_empty() && !self.settings.warnings_shown() {
                    out.warnings.clear();
                }
                Ok(out)
            }
            r => r,
        }
    }

    fn execute_shared_inner(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
    ) -> Result<QueryOutput> {
        self.follow_reseed();
        let resolved = self.temp_rewrite(cmd)?;
        if Arc::ptr_eq(&resolved, cmd) {
            return self.execute_resolved(cmd, params);
        }
        // Messages name a temporary relation as the client wrote it.
        let prefix = crate::types::temp_names::internal(self.session.id, "");
        match self.execute_resolved(&resolved, params) {
            Ok(mut out) => {
                for n in out.notices.iter_mut() {
                    *n = n.replace(&prefix, "");
                }
                Ok(out)
            }
            Err(mut e) => {
                e.message = e.message.replace(&prefix, "");
                if let Some(f) = e.fields.as_mut() {
                    for s in [&mut f.detail, &mut f.table, &mut f.constraint, &mut f.hint]
                        .into_iter()
                        .flatten()
                    {
                        *s = s.replace(&prefix, "");
                    }
                }
                Err(e)
            }
        }
    }

    fn execute_resolved(&mut self, cmd: &Arc<Command>, params: &[Value]) -> Result<QueryOutput> {
        if let Command::Sql(stmt) = cmd.as_ref() {
            if let Some((opts, inner)) = front::explain_parts(stmt)? {
                self.cancel.store(false, Relaxed);
                return self.explain(opts, inner, params);
            }
        }
        let plannable = match cmd.as_ref() {
            Command::Sql(stmt) => match stmt.as_ref() {
                // SELECT ... INTO creates a table: a statement of its own.
                Statement::Query(q) => {
                    crate::catalog::create_as::select_into(q).is_none()
                        && !crate::dml::with_dml::applies(q)
                }
                Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
                | Statement::Merge(_) => true,
                _ => false,
            },
            Command::DeleteTop(_, stmt) => matches!(stmt.as_ref(), Statement::Delete(_)),
            _ => false,
        };
        if !plannable {
            let who = self.who();
            crate::catalog::privileges::check_command(&who, &self.engine.instance, &self.db, cmd)?;
            let out = self.execute_command(cmd, params)?;
            let inst = self.engine.instance.clone();
            let db = self.db.clone();
            crate::catalog::privileges::after_command(&who, &inst, &db, self.tx.as_mut(), cmd)?;
            return Ok(out);
        }
        self.cancel.store(false, Relaxed);
        if self.failed {
            return Err(failed_tx());
        }
        self.run_planned(cmd, params)
    }

    /// Plans `cmd` (or takes its cached plan) and runs it in the current
    /// transaction, as [`SqlSession::statement`] does for the same statements.
    /// Planning stays inside the transaction so that errors and counters come
    /// out as they do without the cache.
    pub(super) fn run_planned(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
    ) -> Result<QueryOutput> {
        // READ COMMITTED: a statement that waited for a table's lock while
        // another session's DDL on it committed runs again, planned against
        // the new definition (PostgreSQL re-reads a table once it has its
        // lock), if it had changed nothing yet. A few times at most: each
        // retry follows another session's committed DDL.
        let mut tries = 0;
        loop {
            match self.run_planned_once(cmd, params)? {
                Ok(out) => return Ok(out),
                Err(e) if tries >= 3 => return Err(e),
                Err(_) => tries += 1,
            }
        }
    }

    /// One try of [`SqlSession::run_planned`]: `Ok(Err(_))` when the
    /// statement may run again.
    fn run_planned_once(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
    ) -> Result<Result<QueryOutput>> {
        let key = Arc::as_ptr(cmd) as usize;
        // Read before planning: a DDL that lands while we plan bumps the
        // version past this one, so the plan is not reused afterwards.
        let version = self.db.catalog_version();
        // A plan resolved its names along the path it was made with.
        let path = self.path();
        let zone = self.settings.zone();
        let dates = (zone.name, zone.order);
        let cached = self
            .plans
            .get(&key)
            .filter(|c| {
                c.catalog_version == version
                    && c.path == path
                    && c.dates == dates
                    && c.param_types == self.routine_param_types
                    && std::ptr::eq(c.db.as_ptr(), Arc::as_ptr(&self.db))
            })
            .map(|c| (c.plan.clone(), c.needs.clone()));
        self.plan_hits += cached.is_some() as u64;
        let who = self.who();
        let info = self.info();
        let cancel = self.cancel.clone();
        let inst = self.engine.instance.clone();
        let db = self.db.clone();
        let types = self.routine_param_types.clone();
        let run = self.in_tx(|tx, _| {
            let mark = tx.change_mark();
            let r = run_plan(
                tx,
                cached,
                cmd,
                (params, &types),
                (&db, &inst, &who, &info, &cancel),
            );
            let stale = tx.take_stale_table();
            match r {
                Err(e)
                    if stale
                        && tx.isolation() == walden_engine::Isolation::ReadCommitted
                        && tx.change_mark() == mark =>
                {
                    Ok(Err(e))
                }
                Err(e) => Err(e),
                Ok(v) => Ok(Ok(v)),
            }
        })?;
        let (out, fresh) = match run {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        if let Some((plan, needs)) = fresh.filter(|(p, _)| p.reusable()) {
            if self.plans.len() >= PARSE_CACHE {
                self.plans.clear();
            }
            self.plans.insert(
                key,
                CachedPlan {
                    _command: cmd.clone(),
                    db: Arc::downgrade(&db),
                    catalog_version: version,
                    path,
                    dates,
                    plan,
                    param_types: types,
                    needs,
                },
            );
        }
        Ok(Ok(out))
    }
}

/// A plan and the privileges it needs.
type Fresh = Option<(Arc<StmtPlan>, Arc<[crate::catalog::privileges::Need]>)>;

/// Plans (unless `cached`) and runs a statement in `tx`; returns the plan
/// it made, if it made one.
fn run_plan(
    tx: &mut Transaction,
    cached: Fresh,
    cmd: &Arc<Command>,
    (params, types): (&[Value], &[Option<walden_engine::DataType>]),
    (db, inst, who, info, cancel): (
        &Arc<walden_engine::Database>,
        &walden_engine::Instance,
        &crate::catalog::privileges::Who,
        &crate::functions::SessionInfo,
        &std::sync::atomic::AtomicBool,
    ),
) -> Result<(QueryOutput, Fresh)> {
    let (plan, needs, fresh) = match cached {
        Some((p, n)) => (p, n, false),
        None => {
            let mut p = Planner::new(db.clone(), info.system, types);
            p.viewer = Some(tx.id());
            p.path = info.path.clone();
            let plan = Arc::new(plan_command(&mut p, cmd)?);
            let needs: Arc<[_]> = crate::catalog::privileges::needs(cmd, &p).into();
            (plan, needs, true)
        }
    };
    crate::catalog::privileges::require(who, db.id(), &needs)?;
    let ctx = Ctx {
        params,
        info,
        cancel,
        instance: inst,
    };
    let out = match plan.as_ref() {
        StmtPlan::Query(q) => {
            let env = ctx.env(tx);
            let rows = query::execute_plan(q, &env, None)?;
            QueryOutput {
                tag: format!("SELECT {}", rows.len()),
                columns: Some(q.columns.clone()),
                rows,
                ..Default::default()
            }
        }
        StmtPlan::Locking(l) => crate::dml::locking::run(l, tx, &ctx)?,
        StmtPlan::Insert(i) => dml::run_insert(i, tx, &ctx)?,
        StmtPlan::Update(u) => dml::run_update(u, tx, &ctx)?,
        StmtPlan::Delete(d) => dml::run_delete(d, tx, &ctx)?,
        StmtPlan::Merge(m) => dml::run_merge(m, tx, &ctx)?,
    };
    Ok((out, fresh.then_some((plan, needs))))
}

/// Plans a command [`SqlSession::execute_shared`] sends to the plan cache.
pub(super) fn plan_command(p: &mut Planner<'_>, cmd: &Command) -> Result<StmtPlan> {
    match cmd {
        Command::Sql(stmt) => match stmt.as_ref() {
            Statement::Query(q) if crate::dml::locking::wanted(q) => {
                Ok(StmtPlan::Locking(crate::dml::locking::plan(p, q)?))
            }
            Statement::Query(q) if dml::is_merge(q).is_some() => Ok(StmtPlan::Merge(
                dml::plan_merge(p, dml::is_merge(q).expect("checked"), q.with.as_ref())?,
            )),
            Statement::Query(q) => Ok(StmtPlan::Query(query::plan_query(p, q, None)?)),
            Statement::Merge(m) => Ok(StmtPlan::Merge(dml::plan_merge(p, m, None)?)),
            Statement::Insert(ins) => Ok(StmtPlan::Insert(dml::plan_insert(p, ins)?)),
            Statement::Update(u) => Ok(StmtPlan::Update(dml::plan_update(p, u)?)),
            Statement::Delete(d) => Ok(StmtPlan::Delete(dml::plan_delete_limit(p, d, None)?)),
            _ => Err(SqlError::internal("not a plannable statement")),
        },
        Command::DeleteTop(n, stmt) => match stmt.as_ref() {
            Statement::Delete(d) => Ok(StmtPlan::Delete(dml::plan_delete_limit(p, d, Some(*n))?)),
            _ => Err(SqlError::internal("DELETE TOP without DELETE")),
        },
        _ => Err(SqlError::internal("not a plannable statement")),
    }
}
