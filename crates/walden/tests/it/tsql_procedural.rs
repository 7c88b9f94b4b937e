//! T-SQL batches and procedures through the server, as a SQL Server DBA's
//! scripts send them (each batch one simple query): the T-SQL functions
//! that used to answer wrongly, statements separated by line breaks,
//! variables, IF / WHILE / BREAK / CONTINUE, PRINT, @@ROWCOUNT,
//! @@TRANCOUNT with nested BEGIN TRAN, procedures with defaults, OUTPUT
//! parameters and return codes, the delayed-durability experiments' loops,
//! runaway recursion and loops, and procedures surviving a kill.

use crate::pg_diff;
use crate::server_support;
use crate::tsql_support;

use pg_diff::runtime;
use server_support::Serve;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::{AsyncMessage, Client, NoTls};
use tsql_support::run;

/// A client whose notices (PRINT) are collected.
async fn client(conn: &str) -> (Client, Arc<Mutex<Vec<String>>>) {
    let (client, mut c) = tokio_postgres::connect(conn, NoTls).await.unwrap();
    let notes = Arc::new(Mutex::new(Vec::new()));
    let n = notes.clone();
    tokio::spawn(async move {
        while let Some(Ok(m)) = std::future::poll_fn(|cx| c.poll_message(cx)).await {
            if let AsyncMessage::Notice(e) = m {
                n.lock().unwrap().push(e.message().to_string());
            }
        }
    });
    (client, notes)
}

