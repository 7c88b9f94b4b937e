//! One authenticated client connection (its handshake is in
//! `handshake.rs`): the simple and extended query protocols and COPY FROM
//! STDIN / TO STDOUT over a [`SqlSession`].
//!
//! pgwire supplies the message codec, TLS negotiation and SCRAM; the protocol
//! loop is ours so that replies are coalesced until Sync or Flush (one write
//! per round trip), and so that transaction status, errors and cancel requests
//! come straight from the session.
//!
//! Opening and closing the session are in `startup`, the extended query
//! protocol in `extended`, COPY in `copy`.

mod copy;
mod extended;
mod startup;

use extended::{Portal, Stmt};
pub(crate) use startup::serve_connection;

use bytes::{BufMut, BytesMut};
use futures::{SinkExt, StreamExt};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::PgWireError;
use pgwire::messages::copy::{CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{FieldDescription, NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, NotificationResponse,
    ReadyForQuery, TransactionStatus,
};
use pgwire::messages::startup::{Authentication, BackendKeyData, ParameterStatus, SecretKey};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{MaybeTls, PgWireMessageServerCodec};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use tokio_util::codec::{Decoder, Encoder, Framed};
use walden_engine::{ActivityState, DataType, Value};
use walden_sql::{
    Column, CopyIn, CopyOut, Deallocate, ErrorKind, Prepared, QueryOutput, SqlError, SqlSession,
    TxStatus,
};

use crate::handshake::{send_fatal, Handshaken};
use crate::pgtypes;
use crate::server::{ConnEntry, Shared};
use crate::sqlstate::{self, sqlstate};

/// The socket afterwards.
type Socket = Framed<MaybeTls, SafeCodec>;

/// pgwire's codec, behind `frontend::check` (a malformed message is refused
/// before pgwire's decoder can panic on it) and the budget for partly
/// received large messages; a decoder panic that still happens becomes a
/// protocol error.
pub(crate) struct SafeCodec(PgWireMessageServerCodec<()>, crate::frontend::Reservation);

impl SafeCodec {
    pub(crate) fn new(inner: PgWireMessageServerCodec<()>) -> Self {
        SafeCodec(inner, Default::default())
    }
}

impl Decoder for SafeCodec {
    type Item = PgWireFrontendMessage;
    type Error = PgWireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        use crate::frontend::FrontendError;
        let checked = crate::frontend::check(src).and_then(|()| self.1.track(src));
        if let Err(e) = checked {
            let kind = match e {
                FrontendError::OverBudget { .. } => std::io::ErrorKind::OutOfMemory,
                FrontendError::Malformed { .. } => std::io::ErrorKind::InvalidData,
            };
            src.clear();
            return Err(PgWireError::IoError(std::io::Error::new(kind, e)));
        }
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| inner.decode(src))) {
            Ok(r) => r,
            Err(_) => {
                src.clear();
                Err(PgWireError::IoError(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "malformed message",
                )))
            }
        }
    }
}

/// Decodes every frontend message in `bytes` with the codec connections use,
/// as during startup (`ready` false) or after it; returns how many decoded.
/// For the fuzz targets; not part of the API.
#[doc(hidden)]
pub fn decode_frontend_for_fuzz(bytes: &[u8], ready: bool) -> Result<usize, PgWireError> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 5432));
    let mut client = pgwire::api::DefaultClient::new(addr, false);
    let mut src = BytesMut::from(bytes);
    let mut n = 0;
    if ready {
        client.set_state(PgWireConnectionState::ReadyForQuery);
        let mut codec = SafeCodec::new(PgWireMessageServerCodec::new(client));
        while codec.decode(&mut src)?.is_some() {
            n += 1;
        }
    } else {
        // The handshake decodes with pgwire's codec itself.
        client.set_state(PgWireConnectionState::AwaitingStartup);
        let mut codec = PgWireMessageServerCodec::new(client);
        while codec.decode(&mut src)?.is_some() {
            n += 1;
        }
    }
    Ok(n)
}

