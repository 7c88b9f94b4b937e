//! LISTEN / NOTIFY / UNLISTEN and `pg_notify` through the server, beside a
//! scratch PostgreSQL 15 running the same steps: two sessions, each step
//! run by one of them, then every notification each session received,
//! rendered without the (differing) pids but with whether the notifier was
//! the session itself. Covers delivery at commit to every listener (the
//! notifier too), none on rollback or from a rolled-back savepoint,
//! duplicates folded within a transaction, LISTEN in a block taking effect
//! at its commit, a listener inside a block hearing nothing until the block
//! ends, UNLISTEN, the 8000-byte payload limit and the channel checks
//! (22023), `pg_listening_channels()`. Then psql's report of a notification.
//!
//! "Everything received after a step" is known without waiting for a quiet
//! window: both sessions also listen on a harness channel, and after each
//! step a third session sends a numbered notification on it. Notifications
//! reach a listener in commit order, so once a session outside a block has
//! the step's number it has everything the step sent it. A session inside a
//! block hears nothing until it ends (in PostgreSQL); what it has received
//! by then is recorded as is, so a server delivering inside a block shows.

use crate::pg_diff;
use crate::server_support;

use futures::StreamExt;
use pg_diff::{assert_same, block_on_within, Peers};
use server_support::{have, run_with_deadline};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls, Notification, SimpleQueryMessage};

/// Who runs a step.
#[derive(Clone, Copy)]
enum Who {
    A,
    B,
}

