//! Server configuration: a TOML file (`walden.toml`) whose settings command-line
//! flags override.
//!
//! ```toml
//! data_dir = "/var/lib/walden"
//! listen = "127.0.0.1:5433"
//! metrics_listen = "127.0.0.1:9187"   # optional
//! max_connections = 100
//! # auth: see [[auth.rule]] below (default: trust on loopback, SCRAM elsewhere)
//! statement_memory_limit_mb = 1024     # rows one statement may hold (0: none)
//! transaction_memory_limit_mb = 2048   # changes (and DDL builds) one transaction may hold (0: none)
//!
//! [users]                              # superusers (more: CREATE ROLE)
//! alice = "secret"
//!
//! [tls]                                # optional
//! cert = "server.crt"
//! key = "server.key"
//! ca = "clients-ca.crt"                # optional: verify client certificates
//!
//! [[auth.rule]]                        # first match wins (pg_hba.conf); see hba.rs
//! type = "hostssl"                     # host | hostssl | hostnossl
//! databases = "all"
//! roles = "all"
//! address = "10.0.0.0/8"
//! method = "scram-sha-256"             # trust | scram-sha-256 | cert | reject
//!
//! [log]
//! log_block_size = 61440
//! log_buffer_size = 7340032
//! max_flush_delay_ms = 5
//! segment_size = 67108864
//! sync_mode = "fdatasync"              # or "dsync"
//!
//! [checkpoint]
//! interval_s = 60                      # 0: only by log volume
//! log_bytes = 268435456
//!
//! [storage]
//! read_through = true                  # false: every row kept in memory
//! cache_size_mb = 128                  # the base store's page cache
//! verify_on_open = false               # true: check every page at open (slow)
//! background_check = true              # read every row back after each open
//!
//! [replication]                        # optional: availability groups
//! name = "a"                           # this replica's name in REPLICA ON '...'
//! endpoint_listen = "127.0.0.1:5022"   # where primaries connect (secondaries)
//! max_retained_log_mb = 1024           # log kept for a lagging secondary
//! max_send_queue_mb = 64               # unsent log held in memory per link
//! secret_file = "replication.secret"   # shared by every replica (or secret = "...")
//! # auth = "none"                      # no secret: accepted only on loopback
//! # tls_cert = "repl.crt"              # optional TLS, peers verified against tls_ca
//! # tls_key = "repl.key"
//! # tls_ca = "ca.crt"
//!
//! [ha]                                 # optional: automatic failover through etcd
//! etcd = "etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379"
//! cluster = "prod"                     # nodes of one cluster share /walden/prod/ in etcd
//! ttl_s = 5                            # a dead primary is replaced after about this long
//! # etcd = "https://10.0.0.1:2379,..."  # TLS towards etcd: its CA, and a client certificate
//! # tls_ca = "etcd-ca.crt"             # when etcd runs with --client-cert-auth
//! # tls_cert = "etcd-client.crt"
//! # tls_key = "etcd-client.key"
//! # user = "walden"                    # etcd authentication (or --ha-user)
//! # password_file = "etcd.password"    # (or the WALDEN_ETCD_PASSWORD environment variable)
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use walden_engine::{InstanceConfig, SyncMode};

pub use crate::hba::{AuthFile, AuthMethod, Rules};

/// `[tls]`: PEM certificate chain and private key, and optionally the CA
/// that client certificates are verified against.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Clients may present a certificate signed by this CA (PostgreSQL's
    /// `ssl_ca_file`); `cert` rules require one.
    pub ca: Option<PathBuf>,
}

/// `[log]`: log manager settings (each database's log).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    pub log_block_size: Option<usize>,
    pub log_buffer_size: Option<usize>,
    pub max_flush_delay_ms: Option<u64>,
    pub segment_size: Option<u64>,
    pub sync_mode: Option<String>,
    pub max_write: Option<usize>,
    pub preallocate_spare: Option<bool>,
}

/// `[checkpoint]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSection {
    /// Checkpoint at least this often (seconds) when the log has grown; 0 disables.
    pub interval_s: Option<u64>,
    /// Checkpoint once this much log was written since the last one.
    pub log_bytes: Option<u64>,
    /// Run the background checkpointer (default true).
    pub background: Option<bool>,
}

