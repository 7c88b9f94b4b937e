//! Statements about the one schema, `public`, that pg_dump writes for it:
//! `ALTER SCHEMA public OWNER TO r` and `COMMENT ON SCHEMA public IS '...'`.
//! Its owner (`pg_database_owner` at first, as in PostgreSQL 15) lives in
//! the role catalog and changes as PostgreSQL's does. Its comment is fixed,
//! so COMMENT is taken when it states the one it has and refused (0A000)
//! otherwise. Its privileges are in `catalog/roles.rs`.

use crate::catalog::privileges::Who;
use crate::error::{Result, SqlError};
use crate::QueryOutput;
use sqlparser::ast;

use crate::catalog::privileges::PUBLIC_SCHEMA;
use walden_engine::roles::ObjKind;
use walden_engine::{Instance, Transaction};

fn is_public(name: &ast::ObjectName) -> Result<()> {
    let n = crate::query::object_last(name);
    if n == "public" {
        Ok(())
    } else {
        Err(SqlError::new(
            crate::error::ErrorKind::UndefinedObject,
            format!("schema \"{n}\" does not exist"),
        ))
    }
}

/// Whether a schema name is `public`'s.
pub(crate) fn names_public(name: &ast::ObjectName) -> bool {
    crate::query::object_last(name) == "public"
}

fn require_owner(who: &Who, db: u32) -> Result<()> {
    if who.owns(db, ObjKind::Schema, PUBLIC_SCHEMA) {
        Ok(())
    } else {
        Err(SqlError::new(
            crate::error::ErrorKind::InsufficientPrivilege,
            "must be owner of schema public",
        ))
    }
}

/// `ALTER SCHEMA public OWNER TO r`, with PostgreSQL's checks: the owner
/// (or a superuser) gives it to a role it is a member of, and must be able
/// to create in the database (its owner's right; Walden grants no CREATE on
/// databases). Its grants stay, the old owner's becoming the new owner's.
pub(crate) fn alter_schema(
    who: &Who,
    instance: &Instance,
    db: u32,
    tx: &mut Transaction,
    a: &ast::AlterSchema,
) -> Result<QueryOutput> {
    is_public(&a.name)?;
    let [ast::AlterSchemaOperation::OwnerTo { owner: new }] = a.operations.as_slice() else {
        return Err(SqlError::unsupported(format!(
            "{a} (the one schema keeps its name and settings)"
        )));
    };
    let role = match new {
        ast::Owner::Ident(i) => {
            let n = crate::expr::fold_ident(i);
            who.cat.oid_of(&n).ok_or_else(|| {
                SqlError::new(
                    crate::error::ErrorKind::UndefinedObject,
                    format!("role \"{n}\" does not exist"),
                )
            })?
        }
        ast::Owner::CurrentRole | ast::Owner::CurrentUser | ast::Owner::SessionUser => who.oid,
    };
    // Giving it to its owner changes nothing and checks nothing.
    if who.cat.owner_of(db, ObjKind::Schema, PUBLIC_SCHEMA) == role {
        return Ok(QueryOutput::command("ALTER SCHEMA"));
    }
    if !who.superuser {
        require_owner(who, db)?;
        let member = who.cat.is_member_of(who.oid, role)
            || who.cat.effective_roles_in(who.oid, db).contains(&role);
        if !member {
            return Err(SqlError::new(
                crate::error::ErrorKind::InsufficientPrivilege,
                format!("must be member of role \"{}\"", who.cat.name_of(role)),
            ));
        }
        if !who.owns(db, ObjKind::Database, db) {
            let name = instance
                .database_by_id(db)
                .map_or_else(|| db.to_string(), |d| d.name().to_string());
            return Err(SqlError::new(
                crate::error::ErrorKind::InsufficientPrivilege,
                format!("permission denied for database {name}"),
            ));
        }
    }
    instance.update_roles_in(tx, |c| -> Result<()> {
        c.change_owner(db, ObjKind::Schema, PUBLIC_SCHEMA, role);
        Ok(())
    })?;
    Ok(QueryOutput::command("ALTER SCHEMA"))
}

/// `COMMENT ON SCHEMA public IS 'standard public schema'`: the comment it
/// has (PostgreSQL 15's); another, or none, cannot be kept.
pub(crate) fn comment_on_schema(
    who: &Who,
    db: u32,
    name: &ast::ObjectName,
    comment: Option<&str>,
) -> Result<QueryOutput> {
    is_public(name)?;
    require_owner(who, db)?;
    if comment != Some(crate::types::oids::PUBLIC_COMMENT) {
        return Err(SqlError::unsupported(format!(
            "COMMENT ON SCHEMA public other than '{}' (its comment is fixed)",
            crate::types::oids::PUBLIC_COMMENT
        )));
    }
    Ok(QueryOutput::command("COMMENT"))
}
