//! The protocol at the byte level: an error in an extended-query pipeline
//! is sent at once and discards messages until Sync; Flush sends what is
//! pending; Execute with a row limit suspends the portal; pipelined groups
//! are independent; statement describe; replies to one pipeline come back
//! together; a malformed message ends only its own connection; COPY FROM
//! STDIN inserts rows while the data still arrives.

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
    execute_max(portal, 0)
}

fn execute_max(portal: &str, max_rows: i32) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(max_rows.to_be_bytes());
    msg(b'E', &b)
}

fn flush() -> Vec<u8> {
    msg(b'H', &[])
}

fn close(kind: u8, name: &str) -> Vec<u8> {
    let mut b = vec![kind];
    b.extend(cstr(name));
    msg(b'C', &b)
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
        for kv in [
            "user",
            "walden",
            "database",
            "walden",
            "application_name",
            "walden-tests",
        ] {
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

    /// The next `n` message tags, failing if they do not come within the
    /// read timeout (a reply held back until Sync would hang here).
    async fn tags(&mut self, n: usize) -> Vec<u8> {
        let mut tags = Vec::new();
        while tags.len() < n {
            match self.next().await {
                Some((t, _)) => tags.push(t),
                None => break,
            }
        }
        tags
    }

    /// The next message, which must be an ErrorResponse: its SQLSTATE.
    async fn error_code(&mut self) -> String {
        let (tag, body) = self.next().await.expect("a message");
        assert_eq!(tag, b'E', "expected an ErrorResponse");
        body.split(|&b| b == 0)
            .find_map(|f| f.strip_prefix(b"C"))
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .expect("an SQLSTATE field")
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

#[tokio::test]
async fn flush_sends_pending_replies_and_errors_at_once() {
    let (_dir, port, h, t) = start();
    let mut c = Raw::connect(port).await;

    // Flush, not Sync: the replies so far arrive without ReadyForQuery.
    c.send(&[
        parse("", "SELECT 1 AS one"),
        bind("", ""),
        describe(b'P', ""),
        execute(""),
        flush(),
    ])
    .await;
    assert_eq!(c.tags(5).await, vec![b'1', b'2', b'T', b'D', b'C']);
    c.send(&[sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'Z']);

    // A failing Parse followed by Flush: the error comes at once, what
    // follows until Sync (including another Flush) is skipped.
    c.send(&[parse("", "SELEC 1"), flush()]).await;
    assert_eq!(c.error_code().await, "42601");
    c.send(&[bind("", ""), execute(""), flush(), sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'Z']);

    // The same for an error found by Execute (asyncpg's and pg-cursor's case).
    c.send(&[parse("", "SELECT * FROM no_such_table_here"), flush()])
        .await;
    assert_eq!(c.error_code().await, "42P01");
    c.send(&[sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'Z']);
    c.send(&[
        parse("", "SELECT 1 / (2 - 2)"),
        bind("", ""),
        execute(""),
        flush(),
    ])
    .await;
    assert_eq!(c.tags(2).await, vec![b'1', b'2']);
    assert_eq!(c.error_code().await, "22012");
    c.send(&[sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'Z']);

    // Inside an explicit transaction the error fails the block.
    c.send(&[msg(b'Q', &cstr("BEGIN"))]).await;
    assert_eq!(c.until_ready().await, vec![b'C', b'Z']);
    c.send(&[
        parse("", "SELECT 1 / 0"),
        bind("", ""),
        execute(""),
        flush(),
    ])
    .await;
    assert_eq!(c.tags(2).await, vec![b'1', b'2']);
    assert_eq!(c.error_code().await, "22012");
    c.send(&[sync()]).await;
    let (tag, body) = c.next().await.unwrap();
    assert_eq!((tag, body), (b'Z', b"E".to_vec()), "failed transaction");
    c.send(&[msg(b'Q', &cstr("ROLLBACK"))]).await;
    assert_eq!(c.until_ready().await, vec![b'C', b'Z']);

    h.shutdown();
    t.join().unwrap();
}

#[tokio::test]
async fn execute_with_a_row_limit_suspends_the_portal() {
    let (_dir, port, h, t) = start();
    let mut c = Raw::connect(port).await;
    c.send(&[msg(b'Q', &cstr("BEGIN"))]).await;
    c.until_ready().await;
    // Five rows, fetched two at a time as pg-cursor and asyncpg's cursors do.
    c.send(&[
        parse("", "SELECT x FROM generate_series(1, 5) AS x"),
        bind("c1", ""),
        execute_max("c1", 2),
        flush(),
    ])
    .await;
    assert_eq!(c.tags(5).await, vec![b'1', b'2', b'D', b'D', b's']);
    c.send(&[execute_max("c1", 2), flush()]).await;
    assert_eq!(c.tags(3).await, vec![b'D', b'D', b's']);
    let mut values = Vec::new();
    c.send(&[execute_max("c1", 2), flush()]).await;
    let (tag, body) = c.next().await.unwrap();
    assert_eq!(tag, b'D');
    values.push(body);
    let (tag, body) = c.next().await.unwrap();
    assert_eq!(tag, b'C');
    assert_eq!(
        body,
        b"SELECT 1\0".to_vec(),
        "tag counts the rows of this Execute"
    );
    // The last row is 5: one column of length 1, "5".
    assert_eq!(values[0], b"\0\x01\0\0\0\x015".to_vec());
    // Closing the portal and syncing.
    c.send(&[close(b'P', "c1"), sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'3', b'Z']);
    // The portal is gone.
    c.send(&[execute_max("c1", 2), sync()]).await;
    assert_eq!(c.error_code().await, "34000");
    assert_eq!(c.until_ready().await, vec![b'Z']);
    c.send(&[msg(b'Q', &cstr("ROLLBACK"))]).await;
    c.until_ready().await;
    h.shutdown();
    t.join().unwrap();
}

#[tokio::test]
async fn pipelined_groups_are_independent() {
    let (_dir, port, h, t) = start();
    let mut c = Raw::connect(port).await;
    c.send(&[msg(b'Q', &cstr("CREATE TABLE p (id int PRIMARY KEY)"))])
        .await;
    c.until_ready().await;
    // Three groups sent in one write, the second failing: only it is lost,
    // including its statement that ran before the error (the statements
    // between two Syncs are one implicit transaction).
    let insert = |id: i32| {
        [
            parse("", &format!("INSERT INTO p VALUES ({id})")),
            bind("", ""),
            execute(""),
        ]
        .concat()
    };
    c.send(&[
        insert(1),
        sync(),
        insert(5),
        insert(1),
        insert(2),
        sync(),
        insert(3),
        sync(),
    ])
    .await;
    assert_eq!(c.until_ready().await, vec![b'1', b'2', b'C', b'Z']);
    assert_eq!(c.tags(5).await, vec![b'1', b'2', b'C', b'1', b'2']);
    assert_eq!(c.error_code().await, "23505");
    assert_eq!(c.until_ready().await, vec![b'Z']);
    assert_eq!(c.until_ready().await, vec![b'1', b'2', b'C', b'Z']);
    c.send(&[msg(b'Q', &cstr("SELECT id FROM p ORDER BY id"))])
        .await;
    let mut rows = Vec::new();
    while let Some((t, body)) = c.next().await {
        if t == b'D' {
            rows.push(body[body.len() - 1]);
        }
        if t == b'Z' {
            break;
        }
    }
    assert_eq!(rows, b"13".to_vec());
    h.shutdown();
    t.join().unwrap();
}

#[tokio::test]
async fn deallocate_and_discard_all_drop_prepared_statements() {
    let (_dir, port, h, t) = start();
    let mut c = Raw::connect(port).await;
    let query = |sql: &str| msg(b'Q', &cstr(sql));
    c.send(&[parse("s9", "SELECT 9"), parse("s10", "SELECT 10"), sync()])
        .await;
    assert_eq!(c.until_ready().await, vec![b'1', b'1', b'Z']);
    // DEALLOCATE drops the protocol-level statement of that name.
    c.send(&[query("DEALLOCATE s9")]).await;
    assert_eq!(c.until_ready().await, vec![b'C', b'Z']);
    c.send(&[bind("", "s9"), execute(""), sync()]).await;
    assert_eq!(c.error_code().await, "26000");
    assert_eq!(c.until_ready().await, vec![b'Z']);
    c.send(&[query("DEALLOCATE s9")]).await;
    assert_eq!(c.error_code().await, "26000");
    assert_eq!(c.until_ready().await, vec![b'Z']);
    // The name can be prepared again.
    c.send(&[parse("s9", "SELECT 99"), sync()]).await;
    assert_eq!(c.until_ready().await, vec![b'1', b'Z']);
    // DISCARD ALL: statements, settings and advisory locks go; not inside
    // a transaction block.
    c.send(&[query(
        "SET application_name = 'x'; SELECT pg_advisory_lock(5); BEGIN; DISCARD ALL",
    )])
    .await;
    let tags = c.until_ready().await;
    assert_eq!(&tags[..4], b"CTDC", "{tags:?}");
    assert!(
        tags.contains(&b'E'),
        "refused in a transaction block: {tags:?}"
    );
    c.send(&[query("ROLLBACK"), query("DISCARD ALL")]).await;
    c.until_ready().await;
    assert_eq!(c.until_ready().await, vec![b'C', b'Z']);
    c.send(&[bind("", "s10"), execute(""), sync()]).await;
    assert_eq!(c.error_code().await, "26000");
    c.until_ready().await;
    let mut other = Raw::connect(port).await;
    other.send(&[query("SELECT pg_try_advisory_lock(5)")]).await;
    let mut got = None;
    while let Some((t, body)) = other.next().await {
        if t == b'D' {
            got = Some(*body.last().unwrap());
        }
        if t == b'Z' {
            break;
        }
    }
    assert_eq!(got, Some(b't'), "DISCARD ALL released the advisory lock");
    c.send(&[query("SHOW application_name")]).await;
    let mut shown = Vec::new();
    while let Some((t, body)) = c.next().await {
        if t == b'D' {
            shown = body[6..].to_vec();
        }
        if t == b'Z' {
            break;
        }
    }
    assert_eq!(shown, b"walden-tests".to_vec(), "back to the startup value");
    h.shutdown();
    t.join().unwrap();
}

/// An ErrorResponse's field `code` (e.g. b'W', the context).
fn error_field(body: &[u8], code: u8) -> Option<String> {
    body.split(|&b| b == 0)
        .find_map(|f| f.strip_prefix(&[code][..]))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// COPY FROM STDIN inserts rows as the data arrives: a bad row is reported
/// while the client has not finished (no CopyDone sent), which a server
/// that waits for the whole input cannot do. The whole COPY is undone, the
/// rest of the client's COPY messages are ignored, the session goes on.
#[tokio::test]
async fn copy_in_reports_a_bad_row_before_the_data_ends() {
    let (_dir, port, h, t) = start();
    let mut c = Raw::connect(port).await;
    c.send(&[msg(
        b'Q',
        &cstr("CREATE TABLE t (a int PRIMARY KEY, b text)"),
    )])
    .await;
    assert_eq!(c.until_ready().await, vec![b'C', b'Z']);
    for extended in [false, true] {
        if extended {
            // As tokio-postgres and JDBC do: the Sync comes before the data.
            c.send(&[
                parse("", "COPY t FROM STDIN"),
                bind("", ""),
                execute(""),
                sync(),
            ])
            .await;
            assert_eq!(c.tags(2).await, vec![b'1', b'2']);
        } else {
            c.send(&[msg(b'Q', &cstr("COPY t FROM STDIN"))]).await;
        }
        assert_eq!(c.next().await.map(|m| m.0), Some(b'G'), "CopyInResponse");
        // 20,000 good rows in many messages, one cut in the middle of a
        // line, then a bad one; no CopyDone.
        let good: String = (1..=20_000).map(|i| format!("{i}\tv{i}\n")).collect();
        let parts: Vec<Vec<u8>> = good.as_bytes().chunks(1000).map(|p| msg(b'd', p)).collect();
        c.send(&parts).await;
        c.send(&[msg(b'd', b"x\tbad\n")]).await;
        let (tag, body) = c.next().await.expect("an error before CopyDone");
        assert_eq!(tag, b'E', "{}", String::from_utf8_lossy(&body));
        assert_eq!(error_field(&body, b'C').as_deref(), Some("22P02"));
        assert_eq!(
            error_field(&body, b'M').as_deref(),
            Some("invalid input syntax for type integer: \"x\"")
        );
        assert_eq!(
            error_field(&body, b'W').as_deref(),
            Some("COPY t, line 20001, column a: \"x\"")
        );
        // The client, not having seen the error yet, goes on and ends.
        c.send(&[msg(b'd', b"20002\tlate\n"), msg(b'c', &[])]).await;
        if extended {
            c.send(&[sync()]).await;
        }
        assert_eq!(c.until_ready().await, vec![b'Z']);
        c.send(&[msg(b'Q', &cstr("SELECT count(*) FROM t"))]).await;
        let (tag, body) = c.next().await.unwrap();
        assert_eq!(tag, b'T');
        let _ = body;
        let (tag, body) = c.next().await.unwrap();
        assert_eq!(tag, b'D');
        assert!(
            body.ends_with(b"\x00\x00\x00\x010"),
            "no row kept: {body:?}"
        );
        assert_eq!(c.until_ready().await, vec![b'C', b'Z']);
    }
    // The same data with CopyDone goes in whole.
    let good: String = (1..=20_000).map(|i| format!("{i}\tv{i}\n")).collect();
    c.send(&[msg(b'Q', &cstr("COPY t FROM STDIN"))]).await;
    assert_eq!(c.next().await.map(|m| m.0), Some(b'G'));
    let mut parts: Vec<Vec<u8>> = good.as_bytes().chunks(777).map(|p| msg(b'd', p)).collect();
    parts.push(msg(b'c', &[]));
    c.send(&parts).await;
    let (tag, body) = c.next().await.unwrap();
    assert_eq!((tag, body), (b'C', cstr("COPY 20000")));
    assert_eq!(c.until_ready().await, vec![b'Z']);
    h.shutdown();
    t.join().unwrap();
}
