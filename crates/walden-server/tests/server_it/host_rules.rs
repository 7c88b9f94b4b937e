//! Who may connect, through the server: roles that do not exist or lack
//! LOGIN are refused whatever the method, the host-based rules decide in
//! order (no entry, reject, groups, sameuser), `pg_reload_conf()` re-reads
//! them and `pg_hba_file_rules` shows them, refusals are counted in
//! /metrics, VALID UNTIL ends a password, and a listen address beyond
//! loopback is refused with rules that trust remote clients.

use crate::common;

use common::TestServer;
use std::path::Path;
use std::time::Duration;
use tokio_postgres::{Client, NoTls};
use walden_server::{AuthMethod, Rules, Server, ServerConfig};

/// A server whose rules come from `walden.toml` in `dir` (reloadable).
fn start_with_rules(dir: &Path, rules: &str) -> TestServer {
    let file = dir.join("walden.toml");
    std::fs::write(&file, rules).unwrap();
    let parsed = ServerConfig::from_file(&file).unwrap();
    let data = dir.join("data");
    TestServer::start_in(&data, move |c| {
        c.auth = Rules::from_file(parsed.auth.as_ref()).unwrap();
        c.config_file = Some(file);
        c.auth_failure_delay = Duration::from_millis(1);
    })
}

/// Connects; on refusal, the SQLSTATE and message.
async fn connect(
    s: &TestServer,
    user: &str,
    password: Option<&str>,
    db: &str,
) -> Result<Client, (String, String)> {
    let mut conn = format!(
        "host=127.0.0.1 port={} user={user} dbname={db}",
        s.addr.port()
    );
    if let Some(p) = password {
        conn.push_str(&format!(" password={p}"));
    }
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_postgres::connect(&conn, NoTls),
    )
    .await
    .expect("login answered within 10 s");
    match r {
        Ok((client, c)) => {
            tokio::spawn(async move {
                let _ = c.await;
            });
            Ok(client)
        }
        Err(e) => Err((
            common::code(&e),
            e.as_db_error()
                .map(|d| d.message().to_string())
                .unwrap_or_else(|| e.to_string()),
        )),
    }
}

fn refused(r: Result<Client, (String, String)>) -> (String, String) {
    match r {
        Ok(_) => panic!("connection accepted"),
        Err(e) => e,
    }
}

fn message(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| e.to_string())
}

async fn scalar(c: &Client, sql: &str) -> String {
    let rows = c.simple_query(sql).await.unwrap();
    rows.iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some(r.get(0).unwrap_or("NULL").to_string())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{sql}: no row"))
}

async fn metrics(s: &TestServer) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut t = tokio::net::TcpStream::connect(s.metrics.unwrap())
        .await
        .unwrap();
    t.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    t.read_to_string(&mut out).await.unwrap();
    out
}

