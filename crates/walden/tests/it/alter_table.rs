//! ALTER TABLE through the server, statement by statement against a
//! scratch PostgreSQL 15 with the same SQL (rows, tags, SQLSTATEs and
//! messages), then across restarts: after a kill (redo from the log) and
//! after a checkpoint (the image) the altered definitions and rows are
//! still there.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{
    assert_same, block_on_within, connect, outcome, render_error, run_script, runtime,
    start_postgres, Field, Peers,
};
use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::Client;
use walden_bench::workbench::pg_peer::ScratchPostgres;

/// The error fields compared besides SQLSTATE and message.
const FIELDS: &[Field] = &[Field::Detail, Field::Table, Field::Constraint];

const SCRIPT: &[&str] = &[
    "CREATE TABLE t (id int PRIMARY KEY, a int, b text)",
    "INSERT INTO t VALUES (1, 10, 'x'), (2, NULL, 'y'), (3, 30, NULL)",
    // ADD COLUMN: existing rows get the default.
    "ALTER TABLE t ADD COLUMN c int DEFAULT 7",
    "ALTER TABLE t ADD COLUMN d text",
    "ALTER TABLE t ADD COLUMN IF NOT EXISTS d text",
    "ALTER TABLE t ADD COLUMN d int",
    "ALTER TABLE t ADD e int NOT NULL",
    "ALTER TABLE t ADD e int NOT NULL DEFAULT 0",
    "SELECT * FROM t ORDER BY id",
    "INSERT INTO t (id) VALUES (4)",
    "SELECT * FROM t ORDER BY id",
    // DROP COLUMN.
    "ALTER TABLE t DROP COLUMN d",
    "ALTER TABLE t DROP COLUMN d",
    "ALTER TABLE t DROP COLUMN IF EXISTS d",
    "ALTER TABLE t DROP COLUMN zz CASCADE",
    "SELECT * FROM t ORDER BY id",
    // RENAME.
    "ALTER TABLE t RENAME COLUMN a TO aa",
    "ALTER TABLE t RENAME aa TO b",
    "ALTER TABLE t RENAME COLUMN nope TO q",
    "ALTER TABLE t RENAME TO t2",
    "SELECT id, aa FROM t2 ORDER BY id",
    "SELECT * FROM t",
    "CREATE TABLE other (x int)",
    "ALTER TABLE t2 RENAME TO other",
    "ALTER TABLE nosuch ADD COLUMN x int",
    "ALTER TABLE IF EXISTS nosuch ADD COLUMN x int",
    // SET/DROP DEFAULT, SET/DROP NOT NULL.
    "ALTER TABLE t2 ALTER COLUMN b SET DEFAULT 'dflt'",
    "INSERT INTO t2 (id) VALUES (5)",
    "ALTER TABLE t2 ALTER COLUMN b DROP DEFAULT",
    "INSERT INTO t2 (id) VALUES (6)",
    "ALTER TABLE t2 ALTER COLUMN aa SET NOT NULL",
    "UPDATE t2 SET aa = 0 WHERE aa IS NULL",
    "ALTER TABLE t2 ALTER COLUMN aa SET NOT NULL",
    "ALTER TABLE t2 ALTER COLUMN aa DROP NOT NULL",
    "ALTER TABLE t2 ALTER COLUMN id DROP NOT NULL",
    "ALTER TABLE t2 ALTER COLUMN nope SET NOT NULL",
    "SELECT * FROM t2 ORDER BY id",
    // ALTER COLUMN TYPE.
    "ALTER TABLE t2 ALTER COLUMN aa TYPE bigint",
    "ALTER TABLE t2 ALTER COLUMN aa TYPE text",
    "ALTER TABLE t2 ALTER COLUMN aa TYPE int",
    "ALTER TABLE t2 ALTER COLUMN aa TYPE int USING aa::int",
    "ALTER TABLE t2 ALTER COLUMN b TYPE varchar(2)",
    "ALTER TABLE t2 ALTER COLUMN b SET DATA TYPE varchar(10)",
    "ALTER TABLE t2 ALTER COLUMN c TYPE numeric(10,2) USING c * 1.5",
    "ALTER TABLE t2 ALTER COLUMN b TYPE int USING length(b)",
    "SELECT * FROM t2 ORDER BY id",
    "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns \
     WHERE table_name = 't2' ORDER BY ordinal_position",
    "SELECT attname, atttypid::regtype, attnotnull, atthasdef FROM pg_attribute \
     WHERE attrelid = 't2'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
    "SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d \
     JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
     WHERE d.adrelid = 't2'::regclass ORDER BY 1",
    // Constraints.
    "ALTER TABLE t2 ADD CONSTRAINT c_pos CHECK (c > 0.5)",
    "ALTER TABLE t2 ADD CHECK (aa < 5)",
    "ALTER TABLE t2 ADD CHECK (aa < 100)",
    "INSERT INTO t2 (id, aa) VALUES (8, 200)",
    "ALTER TABLE t2 ADD CONSTRAINT c_pos CHECK (c > 1)",
    "ALTER TABLE t2 ADD UNIQUE (c)",
    "ALTER TABLE t2 ADD CONSTRAINT u_id_aa UNIQUE (id, aa)",
    "INSERT INTO t2 (id, aa) VALUES (7, 0)",
    "ALTER TABLE t2 ADD PRIMARY KEY (aa)",
    "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint \
     WHERE conrelid = 't2'::regclass ORDER BY conname",
    "ALTER TABLE t2 DROP CONSTRAINT t2_aa_check",
    "ALTER TABLE t2 DROP CONSTRAINT IF EXISTS t2_aa_check",
    "ALTER TABLE t2 DROP CONSTRAINT u_id_aa",
    "ALTER TABLE t2 DROP CONSTRAINT t_pkey",
    "ALTER TABLE t2 RENAME CONSTRAINT c_pos TO c_positive",
    "ALTER TABLE t2 RENAME CONSTRAINT nope TO other",
    "SELECT conname, contype FROM pg_constraint WHERE conrelid = 't2'::regclass ORDER BY conname",
    "INSERT INTO t2 (id, aa) VALUES (1, 1)",
    "ALTER TABLE t2 ADD CONSTRAINT k PRIMARY KEY (id)",
    "DELETE FROM t2 WHERE id = 1 AND aa = 1",
    "ALTER TABLE t2 ADD CONSTRAINT k PRIMARY KEY (id)",
    "INSERT INTO t2 (id, aa) VALUES (1, 1)",
    "SELECT conname, contype FROM pg_constraint WHERE conrelid = 't2'::regclass ORDER BY conname",
    // A dropped column takes its single-column constraints with it.
    "ALTER TABLE t2 DROP COLUMN c",
    "SELECT conname, contype FROM pg_constraint WHERE conrelid = 't2'::regclass ORDER BY conname",
    // Several actions at once, all or nothing.
    "ALTER TABLE t2 ADD COLUMN f int DEFAULT 1, ADD COLUMN g int NOT NULL",
    "SELECT * FROM t2 ORDER BY id",
    "ALTER TABLE t2 ADD COLUMN f int DEFAULT 1, ADD COLUMN g int DEFAULT 2, DROP COLUMN e",
    "SELECT * FROM t2 ORDER BY id",
    "SELECT * FROM t2 ORDER BY id",
    // Constraints follow renames and go with dropped columns.
    "CREATE TABLE v (id int PRIMARY KEY, a int, b int, CHECK (a < b), \
     CONSTRAINT b_pos CHECK (b > 0))",
    "INSERT INTO v VALUES (1, 1, 2), (2, 10, 20), (3, 10, 30)",
    "ALTER TABLE v RENAME COLUMN a TO aa",
    "INSERT INTO v VALUES (9, 10, 5)",
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint \
     WHERE conrelid = 'v'::regclass ORDER BY conname",
    "ALTER TABLE v ADD COLUMN c int, ADD CONSTRAINT cc CHECK (c IS NOT NULL)",
    "SELECT * FROM v ORDER BY id",
    "ALTER TABLE v ALTER COLUMN aa TYPE int USING aa / 0",
    "ALTER TABLE v ALTER COLUMN aa TYPE int USING aa * 100",
    "SELECT * FROM v ORDER BY id",
    "ALTER TABLE v DROP COLUMN b",
    "SELECT conname FROM pg_constraint WHERE conrelid = 'v'::regclass ORDER BY conname",
    "CREATE INDEX v_aa_idx ON v (aa)",
    "ALTER TABLE v ALTER COLUMN aa TYPE bigint",
    "SELECT id FROM v WHERE aa = 1000 ORDER BY id",
    "ALTER TABLE v RENAME TO v_aa_idx",
    "ALTER TABLE v ADD CONSTRAINT v_aa_idx UNIQUE (aa)",
    "ALTER TABLE v ADD CONSTRAINT v_pkey UNIQUE (aa)",
    "ALTER TABLE v ADD UNIQUE (aa)",
    "ALTER TABLE v DROP CONSTRAINT v_aa_idx",
    "ALTER TABLE v ADD CONSTRAINT b_pos CHECK (aa > 0)",
    "ALTER TABLE v ADD CONSTRAINT b_pos CHECK (aa > 0)",
    "ALTER TABLE v ALTER COLUMN aa TYPE numeric(3,0)",
    "ALTER TABLE v ALTER COLUMN aa TYPE boolean",
    "SELECT * FROM v ORDER BY id",
    // A table without a key gets one; duplicates or nulls refuse it.
    "CREATE TABLE w (a int, b text)",
    "INSERT INTO w VALUES (1, 'x'), (1, 'y'), (NULL, 'z')",
    "ALTER TABLE w ADD PRIMARY KEY (a)",
    "DELETE FROM w WHERE a IS NULL",
    "ALTER TABLE w ADD PRIMARY KEY (a)",
    "ALTER TABLE w ADD CONSTRAINT w_b UNIQUE (a, b), ADD PRIMARY KEY (b)",
    "INSERT INTO w VALUES (2, 'x')",
    "SELECT conname, contype FROM pg_constraint WHERE conrelid = 'w'::regclass ORDER BY conname",
    "ALTER TABLE w DROP CONSTRAINT w_pkey",
    "INSERT INTO w VALUES (2, 'x')",
    "SELECT * FROM w ORDER BY a, b",
];

