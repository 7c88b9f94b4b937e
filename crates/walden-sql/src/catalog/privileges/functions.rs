//! The privilege functions (`has_table_privilege` and friends,
//! `pg_has_role`, `pg_get_userbyid`) and the catalog rows of roles,
//! memberships and table ACLs.

use super::*;
use crate::functions::PrivFn;
use walden_engine::Value;

// --- Privilege functions --------------------------------------------------------

fn text_of(v: &Value) -> String {
    match v {
        Value::Text(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// A role argument: a name or an OID.
fn role_arg(cat: &RoleCatalog, v: &Value) -> Result<u32> {
    match v {
        Value::Int(i) => u32::try_from(*i)
            .ok()
            .filter(|o| cat.role_by_oid(*o).is_some() || *o == 0)
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!("role with OID {i} does not exist"),
                )
            }),
        v => {
            let n = text_of(v);
            if n.eq_ignore_ascii_case("public") {
                return Ok(walden_engine::roles::PUBLIC);
            }
            cat.oid_of(&n).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!("role \"{n}\" does not exist"),
                )
            })
        }
    }
}

/// A schema argument (a name or an OID): `Some(true)` for `public`,
/// `Some(false)` for a catalog schema, `None` for an OID of none (NULL, as
/// PostgreSQL); 3F000 for an unknown name.
fn schema_arg(v: &Value) -> Result<Option<bool>> {
    let public = PUBLIC_SCHEMA as i64;
    match v {
        Value::Int(i) => {
            let known = crate::types::oids::regnamespace_name(*i) != i.to_string();
            Ok(known.then_some(*i == public))
        }
        v => match crate::types::oids::regnamespace_lookup(&text_of(v))? {
            Value::Int(oid) => Ok(Some(oid == public)),
            _ => Ok(None),
        },
    }
}

/// Privilege names, `'SELECT, INSERT'` meaning any of them (PostgreSQL's
/// rule): the privileges asked for, and those asked for `WITH GRANT
/// OPTION` (which ask for the grant option alone).
fn priv_bits(s: &str, allowed: &[(&str, u8)]) -> Result<(u8, u8)> {
    let (mut bits, mut options) = (0, 0);
    for part in s.split(',') {
        let p = part.trim().to_ascii_uppercase();
        let (p, with_option) = match p.strip_suffix(" WITH GRANT OPTION") {
            Some(base) => (base.trim().to_string(), true),
            None => (p.clone(), false),
        };
        match allowed.iter().find(|(n, _)| *n == p) {
            Some((_, b)) if with_option => options |= b,
            Some((_, b)) => bits |= b,
            None if p == "REFERENCES"
                || p == "TRIGGER"
                || (p == "CREATE" && !allowed.iter().any(|(n, _)| *n == "USAGE"))
                || p == "TEMPORARY"
                || p == "TEMP" => {}
            None => {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("unrecognized privilege type: \"{}\"", part.trim()),
                ))
            }
        }
    }
    Ok((bits, options))
}

const TABLE_PRIVS: &[(&str, u8)] = &[
    ("SELECT", privs::SELECT),
    ("INSERT", privs::INSERT),
    ("UPDATE", privs::UPDATE),
    ("DELETE", privs::DELETE),
    ("TRUNCATE", privs::TRUNCATE),
];

