//! Secondary indexes through the server: CREATE/DROP INDEX in PostgreSQL's
//! and T-SQL's spellings, UNIQUE constraints with PostgreSQL's error
//! fields, searches that go through an index (counted in
//! sys.dm_db_index_usage_stats) and give what a scan gives, concurrent
//! writers of one unique value, and indexes after a restart.

use crate::common;

use common::TestServer;
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn with_server<F, Fut>(f: F)
where
    F: FnOnce(TestServer, std::path::PathBuf) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_in(dir.path(), |_| {});
    let path = dir.path().to_path_buf();
    rt().block_on(async move {
        tokio::time::timeout(Duration::from_secs(120), f(server, path))
            .await
            .expect("test timed out")
    });
}

async fn run(c: &Client, sql: &str) {
    c.batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {:?}", e.as_db_error().map(|d| d.message())));
}

/// Every row of a query, as text columns.
async fn rows(c: &Client, sql: &str) -> Vec<Vec<String>> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

async fn one(c: &Client, sql: &str) -> String {
    rows(c, sql).await[0][0].clone()
}

async fn seeks(c: &Client, index: &str) -> i64 {
    one(
        c,
        &format!("SELECT user_seeks FROM sys.dm_db_index_usage_stats WHERE index_name = '{index}'"),
    )
    .await
    .parse()
    .unwrap()
}

/// The error a statement fails with (panics if it succeeds).
async fn error(c: &Client, sql: &str) -> tokio_postgres::error::DbError {
    match c.simple_query(sql).await {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => e
            .as_db_error()
            .cloned()
            .unwrap_or_else(|| panic!("{sql}: {e}")),
    }
}

#[test]
fn searches_go_through_the_index_and_find_what_a_scan_finds() {
    with_server(|server, _| async move {
        let c = server.client().await;
        // Twin tables: the same changes, one indexed; every search must
        // give the same rows in both.
        run(
            &c,
            "CREATE TABLE a (id int PRIMARY KEY, v int, w text);
             CREATE TABLE b (id int PRIMARY KEY, v int, w text);
             INSERT INTO a SELECT g, g % 97, 'w' || (g % 5) FROM generate_series(1, 3000) g;
             INSERT INTO b SELECT * FROM a;
             CREATE INDEX a_v ON a (v);
             CREATE INDEX a_w_v ON a USING btree (w, v);",
        )
        .await;
        let mut seed = 42u64;
        let mut rnd = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for round in 0..30 {
            // A batch of changes in one transaction, sometimes rolled back,
            // with searches inside it that must see its own writes.
            let mut batch = String::from("BEGIN;");
            for _ in 0..20 {
                let id = rnd(3500) + 1;
                let v = rnd(120);
                let stmt = match rnd(4) {
                    0 => format!(
                        "INSERT INTO {{t}} SELECT {id}, {v}, 'w{}' WHERE NOT EXISTS (SELECT 1 FROM {{t}} WHERE id = {id});",
                        rnd(5)
                    ),
                    1 => format!("UPDATE {{t}} SET v = {v} WHERE id = {id};"),
                    2 => format!("DELETE FROM {{t}} WHERE id = {id};"),
                    _ => format!("UPDATE {{t}} SET v = NULL WHERE v = {v};"),
                };
                batch.push_str(&stmt);
            }
            let probe = rnd(120);
            for t in ["a", "b"] {
                run(&c, &batch.replace("{t}", t)).await;
            }
            let inside_a = rows(
                &c,
                &format!("SELECT id FROM a WHERE v = {probe} ORDER BY id"),
            )
            .await;
            let inside_b = rows(
                &c,
                &format!("SELECT id FROM b WHERE v = {probe} ORDER BY id"),
            )
            .await;
            assert_eq!(
                inside_a, inside_b,
                "round {round}: own writes through the index"
            );
            let end = if round % 3 == 0 { "ROLLBACK" } else { "COMMIT" };
            run(&c, end).await;
            let lo = rnd(100);
            let w = rnd(5);
            for q in [
                format!("SELECT id, v FROM {{t}} WHERE v = {probe} ORDER BY id"),
                format!(
                    "SELECT id FROM {{t}} WHERE v BETWEEN {lo} AND {} ORDER BY id",
                    lo + 7
                ),
                format!(
                    "SELECT id FROM {{t}} WHERE v > {lo} AND v < {} ORDER BY id",
                    lo + 3
                ),
                format!("SELECT id FROM {{t}} WHERE w = 'w{w}' AND v = {probe} ORDER BY id"),
                format!("SELECT id FROM {{t}} WHERE w = 'w{w}' AND v >= {lo} ORDER BY id"),
                format!("SELECT count(*) FROM {{t}} WHERE w = 'w{w}'"),
                format!("SELECT count(*) FROM {{t}} WHERE v = {probe}.5"),
                "SELECT count(*) FROM {t} WHERE v = NULL".to_string(),
            ] {
                assert_eq!(
                    rows(&c, &q.replace("{t}", "a")).await,
                    rows(&c, &q.replace("{t}", "b")).await,
                    "round {round}: {q}"
                );
            }
        }
        // The searches above went through the indexes.
        assert!(seeks(&c, "a_v").await >= 60, "a_v seeks");
        assert!(seeks(&c, "a_w_v").await >= 60, "a_w_v seeks");
        // UPDATE and DELETE find their rows through the index too.
        let before = seeks(&c, "a_v").await;
        run(
            &c,
            "UPDATE a SET w = 'moved' WHERE v = 5; DELETE FROM a WHERE v = 6",
        )
        .await;
        assert!(seeks(&c, "a_v").await >= before + 2);
        assert_eq!(one(&c, "SELECT count(*) FROM a WHERE v = 6").await, "0");
        // A parameter through the extended protocol.
        let n: i64 = c
            .query_one("SELECT count(*) FROM a WHERE v = $1", &[&7i32])
            .await
            .unwrap()
            .get(0);
        let m: i64 = c
            .query_one("SELECT count(*) FROM b WHERE v = $1", &[&7i32])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, m);
        run(&c, "DROP INDEX a_v").await;
        assert_eq!(
            one(
                &c,
                "SELECT count(*) FROM sys.dm_db_index_usage_stats WHERE index_name = 'a_v'"
            )
            .await,
            "0"
        );
        let e = error(&c, "DROP INDEX a_v").await;
        assert_eq!(e.code().code(), "42704");
        run(&c, "DROP INDEX IF EXISTS a_v").await;
    });
}