/// `[storage]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSection {
    /// Read rows from the base store and let a checkpoint's rows leave
    /// memory (default true; false: every row loaded at open and kept).
    pub read_through: Option<bool>,
    /// The base store's page cache in MB (default 128).
    pub cache_size_mb: Option<u64>,
    /// Verify every page of the data file at open (default false: restart
    /// time would grow with the data file).
    pub verify_on_open: Option<bool>,
    /// Read every stored row back in the background after each open
    /// (default true).
    pub background_check: Option<bool>,
}

/// `[replication]`: this instance's part in availability groups.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicationSection {
    /// This replica's name (`REPLICA ON 'name'`).
    pub name: Option<String>,
    /// Address of the replication endpoint that primaries connect to.
    pub endpoint_listen: Option<String>,
    /// Log kept on a primary for a secondary that is behind, in MiB.
    pub max_retained_log_mb: Option<u64>,
    /// Unsent log a link to one secondary may hold in memory, in MiB.
    pub max_send_queue_mb: Option<u64>,
    /// `"secret"` (with `secret` or `secret_file`) or `"none"`.
    pub auth: Option<String>,
    /// The secret every replica of the groups shares (16 bytes or more).
    pub secret: Option<String>,
    /// A file holding it (trailing newline ignored).
    pub secret_file: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_ca: Option<PathBuf>,
}

impl ReplicationSection {
    /// How this instance authenticates replication peers, checked against
    /// where its endpoint listens: no secret is an explicit choice, and
    /// only for a loopback endpoint (or one under TLS).
    pub fn peer_auth(&self) -> Result<walden_replication::PeerAuth, String> {
        use walden_replication::{PeerAuth, Secret};
        let secret = match (&self.secret, &self.secret_file) {
            (Some(_), Some(_)) => {
                return Err("[replication] has both secret and secret_file; keep one".into())
            }
            (Some(s), None) => Some(s.as_bytes().to_vec()),
            (None, Some(f)) => {
                let mut b = std::fs::read(f)
                    .map_err(|e| format!("[replication] secret_file {}: {e}", f.display()))?;
                while b.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
                    b.pop();
                }
                Some(b)
            }
            (None, None) => None,
        };
        let tls = self.tls_files()?.is_some();
        let auth = match (self.auth.as_deref(), secret) {
            (Some("none"), Some(_)) => {
                return Err(
                    "[replication] auth = \"none\" contradicts the configured secret".into(),
                )
            }
            (Some("secret") | None, Some(b)) => {
                PeerAuth::Secret(Secret::new(b).map_err(|e| format!("[replication] {e}"))?)
            }
            (Some("secret"), None) => {
                return Err("[replication] auth = \"secret\" needs secret or secret_file".into())
            }
            (Some("none") | None, None) => PeerAuth::None,
            (Some(other), _) => {
                return Err(format!(
                    "[replication] auth = \"{other}\" is not supported (use \"secret\" or \"none\")"
                ))
            }
        };
        if auth == PeerAuth::None && !tls {
            if let Some(e) = &self.endpoint_listen {
                if !walden_replication::config::is_loopback(e) {
                    return Err(format!(
                        "[replication] endpoint_listen {e} is not a loopback address: set secret or secret_file (or TLS); replication without authentication is accepted only on loopback"
                    ));
                }
            }
        }
        Ok(auth)
    }

    /// The TLS files, all three or none.
    pub fn tls_files(&self) -> Result<Option<walden_replication::TlsFiles>, String> {
        match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (None, None, None) => Ok(None),
            (Some(c), Some(k), Some(a)) => Ok(Some(walden_replication::TlsFiles {
                cert: c.clone(),
                key: k.clone(),
                ca: a.clone(),
            })),
            _ => Err("[replication] TLS needs tls_cert, tls_key and tls_ca together".into()),
        }
    }
}

/// `[ha]`: automatic failover through etcd (`--ha`, `--ha-cluster`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaSection {
    /// `etcd://host:2379[,host:2379...]`.
    pub etcd: Option<String>,
    pub cluster: Option<String>,
    /// The leader lease's TTL in seconds (default 5).
    pub ttl_s: Option<u64>,
    /// PEM files for `https://` endpoints: etcd's CA, and this node's
    /// client certificate and key.
    pub tls_ca: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// An etcd user (etcd's authentication enabled) and a file holding its
    /// password; without the file, `WALDEN_ETCD_PASSWORD`. Never the
    /// password itself in this file or on the command line.
    pub user: Option<String>,
    pub password_file: Option<PathBuf>,
}

