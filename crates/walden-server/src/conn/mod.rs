//! One client connection: startup and authentication, then the simple and
//! extended query protocols and COPY FROM STDIN / TO STDOUT over a
//! [`SqlSession`].
//!
//! pgwire supplies the message codec, TLS negotiation and SCRAM; the protocol
//! loop is ours so that replies are coalesced until Sync or Flush (one write
//! per round trip), and so that transaction status, errors and cancel requests
//! come straight from the session.

use bytes::{BufMut, BytesMut};
use futures::{SinkExt, StreamExt};
use pgwire::api::auth::mechanism::AuthMechanismFactory;
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthDriver, AuthOutcome,
    ServerParameterProvider,
};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::ErrorInfo;
use pgwire::error::PgWireError;
use pgwire::messages::copy::{CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{FieldDescription, NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, ReadyForQuery,
    TransactionStatus,
};
use pgwire::messages::startup::{Authentication, BackendKeyData, ParameterStatus, SecretKey};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, MaybeTls, PgWireMessageServerCodec};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::codec::{Decoder, Encoder, Framed};
use walden_engine::{DataType, Value};
use walden_sql::{
    Column, CopyIn, CopyOut, ErrorKind, Prepared, QueryOutput, SqlError, SqlSession, TxStatus,
};

use crate::pgtypes;
use crate::server::{ConnEntry, Shared};
use crate::sqlstate::{self, sqlstate};

/// The socket during startup and authentication (pgwire's codec, which
/// pgwire's SCRAM driver needs).
type StartupSocket = Framed<MaybeTls, PgWireMessageServerCodec<()>>;
/// The socket afterwards.
type Socket = Framed<MaybeTls, SafeCodec>;

/// pgwire's codec, with a decoder panic (a malformed message can make it
/// index past the end of its buffer) turned into a protocol error.
struct SafeCodec(PgWireMessageServerCodec<()>);

impl Decoder for SafeCodec {
    type Item = PgWireFrontendMessage;
    type Error = PgWireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
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

impl Encoder<PgWireBackendMessage> for SafeCodec {
    type Error = std::io::Error;

