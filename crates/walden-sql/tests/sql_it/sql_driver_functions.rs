//! The functions drivers and tools call without thinking: advisory locks,
//! settings (set_config, current_setting, RESET, SET LOCAL, transactional
//! SET), pg_sleep, to_regtype, trimming given characters, and now() fixed
//! within a transaction.

use crate::common;
use common::engine;
use std::time::{Duration, Instant};
use walden_sql::{ErrorKind, SqlSession};

fn one(s: &mut SqlSession, sql: &str) -> String {
    let out = s
        .execute_batch(sql)
        .pop()
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let v = &out.rows[0][0];
    if v.is_null() {
        "NULL".into()
    } else {
        v.to_string()
    }
}

fn err(s: &mut SqlSession, sql: &str) -> ErrorKind {
    match s.execute_batch(sql).pop().unwrap() {
        Ok(o) => panic!("{sql} succeeded: {}", o.tag),
        Err(e) => e.kind,
    }
}

#[test]
fn advisory_locks_are_real_session_locks() {
    let e = engine();
    let mut a = e.connect("walden", "u", "").unwrap();
    let mut b = e.connect("walden", "u", "").unwrap();
    one(&mut a, "SELECT pg_advisory_lock(42)");
    assert_eq!(one(&mut b, "SELECT pg_try_advisory_lock(42)"), "f");
    // Two 32-bit keys name a different lock from the 64-bit key.
    assert_eq!(one(&mut b, "SELECT pg_try_advisory_lock(0, 42)"), "t");
    // Re-entrant: a second lock needs a second unlock.
    one(&mut a, "SELECT pg_advisory_lock(42)");
    assert_eq!(one(&mut a, "SELECT pg_advisory_unlock(42)"), "t");
    assert_eq!(one(&mut b, "SELECT pg_try_advisory_lock(42)"), "f");
    assert_eq!(one(&mut a, "SELECT pg_advisory_unlock(42)"), "t");
    assert_eq!(one(&mut a, "SELECT pg_advisory_unlock(42)"), "f");
    assert_eq!(one(&mut b, "SELECT pg_try_advisory_lock(42)"), "t");
    // A blocked pg_advisory_lock waits for the holder's unlock_all.
    // Checked by order, not by a duration, so a slow machine cannot fail
    // it: the waiter gets the lock only after the unlock was sent.
    let waiter = std::thread::spawn(move || {
        one(&mut a, "SELECT pg_advisory_lock(42)");
        (a, Instant::now())
    });
    std::thread::sleep(Duration::from_millis(200));
    let unlocking = Instant::now();
    one(&mut b, "SELECT pg_advisory_unlock_all()");
    let (a, acquired) = waiter.join().unwrap();
    assert!(
        acquired >= unlocking,
        "the waiter got the lock before it was released"
    );
    assert_eq!(one(&mut b, "SELECT pg_try_advisory_lock(42)"), "f");
    // Ending the session releases its locks.
    drop(a);
    assert_eq!(one(&mut b, "SELECT pg_try_advisory_lock(42)"), "t");
    // A cancelled wait ends with the cancel error.
    let mut c = e.connect("walden", "u", "").unwrap();
    let cancel = c.cancel_flag();
    let t = std::thread::spawn(move || err(&mut c, "SELECT pg_advisory_lock(42)"));
    std::thread::sleep(Duration::from_millis(100));
    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(t.join().unwrap(), ErrorKind::Cancelled);
    assert_eq!(
        err(&mut b, "SELECT pg_advisory_lock(1, 2, 3)"),
        ErrorKind::UndefinedFunction
    );
}

