//! T-SQL's scopes through the server, each batch one simple query as
//! sqlcmd sends it, with the answers of the T-SQL corpus's expected
//! outputs (checked against SQL Server): a transaction in a session that
//! speaks T-SQL goes on after a failed statement however it was begun;
//! `ROLLBACK TRAN savepoint` uses the savepoint up; COMMIT / ROLLBACK
//! without a transaction are errors the batch goes on after; `@@OPTIONS`
//! follows SET NOCOUNT; a parameter declared `varchar` is one character;
//! a procedure's `#t` hides its caller's; a trigger's inserts show in
//! `@@IDENTITY` but not in `SCOPE_IDENTITY()`, and its result sets reach
//! the client; `sp_executesql` without EXEC starts a batch.

use crate::pg_diff;
use crate::tsql_support;

use pg_diff::connect;
use std::time::Duration;
use tsql_support::run;

fn with_server(f: impl FnOnce(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>) {
    tsql_support::with_server(Duration::from_secs(60), f)
}

/// `../shared/tsql-corpus`: dateFunctions/dateadd-vu-verify and
/// babel_transaction.
#[test]
fn transactions_of_a_tsql_session() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(&c, "CREATE TABLE tx1 (c1 int)").await;
            // PostgreSQL's spelling of BEGIN, a failed statement in it: the
            // transaction goes on once the session has spoken T-SQL.
            assert_eq!(run(&c, "PRINT 'hello'").await, "ok 0");
            assert_eq!(run(&c, "begin transaction").await, "ok 0");
            run(&c, "insert into tx1 values (1)").await;
            assert_eq!(
                run(
                    &c,
                    "SELECT dateadd(fakeoption, 2, cast('1900-01-01' as date))"
                )
                .await,
                "ERROR 22023"
            );
            assert_eq!(
                run(&c, "if (@@trancount > 0) select cast('open' as text) else select cast('gone' as text)").await,
                "rows open"
            );
            assert_eq!(run(&c, "select c1 from tx1").await, "rows 1");
            assert_eq!(run(&c, "if (@@trancount > 0) rollback tran").await, "ok 0");
            assert_eq!(run(&c, "select count(*) from tx1").await, "rows 0");
            // A savepoint ROLLBACK TRAN went back to is used up: the next
            // one of that name goes to the earlier savepoint.
            run(&c, "begin transaction txn1;\ninsert into tx1 values(1);\nsave transaction sp1;\nselect @@trancount;").await;
            run(&c, "insert into tx1 values(2);\nsave tran sp2;\ninsert into tx1 values(3);\nsave tran sp2;\nselect @@trancount;").await;
            run(&c, "insert into tx1 values(4);").await;
            assert_eq!(
                run(&c, "rollback tran sp2;\nselect @@trancount;").await,
                "ok 0; rows 1"
            );
            assert_eq!(run(&c, "select c1 from tx1 order by 1").await, "rows 1 2 3");
            assert_eq!(
                run(&c, "rollback tran sp2;\nselect @@trancount;").await,
                "ok 0; rows 1"
            );
            assert_eq!(run(&c, "select c1 from tx1 order by 1").await, "rows 1 2");
            assert_eq!(
                run(&c, "rollback tran sp1; commit tran").await,
                "ok 0; ok 0"
            );
            assert_eq!(run(&c, "select c1 from tx1").await, "rows 1");
            // Without a transaction, ROLLBACK TRAN name and COMMIT are
            // errors (3903, 3902) and the batch goes on.
            assert_eq!(
                run(
                    &c,
                    "rollback tran sp1;\ncommit transaction;\ninsert into tx1 values (5)"
                )
                .await,
                "ERROR 25P01"
            );
            assert_eq!(run(&c, "select c1 from tx1 order by 1").await, "rows 1 5");
            assert_eq!(
                run(&c, "commit transaction; select @@error").await,
                "ERROR 25P01"
            );
        })
    });
}

