//! The SQL layer end to end over an in-memory instance: DDL, DML, queries,
//! transactions and the durability statements, the system views, and errors.
//! (What client tools send is in `sql_statements_clients.rs`.)

use crate::common;
use crate::common::statements;
use common::engine;
use statements::{err, one, rows, tag};
use std::sync::Arc;
use walden_engine::{Instance, InstanceConfig, LogConfig, MemVfs};
use walden_sql::{ErrorKind, SqlEngine, SqlSession, TxStatus};

#[test]
fn ddl_dml_and_queries() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(
        &mut s,
        "CREATE TABLE dbo.orders (id INT IDENTITY(1,1) PRIMARY KEY, item VARCHAR(20) NOT NULL, qty INT DEFAULT 1, price NUMERIC(10,2), at TIMESTAMP DEFAULT now())",
    );
    assert_eq!(tag(&mut s, "INSERT INTO orders (item, qty, price) VALUES ('a', 2, 1.50), ('b', DEFAULT, 2.25), ('c', 5, NULL)"), "INSERT 0 3");
    assert_eq!(
        rows(
            &mut s,
            "INSERT INTO public.orders (item) VALUES ('d') RETURNING id, qty"
        ),
        vec![vec!["4", "1"]]
    );
    assert_eq!(one(&mut s, "SELECT count(*) FROM orders"), "4");
    assert_eq!(
        rows(
            &mut s,
            "SELECT item FROM orders WHERE qty > 1 ORDER BY item DESC"
        ),
        vec![vec!["c"], vec!["a"]]
    );
    assert_eq!(one(&mut s, "SELECT sum(qty * price) FROM orders"), "5.25");
    assert_eq!(
        rows(&mut s, "SELECT TOP (2) id FROM orders ORDER BY id DESC"),
        vec![vec!["4"], vec!["3"]]
    );
    assert_eq!(
        rows(&mut s, "SELECT id FROM orders ORDER BY id LIMIT 2 OFFSET 1"),
        vec![vec!["2"], vec!["3"]]
    );
    assert_eq!(
        tag(&mut s, "UPDATE orders SET qty = qty + 10 WHERE id = 1"),
        "UPDATE 1"
    );
    assert_eq!(one(&mut s, "SELECT qty FROM orders WHERE id = 1"), "12");
    assert_eq!(
        tag(&mut s, "DELETE FROM orders WHERE item = 'd'"),
        "DELETE 1"
    );
    assert_eq!(
        tag(&mut s, "DELETE TOP (1) FROM dbo.orders WHERE qty < 100"),
        "DELETE 1"
    );
    assert_eq!(one(&mut s, "SELECT count(*) FROM orders"), "2");

    tag(
        &mut s,
        "CREATE TABLE customers (id INT PRIMARY KEY, name TEXT)",
    );
    tag(&mut s, "CREATE TABLE sales (cid INT, amount INT)");
    tag(
        &mut s,
        "INSERT INTO customers VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')",
    );
    tag(
        &mut s,
        "INSERT INTO sales VALUES (1, 10), (1, 20), (2, 5), (4, 1)",
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT c.name, sum(s.amount) AS total FROM customers c JOIN sales s ON s.cid = c.id GROUP BY c.name HAVING sum(s.amount) > 6 ORDER BY total DESC"
        ),
        vec![vec!["ann", "30"]]
    );
    assert_eq!(
        rows(&mut s, "SELECT c.name, s.amount FROM customers c LEFT JOIN sales s ON s.cid = c.id WHERE c.id >= 2 ORDER BY 1"),
        vec![vec!["bob", "5"], vec!["cy", "NULL"]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT name FROM customers WHERE id IN (SELECT cid FROM sales) ORDER BY name"
        ),
        vec![vec!["ann"], vec!["bob"]]
    );
    assert_eq!(
        rows(&mut s, "SELECT name FROM customers c WHERE NOT EXISTS (SELECT 1 FROM sales s WHERE s.cid = c.id)"),
        vec![vec!["cy"]]
    );
    assert_eq!(
        rows(&mut s, "SELECT name, (SELECT count(*) FROM sales s WHERE s.cid = c.id) FROM customers c ORDER BY id"),
        vec![vec!["ann", "2"], vec!["bob", "1"], vec!["cy", "0"]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT DISTINCT cid FROM sales WHERE cid < 3 ORDER BY cid"
        ),
        vec![vec!["1"], vec!["2"]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT cid FROM sales UNION SELECT id FROM customers ORDER BY 1"
        ),
        vec![vec!["1"], vec!["2"], vec!["3"], vec!["4"]]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM customers, sales WHERE customers.id = sales.cid"
        ),
        "3"
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT CASE WHEN count(*) > 2 THEN 'many' ELSE 'few' END FROM sales"
        ),
        "many"
    );
    assert_eq!(one(&mut s, "SELECT coalesce(NULL, isnull(NULL, 7))"), "7");
    assert_eq!(one(&mut s, "SELECT upper('ab') || lower('CD')"), "ABcd");
    assert_eq!(one(&mut s, "SELECT CAST('42' AS INT) + 1"), "43");
    assert_eq!(
        one(&mut s, "SELECT DATEADD(day, 1, CAST('2024-02-28' AS DATE))"),
        "2024-02-29"
    );
    assert_eq!(
        one(&mut s, "SELECT DATEDIFF(day, '2024-01-01', '2024-03-01')"),
        "60"
    );

    // INSERT ... SELECT from generate_series and from another table with TOP.
    tag(
        &mut s,
        "CREATE TABLE nums (n BIGINT PRIMARY KEY, sq BIGINT)",
    );
    assert_eq!(
        tag(
            &mut s,
            "INSERT INTO nums SELECT g, g * g FROM generate_series(1, 1000) AS g"
        ),
        "INSERT 0 1000"
    );
    assert_eq!(one(&mut s, "SELECT sq FROM nums WHERE n = 31"), "961");
    tag(&mut s, "CREATE TABLE few (n BIGINT)");
    assert_eq!(
        tag(
            &mut s,
            "INSERT few SELECT TOP (5) n FROM nums ORDER BY n DESC"
        ),
        "INSERT 0 5"
    );
    assert_eq!(one(&mut s, "SELECT min(n) FROM few"), "996");
}

