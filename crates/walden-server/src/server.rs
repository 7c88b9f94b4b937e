//! The server: listeners, connection threads, cancel requests, shutdown.
//!
//! Each client connection runs on its own OS thread with a single-threaded
//! tokio runtime: the SQL session's calls block (they park while a commit
//! waits for its log flush), and on a dedicated thread they can do so without
//! handing work between threads for every statement. The accept loop and the
//! `/metrics` endpoint run on a small runtime of their own.

use parking_lot::{Condvar, Mutex};
use pgwire::api::auth::sasl::scram::{ScramAuth, ScramSecret};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::SecretKey;
use pgwire::tokio::tokio_rustls::rustls;
use pgwire::tokio::TlsAcceptor;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use walden_engine::Instance;
use walden_sql::SqlEngine;

use crate::config::{Rules, ServerConfig};

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    Config(String),
    #[error("cannot open the instance in {dir}: {err}")]
    Open {
        dir: String,
        err: walden_engine::EngineError,
    },
    #[error("cannot listen on {addr}: {err}")]
    Bind { addr: String, err: std::io::Error },
    #[error("TLS: {0}")]
    Tls(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("closing the instance: {0}")]
    Close(walden_engine::EngineError),
}

/// What a cancel request needs to reach a running statement.
pub(crate) struct ConnEntry {
    pub secret: i32,
    pub cancel: Arc<AtomicBool>,
    /// Set while the connection runs a statement: a cancel request that
    /// arrives while it is idle is ignored, as in PostgreSQL.
    pub busy: Arc<AtomicBool>,
}

/// State shared by the accept loop, the connections and the metrics endpoint.
pub struct Shared {
    pub(crate) engine: Arc<SqlEngine>,
    pub(crate) config: ServerConfig,
    pub(crate) tls: Option<TlsAcceptor>,
    /// SCRAM without channel binding (plain connections) and with it (TLS).
    pub(crate) scram_plain: ScramAuth,
    pub(crate) scram_tls: Option<ScramAuth>,
    /// The host-based rules in force (replaced by a reload).
    rules: parking_lot::RwLock<Arc<Rules>>,
    /// Refused logins, by reason (`/metrics`).
    pub(crate) auth_failures: crate::auth::FailureCounts,
    shutdown_tx: watch::Sender<bool>,
    conns: Mutex<HashMap<u32, ConnEntry>>,
    /// Connections past authentication (counted against max_connections).
    active: AtomicUsize,
    /// Connections still in their handshake.
    pending: AtomicUsize,
    /// Live connection threads, for shutdown to wait on.
    threads: Mutex<usize>,
    threads_cv: Condvar,
}

impl Shared {
    pub(crate) fn shutdown_rx(&self) -> watch::Receiver<bool> {
        self.shutdown_tx.subscribe()
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        *self.shutdown_tx.borrow()
    }

    /// Open client connections.
    pub fn connection_count(&self) -> usize {
        self.active.load(Relaxed)
    }

    /// Takes a connection slot, or `None` when max_connections are open.
    pub(crate) fn acquire_slot(self: &Arc<Self>) -> Option<SlotGuard> {
        let max = self.config.max_connections;
        let mut cur = self.active.load(Relaxed);
        loop {
            if cur >= max {
                return None;
            }
            match self.active.compare_exchange(cur, cur + 1, Relaxed, Relaxed) {
                Ok(_) => return Some(SlotGuard(self.clone())),
                Err(c) => cur = c,
            }
        }
    }

    /// Makes a session reachable by cancel requests while the guard lives.
    pub(crate) fn register(self: &Arc<Self>, pid: u32, entry: ConnEntry) -> Registration {
        self.conns.lock().insert(pid, entry);
        Registration(self.clone(), pid)
    }

    /// A CancelRequest: sets the cancel flag of the session it names, if the
    /// secret matches and a statement is running.
    pub(crate) fn cancel(&self, pid: i32, key: &SecretKey) {
        let conns = self.conns.lock();
        match conns.get(&(pid as u32)) {
            Some(e) if SecretKey::I32(e.secret).eq_value(key) => {
                if e.busy.load(Relaxed) {
                    e.cancel.store(true, Relaxed);
                    tracing::info!(pid, "cancel request");
                }
            }
            _ => tracing::debug!(pid, "cancel request for an unknown session ignored"),
        }
    }

