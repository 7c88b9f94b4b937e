//! PostgreSQL functions that give rows: `RETURNS SETOF type`, `RETURNS
//! SETOF table`, `RETURNS TABLE (...)` and OUT / INOUT parameters (one row
//! of named columns), in LANGUAGE sql (the last statement's rows) and
//! PL/pgSQL (`RETURN NEXT`, `RETURN QUERY [EXECUTE]`).
//!
//! A call is written `walden_routine_set('f', 'columns', args...)` when a
//! statement is compiled (`funcs::expand_calls`): the query stage reads it
//! as a set-returning function in FROM or in a select list, with the
//! result columns the second argument names, and runs it through the
//! session's routine hook ([`crate::functions::Routines::call_rows`]). A
//! scalar function called in FROM takes the same way (one row).

use super::*;
use crate::front::plpgsql::{Lang, PgFunc};

/// The rows a running function has returned so far.
pub(super) struct RowSink {
    /// The result columns' types.
    types: Vec<DataType>,
    rows: Vec<Vec<Value>>,
    /// The OUT parameters' variables (with `@`), in column order; empty
    /// when the function returns a value per row.
    outs: Vec<String>,
    /// A set (RETURN NEXT / QUERY allowed).
    set: bool,
}

fn mismatch(msg: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::DatatypeMismatch, msg)
}

/// `row` cast to the result's types; a row of another width is 42804.
fn fit(row: Vec<Value>, types: &[DataType]) -> Result<Vec<Value>> {
    if row.len() != types.len() {
        return Err(
            mismatch("structure of query does not match function result type").with_fields(
                crate::error::ErrorFields {
                    detail: Some(format!(
                    "Number of returned columns ({}) does not match expected column count ({}).",
                    row.len(),
                    types.len()
                )),
                    ..Default::default()
                },
            ),
        );
    }
    row.into_iter()
        .zip(types)
        .map(|(v, t)| crate::functions::cast(v, t))
        .collect()
}

