//! FOREIGN KEY constraints through the server, statement by statement
//! against a scratch PostgreSQL 15 with the same SQL (outcome, SQLSTATE,
//! message, detail and the constraint and table fields drivers read):
//! every action on DELETE and UPDATE, multi-column keys, NULLs under MATCH
//! SIMPLE and FULL, self-references, cascades of cascades, DDL errors,
//! DROP TABLE and TRUNCATE of referenced tables, ALTER TABLE ADD/DROP
//! CONSTRAINT and the catalogs. Then across restarts: after a kill (redo
//! from the log) and after a checkpoint (the image), the keys are still
//! there and still enforced.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{
    assert_same, block_on_within, connect, outcome, run_script, runtime, start_postgres, Field,
    Peers,
};
use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::time::Duration;
use walden_bench::workbench::pg_peer::ScratchPostgres;

/// The error fields compared besides SQLSTATE and message.
const FIELDS: &[Field] = &[
    Field::Detail,
    Field::Table,
    Field::Constraint,
    Field::Schema,
];

const SCRIPT: &[&str] = &[
    // NO ACTION (the default) and the errors of both sides.
    "CREATE TABLE p (id int PRIMARY KEY, code text UNIQUE, n int)",
    "CREATE TABLE c (id int PRIMARY KEY, p int REFERENCES p, note text)",
    "INSERT INTO p VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)",
    "INSERT INTO c VALUES (1, 1, 'x'), (2, 1, 'y'), (3, NULL, 'null passes')",
    "INSERT INTO c VALUES (4, 5, 'orphan')",
    "UPDATE c SET p = 9 WHERE id = 1",
    "UPDATE c SET p = 2 WHERE id = 1",
    "DELETE FROM p WHERE id = 1",
    "UPDATE p SET id = 10 WHERE id = 1",
    // A non-key column of the parent changes freely.
    "UPDATE p SET n = n + 1 WHERE id = 1",
    "DELETE FROM p WHERE id = 3",
    // Rows of one statement are checked at its end.
    "INSERT INTO c SELECT 5, 7, 'later' UNION ALL SELECT 6, 1, 'ok'",
    "SELECT * FROM c ORDER BY id",
    // RESTRICT, and a key handed to another row in the same statement.
    "CREATE TABLE r (id int PRIMARY KEY, p int REFERENCES p ON DELETE RESTRICT ON UPDATE RESTRICT)",
    "INSERT INTO r VALUES (1, 2)",
    "DELETE FROM p WHERE id = 2",
    "UPDATE p SET id = id + 100 WHERE id = 2",
    "DELETE FROM r",
    // A foreign key to a UNIQUE column, with a name of its own.
    "CREATE TABLE u (id int PRIMARY KEY, code text, CONSTRAINT u_code FOREIGN KEY (code) REFERENCES p (code) ON UPDATE CASCADE ON DELETE SET NULL)",
    "INSERT INTO u VALUES (1, 'a'), (2, 'b'), (3, 'zz')",
    "INSERT INTO u VALUES (3, 'b')",
    "UPDATE p SET code = 'aa' WHERE id = 1",
    "SELECT * FROM u ORDER BY id",
    "DELETE FROM c WHERE p = 1",
    "DELETE FROM p WHERE id = 1",
    "SELECT * FROM u ORDER BY id",
    // CASCADE, SET NULL, SET DEFAULT, multi-column keys.
    "CREATE TABLE orders (region text, num int, total int, PRIMARY KEY (region, num))",
    "CREATE TABLE lines (id int PRIMARY KEY, region text, num int, qty int, \
     FOREIGN KEY (region, num) REFERENCES orders ON DELETE CASCADE ON UPDATE CASCADE)",
    "CREATE TABLE notes (id int PRIMARY KEY, region text DEFAULT 'eu', num int DEFAULT 0, \
     FOREIGN KEY (region, num) REFERENCES orders (region, num) ON DELETE SET DEFAULT ON UPDATE SET NULL)",
    "INSERT INTO orders VALUES ('eu', 0, 0), ('eu', 1, 10), ('us', 1, 20), ('us', 2, 30)",
    "INSERT INTO lines VALUES (1, 'eu', 1, 5), (2, 'eu', 1, 6), (3, 'us', 1, 7), (4, 'us', NULL, 8)",
    "INSERT INTO notes VALUES (1, 'us', 2), (2, 'eu', 1), (3, 'us', 1)",
    "INSERT INTO lines VALUES (5, 'eu', 2, 1)",
    "UPDATE orders SET num = 11 WHERE region = 'eu' AND num = 1",
    "SELECT * FROM lines ORDER BY id",
    "SELECT * FROM notes ORDER BY id",
    "DELETE FROM orders WHERE region = 'us' AND num = 2",
    "SELECT * FROM notes ORDER BY id",
    "DELETE FROM orders WHERE region = 'us'",
    "SELECT * FROM lines ORDER BY id",
    "SELECT * FROM notes ORDER BY id",
    // SET DEFAULT to a key that is missing fails.
    "DELETE FROM orders WHERE num = 0",
    // Rows an action changes meet their table's CHECK (and NOT NULL, but
    // Walden's 23502 has no "Failing row contains" DETAIL yet).
    "CREATE TABLE ck (id int PRIMARY KEY, o int DEFAULT -1 CHECK (o IS NULL OR o >= 0), \
     FOREIGN KEY (o) REFERENCES p (id) ON DELETE SET DEFAULT)",
    "INSERT INTO p VALUES (50, 'x50', 0), (51, 'x51', 0)",
    "INSERT INTO ck VALUES (1, 50)",
    "DELETE FROM p WHERE id = 50",
    "DROP TABLE ck",
    "DELETE FROM p WHERE id >= 50",
    // MATCH FULL.
    "CREATE TABLE mf (id int PRIMARY KEY, region text, num int, \
     FOREIGN KEY (region, num) REFERENCES orders MATCH FULL)",
    "INSERT INTO mf VALUES (1, NULL, NULL)",
    "INSERT INTO mf VALUES (2, 'eu', NULL)",
    "INSERT INTO mf VALUES (3, 'eu', 11)",
    // Self-reference, with cascades of cascades.
    "CREATE TABLE tree (id int PRIMARY KEY, parent int REFERENCES tree ON DELETE CASCADE, label text)",
    "INSERT INTO tree VALUES (2, 1, 'child first'), (1, NULL, 'root')",
    "INSERT INTO tree VALUES (3, 2, 'g'), (4, 3, 'gg'), (5, 1, 'c2'), (6, 42, 'orphan')",
    "CREATE TABLE leaf (id int PRIMARY KEY, t int REFERENCES tree ON DELETE CASCADE)",
    "INSERT INTO leaf VALUES (1, 4), (2, 5)",
    "DELETE FROM tree WHERE id = 2",
    "SELECT * FROM tree ORDER BY id",
    "SELECT * FROM leaf ORDER BY id",
    "CREATE TABLE chain (id int PRIMARY KEY, up int REFERENCES chain)",
    "INSERT INTO chain VALUES (1, NULL), (2, 1), (3, 2)",
    "DELETE FROM chain WHERE id = 2",
    "DELETE FROM chain",
    // Declarations PostgreSQL refuses.
    "CREATE TABLE bad (x int REFERENCES p (n))",
    "CREATE TABLE bad (x text REFERENCES p)",
    "CREATE TABLE bad (x int REFERENCES nosuch)",
    "CREATE TABLE bad (x int REFERENCES p (nosuch))",
    "CREATE TABLE bad (x int, y int, FOREIGN KEY (x, y) REFERENCES p (id))",
    "CREATE TABLE bad (x int, FOREIGN KEY (zz) REFERENCES p)",
    "CREATE TABLE nopk (a int)",
    "CREATE TABLE bad (x int REFERENCES nopk)",
    "CREATE TABLE bad (x int, y int, FOREIGN KEY (x, y) REFERENCES orders MATCH PARTIAL)",
    "CREATE TABLE ok1 (x int REFERENCES p NOT DEFERRABLE)",
    // Names: generated ones avoid names in use.
    "CREATE TABLE ok2 (x int, y int, FOREIGN KEY (x) REFERENCES p, FOREIGN KEY (x) REFERENCES p)",
    "SELECT conname, contype, confupdtype, confdeltype, confmatchtype, conkey, confkey, \
     confrelid::regclass, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true) \
     FROM pg_constraint WHERE contype = 'f' ORDER BY conname",
    // The information_schema views drivers read (PostgreSQL also lists
    // NOT NULL as CHECK constraints there; those are left out).
    "SELECT constraint_name, table_name, constraint_type, is_deferrable, initially_deferred, \
     enforced, nulls_distinct FROM information_schema.table_constraints \
     WHERE constraint_type <> 'CHECK' AND table_schema = 'public' ORDER BY 1",
    "SELECT constraint_name, table_name, column_name, ordinal_position, \
     position_in_unique_constraint FROM information_schema.key_column_usage \
     WHERE table_schema = 'public' ORDER BY 1, 4",
    "SELECT constraint_name, unique_constraint_schema, unique_constraint_name, match_option, \
     update_rule, delete_rule FROM information_schema.referential_constraints ORDER BY 1",
    "SELECT constraint_name, table_name, column_name FROM information_schema.constraint_column_usage \
     WHERE constraint_name IN (SELECT constraint_name FROM information_schema.referential_constraints) \
     ORDER BY 1, 3",
    // ALTER TABLE ADD / DROP CONSTRAINT.
    "CREATE TABLE late (id int PRIMARY KEY, p int)",
    "INSERT INTO late VALUES (1, 2), (2, 77)",
    "ALTER TABLE late ADD CONSTRAINT late_p FOREIGN KEY (p) REFERENCES p",
    "DELETE FROM late WHERE id = 2",
    "ALTER TABLE late ADD CONSTRAINT late_p FOREIGN KEY (p) REFERENCES p",
    "ALTER TABLE late ADD FOREIGN KEY (p) REFERENCES p ON DELETE CASCADE",
    "INSERT INTO late VALUES (3, 99)",
    "ALTER TABLE late DROP CONSTRAINT late_p",
    "ALTER TABLE late DROP CONSTRAINT late_p_fkey",
    "INSERT INTO late VALUES (3, 99)",
    // The unique index a foreign key references stays while it does.
    "CREATE TABLE ux (id int PRIMARY KEY, k int)",
    "CREATE UNIQUE INDEX ux_k ON ux (k)",
    "CREATE TABLE uxr (k int REFERENCES ux (k))",
    "DROP INDEX ux_k",
    "DROP TABLE uxr",
    "DROP INDEX ux_k",
    // DROP TABLE and TRUNCATE of a referenced table.
    "DROP TABLE p",
    "TRUNCATE p",
    "TRUNCATE orders, lines, notes, mf",
    "CREATE TABLE gone (id int PRIMARY KEY)",
    "CREATE TABLE refs_gone (g int REFERENCES gone)",
    "DROP TABLE gone CASCADE",
    "INSERT INTO refs_gone VALUES (5)",
    "SELECT count(*) FROM pg_constraint WHERE conrelid = 'refs_gone'::regclass",
    // In a transaction block, the error aborts it as any error does.
    "BEGIN",
    "INSERT INTO c VALUES (20, 2, 'in tx')",
    "INSERT INTO c VALUES (21, 404, 'bad')",
    "COMMIT",
    "SELECT count(*) FROM c WHERE id >= 20",
];

