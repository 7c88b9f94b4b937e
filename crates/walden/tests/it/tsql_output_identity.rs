//! T-SQL's OUTPUT clause, identity functions, SET IDENTITY_INSERT, SET
//! XACT_ABORT and sp_executesql through the server, each batch one simple
//! query as sqlcmd sends it, checked against SQL Server's documented
//! answers (and the T-SQL corpus's expected outputs).

use crate::pg_diff;
use crate::tsql_support;

use pg_diff::connect;
use std::time::Duration;
use tsql_support::run;

fn with_server(f: impl FnOnce(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>) {
    tsql_support::with_server(Duration::from_secs(120), f)
}

#[test]
fn output_clause_returns_and_stores_the_rows_written() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(&c, "CREATE TABLE t1 (num int, word varchar(10))").await;
            assert_eq!(
                run(&c, "INSERT INTO t1 OUTPUT inserted.num VALUES (1, 'one')").await,
                "rows 1"
            );
            assert_eq!(
                run(
                    &c,
                    "INSERT INTO t1 OUTPUT inserted.num, inserted.word VALUES (2, 'two'), (3, 'three')"
                )
                .await,
                "rows 2,two 3,three"
            );
            assert_eq!(
                run(&c, "INSERT INTO t1 OUTPUT inserted.* VALUES (4, 'four')").await,
                "rows 4,four"
            );
            // UPDATE: the old row as deleted, the new one as inserted.
            assert_eq!(
                run(
                    &c,
                    "UPDATE t1 SET num = num * 10, word = upper(word) OUTPUT deleted.num, inserted.num, deleted.word, inserted.word WHERE num <= 2"
                )
                .await,
                "rows 1,10,one,ONE 2,20,two,TWO"
            );
            assert_eq!(
                run(
                    &c,
                    "UPDATE t1 SET num = 30 OUTPUT deleted.*, inserted.* WHERE num = 3"
                )
                .await,
                "rows 3,three,30,three"
            );
            assert_eq!(
                run(&c, "DELETE FROM t1 OUTPUT deleted.word WHERE num = 4").await,
                "rows four"
            );
            // The rows a statement wrote, not a word more: nothing matched.
            assert_eq!(
                run(&c, "DELETE FROM t1 OUTPUT deleted.* WHERE num = 99").await,
                "ok 0"
            );
            // In a T-SQL batch with variables.
            assert_eq!(
                run(
                    &c,
                    "DECLARE @n int = 30\nDELETE FROM t1 OUTPUT deleted.num, deleted.word WHERE num = @n"
                )
                .await,
                "rows 30,three"
            );
            // OUTPUT ... INTO a table: the rows go there, in the same
            // statement (a failure undoes both).
            run(
                &c,
                "CREATE TABLE audit (n int NOT NULL, w varchar(10), note varchar(10))",
            )
            .await;
            assert_eq!(
                run(
                    &c,
                    "INSERT INTO t1 OUTPUT inserted.num, inserted.word, 'ins' INTO audit VALUES (5, 'five')"
                )
                .await,
                "ok 1"
            );
            assert_eq!(
                run(
                    &c,
                    "UPDATE t1 SET word = 'FIVE' OUTPUT deleted.word INTO audit (w) WHERE num = 5"
                )
                .await,
                "ERROR 23502"
            );
            assert_eq!(
                run(&c, "SELECT word FROM t1 WHERE num = 5").await,
                "rows five"
            );
            assert_eq!(
                run(
                    &c,
                    "UPDATE t1 SET word = 'FIVE' OUTPUT deleted.num, deleted.word INTO audit (n, w) WHERE num = 5"
                )
                .await,
                "ok 1"
            );
            assert_eq!(
                run(&c, "DELETE FROM t1 OUTPUT deleted.num, deleted.word, 'del' INTO audit WHERE num = 5").await,
                "ok 1"
            );
            assert_eq!(
                run(
                    &c,
                    "SELECT n, w, note FROM audit ORDER BY coalesce(note, '')"
                )
                .await,
                "rows 5,five,NULL 5,FIVE,del 5,five,ins"
            );
            // The clause must name the rows' source; a wrong count is refused.
            assert_eq!(
                run(&c, "INSERT INTO t1 OUTPUT * VALUES (6, 'six')").await,
                "ERROR 42601"
            );
            assert_eq!(
                run(
                    &c,
                    "INSERT INTO t1 OUTPUT inserted.num INTO audit VALUES (6, 'six')"
                )
                .await,
                "ERROR 42601"
            );
            assert_eq!(
                run(&c, "INSERT INTO t1 OUTPUT deleted.num VALUES (6, 'six')").await,
                "ERROR 42P01"
            );
            assert_eq!(
                run(&c, "SELECT count(*) FROM t1 WHERE num = 6").await,
                "rows 0"
            );
        })
    });
}

