//! Availability-group definitions and the state each replica keeps of them
//! (`hadr.json` in the data directory).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use walden_log::Lsn;

/// How a secondary takes part in commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AvailabilityMode {
    /// Durable commits wait until it has hardened their log too.
    SynchronousCommit,
    /// It receives the log; nobody waits for it.
    AsynchronousCommit,
}

impl AvailabilityMode {
    pub fn desc(self) -> &'static str {
        match self {
            AvailabilityMode::SynchronousCommit => "SYNCHRONOUS_COMMIT",
            AvailabilityMode::AsynchronousCommit => "ASYNCHRONOUS_COMMIT",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_uppercase().as_str() {
            "SYNCHRONOUS_COMMIT" | "SYNCHRONOUS" | "SYNC" => Some(Self::SynchronousCommit),
            "ASYNCHRONOUS_COMMIT" | "ASYNCHRONOUS" | "ASYNC" => Some(Self::AsynchronousCommit),
            _ => None,
        }
    }
}

/// One replica of a group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaDef {
    pub name: String,
    /// `tcp://host:port` of its replication endpoint.
    pub endpoint_url: String,
    pub mode: AvailabilityMode,
    /// Bounded-lag asynchronous secondary (`MAX_LAG_BYTES`): a commit at
    /// LSN `L` is acknowledged only once this replica has hardened
    /// `L - max_lag_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lag_bytes: Option<u64>,
    /// `MAX_LAG_MS`: no commit acknowledged longer ago than this may still
    /// be unhardened on this replica when another commit is acknowledged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lag_ms: Option<u64>,
}

/// The lag bound of an asynchronous secondary (either part may be unset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LagBound {
    pub bytes: Option<u64>,
    pub ms: Option<u64>,
}

impl ReplicaDef {
    /// An unbounded replica.
    pub fn new(
        name: impl Into<String>,
        endpoint_url: impl Into<String>,
        mode: AvailabilityMode,
    ) -> Self {
        ReplicaDef {
            name: name.into(),
            endpoint_url: endpoint_url.into(),
            mode,
            max_lag_bytes: None,
            max_lag_ms: None,
        }
    }

    /// Its lag bound: only an asynchronous replica with `MAX_LAG_BYTES` or
    /// `MAX_LAG_MS` has one.
    pub fn lag_bound(&self) -> Option<LagBound> {
        (self.mode == AvailabilityMode::AsynchronousCommit
            && (self.max_lag_bytes.is_some() || self.max_lag_ms.is_some()))
        .then_some(LagBound {
            bytes: self.max_lag_bytes,
            ms: self.max_lag_ms,
        })
    }

    /// `host:port` of the endpoint URL.
    pub fn address(&self) -> Result<String, String> {
        let rest = self.endpoint_url.strip_prefix("tcp://").ok_or_else(|| {
            format!(
                "ENDPOINT_URL '{}' must start with tcp://",
                self.endpoint_url
            )
        })?;
        if !rest.contains(':') {
            return Err(format!(
                "ENDPOINT_URL '{}' needs a port (tcp://host:port)",
                self.endpoint_url
            ));
        }
        Ok(rest.trim_end_matches('/').to_string())
    }
}

/// `CREATE AVAILABILITY GROUP`: what the group is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgDef {
    pub name: String,
    pub databases: Vec<String>,
    /// Every replica, the primary included.
    pub replicas: Vec<ReplicaDef>,
    /// A synchronous secondary silent this long is NOT SYNCHRONIZING.
    pub session_timeout_ms: u64,
    /// Durable commits fail unless this many synchronous secondaries are
    /// SYNCHRONIZED (0: commits go on without them).
    pub required_synchronized_secondaries_to_commit: u32,
}

impl AgDef {
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.session_timeout_ms)
    }
    pub fn replica(&self, name: &str) -> Option<&ReplicaDef> {
        self.replicas
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    }
    pub fn has_database(&self, db: &str) -> bool {
        self.databases.iter().any(|d| d.eq_ignore_ascii_case(db))
    }
}

/// Where each database's log stood when an epoch (a primary's term) began.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochStart {
    pub epoch: u64,
    pub primary: String,
    pub lsns: BTreeMap<String, Lsn>,
}

