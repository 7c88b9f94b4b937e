//! Replication peers authenticate each other: a shared secret, proved both
//! ways on connect, then a MAC on every frame; or TLS with certificates
//! verified against a CA. Real primaries and secondaries in one process
//! over loopback TCP, plus raw clients and a man in the middle that
//! replays, alters, reorders or records frames.

use crate::support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use support::pki::Pki;
use support::{count, group, make_table, state_of, url, Node};
use walden_engine::*;
use walden_replication::auth::{Offer, MAGIC, OFFER_LEN, TAG_LEN};
use walden_replication::proto::{Hello, Msg};
use walden_replication::{
    AvailabilityMode, PeerAuth, ReplicaDef, Replication, ReplicationConfig, Secret, TlsFiles,
};

const SECRET: &str = "the-right-replication-secret";

fn node(name: &str, endpoint: Option<&str>, auth: PeerAuth) -> Node {
    node_tls(name, endpoint, auth, None)
}

/// A node; `endpoint` is only ever a loopback port here.
fn node_tls(name: &str, endpoint: Option<&str>, auth: PeerAuth, tls: Option<TlsFiles>) -> Node {
    assert!(endpoint.is_none_or(|e| e == "127.0.0.1:0"));
    support::node(name, endpoint.is_some(), |rc| {
        rc.auth = auth;
        rc.tls = tls;
    })
}

fn secret(s: &str) -> PeerAuth {
    PeerAuth::Secret(Secret::new(s).unwrap())
}

fn insert(p: &Node, v: &str) {
    support::insert(p, v).unwrap();
}

fn wait_rows(n: &Node, want: usize) {
    assert!(
        wait_until(Duration::from_secs(15), || count(&n.inst) == want),
        "secondary has {} rows, expected {want}",
        count(&n.inst)
    );
}

#[test]
fn the_right_secret_replicates_and_a_wrong_one_gets_nothing() {
    let p = node("a", None, secret(SECRET));
    let good = node("b", Some("127.0.0.1:0"), secret(SECRET));
    let bad = node(
        "c",
        Some("127.0.0.1:0"),
        secret("a-different-replication-secret"),
    );
    make_table(&p);
    p.repl
        .create_group(group(
            &p,
            vec![
                ReplicaDef::new("b", url(&good), AvailabilityMode::SynchronousCommit),
                ReplicaDef::new("c", url(&bad), AvailabilityMode::AsynchronousCommit),
            ],
        ))
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || state_of(&p, "b")
        == "SYNCHRONIZED"));
    for i in 0..20 {
        insert(&p, &format!("v{i}"));
    }
    wait_rows(&good, 20);
    assert!(
        wait_until(Duration::from_secs(10), || bad.repl.auth_failures().0 >= 2),
        "the endpoint with the wrong secret counts the refused primary"
    );
    let (_, why) = bad.repl.auth_failures();
    assert!(why.unwrap().contains("bad client proof"));
    // It learned nothing: no group, no table, no log beyond its own.
    assert!(bad.repl.groups().is_empty());
    assert_eq!(count(&bad.inst), 0);
    assert_eq!(state_of(&p, "c"), "NOT SYNCHRONIZING");
    let err = p
        .repl
        .replica_states()
        .into_iter()
        .find(|r| r.replica_name == "c")
        .and_then(|r| r.last_error)
        .unwrap_or_default();
    assert!(
        err.contains("does not know the replication secret"),
        "{err}"
    );
    // The good secondary was never disturbed.
    assert_eq!(good.repl.auth_failures().0, 0);
    assert_eq!(state_of(&p, "b"), "SYNCHRONIZED");
}

