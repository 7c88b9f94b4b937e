//! COPY: TO STDOUT, and FROM STDIN rows parsed and inserted batch by batch
//! as the client's data arrives; the data formats are in `format.rs`.

mod format;

pub use format::{CopyFormat, CopyIn, CopyLoad, CopyOut};
use format::{Record, RecordReader};

use crate::dml::Ctx;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front;
use crate::query::{self, Planner};
use crate::session::{failed_tx, SqlSession};
use crate::QueryOutput;
use sqlparser::ast::{self, Statement};
use walden_engine::{CommitRequest, Transaction, Value};

impl SqlSession {
    /// `COPY table [(columns)] TO STDOUT` and `COPY (query) TO STDOUT`: runs
    /// the query in the current transaction like a SELECT; the wire server
    /// lays the rows out as the [`CopyOut`] says.
    pub(in crate::session) fn copy_to(
        &mut self,
        source: &ast::CopySource,
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
        params: &[Value],
    ) -> Result<QueryOutput> {
        let format = CopyFormat::from_options(options, legacy, true)?;
        let (q, names) = match source {
            ast::CopySource::Query(q) => (q.clone(), None),
            ast::CopySource::Table {
                table_name,
                columns,
            } => {
                let table = self.db.table(&query::object_last(table_name))?;
                let def = &table.def;
                let names: Vec<String> = if columns.is_empty() {
                    // Without its generated columns, as PostgreSQL 15.
                    def.columns
                        .iter()
                        .filter(|c| c.generated.is_none())
                        .map(|c| c.name.clone())
                        .collect()
                } else {
                    columns
                        .iter()
                        .map(|c| match def.column_index(&c.value) {
                            Some(i) if def.columns[i].generated.is_some() => {
                                Err(crate::dml::generated::copy_refused(&c.value))
                            }
                            Some(i) => Ok(def.columns[i].name.clone()),
                            None => Err(SqlError::new(
                                ErrorKind::UndefinedColumn,
                                format!(
                                    "column \"{}\" of relation \"{}\" does not exist",
                                    c.value,
                                    table.name()
                                ),
                            )),
                        })
                        .collect::<Result<_>>()?
                };
                // The rows come through the planner, as a SELECT of the columns
                // (quoted: the names are the table's own).
                let quote = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
                // Qualified: the table was found already, whatever the path.
                let sql = format!(
                    "SELECT {} FROM public.{}",
                    names
                        .iter()
                        .map(|n| quote(n))
                        .collect::<Vec<_>>()
                        .join(", "),
                    quote(table.name())
                );
                match front::parse_sql(&sql)? {
                    Statement::Query(q) => (q, Some(names)),
                    _ => return Err(SqlError::internal("COPY TO: not a query")),
                }
            }
        };
        let mut out = self.statement(&Statement::Query(q), params)?;
        let mut columns = out.columns.take().unwrap_or_default();
        if let Some(names) = names {
            for (c, n) in columns.iter_mut().zip(names) {
                c.name = n;
            }
        }
        let mut forced = vec![false; columns.len()];
        for f in &format.force_quote {
            let i = columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(f))
                .ok_or_else(|| {
                    SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!("FORCE_QUOTE column \"{f}\" not referenced by COPY"),
                    )
                })?;
            forced[i] = true;
        }
        out.tag = format!("COPY {}", out.rows.len());
        out.columns = Some(columns);
        out.copy_out = Some(CopyOut { format, forced });
        Ok(out)
    }

    /// Starts a `COPY ... FROM STDIN` (before the client sends data): its
    /// transaction (the block's, or its own outside one) and statement
    /// begin, the constraints it checks are compiled. The data follows in
    /// [`SqlSession::copy_in_data`] or [`SqlSession::copy_in_values`], then
    /// [`SqlSession::copy_in_finish`]; after an error in any of them,
    /// [`SqlSession::copy_in_abort`].
    pub fn copy_in_start(&mut self, copy: &CopyIn) -> Result<CopyLoad> {
        if self.failed {
            return Err(failed_tx());
        }
        let r = self.start_load(copy);
        if r.is_err() {
            self.note_error();
        }
        r
    }

    fn start_load(&mut self, copy: &CopyIn) -> Result<CopyLoad> {
        let table = self.db.table(&copy.table)?;
        let cols = copy_columns(&table, &copy.columns)?;
        let (checks, defaults) = {
            let mut p = Planner::new(self.db.clone(), &crate::compat::CATALOGS, &[]);
            (
                crate::dml::checks::Checks::compile(&mut p, &table)?,
                crate::dml::defaults::ExprDefaults::compile(&mut p, &table)?,
            )
        };
        let block = self.explicit || self.implicit;
        let mut tx = if block {
            self.tx.take().unwrap_or_else(|| self.new_tx())
        } else {
            self.new_tx()
        };
        let begun = self.begin_statement(&mut tx);
        let fks = crate::dml::foreign_keys::Pending::new(&tx, &table);
        let (routing, bound) = {
            let mut p = Planner::new(self.db.clone(), &crate::compat::CATALOGS, &[]);
            p.viewer = Some(tx.id());
            let routing = match &table.def.partition_key {
                Some(_) => crate::dml::routing::Routing::plan(&mut p, &table).map(Some),
                None => Ok(None),
            };
            let bound = crate::dml::routing::own_constraint(&mut p, &table);
            (routing, bound)
        };
        let own = if block {
            self.tx_queried = true;
            self.tx = Some(tx);
            None
        } else {
            Some(tx)
        };
        begun?;
        let (routing, bound) = (routing?, bound?);
        Ok(CopyLoad {
            copy: copy.clone(),
            table,
            cols,
            checks,
            defaults,
            routing,
            bound,
            fks,
            reader: RecordReader::default(),
            rows: 0,
            read: 0,
            ended: false,
            own,
            fire: None,
        })
    }

    /// Runs `f` in the COPY's transaction.
    fn in_load<T>(
        &mut self,
        load: &mut CopyLoad,
        f: impl FnOnce(&mut Transaction, &mut CopyLoad, &Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        let _now = walden_engine::types::zone::enter_now(self.explicit.then_some(self.tx_start));
        let own = load.own.is_some();
        let Some(mut tx) = (if own { load.own.take() } else { self.tx.take() }) else {
            return Err(SqlError::internal("COPY: its transaction has ended"));
        };
        let info = self.info();
        let ctx = Ctx {
            params: &[],
            info: &info,
            cancel: &self.cancel,
            instance: &self.engine.instance,
        };
        let r = f(&mut tx, load, &ctx);
        if own {
            load.own = Some(tx);
        } else {
            self.tx = Some(tx);
        }
        r
    }

    /// Text or CSV data as it arrives (`last` when the client is done): the
    /// whole records in it are inserted; a record cut by the end of `data`
    /// waits for the rest.
    pub fn copy_in_data(&mut self, load: &mut CopyLoad, data: &[u8], last: bool) -> Result<()> {
        if load.ended {
            return Ok(());
        }
        let batch = load
            .reader
            .feed(&load.copy.format, &load.copy.table, data, last)?;
        self.in_load(load, |tx, load, ctx| {
            let format = load.copy.format.clone();
            let ended = format.records(&batch, &mut |r: &Record<'_>| {
                let line = || context(&load.copy.table, r.line, Some(r.raw));
                if r.fields.len() > load.cols.len() {
                    return Err(bad_copy("extra data after last expected column", line()));
                }
                if let Some(&c) = load.cols.get(r.fields.len()) {
                    let name = &load.table.def.columns[c].name;
                    return Err(bad_copy(
                        format!("missing data for column \"{name}\""),
                        line(),
                    ));
                }
                // Each field becomes its column's type here, so a value that
                // does not convert names its line and column, as PostgreSQL's
                // input functions do.
                let mut values = Vec::with_capacity(r.fields.len());
                for (f, &c) in r.fields.iter().zip(&load.cols) {
                    let column = &load.table.def.columns[c];
                    values.push(match f {
                        None => Value::Null,
                        Some(s) => walden_engine::types::coerce(Value::text(s), &column.data_type)
                            .map_err(|e| {
                                let at = format!(
                                    "COPY {}, line {}, column {}: \"{}\"",
                                    load.copy.table,
                                    r.line,
                                    column.name,
                                    clip(s)
                                );
                                with_context(SqlError::from(e), at)
                            })?,
                    });
                }
                insert_row(tx, load, ctx, values, r.line, Some(r.raw))
            })?;
            load.ended |= ended;
            Ok(())
        })
    }

    /// Rows whose data the caller decoded (the binary format), as they
    /// arrive: values typed as [`CopyIn::types`].
    pub fn copy_in_values(
        &mut self,
        load: &mut CopyLoad,
        rows: &mut dyn Iterator<Item = Result<Vec<Value>>>,
    ) -> Result<()> {
        self.in_load(load, |tx, load, ctx| {
            for r in rows {
                load.read += 1;
                let line = load.read;
                let values = r.map_err(|e| {
                    with_context(e, format!("COPY {}, line {line}", load.copy.table))
                })?;
                insert_row(tx, load, ctx, values, line, None)?;
            }
            Ok(())
        })
    }

    /// The client is done: foreign keys are checked, and a COPY outside a
    /// transaction block commits.
    pub fn copy_in_finish(&mut self, mut load: CopyLoad) -> Result<QueryOutput> {
        let r = self.in_load(&mut load, |tx, load, ctx| {
            start_triggers(tx, load, ctx)?;
            let fks = std::mem::replace(
                &mut load.fks,
                crate::dml::foreign_keys::Pending::new(tx, &load.table),
            );
            fks.finish(tx, ctx)?;
            match load.fire.take() {
                Some(Some(f)) => f.finish(tx, ctx),
                _ => Ok(()),
            }
        });
        let r = r.and_then(|()| match load.own.take() {
            Some(mut tx) => crate::dml::deferred::check_at_commit(&mut tx)
                .and_then(|()| self.commit_tx(tx, CommitRequest::Default).map(|_| ())),
            None => Ok(()),
        });
        match r {
            Ok(_) => Ok(QueryOutput::command(format!("COPY {}", load.rows))),
            Err(e) => {
                self.note_error();
                Err(e)
            }
        }
    }

    /// The COPY failed (bad data, a constraint, CopyFail from the client,
    /// the connection lost): all of it is undone, as a failed statement.
    pub fn copy_in_abort(&mut self, mut load: CopyLoad) {
        if let Some(tx) = load.own.take() {
            tx.rollback();
        }
        self.note_error();
    }
}

