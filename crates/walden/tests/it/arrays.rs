//! Arrays through the server, against a scratch PostgreSQL 15 with the
//! same SQL: the text format (simple protocol, statement by statement:
//! rows, SQLSTATE, message), the binary format with typed parameters and
//! results (tokio-postgres binds a `Vec` as an array parameter and reads
//! one back; the RowDescription and ParameterDescription type OIDs must be
//! PostgreSQL's), COPY in text and binary, and restarts (after a kill, from
//! the log; after a checkpoint, from the image).

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, connect, outcome, postgres_conn, run_script, runtime, start_postgres};
use server_support::Serve;
use std::time::Duration;
use tokio_postgres::binary_copy::{BinaryCopyInWriter, BinaryCopyOutStream};
use tokio_postgres::types::{ToSql, Type};

const SCRIPT: &[&str] = &[
    // Both in UTC, so timestamptz text agrees.
    "SET TIME ZONE 'UTC'",
    "CREATE TABLE a (id int PRIMARY KEY, xs int[], ts text[], bs bigint[], fs float8[], \
     ns numeric(6,2)[], vs varchar(5)[], us uuid[], ds date[], tss timestamp[], tzs timestamptz[], \
     bools bool[])",
    "INSERT INTO a VALUES (1, '{1,2,3}', '{a,\"b c\",NULL,\"\",\"x\\\\y\",\"q\\\"\"}', '{9000000000}', \
     '{1.5,-0.25,Infinity}', '{1.5,2}', '{x,yy}', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', \
     '{2024-02-29}', '{\"2024-01-02 03:04:05.5\"}', '{\"2024-01-02 03:04:05+02\"}', '{t,f,NULL}')",
    "INSERT INTO a (id, xs, ts) VALUES (2, ARRAY[4,NULL], ARRAY['q']), (3, '{}', '{}')",
    "INSERT INTO a (id, xs) SELECT 4, array_agg(g ORDER BY g DESC) FROM generate_series(1, 3) g",
    "SELECT * FROM a ORDER BY id",
    "SELECT id, xs[1], xs[3], ts[2], cardinality(xs), array_length(xs, 1), array_upper(xs, 1), \
     array_lower(xs, 1) FROM a ORDER BY id",
    "SELECT id FROM a WHERE 2 = ANY (xs) ORDER BY id",
    "SELECT id FROM a WHERE 4 <> ALL (xs) ORDER BY id",
    "SELECT id FROM a WHERE xs @> '{1,3}' ORDER BY id",
    "SELECT id FROM a WHERE xs <@ ARRAY[1,2,3,4] ORDER BY id",
    "SELECT id FROM a WHERE xs && '{3,4}' ORDER BY id",
    "SELECT id FROM a WHERE xs = '{1,2,3}'",
    "SELECT id, xs || 9, 0 || xs, xs || ARRAY[7,8] FROM a ORDER BY id",
    "SELECT array_to_string(ts, ',', '*'), array_to_string(xs, '-') FROM a ORDER BY id",
    "SELECT string_to_array('a,b,,c', ','), string_to_array('a,b,,c', ',', '')",
    "SELECT xs FROM a ORDER BY xs",
    "SELECT * FROM unnest(ARRAY[10,20,NULL]) WITH ORDINALITY AS u(v, n)",
    "SELECT v * 2 FROM unnest('{5,6}'::int[]) u(v)",
    "SELECT array(SELECT id FROM a ORDER BY id)",
    "UPDATE a SET xs = xs || 100 WHERE id = 2",
    "SELECT xs FROM a WHERE id = 2",
    "SELECT '{1,2'::int[]",
    // (A bad element, '{1,x}'::int[], is 22P02 in both; Walden's message
    // wording for scalar input differs, so it is checked in sql_arrays.rs.)
    "SELECT ARRAY[1,2] || '3'",
    "SELECT '{\"a b\",NULL,\"NULL\"}'::text[], '{ 1 , 2 }'::int[]",
    "CREATE TABLE k (k int[] PRIMARY KEY, v text)",
    "INSERT INTO k VALUES ('{1,2}', 'a'), ('{1}', 'b'), ('{1,NULL}', 'c'), ('{}', 'd')",
    "SELECT * FROM k ORDER BY k",
    "SELECT v FROM k WHERE k = '{1,NULL}'",
    "INSERT INTO k VALUES ('{1,2}', 'dup')",
    "SELECT attname, format_type(atttypid, atttypmod), attndims FROM pg_attribute \
     WHERE attrelid = 'a'::regclass AND attnum > 0 ORDER BY attnum",
    "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'a' \
     ORDER BY ordinal_position",
    "SELECT typname, typelem, typcategory FROM pg_type WHERE oid IN (1007, 1009, 1015, 2951) \
     ORDER BY oid",
    "SELECT t.typname, e.typname FROM pg_type t JOIN pg_type e ON e.oid = t.typelem \
     WHERE t.typname = '_int8'",
    "SELECT pg_typeof(xs), pg_typeof(ts[1]) FROM a WHERE id = 1",
];

