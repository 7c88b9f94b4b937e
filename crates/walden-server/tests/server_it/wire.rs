//! The wire server in-process, driven by tokio-postgres: simple and extended
//! query protocols, typed parameters, binary results, COPY TO, errors and
//! their SQLSTATEs, failed transactions, cancel, max_connections, SCRAM,
//! TLS, /metrics and a clean shutdown (COPY FROM STDIN: copy_from_stdin.rs).

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};
use walden_server::{AuthMethod, Rules};

use crate::common;
use common::{code, TestServer};

async fn simple_rows(c: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn simple_and_extended_queries_with_typed_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;

    c.batch_execute(
        "CREATE TABLE t (id int PRIMARY KEY, name text, v double precision, r real, \
         d numeric(10,2), ts timestamp, dt date, u uuid, b bytea, flag boolean, \
         sm smallint, big bigint, vc varchar(20))",
    )
    .await
    .unwrap();

    // Simple protocol, text results.
    let msgs = c
        .simple_query("INSERT INTO t (id, name) VALUES (1, 'one'), (2, 'two'); SELECT id, name FROM t ORDER BY id")
        .await
        .unwrap();
    let tags: Vec<u64> = msgs
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert_eq!(tags, vec![2, 2]);
    assert_eq!(
        simple_rows(&c, "SELECT id, name FROM t ORDER BY id").await,
        vec![
            vec![Some("1".into()), Some("one".into())],
            vec![Some("2".into()), Some("two".into())]
        ]
    );

    // Extended protocol: binary parameters of every common type.
    let u = uuid::Uuid::parse_str("0123456789abcdef0123456789abcdef").unwrap();
    let ins = c
        .prepare(
            "INSERT INTO t (id, name, v, r, d, ts, dt, u, b, flag, sm, big, vc) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .await
        .unwrap();
    assert_eq!(ins.params()[0], Type::INT4);
    assert_eq!(ins.params()[1], Type::TEXT);
    let ts = std::time::UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
    let date = chrono::NaiveDate::from_ymd_opt(2023, 11, 14).unwrap();
    let n = c
        .execute(
            &ins,
            &[
                &3i32,
                &"three",
                &2.5f64,
                &1.25f32,
                &rust_decimal::Decimal::new(12345, 2),
                &ts,
                &date,
                &u,
                &vec![0u8, 1, 255],
                &true,
                &7i16,
                &(1i64 << 40),
                &"short",
            ],
        )
        .await;
    if let Err(e) = &n {
        panic!("insert with typed parameters failed: {e} ({})", code(e));
    }
    assert_eq!(n.unwrap(), 1);

    // Binary results (tokio-postgres asks for binary) of every type.
    let row = c
        .query_one(
            "SELECT id, name, v, r, d, ts, dt, u, b, flag, sm, big, vc FROM t WHERE id = $1",
            &[&3i32],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 3);
    assert_eq!(row.get::<_, &str>(1), "three");
    assert_eq!(row.get::<_, f64>(2), 2.5);
    assert_eq!(row.get::<_, f32>(3), 1.25);
    assert_eq!(
        row.get::<_, rust_decimal::Decimal>(4),
        rust_decimal::Decimal::new(12345, 2)
    );
    assert_eq!(row.get::<_, std::time::SystemTime>(5), ts);
    assert_eq!(row.get::<_, chrono::NaiveDate>(6), date);
    assert_eq!(row.get::<_, uuid::Uuid>(7), u);
    assert_eq!(row.get::<_, Vec<u8>>(8), vec![0u8, 1, 255]);
    assert!(row.get::<_, bool>(9));
    assert_eq!(row.get::<_, i16>(10), 7);
    assert_eq!(row.get::<_, i64>(11), 1 << 40);
    assert_eq!(row.get::<_, &str>(12), "short");

    // The same values in text form.
    let text = simple_rows(&c, "SELECT v, r, d, ts, dt, u, b, flag FROM t WHERE id = 3").await;
    assert_eq!(
        text[0],
        vec![
            Some("2.5".into()),
            Some("1.25".into()),
            Some("123.45".into()),
            Some("2023-11-14 22:13:20.123456".into()),
            Some("2023-11-14".into()),
            Some("01234567-89ab-cdef-0123-456789abcdef".into()),
            Some("\\x0001ff".into()),
            Some("t".into()),
        ]
    );

    // NULLs both ways, and a prepared statement reused.
    let sel = c.prepare("SELECT name FROM t WHERE id = $1").await.unwrap();
    for (id, want) in [(1i32, Some("one")), (2, Some("two")), (99, None)] {
        let rows = c.query(&sel, &[&id]).await.unwrap();
        assert_eq!(
            rows.first().map(|r| r.get::<_, String>(0)),
            want.map(str::to_string)
        );
    }
    c.execute(
        "INSERT INTO t (id, name) VALUES ($1, $2)",
        &[&4i32, &None::<String>],
    )
    .await
    .unwrap();
    let r = c
        .query_one("SELECT name FROM t WHERE id = 4", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, Option<String>>(0), None);

    // UPDATE with an expression over a parameter; RETURNING through the extended protocol.
    let n = c
        .execute("UPDATE t SET big = big + $1 WHERE id = $2", &[&5i64, &3i32])
        .await
        .unwrap();
    assert_eq!(n, 1);
    let r = c
        .query_one("SELECT big FROM t WHERE id = 3", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, i64>(0), (1 << 40) + 5);

    // Pipelined statements on one connection.
    let futs: Vec<_> = (10..60)
        .map(|i| {
            let c = &c;
            async move {
                c.execute("INSERT INTO t (id, name) VALUES ($1, 'p')", &[&i])
                    .await
            }
        })
        .collect();
    for r in futures::future::join_all(futs).await {
        assert_eq!(r.unwrap(), 1);
    }
    let r = c.query_one("SELECT count(*) FROM t", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 54);

    // Partial fetches from a portal (Execute with a row limit).
    let mut c = c;
    let tx = c.transaction().await.unwrap();
    let st = tx.prepare("SELECT id FROM t ORDER BY id").await.unwrap();
    let portal = tx.bind(&st, &[]).await.unwrap();
    let mut seen = 0;
    loop {
        let rows = tx.query_portal(&portal, 7).await.unwrap();
        if rows.is_empty() {
            break;
        }
        assert!(rows.len() <= 7);
        seen += rows.len();
    }
    assert_eq!(seen, 54);
    tx.commit().await.unwrap();
    drop(c);
    s.stop();
}

#[tokio::test]
async fn errors_have_sqlstates_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute("CREATE TABLE e (id int PRIMARY KEY, v text NOT NULL)")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO e VALUES (1, 'a')")
        .await
        .unwrap();

    let cases = [
        ("SELEC 1", "42601"),
        ("SELECT * FROM nosuch", "42P01"),
        ("SELECT nosuch FROM e", "42703"),
        ("INSERT INTO e VALUES (1, 'dup')", "23505"),
        ("INSERT INTO e VALUES (2, NULL)", "23502"),
        ("SELECT 1 / 0", "22012"),
        ("CREATE TABLE e (x int)", "42P07"),
        ("SELECT nosuchfunction(1)", "42883"),
    ];
    for (sql, want) in cases {
        // Simple protocol.
        let e = c.batch_execute(sql).await.expect_err(sql);
        assert_eq!(code(&e), want, "{sql} (simple): {e}");
        // Extended protocol (prepare or execute fails).
        let e = c.query(sql, &[]).await.expect_err(sql);
        assert_eq!(code(&e), want, "{sql} (extended): {e}");
        // The session goes on.
        let r = c.query_one("SELECT count(*) FROM e", &[]).await.unwrap();
        assert_eq!(r.get::<_, i64>(0), 1);
    }
    // A bad parameter value.
    let e = c
        .query("SELECT v FROM e WHERE id = $1", &[&"x"])
        .await
        .expect_err("text for int");
    assert!(
        e.code().is_none() || code(&e).starts_with("22") || code(&e) == "08P01",
        "{e}"
    );
    let r = c
        .query_one("SELECT v FROM e WHERE id = $1", &[&1i32])
        .await
        .unwrap();
    assert_eq!(r.get::<_, &str>(0), "a");

    // Unknown database: 3D000 at startup.
    let e = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port={} user=walden dbname=nosuchdb",
            s.addr.port()
        ),
        NoTls,
    )
    .await
    .map(|_| ())
    .expect_err("unknown database refused");
    assert_eq!(e.code(), Some(&SqlState::INVALID_CATALOG_NAME), "{e}");
}