async fn run(conn: &str) -> Vec<String> {
    let mut out = run_script(conn, SCRIPT, FIELDS).await;
    out.extend(prepared(&connect(conn).await).await);
    out
}

/// Prepared statements made before an ALTER TABLE: planned again after
/// it; one whose result columns changed fails as PostgreSQL's does.
async fn prepared(c: &Client) -> Vec<String> {
    c.batch_execute("CREATE TABLE pp (a int, b int); INSERT INTO pp VALUES (1, 2)")
        .await
        .unwrap();
    let star = c.prepare("SELECT * FROM pp").await.unwrap();
    let by_b = c.prepare("SELECT a FROM pp WHERE b = $1").await.unwrap();
    let ins = c
        .prepare("INSERT INTO pp (a, b) VALUES ($1, $2)")
        .await
        .unwrap();
    let show = |r: Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>| match r {
        Ok(rows) => format!("{} rows", rows.len()),
        Err(e) => render_error(&e, &[]),
    };
    let mut out = Vec::new();
    c.batch_execute("ALTER TABLE pp ADD COLUMN c int DEFAULT 3")
        .await
        .unwrap();
    out.push(format!(
        "star after ADD COLUMN: {}",
        show(c.query(&star, &[]).await)
    ));
    out.push(format!(
        "by_b after ADD COLUMN: {}",
        show(c.query(&by_b, &[&2i32]).await)
    ));
    let n = c.execute(&ins, &[&5i32, &6i32]).await.unwrap();
    out.push(format!("insert after ADD COLUMN: {n}"));
    c.batch_execute("ALTER TABLE pp RENAME COLUMN b TO bb")
        .await
        .unwrap();
    out.push(format!(
        "by_b after RENAME: {}",
        show(c.query(&by_b, &[&2i32]).await)
    ));
    out.push(format!(
        "rows: {}",
        outcome(c, "SELECT * FROM pp ORDER BY a", FIELDS).await
    ));
    out
}

