//! The protocol at the byte level: an error in an extended-query pipeline
//! discards messages until Sync; statement describe; replies to one pipeline
//! come back together; a malformed message ends only its own connection.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use walden_server::{Server, ServerConfig};

fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

fn parse(name: &str, sql: &str) -> Vec<u8> {
    let mut b = cstr(name);
    b.extend(cstr(sql));
    b.extend(0i16.to_be_bytes());
    msg(b'P', &b)
}

fn bind(portal: &str, stmt: &str) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(cstr(stmt));
    b.extend(0i16.to_be_bytes()); // parameter formats
    b.extend(0i16.to_be_bytes()); // parameters
    b.extend(0i16.to_be_bytes()); // result formats
    msg(b'B', &b)
}

fn execute(portal: &str) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(0i32.to_be_bytes());
    msg(b'E', &b)
}

fn describe(kind: u8, name: &str) -> Vec<u8> {
    let mut b = vec![kind];
    b.extend(cstr(name));
    msg(b'D', &b)
}

fn sync() -> Vec<u8> {
    msg(b'S', &[])
}

struct Raw {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    async fn connect(port: u16) -> Raw {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut body = 196608i32.to_be_bytes().to_vec();
        for kv in ["user", "walden", "database", "walden"] {
            body.extend(cstr(kv));
        }
        body.push(0);
        let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        m.extend(body);
        s.write_all(&m).await.unwrap();
        let mut r = Raw { s, buf: Vec::new() };
        let tags = r.until_ready().await;
        assert_eq!(tags.first(), Some(&b'R'));
        assert!(tags.contains(&b'K'), "BackendKeyData sent");
        r
    }

    async fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 8192];
        let n = tokio::time::timeout(Duration::from_secs(10), self.s.read(&mut chunk))
            .await
            .expect("reply in time")
            .unwrap();
        self.buf.extend_from_slice(&chunk[..n]);
        n
    }

    /// Next message (tag, body), reading as needed; None at EOF.
    async fn next(&mut self) -> Option<(u8, Vec<u8>)> {
        loop {
            if self.buf.len() >= 5 {
                let len = i32::from_be_bytes(self.buf[1..5].try_into().unwrap()) as usize;
                if self.buf.len() > len {
                    let tag = self.buf[0];
                    let body = self.buf[5..1 + len].to_vec();
                    self.buf.drain(..1 + len);
                    return Some((tag, body));
                }
            }
            if self.fill().await == 0 {
                return None;
            }
        }
    }

    async fn until_ready(&mut self) -> Vec<u8> {
        let mut tags = Vec::new();
        while let Some((t, _)) = self.next().await {
            tags.push(t);
            if t == b'Z' {
                break;
            }
        }
        tags
    }

    async fn send(&mut self, parts: &[Vec<u8>]) {
        let all: Vec<u8> = parts.concat();
        self.s.write_all(&all).await.unwrap();
    }
}

fn start() -> (
    tempfile::TempDir,
    u16,
    walden_server::ShutdownHandle,
    std::thread::JoinHandle<()>,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ServerConfig::new(dir.path());
    cfg.listen = "127.0.0.1:0".into();
    cfg.log.segment_size = Some(4 << 20);
    cfg.log.preallocate_spare = Some(false);
    let server = Server::start(cfg).unwrap();
    let port = server.local_addr().port();
    let h = server.shutdown_handle();
    let t = std::thread::spawn(move || server.run(false).unwrap());
    (dir, port, h, t)
}

#[tokio::test]
async fn extended_query_errors_skip_to_sync() {
    let (_dir, port, h, t) = start();
    let mut c = Raw::connect(port).await;

    // A failed Parse: Bind, Execute are skipped, Sync answers.
    c.send(&[parse("", "SELEC 1"), bind("", ""), execute(""), sync()])
        .await;
    assert_eq!(c.until_ready().await, vec![b'E', b'Z']);

    // Everything works after the Sync, and the replies of one pipeline
    // arrive in one piece.
    c.send(&[
        parse("", "SELECT 1 AS one"),
        bind("", ""),
        describe(b'P', ""),
        execute(""),
        sync(),
    ])
    .await;
    c.fill().await;
    assert_eq!(
        &c.buf[c.buf.len() - 6..],
        b"Z\0\0\0\x05I",
        "one write per Sync"
    );
    let tags = c.until_ready().await;
    assert_eq!(tags, vec![b'1', b'2', b'T', b'D', b'C', b'Z']);

    // Statement describe: parameters, then the row shape or NoData.
    c.send(&[parse("s1", "SELECT 1 AS one"), describe(b'S', "s1"), sync()])
        .await;
    assert_eq!(c.until_ready().await, vec![b'1', b't', b'T', b'Z']);
    c.send(&[
        parse("s2", "CREATE TABLE x (id int PRIMARY KEY)"),
        describe(b'S', "s2"),
        sync(),
    ])
    .await;
    assert_eq!(c.until_ready().await, vec![b'1', b't', b'n', b'Z']);
    // A named statement cannot be parsed twice; an unknown one cannot be bound.
    c.send(&[parse("s1", "SELECT 2"), sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'E', b'Z']);
    c.send(&[bind("", "nosuch"), execute(""), sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'E', b'Z']);
    // The named statement still runs.
    c.send(&[bind("", "s1"), execute(""), sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'2', b'D', b'C', b'Z']);

    // An empty simple query.
    c.send(&[msg(b'Q', &cstr(""))]).await;
    assert_eq!(c.until_ready().await, vec![b'I', b'Z']);

    // A malformed message ends this connection with a FATAL error only.
    c.send(&[msg(b'P', b"\xff\xff")]).await;
    let mut tags = Vec::new();
    while let Some((t, _)) = c.next().await {
        tags.push(t);
    }
    assert_eq!(tags.first(), Some(&b'E'), "{tags:?}");
    let mut c2 = Raw::connect(port).await;
    c2.send(&[msg(b'Q', &cstr("SELECT 1"))]).await;
    assert_eq!(c2.until_ready().await, vec![b'T', b'D', b'C', b'Z']);
    // Terminate.
    c2.send(&[msg(b'X', &[])]).await;
    assert!(c2.next().await.is_none());
    h.shutdown();
    t.join().unwrap();
}
