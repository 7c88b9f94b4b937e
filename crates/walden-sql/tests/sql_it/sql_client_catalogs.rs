//! Catalogs and functions the client drivers and tools read (pgjdbc's
//! DatabaseMetaData, pg_dump, SQLAlchemy), each checked against what
//! PostgreSQL 15 returns for the same statement.

use crate::common;
use common::engine;
use walden_sql::{ErrorKind, SqlSession};

fn rows(s: &mut SqlSession, sql: &str) -> Vec<Vec<String>> {
    let out = s
        .execute_batch(sql)
        .pop()
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    out.rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| {
                    if v.is_null() {
                        "NULL".to_string()
                    } else {
                        v.to_string()
                    }
                })
                .collect()
        })
        .collect()
}

fn one(s: &mut SqlSession, sql: &str) -> String {
    rows(s, sql)[0][0].clone()
}

fn err(s: &mut SqlSession, sql: &str) -> (ErrorKind, String) {
    match s.execute_batch(sql).pop().unwrap() {
        Ok(o) => panic!("{sql} succeeded: {}", o.tag),
        Err(e) => (e.kind, e.message.clone()),
    }
}

#[test]
fn aggregate_filter_counts_only_matching_rows() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    s.execute_batch("CREATE TABLE f (g int, v int, name text)")
        .into_iter()
        .for_each(|r| {
            r.unwrap();
        });
    rows(
        &mut s,
        "INSERT INTO f VALUES (1, 1, 'x'), (1, 2, 'y'), (1, NULL, 'x'), (2, 5, 'x'), (2, 6, 'z')",
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT g, count(*) FILTER (WHERE name = 'x'), sum(v) FILTER (WHERE v > 1), \
             count(*), string_agg(name, ',' ORDER BY name) FILTER (WHERE v IS NOT NULL) \
             FROM f GROUP BY g ORDER BY g"
        ),
        vec![
            vec!["1", "2", "2", "3", "x,y"],
            vec!["2", "1", "11", "2", "x,z"]
        ]
    );
    // No group: one row, FILTER false everywhere gives 0 and NULL.
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*) FILTER (WHERE false), max(v) FILTER (WHERE false) FROM f"
        ),
        vec![vec!["0", "NULL"]]
    );
    // FILTER on a function that is not an aggregate is 42809, as PostgreSQL.
    let (k, m) = err(&mut s, "SELECT lower(name) FILTER (WHERE v > 1) FROM f");
    assert_eq!(k, ErrorKind::WrongObjectType);
    assert_eq!(
        m,
        "FILTER specified, but lower is not an aggregate function"
    );
    // OVER is not ignored: an aggregate becomes a window aggregate, and a
    // scalar function is 42809 (window functions: tests/window_functions.rs
    // in crates/walden).
    assert_eq!(
        rows(&mut s, "SELECT count(*) OVER () FROM f LIMIT 1"),
        vec![vec!["5"]]
    );
    let (k, m) = err(&mut s, "SELECT upper(name) OVER (PARTITION BY g) FROM f");
    assert_eq!(k, ErrorKind::WrongObjectType);
    assert_eq!(
        m,
        "OVER specified, but upper is not a window function nor an aggregate function"
    );
}

#[test]
fn pg_settings_lists_the_session_parameters() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    // pgjdbc reads max_index_keys before getImportedKeys.
    assert_eq!(
        one(
            &mut s,
            "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'max_index_keys'"
        ),
        "32"
    );
    rows(&mut s, "SET application_name = 'tool'");
    assert_eq!(
        rows(
            &mut s,
            "SELECT name, setting, source FROM pg_settings WHERE name IN \
             ('application_name', 'server_version_num', 'TimeZone') ORDER BY name"
        ),
        // Byte order (the C collation): upper case first.
        vec![
            vec!["TimeZone", "UTC", "default"],
            vec!["application_name", "tool", "session"],
            vec!["server_version_num", "150000", "default"],
        ]
    );
    // pg_dump's probe for a parameter Walden lacks finds no row.
    assert!(rows(
        &mut s,
        "SELECT set_config(name, 'view, foreign-table', false) FROM pg_settings \
         WHERE name = 'restrict_nonsystem_relation_kind'"
    )
    .is_empty());
}

