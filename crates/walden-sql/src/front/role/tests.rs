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
        p("ALTER ROLE a VALID UNTIL '2030-01-01'"),
        AccessStmt::AlterRole {
            name: "a".into(),
            opts: vec![RoleOpt::ValidUntil("2030-01-01".into())]
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
            all: false,
            grant_option: false,
            objects: Objects::Tables(vec!["t".into(), "u".into()]),
            grantees: vec!["alice".into(), "PUBLIC".into()],
            cascade: false,
        }
    );
    assert_eq!(
        p("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM bob CASCADE"),
        AccessStmt::Privileges {
            grant: false,
            bits: privs::ALL_TABLE,
            all: true,
            grant_option: false,
            objects: Objects::AllTables,
            grantees: vec!["bob".into()],
            cascade: true,
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
            all: true,
            grant_option: false,
            objects: Objects::PublicSchema,
            grantees: vec!["PUBLIC".into()],
            cascade: false,
        }
    );
    assert_eq!(
        p("GRANT create, USAGE ON SCHEMA public TO a"),
        AccessStmt::Privileges {
            grant: true,
            bits: privs::ALL_SCHEMA,
            all: false,
            grant_option: false,
            objects: Objects::PublicSchema,
            grantees: vec!["a".into()],
            cascade: false,
        }
    );
    assert_eq!(
        p("GRANT USAGE ON SCHEMA public TO a WITH GRANT OPTION"),
        AccessStmt::Privileges {
            grant: true,
            bits: privs::USAGE,
            all: false,
            grant_option: true,
            objects: Objects::PublicSchema,
            grantees: vec!["a".into()],
            cascade: false,
        }
    );
    assert_eq!(
        p("REVOKE GRANT OPTION FOR SELECT ON t FROM a RESTRICT"),
        AccessStmt::Privileges {
            grant: false,
            bits: privs::SELECT,
            all: false,
            grant_option: true,
            objects: Objects::Tables(vec!["t".into()]),
            grantees: vec!["a".into()],
            cascade: false,
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
            "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO a",
            ErrorKind::FeatureNotSupported,
        ),
    ] {
        let e = crate::front::parse(sql).unwrap_err();
        assert_eq!(e.kind, kind, "{sql}: {e}");
    }
    for refused in [
        "GRANT r TO a WITH ADMIN OPTION",
        "REVOKE ADMIN OPTION FOR r FROM a",
        "REVOKE GRANT OPTION FOR r FROM a",
        "GRANT SELECT ON t TO a GRANTED BY b",
        "GRANT SELECT (x) ON t TO a",
        "GRANT REFERENCES ON t TO a",
        "GRANT USAGE ON SEQUENCE s TO a",
        "ALTER ROLE a SET search_path = x",
    ] {
        let e = crate::front::parse(refused).unwrap_err();
        assert_eq!(e.kind, ErrorKind::FeatureNotSupported, "{refused}: {e}");
    }
}
