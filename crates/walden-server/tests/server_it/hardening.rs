//! What a client cannot do to the server: lock others out with connections
//! that never finish their handshake or stall at the password, hold a
//! session forever while idle, or run a statement past statement_timeout.

use crate::common;
use common::TestServer;

use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;
use walden_server::{AuthMethod, Rules};

/// Connects, runs `SELECT 1`, and returns how long that took.
async fn serve_one(s: &TestServer, extra: &str) -> Duration {
    let t0 = Instant::now();
    let c = tokio::time::timeout(Duration::from_secs(10), s.connect_with(extra))
        .await
        .expect("connect within 10 s")
        .expect("connect");
    let one: i32 = c.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);
    t0.elapsed()
}

#[tokio::test]
async fn a_thousand_silent_connections_lock_nobody_out() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| c.max_connections = 5);
    let bare: Vec<std::net::TcpStream> = (0..1000)
        .map(|_| std::net::TcpStream::connect(s.addr).expect("bare connection"))
        .collect();
    // Let the server accept them all.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        worst = worst.max(serve_one(&s, "").await);
    }
    println!("1,000 bare connections open: 5 clients served, slowest in {worst:?}");
    assert!(worst < Duration::from_secs(2), "slowest client {worst:?}");
    drop(bare);
}

/// Sends a startup message for `user` and reads the server's first reply
/// (the SASL request), then stays silent: a login stalled at the password.
fn stall_at_password(addr: std::net::SocketAddr, user: &str) -> std::net::TcpStream {
    let mut t = std::net::TcpStream::connect(addr).unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(&196608i32.to_be_bytes());
    for (k, v) in [("user", user), ("database", "walden")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    t.write_all(&msg).unwrap();
    let mut first = [0u8; 1];
    t.read_exact(&mut first).unwrap();
    assert_eq!(first[0], b'R', "an authentication request");
    t
}

#[tokio::test]
async fn logins_stalled_at_the_password_take_no_slot() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| {
        c.max_connections = 3;
        c.auth = Rules::everyone(AuthMethod::ScramSha256);
        c.users.insert("alice".into(), "s3cret".into());
    });
    let stalled: Vec<_> = (0..100)
        .map(|_| stall_at_password(s.addr, "alice"))
        .collect();
    let took = serve_one(&s, "user=alice password=s3cret").await;
    println!("100 logins stalled at the password step: a valid login took {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    drop(stalled);
}

#[tokio::test]
async fn handshakes_end_at_authentication_timeout_and_failed_passwords_are_slowed() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| {
        c.authentication_timeout = Duration::from_millis(300);
        c.auth_failure_delay = Duration::from_millis(200);
        c.auth = Rules::everyone(AuthMethod::ScramSha256);
        c.users.insert("alice".into(), "s3cret".into());
    });
    // Silent: closed by the server after the timeout.
    let mut t = std::net::TcpStream::connect(s.addr).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 16];
    let n = t.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed without a message");
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    // Wrong passwords: each answer comes after the delay.
    let t0 = Instant::now();
    for _ in 0..5 {
        let cs = format!(
            "host=127.0.0.1 port={} user=alice password=wrong dbname=walden",
            s.addr.port()
        );
        let e = tokio_postgres::connect(&cs, NoTls)
            .await
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("28P01"), "{e}");
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(5 * 200),
        "{:?}",
        t0.elapsed()
    );
}

/// Connects and returns the client plus a receiver for the error the
/// connection ends with (a FATAL the server sends unasked).
async fn watched(
    s: &TestServer,
) -> (
    tokio_postgres::Client,
    tokio::sync::oneshot::Receiver<Option<String>>,
) {
    let (c, conn) = tokio_postgres::connect(&s.conn_str(""), NoTls)
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let code = conn
            .await
            .err()
            .and_then(|e| e.code().map(|c| c.code().to_string()));
        let _ = tx.send(code);
    });
    (c, rx)
}

#[tokio::test]
async fn idle_timeouts_end_sessions_with_their_sqlstates() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let (c, ended) = watched(&s).await;
    c.batch_execute("SET idle_in_transaction_session_timeout = '200ms'; BEGIN")
        .await
        .unwrap();
    let code = tokio::time::timeout(Duration::from_secs(5), ended).await;
    assert_eq!(code.unwrap().unwrap().as_deref(), Some("25P03"));

    let (c, ended) = watched(&s).await;
    c.batch_execute("SET idle_session_timeout = 200")
        .await
        .unwrap();
    let show: String = c
        .query_one("SHOW idle_session_timeout", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(show, "200ms");
    let code = tokio::time::timeout(Duration::from_secs(5), ended).await;
    assert_eq!(code.unwrap().unwrap().as_deref(), Some("57P05"));

    // A half-sent query is held no longer than the idle timeout.
    let cfg_dir = tempfile::tempdir().unwrap();
    let s2 = TestServer::start_in(cfg_dir.path(), |c| {
        c.timeouts.idle_session = Some(Duration::from_millis(200))
    });
    let c = s2.client().await;
    c.query_one("SELECT 1", &[]).await.unwrap();
    let mut raw = std::net::TcpStream::connect(s2.addr).unwrap();
    let mut body = 196608i32.to_be_bytes().to_vec();
    body.extend_from_slice(b"user\0walden\0\0");
    let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    m.extend_from_slice(&body);
    raw.write_all(&m).unwrap();
    raw.write_all(b"Q\0\0\0\x40SELECT").unwrap(); // 64 bytes announced, 6 sent
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut all = Vec::new();
    let t0 = Instant::now();
    let _ = raw.read_to_end(&mut all);
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "held {:?}",
        t0.elapsed()
    );
    assert!(
        all.windows(5).any(|w| w == b"57P05"),
        "the FATAL names idle_session_timeout"
    );
}

