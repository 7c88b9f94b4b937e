//! Role statements are transactional, as in PostgreSQL: CREATE / ALTER /
//! DROP ROLE, GRANT and REVOKE inside a block are seen by their own
//! transaction at once, by others at COMMIT, and are gone after ROLLBACK,
//! ROLLBACK TO a savepoint set before them, or an error that ends the
//! (implicit) block. Two-session schedules run step by step on Walden and on
//! a scratch PostgreSQL 15; each step's outcome (rows, tag, SQLSTATE, or that
//! it blocked) must be the same. Then a SIGKILL after a commit that changed
//! rows and roles together, and with a role change left uncommitted.

use crate::pg_diff;
use crate::server_support;

use pg_diff::schedule::{self, Run};
use pg_diff::{block_on_within, Peers};
use server_support::Serve;
use std::time::Duration;

struct Schedule {
    name: &'static str,
    steps: Vec<(usize, &'static str)>,
    checks: Vec<&'static str>,
}

/// Roles are cluster-wide in PostgreSQL: each schedule starts by dropping
/// the ones earlier schedules made (the table first, which holds their
/// grants).
const SETUP: &str = "DROP TABLE IF EXISTS t; DROP ROLE IF EXISTS r1, r2; \
                     CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 10)";

const ROLES: &str = "SELECT rolname, rolcanlogin, rolcreatedb FROM pg_roles \
                     WHERE rolname IN ('r1', 'r2') ORDER BY 1";
/// The grants on `t`, per role (the ACL texts differ: PostgreSQL's owner
/// and privilege letters are not Walden's).
const ACL: &str = "SELECT rolname, has_table_privilege(rolname, 't', 'SELECT'), \
                   has_table_privilege(rolname, 't', 'INSERT'), \
                   has_table_privilege(rolname, 't', 'UPDATE') \
                   FROM pg_roles WHERE rolname IN ('r1', 'r2') ORDER BY 1";

/// Each role's grant options on `t` (and SELECT itself).
const GRANT_OPTIONS: &str = "SELECT rolname, \
                             has_table_privilege(rolname, 't', 'SELECT WITH GRANT OPTION'), \
                             has_table_privilege(rolname, 't', 'INSERT WITH GRANT OPTION'), \
                             has_table_privilege(rolname, 't', 'SELECT') \
                             FROM pg_roles WHERE rolname IN ('r1', 'r2') ORDER BY 1";

/// `public`'s ACL (PostgreSQL 15's form on both sides).
const NSP: &str = "SELECT pg_get_userbyid(nspowner), nspacl FROM pg_namespace \
                   WHERE nspname = 'public'";
/// Each role's USAGE and CREATE on `public`.
const SCHEMA_PRIVS: &str = "SELECT rolname, has_schema_privilege(rolname, 'public', 'USAGE'), \
                            has_schema_privilege(rolname, 'public', 'CREATE') \
                            FROM pg_roles WHERE rolname IN ('r1', 'r2') ORDER BY 1";

fn schedules() -> Vec<Schedule> {
    vec![
        Schedule {
            name: "schema privileges: seen by their transaction, gone at ROLLBACK, kept at COMMIT",
            steps: vec![
                (0, "CREATE ROLE r1"),
                (0, "BEGIN"),
                (0, "GRANT CREATE ON SCHEMA public TO r1"),
                (0, "REVOKE USAGE ON SCHEMA public FROM PUBLIC"),
                (0, NSP),
                (0, SCHEMA_PRIVS),
                (1, NSP),
                (0, "ROLLBACK"),
                (1, NSP),
                (0, "BEGIN"),
                (0, "GRANT ALL PRIVILEGES ON SCHEMA public TO r1, PUBLIC"),
                (0, "SAVEPOINT s"),
                (0, "REVOKE CREATE ON SCHEMA public FROM r1"),
                (0, SCHEMA_PRIVS),
                (0, "ROLLBACK TO SAVEPOINT s"),
                (0, "COMMIT"),
                (1, NSP),
                (1, SCHEMA_PRIVS),
                (1, "DROP ROLE r1"),
                (1, "GRANT SELECT ON SCHEMA public TO r1"),
                (1, "GRANT USAGE ON SCHEMA nosuch TO r1"),
                (1, "REVOKE USAGE ON SCHEMA public FROM nosuch"),
                (
                    1,
                    "SELECT has_schema_privilege('pg_catalog', 'CREATE'), \
                     has_schema_privilege('r1', 'pg_catalog', 'CREATE'), \
                     has_schema_privilege('r1', 'information_schema', 'USAGE'), \
                     has_schema_privilege('r1', 2200, 'CREATE')",
                ),
                (1, "REVOKE ALL ON SCHEMA public FROM r1"),
                (1, "REVOKE CREATE ON SCHEMA public FROM PUBLIC"),
                (1, NSP),
            ],
            checks: vec![NSP, SCHEMA_PRIVS],
        },
        Schedule {
            name: "CREATE ROLE and GRANT: seen by their transaction only, gone at ROLLBACK",
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE ROLE r1"),
                (0, "GRANT SELECT ON t TO r1"),
                (0, ROLES),
                (0, "SELECT has_table_privilege('r1', 't', 'SELECT')"),
                (1, ROLES),
                (1, ACL),
                (0, "ROLLBACK"),
                (1, ROLES),
            ],
            checks: vec![ROLES, ACL],
        },
        Schedule {
            name: "role changes reach other sessions at COMMIT",
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE ROLE r1 LOGIN"),
                (0, "GRANT SELECT, INSERT ON t TO r1"),
                (1, ROLES),
                (0, "COMMIT"),
                (1, ROLES),
                (1, ACL),
                (1, "BEGIN"),
                (1, "REVOKE INSERT ON t FROM r1"),
                (1, "DROP ROLE r1"),
                (0, ROLES),
                (1, "ROLLBACK"),
            ],
            checks: vec![ROLES, ACL],
        },
        Schedule {
            name: "ROLLBACK TO SAVEPOINT takes back the role changes after it",
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE ROLE r1"),
                (0, "SAVEPOINT s"),
                (0, "CREATE ROLE r2"),
                (0, "GRANT SELECT ON t TO r2"),
                (0, "ALTER ROLE r1 CREATEDB"),
                (0, "ROLLBACK TO SAVEPOINT s"),
                (0, ROLES),
                (0, "GRANT UPDATE ON t TO r1"),
                (0, "COMMIT"),
            ],
            checks: vec![ROLES, ACL],
        },
        Schedule {
            name: "an error ends the block and its role changes",
            steps: vec![
                (0, "BEGIN"),
                (0, "CREATE ROLE r1"),
                (0, "SELECT 1/0"),
                (0, "CREATE ROLE r2"),
                (0, "ROLLBACK"),
                (0, "CREATE ROLE r1; GRANT SELECT ON t TO r1; SELECT 1/0"),
                (0, ROLES),
            ],
            checks: vec![ROLES, ACL],
        },
        Schedule {
            name: "a second change of a role waits for the first transaction",
            steps: vec![
                (0, "CREATE ROLE r1"),
                (0, "BEGIN"),
                (0, "ALTER ROLE r1 LOGIN"),
                (1, "BEGIN"),
                (1, "ALTER ROLE r1 CREATEDB"),
                (0, "ROLLBACK"),
                (1, ROLES),
                (1, "COMMIT"),
            ],
            checks: vec![ROLES],
        },
        Schedule {
            name: "a deadlock through a role and a row is found",
            steps: vec![
                (0, "CREATE ROLE r1"),
                (0, "BEGIN"),
                (0, "ALTER ROLE r1 LOGIN"),
                (1, "BEGIN"),
                (1, "UPDATE t SET v = 1 WHERE id = 1"),
                (0, "UPDATE t SET v = 2 WHERE id = 1"),
                (1, "ALTER ROLE r1 CREATEDB"),
                (1, "ROLLBACK"),
                (0, "COMMIT"),
            ],
            checks: vec![ROLES, "SELECT * FROM t"],
        },
        Schedule {
            name: "a read-only transaction refuses role changes",
            steps: vec![
                (0, "BEGIN READ ONLY"),
                (0, "CREATE ROLE r1"),
                (0, "ROLLBACK"),
                (0, "BEGIN"),
                (0, "SET TRANSACTION READ ONLY"),
                (0, "GRANT SELECT ON t TO PUBLIC"),
                (0, "ROLLBACK"),
            ],
            checks: vec![ROLES, ACL],
        },
        Schedule {
            name: "ALTER TABLE OWNER TO is undone by ROLLBACK",
            steps: vec![
                (0, "CREATE ROLE r1"),
                (0, "BEGIN"),
                (0, "ALTER TABLE t OWNER TO r1"),
                (
                    0,
                    "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 't'",
                ),
                (
                    1,
                    "SELECT pg_get_userbyid(relowner) = 'r1' FROM pg_class WHERE relname = 't'",
                ),
                (0, "ROLLBACK"),
            ],
            checks: vec![
                "SELECT pg_get_userbyid(relowner) = 'r1' FROM pg_class WHERE relname = 't'",
            ],
        },
        Schedule {
            name: "grant options and the schema's owner: transactional, as PostgreSQL 15",
            steps: vec![
                (0, "CREATE ROLE r1"),
                (0, "CREATE ROLE r2"),
                (0, "BEGIN"),
                (0, "GRANT SELECT, INSERT ON t TO r1 WITH GRANT OPTION"),
                (0, GRANT_OPTIONS),
                (1, GRANT_OPTIONS),
                (0, "ROLLBACK"),
                (0, GRANT_OPTIONS),
                (0, "GRANT SELECT ON t TO r1 WITH GRANT OPTION"),
                (0, "GRANT SELECT ON t TO PUBLIC WITH GRANT OPTION"),
                (0, "BEGIN"),
                (0, "REVOKE GRANT OPTION FOR SELECT ON t FROM r1 RESTRICT"),
                (0, GRANT_OPTIONS),
                (1, GRANT_OPTIONS),
                (0, "COMMIT"),
                (1, GRANT_OPTIONS),
                (0, "GRANT USAGE ON SCHEMA public TO r1 WITH GRANT OPTION"),
                (0, NSP),
                (0, "BEGIN"),
                (0, "ALTER SCHEMA public OWNER TO r1"),
                (0, NSP),
                (1, NSP),
                (0, "ROLLBACK"),
                (0, "ALTER SCHEMA public OWNER TO r2"),
                (1, NSP),
                (
                    1,
                    "SELECT has_schema_privilege('r2', 'public', 'CREATE WITH GRANT OPTION'), \
                     has_schema_privilege('r1', 'public', 'USAGE WITH GRANT OPTION'), \
                     has_schema_privilege('r1', 'public', 'CREATE WITH GRANT OPTION, USAGE')",
                ),
                (1, "DROP ROLE r2"),
                (1, "ALTER SCHEMA public OWNER TO pg_database_owner"),
                (1, "REVOKE ALL ON SCHEMA public FROM r1 CASCADE"),
                (1, NSP),
            ],
            checks: vec![NSP, GRANT_OPTIONS],
        },
    ]
}

