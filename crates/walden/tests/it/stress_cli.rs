//! `walden stress` as the built binary against `walden serve`: the counts and
//! percentiles of a clean run, failed iterations grouped by SQLSTATE with the
//! run going on (and their transactions rolled back), and clear errors.

use crate::server_support;

use serde_json::Value;
use server_support::{run_with_deadline, Serve};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use tokio_postgres::NoTls;

fn url(s: &Serve) -> String {
    format!("postgres://walden@127.0.0.1:{}/walden", s.port)
}

fn stress(args: &[&str]) -> Output {
    run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_walden"))
            .arg("stress")
            .arg("--no-progress")
            .args(args),
        Duration::from_secs(120),
    )
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn read_json(path: &Path) -> Value {
    let s = std::fs::read_to_string(path).expect("the --json file");
    serde_json::from_str(&s).expect("valid JSON")
}

async fn count(s: &Serve, sql: &str) -> i64 {
    let (c, conn) = tokio_postgres::connect(&s.conn_str(), NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", s.log()));
    tokio::spawn(conn);
    c.query_one(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .get(0)
}

#[tokio::test]
async fn four_sessions_insert_and_every_figure_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let json = tmp.path().join("run.json");
    let out = stress(&[
        "--url",
        &url(&s),
        "--setup-sql",
        "CREATE TABLE st (s int, n int, r int, v text, PRIMARY KEY (s, n))",
        "--sessions",
        "4",
        "--iterations",
        "50",
        "--sql",
        "INSERT INTO st VALUES (:session, :n, :rand(1, 1000), ':randstr(12)')",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("200 (200 ok, 0 failed)"), "{}", text(&out));

    let j = read_json(&json);
    assert_eq!(j["sessions"], 4);
    assert_eq!(j["iterations"], 200, "{j:#}");
    assert_eq!(j["succeeded"], 200);
    assert_eq!(j["failed"], 0);
    assert_eq!(j["errors"].as_array().unwrap().len(), 0);
    assert!(j["throughput_per_s"].as_f64().unwrap() > 0.0);
    let l = &j["latency_ms"];
    assert_eq!(l["count"], 200);
    let pct: Vec<f64> = ["min", "p50", "p95", "p99", "p99_9", "max"]
        .iter()
        .map(|k| {
            l[k].as_f64()
                .unwrap_or_else(|| panic!("latency_ms.{k}: {l}"))
        })
        .collect();
    assert!(pct[0] > 0.0, "{l}");
    assert!(pct.windows(2).all(|w| w[0] <= w[1]), "not ordered: {l}");
    let per = j["per_session"].as_array().unwrap();
    assert_eq!(per.len(), 4);
    for (i, p) in per.iter().enumerate() {
        assert_eq!(p["session"], i + 1);
        assert_eq!(p["iterations"], 50);
        assert!(p["duration_s"].as_f64().unwrap() > 0.0);
    }
    let d = &j["session_duration_s"];
    assert!(d["min"].as_f64() <= d["avg"].as_f64() && d["avg"].as_f64() <= d["max"].as_f64());

    assert_eq!(count(&s, "SELECT count(*) FROM st").await, 200);
    assert_eq!(count(&s, "SELECT count(DISTINCT s) FROM st").await, 4);
    assert_eq!(
        count(&s, "SELECT count(*) FROM st WHERE n BETWEEN 1 AND 50").await,
        200
    );
    assert_eq!(
        count(&s, "SELECT count(*) FROM st WHERE r BETWEEN 1 AND 1000").await,
        200
    );
}

#[tokio::test]
async fn failed_iterations_are_grouped_by_sqlstate_and_rolled_back() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let script = tmp.path().join("dup.sql");
    // Both sessions insert the same keys (:n), so each key fails in exactly
    // one of them: 20 iterations succeed, 20 fail with a duplicate key, and
    // a failed iteration's audit row is rolled back with it.
    std::fs::write(
        &script,
        "-- one key per iteration, shared by both sessions\n\
         \\set unused random(1, 10)\n\
         BEGIN;\n\
         INSERT INTO audit VALUES (:session, :n);\n\
         INSERT INTO dup VALUES (:n);\n\
         COMMIT;\n",
    )
    .unwrap();
    let json = tmp.path().join("run.json");
    for (round, protocol) in ["simple", "extended"].into_iter().enumerate() {
        let out = stress(&[
            "--url",
            &url(&s),
            "--setup-sql",
            "DROP TABLE IF EXISTS dup; DROP TABLE IF EXISTS audit; \
             CREATE TABLE dup (k int PRIMARY KEY); \
             CREATE TABLE audit (s int, n int, PRIMARY KEY (s, n))",
            "--sessions",
            "2",
            "--iterations",
            "20",
            "--script",
            script.to_str().unwrap(),
            "--protocol",
            protocol,
            "--json",
            json.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "round {round}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("SQLSTATE 23505"), "{}", text(&out));
        let j = read_json(&json);
        assert_eq!(j["protocol"], protocol);
        assert_eq!(j["iterations"], 40, "{j:#}");
        assert_eq!(j["failed"], 20, "{j:#}");
        assert_eq!(j["succeeded"], 20, "{j:#}");
        assert_eq!(j["latency_ms"]["count"], 20);
        let errors = j["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "one group expected: {j:#}");
        assert_eq!(errors[0]["sqlstate"], "23505");
        assert_eq!(errors[0]["statement"], 3);
        assert_eq!(errors[0]["count"], 20);
        assert!(!errors[0]["messages"].as_array().unwrap().is_empty());
        assert_eq!(count(&s, "SELECT count(*) FROM dup").await, 20);
        assert_eq!(count(&s, "SELECT count(*) FROM audit").await, 20);
    }
}

#[test]
fn unreachable_servers_and_bad_input_get_clear_errors() {
    // A port nobody listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("postgres://walden@127.0.0.1:{port}/walden");
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.sql");
    let cases: [(Vec<&str>, i32, &str); 4] = [
        (
            vec!["--url", &dead, "--iterations", "1", "--sql", "SELECT 1"],
            1,
            "cannot connect to 127.0.0.1:",
        ),
        (
            vec![
                "--url",
                "postgres://walden@127.0.0.1:notaport/walden",
                "--iterations",
                "1",
                "--sql",
                "SELECT 1",
            ],
            2,
            "bad --url",
        ),
        (
            vec![
                "--url",
                &dead,
                "--iterations",
                "1",
                "--script",
                missing.to_str().unwrap(),
            ],
            1,
            "cannot read script",
        ),
        (
            vec![
                "--url",
                &dead,
                "--iterations",
                "1",
                "--sql",
                "SELECT :rand(9, 1)",
            ],
            2,
            "low bound",
        ),
    ];
    for (args, code, needle) in cases {
        let out = stress(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out));
        assert!(stderr.contains(needle), "{args:?}: {}", text(&out));
        assert!(!stderr.contains("panicked"), "{args:?}: {}", text(&out));
    }
}
