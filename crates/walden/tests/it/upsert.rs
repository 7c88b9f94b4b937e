//! INSERT ... ON CONFLICT through the server, statement by statement against
//! a scratch PostgreSQL 15 with the same SQL (rows, command tag, SQLSTATE,
//! message and the fields drivers read); SQLAlchemy's PostgreSQL upsert
//! through psycopg against both; and ON DUPLICATE KEY UPDATE, which Walden refuses.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{
    assert_same, block_on_within, connect, postgres_conn, run_script, runtime, start_postgres,
    Field, Peers,
};
use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;
use tokio_postgres::SimpleQueryMessage;

/// The error fields compared besides SQLSTATE and message.
const FIELDS: &[Field] = &[Field::Detail, Field::Hint, Field::Table, Field::Constraint];

const SCRIPT: &[&str] = &[
    "CREATE TABLE kv (k int PRIMARY KEY, v text, n int DEFAULT 0 CHECK (n >= 0), u int UNIQUE)",
    "INSERT INTO kv VALUES (1, 'a', 0, 10), (2, 'b', 0, 20)",
    // DO NOTHING without a target: any unique constraint.
    "INSERT INTO kv VALUES (1, 'x', 0, 11) ON CONFLICT DO NOTHING",
    "INSERT INTO kv VALUES (3, 'x', 0, 10) ON CONFLICT DO NOTHING RETURNING *",
    "INSERT INTO kv VALUES (1, 'x') ON CONFLICT (k) DO NOTHING RETURNING *",
    // A conflict outside the arbiter is an ordinary unique violation.
    "INSERT INTO kv VALUES (3, 'c', 0, 20) ON CONFLICT (k) DO NOTHING",
    "INSERT INTO kv VALUES (1, 'new', 5, 11) ON CONFLICT (k) \
     DO UPDATE SET v = EXCLUDED.v, n = kv.n + excluded.n RETURNING *",
    "INSERT INTO kv AS t VALUES (2, 'z', 1, 20) ON CONFLICT (k) \
     DO UPDATE SET v = t.v || excluded.v WHERE t.n = 0 RETURNING k, v",
    "INSERT INTO kv AS t VALUES (2, 'q', 1, 20) ON CONFLICT (k) \
     DO UPDATE SET v = 'never' WHERE t.n = 99 RETURNING k, v",
    // One row proposed twice.
    "INSERT INTO kv VALUES (4, 'd', 0, 40), (4, 'e', 0, 41) ON CONFLICT (k) \
     DO UPDATE SET v = excluded.v",
    "INSERT INTO kv VALUES (4, 'd', 0, 40), (4, 'e', 0, 41) ON CONFLICT (k) DO NOTHING",
    "INSERT INTO kv VALUES (5, 'f', 0, 40) ON CONFLICT (u) DO UPDATE SET v = excluded.v RETURNING *",
    // Targets that match no unique constraint.
    "INSERT INTO kv VALUES (6, 'g') ON CONFLICT (v) DO NOTHING",
    "INSERT INTO kv VALUES (6, 'g') ON CONFLICT (k, u) DO NOTHING",
    "INSERT INTO kv VALUES (6, 'g') ON CONFLICT (zz) DO NOTHING",
    "INSERT INTO kv VALUES (1, 'g') ON CONFLICT DO UPDATE SET v = 'x'",
    "INSERT INTO kv VALUES (1, 'g') ON CONFLICT (k) DO UPDATE SET v = 'x', v = 'y'",
    "INSERT INTO kv VALUES (1, 'h') ON CONFLICT ON CONSTRAINT kv_pkey \
     DO UPDATE SET v = excluded.v RETURNING v",
    "INSERT INTO kv VALUES (7, 'h', 0, 10) ON CONFLICT ON CONSTRAINT kv_u_key \
     DO UPDATE SET v = 'via u' RETURNING *",
    "INSERT INTO kv VALUES (7, 'h') ON CONFLICT ON CONSTRAINT nope DO NOTHING",
    // CHECK on the proposed row and on the updated one; a unique
    // violation by the update.
    "INSERT INTO kv VALUES (1, 'i', -1) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
    "INSERT INTO kv VALUES (1, 'i') ON CONFLICT (k) DO UPDATE SET n = -5",
    "INSERT INTO kv VALUES (1, 'j') ON CONFLICT (k) DO UPDATE SET u = 20",
    // INSERT ... SELECT, several rows, some new.
    "INSERT INTO kv SELECT g, 's' || g, 0, 100 + g FROM generate_series(1, 9) g \
     ON CONFLICT (k) DO UPDATE SET n = kv.n + 1 RETURNING k, n",
    // The update moves the key.
    "INSERT INTO kv VALUES (1, 'k') ON CONFLICT (k) DO UPDATE SET k = 100 RETURNING k",
    "INSERT INTO kv VALUES (100, 'k') ON CONFLICT (k) DO UPDATE SET v = excluded.v || kv.v RETURNING *",
    "SELECT * FROM kv ORDER BY k",
    // A table without unique constraints, then a unique index (not a
    // constraint: ON CONSTRAINT does not find it).
    "CREATE TABLE nk (a int, b int)",
    "INSERT INTO nk VALUES (1, 2) ON CONFLICT DO NOTHING",
    "INSERT INTO nk VALUES (1, 2) ON CONFLICT (a) DO NOTHING",
    "DELETE FROM nk",
    "CREATE UNIQUE INDEX nk_a ON nk (a)",
    "INSERT INTO nk VALUES (1, 2), (1, 3) ON CONFLICT (a) DO UPDATE SET b = excluded.b",
    "INSERT INTO nk VALUES (1, 3) ON CONFLICT (a) DO UPDATE SET b = excluded.b + nk.b RETURNING *",
    "INSERT INTO nk VALUES (1, 3) ON CONFLICT ON CONSTRAINT nk_a DO NOTHING",
    // NULLs never conflict.
    "INSERT INTO nk VALUES (NULL, 4), (NULL, 5) ON CONFLICT (a) DO UPDATE SET b = 0",
    "SELECT * FROM nk ORDER BY a, b",
    // In a transaction: conflicts with the transaction's own rows, and
    // ROLLBACK undoes the updates.
    "BEGIN",
    "INSERT INTO nk VALUES (7, 1)",
    "INSERT INTO nk VALUES (7, 2) ON CONFLICT (a) DO UPDATE SET b = nk.b + excluded.b RETURNING *",
    "DELETE FROM nk WHERE a = 7",
    "INSERT INTO nk VALUES (7, 9) ON CONFLICT (a) DO UPDATE SET b = 0 RETURNING *",
    "INSERT INTO nk VALUES (1, 9) ON CONFLICT (a) DO UPDATE SET b = 0 RETURNING *",
    "ROLLBACK",
    "SELECT * FROM nk ORDER BY a, b",
    // A foreign key checked on the updated row.
    "CREATE TABLE parent (id int PRIMARY KEY)",
    "CREATE TABLE child (id int PRIMARY KEY, p int REFERENCES parent)",
    "INSERT INTO parent VALUES (1)",
    "INSERT INTO child VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET p = excluded.p",
    "INSERT INTO child VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET p = excluded.p",
    "INSERT INTO child VALUES (1, 2) ON CONFLICT (id) DO NOTHING",
    // A column default and an identity in the EXCLUDED row.
    "CREATE TABLE ids (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, tag text UNIQUE, \
     seen int DEFAULT 1)",
    "INSERT INTO ids (tag) VALUES ('a'), ('b') ON CONFLICT (tag) DO UPDATE SET seen = ids.seen + 1 \
     RETURNING *",
    "INSERT INTO ids (tag) VALUES ('a') ON CONFLICT (tag) \
     DO UPDATE SET seen = ids.seen + excluded.seen RETURNING *",
];

