//! The clauses of `CREATE TABLE` that sqlparser reads and Walden does not
//! honour: each is refused (0A000, naming it) before anything is created,
//! rather than a table made without it (a `PARTITION BY` table taking
//! every row, an `INHERITS` child without its parent's columns).

use crate::error::{Result, SqlError};
use sqlparser::ast::{self, helpers::stmt_create_table::CreateTableBuilder};

/// Storage parameters that tune how PostgreSQL lays out and vacuums a
/// table; none changes what a statement returns, so they are accepted.
pub(crate) fn tuning_only(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k == "fillfactor"
        || k.starts_with("autovacuum_")
        || k.starts_with("toast.")
        || k.starts_with("toast_")
        || k == "parallel_workers"
        || k == "vacuum_index_cleanup"
        || k == "vacuum_truncate"
        || k == "log_autovacuum_min_duration"
        || k == "user_catalog_table"
}

/// Refuses what `ct` asks that Walden would not do. The table's name,
/// columns, constraints, `IF NOT EXISTS`, `UNLOGGED` (a logged table is at
/// least as durable) and, for `CREATE TABLE ... AS`, the query and `WITH
/// [NO] DATA` are the caller's.
pub(crate) fn refuse_unhonoured(ct: &ast::CreateTable) -> Result<()> {
    let refuse = |what: &str| Err(SqlError::unsupported(format!("CREATE TABLE ... {what}")));
    if let Some(p) = &ct.partition_by {
        return refuse(&format!("PARTITION BY {p} (partitioned tables)"));
    }
    if ct.partition_of.is_some() || ct.for_values.is_some() {
        return refuse("PARTITION OF (partitioned tables)");
    }
    if ct.inherits.is_some() {
        return refuse("INHERITS (table inheritance)");
    }
    if ct.like.is_some() {
        return refuse("(LIKE other_table)");
    }
    match ct.on_commit {
        None | Some(ast::OnCommit::PreserveRows) => {}
        Some(ast::OnCommit::DeleteRows) => return refuse("ON COMMIT DELETE ROWS"),
        Some(ast::OnCommit::Drop) => return refuse("ON COMMIT DROP"),
    }
    match &ct.table_options {
        ast::CreateTableOptions::None => {}
        ast::CreateTableOptions::With(opts) => {
            for o in opts {
                match o {
                    ast::SqlOption::KeyValue { key, .. } if tuning_only(&key.value) => {}
                    other => return refuse(&format!("WITH ({other})")),
                }
            }
        }
        other => return refuse(&other.to_string()),
    }
    // Whatever else sqlparser filled in: compared with a plain CREATE TABLE
    // of the same name, and named by how it prints.
    let mut rest = ct.clone();
    rest.columns.clear();
    rest.constraints.clear();
    rest.if_not_exists = false;
    rest.temporary = false;
    rest.global = None;
    rest.unlogged = false;
    rest.query = None;
    rest.with_data = None;
    rest.on_commit = None;
    rest.table_options = ast::CreateTableOptions::None;
    let plain = CreateTableBuilder::new(ct.name.clone()).build();
    if rest != plain {
        let (r, p) = (rest.to_string(), plain.to_string());
        let extra = r
            .strip_prefix(p.as_str())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(r.as_str());
        return refuse(extra);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(sql: &str) -> std::result::Result<(), String> {
        let st = crate::front::parse_sql(sql).map_err(|e| e.to_string())?;
        let ast::Statement::CreateTable(ct) = st else {
            panic!("{sql} is not CREATE TABLE");
        };
        refuse_unhonoured(&ct).map_err(|e| e.to_string())
    }

    #[test]
    fn plain_tables_pass() {
        for sql in [
            "CREATE TABLE t (a int PRIMARY KEY, b text NOT NULL DEFAULT 'x')",
            "CREATE TABLE IF NOT EXISTS t (a int, UNIQUE (a))",
            "CREATE UNLOGGED TABLE t (a int)",
            "CREATE TEMP TABLE t (a int)",
            "CREATE TABLE t (a int) WITH (fillfactor = 70)",
            "CREATE TABLE t (id int IDENTITY(1,1) PRIMARY KEY, v nvarchar(10))",
            "CREATE TABLE t AS SELECT 1 AS a",
            "CREATE TABLE t AS SELECT 1 AS a WITH NO DATA",
        ] {
            assert_eq!(check(sql), Ok(()), "{sql}");
        }
    }

    #[test]
    fn unhonoured_clauses_are_named() {
        for (sql, want) in [
            (
                "CREATE TABLE p (k int) PARTITION BY RANGE (k)",
                "PARTITION BY",
            ),
            (
                "CREATE TABLE p (k int) PARTITION BY LIST (k)",
                "PARTITION BY",
            ),
            (
                "CREATE TABLE p (k int) PARTITION BY HASH (k)",
                "PARTITION BY",
            ),
            (
                "CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (1) TO (10)",
                "PARTITION OF",
            ),
            ("CREATE TABLE c (x int) INHERITS (p)", "INHERITS"),
            (
                "CREATE TEMP TABLE t (a int) ON COMMIT DROP",
                "ON COMMIT DROP",
            ),
            (
                "CREATE TEMP TABLE t (a int) ON COMMIT DELETE ROWS",
                "ON COMMIT DELETE ROWS",
            ),
            ("CREATE TABLE t (a int) WITH (oids = true)", "WITH (oids"),
        ] {
            let got = check(sql).expect_err(sql);
            assert!(got.contains(want), "{sql}: {got}");
        }
    }
}
