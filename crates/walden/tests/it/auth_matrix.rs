//! Who may connect, against PostgreSQL 15: the same host-based rules (one
//! pg_hba.conf, turned into walden.toml's `[[auth.rule]]` tables) on both
//! servers, listening on every address with TLS configured, and the same
//! connection attempts against each — every method (trust, scram-sha-256,
//! reject, cert, and scram that demands TLS) × a loopback client and one
//! in a network namespace of its own × a known, unknown, NOLOGIN and
//! expired (VALID UNTIL) role × with and without TLS — each outcome
//! (the role logged in, or PostgreSQL's FATAL message) compared. Also: the
//! default rules on `--listen 0.0.0.0` ask a remote client for SCRAM, and
//! rules that trust remote clients keep a remote listen from starting.
//!
//! The namespace needs root and iproute2, PostgreSQL 15 and openssl; the
//! test is skipped (or, with WALDEN_REQUIRE_TOOLS, fails) without them.

use crate::pg_diff;
use crate::server_support;
use crate::tls_support;

use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tls_support::make_pki;

/// The rules of both servers, as pg_hba.conf lines. `SUPER` is each
/// server's superuser (for the setup).
const HBA: &str = "\
host    all  SUPER  127.0.0.1/32  trust
host    t    all    127.0.0.1/32  trust
host    s    all    all           scram-sha-256
host    r    all    all           reject
hostssl x    all    all           scram-sha-256
hostssl c    all    all           cert
";

/// A pg_hba.conf line as an `[[auth.rule]]` table.
fn rule_toml(line: &str) -> String {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [kind, db, role, addr, method] = f[..] else {
        panic!("bad hba line {line}");
    };
    format!(
        "[[auth.rule]]\ntype = \"{kind}\"\ndatabases = \"{db}\"\nroles = \"{role}\"\naddress = \"{addr}\"\nmethod = \"{method}\"\n\n"
    )
}

/// A network namespace with a veth link to this one: `{prefix}1` here,
/// `{prefix}2` there. Deleted on drop.
struct Netns {
    ns: String,
    host_if: String,
    prefix: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    fn create() -> Result<Netns, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root (network namespaces need CAP_NET_ADMIN)".into());
        }
        if !have("ip", &["-V"]) {
            return Err("iproute2 (`ip`) is not installed".into());
        }
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}{}", std::process::id() % 100_000, n);
        // A /30 in 10.128.0.0/10 (the replication tests use 10.64.0.0/10).
        let slot = (std::process::id() % 4096) * 4 + (n % 4);
        let net = Netns {
            ns: format!("wam{tag}"),
            host_if: format!("wam{tag}h"),
            prefix: format!("10.{}.{}.", 128 + (slot / 256) % 64, slot % 256),
        };
        let p = &net.prefix;
        let inner = format!("{}x", net.host_if);
        ip(&["netns", "add", &net.ns])?;
        ip(&["-n", &net.ns, "link", "set", "lo", "up"])?;
        ip(&["netns", "exec", &net.ns, "true"])?;
        ip(&[
            "link",
            "add",
            &net.host_if,
            "type",
            "veth",
            "peer",
            "name",
            &inner,
        ])?;
        ip(&["link", "set", &inner, "netns", &net.ns])?;
        ip(&["addr", "add", &format!("{p}1/30"), "dev", &net.host_if])?;
        ip(&["link", "set", &net.host_if, "up"])?;
        ip(&[
            "-n",
            &net.ns,
            "addr",
            "add",
            &format!("{p}2/30"),
            "dev",
            &inner,
        ])?;
        ip(&["-n", &net.ns, "link", "set", &inner, "up"])?;
        Ok(net)
    }

    /// This side's address (the servers', as the namespace sees them).
    fn here(&self) -> String {
        format!("{}1", self.prefix)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.host_if]);
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

/// Known, unknown, NOLOGIN, expired.
const ROLES: [&str; 4] = ["k", "u", "n", "e"];
const DATABASES: [&str; 5] = ["t", "s", "r", "x", "c"];
const SETUP: &[&str] = &[
    "CREATE ROLE k LOGIN PASSWORD 'pw'",
    "CREATE ROLE n NOLOGIN PASSWORD 'pw'",
    "CREATE ROLE e LOGIN PASSWORD 'pw' VALID UNTIL '2000-01-01 00:00:00+00'",
    "CREATE DATABASE t",
    "CREATE DATABASE s",
    "CREATE DATABASE r",
    "CREATE DATABASE x",
    "CREATE DATABASE c",
];

