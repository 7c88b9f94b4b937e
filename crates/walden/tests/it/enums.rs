//! Enum types through the server, against a scratch PostgreSQL 15 with the
//! same SQL: DDL (CREATE/ALTER/DROP TYPE, transactional), ordering by
//! declaration order (ORDER BY, comparisons, primary keys, indexes, values
//! added BEFORE/AFTER), input errors, casts, enum arrays and the catalogs
//! (pg_type, pg_enum, format_type); restarts after a kill (from the log)
//! and after a checkpoint (from the image). The binary format and type
//! OIDs are checked through psycopg (clients/psycopg_suite.py).

use crate::pg_diff;
use crate::server_support;

use pg_diff::{assert_same, connect, outcome, run_script, runtime, Field, Peers};
use server_support::Serve;
use std::time::Duration;

const SCRIPT: &[&str] = &[
    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE TYPE mood AS ENUM ('x')",
    "CREATE TYPE integer AS ENUM ('x')",
    "CREATE TABLE p (name text PRIMARY KEY, m mood, ms mood[])",
    "INSERT INTO p VALUES ('a', 'happy', '{sad,happy}'), ('b', 'sad', ARRAY['ok']::mood[]), \
     ('c', 'ok', NULL), ('d', NULL, '{}')",
    "INSERT INTO p VALUES ('e', 'angry', NULL)",
    "SELECT 'x'::mood",
    "SELECT name, m FROM p ORDER BY m, name",
    "SELECT name, m FROM p ORDER BY m DESC NULLS LAST",
    "SELECT name FROM p WHERE m > 'sad' ORDER BY name",
    "SELECT name FROM p WHERE m = 'ok'",
    "SELECT name FROM p WHERE m IN ('ok', 'happy') ORDER BY name",
    "SELECT min(m), max(m), count(DISTINCT m) FROM p",
    "SELECT m, count(*) FROM p GROUP BY m ORDER BY m",
    "SELECT m::text, 'happy'::mood, 'ok'::mood < 'happy'::mood, m || '!' FROM p ORDER BY name",
    "SELECT ms, ms[1], 'sad' = ANY (ms) FROM p ORDER BY name",
    "SELECT pg_typeof(m), pg_typeof(ms) FROM p WHERE name = 'a'",
    "ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok'",
    "ALTER TYPE mood ADD VALUE 'ecstatic' AFTER 'happy'",
    "ALTER TYPE mood ADD VALUE 'glum' BEFORE 'sad'",
    "ALTER TYPE mood ADD VALUE 'fine'",
    "ALTER TYPE mood ADD VALUE 'meh'",
    "ALTER TYPE mood ADD VALUE IF NOT EXISTS 'meh'",
    "ALTER TYPE mood ADD VALUE 'x' BEFORE 'nope'",
    "INSERT INTO p VALUES ('f', 'meh', '{meh,glum}'), ('g', 'ecstatic', NULL), ('h', 'glum', NULL), \
     ('i', 'fine', NULL)",
    "SELECT name, m FROM p ORDER BY m, name",
    "SELECT enumlabel, enumsortorder FROM pg_enum WHERE enumtypid = 'mood'::regtype \
     ORDER BY enumsortorder",
    "SELECT typname, typtype, typcategory, typlen FROM pg_type WHERE typname IN ('mood', '_mood') \
     ORDER BY typname",
    "SELECT e.typname FROM pg_type a JOIN pg_type e ON e.oid = a.typelem WHERE a.typname = '_mood'",
    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'p'::regclass \
     AND attnum > 0 ORDER BY attnum",
    "SELECT typname FROM pg_type WHERE oid IN ('mood'::regtype, 'mood[]'::regtype) ORDER BY 1",
    "SELECT column_name, data_type FROM information_schema.columns \
     WHERE table_name = 'p' ORDER BY ordinal_position",
    "CREATE TABLE k (m mood PRIMARY KEY, v int)",
    "INSERT INTO k VALUES ('happy', 1), ('glum', 2), ('meh', 3), ('ok', 4)",
    "SELECT * FROM k ORDER BY m",
    "SELECT * FROM k WHERE m >= 'meh' ORDER BY m",
    "INSERT INTO k VALUES ('ok', 5)",
    "CREATE INDEX p_m ON p (m)",
    "SELECT name FROM p WHERE m BETWEEN 'sad' AND 'happy' ORDER BY m, name",
    "ALTER TYPE mood RENAME VALUE 'nope' TO 'x'",
    "CREATE TYPE color AS ENUM ('red', 'green')",
    "ALTER TYPE color RENAME VALUE 'red' TO 'rouge'",
    "ALTER TYPE color RENAME VALUE 'green' TO 'rouge'",
    "SELECT enumlabel FROM pg_enum WHERE enumtypid = 'color'::regtype ORDER BY enumsortorder",
    "ALTER TYPE color RENAME TO colour",
    "SELECT 'red'::color",
    "SELECT 'rouge'::colour",
    "DROP TYPE mood",
    "DROP TYPE mood RESTRICT",
    "DROP TYPE colour",
    "DROP TYPE colour",
    "DROP TYPE IF EXISTS colour",
    "BEGIN",
    "CREATE TYPE t1 AS ENUM ('a')",
    "SELECT 'a'::t1",
    "ROLLBACK",
    "SELECT 'a'::t1",
    "BEGIN",
    "CREATE TYPE t2 AS ENUM ('a', 'b')",
    "CREATE TABLE t2t (x t2)",
    "INSERT INTO t2t VALUES ('b')",
    "COMMIT",
    "SELECT x FROM t2t",
    "BEGIN",
    "DROP TABLE t2t",
    "DROP TYPE t2",
    "ROLLBACK",
    "SELECT x FROM t2t",
    "SELECT typname FROM pg_type WHERE typtype = 'e' ORDER BY typname",
];

