//! Role changes: failover to a secondary (planned or forced), a primary
//! stepping down when it learns of a newer epoch, and a restarted primary
//! leaving the RESOLVING state once a secondary confirms its epoch.

use crate::config::{AvailabilityMode, EpochStart};
use crate::{primary, Inner, ReplicationError, Result};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use walden_log::Lsn;

/// One database's outcome of a failover.
#[derive(Clone, Debug)]
pub struct FailoverRow {
    pub database: String,
    /// Where the new primary's log ends (the new epoch starts here).
    pub failover_lsn: Lsn,
    /// Where the old primary's log ended, as last heard.
    pub primary_last_known_lsn: Lsn,
    /// Log the old primary had that this replica never received (a forced
    /// failover may lose the transactions in it).
    pub possible_loss_bytes: u64,
    pub epoch: u64,
}

pub(crate) fn failover(inner: &Arc<Inner>, group: &str, force: bool) -> Result<Vec<FailoverRow>> {
    let me = inner.cfg.name.clone();
    let g = inner
        .state
        .lock()
        .groups
        .iter()
        .find(|g| g.def.name.eq_ignore_ascii_case(group))
        .cloned()
        .ok_or_else(|| ReplicationError::UnknownGroup(group.into()))?;
    let resolving = inner
        .resolving
        .lock()
        .iter()
        .any(|r| r.eq_ignore_ascii_case(group));
    if g.primary.eq_ignore_ascii_case(&me) {
        if inner.ha.is_some() && resolving {
            // In HA mode only the leader key brings a primary online.
            return Err(ReplicationError::State(format!(
                "this replica (\"{me}\") is the primary of availability group \"{group}\" held read-only \
                 until it holds the group's leader key in etcd again (walden serve --ha); \
                 run the failover on a secondary"
            )));
        }
        if resolving && force {
            // An operator brings a restarted primary online without waiting
            // to hear from a secondary.
            resolved(inner, group);
            return Ok(Vec::new());
        }
        return Err(ReplicationError::State(format!(
            "this replica (\"{me}\") is already the primary of availability group \"{group}\""
        )));
    }
    let mine = g.def.replica(&me).ok_or_else(|| {
        ReplicationError::State(format!("this replica (\"{me}\") is not in \"{group}\""))
    })?;
    let timeout = g.def.session_timeout();
    let mut known = BTreeMap::new();
    {
        let inc = inner.incoming.lock();
        for db in &g.def.databases {
            let e = inc.get(&db.to_ascii_lowercase());
            if !force {
                let ok = mine.mode == AvailabilityMode::SynchronousCommit
                    && e.is_some_and(|e| e.synchronized && e.last_heard.elapsed() <= timeout);
                if !ok {
                    return Err(ReplicationError::State(format!(
                        "database \"{db}\" is not SYNCHRONIZED on this synchronous-commit replica, \
                         so a failover could lose committed transactions; use \
                         ALTER AVAILABILITY GROUP {group} FORCE_FAILOVER_ALLOW_DATA_LOSS to accept that"
                    )));
                }
            }
            known.insert(db.to_ascii_lowercase(), e.map_or(0, |e| e.primary_end));
        }
    }
    if let Some(ha) = &inner.ha {
        // Through the leader key: a failover outside it could make two
        // primaries.
        return crate::ha::request_failover(ha, group, force, known);
    }
    take_over(inner, group, g.epoch + 1, &known)
}

