//! Bounded-lag asynchronous secondaries (`MAX_LAG_BYTES`, `MAX_LAG_MS`).
//!
//! A commit at LSN `L` on the primary is acknowledged only when every
//! counted bounded secondary has hardened `L - MAX_LAG_BYTES`, and no commit
//! acknowledged more than `MAX_LAG_MS` ago is still unhardened there; until
//! then it waits (HADR_LAG_BOUND). So a failover to such a secondary loses at
//! most the bound. A bounded secondary counts once it has caught up with
//! the primary's hardened log; one that holds commits back (or stays
//! disconnected) for `SESSION_TIMEOUT` stops counting, and in HA mode only
//! after etcd's published set no longer names it (it is then no longer
//! eligible for election).

use crate::{LinkStatus, SyncTable};
use parking_lot::MutexGuard;
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use walden_log::Lsn;

/// Acknowledgements kept per database for secondaries that stopped counting
/// (a long-gone secondary must not grow the list without end).
const MAX_TRACKED: usize = 1 << 16;

/// When the oldest acknowledged commit not hardened through `hardened` was
/// acknowledged.
fn oldest_unhardened(acked: Option<&VecDeque<(Lsn, Instant)>>, hardened: Lsn) -> Option<Instant> {
    acked?
        .iter()
        .find(|(lsn, _)| *lsn > hardened)
        .map(|(_, t)| *t)
}

/// Whether acknowledging a commit at `lsn` now would break `l`'s bound.
fn holds_back(
    l: &LinkStatus,
    lsn: Lsn,
    now: Instant,
    acked: Option<&VecDeque<(Lsn, Instant)>>,
) -> bool {
    let Some(b) = l.bound else {
        return false;
    };
    if b.bytes
        .is_some_and(|max| l.acked_hardened.saturating_add(max) < lsn)
    {
        return true;
    }
    b.ms.is_some_and(|ms| {
        oldest_unhardened(acked, l.acked_hardened)
            .is_some_and(|t| now.saturating_duration_since(t) > Duration::from_millis(ms))
    })
}

/// Whether commits honour `l`'s bound: counted locally, or (HA) named by
/// the published set of its group.
fn counted(t: &SyncTable, l: &LinkStatus) -> bool {
    l.bound.is_some()
        && (l.bound_counted
            || t.ha_bounded
                .get(&l.ag.to_ascii_lowercase())
                .is_some_and(|v| v.iter().any(|r| r.eq_ignore_ascii_case(&l.replica))))
}

/// Blocks (on the sync table's condition variable) until a commit of `db` at
/// `lsn` may be acknowledged without breaking a counted bound, then records
/// its acknowledgement. Returns how long it waited, if it did.
pub(crate) fn wait(
    inner: &crate::Inner,
    t: &mut MutexGuard<'_, SyncTable>,
    db: &str,
    lsn: Lsn,
) -> Result<Option<Duration>, String> {
    let t0 = Instant::now();
    let mut waited = false;
    loop {
        if t.demoted.contains(&db.to_string()) {
            return Err(
                "this replica stopped being the primary before the commit could be acknowledged"
                    .into(),
            );
        }
        if inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("the instance is shutting down".into());
        }
        let now = Instant::now();
        let acked = t.acked.get(db);
        let blocking: Vec<u64> = t
            .links
            .iter()
            .filter(|l| l.db == db && counted(t, l) && holds_back(l, lsn, now, acked))
            .map(|l| l.id)
            .collect();
        if blocking.is_empty() {
            break;
        }
        for l in t.links.iter_mut().filter(|l| blocking.contains(&l.id)) {
            l.bound_out_since.get_or_insert(now);
        }
        waited = true;
        inner.sync_cv.wait_for(t, Duration::from_millis(20));
    }
    record(t, db, lsn);
    Ok(waited.then(|| t0.elapsed()))
}

/// Notes a commit of `db` acknowledged now (only while it has a bounded
/// secondary).
fn record(t: &mut SyncTable, db: &str, lsn: Lsn) {
    if !t.links.iter().any(|l| l.db == db && l.bound.is_some()) {
        t.acked.remove(db);
        return;
    }
    t.acked
        .entry(db.to_string())
        .or_default()
        .push_back((lsn, Instant::now()));
    prune(t, db);
}

/// Forgets acknowledgements every bounded secondary that counts has
/// hardened (every bounded one, when none counts).
pub(crate) fn prune(t: &mut SyncTable, db: &str) {
    let bounded: Vec<(bool, Lsn)> = t
        .links
        .iter()
        .filter(|l| l.db == db && l.bound.is_some())
        .map(|l| (counted(t, l), l.acked_hardened))
        .collect();
    let floor = if bounded.iter().any(|(c, _)| *c) {
        bounded.iter().filter(|(c, _)| *c).map(|(_, h)| *h).min()
    } else {
        bounded.iter().map(|(_, h)| *h).min()
    };
    let Some(q) = t.acked.get_mut(db) else {
        return;
    };
    let floor = floor.unwrap_or(Lsn::MAX);
    while q.front().is_some_and(|(lsn, _)| *lsn <= floor) || q.len() > MAX_TRACKED {
        q.pop_front();
    }
}

/// An acknowledgement from `l`: a hardened LSN that advanced ends a hold;
/// a bounded secondary that has everything hardened here starts counting.
pub(crate) fn on_ack(l: &mut LinkStatus, advanced: bool, local_hardened: Lsn) {
    if l.bound.is_none() {
        return;
    }
    if advanced {
        l.bound_out_since = None;
    }
    if !l.bound_counted && l.acked_hardened >= local_hardened {
        tracing::info!(replica = %l.replica, database = %l.db, lsn = l.acked_hardened,
            "bounded-lag secondary caught up: commits now keep within its bound");
        l.bound_counted = true;
        l.bound_out_since = None;
    }
}

/// The monitor's pass: a counted bounded secondary that is disconnected
/// holds commits back from now on; one held out of its bound for the
/// session timeout stops counting.
pub(crate) fn check(l: &mut LinkStatus, session_timeout: Duration) {
    if l.bound.is_none() || !l.bound_counted {
        return;
    }
    if !l.connected {
        l.bound_out_since.get_or_insert_with(Instant::now);
    }
    if l.bound_out_since
        .is_some_and(|t| t.elapsed() > session_timeout)
    {
        tracing::warn!(replica = %l.replica, database = %l.db,
            "bounded-lag secondary out of its bound for the session timeout: commits no longer wait for it, and it is not eligible for automatic failover");
        l.bound_counted = false;
        l.bound_out_since = None;
    }
}

/// The lag the DMV shows for `l`: how long ago the oldest acknowledged
/// commit it has not hardened was acknowledged (`None`: not bounded).
pub(crate) fn lag_ms(t: &SyncTable, l: &LinkStatus) -> Option<f64> {
    l.bound?;
    Some(
        oldest_unhardened(t.acked.get(&l.db), l.acked_hardened)
            .map_or(0.0, |at| at.elapsed().as_secs_f64() * 1000.0),
    )
}

/// Whether commits honour `l`'s bound now (for the DMV and HA's set).
pub(crate) fn is_counted(t: &SyncTable, l: &LinkStatus) -> bool {
    counted(t, l)
}