#[test]
fn enums_in_text_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare enum types") else {
        return;
    };
    let fields = [Field::Detail, Field::Hint];
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let want = run_script(&peers.pg_conn(), SCRIPT, &fields).await;
            let got = run_script(&peers.walden_conn(), SCRIPT, &fields).await;
            assert_same(&want, &got);
        })
        .await
        .expect("timed out")
    });
}

#[test]
fn enums_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(&c, "SELECT m, ms FROM r ORDER BY m", &[]).await,
            "low|{high,low}; mid|NULL; high|{}; ok 3"
        );
        assert_eq!(
            outcome(
                &c,
                "SELECT enumlabel, enumsortorder FROM pg_enum e JOIN pg_type t \
                 ON t.oid = e.enumtypid WHERE t.typname = 'level' ORDER BY 2",
                &[]
            )
            .await,
            "low|1; mid|1.5; high|2; ok 3"
        );
        assert_eq!(
            outcome(&c, "SELECT 'gone'::gone", &[]).await,
            "ERROR 42704 type \"gone\" does not exist"
        );
        assert_eq!(
            outcome(&c, "INSERT INTO r VALUES ('mid', NULL)", &[]).await,
            "ERROR 23505 duplicate key value violates unique constraint \"r_pkey\""
        );
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            c.batch_execute(
                "CREATE TYPE lvl AS ENUM ('low', 'high'); \
                 ALTER TYPE lvl ADD VALUE 'mid' AFTER 'low'; \
                 ALTER TYPE lvl RENAME TO level; \
                 CREATE TYPE gone AS ENUM ('x'); DROP TYPE gone; \
                 CREATE TABLE r (m level PRIMARY KEY, ms level[]); \
                 INSERT INTO r VALUES ('high', '{}'), ('low', '{high,low}'), ('mid', NULL)",
            )
            .await
            .unwrap();
        })
        .await
        .expect("timed out")
    });
    // Killed, then checkpointed and stopped: from the log, then from the image.
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}

/// An enum label as tokio-postgres binds and reads it: any enum type, in
/// its binary form (the label's text).
#[derive(Debug, PartialEq)]
struct Label(String);

impl tokio_postgres::types::ToSql for Label {
    fn to_sql(
        &self,
        _: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(tokio_postgres::types::IsNull::No)
    }
    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        matches!(ty.kind(), tokio_postgres::types::Kind::Enum(_))
    }
    tokio_postgres::types::to_sql_checked!();
}

impl<'a> tokio_postgres::types::FromSql<'a> for Label {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Label(std::str::from_utf8(raw)?.to_string()))
    }
    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        matches!(ty.kind(), tokio_postgres::types::Kind::Enum(_))
    }
}

/// What tokio-postgres learned about a type, without its OID (the two
/// servers number user types differently).
fn type_info(t: &tokio_postgres::types::Type) -> String {
    use tokio_postgres::types::Kind;
    let kind = match t.kind() {
        Kind::Array(e) => format!("array of {}", type_info(e)),
        Kind::Enum(labels) => format!("enum {labels:?}"),
        other => format!("{other:?}"),
    };
    format!("{}.{} ({kind})", t.schema(), t.name())
}

/// tokio-postgres prepares a statement with an enum parameter or column by
/// looking the type up in pg_type and pg_enum (binding the type's OID as an
/// `oid` parameter and reading `oid` columns): what it learns, and an enum
/// (and enum array) round trip, against PostgreSQL.
#[test]
fn tokio_postgres_prepares_enum_statements() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare enum type lookups") else {
        return;
    };
    let run = |conn: String| async move {
        let c = connect(&conn).await;
        c.batch_execute(
            "CREATE TYPE tp_mood AS ENUM ('sad', 'ok', 'happy'); \
             CREATE TABLE tp (id int PRIMARY KEY, m tp_mood, ms tp_mood[])",
        )
        .await
        .unwrap();
        let ins = c
            .prepare("INSERT INTO tp VALUES ($1, $2, $3)")
            .await
            .unwrap();
        let mut out = Vec::new();
        for t in ins.params() {
            out.push(format!("param {}", type_info(t)));
        }
        c.execute(
            &ins,
            &[
                &1i32,
                &Label("happy".into()),
                &vec![Label("sad".into()), Label("ok".into())],
            ],
        )
        .await
        .unwrap();
        c.execute(&ins, &[&2i32, &Option::<Label>::None, &Vec::<Label>::new()])
            .await
            .unwrap();
        let sel = c
            .prepare("SELECT id, m, ms FROM tp WHERE m = $1 OR m IS NULL ORDER BY id")
            .await
            .unwrap();
        for col in sel.columns() {
            out.push(format!("column {} {}", col.name(), type_info(col.type_())));
        }
        for r in c.query(&sel, &[&Label("happy".into())]).await.unwrap() {
            let m: Option<Label> = r.get(1);
            let ms: Vec<Label> = r.get(2);
            out.push(format!("row {} {m:?} {ms:?}", r.get::<_, i32>(0)));
        }
        // A label the type does not have is the server's error.
        let e = c
            .execute(&ins, &[&3i32, &Label("angry".into()), &Vec::<Label>::new()])
            .await;
        out.push(pg_diff::render_error(&e.unwrap_err(), &[]));
        out
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let want = run(peers.pg_conn()).await;
            let got = run(peers.walden_conn()).await;
            assert_same(&want, &got);
        })
        .await
        .expect("timed out")
    });
}