#[test]
fn alter_table_matches_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare ALTER TABLE") else {
        return;
    };
    block_on_within(Duration::from_secs(120), async {
        let want = run(&peers.pg_conn()).await;
        let got = run(&peers.walden_conn()).await;
        assert_same(&want, &got);
    });
}

const DURABLE: &[&str] = &[
    "SELECT * FROM r ORDER BY 1",
    "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns \
     WHERE table_name = 'r' ORDER BY ordinal_position",
    "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint \
     WHERE conrelid = 'r'::regclass ORDER BY conname",
    "INSERT INTO r (k, w) VALUES (100, 'dup')",
    "INSERT INTO r (k, w) VALUES (1, 'new')",
];

async fn durable_state(conn: &str) -> Vec<String> {
    let c = connect(conn).await;
    let mut out = Vec::new();
    c.simple_query("BEGIN").await.unwrap();
    for sql in DURABLE {
        out.push(format!("{sql}\n  -> {}", outcome(&c, sql, FIELDS).await));
    }
    c.simple_query("ROLLBACK").await.unwrap();
    out
}

/// Altered definitions and rewritten rows come back after a kill (from
/// the log) and after a checkpoint and clean stop (from the image).
#[test]
fn alter_table_survives_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let mut walden = Serve::start(&dir, &[]);
    let setup = [
        "CREATE TABLE q (id int PRIMARY KEY, v int, gone text, w text)",
        "INSERT INTO q SELECT g, g * 10, 'x', 'w' || g FROM generate_series(1, 50) g",
        "ALTER TABLE q ADD COLUMN d int DEFAULT 5, DROP COLUMN gone",
        "ALTER TABLE q ALTER COLUMN v TYPE text USING 'v' || v",
        "ALTER TABLE q RENAME COLUMN id TO k",
        "ALTER TABLE q RENAME TO r",
        "ALTER TABLE r ADD CONSTRAINT w_u UNIQUE (w), ADD CHECK (d > 0)",
        "ALTER TABLE r ALTER COLUMN w SET NOT NULL, ALTER COLUMN d SET DEFAULT 9",
        "INSERT INTO r (k, w) VALUES (100, 'w100')",
    ];
    let before = runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in setup {
                c.simple_query(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            durable_state(&walden.conn_str()).await
        })
        .await
        .expect("timed out")
    });
    assert!(
        before[0].contains("100|v1000") || before[0].contains("100|"),
        "{before:?}"
    );
    assert!(before[3].contains("23505"), "{}", before[3]);
    // Killed: everything comes back from the log.
    walden.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    let mut walden = Serve::start(&dir, &[]);
    let after_kill = runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), durable_state(&walden.conn_str()))
            .await
            .expect("timed out")
    });
    assert_eq!(before, after_kill);
    // Checkpointed, then stopped: it comes back from the image.
    runtime().block_on(async {
        let c = connect(&walden.conn_str()).await;
        c.simple_query("CHECKPOINT").await.unwrap();
    });
    walden.signal_and_wait(libc::SIGTERM, Duration::from_secs(20));
    let walden = Serve::start(&dir, &[]);
    let after_image = runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), durable_state(&walden.conn_str()))
            .await
            .expect("timed out")
    });
    assert_eq!(before, after_image);
}

