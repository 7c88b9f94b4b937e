//! The HA agent: one thread per node that keeps the node's lease, its
//! registration, and for every group the node is in, the leader key (take
//! it when it lapses and this node goes first; give up being primary when
//! someone else holds it) and, on the leader, the published sync set.

use super::election::SwitchoverKey;
use super::election::{self, LeaderKey, Member, MemberGroup, SyncKey};
use super::etcd::{Compare, Op};
use super::{
    fence_group, leader_key, member_key, read_cluster, switchover_key, sync_key, ClusterView,
    GroupView, HaShared,
};
use crate::config::{AgState, AvailabilityMode};
use crate::failover::FailoverRow;
use crate::status::SyncState;
use crate::{failover, Inner};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How long a node that does not go first waits before trying anyway.
const SECOND_CHANCE: Duration = Duration::from_secs(2);

struct Agent {
    lease: Option<i64>,
    last_renew: Instant,
    last_member: Option<(Member, Instant)>,
    /// When each group's leader key was first seen absent.
    absent_since: HashMap<String, Instant>,
}

pub(super) fn run(inner: Weak<Inner>, ha: Arc<HaShared>) {
    let tick = (ha.cfg.ttl / 20).clamp(Duration::from_millis(50), Duration::from_millis(250));
    let mut a = Agent {
        lease: None,
        last_renew: Instant::now(),
        last_member: None,
        absent_since: HashMap::new(),
    };
    loop {
        {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            if inner.closed.load(SeqCst) || ha.stopping.load(SeqCst) {
                return;
            }
            if let Err(e) = a.tick(&inner, &ha) {
                let mut last = ha.last_error.lock();
                if last.as_deref() != Some(e.as_str()) {
                    tracing::warn!(error = %e, "HA: etcd");
                }
                *last = Some(e);
            } else {
                *ha.last_error.lock() = None;
            }
        }
        let mut w = ha.wake.lock();
        if !*w {
            ha.wake_cv.wait_for(&mut w, tick);
        }
        *w = false;
    }
}

impl Agent {
    fn tick(&mut self, inner: &Arc<Inner>, ha: &Arc<HaShared>) -> Result<(), String> {
        self.keep_lease(ha)?;
        let Some(lease) = self.lease else {
            return Ok(());
        };
        let view = read_cluster(&ha.etcd, &ha.cfg.cluster).map_err(|e| e.to_string())?;
        *ha.view.lock() = Some(view.clone());
        self.register(inner, ha, lease)?;
        let groups = inner.state.lock().groups.clone();
        for g in &groups {
            if let Err(e) = self.group(inner, ha, lease, g, &view) {
                tracing::warn!(group = %g.def.name, error = %e, "HA: group");
            }
        }
        Ok(())
    }