#[tokio::test]
async fn statement_timeout_cancels_long_statements_and_lock_waits() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)")
        .await
        .unwrap();
    c.batch_execute("SET statement_timeout = '150ms'")
        .await
        .unwrap();
    let t0 = Instant::now();
    let e = c
        .query_one(
            "SELECT count(*) FROM generate_series(1, 2000000000) g WHERE g < 0",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("57014"), "{e}");
    let msg = e
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_default();
    assert!(msg.contains("statement timeout"), "{msg}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    // The session goes on, and a quick statement is not cancelled.
    let one: i32 = c.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);

    // A row lock wait is cancelled too.
    let holder = s.client().await;
    holder
        .batch_execute("BEGIN; UPDATE t SET v = 1 WHERE id = 1")
        .await
        .unwrap();
    let t0 = Instant::now();
    let e = c
        .execute("UPDATE t SET v = 2 WHERE id = 1", &[])
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("57014"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    holder.batch_execute("COMMIT").await.unwrap();
    c.batch_execute("SET statement_timeout = 0").await.unwrap();
    assert_eq!(
        c.execute("UPDATE t SET v = 3 WHERE id = 1", &[])
            .await
            .unwrap(),
        1
    );
}

/// A raw, trusted connection past its startup (ReadyForQuery read).
fn raw_session(addr: std::net::SocketAddr) -> std::net::TcpStream {
    let mut t = std::net::TcpStream::connect(addr).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut body = 196608i32.to_be_bytes().to_vec();
    body.extend_from_slice(b"user\0walden\0database\0walden\0\0");
    let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    m.extend_from_slice(&body);
    t.write_all(&m).unwrap();
    loop {
        let (tag, _) = read_msg(&mut t);
        if tag == b'Z' {
            return t;
        }
    }
}

fn read_msg(t: &mut std::net::TcpStream) -> (u8, Vec<u8>) {
    let mut h = [0u8; 5];
    t.read_exact(&mut h).expect("a message");
    let len = i32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
    let mut b = vec![0u8; len - 4];
    t.read_exact(&mut b).unwrap();
    (h[0], b)
}

fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

#[tokio::test]
async fn malformed_and_oversized_messages_get_their_sqlstates_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // Bind claiming 5 parameters, carrying one.
        (frame(b'B', b"\0\0\0\0\0\x05\0\0\0\x011"), "08P01"),
        // Parse with a type list cut short.
        (frame(b'P', b"\0SELECT $1\0\0\x03\0\0\0\x17"), "08P01"),
        // A length below 4.
        (vec![b'Q', 0, 0, 0, 1], "08P01"),
        // A query announced at 2 GiB: refused before it is received.
        (
            {
                let mut v = vec![b'Q'];
                v.extend_from_slice(&i32::MAX.to_be_bytes());
                v.extend_from_slice(b"SELECT ");
                v
            },
            "53200",
        ),
    ];
    for (bytes, want) in cases {
        let mut t = raw_session(s.addr);
        t.write_all(&bytes).unwrap();
        let (tag, body) = read_msg(&mut t);
        assert_eq!(tag, b'E', "an ErrorResponse");
        let text = String::from_utf8_lossy(&body).to_string();
        assert!(text.contains(want), "{want}: {text}");
        // The connection is closed after it.
        let mut rest = Vec::new();
        let _ = t.read_to_end(&mut rest);
    }
    // Others go on.
    serve_one(&s, "").await;
}

#[tokio::test]
async fn backups_are_written_only_inside_backup_dir() {
    let dir = tempfile::tempdir().unwrap();
    let backups = dir.path().join("backups");
    let data = dir.path().join("data");
    let s = TestServer::start_in(&data, |c| c.backup_dir = Some(backups.clone()));
    let c = s.client().await;
    c.batch_execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
        .await
        .unwrap();
    c.batch_execute("BACKUP DATABASE walden TO DISK = 'full.bak'")
        .await
        .unwrap();
    assert!(backups.join("full.bak").exists());
    let catalog = data.join("instance.json");
    for path in [
        "../data/instance.json".to_string(),
        catalog.display().to_string(),
        "/tmp/walden-escape.bak".to_string(),
    ] {
        let e = c
            .batch_execute(&format!("BACKUP DATABASE walden TO DISK = '{path}'"))
            .await
            .unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{path}: {e}");
    }
    assert!(std::fs::metadata(&catalog).unwrap().len() > 0);
    // Without a backup directory, BACKUP is refused rather than written anywhere.
    let dir2 = tempfile::tempdir().unwrap();
    let s2 = TestServer::start_in(dir2.path(), |_| {});
    let e = s2
        .client()
        .await
        .batch_execute("BACKUP DATABASE walden TO DISK = 'x.bak'")
        .await
        .unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{e}");
}
