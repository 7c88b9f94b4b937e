//! `sys.dm_hadr_database_replica_states`: one row per database and replica
//! this instance knows about (on a primary, itself and each secondary; on a
//! secondary, itself).

use crate::config::AvailabilityMode;
use crate::Inner;
use std::time::SystemTime;
use walden_log::Lsn;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncState {
    NotSynchronizing,
    Synchronizing,
    Synchronized,
}

impl SyncState {
    pub fn desc(self) -> &'static str {
        match self {
            SyncState::NotSynchronizing => "NOT SYNCHRONIZING",
            SyncState::Synchronizing => "SYNCHRONIZING",
            SyncState::Synchronized => "SYNCHRONIZED",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ReplicaStateRow {
    pub group_name: String,
    pub replica_name: String,
    pub database_name: String,
    pub database_id: u32,
    pub is_local: bool,
    pub is_primary_replica: bool,
    pub availability_mode_desc: &'static str,
    pub synchronization_state_desc: &'static str,
    pub is_connected: bool,
    /// KB of log the primary has not sent yet.
    pub log_send_queue_size: u64,
    /// KB of log hardened on the secondary but not yet redone.
    pub redo_queue_size: u64,
    pub last_sent_lsn: Lsn,
    pub last_hardened_lsn: Lsn,
    pub last_redone_lsn: Lsn,
    pub last_commit_time: Option<SystemTime>,
    pub secondary_lag_seconds: Option<f64>,
    pub last_error: Option<String>,
    /// The primary will seed this secondary afresh (it fell behind the log
    /// the primary keeps, or an operator asked).
    pub needs_reseed: bool,
    /// Log the secondary has not hardened (the primary's end LSN minus its
    /// hardened LSN), bytes; on the primary's own row, `None`.
    pub lag_bytes: Option<u64>,
    /// Bounded secondary: how long ago the oldest acknowledged commit it
    /// has not hardened was acknowledged, ms (0: none).
    pub lag_ms: Option<f64>,
    /// Its bound, as defined (`MAX_LAG_BYTES`, `MAX_LAG_MS`).
    pub max_lag_bytes: Option<u64>,
    pub max_lag_ms: Option<u64>,
    /// Bounded secondary: commits keep within its bound now (it caught up
    /// and was not dropped; in HA mode, or still in etcd's published set).
    pub is_lag_bound_counted: Option<bool>,
}

fn kb(n: u64) -> u64 {
    n.div_ceil(1024)
}

pub(crate) fn rows(inner: &Inner) -> Vec<ReplicaStateRow> {
    let me = inner.cfg.name.clone();
    let groups = inner.state.lock().groups.clone();
    let (links, lag) = {
        let t = inner.sync.lock();
        let lag: std::collections::HashMap<u64, (Option<f64>, bool)> = t
            .links
            .iter()
            .map(|l| {
                (
                    l.id,
                    (
                        crate::lag_bound::lag_ms(&t, l),
                        crate::lag_bound::is_counted(&t, l),
                    ),
                )
            })
            .collect();
        (t.links.clone(), lag)
    };
    let incoming = inner.incoming.lock().clone();
    let resolving = inner.resolving.lock().clone();
    let mut out = Vec::new();
    for g in &groups {
        let primary_here = g.primary.eq_ignore_ascii_case(&me);
        let my_mode = g
            .def
            .replica(&me)
            .map_or(AvailabilityMode::AsynchronousCommit, |r| r.mode);
        for db_name in &g.def.databases {
            let Ok(db) = inner.instance.database(db_name) else {
                continue;
            };
            let key = db_name.to_ascii_lowercase();
            let end = db.log().end_lsn();
            let hardened = db.log().hardened_lsn();
            if primary_here {
                let res = resolving
                    .iter()
                    .any(|r| r.eq_ignore_ascii_case(&g.def.name));
                out.push(ReplicaStateRow {
                    group_name: g.def.name.clone(),
                    replica_name: me.clone(),
                    database_name: db.name().to_string(),
                    database_id: db.id(),
                    is_local: true,
                    is_primary_replica: true,
                    availability_mode_desc: my_mode.desc(),
                    synchronization_state_desc: if res {
                        "NOT SYNCHRONIZING"
                    } else {
                        "SYNCHRONIZED"
                    },
                    is_connected: true,
                    log_send_queue_size: 0,
                    redo_queue_size: 0,
                    last_sent_lsn: end,
                    last_hardened_lsn: hardened,
                    last_redone_lsn: end,
                    last_commit_time: None,
                    secondary_lag_seconds: None,
                    last_error: None,
                    needs_reseed: false,
                    lag_bytes: None,
                    lag_ms: None,
                    max_lag_bytes: None,
                    max_lag_ms: None,
                    is_lag_bound_counted: None,
                });
                for l in links
                    .iter()
                    .filter(|l| l.db == key && l.ag.eq_ignore_ascii_case(&g.def.name))
                {
                    out.push(ReplicaStateRow {
                        group_name: g.def.name.clone(),
                        replica_name: l.replica.clone(),
                        database_name: db.name().to_string(),
                        database_id: db.id(),
                        is_local: false,
                        is_primary_replica: false,
                        availability_mode_desc: l.mode.desc(),
                        synchronization_state_desc: l.state.desc(),
                        is_connected: l.connected,
                        log_send_queue_size: kb(end.saturating_sub(l.sent)),
                        redo_queue_size: kb(l.acked_hardened.saturating_sub(l.acked_applied)),
                        last_sent_lsn: l.sent,
                        last_hardened_lsn: l.acked_hardened,
                        last_redone_lsn: l.acked_applied,
                        last_commit_time: l.last_ack_advance,
                        secondary_lag_seconds: Some(
                            l.behind_since.map_or(0.0, |t| t.elapsed().as_secs_f64()),
                        ),
                        last_error: l.last_error.clone(),
                        needs_reseed: l.needs_reseed,
                        lag_bytes: Some(end.saturating_sub(l.acked_hardened)),
                        lag_ms: lag.get(&l.id).and_then(|x| x.0),
                        max_lag_bytes: l.bound.and_then(|b| b.bytes),
                        max_lag_ms: l.bound.and_then(|b| b.ms),
                        is_lag_bound_counted: l.bound.map(|_| lag.get(&l.id).is_some_and(|x| x.1)),
                    });
                }
            } else {
                let e = incoming.get(&key);
                // A connection silent for the session timeout is dead (the
                // primary has dropped this replica by then), even if no
                // FIN or RST ever arrived (a partition).
                let live =
                    e.filter(|e| e.connected && e.last_heard.elapsed() <= g.def.session_timeout());
                let state = match live {
                    Some(e) if e.synchronized => "SYNCHRONIZED",
                    Some(_) => "SYNCHRONIZING",
                    None => "NOT SYNCHRONIZING",
                };
                let applied = db.applied_lsn();
                out.push(ReplicaStateRow {
                    group_name: g.def.name.clone(),
                    replica_name: me.clone(),
                    database_name: db.name().to_string(),
                    database_id: db.id(),
                    is_local: true,
                    is_primary_replica: false,
                    availability_mode_desc: my_mode.desc(),
                    synchronization_state_desc: state,
                    is_connected: live.is_some(),
                    log_send_queue_size: kb(e.map_or(0, |e| e.primary_end.saturating_sub(end))),
                    redo_queue_size: kb(end.saturating_sub(applied)),
                    last_sent_lsn: end,
                    last_hardened_lsn: hardened,
                    last_redone_lsn: applied,
                    last_commit_time: e.and_then(|e| e.last_received),
                    secondary_lag_seconds: None,
                    last_error: None,
                    needs_reseed: false,
                    lag_bytes: e.map(|e| e.primary_end.saturating_sub(hardened)),
                    lag_ms: None,
                    max_lag_bytes: g
                        .def
                        .replica(&me)
                        .and_then(|r| r.lag_bound())
                        .and_then(|b| b.bytes),
                    max_lag_ms: g
                        .def
                        .replica(&me)
                        .and_then(|r| r.lag_bound())
                        .and_then(|b| b.ms),
                    is_lag_bound_counted: None,
                });
            }
        }
    }
    out
}