#[test]
fn transactions_and_durability_statements() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    let mut other = e.connect("walden", "u", "other").unwrap();
    tag(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    tag(&mut s, "BEGIN TRAN");
    assert_eq!(s.tx_status(), TxStatus::InBlock);
    tag(&mut s, "INSERT INTO t VALUES (1, 1)");
    assert_eq!(
        one(&mut other, "SELECT count(*) FROM t"),
        "0",
        "uncommitted rows are invisible"
    );
    tag(&mut s, "COMMIT TRAN WITH (DELAYED_DURABILITY = ON)");
    assert_eq!(one(&mut other, "SELECT count(*) FROM t"), "1");
    // DISABLED (the default) ignores the request silently: fully durable.
    assert_eq!(
        one(
            &mut s,
            "SELECT unhardened_commits FROM sys.dm_log_exposure WHERE database_name = 'walden'"
        ),
        "0"
    );

    tag(
        &mut s,
        "ALTER DATABASE walden SET DELAYED_DURABILITY = ALLOWED",
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT delayed_durability_desc FROM sys.databases WHERE name = 'walden'"
        ),
        "ALLOWED"
    );
    tag(&mut s, "SET synchronous_commit = off");
    assert_eq!(one(&mut s, "SHOW synchronous_commit"), "off");
    tag(
        &mut s,
        "ALTER DATABASE walden SET MAX_EXPOSURE_BYTES = 1048576",
    );
    for i in 2..50 {
        tag(&mut s, &format!("INSERT INTO t VALUES ({i}, {i})"));
    }
    tag(&mut s, "EXEC sys.sp_flush_log");
    assert_eq!(
        one(
            &mut s,
            "SELECT unhardened_bytes FROM sys.dm_log_exposure WHERE database_id = DB_ID('walden')"
        ),
        "0"
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT max_exposure_bytes FROM sys.databases WHERE name = 'walden'"
        ),
        "1048576"
    );

    // In a session that has spoken only PostgreSQL, errors abort an
    // explicit transaction until ROLLBACK; the session goes on.
    tag(&mut other, "BEGIN");
    tag(&mut other, "INSERT INTO t VALUES (100, 1)");
    assert_eq!(
        err(&mut other, "INSERT INTO t VALUES (1, 1)"),
        ErrorKind::UniqueViolation
    );
    assert_eq!(other.tx_status(), TxStatus::Failed);
    assert_eq!(err(&mut other, "SELECT 1"), ErrorKind::InFailedTransaction);
    assert_eq!(tag(&mut other, "COMMIT"), "ROLLBACK");
    assert_eq!(
        one(&mut other, "SELECT count(*) FROM t WHERE id = 100"),
        "0"
    );
    assert_eq!(other.tx_status(), TxStatus::Idle);
    // A session that has spoken T-SQL (BEGIN TRAN above) follows SQL
    // Server's XACT_ABORT OFF: the failed statement alone is undone.
    tag(&mut s, "BEGIN");
    tag(&mut s, "INSERT INTO t VALUES (100, 1)");
    assert!(s
        .execute_batch("INSERT INTO t VALUES (1, 1)")
        .iter()
        .any(|r| r.is_err()));
    assert_eq!(s.tx_status(), TxStatus::InBlock);
    tag(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, "SELECT count(*) FROM t WHERE id = 100"), "0");
    assert_eq!(s.tx_status(), TxStatus::Idle);

    // Counters move.
    let writes: i64 = one(
        &mut s,
        "SELECT num_of_writes FROM sys.dm_io_virtual_file_stats(DB_ID('walden'), 2)",
    )
    .parse()
    .unwrap();
    assert!(writes > 0);
    let flushes: i64 = one(
        &mut s,
        "SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Log Flushes/sec' AND instance_name = 'walden'",
    )
    .parse()
    .unwrap();
    assert!(flushes > 0);
    assert!(!rows(&mut s, "SELECT wait_type, waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'WRITELOG'").is_empty());
    tag(&mut s, "DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)");
    assert_eq!(
        one(
            &mut s,
            "SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'WRITELOG'"
        ),
        "0"
    );
    assert_eq!(
        one(&mut s, "SELECT @@SPID").parse::<u32>().unwrap(),
        s.session_id()
    );
    tag(&mut s, "CHECKPOINT");
}

