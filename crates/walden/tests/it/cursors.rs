//! Server-side cursors (DECLARE, FETCH, MOVE, CLOSE, pg_cursors) against a
//! scratch PostgreSQL 15 with the same SQL: rows, command tags (`FETCH n`,
//! `MOVE n`), and errors with SQLSTATE, message and hint; then random
//! FETCH/MOVE sequences over SCROLL and NO SCROLL cursors, and the snapshot
//! a cursor reads while another session commits.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, connect, differences, outcome, run_script, runtime, Field, Peers};
use server_support::Serve;
use std::time::Duration;

/// The error fields compared besides SQLSTATE and message.
const FIELDS: &[Field] = &[Field::Hint];

const SCRIPT: &[&str] = &[
    "DROP TABLE IF EXISTS ct",
    "CREATE TABLE ct (id int PRIMARY KEY, v text)",
    "INSERT INTO ct SELECT x, 'v' || x FROM generate_series(1, 6) AS x",
    // Outside a block only WITH HOLD is allowed.
    "DECLARE c CURSOR FOR SELECT * FROM ct ORDER BY id",
    "FETCH c",
    "CLOSE c",
    "BEGIN",
    "DECLARE c SCROLL CURSOR FOR SELECT * FROM ct ORDER BY id",
    "FETCH c",
    "FETCH 2 FROM c",
    "FETCH PRIOR FROM c",
    "FETCH RELATIVE 0 FROM c",
    "FETCH FORWARD 0 FROM c",
    "FETCH BACKWARD 0 FROM c",
    "MOVE LAST IN c",
    "FETCH NEXT FROM c",
    "FETCH NEXT FROM c",
    "FETCH PRIOR FROM c",
    "FETCH BACKWARD 2 FROM c",
    "FETCH ABSOLUTE 0 FROM c",
    "FETCH ABSOLUTE 3 FROM c",
    "FETCH ABSOLUTE -2 FROM c",
    "FETCH ABSOLUTE 99 FROM c",
    "FETCH ABSOLUTE -99 FROM c",
    "FETCH RELATIVE 2 FROM c",
    "FETCH RELATIVE -1 FROM c",
    "FETCH -2 FROM c",
    "FETCH FORWARD -1 FROM c",
    "FETCH BACKWARD -2 FROM c",
    "FETCH ALL FROM c",
    "FETCH BACKWARD ALL FROM c",
    "MOVE FORWARD ALL FROM c",
    "MOVE BACKWARD ALL FROM c",
    "MOVE 3 FROM c",
    "MOVE 0 FROM c",
    "MOVE ABSOLUTE 5 FROM c",
    "MOVE RELATIVE 5 FROM c",
    "MOVE BACKWARD 10 FROM c",
    "FETCH FIRST FROM c",
    "FETCH LAST FROM c",
    // Rows the transaction writes after DECLARE are not in the cursor.
    "INSERT INTO ct VALUES (7, 'v7')",
    "FETCH ABSOLUTE 7 FROM c",
    "SELECT count(*) FROM ct",
    "DECLARE c CURSOR FOR SELECT 1",
    "ROLLBACK",
    "BEGIN",
    "FETCH c",
    "ROLLBACK",
    "BEGIN",
    "DECLARE \"MiXed\" SCROLL CURSOR FOR SELECT id FROM ct WHERE id > 4 ORDER BY id",
    "FETCH 1 FROM \"MiXed\"",
    "FETCH 1 FROM mixed",
    "ROLLBACK",
    // NO SCROLL: forward only, but a rewind that goes nowhere is allowed.
    "BEGIN",
    "DECLARE n NO SCROLL CURSOR FOR SELECT * FROM ct ORDER BY id",
    "FETCH FIRST FROM n",
    "FETCH 2 FROM n",
    "FETCH RELATIVE 0 FROM n",
    "ROLLBACK",
    "BEGIN",
    "DECLARE n NO SCROLL CURSOR FOR SELECT * FROM ct ORDER BY id",
    "FETCH ABSOLUTE 2 FROM n",
    "FETCH ABSOLUTE 4 FROM n",
    "FETCH PRIOR FROM n",
    "FETCH n",
    "ROLLBACK",
    "BEGIN",
    "DECLARE n NO SCROLL CURSOR FOR SELECT * FROM ct ORDER BY id",
    "MOVE BACKWARD ALL FROM n",
    "ROLLBACK",
    "BEGIN",
    "DECLARE n NO SCROLL CURSOR FOR SELECT * FROM ct ORDER BY id",
    "FETCH 1 FROM n",
    "FETCH ABSOLUTE 1 FROM n",
    "ROLLBACK",
    // WITH HOLD outlives its commit; the others close; rollback drops both.
    "BEGIN",
    "DECLARE h SCROLL CURSOR WITH HOLD FOR SELECT * FROM ct ORDER BY id",
    "DECLARE w NO SCROLL CURSOR WITHOUT HOLD FOR SELECT 1 AS one",
    "DECLARE b BINARY INSENSITIVE SCROLL CURSOR FOR SELECT 2",
    "SELECT name, is_holdable, is_binary, is_scrollable FROM pg_cursors ORDER BY name",
    "FETCH 2 FROM h",
    "COMMIT",
    "SELECT name, is_holdable FROM pg_cursors ORDER BY name",
    "FETCH w",
    "FETCH h",
    "FETCH PRIOR FROM h",
    "INSERT INTO ct VALUES (8, 'v8')",
    "FETCH ALL FROM h",
    "BEGIN",
    "DECLARE h2 CURSOR WITH HOLD FOR SELECT 1",
    "FETCH ABSOLUTE 1 FROM h",
    "ROLLBACK",
    "FETCH h2",
    "FETCH ABSOLUTE 1 FROM h",
    "DECLARE h3 CURSOR WITH HOLD FOR SELECT id FROM ct ORDER BY id DESC",
    "FETCH 2 FROM h3",
    "CLOSE h",
    "CLOSE h",
    "MOVE 1 FROM h",
    "SELECT count(*) FROM pg_cursors",
    "CLOSE ALL",
    "SELECT count(*) FROM pg_cursors",
    // An error inside a block fails it, as any error does.
    "BEGIN",
    "DECLARE e CURSOR FOR SELECT * FROM ct",
    "FETCH 1 FROM nope",
    "FETCH 1 FROM e",
    "ROLLBACK",
    // A multi-statement query is a block of its own.
    "DECLARE m CURSOR FOR SELECT 1 AS one; FETCH m",
    "FETCH m",
    // Syntax PostgreSQL refuses.
    "FETCH 3000000000 FROM c",
    "DECLARE z CURSOR FOR INSERT INTO ct VALUES (9, 'x')",
    "FETCH ABSOLUTE FROM c",
];

