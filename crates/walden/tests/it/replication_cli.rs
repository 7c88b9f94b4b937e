//! Availability groups between two `walden serve` processes on loopback:
//! streaming to a readable secondary and what the DMVs and counters say
//! about it; a silent secondary dropped after SESSION_TIMEOUT and catching
//! up; REQUIRED_SYNCHRONIZED_SECONDARIES_TO_COMMIT; SIGKILL of the primary
//! under load, planned failover and the old primary rejoining as a
//! secondary; forced failover of an asynchronous secondary.

use crate::repl_support;

use repl_support::*;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const SYNC: &str = "SYNCHRONOUS_COMMIT";
const ASYNC: &str = "ASYNCHRONOUS_COMMIT";

fn all_ids(to: i32) -> BTreeSet<i32> {
    (1..=to).collect()
}

/// json and jsonb values travel in the log records the secondary redoes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_values_reach_the_secondary() {
    let tmp = tempfile::tempdir().unwrap();
    let p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        SYNC,
        3,
        0,
    )
    .await;
    let (ca, cb) = (&p.ca, &p.cb);
    must(ca, "CREATE TABLE tj (id int PRIMARY KEY, j jsonb, t json)").await;
    must(
        ca,
        r#"INSERT INTO tj VALUES (1, '{"b": [1.50, null], "a": "x"}', '{"z" : 1,  "z": 2}')"#,
    )
    .await;
    let got: String = eventually!(Duration::from_secs(10), "b to have the json row", {
        match cb
            .query_opt("SELECT j::text || '|' || t::text FROM tj WHERE id = 1", &[])
            .await
        {
            Ok(Some(r)) => Some(r.get::<_, String>(0)),
            _ => None,
        }
    });
    assert_eq!(got, r#"{"a": "x", "b": [1.50, null]}|{"z" : 1,  "z": 2}"#);
    assert_eq!(
        int(cb, r#"SELECT count(*) FROM tj WHERE j @> '{"b": [null]}'"#).await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_to_a_readable_secondary_and_reports_it() {
    let tmp = tempfile::tempdir().unwrap();
    let p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        SYNC,
        3,
        0,
    )
    .await;
    let (ca, cb) = (&p.ca, &p.cb);

    // Durable commits wait for b (HADR_SYNC_COMMIT) and count as mirrored.
    let mirrored0 = perf_counter(ca, "Mirrored Write Transactions/sec").await;
    let waits0 = wait_count(ca, "HADR_SYNC_COMMIT").await;
    let hardened0 = state_of(ca, "b").await.unwrap().hardened;
    for id in PRELOADED + 1..=150 {
        insert(ca, id).await.unwrap();
    }
    let mirrored1 = perf_counter(ca, "Mirrored Write Transactions/sec").await;
    let waits1 = wait_count(ca, "HADR_SYNC_COMMIT").await;
    assert!(
        mirrored1 - mirrored0 >= 100,
        "Mirrored Write Transactions/sec went from {mirrored0} to {mirrored1} over 100 durable commits"
    );
    assert!(
        waits1 > waits0,
        "no HADR_SYNC_COMMIT wait over 100 durable commits"
    );
    assert!(perf_counter(ca, "Transaction Delay").await > 0);

    // The secondary reads what was committed, and refuses writes.
    wait_ids(cb, &all_ids(150), Duration::from_secs(10), "b").await;
    assert_eq!(int(cb, "SELECT count(*) FROM t WHERE v = 'x'").await, 100);
    assert_eq!(int(cb, "SELECT max(id) FROM t").await, 150);
    for sql in [
        "INSERT INTO t VALUES (100000, 'no')",
        "UPDATE t SET v = 'no' WHERE id = 1",
        "DELETE FROM t WHERE id = 1",
        "CREATE TABLE u (id int)",
        "BEGIN; INSERT INTO t VALUES (100001, 'no'); COMMIT",
    ] {
        assert_eq!(
            sqlstate(exec(cb, sql).await),
            "25006",
            "{sql} on the secondary"
        );
        let _ = exec(cb, "ROLLBACK").await;
    }
    assert_eq!(int(cb, "SELECT count(*) FROM t").await, 150);

    // The DMVs on both sides, once b has acknowledged everything.
    let (pa, sa, sb, a_rows, b_rows) = eventually!(
        Duration::from_secs(10),
        "b to have hardened and redone all of a's log",
        {
            let a_rows = replica_states(ca).await;
            let b_rows = replica_states(cb).await;
            let pa = a_rows.iter().find(|r| r.replica == "a").cloned().unwrap();
            let sa = a_rows.iter().find(|r| r.replica == "b").cloned().unwrap();
            let sb = b_rows.iter().find(|r| r.replica == "b").cloned().unwrap();
            (sa.hardened == pa.hardened
                && sa.send_queue_kb == 0
                && sa.redo_queue_kb == 0
                && sb.hardened == pa.hardened
                && sb.redone == sb.hardened
                && sb.state == "SYNCHRONIZED")
                .then_some((pa, sa, sb, a_rows.len(), b_rows.len()))
        }
    );
    assert!(
        pa.is_local && pa.is_primary && pa.state == "SYNCHRONIZED",
        "{pa:?}"
    );
    assert_eq!(a_rows, 2, "the primary lists itself and b");
    assert!(
        sa.hardened > hardened0 && sb.redone > hardened0,
        "b's hardened/redone LSNs did not move past {hardened0}: {sa:?} {sb:?}"
    );
    assert!(!sa.is_local && !sa.is_primary && sa.connected, "{sa:?}");
    assert_eq!(sa.state, "SYNCHRONIZED");
    assert!(sa.has_commit_time, "last_commit_time of b is set: {sa:?}");
    assert_eq!(sa.lag_seconds, Some(0.0), "{sa:?}");
    assert_eq!(b_rows, 1, "the secondary lists itself only");
    assert!(sb.is_local && !sb.is_primary && sb.connected, "{sb:?}");
    assert_eq!((sb.send_queue_kb, sb.redo_queue_kb), (0, 0), "{sb:?}");

    // Delayed durable commits are not acknowledged by any replica.
    must(ca, "ALTER DATABASE walden SET DELAYED_DURABILITY = ALLOWED").await;
    let delayed0 = perf_counter(ca, "Delayed Durable Commits").await;
    let mirrored2 = perf_counter(ca, "Mirrored Write Transactions/sec").await;
    let waits2 = wait_count(ca, "HADR_SYNC_COMMIT").await;
    for id in 151..=170 {
        must(
            ca,
            &format!(
                "BEGIN; INSERT INTO t VALUES ({id}, 'd'); COMMIT WITH (DELAYED_DURABILITY = ON)"
            ),
        )
        .await;
    }
    must(ca, "SET synchronous_commit = off").await;
    for id in 171..=190 {
        insert(ca, id).await.unwrap();
    }
    must(ca, "SET synchronous_commit = on").await;
    assert_eq!(
        perf_counter(ca, "Delayed Durable Commits").await - delayed0,
        40,
        "40 delayed commits"
    );
    assert_eq!(
        perf_counter(ca, "Mirrored Write Transactions/sec").await,
        mirrored2,
        "delayed commits counted as mirrored"
    );
    assert_eq!(
        wait_count(ca, "HADR_SYNC_COMMIT").await,
        waits2,
        "a delayed commit waited for the secondary"
    );
    // They still reach b (when the primary hardens them).
    wait_ids(cb, &all_ids(190), Duration::from_secs(10), "b").await;
    insert(ca, 191).await.unwrap();
    assert_eq!(
        perf_counter(ca, "Mirrored Write Transactions/sec").await,
        mirrored2 + 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_secondary_is_dropped_after_the_session_timeout_and_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let timeout = Duration::from_secs(2);
    let p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        SYNC,
        2,
        0,
    )
    .await;
    let (ca, cb) = (&p.ca, &p.cb);
    insert(ca, 51).await.unwrap();

    // b stops answering: the next durable commit waits for it until the
    // session timeout, then goes on without it.
    p.b.stop();
    let t0 = Instant::now();
    insert(ca, 52).await.unwrap();
    let stall = t0.elapsed();
    eprintln!("SIGSTOP: the first commit stalled {stall:?}");
    assert!(
        stall >= Duration::from_millis(1000) && stall <= timeout + Duration::from_millis(1500),
        "the commit stalled {stall:?} (SESSION_TIMEOUT {timeout:?})"
    );
    // (The link drops its connection within a moment of the state change.)
    eventually!(
        Duration::from_secs(2),
        "b NOT SYNCHRONIZING and not connected",
        {
            let s = state_of(ca, "b").await.unwrap();
            (s.state == "NOT SYNCHRONIZING" && !s.connected).then_some(())
        }
    );
    let mirrored = perf_counter(ca, "Mirrored Write Transactions/sec").await;
    let t1 = Instant::now();
    for id in 53..=100 {
        insert(ca, id).await.unwrap();
    }
    assert!(
        t1.elapsed() < timeout,
        "48 commits took {:?} with b NOT SYNCHRONIZING",
        t1.elapsed()
    );
    assert_eq!(
        perf_counter(ca, "Mirrored Write Transactions/sec").await,
        mirrored,
        "commits counted as mirrored while no secondary was SYNCHRONIZED"
    );
    let s = state_of(ca, "b").await.unwrap();
    assert_eq!(s.state, "NOT SYNCHRONIZING");
    assert!(s.send_queue_kb > 0, "log not sent to b is queued: {s:?}");

    // b runs again: it catches up and is SYNCHRONIZED; commits wait for it again.
    p.b.signal(libc::SIGCONT);
    wait_state(ca, "b", "SYNCHRONIZED", Duration::from_secs(15)).await;
    wait_ids(
        cb,
        &all_ids(100),
        Duration::from_secs(10),
        "b after SIGCONT",
    )
    .await;
    insert(ca, 101).await.unwrap();
    assert_eq!(
        perf_counter(ca, "Mirrored Write Transactions/sec").await,
        mirrored + 1
    );
    wait_ids(cb, &all_ids(101), Duration::from_secs(10), "b").await;
    let s = eventually!(Duration::from_secs(5), "b to say SYNCHRONIZED", {
        let s = state_of(cb, "b").await.unwrap();
        (s.state == "SYNCHRONIZED").then_some(s)
    });
    assert!(s.connected, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_secondary_costs_the_primary_bounded_memory_then_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Node::local("a", tmp.path());
    let cfg = tmp.path().join("a.toml");
    std::fs::write(&cfg, "[replication]\nmax_send_queue_mb = 1\n").unwrap();
    a.extra = vec!["--config".into(), cfg.display().to_string()];
    let p = start_pair(a, Node::local("b", tmp.path()), "ASYNCHRONOUS_COMMIT", 3, 0).await;
    wait_state(&p.ca, "b", "SYNCHRONIZING", Duration::from_secs(10)).await;

    // b stops reading: 24 MB of log is more than the socket buffers (4 MB
    // to send, and b's receive window, small since b has read little) and
    // the 1 MB send queue hold, so the link drops its queue instead of growing.
    p.b.stop();
    let big = "x".repeat(100_000);
    let t0 = Instant::now();
    for id in 51..=290 {
        exec(&p.ca, &format!("INSERT INTO t VALUES ({id}, '{big}')"))
            .await
            .unwrap();
    }
    eprintln!("240 commits of 100 KB with b stopped: {:?}", t0.elapsed());
    eventually!(Duration::from_secs(5), "the send queue to overflow", {
        p.a.log().contains("fell behind its bound").then_some(())
    });
    // Asynchronous or not, a secondary silent for SESSION_TIMEOUT is dropped.
    wait_state(&p.ca, "b", "NOT SYNCHRONIZING", Duration::from_secs(8)).await;

    p.b.signal(libc::SIGCONT);
    wait_ids(
        &p.cb,
        &all_ids(290),
        Duration::from_secs(30),
        "b after SIGCONT",
    )
    .await;
    wait_state(&p.ca, "b", "SYNCHRONIZING", Duration::from_secs(10)).await;
    assert_eq!(
        int(&p.cb, "SELECT count(*) FROM t WHERE length(v) = 100000").await,
        240
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_synchronized_secondaries_refuse_commits_without_the_secondary() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        SYNC,
        2,
        1,
    )
    .await;
    insert(&p.ca, 51).await.unwrap();

    // b stops while a commit waits for it: the commit's outcome is unknown.
    p.b.stop();
    let t0 = Instant::now();
    assert_eq!(sqlstate(insert(&p.ca, 52).await), "40003");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());

    // b is NOT SYNCHRONIZING: commits fail before they are logged.
    wait_state(&p.ca, "b", "NOT SYNCHRONIZING", Duration::from_secs(2)).await;
    assert_eq!(sqlstate(insert(&p.ca, 53).await), "55000");
    assert_eq!(
        sqlstate(exec(&p.ca, "BEGIN; INSERT INTO t VALUES (54, 'x'); COMMIT").await),
        "55000"
    );
    let _ = exec(&p.ca, "ROLLBACK").await;
    // Down for good (SIGKILL), still refused.
    p.b.kill();
    assert_eq!(sqlstate(insert(&p.ca, 55).await), "55000");
    let have = ids(&p.ca).await;
    for id in [53, 54, 55] {
        assert!(
            !have.contains(&id),
            "refused commit {id} is visible on the primary"
        );
    }

    // b is back: it catches up, and commits succeed again.
    p.b.start();
    let cb = p.b.client().await;
    wait_state(&p.ca, "b", "SYNCHRONIZED", Duration::from_secs(20)).await;
    insert(&p.ca, 56).await.unwrap();
    wait_ids(
        &cb,
        &[51, 56].into(),
        Duration::from_secs(10),
        "b after restart",
    )
    .await;
    for (who, c) in [("a", &p.ca), ("b", &cb)] {
        let have = ids(c).await;
        for id in [53, 54, 55] {
            assert!(
                !have.contains(&id),
                "refused commit {id} is visible on {who}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_of_the_primary_then_failover_keeps_every_acknowledged_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        SYNC,
        3,
        0,
    )
    .await;
    failover_after_sigkill_keeps_acknowledged_commits(&mut p).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_failover_of_an_asynchronous_secondary_reports_the_lsns() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        ASYNC,
        2,
        0,
    )
    .await;
    // Nobody waits for an asynchronous secondary.
    for id in PRELOADED + 1..=100 {
        insert(&p.ca, id).await.unwrap();
    }
    assert_eq!(
        perf_counter(&p.ca, "Mirrored Write Transactions/sec").await,
        0
    );
    assert_eq!(wait_count(&p.ca, "HADR_SYNC_COMMIT").await, 0);
    wait_ids(&p.cb, &all_ids(100), Duration::from_secs(10), "b").await;
    let s = state_of(&p.ca, "b").await.unwrap();
    assert_eq!(s.state, "SYNCHRONIZING", "{s:?}");

    p.a.kill();
    let hardened = state_of(&p.cb, "b").await.unwrap().hardened;
    // A planned failover to an asynchronous replica could lose commits.
    assert_eq!(
        sqlstate(exec(&p.cb, "ALTER AVAILABILITY GROUP ag1 FAILOVER").await),
        "55000"
    );
    let rows =
        p.cb.query(
            "ALTER AVAILABILITY GROUP ag1 FORCE_FAILOVER_ALLOW_DATA_LOSS",
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("FORCE_FAILOVER_ALLOW_DATA_LOSS: {e:?}"));
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    let (db, failover, last_known, loss, epoch): (String, i64, i64, i64, i64) =
        (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
    assert_eq!(db, "walden");
    assert_eq!(epoch, 2);
    assert_eq!(
        failover, hardened,
        "the new epoch starts where b's log ends"
    );
    assert!(last_known >= failover, "{last_known} < {failover}");
    assert_eq!(loss, last_known - failover);

    // b is the primary now; a comes back as its secondary.
    insert(&p.cb, 101).await.unwrap();
    assert!(state_of(&p.cb, "b").await.unwrap().is_primary);
    p.a.start();
    let ca = p.a.client().await;
    wait_ids(&ca, &all_ids(101), Duration::from_secs(20), "old primary a").await;
    assert_eq!(sqlstate(insert(&ca, 102).await), "25006");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_a_planned_failover_takes_both_secondaries_along() {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = Node::local("a", tmp.path());
    let mut b = Node::local("b", tmp.path());
    let mut c = Node::local("c", tmp.path());
    for n in [&mut a, &mut b, &mut c] {
        n.start();
    }
    let (ca, cb, cc) = (a.client().await, b.client().await, c.client().await);
    must(&ca, "CREATE TABLE t (id int PRIMARY KEY, v text)").await;
    for id in 1..=PRELOADED {
        insert(&ca, id).await.unwrap();
    }
    must(
        &ca,
        &format!(
            "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON \
             'a' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 3), \
             'b' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 3), \
             'c' WITH (ENDPOINT_URL = '{}', AVAILABILITY_MODE = ASYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 3)",
            a.url(),
            b.url(),
            c.url()
        ),
    )
    .await;
    wait_state(&ca, "b", "SYNCHRONIZED", Duration::from_secs(20)).await;
    wait_state(&ca, "c", "SYNCHRONIZING", Duration::from_secs(20)).await;
    assert_eq!(replica_states(&ca).await.len(), 3, "a lists a, b and c");

    // Every durable commit waits for b, none for c; both receive everything.
    let mirrored0 = perf_counter(&ca, "Mirrored Write Transactions/sec").await;
    for id in PRELOADED + 1..=100 {
        insert(&ca, id).await.unwrap();
    }
    assert_eq!(
        perf_counter(&ca, "Mirrored Write Transactions/sec").await - mirrored0,
        50
    );
    wait_ids(&cb, &all_ids(100), Duration::from_secs(10), "b").await;
    wait_ids(&cc, &all_ids(100), Duration::from_secs(10), "c").await;
    for cl in [&cb, &cc] {
        assert_eq!(
            sqlstate(exec(cl, "INSERT INTO t VALUES (100000, 'no')").await),
            "25006"
        );
    }

    // Planned failover to b: a and c follow the new primary.
    let rows = tokio::time::timeout(
        Duration::from_secs(30),
        cb.query("ALTER AVAILABILITY GROUP ag1 FAILOVER", &[]),
    )
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("FAILOVER on b: {e:?}"));
    assert_eq!(rows[0].get::<_, i64>("possible_loss_bytes"), 0);
    wait_state(&cb, "a", "SYNCHRONIZED", Duration::from_secs(20)).await;
    wait_state(&cb, "c", "SYNCHRONIZING", Duration::from_secs(20)).await;
    for id in 101..=120 {
        insert(&cb, id).await.unwrap();
    }
    wait_ids(
        &ca,
        &all_ids(120),
        Duration::from_secs(10),
        "a after failover",
    )
    .await;
    wait_ids(
        &cc,
        &all_ids(120),
        Duration::from_secs(10),
        "c after failover",
    )
    .await;
    for (who, cl) in [("a", &ca), ("c", &cc)] {
        assert_eq!(
            sqlstate(exec(cl, "INSERT INTO t VALUES (100001, 'no')").await),
            "25006",
            "a write on {who}, now a secondary of b"
        );
    }
    let on_c = replica_states(&cc).await;
    assert!(
        on_c.len() == 1 && on_c[0].replica == "c" && !on_c[0].is_primary,
        "{on_c:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_waiting_for_a_stalled_secondary_does_not_hold_up_other_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        SYNC,
        3,
        0,
    )
    .await;
    must(
        &p.ca,
        "ALTER DATABASE walden SET DELAYED_DURABILITY = ALLOWED",
    )
    .await;
    let other = p.a.client().await;
    must(&other, "SET synchronous_commit = off").await;

    // b stops: the DDL waits for it until the session timeout...
    p.b.stop();
    let t0 = Instant::now();
    let ddl = {
        let ca = p.a.client().await;
        tokio::spawn(async move { exec(&ca, "CREATE TABLE u (id int PRIMARY KEY)").await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ...but once it is hardened here, other sessions go on: a delayed commit
    // (which waits for no replica) and a read are not queued behind it.
    insert(&other, 51).await.unwrap();
    assert_eq!(int(&other, "SELECT count(*) FROM t").await, 51);
    assert!(
        !ddl.is_finished(),
        "the DDL should still be waiting for b ({:?})",
        t0.elapsed()
    );
    let waited = t0.elapsed();
    assert!(
        waited < Duration::from_millis(2500),
        "a delayed commit and a read took until {waited:?} behind the DDL"
    );
    ddl.await.unwrap().unwrap();
    assert!(t0.elapsed() >= Duration::from_secs(2), "{:?}", t0.elapsed());

    p.b.signal(libc::SIGCONT);
    wait_state(&p.ca, "b", "SYNCHRONIZED", Duration::from_secs(15)).await;
    eventually!(Duration::from_secs(10), "table u on b", {
        exec(&p.cb, "SELECT count(*) FROM u").await.ok()
    });
}