/// An identity column takes its START WITH and INCREMENT BY; what Walden
/// cannot honour (a generated expression, ALWAYS, bounds) is refused
/// instead of being taken for a plain identity.
#[test]
fn generated_columns_are_honoured_or_refused() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(
        &mut s,
        "CREATE TABLE g (id int GENERATED BY DEFAULT AS IDENTITY (START WITH 100) PRIMARY KEY, v text)",
    );
    tag(
        &mut s,
        "CREATE TABLE h (id int GENERATED BY DEFAULT AS IDENTITY (INCREMENT BY 5) PRIMARY KEY, v int)",
    );
    tag(&mut s, "INSERT INTO h (v) VALUES (0)");
    // An ORM's insert of a row with nothing but defaults.
    tag(&mut s, "INSERT INTO h DEFAULT VALUES");
    assert_eq!(
        rows(&mut s, "SELECT id, v FROM h ORDER BY id"),
        vec![
            vec!["1".to_string(), "0".to_string()],
            vec!["6".to_string(), "NULL".to_string()]
        ]
    );
    tag(&mut s, "INSERT INTO g (v) VALUES ('a'), ('b')");
    tag(&mut s, "INSERT INTO g VALUES (7, 'explicit')");
    assert_eq!(
        rows(&mut s, "SELECT id, v FROM g ORDER BY id"),
        vec![
            vec!["7".to_string(), "explicit".to_string()],
            vec!["100".to_string(), "a".to_string()],
            vec!["101".to_string(), "b".to_string()],
        ]
    );
    for sql in [
        "CREATE TABLE x (id int GENERATED BY DEFAULT AS IDENTITY (MAXVALUE 10))",
        "CREATE TABLE x (id int GENERATED BY DEFAULT AS IDENTITY (CYCLE))",
    ] {
        assert_eq!(err(&mut s, sql), ErrorKind::FeatureNotSupported, "{sql}");
    }
    assert_eq!(err(&mut s, "SELECT * FROM x"), ErrorKind::UndefinedTable);
}

