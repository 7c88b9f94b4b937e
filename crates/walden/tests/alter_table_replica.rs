//! ALTER TABLE on a primary reaches its secondary: the altered definition
//! and the rewritten rows arrive through the log (one logged change each),
//! and the secondary's rows and catalogs end up as the primary's.

#[macro_use]
mod repl_support;
mod server_support;

use repl_support::*;
use std::time::{Duration, Instant};

async fn text(c: &tokio_postgres::Client, sql: &str) -> String {
    match c.simple_query(sql).await {
        Ok(msgs) => msgs
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
            .collect::<Vec<_>>()
            .join("; "),
        Err(e) => format!("ERROR {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altered_tables_reach_the_secondary() {
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
        "CREATE TABLE q (id int PRIMARY KEY, v int, gone text)",
        "INSERT INTO q SELECT g, g * 10, 'x' FROM generate_series(1, 20) g",
        "ALTER TABLE q ADD COLUMN d int DEFAULT 5, DROP COLUMN gone",
        "ALTER TABLE q ALTER COLUMN v TYPE text USING 'v' || v",
        "ALTER TABLE q RENAME COLUMN id TO k",
        "ALTER TABLE q RENAME TO r",
        "ALTER TABLE r ADD CONSTRAINT v_u UNIQUE (v), ADD CONSTRAINT d_pos CHECK (d > 0)",
        "INSERT INTO r (k, v) VALUES (21, 'new')",
        // An identity column added to a table with rows, its counter set.
        "CREATE TABLE idt (id int NOT NULL, v text)",
        "INSERT INTO idt VALUES (1, 'a')",
        "ALTER TABLE idt ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (START WITH 10)",
        "SELECT setval('idt_id_seq', 30)",
        "INSERT INTO idt (v) VALUES ('b')",
    ] {
        must(ca, sql).await;
    }
    let queries = [
        "SELECT * FROM r ORDER BY k",
        "SELECT column_name, data_type, column_default FROM information_schema.columns \
         WHERE table_name = 'r' ORDER BY ordinal_position",
        "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint \
         WHERE conrelid = 'r'::regclass ORDER BY conname",
        "SELECT * FROM idt ORDER BY id",
        "SELECT attidentity FROM pg_attribute WHERE attrelid = 'idt'::regclass AND attname = 'id'",
        "SELECT last_value, is_called FROM idt_id_seq",
    ];
    let mut want = Vec::new();
    for q in queries {
        want.push(text(ca, q).await);
    }
    assert!(want[0].starts_with("1|v10|5; 2|v20|5"), "{}", want[0]);
    assert!(want[2].contains("v_u|u|UNIQUE (v)"), "{}", want[2]);
    assert_eq!(want[3], "1|a; 31|b");
    assert_eq!(want[4], "a");
    assert_eq!(want[5], "31|t");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut got = Vec::new();
        for q in queries {
            got.push(text(cb, q).await);
        }
        if got == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "b never caught up:\nwant {want:#?}\ngot  {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The secondary's table is the altered one: reads through its unique
    // index find the row.
    assert_eq!(text(cb, "SELECT k, d FROM r WHERE v = 'v70'").await, "7|5");
}
