//! `walden serve` as the built binary: SIGTERM/SIGINT shut it down cleanly
//! (delayed commits acknowledged before are there after a restart), psql and
//! Python's psycopg work against it, /metrics answers.

mod server_support;

use server_support::{have, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;
use tokio_postgres::NoTls;

async fn client(s: &Serve) -> tokio_postgres::Client {
    let (c, conn) = tokio_postgres::connect(&s.conn_str(), NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", s.log()));
    tokio::spawn(conn);
    c
}

async fn count(c: &tokio_postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .get(0)
}

#[tokio::test]
async fn sigterm_and_sigint_shut_down_cleanly_and_keep_delayed_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    for (round, sig) in [(0i64, libc::SIGTERM), (1, libc::SIGINT)] {
        let mut s = Serve::start(&dir, &[]);
        let c = client(&s).await;
        if round == 0 {
            c.batch_execute("CREATE TABLE d (id int PRIMARY KEY, v text)")
                .await
                .unwrap();
            // Delayed durable commits: only the clean shutdown hardens them.
            c.batch_execute("ALTER DATABASE walden SET DELAYED_DURABILITY = FORCED")
                .await
                .unwrap_or_else(|e| {
                    panic!("ALTER DATABASE ... SET DELAYED_DURABILITY = FORCED: {e}")
                });
        }
        for i in 0..200 {
            c.execute(
                "INSERT INTO d VALUES ($1, 'x')",
                &[&((round * 1000 + i) as i32)],
            )
            .await
            .unwrap();
        }
        // An open transaction is rolled back by the shutdown.
        c.batch_execute("BEGIN; INSERT INTO d VALUES (-1, 'open')")
            .await
            .unwrap();
        let st = s.signal_and_wait(sig, Duration::from_secs(30));
        assert!(
            st.success(),
            "exit status {st} after signal {sig}:\n{}",
            s.log()
        );
        assert!(s.log().contains("shut down cleanly"), "{}", s.log());
        drop(c);
    }
    let s = Serve::start(&dir, &[]);
    let c = client(&s).await;
    assert_eq!(count(&c, "SELECT count(*) FROM d").await, 400);
    assert_eq!(count(&c, "SELECT count(*) FROM d WHERE id < 0").await, 0);
}

#[test]
fn psql_runs_statements_and_reports_sqlstates() {
    if !have("psql", &["--version"]) {
        eprintln!("skipped: psql is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let psql = |script: &str| {
        run_with_deadline(
            Command::new("psql")
                .args([
                    "-X",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &s.port.to_string(),
                    "-d",
                    "walden",
                    "-At",
                ])
                .args(["-c", script]),
            Duration::from_secs(60),
        )
    };
    let out = psql("CREATE TABLE p (id int PRIMARY KEY, name varchar(10))");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_with_deadline(
        Command::new("psql")
            .args([
                "-X",
                "-h",
                "127.0.0.1",
                "-p",
                &s.port.to_string(),
                "-d",
                "walden",
                "-At",
            ])
            .args(["-c", "INSERT INTO p VALUES (1, 'a'), (2, 'b')"])
            .args(["-c", "SELECT id || ':' || name FROM p ORDER BY id"])
            .args(["-c", "SELECT count(*) FROM p"]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        vec!["INSERT 0 2", "1:a", "2:b", "2"]
    );

    // Errors name their SQLSTATE with VERBOSITY verbose; psql exits 1 with ON_ERROR_STOP.
    let script = "\\set VERBOSITY verbose\n\\set ON_ERROR_STOP 1\nSELECT * FROM nosuch;\n";
    let path = tmp.path().join("err.sql");
    std::fs::write(&path, script).unwrap();
    let out = run_with_deadline(
        Command::new("psql")
            .args([
                "-X",
                "-h",
                "127.0.0.1",
                "-p",
                &s.port.to_string(),
                "-d",
                "walden",
                "-f",
            ])
            .arg(&path),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("42P01"), "{stderr}");

    // psql's own connection-time queries and \conninfo.
    let out = psql("\\conninfo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Unknown database.
    let out = run_with_deadline(
        Command::new("psql").args([
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &s.port.to_string(),
            "-d",
            "nosuchdb",
            "-c",
            "SELECT 1",
        ]),
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
}

const PSYCOPG_SCRIPT: &str = r#"
import sys, uuid, decimal, datetime
import psycopg
from psycopg import errors

conninfo = sys.argv[1]
with psycopg.connect(conninfo, autocommit=True) as conn:
    conn.execute("CREATE TABLE py (id int PRIMARY KEY, name text, amount numeric(12,2), "
                 "at timestamp, u uuid, ok boolean, data bytea)")
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    at = datetime.datetime(2024, 2, 29, 12, 30, 45, 123456)
    # Server-side parameters through the extended protocol.
    conn.execute("INSERT INTO py VALUES (%s, %s, %s, %s, %s, %s, %s)",
                 (1, "one", decimal.Decimal("12.50"), at, u, True, b"\x00\xff"))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO py (id, name) VALUES (%s, %s)", [(i, f"n{i}") for i in range(2, 12)])
    # Text results.
    row = conn.execute("SELECT id, name, amount, at, u, ok, data FROM py WHERE id = %s", (1,)).fetchone()
    assert row == (1, "one", decimal.Decimal("12.50"), at, u, True, b"\x00\xff"), row
    # Binary results.
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT id, name, amount, at, u, ok, data FROM py WHERE id = %s", (1,))
        row = cur.fetchone()
        assert row == (1, "one", decimal.Decimal("12.50"), at, u, True, b"\x00\xff"), row
    assert conn.execute("SELECT count(*) FROM py").fetchone()[0] == 11
    # Errors carry their SQLSTATE and the connection goes on.
    for sql, state in [("SELECT * FROM nosuch", "42P01"), ("INSERT INTO py (id) VALUES (1)", "23505"),
                       ("SELEC 1", "42601")]:
        try:
            conn.execute(sql)
            raise AssertionError("no error for " + sql)
        except psycopg.Error as e:
            assert e.sqlstate == state, (sql, e.sqlstate, str(e))
    # COPY FROM STDIN.
    with conn.cursor() as cur:
        with cur.copy("COPY py (id, name) FROM STDIN") as copy:
            for i in range(100, 150):
                copy.write_row((i, f"c{i}"))
    assert conn.execute("SELECT count(*) FROM py").fetchone()[0] == 61

# A failed transaction refuses statements (25P02) until rollback.
with psycopg.connect(conninfo) as conn:
    conn.execute("INSERT INTO py (id) VALUES (500)")
    try:
        conn.execute("INSERT INTO py (id) VALUES (500)")
        raise AssertionError("duplicate accepted")
    except errors.UniqueViolation:
        pass
    try:
        conn.execute("SELECT 1")
        raise AssertionError("statement accepted in a failed transaction")
    except errors.InFailedSqlTransaction:
        pass
    conn.rollback()
    assert conn.execute("SELECT count(*) FROM py WHERE id = 500").fetchone()[0] == 0
    conn.commit()
print("psycopg ok")
"#;

#[test]
fn python_psycopg_works() {
    if !have("python3", &["-c", "import psycopg"]) {
        eprintln!("skipped: python3 with psycopg is not installed (pip install 'psycopg[binary]')");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let out = run_with_deadline(
        Command::new("python3").args(["-c", PSYCOPG_SCRIPT, &s.conn_str()]),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("psycopg ok"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn metrics_endpoint_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let port = s.metrics_port.expect("metrics port printed");
    use std::io::{Read, Write};
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    sock.read_to_string(&mut body).unwrap();
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(
        body.contains("walden_log_flushes_total{db=\"walden\"}"),
        "{body}"
    );
}

#[tokio::test]
async fn config_file_settings_apply_and_flags_override_them() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("walden.toml");
    std::fs::write(
        &cfg,
        "data_dir = \"from-file\"\nlisten = \"127.0.0.1:1\"\nmax_connections = 1\n\
         [log]\nlog_block_size = 16384\nmax_flush_delay_ms = 2\nsegment_size = 8388608\nsync_mode = \"fdatasync\"\n\
         [checkpoint]\ninterval_s = 0\n",
    )
    .unwrap();
    // --listen (from Serve::start) overrides the file's; --data-dir too.
    let dir = tmp.path().join("data");
    let s = Serve::start(&dir, &["--config", cfg.to_str().unwrap()]);
    let c = client(&s).await;
    assert_eq!(count(&c, "SELECT count(*) FROM sys.databases").await, 1);
    let e = tokio_postgres::connect(&s.conn_str(), NoTls)
        .await
        .map(|_| ())
        .expect_err("max_connections = 1 from the file");
    assert_eq!(e.code().map(|c| c.code()), Some("53300"), "{e}");
    assert!(dir.exists() && !tmp.path().join("from-file").exists());

    // A bad key or value is refused before anything starts.
    std::fs::write(&cfg, "max_conections = 3\n").unwrap();
    let out = run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_walden"))
            .args(["serve", "--config", cfg.to_str().unwrap()])
            .arg("--data-dir")
            .arg(tmp.path().join("other")),
        Duration::from_secs(30),
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_conections"));
}