#[test]
fn settings_round_trip_through_functions_and_reset() {
    let e = engine();
    let mut s = e.connect("walden", "u", "app").unwrap();
    assert_eq!(
        one(&mut s, "SELECT set_config('search_path', '', false)"),
        ""
    );
    assert_eq!(one(&mut s, "SELECT current_setting('search_path')"), "");
    assert_eq!(
        one(
            &mut s,
            "SELECT set_config('synchronous_commit', 'off', false)"
        ),
        "off"
    );
    assert_eq!(one(&mut s, "SHOW synchronous_commit"), "off");
    assert!(s.engine_session().delayed_default(), "it took effect");
    s.execute_batch("SET application_name = 'other'")
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(
        one(&mut s, "SELECT current_setting('application_name')"),
        "other"
    );
    s.execute_batch("RESET ALL").pop().unwrap().unwrap();
    assert!(!s.engine_session().delayed_default());
    assert_eq!(one(&mut s, "SHOW synchronous_commit"), "on");
    assert_eq!(one(&mut s, "SHOW application_name"), "app");
    assert_eq!(
        err(&mut s, "SELECT current_setting('no_such_setting')"),
        ErrorKind::UndefinedObject
    );
    assert_eq!(
        one(&mut s, "SELECT current_setting('no_such_setting', true)"),
        "NULL"
    );
    assert_eq!(
        err(
            &mut s,
            "SELECT set_config('synchronous_commit', 'maybe', false)"
        ),
        ErrorKind::InvalidParameter
    );
    // What Walden cannot honour is refused, not stored.
    for bad in ["SET DateStyle = 'German'", "SET client_encoding = 'LATIN1'"] {
        assert_eq!(err(&mut s, bad), ErrorKind::FeatureNotSupported, "{bad}");
    }
    // Time zones are honoured (sql_datetime_types.rs); an unknown one is
    // refused as PostgreSQL does.
    assert_eq!(
        err(&mut s, "SET TimeZone = 'Mars/Olympus'"),
        ErrorKind::InvalidParameter
    );
    for good in [
        "SET TimeZone = 'Europe/Berlin'",
        "SET TIME ZONE -5",
        "SET TIME ZONE 'UTC'",
        "SET timezone = 'Etc/UTC'",
        "SET DateStyle = 'ISO, MDY'",
        "SET client_encoding = 'UTF8'",
    ] {
        s.execute_batch(good).pop().unwrap().unwrap();
    }
    s.execute_batch("SET synchronous_commit = off")
        .pop()
        .unwrap()
        .unwrap();
    s.execute_batch("RESET synchronous_commit")
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(one(&mut s, "SHOW synchronous_commit"), "on");
}

#[test]
fn small_functions_do_what_postgresql_does() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    assert_eq!(one(&mut s, "SELECT ltrim('xxhixx', 'x')"), "hixx");
    assert_eq!(one(&mut s, "SELECT rtrim('xxhixy', 'xy')"), "xxhi");
    assert_eq!(one(&mut s, "SELECT btrim('xyhiyx', 'xy')"), "hi");
    assert_eq!(one(&mut s, "SELECT btrim('  hi  ')"), "hi");
    assert_eq!(one(&mut s, "SELECT to_regtype('integer')"), "integer");
    assert_eq!(one(&mut s, "SELECT to_regtype('integer')::oid"), "23");
    assert_eq!(one(&mut s, "SELECT to_regtype('no_such_type')"), "NULL");
    let t = Instant::now();
    one(&mut s, "SELECT pg_sleep(0.2)");
    assert!(t.elapsed() >= Duration::from_millis(200));
    // now() is the transaction's start; clock_timestamp() moves.
    s.execute_batch("BEGIN").pop().unwrap().unwrap();
    let first = one(&mut s, "SELECT now()");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(one(&mut s, "SELECT now()"), first);
    assert_eq!(one(&mut s, "SELECT current_timestamp"), first);
    assert_ne!(one(&mut s, "SELECT clock_timestamp()"), first);
    assert_ne!(one(&mut s, "SELECT statement_timestamp()"), first);
    s.execute_batch("COMMIT").pop().unwrap().unwrap();
    assert_ne!(one(&mut s, "SELECT now()"), first);
    // What psycopg's TypeInfo.fetch reads.
    assert_eq!(
        one(
            &mut s,
            "SELECT typdelim FROM pg_type WHERE oid = to_regtype('int4')"
        ),
        ","
    );
    // asyncpg's pool reset: nothing to close or unlisten.
    for ok in ["CLOSE ALL", "UNLISTEN *"] {
        s.execute_batch(ok).pop().unwrap().unwrap();
    }
    // An embedded session hears its own notification after the commit.
    for ok in ["LISTEN foo", "NOTIFY foo, 'x'"] {
        s.execute_batch(ok).pop().unwrap().unwrap();
    }
    let heard = s.take_notifications();
    assert_eq!(heard.len(), 1);
    assert_eq!(
        (heard[0].channel.as_str(), heard[0].payload.as_str()),
        ("foo", "x")
    );
    assert_eq!(heard[0].pid, s.session_id());
}