#[tokio::test]
async fn an_error_aborts_the_transaction_until_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute("CREATE TABLE a (id int PRIMARY KEY)")
        .await
        .unwrap();
    c.batch_execute("BEGIN").await.unwrap();
    c.batch_execute("INSERT INTO a VALUES (1)").await.unwrap();
    let e = c
        .batch_execute("INSERT INTO a VALUES (1)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "23505");
    for sql in ["SELECT 1", "INSERT INTO a VALUES (2)"] {
        let e = c.batch_execute(sql).await.unwrap_err();
        assert_eq!(code(&e), "25P02", "{sql}: {e}");
        let e = c.query(sql, &[]).await.unwrap_err();
        assert_eq!(code(&e), "25P02", "{sql} (extended): {e}");
    }
    c.batch_execute("ROLLBACK").await.unwrap();
    let r = c.query_one("SELECT count(*) FROM a", &[]).await.unwrap();
    assert_eq!(
        r.get::<_, i64>(0),
        0,
        "the aborted transaction left nothing"
    );

    // The same through tokio-postgres' transaction API (extended protocol).
    let mut c = c;
    let tx = c.transaction().await.unwrap();
    tx.execute("INSERT INTO a VALUES ($1)", &[&5i32])
        .await
        .unwrap();
    assert!(tx
        .execute("INSERT INTO a VALUES ($1)", &[&5i32])
        .await
        .is_err());
    let e = tx.query("SELECT 1", &[]).await.unwrap_err();
    assert_eq!(code(&e), "25P02");
    tx.rollback().await.unwrap();
    let r = c.query_one("SELECT count(*) FROM a", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 0);
}

