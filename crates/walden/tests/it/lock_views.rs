//! `pg_locks` and `sys.dm_tran_locks` through the server, with sessions
//! blocked on a row, on a table and on an advisory lock. The same schedule
//! runs on a scratch PostgreSQL 15 and on Walden; `pg_locks`' rows for the
//! sessions (process ids and transaction ids replaced by the session that
//! has them) must be the same on both, as must the "who blocks whom" join
//! DBAs run on it, and `pg_blocking_pids`. Walden's `sys.dm_tran_locks` rows are checked against
//! what SQL Server shows for the same waits.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect, Peers};
use std::collections::HashMap;
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

/// How long the blocked statements are given to queue.
const QUEUED: Duration = Duration::from_secs(30);

/// Rows of a simple query, each column as text (`NULL` for null).
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

async fn pid(c: &Client) -> String {
    rows(c, "SELECT pg_backend_pid()").await[0][0].clone()
}

/// The sessions' `pg_locks` rows on user tables, transactions and advisory
/// keys, as `locktype|relation name|mode|granted|session|xid's session|
/// waiting since is set|objid|objsubid`, sorted. Process ids and
/// transaction ids differ between servers; they are shown as the name of
/// the session they belong to (a transaction id's: the session holding its
/// `ExclusiveLock`).
async fn lock_rows(obs: &Client, who: &[(&str, String)]) -> Vec<String> {
    let pids: Vec<&str> = who.iter().map(|w| w.1.as_str()).collect();
    let sql = format!(
        "SELECT l.locktype, c.relname, l.mode, l.granted, l.pid, l.transactionid, \
         l.waitstart IS NOT NULL, l.objid, l.objsubid, l.virtualxid IS NOT NULL \
         FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation \
         WHERE l.pid IN ({}) \
         AND l.locktype IN ('relation', 'transactionid', 'virtualxid', 'advisory') \
         AND (l.locktype <> 'relation' OR c.relkind = 'r')",
        pids.join(", ")
    );
    let got = rows(obs, &sql).await;
    let name = |pid: &str| {
        who.iter()
            .find(|w| w.1 == pid)
            .map_or("?".to_string(), |w| w.0.to_string())
    };
    let xid_owner: HashMap<String, String> = got
        .iter()
        .filter(|r| r[0] == "transactionid" && r[2] == "ExclusiveLock" && r[3] == "t")
        .map(|r| (r[5].clone(), name(&r[4])))
        .collect();
    let mut out: Vec<String> = got
        .iter()
        .map(|r| {
            let xid = match r[5].as_str() {
                "NULL" => "-".to_string(),
                x => xid_owner.get(x).cloned().unwrap_or_else(|| "?".into()),
            };
            assert_eq!(
                r[9] == "t",
                r[0] == "virtualxid",
                "virtualxid column: {r:?}"
            );
            format!(
                "{}|{}|{}|{}|{}|xid of {}|waiting since set: {}|{}|{}",
                r[0],
                r[1],
                r[2],
                r[3],
                name(&r[4]),
                xid,
                r[6],
                r[7],
                r[8]
            )
        })
        .collect();
    out.sort();
    out
}