#[test]
fn errors_name_the_problem() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(3) NOT NULL)",
    );
    assert_eq!(err(&mut s, "SELEC 1"), ErrorKind::Syntax);
    assert_eq!(err(&mut s, "SELECT * FROM nope"), ErrorKind::UndefinedTable);
    assert_eq!(
        err(&mut s, "SELECT nope FROM t"),
        ErrorKind::UndefinedColumn
    );
    assert_eq!(
        err(&mut s, "INSERT INTO t (id) VALUES (1)"),
        ErrorKind::NotNullViolation
    );
    assert_eq!(
        err(&mut s, "INSERT INTO t VALUES (1, 'toolong')"),
        ErrorKind::StringTooLong
    );
    assert_eq!(
        err(&mut s, "INSERT INTO t VALUES ('x', 'a')"),
        ErrorKind::InvalidText
    );
    assert_eq!(err(&mut s, "SELECT 1 / 0"), ErrorKind::DivisionByZero);
    assert_eq!(
        err(&mut s, "CREATE TABLE t (id INT)"),
        ErrorKind::DuplicateTable
    );
    assert_eq!(
        err(&mut s, "SELECT id, count(*) FROM t"),
        ErrorKind::GroupingError
    );
    assert_eq!(
        err(&mut s, "SELECT nosuchfn(1)"),
        ErrorKind::UndefinedFunction
    );
    assert!(e.connect("nodb", "u", "x").is_err());
    // The session still works.
    tag(&mut s, "INSERT INTO t VALUES (1, 'abc')");
    assert_eq!(one(&mut s, "SELECT name FROM t WHERE id = 1"), "abc");
}

#[test]
fn prepared_statements_infer_parameter_types() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(
        &mut s,
        "CREATE TABLE acc (aid INT PRIMARY KEY, abalance INT, filler CHAR(84))",
    );
    tag(
        &mut s,
        "INSERT INTO acc SELECT g, 0, '' FROM generate_series(1, 100) AS g",
    );
    let upd = s
        .prepare(
            "UPDATE acc SET abalance = abalance + $1 WHERE aid = $2",
            &[],
        )
        .unwrap();
    assert_eq!(
        upd.param_types,
        vec![walden_engine::DataType::Int, walden_engine::DataType::Int]
    );
    assert!(upd.columns.is_none());
    let sel = s
        .prepare("SELECT abalance FROM acc WHERE aid = $1", &[])
        .unwrap();
    assert_eq!(sel.columns.as_ref().unwrap()[0].name, "abalance");
    for i in 1..=10 {
        let out = s
            .execute_prepared(
                &upd,
                vec![walden_engine::Value::Int(5), walden_engine::Value::Int(i)],
            )
            .unwrap();
        assert_eq!(out.tag, "UPDATE 1");
    }
    let out = s
        .execute_prepared(&sel, vec![walden_engine::Value::text("3")])
        .unwrap();
    assert_eq!(out.rows[0][0], walden_engine::Value::Int(5));
    assert_eq!(one(&mut s, "SELECT sum(abalance) FROM acc"), "50");
}

#[test]
fn key_range_scans_return_what_a_full_scan_would() {
    // Ranges on the key's first column narrow the scan; every shape must give
    // exactly the rows the filter alone gives.
    let e = engine();
    let mut s = e.connect("walden", "u", "t").unwrap();
    tag(&mut s, "CREATE TABLE r1 (id BIGINT PRIMARY KEY, v INT)");
    tag(
        &mut s,
        "CREATE TABLE r2 (a INT, b INT, v INT, PRIMARY KEY (a, b))",
    );
    tag(
        &mut s,
        "INSERT INTO r1 SELECT g, g % 7 FROM generate_series(1, 200) g",
    );
    tag(
        &mut s,
        "INSERT INTO r2 SELECT g / 10, g % 10, g FROM generate_series(0, 199) g",
    );
    let count = |s: &mut SqlSession, sql: &str| -> i64 { rows(s, sql)[0][0].parse().unwrap() };
    let cases: &[(&str, i64)] = &[
        ("SELECT count(*) FROM r1 WHERE id BETWEEN 10 AND 19", 10),
        ("SELECT count(*) FROM r1 WHERE id > 190", 10),
        ("SELECT count(*) FROM r1 WHERE id >= 190", 11),
        ("SELECT count(*) FROM r1 WHERE id < 11", 10),
        ("SELECT count(*) FROM r1 WHERE 11 > id", 10),
        ("SELECT count(*) FROM r1 WHERE 190 <= id AND id < 195", 5),
        ("SELECT count(*) FROM r1 WHERE id > 2.5 AND id < 5", 2),
        ("SELECT count(*) FROM r1 WHERE id > 50 AND id < 40", 0),
        ("SELECT count(*) FROM r1 WHERE id > 50 AND id < 50", 0),
        ("SELECT count(*) FROM r1 WHERE id >= 50 AND id <= 50", 1),
        ("SELECT count(*) FROM r1 WHERE id > NULL", 0),
        ("SELECT count(*) FROM r1 WHERE id BETWEEN 19 AND 10", 0),
        (
            "SELECT count(*) FROM r1 WHERE id NOT BETWEEN 10 AND 189",
            20,
        ),
        ("SELECT count(*) FROM r2 WHERE a > 5", 140),
        ("SELECT count(*) FROM r2 WHERE a >= 5 AND a <= 6", 20),
        (
            "SELECT count(*) FROM r2 WHERE a BETWEEN 3 AND 3 AND b < 4",
            4,
        ),
        ("SELECT count(*) FROM r2 WHERE a < 2", 20),
    ];
    for (sql, want) in cases {
        assert_eq!(count(&mut s, sql), *want, "{sql}");
    }
    // DML through the same path, inside a transaction that sees its own writes.
    tag(&mut s, "BEGIN");
    tag(&mut s, "INSERT INTO r1 VALUES (1000, 1)");
    assert_eq!(
        tag(&mut s, "DELETE FROM r1 WHERE id BETWEEN 150 AND 1000"),
        "DELETE 52"
    );
    assert_eq!(
        tag(&mut s, "UPDATE r1 SET v = -1 WHERE id > 140 AND id <= 145"),
        "UPDATE 5"
    );
    tag(&mut s, "COMMIT");
    assert_eq!(count(&mut s, "SELECT count(*) FROM r1"), 149);
    assert_eq!(count(&mut s, "SELECT count(*) FROM r1 WHERE v = -1"), 5);
    assert_eq!(tag(&mut s, "DELETE FROM r2 WHERE a > 17"), "DELETE 20");
}