/// T-SQL's forms, and what is refused (0A000 naming the clause).
#[test]
fn alter_table_tsql_forms_and_refusals() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let steps: &[(&str, &str)] = &[
        ("CREATE TABLE m (id int PRIMARY KEY, s varchar(10))", "ok 0"),
        ("INSERT INTO m VALUES (1, '12'), (2, NULL)", "ok 2"),
        ("ALTER TABLE m ADD n int", "ok 0"),
        ("ALTER TABLE m ADD z int NOT NULL DEFAULT 3", "ok 0"),
        ("ALTER TABLE m ALTER COLUMN s int", "ok 0"),
        (
            "SELECT id, s + 1, n, z FROM m ORDER BY id",
            "1|13|NULL|3; 2|NULL|NULL|3; ok 2",
        ),
        (
            "ALTER TABLE m ALTER COLUMN s bigint NOT NULL",
            "ERROR 23502",
        ),
        ("UPDATE m SET s = 0 WHERE s IS NULL", "ok 1"),
        ("ALTER TABLE m ALTER COLUMN s bigint NOT NULL", "ok 0"),
        ("INSERT INTO m (id, s) VALUES (3, NULL)", "ERROR 23502"),
        ("ALTER TABLE m ALTER COLUMN [s] varchar(20) NULL", "ok 0"),
        ("INSERT INTO m (id, s) VALUES (3, NULL)", "ok 1"),
        ("ALTER TABLE m DROP COLUMN n", "ok 0"),
        (
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns \
             WHERE table_name = 'm' ORDER BY ordinal_position",
            "id|integer|NO; s|character varying|YES; z|integer|NO; ok 3",
        ),
        // OWNER TO is the role catalog's (`owner.rs`), not a table change.
        ("ALTER TABLE m OWNER TO walden", "ok 0"),
        (
            "ALTER TABLE m SET SCHEMA other",
            "ERROR 0A000 ALTER TABLE ... SET SCHEMA",
        ),
        (
            "ALTER TABLE m SET TABLESPACE pg_default",
            "ERROR 0A000 ALTER TABLE ... SET TABLESPACE",
        ),
        ("ALTER TABLE m ENABLE TRIGGER ALL", "ok"),
        ("ALTER TABLE m ADD COLUMN q int FIRST", "ERROR"),
        (
            "ALTER TABLE m ADD CONSTRAINT c CHECK (z > 0) NOT VALID",
            "ERROR 0A000",
        ),
        (
            // Foreign keys may be deferrable (deferrable_domains.rs); a
            // UNIQUE constraint may not.
            "ALTER TABLE m ADD CONSTRAINT u UNIQUE (z) DEFERRABLE",
            "ERROR 0A000",
        ),
        (
            // Done as PostgreSQL (identity_columns.rs); z has a default.
            "ALTER TABLE m ALTER COLUMN z ADD GENERATED ALWAYS AS IDENTITY",
            "ERROR 55000 column \"z\" of relation \"m\" already has a default value",
        ),
        ("ALTER TABLE m ALTER COLUMN z RESTART WITH 3", "ERROR 0A000"),
        ("ALTER TABLE m ADD COLUMN w serial", "ERROR 0A000"),
        (
            "ALTER TABLE m ADD COLUMN u uuid DEFAULT gen_random_uuid()",
            "ok 0",
        ),
        ("SELECT count(DISTINCT u) FROM m", "3; ok 1"),
        // In one simple-query message (an implicit transaction).
        (
            "CREATE TABLE x (a int); INSERT INTO x VALUES (1); \
             ALTER TABLE x ADD COLUMN b int DEFAULT 2; SELECT * FROM x",
            "ok 0; ok 1; ok 0; 1|2; ok 1",
        ),
        ("BEGIN", "ok 0"),
        ("INSERT INTO x VALUES (5, 5)", "ok 1"),
        // DDL on a table this transaction wrote (as PostgreSQL allows),
        // undone with it.
        ("ALTER TABLE x ADD COLUMN c int", "ok 0"),
        ("SELECT c FROM x WHERE a = 5", "NULL; ok 1"),
        ("ROLLBACK", "ok 0"),
        ("SELECT count(*) FROM x WHERE a = 5", "0; ok 1"),
        (
            "SELECT id, s, z FROM m ORDER BY id",
            "1|12|3; 2|0|3; 3|NULL|3; ok 3",
        ),
        // sp_rename.
        ("EXEC sp_rename 'm.z', 'zz', 'COLUMN'", "ok 0"),
        (
            "EXEC sp_rename @objname = N'dbo.x', @newname = N'x2'",
            "ok 0",
        ),
        ("SELECT m.zz, x2.b FROM m, x2 WHERE m.id = 1", "3|2; ok 1"),
        ("EXEC sp_rename 'm.nope', 'q', 'COLUMN'", "ERROR 42703"),
        ("EXEC sp_rename 'ix', 'iy', 'INDEX'", "ERROR 0A000"),
    ];
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for (sql, want) in steps {
                let got = outcome(&c, sql, FIELDS).await;
                assert!(got.starts_with(want), "{sql}\n  want {want}\n  got  {got}");
            }
            // An ALTER waits for a transaction still open that wrote the
            // table (its table lock), as PostgreSQL's; the rows go in first.
            let c2 = Arc::new(connect(&walden.conn_str()).await);
            c.simple_query("BEGIN").await.unwrap();
            c.simple_query("INSERT INTO m (id) VALUES (10)")
                .await
                .unwrap();
            let c3 = c2.clone();
            let alter = tokio::spawn(async move {
                c3.simple_query("ALTER TABLE m ADD COLUMN late int")
                    .await
                    .map(drop)
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(!alter.is_finished(), "ALTER TABLE did not wait");
            assert!(outcome(&c, "COMMIT", FIELDS).await.starts_with("ok"));
            alter.await.unwrap().unwrap();
            assert_eq!(
                outcome(
                    &c,
                    "SELECT count(*) FROM m WHERE id = 10 AND late IS NULL",
                    FIELDS
                )
                .await,
                "1; ok 1"
            );
        })
        .await
        .expect("timed out")
    });
}

