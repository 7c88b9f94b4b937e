//! Availability groups: a primary ships its databases' log to secondaries
//! over TCP; a fully durable commit waits until its log is hardened locally
//! and on every SYNCHRONIZED synchronous secondary (HADR_SYNC_COMMIT); a
//! secondary hardens, acknowledges and redoes what it receives, serves
//! reads, and can be failed over to.
//!
//! Layout: [`config`] (groups and `hadr.json`), [`auth`] (peer
//! authentication and frame MACs), `tls`, [`transport`] (framed connections),
//! [`proto`] (the wire messages), `primary` (one link per secondary and database, and the commit
//! hook), `secondary` (the endpoint and redo), `failover`, and `status` (the
//! rows of `sys.dm_hadr_database_replica_states`).

pub mod auth;
pub mod config;
mod failover;
pub mod ha;
mod lag_bound;
mod primary;
pub mod proto;
mod secondary;
mod status;
mod tls;
pub mod transport;

pub use auth::{PeerAuth, Secret};
pub use config::{
    AgDef, AgState, AvailabilityMode, HadrFile, LagBound, ReplicaDef, ReplicationConfig,
};
pub use failover::FailoverRow;
pub use status::{ReplicaStateRow, SyncState};
pub use tls::TlsFiles;

use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::Instant;
use walden_engine::Instance;
use walden_log::Lsn;

