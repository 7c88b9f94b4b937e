//! pgjdbc (Debian's libpostgresql-jdbc-java) against `walden serve` and
//! against a scratch PostgreSQL 15, with the same program
//! (`tests/clients/JdbcSuite.java`): DatabaseMetaData (tables, columns, keys,
//! indexes, schemas, type info), ResultSetMetaData, typed parameters, batches,
//! savepoints and generated keys. The program prints what the driver returned,
//! section by section; every section must print the same on both servers,
//! except the known gaps listed below (each names what Walden lacks, and a
//! gap that starts matching fails the test so the list stays true). The Java
//! is compiled here with javac; a missing JDK, driver or PostgreSQL fails the
//! test under `WALDEN_REQUIRE_TOOLS` (`.ci/run` installs them).

use crate::server_support;

use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use walden_bench::workbench::pg_peer::ScratchPostgres;

const DRIVER_JAR: &str = "/usr/share/java/postgresql.jar";

/// Sections whose output differs from PostgreSQL's, and why (what Walden
/// lacks). docs/conformance.md lists the same.
const GAPS: &[(&str, &str)] = &[];

/// Fields whose values legitimately differ between the two servers: masked
/// in every line before comparing. (None yet: OIDs and version strings are
/// never printed by the program.)
const MASKED: &[(&str, &str)] = &[];

fn clients_dir() -> String {
    format!("{}/tests/clients", env!("CARGO_MANIFEST_DIR"))
}

/// Compiles JdbcSuite.java into `out`.
fn compile(out: &Path) {
    let st = run_with_deadline(
        Command::new("javac").args([
            "-cp",
            DRIVER_JAR,
            "-d",
            out.to_str().unwrap(),
            &format!("{}/JdbcSuite.java", clients_dir()),
        ]),
        Duration::from_secs(120),
    );
    assert!(
        st.status.success(),
        "javac failed:\n{}",
        String::from_utf8_lossy(&st.stderr)
    );
}

fn run(classes: &Path, host: &str, port: u16, user: &str, db: &str) -> String {
    let out = run_with_deadline(
        Command::new("java").args([
            "-cp",
            &format!("{}:{DRIVER_JAR}", classes.display()),
            "JdbcSuite",
            host,
            &port.to_string(),
            user,
            db,
        ]),
        Duration::from_secs(240),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && stdout.ends_with("done\n"),
        "JdbcSuite against port {port} did not finish (status {}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn mask(line: &str) -> String {
    line.split(" | ")
        .map(|field| match field.split_once('=') {
            Some((k, _)) if MASKED.iter().any(|(m, _)| *m == k) => format!("{k}=<masked>"),
            _ => field.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Section name -> its lines, in order.
fn sections(out: &str) -> BTreeMap<String, Vec<String>> {
    let mut map = BTreeMap::new();
    let mut cur = String::new();
    for line in out.lines() {
        if let Some(name) = line.strip_prefix("== ") {
            cur = name.to_string();
            map.insert(cur.clone(), Vec::new());
        } else if !cur.is_empty() {
            map.get_mut(&cur).unwrap().push(mask(line));
        }
    }
    map
}

fn tools_present(tmp: &Path) -> Option<ScratchPostgres> {
    if !have("javac", &["-version"]) || !have("java", &["-version"]) {
        missing_tool("javac and java are needed (default-jdk-headless; .ci/run installs it)");
        return None;
    }
    if !Path::new(DRIVER_JAR).exists() {
        missing_tool(&format!(
            "{DRIVER_JAR} is needed (libpostgresql-jdbc-java; .ci/run installs it)"
        ));
        return None;
    }
    match ScratchPostgres::start(tmp) {
        Ok(pg) => Some(pg),
        Err(e) => {
            missing_tool(&format!("PostgreSQL 15 is needed to compare with: {e}"));
            None
        }
    }
}

#[test]
fn jdbc_metadata_and_statements_match_postgres() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(pg) = tools_present(tmp.path()) else {
        return;
    };
    let classes = tmp.path().join("classes");
    compile(&classes);
    // The same role and database names on both servers, so that owner and
    // grantor columns compare equal.
    let setup = run_with_deadline(
        Command::new("psql").args([
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-p",
            &pg.port().to_string(),
            "-U",
            ScratchPostgres::USER,
            "-d",
            "postgres",
            "-c",
            "CREATE ROLE walden SUPERUSER LOGIN",
            "-c",
            "CREATE DATABASE walden OWNER walden",
        ]),
        Duration::from_secs(60),
    );
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let want = sections(&run(&classes, "127.0.0.1", pg.port(), "walden", "walden"));
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    let got_text = run(&classes, &walden.host, walden.port, "walden", "walden");
    println!("{got_text}");
    let got = sections(&got_text);
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>(),
        "the two runs printed different sections"
    );
    let mut failures = Vec::new();
    let mut matched = 0;
    for (name, w) in &want {
        let g = &got[name];
        let gap = GAPS.iter().find(|(s, _)| s == name);
        match (w == g, gap) {
            (true, None) => matched += 1,
            (true, Some((_, why))) => failures.push(format!(
                "section {name:?} now matches PostgreSQL: remove it from GAPS ({why})"
            )),
            (false, Some(_)) => {}
            (false, None) => failures.push(format!(
                "section {name:?} differs:\n--- postgres\n{}\n--- walden\n{}",
                w.join("\n"),
                g.join("\n")
            )),
        }
    }
    println!(
        "{matched} sections match PostgreSQL, {} known gaps",
        GAPS.len()
    );
    assert!(
        failures.is_empty(),
        "{}\nserver log:\n{}",
        failures.join("\n\n"),
        walden.log()
    );
}
