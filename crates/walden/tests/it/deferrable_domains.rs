//! DEFERRABLE foreign keys through the server: `DEFERRABLE [INITIALLY
//! DEFERRED | IMMEDIATE]` in CREATE TABLE (column and table forms) and
//! ALTER TABLE ADD CONSTRAINT, `ALTER TABLE ... ALTER CONSTRAINT`, `SET
//! CONSTRAINTS`, the checks at COMMIT (failing it with 23503 and rolling
//! back), savepoints dropping the checks of what they roll back, the
//! catalogs; the DDL Django 4/5 emits for a model with a ForeignKey; two
//! sessions racing on a deferred key; and the keys' deferrability across a
//! kill and a checkpointed restart.
//!
//! The expected outcomes were taken from PostgreSQL 15 with the same
//! statements (set `DEFERRABLE_PG` to a libpq connection string to print
//! PostgreSQL's transcript of the script again).

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect, outcome, run_script, Field};
use server_support::Serve;
use std::time::Duration;

const FIELDS: &[Field] = &[Field::Detail, Field::Table, Field::Constraint];

/// (statement, PostgreSQL 15's outcome).
const SCRIPT: &[(&str, &str)] = &[
    ("CREATE TABLE p (id int PRIMARY KEY, code text UNIQUE)", "ok 0"),
    (
        "CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p DEFERRABLE INITIALLY DEFERRED)",
        "ok 0",
    ),
    (
        "CREATE TABLE d (id int PRIMARY KEY, pid int, \
         CONSTRAINT d_pid_fk FOREIGN KEY (pid) REFERENCES p (id) DEFERRABLE)",
        "ok 0",
    ),
    (
        "CREATE TABLE e (id int PRIMARY KEY, code text REFERENCES p (code) \
         ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED)",
        "ok 0",
    ),
    (
        "CREATE TABLE n (id int PRIMARY KEY, pid int REFERENCES p NOT DEFERRABLE INITIALLY IMMEDIATE)",
        "ok 0",
    ),
    (
        "CREATE TABLE bad (pid int REFERENCES p NOT DEFERRABLE INITIALLY DEFERRED)",
        "ERROR 42601 constraint declared INITIALLY DEFERRED must be DEFERRABLE detail=None table=None constraint=None",
    ),
    ("INSERT INTO p VALUES (1, 'a'), (2, 'b')", "ok 2"),
    // INITIALLY DEFERRED: an orphan waits for COMMIT.
    ("BEGIN", "ok 0"),
    ("INSERT INTO c VALUES (1, 10)", "ok 1"),
    ("SELECT * FROM c ORDER BY id", "1|10; ok 1"),
    ("INSERT INTO p VALUES (10, 'j')", "ok 1"),
    ("COMMIT", "ok 0"),
    ("SELECT * FROM c ORDER BY id", "1|10; ok 1"),
    ("BEGIN", "ok 0"),
    ("INSERT INTO c VALUES (2, 20)", "ok 1"),
    (
        "COMMIT",
        "ERROR 23503 insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\" detail=Some(\"Key (pid)=(20) is not present in table \\\"p\\\".\") table=Some(\"c\") constraint=Some(\"c_pid_fkey\")",
    ),
    ("SELECT count(*) FROM c", "1; ok 1"),
    // Outside a block the statement's commit checks it.
    (
        "INSERT INTO c VALUES (3, 30)",
        "ERROR 23503 insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\" detail=Some(\"Key (pid)=(30) is not present in table \\\"p\\\".\") table=Some(\"c\") constraint=Some(\"c_pid_fkey\")",
    ),
    // Several statements in one query: checked at the implicit commit.
    (
        "INSERT INTO c VALUES (30, 300); INSERT INTO p VALUES (300, 'm')",
        "ok 1; ok 1",
    ),
    (
        "INSERT INTO c VALUES (31, 301); SELECT 1",
        "ERROR 23503 insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\" detail=Some(\"Key (pid)=(301) is not present in table \\\"p\\\".\") table=Some(\"c\") constraint=Some(\"c_pid_fkey\")",
    ),
    // DEFERRABLE INITIALLY IMMEDIATE: at once, unless SET CONSTRAINTS.
    (
        "INSERT INTO d VALUES (1, 40)",
        "ERROR 23503 insert or update on table \"d\" violates foreign key constraint \"d_pid_fk\" detail=Some(\"Key (pid)=(40) is not present in table \\\"p\\\".\") table=Some(\"d\") constraint=Some(\"d_pid_fk\")",
    ),
    ("BEGIN", "ok 0"),
    ("SET CONSTRAINTS d_pid_fk DEFERRED", "ok 0"),
    ("INSERT INTO d VALUES (1, 40)", "ok 1"),
    ("INSERT INTO p VALUES (40, 'x')", "ok 1"),
    ("COMMIT", "ok 0"),
    ("BEGIN", "ok 0"),
    ("SET CONSTRAINTS ALL DEFERRED", "ok 0"),
    ("INSERT INTO d VALUES (2, 41)", "ok 1"),
    (
        "SET CONSTRAINTS ALL IMMEDIATE",
        "ERROR 23503 insert or update on table \"d\" violates foreign key constraint \"d_pid_fk\" detail=Some(\"Key (pid)=(41) is not present in table \\\"p\\\".\") table=Some(\"d\") constraint=Some(\"d_pid_fk\")",
    ),
    ("ROLLBACK", "ok 0"),
    // IMMEDIATE checks what is pending, then checks at once.
    ("BEGIN", "ok 0"),
    ("INSERT INTO c VALUES (4, 50)", "ok 1"),
    ("INSERT INTO p VALUES (50, 'y')", "ok 1"),
    ("SET CONSTRAINTS c_pid_fkey IMMEDIATE", "ok 0"),
    (
        "INSERT INTO c VALUES (5, 51)",
        "ERROR 23503 insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\" detail=Some(\"Key (pid)=(51) is not present in table \\\"p\\\".\") table=Some(\"c\") constraint=Some(\"c_pid_fkey\")",
    ),
    ("ROLLBACK", "ok 0"),
    // The referenced side: a key removed and put back is fine.
    ("BEGIN", "ok 0"),
    ("DELETE FROM p WHERE id = 10", "ok 1"),
    ("SELECT count(*) FROM p WHERE id = 10", "0; ok 1"),
    ("INSERT INTO p VALUES (10, 'j2')", "ok 1"),
    ("COMMIT", "ok 0"),
    ("BEGIN", "ok 0"),
    ("DELETE FROM p WHERE id = 10", "ok 1"),
    (
        "COMMIT",
        "ERROR 23503 update or delete on table \"p\" violates foreign key constraint \"c_pid_fkey\" on table \"c\" detail=Some(\"Key (id)=(10) is still referenced from table \\\"c\\\".\") table=Some(\"c\") constraint=Some(\"c_pid_fkey\")",
    ),
    ("SELECT id FROM p ORDER BY id", "1; 2; 10; 40; 300; ok 5"),
    ("BEGIN", "ok 0"),
    ("UPDATE p SET id = 11 WHERE id = 10", "ok 1"),
    ("UPDATE c SET pid = 11 WHERE pid = 10", "ok 1"),
    ("COMMIT", "ok 0"),
    ("SELECT * FROM c ORDER BY id", "1|11; 30|300; ok 2"),
    // A savepoint rolled back takes its pending checks with it.
    ("BEGIN", "ok 0"),
    ("INSERT INTO c VALUES (6, 60)", "ok 1"),
    ("SAVEPOINT s", "ok 0"),
    ("INSERT INTO c VALUES (7, 70)", "ok 1"),
    ("ROLLBACK TO SAVEPOINT s", "ok 0"),
    ("INSERT INTO p VALUES (60, 'z')", "ok 1"),
    ("COMMIT", "ok 0"),
    ("SELECT * FROM c ORDER BY id", "1|11; 6|60; 30|300; ok 3"),
    // ... and the SET CONSTRAINTS made since.
    ("BEGIN", "ok 0"),
    ("SAVEPOINT s", "ok 0"),
    ("SET CONSTRAINTS ALL IMMEDIATE", "ok 0"),
    ("ROLLBACK TO SAVEPOINT s", "ok 0"),
    ("INSERT INTO c VALUES (8, 80)", "ok 1"),
    ("DELETE FROM c WHERE id = 8", "ok 1"),
    ("COMMIT", "ok 0"),
    // A row changed after its insert is checked as it is at COMMIT.
    ("BEGIN", "ok 0"),
    ("INSERT INTO c VALUES (9, 90)", "ok 1"),
    ("UPDATE c SET pid = 1 WHERE id = 9", "ok 1"),
    ("COMMIT", "ok 0"),
    ("BEGIN", "ok 0"),
    ("INSERT INTO c VALUES (12, 1)", "ok 1"),
    ("UPDATE c SET pid = 91 WHERE id = 12", "ok 1"),
    (
        "COMMIT",
        "ERROR 23503 insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\" detail=Some(\"Key (pid)=(91) is not present in table \\\"p\\\".\") table=Some(\"c\") constraint=Some(\"c_pid_fkey\")",
    ),
    // Actions are not deferred: CASCADE runs at once.
    ("INSERT INTO e VALUES (1, 'b')", "ok 1"),
    ("BEGIN", "ok 0"),
    ("DELETE FROM p WHERE id = 2", "ok 1"),
    ("SELECT count(*) FROM e", "0; ok 1"),
    ("COMMIT", "ok 0"),
    // SET CONSTRAINTS' errors.
    ("BEGIN", "ok 0"),
    (
        "SET CONSTRAINTS p_pkey DEFERRED",
        "ERROR 42809 constraint \"p_pkey\" is not deferrable detail=None table=None constraint=None",
    ),
    ("ROLLBACK", "ok 0"),
    ("BEGIN", "ok 0"),
    (
        "SET CONSTRAINTS n_pid_fkey DEFERRED",
        "ERROR 42809 constraint \"n_pid_fkey\" is not deferrable detail=None table=None constraint=None",
    ),
    ("ROLLBACK", "ok 0"),
    ("BEGIN", "ok 0"),
    (
        "SET CONSTRAINTS nosuch DEFERRED",
        "ERROR 42704 constraint \"nosuch\" does not exist detail=None table=None constraint=None",
    ),
    ("ROLLBACK", "ok 0"),
    ("SET CONSTRAINTS ALL DEFERRED", "ok 0"),
    // Altering a referenced table keeps the keys that reference it.
    ("ALTER TABLE p ADD COLUMN note text", "ok 0"),
    ("ALTER TABLE p RENAME COLUMN note TO remark", "ok 0"),
    ("SELECT count(*) FROM pg_constraint WHERE contype = 'f'", "4; ok 1"),
    (
        "INSERT INTO n VALUES (1, 77)",
        "ERROR 23503 insert or update on table \"n\" violates foreign key constraint \"n_pid_fkey\" detail=Some(\"Key (pid)=(77) is not present in table \\\"p\\\".\") table=Some(\"n\") constraint=Some(\"n_pid_fkey\")",
    ),
    // Catalogs.
    (
        "SELECT conname, condeferrable, condeferred, pg_get_constraintdef(oid) \
         FROM pg_constraint WHERE contype = 'f' ORDER BY conname",
        "c_pid_fkey|t|t|FOREIGN KEY (pid) REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED; \
         d_pid_fk|t|f|FOREIGN KEY (pid) REFERENCES p(id) DEFERRABLE; \
         e_code_fkey|t|t|FOREIGN KEY (code) REFERENCES p(code) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED; \
         n_pid_fkey|f|f|FOREIGN KEY (pid) REFERENCES p(id); ok 4",
    ),
    (
        "SELECT constraint_name, is_deferrable, initially_deferred \
         FROM information_schema.table_constraints \
         WHERE constraint_type IN ('FOREIGN KEY', 'PRIMARY KEY') AND table_name IN ('c', 'd', 'n') \
         ORDER BY 1",
        "c_pid_fkey|YES|YES; c_pkey|NO|NO; d_pid_fk|YES|NO; d_pkey|NO|NO; n_pid_fkey|NO|NO; n_pkey|NO|NO; ok 6",
    ),
    // A table with pending checks cannot be altered until they are run.
    ("BEGIN", "ok 0"),
    ("INSERT INTO c VALUES (13, 1)", "ok 1"),
    (
        "ALTER TABLE c ALTER CONSTRAINT c_pid_fkey NOT DEFERRABLE",
        "ERROR 55006 cannot ALTER TABLE \"c\" because it has pending trigger events detail=None table=None constraint=None",
    ),
    ("ROLLBACK", "ok 0"),
    ("BEGIN", "ok 0"),
    ("INSERT INTO c VALUES (13, 1)", "ok 1"),
    ("ALTER TABLE p ADD COLUMN x int", "ok 0"),
    ("SET CONSTRAINTS c_pid_fkey IMMEDIATE", "ok 0"),
    ("ALTER TABLE c ADD COLUMN y int", "ok 0"),
    ("ROLLBACK", "ok 0"),
    // ALTER CONSTRAINT.
    ("ALTER TABLE c ALTER CONSTRAINT c_pid_fkey NOT DEFERRABLE", "ok 0"),
    ("BEGIN", "ok 0"),
    (
        "INSERT INTO c VALUES (20, 99)",
        "ERROR 23503 insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\" detail=Some(\"Key (pid)=(99) is not present in table \\\"p\\\".\") table=Some(\"c\") constraint=Some(\"c_pid_fkey\")",
    ),
    ("ROLLBACK", "ok 0"),
    (
        "ALTER TABLE c ALTER CONSTRAINT c_pid_fkey DEFERRABLE INITIALLY DEFERRED",
        "ok 0",
    ),
    (
        "ALTER TABLE c ALTER CONSTRAINT c_pid_fkey NOT DEFERRABLE INITIALLY DEFERRED",
        "ERROR 42601 constraint declared INITIALLY DEFERRED must be DEFERRABLE detail=None table=None constraint=None",
    ),
    (
        "ALTER TABLE c ALTER CONSTRAINT c_pkey DEFERRABLE",
        "ERROR 42809 constraint \"c_pkey\" of relation \"c\" is not a foreign key constraint detail=None table=None constraint=None",
    ),
    (
        "ALTER TABLE c ALTER CONSTRAINT nosuch DEFERRABLE",
        "ERROR 42704 constraint \"nosuch\" of relation \"c\" does not exist detail=None table=None constraint=None",
    ),
    ("ALTER TABLE d ALTER CONSTRAINT d_pid_fk INITIALLY DEFERRED", "ok 0"),
    ("ALTER TABLE e ALTER CONSTRAINT e_code_fkey DEFERRABLE", "ok 0"),
    (
        "SELECT conname, condeferrable, condeferred FROM pg_constraint WHERE contype = 'f' ORDER BY 1",
        "c_pid_fkey|t|t; d_pid_fk|t|t; e_code_fkey|t|f; n_pid_fkey|f|f; ok 4",
    ),
    ("BEGIN", "ok 0"),
    ("INSERT INTO d VALUES (3, 42)", "ok 1"),
    ("INSERT INTO p VALUES (42, 'q')", "ok 1"),
    ("COMMIT", "ok 0"),
    // ALTER TABLE ADD CONSTRAINT ... DEFERRABLE.
    ("CREATE TABLE f (id int PRIMARY KEY, pid int)", "ok 0"),
    (
        "ALTER TABLE f ADD CONSTRAINT f_pid_fk FOREIGN KEY (pid) REFERENCES p (id) \
         DEFERRABLE INITIALLY DEFERRED",
        "ok 0",
    ),
    ("BEGIN", "ok 0"),
    ("INSERT INTO f VALUES (1, 100)", "ok 1"),
    ("INSERT INTO p VALUES (100, 'h')", "ok 1"),
    ("COMMIT", "ok 0"),
    ("SELECT * FROM f", "1|100; ok 1"),
];

