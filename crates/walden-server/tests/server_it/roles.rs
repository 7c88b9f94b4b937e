//! Roles and privileges through the server: SCRAM logins against stored
//! verifiers, GRANT/REVOKE checked on every statement, administration
//! refused to non-superusers with 42501, password changes, restart.

use crate::common;

use common::{missing_tool, TestServer};
use std::time::Duration;
use tokio_postgres::{Client, NoTls};
use walden_server::config::{AuthMethod, Rules};

/// A verifier PostgreSQL 15 made for the password "pencil"
/// (`CREATE ROLE x PASSWORD 'pencil'; SELECT rolpassword FROM pg_authid`).
const PG_VERIFIER: &str = "SCRAM-SHA-256$4096:Z4tTWwEdaUZCrjOE00TJfw==$di010iCzrHxAEaPfzTnHUQWpyD75jM8VAaUdKX2jAhU=:HMyvIcDVkleXzHPhGbIs+zAjsozbQz83nvRj+SOsvqY=";

fn start(dir: &std::path::Path, backups: &std::path::Path) -> TestServer {
    let backups = backups.to_path_buf();
    TestServer::start_in(dir, move |c| {
        c.auth = Rules::everyone(AuthMethod::ScramSha256);
        c.users.insert("walden".into(), "boot".into());
        c.auth_failure_delay = Duration::from_millis(10);
        c.backup_dir = Some(backups);
    })
}

async fn login(s: &TestServer, user: &str, pw: &str) -> Result<Client, tokio_postgres::Error> {
    login_to(s, user, pw, "walden").await
}

async fn login_to(
    s: &TestServer,
    user: &str,
    pw: &str,
    db: &str,
) -> Result<Client, tokio_postgres::Error> {
    let conn = format!(
        "host=127.0.0.1 port={} user={user} password={pw} dbname={db}",
        s.addr.port()
    );
    let (client, conn) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_postgres::connect(&conn, NoTls),
    )
    .await
    .expect("login within 10 s")?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

fn code(e: &tokio_postgres::Error) -> String {
    e.code().map(|c| c.code().to_string()).unwrap_or_default()
}

async fn sqlstate(c: &Client, sql: &str) -> String {
    match c.batch_execute(sql).await {
        Ok(()) => "ok".into(),
        Err(e) => code(&e),
    }
}

