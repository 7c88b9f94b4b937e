//! The extended query protocol: Parse, Bind, Describe, Execute (with a row
//! limit and PortalSuspended) and Close.

use super::*;

pub(super) struct Stmt {
    prepared: Prepared,
    /// Parameter type OIDs: the client's where it gave one, else the inferred type's.
    param_oids: Vec<u32>,
}

pub(super) struct Portal {
    stmt: Arc<Stmt>,
    /// Taken by the first Execute.
    params: Option<Vec<Value>>,
    /// One format code per result column.
    formats: Vec<i16>,
    /// Rows not yet sent by an Execute with a row limit.
    pending: Option<Pending>,
    done_tag: Option<String>,
}

pub(super) struct Pending {
    columns: Vec<Column>,
    rows: std::vec::IntoIter<Vec<Value>>,
    tag: String,
}

/// The tag of an Execute that resumes a suspended query: PostgreSQL counts
/// the rows of that Execute (and of none once the portal is exhausted).
fn resumed_tag(tag: &str, rows: usize) -> String {
    if tag.starts_with("SELECT ") {
        format!("SELECT {rows}")
    } else {
        tag.to_string()
    }
}

/// Expands Bind's format codes (none: all text; one: all alike; else one each).
fn expand_formats(codes: &[i16], n: usize, what: &str) -> Result<Vec<i16>, PgError> {
    let v = match codes.len() {
        0 => vec![0; n],
        1 => vec![codes[0]; n],
        k if k == n => codes.to_vec(),
        k => {
            return Err(PgError::error(
                sqlstate::PROTOCOL_VIOLATION,
                format!("bind message has {k} {what} formats but there are {n} {what}s"),
            ))
        }
    };
    if let Some(bad) = v.iter().find(|&&f| f != 0 && f != 1) {
        return Err(PgError::error(
            sqlstate::PROTOCOL_VIOLATION,
            format!("unsupported format code: {bad}"),
        ));
    }
    Ok(v)
}

impl Connection {
    pub(super) async fn parse(&mut self, p: Parse) -> IoResult<Result<(), PgError>> {
        let name = p.name.unwrap_or_default();
        // One namespace with the statements SQL PREPARE made, as in PostgreSQL.
        if !name.is_empty()
            && (self.statements.contains_key(&name) || self.session.has_sql_prepared(&name))
        {
            return Ok(Err(PgError::error(
                sqlstate::DUPLICATE_PREPARED_STATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            )));
        }
        let types: Vec<Option<DataType>> = p
            .type_oids
            .iter()
            .map(|&oid| {
                if oid == 0 {
                    None
                } else {
                    pgtypes::oid_to_type(oid)
                }
            })
            .collect();
        let prepared = match self
            .guarded(|s| s.prepare(&p.query, &types))
            .and_then(|r| r)
        {
            Ok(p) => p,
            Err(e) => return Ok(Err(e.into())),
        };
        let param_oids = prepared
            .param_types
            .iter()
            .enumerate()
            .map(|(i, t)| match p.type_oids.get(i) {
                Some(&oid) if oid != 0 && oid != pgtypes::OID_UNKNOWN => oid,
                _ => pgtypes::type_oid(t),
            })
            .collect();
        self.statements.insert(
            name,
            Arc::new(Stmt {
                prepared,
                param_oids,
            }),
        );
        self.send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(Ok(()))
    }