/// Reads a whole COPY TO STDOUT (tokio-postgres uses the extended protocol).
async fn copy_out_text(c: &Client, sql: &str) -> String {
    use futures::StreamExt;
    let stream = c
        .copy_out(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut stream = std::pin::pin!(stream);
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn copy_out() {
    use futures::SinkExt;
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute(
        "CREATE TABLE co (id int PRIMARY KEY, name text, n bigint, ok boolean, d date);
         INSERT INTO co VALUES (1, 'plain', 10, true, '2024-02-29'),
           (2, E'tab\\there\\nnewline \\\\ back', NULL, false, NULL),
           (3, 'comma, \"quote\"', -5, NULL, NULL), (4, '', 0, true, NULL)",
    )
    .await
    .unwrap();
    // Text format: tab separated, \N for NULL, backslash escapes.
    let text = copy_out_text(&c, "COPY co TO STDOUT").await;
    assert_eq!(
        text,
        "1\tplain\t10\tt\t2024-02-29\n\
         2\ttab\\there\\nnewline \\\\ back\t\\N\tf\t\\N\n\
         3\tcomma, \"quote\"\t-5\t\\N\t\\N\n\
         4\t\t0\tt\t\\N\n"
    );
    // A column list, CSV with a header: quotes only where needed.
    let csv = copy_out_text(
        &c,
        "COPY co (name, id) TO STDOUT WITH (FORMAT csv, HEADER true)",
    )
    .await;
    assert_eq!(
        csv,
        "name,id\nplain,1\n\"tab\there\nnewline \\ back\",2\n\"comma, \"\"quote\"\"\",3\n\"\",4\n"
    );
    // A query, and the legacy CSV HEADER spelling.
    let q = copy_out_text(
        &c,
        "COPY (SELECT id, n * 2 AS twice FROM co WHERE n IS NOT NULL ORDER BY id DESC) TO STDOUT CSV HEADER",
    )
    .await;
    assert_eq!(q, "id,twice\n4,0\n3,-10\n1,20\n");
    // What COPY TO wrote, COPY FROM reads back unchanged.
    c.batch_execute(
        "CREATE TABLE co2 (id int PRIMARY KEY, name text, n bigint, ok boolean, d date)",
    )
    .await
    .unwrap();
    for (out_sql, in_sql) in [
        ("COPY co TO STDOUT", "COPY co2 FROM STDIN"),
        (
            "COPY co TO STDOUT WITH (FORMAT csv, HEADER)",
            "COPY co2 FROM STDIN WITH (FORMAT csv, HEADER)",
        ),
    ] {
        c.batch_execute("DELETE FROM co2").await.unwrap();
        let data = copy_out_text(&c, out_sql).await;
        let sink = c.copy_in(in_sql).await.unwrap();
        let mut sink = std::pin::pin!(sink);
        sink.send(bytes::Bytes::from(data)).await.unwrap();
        assert_eq!(sink.finish().await.unwrap(), 4);
        let diff = c
            .query_one(
                "SELECT count(*) FROM (SELECT * FROM co EXCEPT SELECT * FROM co2) x",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(diff.get::<_, i64>(0), 0, "{in_sql}");
    }
    // Server-side files are refused with a SQLSTATE, and the session goes on.
    let e = c
        .batch_execute("COPY co TO '/tmp/walden-copy-test'")
        .await
        .unwrap_err();
    assert_eq!(code(&e), "0A000", "{e}");
    let e = c
        .copy_out("COPY co (nosuch) TO STDOUT")
        .await
        .err()
        .expect("unknown column");
    assert_eq!(code(&e), "42703", "{e}");
    let r = c.query_one("SELECT 1", &[]).await.unwrap();
    assert_eq!(r.get::<_, i32>(0), 1);
}

#[tokio::test]
async fn cancel_a_running_statement() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    let token = c.cancel_token();
    let t0 = Instant::now();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(NoTls).await.unwrap();
    });
    let e = c
        // The filter keeps every row out, so the statement runs long
        // without growing.
        .simple_query("SELECT count(*) FROM generate_series(1, 2000000000) AS x WHERE x < 0")
        .await
        .expect_err("cancelled");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(30));
    canceller.await.unwrap();
    // The session goes on, and a later statement is not cancelled by a stale flag.
    let r = c.query_one("SELECT 1", &[]).await.unwrap();
    assert_eq!(r.get::<_, i32>(0), 1);
    // A cancel request while idle is ignored.
    c.cancel_token().cancel_query(NoTls).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = c.query_one("SELECT 2", &[]).await.unwrap();
    assert_eq!(r.get::<_, i32>(0), 2);
}

