//! `CREATE [UNIQUE] INDEX`, `DROP INDEX`, and the unique indexes behind
//! `UNIQUE` constraints: what the parser gives, checked and turned into
//! the engine's index definitions. What an index cannot do here (an
//! expression, a partial index, INCLUDE) is refused, never ignored. A key
//! column's `DESC` / `NULLS FIRST | LAST` is kept in the definition (see
//! `IndexDef::options`): the entries stay ascending, which changes no
//! answer.

use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::fold_ident;
use crate::query::object_last;
use crate::QueryOutput;
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::{ColumnDef, Database, EngineError, IndexDef, TableDef, Transaction};

/// One column of a constraint's or an inline index: a plain column name
/// in ascending order.
fn column_name(c: &ast::IndexColumn) -> Result<String> {
    let (name, options) = key_column(c)?;
    if options != 0 {
        return Err(SqlError::unsupported(
            "DESC or NULLS FIRST/LAST in a constraint or inline index",
        ));
    }
    Ok(name)
}

/// One key column of CREATE INDEX: a plain column name and its `indoption`
/// bits (`DESC` puts NULLs first unless told otherwise, as in PostgreSQL).
fn key_column(c: &ast::IndexColumn) -> Result<(String, u8)> {
    use walden_engine::{INDEX_DESC, INDEX_NULLS_FIRST};
    if let Some(op) = &c.operator_class {
        return Err(SqlError::unsupported(format!("index operator class {op}")));
    }
    let o = &c.column.options;
    let desc = match &o.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(other) => {
            return Err(SqlError::unsupported(format!(
                "index column order {other:?}"
            )))
        }
    };
    let nulls_first = o.nulls_first.unwrap_or(desc);
    let options =
        if desc { INDEX_DESC } else { 0 } | if nulls_first { INDEX_NULLS_FIRST } else { 0 };
    let mut expr = &c.column.expr;
    // Every collation Walden knows orders as the column does.
    if let ast::Expr::Collate { expr: e, collation } = expr {
        crate::types::collation::collation_named(collation)?;
        expr = e;
    }
    match expr {
        ast::Expr::Identifier(i) => Ok((fold_ident(i), options)),
        ast::Expr::CompoundIdentifier(parts) if !parts.is_empty() => {
            Ok((fold_ident(parts.last().expect("not empty")), options))
        }
        other => Err(SqlError::unsupported(format!(
            "index on an expression ({other})"
        ))),
    }
}

use crate::context::settings::MAX_INDEX_KEYS;

pub(crate) fn check_key_width(n: usize) -> Result<()> {
    if n > MAX_INDEX_KEYS {
        return Err(SqlError::new(
            ErrorKind::TooManyColumns,
            format!("cannot use more than {MAX_INDEX_KEYS} columns in an index"),
        ));
    }
    Ok(())
}

fn positions(cols: &[String], columns: &[ColumnDef]) -> Result<Vec<usize>> {
    check_key_width(cols.len())?;
    cols.iter()
        .map(|c| {
            let i = columns
                .iter()
                .position(|d| d.name.eq_ignore_ascii_case(c))
                .ok_or_else(|| {
                    SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!("column \"{c}\" does not exist"),
                    )
                })?;
            // Index keys use an order-preserving byte encoding that json
            // and jsonb do not have yet (their key bytes are only text).
            let t = &columns[i].data_type;
            if matches!(
                t,
                walden_engine::DataType::Json | walden_engine::DataType::Jsonb
            ) {
                return Err(SqlError::unsupported(format!(
                    "an index on column \"{c}\" of type {}",
                    t.sql_name()
                )));
            }
            Ok(i)
        })
        .collect()
}

fn check_method(using: &Option<ast::IndexType>) -> Result<()> {
    match using {
        // A hash index answers the same equality questions a B-tree does.
        None | Some(ast::IndexType::BTree) | Some(ast::IndexType::Hash) => Ok(()),
        Some(other) => Err(SqlError::unsupported(format!(
            "index access method {other} (only btree and hash)"
        ))),
    }
}