/// psql's `\d` of an altered table reads the same as PostgreSQL's.
#[test]
fn psql_describes_an_altered_table_as_postgres() {
    if !have("psql", &["--version"]) {
        missing_tool("psql is needed to compare \\d output");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = start_postgres(tmp.path(), "to compare ALTER TABLE") else {
        return;
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let setup = "CREATE TABLE d (id int PRIMARY KEY, a int, gone text, b text); \
                 INSERT INTO d VALUES (1, 2, 'x', 'y'); \
                 ALTER TABLE d ADD COLUMN c numeric(10,2) DEFAULT 5 NOT NULL, DROP COLUMN gone, \
                 ALTER COLUMN a TYPE bigint, ALTER COLUMN b SET NOT NULL, \
                 ADD CONSTRAINT a_pos CHECK (a > 0), ADD UNIQUE (b); \
                 ALTER TABLE d RENAME COLUMN a TO aa; ALTER TABLE d RENAME TO dd";
    let describe = |host: &str, port: u16, user: &str, db: &str| {
        let out = run_with_deadline(
            std::process::Command::new("psql")
                .args([
                    "-X",
                    "-h",
                    host,
                    "-p",
                    &port.to_string(),
                    "-U",
                    user,
                    "-d",
                    db,
                ])
                .args(["-c", setup, "-c", "\\d dd"])
                .env("PGCONNECT_TIMEOUT", "10"),
            Duration::from_secs(30),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let want = describe("127.0.0.1", pg.port(), ScratchPostgres::USER, "postgres");
    let got = describe(&walden.host, walden.port, "walden", "walden");
    assert!(
        want.contains("\"a_pos\" CHECK (aa > 0)") && want.contains("d_b_key"),
        "{want}"
    );
    assert_eq!(want, got);
}
