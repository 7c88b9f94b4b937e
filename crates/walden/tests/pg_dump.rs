//! A PostgreSQL 15 dump restores into Walden: `pg_dump` of a scratch
//! PostgreSQL database (serial keys, a composite primary key, a foreign key,
//! UNIQUE, CHECK, an index, the common types, NULLs and awkward text), in
//! plain format through `psql -f` and in custom format through
//! `pg_restore`, into fresh Walden databases. The restored rows must equal
//! PostgreSQL's, and the serial columns keep working (the next insert gets
//! the id PostgreSQL gives). What the restore sends and Walden refuses is
//! listed here and must be exactly what is refused (each with 0A000):
//! `ALTER SEQUENCE ... OWNED BY` (a Walden sequence has no owning column).
//! The other direction (pg_dump of a Walden database) is in
//! `pg_dump_of_walden.rs`.

mod server_support;

use server_support::{missing_tool, run_with_deadline, Serve};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use walden_bench::workbench::pg_peer::ScratchPostgres;

/// The restore's statements Walden refuses (the message after `ERROR:`).
const REFUSED: &[&str] = &["ALTER SEQUENCE ... OWNED BY is not supported"];

const SCHEMA: &str = r#"
CREATE TABLE pd_item (
    id serial PRIMARY KEY,
    code varchar(10) NOT NULL UNIQUE,
    name text,
    price numeric(10,2) DEFAULT 0,
    qty int CHECK (qty >= 0),
    born date,
    seen timestamptz,
    at timestamp,
    flag boolean,
    uid uuid,
    data bytea,
    ratio double precision,
    note text
);
CREATE TABLE pd_line (
    item_id int NOT NULL REFERENCES pd_item (id) ON DELETE CASCADE,
    n int NOT NULL,
    amount double precision,
    PRIMARY KEY (item_id, n)
);
CREATE INDEX pd_line_amount ON pd_line (amount);
CREATE TABLE pd_plain (k text, v bigint);
INSERT INTO pd_item (code, name, price, qty, born, seen, at, flag, uid, data, ratio, note)
SELECT 'c' || g, 'name ' || g, g * 1.25, g % 7, date '2024-01-01' + g,
       timestamptz '2024-01-01 00:00:00+00' + g * interval '61 minutes',
       timestamp '2023-12-31 23:59:59.5' + g * interval '1 day',
       g % 2 = 0, md5(g::text)::uuid, decode(lpad(to_hex(g), 4, '0'), 'hex'),
       g / 7.0,
       CASE WHEN g % 5 = 0 THEN NULL
            ELSE E'tab\there "q" \\ back\nline ' || g || ' ünï' END
FROM generate_series(1, 120) g;
INSERT INTO pd_line SELECT i, n, i * n / 3.0 FROM generate_series(1, 120) i, generate_series(1, 3) n;
INSERT INTO pd_plain VALUES ('a', 1), ('a', 1), (NULL, NULL), ('', -9223372036854775808);
-- Values the sequence handed out and no row kept: the dump's setval must carry them.
SELECT nextval('pd_item_id_seq') FROM generate_series(1, 3);
"#;

/// The tables and the order that makes their rows comparable.
const TABLES: &[(&str, &str)] = &[
    ("pd_item", "id"),
    ("pd_line", "item_id, n"),
    ("pd_plain", "k, v"),
];

fn psql(port: u16, user: &str, db: &str, args: &[&str]) -> Output {
    run_with_deadline(
        Command::new("psql")
            .args([
                "-X",
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
            // Timestamps with time zone print in one zone on both servers.
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
            ok(
                psql(
                    port,
                    user,
                    db,
                    &[
                        "-A",
                        "-t",
                        "-c",
                        &format!("SELECT * FROM {t} ORDER BY {order}"),
                    ],
                ),
                &format!("reading {t} from {db}"),
            )
        })
        .collect()
}

fn next_id(port: u16, user: &str, db: &str) -> String {
    ok(
        psql(
            port,
            user,
            db,
            &[
                "-A",
                "-t",
                "-c",
                "INSERT INTO pd_item (code) VALUES ('next') RETURNING id",
            ],
        ),
        &format!("inserting into {db}"),
    )
    .lines()
    .next()
    .unwrap_or_default()
    .to_string()
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
            missing_tool(&format!("PostgreSQL 15 is needed to dump from: {e}"));
            None
        }
    }
}

