//! Run-time parameters against a scratch PostgreSQL 15: names PostgreSQL
//! does not know are refused with its 42704 (SET, SHOW, RESET,
//! current_setting), parameters fixed at server start with its 55P02,
//! dotted placeholder names work as in PostgreSQL, and the parameters
//! Walden accepts read back alike, and the output settings Walden follows
//! (extra_float_digits, bytea_output, a numeric TimeZone) give PostgreSQL's
//! text. Where Walden has no counterpart for a
//! parameter PostgreSQL has (planner and memory knobs), or for one of its
//! values, it refuses with 0A000 instead of storing it and going on.
//! Startup-message parameters (`options=-c ...`, what pgjdbc sends) are
//! set as PostgreSQL sets them, and `client_min_messages` filters notices.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, block_on_within, connect, outcome, run_script, Field, Peers};
use server_support::{missing_tool, run_with_deadline};
use std::process::Command;
use std::time::Duration;

const SAME: &[&str] = &[
    "SET no_such_parameter = 1",
    "SHOW no_such_parameter",
    "RESET no_such_parameter",
    "SELECT current_setting('no_such_parameter')",
    "SELECT current_setting('no_such_parameter', true) IS NULL",
    "SET server_version = '16'",
    "SET max_connections = 5",
    "SET wal_level = minimal",
    // Placeholders an application defines for itself.
    "SET myapp.tenant = 'acme'",
    "SHOW myapp.tenant",
    "SELECT current_setting('myapp.tenant')",
    "SELECT set_config('myapp.user_id', '42', false)",
    "SHOW myapp.user_id",
    // Accepted with the values that describe what Walden does.
    "SHOW extra_float_digits",
    "SET extra_float_digits = 3",
    "SHOW extra_float_digits",
    "SELECT 0.1::float8 + 0.2::float8",
    "SHOW standard_conforming_strings",
    "SET standard_conforming_strings = on",
    "SHOW bytea_output",
    "SHOW client_min_messages",
    "SET client_min_messages = warning",
    "SHOW client_min_messages",
    "SET client_min_messages = loud",
    "SET check_function_bodies = false",
    "SHOW check_function_bodies",
    "SET row_security = off",
    "SET default_tablespace = ''",
    "SET default_table_access_method = heap",
    "SET xmloption = content",
    "SET intervalstyle = postgres",
    "SET synchronize_seqscans = off",
    "SET statement_timeout = 0",
    "SET lock_timeout = 0",
    "SET search_path TO DEFAULT",
    "SET extra_float_digits TO DEFAULT",
    "SHOW extra_float_digits",
    // Output settings Walden follows: fewer float digits (C's %g), bytea
    // in escape format, a POSIX offset string as the session zone (hours
    // west of UTC).
    "SET extra_float_digits = 0",
    "SELECT 0.1::float8 + 0.2::float8, 1004.3000000000004::float8, 1e-5::float8, \
     1234567890123456::float8, 431.7726::float4, -0.0::float8, sqrt(1004.3::float8)",
    "SELECT (0.1::float8 + 0.2::float8)::text",
    "SET extra_float_digits = -4",
    "SELECT 1/3::float8, 2/3::float4",
    "SET extra_float_digits = 1",
    "SET bytea_output = escape",
    "SHOW bytea_output",
    "SELECT E'\\\\xDeAdBeEf'::bytea, E'De\\\\123dBeEf'::bytea, '\\x5c41'::bytea, \
     ''::bytea, '\\x00ff7e7f'::bytea::text",
    "SET bytea_output = hex",
    "SET timezone = '+02:00'",
    "SHOW timezone",
    "SELECT '2024-07-01 12:00:00+00'::timestamptz::text",
    "SET timezone = '04:30'",
    "SELECT '2024-07-01 12:00:00+00'::timestamptz::text",
    "SET timezone = '-5'",
    "SELECT '2024-07-01 12:00:00+00'::timestamptz::text",
    "RESET timezone",
];

/// PostgreSQL takes these; Walden has no counterpart and says so.
const REFUSED: &[&str] = &[
    "SET enable_seqscan = off",
    "SET work_mem = '64MB'",
    "SET random_page_cost = 1.1",
    "SET standard_conforming_strings = off",
    "SET datestyle = 'postgres'",
    "SET jit = on",
    "SELECT set_config('enable_hashjoin', 'off', false)",
];

