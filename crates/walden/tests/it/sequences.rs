//! Sequences against a scratch PostgreSQL 15 with the same SQL: `AS
//! smallint | integer | bigint` sets the bounds, MINVALUE / MAXVALUE / CYCLE
//! are honoured, nextval past a bound fails with 2200H, setval outside them
//! with 22003, and definitions PostgreSQL refuses are refused with its
//! messages. Then the bounds survive a restart (from the log, and from the
//! image after a checkpoint).

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, outcome, run_script, Field, Peers};
use server_support::Serve;
use std::time::Duration;

const FIELDS: &[Field] = &[Field::Detail, Field::Hint];

const SCRIPT: &[&str] = &[
    // The type's bound, reached.
    "CREATE SEQUENCE s AS smallint START WITH 32766",
    "SELECT nextval('s'), nextval('s')",
    "SELECT nextval('s')",
    "SELECT nextval('s')",
    "SELECT setval('s', 40000)",
    "SELECT setval('s', 0)",
    "SELECT setval('s', 100)",
    "SELECT nextval('s')",
    "SELECT setval('s', 32767)",
    "SELECT nextval('s')",
    "SELECT setval('s', 32767, false)",
    "SELECT nextval('s')",
    // integer, descending.
    "CREATE SEQUENCE d AS integer INCREMENT BY -1000000000",
    "SELECT nextval('d'), nextval('d'), nextval('d')",
    "SELECT nextval('d')",
    // pg_dump's form.
    "CREATE SEQUENCE dumped AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1",
    "SELECT setval('dumped', 2147483647)",
    "SELECT nextval('dumped')",
    // Explicit bounds and CYCLE.
    "CREATE SEQUENCE c MINVALUE 5 MAXVALUE 7 CYCLE",
    "SELECT nextval('c'), nextval('c'), nextval('c'), nextval('c'), nextval('c')",
    "CREATE SEQUENCE cd INCREMENT BY -2 MINVALUE -3 MAXVALUE 3 START WITH 1 CYCLE",
    "SELECT nextval('cd'), nextval('cd'), nextval('cd'), nextval('cd'), nextval('cd')",
    "CREATE SEQUENCE m MAXVALUE 3 NO CYCLE",
    "SELECT nextval('m'), nextval('m'), nextval('m')",
    "SELECT nextval('m')",
    "CREATE SEQUENCE lo START WITH -5 MINVALUE -10",
    "SELECT nextval('lo'), nextval('lo')",
    "SELECT setval('lo', -11)",
    "SELECT setval('lo', -10), nextval('lo')",
    "CREATE SEQUENCE big INCREMENT BY 10 MAXVALUE 25 CYCLE",
    "SELECT nextval('big'), nextval('big'), nextval('big'), nextval('big')",
    // The catalog.
    "SELECT c.relname, s.seqtypid, s.seqstart, s.seqincrement, s.seqmax, s.seqmin, s.seqcycle \
     FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid ORDER BY c.relname",
    // What PostgreSQL refuses.
    "CREATE SEQUENCE bad AS smallint MAXVALUE 40000",
    "CREATE SEQUENCE bad AS integer MINVALUE -3000000000",
    "CREATE SEQUENCE bad MINVALUE 10 MAXVALUE 5",
    "CREATE SEQUENCE bad MINVALUE 5 MAXVALUE 5",
    "CREATE SEQUENCE bad START WITH 0 MINVALUE 1",
    "CREATE SEQUENCE bad START WITH 11 MAXVALUE 10",
    "CREATE SEQUENCE bad INCREMENT BY 0",
    "CREATE SEQUENCE bad AS text",
    "CREATE SEQUENCE bad AS smallint INCREMENT BY -1 MAXVALUE 10 MINVALUE -40000",
];

#[test]
fn sequences_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare sequences") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, FIELDS).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, FIELDS).await;
        assert_same(&want, &got);
    });
}

/// A sequence's type, bounds and CYCLE come back after a kill (from the
/// log) and after a checkpoint and clean stop (from the image).
#[test]
fn sequence_bounds_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let check = |conn: String| {
        block_on_within(Duration::from_secs(60), async move {
            let c = connect(&conn).await;
            let got = outcome(
                &c,
                "SELECT seqtypid, seqmin, seqmax, seqcycle FROM pg_sequence ORDER BY seqrelid",
                &[],
            )
            .await;
            assert_eq!(got, "21|-5|5|t; 20|1|9223372036854775807|f; ok 2");
            // Values handed out before the restart are not handed out again;
            // the cycle still wraps, the smallint bound still holds.
            let v = outcome(&c, "SELECT nextval('cy')", &[]).await;
            assert!(v == "-5; ok 1" || v == "5; ok 1", "{v}");
            let e = outcome(&c, "SELECT setval('cy', 6)", &[]).await;
            assert!(e.starts_with("ERROR 22003"), "{e}");
        })
    };
    let mut walden = Serve::start(&dir, &[]);
    let conn = walden.conn_str();
    block_on_within(Duration::from_secs(60), async move {
        let c = connect(&conn).await;
        c.batch_execute(
            "CREATE SEQUENCE cy AS smallint MINVALUE -5 MAXVALUE 5 START WITH 4 CYCLE; \
             CREATE SEQUENCE plain; SELECT nextval('cy'), nextval('cy')",
        )
        .await
        .unwrap();
    });
    walden.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let mut walden = Serve::start(&dir, &[]);
    check(walden.conn_str());
    let conn = walden.conn_str();
    block_on_within(Duration::from_secs(60), async move {
        connect(&conn)
            .await
            .batch_execute("CHECKPOINT")
            .await
            .unwrap();
    });
    walden.signal_and_wait(libc::SIGTERM, Duration::from_secs(20));
    let walden = Serve::start(&dir, &[]);
    check(walden.conn_str());
}
