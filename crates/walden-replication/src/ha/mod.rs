//! High availability without a person: each node registers in etcd under a
//! lease, a group's primary holds the group's leader key, a primary that
//! cannot renew its lease stops acknowledging and demotes itself before the
//! lease can expire, and when the key lapses the eligible secondary with
//! the most log takes it and promotes (docs/design.md, "Automatic failover
//! through etcd").
//!
//! Layout: [`etcd`] (the client), [`election`] (who may take the key), the
//! `agent` thread (lease, registration, election, sync set) and the fence
//! watchdog here.

mod agent;
pub mod election;
pub mod etcd;
mod etcd_access;

use crate::failover::FailoverRow;
use crate::{Inner, ReplicationError};
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use election::{LeaderKey, Member, MemberGroup, SwitchoverKey, SyncKey};
pub use etcd::{endpoints_use_tls, parse_endpoints, Etcd, EtcdError};
pub use etcd_access::{EtcdSecurity, EtcdTlsFiles, EtcdUser};

/// `--ha etcd://...` / `[ha]`.
#[derive(Clone, Debug)]
pub struct HaConfig {
    /// `host:port` of each etcd member.
    pub endpoints: Vec<String>,
    /// Nodes of one cluster share the prefix `/walden/<cluster>/`.
    pub cluster: String,
    /// The lease's TTL: a dead primary is replaced after about this long.
    pub ttl: Duration,
    /// Addresses this node advertises in its registration.
    pub sql_addr: Option<String>,
    pub api_addr: Option<String>,
    /// TLS and credentials towards etcd.
    pub security: EtcdSecurity,
}

impl HaConfig {
    pub fn new(endpoints: Vec<String>, cluster: impl Into<String>) -> HaConfig {
        HaConfig {
            endpoints,
            cluster: cluster.into(),
            ttl: Duration::from_secs(5),
            sql_addr: None,
            api_addr: None,
            security: EtcdSecurity::default(),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.cluster.is_empty()
            || !self
                .cluster
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return Err(format!(
                "HA cluster name \"{}\" must be letters, digits, '-', '_' or '.'",
                self.cluster
            ));
        }
        if self.ttl < Duration::from_secs(2) || self.ttl > Duration::from_secs(600) {
            return Err("HA ttl must be between 2 and 600 seconds".into());
        }
        if self.endpoints.is_empty() {
            return Err("HA needs at least one etcd endpoint".into());
        }
        Ok(())
    }
}

/// The keys of one cluster.
pub fn prefix(cluster: &str) -> String {
    format!("/walden/{cluster}/")
}

pub fn member_key(cluster: &str, name: &str) -> String {
    format!("{}members/{}", prefix(cluster), name.to_ascii_lowercase())
}

pub fn leader_key(cluster: &str, group: &str) -> String {
    format!(
        "{}groups/{}/leader",
        prefix(cluster),
        group.to_ascii_lowercase()
    )
}

/// `groups/<ag>/switchover`: a secondary asks the primary to hand it the
/// leader key (attached to the asker's lease).
pub fn switchover_key(cluster: &str, group: &str) -> String {
    format!(
        "{}groups/{}/switchover",
        prefix(cluster),
        group.to_ascii_lowercase()
    )
}

pub fn sync_key(cluster: &str, group: &str) -> String {
    format!(
        "{}groups/{}/sync",
        prefix(cluster),
        group.to_ascii_lowercase()
    )
}

/// Counted in `/metrics`.
#[derive(Debug, Default)]
pub struct HaCounters {
    /// This node took a group's leader key and became (or stayed) primary.
    pub promotions: AtomicU64,
    /// This node stopped being a group's primary (lease lost, key elsewhere).
    pub demotions: AtomicU64,
    /// The lease lapsed (not renewed in time, or etcd forgot it).
    pub lease_lost: AtomicU64,
    pub renewals: AtomicU64,
    pub renew_failures: AtomicU64,
    /// Sync sets written.
    pub sync_set_writes: AtomicU64,
    /// This node handed its leader key to a secondary that asked (FAILOVER).
    pub switchovers: AtomicU64,
    /// This node took a leader key by an operator's
    /// FORCE_FAILOVER_ALLOW_DATA_LOSS.
    pub forced_failovers: AtomicU64,
}

