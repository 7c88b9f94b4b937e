//! `DBCC CHECKDB` and the background check of the data file through the
//! server: a clean file gives one row per stored table and index with its
//! entries counted; SQL Server's forms and the options Walden does not
//! have; and a row damaged on disk while the server was stopped is found by
//! the check that runs after the start, read as XX001, and stops the
//! checkpoints while other rows and writes go on.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect};
use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ROWS: i64 = 5_000;

fn tag(id: i64) -> String {
    format!("needle-{id:06}-{}", "z".repeat(50))
}

async fn sqlstate(c: &tokio_postgres::Client, sql: &str) -> (String, String) {
    let e = c
        .simple_query(sql)
        .await
        .err()
        .unwrap_or_else(|| panic!("{sql} succeeded"));
    let db = e.as_db_error().expect("a database error");
    (db.code().code().to_string(), db.message().to_string())
}

fn store_file(dir: &Path) -> PathBuf {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "store.redb") {
                return p;
            }
        }
    }
    panic!("no store.redb under {}", dir.display());
}

fn wait_for_log(s: &Serve, what: &str) {
    let t0 = Instant::now();
    while !s.log().contains(what) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no \"{what}\" in the server log:\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn checkdb_and_the_background_check_find_a_damaged_row() {
    if !have("psql", &["--version"]) {
        return missing_tool("psql");
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut s = Serve::start(&data, &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&s.conn_str()).await;
        c.batch_execute(&format!(
            "CREATE TABLE t (id int PRIMARY KEY, v int, tag text); \
             CREATE INDEX t_v ON t (v); \
             INSERT INTO t SELECT g, g % 10, 'needle-' || lpad(g::text, 6, '0') || '-' || repeat('z', 50) \
             FROM generate_series(1, {ROWS}) g; \
             CREATE ROLE plain LOGIN"
        ))
        .await
        .unwrap();
        c.batch_execute("CHECKPOINT").await.unwrap();
        let rows = c
            .query("DBCC CHECKDB", &[])
            .await
            .unwrap_or_else(|e| panic!("DBCC CHECKDB: {e}"));
        let mut got: Vec<(String, i64, bool)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(2), r.get(3)))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("t".to_string(), ROWS, true),
                ("t (index t_v)".to_string(), ROWS, true),
            ]
        );
        for ok in [
            "DBCC CHECKDB('walden') WITH NO_INFOMSGS",
            "DBCC CHECKDB(walden)",
            "DBCC CHECKDB(N'walden')",
            "DBCC CHECKDB(0)",
        ] {
            c.simple_query(ok)
                .await
                .unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        assert_eq!(sqlstate(&c, "DBCC CHECKDB(nosuch)").await.0, "3D000");
        let (code, msg) = sqlstate(&c, "DBCC CHECKDB WITH PHYSICAL_ONLY").await;
        assert_eq!(code, "0A000");
        assert!(msg.contains("PHYSICAL_ONLY"), "{msg}");
        assert_eq!(
            sqlstate(&c, "DBCC CHECKDB('walden', REPAIR_REBUILD)")
                .await
                .0,
            "0A000"
        );
        let plain = connect(&s.conn_str().replace("user=walden", "user=plain")).await;
        assert_eq!(sqlstate(&plain, "DBCC CHECKDB").await.0, "42501");
    });
    // What a DBA sees in psql: the rows and the summary notice.
    let out = run_with_deadline(
        Command::new("psql")
            .args(["-h", "127.0.0.1", "-p", &s.port.to_string(), "-U", "walden"])
            .args(["-d", "walden", "-c", "DBCC CHECKDB"]),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("NOTICE:  CHECKDB found 0 consistency errors in database 'walden'"),
        "{stderr}"
    );
    assert!(s.log().contains("data file checked"), "{}", s.log());

    // Damage row 1234 on disk while the server is stopped: every copy of
    // its text (an older commit's page may hold one too).
    s.signal_and_wait(libc::SIGTERM, Duration::from_secs(60));
    let path = store_file(&data);
    let mut bytes = std::fs::read(&path).unwrap();
    let needle = tag(1234);
    let mut hits = 0;
    for at in 0..bytes.len().saturating_sub(needle.len()) {
        if bytes[at..].starts_with(needle.as_bytes()) {
            bytes[at + 3] ^= 0x02;
            hits += 1;
        }
    }
    assert!(hits > 0, "row 1234 not in {}", path.display());
    std::fs::write(&path, &bytes).unwrap();

    let s = Serve::start(&data, &[]);
    wait_for_log(&s, "data file check found damage");
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&s.conn_str()).await;
        let (code, msg) = sqlstate(&c, "SELECT tag FROM t WHERE id = 1234").await;
        assert_eq!(code, "XX001", "{msg}");
        let other: String = c
            .query_one("SELECT tag FROM t WHERE id = 17", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(other, tag(17));
        c.batch_execute("INSERT INTO t VALUES (100000, 1, 'after')")
            .await
            .unwrap();
        let (code, msg) = sqlstate(&c, "CHECKPOINT").await;
        assert_eq!(code, "XX001", "{msg}");
        assert!(msg.contains("checkpoints are stopped"), "{msg}");
        let (code, msg) = sqlstate(&c, "DBCC CHECKDB").await;
        assert_eq!(code, "XX001", "{msg}");
        assert!(
            msg.contains("consistency error") && msg.contains("t: ") && msg.contains("checksum"),
            "{msg}"
        );
    });
}
