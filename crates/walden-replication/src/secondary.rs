//! The secondary side: the endpoint a primary connects to, once per
//! database. It checks the primary's epoch, says what it holds, takes a
//! seed image if offered, then appends each log message to the local log
//! with the primary's LSNs, hardens, acknowledges and redoes it.

use crate::proto::{read_msg, write_msg, Hello, HelloReply, Msg};
use crate::{Incoming, Inner};
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::net::{TcpListener, TcpStream};
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
            if let Err(e) = handle(inner2, stream).await {
                tracing::debug!(peer = %peer, error = %e, "replication connection ended");
            }
        });
    }
}

enum Work {
    Seed {
        lsn: Lsn,
        seed_id: u64,
        image: Vec<u8>,
    },
    Log {
        lsn: Lsn,
        frames: Vec<u8>,
    },
    Beat,
}

async fn handle(inner: Arc<Inner>, stream: TcpStream) -> Result<(), String> {
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (mut rd, mut wr) = stream.into_split();
    let Msg::Hello(hello) = read_msg(&mut rd).await.map_err(|e| e.to_string())? else {
        return Err("expected hello".into());
    };
    let reply = accept_hello(&inner, &hello);
    let accepted = matches!(reply, HelloReply::State { .. });
    write_msg(&mut wr, &Msg::HelloReply(reply))
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
    // blocking socket: a reader, and the redo thread, which hardens and
    // writes its acknowledgement itself (every hand-off between threads
    // adds to the primary's commit latency).
    let stream = rd
        .reunite(wr)
        .map_err(|e| e.to_string())?
        .into_std()
        .map_err(|e| e.to_string())?;
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    // The primary sends a heartbeat at least every 500 ms: a connection
    // silent for the session timeout is dead (a partition sends no FIN).
    let silent = hello.ag.def.session_timeout();
    let inner2 = inner.clone();
    let db2 = db.clone();
    let res = tokio::task::spawn_blocking(move || {
        serve_blocking(&inner2, &db2, stream, silent, epoch, generation)
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
    stream: std::net::TcpStream,
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
    let ack_stream = stream.try_clone().map_err(|e| e.to_string())?;
    let (wtx, wrx) = std::sync::mpsc::channel::<Work>();
    let inner_a = inner.clone();
    let db_a = db.to_string();
    let applier = std::thread::Builder::new()
        .name("walden-hadr-redo".into())
        .spawn(move || apply_loop(inner_a, db_a, epoch, generation, wrx, ack_stream))
        .map_err(|e| e.to_string())?;
    let mut rd = std::io::BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
    let res = loop {
        let m = match crate::proto::read_msg_sync(&mut rd) {
            Ok(m) => m,
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
        let current = inner
            .incoming
            .lock()
            .get(db)
            .is_some_and(|e| e.generation == generation);
        if !current {
            break Err("superseded by a newer connection".into());
        }
        let work = match m {
            Msg::Seed {
                lsn,
                seed_id,
                image,
            } => Work::Seed {
                lsn,
                seed_id,
                image,
            },
            Msg::Log { lsn, frames } => {
                if let Some(e) = inner.incoming.lock().get_mut(db) {
                    e.last_received = Some(SystemTime::now());
                    e.last_heard = Instant::now();
                }
                Work::Log { lsn, frames }
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
                Work::Beat
            }
            other => break Err(format!("unexpected message {other:?}")),
        };
        if wtx.send(work).is_err() {
            break Err("redo stopped".into());
        }
    };
    drop(wtx);
    let _ = stream.shutdown(std::net::Shutdown::Both);
    let _ = applier.join();
    res
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

fn apply_loop(
    inner: Arc<Inner>,
    db_name: String,
    epoch: u64,
    generation: u64,
    rx: std::sync::mpsc::Receiver<Work>,
    mut acks: std::net::TcpStream,
) {
    use std::io::Write;
    let mut followed = false;
    let mut ack = |db: &walden_engine::Database| {
        let m = Msg::Ack {
            hardened: db.log().hardened_lsn(),
            applied: db.applied_lsn(),
        };
        let _ = acks.write_all(&m.encode());
    };
    while let Ok(first) = rx.recv() {
        let current = inner
            .incoming
            .lock()
            .get(&db_name)
            .is_some_and(|e| e.generation == generation);
        if !current {
            return;
        }
        // Take everything queued: one harden covers the lot.
        let mut batch = vec![first];
        while let Ok(w) = rx.try_recv() {
            batch.push(w);
            if batch.len() >= 256 {
                break;
            }
        }
        let mut logs: Vec<(Lsn, Vec<u8>)> = Vec::new();
        let mut beat = false;
        for w in batch {
            match w {
                Work::Seed {
                    lsn,
                    seed_id,
                    image,
                } => match inner.instance.seed_replica(&db_name, &image) {
                    Ok(_) => {
                        tracing::info!(database = %db_name, lsn, "seeded from the primary");
                        record_followed(&inner, &db_name, epoch, Some(seed_id));
                        followed = true;
                    }
                    Err(e) => {
                        tracing::error!(database = %db_name, error = %e, "seeding failed");
                        return;
                    }
                },
                Work::Log { lsn, frames } => logs.push((lsn, frames)),
                Work::Beat => beat = true,
            }
        }
        let Ok(db) = inner.instance.database(&db_name) else {
            tracing::error!(database = %db_name, "no such database to replicate into");
            return;
        };
        if !logs.is_empty() {
            if !followed {
                // Before the first record of this epoch lands, so a crash
                // never leaves log of a newer epoch under an older label.
                record_followed(&inner, &db_name, epoch, None);
                followed = true;
            }
            let mut end = 0;
            for (lsn, frames) in &logs {
                match db.replica_append(*lsn, frames) {
                    Ok(e) => end = e,
                    Err(e) => {
                        tracing::error!(database = %db_name, error = %e, "cannot append shipped log");
                        return;
                    }
                }
            }
            if let Err(e) = db.log().wait_hardened(end, &[]) {
                tracing::error!(database = %db_name, error = %e, "cannot harden shipped log");
                return;
            }
            ack(&db);
            for (lsn, frames) in &logs {
                if let Err(e) = db.replica_redo(*lsn, frames) {
                    tracing::error!(database = %db_name, error = %e, "redo failed");
                    return;
                }
            }
        }
        // Heartbeats are answered (after redo, so `applied` is current); log
        // was acknowledged as soon as it was hardened.
        if beat {
            ack(&db);
        }
    }
}