/// Errors of the replication layer.
#[derive(Debug, thiserror::Error)]
pub enum ReplicationError {
    #[error("{0}")]
    Invalid(String),
    #[error("availability group \"{0}\" does not exist")]
    UnknownGroup(String),
    #[error("{0}")]
    State(String),
    #[error(transparent)]
    Engine(#[from] walden_engine::EngineError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = ReplicationError> = std::result::Result<T, E>;

/// The primary's view of one secondary for one database.
#[derive(Clone, Debug)]
pub(crate) struct LinkStatus {
    pub id: u64,
    pub ag: String,
    pub replica: String,
    pub db: String,
    pub mode: AvailabilityMode,
    pub state: SyncState,
    pub connected: bool,
    /// Past seeding and catch-up: the secondary answers heartbeats, so its
    /// silence means it is gone.
    pub live: bool,
    /// Shipped through (the end of the last log message sent).
    pub sent: Lsn,
    pub acked_hardened: Lsn,
    pub acked_applied: Lsn,
    pub last_heard: Instant,
    /// When the secondary last fell behind the primary's hardened log.
    pub behind_since: Option<Instant>,
    pub last_ack_advance: Option<std::time::SystemTime>,
    /// Set when the link must drop its connection (timeout, shutdown).
    pub reset: bool,
    pub stopped: bool,
    pub last_error: Option<String>,
    /// Log the secondary still needs is kept from here (`None`: not held).
    pub retain_from: Option<Lsn>,
    /// It fell behind the retention limit (or an operator asked): the next
    /// connection seeds it afresh instead of resuming.
    pub needs_reseed: bool,
    /// Bounded-lag asynchronous secondary: its bound.
    pub bound: Option<config::LagBound>,
    /// Commits honour its bound (it caught up once, and has not been held
    /// out of it for `SESSION_TIMEOUT` since).
    pub bound_counted: bool,
    /// Since when it has held a commit back (or been disconnected) while
    /// counted; reset whenever its hardened LSN advances.
    pub bound_out_since: Option<Instant>,
}

/// What a secondary knows of its primary, per database.
#[derive(Clone, Debug)]
pub(crate) struct Incoming {
    pub ag: String,
    pub connected: bool,
    pub primary_end: Lsn,
    pub primary_hardened: Lsn,
    pub synchronized: bool,
    pub last_heard: Instant,
    pub generation: u64,
    pub last_received: Option<std::time::SystemTime>,
}

#[derive(Default)]
pub(crate) struct SyncTable {
    pub links: Vec<LinkStatus>,
    pub next_id: u64,
    /// Databases whose group stepped down: their waiting commits fail.
    pub demoted: Vec<String>,
    /// HA: per group (lower case), the synchronous secondaries (lower case)
    /// the published sync set counts; commits wait for them as for
    /// SYNCHRONIZED ones until the set without them is in etcd.
    pub ha_counted: HashMap<String, Vec<String>>,
    /// HA: per group, the bounded-lag asynchronous secondaries the
    /// published set names; commits keep their bound until the set without
    /// them is in etcd.
    pub ha_bounded: HashMap<String, Vec<String>>,
    /// Per database with a bounded secondary: commits acknowledged (LSN,
    /// when) that some bounded secondary may not have hardened yet, oldest
    /// first.
    pub acked: HashMap<String, std::collections::VecDeque<(Lsn, Instant)>>,
}

pub(crate) struct Inner {
    pub cfg: ReplicationConfig,
    pub instance: Instance,
    /// Taken out (and shut down) by [`Replication::shutdown`].
    pub rt: Mutex<Option<tokio::runtime::Runtime>>,
    pub state: Mutex<HadrFile>,
    pub sync: Mutex<SyncTable>,
    pub sync_cv: Condvar,
    pub incoming: Mutex<HashMap<String, Incoming>>,
    /// Groups this primary holds read-only until another replica confirms
    /// no failover happened while it was down.
    pub resolving: Mutex<Vec<String>>,
    pub closed: AtomicBool,
    /// Live replication sockets, shut down by [`Replication::shutdown`]
    /// (their threads block on them).
    pub sockets: Mutex<Vec<(u64, std::net::TcpStream)>>,
    pub next_socket: std::sync::atomic::AtomicU64,
    pub endpoint_addr: Mutex<Option<std::net::SocketAddr>>,
    pub tls: Option<tls::TlsContext>,
    /// Peers refused for failing authentication (either side), and the
    /// last reason.
    pub auth_failures: std::sync::atomic::AtomicU64,
    pub last_auth_failure: Mutex<Option<String>>,
    /// Automatic failover through etcd (`--ha`).
    pub(crate) ha: Option<Arc<ha::HaShared>>,
}

/// The replication layer of one instance. Cloning shares it.
#[derive(Clone)]
pub struct Replication {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Replication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replication")
            .field("name", &self.inner.cfg.name)
            .finish()
    }
}

impl Replication {
    /// Starts the replication layer: loads `hadr.json`, starts the endpoint
    /// (if configured) and the links of every group this replica is primary of.
    pub fn start(instance: Instance, cfg: ReplicationConfig) -> Result<Replication> {
        let ha_cfg = cfg.ha.clone();
        if let Some(h) = &ha_cfg {
            h.validate().map_err(ReplicationError::Invalid)?;
        }
        let file = HadrFile::load(instance.data_dir()).map_err(ReplicationError::Invalid)?;
        let tls = cfg
            .tls
            .as_ref()
            .map(tls::TlsContext::load)
            .transpose()
            .map_err(|e| ReplicationError::Invalid(format!("replication TLS: {e}")))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("walden-hadr")
            .enable_all()
            .build()?;
        let inner = Arc::new(Inner {
            cfg,
            instance,
            rt: Mutex::new(Some(rt)),
            state: Mutex::new(file),
            sync: Mutex::new(SyncTable::default()),
            sync_cv: Condvar::new(),
            incoming: Mutex::new(HashMap::new()),
            resolving: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            sockets: Mutex::new(Vec::new()),
            next_socket: std::sync::atomic::AtomicU64::new(0),
            endpoint_addr: Mutex::new(None),
            tls,
            auth_failures: std::sync::atomic::AtomicU64::new(0),
            last_auth_failure: Mutex::new(None),
            ha: ha_cfg.map(|c| Arc::new(ha::HaShared::new(c))),
        });
        let r = Replication { inner };
        if let Some(addr) = r.inner.cfg.endpoint_listen.clone() {
            let listener = std::net::TcpListener::bind(&addr)
                .map_err(|e| ReplicationError::Invalid(format!("endpoint {addr}: {e}")))?;
            listener.set_nonblocking(true)?;
            let local = listener.local_addr()?;
            // Without a secret or TLS anyone who reaches the endpoint could
            // feed this replica a log stream: only loopback may go without.
            if r.inner.cfg.auth == PeerAuth::None
                && r.inner.tls.is_none()
                && !local.ip().is_loopback()
            {
                return Err(ReplicationError::Invalid(format!(
                    "replication endpoint {addr} is not a loopback address: configure a replication secret or TLS (auth = \"none\" is accepted only on loopback)"
                )));
            }
            *r.inner.endpoint_addr.lock() = Some(local);
            let inner = r.inner.clone();
            r.inner.spawn(async move {
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => secondary::serve_endpoint(inner, l).await,
                    Err(e) => tracing::error!(error = %e, "replication endpoint failed"),
                }
            });
        }
        let groups = r.inner.state.lock().groups.clone();
        for g in groups {
            if g.primary.eq_ignore_ascii_case(&r.inner.cfg.name) {
                let others = g
                    .def
                    .replicas
                    .iter()
                    .any(|x| !x.name.eq_ignore_ascii_case(&r.inner.cfg.name));
                if others || r.inner.ha.is_some() {
                    // A primary coming back cannot know whether a failover
                    // happened while it was down: it stays read-only until a
                    // secondary confirms its epoch (or a forced failover; in
                    // HA mode, until it holds the group's leader key).
                    r.hold_resolving(&g);
                }
                primary::start_group(&r.inner, &g);
            }
        }
        let inner = r.inner.clone();
        r.inner.spawn(primary::monitor(inner));
        if let Some(h) = &r.inner.ha {
            ha::start(&r.inner, h);
        }
        Ok(r)
    }