    /// Grants the lease if there is none, renews it every TTL/5, and moves
    /// the fence with every renewal.
    fn keep_lease(&mut self, ha: &HaShared) -> Result<(), String> {
        let ttl = ha.cfg.ttl;
        let margin = ttl * 3 / 10;
        let set_fence = |sent: Instant, granted_s: i64| {
            let until = sent + Duration::from_secs(granted_s.max(0) as u64).saturating_sub(margin);
            *ha.fence.lock() = Some(until);
            ha.fence_cv.notify_all();
        };
        match self.lease {
            None => {
                let sent = Instant::now();
                let (id, granted) = ha.etcd.grant(ttl.as_secs()).map_err(|e| e.to_string())?;
                self.lease = Some(id);
                *ha.lease.lock() = Some(id);
                self.last_renew = sent;
                self.last_member = None;
                set_fence(sent, granted);
                tracing::info!(lease = id, ttl_s = granted, "HA: lease granted");
            }
            Some(id) if self.last_renew.elapsed() >= ttl / 5 => {
                let sent = Instant::now();
                match ha.etcd.keepalive(id) {
                    Ok(granted) if granted > 0 => {
                        self.last_renew = sent;
                        ha.counters.renewals.fetch_add(1, Relaxed);
                        set_fence(sent, granted);
                    }
                    Ok(_) => {
                        // etcd forgot the lease (it expired): every key
                        // attached to it is gone, leader keys included.
                        tracing::error!(lease = id, "HA: the lease expired in etcd");
                        self.lease = None;
                        *ha.lease.lock() = None;
                        *ha.fence.lock() = None;
                        ha.fence_cv.notify_all();
                        return Err("lease expired".into());
                    }
                    Err(e) => {
                        ha.counters.renew_failures.fetch_add(1, Relaxed);
                        return Err(format!("cannot renew the lease: {e}"));
                    }
                }
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// This node's registration, rewritten every second or when its shape
    /// (roles, epochs) changes.
    fn register(&mut self, inner: &Arc<Inner>, ha: &HaShared, lease: i64) -> Result<(), String> {
        let m = local_member(inner, ha);
        let shape = |m: &Member| {
            let mut m = m.clone();
            for g in m.groups.values_mut() {
                g.hardened.clear();
            }
            m
        };
        let due = match &self.last_member {
            None => true,
            Some((last, at)) => at.elapsed() >= Duration::from_secs(1) || shape(last) != shape(&m),
        };
        if due {
            let bytes = serde_json::to_vec(&m).expect("member serializes");
            ha.etcd
                .put(&member_key(&ha.cfg.cluster, &inner.cfg.name), &bytes, lease)
                .map_err(|e| e.to_string())?;
            self.last_member = Some((m, Instant::now()));
        }
        Ok(())
    }

    fn group(
        &mut self,
        inner: &Arc<Inner>,
        ha: &Arc<HaShared>,
        lease: i64,
        g: &AgState,
        view: &ClusterView,
    ) -> Result<(), String> {
        let me = inner.cfg.name.clone();
        let name = g.def.name.to_ascii_lowercase();
        let gv = view.groups.iter().find(|x| x.name == name);
        let sync = gv.and_then(|x| x.sync.clone());
        let leader = gv.and_then(|x| x.leader.clone().map(|l| (l, x.leader_lease)));
        let switch = gv.and_then(|x| x.switchover.clone());
        let lkey = leader_key(&ha.cfg.cluster, &name);
        if let Some((_, _, until)) = ha.pending(&name) {
            if Instant::now() >= until {
                self.drop_switchover(ha, &name, switch.as_ref(), &me);
                ha.finish(
                    &name,
                    Err(format!(
                        "availability group \"{name}\" did not fail over to this replica in time \
                         (the primary did not give up the leader key, or etcd did not answer)"
                    )),
                );
            }
        }
        match leader {
            Some((l, l_lease)) if l.name.eq_ignore_ascii_case(&me) && l_lease == lease => {
                self.absent_since.remove(&name);
                let guard = vec![
                    Compare::ValueIs(lkey.clone(), serde_json::to_vec(&l).expect("serializes")),
                    Compare::LeaseIs(lkey.clone(), lease),
                ];
                if let Some(s) = &switch {
                    if s.to.eq_ignore_ascii_case(&me) {
                        // This node asked and got it: the request is done.
                        let _ = ha.etcd.delete(&switchover_key(&ha.cfg.cluster, &name));
                    } else if self.hand_over(inner, ha, g, sync.as_ref(), s, view, &guard)? {
                        return Ok(());
                    }
                    // (A hand-over whose key deletion failed is tried again
                    // here, fenced, rather than taking writes back.)
                }
                if ha.is_leading(&name) {
                    self.publish_sync(inner, ha, g, sync.as_ref(), &guard)
                } else {
                    self.become_leader(inner, ha, g, sync.as_ref(), &guard, &BTreeMap::new())
                        .map(|_| ())
                }
            }
            Some((l, l_lease)) if l.name.eq_ignore_ascii_case(&me) => {
                // Held by this node's previous life (a restart within the
                // TTL): let it go now rather than at its expiry.
                self.absent_since.remove(&name);
                if ha.is_leading(&name) {
                    fence_group(inner, ha, &name);
                }
                tracing::info!(group = %name, lease = l_lease, "HA: revoking this node's previous lease");
                ha.etcd.revoke(l_lease).map_err(|e| e.to_string())
            }
            Some((l, _)) => {
                self.absent_since.remove(&name);
                // Someone else is primary: this node must not be.
                if ha.is_leading(&name) || locally_writable(inner, g) {
                    fence_group(inner, ha, &name);
                }
                if let Some((force, _, _)) = ha.pending(&name) {
                    self.ask_switchover(
                        inner,
                        ha,
                        lease,
                        g,
                        sync.as_ref(),
                        &l,
                        force,
                        switch.as_ref(),
                    )?;
                }
                Ok(())
            }
            None => self.elect(inner, ha, lease, g, gv, view),
        }
    }

    /// An operator's FAILOVER on this secondary while `l` holds the key:
    /// ask it to hand the key over (a forced failover is refused: the
    /// primary is alive, its lease says so).
    #[allow(clippy::too_many_arguments)]
    fn ask_switchover(
        &mut self,
        inner: &Arc<Inner>,
        ha: &HaShared,
        lease: i64,
        g: &AgState,
        sync: Option<&SyncKey>,
        l: &LeaderKey,
        force: bool,
        switch: Option<&SwitchoverKey>,
    ) -> Result<(), String> {
        let me = inner.cfg.name.clone();
        let name = g.def.name.to_ascii_lowercase();
        if force {
            ha.finish(
                &name,
                Err(format!(
                    "\"{}\" holds the leader key of availability group \"{name}\" in etcd: it is alive, \
                     so a forced failover could make two primaries; use ALTER AVAILABILITY GROUP {name} FAILOVER \
                     on a SYNCHRONIZED synchronous secondary, or stop that primary",
                    l.name
                )),
            );
            return Ok(());
        }
        let counted = sync.is_some_and(|s| {
            s.leader.eq_ignore_ascii_case(&l.name)
                && election::eligible(&me, &local_group(inner, g), Some(s))
        });
        if !counted {
            ha.finish(
                &name,
                Err(format!(
                    "this replica (\"{me}\") is not among the synchronous secondaries the primary \"{}\" \
                     counts for commits (etcd's sync set), so it may lack acknowledged commits; \
                     wait until it is SYNCHRONIZED and counted",
                    l.name
                )),
            );
            return Ok(());
        }
        let want = SwitchoverKey {
            to: me.clone(),
            from: l.name.clone(),
            epoch: l.epoch,
        };
        if switch != Some(&want) {
            let key = switchover_key(&ha.cfg.cluster, &name);
            let bytes = serde_json::to_vec(&want).expect("serializes");
            // Only when no other secondary has asked first.
            let asked = ha
                .etcd
                .txn(
                    &[Compare::Absent(key.clone())],
                    &[Op::Put(&key, &bytes, lease)],
                )
                .map_err(|e| e.to_string())?;
            if !asked {
                if let Some(other) = switch.filter(|s| !s.to.eq_ignore_ascii_case(&me)) {
                    ha.finish(
                        &name,
                        Err(format!(
                            "\"{}\" has already asked for the leader key of availability group \"{name}\"",
                            other.to
                        )),
                    );
                }
                return Ok(());
            }
            tracing::warn!(group = %name, primary = %l.name, "HA: asked the primary to hand over the leader key");
        }
        Ok(())
    }

    /// On the leader: a counted secondary asked for the key. Stop
    /// acknowledging, then give the key up (guarded: only this node's own
    /// key); the asker takes it. Whether the key was given up.
    #[allow(clippy::too_many_arguments)]
    fn hand_over(
        &mut self,
        inner: &Arc<Inner>,
        ha: &Arc<HaShared>,
        g: &AgState,
        sync: Option<&SyncKey>,
        s: &SwitchoverKey,
        view: &ClusterView,
        guard: &[Compare],
    ) -> Result<bool, String> {
        let me = inner.cfg.name.clone();
        let name = g.def.name.to_ascii_lowercase();
        let counted = sync.is_some_and(|k| {
            k.leader.eq_ignore_ascii_case(&me)
                && k.epoch == g.epoch
                && k.members.iter().any(|m| m.eq_ignore_ascii_case(&s.to))
        });
        let alive = view
            .members
            .iter()
            .any(|m| m.name.eq_ignore_ascii_case(&s.to));
        if !counted || !alive || !s.from.eq_ignore_ascii_case(&me) || s.epoch != g.epoch {
            // Asked of someone else, or by a secondary that may lack
            // acknowledged commits: not honoured (the asker times out).
            return Ok(false);
        }
        tracing::warn!(group = %name, to = %s.to, "HA: switchover: this primary stops acknowledging and gives up the leader key");
        // Commits stop first: every acknowledged one is then on the
        // counted secondary; what is hardened here and not acknowledged
        // is this node's tail, discarded when it rejoins.
        fence_group(inner, ha, &name);
        let lkey = leader_key(&ha.cfg.cluster, &name);
        let gave = ha
            .etcd
            .txn(guard, &[Op::Delete(&lkey)])
            .map_err(|e| e.to_string())?;
        if gave {
            ha.counters.switchovers.fetch_add(1, Relaxed);
        }
        Ok(gave)
    }

    /// Removes this node's switchover request from etcd (best effort: it
    /// goes with the lease anyway).
    fn drop_switchover(
        &self,
        ha: &HaShared,
        group: &str,
        switch: Option<&SwitchoverKey>,
        me: &str,
    ) {
        if switch.is_some_and(|s| s.to.eq_ignore_ascii_case(me)) {
            let _ = ha.etcd.delete(&switchover_key(&ha.cfg.cluster, group));
        }
    }

    /// The leader key is absent: take it if this node is eligible and goes
    /// first (or the one that should has not, for a while). A counted
    /// secondary that asked for a switchover goes first; an operator's
    /// forced failover on this node takes it without being eligible.
    fn elect(
        &mut self,
        inner: &Arc<Inner>,
        ha: &Arc<HaShared>,
        lease: i64,
        g: &AgState,
        gv: Option<&GroupView>,
        view: &ClusterView,
    ) -> Result<(), String> {
        let me = inner.cfg.name.clone();
        let name = g.def.name.to_ascii_lowercase();
        let sync = gv.and_then(|x| x.sync.as_ref());
        let switch = gv.and_then(|x| x.switchover.as_ref());
        if ha.is_leading(&name) {
            // The key vanished under this node (deleted by hand?): stop.
            fence_group(inner, ha, &name);
        }
        let request = ha.pending(&name);
        let forced = request.as_ref().is_some_and(|r| r.0);
        let mine = local_group(inner, g);
        if !forced && !election::eligible(&me, &mine, sync) {
            if locally_writable(inner, g) {
                fence_group(inner, ha, &name);
            }
            return Ok(());
        }
        let asked_by_me = switch.is_some_and(|s| s.to.eq_ignore_ascii_case(&me));
        if let Some(s) = switch.filter(|_| !asked_by_me && !forced) {
            // A switchover to another node is under way: it goes, alone,
            // while its request lives (it goes with its lease).
            if view
                .members
                .iter()
                .any(|m| m.name.eq_ignore_ascii_case(&s.to))
            {
                return Ok(());
            }
        }
        let since = *self
            .absent_since
            .entry(name.clone())
            .or_insert_with(Instant::now);
        let mut candidates = vec![(me.clone(), election::score(&me, &mine, sync))];
        for m in &view.members {
            if m.name.eq_ignore_ascii_case(&me) {
                continue;
            }
            if let Some(mg) = m.groups.get(&name) {
                if election::eligible(&m.name, mg, sync) {
                    candidates.push((m.name.clone(), election::score(&m.name, mg, sync)));
                }
            }
        }
        let first = forced || asked_by_me || election::goes_first(&me, &candidates);
        if !first && since.elapsed() < SECOND_CHANCE {
            return Ok(());
        }
        let epoch = next_epoch(&me, g, sync);
        let lk = leader_key(&ha.cfg.cluster, &name);
        let value = serde_json::to_vec(&LeaderKey {
            name: me.clone(),
            epoch,
        })
        .expect("serializes");
        let won = ha
            .etcd
            .txn_put(&[Compare::Absent(lk.clone())], &[(&lk, &value, lease)])
            .map_err(|e| e.to_string())?;
        if !won {
            return Ok(());
        }
        self.absent_since.remove(&name);
        if forced {
            ha.counters.forced_failovers.fetch_add(1, Relaxed);
            tracing::error!(group = %name, epoch, eligible = ?candidates, "HA: took the leader key by an operator's FORCE_FAILOVER_ALLOW_DATA_LOSS");
        } else {
            tracing::warn!(group = %name, epoch, candidates = ?candidates, "HA: took the leader key");
        }
        let guard = vec![
            Compare::ValueIs(lk.clone(), value),
            Compare::LeaseIs(lk, lease),
        ];
        let known = request.map(|r| r.1).unwrap_or_default();
        let res = self.become_leader(inner, ha, g, sync, &guard, &known);
        if ha.pending(&name).is_some() {
            ha.finish(&name, res.clone());
        }
        if asked_by_me {
            let _ = ha.etcd.delete(&switchover_key(&ha.cfg.cluster, &name));
        }
        res.map(|_| ())
    }

    /// Holding the key: publish an empty sync set for the new term, then
    /// promote (or, for the same primary and epoch, leave RESOLVING).
    fn become_leader(
        &mut self,
        inner: &Arc<Inner>,
        ha: &Arc<HaShared>,
        g: &AgState,
        sync: Option<&SyncKey>,
        guard: &[Compare],
        known: &BTreeMap<String, u64>,
    ) -> Result<Vec<FailoverRow>, String> {
        let me = inner.cfg.name.clone();
        let name = g.def.name.to_ascii_lowercase();
        if inner.closed.load(SeqCst) || ha.stopping.load(SeqCst) {
            return Err("this node is shutting down".into());
        }
        let epoch = next_epoch(&me, g, sync);
        let keep = epoch == g.epoch;
        let s = SyncKey {
            leader: me.clone(),
            epoch,
            members: Vec::new(),
            bounded: Vec::new(),
        };
        if !self.write_sync(inner, ha, &name, &s, guard)? {
            return Err("lost the leader key before taking over".into());
        }
        if ha.fence.lock().is_none_or(|t| Instant::now() >= t) {
            return Err("the lease lapsed while taking over".into());
        }
        ha.leading.lock().insert(name.clone());
        let res = if keep {
            failover::resolved_now(inner, &g.def.name);
            Ok(Vec::new())
        } else {
            failover::take_over(inner, &g.def.name, epoch, known).inspect(|rows| {
                for r in rows {
                    tracing::info!(database = %r.database, lsn = r.failover_lsn, epoch = r.epoch, "HA: promoted");
                }
            })
        };
        match res {
            Ok(rows) => {
                ha.counters.promotions.fetch_add(1, Relaxed);
                tracing::warn!(group = %name, epoch, "HA: this node is the primary");
                Ok(rows)
            }
            Err(e) => {
                fence_group(inner, ha, &name);
                Err(format!("cannot take over: {e}"))
            }
        }
    }

    /// Writes the sync set (guarded by holding the leader key), then makes
    /// commits count exactly its members.
    fn write_sync(
        &mut self,
        inner: &Inner,
        ha: &HaShared,
        group: &str,
        s: &SyncKey,
        guard: &[Compare],
    ) -> Result<bool, String> {
        let bytes = serde_json::to_vec(s).expect("serializes");
        let key = sync_key(&ha.cfg.cluster, group);
        let ok = ha
            .etcd
            .txn_put(guard, &[(&key, &bytes, 0)])
            .map_err(|e| e.to_string())?;
        if ok {
            ha.counters.sync_set_writes.fetch_add(1, Relaxed);
            let mut t = inner.sync.lock();
            t.ha_counted.insert(
                group.to_string(),
                s.members.iter().map(|m| m.to_ascii_lowercase()).collect(),
            );
            t.ha_bounded.insert(
                group.to_string(),
                s.bounded.iter().map(|m| m.to_ascii_lowercase()).collect(),
            );
            inner.sync_cv.notify_all();
        }
        Ok(ok)
    }

    /// On the leader: the sync set follows the SYNCHRONIZED synchronous
    /// secondaries (a secondary SYNCHRONIZED for every database of the group).
    fn publish_sync(
        &mut self,
        inner: &Arc<Inner>,
        ha: &Arc<HaShared>,
        g: &AgState,
        sync: Option<&SyncKey>,
        guard: &[Compare],
    ) -> Result<(), String> {
        let me = inner.cfg.name.clone();
        let name = g.def.name.to_ascii_lowercase();
        let mut want: Vec<String> = {
            let t = inner.sync.lock();
            g.def
                .replicas
                .iter()
                .filter(|r| {
                    !r.name.eq_ignore_ascii_case(&me)
                        && r.mode == AvailabilityMode::SynchronousCommit
                })
                .filter(|r| {
                    let links: Vec<_> = t
                        .links
                        .iter()
                        .filter(|l| {
                            l.ag.eq_ignore_ascii_case(&name)
                                && l.replica.eq_ignore_ascii_case(&r.name)
                        })
                        .collect();
                    links.len() == g.def.databases.len()
                        && links.iter().all(|l| l.state == SyncState::Synchronized)
                })
                .map(|r| r.name.to_ascii_lowercase())
                .collect()
        };
        want.sort();
        // Bounded-lag asynchronous secondaries whose bound every database's
        // commits keep (locally counted; joining only after that, and
        // leaving here before commits stop keeping it).
        let mut want_bounded: Vec<String> = {
            let t = inner.sync.lock();
            g.def
                .replicas
                .iter()
                .filter(|r| !r.name.eq_ignore_ascii_case(&me) && r.lag_bound().is_some())
                .filter(|r| {
                    let links: Vec<_> = t
                        .links
                        .iter()
                        .filter(|l| {
                            l.ag.eq_ignore_ascii_case(&name)
                                && l.replica.eq_ignore_ascii_case(&r.name)
                        })
                        .collect();
                    links.len() == g.def.databases.len() && links.iter().all(|l| l.bound_counted)
                })
                .map(|r| r.name.to_ascii_lowercase())
                .collect()
        };
        want_bounded.sort();
        let current = sync.filter(|s| s.leader.eq_ignore_ascii_case(&me) && s.epoch == g.epoch);
        let lower = |v: &Vec<String>| {
            let mut v: Vec<String> = v.iter().map(|m| m.to_ascii_lowercase()).collect();
            v.sort();
            v
        };
        let have: Vec<String> = current.map(|s| lower(&s.members)).unwrap_or_default();
        let have_bounded: Vec<String> = current.map(|s| lower(&s.bounded)).unwrap_or_default();
        if current.is_some() && want == have && want_bounded == have_bounded {
            return Ok(());
        }
        let s = SyncKey {
            leader: me,
            epoch: g.epoch,
            members: want.clone(),
            bounded: want_bounded.clone(),
        };
        if self.write_sync(inner, ha, &name, &s, guard)? {
            tracing::info!(group = %name, from = ?have, to = ?want, bounded_from = ?have_bounded, bounded_to = ?want_bounded, "HA: secondaries counted");
        }
        Ok(())
    }
}

/// The epoch a new term of `me` starts: the same one for the primary that
/// takes its own key back at the published epoch, else one past every
/// epoch seen.
fn next_epoch(me: &str, g: &AgState, sync: Option<&SyncKey>) -> u64 {
    let same = g.primary.eq_ignore_ascii_case(me)
        && sync.is_none_or(|s| s.leader.eq_ignore_ascii_case(me) && s.epoch == g.epoch);
    if same {
        g.epoch
    } else {
        g.epoch.max(sync.map_or(0, |s| s.epoch)) + 1
    }
}

/// This node is `g`'s primary here and takes writes (not RESOLVING).
fn locally_writable(inner: &Inner, g: &AgState) -> bool {
    g.primary.eq_ignore_ascii_case(&inner.cfg.name)
        && !inner
            .resolving
            .lock()
            .iter()
            .any(|r| r.eq_ignore_ascii_case(&g.def.name))
}

/// This node's view of one group, for its registration and the election.
fn local_group(inner: &Inner, g: &AgState) -> MemberGroup {
    let me = &inner.cfg.name;
    let role = if g.primary.eq_ignore_ascii_case(me) {
        if locally_writable(inner, g) {
            "primary"
        } else {
            "resolving"
        }
    } else {
        "secondary"
    };
    let mut hardened = BTreeMap::new();
    for db in &g.def.databases {
        if let Ok(d) = inner.instance.database(db) {
            let l = d.log();
            hardened.insert(db.to_ascii_lowercase(), l.hardened_lsn());
        }
    }
    let mut followed = g.followed.clone();
    if g.primary.eq_ignore_ascii_case(me) {
        // A primary's log is its own epoch's.
        for db in &g.def.databases {
            followed.entry(db.to_ascii_lowercase()).or_insert(g.epoch);
        }
    }
    MemberGroup {
        role: role.into(),
        epoch: g.epoch,
        primary: g.primary.clone(),
        followed,
        hardened,
        sync_state: Default::default(),
    }
}

fn local_member(inner: &Inner, ha: &HaShared) -> Member {
    let groups = inner.state.lock().groups.clone();
    let rows = crate::status::rows(inner);
    let mut out = BTreeMap::new();
    for g in &groups {
        let mut mg = local_group(inner, g);
        for r in rows
            .iter()
            .filter(|r| r.is_local && r.group_name.eq_ignore_ascii_case(&g.def.name))
        {
            mg.sync_state.insert(
                r.database_name.to_ascii_lowercase(),
                r.synchronization_state_desc.to_string(),
            );
        }
        out.insert(g.def.name.to_ascii_lowercase(), mg);
    }
    Member {
        name: inner.cfg.name.clone(),
        sql: ha.cfg.sql_addr.clone(),
        endpoint: inner.endpoint_addr.lock().map(|a| a.to_string()),
        api: ha.cfg.api_addr.clone(),
        groups: out,
    }
}
