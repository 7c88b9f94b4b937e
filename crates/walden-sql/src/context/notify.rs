//! LISTEN / NOTIFY / UNLISTEN and `pg_notify`, as PostgreSQL 15 runs them.
//!
//! A statement queues its action on the transaction (`Transaction::on_commit`,
//! cut back by ROLLBACK TO, dropped by ROLLBACK); once the commit succeeds
//! the session applies the LISTEN/UNLISTEN actions to its [`Listener`], then
//! hands the notifications to the [`Hub`], which appends each to the queue
//! of every session of the database listening on its channel (the notifier
//! too) and wakes them. The wire server drains a session's queue while it is
//! idle outside a transaction block and before each ReadyForQuery, sending
//! NotificationResponse messages; a channel unlistened since a notification
//! was queued drops it there, as PostgreSQL checks when it reads its queue.
//!
//! Notifications are not logged: as in PostgreSQL, they go to sessions
//! connected now and do not survive a restart or reach a secondary.

use crate::error::{ErrorKind, Result, SqlError};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use walden_engine::Transaction;

/// PostgreSQL's limit on a payload (NOTIFY_PAYLOAD_MAX_LENGTH - 1 bytes).
pub const MAX_PAYLOAD: usize = 7999;
/// A channel name's limit (NAMEDATALEN - 1 bytes).
pub const MAX_CHANNEL: usize = 63;
/// The most bytes one session's queue holds. A notifying commit that would
/// push a listener past it fails (54000), as PostgreSQL's does when its
/// queue is full; the listener must read what it has first.
const MAX_QUEUED_BYTES: usize = 64 << 20;

/// One notification, as a listener receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    /// The session id (the pid of BackendKeyData) of the notifier.
    pub pid: u32,
    pub channel: String,
    pub payload: String,
}

impl Notification {
    fn bytes(&self) -> usize {
        self.channel.len() + self.payload.len() + 16
    }
}

/// What a transaction queued for its commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pending {
    Notify {
        channel: String,
        payload: String,
    },
    Listen(String),
    /// `UNLISTEN channel`, or `UNLISTEN *` (`None`).
    Unlisten(Option<String>),
}

/// A session's side: the channels it listens on (committed LISTENs, in the
/// order they were made, as `pg_listening_channels()` lists them) and the
/// notifications queued for it.
pub struct Listener {
    spid: u32,
    db: u32,
    state: Mutex<State>,
    /// Called when a notification is queued (the wire server's wake-up).
    waker: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// The session is inside a transaction block (as its connection last
    /// reported it): it keeps every notification until the block ends.
    in_block: AtomicBool,
}

#[derive(Default)]
struct State {
    channels: Vec<String>,
    queue: VecDeque<Notification>,
    queued_bytes: usize,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("spid", &self.spid)
            .finish()
    }
}

impl Listener {
    pub(crate) fn new(spid: u32, db: u32) -> Arc<Listener> {
        Arc::new(Listener {
            spid,
            db,
            state: Default::default(),
            waker: Default::default(),
            in_block: AtomicBool::new(false),
        })
    }

    /// Whether the session is inside a transaction block now.
    pub(crate) fn set_in_block(&self, in_block: bool) {
        self.in_block.store(in_block, Relaxed);
    }

    /// The channels listened on, in the order the LISTENs committed.
    pub fn channels(&self) -> Vec<String> {
        self.state.lock().channels.clone()
    }

    pub(crate) fn set_waker(&self, w: Option<Arc<dyn Fn() + Send + Sync>>) {
        *self.waker.lock() = w;
    }

    /// Takes the notifications queued, in the order their transactions
    /// committed, dropping those of channels no longer listened on.
    pub fn take(&self) -> Vec<Notification> {
        let mut st = self.state.lock();
        st.queued_bytes = 0;
        let q = std::mem::take(&mut st.queue);
        q.into_iter()
            .filter(|n| st.channels.contains(&n.channel))
            .collect()
    }
}

/// The instance's listeners, by database id.
#[derive(Default, Debug)]
pub struct Hub {
    dbs: Mutex<HashMap<u32, Vec<Arc<Listener>>>>,
}