/// The usual "who blocks whom" query on `pg_locks`, as (waiter, holder)
/// session names.
async fn blocking(obs: &Client, who: &[(&str, String)]) -> Vec<String> {
    let sql = "SELECT w.pid, h.pid FROM pg_locks w JOIN pg_locks h \
               ON h.locktype = w.locktype AND h.granted AND h.pid <> w.pid \
               AND h.transactionid IS NOT DISTINCT FROM w.transactionid \
               AND h.relation IS NOT DISTINCT FROM w.relation \
               AND h.objid IS NOT DISTINCT FROM w.objid \
               AND h.database IS NOT DISTINCT FROM w.database \
               WHERE NOT w.granted";
    let name = |pid: &str| {
        who.iter()
            .find(|w| w.1 == pid)
            .map_or(format!("other {pid}"), |w| w.0.to_string())
    };
    let mut out: Vec<String> = rows(obs, sql)
        .await
        .iter()
        .map(|r| format!("{} waits for {}", name(&r[0]), name(&r[1])))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What the schedule shows: the lock rows and the blocking pairs while
/// three sessions wait, then once the holder committed.
struct Seen {
    waiting: Vec<String>,
    blocking: Vec<String>,
    after: Vec<String>,
    /// `pg_blocking_pids` of each session while they wait.
    blocking_pids: Vec<String>,
    /// Walden only: `sys.dm_tran_locks` while the sessions wait.
    tran_locks: Vec<String>,
}

async fn schedule(conn: &str, walden: bool) -> Seen {
    let setup = connect(conn).await;
    setup
        .batch_execute(
            "DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS u; \
             CREATE TABLE t (id int PRIMARY KEY, v int); CREATE TABLE u (id int PRIMARY KEY); \
             INSERT INTO t VALUES (1, 1), (2, 2); INSERT INTO u VALUES (1)",
        )
        .await
        .unwrap();
    let (a, b, d, e, f, obs) = (
        connect(conn).await,
        connect(conn).await,
        connect(conn).await,
        connect(conn).await,
        connect(conn).await,
        connect(conn).await,
    );
    let who = vec![
        ("A", pid(&a).await),
        ("B", pid(&b).await),
        ("D", pid(&d).await),
        ("E", pid(&e).await),
        ("F", pid(&f).await),
    ];
    // A holds a row of t and all of u; E an advisory key.
    a.batch_execute(
        "BEGIN; UPDATE t SET v = 10 WHERE id = 1; LOCK TABLE u IN ACCESS EXCLUSIVE MODE",
    )
    .await
    .unwrap();
    rows(&e, "SELECT pg_advisory_lock(42)").await;
    // B waits for A's row, D for u, F for E's key.
    let b_wait = tokio::spawn(async move {
        b.batch_execute("BEGIN; UPDATE t SET v = 20 WHERE id = 1")
            .await
            .unwrap();
        b
    });
    let d_wait = tokio::spawn(async move {
        rows(&d, "SELECT count(*) FROM u").await;
    });
    let f_wait = tokio::spawn(async move {
        rows(&f, "SELECT pg_advisory_lock(42)").await;
        rows(&f, "SELECT pg_advisory_unlock(42)").await;
    });
    // Until the three waits are queued (a loaded machine may take a while
    // to send the statements).
    let waits = format!(
        "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid IN ({}, {}, {})",
        who[1].1, who[2].1, who[4].1
    );
    let deadline = tokio::time::Instant::now() + QUEUED;
    while rows(&obs, &waits).await[0][0] != "3" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the three sessions did not queue"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!b_wait.is_finished() && !d_wait.is_finished() && !f_wait.is_finished());
    let waiting = lock_rows(&obs, &who).await;
    let blocking = blocking(&obs, &who).await;
    let name = |pid: &str| who.iter().find(|w| w.1 == pid).map_or("?", |w| w.0);
    let mut blocking_pids = Vec::new();
    for (n, p) in &who {
        let got = rows(&obs, &format!("SELECT pg_blocking_pids({p})")).await;
        let mut by: Vec<&str> = got[0][0]
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .filter(|s| !s.is_empty())
            .map(name)
            .collect();
        by.sort();
        blocking_pids.push(format!("{n} <- {}", by.join(" ")));
    }
    let tran_locks = if walden {
        let ids: Vec<&str> = who.iter().map(|w| w.1.as_str()).collect();
        let got = rows(
            &obs,
            &format!(
                "SELECT resource_type, request_mode, request_status, request_session_id, \
                 request_owner_type, resource_description <> '' \
                 FROM sys.dm_tran_locks WHERE request_session_id IN ({})",
                ids.join(", ")
            ),
        )
        .await;
        let mut v: Vec<String> = got
            .iter()
            .map(|r| {
                format!(
                    "{} {} {} {} {} {}",
                    name(&r[3]),
                    r[0],
                    r[1],
                    r[2],
                    r[4],
                    r[5]
                )
            })
            .collect();
        v.sort();
        v
    } else {
        Vec::new()
    };
    a.batch_execute("COMMIT").await.unwrap();
    rows(&e, "SELECT pg_advisory_unlock(42)").await;
    let b = b_wait.await.unwrap();
    d_wait.await.unwrap();
    f_wait.await.unwrap();
    // B still has its transaction: its own locks, granted.
    let after = lock_rows(&obs, &who).await;
    b.batch_execute("ROLLBACK").await.unwrap();
    Seen {
        waiting,
        blocking,
        after,
        blocking_pids,
        tran_locks,
    }
}

#[test]
fn pg_locks_shows_holders_and_waiters_as_postgres_does() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare pg_locks") else {
        return;
    };
    let (pg, wd) = block_on_within(Duration::from_secs(120), async {
        (
            schedule(&peers.pg_conn(), false).await,
            schedule(&peers.walden_conn(), true).await,
        )
    });
    // The shape checked on its own first, so a difference from
    // PostgreSQL is not the only thing the test says.
    let has = |rows: &[String], want: &str| rows.iter().any(|r| r == want);
    for want in [
        "relation|t|RowExclusiveLock|t|A|xid of -|waiting since set: f|NULL|NULL",
        "relation|u|AccessExclusiveLock|t|A|xid of -|waiting since set: f|NULL|NULL",
        "transactionid|NULL|ShareLock|f|B|xid of A|waiting since set: t|NULL|NULL",
        "relation|u|AccessShareLock|f|D|xid of -|waiting since set: t|NULL|NULL",
        "advisory|NULL|ExclusiveLock|f|F|xid of -|waiting since set: t|42|1",
    ] {
        assert!(
            has(&wd.waiting, want),
            "walden lacks {want}:\n{}",
            wd.waiting.join("\n")
        );
    }
    assert_eq!(
        wd.blocking,
        ["B waits for A", "D waits for A", "F waits for E"],
        "{:?}",
        wd.waiting
    );
    assert_eq!(
        pg.waiting,
        wd.waiting,
        "pg_locks while waiting\npostgres:\n{}\nwalden:\n{}",
        pg.waiting.join("\n"),
        wd.waiting.join("\n")
    );
    assert_eq!(pg.blocking, wd.blocking);
    assert_eq!(
        wd.blocking_pids,
        ["A <- ", "B <- A", "D <- A", "E <- ", "F <- E"]
    );
    assert_eq!(pg.blocking_pids, wd.blocking_pids);
    assert_eq!(
        pg.after,
        wd.after,
        "pg_locks after the holder committed\npostgres:\n{}\nwalden:\n{}",
        pg.after.join("\n"),
        wd.after.join("\n")
    );
    // SQL Server's view of the same: intent locks on the tables, the row
    // (a KEY, described by a hash of it) exclusively, the waits as WAIT,
    // the advisory key as an application lock of the session.
    assert_eq!(
        wd.tran_locks,
        [
            "A KEY X GRANT TRANSACTION t",
            "A OBJECT IX GRANT TRANSACTION f",
            "A OBJECT Sch-M GRANT TRANSACTION f",
            "B KEY X WAIT TRANSACTION t",
            "B OBJECT IX GRANT TRANSACTION f",
            "D OBJECT IS WAIT TRANSACTION f",
            "E APPLICATION X GRANT SESSION t",
            "F APPLICATION X WAIT SESSION t",
        ],
        "{:#?}",
        wd.tran_locks
    );
}

