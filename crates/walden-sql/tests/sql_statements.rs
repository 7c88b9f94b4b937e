//! The SQL layer end to end over an in-memory instance: DDL, DML, queries,
//! transactions and the durability statements, the system views, and errors.

use std::sync::Arc;
mod common;
use common::engine;
use walden_engine::{Instance, InstanceConfig, LogConfig, MemVfs};
use walden_sql::{ErrorKind, SqlEngine, SqlSession, TxStatus};

fn rows(s: &mut SqlSession, sql: &str) -> Vec<Vec<String>> {
    let mut res = s.execute_batch(sql);
    let last = res.pop().unwrap_or_else(|| panic!("no result for {sql}"));
    for r in &res {
        if let Err(e) = r {
            panic!("{sql}: {e}");
        }
    }
    let out = last.unwrap_or_else(|e| panic!("{sql}: {e}"));
    out.rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| {
                    if v.is_null() {
                        "NULL".into()
                    } else {
                        v.to_string()
                    }
                })
                .collect()
        })
        .collect()
}

fn tag(s: &mut SqlSession, sql: &str) -> String {
    let r = s.execute_batch(sql).pop().unwrap();
    r.unwrap_or_else(|e| panic!("{sql}: {e}")).tag
}

fn err(s: &mut SqlSession, sql: &str) -> ErrorKind {
    match s.execute_batch(sql).pop().unwrap() {
        Ok(o) => panic!("{sql} succeeded: {}", o.tag),
        Err(e) => e.kind,
    }
}

fn one(s: &mut SqlSession, sql: &str) -> String {
    let r = rows(s, sql);
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0].clone()
}

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

    // Errors abort an explicit transaction until ROLLBACK; the session goes on.
    tag(&mut s, "BEGIN");
    tag(&mut s, "INSERT INTO t VALUES (100, 1)");
    assert_eq!(
        err(&mut s, "INSERT INTO t VALUES (1, 1)"),
        ErrorKind::UniqueViolation
    );
    assert_eq!(s.tx_status(), TxStatus::Failed);
    assert_eq!(err(&mut s, "SELECT 1"), ErrorKind::InFailedTransaction);
    assert_eq!(tag(&mut s, "COMMIT"), "ROLLBACK");
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
fn pgbench_initialisation_statements() {
    let e = engine();
    let mut s = e.connect("walden", "postgres", "pgbench").unwrap();
    for sql in [
        "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
        "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))",
        "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
        "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)",
        "create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
        "begin",
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
        "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, 1) as bid",
        "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / 10 + 1, 0 from generate_series(1, 10) as tid",
        "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, 1000) as aid",
        "commit",
        "alter table pgbench_branches add primary key (bid)",
        "alter table pgbench_tellers add primary key (tid)",
        "alter table pgbench_accounts add primary key (aid)",
        "vacuum analyze pgbench_branches",
    ] {
        let r = s.execute_batch(sql).pop().unwrap();
        r.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(one(&mut s, "select count(*) from pgbench_branches"), "1");
    let probe = rows(&mut s, "select o.n, p.partstrat, pg_catalog.count(i.inhparent) from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) where c.relname = 'pgbench_accounts' and o.n is not null group by 1, 2 order by 1 asc limit 1");
    assert_eq!(probe, vec![vec!["1", "NULL", "0"]]);
    for sql in [
        "BEGIN;",
        "UPDATE pgbench_accounts SET abalance = abalance + -17 WHERE aid = 42;",
        "SELECT abalance FROM pgbench_accounts WHERE aid = 42;",
        "UPDATE pgbench_tellers SET tbalance = tbalance + -17 WHERE tid = 3;",
        "UPDATE pgbench_branches SET bbalance = bbalance + -17 WHERE bid = 1;",
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 42, -17, CURRENT_TIMESTAMP);",
        "END;",
    ] {
        s.execute_batch(sql).pop().unwrap().unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(
        one(
            &mut s,
            "SELECT abalance FROM pgbench_accounts WHERE aid = 42"
        ),
        "-17"
    );
    assert_eq!(one(&mut s, "SELECT sum(delta) FROM pgbench_history"), "-17");
}

#[test]
fn tsql_forms_sequences_and_catalogs() {
    let e = engine();
    let mut s = e.connect("walden", "u", "test").unwrap();
    tag(&mut s, "CREATE SEQUENCE seq START WITH 5 INCREMENT BY 2");
    assert_eq!(
        rows(&mut s, "SELECT nextval('seq'), NEXT VALUE FOR dbo.seq"),
        vec![vec!["5", "7"]]
    );
    tag(
        &mut s,
        "CREATE TABLE dbo.T4 (id INT IDENTITY(10,5) NOT NULL PRIMARY KEY, name NVARCHAR(50), created DATETIME2 DEFAULT SYSDATETIME(), gid UNIQUEIDENTIFIER DEFAULT NEWID(), n BIGINT DEFAULT nextval('seq'))",
    );
    tag(&mut s, "INSERT dbo.T4 (name) VALUES (N'abc'), ('def')");
    assert_eq!(
        rows(&mut s, "SELECT id, name, n FROM T4 ORDER BY id"),
        vec![vec!["10", "abc", "9"], vec!["15", "def", "11"]]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM T4 WHERE created > '2020-01-01' AND gid IS NOT NULL"
        ),
        "2"
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT CONVERT(INT, '12') + 1, CAST(1.5 AS INT), ISNULL(NULL, 'x')"
        ),
        vec![vec!["13", "2", "x"]]
    );
    tag(
        &mut s,
        "CREATE TABLE pair (a INT, b INT, PRIMARY KEY (a, b))",
    );
    tag(&mut s, "INSERT INTO pair VALUES (1, 2), (1, 3)");
    assert_eq!(
        err(&mut s, "INSERT INTO pair VALUES (1, 3)"),
        ErrorKind::UniqueViolation
    );
    assert_eq!(
        rows(
            &mut s,
            "UPDATE pair SET b = b + 10 WHERE a = 1 AND b = 3 RETURNING a, b"
        ),
        vec![vec!["1", "13"]]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'pair'"
        ),
        "1"
    );
    assert_eq!(
        one(&mut s, "SELECT current_setting('server_version_num')"),
        "150000"
    );
    tag(&mut s, "BEGIN TRANSACTION");
    tag(&mut s, "SET NOCOUNT ON");
    tag(&mut s, "COMMIT TRANSACTION");
    tag(&mut s, "CREATE DATABASE shop");
    tag(&mut s, "USE shop");
    tag(&mut s, "CREATE TABLE x (a INT)");
    assert_eq!(one(&mut s, "SELECT DB_NAME()"), "shop");
    tag(&mut s, "USE walden");
    assert_eq!(one(&mut s, "SELECT count(*) FROM sys.databases"), "2");
    assert_eq!(err(&mut s, "SELECT * FROM x"), ErrorKind::UndefinedTable);
}