#[tokio::test]
async fn max_connections_refuses_with_53300() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| c.max_connections = 2);
    let c1 = s.client().await;
    let c2 = s.client().await;
    let e = s
        .connect_with("")
        .await
        .expect_err("third connection refused");
    assert_eq!(e.code(), Some(&SqlState::TOO_MANY_CONNECTIONS), "{e}");
    drop(c1);
    // The slot frees once the server notices the disconnect.
    let deadline = Instant::now() + Duration::from_secs(5);
    let c3 = loop {
        match s.connect_with("").await {
            Ok(c) => break c,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("slot not freed: {e}"),
        }
    };
    c3.query_one("SELECT 1", &[]).await.unwrap();
    c2.query_one("SELECT 1", &[]).await.unwrap();
}

#[tokio::test]
async fn scram_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |c| {
        c.auth = Rules::everyone(AuthMethod::ScramSha256);
        c.users.insert("alice".into(), "s3cret".into());
    });
    let ok = format!(
        "host=127.0.0.1 port={} user=alice password=s3cret dbname=walden",
        s.addr.port()
    );
    let (c, conn) = tokio_postgres::connect(&ok, NoTls)
        .await
        .expect("right password");
    tokio::spawn(conn);
    c.query_one("SELECT 1", &[]).await.unwrap();
    for bad in ["user=alice password=wrong", "user=bob password=s3cret"] {
        let cs = format!("host=127.0.0.1 port={} {bad} dbname=walden", s.addr.port());
        let e = tokio_postgres::connect(&cs, NoTls)
            .await
            .map(|_| ())
            .expect_err("refused");
        assert_eq!(e.code(), Some(&SqlState::INVALID_PASSWORD), "{bad}: {e}");
    }
}

