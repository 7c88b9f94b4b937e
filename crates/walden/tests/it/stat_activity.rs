//! `pg_stat_activity`, `pg_cancel_backend` and `pg_terminate_backend`
//! through the server: one schedule of sessions runs on a scratch
//! PostgreSQL 15 and on Walden, and what an observing session sees of the
//! others (state, wait event, statement text, transaction start, client)
//! must be the same on both, process ids aside. Then Walden's
//! `sys.dm_exec_sessions` / `sys.dm_exec_requests` over the same sessions,
//! and what a role that is not a superuser may see and signal.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, render_error, Peers};
use server_support::Serve;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, SimpleQueryMessage};

/// Rows of a simple query, columns joined by `|` (`NULL` for null).
async fn rows(c: &Client, sql: &str) -> Vec<String> {
    c.simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}

async fn pid(c: &Client) -> String {
    rows(c, "SELECT pg_backend_pid()").await.remove(0)
}

/// What the observer sees of session `pid`.
async fn seen(obs: &Client, pid: &str) -> String {
    let sql = format!(
        "SELECT state, wait_event_type, wait_event, query, backend_type, \
         usename = current_user, datname = current_database(), datid IS NOT NULL, \
         usesysid IS NOT NULL, xact_start IS NULL, query_start IS NOT NULL, \
         backend_start <= now(), state_change >= backend_start, client_addr, \
         client_port > 0, leader_pid IS NULL, application_name \
         FROM pg_stat_activity WHERE pid = {pid}"
    );
    rows(obs, &sql).await.join("; ")
}