fn script() -> Vec<&'static str> {
    SCRIPT.iter().map(|(s, _)| *s).collect()
}

fn expected() -> Vec<String> {
    SCRIPT
        .iter()
        .map(|(s, o)| format!("{s}\n  -> {o}"))
        .collect()
}

#[test]
fn deferrable_foreign_keys_as_postgres() {
    if let Ok(pg) = std::env::var("DEFERRABLE_PG") {
        let got = block_on_within(Duration::from_secs(60), run_script(&pg, &script(), FIELDS));
        for line in got {
            println!("{line}");
        }
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let got = block_on_within(
        Duration::from_secs(60),
        run_script(&walden.conn_str(), &script(), FIELDS),
    );
    pg_diff::assert_same(&expected(), &got);
}

/// A deferrable UNIQUE or PRIMARY KEY is refused, not accepted and checked
/// at once; their NOT DEFERRABLE spellings are fine.
#[test]
fn deferrable_unique_keys_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        for sql in [
            "CREATE TABLE u1 (id int UNIQUE DEFERRABLE)",
            "CREATE TABLE u2 (id int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED)",
            "CREATE TABLE u3 (id int, PRIMARY KEY (id) INITIALLY DEFERRED)",
            "CREATE TABLE u4 (id int, UNIQUE (id) DEFERRABLE INITIALLY IMMEDIATE)",
        ] {
            let got = outcome(&c, sql, &[]).await;
            assert!(got.starts_with("ERROR 0A000"), "{sql}: {got}");
        }
        for sql in [
            "CREATE TABLE k1 (id int PRIMARY KEY NOT DEFERRABLE, v int UNIQUE INITIALLY IMMEDIATE)",
            "ALTER TABLE k1 ADD CONSTRAINT k1_v2 UNIQUE (v) NOT DEFERRABLE",
        ] {
            assert_eq!(outcome(&c, sql, &[]).await, "ok 0", "{sql}");
        }
        let got = outcome(&c, "ALTER TABLE k1 ADD UNIQUE (id) DEFERRABLE", &[]).await;
        assert!(got.starts_with("ERROR 0A000"), "{got}");
    });
}

