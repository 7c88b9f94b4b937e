use super::*;

fn sql(s: &str) -> TStmt {
    TStmt::Sql(s.into())
}

#[test]
fn newline_separated_statements() {
    let b = parse_batch(
        "SELECT 1\nTRUNCATE TABLE t\nINSERT INTO t SELECT a FROM u UNION SELECT 2\nSELECT 3",
    )
    .unwrap();
    assert_eq!(
        b,
        vec![
            sql("SELECT 1"),
            sql("TRUNCATE TABLE t"),
            sql("INSERT INTO t SELECT a FROM u UNION SELECT 2"),
            sql("SELECT 3")
        ]
    );
    let b =
        parse_batch("UPDATE t SET a = CASE WHEN b = 1 THEN 2 ELSE 3 END WHERE c = 1 DELETE FROM t")
            .unwrap();
    assert_eq!(b.len(), 2, "{b:?}");
    let b = parse_batch(
        "DROP TABLE IF EXISTS t\nCREATE TABLE t (a int)\nWITH c AS (SELECT 1 AS x) SELECT x FROM c",
    )
    .unwrap();
    assert_eq!(b.len(), 3, "{b:?}");
}

#[test]
fn the_delayed_durability_loop() {
    let b = parse_batch(
        "DECLARE @i int = 1, @s varchar(10);\nWHILE @i <= 10000\nBEGIN\n  BEGIN TRAN\n  INSERT INTO t VALUES (@i)\n  COMMIT TRAN WITH (DELAYED_DURABILITY = ON)\n  SET @i += 1\nEND",
    )
    .unwrap();
    assert_eq!(b.len(), 2);
    let TStmt::Declare(v) = &b[0] else {
        panic!("{b:?}")
    };
    assert_eq!(v[0].init.as_deref(), Some("1"));
    assert_eq!(v[1].ty, "varchar(10)");
    let TStmt::While { cond, body } = &b[1] else {
        panic!()
    };
    assert_eq!(cond.trim(), "@i <= 10000");
    let TStmt::Block(s) = body.as_ref() else {
        panic!()
    };
    assert_eq!(s[0], TStmt::BeginTran);
    assert_eq!(s[1], sql("INSERT INTO t VALUES (@i)"));
    assert_eq!(s[2], TStmt::CommitTran(Some(true)));
    assert_eq!(
        s[3],
        TStmt::Assign {
            var: "@i".into(),
            op: Some('+'),
            expr: "1".into()
        }
    );
}

#[test]
fn procedures_and_calls() {
    let b = parse_batch(
        "CREATE PROCEDURE dbo.p @Iterations int = 1000, @out int OUTPUT AS\nBEGIN\nSET NOCOUNT ON\nSELECT @out = count(*) FROM t\nRETURN 3\nEND",
    )
    .unwrap();
    let TStmt::CreateProc(d) = &b[0] else {
        panic!("{b:?}")
    };
    assert_eq!(d.name, "p");
    assert_eq!(d.params[0].default.as_deref(), Some("1000"));
    assert!(d.params[1].output);
    let body = parse_batch(&d.body).unwrap();
    let TStmt::Block(s) = &body[0] else { panic!() };
    assert_eq!(s[0], TStmt::NoCount(true));
    assert!(
        matches!(&s[1], TStmt::SelectAssign { query, .. } if query.trim() == "SELECT count(*) FROM t")
    );
    let b =
        parse_batch("EXEC @rc = p 5, @out = @x OUTPUT\nEXECUTE p @Iterations = DEFAULT").unwrap();
    let TStmt::Exec(c) = &b[0] else { panic!() };
    assert_eq!(c.ret.as_deref(), Some("@rc"));
    assert_eq!(c.args.len(), 2);
    assert!(c.args[1].output);
    let TStmt::Exec(c) = &b[1] else { panic!() };
    assert_eq!(c.args[0].value, None);
}