/// An operator's `ALTER AVAILABILITY GROUP ... FAILOVER` (or
/// `FORCE_FAILOVER_ALLOW_DATA_LOSS`) on this node, carried out by the
/// agent through the leader key.
pub(crate) struct Request {
    pub force: bool,
    /// The old primary's last known log end per database (for the report).
    pub known: BTreeMap<String, u64>,
    /// The agent gives up (and says so) after this.
    pub until: Instant,
    /// Set by the agent; the session waiting takes it.
    pub outcome: Option<Result<Vec<FailoverRow>, String>>,
}

/// The HA state shared by the agent, the fence watchdog and the commit hook.
pub(crate) struct HaShared {
    pub cfg: HaConfig,
    pub etcd: Etcd,
    /// Acknowledgements are allowed until this instant (`None`: no lease).
    pub fence: Mutex<Option<Instant>>,
    pub fence_cv: Condvar,
    /// Groups (lower case) whose leader key this node holds.
    pub leading: Mutex<BTreeSet<String>>,
    /// The node's lease in etcd (revoked at shutdown).
    pub lease: Mutex<Option<i64>>,
    /// Set by shutdown: the agent takes no lease or key any more.
    pub stopping: std::sync::atomic::AtomicBool,
    pub counters: HaCounters,
    /// Pokes the agent (a group created, shutdown).
    pub wake: Mutex<bool>,
    pub wake_cv: Condvar,
    /// The cluster as last read from etcd.
    pub view: Mutex<Option<ClusterView>>,
    pub last_error: Mutex<Option<String>>,
    /// Operators' failovers under way, by group (lower case).
    pub requests: Mutex<HashMap<String, Request>>,
    pub requests_cv: Condvar,
}

impl HaShared {
    pub fn new(cfg: HaConfig) -> HaShared {
        let timeout = (cfg.ttl / 5).clamp(Duration::from_millis(300), Duration::from_secs(2));
        HaShared {
            etcd: Etcd::secured(cfg.endpoints.clone(), timeout, cfg.security.clone()),
            cfg,
            fence: Mutex::new(None),
            fence_cv: Condvar::new(),
            leading: Mutex::new(BTreeSet::new()),
            lease: Mutex::new(None),
            stopping: Default::default(),
            counters: HaCounters::default(),
            wake: Mutex::new(false),
            wake_cv: Condvar::new(),
            view: Mutex::new(None),
            last_error: Mutex::new(None),
            requests: Mutex::new(HashMap::new()),
            requests_cv: Condvar::new(),
        }
    }

    /// Whether this node may acknowledge a commit of `group` now.
    pub fn may_acknowledge(&self, group: &str) -> bool {
        let live = self.fence.lock().is_some_and(|t| Instant::now() < t);
        live && self.leading.lock().contains(&group.to_ascii_lowercase())
    }

    pub fn is_leading(&self, group: &str) -> bool {
        self.leading.lock().contains(&group.to_ascii_lowercase())
    }

    pub fn poke(&self) {
        *self.wake.lock() = true;
        self.wake_cv.notify_all();
    }

    /// The operator's request on `group` the agent has still to carry out.
    pub(crate) fn pending(&self, group: &str) -> Option<(bool, BTreeMap<String, u64>, Instant)> {
        self.requests
            .lock()
            .get(group)
            .filter(|r| r.outcome.is_none())
            .map(|r| (r.force, r.known.clone(), r.until))
    }

    /// The agent is done with the request on `group`.
    pub(crate) fn finish(&self, group: &str, outcome: Result<Vec<FailoverRow>, String>) {
        if let Some(r) = self.requests.lock().get_mut(group) {
            if r.outcome.is_none() {
                r.outcome = Some(outcome);
            }
        }
        self.requests_cv.notify_all();
    }
}

/// `ALTER AVAILABILITY GROUP group FAILOVER` / `FORCE_FAILOVER_ALLOW_DATA_LOSS`
/// on this secondary in HA mode: the agent takes the leader key (a
/// switchover asks the primary to give it up first; a forced failover
/// takes it only when it has lapsed), and this waits for the outcome.
pub(crate) fn request_failover(
    ha: &HaShared,
    group: &str,
    force: bool,
    known: BTreeMap<String, u64>,
) -> crate::Result<Vec<FailoverRow>> {
    let key = group.to_ascii_lowercase();
    // Two TTLs: the primary's lease may need one to lapse (forced), and the
    // switchover one renewal period to be seen; promotion itself is quick.
    let until = Instant::now() + ha.cfg.ttl * 2 + Duration::from_secs(10);
    {
        let mut r = ha.requests.lock();
        if r.contains_key(&key) {
            return Err(ReplicationError::State(format!(
                "a failover of availability group \"{group}\" is already under way on this replica"
            )));
        }
        r.insert(
            key.clone(),
            Request {
                force,
                known,
                until,
                outcome: None,
            },
        );
    }
    ha.poke();
    let mut r = ha.requests.lock();
    loop {
        if let Some(out) = r.get_mut(&key).and_then(|x| x.outcome.take()) {
            r.remove(&key);
            return out.map_err(ReplicationError::State);
        }
        // The agent answers by `until`; this is the backstop for an agent
        // stuck in a request to an unreachable etcd.
        if Instant::now() >= until + Duration::from_secs(5) {
            r.remove(&key);
            return Err(ReplicationError::State(format!(
                "the failover of availability group \"{group}\" did not happen in time: etcd did not answer"
            )));
        }
        ha.requests_cv.wait_for(&mut r, Duration::from_millis(200));
    }
}