/// Makes this replica the primary of `group` in `epoch`: redo of what was
/// received finishes, the databases are promoted (unfinished transactions
/// of the old primary dropped), the epoch and its start LSNs are recorded,
/// and links to the other replicas start. `known`: the old primary's last
/// known end per database (for the report).
pub(crate) fn take_over(
    inner: &Arc<Inner>,
    group: &str,
    epoch: u64,
    known: &BTreeMap<String, Lsn>,
) -> Result<Vec<FailoverRow>> {
    let me = inner.cfg.name.clone();
    let g = inner
        .state
        .lock()
        .groups
        .iter()
        .find(|g| g.def.name.eq_ignore_ascii_case(group))
        .cloned()
        .ok_or_else(|| ReplicationError::UnknownGroup(group.into()))?;
    // Stop following: a newer generation that nobody holds ends the
    // current connections' redo.
    {
        let mut inc = inner.incoming.lock();
        for db in &g.def.databases {
            if let Some(e) = inc.get_mut(&db.to_ascii_lowercase()) {
                e.generation += 1;
                e.connected = false;
                e.synchronized = false;
            }
        }
    }
    // Links of an earlier term of this replica (it was primary before)
    // stop; new ones start below.
    primary::stop_group(inner, group, false);
    let mut rows = Vec::new();
    let mut lsns = BTreeMap::new();
    for db in &g.def.databases {
        let d = inner.instance.database(db)?;
        // Redo of what was received finishes first.
        walden_engine::wait_until(Duration::from_secs(30), || {
            d.applied_lsn() == d.log().end_lsn()
        });
        let lsn = if d.is_secondary() {
            inner.instance.promote_database(db)?
        } else {
            d.log().end_lsn()
        };
        let last = known.get(&db.to_ascii_lowercase()).copied().unwrap_or(0);
        lsns.insert(db.to_ascii_lowercase(), lsn);
        rows.push(FailoverRow {
            database: db.clone(),
            failover_lsn: lsn,
            primary_last_known_lsn: last.max(lsn),
            possible_loss_bytes: last.saturating_sub(lsn),
            epoch,
        });
    }
    let ng = {
        let mut st = inner.state.lock();
        let Some(s) = st
            .groups
            .iter_mut()
            .find(|x| x.def.name.eq_ignore_ascii_case(group))
        else {
            return Err(ReplicationError::UnknownGroup(group.into()));
        };
        s.epoch = epoch;
        s.primary = me.clone();
        s.history.push(EpochStart {
            epoch,
            primary: me.clone(),
            lsns,
        });
        for db in &s.def.databases {
            s.followed.insert(db.to_ascii_lowercase(), epoch);
        }
        let ng = s.clone();
        st.save(inner.instance.data_dir())
            .map_err(ReplicationError::Invalid)?;
        ng
    };
    for r in &rows {
        if r.possible_loss_bytes > 0 {
            tracing::warn!(database = %r.database, from = r.failover_lsn, to = r.primary_last_known_lsn,
                "forced failover: log in this LSN range on the old primary may be lost");
        }
    }
    tracing::info!(group, epoch, "this replica is now the primary");
    inner
        .resolving
        .lock()
        .retain(|r| !r.eq_ignore_ascii_case(group));
    primary::start_group(inner, &ng);
    Ok(rows)
}

/// This primary learned that another replica is primary in a newer epoch.
pub(crate) fn step_down(inner: &Arc<Inner>, group: &str, epoch: u64, new_primary: &str) {
    {
        let mut st = inner.state.lock();
        if let Some(g) = st
            .groups
            .iter_mut()
            .find(|g| g.def.name.eq_ignore_ascii_case(group))
        {
            if g.epoch >= epoch && !g.primary.eq_ignore_ascii_case(&inner.cfg.name) {
                return;
            }
            g.epoch = epoch;
            g.primary = new_primary.to_string();
        }
        let _ = st.save(inner.instance.data_dir());
    }
    demote_local(inner, group, new_primary);
}

/// The databases of `group` (none if the group is gone).
fn group_databases(inner: &Inner, group: &str) -> Vec<String> {
    inner
        .state
        .lock()
        .groups
        .iter()
        .find(|g| g.def.name.eq_ignore_ascii_case(group))
        .map(|g| g.def.databases.clone())
        .unwrap_or_default()
}

/// Makes this replica's databases of `group` secondaries.
pub(crate) fn demote_local(inner: &Arc<Inner>, group: &str, new_primary: &str) {
    let dbs = group_databases(inner, group);
    tracing::warn!(
        group,
        new_primary,
        "stepping down: this replica is now a secondary"
    );
    primary::stop_group(inner, group, true);
    inner
        .resolving
        .lock()
        .retain(|r| !r.eq_ignore_ascii_case(group));
    for db in dbs {
        if let Err(e) = inner.instance.demote_database(&db) {
            tracing::error!(database = %db, error = %e, "cannot demote");
        }
    }
}

/// A secondary accepted this primary's epoch: leave RESOLVING (in HA mode
/// only the leader key does that: [`resolved_now`]).
pub(crate) fn resolved(inner: &Arc<Inner>, group: &str) {
    if inner.ha.is_some() {
        return;
    }
    resolved_now(inner, group);
}

/// Leaves RESOLVING: the group's databases take writes again.
pub(crate) fn resolved_now(inner: &Arc<Inner>, group: &str) {
    let was = {
        let mut r = inner.resolving.lock();
        let n = r.len();
        r.retain(|x| !x.eq_ignore_ascii_case(group));
        n != r.len()
    };
    if !was {
        return;
    }
    // A primary fenced by HA had its links stopped: start them again
    // (which also installs the commit hook its demotion removed).
    let linked = inner
        .sync
        .lock()
        .links
        .iter()
        .any(|l| l.ag.eq_ignore_ascii_case(group));
    let g = inner
        .state
        .lock()
        .groups
        .iter()
        .find(|g| g.def.name.eq_ignore_ascii_case(group))
        .cloned();
    if let (false, Some(g)) = (linked, &g) {
        primary::start_group(inner, g);
    }
    let dbs = group_databases(inner, group);
    for db in dbs {
        if let Ok(d) = inner.instance.database(&db) {
            if let Err(e) = d.promote() {
                tracing::error!(database = %db, error = %e, "cannot bring the primary online");
            }
        }
    }
    tracing::info!(group, "primary confirmed: online for writes");
}