#[test]
fn if_else_and_errors() {
    let b = parse_batch(
        "IF @a > 1 PRINT 'x' ELSE IF EXISTS (SELECT 1) SELECT 2 ELSE BEGIN SELECT 3 END",
    )
    .unwrap();
    assert_eq!(b.len(), 1, "{b:?}");
    assert!(parse_batch("BEGIN SELECT 1").is_err());
    assert!(parse_batch("END").is_err());
    assert!(parse_batch("WHILE 1=1").is_err());
}

#[test]
fn which_batches_are_tsql() {
    assert!(is_tsql_batch("DECLARE @i int = 1"));
    assert!(is_tsql_batch("select 1; if 1=1 print 'a'"));
    assert!(is_tsql_batch("SELECT @@ROWCOUNT"));
    assert!(!is_tsql_batch("BEGIN; SELECT 1; COMMIT"));
    assert!(!is_tsql_batch(
        "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE"
    ));
    assert!(!is_tsql_batch("DECLARE c CURSOR FOR SELECT 1"));
    assert!(!is_tsql_batch("EXECUTE q(1)"));
    // The session runs these system procedures itself.
    assert!(!is_tsql_batch("EXEC sys.sp_flush_log"));
    assert!(!is_tsql_batch(
        "ALTER TYPE mood ADD VALUE IF NOT EXISTS 'meh'"
    ));
    assert!(!is_tsql_batch(
        "ALTER TABLE t ALTER COLUMN v DROP IDENTITY IF EXISTS"
    ));
    assert!(is_tsql_batch("SELECT 1\nIF EXISTS (SELECT 1) PRINT 'yes'"));
    assert!(!is_tsql_batch("EXEC sp_flush_log"));
    assert!(is_tsql_batch("EXEC dbo.my_proc"));
    assert!(!is_tsql_batch("SELECT '@x' @> '{}'"));
    assert!(is_tsql_batch("BEGIN TRAN"));
    assert!(is_tsql_batch(
        "BEGIN TRAN\nINSERT INTO t VALUES (1)\nCOMMIT TRAN"
    ));
    assert!(!is_tsql_batch(
        "BEGIN TRAN; INSERT INTO t VALUES (1); COMMIT TRAN"
    ));
    assert!(is_tsql_batch("RAISERROR('x', 16, 1)"));
    assert!(is_tsql_batch("COMMIT TRAN"));
    assert!(is_tsql_batch("SET NOCOUNT ON"));
    assert!(!is_tsql_batch("UPDATE t SET a = 1 WHERE b = 2"));
}

#[test]
fn session_statements() {
    assert!(is_tsql_batch("SET XACT_ABORT ON"));
    assert!(is_tsql_batch("SET IDENTITY_INSERT dbo.t ON"));
    assert!(is_tsql_batch("WAITFOR DELAY '00:00:01'"));
    assert_eq!(
        parse_batch(
            "SET XACT_ABORT ON\nSET IDENTITY_INSERT [dbo].[T] OFF\nWAITFOR DELAY '00:00:00.5'"
        )
        .unwrap(),
        vec![
            TStmt::XactAbort(true),
            TStmt::IdentityInsert {
                table: "t".into(),
                on: false
            },
            TStmt::WaitForDelay("'00:00:00.5'".into()),
        ]
    );
    assert!(parse_batch("SET IDENTITY_INSERT t MAYBE").is_err());
    assert!(parse_batch("SET XACT_ABORT = 1").is_err());
    assert_eq!(
        parse_batch("WAITFOR TIME '10:00'").unwrap_err().kind,
        crate::error::ErrorKind::FeatureNotSupported
    );
}

/// A keyword that needs a condition at the very end of the batch is an error,
/// not a panic (found by fuzzing: `d e id =if`).
#[test]
fn a_condition_missing_at_the_end() {
    for b in [
        "IF",
        "d e id =if",
        "WHILE",
        "IF 1=1 SELECT 1 ELSE",
        "WHILE 1=1",
    ] {
        assert!(parse_batch(b).is_err(), "{b}");
    }
}