fn failures(body: &str, reason: &str) -> f64 {
    let prefix = format!("walden_login_failures_total{{reason=\"{reason}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in /metrics"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn unknown_and_nologin_roles_are_refused_on_every_method() {
    let dir = tempfile::tempdir().unwrap();
    // The default rules: trust on loopback.
    let s = TestServer::start_in(dir.path(), |_| {});
    let boot = connect(&s, "walden", None, "walden").await.unwrap();
    boot.batch_execute(
        "CREATE TABLE owned (id int); \
         CREATE ROLE shut NOLOGIN PASSWORD 'pw'; \
         CREATE ROLE open_r LOGIN PASSWORD 'pw'",
    )
    .await
    .unwrap();
    // Under trust, a name that is no role was the bootstrap superuser.
    let (code, msg) = refused(connect(&s, "nosuchuser", None, "walden").await);
    assert_eq!(
        (code.as_str(), msg.as_str()),
        ("28000", "role \"nosuchuser\" does not exist")
    );
    let (code, msg) = refused(connect(&s, "shut", None, "walden").await);
    assert_eq!(
        (code.as_str(), msg.as_str()),
        ("28000", "role \"shut\" is not permitted to log in")
    );
    let open = connect(&s, "open_r", None, "walden").await.unwrap();
    assert_eq!(scalar(&open, "SELECT current_user").await, "open_r");
    // The table is still there: nobody acted as a superuser.
    assert_eq!(scalar(&boot, "SELECT count(*) FROM owned").await, "0");
    let m = metrics(&s).await;
    assert_eq!(failures(&m, "role"), 2.0);
    drop(s);

    // Under SCRAM: an unknown role fails as a wrong password would (28P01,
    // as in PostgreSQL: the client learns nothing of which roles exist);
    // a NOLOGIN role with the right password is still refused (28000).
    let s = TestServer::start_in(dir.path(), |c| {
        c.auth = Rules::everyone(AuthMethod::ScramSha256);
        c.users.insert("walden".into(), "boot".into());
        c.auth_failure_delay = Duration::from_millis(1);
    });
    let (code, msg) = refused(connect(&s, "nosuchuser", Some("pw"), "walden").await);
    assert_eq!(
        (code.as_str(), msg.as_str()),
        (
            "28P01",
            "password authentication failed for user \"nosuchuser\""
        )
    );
    let (code, msg) = refused(connect(&s, "shut", Some("pw"), "walden").await);
    assert_eq!(
        (code.as_str(), msg.as_str()),
        ("28000", "role \"shut\" is not permitted to log in")
    );
    let (code, _) = refused(connect(&s, "open_r", Some("wrong"), "walden").await);
    assert_eq!(code, "28P01");
    connect(&s, "open_r", Some("pw"), "walden").await.unwrap();
    let m = metrics(&s).await;
    assert_eq!(failures(&m, "password"), 2.0);
    assert_eq!(failures(&m, "role"), 1.0);
}

#[tokio::test]
async fn valid_until_ends_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| {
        c.auth = Rules::everyone(AuthMethod::ScramSha256);
        c.users.insert("walden".into(), "boot".into());
        c.auth_failure_delay = Duration::from_millis(1);
    });
    let boot = connect(&s, "walden", Some("boot"), "walden").await.unwrap();
    boot.batch_execute(
        "CREATE ROLE past LOGIN PASSWORD 'pw' VALID UNTIL '2001-02-03 04:05:06+00'; \
         CREATE ROLE future LOGIN PASSWORD 'pw' VALID UNTIL '2999-01-01'; \
         CREATE ROLE forever LOGIN PASSWORD 'pw' VALID UNTIL 'infinity'",
    )
    .await
    .unwrap();
    let (code, msg) = refused(connect(&s, "past", Some("pw"), "walden").await);
    assert_eq!(
        (code.as_str(), msg.as_str()),
        ("28P01", "password authentication failed for user \"past\"")
    );
    connect(&s, "future", Some("pw"), "walden").await.unwrap();
    connect(&s, "forever", Some("pw"), "walden").await.unwrap();
    assert_eq!(
        scalar(
            &boot,
            "SELECT rolvaliduntil::text FROM pg_roles WHERE rolname = 'past'"
        )
        .await,
        "2001-02-03 04:05:06+00"
    );
    // ALTER ROLE ... VALID UNTIL moves it (here: into the future).
    boot.batch_execute("ALTER ROLE past VALID UNTIL '2999-01-01'")
        .await
        .unwrap();
    connect(&s, "past", Some("pw"), "walden").await.unwrap();
    let e = boot
        .batch_execute("ALTER ROLE past VALID UNTIL 'someday'")
        .await
        .unwrap_err();
    assert!(message(&e).contains("someday"), "{e}");
    assert_eq!(
        scalar(&boot, "SHOW password_encryption").await,
        "scram-sha-256"
    );
    // A hash from another method is refused; the plain text is hashed.
    let e = boot
        .batch_execute("ALTER ROLE past PASSWORD 'md5a3556571e93b0d20722ba62be61e8c2d'")
        .await
        .unwrap_err();
    assert!(message(&e).contains("MD5"), "{e}");
    assert!(scalar(
        &boot,
        "SELECT rolpassword FROM pg_authid WHERE rolname = 'future'"
    )
    .await
    .starts_with("SCRAM-SHA-256$4096:"));
}

const RULES: &str = r#"
[[auth.rule]]
roles = "mallory"
address = "all"
method = "reject"

[[auth.rule]]
databases = "walden"
roles = ["walden", "+staff"]
address = "127.0.0.1/32"
method = "trust"

[[auth.rule]]
databases = "sameuser"
address = "127.0.0.0/8"
method = "scram-sha-256"
"#;

