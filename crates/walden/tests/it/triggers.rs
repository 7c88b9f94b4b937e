//! Triggers through the server: PostgreSQL's CREATE TRIGGER (BEFORE /
//! AFTER, ROW / STATEMENT, WHEN, UPDATE OF, arguments), PL/pgSQL trigger
//! functions with NEW / OLD / TG_*, rows skipped or changed by BEFORE ROW
//! triggers, AFTER ROW triggers at the statement's end, audit tables,
//! exceptions that abort the statement, firing order by name, ON CONFLICT,
//! COPY FROM, ENABLE / DISABLE, DROP, the catalogs (pg_trigger,
//! information_schema.triggers, pg_get_triggerdef), dependencies (2BP01),
//! runaway recursion (54001), transactional DDL, and triggers surviving a
//! crash. The expected outcomes are PostgreSQL 15's, checked by hand with
//! the same statements.

use crate::pg_diff;
use crate::server_support;

use bytes::Bytes;
use futures::SinkExt;
use pg_diff::{connect, outcome, render_error, runtime};
use server_support::{run_script, Serve};
use std::time::Duration;

/// Each statement with PostgreSQL 15's outcome: its rows and tags as
/// [`outcome`] renders them, or `ERROR <sqlstate>`.
const SCRIPT: &[(&str, &str)] = &[
    (
        "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), updated text)",
        "ok 0",
    ),
    (
        "CREATE TABLE audit (n serial, op text, tname text, info text)",
        "ok 0",
    ),
    (
        "CREATE FUNCTION stamp() RETURNS trigger LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           NEW.updated := 'by ' || TG_NAME || ' ' || TG_WHEN || ' ' || TG_LEVEL || ' ' || TG_OP;\n\
           IF NEW.price < 0 THEN\n\
             NEW.price := 0;\n\
           END IF;\n\
           RETURN NEW;\n\
         END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER items_stamp BEFORE INSERT OR UPDATE ON items FOR EACH ROW EXECUTE FUNCTION stamp()",
        "ok 0",
    ),
    (
        "INSERT INTO items VALUES (1, 'apple', 1.5, NULL), (2, 'pear', -3, 'x') RETURNING id, price, updated",
        "1|1.50|by items_stamp BEFORE ROW INSERT; 2|0.00|by items_stamp BEFORE ROW INSERT; ok 2",
    ),
    (
        "SELECT id, name, price, updated FROM items ORDER BY id",
        "1|apple|1.50|by items_stamp BEFORE ROW INSERT; 2|pear|0.00|by items_stamp BEFORE ROW INSERT; ok 2",
    ),
    (
        "CREATE FUNCTION log_change() RETURNS trigger LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           IF TG_OP = 'DELETE' THEN\n\
             INSERT INTO audit (op, tname, info) VALUES (TG_OP, TG_TABLE_NAME, OLD.id || ':' || OLD.name);\n\
             RETURN OLD;\n\
           ELSIF TG_OP = 'UPDATE' THEN\n\
             INSERT INTO audit (op, tname, info) VALUES (TG_OP, TG_TABLE_NAME, OLD.name || '->' || NEW.name || ' rows=' || (SELECT count(*) FROM items));\n\
           ELSE\n\
             INSERT INTO audit (op, tname, info) VALUES (TG_OP, TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, NEW.id || ':' || NEW.name || ' rows=' || (SELECT count(*) FROM items));\n\
           END IF;\n\
           RETURN NEW;\n\
         END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER items_log AFTER INSERT OR UPDATE OR DELETE ON items FOR EACH ROW EXECUTE FUNCTION log_change()",
        "ok 0",
    ),
    (
        "INSERT INTO items (id, name, price) VALUES (3, 'plum', 2), (4, 'fig', 3)",
        "ok 2",
    ),
    (
        "UPDATE items SET name = upper(name) WHERE id >= 3",
        "ok 2",
    ),
    (
        "DELETE FROM items WHERE id = 4",
        "ok 1",
    ),
    (
        "SELECT op, tname, info FROM audit ORDER BY n",
        "INSERT|public.items|3:plum rows=4; INSERT|public.items|4:fig rows=4; UPDATE|items|plum->PLUM rows=4; UPDATE|items|fig->FIG rows=4; DELETE|items|4:FIG; ok 5",
    ),
    (
        "CREATE FUNCTION skip_odd() RETURNS trigger LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           IF NEW.id % 2 = 1 THEN RETURN NULL; END IF;\n\
           RETURN NEW;\n\
         END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER a_skip BEFORE INSERT ON items FOR EACH ROW WHEN (new.id > 10) EXECUTE FUNCTION skip_odd()",
        "ok 0",
    ),
    (
        "INSERT INTO items (id, name, price) VALUES (11, 'a', 1), (12, 'b', 1), (13, 'c', 1), (5, 'd', 1)",
        "ok 2",
    ),
    (
        "SELECT id, updated FROM items ORDER BY id",
        "1|by items_stamp BEFORE ROW INSERT; 2|by items_stamp BEFORE ROW INSERT; 3|by items_stamp BEFORE ROW UPDATE; 5|by items_stamp BEFORE ROW INSERT; 12|by items_stamp BEFORE ROW INSERT; ok 5",
    ),
    (
        "CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           IF OLD.name = 'apple' THEN RETURN NULL; END IF;\n\
           RETURN OLD;\n\
         END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER keep BEFORE DELETE ON items FOR EACH ROW EXECUTE FUNCTION keep_row()",
        "ok 0",
    ),
    (
        "DELETE FROM items WHERE id IN (1, 12)",
        "ok 1",
    ),
    (
        "SELECT id FROM items ORDER BY id",
        "1; 2; 3; 5; ok 4",
    ),
    (
        "CREATE TABLE counts (what text, n int)",
        "ok 0",
    ),
    (
        "CREATE FUNCTION count_stmt() RETURNS trigger LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           INSERT INTO counts VALUES (TG_ARGV[0] || '/' || TG_NARGS || '/' || TG_LEVEL || '/' || TG_OP, (SELECT count(*) FROM items));\n\
           RETURN NULL;\n\
         END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER items_stmt AFTER UPDATE ON items FOR EACH STATEMENT EXECUTE FUNCTION count_stmt('after', 'x')",
        "ok 0",
    ),
    (
        "CREATE TRIGGER items_stmt_b BEFORE DELETE ON items EXECUTE PROCEDURE count_stmt('before')",
        "ok 0",
    ),
    (
        "UPDATE items SET price = price WHERE id = 999",
        "ok 0",
    ),
    (
        "DELETE FROM items WHERE id = 999",
        "ok 0",
    ),
    (
        "SELECT what, n FROM counts",
        "after/2/STATEMENT/UPDATE|4; before/1/STATEMENT/DELETE|4; ok 2",
    ),
    (
        "CREATE TABLE acct (id int PRIMARY KEY, bal int, note text)",
        "ok 0",
    ),
    (
        "INSERT INTO acct VALUES (1, 10, ''), (2, 20, '')",
        "ok 2",
    ),
    (
        "CREATE FUNCTION no_neg() RETURNS trigger LANGUAGE plpgsql AS $$\n\
         BEGIN\n\
           IF NEW.bal < 0 THEN\n\
             RAISE EXCEPTION 'balance of % would be %', NEW.id, NEW.bal USING ERRCODE = '23514';\n\
           END IF;\n\
           RETURN NEW;\n\
         END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER acct_check BEFORE UPDATE OF bal ON acct FOR EACH ROW EXECUTE FUNCTION no_neg()",
        "ok 0",
    ),
    (
        "UPDATE acct SET bal = bal - 15",
        "ERROR 23514",
    ),
    (
        "SELECT id, bal FROM acct ORDER BY id",
        "1|10; 2|20; ok 2",
    ),
    (
        "UPDATE acct SET note = 'n', bal = bal - 5 WHERE id = 1",
        "ok 1",
    ),
    (
        "CREATE FUNCTION add_b() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.note := NEW.note || 'b'; RETURN NEW; END $$",
        "ok 0",
    ),
    (
        "CREATE FUNCTION add_a() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.note := NEW.note || 'a'; RETURN NEW; END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER zz BEFORE UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION add_b()",
        "ok 0",
    ),
    (
        "CREATE TRIGGER \"Aa\" BEFORE UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION add_a()",
        "ok 0",
    ),
    (
        "UPDATE acct SET bal = bal + 1",
        "ok 2",
    ),
    (
        "SELECT id, bal, note FROM acct ORDER BY id",
        "1|6|nab; 2|21|ab; ok 2",
    ),
    (
        "INSERT INTO acct VALUES (1, 100, 'new') ON CONFLICT (id) DO UPDATE SET bal = EXCLUDED.bal",
        "ok 1",
    ),
    (
        "SELECT id, bal, note FROM acct ORDER BY id",
        "1|100|nabab; 2|21|ab; ok 2",
    ),
    (
        "CREATE TRIGGER zz BEFORE UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION add_a()",
        "ERROR 42710",
    ),
    (
        "CREATE OR REPLACE TRIGGER zz BEFORE UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION add_a()",
        "ok 0",
    ),
    (
        "ALTER TABLE acct DISABLE TRIGGER \"Aa\"",
        "ok 0",
    ),
    (
        "UPDATE acct SET bal = 0 WHERE id = 2",
        "ok 1",
    ),
    (
        "SELECT id, bal, note FROM acct ORDER BY id",
        "1|100|nabab; 2|0|aba; ok 2",
    ),
    (
        "ALTER TABLE acct ENABLE TRIGGER ALL",
        "ok 0",
    ),
    (
        "SELECT tgname, tgtype, tgenabled, tgnargs FROM pg_trigger WHERE tgrelid = 'acct'::regclass ORDER BY tgname",
        "Aa|19|O|0; acct_check|19|O|0; zz|19|O|0; ok 3",
    ),
    (
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'items'::regclass ORDER BY tgname",
        "CREATE TRIGGER a_skip BEFORE INSERT ON public.items FOR EACH ROW WHEN ((new.id > 10)) EXECUTE FUNCTION skip_odd(); CREATE TRIGGER items_log AFTER INSERT OR DELETE OR UPDATE ON public.items FOR EACH ROW EXECUTE FUNCTION log_change(); CREATE TRIGGER items_stamp BEFORE INSERT OR UPDATE ON public.items FOR EACH ROW EXECUTE FUNCTION stamp(); CREATE TRIGGER items_stmt AFTER UPDATE ON public.items FOR EACH STATEMENT EXECUTE FUNCTION count_stmt('after', 'x'); CREATE TRIGGER items_stmt_b BEFORE DELETE ON public.items FOR EACH STATEMENT EXECUTE FUNCTION count_stmt('before'); CREATE TRIGGER keep BEFORE DELETE ON public.items FOR EACH ROW EXECUTE FUNCTION keep_row(); ok 6",
    ),
    (
        "SELECT trigger_name, event_manipulation, event_object_table, action_order, action_condition, action_statement, action_orientation, action_timing FROM information_schema.triggers WHERE event_object_table = 'items' ORDER BY trigger_name, event_manipulation",
        "a_skip|INSERT|items|1|(new.id > 10)|EXECUTE FUNCTION skip_odd()|ROW|BEFORE; items_log|DELETE|items|1|NULL|EXECUTE FUNCTION log_change()|ROW|AFTER; items_log|INSERT|items|1|NULL|EXECUTE FUNCTION log_change()|ROW|AFTER; items_log|UPDATE|items|1|NULL|EXECUTE FUNCTION log_change()|ROW|AFTER; items_stamp|INSERT|items|2|NULL|EXECUTE FUNCTION stamp()|ROW|BEFORE; items_stamp|UPDATE|items|1|NULL|EXECUTE FUNCTION stamp()|ROW|BEFORE; items_stmt|UPDATE|items|1|NULL|EXECUTE FUNCTION count_stmt('after', 'x')|STATEMENT|AFTER; items_stmt_b|DELETE|items|1|NULL|EXECUTE FUNCTION count_stmt('before')|STATEMENT|BEFORE; keep|DELETE|items|1|NULL|EXECUTE FUNCTION keep_row()|ROW|BEFORE; ok 9",
    ),
    (
        "DROP FUNCTION add_a()",
        "ERROR 2BP01",
    ),
    (
        "DROP TRIGGER zz ON acct",
        "ok 0",
    ),
    (
        "DROP TRIGGER zz ON acct",
        "ERROR 42704",
    ),
    (
        "DROP TRIGGER IF EXISTS zz ON acct",
        "ok 0",
    ),
    (
        "DROP TABLE acct",
        "ok 0",
    ),
    (
        "SELECT count(*) FROM pg_trigger WHERE tgname IN ('zz', 'Aa', 'acct_check')",
        "0; ok 1",
    ),
    (
        "DROP FUNCTION add_a()",
        "ok 0",
    ),
    (
        "CREATE FUNCTION plain() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER bad BEFORE INSERT ON items FOR EACH ROW EXECUTE FUNCTION plain()",
        "ERROR 42P17",
    ),
    (
        "CREATE TRIGGER bad BEFORE INSERT ON nosuch FOR EACH ROW EXECUTE FUNCTION stamp()",
        "ERROR 42P01",
    ),
    (
        "CREATE TRIGGER bad BEFORE INSERT ON items FOR EACH ROW EXECUTE FUNCTION nosuch()",
        "ERROR 42883",
    ),
    (
        "CREATE TRIGGER bad BEFORE INSERT ON items FOR EACH STATEMENT WHEN (NEW.id > 1) EXECUTE FUNCTION stamp()",
        "ERROR 42P17",
    ),
    (
        "CREATE TRIGGER bad BEFORE INSERT ON items FOR EACH ROW WHEN (OLD.id > 1) EXECUTE FUNCTION stamp()",
        "ERROR 42P17",
    ),
    (
        "SELECT stamp()",
        "ERROR 0A000",
    ),
    (
        "CREATE TABLE loop_t (a int)",
        "ok 0",
    ),
    (
        "CREATE FUNCTION again() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO loop_t VALUES (NEW.a + 1); RETURN NEW; END $$",
        "ok 0",
    ),
    (
        "CREATE TRIGGER loop_ins AFTER INSERT ON loop_t FOR EACH ROW EXECUTE FUNCTION again()",
        "ok 0",
    ),
    (
        "INSERT INTO loop_t VALUES (1)",
        "ERROR 54001",
    ),
    (
        "SELECT count(*) FROM loop_t",
        "0; ok 1",
    ),
];