#[test]
fn a_primary_without_the_secret_is_refused_and_an_open_endpoint_must_be_loopback() {
    let p = node("a", None, PeerAuth::None);
    let s = node("b", Some("127.0.0.1:0"), secret(SECRET));
    make_table(&p);
    p.repl
        .create_group(group(
            &p,
            vec![ReplicaDef::new(
                "b",
                url(&s),
                AvailabilityMode::SynchronousCommit,
            )],
        ))
        .unwrap();
    insert(&p, "x");
    assert!(wait_until(Duration::from_secs(10), || s
        .repl
        .auth_failures()
        .0
        >= 1));
    assert!(s.repl.groups().is_empty());
    assert_eq!(count(&s.inst), 0);

    // No secret and no TLS: an endpoint on a routable address is refused.
    let dir = tempfile::tempdir().unwrap();
    let inst = Instance::open(InstanceConfig::new(dir.path())).unwrap();
    let mut rc = ReplicationConfig::new("d");
    rc.endpoint_listen = Some("0.0.0.0:0".into());
    let e = Replication::start(inst.clone(), rc.clone()).unwrap_err();
    assert!(e.to_string().contains("not a loopback address"), "{e}");
    rc.auth = secret(SECRET);
    Replication::start(inst, rc).unwrap().shutdown();
}

/// Sends `bytes` to the endpoint and gives what it answers before closing.
fn raw_exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(bytes).unwrap();
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    got
}

#[test]
fn forged_frames_from_a_raw_client_are_refused_and_replication_goes_on() {
    let p = node("a", None, secret(SECRET));
    let s = node("b", Some("127.0.0.1:0"), secret(SECRET));
    make_table(&p);
    p.repl
        .create_group(group(
            &p,
            vec![ReplicaDef::new(
                "b",
                url(&s),
                AvailabilityMode::SynchronousCommit,
            )],
        ))
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || state_of(&p, "b")
        == "SYNCHRONIZED"));
    insert(&p, "before");
    wait_rows(&s, 1);
    let addr = s.repl.endpoint_addr().unwrap();

    // A protocol frame with no handshake: a Hello claiming a newer epoch.
    let mut ag = p.repl.groups()[0].clone();
    ag.epoch += 10;
    ag.primary = "mallory".into();
    let forged = Msg::Hello(Hello {
        ag,
        to: "b".into(),
        database: "walden".into(),
        ha_cluster: None,
    })
    .encode();
    let got = raw_exchange(addr, &forged[..OFFER_LEN.min(forged.len())]);
    assert!(got.starts_with(MAGIC) && got[8] == 1, "refused: {got:?}");
    assert!(String::from_utf8_lossy(&got).contains("bad greeting"));

    // A proper offer, then a made-up proof.
    let offer = Offer {
        mode: 1,
        nonce: [7; 32],
    }
    .encode();
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(&offer).unwrap();
    let mut answer = [0u8; 8 + 1 + 1 + 32];
    c.read_exact(&mut answer).unwrap();
    assert_eq!(answer[8], 0, "the offer itself is fine");
    c.write_all(&[0x42; TAG_LEN]).unwrap();
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    assert_eq!(rest.first(), Some(&1), "the guessed proof is refused");
    // A proof-sized forged frame after the offer: same.
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(&offer).unwrap();
    c.write_all(&forged[..TAG_LEN]).unwrap();
    drop(c);

    assert!(wait_until(Duration::from_secs(5), || s
        .repl
        .auth_failures()
        .0
        >= 3));
    // The forged epoch did not take: the group is as the primary made it.
    assert_eq!(s.repl.groups()[0].primary, "a");
    insert(&p, "after");
    wait_rows(&s, 2);
    assert_eq!(state_of(&p, "b"), "SYNCHRONIZED");
    assert_eq!(p.repl.auth_failures().0, 0);
}

/// What the man in the middle does to the primary's frames.
#[derive(Clone, Copy)]
enum Tamper {
    /// Sends frame `n` twice.
    Replay(usize),
    /// Flips a bit in frame `n`'s body.
    Alter(usize),
    /// Swaps frames `n` and `n + 1`.
    Reorder(usize),
}