/// PostgreSQL's choice of a name for an unnamed index or constraint:
/// `table_col1_col2_suffix`, numbered on from 1 while taken.
pub fn choose_name(
    table: &str,
    cols: &[String],
    suffix: &str,
    taken: &dyn Fn(&str) -> bool,
) -> String {
    let base = format!("{table}_{}_{suffix}", cols.join("_"));
    if !taken(&base) {
        return base;
    }
    (1..)
        .map(|n| format!("{base}{n}"))
        .find(|n| !taken(n))
        .expect("some number is free")
}

fn relation_taken(db: &Database, name: &str) -> bool {
    db.table(name).is_ok() || db.index_table(name).is_some()
}

/// `CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF NOT EXISTS] [name] ON t [USING
/// btree|hash] (col, ...)`. CONCURRENTLY is accepted: the index is built
/// and valid when the statement returns, as PostgreSQL's; unlike it, the
/// build holds commits back as every DDL here does.
pub fn create_index(
    db: &Arc<Database>,
    tx: &mut Transaction,
    ci: &ast::CreateIndex,
) -> Result<QueryOutput> {
    if ci.predicate.is_some() {
        return Err(SqlError::unsupported(
            "partial index (CREATE INDEX ... WHERE)",
        ));
    }
    if !ci.include.is_empty() {
        return Err(SqlError::unsupported("INCLUDE columns in an index"));
    }
    if ci.nulls_distinct == Some(false) {
        return Err(SqlError::unsupported("NULLS NOT DISTINCT"));
    }
    if !ci.with.is_empty() || !ci.index_options.is_empty() || !ci.alter_options.is_empty() {
        return Err(SqlError::unsupported("index storage options"));
    }
    if ci.r#async {
        return Err(SqlError::unsupported("CREATE INDEX ASYNC"));
    }
    check_method(&ci.using)?;
    let table = db.table(&object_last(&ci.table_name))?;
    if table.def.partition_key.is_some() {
        return Err(SqlError::unsupported(
            "CREATE INDEX on a partitioned table (partitioned indexes)",
        ));
    }
    let (cols, options): (Vec<String>, Vec<u8>) = ci
        .columns
        .iter()
        .map(key_column)
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let options = if options.iter().all(|&o| o == 0) {
        Vec::new()
    } else {
        options
    };
    let positions = positions(&cols, &table.def.columns)?;
    let name = match &ci.name {
        Some(n) => object_last(n),
        None => choose_name(table.name(), &cols, "idx", &|n| relation_taken(db, n)),
    };
    if ci.if_not_exists && relation_taken(db, &name) {
        let mut out = QueryOutput::command("CREATE INDEX");
        out.notices
            .push(format!("relation \"{name}\" already exists, skipping"));
        return Ok(out);
    }
    tx.create_index(
        table.name(),
        IndexDef {
            id: 0,
            name,
            columns: positions,
            unique: ci.unique,
            constraint: false,
            options,
        },
    )?;
    Ok(QueryOutput::command("CREATE INDEX"))
}

