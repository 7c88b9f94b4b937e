//! EXPLAIN's options, from either form: `EXPLAIN (option [, ...])
//! statement` or the old `EXPLAIN [ANALYZE] [VERBOSE] statement`. Checked
//! as PostgreSQL 15 checks them (unknown option 42601, bad value 22023);
//! what Walden cannot show is refused with 0A000 naming it.

use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast::{self, DescribeAlias, Statement};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExplainFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Copy)]
pub struct ExplainOptions {
    pub analyze: bool,
    pub verbose: bool,
    pub costs: bool,
    pub summary: bool,
    pub format: ExplainFormat,
}

/// The options of an EXPLAIN and the statement it explains; `None` when
/// `stmt` is not an EXPLAIN.
pub fn explain_parts(stmt: &Statement) -> Result<Option<(ExplainOptions, &Statement)>> {
    let Statement::Explain {
        describe_alias,
        analyze,
        verbose,
        query_plan,
        estimate,
        statement,
        format,
        options,
    } = stmt
    else {
        return Ok(None);
    };
    if !matches!(describe_alias, DescribeAlias::Explain) || *query_plan || *estimate {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{describe_alias}\""
        )));
    }
    if format.is_some() {
        return Err(SqlError::syntax("syntax error at or near \"FORMAT\""));
    }
    let mut o = ExplainOptions {
        analyze: *analyze,
        verbose: *verbose,
        costs: true,
        summary: false,
        format: ExplainFormat::Text,
    };
    let mut summary = None;
    let mut timing = None;
    for opt in options.iter().flatten() {
        let name = opt.name.value.to_ascii_lowercase();
        let flag = |what: &str| boolean(what, opt.arg.as_ref());
        match name.as_str() {
            "analyze" => o.analyze = flag("analyze")?,
            "verbose" => o.verbose = flag("verbose")?,
            "costs" => o.costs = flag("costs")?,
            "summary" => summary = Some(flag("summary")?),
            "timing" => timing = Some(flag("timing")?),
            "buffers" => {
                if flag("buffers")? {
                    return Err(refused(
                        "BUFFERS",
                        "Walden does not count the pages each node reads",
                    ));
                }
            }
            "settings" => {
                if flag("settings")? {
                    return Err(refused("SETTINGS", "not shown"));
                }
            }
            "wal" => {
                if flag("wal")? {
                    return Err(refused("WAL", "WAL records are not counted per node"));
                }
            }
            "generic_plan" => {
                return Err(refused("GENERIC_PLAN", "not shown"));
            }
            "format" => {
                let v = match &opt.arg {
                    Some(ast::Expr::Identifier(i)) => i.value.to_ascii_lowercase(),
                    Some(ast::Expr::Value(v)) => {
                        v.to_string().trim_matches('\'').to_ascii_lowercase()
                    }
                    _ => String::new(),
                };
                o.format = match v.as_str() {
                    "text" => ExplainFormat::Text,
                    "json" => ExplainFormat::Json,
                    "xml" | "yaml" => {
                        return Err(refused(
                            &format!("FORMAT {}", v.to_ascii_uppercase()),
                            "TEXT and JSON are",
                        ))
                    }
                    _ => {
                        return Err(SqlError::new(
                            ErrorKind::InvalidParameter,
                            format!("unrecognized value for EXPLAIN option \"format\": \"{v}\""),
                        ))
                    }
                };
            }
            other => {
                return Err(SqlError::syntax(format!(
                    "unrecognized EXPLAIN option \"{other}\""
                )))
            }
        }
    }
    if timing == Some(true) && !o.analyze {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            "EXPLAIN option TIMING requires ANALYZE",
        ));
    }
    if timing == Some(true) {
        return Err(refused(
            "TIMING",
            "the time of each node is not measured (only the statement's)",
        ));
    }
    o.summary = summary.unwrap_or(o.analyze);
    Ok(Some((o, statement)))
}

fn refused(option: &str, why: &str) -> SqlError {
    SqlError::new(
        ErrorKind::FeatureNotSupported,
        format!("EXPLAIN option {option} is not supported: {why}"),
    )
}

/// A boolean option's value, as PostgreSQL's defGetBoolean reads it.
fn boolean(name: &str, arg: Option<&ast::Expr>) -> Result<bool> {
    let text = match arg {
        None => return Ok(true),
        Some(ast::Expr::Identifier(i)) => i.value.to_ascii_lowercase(),
        Some(ast::Expr::Value(v)) => v.to_string().trim_matches('\'').to_ascii_lowercase(),
        Some(other) => other.to_string().to_ascii_lowercase(),
    };
    match text.as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(SqlError::syntax(format!("{name} requires a Boolean value"))),
    }
}
