//! MERGE through the server (issue 34): PostgreSQL 15's form statement by
//! statement against a scratch PostgreSQL 15 (rows and command tags must be
//! equal, an error must carry the same SQLSTATE), its privileges as another
//! role, and SQL Server's form (BY SOURCE, OUTPUT $action, error 8672,
//! @@ROWCOUNT) against SQL Server's documented answers.

use crate::pg_diff;
use crate::tsql_support;

use pg_diff::{block_on_within, connect, Peers};
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "CREATE TABLE tgt (id int PRIMARY KEY, v text NOT NULL, n int DEFAULT 7 CHECK (n >= 0))",
    "INSERT INTO tgt VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)",
    "CREATE TABLE src (id int, v text, n int)",
    "INSERT INTO src VALUES (1, 'A', 10), (2, 'B', -1), (4, 'D', 40), (5, NULL, 50)",
    // Every clause kind, conditions tried in order, the first that holds acts.
    "MERGE INTO tgt t USING src s ON t.id = s.id \
     WHEN MATCHED AND s.n < 0 THEN DELETE \
     WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + s.n \
     WHEN NOT MATCHED AND s.v IS NOT NULL THEN INSERT VALUES (s.id, s.v, s.n) \
     WHEN NOT MATCHED THEN DO NOTHING",
    "SELECT * FROM tgt ORDER BY id",
    "MERGE INTO tgt USING src ON tgt.id = src.id WHEN MATCHED THEN DO NOTHING",
    "MERGE INTO tgt AS t USING src AS s ON t.id = s.id WHEN NOT MATCHED THEN DO NOTHING",
    // A column list, defaults, DEFAULT VALUES' kin, a VALUES source.
    "MERGE INTO tgt t USING (VALUES (6, 'f'), (7, 'g')) AS s(id, v) ON t.id = s.id \
     WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
    "MERGE INTO tgt t USING (VALUES (8)) s(id) ON t.id = s.id \
     WHEN NOT MATCHED THEN INSERT (v, id, n) VALUES ('h', s.id, DEFAULT)",
    "SELECT * FROM tgt ORDER BY id",
    // A subquery over the target itself, and a CTE source.
    "MERGE INTO tgt t USING (SELECT id, upper(v) AS v FROM tgt WHERE id > 5) s ON t.id = s.id \
     WHEN MATCHED THEN UPDATE SET v = s.v",
    "WITH s AS (SELECT 9 AS id, 'i' AS v) MERGE INTO tgt t USING s ON t.id = s.id \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 9)",
    "WITH s AS (SELECT id FROM tgt WHERE id >= 8) MERGE INTO tgt t USING s ON t.id = s.id \
     WHEN MATCHED THEN DELETE",
    "SELECT * FROM tgt ORDER BY id",
    // ON beyond an equality: a condition on the target alone, a range.
    "MERGE INTO tgt t USING src s ON t.id = s.id AND t.id > 1 \
     WHEN MATCHED THEN UPDATE SET n = 0 WHEN NOT MATCHED THEN DO NOTHING",
    "MERGE INTO tgt t USING (VALUES (2, 5)) s(lo, hi) ON t.id BETWEEN s.lo AND s.hi \
     WHEN MATCHED THEN UPDATE SET n = t.n + 1",
    "MERGE INTO tgt t USING (VALUES (NULL::int, 'null')) s(id, v) ON t.id = s.id \
     WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (99, s.v)",
    "SELECT * FROM tgt ORDER BY id",
    "MERGE INTO tgt t USING (SELECT 1 WHERE false) s(id) ON t.id = s.id WHEN MATCHED THEN DELETE",
    // A target row two source rows reach: an error if both would act on it.
    "MERGE INTO tgt t USING (VALUES (1), (1)) s(id) ON t.id = s.id \
     WHEN MATCHED THEN UPDATE SET n = t.n + 1",
    "MERGE INTO tgt t USING (VALUES (1), (1)) s(id) ON t.id = s.id WHEN MATCHED THEN DELETE",
    "MERGE INTO tgt t USING (VALUES (1), (1)) s(id) ON t.id = s.id WHEN MATCHED THEN DO NOTHING",
    "MERGE INTO tgt t USING (VALUES (1, false), (1, true)) s(id, go) ON t.id = s.id \
     WHEN MATCHED AND s.go THEN UPDATE SET n = t.n + 100",
    "SELECT * FROM tgt ORDER BY id",
    // The key itself updated.
    "MERGE INTO tgt t USING (VALUES (99, 98)) s(id, new) ON t.id = s.id \
     WHEN MATCHED THEN UPDATE SET id = s.new",
    "SELECT * FROM tgt ORDER BY id",
    // Constraints: NOT NULL, CHECK, primary key, foreign keys.
    "MERGE INTO tgt t USING (VALUES (1)) s(id) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = NULL",
    "MERGE INTO tgt t USING (VALUES (1)) s(id) ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = -5",
    "MERGE INTO tgt t USING (VALUES (100, 'x')) s(id, v) ON t.id = s.id \
     WHEN NOT MATCHED THEN INSERT VALUES (1, s.v, 0)",
    "MERGE INTO tgt t USING (VALUES (100)) s(id) ON t.id = s.id \
     WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
    "MERGE INTO tgt t USING (VALUES (100, 'x', -1)) s(id, v, n) ON t.id = s.id \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, s.n)",
    "MERGE INTO tgt t USING (VALUES (101, 'x'), (101, 'y')) s(id, v) ON t.id = s.id \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
    "CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES tgt (id))",
    "INSERT INTO child VALUES (1, 1)",
    "MERGE INTO tgt t USING (VALUES (1)) s(id) ON t.id = s.id WHEN MATCHED THEN DELETE",
    "MERGE INTO child c USING (VALUES (2, 999)) s(id, pid) ON c.id = s.id \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.pid)",
    "MERGE INTO child c USING (VALUES (2, 3)) s(id, pid) ON c.id = s.id \
     WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.pid)",
    "SELECT * FROM tgt ORDER BY id",
    "SELECT * FROM child ORDER BY id",
    // Identity, serial, DEFAULT VALUES.
    "CREATE TABLE ident (id int GENERATED ALWAYS AS IDENTITY, d int DEFAULT 5, v text)",
    "CREATE TABLE ser (s serial PRIMARY KEY, v text)",
    "MERGE INTO ser USING (VALUES ('p'), ('q')) s(v) ON ser.v = s.v \
     WHEN NOT MATCHED THEN INSERT (v) VALUES (s.v)",
    "MERGE INTO ser USING (VALUES ('p'), ('r')) s(v) ON ser.v = s.v \
     WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT DEFAULT VALUES",
    // (PostgreSQL's join order decides which source row is inserted
    // first: the serials are compared as a set.)
    "SELECT v, count(*) FROM ser GROUP BY v ORDER BY v",
    "SELECT count(DISTINCT s), max(s) FROM ser",
    "MERGE INTO ident i USING (VALUES ('x'), ('y')) s(v) ON i.v = s.v \
     WHEN NOT MATCHED THEN INSERT (v) VALUES (s.v)",
    "MERGE INTO ident i USING (VALUES ('z')) s(v) ON i.v = s.v WHEN NOT MATCHED THEN INSERT DEFAULT VALUES",
    "MERGE INTO ident i USING (VALUES ('x')) s(v) ON i.v = s.v WHEN MATCHED THEN UPDATE SET v = 'xx'",
    "SELECT * FROM ident ORDER BY id",
    "MERGE INTO ident i USING (VALUES (5, 'w')) s(id, v) ON false \
     WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
    "MERGE INTO ident i USING (VALUES (5)) s(id) ON true WHEN MATCHED THEN UPDATE SET id = s.id",
    // In a transaction rolled back, and a failed one.
    "BEGIN",
    "MERGE INTO tgt t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'tx' \
     WHEN NOT MATCHED AND s.v IS NOT NULL THEN INSERT VALUES (s.id + 10, s.v, 1)",
    "SELECT * FROM tgt ORDER BY id",
    "ROLLBACK",
    "SELECT * FROM tgt ORDER BY id",
    "BEGIN",
    "MERGE INTO tgt t USING (VALUES (3)) s(id) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'gone'",
    "MERGE INTO tgt t USING (VALUES (3), (3)) s(id) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'twice'",
    "SELECT 1",
    "ROLLBACK",
    "SELECT * FROM tgt ORDER BY id",
    // Prepared, with a parameter.
    "PREPARE pm (int, text) AS MERGE INTO tgt t USING (VALUES ($1, $2)) s(id, v) ON t.id = s.id \
     WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 0)",
    "EXECUTE pm (3, 'prepared')",
    "EXECUTE pm (30, 'new')",
    "SELECT * FROM tgt ORDER BY id",
    "DEALLOCATE pm",
    "DELETE FROM tgt WHERE id = 30",
    // What PostgreSQL refuses.
    "MERGE INTO tgt t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (t.id, s.v, 1)",
    "MERGE INTO tgt t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN MATCHED THEN DO NOTHING",
    "MERGE INTO tgt t USING src t ON t.id = t.id WHEN MATCHED THEN DELETE",
    "MERGE INTO tgt t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING *",
    "MERGE INTO tgt t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nosuch = 1",
    "MERGE INTO nosuch t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE",
    "MERGE INTO tgt t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, s.n, 1)",
    "MERGE INTO tgt t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = 1, n = 2",
    "SELECT * FROM tgt ORDER BY id",
];