pub fn call(f: PrivFn, a: &[Value], env: &crate::functions::Env<'_>) -> Result<Value> {
    if a.iter().any(|v| v.is_null()) {
        return Ok(Value::Null);
    }
    let cat = env.instance.roles_for(env.tx);
    if f == PrivFn::UserById {
        let oid = a.first().and_then(|v| v.as_i64()).unwrap_or(-1);
        return Ok(match u32::try_from(oid) {
            Ok(o) => Value::text(cat.name_of(o)),
            Err(_) => Value::text(format!("unknown (OID={oid})")),
        });
    }
    let want = match f {
        PrivFn::Column => 3,
        _ => 2,
    };
    let (user, rest) = if a.len() > want {
        (role_arg(&cat, &a[0])?, &a[1..])
    } else {
        (env.info.role, a)
    };
    if rest.len() != want {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "privilege function with {} arguments does not exist",
                a.len()
            ),
        ));
    }
    let who = Who {
        oid: user,
        superuser: cat.is_superuser(user),
        cat: cat.clone(),
    };
    let privilege = text_of(&rest[want - 1]);
    let dbid = env.info.database_id;
    let ok = match f {
        PrivFn::Table | PrivFn::Column => {
            let db = env
                .instance
                .database_by_id(dbid)
                .ok_or_else(|| SqlError::internal("the session's database is gone"))?;
            let table = match &rest[0] {
                Value::Int(oid) => db
                    .tables()
                    .into_iter()
                    .find(|t| crate::types::oids::table_oid(t.id()) == *oid),
                v => {
                    let n = text_of(v);
                    let last = n
                        .rsplit('.')
                        .next()
                        .unwrap_or(&n)
                        .trim_matches('"')
                        .to_string();
                    Some(db.table(&last)?)
                }
            };
            let Some(table) = table else {
                return Ok(Value::Null);
            };
            let (bits, options) = priv_bits(&privilege, TABLE_PRIVS)?;
            who.table_privileges(dbid, ObjKind::Table, table.id()) & bits != 0
                || who.grant_options(dbid, ObjKind::Table, table.id()) & options != 0
        }
        PrivFn::Database => {
            let d = match &rest[0] {
                Value::Int(i) => u32::try_from(*i)
                    .ok()
                    .and_then(|i| env.instance.database_by_id(i)),
                v => env.instance.database(&text_of(v)).ok(),
            }
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedDatabase,
                    format!("database \"{}\" does not exist", text_of(&rest[0])),
                )
            })?;
            let (bits, options) = priv_bits(&privilege, &[("CONNECT", privs::CONNECT)])?;
            (bits != 0 && who.can_connect(d.id()))
                || who.grant_options(d.id(), ObjKind::Database, d.id()) & options != 0
        }
        PrivFn::Schema => {
            let (bits, options) = priv_bits(
                &privilege,
                &[("USAGE", privs::USAGE), ("CREATE", privs::CREATE)],
            )?;
            match schema_arg(&rest[0])? {
                // The catalog schemas: every role uses them, only
                // superusers create (as they may anything) or grant.
                Some(false) => who.superuser || bits & privs::USAGE != 0,
                Some(true) => {
                    bits & who.schema_privileges(dbid) != 0
                        || who.grant_options(dbid, ObjKind::Schema, PUBLIC_SCHEMA) & options != 0
                }
                None => return Ok(Value::Null),
            }
        }
        PrivFn::Role => {
            let role = role_arg(&cat, &rest[0])?;
            let p = privilege.to_ascii_uppercase();
            if p.contains("USAGE") {
                who.has_privs_of(role)
            } else {
                who.superuser || cat.is_member_of(user, role)
            }
        }
        PrivFn::UserById => unreachable!("handled above"),
    };
    Ok(Value::Bool(ok))
}

// --- Catalog rows ---------------------------------------------------------------

/// `pg_authid` / `pg_roles` / `pg_user` rows (one shape, as Walden's view):
/// oid, rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb,
/// rolcanlogin, rolreplication, rolconnlimit, rolpassword, rolvaliduntil,
/// rolbypassrls, rolconfig. The password (a verifier) only in `pg_authid`
/// and only to superusers, as PostgreSQL: `pg_roles` shows `********`.
pub fn role_rows(env: &crate::functions::Env<'_>, show_verifier: bool) -> Result<Vec<Vec<Value>>> {
    let cat = env.instance.roles_for(env.tx);
    let who_super = cat.is_superuser(env.info.role);
    if show_verifier && !who_super {
        return Err(denied("permission denied for table pg_authid"));
    }
    let b = Value::Bool;
    let mut out = Vec::new();
    for r in &cat.roles {
        let pw = match (&r.password, show_verifier) {
            (Some(v), true) => Value::text(v),
            (Some(_), false) => Value::text("********"),
            (None, _) => Value::Null,
        };
        out.push(vec![
            Value::Int(r.oid as i64),
            Value::text(&r.name),
            b(r.superuser),
            b(r.inherit),
            b(r.createrole),
            b(r.createdb),
            b(r.login),
            b(r.replication),
            Value::Int(r.connection_limit as i64),
            pw,
            r.valid_until.map_or(Value::Null, Value::TimestampTz),
            b(r.bypassrls),
            Value::Null,
        ]);
    }
    for (oid, name) in walden_engine::roles::PREDEFINED {
        out.push(vec![
            Value::Int(*oid as i64),
            Value::text(name),
            b(false),
            b(true),
            b(false),
            b(false),
            b(false),
            b(false),
            Value::Int(-1),
            Value::Null,
            Value::Null,
            b(false),
            Value::Null,
        ]);
    }
    Ok(out)
}

/// `pg_auth_members`: oid, roleid, member, grantor, admin_option.
pub fn member_rows(env: &crate::functions::Env<'_>) -> Vec<Vec<Value>> {
    let cat = env.instance.roles_for(env.tx);
    cat.members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            vec![
                Value::Int(i as i64 + 1),
                Value::Int(m.role as i64),
                Value::Int(m.member as i64),
                Value::Int(BOOTSTRAP_OID as i64),
                Value::Bool(false),
            ]
        })
        .collect()
}

/// `pg_class.relacl` and `relowner` of a table.
pub fn table_acl(env: &crate::functions::Env<'_>, table: u32) -> (Value, i64) {
    let cat = env.instance.roles_for(env.tx);
    let db = env.info.database_id;
    let acl = cat
        .acl_text(db, ObjKind::Table, table)
        .map(Value::text)
        .unwrap_or(Value::Null);
    (acl, cat.owner_of(db, ObjKind::Table, table) as i64)
}