/// Plans are cached per parsed statement; a cached plan must not outlive a
/// change to the tables it was made for.
#[test]
fn cached_plans_follow_ddl() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(&mut s, "CREATE TABLE pc (a INT NOT NULL, b VARCHAR(10))");
    // Literals are lifted, so these share one template and one plan.
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (1, 'x')");
    let hits = s.plan_cache_hits();
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (2, 'y')");
    assert_eq!(
        s.plan_cache_hits(),
        hits + 1,
        "the second insert reuses the plan"
    );
    assert_eq!(one(&mut s, "SELECT b FROM pc WHERE a = 2"), "y");
    assert_eq!(one(&mut s, "SELECT b FROM pc WHERE a = 1"), "x");

    // DROP and CREATE with the columns in another order: the same text must
    // resolve the new table's columns.
    tag(&mut s, "DROP TABLE pc");
    assert_eq!(
        err(&mut s, "INSERT INTO pc (a, b) VALUES (3, 'z')"),
        ErrorKind::UndefinedTable
    );
    assert_eq!(
        err(&mut s, "SELECT b FROM pc WHERE a = 1"),
        ErrorKind::UndefinedTable
    );
    tag(
        &mut s,
        "CREATE TABLE pc (b VARCHAR(10), extra INT, a INT NOT NULL)",
    );
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (4, 'w')");
    assert_eq!(
        rows(&mut s, "SELECT * FROM pc"),
        vec![vec!["w", "NULL", "4"]]
    );
    assert_eq!(one(&mut s, "SELECT b FROM pc WHERE a = 4"), "w");
    tag(&mut s, "UPDATE pc SET extra = 7 WHERE a = 4");
    tag(&mut s, "UPDATE pc SET extra = 8 WHERE a = 5");
    assert_eq!(one(&mut s, "SELECT extra FROM pc WHERE a = 4"), "7");

    // A recreated table without the updated column: the cached UPDATE fails
    // as a fresh one would.
    tag(&mut s, "DROP TABLE pc");
    tag(&mut s, "CREATE TABLE pc (a INT NOT NULL, b VARCHAR(10))");
    assert_eq!(
        err(&mut s, "UPDATE pc SET extra = 9 WHERE a = 4"),
        ErrorKind::UndefinedColumn
    );

    // ALTER TABLE ... ADD PRIMARY KEY replaces the table: later inserts
    // through the cached plan go to the keyed table and meet its key.
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (1, 'p')");
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (2, 'q')");
    tag(&mut s, "ALTER TABLE pc ADD PRIMARY KEY (a)");
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (3, 'r')");
    assert_eq!(
        err(&mut s, "INSERT INTO pc (a, b) VALUES (1, 's')"),
        ErrorKind::UniqueViolation
    );
    assert_eq!(one(&mut s, "SELECT count(*) FROM pc"), "3");
    assert_eq!(one(&mut s, "SELECT b FROM pc WHERE a = 3"), "r");
    tag(&mut s, "DELETE FROM pc WHERE a = 3");
    assert_eq!(one(&mut s, "SELECT count(*) FROM pc"), "2");

    // TRUNCATE keeps the table; the cached plans still see its rows.
    tag(&mut s, "TRUNCATE TABLE pc");
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (5, 't')");
    assert_eq!(one(&mut s, "SELECT b FROM pc WHERE a = 5"), "t");

    // A prepared statement's plan follows the table too.
    let ins = s
        .prepare("INSERT INTO pc (a, b) VALUES ($1, $2)", &[])
        .unwrap();
    let run = |s: &mut SqlSession, a: i64, b: &str| {
        s.execute_prepared(
            &ins,
            vec![walden_engine::Value::Int(a), walden_engine::Value::text(b)],
        )
    };
    run(&mut s, 6, "u").unwrap();
    tag(&mut s, "DROP TABLE pc");
    assert!(run(&mut s, 7, "v").is_err());
    tag(&mut s, "CREATE TABLE pc (b VARCHAR(10), a INT NOT NULL)");
    run(&mut s, 8, "v").unwrap();
    assert_eq!(rows(&mut s, "SELECT * FROM pc"), vec![vec!["v", "8"]]);

    // Another session's DDL invalidates this session's plans as well.
    let mut other = e.connect("walden", "u", "other").unwrap();
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (9, 'o')");
    tag(&mut other, "DROP TABLE pc");
    tag(
        &mut other,
        "CREATE TABLE pc (a INT NOT NULL, c INT, b VARCHAR(10))",
    );
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (10, 'n')");
    assert_eq!(
        rows(&mut other, "SELECT * FROM pc"),
        vec![vec!["10", "NULL", "n"]]
    );

    // The same text in another database resolves that database's table.
    tag(&mut s, "CREATE DATABASE second");
    tag(&mut s, "USE second");
    tag(
        &mut s,
        "CREATE TABLE pc (z INT, a INT NOT NULL, b VARCHAR(10))",
    );
    tag(&mut s, "INSERT INTO pc (a, b) VALUES (11, 'm')");
    assert_eq!(
        rows(&mut s, "SELECT * FROM pc"),
        vec![vec!["NULL", "11", "m"]]
    );
    tag(&mut s, "USE walden");
    assert_eq!(one(&mut s, "SELECT count(*) FROM pc"), "1");
}

