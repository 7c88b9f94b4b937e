//! CREATE / ALTER / DROP ROLE (and USER, GROUP), GRANT and REVOKE: parsed
//! in `front/role.rs` (sqlparser's forms differ by dialect) and run against the instance's
//! role catalog (GRANT and REVOKE of privileges in `grant.rs`). What Walden
//! cannot honour (WITH ADMIN OPTION,
//! column privileges, GRANTED BY, ...) is refused with 0A000, never stored and ignored.

use crate::catalog::privileges::{denied, Who};
use crate::error::{ErrorKind, Result, SqlError};
use crate::QueryOutput;
use walden_engine::roles::{
    Membership, ObjKind, Role, RoleCatalog, BOOTSTRAP_OID, PG_DATABASE_OWNER, PREDEFINED, PUBLIC,
};
use walden_engine::scram::ScramVerifier;
use walden_engine::{Database, Instance, Transaction};

mod grant;

pub use crate::front::role::{AccessStmt, Objects, RoleOpt};

/// A role name from a statement: CURRENT_USER and SESSION_USER are the
/// session's role.
fn resolve(who: &Who, spec: &str) -> String {
    match spec {
        "CURRENT_USER" | "SESSION_USER" | "CURRENT_ROLE" => who.name(),
        other => other.to_string(),
    }
}

fn no_role(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedObject,
        format!("role \"{name}\" does not exist"),
    )
}

fn reserved(name: &str) -> Result<()> {
    if name.starts_with("pg_") {
        return Err(SqlError::new(
            ErrorKind::ReservedName,
            format!("role name \"{name}\" is reserved (names beginning with \"pg_\" are)"),
        ));
    }
    if name.eq_ignore_ascii_case("public") || name.eq_ignore_ascii_case("none") {
        return Err(SqlError::new(
            ErrorKind::ReservedName,
            format!("role name \"{name}\" is reserved"),
        ));
    }
    Ok(())
}

/// The verifier to store for a PASSWORD option: a SCRAM verifier given as
/// the password is stored as it is (as PostgreSQL does); anything else is
/// hashed. The empty string clears the password, with a notice.
fn verifier(pw: &Option<String>, notices: &mut Vec<String>) -> Result<Option<String>> {
    match pw {
        None => Ok(None),
        Some(p) if p.is_empty() => {
            notices.push("empty string is not a valid password, clearing password".into());
            Ok(None)
        }
        Some(p) if ScramVerifier::is_verifier_text(p) => match ScramVerifier::parse(p) {
            Some(v) => Ok(Some(v.to_string())),
            // Not a well-formed verifier: a password that happens to start
            // like one, hashed like any other (PostgreSQL's rule).
            None => Ok(Some(ScramVerifier::new(p).to_string())),
        },
        Some(p) if p.len() == 35 && p.starts_with("md5") => Err(SqlError::unsupported(
            "MD5 password hashes (Walden authenticates with SCRAM-SHA-256 only)",
        )),
        Some(p) => Ok(Some(ScramVerifier::new(p).to_string())),
    }
}

/// `VALID UNTIL 'text'`: an instant (in the session's time zone unless the
/// text names one), or `infinity` for no expiry.
fn valid_until(s: &str) -> Result<Option<i64>> {
    if s.trim().eq_ignore_ascii_case("infinity") {
        return Ok(None);
    }
    walden_engine::types::datetime::parse_timestamptz(s)
        .map(Some)
        .ok_or_else(|| {
            SqlError::new(
                ErrorKind::InvalidText,
                format!("invalid input syntax for type timestamp with time zone: \"{s}\""),
            )
        })
}

/// Applies options to a role, checking who may set them.
fn apply(
    who: &Who,
    role: &mut Role,
    opts: &[RoleOpt],
    creating: bool,
    notices: &mut Vec<String>,
) -> Result<()> {
    for o in opts {
        match o {
            RoleOpt::Superuser(v) => {
                who.require_superuser(if *v {
                    "create or alter superusers"
                } else {
                    "alter superusers"
                })?;
                if !v && role.oid == BOOTSTRAP_OID {
                    return Err(denied(
                        "permission denied: bootstrap user must be superuser",
                    ));
                }
                role.superuser = *v;
            }
            RoleOpt::Replication(v) => {
                who.require_superuser("create or alter replication users")?;
                role.replication = *v;
            }
            RoleOpt::BypassRls(v) => {
                who.require_superuser("change bypassrls attribute")?;
                role.bypassrls = *v;
            }
            RoleOpt::CreateDb(v) => role.createdb = *v,
            RoleOpt::CreateRole(v) => role.createrole = *v,
            RoleOpt::Inherit(v) => role.inherit = *v,
            RoleOpt::Login(v) => role.login = *v,
            RoleOpt::ConnectionLimit(n) => role.connection_limit = *n,
            RoleOpt::Password(p) => role.password = verifier(p, notices)?,
            RoleOpt::ValidUntil(s) => role.valid_until = valid_until(s)?,
            RoleOpt::InRole(_) | RoleOpt::Members(_) => {
                debug_assert!(creating);
            }
        }
    }
    Ok(())
}

