//! Enum types: `CREATE TYPE name AS ENUM (...)`, `DROP TYPE`, `ALTER TYPE`
//! (ADD VALUE, RENAME VALUE, RENAME TO). The engine keeps the definitions
//! and applies them transactionally; this is the statements' SQL side.

use crate::error::{ErrorKind, Result, SqlError};
use crate::query::object_last;
use crate::QueryOutput;
use sqlparser::ast;
use walden_engine::{EngineError, Transaction};

/// A label as written: PostgreSQL takes only string literals.
fn label(i: &ast::Ident) -> Result<String> {
    if i.quote_style != Some('\'') {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            i.value
        )));
    }
    Ok(i.value.clone())
}

/// `CREATE TYPE name AS ENUM ('a', 'b', ...)`; other kinds of CREATE TYPE
/// are refused.
pub fn create_type(
    tx: &Transaction,
    name: &ast::ObjectName,
    representation: &Option<ast::UserDefinedTypeRepresentation>,
) -> Result<QueryOutput> {
    let labels = match representation {
        Some(ast::UserDefinedTypeRepresentation::Enum { labels }) => {
            labels.iter().map(label).collect::<Result<Vec<String>>>()?
        }
        Some(ast::UserDefinedTypeRepresentation::Composite { .. }) => {
            return Err(SqlError::unsupported("CREATE TYPE ... AS (composite type)"))
        }
        Some(ast::UserDefinedTypeRepresentation::Range { .. }) => {
            return Err(SqlError::unsupported("CREATE TYPE ... AS RANGE"))
        }
        _ => return Err(SqlError::unsupported("CREATE TYPE other than AS ENUM")),
    };
    let name = object_last(name);
    check_builtin(&name)?;
    tx.create_enum(&name, &labels)?;
    Ok(QueryOutput::command("CREATE TYPE"))
}

/// A built-in type's name is taken, as in PostgreSQL's pg_catalog.
fn check_builtin(name: &str) -> Result<()> {
    if crate::types::names::parse_type_name(&format!("\"{}\"", name.replace('"', "\"\""))).is_ok() {
        return Err(SqlError::new(
            ErrorKind::DuplicateObject,
            format!("type \"{name}\" already exists"),
        ));
    }
    Ok(())
}

/// `DROP TYPE [IF EXISTS] name [CASCADE]` of one type. A type columns
/// use is refused (2BP01); with CASCADE too (0A000), since dropping those
/// columns is not done here.
pub fn drop_type(
    tx: &Transaction,
    name: &str,
    if_exists: bool,
    cascade: bool,
    out: &mut QueryOutput,
) -> Result<()> {
    match tx.drop_enum(name) {
        Ok(()) => Ok(()),
        Err(EngineError::UnknownType(_)) if if_exists => {
            out.notices
                .push(format!("type \"{name}\" does not exist, skipping"));
            Ok(())
        }
        Err(EngineError::TypeInUse { .. }) if cascade => Err(SqlError::unsupported(
            "DROP TYPE ... CASCADE of a type that columns use (it would drop the columns)",
        )),
        Err(e) => Err(e.into()),
    }
}

/// `ALTER TYPE name ...`.
pub fn alter_type(tx: &Transaction, at: &ast::AlterType) -> Result<QueryOutput> {
    let name = object_last(&at.name);
    let db = tx.database().clone();
    match &at.operation {
        ast::AlterTypeOperation::AddValue(a) => {
            let new = label(&a.value)?;
            let neighbour = match &a.position {
                None => None,
                Some(ast::AlterTypeAddValuePosition::Before(n)) => Some((label(n)?, false)),
                Some(ast::AlterTypeAddValuePosition::After(n)) => Some((label(n)?, true)),
            };
            let mut skipped = false;
            tx.alter_enum(&name, |e| {
                let r = e.with_label(
                    &new,
                    neighbour.as_ref().map(|(n, after)| (n.as_str(), *after)),
                    a.if_not_exists,
                )?;
                skipped = r.is_none();
                Ok(r)
            })?;
            let mut out = QueryOutput::command("ALTER TYPE");
            if skipped {
                out.notices
                    .push(format!("enum label \"{new}\" already exists, skipping"));
            }
            Ok(out)
        }
        ast::AlterTypeOperation::RenameValue(r) => {
            let (from, to) = (label(&r.from)?, label(&r.to)?);
            // Stored values carry their label: renaming one a column may
            // hold would have to rewrite those rows.
            if let Some(def) = db.enum_type_as(Some(tx.id()), &name) {
                def.with_renamed_label(&from, &to)?;
                let users = db.enum_users(def.id);
                if let Some((t, c)) = users.first() {
                    return Err(SqlError::unsupported(format!(
                        "ALTER TYPE {name} RENAME VALUE while a column uses the type (column {c} of table {t})"
                    )));
                }
            }
            tx.alter_enum(&name, |e| e.with_renamed_label(&from, &to).map(Some))?;
            Ok(QueryOutput::command("ALTER TYPE"))
        }
        ast::AlterTypeOperation::Rename(r) => {
            let to = crate::expr::fold_ident(&r.new_name);
            check_builtin(&to)?;
            tx.alter_enum(&name, |e| {
                let mut n = e.clone();
                n.name = to.clone();
                Ok(Some(n))
            })?;
            Ok(QueryOutput::command("ALTER TYPE"))
        }
    }
}