#[test]
fn foreign_keys_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare foreign keys") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run_script(&peers.pg_conn(), SCRIPT, FIELDS).await;
        let got = run_script(&peers.walden_conn(), SCRIPT, FIELDS).await;
        assert_same(&want, &got);
    });
}

#[test]
fn foreign_keys_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let enforced = |conn: String| async move {
        let c = connect(&conn).await;
        let e = c
            .simple_query("INSERT INTO k VALUES (100, 5)")
            .await
            .unwrap_err();
        let d = e.as_db_error().expect("a server error");
        assert_eq!(d.code().code(), "23503");
        assert_eq!(d.constraint(), Some("k_p_fkey"));
        let e = c
            .simple_query("INSERT INTO k2 VALUES (100, 5)")
            .await
            .unwrap_err();
        assert_eq!(
            e.as_db_error().expect("a server error").code().code(),
            "23503"
        );
        // The cascade still runs.
        c.simple_query("DELETE FROM kp WHERE id = 1").await.unwrap();
        assert_eq!(
            outcome(&c, "SELECT count(*) FROM k", FIELDS).await,
            "0; ok 1"
        );
        c.simple_query("INSERT INTO kp VALUES (1)").await.unwrap();
        c.simple_query("INSERT INTO k VALUES (1, 1)").await.unwrap();
        let defs = outcome(
            &c,
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint \
             WHERE contype = 'f' ORDER BY 1",
            FIELDS,
        )
        .await;
        assert_eq!(
            defs,
            "k2_p_fkey|FOREIGN KEY (p) REFERENCES kp(id); \
             k_p_fkey|FOREIGN KEY (p) REFERENCES kp(id) ON DELETE CASCADE; ok 2"
        );
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TABLE kp (id int PRIMARY KEY); \
                 CREATE TABLE k (id int PRIMARY KEY, p int REFERENCES kp ON DELETE CASCADE); \
                 CREATE TABLE k2 (id int PRIMARY KEY, p int); \
                 CREATE TABLE k3 (id int PRIMARY KEY, p int REFERENCES kp); \
                 INSERT INTO kp VALUES (1); INSERT INTO k VALUES (1, 1); \
                 ALTER TABLE k2 ADD FOREIGN KEY (p) REFERENCES kp; \
                 ALTER TABLE k3 DROP CONSTRAINT k3_p_fkey",
            )
            .await
            .unwrap();
        })
        .await
        .expect("timed out")
    });
    // Killed, then checkpointed and stopped: from the log, then from the image.
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, enforced);
}