/// A proxy between a primary and an endpoint that tampers with the first
/// connection's client-to-server frames (later connections pass through).
fn proxy(
    upstream: std::net::SocketAddr,
    tamper: Tamper,
) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let tampered = Arc::new(AtomicUsize::new(0));
    let t2 = tampered.clone();
    let first = Arc::new(AtomicBool::new(true));
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut down) = c else { return };
            let Ok(mut up) = TcpStream::connect(upstream) else {
                continue;
            };
            let (mut down2, mut up2) = (down.try_clone().unwrap(), up.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut up2, &mut down2);
                let _ = down2.shutdown(std::net::Shutdown::Both);
            });
            let tamper_this = first.swap(false, SeqCst);
            let t3 = t2.clone();
            std::thread::spawn(move || {
                let _ = relay(&mut down, &mut up, tamper_this.then_some(tamper), &t3);
                let _ = up.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (addr, tampered)
}

fn relay(
    down: &mut TcpStream,
    up: &mut TcpStream,
    tamper: Option<Tamper>,
    tampered: &AtomicUsize,
) -> std::io::Result<()> {
    // Offer and proof pass untouched.
    let mut hs = [0u8; OFFER_LEN + TAG_LEN];
    down.read_exact(&mut hs[..OFFER_LEN])?;
    up.write_all(&hs[..OFFER_LEN])?;
    down.read_exact(&mut hs[OFFER_LEN..])?;
    up.write_all(&hs[OFFER_LEN..])?;
    let mut held: Option<Vec<u8>> = None;
    for n in 0.. {
        let mut head = [0u8; 4];
        down.read_exact(&mut head)?;
        let mut f = head.to_vec();
        f.resize(4 + u32::from_le_bytes(head) as usize, 0);
        down.read_exact(&mut f[4..])?;
        match tamper {
            Some(Tamper::Replay(k)) if n == k => {
                up.write_all(&f)?;
                up.write_all(&f)?;
                tampered.fetch_add(1, SeqCst);
            }
            Some(Tamper::Alter(k)) if n == k => {
                let last = f.len() - TAG_LEN - 1;
                f[last] ^= 0x01;
                up.write_all(&f)?;
                tampered.fetch_add(1, SeqCst);
            }
            Some(Tamper::Reorder(k)) if n == k => held = Some(f),
            Some(Tamper::Reorder(k)) if n == k + 1 => {
                up.write_all(&f)?;
                up.write_all(&held.take().unwrap())?;
                tampered.fetch_add(1, SeqCst);
            }
            _ => up.write_all(&f)?,
        }
    }
    Ok(())
}

fn tampered_link_is_dropped_and_recovers(tamper: Tamper) {
    let p = node("a", None, secret(SECRET));
    let s = node("b", Some("127.0.0.1:0"), secret(SECRET));
    let (via, tampered) = proxy(s.repl.endpoint_addr().unwrap(), tamper);
    make_table(&p);
    insert(&p, "seeded");
    p.repl
        .create_group(group(
            &p,
            vec![ReplicaDef::new(
                "b",
                format!("tcp://{via}"),
                AvailabilityMode::SynchronousCommit,
            )],
        ))
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || tampered.load(SeqCst) == 1),
        "the proxy saw enough frames to tamper with"
    );
    assert!(
        wait_until(Duration::from_secs(10), || s.repl.auth_failures().0 == 1),
        "the secondary refuses the tampered frame"
    );
    let (_, why) = s.repl.auth_failures();
    assert!(why.unwrap().contains("failed authentication"));
    // The primary reconnects (untouched now) and replication carries on.
    assert!(wait_until(Duration::from_secs(15), || state_of(&p, "b")
        == "SYNCHRONIZED"));
    for i in 0..5 {
        insert(&p, &format!("v{i}"));
    }
    wait_rows(&s, 6);
}

#[test]
fn a_replayed_frame_is_rejected() {
    // Frame 0 is the hello, 1 the seed, then log and heartbeats.
    tampered_link_is_dropped_and_recovers(Tamper::Replay(2));
}

#[test]
fn an_altered_frame_is_rejected() {
    tampered_link_is_dropped_and_recovers(Tamper::Alter(1));
}

#[test]
fn reordered_frames_are_rejected() {
    tampered_link_is_dropped_and_recovers(Tamper::Reorder(2));
}

/// A replica certificate `name` signed by `ca`; the files trust `trust`.
fn tls(pki: &Pki, name: &str, ca: &str, trust: &str) -> TlsFiles {
    assert!(pki.leaf(name, ca), "openssl made no certificate for {name}");
    TlsFiles {
        cert: pki.path(&format!("{name}.crt")),
        key: pki.path(&format!("{name}.key")),
        ca: pki.path(&format!("{trust}.crt")),
    }
}

