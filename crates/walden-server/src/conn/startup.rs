//! A connection's first messages: TLS, the startup packet, authentication,
//! and the session it is then served by.

use super::*;

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
