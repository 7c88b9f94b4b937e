//! `pg_dump` (PostgreSQL 15's) of a Walden database: plain format, schema
//! and data, `--schema-only`, `--data-only`, `--inserts`, `--column-inserts`,
//! `-t table`, and the custom format (`pg_restore -l` lists it; `pg_restore`
//! restores it). Each dump
//! restores into a scratch
//! PostgreSQL 15 without any error and into fresh Walden databases with
//! only the refusals listed here; every copy has the source's rows (NULLs,
//! arrays, json, timestamptz, bytea, awkward text), and its serial column
//! and sequence go on from the source's position. `pg_dump --schema-only`
//! of the PostgreSQL copy equals that of the Walden source, line for line
//! (tables, columns, types, defaults, NOT NULL, keys, UNIQUE, CHECK,
//! foreign keys, indexes, sequences, ownership).

mod server_support;

use server_support::{missing_tool, run_with_deadline, Serve};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use walden_bench::workbench::pg_peer::ScratchPostgres;

/// What a restore into Walden sends that Walden refuses (each 0A000): a
/// sequence cannot be owned by a column, and the one schema's owner,
/// comment and privileges are fixed.
const REFUSED: &[&str] = &[
    "statement ALTER SCHEMA public is not supported",
    "statement COMMENT ON SCHEMA is not supported",
    "ALTER SEQUENCE ... OWNED BY is not supported",
    "REVOKE USAGE ON SCHEMA (every role uses the one schema) is not supported",
    "privileges on schemas other than USAGE (every role may use and create in the one schema) is not supported",
];

const SCHEMA: &str = r#"
CREATE TABLE wd_item (
    id serial PRIMARY KEY,
    code varchar(10) NOT NULL UNIQUE,
    name text DEFAULT 'unnamed',
    price numeric(10,2) DEFAULT 0,
    qty int CHECK (qty >= 0),
    born date,
    seen timestamptz,
    at timestamp,
    flag boolean,
    uid uuid,
    data bytea,
    ratio double precision,
    tags text[],
    nums int[],
    doc json,
    docb jsonb,
    note text
);
CREATE TABLE wd_line (
    item_id int NOT NULL REFERENCES wd_item (id) ON DELETE CASCADE,
    n int NOT NULL,
    amount double precision,
    PRIMARY KEY (item_id, n)
);
CREATE INDEX wd_line_amount ON wd_line (amount);
CREATE SEQUENCE wd_ticket START 100 INCREMENT 5;
CREATE TABLE wd_plain (k text, v bigint DEFAULT nextval('wd_ticket'));
INSERT INTO wd_item (code, name, price, qty, born, seen, at, flag, uid, data, ratio, tags, nums, doc, docb, note)
SELECT 'c' || g, 'name ' || g, g * 1.25, g % 7, '2024-01-01'::date + g,
       '2024-01-01 00:00:00+00'::timestamptz + g * '61 minutes'::interval,
       '2023-12-31 23:59:59.5'::timestamp + g * '1 day'::interval,
       g % 2 = 0, ('a0eebc99-9c0b-4ef8-bb6d-' || (100000000000 + g))::uuid, ('\x0a' || (1000 + g))::bytea,
       g / 7.0,
       ARRAY['t' || g, NULL, 'with "quote", comma'],
       ARRAY[g, g * 2],
       '{"k": [1, "two", null]}'::json,
       jsonb_build_object('g', g, 's', 'x\y'),
       CASE WHEN g % 5 = 0 THEN NULL
            ELSE E'tab\there "q" \\ back\nline ' || g || ' ünï' END
FROM generate_series(1, 40) g;
INSERT INTO wd_item (code) VALUES ('bare');
INSERT INTO wd_line SELECT i, n, i * n / 3.0 FROM generate_series(1, 40) i, generate_series(1, 3) n;
INSERT INTO wd_plain (k) VALUES ('a'), ('a'), (NULL), ('');
INSERT INTO wd_plain VALUES ('min', -9223372036854775808);
SELECT nextval('wd_ticket');
"#;