/// What PostgreSQL checks when a PL/pgSQL function is created: RETURN
/// with a value where the function gives rows, RETURN NEXT / QUERY where
/// it does not return a set.
pub(super) fn check_returns(f: &PgFunc, stmts: &[TStmt]) -> Result<()> {
    for s in stmts {
        match s {
            TStmt::Return(Some(_)) if f.set => {
                return Err(mismatch(
                    "RETURN cannot have a parameter in function returning set",
                ))
            }
            TStmt::Return(Some(_)) if !f.out.is_empty() => {
                return Err(mismatch(
                    "RETURN cannot have a parameter in function with OUT parameters",
                ))
            }
            TStmt::ReturnNext(_) if !f.set => {
                return Err(mismatch("cannot use RETURN NEXT in a non-SETOF function"))
            }
            TStmt::ReturnQuery(_) | TStmt::ReturnQueryExecute { .. } if !f.set => {
                return Err(mismatch("cannot use RETURN QUERY in a non-SETOF function"))
            }
            TStmt::ReturnNext(Some(_)) if !f.out.is_empty() => {
                return Err(mismatch(
                    "RETURN NEXT cannot have a parameter in function with OUT parameters",
                ))
            }
            TStmt::ReturnNext(None) if f.out.is_empty() => {
                return Err(SqlError::syntax("RETURN NEXT must have a parameter"))
            }
            TStmt::Block(b) | TStmt::ForInt { body: b, .. } => check_returns(f, b)?,
            TStmt::If { then, els, .. } => {
                check_returns(f, std::slice::from_ref(then.as_ref()))?;
                if let Some(e) = els {
                    check_returns(f, std::slice::from_ref(e.as_ref()))?;
                }
            }
            TStmt::While { body, .. } => check_returns(f, std::slice::from_ref(body.as_ref()))?,
            TStmt::Guarded { body, handlers } => {
                check_returns(f, body)?;
                for (_, h) in handlers {
                    check_returns(f, h)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

impl<'h, H: Host> Runner<'h, H> {
    /// A function's result columns: each name (`None`: the one value of a
    /// function of a plain type) and its type as written.
    pub(super) fn result_columns(&mut self, f: &PgFunc) -> Result<Vec<(Option<String>, String)>> {
        if !f.out.is_empty() {
            return Ok(f
                .out
                .iter()
                .map(|o| (Some(o.name[1..].to_string()), o.ty.clone()))
                .collect());
        }
        if crate::types::names::parse_type_name(&f.returns).is_ok() {
            return Ok(vec![(None, f.returns.clone())]);
        }
        // A table's name is its row type.
        let o = self.fixed(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
             WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped \
             ORDER BY a.attnum",
            &[Value::text(f.returns.clone())],
        )?;
        if o.rows.is_empty() {
            return Err(SqlError::new(
                ErrorKind::UndefinedObject,
                format!("type \"{}\" does not exist", f.returns),
            ));
        }
        Ok(o.rows
            .into_iter()
            .map(|r| {
                let mut r = r.into_iter();
                let n = r.next().map(|v| v.to_string()).unwrap_or_default();
                let t = r.next().map(|v| v.to_string()).unwrap_or_default();
                (Some(n), t)
            })
            .collect())
    }

    /// A call `f(args)` as `walden_routine_set('f', 'columns', args cast
    /// to their types)`: a function in FROM, or one that gives rows.
    pub(super) fn routine_set_call(
        &mut self,
        key: &str,
        f: &PgFunc,
        args: &[Option<String>],
    ) -> Result<String> {
        if f.is_trigger() {
            return Err(SqlError::unsupported(
                "trigger functions can only be called as triggers",
            ));
        }
        let values = super::pg_funcs::bind_call(f, args)?;
        let cols = if f.gives_rows() {
            self.result_columns(f)?
        } else {
            vec![(None, f.returns.clone())]
        };
        let spec: Vec<String> = cols
            .iter()
            .map(|(n, t)| format!("{}:{t}", n.as_deref().unwrap_or("")))
            .collect();
        let mut out = format!(
            "walden_routine_set('{}', '{}'",
            key.replace('\'', "''"),
            spec.join(";").replace('\'', "''")
        );
        for (p, v) in f.params.iter().zip(values) {
            out.push_str(", ");
            out.push_str(&super::funcs::cast_pg(&v, &p.ty));
        }
        out.push(')');
        Ok(out)
    }

    /// One call of a function that gives rows: all its rows, each cast to
    /// `types` (a function of OUT parameters gives exactly one).
    pub(super) fn call_pg_rows(
        &mut self,
        f: &PgFunc,
        types: &[DataType],
        args: Vec<Value>,
    ) -> Result<Vec<Vec<Value>>> {
        if f.is_trigger() {
            return Err(SqlError::unsupported(
                "trigger functions can only be called as triggers",
            ));
        }
        if !f.gives_rows() {
            let v = self.call_pg_func(f, args)?;
            return Ok(vec![fit(vec![v], types)?]);
        }
        if f.strict && args.iter().any(Value::is_null) {
            return Ok(if f.set {
                Vec::new()
            } else {
                vec![vec![Value::Null; types.len()]]
            });
        }
        let sink = RowSink {
            types: types.to_vec(),
            rows: Vec::new(),
            outs: f.out.iter().map(|o| o.name.clone()).collect(),
            set: f.set,
        };
        let saved = self.sink.replace(sink);
        let r = self.invoke_pg(f, args);
        let sink = std::mem::replace(&mut self.sink, saved);
        let (_, frame) = r?;
        let rows = sink.map(|s| s.rows).unwrap_or_default();
        if f.set {
            return Ok(rows);
        }
        let row = match f.lang {
            Lang::Plpgsql => f
                .out
                .iter()
                .map(|o| {
                    frame
                        .get(&o.name)
                        .map(|v| v.value.clone())
                        .unwrap_or(Value::Null)
                })
                .collect(),
            Lang::Sql => rows
                .into_iter()
                .next()
                .unwrap_or_else(|| vec![Value::Null; types.len()]),
        };
        Ok(vec![fit(row, types)?])
    }

    /// A LANGUAGE sql function's last statement's rows, into the sink.
    pub(super) fn sink_rows(&mut self, rows: Vec<Vec<Value>>) -> Result<()> {
        let Some(s) = self.sink.as_mut() else {
            return Ok(());
        };
        for r in rows {
            let r = fit(r, &s.types)?;
            s.rows.push(r);
        }
        Ok(())
    }

    /// Whether the running function gives rows (RETURN takes no value).
    pub(super) fn returns_rows(&self) -> Option<bool> {
        self.sink.as_ref().map(|s| s.set)
    }

    /// `RETURN NEXT`, `RETURN QUERY [EXECUTE]`.
    pub(super) fn return_rows(&mut self, s: &TStmt) -> Result<()> {
        let (set, outs, width) = match &self.sink {
            Some(k) => (k.set, k.outs.clone(), k.types.len()),
            None => (false, Vec::new(), 0),
        };
        let what = match s {
            TStmt::ReturnNext(_) => "RETURN NEXT",
            _ => "RETURN QUERY",
        };
        if !set {
            return Err(mismatch(format!(
                "cannot use {what} in a non-SETOF function"
            )));
        }
        let rows = match s {
            TStmt::ReturnNext(None) if outs.is_empty() => {
                return Err(SqlError::syntax("RETURN NEXT must have a parameter"))
            }
            TStmt::ReturnNext(None) => {
                let mut row = Vec::with_capacity(outs.len());
                for o in &outs {
                    row.push(self.value_of(o)?);
                }
                vec![row]
            }
            TStmt::ReturnNext(Some(_)) if !outs.is_empty() => {
                return Err(mismatch(
                    "RETURN NEXT cannot have a parameter in function with OUT parameters",
                ))
            }
            TStmt::ReturnNext(Some(_)) if width != 1 => {
                return Err(SqlError::unsupported(
                    "RETURN NEXT of a row value in a function returning SETOF a table's row type (RETURN QUERY is supported)",
                ))
            }
            TStmt::ReturnNext(Some(e)) => vec![vec![self.eval(e)?]],
            TStmt::ReturnQuery(q) => {
                let o = self.sql(q)?;
                if o.columns.is_none() {
                    return Err(mismatch("RETURN QUERY needs a query that returns rows"));
                }
                o.rows
            }
            TStmt::ReturnQueryExecute { text, using } => {
                let sql = match self.eval(text)? {
                    Value::Null => {
                        return Err(SqlError::new(
                            ErrorKind::NullValueNotAllowed,
                            "query string argument of EXECUTE is null",
                        ))
                    }
                    v => v.to_string(),
                };
                let mut params = Vec::new();
                for u in using {
                    params.push(self.eval(u)?);
                }
                let expanded = self.expand_calls(&sql)?;
                let c = self.host.parse(&expanded)?;
                let o = self.host.run(&c, &params)?;
                if o.columns.is_none() {
                    return Err(mismatch("RETURN QUERY needs a query that returns rows"));
                }
                o.rows
            }
            _ => return Err(SqlError::internal("not a RETURN NEXT / QUERY")),
        };
        let found = !rows.is_empty();
        self.sink_rows(rows)?;
        if !matches!(s, TStmt::ReturnNext(_)) {
            self.set_found(found);
        }
        Ok(())
    }
}
