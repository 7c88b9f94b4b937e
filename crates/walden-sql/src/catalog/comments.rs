//! `COMMENT ON { TABLE | VIEW | COLUMN | INDEX | SEQUENCE | TYPE } name IS
//! 'text' | NULL` and `COMMENT ON CONSTRAINT c ON t IS ...`: the engine
//! keeps the comment with the catalog, transactionally (`walden_engine::
//! CommentOn`); `pg_description`, `obj_description` and `col_description`
//! read it back (`compat/pg_catalog/descriptions.rs`). An empty comment
//! removes one, as in PostgreSQL. `public`'s comment is fixed
//! (`public_schema.rs`); other kinds of object are refused.

use crate::catalog::privileges::{denied, Who};
use crate::error::{ErrorKind, Result, SqlError};
use crate::QueryOutput;
use sqlparser::ast::{self, CommentObject as K};
use walden_engine::roles::ObjKind;
use walden_engine::{CommentOn, Database, EngineError, Transaction};

fn fold(id: &ast::Ident) -> String {
    crate::expr::fold_ident(id)
}

fn undefined(kind: &str, name: &str) -> SqlError {
    let e: SqlError = EngineError::UnknownTable(name.to_string()).into();
    SqlError::new(e.kind, format!("{kind} \"{name}\" does not exist"))
}

fn owner_check(who: &Who, db: &Database, kind: ObjKind, id: u32, what: &str) -> Result<()> {
    if who.owns(db.id(), kind, id) {
        Ok(())
    } else {
        Err(denied(format!("must be owner of {what}")))
    }
}

/// The object `COMMENT ON kind name` names, its ownership checked.
fn target(
    who: &Who,
    db: &Database,
    tx: &Transaction,
    kind: &K,
    name: &ast::ObjectName,
) -> Result<CommentOn> {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(fold))
        .collect();
    let Some(last) = parts.last().cloned() else {
        return Err(SqlError::syntax("COMMENT ON needs an object name"));
    };
    // A qualifier must be the one schema there is.
    let schema_ok = |qual: &[String]| match qual {
        [] => true,
        [.., s] => s.eq_ignore_ascii_case("public"),
    };
    let txid = Some(tx.id());
    match kind {
        K::Table | K::View => {
            if !schema_ok(&parts[..parts.len() - 1]) {
                return Err(undefined("relation", &name.to_string()));
            }
            if *kind == K::Table {
                let t = db
                    .table_as(txid, &last)
                    .map_err(|_| undefined("relation", &last))?;
                owner_check(
                    who,
                    db,
                    ObjKind::Table,
                    t.id(),
                    &format!("table {}", t.name()),
                )?;
                Ok(CommentOn::Relation(t.id()))
            } else {
                let v = db
                    .user_view_as(txid, &last)
                    .ok_or_else(|| undefined("relation", &last))?;
                Ok(CommentOn::Relation(v.id))
            }
        }
        K::Column => {
            let (rel, col) = match parts.as_slice() {
                [q @ .., rel, col] if schema_ok(q) => (rel.clone(), col.clone()),
                [_] => {
                    return Err(SqlError::syntax(
                        "column name must be qualified".to_string(),
                    ))
                }
                _ => return Err(undefined("relation", &name.to_string())),
            };
            if let Ok(t) = db.table_as(txid, &rel) {
                owner_check(
                    who,
                    db,
                    ObjKind::Table,
                    t.id(),
                    &format!("table {}", t.name()),
                )?;
                let c = t
                    .def
                    .columns
                    .iter()
                    .find(|c| c.name.eq_ignore_ascii_case(&col))
                    .ok_or_else(|| {
                        SqlError::new(
                            ErrorKind::UndefinedColumn,
                            format!("column \"{col}\" of relation \"{rel}\" does not exist"),
                        )
                    })?;
                return Ok(CommentOn::Column(t.id(), c.name.clone()));
            }
            let v = db
                .user_view_as(txid, &rel)
                .ok_or_else(|| undefined("relation", &rel))?;
            let c = v
                .columns
                .iter()
                .find(|c| c.0.eq_ignore_ascii_case(&col))
                .ok_or_else(|| {
                    SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!("column \"{col}\" of relation \"{rel}\" does not exist"),
                    )
                })?;
            Ok(CommentOn::Column(v.id, c.0.clone()))
        }
        K::Index => {
            if !schema_ok(&parts[..parts.len() - 1]) {
                return Err(undefined("relation", &name.to_string()));
            }
            for t in db.tables_as(txid) {
                let own = |who: &Who| {
                    owner_check(who, db, ObjKind::Table, t.id(), &format!("index {last}"))
                };
                if let Some((_, ix)) = t.def.index(&last) {
                    own(who)?;
                    return Ok(CommentOn::Relation(ix.id));
                }
                if !t.def.primary_key.is_empty() && t.def.pkey_name().eq_ignore_ascii_case(&last) {
                    own(who)?;
                    return Ok(CommentOn::PrimaryKeyIndex(t.id()));
                }
            }
            Err(undefined("relation", &last))
        }
        K::Sequence => {
            if !schema_ok(&parts[..parts.len() - 1]) {
                return Err(undefined("relation", &name.to_string()));
            }
            let s = db
                .sequences_as(txid)
                .into_iter()
                .find(|s| s.name.eq_ignore_ascii_case(&last))
                .ok_or_else(|| undefined("relation", &last))?;
            owner_check(
                who,
                db,
                ObjKind::Sequence,
                s.id,
                &format!("sequence {}", s.name),
            )?;
            Ok(CommentOn::Sequence(s.id))
        }
        K::Type => {
            if !schema_ok(&parts[..parts.len() - 1]) {
                return Err(undefined("type", &name.to_string()));
            }
            let e = db.enum_type_as(txid, &last).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!("type \"{last}\" does not exist"),
                )
            })?;
            Ok(CommentOn::Type(e.id))
        }
        other => Err(SqlError::unsupported(format!(
            "COMMENT ON {}",
            format!("{other:?}").to_ascii_uppercase()
        ))),
    }
}

