//! The primary side: one link per (secondary, database) that connects to the
//! secondary's endpoint, agrees where to start (resume at its hardened LSN,
//! or seed it with an image), ships the retained log it lacks and then the
//! live log as the log manager writes it; and the hook through which durable
//! commits wait for synchronous secondaries.

use crate::config::{AgState, AvailabilityMode};
use crate::proto::{Hello, HelloReply, Msg, MAX_SEED_CHUNK, SEED_FORMAT};
use crate::status::SyncState;
use crate::{Inner, LinkStatus};
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use walden_engine::{Database, RemoteHarden, WaitType};
use walden_log::{LogWrite, Lsn, Subscription, WaitSinks};

/// Largest log message sent at once during catch-up.
const CATCH_UP_CHUNK: usize = 1 << 20;

/// Starts the links of a group this replica is primary of, and installs the
/// commit hook on its databases.
pub(crate) fn start_group(inner: &Arc<Inner>, g: &AgState) {
    let me = inner.cfg.name.clone();
    inner.sync.lock().demoted.retain(|d| !g.def.has_database(d));
    for db in &g.def.databases {
        if let Ok(d) = inner.instance.database(db) {
            d.set_remote_harden(Some(Arc::new(CommitHook {
                inner: Arc::downgrade(inner),
                db: db.to_ascii_lowercase(),
            })));
        }
    }
    for r in &g.def.replicas {
        if r.name.eq_ignore_ascii_case(&me) {
            continue;
        }
        for db in &g.def.databases {
            let id = {
                let mut t = inner.sync.lock();
                let id = t.next_id;
                t.next_id += 1;
                t.links.push(LinkStatus {
                    id,
                    ag: g.def.name.clone(),
                    replica: r.name.clone(),
                    db: db.to_ascii_lowercase(),
                    mode: r.mode,
                    state: SyncState::NotSynchronizing,
                    connected: false,
                    live: false,
                    sent: 0,
                    acked_hardened: 0,
                    acked_applied: 0,
                    last_heard: Instant::now(),
                    behind_since: None,
                    last_ack_advance: None,
                    reset: false,
                    stopped: false,
                    last_error: None,
                    retain_from: None,
                    needs_reseed: false,
                    bound: r.lag_bound(),
                    bound_counted: false,
                    bound_out_since: None,
                });
                id
            };
            let inner2 = inner.clone();
            inner.spawn(run_link(inner2, id));
        }
    }
}

/// Stops a group's links. `demoted`: this replica is no longer primary, so
/// commits waiting on its secondaries fail instead of being acknowledged.
pub(crate) fn stop_group(inner: &Arc<Inner>, ag: &str, demoted: bool) {
    let mut dbs = Vec::new();
    {
        let mut t = inner.sync.lock();
        for l in t.links.iter_mut().filter(|l| l.ag.eq_ignore_ascii_case(ag)) {
            l.stopped = true;
            l.reset = true;
            dbs.push(l.db.clone());
        }
        t.links.retain(|l| !l.ag.eq_ignore_ascii_case(ag));
        if demoted {
            t.demoted.extend(dbs.iter().cloned());
        }
        inner.sync_cv.notify_all();
    }
    for db in dbs {
        if let Ok(d) = inner.instance.database(&db) {
            d.set_replica_retention(None);
            if !demoted {
                d.set_remote_harden(None);
            }
        }
    }
}

/// Reads or updates a link without waking committers (for changes no
/// commit waits on).
fn status_quiet<T>(inner: &Inner, id: u64, f: impl FnOnce(&mut LinkStatus) -> T) -> Option<T> {
    let mut t = inner.sync.lock();
    t.links.iter_mut().find(|l| l.id == id).map(f)
}

fn status<T>(inner: &Inner, id: u64, f: impl FnOnce(&mut LinkStatus) -> T) -> Option<T> {
    let mut t = inner.sync.lock();
    let r = t.links.iter_mut().find(|l| l.id == id).map(f);
    inner.sync_cv.notify_all();
    r
}