/// Inserts one row of COPY data (`values` for the copied columns), checking
/// constraints as INSERT does.
fn insert_row(
    tx: &mut Transaction,
    load: &mut CopyLoad,
    ctx: &Ctx<'_>,
    values: Vec<Value>,
    line: usize,
    raw: Option<&str>,
) -> Result<()> {
    let mut full = vec![None; load.table.def.columns.len()];
    for (v, &c) in values.into_iter().zip(&load.cols) {
        full[c] = Some(v);
    }
    load.defaults.fill(&mut full, &ctx.env(tx))?;
    start_triggers(tx, load, ctx)?;
    if let Some(Some(f)) = load
        .fire
        .as_ref()
        .filter(|f| f.as_ref().is_some_and(|f| f.has_before_row()))
    {
        let row = tx.defaults_taken(&load.table, full)?;
        match f.before_row(tx, ctx, None, Some(row))? {
            Some(r) => full = r.into_iter().map(Some).collect(),
            None => return Ok(()),
        }
    }
    if !load.checks.generated().is_empty() {
        let at = |e: SqlError| with_context(e, context(&load.copy.table, line, raw));
        let mut row = tx
            .defaults_taken(&load.table, full)
            .map_err(|e| at(e.into()))?;
        load.checks.generate(&mut row, &ctx.env(tx)).map_err(at)?;
        full = row.into_iter().map(Some).collect();
    }
    if let Some(r) = &load.routing {
        let at = |e: SqlError| with_context(e, context(&load.copy.table, line, raw));
        let row = tx
            .complete_row(&load.table, full)
            .map_err(|e| at(e.into()))?;
        if !load.checks.is_empty() {
            load.checks.enforce(&row, &ctx.env(tx)).map_err(at)?;
        }
        if let Some(b) = &load.bound {
            b.enforce(&row, &ctx.env(tx)).map_err(at)?;
        }
        r.insert(tx, ctx, row).map_err(at)?;
        load.rows += 1;
        return Ok(());
    }
    let row = tx.insert_into(&load.table, full).map_err(|e| {
        let e = SqlError::from(e);
        // PostgreSQL shows the line's text except for a unique violation,
        // found once the row has left the line buffer.
        let raw = raw.filter(|_| e.kind != ErrorKind::UniqueViolation);
        with_context(e, context(&load.copy.table, line, raw))
    })?;
    if !load.checks.is_empty() {
        load.checks
            .enforce(&row, &ctx.env(tx))
            .map_err(|e| with_context(e, context(&load.copy.table, line, raw)))?;
    }
    if let Some(b) = &load.bound {
        b.enforce(&row, &ctx.env(tx))
            .map_err(|e| with_context(e, context(&load.copy.table, line, raw)))?;
    }
    load.fks.inserted(&load.table, &row);
    if let Some(Some(f)) = load.fire.as_mut() {
        f.after_row(None, Some(&row));
    }
    load.rows += 1;
    Ok(())
}