#[test]
fn identity_functions_and_identity_insert() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(
                &c,
                "CREATE TABLE it (id int IDENTITY(10, 5) PRIMARY KEY, v int)",
            )
            .await;
            run(&c, "CREATE TABLE other (id int IDENTITY(1, 1), v int)").await;
            run(&c, "CREATE TABLE plain (v int)").await;
            // Before any insert: NULL, and the seed for IDENT_CURRENT.
            assert_eq!(
                run(
                    &c,
                    "SELECT SCOPE_IDENTITY(), @@IDENTITY, IDENT_CURRENT('it')"
                )
                .await,
                "rows NULL,NULL,10"
            );
            assert_eq!(run(&c, "INSERT INTO it (v) VALUES (1), (2)").await, "ok 2");
            assert_eq!(
                run(
                    &c,
                    "SELECT SCOPE_IDENTITY(), @@IDENTITY, IDENT_CURRENT('it'), IDENT_SEED('it'), IDENT_INCR('it'), IDENT_CURRENT('plain'), IDENT_CURRENT('nosuch')"
                )
                .await,
                "rows 15,15,15,10,5,NULL,NULL"
            );
            // A procedure is a scope of its own: @@IDENTITY sees its insert,
            // SCOPE_IDENTITY() the caller's.
            run(&c, "CREATE PROCEDURE add_other AS\nINSERT INTO other (v) VALUES (7)\nSELECT SCOPE_IDENTITY()").await;
            assert_eq!(
                run(
                    &c,
                    "EXEC add_other\nSELECT SCOPE_IDENTITY(), @@IDENTITY, IDENT_CURRENT('other')"
                )
                .await,
                "ok 1; rows 1; rows 15,1,1"
            );
            // An explicit value needs IDENTITY_INSERT ON for the table.
            assert_eq!(
                run(&c, "INSERT INTO it (id, v) VALUES (100, 3)").await,
                "ERROR 428C9"
            );
            assert_eq!(run(&c, "SET IDENTITY_INSERT dbo.it ON").await, "ok 0");
            assert_eq!(
                run(&c, "INSERT INTO it (id, v) VALUES (100, 3)").await,
                "ok 1"
            );
            assert_eq!(run(&c, "SELECT SCOPE_IDENTITY()").await, "rows 100");
            // One table at a time; a table without IDENTITY, or none, is refused.
            assert_eq!(run(&c, "SET IDENTITY_INSERT other ON").await, "ERROR 55000");
            assert_eq!(run(&c, "SET IDENTITY_INSERT plain ON").await, "ERROR 42809");
            assert_eq!(
                run(&c, "SET IDENTITY_INSERT nosuch ON").await,
                "ERROR 42P01"
            );
            assert_eq!(run(&c, "SET IDENTITY_INSERT it OFF").await, "ok 0");
            assert_eq!(
                run(&c, "INSERT INTO it (id, v) VALUES (200, 4)").await,
                "ERROR 428C9"
            );
            // The counter moved past the explicit value, as SQL Server's.
            assert_eq!(
                run(&c, "INSERT INTO it (v) OUTPUT inserted.id VALUES (5)").await,
                "rows 105"
            );
            assert_eq!(
                run(&c, "SELECT IDENT_CURRENT('it'), count(*) FROM it").await,
                "rows 105,4"
            );
        })
    });
}