/// With a certificate configured, SCRAM on a plain connection must not offer
/// SCRAM-SHA-256-PLUS (sslmode=disable clients refuse it).
#[tokio::test]
async fn scram_on_plain_connections_with_tls_configured() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("server.crt");
    let key = dir.path().join("server.key");
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    if !matches!(&ok, Ok(o) if o.status.success()) {
        common::missing_tool("openssl cannot make a test certificate");
        return;
    }
    let data = dir.path().join("data");
    let s = TestServer::start_in(&data, |c| {
        c.auth = Rules::everyone(AuthMethod::ScramSha256);
        c.users.insert("alice".into(), "pw".into());
        c.tls = Some(walden_server::config::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            ca: None,
        });
    });
    let cs = format!(
        "host=127.0.0.1 port={} user=alice password=pw dbname=walden sslmode=disable",
        s.addr.port()
    );
    let (c, conn) = tokio_postgres::connect(&cs, NoTls)
        .await
        .expect("plain SCRAM login");
    tokio::spawn(conn);
    c.query_one("SELECT 1", &[]).await.unwrap();

    // psql over TLS (channel binding available) and without it.
    if std::process::Command::new("psql")
        .arg("--version")
        .output()
        .is_err()
    {
        common::missing_tool("psql is not installed: no TLS client check");
        return;
    }
    for mode in ["require", "disable"] {
        let out = std::process::Command::new("psql")
            .args(["-X", "-At", "-c", "SELECT 42"])
            .arg(format!(
                "host=127.0.0.1 port={} user=alice dbname=walden sslmode={mode}",
                s.addr.port()
            ))
            .env("PGPASSWORD", "pw")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql sslmode={mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    }
}