/// The DDL Django 4.2 / 5 emits on PostgreSQL for two models with a
/// ForeignKey (`sqlmigrate` output, written out by hand), its bookkeeping
/// insert, a fixture loaded children first (as `loaddata` may), and the
/// `SET CONSTRAINTS ... IMMEDIATE; ALTER TABLE ... DROP CONSTRAINT` of an
/// AlterField.
#[test]
fn a_django_migration_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        let fk = "library_book_author_id_5d2f3d67_fk_library_author_id";
        let migration = [
            "CREATE TABLE \"django_migrations\" (\"id\" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, \"app\" varchar(255) NOT NULL, \"name\" varchar(255) NOT NULL, \"applied\" timestamp with time zone NOT NULL)".to_string(),
            "BEGIN".into(),
            "CREATE TABLE \"library_author\" (\"id\" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, \"name\" varchar(100) NOT NULL)".into(),
            "CREATE TABLE \"library_book\" (\"id\" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, \"title\" varchar(200) NOT NULL, \"author_id\" bigint NOT NULL)".into(),
            format!("ALTER TABLE \"library_book\" ADD CONSTRAINT \"{fk}\" FOREIGN KEY (\"author_id\") REFERENCES \"library_author\" (\"id\") DEFERRABLE INITIALLY DEFERRED"),
            "CREATE INDEX \"library_book_author_id_5d2f3d67\" ON \"library_book\" (\"author_id\")".into(),
            "INSERT INTO \"django_migrations\" (\"app\", \"name\", \"applied\") VALUES ('library', '0001_initial', '2024-05-01T10:00:00+00:00'::timestamptz) RETURNING \"django_migrations\".\"id\"".into(),
            "COMMIT".into(),
        ];
        for sql in &migration {
            let got = outcome(&c, sql, &[]).await;
            assert!(!got.starts_with("ERROR"), "{sql}: {got}");
        }
        // loaddata: the book before its author, in one transaction.
        for sql in [
            "BEGIN",
            "INSERT INTO \"library_book\" (\"id\", \"title\", \"author_id\") VALUES (1, 'Walden', 7)",
            "INSERT INTO \"library_author\" (\"id\", \"name\") VALUES (7, 'Thoreau')",
            "COMMIT",
        ] {
            let got = outcome(&c, sql, &[]).await;
            assert!(!got.starts_with("ERROR"), "{sql}: {got}");
        }
        assert_eq!(
            outcome(
                &c,
                "SELECT b.title, a.name FROM library_book b JOIN library_author a ON a.id = b.author_id",
                &[]
            )
            .await,
            "Walden|Thoreau; ok 1"
        );
        // A book whose author never comes: the COMMIT fails, nothing stays.
        for (sql, want) in [
            ("BEGIN", "ok 0".to_string()),
            ("INSERT INTO \"library_book\" (\"id\", \"title\", \"author_id\") VALUES (2, 'Orphan', 8)", "ok 1".to_string()),
            ("COMMIT", format!("ERROR 23503 insert or update on table \"library_book\" violates foreign key constraint \"{fk}\"")),
            ("SELECT count(*) FROM library_book", "1; ok 1".to_string()),
        ] {
            assert_eq!(outcome(&c, sql, &[]).await, want, "{sql}");
        }
        // An AlterField that recreates the key.
        for sql in [
            "BEGIN".to_string(),
            format!("SET CONSTRAINTS \"{fk}\" IMMEDIATE; ALTER TABLE \"library_book\" DROP CONSTRAINT \"{fk}\""),
            format!("ALTER TABLE \"library_book\" ADD CONSTRAINT \"{fk}\" FOREIGN KEY (\"author_id\") REFERENCES \"library_author\" (\"id\") DEFERRABLE INITIALLY DEFERRED"),
            "COMMIT".into(),
        ] {
            let got = outcome(&c, &sql, &[]).await;
            assert!(!got.starts_with("ERROR"), "{sql}: {got}");
        }
        assert_eq!(
            outcome(
                &c,
                "SELECT condeferrable, condeferred FROM pg_constraint WHERE contype = 'f'",
                &[]
            )
            .await,
            "t|t; ok 1"
        );
    });
}