/// Runs a role or grant statement as `who`, in `tx` (role changes are
/// transactional: see `walden_engine::Instance::update_roles_in`).
pub fn execute(
    who: &Who,
    instance: &Instance,
    db: &Database,
    tx: &mut Transaction,
    session_role: u32,
    stmt: &AccessStmt,
) -> Result<QueryOutput> {
    let mut notices = Vec::new();
    let tag = match stmt {
        AccessStmt::CreateRole { name, opts } => {
            who.require_createrole("create role")?;
            reserved(name)?;
            let mut role = Role::new(0, name);
            apply(who, &mut role, opts, true, &mut notices)?;
            instance.update_roles_in(tx, |c| -> Result<()> {
                if c.oid_of(name).is_some() {
                    return Err(dup_role(name));
                }
                let mut groups = Vec::new();
                let mut members = Vec::new();
                for o in opts {
                    match o {
                        RoleOpt::InRole(rs) => {
                            for r in rs {
                                groups.push(c.oid_of(r).ok_or_else(|| no_role(r))?);
                            }
                        }
                        RoleOpt::Members(rs) => {
                            for r in rs {
                                members.push(c.oid_of(r).ok_or_else(|| no_role(r))?);
                            }
                        }
                        _ => {}
                    }
                }
                let oid = c.create_role(role).map_err(|_| dup_role(name))?;
                for g in groups {
                    c.members.push(Membership {
                        role: g,
                        member: oid,
                    });
                }
                for m in members {
                    c.members.push(Membership {
                        role: oid,
                        member: m,
                    });
                }
                Ok(())
            })?;
            "CREATE ROLE"
        }
        AccessStmt::AlterRole { name, opts } => {
            let name = resolve(who, name);
            instance.update_roles_in(tx, |c| -> Result<()> {
                let role = c.role(&name).ok_or_else(|| no_role(&name))?.clone();
                let own_password_only =
                    role.oid == who.oid && opts.iter().all(|o| matches!(o, RoleOpt::Password(_)));
                if !own_password_only {
                    if role.superuser {
                        who.require_superuser("alter superusers")?;
                    }
                    who.require_createrole("alter role")?;
                }
                let mut updated = role.clone();
                apply(who, &mut updated, opts, false, &mut notices)?;
                let slot = c
                    .roles
                    .iter_mut()
                    .find(|r| r.oid == role.oid)
                    .expect("found");
                *slot = updated;
                Ok(())
            })?;
            "ALTER ROLE"
        }
        AccessStmt::RenameRole { name, to } => {
            let name = resolve(who, name);
            reserved(to)?;
            instance.update_roles_in(tx, |c| -> Result<()> {
                let role = c.role(&name).ok_or_else(|| no_role(&name))?.clone();
                if role.oid == session_role {
                    return Err(SqlError::new(
                        ErrorKind::FeatureNotSupported,
                        "session user cannot be renamed",
                    ));
                }
                if role.superuser {
                    who.require_superuser("rename superusers")?;
                }
                who.require_createrole("rename role")?;
                if c.oid_of(to).is_some() {
                    return Err(dup_role(to));
                }
                let slot = c
                    .roles
                    .iter_mut()
                    .find(|r| r.oid == role.oid)
                    .expect("found");
                slot.name = to.clone();
                Ok(())
            })?;
            "ALTER ROLE"
        }
        AccessStmt::DropRole { names, if_exists } => {
            who.require_createrole("drop role")?;
            instance.update_roles_in(tx, |c| -> Result<()> {
                for name in names {
                    let Some(role) = c.role(name).cloned() else {
                        if PREDEFINED.iter().any(|(_, n)| n == name) {
                            return Err(denied(format!(
                                "cannot drop role {name} because it is required by the database system"
                            )));
                        }
                        if *if_exists {
                            notices.push(format!("role \"{name}\" does not exist, skipping"));
                            continue;
                        }
                        return Err(no_role(name));
                    };
                    if role.oid == BOOTSTRAP_OID {
                        return Err(SqlError::new(
                            ErrorKind::DependentObjects,
                            format!("cannot drop role {name} because it is required by the database system"),
                        ));
                    }
                    if role.oid == who.oid {
                        return Err(SqlError::new(
                            ErrorKind::ObjectInUse,
                            "current user cannot be dropped",
                        ));
                    }
                    if role.oid == session_role {
                        return Err(SqlError::new(
                            ErrorKind::ObjectInUse,
                            "session user cannot be dropped",
                        ));
                    }
                    if role.superuser {
                        who.require_superuser("drop superusers")?;
                    }
                    let deps = dependencies(c, instance, role.oid);
                    if !deps.is_empty() {
                        return Err(SqlError::new(
                            ErrorKind::DependentObjects,
                            format!(
                                "role \"{name}\" cannot be dropped because some objects depend on it: {}",
                                deps.join(", ")
                            ),
                        ));
                    }
                    c.drop_role(role.oid);
                }
                Ok(())
            })?;
            "DROP ROLE"
        }
        AccessStmt::Privileges { .. } => {
            let mut out = grant::privileges(who, instance, db, tx, stmt)?;
            out.notices.append(&mut notices);
            return Ok(out);
        }
        AccessStmt::Membership {
            grant,
            roles,
            members,
        } => {
            let tag = if *grant { "GRANT ROLE" } else { "REVOKE ROLE" };
            let members: Vec<String> = members.iter().map(|m| resolve(who, m)).collect();
            instance.update_roles_in(tx, |c| -> Result<()> {
                for r in roles {
                    let role = c.oid_of(r).ok_or_else(|| no_role(r))?;
                    // Membership in it is owning the database (PostgreSQL
                    // refuses with XX000; 0LP01 says what it is).
                    if role == PG_DATABASE_OWNER {
                        return Err(SqlError::new(
                            ErrorKind::InvalidGrantOperation,
                            "role \"pg_database_owner\" cannot have explicit members",
                        ));
                    }
                    if c.is_superuser(role) {
                        who.require_superuser("grant or revoke membership in a superuser role")?;
                    }
                    who.require_createrole("grant or revoke role membership")?;
                    for m in &members {
                        if m == "PUBLIC" {
                            return Err(SqlError::new(
                                ErrorKind::InvalidGrantOperation,
                                "role membership cannot be granted to PUBLIC",
                            ));
                        }
                        let member = c.oid_of(m).ok_or_else(|| no_role(m))?;
                        if member == PG_DATABASE_OWNER {
                            return Err(SqlError::new(
                                ErrorKind::InvalidGrantOperation,
                                "role \"pg_database_owner\" cannot be a member of any role",
                            ));
                        }
                        let exists = c
                            .members
                            .iter()
                            .any(|x| x.role == role && x.member == member);
                        if *grant {
                            if c.is_member_of(role, member) {
                                return Err(SqlError::new(
                                    ErrorKind::InvalidGrantOperation,
                                    format!("role \"{m}\" is a member of role \"{r}\""),
                                ));
                            }
                            if exists {
                                notices.push(format!(
                                    "role \"{m}\" is already a member of role \"{r}\""
                                ));
                            } else {
                                c.members.push(Membership { role, member });
                            }
                        } else if exists {
                            c.members
                                .retain(|x| !(x.role == role && x.member == member));
                        } else {
                            notices.push(format!("role \"{m}\" is not a member of role \"{r}\""));
                        }
                    }
                }
                Ok(())
            })?;
            tag
        }
    };
    let mut out = QueryOutput::command(tag);
    out.notices = notices;
    Ok(out)
}