/// The COPY's INSERT triggers, loaded once; BEFORE STATEMENT fired then.
fn start_triggers(tx: &mut Transaction, load: &mut CopyLoad, ctx: &Ctx<'_>) -> Result<()> {
    if load.fire.is_some() {
        return Ok(());
    }
    let f = crate::dml::triggers::Firing::load(
        tx,
        ctx,
        &load.table,
        crate::front::plpgsql::trigger::TrigOp::Insert,
        &[],
    )?;
    if f.is_some() && load.routing.is_some() {
        return Err(SqlError::unsupported("triggers on a partitioned table"));
    }
    if let Some(f) = &f {
        f.before_statement(tx, ctx)?;
    }
    load.fire = Some(f);
    Ok(())
}

/// PostgreSQL's CONTEXT for a COPY line: `COPY t, line 3: "text"`.
fn context(table: &str, line: usize, raw: Option<&str>) -> String {
    match raw {
        Some(raw) => format!("COPY {table}, line {line}: \"{}\"", clip(raw)),
        None => format!("COPY {table}, line {line}"),
    }
}

/// Data shown in an error's context: at most 100 bytes, as PostgreSQL cuts it.
fn clip(s: &str) -> String {
    const MAX: usize = 100;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

fn with_context(mut e: SqlError, context: String) -> SqlError {
    let fields = e.fields.get_or_insert_with(Default::default);
    if fields.context.is_none() {
        fields.context = Some(context);
    }
    e
}

fn bad_copy(message: impl Into<String>, context: String) -> SqlError {
    with_context(SqlError::new(ErrorKind::BadCopyFormat, message), context)
}

/// The table positions of COPY's column list (all columns when empty).
pub(in crate::session) fn copy_columns(
    table: &walden_engine::Table,
    columns: &[String],
) -> Result<Vec<usize>> {
    // Generated columns are left out of COPY, in either direction, as
    // PostgreSQL 15 leaves them out; naming one is an error.
    if columns.is_empty() {
        return Ok((0..table.def.columns.len())
            .filter(|&i| !crate::dml::generated::is_generated(table, i))
            .collect());
    }
    columns
        .iter()
        .map(|c| {
            let i = table.def.column_index(c).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!(
                        "column \"{c}\" of relation \"{}\" does not exist",
                        table.name()
                    ),
                )
            })?;
            if crate::dml::generated::is_generated(table, i) {
                return Err(crate::dml::generated::copy_refused(c));
            }
            Ok(i)
        })
        .collect()
}