#[test]
fn psql_list_commands_work() {
    let e = engine();
    let mut s = e.connect("walden", "walden", "psql").unwrap();
    tag(&mut s, "CREATE TABLE t (id INT PRIMARY KEY)");
    // psql 15's \dt
    let dt = rows(
        &mut s,
        r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#,
    );
    assert_eq!(dt, vec![vec!["public", "t", "table", "walden"]]);
    // psql 15's \l
    let l = rows(
        &mut s,
        r#"SELECT d.datname as "Name",
       pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
       pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
       d.datcollate as "Collate",
       d.datctype as "Ctype",
       d.daticulocale as "ICU Locale",
       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
       pg_catalog.array_to_string(d.datacl, E'\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;"#,
    );
    assert_eq!(l[0][0], "walden");
    assert_eq!(one(&mut s, "SELECT count(*) FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default"), "1");
    assert_eq!(one(&mut s, "SELECT 'walden' ~* '^WAL', 'x' !~ 'y'"), "t");
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

/// psql 15's `\d t` queries (captured with `psql -E` against PostgreSQL 15),
/// with the table's OID as psql would substitute it.
fn describe_queries(oid: &str) -> Vec<String> {
    [
        r#"SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, pg_catalog.array_to_string(c.reloptions || array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x), ', ')
, c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = '@OID';"#,
        r#"SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated,
  a.attstorage,
  a.attcompression AS attcompression,
  CASE WHEN a.attstattarget=-1 THEN NULL ELSE a.attstattarget END AS attstattarget,
  pg_catalog.col_description(a.attrelid, a.attnum)
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '@OID' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;"#,
        r#"SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = '@OID' AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname;"#,
        r#"SELECT pol.polname, pol.polpermissive,
  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,
  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),
  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),
  CASE pol.polcmd
    WHEN 'r' THEN 'SELECT'
    WHEN 'a' THEN 'INSERT'
    WHEN 'w' THEN 'UPDATE'
    WHEN 'd' THEN 'DELETE'
    END AS cmd
FROM pg_catalog.pg_policy pol
WHERE pol.polrelid = '@OID' ORDER BY 1;"#,
        r#"SELECT oid, stxrelid::pg_catalog.regclass, stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,
pg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,
  'd' = any(stxkind) AS ndist_enabled,
  'f' = any(stxkind) AS deps_enabled,
  'm' = any(stxkind) AS mcv_enabled,
stxstattarget
FROM pg_catalog.pg_statistic_ext
WHERE stxrelid = '@OID'
ORDER BY nsp, stxname;"#,
        r#"SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid
     JOIN pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid
WHERE pc.oid ='@OID' and pg_catalog.pg_relation_is_publishable('@OID')
UNION
SELECT pubname
     , pg_get_expr(pr.prqual, c.oid)
     , (CASE WHEN pr.prattrs IS NOT NULL THEN
         (SELECT string_agg(attname, ', ')
           FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,
                pg_catalog.pg_attribute
          WHERE attrelid = pr.prrelid AND attnum = prattrs[s])
        ELSE NULL END) FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid
     JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid
WHERE pr.prrelid = '@OID'
UNION
SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
WHERE p.puballtables AND pg_catalog.pg_relation_is_publishable('@OID')
ORDER BY 1;"#,
        r#"SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent AND i.inhrelid = '@OID'
  AND c.relkind != 'p' AND c.relkind != 'I'
ORDER BY inhseqno;"#,
        r#"SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, pg_catalog.pg_get_expr(c.relpartbound, c.oid)
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhrelid AND i.inhparent = '@OID'
ORDER BY pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.oid::pg_catalog.regclass::pg_catalog.text;"#,
    ]
    .iter()
    .map(|q| q.replace("@OID", oid))
    .collect()
}

