use super::*;

fn p(sql: &str) -> AccessStmt {
    match crate::front::parse(sql).unwrap() {
        Command::Access(s) => *s,
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn parses_roles_and_grants() {
    assert_eq!(
        p("CREATE USER Alice WITH PASSWORD 'x' CREATEDB"),
        AccessStmt::CreateRole {
            name: "alice".into(),
            opts: vec![
                RoleOpt::Login(true),
                RoleOpt::Password(Some("x".into())),
                RoleOpt::CreateDb(true)
            ]
        }
    );
    assert_eq!(
        p("create role r nologin nosuperuser connection limit 3"),
        AccessStmt::CreateRole {
            name: "r".into(),
            opts: vec![
                RoleOpt::Login(false),
                RoleOpt::Superuser(false),
                RoleOpt::ConnectionLimit(3)
            ]
        }
    );
    assert_eq!(
        p("GRANT SELECT, insert ON TABLE public.t, u TO alice, PUBLIC"),
        AccessStmt::Privileges {
            grant: true,
            bits: privs::SELECT | privs::INSERT,
            objects: Objects::Tables(vec!["t".into(), "u".into()]),
            grantees: vec!["alice".into(), "PUBLIC".into()],
        }
    );
    assert_eq!(
        p("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM bob CASCADE"),
        AccessStmt::Privileges {
            grant: false,
            bits: privs::ALL_TABLE,
            objects: Objects::AllTables,
            grantees: vec!["bob".into()],
        }
    );
    assert_eq!(
        p("GRANT pg_checkpoint TO alice"),
        AccessStmt::Membership {
            grant: true,
            roles: vec!["pg_checkpoint".into()],
            members: vec!["alice".into()],
        }
    );
    assert_eq!(
        p("DROP ROLE IF EXISTS a, b"),
        AccessStmt::DropRole {
            names: vec!["a".into(), "b".into()],
            if_exists: true
        }
    );
    assert_eq!(
        p("REVOKE ALL PRIVILEGES ON SCHEMA public FROM PUBLIC"),
        AccessStmt::Privileges {
            grant: false,
            bits: privs::ALL_SCHEMA,
            objects: Objects::PublicSchema,
            grantees: vec!["PUBLIC".into()],
        }
    );
    assert_eq!(
        p("GRANT create, USAGE ON SCHEMA public TO a"),
        AccessStmt::Privileges {
            grant: true,
            bits: privs::ALL_SCHEMA,
            objects: Objects::PublicSchema,
            grantees: vec!["a".into()],
        }
    );
    for (sql, kind) in [
        (
            "GRANT SELECT ON SCHEMA public TO a",
            ErrorKind::InvalidGrantOperation,
        ),
        (
            "GRANT USAGE ON SCHEMA other TO a",
            ErrorKind::InvalidSchemaName,
        ),
        ("GRANT CREATE ON t TO a", ErrorKind::FeatureNotSupported),
        (
            "GRANT USAGE ON SCHEMA public TO a WITH GRANT OPTION",
            ErrorKind::FeatureNotSupported,
        ),
        (
            "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO a",
            ErrorKind::FeatureNotSupported,
        ),
    ] {
        let e = crate::front::parse(sql).unwrap_err();
        assert_eq!(e.kind, kind, "{sql}: {e}");
    }
    for refused in [
        "GRANT SELECT ON t TO a WITH GRANT OPTION",
        "GRANT SELECT (x) ON t TO a",
        "CREATE ROLE a VALID UNTIL '2030-01-01'",
        "GRANT REFERENCES ON t TO a",
        "GRANT USAGE ON SEQUENCE s TO a",
        "ALTER ROLE a SET search_path = x",
    ] {
        let e = crate::front::parse(refused).unwrap_err();
        assert_eq!(e.kind, ErrorKind::FeatureNotSupported, "{refused}: {e}");
    }
}
