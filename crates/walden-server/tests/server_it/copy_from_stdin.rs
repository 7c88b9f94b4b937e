//! COPY FROM STDIN over the wire, driven by tokio-postgres: a plain load,
//! data in pieces of any size (text, CSV, binary), errors with PostgreSQL
//! 15's SQLSTATE, message and CONTEXT, and COPY in a transaction block.

use tokio_postgres::Client;

use crate::common;
use common::{code, TestServer};

#[tokio::test]
async fn copy_from_stdin() {
    use futures::SinkExt;
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute("CREATE TABLE cp (id int PRIMARY KEY, name text, n bigint)")
        .await
        .unwrap();
    let sink = c.copy_in("COPY cp (id, name, n) FROM STDIN").await.unwrap();
    let mut sink = std::pin::pin!(sink);
    let mut data = String::new();
    for i in 0..1000 {
        data.push_str(&format!("{i}\tname{i}\t{}\n", i * 10));
    }
    data.push_str("1000\t\\N\t\\N\n");
    sink.send(bytes::Bytes::from(data)).await.unwrap();
    let n = sink.finish().await.unwrap();
    assert_eq!(n, 1001);
    let r = c
        .query_one("SELECT count(*), sum(n) FROM cp", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, i64>(0), 1001);
    let r = c
        .query_one("SELECT name FROM cp WHERE id = 1000", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, Option<String>>(0), None);
    // A failing copy reports its error and the session goes on.
    let sink = c.copy_in("COPY cp (id, name, n) FROM STDIN").await.unwrap();
    let mut sink = std::pin::pin!(sink);
    sink.send(bytes::Bytes::from_static(b"1\tdup\t1\n"))
        .await
        .unwrap();
    let e = sink.finish().await.unwrap_err();
    assert_eq!(code(&e), "23505", "{e}");
    let r = c.query_one("SELECT count(*) FROM cp", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 1001);
}

/// Sends `data` to `sql` (a COPY FROM STDIN) in pieces of `piece` bytes:
/// the rows it copied, or the error (SQLSTATE, message, context).
async fn copy_pieces(
    c: &Client,
    sql: &str,
    data: &[u8],
    piece: usize,
) -> Result<u64, (String, String, Option<String>)> {
    use futures::SinkExt;
    let sink = c.copy_in(sql).await.unwrap();
    let mut sink = std::pin::pin!(sink);
    let mut sent = Ok(());
    for p in data.chunks(piece) {
        sent = sink.send(bytes::Bytes::copy_from_slice(p)).await;
        if sent.is_err() {
            break;
        }
    }
    let r = match sent {
        Ok(()) => sink.finish().await,
        Err(e) => Err(e),
    };
    r.map_err(|e| {
        let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
        (
            db.code().code().to_string(),
            db.message().to_string(),
            db.where_().map(str::to_string),
        )
    })
}