/// What Walden refuses (0A000) where PostgreSQL accepts: deferred checking
/// and NOT VALID keys. Each is refused whole, nothing half-made.
#[test]
fn foreign_key_refusals() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (id int PRIMARY KEY, p int)",
            )
            .await
            .unwrap();
            // DEFERRABLE foreign keys are done (deferrable_domains.rs).
            for sql in ["ALTER TABLE c ADD FOREIGN KEY (p) REFERENCES p NOT VALID"] {
                let e = c.simple_query(sql).await.unwrap_err();
                let d = e.as_db_error().expect("a server error");
                assert_eq!(d.code().code(), "0A000", "{sql}: {}", d.message());
            }
            assert_eq!(
                outcome(
                    &c,
                    "SELECT count(*) FROM pg_constraint WHERE contype = 'f'",
                    FIELDS
                )
                .await,
                "0; ok 1"
            );
            // NOT DEFERRABLE and INITIALLY IMMEDIATE are what Walden does.
            c.batch_execute(
                "CREATE TABLE d4 (x int REFERENCES p NOT DEFERRABLE INITIALLY IMMEDIATE)",
            )
            .await
            .unwrap();
            let e = c
                .simple_query("INSERT INTO d4 VALUES (1)")
                .await
                .unwrap_err();
            assert_eq!(e.as_db_error().unwrap().code().code(), "23503");
        })
        .await
        .expect("timed out")
    });
}

