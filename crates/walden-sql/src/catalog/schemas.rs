//! `CREATE SCHEMA`, `DROP SCHEMA`, `ALTER SCHEMA` of schemas other than
//! `public` (whose statements are in `public_schema.rs`). A schema is an
//! engine catalog entry (`walden_engine::namespace`); its objects are
//! engine objects named `schema` U+001F `name`, which the search path
//! (`context/search_path.rs`) resolves names to.

use crate::catalog::privileges::Who;
use crate::error::{ErrorKind, Result, SqlError};
use crate::QueryOutput;
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::namespace::{split_engine_name, SCHEMA_SEP};
use walden_engine::roles::ObjKind;
use walden_engine::{Database, EngineError, Transaction};

fn reserved(name: &str) -> bool {
    matches!(
        name,
        "public" | "pg_catalog" | "information_schema" | "pg_toast" | "dbo" | "sys"
    ) || name.starts_with("pg_")
}

fn no_schema(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidSchemaName,
        format!("schema \"{name}\" does not exist"),
    )
}

fn role_named(who: &Who, i: &ast::Ident) -> Result<u32> {
    let n = crate::expr::fold_ident(i);
    who.cat.oid_of(&n).ok_or_else(|| {
        SqlError::new(
            ErrorKind::UndefinedObject,
            format!("role \"{n}\" does not exist"),
        )
    })
}

/// `CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role]` and
/// `CREATE SCHEMA AUTHORIZATION role` (the schema takes the role's name).
pub(crate) fn create_schema(
    who: &Who,
    db: &Arc<Database>,
    tx: &mut Transaction,
    schema_name: &ast::SchemaName,
    if_not_exists: bool,
) -> Result<QueryOutput> {
    let (name, owner) = match schema_name {
        ast::SchemaName::Simple(n) => (schema_ident(n)?, who.oid),
        ast::SchemaName::UnnamedAuthorization(r) => {
            (crate::expr::fold_ident(r), role_named(who, r)?)
        }
        ast::SchemaName::NamedAuthorization(n, r) => (schema_ident(n)?, role_named(who, r)?),
    };
    // PostgreSQL: CREATE on the database (its owner's; Walden grants no
    // CREATE on databases), and membership in the new owner.
    if !who.superuser {
        if !who.owns(db.id(), ObjKind::Database, db.id()) {
            return Err(SqlError::new(
                ErrorKind::InsufficientPrivilege,
                format!("permission denied for database {}", db.name()),
            ));
        }
        if !who.has_privs_of(owner) {
            return Err(SqlError::new(
                ErrorKind::InsufficientPrivilege,
                format!("must be able to SET ROLE \"{}\"", who.cat.name_of(owner)),
            ));
        }
    }
    if name.contains(SCHEMA_SEP) {
        return Err(SqlError::unsupported("schema names containing U+001F"));
    }
    let exists = name == "public" || db.schemas_as(Some(tx.id())).iter().any(|s| s.name == name);
    if exists {
        if if_not_exists {
            let mut out = QueryOutput::command("CREATE SCHEMA");
            out.notices
                .push(format!("schema \"{name}\" already exists, skipping"));
            return Ok(out);
        }
        return Err(SqlError::new(
            ErrorKind::DuplicateSchema,
            format!("schema \"{name}\" already exists"),
        ));
    }
    if reserved(&name) {
        return Err(SqlError::new(
            ErrorKind::ReservedName,
            format!("unacceptable schema name \"{name}\""),
        )
        .with_fields(crate::error::ErrorFields {
            detail: Some("The prefix \"pg_\" is reserved for system schemas.".into()),
            ..Default::default()
        }));
    }
    tx.create_schema(&name, owner)?;
    Ok(QueryOutput::command("CREATE SCHEMA"))
}

fn schema_ident(n: &ast::ObjectName) -> Result<String> {
    match n.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => Ok(crate::expr::fold_ident(i)),
        _ => Err(SqlError::syntax(format!("improper schema name: {n}"))),
    }
}

/// Whether `who` owns schema `owner` owns (or is a superuser).
fn require_owner(who: &Who, owner: u32, name: &str) -> Result<()> {
    if who.has_privs_of(owner) {
        Ok(())
    } else {
        Err(SqlError::new(
            ErrorKind::InsufficientPrivilege,
            format!("must be owner of schema {name}"),
        ))
    }
}

/// What schema `schema` holds, as `(kind, engine name)` in the order a
/// cascade drops them: views, tables (their indexes and owned sequences
/// go with them), sequences, types.
fn contents(db: &Database, tx: &Transaction, schema: &str) -> Vec<(&'static str, String, u32)> {
    let mine = |n: &str| split_engine_name(n).0 == schema;
    let txid = Some(tx.id());
    let mut out = Vec::new();
    for v in db.user_views_as(txid) {
        if mine(&v.name) {
            out.push(("view", v.name.clone(), v.id));
        }
    }
    for t in db.tables_as(txid) {
        if mine(t.name()) {
            out.push(("table", t.name().to_string(), t.id()));
        }
    }
    for s in db.sequences() {
        if mine(&s.name) {
            out.push(("sequence", s.name.clone(), s.id));
        }
    }
    for e in db.enum_types_as(txid) {
        if mine(&e.name) {
            out.push(("type", e.name.clone(), e.id));
        }
    }
    out
}