/// COPY FROM STDIN's data in pieces of any size (cut inside rows, inside a
/// CSV quoted field, inside a UTF-8 character, inside a binary row) gives
/// the same rows; errors carry PostgreSQL 15's SQLSTATE, message and
/// CONTEXT line (as PostgreSQL 15 gives them for the same input), undo the
/// whole COPY, and the session goes on, in and out of a transaction block.
#[tokio::test]
async fn copy_from_stdin_in_pieces_and_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute(
        "CREATE TABLE cp (id int PRIMARY KEY, name text NOT NULL, n int CHECK (n > 0));
         CREATE TABLE back (id int PRIMARY KEY, name text NOT NULL, n int)",
    )
    .await
    .unwrap();
    let mut text = String::new();
    for i in 1..=3000 {
        text.push_str(&format!("{i}\tnämé {i} ☃\\t\\\\\t{}\n", i % 7 + 1));
    }
    let mut csv = String::from("id,name,n\n");
    for i in 1..=3000 {
        csv.push_str(&format!(
            "{i},\"line one\nline \"\"two\"\", ☃ {i}\",{}\n",
            i % 7 + 1
        ));
    }
    let want: Vec<(i32, String, i32)> = (1..=3000)
        .map(|i| (i, format!("nämé {i} ☃\t\\"), i % 7 + 1))
        .collect();
    let want_csv: Vec<(i32, String, i32)> = (1..=3000)
        .map(|i| (i, format!("line one\nline \"two\", ☃ {i}"), i % 7 + 1))
        .collect();
    let rows = |sql: &'static str| {
        let c = &c;
        async move {
            c.query(sql, &[])
                .await
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r.get::<_, i32>(0),
                        r.get::<_, String>(1),
                        r.get::<_, i32>(2),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    for piece in [1, 3, 7, 4096, 1 << 20] {
        c.batch_execute("TRUNCATE cp").await.unwrap();
        let n = copy_pieces(&c, "COPY cp FROM STDIN", text.as_bytes(), piece).await;
        assert_eq!(n, Ok(3000), "text in pieces of {piece}");
        assert_eq!(
            rows("SELECT * FROM cp ORDER BY id").await,
            want,
            "piece {piece}"
        );
        c.batch_execute("TRUNCATE cp").await.unwrap();
        let sql = "COPY cp FROM STDIN WITH (FORMAT csv, HEADER)";
        let n = copy_pieces(&c, sql, csv.as_bytes(), piece).await;
        assert_eq!(n, Ok(3000), "csv in pieces of {piece}");
        assert_eq!(
            rows("SELECT * FROM cp ORDER BY id").await,
            want_csv,
            "piece {piece}"
        );
    }
    // Binary: what COPY TO wrote, read back in pieces.
    let bin = {
        use futures::StreamExt;
        let out = c
            .copy_out("COPY cp TO STDOUT (FORMAT binary)")
            .await
            .unwrap();
        let mut out = std::pin::pin!(out);
        let mut b = Vec::new();
        while let Some(chunk) = out.next().await {
            b.extend_from_slice(&chunk.unwrap());
        }
        b
    };
    for piece in [1, 5, 4096, 1 << 20] {
        c.batch_execute("TRUNCATE back").await.unwrap();
        let n = copy_pieces(&c, "COPY back FROM STDIN (FORMAT binary)", &bin, piece).await;
        assert_eq!(n, Ok(3000), "binary in pieces of {piece}");
        assert_eq!(
            rows("SELECT * FROM back ORDER BY id").await,
            want_csv,
            "piece {piece}"
        );
    }
    c.batch_execute("TRUNCATE back").await.unwrap();
    let mut cut = bin.clone();
    cut.truncate(bin.len() - 5);
    let e = copy_pieces(&c, "COPY back FROM STDIN (FORMAT binary)", &cut, 100).await;
    assert_eq!(
        e.map_err(|e| (e.0, e.1)),
        Err(("22P04".into(), "unexpected EOF in COPY data".into()))
    );

    // Errors, as PostgreSQL 15 reports the same input.
    c.batch_execute("TRUNCATE cp").await.unwrap();
    let cases: &[(&str, &str, (&str, &str, &str))] = &[
        (
            "COPY cp FROM STDIN",
            "1\tx\t1\n2\ty\tx\n",
            (
                "22P02",
                "invalid input syntax for type integer: \"x\"",
                "COPY cp, line 2, column n: \"x\"",
            ),
        ),
        (
            "COPY cp FROM STDIN",
            "1\tx\t1\n2\ty\n",
            (
                "22P04",
                "missing data for column \"n\"",
                "COPY cp, line 2: \"2\ty\"",
            ),
        ),
        (
            "COPY cp FROM STDIN",
            "1\tx\t1\t4\n",
            (
                "22P04",
                "extra data after last expected column",
                "COPY cp, line 1: \"1\tx\t1\t4\"",
            ),
        ),
        (
            "COPY cp FROM STDIN",
            "1\tx\t1\n1\ty\t1\n",
            (
                "23505",
                "duplicate key value violates unique constraint \"cp_pkey\"",
                "COPY cp, line 2",
            ),
        ),
        (
            "COPY cp FROM STDIN",
            "1\t\\N\t1\n",
            (
                "23502",
                "null value in column \"name\" of relation \"cp\" violates not-null constraint",
                "COPY cp, line 1: \"1\t\\N\t1\"",
            ),
        ),
        (
            "COPY cp FROM STDIN",
            "1\tx\t-1\n",
            (
                "23514",
                "new row for relation \"cp\" violates check constraint \"cp_n_check\"",
                "COPY cp, line 1: \"1\tx\t-1\"",
            ),
        ),
        (
            "COPY cp FROM STDIN (FORMAT csv)",
            "1,x,1\n2,\"a\nb\",zz\n",
            (
                "22P02",
                "invalid input syntax for type integer: \"zz\"",
                "COPY cp, line 3, column n: \"zz\"",
            ),
        ),
        (
            "COPY cp FROM STDIN (FORMAT csv, HEADER)",
            "a,b,c\n1,x,1\n2,\"a\nb\",1\n3,y,q\n",
            (
                "22P02",
                "invalid input syntax for type integer: \"q\"",
                "COPY cp, line 5, column n: \"q\"",
            ),
        ),
    ];
    for (sql, data, (code, message, context)) in cases {
        for piece in [1, 1 << 20] {
            let e = copy_pieces(&c, sql, data.as_bytes(), piece).await;
            assert_eq!(
                e,
                Err((
                    code.to_string(),
                    message.to_string(),
                    Some(context.to_string())
                )),
                "{sql} {data:?}"
            );
            let r = c.query_one("SELECT count(*) FROM cp", &[]).await.unwrap();
            assert_eq!(r.get::<_, i64>(0), 0, "the whole COPY is undone: {data:?}");
        }
    }
    for piece in [1, 1 << 20] {
        let e = copy_pieces(&c, "COPY cp FROM STDIN", b"1\tx\t1\n2\ty\xff\t1\n", piece).await;
        let want = "invalid byte sequence for encoding \"UTF8\": 0xff";
        assert_eq!(
            e,
            Err(("22021".into(), want.into(), Some("COPY cp, line 2".into())))
        );
    }
    // A bad row far into the data: everything before it is undone too.
    let mut long = text.clone();
    long.push_str("3001\tlast\t0\n");
    let e = copy_pieces(&c, "COPY cp FROM STDIN", long.as_bytes(), 4096).await;
    assert_eq!(
        e.map_err(|e| e.2),
        Err(Some("COPY cp, line 3001: \"3001\tlast\t0\"".into()))
    );
    let r = c.query_one("SELECT count(*) FROM cp", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 0);

    // In a transaction block: a COPY's rows are the block's, and a failed
    // COPY fails the block.
    c.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        copy_pieces(&c, "COPY cp FROM STDIN", b"1\ta\t1\n", 3).await,
        Ok(1)
    );
    let r = c.query_one("SELECT count(*) FROM cp", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 1);
    c.batch_execute("ROLLBACK").await.unwrap();
    let r = c.query_one("SELECT count(*) FROM cp", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 0);
    c.batch_execute("BEGIN").await.unwrap();
    let e = copy_pieces(&c, "COPY cp FROM STDIN", b"1\ta\tz\n", 3).await;
    assert_eq!(e.map_err(|e| e.0), Err("22P02".into()));
    let e = c.query_one("SELECT 1", &[]).await.unwrap_err();
    assert_eq!(code(&e), "25P02");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        copy_pieces(&c, "COPY cp FROM STDIN", b"7\tb\t1\n\\.\nignored\n", 2).await,
        Ok(1)
    );
    let r = c.query_one("SELECT count(*) FROM cp", &[]).await.unwrap();
    assert_eq!(r.get::<_, i64>(0), 1);
}