#[test]
fn arrays_in_text_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = start_postgres(tmp.path(), "to compare arrays") else {
        return;
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let want = run_script(&postgres_conn(&pg), SCRIPT, &[]).await;
            let got = run_script(&walden.conn_str(), SCRIPT, &[]).await;
            assert_same(&want, &got);
        })
        .await
        .expect("timed out")
    });
}

/// Typed values through the binary format: parameters bound from `Vec`s
/// (PostgreSQL's array OIDs in Bind), results read as `Vec`s, and the type
/// OIDs both servers describe.
async fn binary_round_trip(conn: &str) -> Vec<String> {
    let c = connect(conn).await;
    let mut out = Vec::new();
    c.batch_execute(
        "CREATE TABLE b (id int PRIMARY KEY, xs int[], ts text[], bs bigint[], fs float8[], \
         bools bool[], vs varchar[])",
    )
    .await
    .unwrap();
    let ins = c
        .prepare("INSERT INTO b VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .await
        .unwrap();
    out.push(format!(
        "insert params {:?}",
        ins.params().iter().map(Type::oid).collect::<Vec<_>>()
    ));
    let xs: Vec<Option<i32>> = vec![Some(1), None, Some(-3)];
    let ts: Vec<Option<String>> = vec![Some("a,b".into()), None, Some("".into()), Some("{".into())];
    let bs: Vec<i64> = vec![i64::MAX, i64::MIN];
    let fs: Vec<f64> = vec![1.5, -0.0, f64::INFINITY];
    let bools: Vec<bool> = vec![true, false];
    let vs: Vec<String> = vec![];
    let params: [&(dyn ToSql + Sync); 7] = [&1i32, &xs, &ts, &bs, &fs, &bools, &vs];
    c.execute(&ins, &params).await.unwrap();
    let sel = c
        .prepare("SELECT xs, ts, bs, fs, bools, vs, xs[2], cardinality(ts) FROM b WHERE id = $1")
        .await
        .unwrap();
    out.push(format!(
        "select columns {:?}",
        sel.columns()
            .iter()
            .map(|c| c.type_().oid())
            .collect::<Vec<_>>()
    ));
    let row = c.query_one(&sel, &[&1i32]).await.unwrap();
    out.push(format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        row.get::<_, Vec<Option<i32>>>(0),
        row.get::<_, Vec<Option<String>>>(1),
        row.get::<_, Vec<i64>>(2),
        row.get::<_, Vec<f64>>(3),
        row.get::<_, Vec<bool>>(4),
        row.get::<_, Vec<String>>(5),
        row.get::<_, Option<i32>>(6),
        row.get::<_, i32>(7),
    ));
    // `= ANY ($1)` takes an array of the column's type.
    let any = c
        .prepare("SELECT id FROM b WHERE id = ANY ($1)")
        .await
        .unwrap();
    out.push(format!(
        "any params {:?}",
        any.params().iter().map(Type::oid).collect::<Vec<_>>()
    ));
    let ids: Vec<i32> = vec![5, 1];
    let rows = c.query(&any, &[&ids]).await.unwrap();
    out.push(format!(
        "any -> {:?}",
        rows.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>()
    ));
    // An array of the wrong element type is refused.
    let wrong: Vec<i64> = vec![1];
    let e = c
        .query("SELECT $1::int[]", &[&wrong])
        .await
        .map(|_| "ok".to_string())
        .unwrap_or_else(|e| e.to_string());
    out.push(format!("wrong element type -> {}", !e.is_empty()));
    let r = c
        .query_one("SELECT array_agg(id), ARRAY['x', NULL] FROM b", &[])
        .await
        .unwrap();
    out.push(format!(
        "{:?} {:?}",
        r.get::<_, Vec<i32>>(0),
        r.get::<_, Vec<Option<String>>>(1)
    ));
    out
}