/// A group as etcd shows it.
#[derive(Clone, Debug, Default)]
pub struct GroupView {
    pub name: String,
    pub leader: Option<LeaderKey>,
    pub leader_lease: i64,
    pub sync: Option<SyncKey>,
    pub switchover: Option<SwitchoverKey>,
}

/// The cluster as etcd shows it.
#[derive(Clone, Debug, Default)]
pub struct ClusterView {
    pub cluster: String,
    pub members: Vec<Member>,
    pub groups: Vec<GroupView>,
}

/// Reads the whole cluster (one range request).
pub fn read_cluster(etcd: &Etcd, cluster: &str) -> Result<ClusterView, EtcdError> {
    let p = prefix(cluster);
    let kvs = etcd.get_prefix(&p)?;
    let mut v = ClusterView {
        cluster: cluster.to_string(),
        ..Default::default()
    };
    let group = |v: &mut ClusterView, name: &str| -> usize {
        match v.groups.iter().position(|g| g.name == name) {
            Some(i) => i,
            None => {
                v.groups.push(GroupView {
                    name: name.to_string(),
                    ..Default::default()
                });
                v.groups.len() - 1
            }
        }
    };
    for kv in kvs {
        let rest = &kv.key[p.len()..];
        if let Some(name) = rest.strip_prefix("members/") {
            match serde_json::from_slice::<Member>(&kv.value) {
                Ok(m) => v.members.push(m),
                Err(e) => tracing::warn!(member = %name, error = %e, "unreadable HA member key"),
            }
        } else if let Some(g) = rest.strip_prefix("groups/") {
            if let Some((gname, what)) = g.split_once('/') {
                let i = group(&mut v, gname);
                match what {
                    "leader" => {
                        v.groups[i].leader = serde_json::from_slice(&kv.value).ok();
                        v.groups[i].leader_lease = kv.lease;
                    }
                    "sync" => v.groups[i].sync = serde_json::from_slice(&kv.value).ok(),
                    "switchover" => v.groups[i].switchover = serde_json::from_slice(&kv.value).ok(),
                    _ => {}
                }
            }
        }
    }
    Ok(v)
}

/// `walden ha status`: the cluster as text.
pub fn format_status(v: &ClusterView) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "cluster {}", v.cluster);
    if v.groups.is_empty() {
        let _ = writeln!(s, "  no availability groups");
    }
    for g in &v.groups {
        let leader = g
            .leader
            .as_ref()
            .map_or("(none: election pending)".to_string(), |l| {
                format!("{} (epoch {})", l.name, l.epoch)
            });
        let sync = g.sync.as_ref().map_or("-".to_string(), |s| {
            if s.members.is_empty() {
                "(none)".to_string()
            } else {
                s.members.join(", ")
            }
        });
        let _ = writeln!(
            s,
            "group {}: primary {leader}; synchronous secondaries counted: {sync}",
            g.name
        );
        if let Some(b) = g.sync.as_ref().filter(|x| !x.bounded.is_empty()) {
            let _ = writeln!(
                s,
                "  bounded-lag asynchronous secondaries counted: {}",
                b.bounded.join(", ")
            );
        }
        if let Some(w) = &g.switchover {
            let _ = writeln!(
                s,
                "  switchover under way: {} asked {} (epoch {}) for the leader key",
                w.to, w.from, w.epoch
            );
        }
    }
    let _ = writeln!(
        s,
        "{:<12} {:<10} {:<7} {:<22} {:<22} {:<20} {:>14}",
        "member", "role", "epoch", "sql", "http", "sync state", "hardened lsn"
    );
    for m in &v.members {
        if m.groups.is_empty() {
            let _ = writeln!(
                s,
                "{:<12} {:<10} {:<7} {:<22} {:<22}",
                m.name,
                "-",
                "-",
                m.sql.as_deref().unwrap_or("-"),
                m.api.as_deref().unwrap_or("-")
            );
        }
        for (gname, g) in &m.groups {
            let state = g
                .sync_state
                .values()
                .next()
                .cloned()
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "{:<12} {:<10} {:<7} {:<22} {:<22} {:<20} {:>14}   ({gname})",
                m.name,
                g.role,
                g.epoch,
                m.sql.as_deref().unwrap_or("-"),
                m.api.as_deref().unwrap_or("-"),
                state,
                election::score(&m.name, g, None).1
            );
        }
    }
    s
}