    /// HA through etcd, when configured: its settings and counters.
    pub fn ha_config(&self) -> Option<&ha::HaConfig> {
        self.inner.ha.as_ref().map(|h| &h.cfg)
    }

    pub fn ha_counters(&self) -> Option<&ha::HaCounters> {
        self.inner.ha.as_ref().map(|h| &h.counters)
    }

    /// The cluster as this node last read it from etcd, and the last error.
    pub fn ha_view(&self) -> Option<(Option<ha::ClusterView>, Option<String>)> {
        self.inner
            .ha
            .as_ref()
            .map(|h| (h.view.lock().clone(), h.last_error.lock().clone()))
    }

    /// Each group this replica is in, and whether it is that group's
    /// writable primary here (in HA mode: holding the leader key under a
    /// live lease).
    pub fn roles(&self) -> Vec<(String, bool)> {
        let me = &self.inner.cfg.name;
        let groups = self.groups();
        let resolving = self.inner.resolving.lock().clone();
        groups
            .iter()
            .map(|g| {
                let name = g.def.name.clone();
                let mut primary = g.primary.eq_ignore_ascii_case(me)
                    && !resolving.iter().any(|r| r.eq_ignore_ascii_case(&name));
                if let Some(h) = &self.inner.ha {
                    primary &= h.may_acknowledge(&name);
                }
                (name, primary)
            })
            .collect()
    }

    /// This replica's name.
    pub fn name(&self) -> &str {
        &self.inner.cfg.name
    }

    /// Where the endpoint listens (after binding, e.g. to port 0).
    pub fn endpoint_addr(&self) -> Option<std::net::SocketAddr> {
        *self.inner.endpoint_addr.lock()
    }

    /// Peers refused because they failed authentication (as endpoint or
    /// as primary), and the last reason.
    pub fn auth_failures(&self) -> (u64, Option<String>) {
        (
            self.inner.auth_failures.load(SeqCst),
            self.inner.last_auth_failure.lock().clone(),
        )
    }

    pub fn groups(&self) -> Vec<AgState> {
        self.inner.state.lock().groups.clone()
    }

    fn hold_resolving(&self, g: &AgState) {
        for db in &g.def.databases {
            if let Ok(d) = self.inner.instance.database(db) {
                if !d.is_secondary() {
                    d.demote();
                }
            }
        }
        self.inner.resolving.lock().push(g.def.name.clone());
        tracing::warn!(group = %g.def.name, "primary is RESOLVING until a secondary confirms it");
    }

    /// `CREATE AVAILABILITY GROUP`: this replica becomes its primary.
    pub fn create_group(&self, def: AgDef) -> Result<()> {
        let me = self.inner.cfg.name.clone();
        if def.replica(&me).is_none() {
            return Err(ReplicationError::Invalid(format!(
                "the availability group must name this replica (\"{me}\") with REPLICA ON"
            )));
        }
        if def.replicas.len() < 2 {
            return Err(ReplicationError::Invalid(
                "an availability group needs at least one secondary replica".into(),
            ));
        }
        for r in &def.replicas {
            if !r.name.eq_ignore_ascii_case(&me) {
                r.address().map_err(ReplicationError::Invalid)?;
            }
        }
        if def.databases.is_empty() {
            return Err(ReplicationError::Invalid(
                "an availability group needs FOR DATABASE name[, ...]".into(),
            ));
        }
        let mut lsns = std::collections::BTreeMap::new();
        let mut seeds = std::collections::BTreeMap::new();
        for d in &def.databases {
            let db = self.inner.instance.database(d)?;
            if db.is_secondary() {
                return Err(ReplicationError::State(format!(
                    "database \"{d}\" is a secondary replica here"
                )));
            }
            lsns.insert(d.to_ascii_lowercase(), db.log().end_lsn());
            seeds.insert(d.to_ascii_lowercase(), rand::random::<u64>() >> 1);
        }
        let g = {
            let mut st = self.inner.state.lock();
            if st
                .groups
                .iter()
                .any(|g| g.def.name.eq_ignore_ascii_case(&def.name))
            {
                return Err(ReplicationError::Invalid(format!(
                    "availability group \"{}\" already exists",
                    def.name
                )));
            }
            for g in &st.groups {
                for d in &def.databases {
                    if g.def.has_database(d) {
                        return Err(ReplicationError::Invalid(format!(
                            "database \"{d}\" already belongs to availability group \"{}\"",
                            g.def.name
                        )));
                    }
                }
            }
            let g = AgState {
                def,
                primary: me.clone(),
                epoch: 1,
                history: vec![config::EpochStart {
                    epoch: 1,
                    primary: me,
                    lsns,
                }],
                followed: seeds.keys().map(|k| (k.clone(), 1)).collect(),
                seeds,
            };
            st.groups.push(g.clone());
            st.save(self.inner.instance.data_dir())
                .map_err(ReplicationError::Invalid)?;
            g
        };
        primary::start_group(&self.inner, &g);
        if let Some(h) = &self.inner.ha {
            // Commits wait (briefly) until the agent holds the leader key.
            h.poke();
        }
        Ok(())
    }