    pub(super) async fn bind(&mut self, b: Bind) -> IoResult<Result<(), PgError>> {
        let sname = b.statement_name.unwrap_or_default();
        let Some(stmt) = self.statements.get(&sname).cloned() else {
            return Ok(Err(PgError::error(
                sqlstate::INVALID_SQL_STATEMENT_NAME,
                if sname.is_empty() {
                    "unnamed prepared statement does not exist".to_string()
                } else {
                    format!("prepared statement \"{sname}\" does not exist")
                },
            )));
        };
        let pname = b.portal_name.unwrap_or_default();
        // Portals and cursors share one namespace, as in PostgreSQL.
        if !pname.is_empty()
            && (self.portals.contains_key(&pname) || self.session.cursor_columns(&pname).is_some())
        {
            return Ok(Err(PgError::error(
                "42P03",
                format!("cursor \"{pname}\" already exists"),
            )));
        }
        let n = stmt.param_oids.len();
        if b.parameters.len() != n {
            return Ok(Err(PgError::error(
                sqlstate::PROTOCOL_VIOLATION,
                format!(
                    "bind message supplies {} parameters, but prepared statement \"{sname}\" requires {n}",
                    b.parameters.len()
                ),
            )));
        }
        let pformats = match expand_formats(&b.parameter_format_codes, n, "parameter") {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        let mut params = Vec::with_capacity(n);
        // timestamptz text without a zone is read in the session's.
        let zone = self.session.time_zone();
        let _zone = walden_engine::types::zone::enter(&zone);
        for (i, raw) in b.parameters.iter().enumerate() {
            let oid = stmt.param_oids[i];
            let v = match raw {
                None => Ok(Value::Null),
                Some(bytes) if pformats[i] == 1 => pgtypes::decode_binary_param(bytes, oid),
                Some(bytes) => match std::str::from_utf8(bytes) {
                    Ok(s) => pgtypes::decode_text_param(s, oid),
                    Err(_) => Err(SqlError::new(
                        ErrorKind::InvalidText,
                        "invalid byte sequence for encoding \"UTF8\"",
                    )),
                },
            };
            match v {
                Ok(v) => params.push(v),
                Err(e) => return Ok(Err(e.into())),
            }
        }
        let ncols = stmt.prepared.columns.as_ref().map_or(0, |c| c.len());
        let formats = match expand_formats(&b.result_column_format_codes, ncols, "result column") {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        self.portals.insert(
            pname,
            Portal {
                stmt,
                params: Some(params),
                formats,
                pending: None,
                done_tag: None,
            },
        );
        self.send(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(Ok(()))
    }

    pub(super) async fn describe(&mut self, d: Describe) -> IoResult<Result<(), PgError>> {
        let name = d.name.unwrap_or_default();
        if d.target_type == b'S' {
            let Some(stmt) = self.statements.get(&name).cloned() else {
                return Ok(Err(PgError::error(
                    sqlstate::INVALID_SQL_STATEMENT_NAME,
                    format!("prepared statement \"{name}\" does not exist"),
                )));
            };
            self.send(PgWireBackendMessage::ParameterDescription(
                ParameterDescription::new(stmt.param_oids.clone()),
            ))
            .await?;
            match &stmt.prepared.columns {
                Some(cols) => {
                    self.send(PgWireBackendMessage::RowDescription(field_descriptions(
                        cols, None,
                    )))
                    .await?
                }
                None => {
                    self.send(PgWireBackendMessage::NoData(NoData::new()))
                        .await?
                }
            }
        } else {
            let Some(portal) = self.portals.get(&name) else {
                // A cursor DECLAREd in SQL is a portal too (psycopg describes
                // its named cursors so).
                if let Some(cols) = self.session.cursor_columns(&name) {
                    self.send(PgWireBackendMessage::RowDescription(field_descriptions(
                        &cols, None,
                    )))
                    .await?;
                    return Ok(Ok(()));
                }
                return Ok(Err(PgError::error(
                    sqlstate::INVALID_CURSOR_NAME,
                    format!("portal \"{name}\" does not exist"),
                )));
            };
            let msg = match &portal.stmt.prepared.columns {
                Some(cols) => PgWireBackendMessage::RowDescription(field_descriptions(
                    cols,
                    Some(&portal.formats),
                )),
                None => PgWireBackendMessage::NoData(NoData::new()),
            };
            self.send(msg).await?;
        }
        Ok(Ok(()))
    }

    pub(super) async fn execute(&mut self, e: Execute) -> IoResult<Result<(), PgError>> {
        let name = e.name.unwrap_or_default();
        let Some(portal) = self.portals.get_mut(&name) else {
            return Ok(Err(PgError::error(
                sqlstate::INVALID_CURSOR_NAME,
                format!("portal \"{name}\" does not exist"),
            )));
        };
        let max_rows = if e.max_rows > 0 {
            e.max_rows as usize
        } else {
            usize::MAX
        };
        let formats = portal.formats.clone();
        if let Some(mut pending) = portal.pending.take() {
            // Continue a suspended portal.
            let cols = pending.columns.clone();
            let chunk: Vec<_> = pending.rows.by_ref().take(max_rows).collect();
            let more = pending.rows.len() > 0;
            let tag = resumed_tag(&pending.tag, chunk.len());
            if more {
                self.portals.get_mut(&name).unwrap().pending = Some(pending);
            } else {
                self.portals.get_mut(&name).unwrap().done_tag = Some(resumed_tag(&tag, 0));
            }
            return self.send_rows_then(&cols, &formats, chunk, more, tag).await;
        }
        let Some(params) = portal.params.take() else {
            // Already run to completion.
            let tag = portal.done_tag.clone().unwrap_or_default();
            self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                tag,
            )))
            .await?;
            return Ok(Ok(()));
        };
        let stmt = portal.stmt.clone();
        // Everything until Sync is one transaction, as in PostgreSQL.
        self.session.begin_implicit();
        let mut out = match self
            .guarded(|s| {
                s.engine_session().statement_started(&stmt.prepared.sql);
                s.execute_prepared(&stmt.prepared, params)
            })
            .and_then(|r| r)
        {
            Ok(o) => o,
            Err(e) => return Ok(Err(e.into())),
        };
        if let Some(d) = &out.deallocate {
            if let Err(e) = self.deallocate(d) {
                return Ok(Err(e));
            }
        }
        self.notices(&out.notices).await?;
        self.warnings(&out.warnings).await?;
        if let Some(copy) = &out.copy_in {
            return self.copy_in(copy, true).await;
        }
        if let Some(copy) = out.copy_out.take() {
            if let Some(p) = self.portals.get_mut(&name) {
                p.done_tag = Some(out.tag.clone());
            }
            return self.copy_out(out, &copy).await;
        }
        let Some(cols) = out.columns else {
            if out.tag.is_empty() {
                self.send(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
            } else {
                self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                    out.tag,
                )))
                .await?;
            }
            return Ok(Ok(()));
        };
        // Encode with the types the client was told in Describe.
        let described = match &stmt.prepared.columns {
            Some(d) if d.len() == cols.len() => d.as_slice(),
            // An ALTER TABLE since the Parse changed the statement's columns:
            // the client would read rows of a shape it was not told, so
            // refuse as PostgreSQL does.
            Some(d) if !d.is_empty() => {
                return Ok(Err(PgError::error(
                    "0A000",
                    "cached plan must not change result type",
                )))
            }
            _ => cols.as_slice(),
        };
        let (chunk, more) = if out.rows.len() <= max_rows {
            (out.rows, false)
        } else {
            let mut rows = out.rows.into_iter();
            let chunk: Vec<_> = rows.by_ref().take(max_rows).collect();
            let portal = self.portals.get_mut(&name).unwrap();
            portal.pending = Some(Pending {
                columns: described.to_vec(),
                rows,
                tag: out.tag.clone(),
            });
            (chunk, true)
        };
        if !more {
            self.portals.get_mut(&name).unwrap().done_tag = Some(resumed_tag(&out.tag, 0));
        }
        self.send_rows_then(described, &formats, chunk, more, out.tag)
            .await
    }

    pub(super) async fn send_rows_then(
        &mut self,
        cols: &[Column],
        formats: &[i16],
        rows: Vec<Vec<Value>>,
        suspended: bool,
        tag: String,
    ) -> IoResult<Result<(), PgError>> {
        if let Err(e) = self.rows(cols, Some(formats), rows.into_iter()).await? {
            return Ok(Err(e));
        }
        if suspended {
            self.send(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                .await?;
        } else {
            self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                tag,
            )))
            .await?;
        }
        Ok(Ok(()))
    }

    pub(super) async fn close(&mut self, c: Close) -> IoResult<Result<(), PgError>> {
        let name = c.name.unwrap_or_default();
        if c.target_type == b'S' {
            self.statements.remove(&name);
        } else {
            self.portals.remove(&name);
        }
        self.send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(Ok(()))
    }
}