impl Encoder<PgWireBackendMessage> for SafeCodec {
    type Error = std::io::Error;

    fn encode(&mut self, item: PgWireBackendMessage, dst: &mut BytesMut) -> IoResult {
        self.0.encode(item, dst)
    }
}
type IoResult<T = ()> = std::io::Result<T>;

/// Replies are sent when this much is buffered, even before Sync.
pub(crate) const SEND_BUFFER: usize = 64 * 1024;

/// An error response: severity, SQLSTATE, message.
pub(crate) struct PgError {
    severity: &'static str,
    code: String,
    message: String,
    /// Detail, hint, position, context, table, column, constraint.
    fields: Option<Box<walden_sql::ErrorFields>>,
}

impl PgError {
    fn error(code: &str, message: impl Into<String>) -> Self {
        PgError {
            severity: "ERROR",
            code: code.into(),
            message: message.into(),
            fields: None,
        }
    }
    pub(crate) fn fatal(code: &str, message: impl Into<String>) -> Self {
        PgError {
            severity: "FATAL",
            code: code.into(),
            message: message.into(),
            fields: None,
        }
    }
    pub(crate) fn message(&self) -> PgWireBackendMessage {
        let mut fields = vec![
            (b'S', self.severity.to_string()),
            (b'V', self.severity.to_string()),
            (b'C', self.code.clone()),
            (b'M', walden_sql::shown_names(&self.message)),
        ];
        if let Some(f) = &self.fields {
            // In PostgreSQL's order; drivers read them by code.
            let position = f.position.map(|p| p.to_string());
            for (code, v) in [
                (b'D', &f.detail),
                (b'H', &f.hint),
                (b'P', &position),
                (b'W', &f.context),
                (
                    b's',
                    &f.table
                        .as_ref()
                        .map(|t| walden_engine::namespace::split_engine_name(t).0.to_string()),
                ),
                (b't', &f.table),
                (b'c', &f.column),
                (b'n', &f.constraint),
            ] {
                if let Some(v) = v {
                    fields.push((code, walden_sql::shown_names(v)));
                }
            }
        }
        PgWireBackendMessage::ErrorResponse(ErrorResponse::new(fields))
    }
}

impl From<SqlError> for PgError {
    fn from(e: SqlError) -> Self {
        let code = e
            .fields
            .as_ref()
            .and_then(|f| f.sqlstate.clone())
            .unwrap_or_else(|| sqlstate(e.kind).to_string());
        let mut p = PgError::error(&code, e.message);
        p.fields = e.fields;
        p
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    let what = if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    };
    format!("internal error: {what}")
}

enum Flow {
    Continue,
    Terminate,
}

struct Connection {
    socket: Socket,
    session: SqlSession,
    /// The cancel key sent in BackendKeyData.
    secret: i32,
    cancel: Arc<AtomicBool>,
    busy: Arc<AtomicBool>,
    /// Notified by `pg_terminate_backend` (engine `Session::terminate`).
    terminate: Arc<tokio::sync::Notify>,
    /// Woken when a notification (LISTEN/NOTIFY) is queued for the session.
    notified: Arc<tokio::sync::Notify>,
    // foldhash: the unnamed statement and portal are looked up, replaced or
    // removed for every message.
    statements: foldhash::HashMap<String, Arc<Stmt>>,
    portals: foldhash::HashMap<String, Portal>,
    /// After an error in an extended-query message: ignore everything until Sync.
    skip_until_sync: bool,
    /// The TimeZone last reported in ParameterStatus (drivers read it to
    /// show binary timestamptz values).
    reported_zone: String,
}

fn tx_status(s: TxStatus) -> TransactionStatus {
    match s {
        TxStatus::Idle => TransactionStatus::Idle,
        TxStatus::InBlock => TransactionStatus::Transaction,
        TxStatus::Failed => TransactionStatus::Error,
    }
}