#[test]
fn merge_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare MERGE") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = pg_diff::sqlstate_outcomes(&connect(&peers.pg_conn()).await, SCRIPT).await;
        let got = pg_diff::sqlstate_outcomes(&connect(&peers.walden_conn()).await, SCRIPT).await;
        pg_diff::assert_same(&want, &got);
        // The script must have run its statements, not failed them all.
        let merged = got
            .iter()
            .filter(|l| l.contains("MERGE INTO") && !l.contains("-> ERROR"))
            .count();
        assert!(merged > 20, "{merged} MERGEs ran");
    });
}

const SETUP_PRIVILEGES: &[&str] = &[
    "CREATE TABLE pt (id int PRIMARY KEY, v int)",
    "INSERT INTO pt VALUES (1, 1)",
    "CREATE TABLE ps (id int, v int)",
    "INSERT INTO ps VALUES (1, 10), (2, 20)",
    "CREATE TABLE hidden (id int)",
    "CREATE ROLE mu LOGIN",
    "GRANT SELECT, INSERT ON pt TO mu",
    "GRANT SELECT ON ps TO mu",
];

const AS_ROLE: &[&str] = &[
    // INSERT alone is enough for an INSERT action.
    "MERGE INTO pt t USING ps s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
    // UPDATE and DELETE need their privileges.
    "MERGE INTO pt t USING ps s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
    "MERGE INTO pt t USING ps s ON t.id = s.id WHEN MATCHED THEN DELETE",
    "MERGE INTO pt t USING ps s ON t.id = s.id WHEN MATCHED THEN DO NOTHING",
    // SELECT on the source.
    "MERGE INTO pt t USING hidden s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, 0)",
    "MERGE INTO pt t USING (SELECT id FROM hidden) s ON t.id = s.id WHEN NOT MATCHED THEN DO NOTHING",
    "SELECT * FROM pt ORDER BY id",
];

