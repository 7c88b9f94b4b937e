//! The secondary side: the endpoint a primary connects to, once per
//! database. It checks the primary's epoch, says what it holds, takes a
//! seed image if offered, then appends each log message to the local log
//! with the primary's LSNs, hardens, acknowledges and redoes it.

use crate::proto::{Hello, HelloReply, Msg};
use crate::transport::{FrameReader, FrameWriter};
use crate::{Incoming, Inner};
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::net::TcpListener;
use walden_log::Lsn;

pub(crate) async fn serve_endpoint(inner: Arc<Inner>, listener: TcpListener) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "replication endpoint accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if inner.closed.load(SeqCst) {
            return;
        }
        let inner2 = inner.clone();
        tokio::spawn(async move {
            // A peer that fails authentication is dropped here, on its own
            // task: the other replicas' connections never notice.
            let Some(conn) = crate::transport::accept(&inner2, stream, peer).await else {
                return;
            };
            if let Err(e) = handle(inner2, conn).await {
                tracing::debug!(peer = %peer, error = %e, "replication connection ended");
            }
        });
    }
}

/// What the reader hands the redo thread, in log order.
enum Redo {
    Log {
        lsn: Lsn,
        frames: Vec<u8>,
    },
    /// Tell the reader that everything before it is redone.
    Barrier(std::sync::mpsc::Sender<()>),
}

fn send_ack(acks: &mut FrameWriter, db: &walden_engine::Database) -> std::io::Result<()> {
    acks.send(&Msg::Ack {
        hardened: db.log().hardened_lsn(),
        applied: db.applied_lsn(),
    })
}

async fn handle(inner: Arc<Inner>, mut conn: crate::transport::Conn) -> Result<(), String> {
    let first = conn.recv().await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            inner.auth_failed("the primary", &e.to_string());
        }
        e.to_string()
    })?;
    let Msg::Hello(hello) = first else {
        return Err("expected hello".into());
    };
    let reply = accept_hello(&inner, &hello);
    let accepted = matches!(reply, HelloReply::State { .. });
    conn.send(&Msg::HelloReply(reply))
        .await
        .map_err(|e| e.to_string())?;
    if !accepted {
        return Ok(());
    }
    let db = hello.database.to_ascii_lowercase();
    let ag = hello.ag.def.name.clone();
    let epoch = hello.ag.epoch;
    let generation = {
        let mut inc = inner.incoming.lock();
        let e = inc.entry(db.clone()).or_insert_with(|| Incoming {
            ag: ag.clone(),
            connected: false,
            primary_end: 0,
            primary_hardened: 0,
            synchronized: false,
            last_heard: Instant::now(),
            generation: 0,
            last_received: None,
        });
        e.generation += 1;
        e.ag = ag.clone();
        e.connected = true;
        e.last_heard = Instant::now();
        e.generation
    };

    // From here on the connection is served by plain threads over a
    // blocking socket. The reader appends, hardens and acknowledges itself:
    // each hand-off between threads on this path adds a wake-up to the
    // primary's commit latency. Redo runs behind it on its own thread.
    let (reader, writer, stream) = conn.into_blocking()?;
    // The primary sends a heartbeat at least every 500 ms: a connection
    // silent for the session timeout is dead (a partition sends no FIN).
    let silent = hello.ag.def.session_timeout();
    let inner2 = inner.clone();
    let db2 = db.clone();
    let res = tokio::task::spawn_blocking(move || {
        serve_blocking(
            &inner2,
            &db2,
            (reader, writer, stream),
            silent,
            epoch,
            generation,
        )
    })
    .await
    .map_err(|e| e.to_string())?;
    if let Some(e) = inner.incoming.lock().get_mut(&db) {
        if e.generation == generation {
            // `synchronized` stays as last heard: a planned failover right
            // after the primary died is safe within the session timeout
            // (the primary cannot have dropped this replica before then).
            e.connected = false;
        }
    }
    res
}