/// Waits until `cond` holds of session `pid`'s row (statements sent by a
/// spawned task take a moment to arrive).
async fn until(obs: &Client, pid: &str, cond: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let sql = format!("SELECT {cond} FROM pg_stat_activity WHERE pid = {pid}");
    while rows(obs, &sql).await != ["t"] {
        assert!(Instant::now() < deadline, "{pid} never had {cond}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until session `pid` is back waiting for its client: PostgreSQL
/// reports the idle state a moment before its backend blocks in ClientRead,
/// so an observer could otherwise see either.
async fn settled(obs: &Client, pid: &str) {
    until(obs, pid, "wait_event IS NOT DISTINCT FROM 'ClientRead'").await;
}

/// The schedule: what the observer sees, step by step.
async fn schedule(conn: String) -> Vec<String> {
    let obs = connect(&conn).await;
    let c2 = connect(&conn).await;
    let c3 = connect(&conn).await;
    let (p2, p3) = (pid(&c2).await, pid(&c3).await);
    let mut out = Vec::new();
    c2.simple_query("CREATE TABLE k (id int PRIMARY KEY, v int)")
        .await
        .unwrap();
    c2.simple_query("INSERT INTO k VALUES (1, 0)")
        .await
        .unwrap();
    c2.simple_query("SELECT 1 AS idle_probe").await.unwrap();
    settled(&obs, &p2).await;
    out.push(format!("idle: {}", seen(&obs, &p2).await));
    c2.simple_query("BEGIN").await.unwrap();
    c2.simple_query("SELECT 2 AS in_tx").await.unwrap();
    settled(&obs, &p2).await;
    out.push(format!("in a block: {}", seen(&obs, &p2).await));
    let _ = c2.simple_query("SELECT * FROM nope").await;
    settled(&obs, &p2).await;
    out.push(format!("failed block: {}", seen(&obs, &p2).await));
    c2.simple_query("ROLLBACK").await.unwrap();
    settled(&obs, &p2).await;
    out.push(format!("after rollback: {}", seen(&obs, &p2).await));
    // The observer's own row: active, running this very statement.
    out.push(format!(
        "self: {}",
        rows(
            &obs,
            "SELECT state, query, wait_event_type, xact_start IS NOT NULL \
             FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        )
        .await
        .join("; ")
    ));
    // A session waiting on a row lock another holds.
    c2.simple_query("BEGIN").await.unwrap();
    c2.simple_query("UPDATE k SET v = 1 WHERE id = 1")
        .await
        .unwrap();
    let blocked = {
        let c3 = connect(&conn).await;
        let p = pid(&c3).await;
        let h = tokio::spawn(async move {
            c3.simple_query("UPDATE k SET v = 2 WHERE id = 1")
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        (p, h)
    };
    until(&obs, &blocked.0, "wait_event_type = 'Lock'").await;
    out.push(format!("waiting: {}", seen(&obs, &blocked.0).await));
    out.push(format!(
        "holder: {}",
        rows(
            &obs,
            &format!("SELECT state, query FROM pg_stat_activity WHERE pid = {p2}")
        )
        .await
        .join("; ")
    ));
    c2.simple_query("COMMIT").await.unwrap();
    blocked.1.await.unwrap().unwrap();
    // pg_cancel_backend: the running statement fails with 57014, the
    // session goes on.
    let sleeper = tokio::spawn(async move {
        let r = c3.simple_query("SELECT pg_sleep(30)").await;
        let r = match r {
            Ok(_) => "finished".to_string(),
            Err(e) => render_error(&e, &[]),
        };
        (c3, r)
    });
    until(&obs, &p3, "state = 'active'").await;
    out.push(format!(
        "sleeping: {}",
        rows(
            &obs,
            &format!("SELECT state, query FROM pg_stat_activity WHERE pid = {p3}")
        )
        .await
        .join("; ")
    ));
    out.push(format!(
        "cancel: {}",
        rows(&obs, &format!("SELECT pg_cancel_backend({p3})"))
            .await
            .join("; ")
    ));
    let (c3, r) = sleeper.await.unwrap();
    out.push(format!("cancelled statement: {r}"));
    out.push(format!(
        "cancelled session goes on: {}",
        rows(&c3, "SELECT 3").await.join("; ")
    ));
    // pg_terminate_backend: the session ends, and leaves the view.
    out.push(format!(
        "terminate: {}",
        rows(&obs, &format!("SELECT pg_terminate_backend({p3})"))
            .await
            .join("; ")
    ));
    let deadline = Instant::now() + Duration::from_secs(20);
    let count = format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {p3}");
    while rows(&obs, &count).await != ["0"] {
        assert!(Instant::now() < deadline, "the terminated session stayed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    out.push(format!(
        "terminated session's next statement fails: {}",
        c3.simple_query("SELECT 4").await.is_err()
    ));
    out.push(format!(
        "unknown pid: {}",
        rows(
            &obs,
            "SELECT pg_cancel_backend(2000000000), pg_terminate_backend(2000000000)"
        )
        .await
        .join("; ")
    ));
    // The monitoring query SQLAlchemy's test harness runs before dropping
    // tables, and the one it ends a test database's sessions with.
    c2.simple_query("BEGIN").await.unwrap();
    c2.simple_query("SELECT 5").await.unwrap();
    out.push(format!(
        "sqlalchemy's check: {}",
        rows(
            &obs,
            // Without its wait_event_type: whether a session idle in a
            // transaction shows Client or NULL there depends on timing in
            // both servers (the two runs disagreed under load).
            "select state, query from pg_stat_activity where \
             usename=current_user and datname=current_database() and \
             state='idle in transaction' and pid != pg_backend_pid()"
        )
        .await
        .join("; ")
    ));
    out.push(format!(
        "sqlalchemy's terminate: {}",
        rows(
            &obs,
            "SELECT DISTINCT t FROM (select pg_terminate_backend(pid) AS t \
             from pg_stat_activity where usename=current_user and pid != pg_backend_pid() \
             and datname=current_database()) s"
        )
        .await
        .join("; ")
    ));
    out
}

#[test]
fn pg_stat_activity_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare pg_stat_activity") else {
        return;
    };
    let want = block_on_within(Duration::from_secs(120), schedule(peers.pg_conn()));
    let got = block_on_within(Duration::from_secs(120), schedule(peers.walden_conn()));
    assert_same(&want, &got);
}

/// SQL Server's session and request views over the same sessions.
#[test]
fn dm_exec_sessions_and_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let a = connect(&walden.conn_str()).await;
        let b = connect(&walden.conn_str()).await;
        let pb = pid(&b).await;
        b.simple_query("BEGIN").await.unwrap();
        b.simple_query("SET application_name = 'report'")
            .await
            .unwrap();
        b.simple_query("SELECT 1").await.unwrap();
        let s = rows(
            &a,
            &format!(
                "SELECT status, program_name, host_name, open_transaction_count, \
                 database_id = DB_ID(), login_name = current_user \
                 FROM sys.dm_exec_sessions WHERE session_id = {pb}"
            ),
        )
        .await;
        assert_eq!(s, ["sleeping|report|127.0.0.1|1|t|t"]);
        // Requests: only the running one, the observer's own.
        let r = rows(
            &a,
            "SELECT session_id = @@SPID, status, command, blocking_session_id, text \
             FROM sys.dm_exec_requests",
        )
        .await;
        assert_eq!(
            r,
            [
                "t|running|SELECT|0|SELECT session_id = @@SPID, status, command, \
              blocking_session_id, text FROM sys.dm_exec_requests"
            ]
        );
    });
}

/// A role that is not a superuser sees its own sessions' statements, not
/// other roles' (PostgreSQL's `<insufficient privilege>`), and may signal
/// only its own sessions.
#[test]
fn other_roles_sessions_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let admin = connect(&walden.conn_str()).await;
        admin.simple_query("CREATE ROLE plain LOGIN").await.unwrap();
        let pa = pid(&admin).await;
        let conn = format!("{} user=plain", walden.conn_str());
        let plain = connect(&conn).await;
        let mine = connect(&conn).await;
        let pm = pid(&mine).await;
        assert_eq!(
            rows(
                &plain,
                &format!("SELECT usename, query, state FROM pg_stat_activity WHERE pid = {pa}")
            )
            .await,
            ["walden|<insufficient privilege>|NULL"]
        );
        assert_eq!(
            rows(
                &plain,
                &format!("SELECT query, state FROM pg_stat_activity WHERE pid = {pm}")
            )
            .await,
            ["SELECT pg_backend_pid()|idle"]
        );
        let e = plain
            .simple_query(&format!("SELECT pg_terminate_backend({pa})"))
            .await
            .unwrap_err();
        assert_eq!(e.code().unwrap().code(), "42501", "{e}");
        assert_eq!(
            rows(&plain, &format!("SELECT pg_terminate_backend({pm})")).await,
            ["t"]
        );
        assert!(rows(&admin, "SELECT 1").await == ["1"]);
    });
}