    /// The host-based rules in force.
    pub(crate) fn rules(&self) -> Arc<Rules> {
        self.rules.read().clone()
    }

    /// Re-reads the configuration file's `[auth]` rules (SIGHUP,
    /// `pg_reload_conf()`); a file with an error leaves the rules in force
    /// as they were.
    pub fn reload_rules(&self) -> Result<(), String> {
        match self.config.reread_rules() {
            Ok(r) => {
                let n = r.rules.len();
                *self.rules.write() = Arc::new(r);
                tracing::info!(rules = n, "authentication rules reloaded");
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "configuration not reloaded; the rules in force stay");
                Err(e)
            }
        }
    }

    fn cancel_all(&self) {
        for e in self.conns.lock().values() {
            e.cancel.store(true, Relaxed);
        }
    }
}

pub(crate) struct Registration(Arc<Shared>, u32);

impl Drop for Registration {
    fn drop(&mut self) {
        self.0.conns.lock().remove(&self.1);
    }
}

pub(crate) struct SlotGuard(Arc<Shared>);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Relaxed);
    }
}

struct ThreadGuard(Arc<Shared>);

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        let mut n = self.0.threads.lock();
        *n -= 1;
        self.0.threads_cv.notify_all();
    }
}

/// Stops a running server from another thread.
#[derive(Clone)]
pub struct ShutdownHandle(Arc<Shared>);

impl ShutdownHandle {
    /// Begins a shutdown: stop accepting, end every connection, close the instance.
    pub fn shutdown(&self) {
        self.0.shutdown_tx.send_replace(true);
    }
}

/// A server bound to its addresses, with its instance open.
pub struct Server {
    shared: Arc<Shared>,
    listener: std::net::TcpListener,
    metrics_listener: Option<std::net::TcpListener>,
}

/// Passwords come from the role catalog, where they are SCRAM verifiers:
/// the server checks a client's proof without knowing its password.
struct Roles {
    instance: Instance,
}

impl std::fmt::Debug for Roles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Roles")
    }
}

#[async_trait::async_trait]
impl AuthSource for Roles {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        // Only SCRAM is offered, which asks for `get_scram_secret`.
        Err(PgWireError::InvalidPassword(
            login.user().unwrap_or_default().to_owned(),
        ))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        let cat = self.instance.roles();
        // No such role, no password, or one past its VALID UNTIL: the
        // exchange fails like a wrong password, telling a client nothing
        // about which roles exist (as PostgreSQL does).
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let v = cat
            .role(user)
            .filter(|r| r.valid_until.is_none_or(|t| t > now))
            .and_then(|r| r.password.as_deref())
            .and_then(walden_engine::scram::ScramVerifier::parse)
            .ok_or_else(|| PgWireError::InvalidPassword(user.to_owned()))?;
        Ok((
            ScramSecret::Verifier {
                salt: v.salt,
                iterations: v.iterations as usize,
                stored_key: v.stored_key,
                server_key: v.server_key,
            },
            None,
        ))
    }
}

/// What SQL sees of the server: `pg_reload_conf()`, `pg_hba_file_rules`.
/// Weak: the engine is the server's, not the other way round.
struct Host(std::sync::Weak<Shared>);

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Host")
    }
}

impl walden_sql::ServerHost for Host {
    fn reload_config(&self) -> Result<(), String> {
        match self.0.upgrade() {
            Some(s) => s.reload_rules(),
            None => Err("the server is shutting down".into()),
        }
    }

    fn hba_rules(&self) -> Vec<walden_sql::HbaRuleRow> {
        let Some(s) = self.0.upgrade() else {
            return Vec::new();
        };
        s.rules()
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let (address, netmask) = match r.address {
                    crate::hba::AddrPattern::All => (Some("all".to_string()), None),
                    crate::hba::AddrPattern::Net(n) => {
                        (Some(n.addr.to_string()), Some(n.netmask().to_string()))
                    }
                };
                walden_sql::HbaRuleRow {
                    line_number: i as i32 + 1,
                    conn_type: r.conn.name().to_string(),
                    database: r.databases.iter().map(|d| d.to_string()).collect(),
                    user_name: r.roles.iter().map(|u| u.to_string()).collect(),
                    address,
                    netmask,
                    auth_method: r.method.name().to_string(),
                }
            })
            .collect()
    }
}

