//! T-SQL's table variables and built-ins DBAs' scripts use, through the
//! server as sqlcmd sends them (each batch one simple query), with SQL
//! Server's documented results: `DECLARE @t TABLE`, DML and joins on it,
//! its scope (the batch or the procedure body) and its rows surviving a
//! ROLLBACK; DATALENGTH; STRING_SPLIT.

use crate::pg_diff;
use crate::tsql_support;

use std::time::Duration;
use tsql_support::run;

fn with_server(f: impl FnOnce(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>) {
    tsql_support::with_server(Duration::from_secs(240), f)
}

#[test]
fn table_variables() {
    with_server(|conn| {
        Box::pin(async move {
            let c = pg_diff::connect(&conn).await;
            // Declared, filled, changed and read in one batch.
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @t TABLE (id int PRIMARY KEY, name varchar(20) NOT NULL, qty int DEFAULT 5)
                     INSERT INTO @t (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c')
                     UPDATE @t SET qty = qty * id WHERE id >= 2
                     DELETE FROM @t WHERE id = 1
                     SELECT id, name, qty FROM @t ORDER BY id"
                )
                .await,
                "rows 2,b,10 3,c,15"
            );
            // Joins with tables and other table variables; variables in the
            // statements that use it; IF EXISTS over it; @@ROWCOUNT.
            run(&c, "CREATE TABLE prices (id int, price int)").await;
            run(&c, "INSERT INTO prices VALUES (1, 10), (2, 20), (3, 30)").await;
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @min int = 2
                     DECLARE @ids TABLE (id int)
                     DECLARE @seen AS TABLE (id int, total int)
                     INSERT @ids SELECT id FROM prices WHERE id >= @min
                     INSERT INTO @seen SELECT i.id, p.price * 2 FROM @ids AS i JOIN prices p ON p.id = i.id
                     DECLARE @n int = @@ROWCOUNT
                     IF EXISTS (SELECT * FROM @seen WHERE total > 50) PRINT 'big'
                     SELECT s.id, s.total, @n FROM @seen s JOIN @ids i ON i.id = s.id ORDER BY s.id"
                )
                .await,
                "rows 2,40,2 3,60,2"
            );
            // A constraint violation undoes that statement alone.
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @u TABLE (k int UNIQUE)
                     INSERT INTO @u VALUES (1)
                     BEGIN TRY INSERT INTO @u VALUES (2), (1) END TRY
                     BEGIN CATCH PRINT ERROR_NUMBER() END CATCH
                     SELECT count(*) FROM @u"
                )
                .await,
                "rows 1"
            );
            // The batch's table variable is gone after it.
            assert_eq!(run(&c, "SELECT * FROM @t").await, "ERROR 42P01");
            assert_eq!(
                run(&c, "DECLARE @t TABLE (a int)\nSELECT count(*) FROM @t").await,
                "rows 0"
            );
            // A name is a table or a scalar, not both.
            assert_eq!(
                run(&c, "DECLARE @t TABLE (a int)\nDECLARE @t int").await,
                "ERROR 42710"
            );
            assert_eq!(
                run(&c, "DECLARE @t TABLE (a int)\nSELECT @t").await,
                "ERROR 42703"
            );
            // A declaration in a loop runs once: its rows stay.
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @i int = 0
                     WHILE @i < 3
                     BEGIN
                         DECLARE @acc TABLE (v int)
                         INSERT INTO @acc VALUES (@i)
                         SET @i += 1
                     END
                     SELECT sum(v), count(*) FROM @acc"
                )
                .await,
                "rows 3,3"
            );
        })
    });
}