/// `DROP SCHEMA [IF EXISTS] a, b [CASCADE | RESTRICT]`.
pub(crate) fn drop_schemas(
    who: &Who,
    db: &Arc<Database>,
    tx: &mut Transaction,
    names: &[ast::ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<QueryOutput> {
    let mut out = QueryOutput::command("DROP SCHEMA");
    for n in names {
        let name = schema_ident(n)?;
        if name == "public" {
            return Err(SqlError::unsupported(
                "DROP SCHEMA public (the schema every database keeps)",
            ));
        }
        let Some(def) = db
            .schemas_as(Some(tx.id()))
            .into_iter()
            .find(|s| s.name == name)
        else {
            if if_exists {
                out.notices
                    .push(format!("schema \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(no_schema(&name));
        };
        require_owner(who, def.owner, &name)?;
        let held = contents(db, tx, &name);
        if !held.is_empty() && !cascade {
            // In creation order, as PostgreSQL lists them.
            let mut listed = held.clone();
            listed.sort_by_key(|h| h.2);
            let detail = listed
                .iter()
                .map(|(k, e, _)| format!("{k} {} depends on schema {name}", shown(e)))
                .collect::<Vec<_>>()
                .join("\n");
            return Err(SqlError::new(
                ErrorKind::DependentObjects,
                format!("cannot drop schema {name} because other objects depend on it"),
            )
            .with_fields(crate::error::ErrorFields {
                detail: Some(detail),
                hint: Some("Use DROP ... CASCADE to drop the dependent objects too.".into()),
                ..Default::default()
            }));
        }
        match held.len() {
            0 => {}
            1 => out.notices.push(format!(
                "drop cascades to {} {}",
                held[0].0,
                shown(&held[0].1)
            )),
            k => out
                .notices
                .push(format!("drop cascades to {k} other objects")),
        }
        for (kind, e, _) in &held {
            let obj = ast::ObjectName::from(vec![ast::Ident::with_quote('"', e.as_str())]);
            let ty = match *kind {
                "view" => ast::ObjectType::View,
                "table" => ast::ObjectType::Table,
                "sequence" => ast::ObjectType::Sequence,
                _ => ast::ObjectType::Type,
            };
            // Earlier drops may have taken it along (a table's sequence, a
            // view reading a table).
            crate::catalog::ddl::drop(db, tx, &ty, true, &[obj], true)?;
        }
        tx.drop_schema(&name).map_err(|e| match e {
            EngineError::UnknownTable(_) => no_schema(&name),
            e => e.into(),
        })?;
    }
    Ok(out)
}

/// `ALTER SCHEMA s OWNER TO r` and `ALTER SCHEMA s RENAME TO n` (of an
/// empty schema: its objects' engine names carry the schema's name).
pub(crate) fn alter_schema(
    who: &Who,
    db: &Arc<Database>,
    tx: &mut Transaction,
    a: &ast::AlterSchema,
) -> Result<QueryOutput> {
    let name = schema_ident(&a.name)?;
    let Some(def) = db
        .schemas_as(Some(tx.id()))
        .into_iter()
        .find(|s| s.name == name)
    else {
        return Err(no_schema(&name));
    };
    require_owner(who, def.owner, &name)?;
    match a.operations.as_slice() {
        [ast::AlterSchemaOperation::OwnerTo { owner }] => {
            let role = match owner {
                ast::Owner::Ident(i) => role_named(who, i)?,
                _ => who.oid,
            };
            if !who.has_privs_of(role) {
                return Err(SqlError::new(
                    ErrorKind::InsufficientPrivilege,
                    format!("must be able to SET ROLE \"{}\"", who.cat.name_of(role)),
                ));
            }
            tx.alter_schema_owner(&name, role)?;
        }
        [ast::AlterSchemaOperation::Rename { name: to }] => {
            let to = schema_ident(to)?;
            if !contents(db, tx, &name).is_empty() {
                return Err(SqlError::unsupported(
                    "ALTER SCHEMA ... RENAME TO of a schema holding objects",
                ));
            }
            if to == "public" || db.schemas_as(Some(tx.id())).iter().any(|s| s.name == to) {
                return Err(SqlError::new(
                    ErrorKind::DuplicateSchema,
                    format!("schema \"{to}\" already exists"),
                ));
            }
            if reserved(&to) {
                return Err(SqlError::new(
                    ErrorKind::ReservedName,
                    format!("unacceptable schema name \"{to}\""),
                ));
            }
            tx.drop_schema(&name)?;
            tx.create_schema(&to, def.owner)?;
        }
        _ => return Err(SqlError::unsupported(format!("{a}"))),
    }
    Ok(QueryOutput::command("ALTER SCHEMA"))
}

/// An engine name as PostgreSQL shows it: `schema.name`, or the bare name
/// of a `public` object.
pub fn shown(e: &str) -> String {
    match split_engine_name(e) {
        ("public", n) => n.to_string(),
        (s, n) => format!("{s}.{n}"),
    }
}

/// The OID of a schema made by CREATE SCHEMA (its id's block holds no
/// table: the id comes from the tables' id space).
pub fn schema_oid(id: u32) -> i64 {
    crate::types::oids::user_oid(id, crate::types::oids::SLOT_TABLE)
}

/// The schema OID and bare name of an engine name, with `path`'s schemas.
pub fn namespace_of<'a>(
    path: &crate::context::search_path::SearchPath,
    e: &'a str,
) -> (i64, &'a str) {
    match split_engine_name(e) {
        ("public", n) => (crate::types::oids::NS_PUBLIC, n),
        (s, n) => (
            path.namespaces()
                .find(s)
                .map_or(crate::types::oids::NS_PUBLIC, |u| schema_oid(u.id)),
            n,
        ),
    }
}
