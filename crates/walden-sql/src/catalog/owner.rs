//! `ALTER TABLE name OWNER TO role` for tables and sequences (pg_dump writes
//! it for both). The owner lives in the instance's role catalog, as for
//! objects created by a role, so `pg_class.relowner`, psql `\d` and the
//! ownership checks of DDL and GRANT follow it. The checks are PostgreSQL's:
//! the current owner (or a superuser) may give the object away, to a role
//! it is a member of.

use crate::catalog::privileges::{denied, Who};
use crate::error::{ErrorKind, Result, SqlError};
use crate::query::object_last;
use crate::QueryOutput;
use sqlparser::ast::{self, AlterTableOperation as Op, Owner};
use walden_engine::roles::{privs, ObjKind};
use walden_engine::{Database, Instance, Transaction};

/// Whether the statement only changes the owner (other actions combined
/// with OWNER TO go to ALTER TABLE, which refuses OWNER TO there).
pub fn handles(at: &ast::AlterTable) -> bool {
    !at.operations.is_empty()
        && at
            .operations
            .iter()
            .all(|op| matches!(op, Op::OwnerTo { .. }))
}

pub fn alter_owner(
    who: &Who,
    instance: &Instance,
    db: &Database,
    tx: &mut Transaction,
    at: &ast::AlterTable,
) -> Result<QueryOutput> {
    let name = object_last(&at.name);
    let dbid = db.id();
    let (kind, id, shown) = if let Ok(t) = db.table_as(Some(tx.id()), &name) {
        (ObjKind::Table, t.id(), t.name().to_string())
    } else if let Some(s) = db
        .sequences()
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(&name))
    {
        (ObjKind::Sequence, s.id, s.name.clone())
    } else if at.if_exists {
        let mut out = QueryOutput::command("ALTER TABLE");
        out.notices
            .push(format!("relation \"{name}\" does not exist, skipping"));
        return Ok(out);
    } else {
        return Err(walden_engine::EngineError::UnknownTable(name).into());
    };
    for op in &at.operations {
        let Op::OwnerTo { new_owner } = op else {
            unreachable!("handles() admits OWNER TO only")
        };
        let role = match new_owner {
            Owner::Ident(id) => {
                let n = if id.quote_style.is_some() {
                    id.value.clone()
                } else {
                    id.value.to_ascii_lowercase()
                };
                who.cat.oid_of(&n).ok_or_else(|| {
                    SqlError::new(
                        ErrorKind::UndefinedObject,
                        format!("role \"{n}\" does not exist"),
                    )
                })?
            }
            Owner::CurrentRole | Owner::CurrentUser | Owner::SessionUser => who.oid,
        };
        if !who.owns(dbid, kind, id) {
            let what = match kind {
                ObjKind::Sequence => "sequence",
                _ => "table",
            };
            return Err(denied(format!("must be owner of {what} {shown}")));
        }
        if !who.has_privs_of(role) {
            return Err(denied(format!(
                "must be member of role \"{}\"",
                who.cat.name_of(role)
            )));
        }
        // The new owner must be able to create in the schema (PostgreSQL's
        // rule for a non-superuser giving an object away).
        if !who.superuser {
            let new_owner = Who::with(who.cat.clone(), role);
            if new_owner.schema_privileges(dbid) & privs::CREATE == 0 {
                return Err(crate::context::search_path::schema_denied());
            }
        }
        // Grants stay, the old owner's becoming the new owner's.
        instance.update_roles_in(tx, |c| -> Result<()> {
            c.change_owner(dbid, kind, id, role);
            Ok(())
        })?;
    }
    Ok(QueryOutput::command("ALTER TABLE"))
}

/// `ALTER DATABASE name OWNER TO role`, with PostgreSQL's checks: the
/// database's owner (or a superuser) gives it to a role it is a member of,
/// and needs CREATEDB. Its grants stay, the old owner's becoming the new
/// owner's; its `public` (owned by `pg_database_owner`) follows the owner.
pub fn alter_database_owner(
    who: &Who,
    instance: &Instance,
    tx: &mut Transaction,
    name: &str,
    owner: Option<&str>,
) -> Result<QueryOutput> {
    let d = instance.database(name).map_err(|_| {
        SqlError::new(
            ErrorKind::UndefinedDatabase,
            format!("database \"{name}\" does not exist"),
        )
    })?;
    let role = match owner {
        None => who.oid,
        Some(n) => who.cat.oid_of(n).ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedObject,
                format!("role \"{n}\" does not exist"),
            )
        })?,
    };
    let id = d.id();
    if who.cat.owner_of(id, ObjKind::Database, id) == role {
        return Ok(QueryOutput::command("ALTER DATABASE"));
    }
    if !who.superuser {
        if !who.owns(id, ObjKind::Database, id) {
            return Err(denied(format!("must be owner of database {}", d.name())));
        }
        if !who.cat.is_member_of(who.oid, role) {
            return Err(denied(format!(
                "must be member of role \"{}\"",
                who.cat.name_of(role)
            )));
        }
        if !who.cat.role_by_oid(who.oid).is_some_and(|r| r.createdb) {
            return Err(denied("permission denied to change owner of database"));
        }
    }
    instance.update_roles_in(tx, |c| -> Result<()> {
        c.change_owner(id, ObjKind::Database, id, role);
        Ok(())
    })?;
    Ok(QueryOutput::command("ALTER DATABASE"))
}
