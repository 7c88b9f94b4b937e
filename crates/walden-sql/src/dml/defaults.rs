//! Column DEFAULTs that are expressions (`DefaultExpr::Expr`, e.g.
//! `DEFAULT -1 * currval('s')` or `DEFAULT upper('x')`): the stored SQL
//! text compiled once per statement and evaluated for each row that takes
//! the default (INSERT, COPY, MERGE's INSERT), as PostgreSQL evaluates a
//! default per row. The simple kinds the engine fills itself (constants,
//! `now()`, `nextval`, ...). `UPDATE ... SET c = DEFAULT` compiles any
//! kind here.

use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::Expr;
use crate::functions::Env;
use crate::query::Planner;
use walden_engine::{ColumnDef, DefaultExpr, Table, Value};

/// A table's defaults when one is an expression: every column with a
/// default, in column order, so they are taken in PostgreSQL's order (a
/// `currval` default after the `nextval` one before it); empty otherwise
/// (the engine fills them all).
#[derive(Default)]
pub(crate) struct ExprDefaults {
    list: Vec<(usize, Slot)>,
}

enum Slot {
    Expr(Expr),
    /// A kind the engine computes (`Transaction::default_value`).
    Engine(Box<ColumnDef>),
}

impl ExprDefaults {
    pub(crate) fn compile(p: &mut Planner<'_>, t: &Table) -> Result<ExprDefaults> {
        let cols = &t.def.columns;
        if !cols
            .iter()
            .any(|c| matches!(c.default, Some(DefaultExpr::Expr(_))))
        {
            return Ok(ExprDefaults::default());
        }
        let mut list = Vec::new();
        for (i, c) in cols.iter().enumerate() {
            match &c.default {
                _ if c.identity.is_some() => {}
                Some(DefaultExpr::Expr(sql)) => list.push((i, Slot::Expr(compile_text(p, sql)?))),
                Some(_) => list.push((i, Slot::Engine(Box::new(c.clone())))),
                None => {}
            }
        }
        Ok(ExprDefaults { list })
    }

    /// Fills the row's columns that take their default (`None`).
    pub(crate) fn fill(&self, row: &mut [Option<Value>], env: &Env<'_>) -> Result<()> {
        for (i, s) in &self.list {
            if let Some(slot @ None) = row.get_mut(*i) {
                *slot = Some(match s {
                    Slot::Expr(e) => e.eval(&[], env)?,
                    Slot::Engine(c) => env.tx.default_value(c)?,
                });
            }
        }
        Ok(())
    }

    pub(crate) fn reusable(&self) -> bool {
        self.list.iter().all(|(_, s)| match s {
            Slot::Expr(e) => !e.has_subquery(),
            Slot::Engine(_) => true,
        })
    }
}

/// A default's SQL text compiled against no columns: a DEFAULT cannot
/// name one (PostgreSQL refuses column references and subqueries there).
pub(crate) fn compile_text(p: &mut Planner<'_>, sql: &str) -> Result<Expr> {
    let e = crate::dml::checks::parse_stored(sql)?;
    compile_default(p, &e)
}

/// A DEFAULT expression as written, checked as PostgreSQL checks one.
pub(crate) fn compile_default(p: &mut Planner<'_>, e: &sqlparser::ast::Expr) -> Result<Expr> {
    if crate::query::has_aggregate(e) {
        return Err(SqlError::new(
            ErrorKind::GroupingError,
            "aggregate functions are not allowed in DEFAULT expressions",
        ));
    }
    let scope = crate::dml::checks::scope_of("", &[]);
    let x = Expr::compile(p, &scope, e).map_err(|err| {
        if err.kind == ErrorKind::UndefinedColumn {
            SqlError::new(
                ErrorKind::FeatureNotSupported,
                "cannot use column reference in DEFAULT expression",
            )
        } else {
            err
        }
    })?;
    if x.has_subquery() {
        return Err(SqlError::new(
            ErrorKind::FeatureNotSupported,
            "cannot use subquery in DEFAULT expression",
        ));
    }
    Ok(x)
}

/// `SET c = DEFAULT`: the column's default as an expression of any kind
/// (NULL without one).
pub(crate) fn default_of(p: &mut Planner<'_>, c: &ColumnDef) -> Result<Expr> {
    let text = match &c.default {
        None => return Ok(Expr::Lit(Value::Null)),
        Some(DefaultExpr::Value(v)) => return Ok(Expr::Lit(v.clone())),
        Some(DefaultExpr::Expr(sql)) => sql.clone(),
        Some(DefaultExpr::Now) => "now()".into(),
        Some(DefaultExpr::Today) => "current_date".into(),
        Some(DefaultExpr::NewUuid) => "gen_random_uuid()".into(),
        Some(DefaultExpr::NextVal(s)) => {
            format!("nextval({})", crate::types::quote::quote_literal(s))
        }
    };
    compile_text(p, &text)
}
