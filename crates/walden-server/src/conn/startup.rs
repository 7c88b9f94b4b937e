//! An authenticated connection's session (the handshake before it is in
//! `handshake.rs`): opened, served, closed.

use super::*;

/// Serves one client connection after its handshake: opens the session,
/// then runs the protocol until the client leaves. Runs on the connection's
/// own thread.
pub(crate) async fn serve_connection(h: Handshaken, shared: Arc<Shared>) {
    let Handshaken {
        mut socket,
        peer,
        user,
        database,
        app,
        parameters,
        slot: _slot,
    } = h;
    let session = {
        let engine = shared.engine.clone();
        catch_unwind(AssertUnwindSafe(|| {
            engine.connect_client(&database, &user, &app)
        }))
    };
    let mut session = match session {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            if e.kind == ErrorKind::InvalidAuthorization {
                shared
                    .auth_failures
                    .record(crate::auth::Failure::Role, peer, &user, &database);
            }
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

    session.set_timeouts(shared.config.timeouts);
    for (name, value) in &parameters {
        if let Err(e) = session.set_startup_parameter(name, value) {
            send_fatal(&mut socket, PgError::fatal(sqlstate(e.kind), e.message)).await;
            return;
        }
    }
    let pid = session.session_id();
    // pg_terminate_backend wakes the connection wherever it waits.
    let terminate = Arc::new(tokio::sync::Notify::new());
    {
        let es = session.engine_session();
        es.set_client(peer);
        let t = terminate.clone();
        es.set_terminate_hook(Box::new(move || t.notify_one()));
    }
    // A notification queued for the session wakes its idle connection.
    let notified = Arc::new(tokio::sync::Notify::new());
    {
        let n = notified.clone();
        session.set_notification_waker(Some(Arc::new(move || n.notify_one())));
    }
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
        socket: socket.map_codec(SafeCodec::new),
        session,
        secret,
        cancel,
        busy,
        terminate,
        notified,
        statements: Default::default(),
        portals: Default::default(),
        skip_until_sync: false,
        reported_zone: "UTC".into(),
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
