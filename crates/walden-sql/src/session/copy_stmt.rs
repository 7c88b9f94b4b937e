//! COPY: TO STDOUT, and FROM STDIN rows parsed and inserted.

use super::{failed_tx, SqlSession};
use crate::copy::{CopyFormat, CopyIn, CopyOut};
use crate::dml::Ctx;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front;
use crate::query::{self, Planner};
use crate::QueryOutput;
use sqlparser::ast::{self, Statement};
use walden_engine::Value;

impl SqlSession {
    /// `COPY table [(columns)] TO STDOUT` and `COPY (query) TO STDOUT`: runs
    /// the query in the current transaction like a SELECT; the wire server
    /// lays the rows out as the [`CopyOut`] says.
    pub(super) fn copy_to(
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
                    def.columns.iter().map(|c| c.name.clone()).collect()
                } else {
                    columns
                        .iter()
                        .map(|c| match def.column_index(&c.value) {
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

    /// Feeds the data of a `COPY ... FROM STDIN`.
    pub fn copy_in(&mut self, copy: &CopyIn, data: &[u8]) -> Result<QueryOutput> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        if self.failed {
            return Err(failed_tx());
        }
        let r = self.copy_rows(copy, data);
        if r.is_err() {
            self.note_error();
        }
        r
    }

    /// Feeds the rows of a `COPY ... FROM STDIN` whose data the caller
    /// decoded (the binary format): values typed as [`CopyIn::types`].
    pub fn copy_in_values(
        &mut self,
        copy: &CopyIn,
        rows: &mut dyn Iterator<Item = Result<Vec<Value>>>,
    ) -> Result<QueryOutput> {
        let _zone = walden_engine::types::zone::enter(&self.settings.zone());
        if self.failed {
            return Err(failed_tx());
        }
        let rows = rows
            .enumerate()
            .map(|(i, r)| r.map(|r| (i + 1, r.into_iter().map(Some).collect())));
        let r = self.insert_copy_rows(copy, rows);
        if r.is_err() {
            self.note_error();
        }
        r
    }

    fn copy_rows(&mut self, copy: &CopyIn, data: &[u8]) -> Result<QueryOutput> {
        let text = std::str::from_utf8(data)
            .map_err(|_| SqlError::new(ErrorKind::InvalidText, "COPY data is not valid UTF-8"))?;
        let rows = copy
            .format
            .parse_input(text)
            .into_iter()
            .map(|(lineno, fields)| {
                let row = fields
                    .into_iter()
                    .map(|f| Some(f.map(Value::text).unwrap_or(Value::Null)))
                    .collect();
                Ok((lineno, row))
            });
        self.insert_copy_rows(copy, rows)
    }

    /// Inserts COPY's rows (line number, one value per copied column) in
    /// the current transaction, checking constraints as INSERT does.
    fn insert_copy_rows(
        &mut self,
        copy: &CopyIn,
        rows: impl Iterator<Item = Result<(usize, Vec<Option<Value>>)>>,
    ) -> Result<QueryOutput> {
        let table = self.db.table(&copy.table)?;
        let cols = copy_columns(&table, &copy.columns)?;
        let width = table.def.columns.len();
        let copy = copy.clone();
        let info = self.info();
        let cancel = self.cancel.clone();
        let inst = self.engine.instance.clone();
        let db = self.db.clone();
        self.in_tx(move |tx, _| {
            let checks = {
                let mut p = Planner::new(db, &inst, &[]);
                crate::constraints::Checks::compile(&mut p, &table)?
            };
            let ctx = Ctx {
                params: &[],
                info: &info,
                cancel: &cancel,
                instance: &inst,
            };
            let mut n = 0u64;
            let mut fks = crate::foreign_keys::enforce::Pending::new(tx, &table);
            for r in rows {
                let (lineno, fields) = r?;
                if fields.len() != cols.len() {
                    return Err(SqlError::new(
                        ErrorKind::DataException,
                        format!(
                            "COPY {}, line {lineno}: expected {} columns, got {}",
                            copy.table,
                            cols.len(),
                            fields.len()
                        ),
                    ));
                }
                let mut full = vec![None; width];
                for (f, &c) in fields.into_iter().zip(&cols) {
                    full[c] = f;
                }
                let row = tx.insert_into(&table, full).map_err(|e| {
                    let e = SqlError::from(e);
                    SqlError::new(
                        e.kind,
                        format!("COPY {}, line {lineno}: {}", copy.table, e.message),
                    )
                })?;
                if !checks.is_empty() {
                    checks.enforce(&row, &ctx.env(tx))?;
                }
                fks.inserted(&table, &row);
                n += 1;
            }
            fks.finish(tx, &ctx)?;
            Ok(QueryOutput::command(format!("COPY {n}")))
        })
    }
}

/// The table positions of COPY's column list (all columns when empty).
pub(super) fn copy_columns(table: &walden_engine::Table, columns: &[String]) -> Result<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..table.def.columns.len()).collect());
    }
    columns
        .iter()
        .map(|c| {
            table.def.column_index(c).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!(
                        "column \"{c}\" of relation \"{}\" does not exist",
                        table.name()
                    ),
                )
            })
        })
        .collect()
}
