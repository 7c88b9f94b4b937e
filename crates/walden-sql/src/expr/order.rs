//! The direction of an `ORDER BY` item, `USING <operator>` included.

use crate::error::{Result, SqlError};
use sqlparser::ast;

/// Whether an `ORDER BY` item sorts descending: `DESC`, or `USING >`
/// (`USING <` is ascending). Another operator would sort by a rule
/// Walden does not have: refused rather than ignored.
pub fn sort_desc(opts: &ast::OrderByOptions) -> Result<bool> {
    Ok(match &opts.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(ast::OrderBySort::Using(op)) => {
            // `USING OPERATOR(pg_catalog.<)` names the same operator.
            let name = op.to_string();
            let last = name
                .trim_start_matches("OPERATOR(")
                .trim_end_matches(')')
                .rsplit('.')
                .next()
                .unwrap_or("")
                .to_string();
            match last.as_str() {
                "<" => false,
                ">" => true,
                _ => {
                    return Err(SqlError::unsupported(format!(
                        "ORDER BY ... USING {name} (only < and >)"
                    )))
                }
            }
        }
    })
}