async fn denied(c: &Client, sql: &str) -> String {
    let e = c.batch_execute(sql).await.expect_err(sql);
    assert_eq!(code(&e), "42501", "{sql}: {e:?}");
    e.as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_grants_admin_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let backups = tempfile::tempdir().unwrap();
    let mut s = start(dir.path(), backups.path());
    let boot = login(&s, "walden", "boot").await.expect("bootstrap login");
    boot.batch_execute(
        "CREATE USER alice PASSWORD 'a1';
         CREATE ROLE nologin_role;
         CREATE TABLE t (id int PRIMARY KEY, v text);
         INSERT INTO t VALUES (1, 'one');",
    )
    .await
    .unwrap();

    // Passwords are stored as verifiers, never as given.
    let row = boot
        .query_one(
            "SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'",
            &[],
        )
        .await
        .unwrap();
    let v: String = row.get(0);
    assert!(v.starts_with("SCRAM-SHA-256$4096:"), "{v}");
    // (Not `contains("a1")`: the verifier's base64 holds "a1" by chance one
    // time in forty.)
    let parts: Vec<&str> = v["SCRAM-SHA-256$4096:".len()..].split(['$', ':']).collect();
    assert_eq!(parts.len(), 3, "salt$stored:server: {v}");
    assert!(parts.iter().all(|p| p.len() >= 16 && *p != "a1"), "{v}");
    let raw = std::fs::read_to_string(dir.path().join("instance.json")).unwrap();
    assert!(!raw.contains("'a1'") && !raw.contains("\"a1\""));

    // Logins: wrong password, no LOGIN, unknown role.
    assert_eq!(
        code(&login(&s, "alice", "nope").await.unwrap_err()),
        "28P01"
    );
    assert_eq!(code(&login(&s, "ghost", "x").await.unwrap_err()), "28P01");
    boot.batch_execute("ALTER ROLE nologin_role PASSWORD 'n'")
        .await
        .unwrap();
    assert_eq!(
        code(&login(&s, "nologin_role", "n").await.unwrap_err()),
        "28000"
    );
    let alice = login(&s, "alice", "a1").await.expect("alice logs in");
    let who = alice
        .query_one("SELECT current_user, session_user", &[])
        .await
        .unwrap();
    assert_eq!(who.get::<_, String>(0), "alice");
    assert_eq!(who.get::<_, String>(1), "alice");

    // No privileges yet.
    let m = denied(&alice, "SELECT * FROM t").await;
    assert_eq!(m, "permission denied for table t");
    denied(&alice, "INSERT INTO t VALUES (2, 'two')").await;
    denied(&alice, "UPDATE t SET v = 'x' WHERE id = 1").await;
    denied(&alice, "DELETE FROM t").await;
    denied(&alice, "TRUNCATE t").await;
    denied(&alice, "SELECT * FROM pg_authid").await;
    // A table read through a subquery or CTE is checked too.
    denied(&alice, "SELECT 1 WHERE EXISTS (SELECT 1 FROM t)").await;
    denied(&alice, "WITH x AS (SELECT * FROM t) SELECT * FROM x").await;

    // Every administrative statement needs a superuser.
    for sql in [
        "CHECKPOINT",
        "ALTER DATABASE walden SET DELAYED_DURABILITY = ALLOWED",
        "CREATE DATABASE other",
        "DROP DATABASE walden",
        "BACKUP DATABASE walden TO DISK = 'x.bak'",
        "BACKUP LOG walden TO DISK = 'x.trn'",
        "DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)",
        "CREATE AVAILABILITY GROUP g FOR DATABASE walden REPLICA ON 'a' WITH (ENDPOINT_URL = 'tcp://127.0.0.1:1', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT)",
        "ALTER AVAILABILITY GROUP g FAILOVER",
        "DROP AVAILABILITY GROUP g",
        "CREATE ROLE mallory",
        "ALTER ROLE alice SUPERUSER",
        "ALTER ROLE walden PASSWORD 'pwned'",
        "DROP ROLE nologin_role",
        "GRANT SELECT ON t TO alice",
        "DROP TABLE t",
        "CREATE INDEX ti ON t (v)",
        "SET log_statement = 'all'",
    ] {
        denied(&alice, sql).await;
    }
    assert_eq!(
        alice
            .query_one("SHOW is_superuser", &[])
            .await
            .unwrap()
            .get::<_, String>(0),
        "off"
    );

    // GRANT works, REVOKE takes it back (on the next statement).
    boot.batch_execute("GRANT SELECT ON t TO alice")
        .await
        .unwrap();
    let n = alice.query("SELECT * FROM t", &[]).await.unwrap().len();
    assert_eq!(n, 1);
    denied(&alice, "INSERT INTO t VALUES (2, 'two')").await;
    let has: bool = alice
        .query_one("SELECT has_table_privilege('t', 'SELECT')", &[])
        .await
        .unwrap()
        .get(0);
    assert!(has);
    boot.batch_execute("GRANT INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO alice")
        .await
        .unwrap();
    alice
        .batch_execute("INSERT INTO t VALUES (2, 'two'); UPDATE t SET v = 'uno' WHERE id = 1")
        .await
        .unwrap();
    // A prepared statement is checked at every execution, not at Parse.
    let stmt = alice
        .prepare("SELECT v FROM t WHERE id = $1")
        .await
        .unwrap();
    alice.query(&stmt, &[&1i32]).await.unwrap();
    boot.batch_execute("REVOKE SELECT ON t FROM alice")
        .await
        .unwrap();
    let e = alice.query(&stmt, &[&1i32]).await.unwrap_err();
    assert_eq!(code(&e), "42501");
    denied(&alice, "SELECT * FROM t").await;
    // UPDATE with a WHERE reads the table: it needs SELECT too.
    denied(&alice, "UPDATE t SET v = 'x' WHERE id = 1").await;
    boot.batch_execute("REVOKE ALL ON t FROM alice")
        .await
        .unwrap();
    denied(&alice, "INSERT INTO t VALUES (3, 'three')").await;

    // Owners: alice's own table is hers to use, drop and grant (creating
    // it in `public` needs CREATE there, as in PostgreSQL 15).
    boot.batch_execute("GRANT CREATE ON SCHEMA public TO alice")
        .await
        .unwrap();
    alice
        .batch_execute(
            "CREATE TABLE mine (x int); INSERT INTO mine VALUES (1); GRANT SELECT ON mine TO PUBLIC",
        )
        .await
        .unwrap();
    let owner: String = boot
        .query_one(
            "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'mine'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(owner, "alice");
    // A role that owns objects cannot be dropped (2BP01).
    assert_eq!(sqlstate(&boot, "DROP ROLE alice").await, "2BP01");

    // pg_checkpoint membership allows CHECKPOINT.
    boot.batch_execute("GRANT pg_checkpoint TO alice")
        .await
        .unwrap();
    alice.batch_execute("CHECKPOINT").await.unwrap();
    boot.batch_execute("REVOKE pg_checkpoint FROM alice")
        .await
        .unwrap();
    denied(&alice, "CHECKPOINT").await;

    // A role may change its own password; the old one stops working.
    alice
        .batch_execute("ALTER ROLE alice PASSWORD 'a2'")
        .await
        .unwrap();
    assert_eq!(code(&login(&s, "alice", "a1").await.unwrap_err()), "28P01");
    login(&s, "alice", "a2").await.expect("new password");
    // A pre-hashed verifier is stored as given (PostgreSQL's rule).
    boot.batch_execute(&format!("CREATE ROLE bob LOGIN PASSWORD '{PG_VERIFIER}'"))
        .await
        .unwrap();
    login(&s, "bob", "pencil")
        .await
        .expect("PostgreSQL's verifier accepts its password");
    // CONNECT on the database.
    boot.batch_execute("REVOKE CONNECT ON DATABASE walden FROM PUBLIC")
        .await
        .unwrap();
    assert_eq!(
        code(&login(&s, "bob", "pencil").await.unwrap_err()),
        "42501"
    );
    boot.batch_execute("GRANT CONNECT ON DATABASE walden TO bob")
        .await
        .unwrap();
    login(&s, "bob", "pencil").await.expect("CONNECT granted");
    boot.batch_execute("GRANT CONNECT ON DATABASE walden TO PUBLIC")
        .await
        .unwrap();
    boot.batch_execute("GRANT SELECT ON t TO alice")
        .await
        .unwrap();

    drop((alice, boot));
    // Restart: roles, passwords, owners and grants are kept.
    s.stop();
    let s = start(dir.path(), backups.path());
    assert_eq!(code(&login(&s, "alice", "a1").await.unwrap_err()), "28P01");
    let alice = login(&s, "alice", "a2").await.expect("alice after restart");
    assert_eq!(alice.query("SELECT * FROM t", &[]).await.unwrap().len(), 2);
    denied(&alice, "INSERT INTO t VALUES (9, 'nine')").await;
    denied(&alice, "CHECKPOINT").await;
    alice.batch_execute("DROP TABLE mine").await.unwrap();
    let boot = login(&s, "walden", "boot").await.unwrap();
    boot.batch_execute(
        "REVOKE ALL ON t FROM alice; REVOKE CREATE ON SCHEMA public FROM alice; \
         DROP ROLE alice; DROP ROLE IF EXISTS alice",
    )
    .await
    .unwrap();
    assert_eq!(code(&login(&s, "alice", "a2").await.unwrap_err()), "28P01");
}

/// `public`'s USAGE and CREATE privileges, as PostgreSQL 15 checks them:
/// by default only the database's owner (and superusers) create there and
/// every role uses it; a grant lets a role create, a revoke of USAGE hides
/// the schema's objects (42P01 unqualified, 42501 qualified, 3F000 for a
/// new unqualified object). Kept across a restart.
#[tokio::test(flavor = "multi_thread")]
async fn schema_privileges_are_checked_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let backups = tempfile::tempdir().unwrap();
    let mut s = start(dir.path(), backups.path());
    let boot = login(&s, "walden", "boot").await.expect("bootstrap login");
    boot.batch_execute(
        "CREATE USER alice PASSWORD 'a1'; CREATE USER dana PASSWORD 'd1' CREATEDB; \
         CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1); \
         GRANT SELECT ON t TO alice; CREATE SEQUENCE sq",
    )
    .await
    .unwrap();
    let nspacl = "SELECT nspacl FROM pg_namespace WHERE nspname = 'public'";
    let acl_of = |rows: Vec<tokio_postgres::Row>| -> String { rows[0].get(0) };
    assert_eq!(
        acl_of(boot.query(nspacl, &[]).await.unwrap()),
        "{pg_database_owner=UC/pg_database_owner,=U/pg_database_owner}"
    );
    let alice = login(&s, "alice", "a1").await.unwrap();
    // PostgreSQL 15: no CREATE in public for an ordinary role.
    for sql in [
        "CREATE TABLE a1 (x int)",
        "CREATE TABLE public.a1 (x int)",
        "CREATE SEQUENCE a1s",
        "CREATE TYPE a1m AS ENUM ('x')",
    ] {
        assert_eq!(
            denied(&alice, sql).await,
            "permission denied for schema public"
        );
    }
    let has =
        "SELECT has_schema_privilege('public', 'USAGE'), has_schema_privilege('public', 'CREATE')";
    let row = alice.query_one(has, &[]).await.unwrap();
    assert_eq!(
        (row.get::<_, bool>(0), row.get::<_, bool>(1)),
        (true, false)
    );
    boot.batch_execute("GRANT CREATE ON SCHEMA public TO alice")
        .await
        .unwrap();
    assert_eq!(
        acl_of(boot.query(nspacl, &[]).await.unwrap()),
        "{pg_database_owner=UC/pg_database_owner,=U/pg_database_owner,alice=C/pg_database_owner}"
    );
    alice
        .batch_execute("CREATE TABLE a1 (x int); CREATE INDEX a1x ON a1 (x); CREATE SEQUENCE a1s")
        .await
        .unwrap();
    // Giving a table away: the new owner must be able to create there.
    boot.batch_execute("CREATE ROLE agrp; GRANT agrp TO alice")
        .await
        .unwrap();
    assert_eq!(
        denied(&alice, "ALTER TABLE a1 OWNER TO agrp").await,
        "permission denied for schema public"
    );
    boot.batch_execute("GRANT CREATE ON SCHEMA public TO agrp")
        .await
        .unwrap();
    alice
        .batch_execute("ALTER TABLE a1 OWNER TO agrp")
        .await
        .unwrap();
    boot.batch_execute("REVOKE CREATE ON SCHEMA public FROM agrp")
        .await
        .unwrap();
    boot.batch_execute("REVOKE CREATE ON SCHEMA public FROM alice")
        .await
        .unwrap();
    assert_eq!(
        denied(&alice, "CREATE TABLE a2 (x int)").await,
        "permission denied for schema public"
    );
    assert_eq!(
        denied(&alice, "CREATE INDEX a1y ON a1 (x)").await,
        "permission denied for schema public"
    );
    // Without USAGE the schema's objects are out of sight.
    boot.batch_execute("REVOKE USAGE ON SCHEMA public FROM PUBLIC")
        .await
        .unwrap();
    assert_eq!(sqlstate(&alice, "SELECT * FROM t").await, "42P01");
    assert_eq!(
        denied(&alice, "SELECT * FROM public.t").await,
        "permission denied for schema public"
    );
    assert_eq!(
        denied(&alice, "SELECT nextval('public.sq')").await,
        "permission denied for schema public"
    );
    assert_eq!(sqlstate(&alice, "CREATE TABLE a3 (x int)").await, "3F000");
    let row = alice
        .query_one(
            "SELECT current_schema() IS NULL, current_schemas(false)::text",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, bool>(0), row.get::<_, String>(1)),
        (true, "{}".into())
    );
    // The superuser is not held back.
    boot.batch_execute("SELECT * FROM t; CREATE TABLE b1 (x int)")
        .await
        .unwrap();
    // A database's owner owns its `public` (pg_database_owner): it
    // creates there, and grants.
    let dana = login(&s, "dana", "d1").await.unwrap();
    dana.batch_execute("CREATE DATABASE dd").await.unwrap();
    let dana_dd = login_to(&s, "dana", "d1", "dd").await.unwrap();
    dana_dd
        .batch_execute("CREATE TABLE d1 (x int); REVOKE USAGE ON SCHEMA public FROM PUBLIC")
        .await
        .unwrap();
    let alice_dd = login_to(&s, "alice", "a1", "dd").await.unwrap();
    assert_eq!(sqlstate(&alice_dd, "SELECT * FROM d1").await, "42P01");
    drop((dana, dana_dd, alice_dd));
    boot.batch_execute("GRANT USAGE ON SCHEMA public TO alice")
        .await
        .unwrap();
    assert_eq!(alice.query("SELECT * FROM t", &[]).await.unwrap().len(), 1);
    let want = "{pg_database_owner=UC/pg_database_owner,alice=U/pg_database_owner}";
    assert_eq!(acl_of(boot.query(nspacl, &[]).await.unwrap()), want);
    // Grants of the wrong kind and by a non-owner.
    assert_eq!(
        sqlstate(&boot, "GRANT pg_database_owner TO alice").await,
        "0LP01"
    );
    assert_eq!(
        sqlstate(
            &boot,
            "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO alice"
        )
        .await,
        "0A000"
    );
    assert_eq!(
        sqlstate(&boot, "GRANT SELECT ON SCHEMA public TO alice").await,
        "0LP01"
    );
    assert_eq!(
        sqlstate(&boot, "GRANT USAGE ON SCHEMA nosuch TO alice").await,
        "3F000"
    );
    // alice uses the schema without the grant option: PostgreSQL warns
    // (01007, `grant_options.rs`) and grants nothing (the ACL below).
    assert_eq!(
        sqlstate(&alice, "GRANT USAGE ON SCHEMA public TO dana").await,
        "ok"
    );
    assert_eq!(acl_of(boot.query(nspacl, &[]).await.unwrap()), want);
    // A role holding a schema privilege cannot be dropped.
    assert_eq!(sqlstate(&boot, "DROP ROLE alice").await, "2BP01");

    drop((alice, boot));
    s.stop();
    let s = start(dir.path(), backups.path());
    let boot = login(&s, "walden", "boot").await.unwrap();
    assert_eq!(acl_of(boot.query(nspacl, &[]).await.unwrap()), want);
    let alice = login(&s, "alice", "a1").await.unwrap();
    assert_eq!(alice.query("SELECT * FROM t", &[]).await.unwrap().len(), 1);
    assert_eq!(
        denied(&alice, "CREATE TABLE a4 (x int)").await,
        "permission denied for schema public"
    );
    let dana = login(&s, "dana", "d1").await.unwrap();
    // Not the owner of walden's public, and without USAGE there.
    assert_eq!(sqlstate(&dana, "CREATE TABLE d2 (x int)").await, "3F000");
    let dana_dd = login_to(&s, "dana", "d1", "dd").await.unwrap();
    dana_dd
        .batch_execute("CREATE TABLE d2 (x int); SELECT * FROM d1")
        .await
        .unwrap();
}

/// psql's `\du` and `\dp` read the role catalog and the table's ACL.
#[tokio::test(flavor = "multi_thread")]
async fn psql_du_and_dp() {
    if std::process::Command::new("psql")
        .arg("--version")
        .output()
        .is_err()
    {
        missing_tool("psql is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_in(dir.path(), |_| {});
    let c = s.client().await;
    c.batch_execute(
        "CREATE ROLE carol LOGIN CREATEDB; CREATE TABLE t (a int); GRANT SELECT, INSERT ON t TO carol",
    )
    .await
    .unwrap();
    let port = s.addr.port().to_string();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("timeout")
            .args([
                "20",
                "psql",
                "-X",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "carol",
                "walden",
            ])
            .args(["-c", "\\du", "-c", "\\dp t", "-c", "SELECT a FROM t"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("carol"), "{text}");
    assert!(text.contains("Create DB"), "{text}");
    assert!(
        text.contains("Superuser, Create role, Create DB, Replication, Bypass RLS"),
        "{text}"
    );
    assert!(text.contains("carol=ar/walden"), "{text}");
    assert!(!text.contains("pg_checkpoint"), "{text}");
}