fn dup_role(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::DuplicateObject,
        format!("role \"{name}\" already exists"),
    )
}

/// What keeps a role from being dropped, as PostgreSQL lists it: objects it
/// owns and privileges granted to it (on objects that still exist).
fn dependencies(c: &RoleCatalog, instance: &Instance, oid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for a in &c.acls {
        let Some(d) = instance.database_by_id(a.db) else {
            continue;
        };
        let what = match a.kind {
            ObjKind::Database => Some(format!("database {}", d.name())),
            ObjKind::Table => d
                .tables()
                .iter()
                .find(|t| t.id() == a.id)
                .map(|t| format!("table {}", t.name())),
            ObjKind::Sequence => d
                .sequences()
                .iter()
                .find(|s| s.id == a.id)
                .map(|s| format!("sequence {}", s.name)),
            ObjKind::Schema => Some("schema public".to_string()),
        };
        let Some(what) = what else { continue };
        if a.owner == oid {
            out.push(format!("owner of {what}"));
        } else if a
            .grants
            .as_ref()
            .is_some_and(|g| g.iter().any(|i| i.grantee == oid || i.grantor == Some(oid)))
        {
            out.push(format!("privileges for {what}"));
        }
    }
    out
}

#[cfg(test)]
mod valid_until_tests {
    #[test]
    fn instants_and_infinity() {
        assert_eq!(super::valid_until("infinity").unwrap(), None);
        assert_eq!(
            super::valid_until("2001-02-03 00:00:00+00").unwrap(),
            Some(981_158_400_000_000)
        );
        assert!(super::valid_until("someday").is_err());
    }
}