#[test]
fn merge_privileges_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare MERGE's privileges") else {
        return;
    };
    let as_mu = |conn: String| {
        conn.split_whitespace()
            .map(|p| if p.starts_with("user=") { "user=mu" } else { p })
            .collect::<Vec<_>>()
            .join(" ")
    };
    block_on_within(Duration::from_secs(120), async {
        let mut sides = Vec::new();
        for conn in [peers.pg_conn(), peers.walden_conn()] {
            let admin = connect(&conn).await;
            let setup = pg_diff::sqlstate_outcomes(&admin, SETUP_PRIVILEGES).await;
            assert!(setup.iter().all(|l| !l.contains("ERROR")), "{setup:?}");
            let mu = connect(&as_mu(conn)).await;
            sides.push(pg_diff::sqlstate_outcomes(&mu, AS_ROLE).await);
        }
        pg_diff::assert_same(&sides[0], &sides[1]);
        assert!(sides[1][1].contains("ERROR 42501"), "{}", sides[1][1]);
    });
}

/// SQL Server's form, checked against its documented behaviour: WHEN NOT
/// MATCHED BY TARGET / BY SOURCE, OUTPUT $action with inserted.* and
/// deleted.* (NULL for the side an action has not), OUTPUT ... INTO,
/// @@ROWCOUNT, error 8672 for a row two source rows reach, TOP refused.
#[test]
fn tsql_merge_by_source_and_output() {
    use tsql_support::run;
    tsql_support::with_server(Duration::from_secs(120), |conn| {
        Box::pin(async move {
            let c = connect(&conn).await;
            run(
                &c,
                "CREATE TABLE Target (ID int PRIMARY KEY, Name varchar(20))",
            )
            .await;
            run(&c, "CREATE TABLE Source (ID int, Name varchar(20))").await;
            run(
                &c,
                "INSERT INTO Target VALUES (1, 'one'), (2, 'two'), (3, 'three')",
            )
            .await;
            run(&c, "INSERT INTO Source VALUES (1, 'ONE'), (4, 'FOUR')").await;
            // One row of each action; the OUTPUT rows in the order written
            // (source rows first, then the target rows no source row met).
            let out = run(
                &c,
                "MERGE Target AS T USING Source AS S ON T.ID = S.ID \
                 WHEN MATCHED THEN UPDATE SET T.Name = S.Name \
                 WHEN NOT MATCHED BY TARGET THEN INSERT (ID, Name) VALUES (S.ID, S.Name) \
                 WHEN NOT MATCHED BY SOURCE AND T.ID = 3 THEN DELETE \
                 OUTPUT $action, inserted.ID, inserted.Name, deleted.ID, deleted.Name;",
            )
            .await;
            assert_eq!(
                out,
                "rows UPDATE,1,ONE,1,one INSERT,4,FOUR,NULL,NULL DELETE,NULL,NULL,3,three"
            );
            assert_eq!(
                run(&c, "SELECT ID, Name FROM Target ORDER BY ID").await,
                "rows 1,ONE 2,two 4,FOUR"
            );
            // @@ROWCOUNT counts the rows inserted, updated and deleted.
            let out = run(
                &c,
                "SET NOCOUNT ON\n\
                 MERGE Target AS T USING Source AS S ON T.ID = S.ID \
                 WHEN MATCHED THEN UPDATE SET Name = 'm' \
                 WHEN NOT MATCHED BY SOURCE THEN UPDATE SET Name = 'nobody';\n\
                 SELECT @@ROWCOUNT\n\
                 SET NOCOUNT OFF",
            )
            .await;
            assert_eq!(out, "rows 3");
            assert_eq!(
                run(&c, "SELECT ID, Name FROM Target ORDER BY ID").await,
                "rows 1,m 2,nobody 4,m"
            );
            // OUTPUT ... INTO a table, with a source column.
            run(
                &c,
                "CREATE TABLE Audit (Act varchar(10), OldName varchar(20), SrcName varchar(20))",
            )
            .await;
            assert_eq!(
                run(
                    &c,
                    "MERGE INTO Target T USING (SELECT 2 AS ID, 'x' AS Name) S ON T.ID = S.ID \
                     WHEN MATCHED THEN DELETE \
                     OUTPUT $action, deleted.Name, S.Name INTO Audit;"
                )
                .await,
                "ok 1"
            );
            assert_eq!(
                run(&c, "SELECT Act, OldName, SrcName FROM Audit").await,
                "rows DELETE,nobody,x"
            );
            // A target row two source rows update: error 8672, nothing done.
            run(&c, "INSERT INTO Source VALUES (1, 'again')").await;
            let out = run(
                &c,
                "BEGIN TRY\n\
                 MERGE Target AS T USING Source AS S ON T.ID = S.ID \
                 WHEN MATCHED THEN UPDATE SET Name = S.Name;\n\
                 END TRY\n\
                 BEGIN CATCH\n\
                 SELECT ERROR_NUMBER()\n\
                 END CATCH",
            )
            .await;
            assert_eq!(out, "rows 8672");
            assert_eq!(
                run(&c, "SELECT ID, Name FROM Target ORDER BY ID").await,
                "rows 1,m 4,m"
            );
            assert_eq!(
                run(
                    &c,
                    "MERGE Target AS T USING Source AS S ON T.ID = S.ID \
                     WHEN MATCHED THEN UPDATE SET Name = S.Name;"
                )
                .await,
                "ERROR 21000"
            );
            // What is not done is refused, naming it.
            for sql in [
                "MERGE TOP (1) Target AS T USING Source AS S ON T.ID = S.ID WHEN MATCHED THEN DELETE;",
                "MERGE Target WITH (HOLDLOCK) AS T USING Source AS S ON T.ID = S.ID WHEN MATCHED THEN DELETE;",
            ] {
                assert_eq!(run(&c, sql).await, "ERROR 0A000", "{sql}");
            }
        })
    });
}

