//! `pg_relation_size` and its family through the server: a table's and an
//! index's pages in the data file after a checkpoint, the primary key (the
//! table's own order) at 0, a truncated table at 0 until a checkpoint
//! writes its new rows, the database's files, PostgreSQL's NULLs and
//! errors, psql's `\dt+`, `\di+` and `\l+`, which call them, and SQL
//! Server's `sys.dm_db_partition_stats` over the same pages.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect};
use server_support::{have, run_with_deadline, Serve};
use std::process::Command;
use std::time::Duration;

const ROWS: i64 = 20_000;
const PAD: usize = 100;

async fn int(c: &tokio_postgres::Client, sql: &str) -> Option<i64> {
    let rows = c
        .query(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows[0].get(0)
}

async fn sqlstate(c: &tokio_postgres::Client, sql: &str) -> String {
    let e = c
        .simple_query(sql)
        .await
        .err()
        .unwrap_or_else(|| panic!("{sql} succeeded"));
    e.code().expect("a database error").code().to_string()
}

#[test]
fn sizes_follow_the_data_file() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&s.conn_str()).await;
        c.batch_execute(&format!(
            "CREATE TABLE t (id int PRIMARY KEY, v int, pad text); \
             CREATE INDEX t_v ON t (v); \
             INSERT INTO t SELECT g, g % 100, repeat('x', {PAD}) FROM generate_series(1, {ROWS}) g"
        ))
        .await
        .unwrap();
        // Its own statement: in the batch's implicit transaction it would
        // run before the rows commit.
        c.batch_execute("CHECKPOINT").await.unwrap();
        let rel = int(&c, "SELECT pg_relation_size('t')").await.unwrap();
        let table = int(&c, "SELECT pg_table_size('t')").await.unwrap();
        let idx = int(&c, "SELECT pg_indexes_size('t')").await.unwrap();
        let total = int(&c, "SELECT pg_total_relation_size('t')").await.unwrap();
        let payload = ROWS * PAD as i64;
        assert!(
            rel >= payload && rel <= 4 * payload,
            "pg_relation_size(t) = {rel} for {payload} bytes of rows"
        );
        assert_eq!(
            table, rel,
            "no TOAST or maps: pg_table_size = pg_relation_size"
        );
        assert!(
            idx > 0 && idx < rel,
            "pg_indexes_size(t) = {idx}, rows {rel}"
        );
        assert_eq!(total, rel + idx);
        assert_eq!(
            int(&c, "SELECT pg_relation_size('t_v')").await,
            Some(idx),
            "the one secondary index"
        );
        assert_eq!(
            int(&c, "SELECT pg_relation_size('t_pkey')").await,
            Some(0),
            "the primary key is the table's own order"
        );
        assert_eq!(
            int(&c, "SELECT pg_relation_size('t'::regclass::oid)").await,
            Some(rel),
            "by OID"
        );
        assert_eq!(
            int(&c, "SELECT pg_relation_size('t', 'main')").await,
            Some(rel)
        );
        assert_eq!(
            int(&c, "SELECT pg_relation_size('t', 'fsm')").await,
            Some(0)
        );
        assert_eq!(
            sqlstate(&c, "SELECT pg_relation_size('t', 'nope')").await,
            "22023"
        );
        // PostgreSQL: an OID naming no relation is NULL, a name is an error.
        assert_eq!(int(&c, "SELECT pg_relation_size(1)").await, None);
        assert_eq!(
            sqlstate(&c, "SELECT pg_relation_size('nosuch')").await,
            "42P01"
        );
        assert_eq!(int(&c, "SELECT pg_relation_size(NULL)").await, None);

        // SQL Server's view of the same, in 8 KB pages.
        let parts = c
            .query(
                "SELECT index_id, index_name, used_page_count, reserved_page_count, row_count \
                 FROM sys.dm_db_partition_stats WHERE table_name = 't' ORDER BY index_name",
                &[],
            )
            .await
            .unwrap();
        let got: Vec<(String, i64, i64, i64)> = parts
            .iter()
            .map(|r| (r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect();
        let pages = |b: i64| (b + 8191) / 8192;
        assert_eq!(
            got,
            vec![
                ("t_pkey".to_string(), pages(rel), pages(rel), ROWS),
                ("t_v".to_string(), pages(idx), pages(idx), ROWS),
            ]
        );
        assert_eq!(parts[0].get::<_, i64>(0), 1, "the rows: a clustered index");

        let db = int(&c, "SELECT pg_database_size('walden')").await.unwrap();
        assert!(db >= total, "pg_database_size {db} < the table's {total}");
        assert_eq!(
            int(
                &c,
                "SELECT pg_database_size(oid) FROM pg_database WHERE datname = 'walden'"
            )
            .await,
            Some(db)
        );
        assert_eq!(
            sqlstate(&c, "SELECT pg_database_size('nope')").await,
            "3D000"
        );
        let pretty = c
            .query_one("SELECT pg_size_pretty(pg_total_relation_size('t'))", &[])
            .await
            .unwrap()
            .get::<_, String>(0);
        assert!(
            pretty.ends_with(" MB") || pretty.ends_with(" kB"),
            "pg_size_pretty: {pretty}"
        );

        // New rows have no pages until a checkpoint writes them.
        c.batch_execute("TRUNCATE t").await.unwrap();
        assert_eq!(int(&c, "SELECT pg_relation_size('t')").await, Some(0));
        assert_eq!(int(&c, "SELECT pg_indexes_size('t')").await, Some(0));
        c.batch_execute("INSERT INTO t SELECT g, g, 'y' FROM generate_series(1, 1000) g")
            .await
            .unwrap();
        c.batch_execute("CHECKPOINT").await.unwrap();
        let small = int(&c, "SELECT pg_relation_size('t')").await.unwrap();
        assert!(
            small > 0 && small < rel,
            "after TRUNCATE and 1,000 rows: {small}"
        );
    });
}

#[test]
fn psql_lists_sizes() {
    if !have("psql", &["--version"]) {
        server_support::missing_tool("psql is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let psql = |cmd: &str| {
        let out = run_with_deadline(
            Command::new("psql")
                .args(["-X", "-h", "127.0.0.1", "-p", &s.port.to_string()])
                .args(["-U", "walden", "-d", "walden", "-v", "ON_ERROR_STOP=1"])
                .args(["-c", cmd]),
            Duration::from_secs(60),
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "psql {cmd}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    psql(
        "CREATE TABLE big (id int PRIMARY KEY, pad text); CREATE INDEX big_pad ON big (pad); \
         INSERT INTO big SELECT g, repeat('z', 200) || g FROM generate_series(1, 20000) g",
    );
    psql("CHECKPOINT");
    // Sizes in kB or MB (a few MB of rows), where PostgreSQL's would be too.
    let sized = |l: &str| l.contains(" kB") || l.contains(" MB");
    let tables = psql("\\dt+ big");
    assert!(
        tables.lines().any(|l| l.contains("big") && sized(l)),
        "\\dt+:\n{tables}"
    );
    let indexes = psql("\\di+ big_pad");
    assert!(
        indexes.lines().any(|l| l.contains("big_pad") && sized(l)),
        "\\di+:\n{indexes}"
    );
    let dbs = psql("\\l+ walden");
    assert!(
        dbs.lines().any(|l| l.contains("walden") && sized(l)),
        "\\l+:\n{dbs}"
    );
}