#[test]
fn table_variables_in_procedures_and_rollback() {
    with_server(|conn| {
        Box::pin(async move {
            let c = pg_diff::connect(&conn).await;
            // A procedure's @t is its own: the caller's of the same name is
            // untouched, and the procedure's is gone when it returns.
            assert_eq!(
                run(
                    &c,
                    "CREATE PROCEDURE fill @n int AS
                     BEGIN
                         SET NOCOUNT ON
                         DECLARE @t TABLE (v int)
                         DECLARE @i int = 1
                         WHILE @i <= @n BEGIN INSERT INTO @t VALUES (@i) SET @i += 1 END
                         SELECT count(*), sum(v) FROM @t
                     END"
                )
                .await,
                "ok 0"
            );
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @t TABLE (v int)
                     INSERT INTO @t VALUES (100)
                     EXEC fill 4
                     EXEC fill 2
                     SELECT v FROM @t"
                )
                .await,
                "rows 4,10; rows 2,3; rows 100"
            );
            // SQL Server's table variables are not transactional: ROLLBACK
            // leaves their rows (identity values included) as they were,
            // while the table's are undone.
            run(&c, "CREATE TABLE audit (v int)").await;
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @log TABLE (id int IDENTITY(1,1), msg varchar(30))
                     INSERT INTO @log (msg) VALUES ('before')
                     BEGIN TRAN
                         INSERT INTO audit VALUES (1)
                         INSERT INTO @log (msg) VALUES ('inside')
                         DECLARE @late TABLE (x int)
                         INSERT INTO @late VALUES (7)
                     ROLLBACK TRAN
                     INSERT INTO @log (msg) VALUES ('after')
                     SELECT id, msg FROM @log ORDER BY id
                     SELECT count(*) FROM audit
                     SELECT x FROM @late"
                )
                .await,
                "ok 0; ok 0; rows 1,before 2,inside 3,after; rows 0; rows 7"
            );
            // The same in a CATCH block after an error.
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @errs TABLE (n int, m varchar(200))
                     BEGIN TRY
                         BEGIN TRAN
                         INSERT INTO audit VALUES (2)
                         SELECT 1 / 0
                     END TRY
                     BEGIN CATCH
                         INSERT INTO @errs VALUES (ERROR_NUMBER(), 'caught')
                         IF @@TRANCOUNT > 0 ROLLBACK
                     END CATCH
                     SELECT n, m FROM @errs
                     SELECT count(*) FROM audit"
                )
                .await,
                "rows 8134,caught; rows 0"
            );
            // Nor does a ROLLBACK to a savepoint undo them; the table's
            // rows since the savepoint are undone.
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @sp TABLE (v int)
                     BEGIN TRAN
                         INSERT INTO @sp VALUES (1)
                         SAVE TRAN s1
                         INSERT INTO @sp VALUES (2)
                         INSERT INTO audit VALUES (40)
                         ROLLBACK TRAN s1
                         INSERT INTO @sp VALUES (3)
                     COMMIT
                     SELECT v FROM @sp ORDER BY v
                     SELECT count(*) FROM audit WHERE v = 40"
                )
                .await,
                "ok 0; ok 0; ok 0; ok 0; rows 1 2 3; rows 0"
            );
            // OUTPUT ... INTO a table variable.
            assert_eq!(
                run(
                    &c,
                    "SET NOCOUNT ON
                     DECLARE @ins TABLE (v int)
                     INSERT INTO audit OUTPUT inserted.v INTO @ins VALUES (5), (6)
                     SELECT sum(v) FROM @ins"
                )
                .await,
                "rows 11"
            );
        })
    });
}

