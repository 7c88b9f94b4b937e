//! Foreign keys on a readable secondary: the keys reach it with the table
//! definitions (CREATE TABLE) and through their own redo records (ALTER
//! TABLE ADD/DROP CONSTRAINT), show in its catalogs, and the rows a
//! cascade changed on the primary arrive with the same commit.

use crate::repl_support;

use repl_support::*;
use std::time::{Duration, Instant};

async fn rows(c: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    c.simple_query(sql)
        .await
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_keys_reach_the_secondary() {
    let tmp = tempfile::tempdir().unwrap();
    let p = start_pair(
        Node::local("a", tmp.path()),
        Node::local("b", tmp.path()),
        "SYNCHRONOUS_COMMIT",
        3,
        0,
    )
    .await;
    let (ca, cb) = (&p.ca, &p.cb);
    for sql in [
        "CREATE TABLE fp (id int PRIMARY KEY)",
        "CREATE TABLE fc (id int PRIMARY KEY, p int REFERENCES fp ON DELETE CASCADE, q int)",
        "CREATE TABLE fd (id int PRIMARY KEY, p int)",
        "ALTER TABLE fd ADD CONSTRAINT fd_p FOREIGN KEY (p) REFERENCES fp",
        "ALTER TABLE fc ADD CONSTRAINT fc_q FOREIGN KEY (q) REFERENCES fp",
        "ALTER TABLE fc DROP CONSTRAINT fc_q",
        "INSERT INTO fp VALUES (1), (2)",
        "INSERT INTO fc VALUES (1, 1, NULL), (2, 2, NULL)",
        "DELETE FROM fp WHERE id = 1",
    ] {
        must(ca, sql).await;
    }
    assert_eq!(
        sqlstate(exec(ca, "INSERT INTO fd VALUES (1, 9)").await),
        "23503"
    );
    let want_defs = vec![
        "fc_p_fkey|FOREIGN KEY (p) REFERENCES fp(id) ON DELETE CASCADE".to_string(),
        "fd_p|FOREIGN KEY (p) REFERENCES fp(id)".to_string(),
    ];
    let defs_sql = "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint \
                    WHERE contype = 'f' ORDER BY 1";
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let defs = rows(cb, defs_sql).await;
        let fc = rows(cb, "SELECT id FROM fc ORDER BY id").await;
        if defs == want_defs && fc == vec!["2".to_string()] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "b never caught up: {defs:?} {fc:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Writes on the secondary are refused before any key is checked.
    assert_eq!(
        sqlstate(exec(cb, "INSERT INTO fc VALUES (9, 9, NULL)").await),
        "25006"
    );
}