#[test]
fn xact_abort_and_sp_executesql() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(&c, "CREATE TABLE xa (a int PRIMARY KEY)").await;
            // XACT_ABORT OFF (SQL Server's default): the duplicate alone is
            // undone and the batch goes on.
            let r = run(
                &c,
                "BEGIN TRAN\nINSERT INTO xa VALUES (1)\nINSERT INTO xa VALUES (1)\nINSERT INTO xa VALUES (2)\nCOMMIT TRAN",
            )
            .await;
            assert_eq!(r, "ERROR 23505");
            assert_eq!(
                run(&c, "SELECT @@TRANCOUNT, count(*) FROM xa").await,
                "rows 0,2"
            );
            // ON: the error ends the batch and rolls the transaction back.
            assert_eq!(run(&c, "SET XACT_ABORT ON").await, "ok 0");
            let r = run(
                &c,
                "BEGIN TRAN\nINSERT INTO xa VALUES (3)\nINSERT INTO xa VALUES (1)\nINSERT INTO xa VALUES (4)\nCOMMIT TRAN",
            )
            .await;
            assert_eq!(r, "ERROR 23505");
            assert_eq!(
                run(&c, "SELECT @@TRANCOUNT, count(*), max(a) FROM xa").await,
                "rows 0,2,2"
            );
            // In TRY, the CATCH block finds the transaction uncommittable.
            assert_eq!(
                run(
                    &c,
                    "BEGIN TRAN\nBEGIN TRY\n  INSERT INTO xa VALUES (5)\n  INSERT INTO xa VALUES (1)\nEND TRY\nBEGIN CATCH\n  SELECT XACT_STATE(), ERROR_NUMBER()\n  ROLLBACK TRAN\nEND CATCH\nSELECT @@TRANCOUNT, count(*) FROM xa"
                )
                .await,
                "ok 0; ok 1; rows -1,2627; rows 0,2"
            );
            assert_eq!(run(&c, "SET XACT_ABORT OFF").await, "ok 0");
            assert_eq!(
                run(
                    &c,
                    "BEGIN TRAN\nBEGIN TRY\n  INSERT INTO xa VALUES (5)\n  INSERT INTO xa VALUES (1)\nEND TRY\nBEGIN CATCH\n  SELECT XACT_STATE()\nEND CATCH\nCOMMIT TRAN\nSELECT count(*) FROM xa"
                )
                .await,
                "ok 0; ok 1; rows 1; ok 0; rows 3"
            );
            // sp_executesql: a batch of its own with declared parameters,
            // positional or named, and OUTPUT ones.
            assert_eq!(
                run(
                    &c,
                    "EXEC sp_executesql N'SELECT @a + @b, @s', N'@a int, @b int, @s varchar(5)', 1, @b = 2, @s = 'x'"
                )
                .await,
                "rows 3,x"
            );
            assert_eq!(
                run(
                    &c,
                    "DECLARE @r int, @sql nvarchar(100) = N'SELECT @o = count(*) * @k FROM xa'\nEXEC sp_executesql @sql, N'@k int, @o int OUTPUT', @k = 10, @o = @r OUTPUT\nSELECT @r"
                )
                .await,
                "rows 30"
            );
            assert_eq!(
                run(
                    &c,
                    "EXEC sp_executesql N'INSERT INTO xa VALUES (9); SELECT max(a) FROM xa'"
                )
                .await,
                "ok 1; rows 9"
            );
            // Empty name parts are the defaults; a constant cannot take an
            // OUTPUT parameter's value back.
            assert_eq!(
                run(
                    &c,
                    "EXEC ..sp_executesql N'SELECT 1'\nEXEC .dbo.sp_executesql N'SELECT 2'"
                )
                .await,
                "rows 1; rows 2"
            );
            assert_eq!(
                run(
                    &c,
                    "EXEC sp_executesql N'SET @a = 20', N'@a int OUT', @a = 10 OUT"
                )
                .await,
                "ERROR 42601"
            );
            // The caller's variables are not the dynamic batch's.
            assert_eq!(
                run(&c, "DECLARE @v int = 1\nEXEC sp_executesql N'SELECT @v'").await,
                "ERROR 42704"
            );
            assert_eq!(
                run(&c, "EXEC sp_executesql N'SELECT @p', N'@p int'").await,
                "ERROR 42704"
            );
        })
    });
}