#[test]
fn datalength_and_string_split() {
    with_server(|conn| {
        Box::pin(async move {
            let c = pg_diff::connect(&conn).await;
            // DATALENGTH: stored bytes; NULL for NULL; trailing blanks count.
            assert_eq!(
                run(
                    &c,
                    "SELECT DATALENGTH('abc'), DATALENGTH('abc   '), DATALENGTH(''), DATALENGTH(CAST(NULL AS varchar(5))), DATALENGTH(0x0102)"
                )
                .await,
                "rows 3,6,0,NULL,2"
            );
            run(
                &c,
                "CREATE TABLE sizes (a int, b bigint, c bit, d smallint, e float, f real, g date, h datetime, i uniqueidentifier, j decimal(5,2), k decimal(18,0), l decimal(30,2))",
            )
            .await;
            run(
                &c,
                "INSERT INTO sizes VALUES (1, 1, 1, 1, 1, 1, '2020-01-01', '2020-01-01', NEWID(), 1, 1, 1), (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
            )
            .await;
            assert_eq!(
                run(
                    &c,
                    "SELECT DATALENGTH(a), DATALENGTH(b), DATALENGTH(c), DATALENGTH(d), DATALENGTH(e), DATALENGTH(f), DATALENGTH(g), DATALENGTH(h), DATALENGTH(i), DATALENGTH(j), DATALENGTH(k), DATALENGTH(l) FROM sizes ORDER BY a"
                )
                .await,
                "rows 4,8,1,2,8,4,3,8,16,5,9,17 NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL"
            );
            // STRING_SPLIT: a `value` column, empty pieces kept.
            assert_eq!(
                run(&c, "SELECT value FROM STRING_SPLIT('a,b,,c', ',')").await,
                "rows a b  c"
            );
            assert_eq!(
                run(
                    &c,
                    "SELECT s.value, s.ordinal FROM STRING_SPLIT('x y z', ' ', 1) AS s WHERE s.value <> 'y'"
                )
                .await,
                "rows x,1 z,3"
            );
            // NULL string or separator: no rows; a separator must be one character.
            assert_eq!(
                run(&c, "SELECT count(*) FROM STRING_SPLIT(NULL, ',')").await,
                "rows 0"
            );
            assert_eq!(
                run(&c, "SELECT count(*) FROM STRING_SPLIT('a,b', NULL)").await,
                "rows 0"
            );
            assert_eq!(
                run(&c, "SELECT * FROM STRING_SPLIT('a,b', ',,')").await,
                "ERROR 22023"
            );
            // With variables and a join, as scripts use it to take lists.
            assert_eq!(
                run(
                    &c,
                    "DECLARE @list varchar(100) = '3,1'
                     CREATE TABLE names (id int, n varchar(10))
                     INSERT INTO names VALUES (1, 'one'), (2, 'two'), (3, 'three')
                     SELECT n.n FROM names n JOIN STRING_SPLIT(@list, ',') s ON n.id = CAST(s.value AS int) ORDER BY n.id"
                )
                .await,
                "ok 0; ok 3; rows one three"
            );
        })
    });
}