#[test]
fn psql_describe_table_queries_work() {
    let e = engine();
    let mut s = e.connect("walden", "walden", "psql").unwrap();
    tag(
        &mut s,
        "CREATE TABLE t (id serial PRIMARY KEY, name varchar(20) NOT NULL, note text DEFAULT 'x', ts timestamp without time zone, amt numeric(12,2), b bigint)",
    );
    tag(&mut s, "CREATE TABLE nokey (a int)");
    tag(&mut s, "CREATE SEQUENCE s1");
    let found = rows(
        &mut s,
        r#"SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;"#,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    let oid = found[0][0].clone();
    assert_eq!(one(&mut s, "SELECT 't'::regclass::oid"), oid);
    assert_eq!(one(&mut s, &format!("SELECT {oid}::regclass")), "t");
    let q = describe_queries(&oid);
    let class = rows(&mut s, &q[0]);
    assert_eq!(class.len(), 1);
    assert_eq!(&class[0][1..3], &["r", "t"]);
    assert_eq!(class[0][14], "heap");
    let cols = rows(&mut s, &q[1]);
    let brief: Vec<Vec<&str>> = cols
        .iter()
        .map(|r| vec![r[0].as_str(), &r[1], &r[2], &r[3]])
        .collect();
    assert_eq!(
        brief,
        vec![
            vec!["id", "integer", "nextval('t_id_seq'::regclass)", "t"],
            vec!["name", "character varying(20)", "NULL", "t"],
            vec!["note", "text", "'x'::text", "f"],
            vec!["ts", "timestamp without time zone", "NULL", "f"],
            vec!["amt", "numeric(12,2)", "NULL", "f"],
            vec!["b", "bigint", "NULL", "f"],
        ]
    );
    let idx = rows(&mut s, &q[2]);
    assert_eq!(idx.len(), 1);
    assert_eq!(idx[0][0], "t_pkey");
    assert_eq!(idx[0][1], "t");
    assert_eq!(
        idx[0][5],
        "CREATE UNIQUE INDEX t_pkey ON public.t USING btree (id)"
    );
    assert_eq!(idx[0][6], "PRIMARY KEY (id)");
    assert_eq!(idx[0][7], "p");
    // Policies, statistics, publications and inheritance: none, no error.
    for q in &q[3..] {
        assert!(rows(&mut s, q).is_empty(), "{q}");
    }
    // \d lists tables and sequences, \di the primary-key indexes.
    let listed = rows(
        &mut s,
        "SELECT c.relname, c.relkind FROM pg_catalog.pg_class c WHERE c.relkind IN ('r','S','i') ORDER BY 1",
    );
    assert_eq!(
        listed,
        vec![
            vec!["nokey", "r"],
            vec!["s1", "S"],
            vec!["t", "r"],
            vec!["t_pkey", "i"]
        ]
    );
    // Every catalog reads without error, with rows as wide as its columns.
    for v in [
        "pg_database",
        "pg_namespace",
        "pg_class",
        "pg_attribute",
        "pg_attrdef",
        "pg_index",
        "pg_constraint",
        "pg_am",
        "pg_collation",
        "pg_type",
        "pg_inherits",
        "pg_partitioned_table",
        "pg_policy",
        "pg_statistic_ext",
        "pg_publication",
        "pg_publication_namespace",
        "pg_publication_rel",
        "pg_roles",
        "pg_sequence",
        "pg_depend",
        "pg_description",
        "pg_trigger",
        "pg_rewrite",
        "pg_auth_members",
        "pg_extension",
        "pg_proc",
        "pg_tablespace",
        "pg_tables",
        "pg_indexes",
    ] {
        rows(&mut s, &format!("SELECT * FROM pg_catalog.{v}"));
    }
    assert_eq!(
        err(&mut s, "SELECT 'nosuch'::regclass"),
        ErrorKind::UndefinedTable
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT 'pg_catalog.pg_class'::pg_catalog.regclass::oid"
        ),
        "1259"
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT 2 = ANY ('{1,2}'), 3 = ANY ('{1,2}'), array_to_string(ARRAY[1, NULL, 3], '-'), ('{a,b}'::text[])[2]"
        ),
        vec![vec!["t", "f", "1-3", "b"]]
    );
}