    fn encode(&mut self, item: PgWireBackendMessage, dst: &mut BytesMut) -> IoResult {
        self.0.encode(item, dst)
    }
}
type IoResult<T = ()> = std::io::Result<T>;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// Replies are sent when this much is buffered, even before Sync.
const SEND_BUFFER: usize = 64 * 1024;

/// An error response: severity, SQLSTATE, message.
struct PgError {
    severity: &'static str,
    code: String,
    message: String,
}

impl PgError {
    fn error(code: &str, message: impl Into<String>) -> Self {
        PgError {
            severity: "ERROR",
            code: code.into(),
            message: message.into(),
        }
    }
    fn fatal(code: &str, message: impl Into<String>) -> Self {
        PgError {
            severity: "FATAL",
            code: code.into(),
            message: message.into(),
        }
    }
    fn message(&self) -> PgWireBackendMessage {
        PgWireBackendMessage::ErrorResponse(ErrorResponse::new(vec![
            (b'S', self.severity.to_string()),
            (b'V', self.severity.to_string()),
            (b'C', self.code.clone()),
            (b'M', self.message.clone()),
        ]))
    }
}

impl From<SqlError> for PgError {
    fn from(e: SqlError) -> Self {
        PgError::error(sqlstate(e.kind), e.message)
    }
}

/// The server parameters are sent by us, not by pgwire's driver.
struct NoParameters;
impl ServerParameterProvider for NoParameters {
    fn server_parameters<C: ClientInfo>(&self, _client: &C) -> Option<HashMap<String, String>> {
        None
    }
}

async fn send_fatal(socket: &mut StartupSocket, e: PgError) {
    let _ = socket.send(e.message()).await;
    let _ = SinkExt::<PgWireBackendMessage>::close(socket).await;
}

async fn next_message(socket: &mut StartupSocket) -> Option<PgWireFrontendMessage> {
    match tokio::time::timeout(STARTUP_TIMEOUT, socket.next()).await {
        Ok(Some(Ok(m))) => Some(m),
        Ok(Some(Err(e))) => {
            tracing::debug!(error = %e, "bad startup message");
            None
        }
        _ => None,
    }
}

/// Serves one client connection from its first byte to its end.
pub(crate) async fn serve_connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
) {
    let negotiated = tokio::time::timeout(
        STARTUP_TIMEOUT,
        negotiate_tls::<()>(tcp, shared.tls.clone()),
    )
    .await;
    let mut socket = match negotiated {
        Ok(Ok(Some(s))) => s,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS negotiation failed");
            return;
        }
        Err(_) => return,
    };
    socket.set_backpressure_boundary(SEND_BUFFER);
    let startup = match next_message(&mut socket).await {
        Some(PgWireFrontendMessage::CancelRequest(c)) => {
            shared.cancel(c.pid, &c.secret_key);
            return;
        }
        Some(PgWireFrontendMessage::Startup(s)) => s,
        _ => return,
    };
    if let Err(e) = protocol_negotiation(&mut socket, &startup).await {
        send_fatal(
            &mut socket,
            PgError::fatal(sqlstate::PROTOCOL_VIOLATION, e.to_string()),
        )
        .await;
        return;
    }
    save_startup_parameters_to_metadata(&mut socket, &startup);
    let param = |k: &str| startup.parameters.get(k).filter(|v| !v.is_empty()).cloned();
    let user = param("user").unwrap_or_else(|| "walden".into());
    let database = param("database").unwrap_or_else(|| "walden".into());
    let app = param("application_name").unwrap_or_default();

    if shared.is_shutting_down() {
        send_fatal(
            &mut socket,
            PgError::fatal(
                sqlstate::ADMIN_SHUTDOWN,
                "the database system is shutting down",
            ),
        )
        .await;
        return;
    }
    let Some(_slot) = shared.acquire_slot() else {
        tracing::warn!(%peer, "too many connections");
        send_fatal(
            &mut socket,
            PgError::fatal(
                sqlstate::TOO_MANY_CONNECTIONS,
                "sorry, too many clients already",
            ),
        )
        .await;
        return;
    };

    // Authentication. Plain connections never see SCRAM-SHA-256-PLUS.
    let scram = if socket.is_secure() {
        shared.scram_tls.as_ref().or(shared.scram_plain.as_ref())
    } else {
        shared.scram_plain.as_ref()
    };
    if let Some(scram) = scram {
        let driver: AuthDriver<NoParameters> = AuthDriver::new(NoParameters);
        let mut outcome = driver
            .begin_authentication(&mut socket, scram.create())
            .await;
        loop {
            match outcome {
                Ok(AuthOutcome::InProgress) => match next_message(&mut socket).await {
                    Some(PgWireFrontendMessage::PasswordMessageFamily(m)) => {
                        outcome = driver.advance_authentication(&mut socket, m).await;
                    }
                    _ => return,
                },
                Ok(AuthOutcome::Authenticated { final_message, .. }) => {
                    if let Some(m) = final_message {
                        if socket
                            .feed(PgWireBackendMessage::Authentication(m))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    break;
                }
                Err(e) => {
                    tracing::info!(%peer, %user, error = %e, "authentication failed");
                    let info = ErrorInfo::from(e);
                    let code = if info.code.starts_with("28") {
                        info.code.clone()
                    } else {
                        "28P01".into()
                    };
                    let msg = format!("password authentication failed for user \"{user}\"");
                    send_fatal(&mut socket, PgError::fatal(&code, msg)).await;
                    return;
                }
            }
        }
    }

    let session = {
        let engine = shared.engine.clone();
        catch_unwind(AssertUnwindSafe(|| engine.connect(&database, &user, &app)))
    };
    let session = match session {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let code = if e.kind == ErrorKind::UndefinedDatabase {
                sqlstate::INVALID_CATALOG_NAME
            } else {
                sqlstate(e.kind)
            };
            send_fatal(&mut socket, PgError::fatal(code, e.message)).await;
            return;
        }
        Err(p) => {
            send_fatal(
                &mut socket,
                PgError::fatal(sqlstate::INTERNAL_ERROR, panic_message(p)),
            )
            .await;
            return;
        }
    };

    let pid = session.session_id();
    let secret: i32 = rand::random();
    let cancel = session.cancel_flag();
    let busy = Arc::new(AtomicBool::new(false));
    let _registration = shared.register(
        pid,
        ConnEntry {
            secret,
            cancel: cancel.clone(),
            busy: busy.clone(),
        },
    );
    tracing::debug!(%peer, pid, %user, %database, "connected");

    socket.set_state(PgWireConnectionState::ReadyForQuery);
    let mut conn = Connection {
        socket: socket.map_codec(SafeCodec),
        session,
        secret,
        cancel,
        busy,
        statements: Default::default(),
        portals: Default::default(),
        skip_until_sync: false,
    };
    let r = conn.startup_done(&user, &app).await;
    if r.is_ok() {
        let mut shutdown = shared.shutdown_rx();
        if let Err(e) = conn.run(&mut shutdown).await {
            tracing::debug!(pid, error = %e, "connection ended by an I/O error");
        }
    }
    tracing::debug!(pid, "disconnected");
    // Dropping the session rolls back whatever it left open.
    let session = conn.session;
    if let Err(p) = catch_unwind(AssertUnwindSafe(move || drop(session))) {
        tracing::error!(pid, "panic while closing a session: {}", panic_message(p));
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

struct Stmt {
    prepared: Prepared,
    /// Parameter type OIDs: the client's where it gave one, else the inferred type's.
    param_oids: Vec<u32>,
}

struct Portal {
    stmt: Arc<Stmt>,
    /// Taken by the first Execute.
    params: Option<Vec<Value>>,
    /// One format code per result column.
    formats: Vec<i16>,
    /// Rows not yet sent by an Execute with a row limit.
    pending: Option<Pending>,
    done_tag: Option<String>,
}

struct Pending {
    columns: Vec<Column>,
    rows: std::vec::IntoIter<Vec<Value>>,
    tag: String,
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
    // foldhash: the unnamed statement and portal are looked up, replaced or
    // removed for every message.
    statements: foldhash::HashMap<String, Arc<Stmt>>,
    portals: foldhash::HashMap<String, Portal>,
    /// After an error in an extended-query message: ignore everything until Sync.
    skip_until_sync: bool,
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
                FieldDescription::new(
                    c.name.clone(),
                    0,
                    0,
                    pgtypes::type_oid(&c.ty),
                    pgtypes::type_size(&c.ty),
                    pgtypes::type_modifier(&c.ty),
                    formats.map_or(0, |f| f[i]),
                )
            })
            .collect(),
    )
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
    async fn send(&mut self, m: PgWireBackendMessage) -> IoResult {
        self.socket.feed(m).await
    }

    async fn flush(&mut self) -> IoResult {
        SinkExt::<PgWireBackendMessage>::flush(&mut self.socket).await
    }

    async fn ready_for_query(&mut self) -> IoResult {
        let st = tx_status(self.session.tx_status());
        self.send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(st)))
            .await?;
        self.flush().await
    }

    async fn startup_done(&mut self, user: &str, app: &str) -> IoResult {
        self.send(PgWireBackendMessage::Authentication(Authentication::Ok))
            .await?;
        let mut params = walden_sql::server_parameters();
        params.push(("application_name", app.to_string()));
        params.push(("session_authorization", user.to_string()));
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
            let msg = tokio::select! {
                biased;
                m = self.socket.next() => m,
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
                    let e = PgError::fatal(
                        sqlstate::PROTOCOL_VIOLATION,
                        format!("invalid message: {e}"),
                    );
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
            }
            Err(io) => return Err(io),
        }
        Ok(Flow::Continue)
    }

    async fn notices(&mut self, notices: &[String]) -> IoResult {
        for n in notices {
            self.send(PgWireBackendMessage::NoticeResponse(NoticeResponse::new(
                vec![
                    (b'S', "NOTICE".to_string()),
                    (b'V', "NOTICE".to_string()),
                    (b'C', "00000".to_string()),
                    (b'M', n.clone()),
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
        for row in rows {
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
            if buf.len() >= SEND_BUFFER {
                self.flush().await?;
            }
        }
        Ok(Ok(()))
    }

    /// Sends one statement's result in the simple protocol.
    async fn simple_output(&mut self, mut out: QueryOutput) -> IoResult<Result<(), PgError>> {
        self.notices(&out.notices).await?;
        if let Some(copy) = &out.copy_in {
            return self.copy_in(copy, false).await;
        }
        if let Some(copy) = out.copy_out.take() {
            return self.copy_out(out, &copy).await;
        }
        if let Some(cols) = &out.columns {
            self.send(PgWireBackendMessage::RowDescription(field_descriptions(
                cols, None,
            )))
            .await?;
            if let Err(e) = self.rows(cols, None, out.rows.into_iter()).await? {
                return Ok(Err(e));
            }
        }
        self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            out.tag,
        )))
        .await?;
        Ok(Ok(()))
    }

    async fn simple_query(&mut self, sql: &str) -> IoResult {
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
        let results = match self.guarded(|s| s.execute_batch(sql)) {
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
            let r = match r {
                Ok(out) => self.simple_output(out).await?,
                Err(e) => Err(e.into()),
            };
            if let Err(e) = r {
                self.session.abort_statement();
                self.send(e.message()).await?;
                break;
            }
        }
        self.ready_for_query().await
    }

    /// COPY ... FROM STDIN: collects the client's CopyData until CopyDone
    /// and hands it to the session. Sync and Flush are ignored meanwhile
    /// (clients pipeline a Sync after the Execute that starts the copy).
    async fn copy_in(&mut self, copy: &CopyIn, _extended: bool) -> IoResult<Result<(), PgError>> {
        self.send(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
            0,
            0,
            vec![],
        )))
        .await?;
        self.flush().await?;
        let mut data = Vec::new();
        loop {
            match self.socket.next().await {
                Some(Ok(PgWireFrontendMessage::CopyData(d))) => data.extend_from_slice(&d.data),
                Some(Ok(PgWireFrontendMessage::CopyDone(_))) => break,
                Some(Ok(PgWireFrontendMessage::CopyFail(f))) => {
                    return Ok(Err(PgError::error(
                        sqlstate::QUERY_CANCELED,
                        format!("COPY from stdin failed: {}", f.message),
                    )));
                }
                Some(Ok(PgWireFrontendMessage::Sync(_) | PgWireFrontendMessage::Flush(_))) => {}
                Some(Ok(other)) => {
                    return Ok(Err(PgError::error(
                        sqlstate::PROTOCOL_VIOLATION,
                        format!(
                            "unexpected message type 0x{:02X} during COPY from stdin",
                            message_byte(&other)
                        ),
                    )));
                }
                Some(Err(e)) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        e.to_string(),
                    ));
                }
                None => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            }
        }
        match self.guarded(|s| s.copy_in(copy, &data)).and_then(|r| r) {
            Ok(out) => {
                self.notices(&out.notices).await?;
                self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                    out.tag,
                )))
                .await?;
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e.into())),
        }
    }

    /// COPY ... TO STDOUT: CopyOutResponse, the header line if asked for,
    /// one CopyData per row (values in their text form, laid out by the SQL
    /// layer's COPY format), CopyDone, then CommandComplete `COPY n`.
    async fn copy_out(
        &mut self,
        out: QueryOutput,
        copy: &CopyOut,
    ) -> IoResult<Result<(), PgError>> {
        let columns = out.columns.unwrap_or_default();
        let n = columns.len().min(i16::MAX as usize);
        self.send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            0,
            n as i16,
            vec![0; n],
        )))
        .await?;
        let mut line = Vec::new();
        if copy.format.header {
            let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            copy.format.encode_header(&names, &mut line);
            self.copy_data(&line).await?;
        }
        let mut text = BytesMut::new();
        let mut ends = Vec::with_capacity(n);
        for row in out.rows {
            // Each value's text form, as query results send it, end to end in
            // one buffer; `ends` marks where each ends (None for NULL).
            text.clear();
            ends.clear();
            for (i, v) in row.iter().enumerate() {
                if v.is_null() {
                    ends.push(None);
                } else {
                    let ty = columns.get(i).map_or(&DataType::Text, |c| &c.ty);
                    pgtypes::encode_text(v, ty, &mut text);
                    ends.push(Some(text.len()));
                }
            }
            let whole = String::from_utf8_lossy(&text);
            let mut start = 0;
            let fields: Vec<Option<&str>> = ends
                .iter()
                .map(|e| {
                    e.map(|end| {
                        let f = whole.get(start..end).unwrap_or("");
                        start = end;
                        f
                    })
                })
                .collect();
            line.clear();
            copy.format.encode_row(&fields, &copy.forced, &mut line);
            self.copy_data(&line).await?;
        }
        self.send(PgWireBackendMessage::CopyDone(CopyDone::new()))
            .await?;
        self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            out.tag,
        )))
        .await?;
        Ok(Ok(()))
    }

    /// Appends one CopyData message straight into the send buffer.
    async fn copy_data(&mut self, data: &[u8]) -> IoResult {
        let buf: &mut BytesMut = self.socket.write_buffer_mut();
        buf.put_u8(b'd');
        buf.put_i32(data.len() as i32 + 4);
        buf.put_slice(data);
        if buf.len() >= SEND_BUFFER {
            self.flush().await?;
        }
        Ok(())
    }

    async fn parse(&mut self, p: Parse) -> IoResult<Result<(), PgError>> {
        let name = p.name.unwrap_or_default();
        if !name.is_empty() && self.statements.contains_key(&name) {
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

    async fn bind(&mut self, b: Bind) -> IoResult<Result<(), PgError>> {
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
        if !pname.is_empty() && self.portals.contains_key(&pname) {
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

    async fn describe(&mut self, d: Describe) -> IoResult<Result<(), PgError>> {
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

    async fn execute(&mut self, e: Execute) -> IoResult<Result<(), PgError>> {
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
            let tag = pending.tag.clone();
            if more {
                self.portals.get_mut(&name).unwrap().pending = Some(pending);
            } else {
                self.portals.get_mut(&name).unwrap().done_tag = Some(tag.clone());
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
        let mut out = match self
            .guarded(|s| s.execute_prepared(&stmt.prepared, params))
            .and_then(|r| r)
        {
            Ok(o) => o,
            Err(e) => return Ok(Err(e.into())),
        };
        self.notices(&out.notices).await?;
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
            self.portals.get_mut(&name).unwrap().done_tag = Some(out.tag.clone());
        }
        self.send_rows_then(described, &formats, chunk, more, out.tag)
            .await
    }

    async fn send_rows_then(
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

    async fn close(&mut self, c: Close) -> IoResult<Result<(), PgError>> {
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

fn message_byte(m: &PgWireFrontendMessage) -> u8 {
    use PgWireFrontendMessage as M;
    match m {
        M::Query(_) => b'Q',
        M::Parse(_) => b'P',
        M::Bind(_) => b'B',
        M::Describe(_) => b'D',
        M::Execute(_) => b'E',
        M::Close(_) => b'C',
        M::Terminate(_) => b'X',
        _ => b'?',
    }
}