#[test]
fn postgres_dumps_restore_into_walden_with_equal_contents() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = tools_present(tmp.path()) else {
        return;
    };
    let pg_user = ScratchPostgres::USER;
    ok(
        psql(
            pg.port(),
            pg_user,
            "postgres",
            &["-v", "ON_ERROR_STOP=1", "-c", SCHEMA],
        ),
        "creating the schema in PostgreSQL",
    );
    let plain = tmp.path().join("dump.sql");
    let custom = tmp.path().join("dump.custom");
    for (format, file) in [("p", &plain), ("c", &custom)] {
        ok(
            run_with_deadline(
                Command::new("pg_dump").args([
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &pg.port().to_string(),
                    "-U",
                    pg_user,
                    "-F",
                    format,
                    "-f",
                    file.to_str().unwrap(),
                    "postgres",
                ]),
                Duration::from_secs(120),
            ),
            "pg_dump",
        );
    }
    let want = contents(pg.port(), pg_user, "postgres");
    // (pd_item's notes span two lines each.)
    assert!(want[0].lines().count() > 120 && want[1].lines().count() == 360);

    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let w = |db: &str, args: &[&str]| psql(walden.port, "walden", db, args);
    // The dump gives its objects to the role that owned them.
    ok(
        w(
            "walden",
            &[
                "-c",
                "CREATE ROLE postgres",
                "-c",
                "CREATE DATABASE plain_copy",
                "-c",
                "CREATE DATABASE custom_copy",
            ],
        ),
        "preparing Walden",
    );

    // Plain format through psql (which goes on past an error, as restores do).
    let restored = w("plain_copy", &["-f", plain.to_str().unwrap()]);
    assert!(restored.status.success(), "psql -f failed");
    assert_eq!(
        errors(&restored.stderr),
        REFUSED,
        "psql -f of the plain dump; server log:\n{}",
        walden.log()
    );
    // Custom format through pg_restore.
    let restored = run_with_deadline(
        Command::new("pg_restore").args([
            "-h",
            "127.0.0.1",
            "-p",
            &walden.port.to_string(),
            "-U",
            "walden",
            "-d",
            "custom_copy",
            custom.to_str().unwrap(),
        ]),
        Duration::from_secs(120),
    );
    assert_eq!(
        errors(&restored.stderr),
        REFUSED,
        "pg_restore of the custom dump; server log:\n{}",
        walden.log()
    );

    for db in ["plain_copy", "custom_copy"] {
        let got = contents(walden.port, "walden", db);
        for ((t, _), (pg_rows, walden_rows)) in TABLES.iter().zip(want.iter().zip(&got)) {
            assert_eq!(
                pg_rows, walden_rows,
                "table {t} restored into {db} differs from PostgreSQL's"
            );
        }
        // Objects belong to the dump's owner.
        assert_eq!(
            ok(
                w(
                    db,
                    &[
                        "-A",
                        "-t",
                        "-c",
                        "SELECT tableowner FROM pg_tables WHERE tablename = 'pd_item'"
                    ]
                ),
                "owner"
            )
            .trim(),
            "postgres"
        );
    }
    // The serial default and the sequence's position came across.
    let pg_next = next_id(pg.port(), pg_user, "postgres");
    assert_eq!(pg_next, "124");
    for db in ["plain_copy", "custom_copy"] {
        assert_eq!(
            next_id(walden.port, "walden", db),
            pg_next,
            "next id in {db}"
        );
    }
}
