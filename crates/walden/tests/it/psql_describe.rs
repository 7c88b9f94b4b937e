//! psql's `\d` family beyond `\d` and `\dt`: `\df` (and `\df+`), `\dv`,
//! `\du`, `\dT`, `\dn`, `\di`, `\ds`, `\l` and the commands listing objects
//! Walden lacks, run by psql 15 against Walden and a scratch PostgreSQL 15
//! holding the same objects, owned by a role of the same name; the outputs
//! must be the same. The commands that list PostgreSQL's built-in objects
//! of other kinds must run. And every built-in function Walden lists in
//! `pg_proc` runs with the argument types it lists.

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect, Peers};
use server_support::{have, missing_tool, run_with_deadline};
use std::process::Command;
use std::time::Duration;
use tokio_postgres::SimpleQueryMessage;

/// The same objects in both: an enum type, a table with a primary key and
/// an index, a sequence, and roles (one a member of the other).
const SETUP: &str = "CREATE TYPE pd_mood AS ENUM ('sad', 'ok', 'happy'); \
     CREATE TABLE pd_t (id int PRIMARY KEY, m pd_mood, v text); \
     CREATE INDEX pd_t_v ON pd_t (v); \
     CREATE SEQUENCE pd_s; \
     CREATE ROLE pd_login LOGIN; \
     CREATE ROLE pd_group; \
     GRANT pd_group TO pd_login";

/// The commands compared. `\df` is compared by name: Walden lists the
/// built-ins it has, not PostgreSQL's 3,000 (see docs/conformance.md).
const COMMANDS: &[&str] = &[
    "\\dT",
    "\\dT pd_mood",
    "\\dn",
    "\\di",
    "\\di pd_t_v",
    "\\ds",
    "\\dv",
    "\\du pd_*",
    "\\df",
    "\\df pg_sleep",
    "\\df now",
    "\\df version",
    "\\df md5",
    "\\df pg_advisory_lock",
    "\\df abs",
    "\\df concat*",
    "\\df pg_relation_size",
    "\\l walden",
    "\\dg pd_*",
    "\\dp pd_*",
    // Objects neither has here (Walden has none of them at all).
    "\\da",
    "\\dd",
    "\\dD",
    "\\ddp",
    "\\dE",
    "\\des",
    "\\det",
    "\\deu",
    "\\dew",
    "\\dm",
    "\\dO",
    "\\dP",
    "\\dRp",
    "\\dRs",
    "\\dX",
    "\\dy",
];

/// Commands that list PostgreSQL's built-in objects of kinds Walden does
/// not have (or has fewer of): they must run, their rows differ.
const RUN_ONLY: &[&str] = &[
    "\\dA",
    "\\db",
    "\\dc",
    "\\dC",
    "\\dF",
    "\\dFd",
    "\\dFp",
    "\\dFt",
    "\\dl",
    "\\dL",
    "\\do",
    "\\dx",
    "\\drds",
    "\\dconfig",
];