#[test]
fn tsql_delete_from_a_join() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(&c, "CREATE TABLE d1 (a int PRIMARY KEY, b varchar(5))").await;
            run(&c, "INSERT INTO d1 VALUES (1, 'x'), (2, 'y'), (3, 'z')").await;
            run(&c, "CREATE TABLE d2 (a int, c int)").await;
            run(&c, "INSERT INTO d2 VALUES (1, 10), (3, 30), (3, 31)").await;
            // The target's rows the join keeps, each once.
            assert_eq!(
                run(
                    &c,
                    "DELETE d1 FROM d1 JOIN d2 ON d1.a = d2.a WHERE d2.c > 20"
                )
                .await,
                "ok 1"
            );
            assert_eq!(run(&c, "SELECT a FROM d1 ORDER BY a").await, "rows 1 2");
            // By alias, with OUTPUT before the source (T-SQL's order).
            assert_eq!(
                run(
                    &c,
                    "DELETE x OUTPUT deleted.a, d2.c FROM d1 AS x INNER JOIN d2 ON x.a = d2.a"
                )
                .await,
                "rows 1,10"
            );
            // A target the source does not name joins it.
            assert_eq!(
                run(
                    &c,
                    "DELETE FROM d1 OUTPUT deleted.b FROM d2 WHERE d1.a = d2.a"
                )
                .await,
                "ok 0"
            );
            assert_eq!(run(&c, "DELETE d1 WHERE a = 5").await, "ok 0");
            // The target named by its table where FROM aliases it: FROM's
            // rows (dml/babel_delete in the T-SQL corpus; it deleted all).
            run(&c, "CREATE TABLE d3 (a int)").await;
            run(&c, "INSERT INTO d3 VALUES (1), (2), (NULL)").await;
            assert_eq!(
                run(&c, "DELETE d3 OUTPUT deleted.a FROM d3 x WHERE x.a = 2").await,
                "rows 2"
            );
            assert_eq!(
                run(&c, "DELETE d3 OUTPUT y.c FROM d3 x, d2 y WHERE x.a = y.a").await,
                "rows 10"
            );
            assert_eq!(run(&c, "SELECT a FROM d3").await, "rows NULL");
            // An outer join would delete unmatched rows too: refused.
            assert_eq!(
                run(&c, "DELETE d1 FROM d1 LEFT JOIN d2 ON d1.a = d2.a").await,
                "ERROR 0A000"
            );
            // SQL Server and PostgreSQL read this UPDATE differently.
            assert_eq!(
                run(
                    &c,
                    "UPDATE d1 SET b = 'w' FROM d1 AS s JOIN d2 ON s.a = d2.a"
                )
                .await,
                "ERROR 0A000"
            );
            assert_eq!(
                run(
                    &c,
                    "UPDATE d1 AS o SET b = 'w' FROM d1 AS s WHERE s.a = o.a"
                )
                .await,
                "ok 1"
            );
            assert_eq!(run(&c, "SELECT a, b FROM d1").await, "rows 2,w");
        })
    });
}