/// Starts the agent and the fence watchdog.
pub(crate) fn start(inner: &Arc<Inner>, ha: &Arc<HaShared>) {
    let w = Arc::downgrade(inner);
    let h = ha.clone();
    std::thread::Builder::new()
        .name("walden-ha-fence".into())
        .spawn(move || watchdog(w, h))
        .expect("spawn the HA fence thread");
    let w = Arc::downgrade(inner);
    let h = ha.clone();
    std::thread::Builder::new()
        .name("walden-ha".into())
        .spawn(move || agent::run(w, h))
        .expect("spawn the HA agent thread");
}

/// Demotes every group this node leads as soon as the fence passes without
/// a renewal. Runs apart from the agent, which may be stuck in a request to
/// an unreachable etcd.
fn watchdog(inner: std::sync::Weak<Inner>, ha: Arc<HaShared>) {
    loop {
        {
            let mut f = ha.fence.lock();
            loop {
                if inner.strong_count() == 0 {
                    return;
                }
                let expired = match *f {
                    None => true,
                    Some(t) => Instant::now() >= t,
                };
                if expired && !ha.leading.lock().is_empty() {
                    break;
                }
                let wait = match *f {
                    Some(t) if !expired => t.saturating_duration_since(Instant::now()),
                    _ => Duration::from_millis(200),
                };
                ha.fence_cv
                    .wait_for(&mut f, wait.min(Duration::from_millis(500)));
            }
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let groups: Vec<String> = std::mem::take(&mut *ha.leading.lock())
            .into_iter()
            .collect();
        for g in groups {
            tracing::error!(group = %g, "HA lease not renewed in time: this primary stops acknowledging and steps down");
            ha.counters.lease_lost.fetch_add(1, Relaxed);
            fence_group(&inner, &ha, &g);
        }
    }
}

/// This node must not be `group`'s primary now: its databases become
/// read-only, waiting commits fail, and the group is held RESOLVING (as a
/// restarted primary) until this node takes the key again or a newer
/// primary says hello.
pub(crate) fn fence_group(inner: &Arc<Inner>, ha: &HaShared, group: &str) {
    ha.leading.lock().remove(&group.to_ascii_lowercase());
    let g = inner
        .state
        .lock()
        .groups
        .iter()
        .find(|g| g.def.name.eq_ignore_ascii_case(group))
        .cloned();
    let Some(g) = g else {
        return;
    };
    if !g.primary.eq_ignore_ascii_case(&inner.cfg.name) {
        return;
    }
    let already = inner
        .resolving
        .lock()
        .iter()
        .any(|r| r.eq_ignore_ascii_case(group));
    crate::primary::stop_group(inner, &g.def.name, true);
    for db in &g.def.databases {
        if let Ok(d) = inner.instance.database(db) {
            if !d.is_secondary() {
                d.demote();
            }
        }
    }
    if !already {
        inner.resolving.lock().push(g.def.name.clone());
        ha.counters.demotions.fetch_add(1, Relaxed);
        tracing::warn!(group = %g.def.name, "HA: not the leader: databases read-only (RESOLVING)");
    }
}

/// A clean stop: stop acknowledging first, then revoke the lease so that
/// the leader keys go at once and a secondary takes over without waiting
/// for the TTL.
pub(crate) fn shutdown(inner: &Arc<Inner>, ha: &HaShared) {
    if ha.stopping.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let groups: Vec<String> = ha.leading.lock().iter().cloned().collect();
    for g in groups {
        fence_group(inner, ha, &g);
    }
    *ha.fence.lock() = None;
    ha.fence_cv.notify_all();
    if let Some(id) = ha.lease.lock().take() {
        if let Err(e) = ha.etcd.revoke(id) {
            tracing::warn!(error = %e, "HA: cannot revoke the lease at shutdown (it expires by itself)");
        }
    }
    ha.poke();
}