fn psql(conn: &str, commands: &[&str]) -> String {
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-v", "ON_ERROR_STOP=1", "-d", conn])
        .env("PGCONNECT_TIMEOUT", "10");
    for c in commands {
        cmd.args(["-c", c]);
    }
    let out = run_with_deadline(&mut cmd, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "psql {commands:?} against {conn}:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn psql_describe_commands_match_postgres() {
    if !have("psql", &["--version"]) {
        missing_tool("psql is needed to compare the \\d commands");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(peers) = Peers::start(tmp.path(), "to compare psql's \\d commands") else {
        return;
    };
    // PostgreSQL gets a superuser named as Walden's, and a database named
    // as Walden's with the locale Walden reports, so owners and `\l walden`
    // read the same.
    psql(
        &peers.pg_conn(),
        &[
            "CREATE ROLE walden SUPERUSER LOGIN",
            "CREATE DATABASE walden OWNER walden TEMPLATE template0 ENCODING 'UTF8' \
             LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'",
        ],
    );
    let pg = format!(
        "host=127.0.0.1 port={} user=walden dbname=walden",
        peers.pg.port()
    );
    let walden = peers.walden_conn();
    psql(&pg, &[SETUP]);
    psql(&walden, &[SETUP]);
    let mut differences = Vec::new();
    for c in COMMANDS {
        let want = psql(&pg, &[c]);
        let got = psql(&walden, &[c]);
        if want != got {
            differences.push(format!("{c}\n--- postgres:\n{want}--- walden:\n{got}"));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    // `\df+` adds volatility, parallel safety, security, privileges and
    // the language, which must match; the owner (the bootstrap superuser,
    // `postgres` there), the source (PostgreSQL's C symbol) and the
    // description (Walden has no comments) differ.
    let plus = |conn: &str| -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for f in [
            "pg_sleep",
            "nextval",
            "pg_advisory_lock",
            "concat_ws",
            "abs",
        ] {
            let out = psql(
                conn,
                &[
                    "\\pset format unaligned",
                    "\\pset tuples_only on",
                    &format!("\\df+ {f}"),
                ],
            );
            for line in out.lines().filter(|l| l.contains('|')) {
                let mut cols: Vec<String> = line.split('|').map(str::to_string).collect();
                assert_eq!(cols.len(), 13, "\\df+ {f}: {line}");
                for k in [12, 11, 7] {
                    cols.remove(k);
                }
                rows.push(cols);
            }
        }
        rows
    };
    let (want, got) = (plus(&pg), plus(&walden));
    assert_eq!(want.len(), 11, "{want:?}");
    assert_eq!(want, got);
    for c in RUN_ONLY {
        psql(&walden, &[c]);
    }
    // The comparison saw the objects, not two empty lists.
    let listed = psql(&walden, &["\\dT", "\\di", "\\df pg_sleep", "\\du pd_*"]);
    for needle in ["pd_mood", "pd_t_v", "double precision", "pd_login"] {
        assert!(listed.contains(needle), "no {needle} in\n{listed}");
    }
}

/// A value of the type with OID `oid`, for calling a listed function.
fn sample(oid: u32, function: &str) -> String {
    match (oid, function) {
        (25, "current_setting") => "'search_path'".into(),
        (25, "date_trunc") => "'day'".into(),
        (25, "pg_relation_size") => "'main'".into(),
        (2205, "nextval" | "setval" | "currval") => "'pd_fs'::regclass".into(),
        (16, _) => "false".into(),
        (19, _) => "'walden'::name".into(),
        (20, _) => "3::bigint".into(),
        (21, _) => "3::smallint".into(),
        (23, _) => "3".into(),
        (25, _) => "'id'".into(),
        (17, _) => "'\\x01'::bytea".into(),
        (26, _) => "1::oid".into(),
        (700, _) => "0.5::real".into(),
        (701, _) => "0.5::float8".into(),
        (1114, _) => "'2024-01-02 03:04:05'::timestamp".into(),
        (1184, _) => "'2024-01-02 03:04:05+00'::timestamptz".into(),
        (1700, _) => "2.5::numeric".into(),
        (2205, _) => "'pd_f'::regclass".into(),
        (2276, _) => "'x'".into(),
        (2283, _) => "'x'::text".into(),
        (2277, _) => "ARRAY[1, 2]".into(),
        (3802, _) => "'{\"a\": 1}'::jsonb".into(),
        _ => panic!("no sample value of type {oid} for {function}"),
    }
}

#[test]
fn every_listed_function_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server_support::Serve::start(&tmp.path().join("data"), &[]);
    block_on_within(Duration::from_secs(120), async {
        let c = connect(&s.conn_str()).await;
        // currval and lastval need a nextval in the session first.
        c.batch_execute(
            "CREATE TABLE pd_f (id serial PRIMARY KEY); CREATE SEQUENCE pd_fs; \
             SELECT nextval('pd_fs')",
        )
        .await
        .unwrap();
        let rows: Vec<_> = c
            .simple_query(
                "SELECT proname, proargtypes, pg_get_function_arguments(oid) \
                 FROM pg_proc ORDER BY proname, oid",
            )
            .await
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r),
                _ => None,
            })
            .collect();
        assert!(rows.len() >= 90, "{} functions in pg_proc", rows.len());
        let mut failures = Vec::new();
        for r in &rows {
            let name = r.get(0).unwrap().to_string();
            // oidvector's text form: the OIDs separated by spaces.
            let args: Vec<u32> = r
                .get(1)
                .unwrap()
                .split_whitespace()
                .map(|o| o.parse().unwrap())
                .collect();
            let shown = r.get(2).unwrap();
            let list = match (name.as_str(), args.len()) {
                ("set_config", 3) => "'search_path', 'public', false".to_string(),
                ("pg_get_serial_sequence", 2) => "'pd_f', 'id'".to_string(),
                // Arguments inside the functions' domains.
                ("acosh", 1) => "2::float8".to_string(),
                ("date_trunc", 3) => "'day', now(), 'UTC'".to_string(),
                ("encode", 2) => "'\\x01'::bytea, 'hex'".to_string(),
                ("decode", 2) => "'01', 'hex'".to_string(),
                ("get_byte", 2) => "'\\x01'::bytea, 0".to_string(),
                ("set_byte", 3) => "'\\x01'::bytea, 0, 7".to_string(),
                ("set_bit", 3) => "'\\x01'::bytea, 3::bigint, 1".to_string(),
                ("width_bucket", 4) if shown.starts_with("numeric") => {
                    "2.5::numeric, 1::numeric, 3::numeric, 4".to_string()
                }
                ("width_bucket", 4) => "2.5::float8, 1::float8, 3::float8, 4".to_string(),
                _ => args
                    .iter()
                    .map(|&t| sample(t, &name))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let sql = format!("SELECT {name}({list})");
            match c.simple_query(&sql).await {
                Ok(msgs) => assert!(
                    msgs.iter().any(|m| matches!(m, SimpleQueryMessage::Row(_))),
                    "{sql}: no row"
                ),
                Err(e) => failures.push(format!("{name}({shown}): {sql}: {e}")),
            }
        }
        c.batch_execute("SELECT pg_advisory_unlock_all()")
            .await
            .unwrap();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // `pg_get_function_*` of an OID that is no function is NULL, and
        // regproc names a listed function.
        let row = c
            .query_one(
                "SELECT pg_get_function_result(1), pg_get_function_arguments(1), \
                 2626::regproc::text, pg_get_function_result(2626)",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, Option<String>>(0), None);
        assert_eq!(row.get::<_, Option<String>>(1), None);
        assert_eq!(row.get::<_, String>(2), "pg_sleep");
        assert_eq!(row.get::<_, String>(3), "void");
    });
}
