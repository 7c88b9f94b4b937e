//! `ANALYZE [VERBOSE] [table [(column, ...)] [, ...]]` and the VACUUM forms
//! that analyse (`VACUUM [FULL] [FREEZE] [VERBOSE] ANALYZE ...`,
//! `VACUUM (ANALYZE, ...) ...`); a VACUUM that does not analyse is accepted
//! and does nothing (Walden's versions are reclaimed as they age).

use super::toks::Toks;
use super::*;

/// One relation ANALYZE is asked for: its name as written (schema parts
/// joined by dots) and the columns named (all when empty).
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeTarget {
    pub name: Vec<String>,
    pub columns: Vec<String>,
}

/// Parses the statement `t` is at the first word of (`VACUUM` or
/// `ANALYZE`/`ANALYSE`).
pub(super) fn parse(t: &mut Toks, first: &str) -> Result<Command> {
    let vacuum = first == "VACUUM";
    t.i += 1;
    let mut analyze = !vacuum;
    if t.eat_tok(&Token::LParen) {
        // Options in parentheses: names, each with an optional value.
        loop {
            let opt = t.ident()?.to_ascii_uppercase();
            if matches!(opt.as_str(), "ANALYZE" | "ANALYSE") {
                analyze = true;
            }
            while !t.at_end() && !t.peek_is(&Token::Comma) && !t.peek_is(&Token::RParen) {
                t.next();
            }
            if t.eat_tok(&Token::Comma) {
                continue;
            }
            if t.eat_tok(&Token::RParen) {
                break;
            }
            return Err(SqlError::syntax(format!("syntax error in {first} options")));
        }
    } else {
        loop {
            if t.eat("FULL") || t.eat("FREEZE") || t.eat("VERBOSE") {
                continue;
            }
            if vacuum && (t.eat("ANALYZE") || t.eat("ANALYSE")) {
                analyze = true;
                continue;
            }
            break;
        }
    }
    let mut targets = Vec::new();
    while !t.at_end() {
        let mut name = vec![part(t)?];
        while t.eat_tok(&Token::Period) {
            name.push(part(t)?);
        }
        let mut columns = Vec::new();
        if t.eat_tok(&Token::LParen) {
            loop {
                columns.push(part(t)?);
                if t.eat_tok(&Token::Comma) {
                    continue;
                }
                if t.eat_tok(&Token::RParen) {
                    break;
                }
                return Err(SqlError::syntax(format!(
                    "syntax error in {first}'s column list"
                )));
            }
        }
        targets.push(AnalyzeTarget { name, columns });
        if !t.eat_tok(&Token::Comma) {
            break;
        }
    }
    t.end(first)?;
    if !analyze {
        return Ok(Command::Ignored(first.to_string()));
    }
    Ok(Command::Analyze { vacuum, targets })
}

/// A name part: as written when quoted, else in lower case.
fn part(t: &mut Toks) -> Result<String> {
    let quoted = t.quoted(0);
    let n = t.ident()?;
    Ok(if quoted { n } else { n.to_ascii_lowercase() })
}