fn field_descriptions(columns: &[Column], formats: Option<&[i16]>) -> RowDescription {
    RowDescription::new(
        columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                // A plain table column names its table and attnum, as
                // PostgreSQL (drivers look the column up by them). pgwire
                // types the OID as i32: the same four bytes on the wire.
                let (table, attnum) = c.origin.map_or((0, 0), |o| (o.table_oid as i32, o.attnum));
                FieldDescription::new(
                    c.name.clone(),
                    table,
                    attnum,
                    pgtypes::type_oid(&c.ty),
                    pgtypes::type_size(&c.ty),
                    pgtypes::type_modifier(&c.ty),
                    formats.map_or(0, |f| f[i]),
                )
            })
            .collect(),
    )
}

impl Connection {
    async fn send(&mut self, m: PgWireBackendMessage) -> IoResult {
        self.socket.feed(m).await
    }

    async fn flush(&mut self) -> IoResult {
        SinkExt::<PgWireBackendMessage>::flush(&mut self.socket).await
    }

    async fn ready_for_query(&mut self) -> IoResult {
        let zone = self.session.time_zone().name;
        if zone != self.reported_zone {
            self.send(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                "TimeZone".into(),
                zone.clone(),
            )))
            .await?;
            self.reported_zone = zone;
        }
        let status = self.session.tx_status();
        // Notifications go out between transactions, as PostgreSQL's do
        // (the session's own among them, right after its commit).
        if status == TxStatus::Idle {
            self.send_notifications().await?;
        }
        self.session.note_in_block(status != TxStatus::Idle);
        self.session.engine_session().went_idle(match status {
            TxStatus::Idle => ActivityState::Idle,
            TxStatus::InBlock => ActivityState::IdleInTransaction,
            TxStatus::Failed => ActivityState::IdleInFailedTransaction,
        });
        let st = tx_status(status);
        self.send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(st)))
            .await?;
        self.flush().await
    }

    /// Sends the notifications queued for the session (not flushed).
    async fn send_notifications(&mut self) -> IoResult {
        for n in self.session.take_notifications() {
            self.send(PgWireBackendMessage::NotificationResponse(
                NotificationResponse::new(n.pid as i32, n.channel, n.payload),
            ))
            .await?;
        }
        Ok(())
    }

    async fn startup_done(&mut self, user: &str, app: &str) -> IoResult {
        self.send(PgWireBackendMessage::Authentication(Authentication::Ok))
            .await?;
        let mut params = walden_sql::server_parameters();
        let superuser = if self.session.is_superuser() {
            "on"
        } else {
            "off"
        };
        for (k, v) in params.iter_mut() {
            if *k == "is_superuser" {
                *v = superuser.to_string();
            }
        }
        params.push(("application_name", app.to_string()));
        params.push(("session_authorization", user.to_string()));
        // As PostgreSQL 14+ reports them: libpq's target_session_attrs
        // (read-write, read-only, primary, standby, prefer-standby) decides
        // from these without a query.
        // On a secondary, in_hot_standby is on and the default stays off,
        // as on a PostgreSQL hot standby (libpq reads either being on as
        // read-only; SHOW transaction_read_only says on there too).
        let standby = if self.session.database().is_secondary() {
            "on"
        } else {
            "off"
        };
        params.push(("in_hot_standby", standby.to_string()));
        params.push(("default_transaction_read_only", "off".to_string()));
        for (k, v) in params {
            self.send(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                k.to_string(),
                v,
            )))
            .await?;
        }
        let pid = self.session.session_id() as i32;
        self.send(PgWireBackendMessage::BackendKeyData(BackendKeyData::new(
            pid,
            SecretKey::I32(self.secret),
        )))
        .await?;
        self.ready_for_query().await
    }

    /// Runs a session call on this thread, catching panics, with the cancel
    /// flag armed only while it runs.
    fn guarded<T>(&mut self, f: impl FnOnce(&mut SqlSession) -> T) -> Result<T, SqlError> {
        self.cancel.store(false, Relaxed);
        self.busy.store(true, Relaxed);
        let r = catch_unwind(AssertUnwindSafe(|| f(&mut self.session)));
        self.busy.store(false, Relaxed);
        r.map_err(|p| {
            let m = panic_message(p);
            tracing::error!(pid = self.session.session_id(), "{m}");
            SqlError::new(ErrorKind::Internal, m)
        })
    }

    async fn run(&mut self, shutdown: &mut tokio::sync::watch::Receiver<bool>) -> IoResult {
        if *shutdown.borrow_and_update() {
            return Ok(());
        }
        loop {
            if self.session.engine_session().is_terminated() {
                return self.terminated().await;
            }
            // Idle timeouts apply while the client owes us its next message
            // (also one it has only half sent).
            let t = self.session.timeouts();
            let (idle, why, code) = match self.session.tx_status() {
                TxStatus::Idle => (
                    t.idle_session,
                    "terminating connection due to idle-session timeout",
                    sqlstate::IDLE_SESSION_TIMEOUT,
                ),
                _ => (
                    t.idle_in_transaction,
                    "terminating connection due to idle-in-transaction timeout",
                    sqlstate::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
                ),
            };
            let idle_limit = async {
                match idle {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            let between_transactions = self.session.tx_status() == TxStatus::Idle;
            let msg = tokio::select! {
                biased;
                m = self.socket.next() => m,
                // Idle outside a transaction block: a notification goes out
                // at once (inside one, at its end).
                _ = self.notified.notified(), if between_transactions => {
                    self.send_notifications().await?;
                    self.flush().await?;
                    continue;
                }
                _ = idle_limit => {
                    tracing::info!(pid = self.session.session_id(), "{why}");
                    let e = PgError::fatal(code, why);
                    self.send(e.message()).await?;
                    self.flush().await?;
                    return Ok(());
                }
                _ = self.terminate.notified() => {
                    return self.terminated().await;
                }
                _ = shutdown.changed() => {
                    let e = PgError::fatal(sqlstate::ADMIN_SHUTDOWN, "terminating connection due to administrator command");
                    self.send(e.message()).await?;
                    self.flush().await?;
                    return Ok(());
                }
            };
            let msg = match msg {
                Some(Ok(m)) => m,
                Some(Err(e)) => {
                    let code = match &e {
                        PgWireError::IoError(io)
                            if io.kind() == std::io::ErrorKind::OutOfMemory =>
                        {
                            sqlstate::OUT_OF_MEMORY
                        }
                        _ => sqlstate::PROTOCOL_VIOLATION,
                    };
                    tracing::info!(pid = self.session.session_id(), error = %e, "invalid message");
                    let e = PgError::fatal(code, format!("invalid message: {e}"));
                    self.send(e.message()).await?;
                    self.flush().await?;
                    return Ok(());
                }
                None => return Ok(()),
            };
            if let Flow::Terminate = self.dispatch(msg).await? {
                return Ok(());
            }
        }
    }

    /// Ends a connection `pg_terminate_backend` named, as PostgreSQL does.
    async fn terminated(&mut self) -> IoResult {
        tracing::info!(
            pid = self.session.session_id(),
            "terminated by pg_terminate_backend"
        );
        let e = PgError::fatal(
            sqlstate::ADMIN_SHUTDOWN,
            "terminating connection due to administrator command",
        );
        self.send(e.message()).await?;
        self.flush().await
    }

    async fn dispatch(&mut self, msg: PgWireFrontendMessage) -> IoResult<Flow> {
        use PgWireFrontendMessage as M;
        if self.skip_until_sync && !matches!(msg, M::Sync(_) | M::Terminate(_)) {
            return Ok(Flow::Continue);
        }
        let r = match msg {
            M::Query(q) => {
                self.simple_query(&q.query).await?;
                return Ok(Flow::Continue);
            }
            M::Parse(p) => self.parse(p).await,
            M::Bind(b) => self.bind(b).await,
            M::Describe(d) => self.describe(d).await,
            M::Execute(e) => self.execute(e).await,
            M::Close(c) => self.close(c).await,
            M::Sync(_) => {
                self.skip_until_sync = false;
                self.end_implicit().await?;
                if self.session.tx_status() == TxStatus::Idle {
                    // The implicit transaction ended: its portals go with it.
                    self.portals.clear();
                }
                self.ready_for_query().await?;
                return Ok(Flow::Continue);
            }
            M::Flush(_) => {
                self.flush().await?;
                return Ok(Flow::Continue);
            }
            M::Terminate(_) => return Ok(Flow::Terminate),
            // Stray COPY messages outside COPY are ignored, as PostgreSQL does.
            M::CopyData(_) | M::CopyDone(_) | M::CopyFail(_) => return Ok(Flow::Continue),
            other => Ok(Err(PgError::error(
                sqlstate::PROTOCOL_VIOLATION,
                format!("unexpected message {other:?}"),
            ))),
        };
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                // Errors found here (parameter decoding, CopyFail, result
                // encoding) fail an explicit transaction like SQL errors do.
                self.session.abort_statement();
                self.send(e.message()).await?;
                self.skip_until_sync = true;
                // The Flush a client may have sent after this message (asyncpg,
                // psycopg's pipeline mode and pg-cursor wait on one) is among the
                // messages now skipped: send the error at once, as PostgreSQL does.
                self.flush().await?;
            }
            Err(io) => return Err(io),
        }
        Ok(Flow::Continue)
    }

    async fn warnings(&mut self, warnings: &[walden_sql::Warning]) -> IoResult {
        for w in warnings {
            self.send(PgWireBackendMessage::NoticeResponse(NoticeResponse::new(
                vec![
                    (b'S', "WARNING".to_string()),
                    (b'V', "WARNING".to_string()),
                    (b'C', crate::sqlstate::warning(w.kind).to_string()),
                    (b'M', w.message.clone()),
                ],
            )))
            .await?;
        }
        Ok(())
    }

    async fn notices(&mut self, notices: &[String]) -> IoResult {
        for n in notices {
            self.send(PgWireBackendMessage::NoticeResponse(NoticeResponse::new(
                vec![
                    (b'S', "NOTICE".to_string()),
                    (b'V', "NOTICE".to_string()),
                    (b'C', "00000".to_string()),
                    (b'M', walden_sql::shown_names(n)),
                ],
            )))
            .await?;
        }
        Ok(())
    }

    /// Appends DataRows straight into the send buffer.
    async fn rows(
        &mut self,
        columns: &[Column],
        formats: Option<&[i16]>,
        rows: impl Iterator<Item = Vec<Value>>,
    ) -> IoResult<Result<(), PgError>> {
        let types: Vec<&DataType> = columns.iter().map(|c| &c.ty).collect();
        let zone = self.session.time_zone();
        for row in rows {
            // Not held across the flush below: the task may move threads.
            let guard = walden_engine::types::zone::enter(&zone);
            let buf: &mut BytesMut = self.socket.write_buffer_mut();
            let start = buf.len();
            buf.put_u8(b'D');
            buf.put_i32(0);
            buf.put_i16(row.len() as i16);
            for (i, v) in row.iter().enumerate() {
                let ty = types.get(i).copied().unwrap_or(&DataType::Text);
                let binary = formats.is_some_and(|f| f.get(i) == Some(&1));
                if let Err(e) = pgtypes::encode_field(v, ty, binary, buf) {
                    buf.truncate(start);
                    return Ok(Err(PgError::error(sqlstate::INTERNAL_ERROR, e)));
                }
            }
            let len = (buf.len() - start - 1) as i32;
            buf[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
            drop(guard);
            if buf.len() >= SEND_BUFFER {
                self.flush().await?;
            }
        }
        Ok(Ok(()))
    }

    /// Drops the prepared statements `DEALLOCATE` or `DISCARD ALL` named
    /// (the protocol's named statements are the SQL-level ones too).
    fn deallocate(&mut self, d: &Deallocate) -> Result<(), PgError> {
        match d {
            Deallocate::All => self.statements.clear(),
            Deallocate::Named(n) => {
                if self.statements.remove(n).is_none() {
                    return Err(PgError::error(
                        sqlstate::INVALID_SQL_STATEMENT_NAME,
                        format!("prepared statement \"{n}\" does not exist"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Sends one statement's result in the simple protocol.
    async fn simple_output(&mut self, mut out: QueryOutput) -> IoResult<Result<(), PgError>> {
        if let Some(d) = &out.deallocate {
            if let Err(e) = self.deallocate(d) {
                return Ok(Err(e));
            }
        }
        self.notices(&out.notices).await?;
        self.warnings(&out.warnings).await?;
        if let Some(copy) = &out.copy_in {
            return self.copy_in(copy, false).await;
        }
        if let Some(copy) = out.copy_out.take() {
            return self.copy_out(out, &copy).await;
        }
        if let Some(cols) = &out.columns {
            // A FETCH from a BINARY cursor sends every column in binary.
            let binary = out.binary.then(|| vec![1i16; cols.len()]);
            self.send(PgWireBackendMessage::RowDescription(field_descriptions(
                cols,
                binary.as_deref(),
            )))
            .await?;
            if let Err(e) = self
                .rows(cols, binary.as_deref(), out.rows.into_iter())
                .await?
            {
                return Ok(Err(e));
            }
        }
        self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            out.tag,
        )))
        .await?;
        Ok(Ok(()))
    }

    /// Commits the implicit transaction of the extended-protocol messages
    /// since the last Sync; a failed commit is reported like any error.
    async fn end_implicit(&mut self) -> IoResult {
        if let Err(e) = self.guarded(|s| s.end_implicit()).and_then(|r| r) {
            self.session.abort_statement();
            self.send(PgError::from(e).message()).await?;
        }
        Ok(())
    }

    async fn simple_query(&mut self, sql: &str) -> IoResult {
        // A client that skipped the Sync after extended messages.
        self.end_implicit().await?;
        // A simple query replaces the unnamed statement and portal.
        self.statements.remove("");
        self.portals.remove("");
        if sql.trim().trim_matches(';').trim().is_empty() {
            self.send(PgWireBackendMessage::EmptyQueryResponse(
                EmptyQueryResponse::new(),
            ))
            .await?;
            return self.ready_for_query().await;
        }
        // Marked active once the cancel flag is cleared for it, so that a
        // pg_cancel_backend that sees it active reaches it.
        let results = match self.guarded(|s| {
            s.engine_session().statement_started(sql);
            s.execute_batch(sql)
        }) {
            Ok(r) => r,
            Err(e) => vec![Err(e)],
        };
        if results.is_empty() {
            self.send(PgWireBackendMessage::EmptyQueryResponse(
                EmptyQueryResponse::new(),
            ))
            .await?;
        }
        for r in results {
            // A PostgreSQL batch ends at its first error (nothing follows
            // it); a T-SQL batch may go on after a statement's error, as
            // SQL Server's does, and its later results follow. A result
            // that fails while it is sent ends the batch.
            let (r, stop) = match r {
                Ok(out) => (self.simple_output(out).await?, true),
                Err(e) => (Err(e.into()), false),
            };
            if let Err(e) = r {
                self.session.abort_statement();
                self.send(e.message()).await?;
                if stop {
                    break;
                }
            }
        }
        self.ready_for_query().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bind_whose_parameter_overruns_the_message_is_refused_not_a_panic() {
        // Found by fuzz/fuzz_targets/pg_frontend.rs: a Parse, then a Bind whose
        // parameter claims 1,026 bytes; pgwire split past the buffer's end.
        let bytes = [
            0x50, 0x00, 0x00, 0x00, 0x1c, 0x73, 0x31, 0x00, 0x73, 0x65, 0x6c, 0x65, 0x63, 0x74,
            0x20, 0x24, 0x31, 0x3a, 0x3a, 0x69, 0x6e, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x17,
            0x42, 0x00, 0x00, 0x00, 0x1a, 0x70, 0x31, 0x00, 0x73, 0x31, 0x00, 0x00, 0x01, 0x00,
            0x00, 0x00, 0x01, 0x00, 0x00, 0x04, 0x02, 0x34, 0x32, 0x00, 0x01, 0x00, 0x00, 0x44,
            0x00, 0x00, 0x00, 0x08, 0x50, 0x70, 0x31, 0x00, 0x45, 0x00, 0x00, 0x00, 0x0b, 0x70,
            0x31, 0x00, 0x00, 0x00, 0x10, 0x00, 0x43, 0x00, 0x00, 0x00, 0x08, 0x53, 0x73, 0x31,
            0x00, 0x48, 0x00, 0x00, 0x00, 0x04, 0x53, 0x00, 0x00, 0x00, 0x04,
        ];
        let e = decode_frontend_for_fuzz(&bytes, true).unwrap_err();
        assert!(e.to_string().contains("malformed"), "{e}");
    }

    #[test]
    fn well_formed_bind_and_parse_pass_the_check() {
        let mut b = vec![b'B', 0, 0, 0, 0];
        b.extend_from_slice(b"p\0s\0\0\x01\0\0\0\x02\0\0\0\x0242\xff\xff\xff\xff\0\x01\0\0");
        let len = (b.len() - 1) as u32;
        b[1..5].copy_from_slice(&len.to_be_bytes());
        assert!(crate::frontend::check(&b).is_ok());
        assert_eq!(decode_frontend_for_fuzz(&b, true).unwrap(), 1);
        let mut p = vec![b'P', 0, 0, 0, 0];
        p.extend_from_slice(b"s\0select $1\0\0\x01\0\0\0\x17");
        let len = (p.len() - 1) as u32;
        p[1..5].copy_from_slice(&len.to_be_bytes());
        assert!(crate::frontend::check(&p).is_ok());
        p[1..5].copy_from_slice(&(len - 1).to_be_bytes());
        assert!(crate::frontend::check(&p).is_err());
    }

    #[test]
    fn an_empty_close_describe_or_execute_is_refused_not_a_panic() {
        // Found by fuzz/fuzz_targets/pg_frontend.rs: a Close with no body made
        // pgwire read past the message.
        for tag in [b'C', b'D', b'E'] {
            let e = decode_frontend_for_fuzz(&[tag, 0, 0, 0, 4], true).unwrap_err();
            assert!(e.to_string().contains("malformed"), "{e}");
        }
        let close = [b'C', 0, 0, 0, 7, b'S', b's', 0];
        assert_eq!(decode_frontend_for_fuzz(&close, true).unwrap(), 1);
        let exec = [b'E', 0, 0, 0, 10, b'p', 0, 0, 0, 0, 0];
        assert_eq!(decode_frontend_for_fuzz(&exec, true).unwrap(), 1);
    }

    #[test]
    fn a_message_length_below_four_is_refused_not_a_panic() {
        // Found by fuzz/fuzz_targets/pg_frontend.rs: a Password message with
        // length 0 underflowed pgwire's `len - 4`.
        for tag in [b'p', b'Q', b'X', b'B'] {
            for len in [0i32, 3, -1, i32::MIN] {
                let mut m = vec![tag];
                m.extend_from_slice(&len.to_be_bytes());
                m.extend_from_slice(b"abc\0");
                let e = decode_frontend_for_fuzz(&m, true).unwrap_err();
                assert!(e.to_string().contains("length below 4"), "{e}");
            }
        }
    }
}