#[test]
fn triggers_fire_as_in_postgres() {
    run_script(SCRIPT, Duration::from_secs(120));
}

/// COPY FROM STDIN with `data`: the tag's count, or the error.
async fn copy_in(c: &tokio_postgres::Client, sql: &str, data: &str) -> String {
    let sink = match c.copy_in::<_, Bytes>(sql).await {
        Ok(s) => s,
        Err(e) => return render_error(&e, &[]),
    };
    futures::pin_mut!(sink);
    if let Err(e) = sink.send(Bytes::from(data.to_string())).await {
        return render_error(&e, &[]);
    }
    match sink.finish().await {
        Ok(n) => format!("COPY {n}"),
        Err(e) => render_error(&e, &[]),
    }
}

/// COPY FROM fires INSERT's triggers (a row skipped, rows changed, the
/// statement trigger once after them); a trigger created in a rolled-back
/// transaction never fires, one not yet committed fires only in its own
/// transaction.
#[test]
fn copy_and_transactions() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE TABLE cp (id int, name text, updated text)",
                "CREATE FUNCTION cp_stamp() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 2 THEN RETURN NULL; END IF; NEW.updated := TG_OP || ' ' || upper(NEW.name); RETURN NEW; END $$",
                "CREATE TABLE cp_log (what text, n bigint)",
                "CREATE FUNCTION cp_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO cp_log SELECT TG_OP || ' ' || TG_LEVEL, count(*) FROM cp; RETURN NULL; END $$",
                "CREATE TRIGGER cp_b BEFORE INSERT ON cp FOR EACH ROW EXECUTE FUNCTION cp_stamp()",
                "CREATE TRIGGER cp_a AFTER INSERT ON cp FOR EACH STATEMENT EXECUTE FUNCTION cp_count()",
            ] {
                c.simple_query(sql).await.unwrap();
            }
            assert_eq!(
                copy_in(&c, "COPY cp (id, name) FROM STDIN", "1\ta\n2\tb\n3\tc\n").await,
                "COPY 2"
            );
            assert_eq!(
                outcome(&c, "SELECT * FROM cp ORDER BY id", &[]).await,
                "1|a|INSERT A; 3|c|INSERT C; ok 2"
            );
            assert_eq!(
                outcome(&c, "SELECT * FROM cp_log", &[]).await,
                "INSERT STATEMENT|2; ok 1"
            );
            // Rolled back: gone.
            for sql in [
                "BEGIN",
                "CREATE TRIGGER cp_c AFTER INSERT ON cp FOR EACH ROW EXECUTE FUNCTION cp_count()",
                "ROLLBACK",
                "INSERT INTO cp VALUES (4, 'd')",
            ] {
                c.simple_query(sql).await.unwrap();
            }
            assert_eq!(
                outcome(&c, "SELECT count(*) FROM cp_log", &[]).await,
                "2; ok 1"
            );
            // Not yet committed: fires in its transaction only.
            let other = connect(&walden.conn_str()).await;
            for sql in [
                "BEGIN",
                "CREATE TRIGGER cp_d AFTER DELETE ON cp FOR EACH ROW EXECUTE FUNCTION cp_count()",
                "DELETE FROM cp WHERE id = 4",
            ] {
                c.simple_query(sql).await.unwrap();
            }
            assert_eq!(
                outcome(&c, "SELECT what, n FROM cp_log ORDER BY n, what", &[]).await,
                "DELETE ROW|2; INSERT STATEMENT|2; INSERT STATEMENT|3; ok 3"
            );
            c.simple_query("COMMIT").await.unwrap();
            assert_eq!(
                outcome(&other, "DELETE FROM cp WHERE id = 3", &[]).await,
                "ok 1"
            );
            assert_eq!(
                outcome(&other, "SELECT what, n FROM cp_log ORDER BY n, what", &[]).await,
                "DELETE ROW|1; DELETE ROW|2; INSERT STATEMENT|2; INSERT STATEMENT|3; ok 4"
            );
        })
        .await
        .expect("timed out")
    });
}