/// PostgreSQL stores an empty comment as none.
fn text_of(comment: Option<&str>) -> Option<String> {
    comment.filter(|c| !c.is_empty()).map(str::to_string)
}

/// `COMMENT ON kind name IS ...` (not SCHEMA: `public_schema.rs`).
pub fn comment_on(
    who: &Who,
    db: &Database,
    tx: &mut Transaction,
    kind: &K,
    name: &ast::ObjectName,
    comment: Option<&str>,
) -> Result<QueryOutput> {
    let on = target(who, db, tx, kind, name)?;
    tx.set_comment(on, text_of(comment))?;
    Ok(QueryOutput::command("COMMENT"))
}

/// `COMMENT ON CONSTRAINT constraint ON table IS ...`.
pub fn comment_on_constraint(
    who: &Who,
    db: &Database,
    tx: &mut Transaction,
    constraint: &str,
    table: &ast::ObjectName,
    comment: Option<&str>,
) -> Result<QueryOutput> {
    let rel = crate::query::object_last(table);
    let t = db
        .table_as(Some(tx.id()), &rel)
        .map_err(|_| undefined("relation", &rel))?;
    let d = &t.def;
    let found = (!d.primary_key.is_empty() && d.pkey_name().eq_ignore_ascii_case(constraint))
        .then(|| d.pkey_name())
        .or_else(|| {
            d.checks
                .iter()
                .map(|c| &c.name)
                .chain(d.foreign_keys.iter().map(|f| &f.name))
                .chain(d.indexes.iter().filter(|i| i.constraint).map(|i| &i.name))
                .find(|n| n.eq_ignore_ascii_case(constraint))
                .cloned()
        })
        .ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedObject,
                format!(
                    "constraint \"{constraint}\" for table \"{}\" does not exist",
                    t.name()
                ),
            )
        })?;
    owner_check(
        who,
        db,
        ObjKind::Table,
        t.id(),
        &format!("table {}", t.name()),
    )?;
    tx.set_comment(CommentOn::Constraint(t.id(), found), text_of(comment))?;
    Ok(QueryOutput::command("COMMENT"))
}