#[test]
fn unique_indexes_and_constraints_refuse_duplicates_as_postgresql_does() {
    with_server(|server, _| async move {
        let c = server.client().await;
        run(
            &c,
            "CREATE TABLE users (id serial PRIMARY KEY, email text UNIQUE, org int, login text,
                 CONSTRAINT users_org_login UNIQUE (org, login));
             INSERT INTO users (email, org, login) VALUES ('a@x', 1, 'ann'), ('b@x', 1, 'bob');",
        )
        .await;
        let e = error(
            &c,
            "INSERT INTO users (email, org, login) VALUES ('a@x', 2, 'al')",
        )
        .await;
        assert_eq!(e.code().code(), "23505");
        assert_eq!(
            e.message(),
            "duplicate key value violates unique constraint \"users_email_key\""
        );
        assert_eq!(e.detail(), Some("Key (email)=(a@x) already exists."));
        assert_eq!(e.constraint(), Some("users_email_key"));
        assert_eq!(e.table(), Some("users"));
        let e = error(
            &c,
            "UPDATE users SET org = 1, login = 'ann' WHERE email = 'b@x'",
        )
        .await;
        assert_eq!(e.constraint(), Some("users_org_login"));
        assert_eq!(
            e.detail(),
            Some("Key (org, login)=(1, ann) already exists.")
        );
        // NULLs are distinct; a freed value can be taken in the same transaction.
        run(
            &c,
            "INSERT INTO users (email) VALUES (NULL), (NULL);
             BEGIN; DELETE FROM users WHERE email = 'a@x';
             INSERT INTO users (email, org, login) VALUES ('a@x', 1, 'ann'); COMMIT;",
        )
        .await;
        assert_eq!(one(&c, "SELECT count(*) FROM users").await, "4");
        // A unique index over duplicates is refused, and leaves nothing.
        run(
            &c,
            "CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 5), (2, 5)",
        )
        .await;
        let e = error(&c, "CREATE UNIQUE INDEX t_v_key ON t (v)").await;
        assert_eq!(e.code().code(), "23505");
        assert_eq!(e.message(), "could not create unique index \"t_v_key\"");
        assert_eq!(e.detail(), Some("Key (v)=(5) is duplicated."));
        run(
            &c,
            "UPDATE t SET v = 6 WHERE id = 2; CREATE UNIQUE INDEX t_v_key ON t (v)",
        )
        .await;
        assert_eq!(
            error(&c, "INSERT INTO t VALUES (3, 6)").await.code().code(),
            "23505"
        );
        // Names: PostgreSQL's defaults, IF NOT EXISTS, a name taken by a table.
        run(&c, "CREATE INDEX ON t (v); CREATE INDEX ON t (v)").await;
        let names = rows(
            &c,
            "SELECT index_name FROM sys.dm_db_index_usage_stats WHERE table_name = 't' ORDER BY 1",
        )
        .await;
        assert_eq!(
            names,
            vec![vec!["t_v_idx"], vec!["t_v_idx1"], vec!["t_v_key"]]
        );
        run(&c, "CREATE INDEX IF NOT EXISTS t_v_idx ON t (id)").await;
        assert_eq!(
            error(&c, "CREATE INDEX t_v_idx ON t (id)")
                .await
                .code()
                .code(),
            "42P07"
        );
        assert_eq!(
            error(&c, "CREATE INDEX users ON t (id)")
                .await
                .code()
                .code(),
            "42P07"
        );
        assert_eq!(
            error(&c, "CREATE INDEX ON t (nope)").await.code().code(),
            "42703"
        );
        // The constraint's index goes with the constraint only.
        assert_eq!(
            error(&c, "DROP INDEX users_email_key").await.code().code(),
            "2BP01"
        );
        // What an index here cannot do is refused, not ignored.
        for sql in [
            "CREATE INDEX ON t (v) WHERE v > 0",
            "CREATE INDEX ON t ((v + 1))",
            "CREATE INDEX ON t USING gin (v)",
            "CREATE INDEX ON t (v) INCLUDE (id)",
            "CREATE UNIQUE INDEX ON t (v) NULLS NOT DISTINCT",
        ] {
            assert_eq!(error(&c, sql).await.code().code(), "0A000", "{sql}");
        }
        // T-SQL's spelling.
        run(&c, "CREATE NONCLUSTERED INDEX ix_t_v ON t (v)").await;
        assert_eq!(
            error(&c, "CREATE CLUSTERED INDEX ix_c ON t (v)")
                .await
                .code()
                .code(),
            "0A000"
        );
        assert_eq!(
            one(
                &c,
                "SELECT count(*) FROM sys.dm_db_index_usage_stats WHERE index_name = 'ix_t_v'"
            )
            .await,
            "1"
        );
    });
}