/// An uncorrelated subquery keeps its rows in the plan for one statement:
/// such plans are made afresh for every execution.
#[test]
fn plans_with_subqueries_are_not_reused() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(&mut s, "CREATE TABLE sq (a INT NOT NULL PRIMARY KEY)");
    tag(&mut s, "INSERT INTO sq (a) VALUES (1)");
    let q = "SELECT a FROM sq WHERE a = (SELECT max(a) FROM sq)";
    assert_eq!(one(&mut s, q), "1");
    tag(&mut s, "INSERT INTO sq (a) VALUES (2)");
    assert_eq!(one(&mut s, q), "2");
    let q = "SELECT count(*) FROM sq WHERE a IN (SELECT a FROM sq WHERE a > 1)";
    assert_eq!(one(&mut s, q), "1");
    tag(&mut s, "INSERT INTO sq (a) VALUES (3)");
    assert_eq!(one(&mut s, q), "2");
}

/// An engine over a fresh in-memory instance with these limits.
fn engine_with_limits(limits: walden_engine::Limits) -> Arc<SqlEngine> {
    let inst = Instance::open(InstanceConfig {
        vfs: Arc::new(MemVfs::new()),
        log: LogConfig {
            segment_size: 4 << 20,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        limits,
        ..InstanceConfig::new("/sql")
    })
    .unwrap();
    SqlEngine::new(inst)
}

/// A transaction whose changes pass `max_transaction_bytes` fails with
/// 53200 instead of growing until the process is killed; the session and
/// the data go on, and smaller transactions load the same rows.
#[test]
fn a_transaction_past_its_memory_limit_fails_with_53200() {
    let e = engine_with_limits(walden_engine::Limits {
        max_transaction_bytes: 1 << 20,
        ..Default::default()
    });
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)");
    const X: &str = "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'";
    // One statement: about 300 bytes a row, so 10,000 rows pass 1 MB.
    assert_eq!(
        err(
            &mut s,
            &format!("INSERT INTO t SELECT g, {X} FROM generate_series(1, 10000) g")
        ),
        ErrorKind::OutOfMemory
    );
    // Row by row in one block: the statement that passes it fails, and the
    // block is aborted as after any error.
    tag(&mut s, "BEGIN");
    let mut failed_at = None;
    for i in 1..=10_000 {
        let r = s
            .execute_batch(&format!("INSERT INTO t VALUES ({i}, {X})"))
            .pop()
            .unwrap();
        if let Err(e) = r {
            assert_eq!(e.kind, ErrorKind::OutOfMemory, "{e}");
            assert!(e.message.contains("transaction_memory_limit_mb"), "{e}");
            failed_at = Some(i);
            break;
        }
    }
    let n = failed_at.expect("the limit was never reached");
    assert!((2_000..6_000).contains(&n), "failed at row {n}");
    tag(&mut s, "ROLLBACK");
    assert_eq!(tag(&mut s, "SELECT * FROM t"), "SELECT 0");
    // In pieces under the limit, the same rows load.
    for k in 0..5 {
        tag(
            &mut s,
            &format!(
                "INSERT INTO t SELECT g, {X} FROM generate_series({}, {}) g",
                k * 2000 + 1,
                k * 2000 + 2000
            ),
        );
    }
    assert_eq!(tag(&mut s, "SELECT * FROM t"), "SELECT 10000");
}