/// `DROP INDEX [IF EXISTS] name` (T-SQL `DROP INDEX t.name` and `DROP INDEX
/// name ON t` arrive as the same name). The index of a UNIQUE constraint
/// goes with the constraint, as PostgreSQL's 2BP01 says.
pub fn drop_index(
    db: &Arc<Database>,
    tx: &mut Transaction,
    name: &str,
    if_exists: bool,
    out: &mut QueryOutput,
) -> Result<()> {
    if let Some(t) = db.index_table(name) {
        if let Some((_, ix)) = t.def.index(name) {
            if ix.constraint {
                return Err(SqlError::new(
                    ErrorKind::DependentObjects,
                    format!(
                        "cannot drop index {name} because constraint {name} on table {} requires it",
                        t.name()
                    ),
                ));
            }
        }
    }
    match tx.drop_index(name) {
        Ok(()) => Ok(()),
        Err(EngineError::UnknownIndex(_)) if if_exists => {
            out.notices
                .push(format!("index \"{name}\" does not exist, skipping"));
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// A UNIQUE constraint of CREATE TABLE: its name (if given) and columns.
pub struct UniqueSpec {
    pub name: Option<String>,
    pub columns: Vec<String>,
}

impl UniqueSpec {
    pub fn of(u: &ast::UniqueConstraint, column: Option<&ast::Ident>) -> Result<UniqueSpec> {
        if !u.include.is_empty() {
            return Err(SqlError::unsupported(
                "INCLUDE columns in a UNIQUE constraint",
            ));
        }
        if matches!(u.nulls_distinct, ast::NullsDistinctOption::NotDistinct) {
            return Err(SqlError::unsupported("NULLS NOT DISTINCT"));
        }
        crate::catalog::foreign_keys::refuse_deferrable_key(u.characteristics.as_ref(), "UNIQUE")?;
        check_method(&u.index_type)?;
        let columns = match column {
            Some(c) => vec![fold_ident(c)],
            None => u
                .columns
                .iter()
                .map(column_name)
                .collect::<Result<Vec<_>>>()?,
        };
        Ok(UniqueSpec {
            name: u.name.as_ref().or(u.index_name.as_ref()).map(fold_ident),
            columns,
        })
    }
}

/// A plain index declared in CREATE TABLE (`INDEX name (cols)`, MySQL's and
/// T-SQL's inline form).
pub fn inline_index(ix: &ast::IndexConstraint) -> Result<(Option<String>, Vec<String>)> {
    if !ix.index_options.is_empty() {
        return Err(SqlError::unsupported("index options"));
    }
    check_method(&ix.index_type)?;
    let cols = ix
        .columns
        .iter()
        .map(column_name)
        .collect::<Result<Vec<_>>>()?;
    Ok((ix.name.as_ref().map(fold_ident), cols))
}

/// The indexes CREATE TABLE declares: a UNIQUE set equal to the primary key
/// adds nothing (the key enforces it); names follow PostgreSQL's
/// (`t_a_key` for constraints, `t_a_idx` for plain indexes).
pub fn table_indexes(
    db: &Database,
    def: &TableDef,
    uniques: Vec<UniqueSpec>,
    plain: Vec<(Option<String>, Vec<String>)>,
) -> Result<Vec<IndexDef>> {
    let mut out: Vec<IndexDef> = Vec::new();
    let mut pk = def.primary_key.clone();
    pk.sort_unstable();
    let taken = |out: &Vec<IndexDef>, n: &str| {
        relation_taken(db, n)
            || n.eq_ignore_ascii_case(&def.name)
            || n.eq_ignore_ascii_case(&def.pkey_name()) && !def.primary_key.is_empty()
            || out.iter().any(|i| i.name.eq_ignore_ascii_case(n))
    };
    let specs = uniques
        .into_iter()
        .map(|u| (u.name, u.columns, true))
        .chain(plain.into_iter().map(|(n, c)| (n, c, false)));
    for (name, cols, unique) in specs {
        let columns = positions(&cols, &def.columns)?;
        let mut sorted = columns.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if unique && sorted == pk {
            continue;
        }
        let name = match name {
            Some(n) => {
                if taken(&out, &n) {
                    return Err(EngineError::RelationExists(n).into());
                }
                n
            }
            None => choose_name(&def.name, &cols, if unique { "key" } else { "idx" }, &|n| {
                taken(&out, n)
            }),
        };
        out.push(IndexDef {
            id: 0,
            name,
            columns,
            unique,
            constraint: unique,
            options: Vec::new(),
        });
    }
    Ok(out)
}
