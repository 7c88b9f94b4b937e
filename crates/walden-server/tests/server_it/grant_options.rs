//! Grant options through the server, each step checked against what
//! PostgreSQL 15 answers to the same statements: WITH GRANT OPTION and the
//! `*` of an aclitem, grants by a role that is not the owner (its
//! grantor, its 01007 / 01006 WARNINGs, 42501 without any privilege),
//! REVOKE GRANT OPTION FOR with RESTRICT (2BP01) and CASCADE, grant options
//! given back to their grantor (0LP01), has_table_privilege(... WITH GRANT
//! OPTION), an owner change keeping grants, renames needing CREATE on
//! `public`, ALTER SCHEMA public OWNER TO, ALTER DATABASE ... OWNER TO,
//! pg_database.datdba and datacl; all of it
//! still there after a restart.

use crate::common;

use common::TestServer;
use futures::StreamExt;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_postgres::{AsyncMessage, Client, NoTls};
use walden_server::config::{AuthMethod, Rules};

fn start(dir: &std::path::Path) -> TestServer {
    TestServer::start_in(dir, |c| {
        c.auth = Rules::everyone(AuthMethod::ScramSha256);
        c.users.insert("walden".into(), "boot".into());
        c.auth_failure_delay = Duration::from_millis(10);
    })
}

/// A client and the (SQLSTATE, severity, message) of the notices it gets.
struct Conn {
    c: Client,
    notices: UnboundedReceiver<(String, String, String)>,
}

impl Conn {
    /// Runs `sql` and returns the notices it drew.
    async fn run(&mut self, sql: &str) -> Vec<(String, String, String)> {
        self.c
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        // The notices come before the statement's ReadyForQuery; a round
        // trip makes sure the connection task has passed them on.
        self.c.simple_query("").await.unwrap();
        let mut out = Vec::new();
        while let Ok(n) = self.notices.try_recv() {
            out.push(n);
        }
        out
    }

    async fn fails(&self, sql: &str) -> (String, String) {
        let e = self.c.batch_execute(sql).await.expect_err(sql);
        let d = e.as_db_error().expect("a server error");
        (d.code().code().to_string(), d.message().to_string())
    }

    async fn text(&self, sql: &str) -> String {
        self.c
            .query_one(sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
            .get(0)
    }
}

async fn login(s: &TestServer, user: &str, pw: &str, db: &str) -> Conn {
    let conn = format!(
        "host=127.0.0.1 port={} user={user} password={pw} dbname={db}",
        s.addr.port()
    );
    let (c, mut conn) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_postgres::connect(&conn, NoTls),
    )
    .await
    .expect("login within 10 s")
    .unwrap_or_else(|e| panic!("{user}: {e:?}"));
    let (tx, notices) = unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            if let AsyncMessage::Notice(n) = m {
                let _ = tx.send((
                    n.code().code().to_string(),
                    n.severity().to_string(),
                    n.message().to_string(),
                ));
            }
        }
    });
    Conn { c, notices }
}

fn warning(code: &str, message: &str) -> Vec<(String, String, String)> {
    vec![(code.to_string(), "WARNING".to_string(), message.to_string())]
}

const RELACL: &str = "SELECT relacl FROM pg_class WHERE relname = ";
const DATACL: &str = "SELECT coalesce(datacl::text, 'none') FROM pg_database WHERE datname = 'edb'";
const NSPACL: &str =
    "SELECT pg_get_userbyid(nspowner) || ' ' || nspacl FROM pg_namespace WHERE nspname = 'public'";

#[tokio::test(flavor = "multi_thread")]
async fn grant_options_as_postgres_15_and_kept() {
    tokio::time::timeout(Duration::from_secs(240), body())
        .await
        .expect("the test finishes within 4 minutes");
}