    /// `DROP AVAILABILITY GROUP`: stops shipping; databases stay as they are
    /// (a secondary's copies stay read-only until restored or dropped).
    pub fn drop_group(&self, name: &str) -> Result<()> {
        let g = {
            let mut st = self.inner.state.lock();
            let i = st
                .groups
                .iter()
                .position(|g| g.def.name.eq_ignore_ascii_case(name))
                .ok_or_else(|| ReplicationError::UnknownGroup(name.into()))?;
            let g = st.groups.remove(i);
            st.save(self.inner.instance.data_dir())
                .map_err(ReplicationError::Invalid)?;
            g
        };
        primary::stop_group(&self.inner, &g.def.name, false);
        Ok(())
    }

    /// Rows of `sys.dm_hadr_database_replica_states`.
    pub fn replica_states(&self) -> Vec<ReplicaStateRow> {
        status::rows(&self.inner)
    }

    /// `ALTER AVAILABILITY GROUP name RESEED 'replica'` (on the primary):
    /// the secondary gets a fresh image and the log after it, now.
    pub fn reseed(&self, group: &str, replica: &str) -> Result<usize> {
        let mut t = self.inner.sync.lock();
        let mut n = 0;
        for l in t
            .links
            .iter_mut()
            .filter(|l| l.ag.eq_ignore_ascii_case(group) && l.replica.eq_ignore_ascii_case(replica))
        {
            l.needs_reseed = true;
            l.reset = true;
            n += 1;
        }
        drop(t);
        if n == 0 {
            return Err(ReplicationError::Invalid(format!(
                "\"{replica}\" is not a secondary replica of availability group \"{group}\" on this primary"
            )));
        }
        Ok(n)
    }

    /// `ALTER AVAILABILITY GROUP name FAILOVER` (`force`: `FORCE_FAILOVER_ALLOW_DATA_LOSS`),
    /// run on the secondary that is to become primary.
    pub fn failover(&self, group: &str, force: bool) -> Result<Vec<FailoverRow>> {
        failover::failover(&self.inner, group, force)
    }

    /// Stops links and the endpoint and closes every replication
    /// connection (commits no longer wait for anyone).
    pub fn shutdown(&self) {
        if let Some(h) = &self.inner.ha {
            ha::shutdown(&self.inner, h);
        }
        if self.inner.closed.swap(true, SeqCst) {
            return;
        }
        let groups = self.groups();
        for g in groups {
            primary::stop_group(&self.inner, &g.def.name, false);
        }
        for (_, s) in self.inner.sockets.lock().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        if let Some(rt) = self.inner.rt.lock().take() {
            rt.shutdown_background();
        }
    }
}

/// A registered live socket; unregisters when dropped.
pub(crate) struct SocketGuard<'a> {
    inner: &'a Inner,
    id: u64,
}

impl Drop for SocketGuard<'_> {
    fn drop(&mut self) {
        self.inner.sockets.lock().retain(|(i, _)| *i != self.id);
    }
}

impl Inner {
    /// Logs and counts a peer that failed authentication.
    pub(crate) fn auth_failed(&self, peer: &str, reason: &str) {
        tracing::warn!(peer = %peer, reason = %reason, "replication peer refused: authentication failed");
        self.auth_failures.fetch_add(1, SeqCst);
        *self.last_auth_failure.lock() = Some(format!("{peer}: {reason}"));
    }

    /// Registers a live socket so that shutdown can close it; `None` when
    /// already shutting down.
    pub(crate) fn register(&self, s: &std::net::TcpStream) -> Option<SocketGuard<'_>> {
        let c = s.try_clone().ok()?;
        let mut v = self.sockets.lock();
        if self.closed.load(SeqCst) {
            return None;
        }
        let id = self.next_socket.fetch_add(1, SeqCst);
        v.push((id, c));
        Some(SocketGuard { inner: self, id })
    }

    /// Spawns on the replication runtime (nothing once shut down).
    pub(crate) fn spawn<F>(&self, f: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        if let Some(rt) = self.rt.lock().as_ref() {
            rt.spawn(f);
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.closed.store(true, SeqCst);
        if let Some(rt) = self.rt.get_mut().take() {
            rt.shutdown_background();
        }
    }
}
