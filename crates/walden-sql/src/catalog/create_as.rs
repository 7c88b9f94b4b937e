//! `CREATE TABLE name [(cols)] AS query [WITH [NO] DATA]` and `SELECT ...
//! INTO name` (PostgreSQL's and T-SQL's): a new table with the query's
//! columns, named as the query names them (or as the column list says),
//! typed as the planner types them, all nullable, without a key; then the
//! query's rows, in the same transaction.

use crate::catalog::privileges::Who;
use crate::dml::Ctx;
use crate::error::{ErrorKind, Result, SqlError};
use crate::query::{execute_plan, plan_query, Planner};
use crate::QueryOutput;
use sqlparser::ast;
use walden_engine::{ColumnDef, TableDef, Transaction};

/// `CREATE TABLE ... AS query`.
pub fn create_table_as(
    who: &Who,
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    ct: &ast::CreateTable,
) -> Result<QueryOutput> {
    crate::catalog::create_table_clauses::refuse_unhonoured(ct)?;
    let query = ct
        .query
        .as_deref()
        .ok_or_else(|| SqlError::internal("CREATE TABLE AS without a query"))?;
    if !ct.constraints.is_empty() {
        return Err(SqlError::syntax(
            "CREATE TABLE ... AS takes column names only, no constraints",
        ));
    }
    let mut names = Vec::new();
    for c in &ct.columns {
        if !matches!(c.data_type, ast::DataType::Unspecified) || !c.options.is_empty() {
            return Err(SqlError::syntax(format!(
                "CREATE TABLE ... AS takes column names only, not \"{c}\""
            )));
        }
        names.push(crate::expr::fold_ident(&c.name));
    }
    let with_data = ct.with_data.as_ref().is_none_or(|w| w.data);
    let name = p.path.user_relation(&ct.name)?;
    create_from_query(
        who,
        p,
        tx,
        ctx,
        &name,
        &names,
        query,
        ct.if_not_exists,
        with_data,
    )
}

/// The target of `SELECT ... INTO target`, when `q` is one: the INTO
/// clause's name, and the query without it.
pub fn select_into(q: &ast::Query) -> Option<Result<(ast::ObjectName, ast::Query)>> {
    let ast::SetExpr::Select(sel) = q.body.as_ref() else {
        return None;
    };
    let into = sel.into.as_ref()?;
    let target = match into.targets.as_slice() {
        [ast::Expr::Identifier(i)] => ast::ObjectName::from(vec![i.clone()]),
        [ast::Expr::CompoundIdentifier(parts)] => ast::ObjectName::from(parts.clone()),
        // T-SQL's `INTO #t`, which the PostgreSQL dialect reads as the
        // prefix operator `#` (its name keeps the `#`, as CREATE TABLE #t).
        [ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Hash,
            expr,
        }] if matches!(expr.as_ref(), ast::Expr::Identifier(_)) => {
            ast::ObjectName::from(vec![ast::Ident::new(format!("#{}", expr))])
        }
        _ => {
            return Some(Err(SqlError::unsupported(format!(
                "SELECT ... INTO {}",
                into.targets
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))))
        }
    };
    let mut plain = q.clone();
    if let ast::SetExpr::Select(s) = plain.body.as_mut() {
        s.into = None;
    }
    Some(Ok((target, plain)))
}

/// `SELECT ... INTO name ...`.
pub fn run_select_into(
    who: &Who,
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    target: &ast::ObjectName,
    query: &ast::Query,
) -> Result<QueryOutput> {
    let name = p.path.user_relation(target)?;
    create_from_query(who, p, tx, ctx, &name, &[], query, false, true)
}

#[allow(clippy::too_many_arguments)]
fn create_from_query(
    who: &Who,
    p: &mut Planner<'_>,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    name: &str,
    names: &[String],
    query: &ast::Query,
    if_not_exists: bool,
    with_data: bool,
) -> Result<QueryOutput> {
    let db = tx.database().clone();
    let exists = db.table_as(Some(tx.id()), name).is_ok()
        || db.user_view_as(Some(tx.id()), name).is_some()
        || db.index_table(name).is_some();
    if exists {
        if if_not_exists {
            let mut out = QueryOutput::command("CREATE TABLE AS");
            out.notices
                .push(format!("relation \"{name}\" already exists, skipping"));
            return Ok(out);
        }
        return Err(SqlError::new(
            ErrorKind::DuplicateTable,
            format!("relation \"{name}\" already exists"),
        ));
    }
    let plan = plan_query(p, query, None)?;
    if names.len() > plan.columns.len() {
        return Err(SqlError::new(
            ErrorKind::Syntax,
            "too many column names were specified",
        ));
    }
    let columns: Vec<ColumnDef> = plan
        .columns
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let n = names.get(k).cloned().unwrap_or_else(|| c.name.clone());
            ColumnDef::new(n, stored_type(&c.ty))
        })
        .collect();
    for (k, c) in columns.iter().enumerate() {
        if columns[..k].iter().any(|o| o.name == c.name) {
            return Err(SqlError::new(
                ErrorKind::DuplicateColumn,
                format!("column \"{}\" specified more than once", c.name),
            ));
        }
    }
    crate::catalog::privileges::require(who, db.id(), &crate::catalog::privileges::reads(p))?;
    let def = TableDef::new(name, columns, &[]).map_err(crate::catalog::ddl::map_def_err)?;
    if !with_data {
        tx.create_table(def)?;
        return Ok(QueryOutput::command("CREATE TABLE AS"));
    }
    // The rows are read before the table exists, so the query cannot see
    // it (PostgreSQL's order too).
    let rows = {
        let env = ctx.env(tx);
        execute_plan(&plan, &env, None)?
    };
    let t = tx.create_table(def)?;
    let n = rows.len();
    for r in rows {
        tx.insert_into(&t, r.into_iter().map(Some).collect())?;
    }
    Ok(QueryOutput::command(format!("SELECT {n}")))
}

/// The column type for a query column's type: an expression's numeric
/// without a declared precision is the unconstrained `numeric` of a
/// column (the planner writes it with scale 0, a column with scale 6).
fn stored_type(t: &walden_engine::DataType) -> walden_engine::DataType {
    match t {
        walden_engine::DataType::Decimal { precision: 0, .. } => walden_engine::DataType::Decimal {
            precision: 0,
            scale: 6,
        },
        other => other.clone(),
    }
}