/// One attempt: `ok <current_user>` or the server's FATAL message.
fn attempt(
    netns: Option<&str>,
    host: &str,
    port: u16,
    role: &str,
    db: &str,
    tls: bool,
    pki: &Path,
) -> String {
    let mut conn = format!("host={host} port={port} user={role} dbname={db} connect_timeout=10 ");
    if tls {
        let f = |n: &str| pki.join(n).display().to_string();
        conn.push_str(&format!(
            "sslmode=verify-full sslrootcert={} sslcert={} sslkey={}",
            f("ca.crt"),
            f(&format!("{role}.crt")),
            f(&format!("{role}.key"))
        ));
    } else {
        conn.push_str("sslmode=disable");
    }
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "psql"]);
            c
        }
        None => Command::new("psql"),
    };
    cmd.args(["-X", "-At", "-w", "-c", "SELECT current_user", &conn])
        .env("PGPASSWORD", "pw");
    let out = run_with_deadline(&mut cmd, Duration::from_secs(30));
    if out.status.success() {
        return format!("ok {}", String::from_utf8_lossy(&out.stdout).trim());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    match err.split_once("FATAL:  ") {
        Some((_, m)) => m.lines().next().unwrap_or("").trim().to_string(),
        None => format!("client error: {}", err.trim()),
    }
}

/// Every cell's outcome, in a fixed order, as `addr tls db role: outcome`
/// (attempts run 8 at a time).
fn matrix(net: &Netns, port: u16, pki: &Path) -> Vec<String> {
    let mut cells = Vec::new();
    for (where_, ns, host) in [
        ("loopback", None, "127.0.0.1".to_string()),
        ("remote", Some(net.ns.as_str()), net.here()),
    ] {
        for tls in [false, true] {
            for db in DATABASES {
                for role in ROLES {
                    cells.push((where_, ns, host.clone(), tls, db, role));
                }
            }
        }
    }
    let next = AtomicU32::new(0);
    let results = std::sync::Mutex::new(vec![String::new(); cells.len()]);
    std::thread::scope(|sc| {
        for _ in 0..8 {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some((where_, ns, host, tls, db, role)) = cells.get(i) else {
                    break;
                };
                let got = attempt(*ns, host, port, role, db, *tls, pki);
                let tls = if *tls { "tls" } else { "plain" };
                results.lock().unwrap()[i] = format!("{where_} {tls} db={db} role={role}: {got}");
            });
        }
    });
    results.into_inner().unwrap()
}

#[test]
fn auth_matrix_agrees_with_postgresql() {
    if !have("psql", &["--version"]) || !have("openssl", &["version"]) {
        missing_tool("psql and openssl are needed for the authentication matrix");
        return;
    }
    let net = match Netns::create() {
        Ok(n) => n,
        Err(why) => {
            missing_tool(&format!(
                "no network namespace for the remote client: {why}"
            ));
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let pki = tmp.path().join("pki");
    std::fs::create_dir(&pki).unwrap();
    make_pki(&pki, &net.here(), &ROLES);
    tls_support::private(&pki, &ROLES);

    // PostgreSQL 15 with the rules as written.
    let Some(mut pg) = pg_diff::start_postgres(tmp.path(), "to compare the matrix with") else {
        return;
    };
    let read = |n: &str| std::fs::read(pki.join(n)).unwrap();
    let (crt, key, ca) = (read("server.crt"), read("server.key"), read("ca.crt"));
    pg.reconfigure(
        &[
            ("server.crt", &crt),
            ("server.key", &key),
            ("root.crt", &ca),
        ],
        "listen_addresses = '*'\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\nssl_ca_file = 'root.crt'\npassword_encryption = 'scram-sha-256'\n",
        &HBA.replace("SUPER", walden_bench::workbench::pg_peer::ScratchPostgres::USER),
    )
    .expect("PostgreSQL reconfigured");

    // Walden with the same rules, on every address.
    let toml: String = HBA
        .replace("SUPER", "walden")
        .lines()
        .map(rule_toml)
        .collect();
    let cfg = tmp.path().join("walden.toml");
    std::fs::write(
        &cfg,
        format!(
            "auth_failure_delay_ms = 0\n[tls]\ncert = \"{}\"\nkey = \"{}\"\nca = \"{}\"\n\n{toml}",
            pki.join("server.crt").display(),
            pki.join("server.key").display(),
            pki.join("ca.crt").display()
        ),
    )
    .unwrap();
    let walden = Serve::start_in(
        &[],
        "0.0.0.0",
        &tmp.path().join("walden"),
        &["--config", cfg.to_str().unwrap()],
    );

    let rt = pg_diff::runtime();
    rt.block_on(async {
        for conn in [
            pg_diff::postgres_conn(&pg),
            format!(
                "host=127.0.0.1 port={} user=walden dbname=walden",
                walden.port
            ),
        ] {
            let c = pg_diff::connect(&conn).await;
            for sql in SETUP {
                c.simple_query(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql} ({conn}): {e}"));
            }
        }
    });

    let started = Instant::now();
    let want = matrix(&net, pg.port(), &pki);
    let got = matrix(&net, walden.port, &pki);
    eprintln!(
        "{} connection attempts against each server in {:.1} s",
        want.len(),
        started.elapsed().as_secs_f64()
    );
    let differ: Vec<String> = want
        .iter()
        .zip(&got)
        .filter(|(w, g)| w != g)
        .map(|(w, g)| format!("PostgreSQL: {w}\nWalden:     {g}"))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} cells differ:\n{}",
        differ.len(),
        want.len(),
        differ.join("\n")
    );
    // The matrix is not trivially uniform: each kind of outcome occurs.
    let all = want.join("\n");
    for needle in [
        ": ok k",
        "role \"u\" does not exist",
        "role \"n\" is not permitted to log in",
        "password authentication failed for user \"e\"",
        "pg_hba.conf rejects connection",
        "no pg_hba.conf entry for host \"",
        "SSL encryption",
        ": ok e",
    ] {
        assert!(all.contains(needle), "no cell with {needle:?}:\n{all}");
    }
}