impl Hub {
    /// Applies a committed transaction's actions: its LISTEN / UNLISTEN
    /// first (so a session that listens and notifies in one transaction
    /// hears itself, as in PostgreSQL), then delivers its notifications to
    /// the sessions of the database listening on its channel, and to those
    /// listening on anything that are inside a transaction block: as in
    /// PostgreSQL's shared queue, a listener reads each one against the
    /// channels it listens on when it reads it, after its block (so a
    /// LISTEN committed after the notification, but before the listener
    /// read its queue, still hears it).
    pub(crate) fn committed(&self, me: &Arc<Listener>, actions: Vec<Pending>) {
        let mut notes = Vec::new();
        for a in actions {
            match a {
                Pending::Listen(c) => {
                    let mut st = me.state.lock();
                    if !st.channels.contains(&c) {
                        st.channels.push(c);
                    }
                }
                Pending::Unlisten(Some(c)) => me.state.lock().channels.retain(|x| *x != c),
                Pending::Unlisten(None) => me.state.lock().channels.clear(),
                Pending::Notify { channel, payload } => notes.push(Notification {
                    pid: me.spid,
                    channel,
                    payload,
                }),
            }
        }
        self.register(me);
        if notes.is_empty() {
            return;
        }
        let listeners = self.dbs.lock().get(&me.db).cloned().unwrap_or_default();
        for l in listeners {
            let mut woke = false;
            {
                let mut st = l.state.lock();
                let in_block = l.in_block.load(Relaxed);
                if !st.channels.is_empty() {
                    for n in &notes {
                        let heard = st.channels.contains(&n.channel);
                        if heard || in_block {
                            st.queued_bytes += n.bytes();
                            st.queue.push_back(n.clone());
                            woke |= heard;
                        }
                    }
                }
            }
            if woke {
                if let Some(w) = l.waker.lock().clone() {
                    w();
                }
            }
        }
    }

