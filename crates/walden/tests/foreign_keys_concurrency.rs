//! Foreign keys under concurrency, as two-session schedules run step by
//! step on Walden and on a scratch PostgreSQL 15 with the same SQL: each
//! step's outcome (rows, command tag, SQLSTATE, or that it blocked) must be
//! the same. A referencing row takes KEY SHARE on the row it references, so
//! a concurrent delete or key change of that row waits and then fails (or
//! cascades); an update that keeps the key does not wait.

mod server_support;

use server_support::{missing_tool, Serve};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};
use walden_bench::workbench::pg_peer::ScratchPostgres;

type Outcome = Result<Vec<SimpleQueryMessage>, tokio_postgres::Error>;

/// How long a step may take before it counts as blocked.
const BLOCKED_AFTER: Duration = Duration::from_millis(400);

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(conn: &str) -> Arc<Client> {
    let (client, c) = tokio_postgres::connect(conn, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect {conn}: {e}"));
    tokio::spawn(async move {
        let _ = c.await;
    });
    Arc::new(client)
}

fn show(r: &Outcome) -> String {
    match r {
        Err(e) => format!(
            "ERROR {}",
            e.code()
                .map(|c| c.code().to_string())
                .unwrap_or_else(|| e.to_string())
        ),
        Ok(msgs) => {
            let mut parts = Vec::new();
            let mut rows = Vec::new();
            for m in msgs {
                match m {
                    SimpleQueryMessage::Row(r) => rows.push(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL").to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    SimpleQueryMessage::CommandComplete(n) => {
                        if rows.is_empty() {
                            parts.push(format!("ok {n}"));
                        } else {
                            parts.push(format!("rows {}", rows.join(" ")));
                            rows.clear();
                        }
                    }
                    _ => {}
                }
            }
            parts.join("; ")
        }
    }
}

/// Runs `steps` (session, SQL) in order over two connections and returns
/// what each step did; a step still running after [`BLOCKED_AFTER`] is
/// recorded as blocked and its outcome when it finishes.
async fn run_schedule(conn: &str, setup: &str, steps: &[(usize, &str)]) -> Vec<String> {
    let admin = connect(conn).await;
    admin
        .batch_execute(&format!("DROP TABLE IF EXISTS c, p; {setup}"))
        .await
        .unwrap_or_else(|e| panic!("setup: {e}"));
    let conns = [connect(conn).await, connect(conn).await];
    let mut pending: Vec<Option<(String, JoinHandle<Outcome>)>> = vec![None, None];
    let mut log = Vec::new();
    for &(s, sql) in steps {
        if let Some((what, h)) = pending[s].take() {
            let r = tokio::time::timeout(Duration::from_secs(10), h)
                .await
                .unwrap_or_else(|_| panic!("T{s}: {what} never finished"))
                .unwrap();
            log.push(format!("T{s} {what} -> {}", show(&r)));
        }
        let c = conns[s].clone();
        let q = sql.to_string();
        let mut h = tokio::spawn(async move { c.simple_query(&q).await });
        match tokio::time::timeout(BLOCKED_AFTER, &mut h).await {
            Ok(r) => log.push(format!("T{s} {sql} -> {}", show(&r.unwrap()))),
            Err(_) => {
                log.push(format!("T{s} {sql} -> blocked"));
                pending[s] = Some((sql.to_string(), h));
                continue;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        for (o, p) in pending.iter_mut().enumerate() {
            if p.as_ref().is_some_and(|(_, h)| h.is_finished()) {
                let (what, h) = p.take().unwrap();
                log.push(format!("T{o} {what} -> {}", show(&h.await.unwrap())));
            }
        }
    }
    for (o, p) in pending.iter_mut().enumerate() {
        if let Some((what, h)) = p.take() {
            let r = tokio::time::timeout(Duration::from_secs(10), h)
                .await
                .unwrap_or_else(|_| panic!("T{o}: {what} never finished"))
                .unwrap();
            log.push(format!("T{o} {what} -> {}", show(&r)));
        }
    }
    for q in [
        "SELECT id, v FROM p ORDER BY id",
        "SELECT id, p FROM c ORDER BY id",
    ] {
        let end = admin.simple_query(q).await.unwrap();
        log.push(format!("end {}", show(&Ok(end))));
    }
    log
}

fn setup(action: &str) -> String {
    format!(
        "CREATE TABLE p (id int PRIMARY KEY, v int); \
         CREATE TABLE c (id int PRIMARY KEY, p int REFERENCES p {action}); \
         INSERT INTO p VALUES (1, 10), (2, 20)"
    )
}

struct Schedule {
    name: String,
    setup: String,
    steps: Vec<(usize, &'static str)>,
}

fn schedules() -> Vec<Schedule> {
    let rc = "BEGIN ISOLATION LEVEL READ COMMITTED";
    let rr = "BEGIN ISOLATION LEVEL REPEATABLE READ";
    let mut v = Vec::new();
    let mut add = |name: &str, action: &str, steps: Vec<(usize, &'static str)>| {
        v.push(Schedule {
            name: name.to_string(),
            setup: setup(action),
            steps,
        })
    };
    for (end, what) in [("COMMIT", "commits"), ("ROLLBACK", "rolls back")] {
        add(
            &format!("child insert first, parent delete waits; the child {what}"),
            "",
            vec![
                (0, rc),
                (0, "INSERT INTO c VALUES (1, 1)"),
                (1, "DELETE FROM p WHERE id = 1"),
                (0, end),
            ],
        );
        add(
            &format!("parent delete first, child insert waits; the delete {what}"),
            "",
            vec![
                (1, rc),
                (1, "DELETE FROM p WHERE id = 1"),
                (0, "INSERT INTO c VALUES (1, 1)"),
                (1, end),
            ],
        );
        add(
            &format!("ON DELETE CASCADE waits for the child insert, which {what}"),
            "ON DELETE CASCADE",
            vec![
                (0, rc),
                (0, "INSERT INTO c VALUES (1, 1), (2, 1)"),
                (1, "DELETE FROM p WHERE id = 1"),
                (0, end),
            ],
        );
        add(
            &format!("parent key change waits for the child insert, which {what}"),
            "ON UPDATE CASCADE",
            vec![
                (0, rc),
                (0, "INSERT INTO c VALUES (1, 1)"),
                (1, "UPDATE p SET id = 10 WHERE id = 1"),
                (0, end),
            ],
        );
    }
    add(
        "an update keeping the key does not wait for the child insert",
        "",
        vec![
            (0, rc),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (1, "UPDATE p SET v = v + 1 WHERE id = 1"),
            (0, "COMMIT"),
        ],
    );
    add(
        "a child insert does not wait for an update keeping the key",
        "",
        vec![
            (1, rc),
            (1, "UPDATE p SET v = v + 1 WHERE id = 1"),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (1, "COMMIT"),
        ],
    );
    add(
        "an uncommitted parent is not seen by a child insert",
        "",
        vec![
            (1, rc),
            (1, "INSERT INTO p VALUES (3, 30)"),
            (0, "INSERT INTO c VALUES (1, 3)"),
            (1, "COMMIT"),
            (0, "INSERT INTO c VALUES (1, 3)"),
        ],
    );
    add(
        "two children of one parent do not wait for each other",
        "",
        vec![
            (0, rc),
            (1, rc),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (1, "INSERT INTO c VALUES (2, 1)"),
            (0, "COMMIT"),
            (1, "COMMIT"),
        ],
    );
    add(
        "repeatable read: the parent deleted after the snapshot",
        "",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, "DELETE FROM p WHERE id = 1"),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (0, "ROLLBACK"),
        ],
    );
    add(
        "repeatable read: the parent updated (key kept) after the snapshot",
        "",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, "UPDATE p SET v = 11 WHERE id = 1"),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (0, "COMMIT"),
        ],
    );
    add(
        "repeatable read: a child inserted after the snapshot blocks the delete",
        "",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, "INSERT INTO c VALUES (1, 1)"),
            (0, "DELETE FROM p WHERE id = 1"),
            (0, "ROLLBACK"),
        ],
    );
    add(
        "repeatable read: a cascade to a child inserted after the snapshot",
        "ON DELETE CASCADE",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, "INSERT INTO c VALUES (1, 1)"),
            (0, "DELETE FROM p WHERE id = 1"),
            (0, "ROLLBACK"),
        ],
    );
    add(
        "repeatable read: the child insert waits for the parent delete",
        "",
        vec![
            (0, rr),
            (0, "SELECT count(*) FROM p"),
            (1, rc),
            (1, "DELETE FROM p WHERE id = 1"),
            (0, "INSERT INTO c VALUES (1, 1)"),
            (1, "COMMIT"),
            (0, "ROLLBACK"),
        ],
    );
    v
}

#[test]
fn foreign_key_schedules_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let pg = match ScratchPostgres::start(tmp.path()) {
        Ok(pg) => pg,
        Err(e) => {
            missing_tool(&format!(
                "PostgreSQL 15 is needed to compare foreign key schedules: {e}"
            ));
            return;
        }
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let pg_conn = format!(
        "host=127.0.0.1 port={} user={} dbname=postgres",
        pg.port(),
        ScratchPostgres::USER
    );
    let w_conn = walden.conn_str();
    let mut failures = Vec::new();
    rt().block_on(async {
        tokio::time::timeout(Duration::from_secs(300), async {
            for sc in schedules() {
                let want = run_schedule(&pg_conn, &sc.setup, &sc.steps).await;
                let got = run_schedule(&w_conn, &sc.setup, &sc.steps).await;
                if want != got {
                    failures.push(format!(
                        "{}:\n  postgres: {want:#?}\n  walden:   {got:#?}",
                        sc.name
                    ));
                } else {
                    eprintln!("{}: same as PostgreSQL ({} steps)", sc.name, want.len());
                }
            }
        })
        .await
        .expect("timed out")
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