#[test]
fn parameters_match_postgres_and_unsupported_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare run-time parameters") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SAME, &[Field::Detail]).await;
        let got = run_script(&peers.walden_conn(), SAME, &[Field::Detail]).await;
        assert_same(&want, &got);

        let pg = connect(&peers.pg_conn()).await;
        let walden = connect(&peers.walden_conn()).await;
        for sql in REFUSED {
            let p = outcome(&pg, sql, &[]).await;
            assert!(!p.starts_with("ERROR"), "PostgreSQL takes {sql}: {p}");
            let w = outcome(&walden, sql, &[]).await;
            assert!(w.starts_with("ERROR 0A000"), "{sql}: {w}");
        }
        // The refusals changed nothing; the session goes on.
        let w = outcome(&walden, "SHOW standard_conforming_strings", &[]).await;
        assert_eq!(w, "on; ok 0");
    });
}

/// `options=-c name=value` in the startup message: set for the session,
/// what RESET returns to; an unknown or unsupported one ends the
/// connection with PostgreSQL's FATAL.
#[test]
fn startup_parameters_are_set_as_postgres_sets_them() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare startup parameters") else {
        return;
    };
    let opts = "options='-c TimeZone=America/New_York -c statement_timeout=1234 \
                --extra-float-digits=2 -c myapp.tenant=acme'";
    let script: &[&str] = &[
        "SHOW TimeZone",
        "SHOW statement_timeout",
        "SHOW extra_float_digits",
        "SHOW myapp.tenant",
        "SELECT '2024-07-01 12:00:00+00'::timestamptz::text",
        "SET TimeZone = 'UTC'",
        "RESET TimeZone",
        "SHOW TimeZone",
    ];
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&format!("{} {opts}", peers.pg_conn()), script, &[]).await;
        let got = run_script(&format!("{} {opts}", peers.walden_conn()), script, &[]).await;
        assert_same(&want, &got);
        assert!(got[0].ends_with("America/New_York; ok 0"), "{}", got[0]);

        for (bad, code) in [
            ("options='-c no_such_parameter=1'", "42704"),
            ("options='-c enable_seqscan=off'", "0A000"),
        ] {
            if code == "42704" {
                let e = tokio_postgres::connect(
                    &format!("{} {bad}", peers.pg_conn()),
                    tokio_postgres::NoTls,
                )
                .await
                .err()
                .expect("PostgreSQL refuses it");
                assert_eq!(e.code().map(|c| c.code()), Some(code), "{e}");
            }
            let e = tokio_postgres::connect(
                &format!("{} {bad}", peers.walden_conn()),
                tokio_postgres::NoTls,
            )
            .await
            .err()
            .unwrap_or_else(|| panic!("Walden accepted {bad}"));
            assert_eq!(e.code().map(|c| c.code()), Some(code), "{bad}: {e}");
        }
        // The server goes on.
        let c = connect(&peers.walden_conn()).await;
        assert_eq!(outcome(&c, "SELECT 1", &[]).await, "1; ok 1");
    });
}

/// psql prints NOTICEs on stderr; `client_min_messages = warning` hides
/// them, on both servers.
#[test]
fn client_min_messages_filters_notices() {
    if !server_support::have("psql", &["--version"]) {
        missing_tool("psql is needed to read notices");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare notices") else {
        return;
    };
    let sql = "DROP TABLE IF EXISTS nowhere; SET client_min_messages = warning; \
               DROP TABLE IF EXISTS nowhere2; RESET client_min_messages; \
               DROP TABLE IF EXISTS nowhere3;";
    let stderr = |conn: String| {
        let out = run_with_deadline(
            Command::new("psql").args(["-X", "-q", "-d", &conn, "-c", sql]),
            Duration::from_secs(30),
        );
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let want = stderr(peers.pg_conn());
    let got = stderr(peers.walden_conn());
    assert!(
        want.contains("nowhere3") && !want.contains("nowhere2"),
        "{want}"
    );
    assert!(
        got.contains("nowhere\"") || got.contains("nowhere,"),
        "{got}"
    );
    assert!(
        got.contains("nowhere3") && !got.contains("nowhere2"),
        "{got}"
    );
}
