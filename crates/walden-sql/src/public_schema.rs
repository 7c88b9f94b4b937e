//! Statements about the one schema, `public`, that pg_dump writes for it:
//! `ALTER SCHEMA public OWNER TO r` and `COMMENT ON SCHEMA public IS '...'`.
//! Its owner (`pg_database_owner`, as in PostgreSQL 15) and its lack of a
//! comment are fixed, so each is taken when it states what already holds
//! and refused (0A000) otherwise. Its privileges are in `role_stmt`.

use crate::error::{Result, SqlError};
use crate::privileges::Who;
use crate::QueryOutput;
use sqlparser::ast;

use crate::privileges::PUBLIC_SCHEMA;
use walden_engine::roles::ObjKind;

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

/// `ALTER SCHEMA public OWNER TO r`: taken when `r` owns it already.
pub(crate) fn alter_schema(who: &Who, db: u32, a: &ast::AlterSchema) -> Result<QueryOutput> {
    is_public(&a.name)?;
    let owner = who
        .cat
        .name_of(who.cat.owner_of(db, ObjKind::Schema, PUBLIC_SCHEMA));
    let [ast::AlterSchemaOperation::OwnerTo { owner: new }] = a.operations.as_slice() else {
        return Err(SqlError::unsupported(format!(
            "{a} (the one schema keeps its name and settings)"
        )));
    };
    let named = match new {
        ast::Owner::Ident(i) => crate::expr::fold_ident(i),
        ast::Owner::CurrentRole | ast::Owner::CurrentUser | ast::Owner::SessionUser => who.name(),
    };
    require_owner(who, db)?;
    if named != owner {
        return Err(SqlError::unsupported(format!(
            "ALTER SCHEMA public OWNER TO {named} (public belongs to {owner})"
        )));
    }
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
    if comment != Some(crate::pg_catalog::PUBLIC_COMMENT) {
        return Err(SqlError::unsupported(format!(
            "COMMENT ON SCHEMA public other than '{}' (its comment is fixed)",
            crate::pg_catalog::PUBLIC_COMMENT
        )));
    }
    Ok(QueryOutput::command("COMMENT"))
}