/// Triggers survive a crash (their rows are logged and recovered).
#[test]
fn triggers_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("walden");
    let walden = Serve::start(&dir, &[]);
    let check = |conn: String| async move {
        let c = connect(&conn).await;
        assert_eq!(
            outcome(&c, "INSERT INTO r VALUES (2, 'b') RETURNING a, b", &[]).await,
            "2|B!; ok 1"
        );
        assert_eq!(
            outcome(&c, "SELECT tgname FROM pg_trigger", &[]).await,
            "r_up; ok 1"
        );
    };
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE TABLE r (a int, b text)",
                "CREATE FUNCTION r_up() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.b := upper(NEW.b) || '!'; RETURN NEW; END $$",
                "CREATE TRIGGER r_up BEFORE INSERT ON r FOR EACH ROW EXECUTE FUNCTION r_up()",
            ] {
                c.simple_query(sql).await.unwrap();
            }
            assert_eq!(
                outcome(&c, "INSERT INTO r VALUES (1, 'a') RETURNING a, b", &[]).await,
                "1|A!; ok 1"
            );
        })
        .await
        .expect("timed out")
    });
    pg_diff::check_after_kill_then_checkpoint(walden, &dir, check);
}

/// T-SQL triggers: once per statement (also when no row changed), with
/// `inserted` / `deleted`, `UPDATE(col)` and `@@ROWCOUNT` at entry; one
/// does not fire itself again; `DROP TRIGGER`; `sys.triggers`. The
/// expected values follow SQL Server's documented behaviour.
#[test]
fn tsql_triggers() {
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = connect(&walden.conn_str()).await;
            for sql in [
                "CREATE TABLE main_t (id int IDENTITY(1,1), v varchar(10), n int)",
                "CREATE TABLE log_t (what varchar(20), id int, v varchar(10), cnt int)",
                "CREATE TRIGGER main_ins ON main_t FOR INSERT AS\n\
                 INSERT INTO log_t (what, id, v, cnt) SELECT 'ins', id, v, @@ROWCOUNT FROM INSERTED;",
                "CREATE TRIGGER [dbo].[main_upd] ON [dbo].[main_t] AFTER UPDATE AS\n\
                 BEGIN\n\
                   DECLARE @c int = @@ROWCOUNT;\n\
                   IF UPDATE(v)\n\
                     INSERT INTO log_t SELECT 'upd v', i.id, d.v + '>' + i.v, @c FROM inserted i JOIN deleted d ON i.id = d.id;\n\
                   ELSE\n\
                     INSERT INTO log_t VALUES ('upd other', NULL, NULL, @c);\n\
                   UPDATE main_t SET n = -1 WHERE id IN (SELECT id FROM inserted);\n\
                 END",
            ] {
                c.simple_query(sql).await.unwrap();
            }
            assert_eq!(
                outcome(&c, "INSERT INTO main_t (v, n) VALUES ('a', 1), ('b', 2)", &[]).await,
                "ok 2"
            );
            assert_eq!(outcome(&c, "UPDATE main_t SET v = 'c' WHERE id = 2", &[]).await, "ok 1");
            assert_eq!(outcome(&c, "UPDATE main_t SET n = 5 WHERE id = 99", &[]).await, "ok 0");
            assert_eq!(
                outcome(&c, "SELECT what, id, v, cnt FROM log_t ORDER BY what, id", &[]).await,
                "ins|1|a|2; ins|2|b|2; upd other|NULL|NULL|0; upd v|2|b>c|1; ok 4"
            );
            // The trigger's own UPDATE did not fire it again.
            assert_eq!(
                outcome(&c, "SELECT id, v, n FROM main_t ORDER BY id", &[]).await,
                "1|a|1; 2|c|-1; ok 2"
            );
            assert_eq!(
                outcome(&c, "SELECT name, type, is_disabled FROM sys.triggers ORDER BY name", &[]).await,
                "main_ins|TR|f; main_upd|TR|f; ok 2"
            );
            assert_eq!(outcome(&c, "DROP TRIGGER main_upd", &[]).await, "ok 0");
            assert!(outcome(&c, "DROP TRIGGER main_upd", &[]).await.starts_with("ERROR"));
            assert_eq!(outcome(&c, "DROP TRIGGER IF EXISTS main_upd", &[]).await, "ok 0");
            assert_eq!(outcome(&c, "UPDATE main_t SET v = 'd'", &[]).await, "ok 2");
            assert_eq!(
                outcome(&c, "SELECT count(*) FROM log_t", &[]).await,
                "4; ok 1"
            );
        })
        .await
        .expect("timed out")
    });
}