#[test]
fn default_rules_on_every_address_ask_remote_clients_for_scram() {
    if !have("psql", &["--version"]) {
        missing_tool("psql is not installed");
        return;
    }
    let net = match Netns::create() {
        Ok(n) => n,
        Err(why) => {
            missing_tool(&format!(
                "no network namespace for the remote client: {why}"
            ));
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start_in(&[], "0.0.0.0", &tmp.path().join("data"), &[]);
    let pki = tmp.path();
    // Loopback: trusted.
    assert_eq!(
        attempt(
            None,
            "127.0.0.1",
            walden.port,
            "walden",
            "walden",
            false,
            pki
        ),
        "ok walden"
    );
    let rt = pg_diff::runtime();
    rt.block_on(async {
        let c = pg_diff::connect(&format!(
            "host=127.0.0.1 port={} user=walden dbname=walden",
            walden.port
        ))
        .await;
        c.simple_query("CREATE ROLE k LOGIN PASSWORD 'pw'")
            .await
            .unwrap();
    });
    // Remote: the bootstrap superuser has no password, so it cannot log
    // in from there; a role with a password can.
    let here = net.here();
    let remote = |role: &str| {
        attempt(
            Some(&net.ns),
            &here,
            walden.port,
            role,
            "walden",
            false,
            pki,
        )
    };
    assert_eq!(
        remote("walden"),
        "password authentication failed for user \"walden\""
    );
    assert_eq!(remote("k"), "ok k");
}

#[test]
fn remote_listen_with_remote_trust_refuses_to_start() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("walden.toml");
    std::fs::write(
        &cfg,
        "[[auth.rule]]\naddress = \"127.0.0.1\"\nmethod = \"trust\"\n\n[[auth.rule]]\naddress = \"10.0.0.0/8\"\nmethod = \"trust\"\n",
    )
    .unwrap();
    let out = run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_walden"))
            .args(["serve", "--listen", "0.0.0.0:0", "--config"])
            .arg(&cfg)
            .arg("--data-dir")
            .arg(tmp.path().join("data")),
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("[[auth.rule]] 2 (host all all 10.0.0.0/8 trust) trusts clients beyond loopback, and listen 0.0.0.0:0 is not a loopback address"),
        "{err}"
    );
    assert!(!tmp.path().join("data").exists());
    // The same rules on loopback start.
    let s = Serve::start(
        &tmp.path().join("data"),
        &["--config", cfg.to_str().unwrap()],
    );
    drop(s);
}

#[test]
fn sighup_reloads_the_rules() {
    if !have("psql", &["--version"]) {
        missing_tool("psql is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("walden.toml");
    let only_walden =
        "[[auth.rule]]\nroles = \"walden\"\naddress = \"127.0.0.1\"\nmethod = \"trust\"\n";
    std::fs::write(&cfg, only_walden).unwrap();
    let s = Serve::start(
        &tmp.path().join("data"),
        &["--config", cfg.to_str().unwrap()],
    );
    let pki = tmp.path();
    let login = |role: &str| attempt(None, "127.0.0.1", s.port, role, "walden", false, pki);
    assert_eq!(login("walden"), "ok walden");
    let rt = pg_diff::runtime();
    rt.block_on(async {
        let c = pg_diff::connect(&s.conn_str()).await;
        c.simple_query("CREATE ROLE k LOGIN").await.unwrap();
    });
    assert_eq!(
        login("k"),
        "no pg_hba.conf entry for host \"127.0.0.1\", user \"k\", database \"walden\", no encryption"
    );
    std::fs::write(
        &cfg,
        format!("{only_walden}\n[[auth.rule]]\nroles = \"k\"\naddress = \"127.0.0.0/8\"\nmethod = \"trust\"\n"),
    )
    .unwrap();
    // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.log().contains("authentication rules reloaded") {
        assert!(Instant::now() < deadline, "no reload in 10 s:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(login("k"), "ok k");
    // A broken file: logged, and the rules in force stay.
    std::fs::write(&cfg, "[[auth.rule]]\nmethod = \"trust\"\n").unwrap();
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.log().contains("configuration not reloaded") {
        assert!(Instant::now() < deadline, "no error in 10 s:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(login("k"), "ok k");
}
