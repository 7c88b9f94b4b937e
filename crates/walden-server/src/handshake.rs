//! A connection's first steps: TLS negotiation, the startup message,
//! authentication and a connection slot.
//!
//! Handshakes run as tasks on the accept loop's runtime, not on threads of
//! their own: a client that connects and sends nothing costs a socket and a
//! small task, not a thread, so a flood of idle or slow handshakes cannot
//! lock legitimate clients out (their number is capped, each is bounded by
//! `authentication_timeout`). Only an authenticated client takes a
//! connection slot and gets its thread, with the socket moved over to that
//! thread's runtime.

use futures::SinkExt;
use futures::StreamExt;
use pgwire::api::auth::mechanism::AuthMechanismFactory;
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthDriver, AuthOutcome,
    ServerParameterProvider,
};
use pgwire::api::ClientInfo;
use pgwire::error::ErrorInfo;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, MaybeTls, PgWireMessageServerCodec};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::codec::Framed;

use crate::auth::{self, Failure};
use crate::conn::PgError;
use crate::hba::{self, AuthMethod};
use crate::server::{Shared, SlotGuard};
use crate::sqlstate;

/// The socket during startup and authentication (pgwire's codec, which
/// pgwire's SCRAM driver needs).
pub(crate) type StartupSocket = Framed<MaybeTls, PgWireMessageServerCodec<()>>;

/// A client past authentication, holding a connection slot.
pub(crate) struct Handshaken {
    pub socket: StartupSocket,
    pub peer: SocketAddr,
    pub user: String,
    pub database: String,
    pub app: String,
    /// Run-time parameters from the startup message (`options` unpacked).
    pub parameters: Vec<(String, String)>,
    pub slot: SlotGuard,
}

/// The server parameters are sent by us, not by pgwire's driver.
struct NoParameters;
impl ServerParameterProvider for NoParameters {
    fn server_parameters<C: ClientInfo>(&self, _client: &C) -> Option<HashMap<String, String>> {
        None
    }
}

pub(crate) async fn send_fatal(socket: &mut StartupSocket, e: PgError) {
    let _ = socket.send(e.message()).await;
    let _ = SinkExt::<PgWireBackendMessage>::close(socket).await;
}

/// The next message; `None` when the client left or sent garbage (the
/// caller closes the connection; `authentication_timeout` bounds the wait).
async fn next_message(socket: &mut StartupSocket) -> Option<PgWireFrontendMessage> {
    match socket.next().await {
        Some(Ok(m)) => Some(m),
        Some(Err(e)) => {
            tracing::debug!(error = %e, "bad startup message");
            None
        }
        None => None,
    }
}

