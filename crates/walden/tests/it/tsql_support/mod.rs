//! What the T-SQL test files share: a server for one test, and a batch's
//! outcome (its result sets and row counts, or its SQLSTATE) as text.

#![allow(dead_code)]

use crate::pg_diff::runtime;
use crate::server_support::Serve;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

/// Result sets and row counts of a batch, or its SQLSTATE.
pub async fn run(c: &Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Err(e) => format!(
            "ERROR {}",
            e.code()
                .map(|c| c.code().to_string())
                .unwrap_or_else(|| e.to_string())
        ),
        Ok(msgs) => {
            let mut parts = Vec::new();
            let mut rows = Vec::new();
            for m in msgs {
                match m {
                    SimpleQueryMessage::Row(r) => rows.push(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL").to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    SimpleQueryMessage::CommandComplete(n) => {
                        if rows.is_empty() {
                            parts.push(format!("ok {n}"));
                        } else {
                            parts.push(format!("rows {}", rows.join(" ")));
                            rows.clear();
                        }
                    }
                    _ => {}
                }
            }
            parts.join("; ")
        }
    }
}

/// Runs `f` with a fresh server's connection string, failing after `limit`.
pub fn with_server(limit: Duration, f: impl FnOnce(String) -> Pin<Box<dyn Future<Output = ()>>>) {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let conn = walden.conn_str();
    runtime().block_on(async {
        tokio::time::timeout(limit, f(conn))
            .await
            .expect("timed out")
    });
}