/// A small deterministic generator (xorshift), so a failing sequence
/// reproduces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn random_command(r: &mut Rng) -> String {
    let n = r.below(11) as i64 - 5;
    let dir = match r.below(14) {
        0 => "NEXT".to_string(),
        1 => "PRIOR".to_string(),
        2 => "FIRST".to_string(),
        3 => "LAST".to_string(),
        4 => format!("ABSOLUTE {n}"),
        5 => format!("RELATIVE {n}"),
        6 => format!("{n}"),
        7 => "ALL".to_string(),
        8 => format!("FORWARD {n}"),
        9 => "FORWARD ALL".to_string(),
        10 => format!("BACKWARD {n}"),
        11 => "BACKWARD ALL".to_string(),
        12 => "FORWARD".to_string(),
        _ => "BACKWARD".to_string(),
    };
    let verb = if r.below(3) == 0 { "MOVE" } else { "FETCH" };
    format!("{verb} {dir} FROM r")
}

/// Random FETCH/MOVE over a 7-row cursor; an error (NO SCROLL going back)
/// ends the block, and the cursor is declared again.
async fn run_random(conn: &str, scroll: &str, seed: u64) -> Vec<String> {
    let c = connect(conn).await;
    let declare = format!("BEGIN; DECLARE r {scroll} CURSOR FOR SELECT id FROM rt ORDER BY id");
    let mut out = vec![outcome(&c, &declare, FIELDS).await];
    let mut rng = Rng(seed);
    for _ in 0..300 {
        let sql = random_command(&mut rng);
        let got = outcome(&c, &sql, FIELDS).await;
        if got.starts_with("ERROR") {
            out.push(outcome(&c, "ROLLBACK", FIELDS).await);
            out.push(outcome(&c, &declare, FIELDS).await);
        }
        out.push(format!("{sql}\n  -> {got}"));
    }
    out.push(outcome(&c, "COMMIT", FIELDS).await);
    out
}