#[test]
fn index_keys_are_limited_as_max_index_keys_says() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    let cols: Vec<String> = (0..33).map(|i| format!("c{i} int")).collect();
    rows(&mut s, &format!("CREATE TABLE wide ({})", cols.join(", ")));
    let names: Vec<String> = (0..33).map(|i| format!("c{i}")).collect();
    let (k, m) = err(
        &mut s,
        &format!("CREATE INDEX wide_all ON wide ({})", names.join(", ")),
    );
    assert_eq!(k, ErrorKind::TooManyColumns);
    assert_eq!(m, "cannot use more than 32 columns in an index");
    let (k, _) = err(
        &mut s,
        &format!(
            "CREATE TABLE wide2 (a int, PRIMARY KEY ({}))",
            names.join(", ")
        ),
    );
    assert_eq!(k, ErrorKind::TooManyColumns);
    rows(
        &mut s,
        &format!("CREATE INDEX wide_32 ON wide ({})", names[..32].join(", ")),
    );
}

#[test]
fn current_schemas_and_qualified_subscripts() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    assert_eq!(
        one(&mut s, "SELECT current_schemas(true)"),
        "{pg_catalog,public}"
    );
    assert_eq!(one(&mut s, "SELECT current_schemas(false)"), "{public}");
    assert_eq!(
        one(&mut s, "SELECT (pg_catalog.current_schemas(true))[1]"),
        "pg_catalog"
    );
    // pgjdbc's getImportedKeys subscripts a qualified array column.
    rows(
        &mut s,
        "CREATE TABLE p (a int, b int, PRIMARY KEY (a, b)); \
         CREATE TABLE r (x int, y int, FOREIGN KEY (x, y) REFERENCES p (a, b))",
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT con.conkey[2], con.confkey[pos.n] FROM pg_catalog.pg_constraint con, \
             generate_series(1, 2) pos(n) WHERE con.contype = 'f' ORDER BY pos.n"
        ),
        vec![vec!["2", "1"], vec!["2", "2"]]
    );
}

#[test]
fn setval_positions_a_sequence_as_postgresql() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    rows(&mut s, "CREATE SEQUENCE sq");
    assert_eq!(
        one(&mut s, "SELECT pg_catalog.setval('public.sq', 41, true)"),
        "41"
    );
    assert_eq!(one(&mut s, "SELECT nextval('sq')"), "42");
    assert_eq!(one(&mut s, "SELECT setval('sq', 7, false)"), "7");
    assert_eq!(one(&mut s, "SELECT nextval('sq')"), "7");
    assert_eq!(one(&mut s, "SELECT setval('sq', 100)"), "100");
    assert_eq!(one(&mut s, "SELECT nextval('sq')"), "101");
    // Strict: a NULL argument changes nothing.
    assert_eq!(one(&mut s, "SELECT setval('sq', NULL)"), "NULL");
    assert_eq!(one(&mut s, "SELECT nextval('sq')"), "102");
    // Not undone by a rollback, as nextval.
    rows(&mut s, "BEGIN");
    one(&mut s, "SELECT setval('sq', 500)");
    rows(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, "SELECT nextval('sq')"), "501");
    let (k, _) = err(&mut s, "SELECT setval('nosuch', 1)");
    assert_eq!(k, ErrorKind::UndefinedTable);
}