fn tls_setup(cfg: &ServerConfig) -> Result<Option<(TlsAcceptor, Vec<u8>)>, ServerError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let Some(files) = &cfg.tls else {
        return Ok(None);
    };
    let cert_pem = std::fs::read(&files.cert)
        .map_err(|e| ServerError::Tls(format!("cannot read {}: {e}", files.cert.display())))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| ServerError::Tls(format!("{}: {e}", files.cert.display())))?;
    if certs.is_empty() {
        return Err(ServerError::Tls(format!(
            "no certificate in {}",
            files.cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| ServerError::Tls(format!("{}: {e}", files.key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?;
    let builder = match &files.ca {
        // Clients may present a certificate (verified against the CA when
        // they do); the `cert` rules require one.
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            let pem = std::fs::read(ca)
                .map_err(|e| ServerError::Tls(format!("cannot read {}: {e}", ca.display())))?;
            for c in CertificateDer::pem_slice_iter(&pem) {
                let c = c.map_err(|e| ServerError::Tls(format!("{}: {e}", ca.display())))?;
                roots
                    .add(c)
                    .map_err(|e| ServerError::Tls(format!("{}: {e}", ca.display())))?;
            }
            if roots.is_empty() {
                return Err(ServerError::Tls(format!(
                    "no certificate in {}",
                    ca.display()
                )));
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .map_err(|e| ServerError::Tls(format!("{}: {e}", ca.display())))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut sc = builder
        .with_single_cert(certs, key)
        .map_err(|e| ServerError::Tls(e.to_string()))?;
    sc.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some((TlsAcceptor::from(Arc::new(sc)), cert_pem)))
}

fn bind(addr: &str) -> Result<std::net::TcpListener, ServerError> {
    let l = std::net::TcpListener::bind(addr).map_err(|err| ServerError::Bind {
        addr: addr.to_string(),
        err,
    })?;
    l.set_nonblocking(true)?;
    Ok(l)
}

/// An address to tell others (a wildcard bind names this host).
fn advertised(a: SocketAddr) -> String {
    if a.ip().is_unspecified() {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".into());
        format!("{host}:{}", a.port())
    } else {
        a.to_string()
    }
}

impl Server {
    /// Opens the instance (creating the data directory and the `walden`
    /// database on first start) and binds the listeners.
    pub fn start(config: ServerConfig) -> Result<Server, ServerError> {
        config.validate().map_err(ServerError::Config)?;
        let tls = tls_setup(&config)?;
        let listener = bind(&config.listen)?;
        let metrics_listener = config.metrics_listen.as_deref().map(bind).transpose()?;
        let instance =
            Instance::open(config.instance_config()).map_err(|err| ServerError::Open {
                dir: config.data_dir.display().to_string(),
                err,
            })?;
        let engine = SqlEngine::new(instance.clone());
        // The configured users are superusers with the configured passwords
        // (the bootstrap accounts); every other role comes from CREATE ROLE.
        for (user, pw) in &config.users {
            engine
                .ensure_superuser(user, pw)
                .map_err(|e| ServerError::Config(format!("user \"{user}\": {e}")))?;
        }
        // SCRAM is set up whatever the rules say: a reload may bring rules
        // that ask for it.
        let source: Arc<dyn AuthSource> = Arc::new(Roles {
            instance: instance.clone(),
        });
        let scram_plain = ScramAuth::new(source.clone());
        let scram_tls = match &tls {
            Some((_, pem)) => {
                let mut s = ScramAuth::new(source);
                s.configure_certificate(pem)
                    .map_err(|e| ServerError::Tls(format!("SCRAM channel binding: {e}")))?;
                Some(s)
            }
            None => None,
        };
        engine.set_backup_dir(config.backup_dir.clone());
        engine.set_statement_memory_limit(config.statement_memory_limit);
        if let Some(name) = &config.replication.name {
            let mut rc = walden_replication::ReplicationConfig::new(name.clone());
            rc.endpoint_listen = config.replication.endpoint_listen.clone();
            if let Some(mb) = config.replication.max_send_queue_mb {
                rc.max_send_queue_bytes = mb.max(1) << 20;
            }
            if let Some(mb) = config.replication.max_retained_log_mb {
                rc.max_retained_log_bytes = mb << 20;
            }
            rc.auth = config
                .replication
                .peer_auth()
                .map_err(ServerError::Config)?;
            rc.tls = config
                .replication
                .tls_files()
                .map_err(ServerError::Config)?;
            rc.ha = config.ha.ha_config().map_err(ServerError::Config)?;
            if let Some(h) = rc.ha.as_mut() {
                h.sql_addr = Some(advertised(listener.local_addr()?));
                h.api_addr = metrics_listener
                    .as_ref()
                    .map(|l| l.local_addr().map(advertised))
                    .transpose()?;
            }
            let r = walden_replication::Replication::start(instance, rc)
                .map_err(|e| ServerError::Config(format!("replication: {e}")))?;
            if let Some(a) = r.endpoint_addr() {
                tracing::info!(replica = name, endpoint = %a, "replication endpoint listening");
            }
            engine.set_replication(Some(r));
        }
        let (shutdown_tx, _) = watch::channel(false);
        let rules = parking_lot::RwLock::new(Arc::new(config.auth.clone()));
        let shared = Arc::new(Shared {
            engine,
            config,
            tls: tls.map(|(a, _)| a),
            scram_plain,
            scram_tls,
            rules,
            auth_failures: Default::default(),
            shutdown_tx,
            conns: Mutex::new(HashMap::new()),
            active: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            threads: Mutex::new(0),
            threads_cv: Condvar::new(),
        });
        shared
            .engine
            .set_host(Some(Arc::new(Host(Arc::downgrade(&shared)))));
        Ok(Server {
            shared,
            listener,
            metrics_listener,
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("bound listener")
    }

    /// The `/metrics` address, if enabled.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.shared.clone())
    }

    /// The SQL engine (and through it the instance) this server serves.
    pub fn engine(&self) -> &Arc<SqlEngine> {
        &self.shared.engine
    }

    /// Serves until [`ShutdownHandle::shutdown`] (or, with `signals`, SIGTERM
    /// or SIGINT), then ends every connection and closes the instance, which
    /// hardens and checkpoints every database.
    pub fn run(self, signals: bool) -> Result<(), ServerError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("walden-accept")
            .build()?;
        let shared = self.shared.clone();
        let result = rt.block_on(async {
            let listener = tokio::net::TcpListener::from_std(self.listener)?;
            tracing::info!(addr = %listener.local_addr()?, "listening");
            if let Some(ml) = self.metrics_listener {
                let ml = tokio::net::TcpListener::from_std(ml)?;
                tracing::info!(addr = %ml.local_addr()?, "metrics at /metrics");
                tokio::spawn(crate::metrics::serve(ml, shared.clone()));
            }
            if signals {
                use tokio::signal::unix::{signal, SignalKind};
                let mut term = signal(SignalKind::terminate())?;
                let mut int = signal(SignalKind::interrupt())?;
                let mut hup = signal(SignalKind::hangup())?;
                let sh = shared.clone();
                tokio::spawn(async move {
                    while hup.recv().await.is_some() {
                        tracing::info!("SIGHUP: reloading the authentication rules");
                        let sh = sh.clone();
                        // Reading the file is blocking I/O.
                        let _ = tokio::task::spawn_blocking(move || sh.reload_rules()).await;
                    }
                });
                let sh = shared.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
                    }
                    ShutdownHandle(sh.clone()).shutdown();
                    // A second signal does not wait for the connections: it
                    // hardens the logs (no checkpoint) and exits.
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                    tracing::warn!("second signal: hardening the logs and exiting now");
                    if let Err(e) = sh.engine.instance().shutdown_nowait() {
                        tracing::error!(error = %e, "hardening the logs failed");
                    }
                    std::process::exit(1);
                });
            }
            accept_loop(listener, &shared).await;
            let sh = shared.clone();
            tokio::task::spawn_blocking(move || sh.finish())
                .await
                .map_err(|e| ServerError::Io(std::io::Error::other(e.to_string())))?
        });
        drop(rt);
        result
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, shared: &Arc<Shared>) {
    let mut shutdown = shared.shutdown_rx();
    if *shutdown.borrow_and_update() {
        return;
    }
    let mut next_id = 0u64;
    let mut handshakes: std::collections::VecDeque<(tokio::task::AbortHandle, Arc<AtomicBool>)> =
        Default::default();
    let mut evicted = 0u64;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: wait a little.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Handshakes run here, on the accept loop's runtime, as tasks: a
        // client that never finishes one costs no thread. Their number is
        // capped; each is bounded by authentication_timeout.
        // At the cap, the oldest handshake gives way: a legitimate client
        // finishes its handshake in milliseconds, so the ones that have been
        // waiting longest are the idle or stalled ones.
        while shared.pending.load(Relaxed) >= shared.config.max_pending_handshakes {
            match handshakes.pop_front() {
                Some((h, counted)) if !h.is_finished() => {
                    h.abort();
                    evicted += 1;
                    if evicted.is_power_of_two() {
                        tracing::warn!(
                            evicted,
                            "max_pending_handshakes reached: closing the oldest handshakes"
                        );
                    }
                    // Uncounted now: the aborted task's future is dropped
                    // later, on this thread, and its guard must not count it
                    // again.
                    if counted.swap(false, Relaxed) {
                        shared.pending.fetch_sub(1, Relaxed);
                    }
                }
                Some(_) => {}
                None => break,
            }
        }
        while handshakes.front().is_some_and(|h| h.0.is_finished()) {
            handshakes.pop_front();
        }
        shared.pending.fetch_add(1, Relaxed);
        next_id += 1;
        let id = next_id;
        let sh = shared.clone();
        let counted = Arc::new(AtomicBool::new(true));
        let pending = PendingGuard(sh.clone(), counted.clone());
        let task = tokio::spawn(async move {
            let limit = crate::handshake::timeout(&sh);
            let done =
                tokio::time::timeout(limit, crate::handshake::handshake(stream, peer, sh.clone()))
                    .await;
            drop(pending);
            match done {
                Ok(Some(h)) => spawn_connection(h, sh, id),
                Ok(None) => {}
                Err(_) => tracing::info!(%peer, "authentication timeout"),
            }
        });
        handshakes.push_back((task.abort_handle(), counted));
    }
    tracing::info!("no longer accepting connections");
}

/// Counts a handshake in progress while it lives.
struct PendingGuard(Arc<Shared>, Arc<AtomicBool>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.1.swap(false, Relaxed) {
            self.0.pending.fetch_sub(1, Relaxed);
        }
    }
}

/// Stack of a connection's thread: statements up to the SQL layer's depth
/// limits run on it without allocating a stack of their own (see
/// walden-sql's `stack.rs`); it is reserved address space, touched only as
/// deep as a statement goes.
const CONNECTION_STACK: usize = 64 << 20;

/// Gives an authenticated client its thread, with a single-threaded runtime
/// that the socket is moved to.
fn spawn_connection(h: crate::handshake::Handshaken, shared: Arc<Shared>, id: u64) {
    *shared.threads.lock() += 1;
    let guard = ThreadGuard(shared.clone());
    let peer = h.peer;
    let spawned = std::thread::Builder::new()
        .name(format!("walden-conn-{id}"))
        .stack_size(CONNECTION_STACK)
        .spawn(move || {
            let _guard = guard;
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "cannot start a connection runtime");
                    return;
                }
            };
            // A panic ends this connection only (its guards still run).
            let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rt.block_on(async move {
                    let mut h = h;
                    if let Err(e) = crate::handshake::rebind(&mut h.socket) {
                        tracing::warn!(error = %e, "cannot move the connection to its thread");
                        return;
                    }
                    crate::conn::serve_connection(h, shared).await
                })
            }));
            if served.is_err() {
                tracing::error!(%peer, "connection ended by a panic");
            }
        });
    if let Err(e) = spawned {
        // The closure (and with it the guard and the slot) was dropped.
        tracing::error!(error = %e, "cannot spawn a connection thread");
    }
}

impl Shared {
    /// After the accept loop ended: stop statements, wait for the
    /// connections to end, close the instance.
    fn finish(&self) -> Result<(), ServerError> {
        self.cancel_all();
        let deadline = Instant::now() + self.config.shutdown_timeout;
        let mut n = self.threads.lock();
        while *n > 0 {
            if self.threads_cv.wait_until(&mut n, deadline).timed_out() {
                tracing::warn!(
                    connections = *n,
                    "connections still busy at shutdown; closing anyway"
                );
                break;
            }
            // Keep cancelling statements that started meanwhile.
            self.cancel_all();
        }
        drop(n);
        if let Some(r) = self.engine.replication() {
            r.shutdown();
        }
        tracing::info!("closing the instance");
        self.engine.instance().close().map_err(ServerError::Close)?;
        tracing::info!("shut down cleanly");
        Ok(())
    }
}