#[test]
fn copy_to_stdout_returns_rows_and_format() {
    let e = engine();
    let mut s = e.connect("walden", "walden", "psql").unwrap();
    tag(
        &mut s,
        "CREATE TABLE c (id int PRIMARY KEY, name text, n int)",
    );
    tag(&mut s, "INSERT INTO c VALUES (1, 'a', NULL), (2, 'b', 5)");
    let out = s
        .execute_batch("COPY c (name, id) TO STDOUT WITH (FORMAT csv, HEADER)")
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(out.tag, "COPY 2");
    let copy = out.copy_out.expect("copy_out");
    assert!(copy.format.csv && copy.format.header);
    let names: Vec<&str> = out
        .columns
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, vec!["name", "id"]);
    assert_eq!(out.rows.len(), 2);
    let out = s
        .execute_batch("COPY (SELECT n FROM c WHERE id = 2) TO STDOUT")
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(out.tag, "COPY 1");
    assert_eq!(out.rows[0][0].to_string(), "5");
    assert_eq!(
        err(&mut s, "COPY c TO '/tmp/walden-copy-out'"),
        ErrorKind::FeatureNotSupported
    );
    assert_eq!(
        err(&mut s, "COPY c (nosuch) TO STDOUT"),
        ErrorKind::UndefinedColumn
    );
    assert_eq!(
        err(&mut s, "COPY nosuch TO STDOUT"),
        ErrorKind::UndefinedTable
    );
    // The binary format is laid out by the wire server; the session marks it.
    let out = s
        .execute_batch("COPY c TO STDOUT WITH (FORMAT binary)")
        .pop()
        .unwrap()
        .unwrap();
    assert!(out.copy_out.unwrap().format.binary);
    assert_eq!(
        err(&mut s, "COPY c TO STDOUT WITH (FORMAT binary, HEADER)"),
        ErrorKind::FeatureNotSupported
    );
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

#[test]
fn oversized_values_are_refused_as_a_program_limit() {
    let inst = Instance::open(InstanceConfig {
        vfs: Arc::new(MemVfs::new()),
        log: LogConfig {
            segment_size: 4 << 20,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        limits: walden_engine::Limits {
            max_value_bytes: 1000,
            max_row_bytes: 1500,
        },
        ..InstanceConfig::new("/sql")
    })
    .unwrap();
    let e = SqlEngine::new(inst);
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