fn serve_blocking(
    inner: &Arc<Inner>,
    db: &str,
    (mut rd, mut acks, stream): (FrameReader, FrameWriter, std::net::TcpStream),
    silent: Duration,
    epoch: u64,
    generation: u64,
) -> Result<(), String> {
    let Some(_registered) = inner.register(&stream) else {
        return Err("shutting down".into());
    };
    stream
        .set_read_timeout(Some(silent))
        .map_err(|e| e.to_string())?;
    let (rtx, rrx) = std::sync::mpsc::channel::<Redo>();
    let inner_a = inner.clone();
    let db_a = db.to_string();
    let redoer = std::thread::Builder::new()
        .name("walden-hadr-redo".into())
        .spawn(move || redo_loop(inner_a, db_a, generation, rrx))
        .map_err(|e| e.to_string())?;
    let mut followed = false;
    // A seed being received; dropped unfinished (the loop ends), it
    // removes what it wrote and the old copy stays.
    let mut seeding: Option<(walden_engine::SeedReceiver, u64, Lsn)> = None;
    // Appended but not yet hardened and acknowledged, through this LSN.
    let mut unhardened: Option<Lsn> = None;
    let res = loop {
        // Harden before the next read from the socket: one sync covers every
        // message that arrived together, and a steady stream (whose buffer
        // always ends in part of a message) cannot put it off.
        if let Some(end) = unhardened {
            if !rd.has_whole_frame() {
                unhardened = None;
                if let Err(e) = harden_and_ack(inner, db, end, &mut acks) {
                    break Err(e);
                }
            }
        }
        let m = match rd.recv() {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                inner.auth_failed(&crate::primary::peer_of(&stream), &e.to_string());
                break Err(format!("refused the primary's frame: {e}"));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break Err("primary silent for the session timeout".into())
            }
            Err(e) => break Err(e.to_string()),
        };
        // Tests: a stalled link (what was read waits, unapplied).
        while inner
            .cfg
            .test_pause_receive
            .load(std::sync::atomic::Ordering::SeqCst)
            && !inner.closed.load(std::sync::atomic::Ordering::SeqCst)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let current = inner
            .incoming
            .lock()
            .get(db)
            .is_some_and(|e| e.generation == generation);
        if !current {
            break Err("superseded by a newer connection".into());
        }
        match m {
            Msg::SeedBegin { lsn, seed_id, .. } => {
                // Redo of anything before the seed must be over before the
                // database is replaced.
                let (btx, brx) = std::sync::mpsc::channel();
                if rtx.send(Redo::Barrier(btx)).is_err() || brx.recv().is_err() {
                    break Err("redo stopped".into());
                }
                // The old copy stays readable until the new one is whole.
                match inner.instance.begin_seed(db, lsn) {
                    Ok(r) => seeding = Some((r, seed_id, lsn)),
                    Err(e) => {
                        tracing::error!(database = %db, error = %e, "cannot start a seed");
                        break Err(format!("seeding failed: {e}"));
                    }
                }
            }
            Msg::SeedChunk(bytes) => {
                let Some((r, _, _)) = seeding.as_mut() else {
                    break Err("a seed chunk outside a seed".into());
                };
                if let Err(e) = r.write(&bytes) {
                    tracing::error!(database = %db, error = %e, "cannot write a seed");
                    break Err(format!("seeding failed: {e}"));
                }
            }
            Msg::SeedEnd { len, crc32c } => {
                let Some((r, seed_id, lsn)) = seeding.take() else {
                    break Err("a seed's end outside a seed".into());
                };
                let d = match r.finish(len, crc32c) {
                    Ok(d) => d,
                    Err(e) => {
                        tracing::error!(database = %db, error = %e, "seeding failed");
                        break Err(format!("seeding failed: {e}"));
                    }
                };
                tracing::info!(database = %db, lsn, bytes = len, "seeded from the primary");
                record_followed(inner, db, epoch, Some(seed_id));
                followed = true;
                // The primary waits for this before it ships on.
                if let Err(e) = send_ack(&mut acks, &d) {
                    break Err(e.to_string());
                }
            }
            Msg::Log { .. } if seeding.is_some() => {
                break Err("log before the seed's end".into());
            }
            Msg::Log { lsn, frames } => {
                if let Some(e) = inner.incoming.lock().get_mut(db) {
                    e.last_received = Some(SystemTime::now());
                    e.last_heard = Instant::now();
                }
                let Ok(d) = inner.instance.database(db) else {
                    break Err(format!("no database \"{db}\" to replicate into"));
                };
                if !followed {
                    // Before the first record of this epoch lands, so a crash
                    // never leaves log of a newer epoch under an older label.
                    record_followed(inner, db, epoch, None);
                    followed = true;
                }
                match d.replica_append(lsn, &frames) {
                    Ok(end) => unhardened = Some(end),
                    Err(e) => {
                        tracing::error!(database = %db, error = %e, "cannot append shipped log");
                        break Err(format!("cannot append shipped log: {e}"));
                    }
                }
                if rtx.send(Redo::Log { lsn, frames }).is_err() {
                    break Err("redo stopped".into());
                }
            }
            Msg::Heartbeat {
                end,
                hardened,
                synchronized,
            } => {
                if let Some(e) = inner.incoming.lock().get_mut(db) {
                    e.primary_end = end;
                    e.primary_hardened = hardened;
                    e.synchronized = synchronized;
                    e.last_heard = Instant::now();
                }
                // Answered at once (a redo queue behind must not look like
                // silence to the primary); `applied` is as far as redo got.
                let Ok(d) = inner.instance.database(db) else {
                    break Err(format!("no database \"{db}\" to replicate into"));
                };
                if let Err(e) = send_ack(&mut acks, &d) {
                    break Err(e.to_string());
                }
            }
            other => break Err(format!("unexpected message {other:?}")),
        }
    };
    drop(rtx);
    let _ = stream.shutdown(std::net::Shutdown::Both);
    let _ = redoer.join();
    res
}