/// A group as a replica knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgState {
    pub def: AgDef,
    /// The primary replica's name.
    pub primary: String,
    /// Increases at every failover; a replica follows only the newest.
    pub epoch: u64,
    pub history: Vec<EpochStart>,
    /// Identity of each database's history (set when the group is created;
    /// a replica with another seed id must be seeded afresh).
    pub seeds: BTreeMap<String, u64>,
    /// This replica's own record: the epoch whose log each database holds
    /// (a replica that followed an older epoch may hold a tail the newer
    /// primary never had).
    #[serde(default)]
    pub followed: BTreeMap<String, u64>,
}

impl AgState {
    /// The LSN at which the first epoch after `epoch` began for `db`: a
    /// replica that followed `epoch` holds valid log only up to there.
    pub fn divergence_point(&self, db: &str, epoch: u64) -> Option<Lsn> {
        self.history
            .iter()
            .filter(|e| e.epoch > epoch)
            .min_by_key(|e| e.epoch)
            .and_then(|e| e.lsns.get(&db.to_ascii_lowercase()).copied())
    }
}

/// What `hadr.json` holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HadrFile {
    pub groups: Vec<AgState>,
}

impl HadrFile {
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("hadr.json")
    }

    pub fn load(data_dir: &Path) -> Result<HadrFile, String> {
        let p = Self::path(data_dir);
        match std::fs::read(&p) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", p.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HadrFile::default()),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    }

    /// Written atomically (temp file, fsync, rename, fsync of the directory).
    pub fn save(&self, data_dir: &Path) -> Result<(), String> {
        let p = Self::path(data_dir);
        let bytes = serde_json::to_vec_pretty(self).expect("hadr state serializes");
        walden_log::vfs::write_file_atomic(&walden_log::OsVfs, &p, &bytes)
            .map_err(|e| format!("{}: {e}", p.display()))
    }
}

/// This instance's replication settings (`[replication]` in walden.toml).
#[derive(Clone, Debug)]
pub struct ReplicationConfig {
    /// This replica's name in availability groups.
    pub name: String,
    /// Where the replication endpoint listens (`None`: no endpoint; the
    /// instance can still be a primary).
    pub endpoint_listen: Option<String>,
    /// Log a lagging secondary may hold back on the primary before it is
    /// dropped from retention and must be reseeded.
    pub max_retained_log_bytes: u64,
    /// Log written but not yet sent that a link to one secondary may hold
    /// in memory; past it the link drops and catches up from the log files.
    pub max_send_queue_bytes: u64,
    /// How often the primary sends a heartbeat.
    pub heartbeat: Duration,
    /// How replication peers prove who they are (in and out).
    pub auth: crate::auth::PeerAuth,
    /// TLS on every replication connection, with peers verified against a CA.
    pub tls: Option<crate::tls::TlsFiles>,
    /// Pieces a seed is sent in (at most `proto::MAX_SEED_CHUNK`).
    pub seed_chunk_bytes: usize,
    /// Tests: this many of the next seeds are cut off (the connection
    /// dropped) after `test_seed_cut_after` chunks.
    #[doc(hidden)]
    pub test_seed_cuts: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    #[doc(hidden)]
    pub test_seed_cut_after: usize,
    /// Tests: while set, a secondary reads nothing from its primaries (so
    /// hardens and acknowledges nothing: a stalled link).
    #[doc(hidden)]
    pub test_pause_receive: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Automatic failover through etcd (`--ha`, `[ha]`).
    pub ha: Option<crate::ha::HaConfig>,
}

impl ReplicationConfig {
    pub fn new(name: impl Into<String>) -> Self {
        ReplicationConfig {
            name: name.into(),
            endpoint_listen: None,
            max_retained_log_bytes: 1 << 30,
            max_send_queue_bytes: 64 << 20,
            heartbeat: Duration::from_millis(500),
            auth: crate::auth::PeerAuth::None,
            tls: None,
            seed_chunk_bytes: 1 << 20,
            test_seed_cuts: Default::default(),
            test_seed_cut_after: 0,
            test_pause_receive: Default::default(),
            ha: None,
        }
    }
}

/// Whether `host:port` (or a bare host) names only loopback addresses
/// (resolving names; an unresolvable name is not loopback).
pub fn is_loopback(addr: &str) -> bool {
    use std::net::ToSocketAddrs;
    let with_port = if addr
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        addr.to_string()
    } else {
        format!("{addr}:0")
    };
    match with_port.to_socket_addrs() {
        Ok(it) => {
            let v: Vec<_> = it.collect();
            !v.is_empty() && v.iter().all(|a| a.ip().is_loopback())
        }
        Err(_) => false,
    }
}
