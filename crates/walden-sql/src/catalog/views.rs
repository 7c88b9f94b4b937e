//! `CREATE [OR REPLACE] VIEW`, T-SQL `CREATE [OR ALTER] VIEW` and `ALTER
//! VIEW ... AS`, `DROP VIEW`, and what views ask of the tables they read:
//! DROP TABLE refused while a view reads it (2BP01; CASCADE drops the
//! views), and the ALTER TABLE actions that would change what a view's
//! stored text means refused (see `check_alter_table`).
//!
//! A view is kept as its query's text (sqlparser's rendering), its columns
//! and the relations it reads (`walden_engine::ViewDef`); the planner
//! plans the text wherever the view is named (`query/views.rs`).

use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::query::{object_last, plan_query, Planner};
use crate::QueryOutput;
use sqlparser::ast;
use std::sync::Arc;
use walden_engine::{Database, Transaction, ViewDef};

/// How a statement asks for a view to be put in place.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Put {
    Create,
    /// PostgreSQL's `OR REPLACE`: the old columns must stay as they were.
    Replace,
    /// T-SQL's `CREATE OR ALTER` and `ALTER VIEW`: any new column list,
    /// unless another view reads this one.
    Alter,
}

/// `CREATE [OR REPLACE | OR ALTER] VIEW`.
pub fn create_view(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    cv: &ast::CreateView,
) -> Result<QueryOutput> {
    let refuse = |what: &str| Err(SqlError::unsupported(what.to_string()));
    if cv.materialized {
        return refuse("CREATE MATERIALIZED VIEW");
    }
    if cv.temporary {
        return refuse("CREATE TEMPORARY VIEW (views are permanent here)");
    }
    if !matches!(cv.options, ast::CreateTableOptions::None) {
        return refuse(&format!("CREATE VIEW ... {}", cv.options));
    }
    if cv.secure
        || !cv.cluster_by.is_empty()
        || cv.comment.is_some()
        || cv.with_no_schema_binding
        || cv.copy_grants
        || cv.to.is_some()
        || cv.params.is_some()
    {
        return refuse(&format!("this form of CREATE VIEW ({cv})"));
    }
    let put = if cv.or_alter {
        Put::Alter
    } else if cv.or_replace {
        Put::Replace
    } else {
        Put::Create
    };
    let names: Vec<String> = cv
        .columns
        .iter()
        .map(|c| {
            if c.data_type.is_some() || c.options.is_some() {
                Err(SqlError::unsupported(format!("view column definition {c}")))
            } else {
                Ok(crate::expr::fold_ident(&c.name))
            }
        })
        .collect::<Result<_>>()?;
    let name = p.path.user_relation(&cv.name)?;
    if cv.if_not_exists && relation_exists(tx.database(), Some(tx.id()), &name) {
        let mut out = QueryOutput::command("CREATE VIEW");
        out.notices
            .push(format!("relation \"{name}\" already exists, skipping"));
        return Ok(out);
    }
    put_view(p, tx, &name, &names, &cv.query, put)?;
    Ok(QueryOutput::command("CREATE VIEW"))
}

/// T-SQL `ALTER VIEW name [(cols)] AS query`.
pub fn alter_view(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    name: &ast::ObjectName,
    columns: &[ast::Ident],
    query: &ast::Query,
    with_options: &[ast::SqlOption],
) -> Result<QueryOutput> {
    if !with_options.is_empty() {
        return Err(SqlError::unsupported("ALTER VIEW ... WITH (options)"));
    }
    let n = p.path.user_relation(name)?;
    if tx.database().user_view_as(Some(tx.id()), &n).is_none() {
        return Err(not_a_view(&n));
    }
    let names: Vec<String> = columns.iter().map(crate::expr::fold_ident).collect();
    put_view(p, tx, &n, &names, query, Put::Alter)?;
    Ok(QueryOutput::command("ALTER VIEW"))
}

fn not_a_view(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedTable,
        format!("view \"{name}\" does not exist"),
    )
}

fn relation_exists(db: &Database, txid: Option<u64>, name: &str) -> bool {
    db.table_as(txid, name).is_ok()
        || db.user_view_as(txid, name).is_some()
        || db.index_table(name).is_some()
}

