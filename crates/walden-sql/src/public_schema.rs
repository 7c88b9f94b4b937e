//! Statements about the one schema, `public`, that pg_dump writes for it:
//! `ALTER SCHEMA public OWNER TO r` and `COMMENT ON SCHEMA public IS ''`.
//! Its owner (the instance's first superuser) and its lack of a comment are
//! fixed, so each is taken when it states what already holds and refused
//! (0A000) otherwise. Its privileges are in `role_stmt/parse.rs`.

use crate::error::{Result, SqlError};
use crate::privileges::Who;
use crate::QueryOutput;
use sqlparser::ast;

/// The role that owns `public` (shown as its `nspowner`).
const PUBLIC_OWNER: u32 = 10;

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

fn require_owner(who: &Who) -> Result<()> {
    if who.superuser || who.oid == PUBLIC_OWNER {
        Ok(())
    } else {
        Err(SqlError::new(
            crate::error::ErrorKind::InsufficientPrivilege,
            "must be owner of schema public",
        ))
    }
}

/// `ALTER SCHEMA public OWNER TO r`: taken when `r` owns it already.
pub(crate) fn alter_schema(who: &Who, a: &ast::AlterSchema) -> Result<QueryOutput> {
    is_public(&a.name)?;
    let owner = who.cat.name_of(PUBLIC_OWNER);
    let [ast::AlterSchemaOperation::OwnerTo { owner: new }] = a.operations.as_slice() else {
        return Err(SqlError::unsupported(format!(
            "{a} (the one schema keeps its name and settings)"
        )));
    };
    let named = match new {
        ast::Owner::Ident(i) => crate::expr::fold_ident(i),
        ast::Owner::CurrentRole | ast::Owner::CurrentUser | ast::Owner::SessionUser => who.name(),
    };
    require_owner(who)?;
    if named != owner {
        return Err(SqlError::unsupported(format!(
            "ALTER SCHEMA public OWNER TO {named} (public belongs to {owner})"
        )));
    }
    Ok(QueryOutput::command("ALTER SCHEMA"))
}

/// `COMMENT ON SCHEMA public IS '' | NULL`: it has no comment.
pub(crate) fn comment_on_schema(
    who: &Who,
    name: &ast::ObjectName,
    comment: Option<&str>,
) -> Result<QueryOutput> {
    is_public(name)?;
    require_owner(who)?;
    if comment.is_some_and(|c| !c.is_empty()) {
        return Err(SqlError::unsupported(
            "COMMENT ON SCHEMA public with text (comments are not kept)",
        ));
    }
    Ok(QueryOutput::command("COMMENT"))
}