/// Two sessions: one inserts a row referencing a key under a deferred
/// check, the other deletes that key and commits first; the first one's
/// COMMIT then fails, as in PostgreSQL (its check finds no key).
#[test]
fn a_deferred_check_sees_a_concurrent_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    block_on_within(Duration::from_secs(60), async {
        let a = connect(&walden.conn_str()).await;
        let b = connect(&walden.conn_str()).await;
        a.batch_execute(
            "CREATE TABLE p (id int PRIMARY KEY); \
             CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p DEFERRABLE INITIALLY DEFERRED); \
             INSERT INTO p VALUES (1), (2)",
        )
        .await
        .unwrap();
        assert_eq!(outcome(&a, "BEGIN", &[]).await, "ok 0");
        assert_eq!(
            outcome(&a, "INSERT INTO c VALUES (1, 1)", &[]).await,
            "ok 1"
        );
        // Nothing locks the key before A's COMMIT: B's delete goes through.
        assert_eq!(outcome(&b, "DELETE FROM p WHERE id = 1", &[]).await, "ok 1");
        assert_eq!(
            outcome(&a, "COMMIT", FIELDS).await,
            "ERROR 23503 insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\" \
             detail=Some(\"Key (pid)=(1) is not present in table \\\"p\\\".\") table=Some(\"c\") \
             constraint=Some(\"c_pid_fkey\")"
        );
        // After A's check locked the key, B's delete waits and then fails.
        assert_eq!(outcome(&a, "BEGIN", &[]).await, "ok 0");
        assert_eq!(
            outcome(&a, "INSERT INTO c VALUES (2, 2)", &[]).await,
            "ok 1"
        );
        assert_eq!(
            outcome(&a, "SET CONSTRAINTS ALL IMMEDIATE", &[]).await,
            "ok 0"
        );
        let delete =
            tokio::spawn(async move { outcome(&b, "DELETE FROM p WHERE id = 2", &[]).await });
        assert_eq!(outcome(&a, "COMMIT", &[]).await, "ok 0");
        let got = delete.await.unwrap();
        assert!(
            got.starts_with("ERROR 23503 update or delete on table \"p\""),
            "{got}"
        );
        assert_eq!(outcome(&a, "SELECT * FROM c", &[]).await, "2|2; ok 1");
    });
}