/// Plans `query` as the definition of view `name` and puts it in the
/// catalog.
fn put_view(
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    name: &str,
    names: &[String],
    query: &ast::Query,
    put: Put,
) -> Result<()> {
    let db = tx.database().clone();
    let old = db.user_view_as(Some(tx.id()), name);
    if old.is_none() && db.table_as(Some(tx.id()), name).is_ok() {
        return Err(if put == Put::Create {
            SqlError::new(
                ErrorKind::DuplicateTable,
                format!("relation \"{name}\" already exists"),
            )
        } else {
            SqlError::new(
                ErrorKind::WrongObjectType,
                format!("\"{name}\" is not a view"),
            )
        });
    }
    let plan = plan_query(p, query, None)?;
    if names.len() > plan.columns.len() {
        return Err(SqlError::new(
            ErrorKind::Syntax,
            "CREATE VIEW specifies more column names than columns",
        ));
    }
    let columns: Vec<(String, walden_engine::DataType)> = plan
        .columns
        .iter()
        .enumerate()
        .map(|(k, c)| {
            (
                names.get(k).cloned().unwrap_or_else(|| c.name.clone()),
                c.ty.clone(),
            )
        })
        .collect();
    for (k, (n, _)) in columns.iter().enumerate() {
        if columns[..k].iter().any(|(o, _)| o == n) {
            return Err(SqlError::new(
                ErrorKind::DuplicateColumn,
                format!("column \"{n}\" specified more than once"),
            ));
        }
    }
    let mut deps: Vec<u32> = p.used_tables().iter().map(|(id, _)| *id).collect();
    deps.extend(p.used_views().iter().copied());
    deps.sort_unstable();
    deps.dedup();
    if let Some(old) = &old {
        if deps.contains(&old.id) {
            return Err(SqlError::new(
                ErrorKind::InvalidObjectDefinition,
                format!("infinite recursion detected in rules for relation \"{name}\""),
            ));
        }
        let readers = !dependents(&db, Some(tx.id()), old.id, &old.name, "").is_empty();
        if put == Put::Replace || readers {
            keeps_columns(&old.columns, &columns)?;
        }
    }
    if put == Put::Create && old.is_some() {
        return Err(SqlError::new(
            ErrorKind::DuplicateTable,
            format!("relation \"{name}\" already exists"),
        ));
    }
    let def = ViewDef {
        id: 0,
        name: old
            .as_ref()
            .map_or_else(|| name.to_string(), |o| o.name.clone()),
        query: query.to_string(),
        columns,
        deps,
    };
    tx.put_view(def, put != Put::Create)?;
    Ok(())
}

/// PostgreSQL's rule for replacing a view: the old columns stay, in
/// order, with their names and types; new ones may follow.
fn keeps_columns(
    old: &[(String, walden_engine::DataType)],
    new: &[(String, walden_engine::DataType)],
) -> Result<()> {
    let bad = |m: String| SqlError::new(ErrorKind::InvalidTableDefinition, m);
    if new.len() < old.len() {
        return Err(bad("cannot drop columns from view".into()));
    }
    for ((on, ot), (nn, nt)) in old.iter().zip(new) {
        if on != nn {
            return Err(bad(format!(
                "cannot change name of view column \"{on}\" to \"{nn}\""
            ))
            .with_fields(ErrorFields {
                hint: Some(
                    "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead."
                        .into(),
                ),
                ..Default::default()
            }));
        }
        if ot != nt {
            return Err(bad(format!(
                "cannot change data type of view column \"{on}\" from {} to {}",
                ot.sql_name(),
                nt.sql_name()
            )));
        }
    }
    Ok(())
}

/// Whether view `v`'s text names `name` (a relation it reads directly,
/// rather than only through another view; `deps` are transitive).
fn names_word(v: &ViewDef, name: &str) -> bool {
    words(v).iter().any(|w| w.eq_ignore_ascii_case(name))
}

fn words(v: &ViewDef) -> Vec<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    Tokenizer::new(&dialect, &v.query)
        .tokenize()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| match t {
            Token::Word(w) => Some(w.value),
            _ => None,
        })
        .collect()
}

/// The views that read relation `id` (named `name`), directly or through
/// other views, each with what it reads on the way (`table t`, `view v`),
/// in the order PostgreSQL reports them: depth first from the relation.
pub fn dependents(
    db: &Database,
    txid: Option<u64>,
    id: u32,
    name: &str,
    what: &str,
) -> Vec<(Arc<ViewDef>, String)> {
    let all = db.user_views_as(txid);
    let mut out: Vec<(Arc<ViewDef>, String)> = Vec::new();
    walk(&all, id, name, what, &mut out);
    // Readers the text match missed (a name spelled another way).
    for v in all.iter().filter(|v| v.deps.contains(&id)) {
        if !out.iter().any(|(o, _)| o.id == v.id) {
            out.push((v.clone(), what.to_string()));
        }
    }
    out
}