async fn run_link(inner: Arc<Inner>, id: u64) {
    let mut backoff = Duration::from_millis(100);
    loop {
        if inner.closed.load(SeqCst) || status(&inner, id, |l| l.stopped).unwrap_or(true) {
            return;
        }
        let started = Instant::now();
        let res = link_once(&inner, id).await;
        let Some((replica, db)) = status(&inner, id, |l| {
            l.connected = false;
            l.live = false;
            l.reset = false;
            if l.state != SyncState::NotSynchronizing {
                l.state = SyncState::NotSynchronizing;
            }
            if let Err(e) = &res {
                l.last_error = Some(e.clone());
            }
            (l.replica.clone(), l.db.clone())
        }) else {
            return;
        };
        update_retention(&inner, &db);
        if let Err(e) = res {
            tracing::debug!(replica = %replica, database = %db, error = %e, "replication link down");
        }
        if started.elapsed() > Duration::from_secs(5) {
            backoff = Duration::from_millis(100);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}

/// Keeps the log that connected (or recently connected) secondaries still
/// need, up to `max_retained_log_bytes`.
pub(crate) fn update_retention(inner: &Inner, db: &str) {
    let Ok(d) = inner.instance.database(db) else {
        return;
    };
    let end = d.log().end_lsn();
    let max = inner.cfg.max_retained_log_bytes;
    let mut t = inner.sync.lock();
    let mut min: Option<Lsn> = None;
    for l in t.links.iter_mut().filter(|l| l.db == db) {
        if let Some(r) = l.retain_from {
            if end.saturating_sub(r) > max {
                // Too far behind: let the log go; it will be reseeded.
                tracing::warn!(replica = %l.replica, database = %db, "secondary fell behind the retention limit; it will need a reseed");
                l.retain_from = None;
                l.needs_reseed = true;
            } else {
                min = Some(min.map_or(r, |m| m.min(r)));
            }
        }
    }
    drop(t);
    d.set_replica_retention(min);
}

/// Streams a seed: the image is read on a blocking thread and sent as it is
/// read, through a queue of a few chunks (the primary holds at most about
/// `SEED_QUEUE + 2` chunks and one image block of it). Returns the LSN the
/// secondary's log continues at.
async fn send_seed(
    inner: &Arc<Inner>,
    id: u64,
    conn: &mut crate::transport::Conn,
    db: &Arc<walden_engine::Database>,
    db_name: &str,
    seed_id: u64,
) -> Result<Lsn, String> {
    const SEED_QUEUE: usize = 4;
    let chunk = inner.cfg.seed_chunk_bytes.clamp(1, MAX_SEED_CHUNK);
    let (tx, mut rx) = mpsc::channel::<Msg>(SEED_QUEUE);
    let d2 = db.clone();
    let reader = tokio::task::spawn_blocking(move || {
        let gone = || walden_engine::EngineError::Replica("the seed's connection closed".into());
        let mut crc = 0u32;
        let (lsn, len) = d2.seed_stream(
            chunk,
            &mut |lsn| {
                tx.blocking_send(Msg::SeedBegin {
                    format: SEED_FORMAT,
                    lsn,
                    seed_id,
                })
                .map_err(|_| gone())
            },
            &mut |piece| {
                crc = crc32c::crc32c_append(crc, piece);
                tx.blocking_send(Msg::SeedChunk(piece.to_vec()))
                    .map_err(|_| gone())
            },
        )?;
        tx.blocking_send(Msg::SeedEnd { len, crc32c: crc })
            .map_err(|_| gone())?;
        Ok::<_, walden_engine::EngineError>(lsn)
    });
    let mut chunks = 0usize;
    while let Some(m) = rx.recv().await {
        match &m {
            Msg::SeedBegin { lsn, .. } => {
                // The log after the image must outlive a long seed.
                let lsn = *lsn;
                status(inner, id, |l| l.retain_from = Some(lsn));
                update_retention(inner, db_name);
            }
            Msg::SeedChunk(_) => {
                chunks += 1;
                if chunks > inner.cfg.test_seed_cut_after
                    && inner
                        .cfg
                        .test_seed_cuts
                        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                        .is_ok()
                {
                    return Err(format!("seed cut off after {} chunks (test)", chunks - 1));
                }
            }
            _ => {}
        }
        conn.send(&m).await.map_err(|e| e.to_string())?;
    }
    let lsn = reader
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("seeding failed: {e}"))?;
    // The secondary builds the new copy before it reads on: wait for its
    // acknowledgement, so that the build is not taken for silence once the
    // link is live (the link would drop and seed again). The bound only
    // stops a vanished peer from holding the link forever.
    match tokio::time::timeout(SEED_BUILD_TIMEOUT, conn.recv()).await {
        Ok(Ok(Msg::Ack { .. })) => Ok(lsn),
        Ok(Ok(other)) => Err(format!(
            "expected the seed's acknowledgement, got {other:?}"
        )),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the secondary did not acknowledge the seed in time".into()),
    }
}

/// How long a secondary may take to build a seeded copy.
const SEED_BUILD_TIMEOUT: Duration = Duration::from_secs(3600);

async fn link_once(inner: &Arc<Inner>, id: u64) -> Result<(), String> {
    let Some((ag, replica, db_name)) = status(inner, id, |l| {
        (l.ag.clone(), l.replica.clone(), l.db.clone())
    }) else {
        return Ok(());
    };
    let g = inner
        .state
        .lock()
        .groups
        .iter()
        .find(|g| g.def.name.eq_ignore_ascii_case(&ag))
        .cloned()
        .ok_or("group dropped")?;
    let addr = g
        .def
        .replica(&replica)
        .ok_or("replica removed")?
        .address()?;
    let mut conn = crate::transport::connect(inner, &addr).await?;
    let hello = Hello {
        ag: g.clone(),
        to: replica.clone(),
        database: db_name.clone(),
        ha_cluster: inner.ha.as_ref().map(|h| h.cfg.cluster.clone()),
    };
    conn.send(&Msg::Hello(hello))
        .await
        .map_err(|e| e.to_string())?;
    let reply = tokio::time::timeout(g.def.session_timeout(), conn.recv())
        .await
        .map_err(|_| "no answer to hello".to_string())?
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                inner.auth_failed(&addr, &e.to_string());
            }
            e.to_string()
        })?;
    let have = match reply {
        Msg::HelloReply(HelloReply::State { replica }) => replica,
        Msg::HelloReply(HelloReply::Stale { epoch, primary }) => {
            crate::failover::step_down(inner, &ag, epoch, &primary);
            return Err(format!(
                "replica {replica} follows epoch {epoch} (primary {primary}); stepped down"
            ));
        }
        Msg::HelloReply(HelloReply::Refused(r)) => return Err(format!("refused: {r}")),
        other => return Err(format!("unexpected answer {other:?}")),
    };
    // Another replica accepted this epoch: a resolving primary may write.
    crate::failover::resolved(inner, &ag);

    let db = inner
        .instance
        .database(&db_name)
        .map_err(|e| e.to_string())?;
    // Subscribe before choosing where to start, so nothing written from here
    // on is missed; the catch-up read covers everything before.
    let events = db.log().subscribe(inner.cfg.max_send_queue_bytes);
    let seed_id = g.seeds.get(&db_name).copied().unwrap_or(0);
    let oldest = db
        .log()
        .segments()
        .first()
        .map(|s| s.first_lsn)
        .unwrap_or(0);
    let hardened = db.log().hardened_lsn();
    let forced = status(inner, id, |l| l.needs_reseed).unwrap_or(false);
    let resume = match have {
        _ if forced => None,
        Some((s, epoch, end)) if s == seed_id => {
            let valid_to = if epoch >= g.epoch {
                Some(end)
            } else {
                g.divergence_point(&db_name, epoch)
            };
            match valid_to {
                Some(v) if end <= v && end <= hardened && end >= oldest => Some(end),
                Some(v) if end > v => {
                    tracing::warn!(replica = %replica, database = %db_name,
                        from = v, to = end,
                        "secondary holds log the new primary never had; it is reseeded and that tail discarded");
                    None
                }
                _ => None,
            }
        }
        _ => None,
    };
    let start = match resume {
        Some(l) => l,
        None => {
            let lsn = send_seed(inner, id, &mut conn, &db, &db_name, seed_id).await?;
            tracing::info!(replica = %replica, database = %db_name, lsn, "seeded secondary");
            // Only now: a seed cut off midway must be sent again.
            status(inner, id, |l| l.needs_reseed = false);
            lsn
        }
    };
    status(inner, id, |l| {
        l.connected = true;
        l.state = SyncState::Synchronizing;
        l.sent = start;
        l.acked_hardened = start;
        l.acked_applied = start;
        l.last_heard = Instant::now();
        l.retain_from = Some(start);
        l.last_error = None;
    });
    update_retention(inner, &db_name);

    // Catch up: harden what is buffered (so everything announced before we
    // subscribed is on disk), then read [start, target) back.
    let d2 = db.clone();
    let target = tokio::task::spawn_blocking(move || d2.log().flush(&[]))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    if target > start {
        let (tx, mut rx) = mpsc::channel::<(Lsn, Vec<u8>)>(4);
        let d2 = db.clone();
        let reader = tokio::task::spawn_blocking(move || {
            let mut chunk = Vec::new();
            let mut chunk_lsn = start;
            let r = d2.log().read_range(start, target, &mut |s, _e, rec| {
                if chunk.is_empty() {
                    chunk_lsn = s;
                }
                chunk.extend_from_slice(&(rec.len() as u32).to_le_bytes());
                chunk.extend_from_slice(rec);
                if chunk.len() >= CATCH_UP_CHUNK {
                    let c = std::mem::take(&mut chunk);
                    if tx.blocking_send((chunk_lsn, c)).is_err() {
                        return Err(walden_log::LogError::Closed);
                    }
                }
                Ok(())
            });
            if !chunk.is_empty() {
                let _ = tx.blocking_send((chunk_lsn, chunk));
            }
            r
        });
        while let Some((lsn, frames)) = rx.recv().await {
            let end = lsn + frames.len() as u64;
            conn.send(&Msg::Log { lsn, frames })
                .await
                .map_err(|e| e.to_string())?;
            status(inner, id, |l| l.sent = end);
        }
        reader
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("reading log for catch-up: {e}"))?;
    }

    // Live shipping runs on two plain threads over the now blocking socket:
    // one takes the log manager's events and writes them (no hop through
    // the runtime between the flusher and the socket), one reads acks and
    // wakes committers. Each hand-off costs tens of microseconds, and a
    // synchronous commit pays for every one of them.
    let (reader, writer, stream) = conn.into_blocking()?;
    let ack_stream = stream.try_clone().map_err(|e| e.to_string())?;
    ack_stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let inner_r = inner.clone();
    let db_r = db.clone();
    let done_r = done.clone();
    let acks = tokio::task::spawn_blocking(move || {
        let r = read_acks(&inner_r, id, &db_r, reader, ack_stream, &done_r);
        done_r.store(true, SeqCst);
        r
    });
    let inner_w = inner.clone();
    let done_w = done.clone();
    let pos = target.max(start);
    status_quiet(inner, id, |l| {
        l.live = true;
        l.last_heard = Instant::now();
    });
    let ship = tokio::task::spawn_blocking(move || {
        let Some(_registered) = inner_w.register(&stream) else {
            done_w.store(true, SeqCst);
            return Err("shutting down".to_string());
        };
        let r = ship_live(&inner_w, id, &db, writer, &stream, events, pos, &done_w);
        done_w.store(true, SeqCst);
        r
    });
    let r1 = ship.await.map_err(|e| e.to_string())?;
    let r2 = acks.await.map_err(|e| e.to_string())?;
    r1.and(r2)
}