#[test]
fn arrays_in_binary_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = start_postgres(tmp.path(), "to compare arrays") else {
        return;
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let want = binary_round_trip(&postgres_conn(&pg)).await;
            let got = binary_round_trip(&walden.conn_str()).await;
            assert_same(&want, &got);
        })
        .await
        .expect("timed out")
    });
}

/// COPY of array columns, text and binary, in and out.
async fn copy_round_trip(conn: &str) -> Vec<String> {
    use futures::{pin_mut, SinkExt, TryStreamExt};
    let c = connect(conn).await;
    let mut out = Vec::new();
    c.batch_execute("CREATE TABLE cp (id int PRIMARY KEY, xs int[], ts text[])")
        .await
        .unwrap();
    let sink = c.copy_in("COPY cp FROM STDIN").await.unwrap();
    pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(
        b"1\t{1,2,NULL}\t{a,\"b c\"}\n2\t\\N\t{}\n",
    ))
    .await
    .unwrap();
    sink.finish().await.unwrap();
    let sink = c
        .copy_in("COPY cp FROM STDIN (FORMAT BINARY)")
        .await
        .unwrap();
    let w = BinaryCopyInWriter::new(sink, &[Type::INT4, Type::INT4_ARRAY, Type::TEXT_ARRAY]);
    pin_mut!(w);
    let xs: Vec<Option<i32>> = vec![Some(7), None];
    let ts: Vec<String> = vec!["z".into()];
    w.as_mut().write(&[&3i32, &xs, &ts]).await.unwrap();
    w.finish().await.unwrap();
    let text = c
        .copy_out("COPY cp TO STDOUT")
        .await
        .unwrap()
        .try_fold(Vec::new(), |mut acc, b| async move {
            acc.extend_from_slice(&b);
            Ok(acc)
        })
        .await
        .unwrap();
    out.push(String::from_utf8_lossy(&text).into_owned());
    let stream = c
        .copy_out("COPY (SELECT id, xs, ts FROM cp ORDER BY id) TO STDOUT (FORMAT BINARY)")
        .await
        .unwrap();
    let rows = BinaryCopyOutStream::new(stream, &[Type::INT4, Type::INT4_ARRAY, Type::TEXT_ARRAY]);
    pin_mut!(rows);
    while let Some(r) = rows.try_next().await.unwrap() {
        out.push(format!(
            "{} {:?} {:?}",
            r.get::<i32>(0),
            r.get::<Option<Vec<Option<i32>>>>(1),
            r.get::<Option<Vec<String>>>(2)
        ));
    }
    out
}

#[test]
fn arrays_copy_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = start_postgres(tmp.path(), "to compare arrays") else {
        return;
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let want = copy_round_trip(&postgres_conn(&pg)).await;
            let got = copy_round_trip(&walden.conn_str()).await;
            assert_same(&want, &got);
        })
        .await
        .expect("timed out")
    });
}

#[test]
fn arrays_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(&c, "SELECT id, xs, ts FROM r ORDER BY xs", &[]).await,
            "2|{}|NULL; 1|{1,NULL,3}|{\"a b\",NULL}; ok 2"
        );
        assert_eq!(
            outcome(&c, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'r'::regclass AND attnum = 3", &[]).await,
            "character varying(4)[]; ok 1"
        );
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TABLE r (id int PRIMARY KEY, xs int[], ts varchar(4)[]); \
                 INSERT INTO r VALUES (1, '{1,NULL,3}', '{\"a b\",NULL}'), (2, '{}', NULL)",
            )
            .await
            .unwrap();
        })
        .await
        .expect("timed out")
    });
    // Killed, then checkpointed and stopped: from the log, then from the image.
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}
