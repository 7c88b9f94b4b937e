//! Transactional DDL and table locks, as two-session schedules run step by
//! step on Walden and on a scratch PostgreSQL 15 with the same SQL: each
//! step's outcome (rows, command tag, SQLSTATE, or that it blocked) must be
//! the same. DDL inside BEGIN ... ROLLBACK leaves nothing behind; DDL waits
//! for open transactions that used the table and they wait for it; a
//! deadlock between DDL and DML is found. Then a restart after committed
//! and rolled-back DDL recovers exactly the committed catalog and rows.

use crate::pg_diff;
use crate::server_support;

use pg_diff::schedule::{self, Run};
use pg_diff::{block_on_within, Peers};
use server_support::Serve;
use std::time::Duration;

struct Schedule {
    name: &'static str,
    setup: &'static str,
    steps: Vec<(usize, &'static str)>,
    checks: Vec<&'static str>,
}

const SETUP: &str = "CREATE TABLE t (id int PRIMARY KEY, v int); \
                     INSERT INTO t VALUES (1, 10), (2, 20); \
                     CREATE TABLE u (id int PRIMARY KEY); INSERT INTO u VALUES (1)";

fn schedules() -> Vec<Schedule> {
    let rows_t = "SELECT * FROM t ORDER BY id";
    let tables = "SELECT relname FROM pg_class WHERE relname IN ('t', 'u', 'n', 'n_v', 's') \
                  AND relkind IN ('r', 'i', 'S') ORDER BY relname";
    let info_tables = "SELECT table_name, table_type FROM information_schema.tables \
                       WHERE table_schema = 'public' ORDER BY 1";
    let info_columns = "SELECT table_name, column_name, data_type FROM information_schema.columns \
                        WHERE table_schema = 'public' ORDER BY 1, ordinal_position";
    let attributes = "SELECT c.relname, a.attname FROM pg_attribute a \
                      JOIN pg_class c ON c.oid = a.attrelid \
                      WHERE c.relname IN ('t', 'u', 'n') AND a.attnum > 0 \
                      ORDER BY 1, a.attnum";
    let indexes = "SELECT c.relname, i.indisprimary FROM pg_index i \
                   JOIN pg_class c ON c.oid = i.indexrelid \
                   WHERE c.relname LIKE 'n%' OR c.relname LIKE 't%' OR c.relname LIKE 'u%' \
                   ORDER BY 1";
    vec![
        Schedule {
            name: "CREATE TABLE and its rows vanish at ROLLBACK",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE TABLE n (id int PRIMARY KEY, v text)"),
                (0, "INSERT INTO n VALUES (1, 'a')"),
                (0, "CREATE INDEX n_v ON n (v)"),
                (0, "SELECT * FROM n"),
                (0, "ROLLBACK"),
                (1, "SELECT * FROM n"),
            ],
            checks: vec![tables],
        },
        Schedule {
            name: "CREATE TABLE commits with its rows",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE TABLE n (id int PRIMARY KEY, v text)"),
                (0, "INSERT INTO n VALUES (1, 'a'), (2, 'b')"),
                (0, "COMMIT"),
                (1, "SELECT * FROM n ORDER BY id"),
            ],
            checks: vec![tables, "SELECT count(*) FROM n"],
        },
        Schedule {
            name: "DROP TABLE rolled back: a reader waits, then reads",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "DROP TABLE t"),
                (0, "SELECT * FROM t"),
                (0, "ROLLBACK"),
                (0, "BEGIN"),
                (0, "DROP TABLE t"),
                (1, "SELECT count(*) FROM t"),
                (0, "ROLLBACK"),
            ],
            checks: vec![tables, rows_t],
        },
        Schedule {
            name: "DROP TABLE committed: the waiting reader finds no table",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "DROP TABLE t"),
                (1, "SELECT count(*) FROM t"),
                (0, "COMMIT"),
            ],
            checks: vec![tables],
        },
        Schedule {
            name: "TRUNCATE rolled back keeps the rows",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "INSERT INTO t VALUES (3, 30)"),
                (0, "TRUNCATE t"),
                (0, "SELECT count(*) FROM t"),
                (0, "INSERT INTO t VALUES (4, 40)"),
                (0, "SELECT * FROM t"),
                (1, "SELECT count(*) FROM t"),
                (0, "ROLLBACK"),
            ],
            checks: vec![rows_t],
        },
        Schedule {
            name: "TRUNCATE waits for an open writer",
            setup: SETUP,
            steps: vec![
                (1, "BEGIN"),
                (1, "UPDATE t SET v = 11 WHERE id = 1"),
                (0, "TRUNCATE t"),
                (1, "COMMIT"),
            ],
            checks: vec![rows_t],
        },
        Schedule {
            name: "ALTER TABLE waits for an open writer, which commits",
            setup: SETUP,
            steps: vec![
                (1, "BEGIN"),
                (1, "INSERT INTO t VALUES (3, 30)"),
                (0, "ALTER TABLE t ADD COLUMN w int DEFAULT 7"),
                (1, "COMMIT"),
            ],
            checks: vec![rows_t],
        },
        Schedule {
            name: "ALTER TABLE waits for an open reader",
            setup: SETUP,
            steps: vec![
                (1, "BEGIN"),
                (1, "SELECT count(*) FROM t"),
                (0, "ALTER TABLE t ADD COLUMN w int"),
                (1, "ROLLBACK"),
            ],
            checks: vec![rows_t],
        },
        Schedule {
            name: "a writer waits for an uncommitted ALTER TABLE, which rolls back",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "ALTER TABLE t ADD COLUMN w int DEFAULT 5"),
                (0, "SELECT * FROM t ORDER BY id"),
                (1, "INSERT INTO t VALUES (3, 30)"),
                (0, "ROLLBACK"),
            ],
            checks: vec![rows_t],
        },
        Schedule {
            name: "ALTER TABLE, CREATE/DROP INDEX and sequences roll back",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "ALTER TABLE t ADD COLUMN w int DEFAULT 5"),
                (0, "ALTER TABLE t RENAME TO n"),
                (0, "CREATE UNIQUE INDEX n_v ON n (v)"),
                (0, "CREATE SEQUENCE s"),
                (0, "SELECT nextval('s')"),
                (0, "DROP TABLE u"),
                (0, "SELECT * FROM n ORDER BY id"),
                (0, "ROLLBACK"),
            ],
            checks: vec![tables, rows_t, "SELECT * FROM u"],
        },
        Schedule {
            name: "ROLLBACK TO SAVEPOINT undoes the DDL after it",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE TABLE n (id int)"),
                (0, "SAVEPOINT a"),
                (0, "DROP TABLE t"),
                (0, "TRUNCATE u"),
                (0, "ROLLBACK TO SAVEPOINT a"),
                (0, "INSERT INTO n VALUES (1)"),
                (0, "SELECT count(*) FROM t"),
                (0, "COMMIT"),
            ],
            checks: vec![tables, rows_t, "SELECT * FROM u", "SELECT * FROM n"],
        },
        Schedule {
            name: "ALTER TABLE of a table the transaction wrote takes its rows along",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "INSERT INTO t VALUES (3, 30)"),
                (0, "UPDATE t SET v = 11 WHERE id = 1"),
                (0, "DELETE FROM t WHERE id = 2"),
                (0, "ALTER TABLE t ADD COLUMN w int DEFAULT 7"),
                (0, "UPDATE t SET w = 8 WHERE id = 3"),
                (0, "ALTER TABLE t ALTER COLUMN v TYPE bigint"),
                (0, "SELECT * FROM t ORDER BY id"),
                (0, "COMMIT"),
                (1, "INSERT INTO t VALUES (4, 40, 4)"),
            ],
            checks: vec![rows_t],
        },
        Schedule {
            name: "unique index, primary and foreign key checked against the transaction's rows",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "INSERT INTO t VALUES (3, 10)"),
                (0, "CREATE UNIQUE INDEX t_v ON t (v)"),
                (0, "ROLLBACK"),
                (0, "BEGIN"),
                (0, "DELETE FROM t WHERE id = 1"),
                (0, "INSERT INTO t VALUES (3, 10)"),
                (0, "ALTER TABLE t ADD CONSTRAINT t_v_key UNIQUE (v)"),
                (0, "INSERT INTO t VALUES (4, 20)"),
                (0, "ROLLBACK"),
                (0, "BEGIN"),
                (0, "CREATE TABLE n (id int, uid int)"),
                (0, "INSERT INTO n VALUES (1, 1), (1, 2)"),
                (0, "ALTER TABLE n ADD PRIMARY KEY (id)"),
                (0, "ROLLBACK"),
                (0, "BEGIN"),
                (0, "INSERT INTO u VALUES (2)"),
                (0, "CREATE TABLE n (id int, uid int)"),
                (0, "INSERT INTO n VALUES (1, 1), (2, 2)"),
                (0, "ALTER TABLE n ADD PRIMARY KEY (id)"),
                (
                    0,
                    "ALTER TABLE n ADD CONSTRAINT n_fk FOREIGN KEY (uid) REFERENCES u (id)",
                ),
                (0, "INSERT INTO n VALUES (3, 9)"),
                (0, "ROLLBACK"),
                (0, "BEGIN"),
                (0, "INSERT INTO u VALUES (2)"),
                (0, "CREATE TABLE n (id int PRIMARY KEY, uid int)"),
                (0, "INSERT INTO n VALUES (1, 1), (2, 2)"),
                (
                    0,
                    "ALTER TABLE n ADD CONSTRAINT n_fk FOREIGN KEY (uid) REFERENCES u (id)",
                ),
                (0, "COMMIT"),
                (1, "INSERT INTO n VALUES (3, 9)"),
                (1, "DELETE FROM u WHERE id = 2"),
            ],
            checks: vec![
                rows_t,
                "SELECT * FROM n ORDER BY id",
                "SELECT * FROM u ORDER BY id",
            ],
        },
        Schedule {
            name: "ROLLBACK TO SAVEPOINT before an ALTER of written rows gives them back",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "INSERT INTO t VALUES (3, 30)"),
                (0, "SAVEPOINT a"),
                (0, "INSERT INTO t VALUES (4, 40)"),
                (0, "UPDATE t SET v = 31 WHERE id = 3"),
                (0, "ALTER TABLE t ADD COLUMN w int DEFAULT 1"),
                (0, "INSERT INTO t VALUES (5, 50, 5)"),
                (0, "SAVEPOINT b"),
                (0, "ALTER TABLE t DROP COLUMN w"),
                (0, "ROLLBACK TO SAVEPOINT b"),
                (0, "SELECT * FROM t ORDER BY id"),
                (0, "ROLLBACK TO SAVEPOINT a"),
                (0, "SELECT * FROM t ORDER BY id"),
                (0, "INSERT INTO t VALUES (6, 60)"),
                (0, "CREATE UNIQUE INDEX t_v ON t (v)"),
                (0, "COMMIT"),
                (1, "INSERT INTO t VALUES (7, 60)"),
            ],
            checks: vec![rows_t],
        },
        Schedule {
            name: "statements waiting for committed DDL re-read the table (READ COMMITTED)",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "ALTER TABLE t ADD COLUMN w int DEFAULT 5"),
                (1, "SELECT * FROM t ORDER BY id"),
                (0, "COMMIT"),
                (0, "BEGIN"),
                (0, "ALTER TABLE t ALTER COLUMN v TYPE bigint"),
                (1, "INSERT INTO t VALUES (3, 30)"),
                (0, "COMMIT"),
                (0, "BEGIN"),
                (0, "ALTER TABLE t RENAME COLUMN v TO x"),
                (1, "UPDATE t SET w = 6 WHERE id = 1"),
                (0, "COMMIT"),
                (1, "BEGIN"),
                (1, "SELECT count(*) FROM u"),
                (0, "BEGIN"),
                (0, "DROP TABLE t"),
                (0, "CREATE TABLE t (id int PRIMARY KEY, y text)"),
                (0, "INSERT INTO t VALUES (9, 'new')"),
                (1, "SELECT * FROM t"),
                (0, "COMMIT"),
                (1, "COMMIT"),
            ],
            checks: vec![rows_t],
        },
        Schedule {
            name: "deadlock between two sessions' DML and ALTER TABLE",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (1, "BEGIN"),
                (0, "INSERT INTO t VALUES (3, 30)"),
                (1, "INSERT INTO u VALUES (2)"),
                (0, "ALTER TABLE u ADD COLUMN w int"),
                (1, "ALTER TABLE t ADD COLUMN w int"),
                (1, "ROLLBACK"),
                (0, "COMMIT"),
            ],
            checks: vec![rows_t, "SELECT * FROM u ORDER BY id"],
        },
        Schedule {
            name: "catalogs show another session's DDL only once committed",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE TABLE n (id int PRIMARY KEY, v text)"),
                (0, "CREATE INDEX n_v ON n (v)"),
                (0, "ALTER TABLE u ADD COLUMN w int"),
                (0, "DROP TABLE t"),
                (0, "CREATE SEQUENCE s"),
                (0, tables),
                (0, info_columns),
                (1, tables),
                (1, info_tables),
                (1, info_columns),
                (1, attributes),
                (1, indexes),
                (0, "COMMIT"),
                (1, tables),
                (1, info_tables),
                (1, info_columns),
                (1, attributes),
                (1, indexes),
            ],
            checks: vec![],
        },
        Schedule {
            name: "catalogs do not show another session's rolled-back DDL",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE TABLE n (id int PRIMARY KEY, v text)"),
                (0, "ALTER TABLE t ADD COLUMN w int"),
                (1, "BEGIN ISOLATION LEVEL REPEATABLE READ"),
                (1, tables),
                (1, info_columns),
                (0, "ROLLBACK"),
                (1, tables),
                (1, info_columns),
                (1, "COMMIT"),
            ],
            checks: vec![tables, info_columns],
        },
        Schedule {
            name: "DDL that waited for a table dropped and created again acts on the new one",
            setup: SETUP,
            steps: vec![
                (0, "BEGIN"),
                (0, "DROP TABLE t"),
                (0, "CREATE TABLE t (id int PRIMARY KEY, v int, w int)"),
                (1, "ALTER TABLE t ADD COLUMN x int"),
                (0, "COMMIT"),
                (0, "BEGIN"),
                (0, "DROP TABLE u"),
                (0, "CREATE TABLE u (k int)"),
                (1, "DROP TABLE u"),
                (0, "COMMIT"),
            ],
            checks: vec![
                "SELECT column_name FROM information_schema.columns \
                 WHERE table_name IN ('t', 'u') ORDER BY table_name, ordinal_position",
            ],
        },
        Schedule {
            name: "LOCK TABLE NOWAIT fails on a table in use",
            setup: SETUP,
            steps: vec![
                (1, "BEGIN"),
                (1, "SELECT count(*) FROM t"),
                (0, "BEGIN"),
                (0, "LOCK TABLE t IN ACCESS EXCLUSIVE MODE NOWAIT"),
                (0, "ROLLBACK"),
                (0, "BEGIN"),
                (0, "LOCK TABLE t IN SHARE MODE NOWAIT"),
                (1, "UPDATE t SET v = 0 WHERE id = 1"),
                (0, "COMMIT"),
                (1, "COMMIT"),
            ],
            checks: vec![rows_t],
        },
    ]
}