#[test]
fn settings_are_transactional_and_set_local_ends_with_the_block() {
    let e = engine();
    let mut s = e.connect("walden", "u", "app").unwrap();
    let ok = |s: &mut SqlSession, sql: &str| {
        s.execute_batch(sql)
            .into_iter()
            .for_each(|r| drop(r.unwrap_or_else(|e| panic!("{sql}: {e}"))))
    };
    // SET LOCAL lasts until COMMIT; the commit itself used it.
    ok(&mut s, "BEGIN");
    ok(&mut s, "SET LOCAL synchronous_commit = off");
    assert!(s.engine_session().delayed_default());
    ok(&mut s, "COMMIT");
    assert!(!s.engine_session().delayed_default());
    // Outside a block it does nothing (PostgreSQL warns).
    let out = s
        .execute_batch("SET LOCAL search_path = x")
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(out.notices.len(), 1);
    assert_eq!(one(&mut s, "SHOW search_path"), "\"$user\", public");
    // A rolled-back block undoes its plain SETs; a committed one keeps them.
    ok(&mut s, "BEGIN");
    ok(&mut s, "SET application_name = 'inside'");
    ok(&mut s, "SELECT set_config('myapp.mem', '8MB', true)");
    assert_eq!(one(&mut s, "SHOW myapp.mem"), "8MB");
    ok(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, "SHOW application_name"), "app");
    assert_eq!(
        one(
            &mut s,
            "SELECT coalesce(current_setting('myapp.mem', true), '')"
        ),
        ""
    );
    ok(&mut s, "BEGIN");
    ok(&mut s, "SET application_name = 'kept'");
    ok(&mut s, "SET LOCAL myapp.mem = '8MB'");
    ok(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SHOW application_name"), "kept");
    assert_eq!(
        one(
            &mut s,
            "SELECT coalesce(current_setting('myapp.mem', true), '')"
        ),
        ""
    );
}

#[test]
fn pg_typeof_names_types_as_postgresql() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    s.execute_batch(
        "CREATE TABLE tt (id int PRIMARY KEY, a int, b bigint, c numeric(5,2), d varchar(5), \
         e char(3), f timestamptz, g text, h double precision, i jsonb, j smallint, k boolean, \
         l date, m interval, n uuid, o bytea, p real, q time, r timestamp)",
    );
    // Expected: PostgreSQL 15's answers to the same statements.
    let cols = "abcdefghijklmnopqr";
    let want = "integer|bigint|numeric|character varying|character|timestamp with time zone|\
                text|double precision|jsonb|smallint|boolean|date|interval|uuid|bytea|real|\
                time without time zone|timestamp without time zone";
    let got: Vec<String> = cols
        .chars()
        .map(|c| {
            one(
                &mut s,
                &format!("SELECT pg_typeof({c}) FROM tt RIGHT JOIN (SELECT 1) z ON true"),
            )
        })
        .collect();
    assert_eq!(got.join("|"), want);
    let want =
        "integer|bigint|numeric|unknown|unknown|text|numeric|timestamp with time zone|bigint";
    let got: Vec<String> = [
        "1",
        "5000000000",
        "1.5",
        "'x'",
        "null",
        "'x'::text",
        "1+2.0",
        "now()",
        "a+b",
    ]
    .iter()
    .map(|x| {
        one(
            &mut s,
            &format!("SELECT pg_typeof({x}) FROM tt RIGHT JOIN (SELECT 1) z ON true"),
        )
    })
    .collect();
    assert_eq!(got.join("|"), want);
}

#[test]
fn syntax_errors_carry_postgresql_positions() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    s.execute_batch("CREATE TABLE ct (id int PRIMARY KEY)");
    // Positions PostgreSQL 15 reports for the same strings (characters from 1
    // of the whole query string).
    for (sql, want) in [
        ("SELECT 1; SELECT * FROM ct WHERE id = = 2", 39),
        ("select 1 frm ct", 14),
        ("SELECT 'é' frm ct", 16),
        ("SELECT 1,\n  2 3", 15),
        (
            "BEGIN; DECLARE c CURSOR FOR SELECT * FROM ct WHERE id = = 2",
            57,
        ),
    ] {
        let err = s
            .execute_batch(sql)
            .into_iter()
            .find_map(|r| r.err())
            .unwrap_or_else(|| panic!("{sql} succeeded"));
        assert_eq!(err.kind, ErrorKind::Syntax, "{sql}");
        let pos = err.fields.as_ref().and_then(|f| f.position);
        assert_eq!(pos, Some(want), "{sql}");
        s.execute_batch("ROLLBACK");
    }
    let p = s.prepare("  select 1 frm ct", &[]).unwrap_err();
    assert_eq!(p.fields.and_then(|f| f.position), Some(16));
}
