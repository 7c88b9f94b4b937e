//! Binary COPY against a scratch PostgreSQL 15: `COPY ... TO STDOUT (FORMAT
//! binary)` of a table holding every type both have must be the same bytes;
//! PostgreSQL's binary output loads into Walden with `COPY ... FROM STDIN
//! (FORMAT binary)` and reads back the same; malformed data fails with the
//! same SQLSTATE and message, and the session goes on.

use crate::pg_diff;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use pg_diff::{connect, render_error, runtime, Peers};
use std::time::Duration;
use tokio_postgres::Client;

const TABLE: &str = "CREATE TABLE every (id int PRIMARY KEY, s smallint, b bigint, r real, \
    d double precision, n numeric(10,2), n2 numeric(20,6), t text, v varchar(10), ch char(4), \
    ts timestamp, tz timestamptz, dd date, tm time, iv interval, u uuid, by bytea, bo boolean, \
    j json, jb jsonb)";

const ROWS: &str = "INSERT INTO every VALUES \
    (1, 7, 9000000000, 1.5, -2.25, 12.3, 0.000001, 'héllo', 'vv', 'ab', \
     '2020-01-02 03:04:05.000006', '2020-01-02 03:04:05+02', '1999-12-31', '13:14:15.5', \
     '1 year 2 mons 3 days 04:05:06.7', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x00ff10', true, \
     '{\"a\": [1, 2]}', '{\"b\": {\"c\": null}, \"a\": 1}'), \
    (2, -32768, -9223372036854775808, -0.5, 1e300, -99999999.99, 123456789.123456, '', '', 'x', \
     '1900-01-01 00:00:00', '1970-01-01 00:00:00+00', '2100-02-28', '00:00:00', '-3 days', \
     '00000000-0000-0000-0000-000000000000', '\\x', false, '[]', '[1, \"two\", 3.5]'), \
    (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
     NULL, NULL, NULL, NULL, NULL)";

async fn copy_out(c: &Client, sql: &str) -> Vec<u8> {
    let stream = c
        .copy_out(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    futures::pin_mut!(stream);
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    out
}

/// COPY FROM STDIN with `data`: the tag's count, or the error's code and message.
async fn copy_in(c: &Client, sql: &str, data: Vec<u8>) -> String {
    let sink = match c.copy_in::<_, Bytes>(sql).await {
        Ok(s) => s,
        Err(e) => return render_error(&e, &[]),
    };
    futures::pin_mut!(sink);
    if let Err(e) = sink.send(Bytes::from(data)).await {
        return render_error(&e, &[]);
    }
    match sink.finish().await {
        Ok(n) => format!("COPY {n}"),
        Err(e) => render_error(&e, &[]),
    }
}

#[test]
fn binary_copy_matches_postgres_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare binary COPY") else {
        return;
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let p = connect(&peers.pg_conn()).await;
            let w = connect(&peers.walden_conn()).await;
            for c in [&p, &w] {
                c.batch_execute(TABLE).await.unwrap();
                c.batch_execute(ROWS).await.unwrap();
            }
            let out = "COPY every TO STDOUT (FORMAT binary)";
            let want = copy_out(&p, out).await;
            let got = copy_out(&w, out).await;
            assert_eq!(got, want, "walden:\n{got:02x?}\npostgres:\n{want:02x?}");
            // A query and a column list, old and new spellings.
            for sql in [
                "COPY (SELECT id, t, n FROM every WHERE id < 3 ORDER BY id DESC) TO STDOUT (FORMAT binary)",
                "COPY every (tz, id) TO STDOUT WITH BINARY",
            ] {
                assert_eq!(copy_out(&w, sql).await, copy_out(&p, sql).await, "{sql}");
            }
            // PostgreSQL's bytes load into Walden and read back the same.
            w.batch_execute(&TABLE.replace("every", "loaded")).await.unwrap();
            assert_eq!(
                copy_in(&w, "COPY loaded FROM STDIN (FORMAT binary)", want.clone()).await,
                "COPY 3"
            );
            assert_eq!(
                copy_out(&w, "COPY loaded TO STDOUT (FORMAT binary)").await,
                want
            );
            // Malformed data: the same error as PostgreSQL, and the session goes on.
            let mut wrong_count = want[..19].to_vec();
            wrong_count.extend_from_slice(&[0, 2, 0, 0, 0, 4, 0, 0, 0, 9]);
            let mut short_int = want[..19].to_vec();
            short_int.extend_from_slice(&[0, 20, 0, 0, 0, 2, 0, 9]);
            let mut after_eof = want.clone();
            after_eof.push(0);
            let mut bad_flags = want.clone();
            bad_flags[11] = 0x80;
            // Into empty tables: PostgreSQL checks keys after it has read a
            // batch of rows, Walden at each row.
            for c in [&p, &w] {
                c.batch_execute(&TABLE.replace("every", "empty")).await.unwrap();
            }
            for (what, data) in [
                ("signature", b"PGCOPY\n\xff\r\n\x01".to_vec()),
                ("flags", bad_flags),
                ("truncated", want[..want.len() - 5].to_vec()),
                ("field count", wrong_count),
                ("after EOF", after_eof),
                ("short int", short_int),
            ] {
                let sql = "COPY empty FROM STDIN (FORMAT binary)";
                let pg_says = copy_in(&p, sql, data.clone()).await;
                let walden_says = copy_in(&w, sql, data).await;
                // PostgreSQL reads a too-short value as a protocol error.
                let pg_says = pg_says.replace(
                    "ERROR 08P01 insufficient data left in message",
                    "ERROR 22P03 incorrect binary data format",
                );
                assert_eq!(walden_says, pg_says, "{what}");
            }
            let n: i64 = w
                .query_one("SELECT count(*) FROM empty", &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(n, 0);
            // Options the binary format refuses, as PostgreSQL does.
            for sql in [
                "COPY every TO STDOUT (FORMAT binary, HEADER)",
                "COPY every FROM STDIN (FORMAT binary, DELIMITER ',')",
                "COPY every TO STDOUT (FORMAT binary, NULL 'x')",
            ] {
                let pg_says = p.simple_query(sql).await.map(|_| ()).map_err(|e| render_error(&e, &[]));
                let walden_says = w.simple_query(sql).await.map(|_| ()).map_err(|e| render_error(&e, &[]));
                assert_eq!(walden_says, pg_says, "{sql}");
            }
        })
        .await
        .expect("timed out")
    });
}