/// The tables and the order that makes their rows comparable.
const TABLES: &[(&str, &str)] = &[
    ("wd_item", "id"),
    ("wd_line", "item_id, n"),
    ("wd_plain", "k, v"),
];

fn psql(port: u16, user: &str, db: &str, args: &[&str]) -> Output {
    run_with_deadline(
        Command::new("psql")
            .args(["-X", "-h", "127.0.0.1", "-p", &port.to_string()])
            .args(["-U", user, "-d", db])
            .args(args)
            .env("PGTZ", "UTC"),
        Duration::from_secs(120),
    )
}

fn ok(o: Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// The messages of the `ERROR:` lines a restore printed.
fn errors(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.split_once("ERROR:").map(|(_, m)| m.trim().to_string()))
        .collect()
}

fn contents(port: u16, user: &str, db: &str) -> Vec<String> {
    TABLES
        .iter()
        .map(|(t, order)| {
            let sql = format!("SELECT * FROM {t} ORDER BY {order}");
            ok(
                psql(port, user, db, &["-A", "-t", "-c", &sql]),
                &format!("reading {t} from {db}"),
            )
        })
        .collect()
}

/// The ids the serial column and the sequence hand out next.
fn next_values(port: u16, user: &str, db: &str) -> String {
    ok(
        psql(
            port,
            user,
            db,
            &[
                "-A",
                "-t",
                "-c",
                "INSERT INTO wd_item (code) VALUES ('next') RETURNING id",
                "-c",
                "INSERT INTO wd_plain (k) VALUES ('next') RETURNING v",
            ],
        ),
        &format!("inserting into {db}"),
    )
    .lines()
    .filter(|l| !l.starts_with("INSERT"))
    .collect::<Vec<_>>()
    .join(",")
}

fn pg_dump(port: u16, user: &str, db: &str, args: &[&str]) -> Output {
    run_with_deadline(
        Command::new("pg_dump")
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", user])
            .args(args)
            .arg(db)
            .env("PGTZ", "UTC"),
        Duration::from_secs(120),
    )
}

fn pg_restore(port: u16, user: &str, db: &str, args: &[&str], archive: &Path) -> Output {
    run_with_deadline(
        Command::new("pg_restore")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                user,
                "-d",
                db,
            ])
            .args(args)
            .arg(archive)
            .env("PGTZ", "UTC"),
        Duration::from_secs(120),
    )
}

/// A schema dump without the lines that name the server or change per run.
fn comparable(dump: &str) -> Vec<String> {
    dump.lines()
        .filter(|l| {
            !l.starts_with("-- Dumped from")
                && !l.starts_with("\\restrict")
                && !l.starts_with("\\unrestrict")
        })
        .map(String::from)
        .collect()
}

fn tools_present(tmp: &Path) -> Option<ScratchPostgres> {
    for tool in ["pg_dump", "pg_restore", "psql"] {
        if !server_support::have(tool, &["--version"]) {
            missing_tool(&format!("{tool} is needed (postgresql-client-15)"));
            return None;
        }
    }
    match ScratchPostgres::start(tmp) {
        Ok(pg) => Some(pg),
        Err(e) => {
            missing_tool(&format!("PostgreSQL 15 is needed to restore into: {e}"));
            None
        }
    }
}

