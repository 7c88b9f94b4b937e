//! `COLLATE`: Walden compares text by its UTF-8 bytes, which is code point
//! order. PostgreSQL's `C` and `POSIX` collations order that way, and so
//! does its `default` one in a database whose locale is `C.UTF-8` (what
//! Walden reports). Any other collation would order or compare differently,
//! so naming one is refused rather than ignored.

use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast;
use walden_engine::{Collation, DataType};

/// The collation `name` names (`"C"`, `pg_catalog."POSIX"`, `"default"`).
/// Names are case-sensitive, as in PostgreSQL: an unquoted `C` folds to `c`.
pub fn collation_named(name: &ast::ObjectName) -> Result<Collation> {
    let parts: Vec<&ast::Ident> = name.0.iter().filter_map(|p| p.as_ident()).collect();
    let fold = |i: &ast::Ident| {
        if i.quote_style.is_some() {
            i.value.clone()
        } else {
            i.value.to_ascii_lowercase()
        }
    };
    let found = match parts.as_slice() {
        [one] => Collation::from_name(&fold(one)),
        [schema, one] if fold(schema) == "pg_catalog" => Collation::from_name(&fold(one)),
        _ => None,
    };
    found.ok_or_else(|| {
        SqlError::unsupported(format!(
            "collation {name} (Walden compares text by code point, as the collations \"C\", \"POSIX\" and \"default\" do)"
        ))
    })
}

/// Whether values of `ty` have a collation (PostgreSQL's collatable types:
/// the character types, their arrays and domains).
pub fn collatable(ty: &DataType) -> bool {
    match ty {
        DataType::Text | DataType::Varchar(_) | DataType::Char(_) | DataType::Name => true,
        DataType::Array(e) => collatable(e),
        _ => false,
    }
}

/// PostgreSQL's refusal of `COLLATE` on a type without collations.
pub fn not_collatable(ty: &DataType) -> SqlError {
    SqlError::new(
        ErrorKind::DatatypeMismatch,
        format!("collations are not supported by type {}", ty.sql_name()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(sql: &str) -> Result<Collation> {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let text = format!("SELECT a COLLATE {sql} FROM t");
        let mut st = sqlparser::parser::Parser::parse_sql(&dialect, &text).expect("parses");
        let ast::Statement::Query(q) = st.remove(0) else {
            panic!("not a query")
        };
        let ast::SetExpr::Select(s) = *q.body else {
            panic!("not a select")
        };
        match &s.projection[0] {
            ast::SelectItem::UnnamedExpr(ast::Expr::Collate { collation, .. }) => {
                collation_named(collation)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn byte_order_collations_are_known() {
        assert_eq!(named("\"C\"").unwrap(), Collation::C);
        assert_eq!(named("\"POSIX\"").unwrap(), Collation::Posix);
        assert_eq!(named("pg_catalog.\"C\"").unwrap(), Collation::C);
        assert_eq!(named("\"default\"").unwrap(), Collation::Default);
        for other in [
            "C",
            "\"en_US\"",
            "\"und-x-icu\"",
            "SQL_Latin1_General_CP1_CI_AS",
        ] {
            let e = named(other).unwrap_err();
            assert_eq!(e.kind, ErrorKind::FeatureNotSupported, "{other}");
        }
    }
}