/// Deferrability is in the logged definition: after a kill (redo) and a
/// checkpointed restart (the image) the keys are as they were altered, and
/// still deferred.
#[test]
fn deferrability_survives_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&walden.conn_str()).await;
        c.batch_execute(
            "CREATE TABLE p (id int PRIMARY KEY); \
             CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p DEFERRABLE INITIALLY DEFERRED); \
             CREATE TABLE d (id int PRIMARY KEY, pid int); \
             ALTER TABLE d ADD CONSTRAINT d_fk FOREIGN KEY (pid) REFERENCES p DEFERRABLE; \
             CREATE TABLE e (id int PRIMARY KEY, pid int REFERENCES p); \
             ALTER TABLE e ALTER CONSTRAINT e_pid_fkey DEFERRABLE INITIALLY DEFERRED",
        )
        .await
        .unwrap();
    });
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(
                &c,
                "SELECT conname, condeferrable, condeferred FROM pg_constraint \
                 WHERE contype = 'f' ORDER BY 1",
                &[]
            )
            .await,
            "c_pid_fkey|t|t; d_fk|t|f; e_pid_fkey|t|t; ok 3"
        );
        // Still deferred: the orphan waits for its key.
        c.batch_execute(
            "BEGIN; DELETE FROM c; DELETE FROM e; INSERT INTO c VALUES (1, 5); \
             INSERT INTO e VALUES (1, 5); INSERT INTO p VALUES (5) ON CONFLICT DO NOTHING; COMMIT",
        )
        .await
        .unwrap();
        assert_eq!(
            outcome(&c, "INSERT INTO d VALUES (1, 6)", &[])
                .await
                .split(' ')
                .take(2)
                .collect::<Vec<_>>(),
            ["ERROR", "23503"]
        );
    };
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}
