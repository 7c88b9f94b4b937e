//! T-SQL's OUTPUT clause on INSERT, UPDATE and DELETE: the rows a
//! statement wrote, as `inserted.col` (the row as written) and
//! `deleted.col` (the row before), returned to the client as RETURNING's
//! rows are. It is planned as a RETURNING list over the statement's scope
//! with the target's columns named `inserted` (INSERT, UPDATE) or
//! `deleted` (DELETE); UPDATE's old row is appended after the rest of the
//! row, named `deleted`.

use super::*;

/// Which statement the clause is on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Insert,
    Update,
    Delete,
}

/// The OUTPUT clause as a RETURNING list (`None` without one). `width`:
/// the target table's columns, first in `scope`.
pub(crate) fn plan(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    width: usize,
    clause: &Option<ast::OutputClause>,
    verb: Verb,
) -> Result<Option<Returning>> {
    let (items, into) = match clause {
        None => return Ok(None),
        Some(ast::OutputClause::Returning { select_items, .. }) => {
            return returning(p, scope, &Some(select_items.clone()))
        }
        Some(ast::OutputClause::Output {
            select_items,
            into_table,
            ..
        }) => (select_items, into_table),
    };
    if items.iter().any(|i| matches!(i, SelectItem::Wildcard(_))) {
        return Err(SqlError::syntax(
            "syntax error: OUTPUT * must name inserted.* or deleted.*",
        ));
    }
    let label = match verb {
        Verb::Delete => "deleted",
        Verb::Insert | Verb::Update => "inserted",
    };
    let mut cols = scope.cols.clone();
    for c in cols.iter_mut().take(width) {
        c.table = Some(label.to_string());
    }
    if verb == Verb::Update {
        let old: Vec<ScopeCol> = scope
            .cols
            .iter()
            .take(width)
            .map(|c| ScopeCol {
                table: Some("deleted".to_string()),
                hidden: false,
                merged: Vec::new(),
                ..c.clone()
            })
            .collect();
        cols.extend(old);
    }
    let out_scope = Arc::new(Scope {
        cols,
        parent: scope.parent.clone(),
        reach: None,
    });
    let mut r = returning(p, &out_scope, &Some(items.clone()))?;
    if let Some(r) = &mut r {
        r.old_row = verb == Verb::Update;
        if let Some(into) = into {
            r.into = Some(plan_into(p, into, r.columns.len())?);
        }
    }
    Ok(r)
}

/// OUTPUT ... INTO's insert of `width` values a row.
pub(crate) fn plan_into(
    p: &mut Planner<'_>,
    into: &ast::SelectInto,
    width: usize,
) -> Result<Box<insert::InsertPlan>> {
    let (target, cols) = into_target(into)?;
    Ok(Box::new(insert::plan_into(p, &target, &cols, width)?))
}

/// OUTPUT ... INTO's table and column list: `INTO t`, `INTO t (a, b)`
/// (which the parser reads as a call), `INTO #t` (and a table variable,
/// which the T-SQL runtime names as its temporary table).
fn into_target(into: &ast::SelectInto) -> Result<(ast::ObjectName, Vec<String>)> {
    let [target] = into.targets.as_slice() else {
        return Err(SqlError::syntax("OUTPUT ... INTO names one table"));
    };
    let ident = |n: &ast::Ident| ast::ObjectNamePart::Identifier(n.clone());
    match target {
        ast::Expr::Identifier(i) if i.value.starts_with('@') => {
            Err(SqlError::unsupported("OUTPUT ... INTO a table variable"))
        }
        ast::Expr::Identifier(i) => Ok((ast::ObjectName(vec![ident(i)]), Vec::new())),
        ast::Expr::CompoundIdentifier(parts) => Ok((
            ast::ObjectName(parts.iter().map(ident).collect()),
            Vec::new(),
        )),
        ast::Expr::Function(f) => {
            let cols = match &f.args {
                ast::FunctionArguments::List(l) => l
                    .args
                    .iter()
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(
                            ast::Expr::Identifier(c),
                        )) => Ok(c.value.to_ascii_lowercase()),
                        other => Err(SqlError::syntax(format!(
                            "OUTPUT ... INTO: {other} is not a column name"
                        ))),
                    })
                    .collect::<Result<Vec<_>>>()?,
                _ => Vec::new(),
            };
            Ok((f.name.clone(), cols))
        }
        other => Err(SqlError::syntax(format!(
            "OUTPUT ... INTO {other}: expected a table"
        ))),
    }
}

/// Sends a statement's RETURNING / OUTPUT rows to the client, or inserts
/// them INTO their table (in the statement's transaction, so both stand or
/// fall together).
pub(crate) fn deliver(
    ret: &Option<Returning>,
    rows: Vec<Vec<Value>>,
    out: &mut QueryOutput,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<()> {
    let Some(r) = ret else { return Ok(()) };
    match &r.into {
        Some(into) => {
            insert::run_insert_rows(into, tx, ctx, rows)?;
        }
        None => {
            out.columns = Some(r.columns.clone());
            out.rows = rows;
        }
    }
    Ok(())
}