fn read_acks(
    inner: &Inner,
    id: u64,
    db: &Database,
    mut r: crate::transport::FrameReader,
    s: std::net::TcpStream,
    done: &std::sync::atomic::AtomicBool,
) -> Result<(), String> {
    use std::io::ErrorKind::{TimedOut, WouldBlock};
    loop {
        if done.load(SeqCst) {
            let _ = s.shutdown(std::net::Shutdown::Both);
            return Ok(());
        }
        // A reset link ends here too: the shipping thread may be blocked
        // writing to a secondary that stopped reading, and only closing the
        // socket frees it.
        if status_quiet(inner, id, |l| l.reset || l.stopped).unwrap_or(true) {
            let _ = s.shutdown(std::net::Shutdown::Both);
            return Err("link reset".into());
        }
        match r.recv() {
            Ok(Msg::Ack { hardened, applied }) => on_ack(inner, id, db, hardened, applied),
            Ok(other) => return Err(format!("unexpected message {other:?}")),
            Err(e) if matches!(e.kind(), WouldBlock | TimedOut) => {}
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                inner.auth_failed(&peer_of(&s), &e.to_string());
                let _ = s.shutdown(std::net::Shutdown::Both);
                return Err(format!("refused the secondary's frame: {e}"));
            }
            Err(e) => return Err(format!("connection lost: {e}")),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn ship_live(
    inner: &Inner,
    id: u64,
    db: &Database,
    mut w: crate::transport::FrameWriter,
    sock: &std::net::TcpStream,
    events: Subscription,
    mut pos: Lsn,
    done: &std::sync::atomic::AtomicBool,
) -> Result<(), String> {
    use std::sync::mpsc::RecvTimeoutError;
    let mut carry: Vec<u8> = Vec::new();
    let beat_every = inner.cfg.heartbeat;
    let mut last_beat = Instant::now() - beat_every;
    let mut told_synchronized = false;
    let res = loop {
        if done.load(SeqCst) {
            break Err("connection lost".to_string());
        }
        match events.recv_timeout(Duration::from_millis(50)) {
            Ok(LogWrite { lsn, bytes, .. }) => {
                // Keep only what lies past what was shipped, then send the
                // whole records (a record may span two writes).
                let end = lsn + bytes.len() as u64;
                let send_from = pos + carry.len() as u64;
                if end > send_from {
                    if lsn > send_from {
                        break Err(format!(
                            "gap in shipped log: have {send_from}, next write at {lsn}"
                        ));
                    }
                    carry.extend_from_slice(&bytes[(send_from - lsn) as usize..]);
                    let whole = whole_frames(&carry);
                    if whole > 0 {
                        let frames: Vec<u8> = carry.drain(..whole).collect();
                        let msg = Msg::Log { lsn: pos, frames };
                        pos += whole as u64;
                        if let Err(e) = w.send(&msg) {
                            break Err(e.to_string());
                        }
                        let p = pos;
                        status_quiet(inner, id, |l| l.sent = p);
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) if events.overflowed() => {
                break Err(format!(
                    "the secondary fell more than {} KB of log behind; reconnecting to catch up from the log files",
                    inner.cfg.max_send_queue_bytes >> 10
                ))
            }
            Err(RecvTimeoutError::Disconnected) => break Err("log closed".to_string()),
        }
        let (stop, synchronized) = status_quiet(inner, id, |l| {
            (l.reset || l.stopped, l.state == SyncState::Synchronized)
        })
        .unwrap_or((true, false));
        if stop {
            break Err("link reset".to_string());
        }
        // Heartbeats, and at once when the secondary becomes SYNCHRONIZED
        // (so a planned failover right after is allowed).
        if last_beat.elapsed() >= beat_every || synchronized != told_synchronized {
            told_synchronized = synchronized;
            last_beat = Instant::now();
            let m = Msg::Heartbeat {
                end: db.log().end_lsn(),
                hardened: db.log().hardened_lsn(),
                synchronized,
            };
            if let Err(e) = w.send(&m) {
                break Err(e.to_string());
            }
        }
    };
    let _ = sock.shutdown(std::net::Shutdown::Both);
    res
}

/// The peer address of a socket, for logs.
pub(crate) fn peer_of(s: &std::net::TcpStream) -> String {
    s.peer_addr()
        .map_or_else(|_| "unknown peer".to_string(), |a| a.to_string())
}

/// Length of the leading whole records in a record stream.
fn whole_frames(buf: &[u8]) -> usize {
    let mut i = 0;
    while buf.len() >= i + 4 {
        let n = u32::from_le_bytes(buf[i..i + 4].try_into().unwrap()) as usize;
        if buf.len() < i + 4 + n {
            break;
        }
        i += 4 + n;
    }
    i
}

fn on_ack(inner: &Inner, id: u64, db: &Database, hardened: Lsn, applied: Lsn) {
    let local = db.log().hardened_lsn();
    let mut t = inner.sync.lock();
    if let Some(l) = t.links.iter_mut().find(|l| l.id == id) {
        l.last_heard = Instant::now();
        let advanced = hardened > l.acked_hardened;
        if advanced {
            l.last_ack_advance = Some(std::time::SystemTime::now());
        }
        l.acked_hardened = l.acked_hardened.max(hardened);
        l.acked_applied = l.acked_applied.max(applied);
        l.retain_from = Some(l.acked_hardened);
        if l.acked_hardened >= local {
            l.behind_since = None;
            // Caught up with everything this primary has acknowledged: from
            // now on durable commits wait for it (sync mode).
            if l.mode == AvailabilityMode::SynchronousCommit && l.state != SyncState::Synchronized {
                tracing::info!(replica = %l.replica, database = %l.db, lsn = hardened, "secondary SYNCHRONIZED");
                l.state = SyncState::Synchronized;
            }
        } else if l.behind_since.is_none() {
            l.behind_since = Some(Instant::now());
        }
        crate::lag_bound::on_ack(l, advanced, local);
        let db = l.db.clone();
        crate::lag_bound::prune(&mut t, &db);
    }
    inner.sync_cv.notify_all();
}

/// Drops synchronous secondaries that have been silent for the group's
/// session timeout, and keeps log retention current.
pub(crate) async fn monitor(inner: Arc<Inner>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut n = 0u64;
    loop {
        tick.tick().await;
        if inner.closed.load(SeqCst) {
            return;
        }
        let timeouts: std::collections::HashMap<String, Duration> = inner
            .state
            .lock()
            .groups
            .iter()
            .map(|g| (g.def.name.to_ascii_lowercase(), g.def.session_timeout()))
            .collect();
        let mut dbs = Vec::new();
        {
            let mut t = inner.sync.lock();
            for l in t.links.iter_mut() {
                let to = timeouts
                    .get(&l.ag.to_ascii_lowercase())
                    .copied()
                    .unwrap_or(Duration::from_secs(10));
                // Any live secondary (sync or async) silent that long is dead
                // to this primary: its link is torn down (which also frees a
                // link blocked writing to it) and reconnects when it answers.
                // Not while seeding or catching up, which send no heartbeats.
                if l.live && !l.reset && l.last_heard.elapsed() > to {
                    tracing::warn!(replica = %l.replica, database = %l.db,
                        "secondary silent for the session timeout: NOT SYNCHRONIZING");
                    l.state = SyncState::NotSynchronizing;
                    l.reset = true;
                }
                crate::lag_bound::check(l, to);
                dbs.push(l.db.clone());
            }
            inner.sync_cv.notify_all();
        }
        n += 1;
        if n.is_multiple_of(10) {
            dbs.sort();
            dbs.dedup();
            for db in dbs {
                update_retention(&inner, &db);
            }
        }
    }
}

/// What a durable commit on a primary database waits on.
struct CommitHook {
    inner: std::sync::Weak<Inner>,
    db: String,
}

impl CommitHook {
    fn required(inner: &Inner, db: &str) -> u32 {
        inner
            .state
            .lock()
            .groups
            .iter()
            .find(|g| g.def.has_database(db))
            .map_or(0, |g| g.def.required_synchronized_secondaries_to_commit)
    }

    /// The group (lower case) this database belongs to.
    fn group(inner: &Inner, db: &str) -> Option<String> {
        inner
            .state
            .lock()
            .groups
            .iter()
            .find(|g| g.def.has_database(db))
            .map(|g| g.def.name.to_ascii_lowercase())
    }

    /// HA: whether this node holds the group's leader key under a live
    /// lease (always true without HA).
    fn leased(inner: &Inner, group: Option<&str>) -> bool {
        match (&inner.ha, group) {
            (Some(h), Some(g)) => h.may_acknowledge(g),
            _ => true,
        }
    }
}

impl RemoteHarden for CommitHook {
    fn check_quorum(&self) -> Result<(), String> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(());
        };
        let t = inner.sync.lock();
        if t.demoted.contains(&self.db) {
            return Err(
                "this replica is no longer the primary (the availability group failed over)".into(),
            );
        }
        drop(t);
        if inner.ha.is_some() {
            // A group just created (or a primary just confirmed) waits a
            // moment for the agent to take the leader key.
            let group = Self::group(&inner, &self.db);
            let deadline = Instant::now() + Duration::from_secs(2);
            while !Self::leased(&inner, group.as_deref()) {
                if Instant::now() >= deadline || inner.closed.load(SeqCst) {
                    return Err(format!(
                        "this replica does not hold the HA leader lease of availability group \"{}\"; the commit was not made",
                        group.unwrap_or_default()
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let need = Self::required(&inner, &self.db);
        if need == 0 {
            return Ok(());
        }
        let t = inner.sync.lock();
        let have = t
            .links
            .iter()
            .filter(|l| {
                l.db == self.db
                    && l.mode == AvailabilityMode::SynchronousCommit
                    && l.state == SyncState::Synchronized
            })
            .count() as u32;
        if have < need {
            return Err(format!(
                "REQUIRED_SYNCHRONIZED_SECONDARIES_TO_COMMIT is {need} but {have} synchronous secondaries of database \"{}\" are SYNCHRONIZED; the commit was not made",
                self.db
            ));
        }
        Ok(())
    }

    fn wait(&self, lsn: Lsn, waits: WaitSinks<'_>) -> Result<bool, String> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(false);
        };
        let need = Self::required(&inner, &self.db);
        let group = Self::group(&inner, &self.db);
        let t0 = Instant::now();
        let mut t = inner.sync.lock();
        let mut waited = false;
        let mut mirrored = false;
        let res = loop {
            if t.demoted.contains(&self.db) {
                break Err("this replica stopped being the primary before the secondaries confirmed the commit".to_string());
            }
            let mut pending = false;
            let mut confirmed = 0u32;
            // HA: a secondary in the published sync set counts until the
            // set without it is in etcd (it may be elected meanwhile).
            let counted = group
                .as_ref()
                .and_then(|g| t.ha_counted.get(g))
                .cloned()
                .unwrap_or_default();
            for l in t
                .links
                .iter()
                .filter(|l| l.db == self.db && l.mode == AvailabilityMode::SynchronousCommit)
            {
                let published = counted.iter().any(|r| r.eq_ignore_ascii_case(&l.replica));
                if l.state != SyncState::Synchronized && !published {
                    continue;
                }
                mirrored = true;
                if l.acked_hardened >= lsn {
                    confirmed += 1;
                } else {
                    pending = true;
                }
            }
            if !pending {
                if confirmed < need {
                    break Err(format!(
                        "{confirmed} of the {need} required synchronous secondaries confirmed it"
                    ));
                }
                break Ok(mirrored);
            }
            waited = true;
            inner.sync_cv.wait_for(&mut t, Duration::from_millis(100));
        };
        let synced = t0.elapsed();
        // Then the bounded-lag asynchronous secondaries.
        let lagged = match &res {
            Ok(_) => match crate::lag_bound::wait(&inner, &mut t, &self.db, lsn) {
                Ok(d) => d,
                Err(e) => {
                    drop(t);
                    return Err(e);
                }
            },
            Err(_) => None,
        };
        drop(t);
        if waited {
            for w in waits {
                w.record(WaitType::HadrSyncCommit, synced);
            }
        }
        if let Some(d) = lagged {
            for w in waits {
                w.record(WaitType::HadrLagBound, d);
            }
        }
        // Fencing: no acknowledgement without the leader lease, checked
        // after the secondaries confirmed (the lease may have lapsed while
        // they did).
        if res.is_ok() && !Self::leased(&inner, group.as_deref()) {
            return Err(
                "this replica lost its HA leader lease before the commit could be acknowledged"
                    .into(),
            );
        }
        res
    }

    fn wait_lag_bound(&self, lsn: Lsn, waits: WaitSinks<'_>) -> Result<(), String> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(());
        };
        let mut t = inner.sync.lock();
        let lagged = crate::lag_bound::wait(&inner, &mut t, &self.db, lsn)?;
        drop(t);
        if let Some(d) = lagged {
            for w in waits {
                w.record(WaitType::HadrLagBound, d);
            }
        }
        Ok(())
    }
}
