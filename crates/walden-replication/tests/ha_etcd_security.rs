//! HA towards a secured etcd (one member on loopback, started here): TLS
//! with client certificates (`--client-cert-auth`) and etcd's
//! authentication (a user allowed only under `/walden/`). The client
//! reaches it only with the right CA, certificate and password, renews its
//! token when etcd's expires, and a primary takes its group's leader key
//! and acknowledges commits through it. Needs etcd, etcdctl (Debian's
//! etcd-server, etcd-client) and openssl: with WALDEN_REQUIRE_TOOLS set a
//! missing one fails the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use walden_engine::*;
use walden_replication::ha::{self, EtcdError, EtcdSecurity, EtcdTlsFiles, EtcdUser, HaConfig};
use walden_replication::{AgDef, AvailabilityMode, ReplicaDef, Replication, ReplicationConfig};

/// etcd's simple tokens live this long: the tests outlive one.
const TOKEN_TTL_S: u64 = 2;

fn missing_tool(why: &str) {
    let required = std::env::var("WALDEN_REQUIRE_TOOLS").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{why} (WALDEN_REQUIRE_TOOLS is set: a missing tool fails the test)"
    );
    eprintln!("skipped: {why}");
}

fn run(dir: &Path, cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .current_dir(dir)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A CA (and a rogue one), etcd's server certificate and a client's.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Option<Pki> {
        let pki = Pki {
            dir: tempfile::tempdir().unwrap(),
        };
        let d = pki.dir.path();
        std::fs::write(
            d.join("leaf.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n\
             basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n",
        )
        .unwrap();
        let ok = pki.ca("ca")
            && pki.ca("rogue")
            && pki.leaf("server", "ca")
            && pki.leaf("client", "ca")
            && pki.leaf("stranger", "rogue");
        if !ok {
            missing_tool("openssl cannot make test certificates");
            return None;
        }
        Some(pki)
    }

    fn ca(&self, name: &str) -> bool {
        run(
            self.dir.path(),
            "openssl",
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/O={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.crt"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        )
    }

    /// A certificate signed by `ca`. Certificates here carry no CommonName:
    /// etcd's JSON gateway refuses requests whose verified chain has one
    /// while its authentication is on (it would not be used as the user).
    fn leaf(&self, name: &str, ca: &str) -> bool {
        let d = self.dir.path();
        run(
            d,
            "openssl",
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                &format!("/O={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        ) && run(
            d,
            "openssl",
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                &format!("{ca}.crt"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "leaf.ext",
                "-out",
                &format!("{name}.crt"),
            ],
        )
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }

    /// Files trusting `ca`, with `client`'s certificate if given.
    fn files(&self, ca: &str, client: Option<&str>) -> EtcdTlsFiles {
        EtcdTlsFiles {
            ca: Some(self.path(&format!("{ca}.crt"))),
            cert: client.map(|c| self.path(&format!("{c}.crt"))),
            key: client.map(|c| self.path(&format!("{c}.key"))),
        }
    }
}

struct Etcd {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// etcd over TLS with client certificates required, authentication on:
/// `root`, and `walden` (password `s3cret`) with read-write on `/walden/`.
fn secured_etcd(pki: &Pki) -> Option<Etcd> {
    if Command::new("etcd").arg("--version").output().is_err()
        || Command::new("etcdctl").arg("version").output().is_err()
    {
        missing_tool("etcd or etcdctl is not installed");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (port, peer) = (free_port(), free_port());
    let client = format!("https://127.0.0.1:{port}");
    let peer = format!("http://127.0.0.1:{peer}");
    let p = |f: &str| pki.path(f).to_string_lossy().to_string();
    let child = Command::new("etcd")
        .args(["--name", "e0", "--data-dir"])
        .arg(dir.path().join("data"))
        .args([
            "--listen-client-urls",
            &client,
            "--advertise-client-urls",
            &client,
        ])
        .args([
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
        ])
        .args(["--initial-cluster", &format!("e0={peer}")])
        .args([
            "--cert-file",
            &p("server.crt"),
            "--key-file",
            &p("server.key"),
        ])
        .args(["--trusted-ca-file", &p("ca.crt"), "--client-cert-auth"])
        .args(["--auth-token", "simple"])
        .args(["--auth-token-ttl", &TOKEN_TTL_S.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let e = Etcd {
        child,
        port,
        _dir: dir,
    };
    let ctl = |args: &[&str]| -> bool {
        let mut all = vec![
            "--endpoints".to_string(),
            client.clone(),
            "--cacert".into(),
            p("ca.crt"),
            "--cert".into(),
            p("client.crt"),
            "--key".into(),
            p("client.key"),
        ];
        all.extend(args.iter().map(|s| s.to_string()));
        Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(&all)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    assert!(
        wait_until(Duration::from_secs(20), || ctl(&["endpoint", "health"])),
        "etcd did not start"
    );
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
        assert!(ctl(step), "etcdctl {step:?} failed");
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
    ha::Etcd::secured(
        vec![format!("127.0.0.1:{}", e.port)],
        Duration::from_secs(2),
        sec,
    )
}

#[test]
fn the_client_reaches_a_secured_etcd_only_with_its_ca_certificate_and_password() {
    let Some(pki) = Pki::new() else { return };
    let Some(e) = secured_etcd(&pki) else { return };
    let good = client(&e, &pki.files("ca", Some("client")), user("s3cret"));
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
    let wrong = client(&e, &pki.files("ca", Some("client")), user("nope"));
    match wrong.get_prefix("/walden/") {
        Err(EtcdError::Auth(m)) => assert!(m.contains("walden"), "{m}"),
        other => panic!("wrong password: {other:?}"),
    }
    // No user: etcd's authentication refuses the request.
    let anonymous = client(&e, &pki.files("ca", Some("client")), None);
    assert!(anonymous.put("/walden/t/k", b"v2", 0).is_err());
    // No client certificate for an etcd that requires one.
    let no_cert = client(&e, &pki.files("ca", None), user("s3cret"));
    assert!(no_cert.get_prefix("/walden/").is_err());
    // A certificate from another CA, and a server not signed by the CA
    // this client trusts.
    let stranger = client(&e, &pki.files("ca", Some("stranger")), user("s3cret"));
    assert!(stranger.get_prefix("/walden/").is_err());
    let distrusting = client(&e, &pki.files("rogue", Some("client")), user("s3cret"));
    match distrusting.get_prefix("/walden/") {
        Err(EtcdError::Tls(_)) => {}
        other => panic!("a server the client's CA did not sign: {other:?}"),
    }
    // Plain HTTP to a TLS port.
    let plain = ha::Etcd::new(
        vec![format!("127.0.0.1:{}", e.port)],
        Duration::from_secs(2),
    );
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

struct Node {
    inst: Instance,
    repl: Replication,
    _dir: tempfile::TempDir,
}

fn node(name: &str, endpoint: bool, e: &Etcd, security: &EtcdSecurity) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = InstanceConfig::new(dir.path());
    cfg.background_checkpoints = false;
    let inst = Instance::open(cfg).unwrap();
    let mut rc = ReplicationConfig::new(name);
    rc.endpoint_listen = endpoint.then(|| "127.0.0.1:0".into());
    rc.heartbeat = Duration::from_millis(100);
    let mut h = HaConfig::new(vec![format!("127.0.0.1:{}", e.port)], "secure");
    h.ttl = Duration::from_secs(2);
    h.security = security.clone();
    rc.ha = Some(h);
    let repl = Replication::start(inst.clone(), rc).unwrap();
    Node {
        inst,
        repl,
        _dir: dir,
    }
}

#[test]
fn a_primary_leads_through_a_secured_etcd() {
    let Some(pki) = Pki::new() else { return };
    let Some(e) = secured_etcd(&pki) else { return };
    let files = pki.files("ca", Some("client"));
    let security = EtcdSecurity::load(true, &files, user("s3cret")).unwrap();
    let a = node("a", false, &e, &security);
    let b = node("b", true, &e, &security);
    let db = a.inst.database("walden").unwrap();
    let s = a.inst.new_session();
    db.create_table(
        &s,
        TableDef::new(
            "t",
            vec![
                ColumnDef::new("id", DataType::BigInt).identity(1, 1),
                ColumnDef::new("v", DataType::Text),
            ],
            &["id"],
        )
        .unwrap(),
    )
    .unwrap();
    let replica = |name: &str, url: String| ReplicaDef {
        name: name.into(),
        endpoint_url: url,
        mode: AvailabilityMode::SynchronousCommit,
        max_lag_bytes: None,
        max_lag_ms: None,
    };
    a.repl
        .create_group(AgDef {
            name: "ag1".into(),
            databases: vec!["walden".into()],
            replicas: vec![
                replica("a", "tcp://127.0.0.1:1".into()),
                replica("b", format!("tcp://{}", b.repl.endpoint_addr().unwrap())),
            ],
            session_timeout_ms: 2000,
            required_synchronized_secondaries_to_commit: 0,
        })
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