/// The environment variable holding the etcd user's password when `[ha]
/// password_file` is not set.
pub const ETCD_PASSWORD_ENV: &str = "WALDEN_ETCD_PASSWORD";

impl HaSection {
    /// The replication layer's settings (`None`: HA off).
    pub fn ha_config(&self) -> Result<Option<walden_replication::ha::HaConfig>, String> {
        let Some(spec) = &self.etcd else {
            if self.cluster.is_some() {
                return Err("[ha] cluster needs etcd = \"etcd://host:2379\" (or --ha)".into());
            }
            return Ok(None);
        };
        let eps = walden_replication::ha::parse_endpoints(spec).map_err(|e| e.to_string())?;
        let cluster = self
            .cluster
            .clone()
            .ok_or("--ha needs a cluster name (--ha-cluster NAME or [ha] cluster)")?;
        let mut c = walden_replication::ha::HaConfig::new(eps, cluster);
        if let Some(t) = self.ttl_s {
            c.ttl = Duration::from_secs(t);
        }
        c.security = self.etcd_security(spec)?;
        c.validate()?;
        Ok(Some(c))
    }
}

impl HaSection {
    /// TLS files and credentials for etcd, loaded and checked.
    pub fn etcd_security(
        &self,
        spec: &str,
    ) -> Result<walden_replication::ha::EtcdSecurity, String> {
        use walden_replication::ha::{endpoints_use_tls, EtcdSecurity, EtcdTlsFiles, EtcdUser};
        let tls = endpoints_use_tls(spec).map_err(|e| e.to_string())?;
        let files = EtcdTlsFiles {
            ca: self.tls_ca.clone(),
            cert: self.tls_cert.clone(),
            key: self.tls_key.clone(),
        };
        let user = match (&self.user, &self.password_file) {
            (None, Some(_)) => return Err("[ha] password_file needs user".into()),
            (None, None) => None,
            (Some(name), file) => {
                let password = match file {
                    Some(f) => {
                        let mut p = std::fs::read_to_string(f)
                            .map_err(|e| format!("[ha] password_file {}: {e}", f.display()))?;
                        while p.ends_with(['\n', '\r']) {
                            p.pop();
                        }
                        p
                    }
                    None => std::env::var(ETCD_PASSWORD_ENV).map_err(|_| {
                        format!(
                            "[ha] user \"{name}\" needs password_file or the {ETCD_PASSWORD_ENV} environment variable"
                        )
                    })?,
                };
                Some(EtcdUser {
                    name: name.clone(),
                    password,
                })
            }
        };
        EtcdSecurity::load(tls, &files, user).map_err(|e| format!("[ha] {e}"))
    }
}

/// The configuration file as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub data_dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub metrics_listen: Option<String>,
    pub max_connections: Option<usize>,
    /// `auth = "trust" | "scram"` (one rule for every connection) or
    /// `[[auth.rule]]` tables (absent: trust on loopback, SCRAM elsewhere).
    pub auth: Option<AuthFile>,
    #[serde(default)]
    pub users: BTreeMap<String, String>,
    pub tls: Option<TlsFiles>,
    /// Row lock wait limit in ms (absent or 0: wait forever; deadlocks are detected).
    pub lock_timeout_ms: Option<u64>,
    /// Where BACKUP ... TO DISK writes (absent: BACKUP is refused). Outside
    /// the data directory.
    pub backup_dir: Option<PathBuf>,
    /// The longest a client may take from connecting to being authenticated
    /// (PostgreSQL's authentication_timeout; default 60 s).
    pub authentication_timeout_ms: Option<u64>,
    /// Connections still in their handshake beyond which new ones are
    /// closed at once (default 1,000).
    pub max_pending_handshakes: Option<usize>,
    /// How long a failed password costs the client before its error (default 1 s).
    pub auth_failure_delay_ms: Option<u64>,
    /// Bytes of rows one statement may materialize, in MB (default 1024;
    /// 0: no limit); past it the statement fails with 53200.
    pub statement_memory_limit_mb: Option<u64>,
    /// Memory one transaction's changes may hold before commit, in MB
    /// (default 2048; 0: no limit); past it the statement fails with 53200.
    pub transaction_memory_limit_mb: Option<u64>,
    /// Session defaults, as PostgreSQL's settings of the same names (ms, 0 = off).
    pub statement_timeout_ms: Option<u64>,
    pub idle_in_transaction_session_timeout_ms: Option<u64>,
    pub idle_session_timeout_ms: Option<u64>,
    #[serde(default)]
    pub log: LogSection,
    #[serde(default)]
    pub checkpoint: CheckpointSection,
    #[serde(default)]
    pub storage: StorageSection,
    #[serde(default)]
    pub replication: ReplicationSection,
    #[serde(default)]
    pub ha: HaSection,
}