/// Role changes wait for each other on the role catalog lock, which the
/// views show as a lock on `pg_authid` (PostgreSQL would not make these
/// two wait: it locks the role's row, so Walden alone is checked).
#[test]
fn a_role_change_waiting_for_another_shows_in_the_views() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = server_support::Serve::start(&tmp.path().join("walden"), &[]);
    let conn = walden.conn_str();
    block_on_within(Duration::from_secs(60), async {
        let (a, b, obs) = (
            connect(&conn).await,
            connect(&conn).await,
            connect(&conn).await,
        );
        let (pa, pb) = (pid(&a).await, pid(&b).await);
        a.batch_execute("BEGIN; CREATE ROLE lock_r1").await.unwrap();
        let b_wait = tokio::spawn(async move {
            b.batch_execute("BEGIN; CREATE ROLE lock_r2").await.unwrap();
            b
        });
        let sql = format!(
            "SELECT pid, database, mode, granted FROM pg_locks \
             WHERE relation = 1260 AND pid IN ({pa}, {pb}) ORDER BY granted DESC"
        );
        let deadline = tokio::time::Instant::now() + QUEUED;
        let got = loop {
            let got = rows(&obs, &sql).await;
            if got.len() == 2 || tokio::time::Instant::now() > deadline {
                break got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(
            got,
            [
                [pa.as_str(), "0", "AccessExclusiveLock", "t"],
                [pb.as_str(), "0", "AccessExclusiveLock", "f"],
            ]
        );
        assert_eq!(
            rows(&obs, &format!("SELECT pg_blocking_pids({pb})")).await[0][0],
            format!("{{{pa}}}")
        );
        let tl = rows(
            &obs,
            "SELECT request_session_id, request_mode, request_status FROM sys.dm_tran_locks \
             WHERE resource_type = 'METADATA' ORDER BY request_status",
        )
        .await;
        assert_eq!(
            tl,
            [
                [pa.as_str(), "Sch-M", "GRANT"],
                [pb.as_str(), "Sch-M", "WAIT"]
            ]
        );
        a.batch_execute("ROLLBACK").await.unwrap();
        let b = b_wait.await.unwrap();
        assert_eq!(
            rows(&obs, &sql).await,
            [[pb.as_str(), "0", "AccessExclusiveLock", "t"]]
        );
        b.batch_execute("ROLLBACK").await.unwrap();
    });
}