    /// Before a commit that notifies: fails (54000) if a listener's queue
    /// has no room for its notifications.
    pub(crate) fn check_room(&self, db: u32, actions: &[Pending]) -> Result<()> {
        let bytes: usize = actions
            .iter()
            .map(|a| match a {
                Pending::Notify { channel, payload } => channel.len() + payload.len() + 16,
                _ => 0,
            })
            .sum();
        if bytes == 0 {
            return Ok(());
        }
        let listeners = self.dbs.lock().get(&db).cloned().unwrap_or_default();
        for l in listeners {
            if l.state.lock().queued_bytes + bytes > MAX_QUEUED_BYTES {
                return Err(SqlError::new(
                    ErrorKind::ProgramLimit,
                    format!(
                        "too many notifications in the NOTIFY queue (session {} has not read its notifications)",
                        l.spid
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The fraction of the queue limit the fullest listener of `db` uses
    /// (`pg_notification_queue_usage()`).
    pub(crate) fn usage(&self, db: u32) -> f64 {
        let listeners = self.dbs.lock().get(&db).cloned().unwrap_or_default();
        let most = listeners
            .iter()
            .map(|l| l.state.lock().queued_bytes)
            .max()
            .unwrap_or(0);
        most as f64 / MAX_QUEUED_BYTES as f64
    }

    /// Keeps `me` in its database's list while it listens on anything.
    fn register(&self, me: &Arc<Listener>) {
        let listening = !me.state.lock().channels.is_empty();
        let mut dbs = self.dbs.lock();
        let list = dbs.entry(me.db).or_default();
        let at = list.iter().position(|l| Arc::ptr_eq(l, me));
        match (listening, at) {
            (true, None) => list.push(me.clone()),
            (false, Some(i)) => {
                list.swap_remove(i);
            }
            _ => {}
        }
        if list.is_empty() {
            dbs.remove(&me.db);
        }
    }

    /// A session ends: it listens on nothing any more.
    pub(crate) fn leave(&self, me: &Arc<Listener>) {
        me.state.lock().channels.clear();
        self.register(me);
    }
}

/// Checks a channel name and payload as `pg_notify` does (22023).
pub(crate) fn check(channel: &str, payload: &str) -> Result<()> {
    let bad = |m: &str| SqlError::new(ErrorKind::InvalidParameter, m.to_string());
    if channel.is_empty() {
        return Err(bad("channel name cannot be empty"));
    }
    if channel.len() > MAX_CHANNEL {
        return Err(bad("channel name too long"));
    }
    if payload.len() > MAX_PAYLOAD {
        return Err(bad("payload string too long"));
    }
    // The wire sends both as C strings.
    if channel.contains('\0') || payload.contains('\0') {
        return Err(bad("a channel name or payload cannot contain a zero byte"));
    }
    Ok(())
}

/// Queues a notification on `tx` (checked first), unless the transaction
/// already queued the same channel and payload: PostgreSQL folds those.
pub(crate) fn notify(tx: &Transaction, channel: &str, payload: &str) -> Result<()> {
    check(channel, payload)?;
    refuse_on_secondary(tx, "NOTIFY")?;
    let dup = tx.with_on_commit(|items| {
        items.iter().any(|d| {
            matches!(d.downcast_ref::<Pending>(),
                Some(Pending::Notify { channel: c, payload: p }) if c == channel && p == payload)
        })
    });
    if !dup {
        tx.on_commit(Box::new(Pending::Notify {
            channel: channel.to_string(),
            payload: payload.to_string(),
        }));
    }
    Ok(())
}

/// Queues a LISTEN or UNLISTEN on `tx`: it takes effect at commit.
pub(crate) fn listen(tx: &Transaction, action: Pending) -> Result<()> {
    let what = match action {
        Pending::Listen(_) => "LISTEN",
        _ => "UNLISTEN",
    };
    refuse_on_secondary(tx, what)?;
    tx.on_commit(Box::new(action));
    Ok(())
}

/// A secondary applies its primary's log: PostgreSQL refuses these during
/// recovery, and so does Walden (a notification there would reach nobody).
fn refuse_on_secondary(tx: &Transaction, what: &str) -> Result<()> {
    if tx.database().is_secondary() {
        return Err(SqlError::new(
            ErrorKind::ReadOnly,
            format!("cannot execute {what} during recovery"),
        ));
    }
    Ok(())
}

/// The transaction's after-commit work that is ours, in order.
pub(crate) fn pending_of(items: Vec<walden_engine::Deferred>) -> Vec<Pending> {
    items
        .into_iter()
        .filter_map(|d| d.downcast::<Pending>().ok().map(|b| *b))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notify(c: &str, p: &str) -> Pending {
        Pending::Notify {
            channel: c.into(),
            payload: p.into(),
        }
    }

    #[test]
    fn a_commit_reaches_every_listener_of_the_channel_in_its_database() {
        let hub = Hub::default();
        let (a, b, other_db) = (
            Listener::new(1, 7),
            Listener::new(2, 7),
            Listener::new(3, 8),
        );
        hub.committed(&a, vec![Pending::Listen("c".into())]);
        hub.committed(&b, vec![Pending::Listen("d".into())]);
        hub.committed(&other_db, vec![Pending::Listen("c".into())]);
        hub.committed(&b, vec![notify("c", "x"), notify("d", "y")]);
        assert_eq!(
            a.take(),
            vec![Notification {
                pid: 2,
                channel: "c".into(),
                payload: "x".into()
            }]
        );
        assert_eq!(b.take().len(), 1);
        assert!(other_db.take().is_empty());
    }

    #[test]
    fn listen_then_notify_in_one_commit_hears_itself_and_unlisten_drops_queued() {
        let hub = Hub::default();
        let a = Listener::new(1, 7);
        hub.committed(&a, vec![Pending::Listen("c".into()), notify("c", "")]);
        hub.committed(&a, vec![notify("c", "again")]);
        hub.committed(&a, vec![Pending::Unlisten(None)]);
        assert!(a.take().is_empty());
        assert!(a.channels().is_empty());
        assert!(hub.dbs.lock().is_empty());
    }

    #[test]
    fn names_and_payloads_are_checked_as_postgresql_does() {
        assert!(check("", "").is_err());
        assert!(check(&"c".repeat(64), "").is_err());
        assert!(check(&"c".repeat(63), &"p".repeat(7999)).is_ok());
        assert!(check("c", &"p".repeat(8000)).is_err());
    }
}