fn with_server(f: impl FnOnce(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>) {
    tsql_support::with_server(Duration::from_secs(240), f)
}

#[test]
fn tsql_functions_that_answered_wrongly() {
    with_server(|conn| {
        Box::pin(async move {
            let (c, _) = client(&conn).await;
            // LEN ignores trailing blanks, not leading ones.
            assert_eq!(
                run(&c, "SELECT LEN(N'123   '), LEN('  ab '), LEN('')").await,
                "rows 3,4,0"
            );
            // REPLICATE with a negative count is NULL.
            assert_eq!(
                run(
                    &c,
                    "SELECT REPLICATE('abc', -3), REPLICATE('ab', 2), REPLICATE('ab', 0)"
                )
                .await,
                "rows NULL,abab,"
            );
            // GETDATE() is a datetime: no offset.
            assert_eq!(
                run(
                    &c,
                    "SELECT pg_typeof(GETDATE())::text, pg_typeof(SYSDATETIME())::text"
                )
                .await,
                "rows timestamp without time zone,timestamp without time zone"
            );
            run(&c, "CREATE TABLE n (a int)").await;
            run(&c, "INSERT INTO n VALUES (1), (2), (3)").await;
            // TOP (NULL) is an error, as in SQL Server (LIMIT NULL is no limit).
            assert_eq!(run(&c, "SELECT TOP (NULL) a FROM n").await, "ERROR 22023");
            assert_eq!(
                run(&c, "DECLARE @n int\nSELECT TOP (@n) a FROM n").await,
                "ERROR 22023"
            );
            assert_eq!(
                run(
                    &c,
                    "DECLARE @n int = 2\nSELECT TOP (@n) a FROM n ORDER BY a"
                )
                .await,
                "rows 1 2"
            );
            // OUTPUT returns the rows written (tsql_output_identity.rs
            // covers it in full).
            assert_eq!(
                run(&c, "INSERT INTO n OUTPUT inserted.a VALUES (4)").await,
                "rows 4"
            );
            assert_eq!(
                run(&c, "DELETE FROM n OUTPUT deleted.a WHERE a = 4").await,
                "rows 4"
            );
            assert_eq!(run(&c, "SELECT count(*) FROM n").await, "rows 3");
            // INSERT without a column list skips a T-SQL IDENTITY column
            // (not a SERIAL one, as in PostgreSQL).
            run(&c, "CREATE TABLE idt (id int IDENTITY(1,1), v int, w int)").await;
            assert_eq!(
                run(&c, "INSERT INTO idt VALUES (2, 3), (4, 5)").await,
                "ok 2"
            );
            assert_eq!(run(&c, "INSERT INTO idt SELECT 6, 7").await, "ok 1");
            assert_eq!(
                run(&c, "SELECT id, v, w FROM idt ORDER BY id").await,
                "rows 1,2,3 2,4,5 3,6,7"
            );
            assert_eq!(
                run(&c, "INSERT INTO idt VALUES (1, 2, 3)").await,
                "ERROR 42601"
            );
            run(&c, "CREATE TABLE ser (id serial, v int)").await;
            assert_eq!(run(&c, "INSERT INTO ser VALUES (5, 6)").await, "ok 1");
            assert_eq!(run(&c, "SELECT id, v FROM ser").await, "rows 5,6");
        })
    });
}

/// TOP ... WITH TIES and TOP ... PERCENT count as SQL Server counts
/// (they were read as a plain TOP n).
#[test]
fn top_with_ties_and_percent() {
    with_server(|conn| {
        Box::pin(async move {
            let (c, _) = client(&conn).await;
            run(&c, "CREATE TABLE tp (a int, b int)").await;
            run(
                &c,
                "INSERT INTO tp VALUES (1, 1), (1, 2), (2, 3), (3, 4), (3, 5)",
            )
            .await;
            assert_eq!(
                run(&c, "SELECT TOP 1 WITH TIES a FROM tp ORDER BY a").await,
                "rows 1 1"
            );
            assert_eq!(
                run(&c, "SELECT TOP (3) WITH TIES a FROM tp ORDER BY a").await,
                "rows 1 1 2"
            );
            assert_eq!(
                run(&c, "SELECT TOP 4 WITH TIES a FROM tp ORDER BY a").await,
                "rows 1 1 2 3 3"
            );
            // A percentage of the rows, rounded up: 30 % of 5 is 2.
            assert_eq!(
                run(&c, "SELECT TOP 30 PERCENT b FROM tp ORDER BY b").await,
                "rows 1 2"
            );
            assert_eq!(
                run(&c, "SELECT TOP (100) PERCENT b FROM tp ORDER BY b DESC").await,
                "rows 5 4 3 2 1"
            );
            assert_eq!(
                run(&c, "SELECT TOP 20 PERCENT WITH TIES a FROM tp ORDER BY a").await,
                "rows 1 1"
            );
            // WITH TIES needs an ORDER BY to know the ties.
            assert_eq!(
                run(&c, "SELECT TOP 1 WITH TIES a FROM tp").await,
                "ERROR 42601"
            );
        })
    });
}

#[test]
fn batches_variables_and_control_flow() {
    with_server(|conn| {
        Box::pin(async move {
            let (c, notes) = client(&conn).await;
            // Statements separated by line breaks only.
            assert_eq!(
                run(
                    &c,
                    "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))\n\
                     PRINT 'inserting'\n\
                     INSERT INTO t VALUES (1, 'a'), (2, 'b')\n\
                     SELECT @@ROWCOUNT AS rc\n\
                     SELECT count(*) FROM t"
                )
                .await,
                "ok 0; ok 2; rows 2; rows 2"
            );
            assert_eq!(notes.lock().unwrap().clone(), vec!["inserting".to_string()]);
            // DECLARE several, SET, +=, SELECT @v = col, IF / ELSE.
            assert_eq!(
                run(
                    &c,
                    "DECLARE @a int = 5, @s varchar(30) = 'x', @n int\n\
                     SET @a += 10\n\
                     SET @s += '-y'\n\
                     SELECT @n = id FROM t WHERE v = 'b'\n\
                     IF @a > 10 AND @n = 2 SELECT @a, @s, @n ELSE SELECT 'no'\n\
                     IF @n IS NULL SELECT 'null' ELSE BEGIN SELECT 'else'; SELECT @n * 2 END"
                )
                .await,
                "rows 15,x-y,2; rows else; rows 4"
            );
            // A variable keeps its type: assigned through int, a decimal truncates... as a cast.
            assert_eq!(
                run(&c, "DECLARE @i int\nSET @i = '42'\nSELECT @i + 1").await,
                "rows 43"
            );
            // ... and the statements that read it plan it with its type: a
            // decimal or float divided by an integer is not an integer
            // division (was 13 and 0: the parameter taken for an int).
            assert_eq!(
                run(
                    &c,
                    "DECLARE @x decimal(10,2) = 25, @f float = 1.5\nSELECT @x / 4, @f / 3"
                )
                .await,
                "rows 6.2500000000000000,0.5"
            );
            // WHILE with BREAK and CONTINUE.
            assert_eq!(
                run(
                    &c,
                    "DECLARE @i int = 0, @sum int = 0\n\
                     WHILE @i < 100\n\
                     BEGIN\n\
                       SET @i = @i + 1\n\
                       IF @i % 2 = 0 CONTINUE\n\
                       IF @i > 9 BREAK\n\
                       SET @sum += @i\n\
                     END\n\
                     SELECT @i, @sum"
                )
                .await,
                "rows 11,25"
            );
            // An undeclared variable, an END without BEGIN.
            assert_eq!(run(&c, "DECLARE @a int\nSELECT @b").await, "ERROR 42704");
            assert_eq!(run(&c, "IF 1 = 1 PRINT 'x'\nEND").await, "ERROR 42601");
            // @@TRANCOUNT counts nested BEGIN TRAN; only the outer COMMIT commits.
            assert_eq!(
                run(
                    &c,
                    "BEGIN TRAN\n\
                     BEGIN TRAN\n\
                     INSERT INTO t VALUES (3, 'c')\n\
                     SELECT @@TRANCOUNT\n\
                     COMMIT TRAN\n\
                     SELECT @@TRANCOUNT"
                )
                .await,
                "ok 0; ok 0; ok 1; rows 2; ok 0; rows 1"
            );
            assert_eq!(
                run(&c, "ROLLBACK TRAN\nSELECT @@TRANCOUNT, count(*) FROM t").await,
                "ok 0; rows 0,2"
            );
            assert_eq!(run(&c, "COMMIT TRAN").await, "ERROR 25P01");
            // SET NOCOUNT ON drops the row counts.
            assert_eq!(
                run(&c, "SET NOCOUNT ON\nINSERT INTO t VALUES (9, 'z')\nSELECT @@ROWCOUNT\nSET NOCOUNT OFF").await,
                "rows 1"
            );
            // The session goes on after errors.
            assert_eq!(run(&c, "SELECT count(*) FROM t").await, "rows 3");
            // A constraint error ends the statement, not the batch (outside
            // a transaction), as in SQL Server; a missing table ends it.
            assert_eq!(
                run(
                    &c,
                    "INSERT INTO t VALUES (1, 'dup')\nINSERT INTO t VALUES (50, 'after')"
                )
                .await,
                "ERROR 23505"
            );
            assert_eq!(
                run(
                    &c,
                    "SELECT 1 FROM nowhere\nINSERT INTO t VALUES (51, 'never')"
                )
                .await,
                "ERROR 42P01"
            );
            assert_eq!(
                run(&c, "SELECT id FROM t WHERE id > 9 ORDER BY id").await,
                "rows 50"
            );
            // @@ERROR is the last statement's error number.
            assert_eq!(
                run(
                    &c,
                    "DECLARE @e int\nINSERT INTO t VALUES (1, 'dup')\nSET @e = @@ERROR\n\
                     INSERT INTO t VALUES (@e, 'err')"
                )
                .await,
                "ERROR 23505"
            );
            assert_eq!(
                run(&c, "DELETE FROM t WHERE v = 'err' AND id = 2627").await,
                "ok 1"
            );
            // TRY / CATCH: the handler runs with the error.
            assert_eq!(
                run(
                    &c,
                    "BEGIN TRY\n INSERT INTO t VALUES (1, 'dup')\n SELECT 'not here'\nEND TRY\n\
                     BEGIN CATCH\n SELECT ERROR_NUMBER(), ERROR_MESSAGE()\nEND CATCH\n\
                     SELECT 'after'"
                )
                .await,
                "rows 2627,duplicate key value violates unique constraint \"t_pkey\"; rows after"
            );
            // Inside a transaction the failed statement alone is undone.
            assert_eq!(
                run(
                    &c,
                    "BEGIN TRAN\nINSERT INTO t VALUES (60, 'x')\nINSERT INTO t VALUES (1, 'dup')\n\
                     INSERT INTO t VALUES (61, 'y')"
                )
                .await,
                "ERROR 23505"
            );
            assert_eq!(
                run(
                    &c,
                    "BEGIN TRY INSERT INTO t VALUES (1, 'dup') END TRY\n\
                     BEGIN CATCH SELECT XACT_STATE(), @@TRANCOUNT END CATCH\nCOMMIT TRAN"
                )
                .await,
                "rows 1,1; ok 0"
            );
            assert_eq!(
                run(&c, "SELECT id FROM t WHERE id >= 60 ORDER BY id").await,
                "rows 60 61"
            );
            // THROW and RAISERROR.
            assert_eq!(
                run(
                    &c,
                    "BEGIN TRY THROW 50001, 'boom', 3 END TRY\n\
                     BEGIN CATCH SELECT ERROR_NUMBER(), ERROR_MESSAGE(), ERROR_STATE() END CATCH"
                )
                .await,
                "rows 50001,boom,3"
            );
            assert_eq!(run(&c, "RAISERROR('n=%d', 16, 1, 7)").await, "ERROR P0001");
            assert_eq!(
                run(
                    &c,
                    "BEGIN TRY RAISERROR('x %s', 16, 2, 'y') END TRY BEGIN CATCH THROW END CATCH"
                )
                .await,
                "ERROR P0001"
            );
            assert_eq!(run(&c, "THROW 1, 'low', 1").await, "ERROR 22023");
            assert_eq!(
                run(&c, "RAISERROR('a note %d', 10, 1, 5)\nSELECT 1").await,
                "rows 1"
            );
            assert!(notes.lock().unwrap().contains(&"a note 5".to_string()));
        })
    });
}

const PROC: &str =
    "CREATE PROCEDURE dbo.InsertRows @Iterations int = 1000, @Durable bit = 0, @Base int = 0 AS\n\
    BEGIN\n\
      SET NOCOUNT ON\n\
      DECLARE @i int = 1\n\
      WHILE @i <= @Iterations\n\
      BEGIN\n\
        BEGIN TRAN\n\
        INSERT INTO dd (id, g) VALUES (@Base + @i, NEWID())\n\
        IF @Durable = 1\n\
          COMMIT TRAN\n\
        ELSE\n\
          COMMIT TRAN WITH (DELAYED_DURABILITY = ON)\n\
        SET @i += 1\n\
      END\n\
      RETURN @i - 1\n\
    END";

#[test]
fn the_delayed_durability_scripts() {
    with_server(|conn| {
        Box::pin(async move {
            let (c, _) = client(&conn).await;
            assert_eq!(
                run(
                    &c,
                    "CREATE TABLE dd (id int PRIMARY KEY, g uniqueidentifier)"
                )
                .await,
                "ok 0"
            );
            // The ad-hoc batch: 10,000 auto-commit inserts (FORCED delayed
            // durability, as the seeds' FORCED loop: the test measures the
            // batch, not the disk's flushes).
            assert_eq!(
                run(&c, "ALTER DATABASE walden SET DELAYED_DURABILITY = FORCED").await,
                "ok 0"
            );
            let t0 = std::time::Instant::now();
            let r = run(
                &c,
                "DECLARE @i int = 1; WHILE @i <= 10000 BEGIN INSERT INTO dd VALUES (@i, NEWID()) SET @i += 1 END",
            )
            .await;
            eprintln!(
                "10,000-iteration WHILE of auto-commit inserts: {:?} ({:.1} us per iteration)",
                t0.elapsed(),
                t0.elapsed().as_secs_f64() * 1e6 / 10000.0
            );
            assert_eq!(
                r.matches("ok 1").count(),
                10000,
                "{}",
                &r[..r.len().min(200)]
            );
            assert_eq!(
                run(&c, "SELECT count(*), min(id), max(id) FROM dd").await,
                "rows 10000,1,10000"
            );
            // The procedure: a WHILE around BEGIN TRAN ... COMMIT TRAN WITH DD.
            assert_eq!(run(&c, PROC).await, "ok 0");
            let t0 = std::time::Instant::now();
            assert_eq!(
                run(&c, "DECLARE @rc int\nEXEC @rc = dbo.InsertRows @Iterations = 1000, @Base = 10000\nSELECT @rc, @@TRANCOUNT").await,
                "rows 1000,0"
            );
            eprintln!(
                "procedure, 1,000 BEGIN TRAN / INSERT / COMMIT WITH DELAYED_DURABILITY: {:?}",
                t0.elapsed()
            );
            assert_eq!(run(&c, "EXEC InsertRows 500, 1, 11000").await, "ok 0");
            assert_eq!(run(&c, "EXECUTE InsertRows @Base = 11500").await, "ok 0");
            assert_eq!(run(&c, "SELECT count(*) FROM dd").await, "rows 12500");
            // Listed in the catalog table, once.
            assert_eq!(
                run(&c, "SELECT name FROM walden_procedures").await,
                "rows insertrows"
            );
        })
    });
}

#[test]
fn procedures_parameters_and_limits() {
    with_server(|conn| {
        Box::pin(async move {
            let (c, notes) = client(&conn).await;
            assert_eq!(
                run(
                    &c,
                    "CREATE PROC add_up @a int, @b int = 10, @sum int OUTPUT AS\n\
                     SET @sum = @a + @b\n\
                     PRINT 'sum is ' + CAST(@sum AS varchar(10))\n\
                     RETURN 7"
                )
                .await,
                "ok 0"
            );
            assert_eq!(
                run(
                    &c,
                    "DECLARE @s int, @rc int\n\
                     EXEC @rc = add_up 1, 2, @s OUTPUT\n\
                     SELECT @s, @rc\n\
                     EXEC add_up @b = 5, @a = 4, @sum = @s OUTPUT\n\
                     SELECT @s\n\
                     EXEC add_up @a = 1, @sum = @s OUTPUT\n\
                     SELECT @s\n\
                     EXEC add_up 1, DEFAULT, @s\n\
                     SELECT @s"
                )
                .await,
                "rows 3,7; rows 9; rows 11; rows 11"
            );
            assert!(notes.lock().unwrap().contains(&"sum is 3".to_string()));
            // A procedure's #temp table ends with it.
            assert_eq!(
                run(&c, "CREATE PROC tmp AS\nCREATE TABLE #t (a int)\nINSERT INTO #t VALUES (1)\nSELECT count(*) FROM #t").await,
                "ok 0"
            );
            assert_eq!(run(&c, "EXEC tmp").await, "ok 0; ok 1; rows 1");
            assert_eq!(run(&c, "SELECT * FROM #t").await, "ERROR 42P01");
            assert_eq!(run(&c, "EXEC tmp").await, "ok 0; ok 1; rows 1");
            // Calling errors.
            assert_eq!(run(&c, "EXEC add_up").await, "ERROR 42704");
            assert_eq!(run(&c, "EXEC add_up 1, 2, 3, 4").await, "ERROR 42883");
            assert_eq!(run(&c, "EXEC nope").await, "ERROR 42883");
            // CREATE of an existing one; ALTER and CREATE OR ALTER; DROP.
            assert_eq!(
                run(&c, "CREATE PROCEDURE add_up AS SELECT 1").await,
                "ERROR 42710"
            );
            assert_eq!(run(&c, "ALTER PROCEDURE add_up AS SELECT 2").await, "ok 0");
            assert_eq!(run(&c, "EXEC add_up").await, "rows 2");
            assert_eq!(
                run(&c, "CREATE OR ALTER PROC add_up AS SELECT 3").await,
                "ok 0"
            );
            assert_eq!(run(&c, "EXEC add_up").await, "rows 3");
            assert_eq!(run(&c, "DROP PROCEDURE add_up").await, "ok 0");
            assert_eq!(run(&c, "DROP PROCEDURE add_up").await, "ERROR 42883");
            assert_eq!(run(&c, "DROP PROCEDURE IF EXISTS add_up").await, "ok 0");
            // A body that does not parse is refused at CREATE.
            assert_eq!(
                run(&c, "CREATE PROC bad AS BEGIN SELECT 1").await,
                "ERROR 42601"
            );
            assert_eq!(
                run(&c, "SELECT 1\nCREATE PROC p2 AS SELECT 1").await,
                "ERROR 42601"
            );
            // Recursion past 32 levels fails with SQL Server's error, and the
            // server goes on.
            assert_eq!(
                run(
                    &c,
                    "CREATE PROC deep @n int AS\n\
                     IF @n > 0 BEGIN SET @n = @n - 1\n EXEC deep @n END\n\
                     ELSE SELECT @@NESTLEVEL"
                )
                .await,
                "ok 0"
            );
            assert_eq!(run(&c, "EXEC deep 31").await, "rows 32");
            assert_eq!(run(&c, "EXEC deep 100").await, "ERROR 54001");
            assert_eq!(run(&c, "SELECT 1").await, "rows 1");
            // An endless WHILE honours statement_timeout.
            run(&c, "SET statement_timeout = '300ms'").await;
            assert_eq!(
                run(&c, "WHILE 1 = 1 BEGIN PRINT 'x' END").await,
                "ERROR 57014"
            );
            assert_eq!(run(&c, "WHILE 1 = 1 SET NOCOUNT ON").await, "ERROR 57014");
            run(&c, "SET statement_timeout = 0").await;
            assert_eq!(run(&c, "SELECT 2").await, "rows 2");
        })
    });
}

#[test]
fn procedures_survive_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let mut walden = Serve::start(&dir, &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let (c, _) = client(&walden.conn_str()).await;
            assert_eq!(
                run(&c, "CREATE PROC p1 @x int = 2 AS SELECT @x * 10").await,
                "ok 0"
            );
            assert_eq!(
                run(&c, "CREATE TABLE idk (id int IDENTITY(1, 1), v int)").await,
                "ok 0"
            );
            assert_eq!(run(&c, "CREATE PROC gone AS SELECT 1").await, "ok 0");
            assert_eq!(run(&c, "DROP PROC gone").await, "ok 0");
            // A procedure created in a rolled-back transaction does not exist.
            assert_eq!(run(&c, "BEGIN TRAN").await, "ok 0");
            assert_eq!(run(&c, "CREATE PROC undone AS SELECT 1").await, "ok 0");
            assert_eq!(run(&c, "ROLLBACK TRAN").await, "ok 0");
            assert_eq!(run(&c, "EXEC undone").await, "ERROR 42883");
        })
        .await
        .expect("timed out")
    });
    walden.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let walden = Serve::start(&dir, &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let (c, _) = client(&walden.conn_str()).await;
            assert_eq!(run(&c, "EXEC p1").await, "rows 20");
            assert_eq!(run(&c, "EXEC p1 @x = 3").await, "rows 30");
            // EXECUTE alone is a procedure call unless a prepared statement
            // has the name.
            assert_eq!(run(&c, "EXECUTE p1").await, "rows 20");
            assert_eq!(run(&c, "PREPARE p1 AS SELECT 5").await, "ok 0");
            assert_eq!(run(&c, "EXECUTE p1").await, "rows 5");
            assert_eq!(run(&c, "EXEC gone").await, "ERROR 42883");
            // The IDENTITY column is still T-SQL's.
            assert_eq!(run(&c, "INSERT INTO idk VALUES (7)").await, "ok 1");
            assert_eq!(run(&c, "SELECT id, v FROM idk").await, "rows 1,7");
        })
        .await
        .expect("timed out")
    });
}