#[test]
fn a_second_inserter_of_a_unique_value_waits_for_the_first() {
    with_server(|server, _| async move {
        let a = server.client().await;
        run(&a, "CREATE TABLE k (id int PRIMARY KEY, code text UNIQUE)").await;
        for (n, commit) in [(1, true), (2, false)] {
            let b = server.client().await;
            run(&a, &format!("BEGIN; INSERT INTO k VALUES ({n}, 'c{n}')")).await;
            let sql = format!("INSERT INTO k VALUES ({}, 'c{n}')", n + 10);
            let second = tokio::spawn(async move {
                b.simple_query(&sql)
                    .await
                    .map(drop)
                    .map_err(|e| e.code().map(|c| c.code().to_string()))
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(!second.is_finished(), "the second inserter must wait");
            run(&a, if commit { "COMMIT" } else { "ROLLBACK" }).await;
            let outcome = second.await.unwrap();
            if commit {
                assert_eq!(outcome, Err(Some("23505".to_string())));
            } else {
                assert_eq!(outcome, Ok(()));
            }
        }
        assert_eq!(one(&a, "SELECT count(*) FROM k").await, "2");
    });
}

#[test]
fn indexes_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::start_in(dir.path(), |_| {});
    rt().block_on(async {
        let c = server.client().await;
        run(
            &c,
            "CREATE TABLE r (id int PRIMARY KEY, v int, e text UNIQUE);
             INSERT INTO r SELECT g, g % 10, 'e' || g FROM generate_series(1, 500) g;
             CREATE INDEX r_v ON r (v);
             UPDATE r SET v = 99 WHERE id <= 5;",
        )
        .await;
    });
    server.stop();
    let server = TestServer::start_in(dir.path(), |_| {});
    rt().block_on(async {
        let c = server.client().await;
        assert_eq!(one(&c, "SELECT count(*) FROM r WHERE v = 99").await, "5");
        assert!(seeks(&c, "r_v").await >= 1);
        let e = error(&c, "INSERT INTO r VALUES (1000, 1, 'e7')").await;
        assert_eq!(e.constraint(), Some("r_e_key"));
    });
}

/// psql's `\d` output for a table (plain, unaligned off so the footer
/// lines read as PostgreSQL prints them).
fn describe(s: &TestServer, table: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-U",
            "walden",
            "-d",
            "walden",
            "-p",
        ])
        .arg(s.addr.port().to_string())
        .args(["-c", &format!("\\d {table}")])
        .output();
    match out {
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8_lossy(&o.stdout).into_owned()
        }
        Err(e) => {
            common::missing_tool(&format!("psql: {e}"));
            String::new()
        }
    }
}