#[test]
fn cursors_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare cursors") else {
        return;
    };
    let pg_conn = peers.pg_conn();
    let walden = &peers.walden;
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(240), async {
            let want = run_script(&pg_conn, SCRIPT, FIELDS).await;
            let got = run_script(&walden.conn_str(), SCRIPT, FIELDS).await;
            assert_same(&want, &got);
            for conn in [&pg_conn, &walden.conn_str()] {
                let c = connect(conn).await;
                c.batch_execute(
                    "DROP TABLE IF EXISTS rt; CREATE TABLE rt (id int PRIMARY KEY); \
                     INSERT INTO rt SELECT x FROM generate_series(1, 7) AS x",
                )
                .await
                .unwrap();
            }
            for (scroll, seed) in [
                ("SCROLL", 0x9e37_79b9_7f4a_7c15),
                ("NO SCROLL", 0x2545_f491_4f6c_dd1d),
            ] {
                let want = run_random(&pg_conn, scroll, seed).await;
                let got = run_random(&walden.conn_str(), scroll, seed).await;
                let d = differences(&want, &got);
                assert!(d.is_empty(), "{scroll} seed {seed:#x}:\n{}", d.join("\n\n"));
            }
        })
        .await
        .expect("timed out")
    });
}

/// A cursor reads the snapshot of its DECLARE: rows another session commits
/// afterwards are not in it (also in READ COMMITTED, where the next SELECT
/// of the same transaction sees them).
#[test]
fn a_cursor_reads_the_snapshot_of_its_declare() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let a = connect(&walden.conn_str()).await;
            let b = connect(&walden.conn_str()).await;
            a.batch_execute(
                "CREATE TABLE snap (id int PRIMARY KEY); INSERT INTO snap VALUES (1), (2)",
            )
            .await
            .unwrap();
            a.batch_execute("BEGIN; DECLARE s CURSOR FOR SELECT id FROM snap ORDER BY id")
                .await
                .unwrap();
            b.batch_execute("INSERT INTO snap VALUES (3); DELETE FROM snap WHERE id = 1")
                .await
                .unwrap();
            assert_eq!(outcome(&a, "FETCH ALL FROM s", FIELDS).await, "1; 2; ok 2");
            assert_eq!(
                outcome(&a, "SELECT count(*) FROM snap", FIELDS).await,
                "2; ok 1"
            );
            a.batch_execute("COMMIT").await.unwrap();
        })
        .await
        .expect("timed out")
    });
}

/// The rows kept by a session's cursors count against
/// `statement_memory_limit`: past it DECLARE fails with 53200 and the
/// session goes on.
#[test]
fn cursors_are_bounded_by_the_memory_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("walden.toml");
    std::fs::write(&cfg, "statement_memory_limit_mb = 8\n").unwrap();
    let walden = Serve::start(
        &tmp.path().join("walden"),
        &["--config", cfg.to_str().unwrap()],
    );
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let a = connect(&walden.conn_str()).await;
            // 60,000 rows of one column: ~3.4 MB each as kept rows.
            let declare = |n: &str| {
                format!(
                    "DECLARE {n} CURSOR WITH HOLD FOR SELECT x FROM generate_series(1, 60000) AS x"
                )
            };
            assert_eq!(outcome(&a, &declare("m1"), FIELDS).await, "ok 0");
            assert_eq!(outcome(&a, &declare("m2"), FIELDS).await, "ok 0");
            let third = outcome(&a, &declare("m3"), FIELDS).await;
            assert!(third.starts_with("ERROR 53200"), "{third}");
            assert_eq!(outcome(&a, "CLOSE m1", FIELDS).await, "ok 0");
            assert_eq!(outcome(&a, &declare("m3"), FIELDS).await, "ok 0");
            assert_eq!(outcome(&a, "MOVE ALL FROM m3", FIELDS).await, "ok 60000");
        })
        .await
        .expect("timed out")
    });
}