/// A target row another session changes while MERGE waits for it: judged
/// again on its latest version, as PostgreSQL 15 does (a row gone or no
/// longer joined leaves its source row NOT MATCHED; under REPEATABLE READ
/// the change is a serialization failure).
#[test]
fn merge_rechecks_rows_changed_concurrently_as_postgres() {
    use pg_diff::schedule::{self, Run};
    const SETUP: &str = "DROP TABLE IF EXISTS cm; \
        CREATE TABLE cm (id int PRIMARY KEY, v int); INSERT INTO cm VALUES (1, 10), (2, 20)";
    const MERGE: &str = "MERGE INTO cm t USING (VALUES (1), (2)) s(id) ON t.id = s.id \
        WHEN MATCHED AND t.v < 50 THEN UPDATE SET v = t.v + 1 \
        WHEN MATCHED THEN UPDATE SET v = t.v + 1000 \
        WHEN NOT MATCHED THEN INSERT VALUES (s.id, -1)";
    let schedules: Vec<(&str, Vec<(usize, &str)>)> = vec![
        (
            "updated: the other clause acts",
            vec![
                (0, "BEGIN"),
                (0, "UPDATE cm SET v = 100 WHERE id = 1"),
                (1, MERGE),
                (0, "COMMIT"),
            ],
        ),
        (
            "deleted: NOT MATCHED",
            vec![
                (0, "BEGIN"),
                (0, "DELETE FROM cm WHERE id = 1"),
                (1, MERGE),
                (0, "COMMIT"),
            ],
        ),
        (
            "key changed: no longer joined",
            vec![
                (0, "BEGIN"),
                (0, "UPDATE cm SET id = 3 WHERE id = 1"),
                (1, MERGE),
                (0, "COMMIT"),
            ],
        ),
        (
            "rolled back: as read",
            vec![
                (0, "BEGIN"),
                (0, "UPDATE cm SET v = 100 WHERE id = 1"),
                (1, MERGE),
                (0, "ROLLBACK"),
            ],
        ),
        (
            "repeatable read: serialization failure",
            vec![
                (1, "BEGIN ISOLATION LEVEL REPEATABLE READ"),
                (1, "SELECT count(*) FROM cm"),
                (0, "UPDATE cm SET v = 100 WHERE id = 1"),
                (1, MERGE),
                (1, "ROLLBACK"),
            ],
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare MERGE under concurrency") else {
        return;
    };
    let (pg_conn, w_conn) = (peers.pg_conn(), peers.walden_conn());
    let failures = block_on_within(Duration::from_secs(300), async {
        let mut failures = Vec::new();
        for (name, steps) in &schedules {
            let run = Run {
                setup: SETUP,
                init: "",
                sessions: 2,
                steps,
                checks: &["SELECT * FROM cm ORDER BY id"],
            };
            let (want, got) = schedule::run_both(&pg_conn, &run, &w_conn, &run).await;
            failures.extend(schedule::mismatch(name, &want, &got));
        }
        failures
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