#[test]
fn indexes_and_unique_constraints_are_in_the_catalogs() {
    with_server(|server, _| async move {
        let c = server.client().await;
        run(
            &c,
            "CREATE TABLE cat (id int PRIMARY KEY, email text UNIQUE, a int, b text);
             CREATE INDEX cat_a_b ON cat (a, b);
             CREATE UNIQUE INDEX cat_b_key2 ON cat (b);",
        )
        .await;
        assert_eq!(
            rows(
                &c,
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'cat' ORDER BY 1"
            )
            .await,
            vec![
                vec![
                    "cat_a_b",
                    "CREATE INDEX cat_a_b ON public.cat USING btree (a, b)"
                ],
                vec![
                    "cat_b_key2",
                    "CREATE UNIQUE INDEX cat_b_key2 ON public.cat USING btree (b)"
                ],
                vec![
                    "cat_email_key",
                    "CREATE UNIQUE INDEX cat_email_key ON public.cat USING btree (email)"
                ],
                vec![
                    "cat_pkey",
                    "CREATE UNIQUE INDEX cat_pkey ON public.cat USING btree (id)"
                ],
            ]
        );
        assert_eq!(
            rows(
                &c,
                "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint
                 WHERE conrelid = 'cat'::regclass ORDER BY 1"
            )
            .await,
            vec![
                vec!["cat_email_key", "u", "UNIQUE (email)"],
                vec!["cat_pkey", "p", "PRIMARY KEY (id)"],
            ]
        );
        assert_eq!(
            rows(
                &c,
                "SELECT c.relname, i.indisunique, i.indisprimary, i.indkey::text
                 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                 WHERE i.indrelid = 'cat'::regclass ORDER BY 1"
            )
            .await,
            vec![
                vec!["cat_a_b", "f", "f", "3 4"],
                vec!["cat_b_key2", "t", "f", "4"],
                vec!["cat_email_key", "t", "f", "2"],
                vec!["cat_pkey", "t", "t", "1"],
            ]
        );
        let d = describe(&server, "cat");
        for line in [
            "\"cat_pkey\" PRIMARY KEY, btree (id)",
            "\"cat_a_b\" btree (a, b)",
            "\"cat_b_key2\" UNIQUE, btree (b)",
            "\"cat_email_key\" UNIQUE CONSTRAINT, btree (email)",
        ] {
            assert!(d.contains(line), "\\d cat lacks {line}:\n{d}");
        }
    });
}