fn compare(pg_conn: &str, w_conn: &str) -> Vec<String> {
    block_on_within(Duration::from_secs(300), async {
        let mut failures = Vec::new();
        for sc in schedules() {
            let run = |init| Run {
                setup: SETUP,
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
fn role_schedules_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare role schedules") else {
        return;
    };
    let failures = compare(&peers.pg_conn(), &peers.walden_conn());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// One statement's rows as `a,b` strings (an error as `ERROR <SQLSTATE>`).
async fn rows(c: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    let r = c.simple_query(sql).await;
    let s = schedule::summary(&r);
    if s.starts_with("ERROR") {
        return vec![s];
    }
    r.unwrap()
        .into_iter()
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

#[test]
fn a_kill_keeps_committed_role_changes_and_drops_open_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let mut walden = Serve::start(&dir, &[]);
    let conn = walden.conn_str();
    // Kept running to the kill: the open transaction's connection lives on it.
    let rt = pg_diff::runtime();
    rt.block_on(async {
        let c = pg_diff::connect(&conn).await;
        // Rows, schema and roles in one transaction.
        c.batch_execute(
            "BEGIN; CREATE ROLE keeper; CREATE TABLE made (id int PRIMARY KEY); \
             INSERT INTO made VALUES (1), (2); GRANT SELECT ON made TO keeper; \
             GRANT CREATE ON SCHEMA public TO keeper; COMMIT",
        )
        .await
        .unwrap();
        c.batch_execute("CREATE ROLE kept; REVOKE USAGE ON SCHEMA public FROM PUBLIC")
            .await
            .unwrap();
        // Left open when the server dies: none of it may survive.
        let open = pg_diff::connect(&conn).await;
        open.batch_execute(
            "BEGIN; CREATE ROLE kgone; GRANT SELECT ON made TO kept; INSERT INTO made VALUES (3); \
             GRANT USAGE ON SCHEMA public TO kept",
        )
        .await
        .unwrap();
        // Kept open (the runtime holds its connection) until the kill.
        std::mem::forget(open);
    });
    expect_state(conn);
    walden.signal_and_wait(9, Duration::from_secs(10));
    drop(rt);
    let walden = Serve::start(&dir, &[]);
    expect_state(walden.conn_str());
}

/// What must hold after the kill test's script, before and after the kill.
fn expect_state(conn: String) {
    block_on_within(Duration::from_secs(60), async move {
        let c = pg_diff::connect(&conn).await;
        assert_eq!(
            rows(
                &c,
                "SELECT rolname FROM pg_roles WHERE rolname LIKE 'k%' ORDER BY 1"
            )
            .await,
            vec!["keeper", "kept"]
        );
        assert_eq!(
            rows(&c, "SELECT * FROM made ORDER BY id").await,
            vec!["1", "2"]
        );
        assert_eq!(
            rows(&c, "SELECT relacl FROM pg_class WHERE relname = 'made'").await,
            vec!["{walden=arwdD/walden,keeper=r/walden}"]
        );
        assert_eq!(
            rows(&c, "SELECT has_table_privilege('kept', 'made', 'SELECT')").await,
            vec!["f"]
        );
        assert_eq!(
            rows(
                &c,
                "SELECT nspacl FROM pg_namespace WHERE nspname = 'public'"
            )
            .await,
            vec!["{pg_database_owner=UC/pg_database_owner,keeper=C/pg_database_owner}"]
        );
    })
}