#[test]
fn table_variables_functions_and_insert_exec() {
    let b = parse_batch("DECLARE @t TABLE (a int PRIMARY KEY, b varchar(5) DEFAULT 'x')").unwrap();
    let TStmt::Declare(v) = &b[0] else {
        panic!("{b:?}")
    };
    assert_eq!(v[0].name, "@t");
    assert_eq!(
        v[0].ty,
        "TABLE (a int PRIMARY KEY, b varchar(5) DEFAULT 'x')"
    );
    assert!(parse_batch("DECLARE @t TABLE").is_err());
    // INSERT ... VALUES then EXEC on the next line are two statements;
    // INSERT ... EXEC is one.
    let b = parse_batch("INSERT INTO t VALUES (1)\nEXEC p 4").unwrap();
    assert_eq!(b.len(), 2, "{b:?}");
    let b = parse_batch("INSERT INTO t EXEC p 4").unwrap();
    assert_eq!(b.len(), 1, "{b:?}");
    let b = parse_batch(
        "CREATE OR ALTER FUNCTION [dbo].[f] (@a int = 1, @b varchar(3)) RETURNS int WITH SCHEMABINDING AS BEGIN RETURN @a END",
    )
    .unwrap();
    let TStmt::CreateFunc(f) = &b[0] else {
        panic!("{b:?}")
    };
    assert_eq!((f.name.as_str(), f.returns.as_str()), ("f", "int"));
    assert_eq!(f.params.len(), 2);
    assert_eq!(f.params[0].default.as_deref(), Some("1"));
    assert_eq!(f.mode, ProcMode::CreateOrAlter);
    let e = parse_batch(
        "CREATE FUNCTION f () RETURNS @t TABLE (a int) AS BEGIN INSERT @t VALUES (1) RETURN END",
    )
    .unwrap_err();
    assert_eq!(e.kind, crate::error::ErrorKind::FeatureNotSupported);
    let b =
        parse_batch("CREATE FUNCTION f (@a int) RETURNS TABLE AS RETURN (SELECT @a AS a)").unwrap();
    assert!(matches!(&b[0], TStmt::CreateFunc(f) if f.returns == "TABLE"));
    assert_eq!(
        parse_batch("DROP FUNCTION IF EXISTS f, dbo.g").unwrap(),
        vec![TStmt::DropFunc {
            names: vec!["f".into(), "g".into()],
            if_exists: true
        }]
    );
    assert!(is_tsql_batch(
        "create function f (@p int) returns int as begin return @p end"
    ));
    assert!(is_tsql_batch(
        "CREATE FUNCTION dbo.f() RETURNS int AS BEGIN RETURN 1 END"
    ));
    assert!(is_tsql_batch("DROP FUNCTION f"));
    assert!(!is_tsql_batch("DROP FUNCTION f(int)"));
    assert!(!is_tsql_batch(
        "CREATE FUNCTION f(a int) RETURNS int LANGUAGE sql AS 'SELECT a'"
    ));
}

#[test]
fn merge_clauses_stay_in_their_statement() {
    let m = "MERGE t AS a USING s AS b ON a.id = b.id WHEN MATCHED AND b.x = 0 THEN DELETE \
             WHEN MATCHED THEN UPDATE SET a.x = b.x \
             WHEN NOT MATCHED BY TARGET THEN INSERT (id, x) VALUES (b.id, b.x) \
             WHEN NOT MATCHED BY SOURCE THEN DELETE OUTPUT $action, inserted.id";
    let b = parse_batch(&format!("{m};\nSELECT @@ROWCOUNT")).unwrap();
    assert_eq!(b.len(), 2, "{b:?}");
    let b = parse_batch(&format!("WITH c AS (SELECT 1 AS id) {m}\nSELECT 1")).unwrap();
    assert_eq!(b.len(), 2, "{b:?}");
}