/// Runs the handshake to the point where a session can be opened; `None`
/// when the connection ended (cancel requests end here too).
pub(crate) async fn handshake(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
) -> Option<Handshaken> {
    let mut socket = match negotiate_tls::<()>(tcp, shared.tls.clone()).await {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => {
            tracing::debug!(%peer, error = %e, "TLS negotiation failed");
            return None;
        }
    };
    socket.set_backpressure_boundary(crate::conn::SEND_BUFFER);
    let startup = match next_message(&mut socket).await {
        Some(PgWireFrontendMessage::CancelRequest(c)) => {
            shared.cancel(c.pid, &c.secret_key);
            return None;
        }
        Some(PgWireFrontendMessage::Startup(s)) => s,
        _ => return None,
    };
    if let Err(e) = protocol_negotiation(&mut socket, &startup).await {
        send_fatal(
            &mut socket,
            PgError::fatal(sqlstate::PROTOCOL_VIOLATION, e.to_string()),
        )
        .await;
        return None;
    }
    save_startup_parameters_to_metadata(&mut socket, &startup);
    let param = |k: &str| startup.parameters.get(k).filter(|v| !v.is_empty()).cloned();
    let user = param("user").unwrap_or_else(|| "walden".into());
    let database = param("database").unwrap_or_else(|| "walden".into());
    let app = param("application_name").unwrap_or_default();
    let parameters = match startup_settings(&startup.parameters) {
        Ok(p) => p,
        Err(msg) => {
            send_fatal(
                &mut socket,
                PgError::fatal(
                    sqlstate::sqlstate(walden_sql::ErrorKind::FeatureNotSupported),
                    msg,
                ),
            )
            .await;
            return None;
        }
    };

    if shared.is_shutting_down() {
        send_fatal(
            &mut socket,
            PgError::fatal(
                sqlstate::ADMIN_SHUTDOWN,
                "the database system is shutting down",
            ),
        )
        .await;
        return None;
    }

    // The host-based rules: the first that matches decides the method.
    let tls = socket.is_secure();
    let ip = peer.ip().to_canonical();
    let method = {
        let client = hba::Client {
            addr: ip,
            tls,
            user: &user,
            database: &database,
        };
        let roles = shared.engine.instance().roles();
        shared.rules().decide(&client, &roles).map(|r| r.method)
    };
    // As PostgreSQL words it (clients and scripts match on it).
    let who = format!(
        "host \"{ip}\", user \"{user}\", database \"{database}\", {}",
        if tls {
            "SSL encryption"
        } else {
            "no encryption"
        }
    );
    let refuse = |f: Failure| shared.auth_failures.record(f, peer, &user, &database);
    match method {
        None => {
            refuse(Failure::NoRule);
            let msg = format!("no pg_hba.conf entry for {who}");
            send_fatal(
                &mut socket,
                PgError::fatal(sqlstate::INVALID_AUTHORIZATION, msg),
            )
            .await;
            return None;
        }
        Some(AuthMethod::Reject) => {
            refuse(Failure::Rejected);
            let msg = format!("pg_hba.conf rejects connection for {who}");
            send_fatal(
                &mut socket,
                PgError::fatal(sqlstate::INVALID_AUTHORIZATION, msg),
            )
            .await;
            return None;
        }
        Some(AuthMethod::Trust) => {}
        Some(AuthMethod::Cert) => {
            let cn = client_certificate(&socket)
                .as_deref()
                .and_then(auth::common_name);
            if cn.as_deref() != Some(user.as_str()) {
                refuse(Failure::Certificate);
                tokio::time::sleep(shared.config.auth_failure_delay).await;
                let msg = match cn {
                    None => "connection requires a valid client certificate".to_string(),
                    Some(_) => format!("certificate authentication failed for user \"{user}\""),
                };
                send_fatal(
                    &mut socket,
                    PgError::fatal(sqlstate::INVALID_AUTHORIZATION, msg),
                )
                .await;
                return None;
            }
        }
        Some(AuthMethod::ScramSha256) => {
            if !scram_login(&mut socket, &shared, peer, &user, &database).await {
                return None;
            }
        }
    }

    // A slot only for an authenticated client: clients stalled before or
    // during authentication do not use up max_connections.
    let Some(slot) = shared.acquire_slot() else {
        tracing::warn!(%peer, "too many connections");
        send_fatal(
            &mut socket,
            PgError::fatal(
                sqlstate::TOO_MANY_CONNECTIONS,
                "sorry, too many clients already",
            ),
        )
        .await;
        return None;
    };
    Some(Handshaken {
        socket,
        peer,
        user,
        database,
        app,
        parameters,
        slot,
    })
}