fn compare(pg_conn: &str, w_conn: &str) -> Vec<String> {
    block_on_within(Duration::from_secs(300), async {
        let mut failures = Vec::new();
        for sc in schedules() {
            let setup = format!(
                "DROP TABLE IF EXISTS n, t, u; DROP SEQUENCE IF EXISTS s; {}",
                sc.setup
            );
            let run = |init| Run {
                setup: &setup,
                init,
                sessions: 2,
                steps: &sc.steps,
                checks: &sc.checks,
            };
            failures.extend(schedule::against_postgres(sc.name, pg_conn, w_conn, run).await);
        }
        failures
    })
}

#[test]
fn transactional_ddl_schedules_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare DDL schedules") else {
        return;
    };
    let failures = compare(&peers.pg_conn(), &peers.walden_conn());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_restart_keeps_committed_ddl_and_drops_rolled_back_ddl() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let script = [
        "CREATE TABLE keep (id int PRIMARY KEY, v text)",
        "INSERT INTO keep VALUES (1, 'a')",
        "BEGIN; CREATE TABLE gone (id int); INSERT INTO gone VALUES (1); ROLLBACK",
        "BEGIN; CREATE TABLE made (id int PRIMARY KEY); INSERT INTO made VALUES (1), (2); \
         ALTER TABLE keep ADD COLUMN w int DEFAULT 9; CREATE SEQUENCE s; COMMIT",
        "SELECT nextval('s')",
        "BEGIN; TRUNCATE keep; DROP TABLE made; DROP SEQUENCE s; ROLLBACK",
        "BEGIN; INSERT INTO keep VALUES (2, 'b', 1); CREATE INDEX keep_v ON made (id); COMMIT",
    ];
    let expect = |c: &mut postgres_like::Conn| {
        assert_eq!(
            c.rows("SELECT * FROM keep ORDER BY id"),
            vec!["1,a,9", "2,b,1"]
        );
        assert_eq!(c.rows("SELECT * FROM made ORDER BY id"), vec!["1", "2"]);
        assert!(c.error("SELECT * FROM gone").contains("42P01"));
        assert_eq!(c.rows("SELECT nextval('s') > 1"), vec!["t"]);
        assert_eq!(
            c.rows("SELECT indexname FROM pg_indexes WHERE tablename = 'made' ORDER BY 1"),
            vec!["keep_v", "made_pkey"]
        );
    };
    {
        let walden = Serve::start(&dir, &[]);
        let mut c = postgres_like::Conn::new(&walden.conn_str());
        for q in script {
            c.exec(q);
        }
        expect(&mut c);
        // Killed: recovery replays the log.
        let mut walden = walden;
        walden.signal_and_wait(9, Duration::from_secs(10));
    }
    let walden = Serve::start(&dir, &[]);
    let mut c = postgres_like::Conn::new(&walden.conn_str());
    expect(&mut c);
}

/// A blocking client for the restart test.
mod postgres_like {
    pub struct Conn {
        rt: tokio::runtime::Runtime,
        client: tokio_postgres::Client,
    }

    impl Conn {
        pub fn new(conn: &str) -> Conn {
            let rt = crate::pg_diff::runtime();
            let client = rt.block_on(crate::pg_diff::connect(conn));
            Conn { rt, client }
        }

        pub fn exec(&mut self, q: &str) {
            self.rt
                .block_on(self.client.batch_execute(q))
                .unwrap_or_else(|e| panic!("{q}: {e:?}"));
        }

        pub fn rows(&mut self, q: &str) -> Vec<String> {
            let msgs = self
                .rt
                .block_on(self.client.simple_query(q))
                .unwrap_or_else(|e| panic!("{q}: {e:?}"));
            msgs.iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL").to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    _ => None,
                })
                .collect()
        }

        pub fn error(&mut self, q: &str) -> String {
            match self.rt.block_on(self.client.simple_query(q)) {
                Ok(_) => panic!("{q} succeeded"),
                Err(e) => format!("{} {e}", e.code().map(|c| c.code()).unwrap_or("")),
            }
        }
    }
}
