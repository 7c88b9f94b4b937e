//! HA towards a secured etcd (one member on loopback, started here): TLS
//! with client certificates (`--client-cert-auth`) and etcd's
//! authentication (a user allowed only under `/walden/`). The client
//! reaches it only with the right CA, certificate and password, renews its
//! token when etcd's expires, and a primary takes its group's leader key
//! and acknowledges commits through it. Needs etcd, etcdctl (Debian's
//! etcd-server, etcd-client) and openssl: with WALDEN_REQUIRE_TOOLS set a
//! missing one fails the test.

use crate::support;

use std::time::Duration;
use support::etcd::{Etcd, Secured};
use support::pki::Pki;
use support::{group, make_table, node, url, Node};
use walden_engine::*;
use walden_replication::ha::{self, EtcdError, EtcdSecurity, EtcdTlsFiles, EtcdUser, HaConfig};
use walden_replication::{AvailabilityMode, ReplicaDef};

/// etcd's simple tokens live this long: the tests outlive one.
const TOKEN_TTL_S: u64 = 2;

/// A CA (and a rogue one), etcd's server certificate and a client's.
fn pki() -> Option<Pki> {
    Pki::new(
        &["ca", "rogue"],
        &[("server", "ca"), ("client", "ca"), ("stranger", "rogue")],
    )
}

/// Files trusting `ca`, with `client`'s certificate if given.
fn files(pki: &Pki, ca: &str, client: Option<&str>) -> EtcdTlsFiles {
    EtcdTlsFiles {
        ca: Some(pki.path(&format!("{ca}.crt"))),
        cert: client.map(|c| pki.path(&format!("{c}.crt"))),
        key: client.map(|c| pki.path(&format!("{c}.key"))),
    }
}

/// etcd over TLS with client certificates required, authentication on:
/// `root`, and `walden` (password `s3cret`) with read-write on `/walden/`.
fn secured_etcd(pki: &Pki) -> Option<Etcd> {
    let e = Etcd::start(Some(Secured {
        pki,
        token_ttl_s: TOKEN_TTL_S,
    }))?;
    for step in [
        &["user", "add", "root:rootpw"][..],
        &["user", "grant-role", "root", "root"],
        &["user", "add", "walden:s3cret"],
        &["role", "add", "walden-rw"],
        &[
            "role",
            "grant-permission",
            "walden-rw",
            "--prefix=true",
            "readwrite",
            "/walden/",
        ],
        &["user", "grant-role", "walden", "walden-rw"],
        &["auth", "enable"],
    ] {
        assert!(e.ctl(step), "etcdctl {step:?} failed");
    }
    Some(e)
}

fn user(password: &str) -> Option<EtcdUser> {
    Some(EtcdUser {
        name: "walden".into(),
        password: password.into(),
    })
}

fn client(e: &Etcd, files: &EtcdTlsFiles, user: Option<EtcdUser>) -> ha::Etcd {
    let sec = EtcdSecurity::load(true, files, user).unwrap();
    ha::Etcd::secured(vec![e.endpoint()], Duration::from_secs(2), sec)
}

#[test]
fn the_client_reaches_a_secured_etcd_only_with_its_ca_certificate_and_password() {
    let Some(pki) = pki() else { return };
    let Some(e) = secured_etcd(&pki) else { return };
    let good = client(&e, &files(&pki, "ca", Some("client")), user("s3cret"));
    good.put("/walden/t/k", b"v1", 0).unwrap();
    let got = good.get_prefix("/walden/t/").unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].value, b"v1");
    // Outside the user's prefix etcd refuses (permission denied).
    assert!(matches!(
        good.put("/elsewhere", b"x", 0),
        Err(EtcdError::Status { .. })
    ));
    // A wrong password.
    let wrong = client(&e, &files(&pki, "ca", Some("client")), user("nope"));
    match wrong.get_prefix("/walden/") {
        Err(EtcdError::Auth(m)) => assert!(m.contains("walden"), "{m}"),
        other => panic!("wrong password: {other:?}"),
    }
    // No user: etcd's authentication refuses the request.
    let anonymous = client(&e, &files(&pki, "ca", Some("client")), None);
    assert!(anonymous.put("/walden/t/k", b"v2", 0).is_err());
    // No client certificate for an etcd that requires one.
    let no_cert = client(&e, &files(&pki, "ca", None), user("s3cret"));
    assert!(no_cert.get_prefix("/walden/").is_err());
    // A certificate from another CA, and a server not signed by the CA
    // this client trusts.
    let stranger = client(&e, &files(&pki, "ca", Some("stranger")), user("s3cret"));
    assert!(stranger.get_prefix("/walden/").is_err());
    let distrusting = client(&e, &files(&pki, "rogue", Some("client")), user("s3cret"));
    match distrusting.get_prefix("/walden/") {
        Err(EtcdError::Tls(_)) => {}
        other => panic!("a server the client's CA did not sign: {other:?}"),
    }
    // Plain HTTP to a TLS port.
    let plain = e.client();
    assert!(plain.get_prefix("/walden/").is_err());
    // The token expires; the client fetches a new one and goes on.
    std::thread::sleep(Duration::from_secs(TOKEN_TTL_S + 2));
    good.put("/walden/t/k", b"v3", 0).unwrap();
    assert_eq!(good.get_prefix("/walden/t/").unwrap()[0].value, b"v3");
    // Unchanged by every refused attempt.
    assert_eq!(
        good.get_prefix("/walden/t/").unwrap().len(),
        1,
        "a refused client wrote"
    );
}

fn ha_node(name: &str, endpoint: bool, e: &Etcd, security: &EtcdSecurity) -> Node {
    node(name, endpoint, |rc| {
        let mut h = HaConfig::new(vec![e.endpoint()], "secure");
        h.ttl = Duration::from_secs(2);
        h.security = security.clone();
        rc.ha = Some(h);
    })
}

#[test]
fn a_primary_leads_through_a_secured_etcd() {
    let Some(pki) = pki() else { return };
    let Some(e) = secured_etcd(&pki) else { return };
    let files = files(&pki, "ca", Some("client"));
    let security = EtcdSecurity::load(true, &files, user("s3cret")).unwrap();
    let a = ha_node("a", false, &e, &security);
    let b = ha_node("b", true, &e, &security);
    make_table(&a);
    let db = a.inst.database("walden").unwrap();
    let s = a.inst.new_session();
    a.repl
        .create_group(group(
            &a,
            vec![ReplicaDef::new(
                "b",
                url(&b),
                AvailabilityMode::SynchronousCommit,
            )],
        ))
        .unwrap();
    let c = client(&e, &files, user("s3cret"));
    let view = || {
        ha::read_cluster(&c, "secure")
            .ok()
            .and_then(|v| v.groups.into_iter().find(|g| g.name == "ag1"))
    };
    assert!(
        wait_until(Duration::from_secs(20), || view()
            .is_some_and(
                |g| g.leader.is_some() && g.sync.is_some_and(|s| s.members == ["b".to_string()])
            )),
        "the primary never led with b counted through the secured etcd: {:?}",
        view()
    );
    // It renews through token expiries and keeps acknowledging.
    for i in 0..3 {
        std::thread::sleep(Duration::from_secs(TOKEN_TTL_S));
        db.run(&s, CommitRequest::Durable, |tx| {
            tx.insert_named("t", &[("v", Value::text(format!("row {i}")))])
        })
        .unwrap_or_else(|err| panic!("commit {i} refused: {err}"));
    }
    assert!(
        view().is_some_and(|g| g.leader.is_some()),
        "the primary lost the key"
    );
    b.repl.shutdown();
    a.repl.shutdown();
}