/// BABEL_NOCOUNT and default_params-vu-verify.
#[test]
fn options_and_declared_lengths() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(
                &c,
                "CREATE FUNCTION dbo.nocount_val() RETURNS VARCHAR(3) AS BEGIN \
                 DECLARE @NOCOUNT VARCHAR(3) = 'OFF'; \
                 IF ( (512 & @@OPTIONS) = 512 ) SET @NOCOUNT = 'ON'; \
                 RETURN @NOCOUNT; END",
            )
            .await;
            assert_eq!(run(&c, "SELECT dbo.nocount_val()").await, "rows OFF");
            run(&c, "SET NOCOUNT ON").await;
            assert_eq!(run(&c, "SELECT dbo.nocount_val()").await, "rows ON");
            assert_eq!(run(&c, "SELECT @@OPTIONS & 512").await, "rows 512");
            run(&c, "SET NOCOUNT OFF").await;
            assert_eq!(run(&c, "SELECT @@OPTIONS & 512").await, "rows 0");
            // `varchar` without a length declares one character.
            run(
                &c,
                "create proc dp3 (@p1 varchar = 'abc', @p2 int) as select @p1, @p2",
            )
            .await;
            assert_eq!(run(&c, "exec dp3 default, 2").await, "rows a,2");
            assert_eq!(run(&c, "exec dp3 'dddd', 3").await, "rows d,3");
            assert_eq!(
                run(&c, "DECLARE @v varchar = 'xyz'; SELECT @v").await,
                "rows x"
            );
        })
    });
}

/// babel_temp_table: a procedure's #t of a name its caller has.
#[test]
fn temporary_tables_of_nested_calls() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(&c, "CREATE TABLE #tt (a int); INSERT INTO #tt VALUES (1)").await;
            run(
                &c,
                "CREATE PROCEDURE inner_p AS BEGIN INSERT INTO #tt VALUES (3); SELECT a FROM #tt ORDER BY a; END",
            )
            .await;
            run(
                &c,
                "CREATE PROCEDURE outer_p AS BEGIN CREATE TABLE #tt (a int); INSERT INTO #tt VALUES (2); EXEC inner_p; END",
            )
            .await;
            // The inner procedure sees the outer one's #tt.
            assert_eq!(run(&c, "EXEC outer_p").await, "ok 0; ok 1; ok 1; rows 2 3");
            assert_eq!(run(&c, "SELECT a FROM #tt").await, "rows 1");
            // Created twice in one call: the second is an error.
            run(&c, "CREATE PROCEDURE twice_p AS BEGIN CREATE TABLE #tt (a int); CREATE TABLE #tt (a int); END").await;
            assert_eq!(run(&c, "EXEC twice_p").await, "ERROR 42P07");
            // Dynamic SQL is a scope too; the procedure's #t2 dies with it.
            run(
                &c,
                "CREATE PROCEDURE sp_exec_p AS BEGIN \
                 DECLARE @s NVARCHAR(500) = N'create table #t2(a int)'; \
                 CREATE TABLE #t2 (a int); EXECUTE sp_executesql @s; INSERT INTO #t2 VALUES (1); END",
            )
            .await;
            assert_eq!(run(&c, "EXEC sp_exec_p").await, "ok 0; ok 0; ok 1");
            assert_eq!(run(&c, "DROP TABLE #t2").await, "ERROR 42P01");
            assert_eq!(run(&c, "SELECT a FROM #tt").await, "rows 1");
        })
    });
}

/// Test-scope-identity and babel_output_in_dml (triggers).
#[test]
fn triggers_identity_scope_and_result_sets() {
    with_server(|conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(
                &c,
                "CREATE TABLE main_t (id int IDENTITY(1,1) NOT NULL PRIMARY KEY, name varchar(20))",
            )
            .await;
            run(
                &c,
                "CREATE TABLE trig_t (id int, id2 int IDENTITY(1,1) NOT NULL)",
            )
            .await;
            run(&c, "INSERT INTO trig_t (id) VALUES (5)").await;
            run(
                &c,
                "CREATE TRIGGER main_ins ON main_t FOR INSERT AS INSERT INTO trig_t (id) SELECT id FROM inserted",
            )
            .await;
            run(&c, "INSERT INTO main_t (name) VALUES ('a')").await;
            // The trigger's insert came last: @@IDENTITY is trig_t's.
            assert_eq!(
                run(&c, "SELECT @@IDENTITY, SCOPE_IDENTITY()").await,
                "rows 2,1"
            );
            // sp_executesql without EXEC as the batch's first statement.
            assert_eq!(
                run(
                    &c,
                    "sp_executesql N'INSERT INTO main_t (name) VALUES (@n); SELECT @@IDENTITY, SCOPE_IDENTITY()', N'@n varchar(20)', @n = 'b'"
                )
                .await,
                "ok 1; rows 3,2"
            );
            // A trigger's result set reaches the client before the
            // statement's own count.
            run(&c, "CREATE TABLE out_t (fname varchar(10), age int)").await;
            run(
                &c,
                "create trigger out_trig on out_t for insert as begin update out_t set age = -1 output inserted.*, deleted.* end",
            )
            .await;
            assert_eq!(
                run(&c, "insert into out_t values ('joey', 45)").await,
                "rows joey,-1,joey,45; ok 1"
            );
        })
    });
}