/// Resolved server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    pub listen: String,
    pub metrics_listen: Option<String>,
    pub max_connections: usize,
    /// Who may connect, and how they authenticate.
    pub auth: Rules,
    /// The file the settings came from, re-read for the `[auth]` rules on
    /// SIGHUP and `pg_reload_conf()`.
    pub config_file: Option<PathBuf>,
    pub users: BTreeMap<String, String>,
    pub tls: Option<TlsFiles>,
    pub lock_timeout_ms: Option<u64>,
    pub backup_dir: Option<PathBuf>,
    pub authentication_timeout: Duration,
    pub max_pending_handshakes: usize,
    pub auth_failure_delay: Duration,
    /// `statement_memory_limit_mb` in bytes.
    pub statement_memory_limit: u64,
    /// `transaction_memory_limit_mb` in bytes.
    pub transaction_memory_limit: u64,
    /// Session defaults (`None`: off).
    pub timeouts: walden_sql::SessionTimeouts,
    pub log: LogSection,
    pub checkpoint: CheckpointSection,
    pub storage: StorageSection,
    pub replication: ReplicationSection,
    pub ha: HaSection,
    /// How long shutdown waits for running statements before closing the instance.
    pub shutdown_timeout: Duration,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:5433";
pub const DEFAULT_MAX_CONNECTIONS: usize = 100;