async fn body() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = start(dir.path());
    let mut boot = login(&s, "walden", "boot", "walden").await;
    boot.run(
        "CREATE USER alice PASSWORD 'a'; CREATE USER bob PASSWORD 'b'; \
         CREATE USER carol PASSWORD 'c'; CREATE USER dan PASSWORD 'd'; \
         CREATE USER erin PASSWORD 'e' CREATEDB; \
         CREATE TABLE t (a int); INSERT INTO t VALUES (1); \
         GRANT SELECT, INSERT ON t TO alice WITH GRANT OPTION",
    )
    .await;
    let t_acl = format!("{RELACL}'t'");
    assert_eq!(
        boot.text(&t_acl).await,
        "{walden=arwdD/walden,alice=a*r*/walden}"
    );
    assert_eq!(
        boot.fails("GRANT SELECT ON t TO PUBLIC WITH GRANT OPTION")
            .await,
        (
            "0LP01".into(),
            "grant options can only be granted to roles".into()
        )
    );

    // alice grants on, as the grantor; what she cannot grant is warned of.
    let mut alice = login(&s, "alice", "a", "walden").await;
    assert!(alice.run("GRANT SELECT ON t TO bob").await.is_empty());
    assert_eq!(
        alice.run("GRANT SELECT, UPDATE ON t TO bob").await,
        warning("01007", "not all privileges were granted for \"t\"")
    );
    assert_eq!(
        alice.run("GRANT UPDATE ON t TO bob").await,
        warning("01007", "no privileges were granted for \"t\"")
    );
    assert!(alice
        .run("GRANT ALL ON t TO carol WITH GRANT OPTION")
        .await
        .is_empty());
    assert_eq!(
        boot.text(&t_acl).await,
        "{walden=arwdD/walden,alice=a*r*/walden,bob=r/alice,carol=a*r*/alice}"
    );
    let mut bob = login(&s, "bob", "b", "walden").await;
    bob.run("SELECT * FROM t").await;
    assert_eq!(
        alice
            .fails("GRANT SELECT ON t TO alice WITH GRANT OPTION")
            .await,
        (
            "0LP01".into(),
            "grant options cannot be granted back to your own grantor".into()
        )
    );
    let has = "SELECT has_table_privilege('alice', 't', 'SELECT WITH GRANT OPTION')::text || \
               has_table_privilege('alice', 't', 'INSERT WITH GRANT OPTION')::text || \
               has_table_privilege('alice', 't', 'SELECT')::text || \
               has_table_privilege('walden', 't', 'select with grant option')::text || \
               has_table_privilege('bob', 't', 'SELECT WITH GRANT OPTION')::text";
    assert_eq!(boot.text(has).await, "truetruetruetruefalse");

    // Taking alice's grant option: RESTRICT refuses while bob and carol
    // hold what she granted; CASCADE takes it from them.
    let e = boot
        .c
        .batch_execute("REVOKE GRANT OPTION FOR SELECT ON t FROM alice")
        .await
        .expect_err("RESTRICT");
    let d = e.as_db_error().unwrap();
    assert_eq!(
        (d.code().code(), d.message()),
        ("2BP01", "dependent privileges exist")
    );
    assert_eq!(d.hint(), Some("Use CASCADE to revoke them too."));
    boot.run("REVOKE GRANT OPTION FOR SELECT ON t FROM alice CASCADE")
        .await;
    assert_eq!(
        boot.text(&t_acl).await,
        "{walden=arwdD/walden,alice=a*r/walden,carol=a*/alice}"
    );
    assert_eq!(boot.text(has).await, "falsetruetruetruefalse");
    assert_eq!(bob.fails("SELECT * FROM t").await.0, "42501");
    // Without any privilege there is nothing to grant from.
    assert_eq!(
        bob.fails("GRANT SELECT ON t TO carol").await,
        ("42501".into(), "permission denied for table t".into())
    );
    assert_eq!(
        alice.run("REVOKE SELECT ON t FROM carol").await,
        warning("01006", "no privileges could be revoked for \"t\"")
    );
    // A superuser's REVOKE is the owner's: alice's grant to carol stays.
    boot.run("REVOKE INSERT ON t FROM carol").await;
    assert_eq!(
        boot.text(&t_acl).await,
        "{walden=arwdD/walden,alice=a*r/walden,carol=a*/alice}"
    );

    // The schema, and a database every role may connect to.
    boot.run("GRANT USAGE ON SCHEMA public TO alice WITH GRANT OPTION")
        .await;
    assert!(alice
        .run("GRANT USAGE ON SCHEMA public TO bob")
        .await
        .is_empty());
    assert_eq!(
        alice.run("GRANT CREATE ON SCHEMA public TO bob").await,
        warning("01007", "no privileges were granted for \"public\"")
    );
    assert_eq!(
        boot.text(NSPACL).await,
        "pg_database_owner {pg_database_owner=UC/pg_database_owner,=U/pg_database_owner,\
         alice=U*/pg_database_owner,bob=U/alice}"
    );
    let mut carol = login(&s, "carol", "c", "walden").await;
    assert_eq!(
        carol.run("GRANT CONNECT ON DATABASE walden TO bob").await,
        warning("01007", "no privileges were granted for \"walden\"")
    );
    assert_eq!(boot.fails("DROP ROLE alice").await.0, "2BP01");

    // A new owner takes the old owner's grants, and grants made by others stay.
    boot.run("CREATE TABLE t2 (a int); ALTER TABLE t2 OWNER TO dan")
        .await;
    let mut dan = login(&s, "dan", "d", "walden").await;
    dan.run("GRANT SELECT ON t2 TO erin WITH GRANT OPTION")
        .await;
    let mut erin = login(&s, "erin", "e", "walden").await;
    erin.run("GRANT SELECT ON t2 TO alice").await;
    let t2_acl = format!("{RELACL}'t2'");
    assert_eq!(
        boot.text(&t2_acl).await,
        "{dan=arwdD/dan,erin=r*/dan,alice=r/erin}"
    );
    boot.run("ALTER TABLE t2 OWNER TO erin").await;
    assert_eq!(boot.text(&t2_acl).await, "{erin=ar*wdD/erin,alice=r/erin}");

    // Renaming is creating a name in the schema.
    boot.run("GRANT CREATE ON SCHEMA public TO dan").await;
    dan.run("CREATE TABLE t3 (a int)").await;
    boot.run("REVOKE CREATE ON SCHEMA public FROM dan").await;
    assert_eq!(
        dan.fails("ALTER TABLE t3 RENAME TO t4").await,
        ("42501".into(), "permission denied for schema public".into())
    );
    dan.run("ALTER TABLE t3 RENAME COLUMN a TO b; ALTER TABLE t3 ADD COLUMN c int")
        .await;
    assert_eq!(
        alice.fails("ALTER TABLE t3 RENAME TO t4").await,
        ("42501".into(), "must be owner of table t3".into())
    );

    // The schema changes hands like any object; the owner's grants go along.
    boot.run("ALTER SCHEMA public OWNER TO dan").await;
    assert_eq!(
        boot.text(NSPACL).await,
        "dan {dan=UC/dan,=U/dan,alice=U*/dan,bob=U/alice}"
    );
    dan.run("CREATE TABLE t5 (a int)").await;
    assert_eq!(
        dan.fails("ALTER SCHEMA public OWNER TO erin").await,
        ("42501".into(), "must be member of role \"erin\"".into())
    );
    boot.run("GRANT erin TO dan").await;
    assert_eq!(
        dan.fails("ALTER SCHEMA public OWNER TO erin").await,
        (
            "42501".into(),
            "permission denied for database walden".into()
        )
    );
    assert_eq!(
        erin.fails("ALTER SCHEMA public OWNER TO erin").await,
        ("42501".into(), "must be owner of schema public".into())
    );
    // A database's owner is its creator.
    erin.run("CREATE DATABASE edb").await;
    let datdba =
        "SELECT string_agg(datname || '=' || pg_get_userbyid(datdba), ',' ORDER BY datname) \
                  FROM pg_database WHERE datname IN ('walden', 'edb')";
    assert_eq!(boot.text(datdba).await, "edb=erin,walden=walden");
    let mut erin_edb = login(&s, "erin", "e", "edb").await;
    erin_edb.run("ALTER SCHEMA public OWNER TO erin").await;
    assert_eq!(erin_edb.text(NSPACL).await, "erin {erin=UC/erin,=U/erin}");
    // datacl: NULL for the default ACL; PostgreSQL's would also carry the
    // T and C Walden's databases do not have.
    assert_eq!(boot.text(DATACL).await, "none");
    erin_edb
        .run("GRANT CONNECT ON DATABASE edb TO alice WITH GRANT OPTION")
        .await;
    assert_eq!(
        boot.text(DATACL).await,
        "{=c/erin,erin=c/erin,alice=c*/erin}"
    );
    // A database changes hands as PostgreSQL's does, its grants along.
    assert_eq!(
        erin.fails("ALTER DATABASE edb OWNER TO alice").await,
        ("42501".into(), "must be member of role \"alice\"".into())
    );
    assert_eq!(
        alice.fails("ALTER DATABASE edb OWNER TO alice").await,
        ("42501".into(), "must be owner of database edb".into())
    );
    assert_eq!(
        boot.fails("ALTER DATABASE nosuch OWNER TO bob").await.0,
        "3D000"
    );
    assert_eq!(
        boot.fails("ALTER DATABASE edb OWNER TO nosuch").await.0,
        "42704"
    );
    boot.run("ALTER DATABASE edb OWNER TO carol").await;
    assert_eq!(boot.text(datdba).await, "edb=carol,walden=walden");
    assert_eq!(
        boot.text(DATACL).await,
        "{=c/carol,carol=c/carol,alice=c*/carol}"
    );
    drop((alice, bob, carol, dan, erin, erin_edb, boot));

    s.stop();
    let s = start(dir.path());
    let boot = login(&s, "walden", "boot", "walden").await;
    assert_eq!(
        boot.text(&t_acl).await,
        "{walden=arwdD/walden,alice=a*r/walden,carol=a*/alice}"
    );
    assert_eq!(boot.text(&t2_acl).await, "{erin=ar*wdD/erin,alice=r/erin}");
    assert_eq!(
        boot.text(NSPACL).await,
        "dan {dan=UC/dan,=U/dan,alice=U*/dan,bob=U/alice}"
    );
    assert_eq!(boot.text(datdba).await, "edb=carol,walden=walden");
    assert_eq!(
        boot.text(DATACL).await,
        "{=c/carol,carol=c/carol,alice=c*/carol}"
    );
    assert_eq!(boot.text(has).await, "falsetruetruetruefalse");
    let erin_edb = login(&s, "erin", "e", "edb").await;
    assert_eq!(erin_edb.text(NSPACL).await, "erin {erin=UC/erin,=U/erin}");
    let mut carol = login(&s, "carol", "c", "walden").await;
    assert!(carol.run("GRANT INSERT ON t TO bob").await.is_empty());
}