async fn http_get(addr: SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

fn metric(body: &str, line_prefix: &str) -> f64 {
    body.lines()
        .find(|l| l.starts_with(line_prefix))
        .unwrap_or_else(|| panic!("no {line_prefix} in metrics"))
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn metrics_endpoint_moves_with_commits() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let m = s.metrics.unwrap();
    let c = s.client().await;
    c.batch_execute("CREATE TABLE m (id int PRIMARY KEY)")
        .await
        .unwrap();
    let before = http_get(m, "/metrics").await;
    assert!(before.starts_with("HTTP/1.1 200"), "{before}");
    assert!(before.contains("text/plain; version=0.0.4"));
    let flushes0 = metric(&before, "walden_log_flushes_total{db=\"walden\"}");
    let writes0 = metric(&before, "walden_write_transactions_total{db=\"walden\"}");
    for i in 0..20 {
        c.execute("INSERT INTO m VALUES ($1)", &[&i]).await.unwrap();
    }
    let after = http_get(m, "/metrics").await;
    assert!(metric(&after, "walden_log_flushes_total{db=\"walden\"}") >= flushes0 + 1.0);
    assert!(metric(&after, "walden_write_transactions_total{db=\"walden\"}") >= writes0 + 20.0);
    assert_eq!(
        metric(&after, "walden_database_poisoned{db=\"walden\"}"),
        0.0
    );
    for needle in [
        "walden_file_writes_total{db=\"walden\",file=\"log\"}",
        "walden_file_io_stall_write_seconds_total{db=\"walden\",file=\"log\"}",
        "walden_wait_tasks_total{wait_type=\"WRITELOG\"}",
        "walden_exposure_unhardened_bytes{db=\"walden\"}",
        "walden_log_hardened_lsn{db=\"walden\"}",
        "walden_connections 1",
        "# TYPE walden_log_flushes_total counter",
        "# TYPE walden_log_slow_flushes_total counter",
    ] {
        assert!(after.contains(needle), "missing {needle}");
    }
    assert!(http_get(m, "/nope").await.starts_with("HTTP/1.1 404"));
    promtool_accepts(&after);
}

/// `promtool check metrics` (Debian's `prometheus`, which `.ci/run`
/// installs) accepts the exposition: base units, `_total` counters, HELP
/// and TYPE for every family.
fn promtool_accepts(response: &str) {
    use std::io::Write;
    let body = response.split("\r\n\r\n").nth(1).expect("an HTTP body");
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool is required (apt-get install prometheus; .ci/run installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn shutdown_ends_connections_and_keeps_committed_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute("CREATE TABLE k (id int PRIMARY KEY, v text)")
        .await
        .unwrap();
    for i in 0..50 {
        c.execute("INSERT INTO k VALUES ($1, 'x')", &[&i])
            .await
            .unwrap();
    }
    c.batch_execute("BEGIN; INSERT INTO k VALUES (1000, 'uncommitted')")
        .await
        .unwrap();
    s.stop();
    // The open connection was told and closed.
    assert!(c.query_one("SELECT 1", &[]).await.is_err());
    drop(c);

    let s2 = TestServer::start_in(dir.path(), |_| {});
    let c = s2.client().await;
    let r = c.query_one("SELECT count(*) FROM k", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 50);
}

/// The T-SQL statements and system views through the extended protocol with
/// binary results: what Describe announces is what Execute sends.
#[tokio::test]
async fn durability_statements_and_system_views_over_the_extended_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute("CREATE TABLE w (id int PRIMARY KEY)")
        .await
        .unwrap();
    let statements = [
        "ALTER DATABASE walden SET DELAYED_DURABILITY = ALLOWED",
        "BEGIN TRAN",
        "INSERT INTO w VALUES (1)",
        "COMMIT TRAN WITH (DELAYED_DURABILITY = ON)",
        "EXEC sys.sp_flush_log",
        "SET synchronous_commit = off",
        "INSERT INTO w VALUES (2)",
        "SET synchronous_commit = on",
        "CHECKPOINT",
        "DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)",
    ];
    for sql in statements {
        c.execute(sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let queries = [
        "SELECT * FROM sys.dm_io_virtual_file_stats(DB_ID('walden'), NULL)",
        "SELECT * FROM sys.dm_os_wait_stats",
        "SELECT * FROM sys.dm_exec_session_wait_stats",
        "SELECT * FROM sys.dm_os_performance_counters",
        "SELECT * FROM sys.databases",
        "SELECT * FROM sys.dm_exec_sessions",
        "SELECT * FROM sys.dm_log_exposure",
        "SELECT @@SPID, DB_ID('walden'), DB_NAME(), now(), newid()",
        "SHOW server_version",
    ];
    for sql in queries {
        let rows = c
            .query(sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert!(!rows.is_empty(), "{sql}: no rows");
        for row in &rows {
            for (i, col) in row.columns().iter().enumerate() {
                // Decoding each value as its announced type checks the binary encoding.
                let ok = match *col.type_() {
                    Type::INT2 => row.try_get::<_, Option<i16>>(i).is_ok(),
                    Type::INT4 => row.try_get::<_, Option<i32>>(i).is_ok(),
                    Type::INT8 => row.try_get::<_, Option<i64>>(i).is_ok(),
                    Type::FLOAT4 => row.try_get::<_, Option<f32>>(i).is_ok(),
                    Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).is_ok(),
                    Type::BOOL => row.try_get::<_, Option<bool>>(i).is_ok(),
                    Type::TEXT | Type::VARCHAR | Type::NAME => {
                        row.try_get::<_, Option<String>>(i).is_ok()
                    }
                    Type::NUMERIC => row.try_get::<_, Option<rust_decimal::Decimal>>(i).is_ok(),
                    Type::TIMESTAMP | Type::TIMESTAMPTZ => {
                        row.try_get::<_, Option<std::time::SystemTime>>(i).is_ok()
                    }
                    Type::DATE => row.try_get::<_, Option<chrono::NaiveDate>>(i).is_ok(),
                    Type::UUID => row.try_get::<_, Option<uuid::Uuid>>(i).is_ok(),
                    Type::BYTEA => row.try_get::<_, Option<Vec<u8>>>(i).is_ok(),
                    ref t => panic!("{sql}: column {} has unexpected type {t}", col.name()),
                };
                assert!(
                    ok,
                    "{sql}: column {} ({}) does not decode",
                    col.name(),
                    col.type_()
                );
            }
        }
    }
    let r = c.query_one("SELECT count(*) FROM w", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 2);
}