/// What a DDL statement builds in memory (a new index's entries, a table
/// re-keyed, rewritten or folded with the transaction's writes) counts
/// against the same limit: past it the statement fails with 53200 and
/// nothing changes, instead of the server growing until it is killed. A
/// build undone by ROLLBACK TO gives its share back.
#[test]
fn ddl_builds_past_the_transaction_memory_limit_fail_with_53200() {
    let e = engine_with_limits(walden_engine::Limits {
        max_transaction_bytes: 1 << 20,
        ..Default::default()
    });
    let mut s = e.connect("walden", "u", "test").unwrap();
    let out_of_memory = |s: &mut SqlSession, sql: &str| {
        let e = s.execute_batch(sql).pop().unwrap().unwrap_err();
        assert_eq!(e.kind, ErrorKind::OutOfMemory, "{sql}: {e}");
        assert!(e.message.contains("transaction_memory_limit_mb"), "{e}");
    };
    // 7,500 rows of about 300 bytes, loaded in transactions under 1 MB.
    tag(&mut s, "CREATE TABLE big (id INT, v TEXT)");
    const X: &str = "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'";
    for k in 0..5 {
        tag(
            &mut s,
            &format!(
                "INSERT INTO big SELECT g, {X} || g FROM generate_series({}, {}) g",
                k * 1500 + 1,
                k * 1500 + 1500
            ),
        );
    }
    let indexes = "SELECT count(*) FROM pg_indexes WHERE tablename = 'big'";
    out_of_memory(&mut s, "CREATE INDEX big_v ON big (v)");
    // A rebuild whose new table has no indexes goes to a spill file
    // instead (docs/design.md, slice 4): it fits, and is undone here (as
    // is the rewrite to a new type below).
    tag(&mut s, "BEGIN");
    tag(&mut s, "ALTER TABLE big ADD PRIMARY KEY (id)");
    assert_eq!(
        one(&mut s, "SELECT count(*) || '|' || sum(id) FROM big"),
        "7500|28128750"
    );
    tag(&mut s, "ROLLBACK");
    out_of_memory(
        &mut s,
        "ALTER TABLE big ADD CONSTRAINT big_v_key UNIQUE (v)",
    );
    tag(&mut s, "BEGIN");
    tag(&mut s, "ALTER TABLE big ALTER COLUMN id TYPE BIGINT");
    tag(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, indexes), "0");
    assert_eq!(
        one(
            &mut s,
            "SELECT data_type FROM information_schema.columns \
             WHERE table_name = 'big' AND column_name = 'id'"
        ),
        "integer"
    );
    // A unique index over rows the transaction wrote folds them into the
    // table first: that counts too, and the block is aborted as after
    // any error.
    tag(&mut s, "BEGIN");
    tag(&mut s, "INSERT INTO big VALUES (0, 'y')");
    out_of_memory(&mut s, "CREATE UNIQUE INDEX big_id ON big (id)");
    tag(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, "SELECT count(*) FROM big"), "7500");
    assert_eq!(one(&mut s, indexes), "0");
    // Small builds fit; one undone by ROLLBACK TO gives its memory back,
    // so a hundred of them (about 1.7 MB built in all) do not add up.
    tag(&mut s, "CREATE TABLE small (id INT, v TEXT)");
    tag(
        &mut s,
        &format!("INSERT INTO small SELECT g, {X} FROM generate_series(1, 60) g"),
    );
    tag(&mut s, "BEGIN");
    for _ in 0..100 {
        tag(&mut s, "SAVEPOINT a");
        tag(&mut s, "CREATE INDEX small_v ON small (v)");
        tag(&mut s, "ROLLBACK TO a");
    }
    tag(&mut s, "CREATE INDEX small_v ON small (v)");
    tag(&mut s, "COMMIT");
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'small_v'"
        ),
        "1"
    );
    assert_eq!(one(&mut s, "SELECT count(*) FROM big WHERE id <= 10"), "10");
}

