//! Drivers over TLS with the server verified (sslmode=verify-full or the
//! driver's equivalent) against `walden serve` with `[tls]` and rules that
//! allow only TLS: node-postgres with SCRAM and with a client certificate
//! (`cert`), and pgjdbc with SCRAM. (psql, pgbench and psycopg are in
//! crates/walden-server/tests/server_it/tls_rules.rs.)

use crate::server_support;
use crate::tls_support;

use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const DRIVER_JAR: &str = "/usr/share/java/postgresql.jar";

fn clients() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// A server whose rules take only TLS from the drivers: alice by her
/// certificate, everyone else by SCRAM; `walden` on loopback for the setup.
fn start(tmp: &Path) -> Serve {
    let pki = tmp.join("pki");
    std::fs::create_dir(&pki).unwrap();
    tls_support::make_pki(&pki, "127.0.0.1", &["alice"]);
    let cfg = tmp.join("walden.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[tls]
cert = "{0}/server.crt"
key = "{0}/server.key"
ca = "{0}/ca.crt"

[[auth.rule]]
type = "hostnossl"
roles = "walden"
address = "127.0.0.1"
method = "trust"

[[auth.rule]]
type = "hostssl"
roles = "alice"
address = "all"
method = "cert"

[[auth.rule]]
type = "hostssl"
address = "all"
method = "scram-sha-256"
"#,
            pki.display()
        ),
    )
    .unwrap();
    let s = Serve::start(&tmp.join("data"), &["--config", cfg.to_str().unwrap()]);
    let out = run_with_deadline(
        Command::new("psql").args([
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            &format!(
                "host=127.0.0.1 port={} user=walden dbname=walden sslmode=disable",
                s.port
            ),
            "-c",
            "CREATE ROLE carol LOGIN PASSWORD 'pw'",
            "-c",
            "CREATE ROLE alice LOGIN",
        ]),
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "setup: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    s
}

fn stdout_of(cmd: &mut Command, what: &str) -> String {
    let out = run_with_deadline(cmd, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn node_postgres_and_pgjdbc_over_verified_tls() {
    if !have("psql", &["--version"]) || !have("openssl", &["version"]) {
        missing_tool("psql and openssl are needed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = start(tmp.path());
    let pki = tmp.path().join("pki");
    let f = |n: &str| pki.join(n).display().to_string();
    let port = s.port.to_string();

    if have("node", &["--version"]) && clients().join("node_modules/pg").is_dir() {
        let script = clients().join("tls_login.js");
        let node = |args: &[&str]| {
            let mut c = Command::new("node");
            c.arg(&script)
                .args(["127.0.0.1", &port, &f("ca.crt")])
                .args(args);
            c
        };
        assert_eq!(
            stdout_of(&mut node(&["carol", "pw"]), "node-postgres, SCRAM"),
            "carol true"
        );
        assert_eq!(
            stdout_of(
                &mut node(&["alice", "", &f("alice.crt"), &f("alice.key")]),
                "node-postgres, certificate"
            ),
            "alice true"
        );
        let out = run_with_deadline(&mut node(&["carol", "wrong"]), Duration::from_secs(60));
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("password authentication failed for user \"carol\""),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        missing_tool(
            "node-postgres is not installed (npm ci --prefix crates/walden/tests/clients)",
        );
    }

    if have("javac", &["-version"]) && Path::new(DRIVER_JAR).is_file() {
        let classes = tmp.path().join("classes");
        let st = run_with_deadline(
            Command::new("javac")
                .args(["-cp", DRIVER_JAR, "-d"])
                .arg(&classes)
                .arg(clients().join("TlsLogin.java")),
            Duration::from_secs(120),
        );
        assert!(
            st.status.success(),
            "javac: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        let cp = format!("{}:{DRIVER_JAR}", classes.display());
        let out = stdout_of(
            Command::new("java").args([
                "-cp",
                &cp,
                "TlsLogin",
                "127.0.0.1",
                &port,
                &f("ca.crt"),
                "carol",
                "pw",
            ]),
            "pgjdbc, verify-full",
        );
        assert_eq!(out, "carol");
    } else {
        missing_tool(
            "a JDK and pgjdbc are not installed (default-jdk-headless, libpostgresql-jdbc-java)",
        );
    }
}