#[test]
fn on_conflict_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare INSERT ... ON CONFLICT") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, FIELDS).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, FIELDS).await;
        assert_same(&want, &got);
    });
}

/// Through the extended protocol: one prepared upsert run many times with
/// parameters (the plan is reused).
#[test]
fn prepared_upsert_counts_every_call() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute("CREATE TABLE hits (page text PRIMARY KEY, n int NOT NULL)")
                .await
                .unwrap();
            let st = c
                .prepare(
                    "INSERT INTO hits VALUES ($1, 1) ON CONFLICT (page) \
                     DO UPDATE SET n = hits.n + 1 RETURNING n",
                )
                .await
                .unwrap();
            for i in 0..30 {
                let page = ["a", "b", "c"][i % 3];
                let rows = c.query(&st, &[&page]).await.unwrap();
                assert_eq!(rows[0].get::<_, i32>(0), (i / 3 + 1) as i32);
            }
            let rows = c
                .query("SELECT page, n FROM hits ORDER BY page", &[])
                .await
                .unwrap();
            let got: Vec<(String, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            assert_eq!(
                got,
                vec![("a".into(), 10), ("b".into(), 10), ("c".into(), 10)]
            );
        })
        .await
        .expect("timed out")
    });
}

/// MySQL's ON DUPLICATE KEY UPDATE is refused with 0A000, naming it (MERGE
/// runs: tests/it/merge.rs).
#[test]
fn on_duplicate_key_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute("CREATE TABLE m (id int PRIMARY KEY, v int)")
                .await
                .unwrap();
            let sql = "INSERT INTO m VALUES (1, 1) ON DUPLICATE KEY UPDATE v = 2";
            let e = c.simple_query(sql).await.unwrap_err();
            let d = e.as_db_error().expect("a server error");
            assert_eq!(d.code().code(), "0A000", "{sql}: {}", d.message());
            assert!(
                d.message().contains("ON DUPLICATE KEY UPDATE"),
                "{sql}: {}",
                d.message()
            );
            let rows = c.simple_query("SELECT count(*) FROM m").await.unwrap();
            assert_eq!(
                outcome_rows(&rows),
                vec!["0".to_string()],
                "nothing was written"
            );
        })
        .await
        .expect("timed out")
    });
}

fn outcome_rows(msgs: &[SimpleQueryMessage]) -> Vec<String> {
    msgs.iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("NULL").to_string()),
            _ => None,
        })
        .collect()
}

/// SQLAlchemy's `insert().on_conflict_do_update()` / `on_conflict_do_nothing()`
/// (postgresql dialect, psycopg 3) prints the same on Walden as on PostgreSQL.
#[test]
fn sqlalchemy_upsert_matches_postgres() {
    if !have("python3", &["-c", "import sqlalchemy, psycopg"]) {
        missing_tool(
            "python3 with sqlalchemy and psycopg is needed (pip install sqlalchemy psycopg)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = start_postgres(tmp.path(), "to compare INSERT ... ON CONFLICT") else {
        return;
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/upsert_support/sqlalchemy_upsert.py"
    );
    let run = |conn: String| {
        let out = run_with_deadline(
            Command::new("python3").arg(script).arg(&conn),
            Duration::from_secs(120),
        );
        assert!(
            out.status.success(),
            "{conn}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let want = run(postgres_conn(&pg));
    let got = run(walden.conn_str());
    assert!(want.contains("upsert 7"), "the script ran: {want}");
    assert_eq!(got, want, "walden vs postgres");
}
