//! `walden serve` as the built binary: SIGTERM/SIGINT shut it down cleanly
//! (delayed commits acknowledged before are there after a restart), psql
//! (including `\d` and `\copy`) and Python's psycopg work against it,
//! /metrics answers.

use crate::server_support;

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
        server_support::missing_tool("psql is not installed");
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
                    "-U",
                    "walden",
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
                "-U",
                "walden",
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
                "-U",
                "walden",
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
            "-U",
            "walden",
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

/// Runs psql (`-X`, unaligned, tuples only unless `args` say otherwise)
/// against the server; fails the test if psql fails.
fn psql_ok(s: &Serve, args: &[&str]) -> String {
    let out = run_with_deadline(
        Command::new("psql")
            .args([
                "-X",
                "-h",
                "127.0.0.1",
                "-p",
                &s.port.to_string(),
                "-U",
                "walden",
                "-d",
                "walden",
            ])
            .args(["-v", "ON_ERROR_STOP=1"])
            .args(args),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "psql {args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn psql_describes_tables_and_copies_to_files() {
    if !have("psql", &["--version"]) {
        server_support::missing_tool("psql is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    psql_ok(
        &s,
        &[
            "-c",
            "CREATE TABLE t (id serial PRIMARY KEY, name varchar(20) NOT NULL, \
             note text DEFAULT 'x', ts timestamp without time zone, amt numeric(12,2), n bigint)",
            "-c",
            "INSERT INTO t (name, note, ts, amt, n) VALUES ('plain', 'p', '2024-02-29 12:30:00', 12.25, 5), \
             ('tab\there', E'multi\nline \\\\ back', NULL, NULL, NULL), ('comma, \"q\"', '', NULL, -1.25, 0)",
        ],
    );

    // \d t: the columns as PostgreSQL names their types, nullability,
    // defaults, and the primary key's index.
    let d = psql_ok(&s, &["-c", "\\d t"]);
    let has_line = |out: &str, cells: &[&str]| {
        out.lines().any(|l| {
            let got: Vec<&str> = l.split('|').map(str::trim).collect();
            got == cells
        })
    };
    for cells in [
        &[
            "id",
            "integer",
            "",
            "not null",
            "nextval('t_id_seq'::regclass)",
        ][..],
        &["name", "character varying(20)", "", "not null", ""],
        &["note", "text", "", "", "'x'::text"],
        &["ts", "timestamp without time zone", "", "", ""],
        &["amt", "numeric(12,2)", "", "", ""],
        &["n", "bigint", "", "", ""],
    ] {
        assert!(has_line(&d, cells), "no line {cells:?} in:\n{d}");
    }
    assert!(d.contains("Table \"public.t\""), "{d}");
    assert!(
        d.contains("Indexes:\n    \"t_pkey\" PRIMARY KEY, btree (id)"),
        "{d}"
    );
    // \d+ adds storage and the access method.
    let dplus = psql_ok(&s, &["-c", "\\d+ t"]);
    assert!(
        has_line(
            &dplus,
            &["amt", "numeric(12,2)", "", "", "", "main", "", "", ""]
        ),
        "{dplus}"
    );
    assert!(dplus.contains("Access method: heap"), "{dplus}");
    // \d lists relations, \di the primary key's index.
    let list = psql_ok(&s, &["-c", "\\d"]);
    assert!(list.contains("List of relations"), "{list}");
    assert!(
        list.lines()
            .any(|l| l.contains("| t ") && l.contains("| table")),
        "{list}"
    );
    let di = psql_ok(&s, &["-c", "\\di"]);
    assert!(
        di.lines()
            .any(|l| l.contains("t_pkey") && l.contains("| index")),
        "{di}"
    );
    let missing = run_with_deadline(
        Command::new("psql")
            .args([
                "-X",
                "-h",
                "127.0.0.1",
                "-p",
                &s.port.to_string(),
                "-U",
                "walden",
                "-d",
                "walden",
            ])
            .args(["-c", "\\d nosuch"]),
        Duration::from_secs(60),
    );
    assert!(String::from_utf8_lossy(&missing.stderr)
        .contains("Did not find any relation named \"nosuch\""));

    // \copy to a client file and back into another table: identical rows.
    let text = tmp.path().join("t.copy");
    let csv = tmp.path().join("t.csv");
    psql_ok(
        &s,
        &[
            "-c",
            &format!("\\copy t to '{}'", text.display()),
            "-c",
            "CREATE TABLE t2 (id int PRIMARY KEY, name varchar(20) NOT NULL, note text, ts timestamp, amt numeric(12,2), n bigint)",
            "-c",
            &format!("\\copy t2 from '{}'", text.display()),
        ],
    );
    let same = psql_ok(
        &s,
        &[
            "-At",
            "-c",
            "SELECT (SELECT count(*) FROM t2), (SELECT count(*) FROM (SELECT * FROM t EXCEPT SELECT * FROM t2) x)",
        ],
    );
    assert_eq!(same.trim(), "3|0");
    let data = std::fs::read_to_string(&text).unwrap();
    assert!(data.contains("multi\\nline \\\\ back"), "{data}");
    assert!(
        data.lines().any(|l| l.ends_with("\t\\N\t\\N\t\\N")),
        "{data}"
    );

    // A CSV export with a header.
    psql_ok(
        &s,
        &[
            "-c",
            &format!("\\copy (SELECT id, name, amt FROM t ORDER BY id) to '{}' with (format csv, header)", csv.display()),
        ],
    );
    let data = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        data,
        "id,name,amt\n1,plain,12.25\n2,tab\there,\n3,\"comma, \"\"q\"\"\",-1.25\n"
    );
    // COPY TO STDOUT straight to psql's output, the legacy CSV HEADER form.
    let out = psql_ok(&s, &["-c", "COPY t (id, n) TO STDOUT CSV HEADER"]);
    assert_eq!(out, "id,n\n1,5\n2,\n3,0\n");
    // A server-side file is refused with 0A000, not a crash.
    let out = run_with_deadline(
        Command::new("psql")
            .args([
                "-X",
                "-h",
                "127.0.0.1",
                "-p",
                &s.port.to_string(),
                "-U",
                "walden",
                "-d",
                "walden",
            ])
            .args([
                "-v",
                "VERBOSITY=verbose",
                "-c",
                "COPY t TO '/tmp/walden-server-file'",
            ]),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("0A000"),
        "{stderr}"
    );
    assert!(!std::path::Path::new("/tmp/walden-server-file").exists());
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
    # COPY TO STDOUT, row by row.
    with conn.cursor() as cur:
        with cur.copy("COPY (SELECT id, name FROM py WHERE id >= 148 ORDER BY id) TO STDOUT") as copy:
            got = [tuple(r) for r in copy.rows()]
    assert got == [("148", "c148"), ("149", "c149")], got

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
        server_support::missing_tool(
            "python3 with psycopg is not installed (pip install 'psycopg[binary]')",
        );
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

/// `walden serve ... 2>&1 | head -1`: once its output pipe is closed the
/// server must still log (nowhere), serve, and shut down cleanly on SIGTERM.
/// Before, the first failed log write panicked (tracing reported it with
/// eprintln!) and SIGTERM was ignored.
#[test]
fn sigterm_works_after_the_output_pipe_closed() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_walden"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(tmp.path().join("data"))
        .env("RUST_LOG", "debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("listening on"), "{first}");
    // Both pipes closed: every later write fails with EPIPE.
    drop(child.stderr.take());
    let addr = first.trim().trim_start_matches("listening on ").to_string();
    // Log lines are written (and fail) while a client connects.
    let _ = std::net::TcpStream::connect(&addr);
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "the server died");
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("SIGTERM ignored: still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}