impl ServerConfig {
    /// Defaults: 127.0.0.1:5433, trust on loopback and SCRAM elsewhere, 100
    /// connections.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        ServerConfig {
            data_dir: data_dir.into(),
            listen: DEFAULT_LISTEN.into(),
            metrics_listen: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            auth: Rules::defaults(),
            config_file: None,
            users: BTreeMap::new(),
            tls: None,
            lock_timeout_ms: None,
            backup_dir: None,
            authentication_timeout: Duration::from_secs(60),
            max_pending_handshakes: 1000,
            auth_failure_delay: Duration::from_secs(1),
            statement_memory_limit: 1 << 30,
            transaction_memory_limit: walden_engine::DEFAULT_TRANSACTION_BYTES,
            timeouts: walden_sql::SessionTimeouts::default(),
            log: LogSection::default(),
            checkpoint: CheckpointSection::default(),
            storage: StorageSection::default(),
            replication: ReplicationSection::default(),
            ha: HaSection::default(),
            shutdown_timeout: Duration::from_secs(10),
        }
    }

    /// Reads a TOML configuration file. Relative paths in it are taken
    /// relative to the file's directory.
    pub fn from_file(path: &Path) -> Result<ConfigFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut f: ConfigFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let rel = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if let Some(d) = f.data_dir.as_mut() {
            rel(d);
        }
        if let Some(d) = f.backup_dir.as_mut() {
            rel(d);
        }
        if let Some(t) = f.tls.as_mut() {
            rel(&mut t.cert);
            rel(&mut t.key);
            if let Some(ca) = t.ca.as_mut() {
                rel(ca);
            }
        }
        let h = &mut f.ha;
        for p in [
            &mut h.tls_ca,
            &mut h.tls_cert,
            &mut h.tls_key,
            &mut h.password_file,
        ]
        .into_iter()
        .flatten()
        {
            rel(p);
        }
        let r = &mut f.replication;
        for p in [
            &mut r.secret_file,
            &mut r.tls_cert,
            &mut r.tls_key,
            &mut r.tls_ca,
        ]
        .into_iter()
        .flatten()
        {
            rel(p);
        }
        Ok(f)
    }

    /// Settings from a file (if any), then `data_dir` if given; the data
    /// directory must come from one of them.
    pub fn from_parts(file: Option<ConfigFile>, data_dir: Option<PathBuf>) -> Result<Self, String> {
        let f = file.unwrap_or_default();
        let dir = data_dir
            .or(f.data_dir)
            .ok_or("no data directory: pass --data-dir or set data_dir in the config file")?;
        let mut c = ServerConfig::new(dir);
        if let Some(l) = f.listen {
            c.listen = l;
        }
        c.metrics_listen = f.metrics_listen;
        if let Some(m) = f.max_connections {
            c.max_connections = m;
        }
        c.auth = Rules::from_file(f.auth.as_ref())?;
        if matches!(&f.auth, Some(AuthFile::Shorthand(s)) if s != "trust") && f.users.is_empty() {
            return Err("auth = \"scram\" needs a [users] table".into());
        }
        c.users = f.users;
        c.tls = f.tls;
        c.lock_timeout_ms = f.lock_timeout_ms;
        c.backup_dir = f.backup_dir;
        if let Some(ms) = f.authentication_timeout_ms {
            c.authentication_timeout = Duration::from_millis(ms);
        }
        if let Some(n) = f.max_pending_handshakes {
            c.max_pending_handshakes = n;
        }
        if let Some(mb) = f.statement_memory_limit_mb {
            c.statement_memory_limit = mb << 20;
        }
        if let Some(mb) = f.transaction_memory_limit_mb {
            c.transaction_memory_limit = mb << 20;
        }
        if let Some(ms) = f.auth_failure_delay_ms {
            c.auth_failure_delay = Duration::from_millis(ms);
        }
        let ms = |v: Option<u64>| v.filter(|&m| m > 0).map(Duration::from_millis);
        c.timeouts = walden_sql::SessionTimeouts {
            statement: ms(f.statement_timeout_ms),
            idle_in_transaction: ms(f.idle_in_transaction_session_timeout_ms),
            idle_session: ms(f.idle_session_timeout_ms),
        };
        c.log = f.log;
        c.checkpoint = f.checkpoint;
        c.storage = f.storage;
        c.replication = f.replication;
        c.ha = f.ha;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        if let Some(b) = &self.backup_dir {
            if !b.is_absolute() || b.starts_with(&self.data_dir) {
                return Err(format!(
                    "backup_dir {} must be an absolute path outside the data directory",
                    b.display()
                ));
            }
        }
        if self.max_pending_handshakes == 0 {
            return Err("max_pending_handshakes must be at least 1".into());
        }
        if self.authentication_timeout.is_zero() {
            return Err("authentication_timeout_ms must be above 0".into());
        }
        let tls = self.tls.as_ref();
        self.auth.check(
            &self.listen,
            tls.is_some(),
            tls.is_some_and(|t| t.ca.is_some()),
        )?;
        if let Some(m) = &self.log.sync_mode {
            m.parse::<SyncMode>()?;
        }
        self.instance_config().log.validate()?;
        if self.replication.endpoint_listen.is_some() && self.replication.name.is_none() {
            return Err("[replication] endpoint_listen needs a replica name (name = \"...\" or --replica-name)".into());
        }
        self.replication.peer_auth()?;
        if self.ha.ha_config()?.is_some() && self.replication.name.is_none() {
            return Err("--ha needs a replica name (--replica-name or [replication] name)".into());
        }
        Ok(())
    }

    /// The `[auth]` rules of the configuration file as it is now, checked
    /// against this server (the reload of SIGHUP and `pg_reload_conf()`);
    /// without a file, the rules in force.
    pub fn reread_rules(&self) -> Result<Rules, String> {
        let Some(path) = &self.config_file else {
            return Ok(self.auth.clone());
        };
        let f = ServerConfig::from_file(path)?;
        let rules = Rules::from_file(f.auth.as_ref())?;
        let tls = self.tls.as_ref();
        rules.check(
            &self.listen,
            tls.is_some(),
            tls.is_some_and(|t| t.ca.is_some()),
        )?;
        Ok(rules)
    }

    /// The engine settings these map to.
    pub fn instance_config(&self) -> InstanceConfig {
        let mut ic = InstanceConfig::new(&self.data_dir);
        let l = &self.log;
        if let Some(v) = l.log_block_size {
            ic.log.block_size = v;
            // A write carries at least one block.
            ic.log.max_write = ic.log.max_write.max(v);
        }
        if let Some(v) = l.log_buffer_size {
            ic.log.buffer_size = v;
        }
        if let Some(v) = l.max_flush_delay_ms {
            ic.log.max_flush_delay = Duration::from_millis(v);
        }
        if let Some(v) = l.segment_size {
            ic.log.segment_size = v;
        }
        if let Some(v) = l.max_write {
            ic.log.max_write = v;
        }
        if let Some(v) = l.preallocate_spare {
            ic.log.preallocate_spare = v;
        }
        if let Some(m) = &l.sync_mode {
            // validate() reports a bad value; keep the default here.
            if let Ok(m) = m.parse::<SyncMode>() {
                ic.log.sync_mode = m;
            }
        }
        let cp = &self.checkpoint;
        if let Some(s) = cp.interval_s {
            ic.checkpoint_interval = (s > 0).then(|| Duration::from_secs(s));
        }
        if let Some(b) = cp.log_bytes {
            ic.checkpoint_log_bytes = b;
        }
        if let Some(b) = cp.background {
            ic.background_checkpoints = b;
        }
        if let Some(r) = self.storage.read_through {
            ic.storage.read_through = r;
        }
        if let Some(mb) = self.storage.cache_size_mb {
            ic.storage.cache_bytes = (mb.max(1) as usize) << 20;
        }
        if let Some(v) = self.storage.verify_on_open {
            ic.storage.verify_on_open = v;
        }
        if let Some(b) = self.storage.background_check {
            ic.storage.background_check = b;
        }
        ic.limits.max_transaction_bytes = self.transaction_memory_limit;
        ic.lock_timeout = self
            .lock_timeout_ms
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis);
        ic
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_file() {
        let f: ConfigFile = toml::from_str(
            r#"
            data_dir = "/tmp/w"
            listen = "127.0.0.1:6000"
            metrics_listen = "127.0.0.1:9187"
            max_connections = 7
            auth = "scram"
            lock_timeout_ms = 500
            [users]
            alice = "pw"
            [tls]
            cert = "c.pem"
            key = "k.pem"
            [log]
            log_block_size = 8192
            log_buffer_size = 1048576
            max_flush_delay_ms = 2
            segment_size = 16777216
            sync_mode = "dsync"
            [checkpoint]
            interval_s = 0
            log_bytes = 1000000
            [storage]
            read_through = false
            cache_size_mb = 64
            verify_on_open = true
            background_check = false
            "#,
        )
        .unwrap();
        let c = ServerConfig::from_parts(Some(f), None).unwrap();
        assert_eq!(c.max_connections, 7);
        assert_eq!(c.auth, Rules::everyone(AuthMethod::ScramSha256));
        let ic = c.instance_config();
        assert_eq!(ic.log.block_size, 8192);
        assert_eq!(ic.log.buffer_size, 1048576);
        assert_eq!(ic.log.max_flush_delay, Duration::from_millis(2));
        assert_eq!(ic.log.sync_mode, SyncMode::Dsync);
        assert_eq!(ic.checkpoint_interval, None);
        assert_eq!(ic.checkpoint_log_bytes, 1000000);
        assert!(!ic.storage.read_through);
        assert!(ic.storage.verify_on_open);
        assert!(!ic.storage.background_check);
        assert_eq!(ic.storage.cache_bytes, 64 << 20);
        assert_eq!(ic.lock_timeout, Some(Duration::from_millis(500)));
    }

    #[test]
    fn flags_override_and_errors() {
        let f: ConfigFile = toml::from_str("data_dir = \"/a\"").unwrap();
        let c = ServerConfig::from_parts(Some(f), Some("/b".into())).unwrap();
        assert_eq!(c.data_dir, PathBuf::from("/b"));
        assert!(ServerConfig::from_parts(None, None).is_err());
        assert!(toml::from_str::<ConfigFile>("bogus = 1").is_err());
        let f: ConfigFile = toml::from_str("auth = \"scram\"").unwrap();
        assert!(ServerConfig::from_parts(Some(f), Some("/x".into())).is_err());
        let f: ConfigFile = toml::from_str("[log]\nlog_block_size = 1000").unwrap();
        assert!(ServerConfig::from_parts(Some(f), Some("/x".into())).is_err());
    }

    #[test]
    fn replication_without_a_secret_only_on_loopback() {
        let parse = |t: &str| {
            let f: ConfigFile = toml::from_str(t).unwrap();
            ServerConfig::from_parts(Some(f), Some("/x".into()))
        };
        let open = parse("[replication]\nname = \"a\"\nendpoint_listen = \"0.0.0.0:5022\"");
        assert!(open.unwrap_err().contains("not a loopback"));
        let none = parse(
            "[replication]\nname = \"a\"\nendpoint_listen = \"0.0.0.0:5022\"\nauth = \"none\"",
        );
        assert!(none.is_err());
        let local = parse("[replication]\nname = \"a\"\nendpoint_listen = \"127.0.0.1:5022\"");
        assert_eq!(
            local.unwrap().replication.peer_auth().unwrap(),
            walden_replication::PeerAuth::None
        );
        let with = parse(
            "[replication]\nname = \"a\"\nendpoint_listen = \"0.0.0.0:5022\"\nsecret = \"0123456789abcdefXYZ\"",
        );
        assert!(matches!(
            with.unwrap().replication.peer_auth().unwrap(),
            walden_replication::PeerAuth::Secret(_)
        ));
        let short = parse("[replication]\nname = \"a\"\nsecret = \"short\"");
        assert!(short.unwrap_err().contains("at least 16"));
        let half_tls = parse("[replication]\nname = \"a\"\ntls_cert = \"c.pem\"");
        assert!(half_tls.is_err());
    }

    #[test]
    fn ha_section() {
        let parse = |t: &str| {
            let f: ConfigFile = toml::from_str(t).unwrap();
            ServerConfig::from_parts(Some(f), Some("/x".into()))
        };
        let c = parse(
            "[replication]\nname = \"a\"\n[ha]\netcd = \"etcd://h1:2379,h2:2379\"\ncluster = \"prod\"\nttl_s = 7",
        )
        .unwrap();
        let h = c.ha.ha_config().unwrap().unwrap();
        assert_eq!(h.endpoints, vec!["h1:2379", "h2:2379"]);
        assert_eq!(h.cluster, "prod");
        assert_eq!(h.ttl, Duration::from_secs(7));
        assert!(parse("[ha]\netcd = \"etcd://h:1\"\ncluster = \"p\"")
            .unwrap_err()
            .contains("replica name"));
        assert!(parse("[replication]\nname = \"a\"\n[ha]\netcd = \"etcd://h:1\"").is_err());
        assert!(parse(
            "[replication]\nname = \"a\"\n[ha]\netcd = \"etcd://h:1\"\ncluster = \"a/b\""
        )
        .is_err());
        assert!(parse(
            "[replication]\nname = \"a\"\n[ha]\netcd = \"etcd://h:1\"\ncluster = \"p\"\nttl_s = 1"
        )
        .is_err());
    }

    #[test]
    fn ha_section_security() {
        let ha = |extra: &str| -> Result<_, String> {
            let f: ConfigFile = toml::from_str(&format!(
                "[replication]\nname = \"a\"\n[ha]\ncluster = \"p\"\n{extra}"
            ))
            .unwrap();
            f.ha.ha_config()
        };
        // https:// needs the CA; TLS files with plain endpoints, a mix of
        // schemes, half a client certificate, a password file without a
        // user, and a user without a password are refused.
        let e = ha("etcd = \"https://h:1\"").unwrap_err();
        assert!(e.contains("tls_ca"), "{e}");
        let e = ha("etcd = \"etcd://h:1\"\ntls_ca = \"/ca.crt\"").unwrap_err();
        assert!(e.contains("not https"), "{e}");
        let e = ha("etcd = \"https://h:1,http://g:1\"").unwrap_err();
        assert!(e.contains("mix"), "{e}");
        let e = ha("etcd = \"https://h:1\"\ntls_ca = \"/nonexistent/ca.crt\"").unwrap_err();
        assert!(e.contains("/nonexistent/ca.crt"), "{e}");
        let e = ha("etcd = \"etcd://h:1\"\npassword_file = \"/p\"").unwrap_err();
        assert!(e.contains("needs user"), "{e}");
        let e = ha("etcd = \"etcd://h:1\"\nuser = \"w\"\npassword_file = \"/nonexistent/p\"")
            .unwrap_err();
        assert!(e.contains("/nonexistent/p"), "{e}");
        // A user whose password is in a file (its trailing newline dropped).
        let dir = tempfile::tempdir().unwrap();
        let pw = dir.path().join("pw");
        std::fs::write(&pw, "s3cret\n").unwrap();
        let h = ha(&format!(
            "etcd = \"etcd://h:1,g:2\"\nuser = \"w\"\npassword_file = \"{}\"",
            pw.display()
        ))
        .unwrap()
        .unwrap();
        let u = h.security.user.unwrap();
        assert_eq!((u.name.as_str(), u.password.as_str()), ("w", "s3cret"));
        assert!(h.security.tls.is_none());
        assert_eq!(h.endpoints, vec!["h:1", "g:2"]);
    }
}
