//! Result column names of casts, as PostgreSQL's FigureColname gives them:
//! a cast keeps the name of what it casts when that has a name of its own
//! (a column, a function call), else it is named after the type
//! (`SELECT 1::int4` is `int4`, `CAST('x' AS text)` is `text`).

use super::column_name;
use sqlparser::ast::{self, DataType as SqlType, TimezoneInfo};

/// The name `e` gives a result column when that name is strong enough to
/// outrank a cast's type name: column references, function calls,
/// `EXISTS`, `ARRAY[...]`, field selections; `None` for constants,
/// operators and the like.
pub(super) fn strong_name(e: &ast::Expr) -> Option<String> {
    match e {
        ast::Expr::Identifier(_)
        | ast::Expr::CompoundIdentifier(_)
        | ast::Expr::Function(_)
        | ast::Expr::Exists { .. }
        | ast::Expr::Array(_)
        | ast::Expr::CompoundFieldAccess { .. } => Some(column_name(e)),
        ast::Expr::Nested(e) | ast::Expr::Cast { expr: e, .. } => strong_name(e),
        ast::Expr::Case { else_result, .. } => else_result.as_deref().and_then(strong_name),
        _ => None,
    }
}

/// A cast's result column name.
pub(super) fn cast(expr: &ast::Expr, t: &SqlType) -> String {
    strong_name(expr).unwrap_or_else(|| type_name(t))
}

/// The name PostgreSQL's grammar gives a type in a cast: the catalog name
/// for SQL's keyword types (`integer` is `int4`, `character varying` is
/// `varchar`), the last part of any other name as written; an array type
/// is named after its element.
pub(super) fn type_name(t: &SqlType) -> String {
    use ast::ArrayElemTypeDef as E;
    match t {
        SqlType::Array(E::SquareBracket(e, _) | E::Qualified(e, _) | E::AngleBracket(e)) => {
            type_name(e)
        }
        SqlType::Custom(name, _) => match name.0.last().and_then(|p| p.as_ident()) {
            Some(i) => crate::expr::fold_ident(i),
            None => name.to_string(),
        },
        SqlType::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => {
            "timestamptz".into()
        }
        SqlType::Timestamp(..) => "timestamp".into(),
        SqlType::Time(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => "timetz".into(),
        SqlType::Time(..) => "time".into(),
        SqlType::Interval { .. } => "interval".into(),
        other => match crate::types::names::data_type(other) {
            Ok(dt) => {
                let elem = dt.element().unwrap_or(dt);
                let oid = crate::types::type_oid_and_mod(&elem).0;
                crate::types::typname(oid)
                    .map(str::to_string)
                    .unwrap_or_else(|| other.to_string().to_ascii_lowercase())
            }
            Err(_) => other.to_string().to_ascii_lowercase(),
        },
    }
}

/// The name of a query's first result column, as its select list gives it
/// (an alias, else the expression's name); a set operation takes its left
/// side's. `None` for `*` and for VALUES.
pub(super) fn first_column(q: &ast::Query) -> Option<String> {
    fn body(b: &ast::SetExpr) -> Option<String> {
        match b {
            ast::SetExpr::Select(s) => match s.projection.first()? {
                ast::SelectItem::UnnamedExpr(e) => Some(column_name(e)),
                ast::SelectItem::ExprWithAlias { alias, .. } => {
                    Some(crate::expr::fold_ident(alias))
                }
                _ => None,
            },
            ast::SetExpr::Query(q) => first_column(q),
            ast::SetExpr::SetOperation { left, .. } => body(left),
            _ => None,
        }
    }
    body(&q.body)
}