fn harden_and_ack(inner: &Inner, db: &str, end: Lsn, acks: &mut FrameWriter) -> Result<(), String> {
    let d = inner
        .instance
        .database(db)
        .map_err(|e| format!("no database \"{db}\" to replicate into: {e}"))?;
    if let Err(e) = d.log().wait_hardened(end, &[]) {
        tracing::error!(database = %db, error = %e, "cannot harden shipped log");
        return Err(format!("cannot harden shipped log: {e}"));
    }
    send_ack(acks, &d).map_err(|e| e.to_string())
}

/// Decides whether to follow the primary that says hello, and what to tell it.
fn accept_hello(inner: &Arc<Inner>, h: &Hello) -> HelloReply {
    let me = &inner.cfg.name;
    if !h.to.eq_ignore_ascii_case(me) {
        return HelloReply::Refused(format!(
            "this endpoint is replica \"{me}\", not \"{}\"",
            h.to
        ));
    }
    if h.ag.primary.eq_ignore_ascii_case(me) {
        return HelloReply::Refused("this replica is the group's primary".into());
    }
    let mine = inner.ha.as_ref().map(|x| x.cfg.cluster.as_str());
    if mine != h.ha_cluster.as_deref() {
        let say = |c: Option<&str>| {
            c.map_or("no HA cluster".to_string(), |c| {
                format!("HA cluster \"{c}\"")
            })
        };
        tracing::error!(primary = %h.ag.primary, theirs = %say(h.ha_cluster.as_deref()), ours = %say(mine),
            "refusing a primary of another HA cluster");
        return HelloReply::Refused(format!(
            "this replica is in {}, the primary \"{}\" in {}: every replica of a group must run with the same --ha-cluster and etcd",
            say(mine),
            h.ag.primary,
            say(h.ha_cluster.as_deref())
        ));
    }
    let name = &h.ag.def.name;
    let db = h.database.to_ascii_lowercase();
    let mut step_down = false;
    let reply = {
        let mut st = inner.state.lock();
        let local = st
            .groups
            .iter_mut()
            .find(|g| g.def.name.eq_ignore_ascii_case(name));
        let followed = match local {
            Some(l) => {
                if l.epoch > h.ag.epoch {
                    return HelloReply::Stale {
                        epoch: l.epoch,
                        primary: l.primary.clone(),
                    };
                }
                if l.epoch == h.ag.epoch && !l.primary.eq_ignore_ascii_case(&h.ag.primary) {
                    return HelloReply::Refused(format!(
                        "epoch {} already belongs to primary \"{}\"",
                        l.epoch, l.primary
                    ));
                }
                if l.primary.eq_ignore_ascii_case(me) {
                    step_down = true;
                }
                let followed = l.followed.clone();
                let seeds = l.seeds.clone();
                *l = h.ag.clone();
                // Keep this replica's own record of what its log holds.
                l.followed = followed.clone();
                l.seeds = seeds.clone();
                for (k, v) in &h.ag.seeds {
                    l.seeds.entry(k.clone()).or_insert(*v);
                }
                Some((followed, seeds))
            }
            None => {
                let mut g = h.ag.clone();
                g.followed.clear();
                g.seeds.clear();
                st.groups.push(g);
                None
            }
        };
        if let Err(e) = st.save(inner.instance.data_dir()) {
            return HelloReply::Refused(e);
        }
        let replica = followed.and_then(|(followed, seeds)| {
            let d = inner.instance.database(&db).ok()?;
            let seed = *seeds.get(&db)?;
            let epoch = *followed.get(&db)?;
            // A primary being demoted holds everything it has applied.
            Some((seed, epoch, d.log().hardened_lsn().max(d.log().end_lsn())))
        });
        HelloReply::State { replica }
    };
    if step_down {
        crate::failover::demote_local(inner, name, &h.ag.primary);
    }
    reply
}

fn record_followed(inner: &Inner, db: &str, epoch: u64, seed: Option<u64>) {
    let mut st = inner.state.lock();
    let mut changed = false;
    for g in st.groups.iter_mut().filter(|g| g.def.has_database(db)) {
        if g.followed.get(db) != Some(&epoch) {
            g.followed.insert(db.to_string(), epoch);
            changed = true;
        }
        if let Some(s) = seed {
            g.seeds.insert(db.to_string(), s);
            changed = true;
        }
    }
    if changed {
        if let Err(e) = st.save(inner.instance.data_dir()) {
            tracing::error!(error = %e, "cannot save replication state");
        }
    }
}

fn redo_loop(
    inner: Arc<Inner>,
    db_name: String,
    generation: u64,
    rx: std::sync::mpsc::Receiver<Redo>,
) {
    while let Ok(work) = rx.recv() {
        let current = inner
            .incoming
            .lock()
            .get(&db_name)
            .is_some_and(|e| e.generation == generation);
        if !current {
            return;
        }
        match work {
            Redo::Log { lsn, frames } => {
                let Ok(db) = inner.instance.database(&db_name) else {
                    tracing::error!(database = %db_name, "no such database to replicate into");
                    return;
                };
                if let Err(e) = db.replica_redo(lsn, &frames) {
                    tracing::error!(database = %db_name, error = %e, "redo failed");
                    return;
                }
            }
            Redo::Barrier(tx) => {
                let _ = tx.send(());
            }
        }
    }
}