#[test]
fn walden_dumps_restore_into_postgres_and_walden_with_equal_contents() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = tools_present(tmp.path()) else {
        return;
    };
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let wp = walden.port;
    let pgp = pg.port();
    let pg_user = ScratchPostgres::USER;
    ok(
        psql(wp, "walden", "walden", &["-c", "CREATE DATABASE src"]),
        "creating the source",
    );
    ok(
        psql(
            wp,
            "walden",
            "src",
            &["-v", "ON_ERROR_STOP=1", "-c", SCHEMA],
        ),
        "creating the schema in Walden",
    );
    let want = contents(wp, "walden", "src");
    assert!(want[0].lines().count() > 41 && want[1].lines().count() == 120);

    let file = |n: &str| tmp.path().join(n);
    // `--inserts` reads rows with `SELECT ... FROM ONLY t`; `-t` finds the
    // table with `relkind OPERATOR(pg_catalog.=) ANY (...)` after a
    // `RESET search_path`.
    let dumps: &[(&str, &[&str])] = &[
        ("plain.sql", &["-Fp"]),
        ("schema.sql", &["--schema-only"]),
        ("data.sql", &["--data-only"]),
        ("inserts.sql", &["--inserts"]),
        ("column_inserts.sql", &["--column-inserts"]),
        ("one_table.sql", &["-t", "wd_item"]),
    ];
    for (name, args) in dumps {
        let f = file(name);
        let mut a = args.to_vec();
        a.extend(["-f", f.to_str().unwrap()]);
        ok(
            pg_dump(wp, "walden", "src", &a),
            &format!("pg_dump {args:?} of Walden; server log:\n{}", walden.log()),
        );
    }

    // The custom format, and its table of contents.
    let custom = file("custom.dump");
    ok(
        pg_dump(
            wp,
            "walden",
            "src",
            &["-Fc", "-f", custom.to_str().unwrap()],
        ),
        &format!("pg_dump -Fc of Walden; server log:\n{}", walden.log()),
    );
    let toc = ok(
        run_with_deadline(
            Command::new("pg_restore").args(["-l", custom.to_str().unwrap()]),
            Duration::from_secs(60),
        ),
        "pg_restore -l",
    );
    for entry in [
        "TABLE public wd_item walden",
        "TABLE DATA public wd_line walden",
        "SEQUENCE public wd_ticket walden",
        "CONSTRAINT public wd_item wd_item_pkey walden",
        "FK CONSTRAINT public wd_line",
    ] {
        assert!(toc.contains(entry), "pg_restore -l lacks {entry:?}:\n{toc}");
    }
    let inserts = std::fs::read_to_string(file("column_inserts.sql")).unwrap();
    assert!(
        inserts.contains("INSERT INTO public.wd_line (item_id, n, amount) VALUES (1, 1, "),
        "--column-inserts writes INSERTs"
    );
    let one = std::fs::read_to_string(file("one_table.sql")).unwrap();
    assert!(
        one.contains("CREATE TABLE public.wd_item") && !one.contains("wd_line"),
        "-t dumps that table only"
    );

    // Into PostgreSQL: no error at all.
    ok(
        psql(
            pgp,
            pg_user,
            "postgres",
            &[
                "-c",
                "CREATE ROLE walden",
                "-c",
                "CREATE DATABASE plain_copy",
                "-c",
                "CREATE DATABASE custom_copy",
                "-c",
                "CREATE DATABASE inserts_copy",
                "-c",
                "CREATE DATABASE column_inserts_copy",
                "-c",
                "CREATE DATABASE one_table_copy",
            ],
        ),
        "preparing PostgreSQL",
    );
    for (f, db) in [
        ("inserts.sql", "inserts_copy"),
        ("column_inserts.sql", "column_inserts_copy"),
        ("one_table.sql", "one_table_copy"),
    ] {
        ok(
            psql(
                pgp,
                pg_user,
                db,
                &["-v", "ON_ERROR_STOP=1", "-f", file(f).to_str().unwrap()],
            ),
            &format!("restoring {f} into PostgreSQL"),
        );
    }
    let plain = file("plain.sql");
    ok(
        psql(
            pgp,
            pg_user,
            "plain_copy",
            &["-v", "ON_ERROR_STOP=1", "-f", plain.to_str().unwrap()],
        ),
        "restoring the plain dump into PostgreSQL",
    );
    ok(
        pg_restore(pgp, pg_user, "custom_copy", &["--exit-on-error"], &custom),
        "pg_restore of the custom dump into PostgreSQL",
    );

    // Into Walden: only the refusals.
    ok(
        psql(
            wp,
            "walden",
            "walden",
            &[
                "-c",
                "CREATE DATABASE plain_copy",
                "-c",
                "CREATE DATABASE split_copy",
                "-c",
                "CREATE DATABASE custom_copy",
                "-c",
                "CREATE DATABASE inserts_copy",
                "-c",
                "CREATE DATABASE column_inserts_copy",
                "-c",
                "CREATE DATABASE one_table_copy",
            ],
        ),
        "preparing Walden",
    );
    for (f, db) in [
        ("inserts.sql", "inserts_copy"),
        ("column_inserts.sql", "column_inserts_copy"),
        ("one_table.sql", "one_table_copy"),
    ] {
        let r = psql(wp, "walden", db, &["-f", file(f).to_str().unwrap()]);
        let errs = errors(&r.stderr);
        assert!(
            errs.iter().all(|e| REFUSED.contains(&e.as_str())),
            "{f} into Walden: {errs:?}"
        );
    }
    let restored = psql(
        wp,
        "walden",
        "plain_copy",
        &["-f", file("plain.sql").to_str().unwrap()],
    );
    assert!(restored.status.success(), "psql -f failed");
    assert_eq!(
        errors(&restored.stderr),
        REFUSED,
        "psql -f of the plain dump into Walden; server log:\n{}",
        walden.log()
    );
    // pg_restore of the custom dump: only the refusals (each reported,
    // so pg_restore ends with "errors ignored on restore" and status 1).
    let r = pg_restore(wp, "walden", "custom_copy", &[], &custom);
    let errs = errors(&r.stderr);
    assert!(
        !errs.is_empty() && errs.iter().all(|e| REFUSED.contains(&e.as_str())),
        "pg_restore into Walden: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    // --schema-only, then --data-only.
    for f in ["schema.sql", "data.sql"] {
        let r = psql(
            wp,
            "walden",
            "split_copy",
            &["-f", file(f).to_str().unwrap()],
        );
        let errs = errors(&r.stderr);
        assert!(
            errs.iter().all(|e| REFUSED.contains(&e.as_str())),
            "{f} into Walden: {errs:?}"
        );
    }

    for (port, user, db) in [
        (pgp, pg_user, "plain_copy"),
        (pgp, pg_user, "custom_copy"),
        (wp, "walden", "plain_copy"),
        (wp, "walden", "split_copy"),
        (wp, "walden", "custom_copy"),
        (pgp, pg_user, "inserts_copy"),
        (wp, "walden", "inserts_copy"),
        (pgp, pg_user, "column_inserts_copy"),
        (wp, "walden", "column_inserts_copy"),
    ] {
        let got = contents(port, user, db);
        for ((t, _), (w, g)) in TABLES.iter().zip(want.iter().zip(&got)) {
            assert_eq!(
                w, g,
                "table {t} of {db} (port {port}) differs from the source"
            );
        }
    }

    // The one-table copies hold that table's rows.
    for (port, user) in [(pgp, pg_user), (wp, "walden")] {
        let got = ok(
            psql(
                port,
                user,
                "one_table_copy",
                &["-A", "-t", "-c", "SELECT * FROM wd_item ORDER BY id"],
            ),
            "reading the one-table copy",
        );
        assert_eq!(got, want[0], "wd_item of one_table_copy (port {port})");
    }

    // The PostgreSQL copy dumps to the same schema as the Walden source.
    let source_schema = ok(
        pg_dump(wp, "walden", "src", &["--schema-only"]),
        "schema of src",
    );
    let pg_schema = ok(
        pg_dump(pgp, pg_user, "plain_copy", &["--schema-only"]),
        "schema of the PostgreSQL copy",
    );
    assert_eq!(comparable(&source_schema), comparable(&pg_schema));

    // The serial column and the sequence go on where the source is.
    let source_next = next_values(wp, "walden", "src");
    assert_eq!(source_next, "42,125");
    for (port, user, db) in [
        (pgp, pg_user, "plain_copy"),
        (pgp, pg_user, "custom_copy"),
        (wp, "walden", "plain_copy"),
        (wp, "walden", "split_copy"),
        (wp, "walden", "custom_copy"),
    ] {
        assert_eq!(
            next_values(port, user, db),
            source_next,
            "next values in {db} (port {port})"
        );
    }
}