const STEPS: &[(Who, &str)] = &[
    (Who::A, "LISTEN chan"),
    (Who::A, "SELECT pg_listening_channels()"),
    (Who::B, "NOTIFY chan, 'nobody else listens'"),
    (Who::B, "LISTEN chan"),
    (Who::B, "LISTEN \"Quoted Chan\""),
    (Who::B, "SELECT * FROM pg_listening_channels() ORDER BY 1"),
    (Who::A, "NOTIFY chan"),
    (Who::A, "NOTIFY Chan, 'folded to lower case'"),
    (Who::A, "NOTIFY \"Quoted Chan\", 'quoted'"),
    (Who::A, "SELECT pg_notify('Quoted Chan', 'by function')"),
    // Folded duplicates, in the order first sent.
    (Who::B, "BEGIN"),
    (Who::B, "NOTIFY chan, 'x'"),
    (Who::B, "NOTIFY chan, 'y'"),
    (Who::B, "NOTIFY chan, 'x'"),
    (
        Who::B,
        "SELECT pg_notify('chan', 'y'), pg_notify('chan', 'z')",
    ),
    (Who::B, "COMMIT"),
    // A rollback, and a rolled-back savepoint, send nothing.
    (Who::B, "BEGIN"),
    (Who::B, "NOTIFY chan, 'rolled back'"),
    (Who::B, "ROLLBACK"),
    (Who::B, "BEGIN"),
    (Who::B, "SAVEPOINT s"),
    (Who::B, "NOTIFY chan, 'in the savepoint'"),
    (Who::B, "ROLLBACK TO s"),
    (Who::B, "NOTIFY chan, 'kept'"),
    (Who::B, "SAVEPOINT t"),
    (Who::B, "NOTIFY chan, 'released'"),
    (Who::B, "RELEASE t"),
    (Who::B, "COMMIT"),
    // An error fails the block: its notifications go with it.
    (Who::B, "BEGIN"),
    (Who::B, "NOTIFY chan, 'before the error'"),
    (Who::B, "SELECT 1 / 0"),
    (Who::B, "COMMIT"),
    // A listener inside a block hears at its end.
    (Who::A, "BEGIN"),
    (Who::A, "SELECT 1"),
    (Who::B, "NOTIFY chan, 'while A is in a block'"),
    (Who::A, "SELECT 2"),
    (Who::A, "COMMIT"),
    // LISTEN inside a block takes effect at commit.
    (Who::A, "BEGIN"),
    (Who::A, "LISTEN later"),
    (Who::A, "SELECT count(*) FROM pg_listening_channels()"),
    // A listens already (on chan): as PostgreSQL's queue, it reads this
    // after its block, against the channels it then listens on.
    (Who::B, "NOTIFY later, 'too early'"),
    (Who::A, "COMMIT"),
    (Who::A, "SELECT * FROM pg_listening_channels() ORDER BY 1"),
    (Who::B, "NOTIFY later, 'in time'"),
    // A LISTEN rolled back never was.
    (Who::A, "BEGIN"),
    (Who::A, "LISTEN never"),
    (Who::A, "ROLLBACK"),
    (Who::B, "NOTIFY never"),
    // UNLISTEN inside a block, then one that commits.
    (Who::A, "BEGIN"),
    (Who::A, "UNLISTEN later"),
    (Who::A, "ROLLBACK"),
    (Who::B, "NOTIFY later, 'still listening'"),
    (Who::A, "UNLISTEN later"),
    (Who::B, "NOTIFY later, 'unheard'"),
    (Who::A, "UNLISTEN not_listening"),
    // Listen and notify in one transaction: heard; notify then unlisten: not.
    // (A reserved word is a channel only quoted.)
    (Who::A, "LISTEN both"),
    (Who::A, "UNLISTEN select"),
    (Who::A, "BEGIN"),
    (Who::A, "LISTEN \"both\""),
    (Who::A, "NOTIFY \"both\", 'same transaction'"),
    (Who::A, "COMMIT"),
    (Who::A, "BEGIN"),
    (Who::A, "NOTIFY \"both\", 'then unlistened'"),
    (Who::A, "UNLISTEN \"both\""),
    (Who::A, "COMMIT"),
    // Limits and checks.
    (Who::A, "SELECT pg_notify('chan', repeat('x', 8000))"),
    (Who::A, "SELECT pg_notify('chan', repeat('é', 3999) || 'x')"),
    (
        Who::A,
        "SELECT length(pg_notify('chan', repeat('x', 7999))::text)",
    ),
    (Who::A, "SELECT pg_notify('', 'x')"),
    (Who::A, "SELECT pg_notify(NULL, 'x')"),
    (Who::A, "SELECT pg_notify('chan', NULL)"),
    (Who::A, "SELECT pg_notify(repeat('c', 64), 'x')"),
    (Who::A, "NOTIFY chan, 42"),
    (Who::A, "NOTIFY"),
    (Who::A, "LISTEN 'quoted'"),
    (Who::A, "SELECT pg_notification_queue_usage()"),
    // UNLISTEN * and DISCARD ALL forget every channel.
    (Who::B, "UNLISTEN *"),
    (Who::B, "SELECT count(*) FROM pg_listening_channels()"),
    (Who::A, "NOTIFY \"Quoted Chan\", 'unheard too'"),
    (Who::A, "DISCARD ALL"),
    (Who::A, "SELECT count(*) FROM pg_listening_channels()"),
    (Who::B, "NOTIFY chan, 'after discard'"),
];

/// A client whose notifications arrive on the receiver.
async fn listening_client(conn: &str) -> (Client, mpsc::UnboundedReceiver<Notification>) {
    let (client, mut connection) = tokio_postgres::connect(conn, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect {conn}: {e}"));
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            if let AsyncMessage::Notification(n) = m {
                let _ = tx.send(n);
            }
        }
    });
    (client, rx)
}

/// What a statement returned (rows or its SQLSTATE and message).
async fn outcome(c: &Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Ok(msgs) => pg_diff::render_messages(&msgs),
        Err(e) => pg_diff::render_error(&e, &[]),
    }
}

/// The harness's channel (see the module comment).
const SENTINEL: &str = "sentinel";

/// A notification as recorded: channel, payload, and who sent it.
fn render(n: &Notification, own_pid: i32) -> String {
    let from = if n.process_id() == own_pid {
        "self"
    } else {
        "other"
    };
    format!("{}:{}:{from}", n.channel(), n.payload())
}