/// The time zone and search path a statement uses are derived from the
/// settings once per change (see `Settings::derived`): every way a setting
/// changes (SET, a rolled-back SET, SET LOCAL, RESET, RESET ALL) must show
/// in the very next statement.
#[test]
fn the_time_zone_and_search_path_follow_every_change_at_once() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    let ts = "SELECT '2026-01-01 12:00:00+00'::timestamptz::text";
    let utc = "2026-01-01 12:00:00+00";
    let ny = "2026-01-01 07:00:00-05";
    let tokyo = "2026-01-01 21:00:00+09";
    assert_eq!(one(&mut s, ts), utc);
    tag(&mut s, "SET TIME ZONE 'America/New_York'");
    assert_eq!(one(&mut s, ts), ny);
    tag(&mut s, "BEGIN");
    tag(&mut s, "SET TimeZone = 'Asia/Tokyo'");
    assert_eq!(one(&mut s, ts), tokyo);
    tag(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, ts), ny);
    tag(&mut s, "BEGIN");
    tag(&mut s, "SET LOCAL TimeZone = 'Asia/Tokyo'");
    assert_eq!(one(&mut s, ts), tokyo);
    tag(&mut s, "COMMIT");
    assert_eq!(one(&mut s, ts), ny);
    assert_eq!(
        one(&mut s, "SELECT set_config('TimeZone', 'Asia/Tokyo', false)"),
        "Asia/Tokyo"
    );
    assert_eq!(one(&mut s, ts), tokyo);
    tag(&mut s, "RESET TimeZone");
    assert_eq!(one(&mut s, ts), utc);
    tag(&mut s, "SET TIME ZONE 'America/New_York'");
    tag(&mut s, "RESET ALL");
    assert_eq!(one(&mut s, ts), utc);

    let schema = "SELECT coalesce(current_schema(), 'none')";
    assert_eq!(one(&mut s, schema), "public");
    tag(&mut s, "SET search_path = pg_catalog");
    assert_eq!(one(&mut s, schema), "pg_catalog");
    tag(&mut s, "BEGIN");
    tag(&mut s, "SET search_path = nosuch");
    assert_eq!(one(&mut s, schema), "none");
    tag(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, schema), "pg_catalog");
    tag(&mut s, "RESET search_path");
    assert_eq!(one(&mut s, schema), "public");
}

#[test]
fn oversized_values_are_refused_as_a_program_limit() {
    let e = engine_with_limits(walden_engine::Limits {
        max_value_bytes: 1000,
        max_row_bytes: 1500,
        ..Default::default()
    });
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(&mut s, "CREATE TABLE big (id INT PRIMARY KEY, v TEXT)");
    let long = "x".repeat(1001);
    assert_eq!(
        err(&mut s, &format!("INSERT INTO big VALUES (1, '{long}')")),
        ErrorKind::ProgramLimit
    );
    assert_eq!(
        tag(&mut s, "INSERT INTO big VALUES (1, 'ok')"),
        "INSERT 0 1"
    );
    assert_eq!(
        err(&mut s, &format!("UPDATE big SET v = '{long}' WHERE id = 1")),
        ErrorKind::ProgramLimit
    );
}