/// SCRAM-SHA-256 against the role's verifier; false (the client told, and
/// the failure counted) when it fails. Plain connections never see
/// SCRAM-SHA-256-PLUS.
async fn scram_login(
    socket: &mut StartupSocket,
    shared: &Shared,
    peer: SocketAddr,
    user: &str,
    database: &str,
) -> bool {
    let scram = match &shared.scram_tls {
        Some(s) if socket.is_secure() => s,
        _ => &shared.scram_plain,
    };
    let driver: AuthDriver<NoParameters> = AuthDriver::new(NoParameters);
    let mut outcome = driver.begin_authentication(socket, scram.create()).await;
    loop {
        match outcome {
            Ok(AuthOutcome::InProgress) => match next_message(socket).await {
                Some(PgWireFrontendMessage::PasswordMessageFamily(m)) => {
                    outcome = driver.advance_authentication(socket, m).await;
                }
                _ => return false,
            },
            Ok(AuthOutcome::Authenticated { final_message, .. }) => {
                if let Some(m) = final_message {
                    if socket
                        .feed(PgWireBackendMessage::Authentication(m))
                        .await
                        .is_err()
                    {
                        return false;
                    }
                }
                break;
            }
            Err(e) => {
                tracing::debug!(%peer, %user, error = %e, "SCRAM failed");
                shared
                    .auth_failures
                    .record(Failure::Password, peer, user, database);
                // Each failed attempt costs the client this delay (its
                // own task sleeps; nobody else waits): guessing
                // passwords runs at a few attempts per second per
                // connection, within the cap on pending handshakes.
                tokio::time::sleep(shared.config.auth_failure_delay).await;
                let info = ErrorInfo::from(e);
                let code = if info.code.starts_with("28") {
                    info.code.clone()
                } else {
                    "28P01".into()
                };
                let msg = format!("password authentication failed for user \"{user}\"");
                send_fatal(socket, PgError::fatal(&code, msg)).await;
                return false;
            }
        }
    }
    true
}

/// The client's certificate (DER), when it presented one over TLS that the
/// configured CA verified.
fn client_certificate(socket: &StartupSocket) -> Option<Vec<u8>> {
    match socket.get_ref() {
        MaybeTls::Tls(t) => t
            .get_ref()
            .1
            .peer_certificates()?
            .first()
            .map(|c| c.to_vec()),
        _ => None,
    }
}

/// The run-time parameters a startup message sets: every key but the
/// connection's own (user, database, replication), and `-c name=value` /
/// `--name=value` switches inside `options`, as PostgreSQL reads them.
fn startup_settings(
    params: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (k, v) in params {
        match k.as_str() {
            "user" | "database" | "application_name" => {}
            "replication" => {
                if !matches!(v.as_str(), "false" | "off" | "0" | "no" | "") {
                    return Err("replication connections are not supported".into());
                }
            }
            "options" => out.extend(split_options(v)?),
            _ => out.push((k.clone(), v.clone())),
        }
    }
    Ok(out)
}

/// `options`: switches separated by spaces, a backslash escaping the next
/// character.
fn split_options(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(chars.next()),
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut out = Vec::new();
    let mut words = words.into_iter();
    while let Some(w) = words.next() {
        let setting = if w == "-c" {
            words.next().ok_or("-c without name=value in options")?
        } else if let Some(rest) = w.strip_prefix("-c").or_else(|| w.strip_prefix("--")) {
            rest.to_string()
        } else {
            return Err(format!("startup option \"{w}\" is not supported"));
        };
        let (n, v) = setting
            .split_once('=')
            .ok_or_else(|| format!("startup option \"{setting}\" needs a value"))?;
        out.push((n.replace('-', "_"), v.to_string()));
    }
    Ok(out)
}

/// Moves the socket to the runtime of the calling thread: a socket is
/// registered with the reactor of the runtime that made it, and the
/// connection's thread must not depend on the accept loop's reactor for
/// every read. The descriptor is duplicated, registered here, and the
/// original (deregistered from the accept loop) closed; TLS state stays.
pub(crate) fn rebind(socket: &mut StartupSocket) -> std::io::Result<()> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let tcp: &mut tokio::net::TcpStream = match socket.get_mut() {
        MaybeTls::Plain(s) => s,
        MaybeTls::Tls(t) => t.get_mut().0,
        #[allow(unreachable_patterns)]
        _ => return Ok(()),
    };
    // SAFETY: dup returns a new descriptor that we own (or -1).
    let fd = unsafe { libc::dup(tcp.as_raw_fd()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor of a connected TCP socket, owned here.
    let std_stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    std_stream.set_nonblocking(true)?;
    let fresh = tokio::net::TcpStream::from_std(std_stream)?;
    drop(std::mem::replace(tcp, fresh));
    Ok(())
}

/// The longest a client may take from connecting to being authenticated.
pub(crate) fn timeout(shared: &Shared) -> Duration {
    shared.config.authentication_timeout
}
