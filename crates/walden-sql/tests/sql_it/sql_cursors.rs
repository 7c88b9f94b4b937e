//! Cursors through the session API: the extended protocol's path (prepare,
//! parameters, implicit block), what is refused, and DISCARD ALL. The
//! comparison with PostgreSQL is `crates/walden/tests/it/cursors.rs`.

use crate::common;
use common::engine;
use walden_sql::{ErrorKind, SqlSession, Value};

fn tag(s: &mut SqlSession, sql: &str) -> String {
    s.execute_batch(sql)
        .pop()
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .tag
}

fn err(s: &mut SqlSession, sql: &str) -> ErrorKind {
    match s.execute_batch(sql).pop().unwrap() {
        Ok(o) => panic!("{sql} succeeded: {}", o.tag),
        Err(e) => e.kind,
    }
}

#[test]
fn declare_with_parameters_through_prepare() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    tag(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    tag(
        &mut s,
        "INSERT INTO t SELECT x, 'v' || x FROM generate_series(1, 20) AS x",
    );
    tag(&mut s, "BEGIN");
    let p = s
        .prepare(
            "DECLARE c CURSOR FOR SELECT id FROM t WHERE id > $1 ORDER BY id",
            &[None],
        )
        .unwrap();
    assert_eq!(p.param_types.len(), 1);
    assert!(p.columns.is_none());
    s.begin_implicit();
    let out = s.execute_prepared(&p, vec![Value::text("15")]).unwrap();
    assert_eq!(out.tag, "DECLARE CURSOR");
    // A FETCH is described by its cursor's columns.
    let f = s.prepare("FETCH 2 FROM c", &[]).unwrap();
    assert_eq!(f.columns.as_ref().unwrap()[0].name, "id");
    let out = s.execute_prepared(&f, vec![]).unwrap();
    assert_eq!(out.tag, "FETCH 2");
    assert_eq!(out.rows, vec![vec![Value::Int(16)], vec![Value::Int(17)]]);
    s.end_implicit().unwrap();
    // Sync does not end the explicit block: the cursor is still open.
    assert_eq!(tag(&mut s, "MOVE ALL FROM c"), "MOVE 3");
    tag(&mut s, "COMMIT");
    assert_eq!(err(&mut s, "FETCH c"), ErrorKind::UndefinedCursor);
}

#[test]
fn the_extended_protocols_implicit_block_is_no_transaction_block() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    let p = s.prepare("DECLARE c CURSOR FOR SELECT 1", &[]).unwrap();
    s.begin_implicit();
    let e1 = s.execute_prepared(&p, vec![]).unwrap_err();
    assert_eq!(e1.kind, ErrorKind::NoActiveTransaction);
    s.end_implicit().unwrap();
    // WITH HOLD is kept past the Sync's commit.
    let p = s
        .prepare("DECLARE h CURSOR WITH HOLD FOR SELECT 1 AS one", &[])
        .unwrap();
    s.begin_implicit();
    s.execute_prepared(&p, vec![]).unwrap();
    s.end_implicit().unwrap();
    assert_eq!(tag(&mut s, "FETCH ALL FROM h"), "FETCH 1");
    // DISCARD ALL closes every cursor.
    tag(&mut s, "DISCARD ALL");
    assert_eq!(err(&mut s, "FETCH h"), ErrorKind::UndefinedCursor);
}

#[test]
fn what_cursors_cannot_honour_is_refused() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    tag(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    tag(&mut s, "BEGIN");
    assert_eq!(
        err(&mut s, "DECLARE c CURSOR FOR SELECT * FROM t FOR UPDATE"),
        ErrorKind::FeatureNotSupported
    );
    tag(&mut s, "ROLLBACK");
    assert_eq!(
        err(&mut s, "UPDATE t SET v = 'x' WHERE CURRENT OF c"),
        ErrorKind::FeatureNotSupported
    );
    assert_eq!(
        err(&mut s, "DELETE FROM t WHERE CURRENT OF c"),
        ErrorKind::FeatureNotSupported
    );
    // A BINARY cursor's rows are marked for the binary format.
    tag(&mut s, "BEGIN");
    tag(&mut s, "DECLARE b BINARY CURSOR FOR SELECT 1");
    let out = s.execute_batch("FETCH b").pop().unwrap().unwrap();
    assert!(out.binary && out.rows.len() == 1);
    tag(&mut s, "COMMIT");
}