/// A pass-through proxy that records what the primary sends.
fn recording_proxy(
    upstream: std::net::SocketAddr,
) -> (std::net::SocketAddr, Arc<parking_lot::Mutex<Vec<u8>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut down) = c else { return };
            let Ok(mut up) = TcpStream::connect(upstream) else {
                continue;
            };
            let (mut down2, mut up2) = (down.try_clone().unwrap(), up.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut up2, &mut down2);
                let _ = down2.shutdown(std::net::Shutdown::Both);
            });
            let seen3 = seen2.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 64 * 1024];
                while let Ok(n) = down.read(&mut buf) {
                    if n == 0 || up.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    seen3.lock().extend_from_slice(&buf[..n]);
                }
                let _ = up.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (addr, seen)
}

#[test]
fn tls_encrypts_the_stream_and_refuses_plaintext_and_unknown_certificates() {
    let Some(pki) = Pki::new(&["ca", "rogue-ca"], &[]) else {
        return;
    };
    let p = node_tls("a", None, secret(SECRET), Some(tls(&pki, "a", "ca", "ca")));
    let s = node_tls(
        "b",
        Some("127.0.0.1:0"),
        secret(SECRET),
        Some(tls(&pki, "b", "ca", "ca")),
    );
    let (via, seen) = recording_proxy(s.repl.endpoint_addr().unwrap());
    make_table(&p);
    p.repl
        .create_group(group(
            &p,
            vec![ReplicaDef::new(
                "b",
                format!("tcp://{via}"),
                AvailabilityMode::SynchronousCommit,
            )],
        ))
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || state_of(&p, "b")
        == "SYNCHRONIZED"));
    const MARKER: &str = "row-text-that-must-not-cross-in-clear";
    for _ in 0..5 {
        insert(&p, MARKER);
    }
    wait_rows(&s, 5);
    {
        let bytes = seen.lock();
        assert!(bytes.len() > 1000, "the proxy saw the stream");
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        assert!(!has(MARKER.as_bytes()), "row data crossed in clear");
        assert!(!has(MAGIC), "the handshake crossed in clear");
        assert!(!has(b"ag1"), "the hello crossed in clear");
    }
    assert_eq!(s.repl.auth_failures().0, 0);

    // A plaintext client: its offer is not a TLS hello.
    let offer = Offer {
        mode: 1,
        nonce: [9; 32],
    }
    .encode();
    let got = raw_exchange(s.repl.endpoint_addr().unwrap(), &offer);
    assert!(!got.starts_with(MAGIC), "no plaintext answer: {got:?}");
    assert!(wait_until(Duration::from_secs(5), || s
        .repl
        .auth_failures()
        .0
        == 1));
    assert!(s.repl.auth_failures().1.unwrap().contains("TLS"));

    // A primary with the secret but no TLS, and one whose certificate
    // another CA signed (it trusts the right CA): both refused, no data.
    let plain = node("x", None, secret(SECRET));
    let rogue = node_tls(
        "y",
        None,
        secret(SECRET),
        Some(tls(&pki, "y", "rogue-ca", "ca")),
    );
    for (n, before) in [(&plain, 1), (&rogue, 2)] {
        make_table(n);
        insert(n, "intruder");
        let mut g = group(
            n,
            vec![ReplicaDef::new(
                "b",
                url(&s),
                AvailabilityMode::SynchronousCommit,
            )],
        );
        g.name = format!("ag-{}", n.repl.name());
        n.repl.create_group(g).unwrap();
        assert!(
            wait_until(Duration::from_secs(10), || s.repl.auth_failures().0
                > before),
            "the endpoint refuses primary {}",
            n.repl.name()
        );
    }
    assert_eq!(s.repl.groups().len(), 1, "no other group got in");
    insert(&p, MARKER);
    wait_rows(&s, 6);
    assert_eq!(state_of(&p, "b"), "SYNCHRONIZED");
}