#[tokio::test]
async fn rules_decide_in_order_and_reload() {
    let dir = tempfile::tempdir().unwrap();
    let s = start_with_rules(dir.path(), RULES);
    let boot = connect(&s, "walden", None, "walden").await.unwrap();
    boot.batch_execute(
        "CREATE ROLE staff; \
         CREATE ROLE carol LOGIN IN ROLE staff; \
         CREATE ROLE mallory LOGIN; \
         CREATE ROLE dave LOGIN PASSWORD 'pw'",
    )
    .await
    .unwrap();
    boot.batch_execute("CREATE DATABASE dave").await.unwrap();

    // +staff: carol is a member, so the trust rule is hers.
    let carol = connect(&s, "carol", None, "walden").await.unwrap();
    assert_eq!(scalar(&carol, "SELECT current_user").await, "carol");
    let (code, msg) = refused(connect(&s, "mallory", None, "walden").await);
    assert_eq!(code, "28000");
    assert_eq!(
        msg,
        "pg_hba.conf rejects connection for host \"127.0.0.1\", user \"mallory\", database \"walden\", no encryption"
    );
    // dave: no rule for database walden; sameuser for database dave.
    let (code, msg) = refused(connect(&s, "dave", Some("pw"), "walden").await);
    assert_eq!(code, "28000");
    assert_eq!(
        msg,
        "no pg_hba.conf entry for host \"127.0.0.1\", user \"dave\", database \"walden\", no encryption"
    );
    connect(&s, "dave", Some("pw"), "dave").await.unwrap();
    let (code, _) = refused(connect(&s, "dave", Some("nope"), "dave").await);
    assert_eq!(code, "28P01");

    let m = metrics(&s).await;
    assert_eq!(failures(&m, "rejected"), 1.0);
    assert_eq!(failures(&m, "no_rule"), 1.0);
    assert!(failures(&m, "password") >= 1.0);
    assert!(m.contains("# TYPE walden_login_failures_total counter"));

    // The rules as PostgreSQL's view shows them; superusers only.
    let rows = boot
        .simple_query(
            "SELECT line_number, type, database::text, user_name::text, \
             coalesce(address, '-'), coalesce(netmask, '-'), auth_method \
             FROM pg_hba_file_rules ORDER BY line_number",
        )
        .await
        .unwrap();
    let text: Vec<String> = rows
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL"))
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(
        text,
        [
            "1|host|{all}|{mallory}|all|-|reject",
            "2|host|{walden}|{walden,+staff}|127.0.0.1|255.255.255.255|trust",
            "3|host|{sameuser}|{all}|127.0.0.0|255.0.0.0|scram-sha-256",
        ]
    );
    for sql in [
        "SELECT count(*) FROM pg_hba_file_rules",
        "SELECT pg_reload_conf()",
    ] {
        let e = carol.simple_query(sql).await.unwrap_err();
        assert_eq!(common::code(&e), "42501", "{sql}: {e}");
    }

    // Reload: mallory's reject rule goes.
    let file = dir.path().join("walden.toml");
    let without_reject = RULES.replacen(
        "roles = \"mallory\"\naddress = \"all\"\nmethod = \"reject\"",
        "roles = \"mallory\"\naddress = \"127.0.0.1\"\nmethod = \"trust\"",
        1,
    );
    assert_ne!(without_reject, RULES);
    std::fs::write(&file, &without_reject).unwrap();
    assert_eq!(scalar(&boot, "SELECT pg_reload_conf()").await, "t");
    let mallory = connect(&s, "mallory", None, "walden").await.unwrap();
    assert_eq!(scalar(&mallory, "SELECT current_user").await, "mallory");

    // A file with an error is not loaded; the rules in force stay.
    std::fs::write(
        &file,
        "[[auth.rule]]\naddress = \"127.0.0.1\"\nmethod = \"md5\"\n",
    )
    .unwrap();
    let e = boot
        .simple_query("SELECT pg_reload_conf()")
        .await
        .unwrap_err();
    assert_eq!(common::code(&e), "F0000", "{e}");
    assert!(message(&e).contains("scram-sha-256"), "{e}");
    connect(&s, "mallory", None, "walden").await.unwrap();
    // Nor is one with a rule that cannot match (hostssl without TLS).
    std::fs::write(
        &file,
        "[[auth.rule]]\ntype = \"hostssl\"\naddress = \"all\"\nmethod = \"scram-sha-256\"\n",
    )
    .unwrap();
    let e = boot
        .simple_query("SELECT pg_reload_conf()")
        .await
        .unwrap_err();
    assert!(message(&e).contains("hostssl needs TLS"), "{e}");
    connect(&s, "mallory", None, "walden").await.unwrap();
}

#[test]
fn a_remote_listen_with_remote_trust_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ServerConfig::new(dir.path());
    cfg.listen = "0.0.0.0:0".into();
    cfg.auth = Rules::everyone(AuthMethod::Trust);
    let e = Server::start(cfg).err().expect("refused");
    let msg = e.to_string();
    assert!(
        msg.contains("auth = \"trust\" (host all all all trust) trusts clients beyond loopback"),
        "{msg}"
    );
    assert!(msg.contains("0.0.0.0:0 is not a loopback address"), "{msg}");
    // Nothing was created: the check comes before the instance opens.
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());

    // The default rules on the same address start (trust is for loopback).
    let mut cfg = ServerConfig::new(dir.path());
    cfg.listen = "0.0.0.0:0".into();
    let server = Server::start(cfg).expect("default rules start on 0.0.0.0");
    drop(server);
}
