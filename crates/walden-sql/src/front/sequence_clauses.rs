//! The clauses of `CREATE SEQUENCE` and `ALTER SEQUENCE` (PostgreSQL's,
//! and T-SQL's `NO CACHE` / `NOCYCLE`).

use super::command::SequenceChange;
use super::toks::Toks;
use crate::error::{Result, SqlError};
use sqlparser::tokenizer::Token;
use walden_engine::SeqType;

fn num(t: &mut Toks) -> Result<i64> {
    t.value()?
        .parse()
        .map_err(|_| SqlError::syntax("syntax error: sequence options need integers"))
}

fn near(t: &Toks, what: &str) -> SqlError {
    SqlError::syntax(format!(
        "syntax error at or near \"{}\" in {what}",
        t.t.get(t.i).map(|x| x.to_string()).unwrap_or_default()
    ))
}

/// The clauses up to the end of the statement. `alter` admits what only
/// ALTER SEQUENCE has (RESTART, RENAME TO).
pub(super) fn sequence_clauses(t: &mut Toks, alter: bool) -> Result<SequenceChange> {
    let what = if alter {
        "ALTER SEQUENCE"
    } else {
        "CREATE SEQUENCE"
    };
    let mut c = SequenceChange::default();
    let o = &mut c.options;
    while !t.at_end() {
        if t.eat("START") {
            t.eat("WITH");
            o.start = Some(num(t)?);
        } else if alter && t.eat("RESTART") {
            t.eat("WITH");
            let valued = matches!(t.t.get(t.i), Some(Token::Number(..) | Token::Minus));
            o.restart = Some(if valued { Some(num(t)?) } else { None });
        } else if t.eat("INCREMENT") {
            t.eat("BY");
            o.increment = Some(num(t)?);
        } else if t.eat("AS") {
            o.data_type = Some(match t.ident()?.to_ascii_lowercase().as_str() {
                "smallint" | "int2" => SeqType::SmallInt,
                "integer" | "int" | "int4" => SeqType::Int,
                "bigint" | "int8" => SeqType::BigInt,
                "text" | "varchar" | "numeric" | "real" | "float4" | "float8" | "boolean"
                | "bool" | "date" | "timestamp" | "uuid" | "bytea" | "json" | "jsonb" => {
                    return Err(SqlError::new(
                        crate::ErrorKind::InvalidParameter,
                        "sequence type must be smallint, integer, or bigint",
                    ))
                }
                other => {
                    return Err(SqlError::new(
                        crate::ErrorKind::UndefinedObject,
                        format!("type \"{other}\" does not exist"),
                    ))
                }
            });
        } else if t.eat("CACHE") {
            // Values handed out ahead: gaps are allowed anyway.
            o.cache = Some(num(t)?);
        } else if t.eat("MINVALUE") {
            o.min = Some(Some(num(t)?));
        } else if t.eat("MAXVALUE") {
            o.max = Some(Some(num(t)?));
        } else if t.eat("CYCLE") {
            o.cycle = Some(true);
        } else if t.eat("NOCYCLE") {
            o.cycle = Some(false);
        } else if t.eat("NO") {
            if t.eat("MINVALUE") {
                o.min = Some(None);
            } else if t.eat("MAXVALUE") {
                o.max = Some(None);
            } else if t.eat("CYCLE") {
                o.cycle = Some(false);
            } else if !t.eat("CACHE") {
                return Err(near(t, what));
            }
        } else if t.is(0, "OWNED") && t.is(1, "BY") {
            t.i += 2;
            c.owned_by = Some(if t.eat("NONE") {
                None
            } else {
                let mut parts = vec![t.ident()?];
                while t.eat_tok(&Token::Period) {
                    parts.push(t.ident()?);
                }
                let [.., table, column] = parts.as_slice() else {
                    return Err(SqlError::syntax(format!(
                        "invalid OWNED BY option ({}): specify OWNED BY table.column or OWNED BY NONE",
                        parts.join(".")
                    )));
                };
                Some((table.clone(), column.clone()))
            });
        } else if alter && t.is(0, "RENAME") && t.is(1, "TO") {
            t.i += 2;
            let folded = !t.quoted(0);
            let n = t.ident()?;
            c.rename = Some(if folded { n.to_ascii_lowercase() } else { n });
        } else if alter && t.word(0).is_some() {
            let mut clause = t.t[t.i].to_string().to_ascii_uppercase();
            if t.i + 1 < t.t.len() && matches!(clause.as_str(), "OWNER" | "SET") {
                clause = format!("{clause} {}", t.t[t.i + 1].to_string().to_ascii_uppercase());
            }
            return Err(SqlError::unsupported(format!(
                "ALTER SEQUENCE ... {clause}"
            )));
        } else {
            return Err(near(t, what));
        }
    }
    Ok(c)
}