fn walk(
    all: &[Arc<ViewDef>],
    id: u32,
    name: &str,
    what: &str,
    out: &mut Vec<(Arc<ViewDef>, String)>,
) {
    for v in all
        .iter()
        .filter(|v| v.deps.contains(&id) && names_word(v, name))
    {
        if out.iter().any(|(o, _)| o.id == v.id) {
            continue;
        }
        out.push((v.clone(), what.to_string()));
        walk(all, v.id, &v.name, &format!("view {}", v.name), out);
    }
}

/// Before relation `name` of id `id` (`kind` "table" or "view") is
/// dropped: 2BP01 while views read it, unless `cascade`, which drops them.
pub fn drop_readers(
    tx: &mut Transaction,
    id: u32,
    kind: &str,
    name: &str,
    cascade: bool,
    out: &mut QueryOutput,
) -> Result<()> {
    let db = tx.database().clone();
    let what = format!("{kind} {name}");
    let readers = dependents(&db, Some(tx.id()), id, name, &what);
    if readers.is_empty() {
        return Ok(());
    }
    if !cascade {
        return Err(depend_error(
            format!("cannot drop {what} because other objects depend on it"),
            &readers,
        ));
    }
    cascade_notice(&readers, out);
    for (v, _) in readers.iter().rev() {
        tx.drop_view(&v.name)?;
    }
    Ok(())
}

fn depend_error(message: String, readers: &[(Arc<ViewDef>, String)]) -> SqlError {
    let detail = readers
        .iter()
        .map(|(v, on)| format!("view {} depends on {on}", v.name))
        .collect::<Vec<_>>()
        .join("\n");
    SqlError::new(ErrorKind::DependentObjects, message).with_fields(ErrorFields {
        detail: Some(detail),
        hint: Some("Use DROP ... CASCADE to drop the dependent objects too.".into()),
        ..Default::default()
    })
}

fn cascade_notice(readers: &[(Arc<ViewDef>, String)], out: &mut QueryOutput) {
    if readers.len() == 1 {
        out.notices
            .push(format!("drop cascades to view {}", readers[0].0.name));
    } else {
        out.notices
            .push(format!("drop cascades to {} other objects", readers.len()));
    }
}