/// What a session received after step `step`: outside a block, everything
/// up to the sentinel numbered `step`; inside one, what has arrived so far.
async fn heard(
    rx: &mut mpsc::UnboundedReceiver<Notification>,
    own_pid: i32,
    step: usize,
    in_block: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    if in_block {
        while let Ok(n) = rx.try_recv() {
            if n.channel() != SENTINEL {
                out.push(render(&n, own_pid));
            }
        }
        return out;
    }
    let want = step.to_string();
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no sentinel {step} within 10 s"))
            .expect("connection closed");
        if n.channel() != SENTINEL {
            out.push(render(&n, own_pid));
        } else if n.payload() == want {
            return out;
        }
    }
}

async fn pid(c: &Client) -> i32 {
    let rows = c.simple_query("SELECT pg_backend_pid()").await.unwrap();
    match &rows[1] {
        SimpleQueryMessage::Row(r) => r.get(0).unwrap().parse().unwrap(),
        _ => panic!("no row"),
    }
}

/// Whether `sql` leaves its session in a transaction block, given whether
/// it was in one (the steps open blocks with BEGIN only).
fn in_block_after(sql: &str, was: bool) -> bool {
    match sql {
        "BEGIN" => true,
        "COMMIT" | "ROLLBACK" => false,
        _ => was,
    }
}

/// Every step's outcome, then what each session heard after it.
async fn run(conn: &str) -> Vec<String> {
    let (a, mut ra) = listening_client(conn).await;
    let (b, mut rb) = listening_client(conn).await;
    let sender = pg_diff::connect(conn).await;
    let (pa, pb) = (pid(&a).await, pid(&b).await);
    let listen = format!("LISTEN {SENTINEL}");
    for c in [&a, &b] {
        c.simple_query(&listen).await.unwrap();
    }
    let (mut block_a, mut block_b) = (false, false);
    let mut out = Vec::new();
    for (step, (who, sql)) in STEPS.iter().enumerate() {
        let (c, in_block) = match who {
            Who::A => (&a, &mut block_a),
            Who::B => (&b, &mut block_b),
        };
        let r = outcome(c, sql).await;
        *in_block = in_block_after(sql, *in_block);
        if matches!(*sql, "UNLISTEN *" | "DISCARD ALL") {
            c.simple_query(&listen).await.unwrap();
        }
        sender
            .simple_query(&format!("NOTIFY {SENTINEL}, '{step}'"))
            .await
            .unwrap();
        let heard_a = heard(&mut ra, pa, step, block_a).await;
        let heard_b = heard(&mut rb, pb, step, block_b).await;
        out.push(format!(
            "{sql} -> {r} | A heard {heard_a:?} | B heard {heard_b:?}"
        ));
    }
    out
}

#[test]
fn listen_notify_as_postgresql() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare LISTEN / NOTIFY") else {
        return;
    };
    let (want, got) = block_on_within(Duration::from_secs(60), async {
        (run(&peers.pg_conn()).await, run(&peers.walden_conn()).await)
    });
    assert_same(&want, &got);
}

#[test]
fn psql_reports_a_notification() {
    if !have("psql", &["--version"]) {
        server_support::missing_tool("psql is needed to read a notification");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = server_support::Serve::start(&tmp.path().join("data"), &[]);
    let out = run_with_deadline(
        std::process::Command::new("psql").args([
            &s.conn_str(),
            "-X",
            "-c",
            "LISTEN psql_chan",
            "-c",
            "NOTIFY psql_chan, 'hello'",
            "-c",
            "SELECT pg_notify('psql_chan', 'again')",
        ]),
        Duration::from_secs(30),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for payload in ["hello", "again"] {
        let line = format!(
            "Asynchronous notification \"psql_chan\" with payload \"{payload}\" received from server process with PID"
        );
        assert!(stdout.contains(&line), "{stdout}");
    }
}