#[test]
fn scalar_functions() {
    with_server(|conn| {
        Box::pin(async move {
            let c = pg_diff::connect(&conn).await;
            assert_eq!(
                run(
                    &c,
                    "CREATE FUNCTION dbo.add2 (@a int, @b int = 10) RETURNS int AS BEGIN RETURN @a + @b END"
                )
                .await,
                "ok 0"
            );
            // Called in expressions, with DEFAULT, in WHERE, nested, with
            // variables; NULL in, NULL out.
            run(&c, "CREATE TABLE nums (n int)").await;
            run(&c, "INSERT INTO nums VALUES (1), (2), (3)").await;
            assert_eq!(
                run(
                    &c,
                    "SELECT dbo.add2(1, 2), dbo.add2(5, DEFAULT), dbo.add2(NULL, 1)"
                )
                .await,
                "rows 3,15,NULL"
            );
            assert_eq!(
                run(
                    &c,
                    "SELECT n, dbo.add2(n, n) FROM nums WHERE dbo.add2(n, 0) >= 2 ORDER BY n"
                )
                .await,
                "rows 2,4 3,6"
            );
            assert_eq!(
                run(
                    &c,
                    "DECLARE @x int = 7\nSELECT dbo.add2(dbo.add2(@x, 1), @x)"
                )
                .await,
                "rows 15"
            );
            // A body with variables, IF/ELSE and a query; the result is
            // cast to RETURNS (varchar alone is varchar(1)).
            assert_eq!(
                run(
                    &c,
                    "CREATE OR ALTER FUNCTION grade (@score int) RETURNS varchar(10)
                     AS
                     BEGIN
                         DECLARE @g varchar(10) = 'low'
                         IF @score IS NULL RETURN 'none'
                         IF @score >= 2
                         BEGIN
                             SET @g = 'mid'
                             IF @score >= 3 SET @g = 'high'
                         END
                         ELSE SET @g += '!'
                         RETURN @g
                     END"
                )
                .await,
                "ok 0"
            );
            assert_eq!(
                run(&c, "SELECT n, dbo.grade(n) FROM nums ORDER BY n").await,
                "rows 1,low! 2,mid 3,high"
            );
            assert_eq!(run(&c, "SELECT grade(NULL)").await, "rows none");
            assert_eq!(
                run(
                    &c,
                    "CREATE FUNCTION total () RETURNS bigint AS BEGIN DECLARE @t bigint = -1 SELECT @t = sum(n) FROM nums WHERE n > 1 RETURN @t END"
                )
                .await,
                "ok 0"
            );
            assert_eq!(run(&c, "SELECT dbo.total()").await, "rows 5");
            assert_eq!(
                run(&c, "CREATE FUNCTION one_char (@s varchar(20)) RETURNS varchar AS BEGIN RETURN @s END").await,
                "ok 0"
            );
            assert_eq!(run(&c, "SELECT dbo.one_char('dddd')").await, "rows d");
            // Too many arguments; a second CREATE; ALTER of none; DROP.
            assert_eq!(run(&c, "SELECT dbo.add2(1, 2, 3)").await, "ERROR 42883");
            assert_eq!(
                run(
                    &c,
                    "CREATE FUNCTION add2 (@a int) RETURNS int AS BEGIN RETURN @a END"
                )
                .await,
                "ERROR 42710"
            );
            assert_eq!(
                run(
                    &c,
                    "ALTER FUNCTION nosuch (@a int) RETURNS int AS BEGIN RETURN @a END"
                )
                .await,
                "ERROR 42883"
            );
            // What Walden cannot inline is refused at CREATE.
            assert_eq!(
                run(
                    &c,
                    "CREATE FUNCTION loop (@n int) RETURNS int AS BEGIN DECLARE @i int = 0 WHILE @i < @n SET @i += 1 RETURN @i END"
                )
                .await,
                "ERROR 0A000"
            );
            assert_eq!(
                run(
                    &c,
                    "CREATE FUNCTION tvf () RETURNS @t TABLE (a int) AS BEGIN INSERT @t VALUES (1) RETURN END"
                )
                .await,
                "ERROR 0A000"
            );
            // A function is its own scope for SCOPE_IDENTITY().
            run(&c, "CREATE TABLE ids (id int IDENTITY(1,1), v int)").await;
            run(
                &c,
                "CREATE FUNCTION last_id () RETURNS int AS BEGIN RETURN SCOPE_IDENTITY() END",
            )
            .await;
            assert_eq!(
                run(
                    &c,
                    "INSERT INTO ids (v) VALUES (1)\nSELECT dbo.last_id(), SCOPE_IDENTITY()"
                )
                .await,
                "ok 1; rows NULL,1"
            );
            // Definitions are rows: a rolled back CREATE leaves none.
            assert!(run(
                &c,
                "BEGIN TRAN\nEXEC sp_executesql N'CREATE FUNCTION gone () RETURNS int AS BEGIN RETURN 1 END'\nROLLBACK"
            )
            .await
            .starts_with("ok"));
            assert_eq!(run(&c, "SELECT dbo.gone()").await, "ERROR 42883");
            assert_eq!(run(&c, "DROP FUNCTION add2").await, "ok 0");
            assert_eq!(run(&c, "SELECT dbo.add2(1, 2)").await, "ERROR 42883");
            assert_eq!(run(&c, "DROP FUNCTION add2").await, "ERROR 42883");
            assert_eq!(run(&c, "DROP FUNCTION IF EXISTS add2, grade").await, "ok 0");
            assert_eq!(run(&c, "SELECT dbo.grade(1)").await, "ERROR 42883");
        })
    });
}