/// `DROP VIEW [IF EXISTS] name, ... [CASCADE | RESTRICT]`.
pub fn drop_views(
    tx: &mut Transaction,
    names: &[ast::ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<QueryOutput> {
    let mut out = QueryOutput::command("DROP VIEW");
    for n in names {
        let name = object_last(n);
        let db = tx.database().clone();
        let Some(v) = db.user_view_as(Some(tx.id()), &name) else {
            if db.table_as(Some(tx.id()), &name).is_ok() {
                return Err(SqlError::new(
                    ErrorKind::WrongObjectType,
                    format!("\"{name}\" is not a view"),
                )
                .with_fields(ErrorFields {
                    hint: Some("Use DROP TABLE to remove a table.".into()),
                    ..Default::default()
                }));
            }
            if if_exists {
                out.notices
                    .push(format!("view \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(not_a_view(&name));
        };
        drop_readers(tx, v.id, "view", &v.name, cascade, &mut out)?;
        tx.drop_view(&v.name)?;
    }
    Ok(out)
}

/// Whether view `v`'s text names column `col` (an identifier of that
/// name anywhere) or takes every column (`*` or `t.*` in a select list).
/// Conservative: a name that is something else in the text counts too.
fn reads_column(v: &ViewDef, col: &str) -> bool {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let Ok(toks) = Tokenizer::new(&dialect, &v.query).tokenize() else {
        return true;
    };
    let toks: Vec<&Token> = toks
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    for (k, t) in toks.iter().enumerate() {
        match t {
            Token::Word(w) if w.value.eq_ignore_ascii_case(col) => return true,
            Token::Mul => {
                let star = match k.checked_sub(1).map(|b| toks[b]) {
                    Some(Token::Comma) | Some(Token::Period) => true,
                    Some(Token::Word(w)) => ["select", "distinct", "all"]
                        .iter()
                        .any(|k| w.value.eq_ignore_ascii_case(k)),
                    _ => false,
                };
                if star {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// Refuses the ALTER TABLE actions on `table` that would change what the
/// stored text of a view reading it means: dropping, renaming or retyping
/// a column it names (2BP01 for DROP, as PostgreSQL; 0A000 for the rest,
/// which PostgreSQL follows through its parsed form and Walden's stored
/// text cannot), renaming the table, and adding a column to a table a view
/// reads with `*`.
/// `DROP COLUMN ... CASCADE` drops the views instead.
pub fn check_alter_table(
    tx: &mut Transaction,
    table: &str,
    at: &ast::AlterTable,
    out: &mut QueryOutput,
) -> Result<()> {
    let db = tx.database().clone();
    let txid = tx.id();
    let Ok(t) = db.table_as(Some(txid), table) else {
        return Ok(());
    };
    let what = format!("table {}", t.name());
    let all = dependents(&db, Some(txid), t.id(), t.name(), &what);
    if all.is_empty() {
        return Ok(());
    }
    // The views reading the table itself (not only through a view).
    let readers: Vec<Arc<ViewDef>> = all
        .iter()
        .filter(|(_, on)| *on == what)
        .map(|(v, _)| v.clone())
        .collect();
    let first_reader = |col: &str| readers.iter().find(|v| reads_column(v, col)).cloned();
    use ast::AlterTableOperation as Op;
    for op in &at.operations {
        match op {
            Op::DropColumn {
                column_names,
                drop_behavior,
                ..
            } => {
                for c in column_names {
                    let c = crate::expr::fold_ident(c);
                    if first_reader(&c).is_some() {
                        let col_what = format!("column {c} of table {}", t.name());
                        // The views naming the column, and those reading them.
                        let mut hit: Vec<(Arc<ViewDef>, String)> = Vec::new();
                        for r in readers.iter().filter(|v| reads_column(v, &c)) {
                            if !hit.iter().any(|(h, _)| h.id == r.id) {
                                hit.push((r.clone(), col_what.clone()));
                            }
                            let vw = format!("view {}", r.name);
                            for d in dependents(&db, Some(txid), r.id, &r.name, &vw) {
                                if !hit.iter().any(|(h, _)| h.id == d.0.id) {
                                    hit.push(d);
                                }
                            }
                        }
                        if !matches!(drop_behavior, Some(ast::DropBehavior::Cascade)) {
                            return Err(depend_error(
                                format!(
                                    "cannot drop column {c} of table {} because other objects depend on it",
                                    t.name()
                                ),
                                &hit,
                            ));
                        }
                        cascade_notice(&hit, out);
                        for (v, _) in hit.iter().rev() {
                            if db.user_view_as(Some(txid), &v.name).is_some() {
                                tx.drop_view(&v.name)?;
                            }
                        }
                    }
                }
            }
            Op::RenameColumn {
                old_column_name, ..
            } => {
                let c = crate::expr::fold_ident(old_column_name);
                if let Some(v) = first_reader(&c) {
                    return Err(SqlError::unsupported(format!(
                        "renaming column \"{c}\" of table \"{}\", which view \"{}\" reads",
                        t.name(),
                        v.name
                    )));
                }
            }
            Op::AlterColumn { column_name, op } => {
                let c = crate::expr::fold_ident(column_name);
                if matches!(op, ast::AlterColumnOperation::SetDataType { .. }) {
                    if let Some(v) = first_reader(&c) {
                        return Err(SqlError::unsupported(
                            "cannot alter type of a column used by a view or rule",
                        )
                        .with_fields(ErrorFields {
                            detail: Some(format!(
                                "rule _RETURN on view {} depends on column \"{c}\"",
                                v.name
                            )),
                            ..Default::default()
                        }));
                    }
                }
            }
            Op::RenameTable { .. } => {
                return Err(SqlError::unsupported(format!(
                    "renaming table \"{}\", which view \"{}\" reads",
                    t.name(),
                    all[0].0.name
                )));
            }
            Op::AddColumn { .. } => {
                if let Some(v) = readers.iter().find(|v| reads_column(v, "\u{0}")) {
                    return Err(SqlError::unsupported(format!(
                        "adding a column to table \"{}\", which view \"{}\" reads with *",
                        t.name(),
                        v.name
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