#[test]
fn alter_table_owner_to_changes_the_owner() {
    let e = engine();
    let mut admin = e.connect("walden", "walden", "").unwrap();
    rows(
        &mut admin,
        "CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN; \
         CREATE TABLE owned (id int PRIMARY KEY); CREATE SEQUENCE owned_seq",
    );
    rows(&mut admin, "ALTER TABLE public.owned OWNER TO alice");
    rows(&mut admin, "ALTER TABLE owned_seq OWNER TO alice");
    assert_eq!(
        one(
            &mut admin,
            "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'owned'"
        ),
        "alice"
    );
    assert_eq!(
        one(
            &mut admin,
            "SELECT tableowner FROM pg_tables WHERE tablename = 'owned'"
        ),
        "alice"
    );
    let (k, m) = err(&mut admin, "ALTER TABLE owned OWNER TO nobody");
    assert_eq!(
        (k, m.as_str()),
        (ErrorKind::UndefinedObject, "role \"nobody\" does not exist")
    );
    // The new owner may now alter it; bob, neither owner nor member, may not.
    let mut alice = e.connect("walden", "alice", "").unwrap();
    rows(&mut alice, "ALTER TABLE owned ADD COLUMN note text");
    let (k, m) = err(&mut alice, "ALTER TABLE owned OWNER TO bob");
    assert_eq!(
        (k, m.as_str()),
        (
            ErrorKind::InsufficientPrivilege,
            "must be member of role \"bob\""
        )
    );
    let mut bob = e.connect("walden", "bob", "").unwrap();
    let (k, m) = err(&mut bob, "ALTER TABLE owned OWNER TO bob");
    assert_eq!(
        (k, m.as_str()),
        (
            ErrorKind::InsufficientPrivilege,
            "must be owner of table owned"
        )
    );
    let (k, _) = err(&mut bob, "ALTER TABLE owned_seq OWNER TO bob");
    assert_eq!(k, ErrorKind::InsufficientPrivilege);
    rows(&mut admin, "ALTER TABLE IF EXISTS gone OWNER TO alice");
    // OWNED BY ties the sequence to the column, as PostgreSQL does (both
    // owned by alice); OWNER TO with another action is refused by name.
    rows(
        &mut admin,
        "ALTER SEQUENCE public.owned_seq OWNED BY public.owned.id",
    );
    assert_eq!(
        one(&mut admin, "SELECT pg_get_serial_sequence('owned', 'id')"),
        "public.owned_seq"
    );
    let (k, _) = err(
        &mut admin,
        "ALTER TABLE owned ADD COLUMN x int, OWNER TO bob",
    );
    assert_eq!(k, ErrorKind::FeatureNotSupported);
}

#[test]
fn pg_opclass_names_the_default_btree_classes() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    rows(
        &mut s,
        "CREATE TABLE oc (id int PRIMARY KEY, name varchar(10), at timestamptz, u uuid); \
         CREATE INDEX oc_name_at ON oc (name, at)",
    );
    // Alembic asks for the non-default classes: there are none.
    assert!(rows(
        &mut s,
        "SELECT oid, opcname FROM pg_catalog.pg_opclass WHERE NOT opcdefault"
    )
    .is_empty());
    // PostgreSQL 15's classes for the indexed columns (varchar uses text_ops).
    assert_eq!(
        one(
            &mut s,
            "SELECT i.indclass::text FROM pg_index i JOIN pg_class r ON r.oid = i.indexrelid \
             WHERE r.relname = 'oc_name_at'"
        ),
        "3126 3127"
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT opcname FROM pg_opclass WHERE oid IN (3126, 3127) ORDER BY oid"
        ),
        vec![vec!["text_ops"], vec!["timestamptz_ops"]]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT opcname FROM pg_opclass WHERE opcintype = 'uuid'::regtype AND opcmethod = \
             (SELECT oid FROM pg_am WHERE amname = 'btree')"
        ),
        "uuid_ops"
    );
}

#[test]
fn undefined_names_carry_postgresql_positions() {
    let e = engine();
    let mut s = e.connect("walden", "u", "").unwrap();
    rows(&mut s, "CREATE TABLE pos (id int PRIMARY KEY, name text)");
    // (statement, position PostgreSQL 15 reports)
    let cases: &[(&str, u32)] = &[
        ("SELECT nope FROM pos", 8),
        ("SELECT * FROM missing_t", 15),
        ("SELECT id FROM pos WHERE\n  nope = 1", 28),
        ("SELECT p.nope FROM pos p", 8),
        ("SELECT 1; SELECT nope FROM pos", 18),
        ("SELECT upper(name), nope AS x FROM pos AS nope2", 21),
        ("INSERT INTO missing_t VALUES (1)", 13),
        ("UPDATE pos SET name = 'nope' WHERE nope = 2", 36),
    ];
    for (sql, want) in cases {
        let err = s
            .execute_batch(sql)
            .into_iter()
            .find_map(|r| r.err())
            .unwrap_or_else(|| panic!("{sql} succeeded"));
        let got = err.fields.as_ref().and_then(|f| f.position);
        assert_eq!(got, Some(*want), "{sql}: {}", err.message);
    }
    // The extended protocol's Parse gets the same position.
    let err = s.prepare("SELECT nope FROM pos", &[]).err().unwrap();
    assert_eq!(err.fields.and_then(|f| f.position), Some(8));
}