/// psql's `\d` of a referencing and a referenced table ("Foreign-key
/// constraints", "Referenced by") prints what it prints for PostgreSQL.
#[test]
fn psql_describe_matches_postgres() {
    if !have("psql", &["--version"]) {
        missing_tool("psql is needed for \\d");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = start_postgres(tmp.path(), "to compare foreign keys") else {
        return;
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let setup = "CREATE TABLE p (id int PRIMARY KEY, code text UNIQUE); \
                 CREATE TABLE c (id int PRIMARY KEY, p int REFERENCES p ON DELETE CASCADE, \
                 code text, CONSTRAINT by_code FOREIGN KEY (code) REFERENCES p (code) \
                 MATCH FULL ON UPDATE SET NULL); \
                 CREATE TABLE self (id int PRIMARY KEY, up int REFERENCES self)";
    let describe = |host: &str, port: u16, user: &str, db: &str| -> String {
        let out = run_with_deadline(
            std::process::Command::new("psql")
                .args(["-X", "-v", "ON_ERROR_STOP=1", "-h", host])
                .args(["-p", &port.to_string(), "-U", user, "-d", db])
                .args(["-c", setup, "-c", "\\d c", "-c", "\\d p", "-c", "\\d self"]),
            Duration::from_secs(30),
        );
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let want = describe("127.0.0.1", pg.port(), ScratchPostgres::USER, "postgres");
    let got = describe(&walden.host, walden.port, "walden", "walden");
    assert!(want.contains("Referenced by:"), "{want}");
    assert_eq!(got, want);
}
