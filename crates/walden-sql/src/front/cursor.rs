//! The cursor statements as the front end reads them: `DECLARE`, `FETCH`,
//! `MOVE` (PostgreSQL's grammar); the cursors themselves are the session's
//! (`session/cursor.rs`).

use super::Command;
use crate::error::{Result, SqlError};
use sqlparser::ast::{Query, Statement};

/// PostgreSQL's FETCH_ALL (LONG_MAX): "all the rows".
pub const FETCH_ALL: i64 = i64::MAX;

/// `DECLARE name [BINARY] [ASENSITIVE|INSENSITIVE] [[NO] SCROLL] CURSOR
/// [{WITH|WITHOUT} HOLD] FOR query`.
#[derive(Clone, Debug)]
pub struct DeclareCursor {
    pub name: String,
    pub binary: bool,
    /// `Some(true)` for SCROLL, `Some(false)` for NO SCROLL.
    pub scroll: Option<bool>,
    pub hold: bool,
    pub query: Box<Query>,
    /// The statement as the client wrote it (`pg_cursors.statement`).
    pub text: String,
}

/// A FETCH or MOVE direction, as PostgreSQL's parser leaves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward(i64),
    Backward(i64),
    Absolute(i64),
    Relative(i64),
}

/// `FETCH` / `MOVE [direction] [FROM | IN] name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchCursor {
    pub direction: Direction,
    pub name: String,
    /// MOVE: position only, no rows.
    pub is_move: bool,
}

/// A word of a cursor statement: its text (folded unless quoted) and
/// whether it was quoted.
struct Word {
    text: String,
    quoted: bool,
}

/// A small scanner over the words of the cursor statements (their syntax is
/// keywords, a name and integers; DECLARE's query is handed to sqlparser).
struct Scan<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn skip_blank(&mut self) {
        loop {
            let rest = &self.s[self.at..];
            let trimmed = rest.trim_start();
            self.at += rest.len() - trimmed.len();
            if let Some(r) = trimmed.strip_prefix("--") {
                self.at += 2 + r.find('\n').unwrap_or(r.len());
            } else if let Some(r) = trimmed.strip_prefix("/*") {
                self.at += 2 + r.find("*/").map_or(r.len(), |i| i + 2);
            } else {
                return;
            }
        }
    }

    /// The next word, quoted identifier or (signed) integer.
    fn word(&mut self) -> Option<Word> {
        self.skip_blank();
        let rest = &self.s[self.at..];
        if let Some(r) = rest.strip_prefix('"') {
            let mut text = String::new();
            let mut chars = r.char_indices();
            while let Some((i, c)) = chars.next() {
                if c == '"' {
                    if r[i + 1..].starts_with('"') {
                        text.push('"');
                        chars.next();
                        continue;
                    }
                    self.at += i + 2;
                    return Some(Word { text, quoted: true });
                }
                text.push(c);
            }
            return None;
        }
        let len = rest
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_alphanumeric() || c == '_' || c == '$' || (i == 0 && (c == '-' || c == '+')))
            })
            .map_or(rest.len(), |(i, _)| i);
        if len == 0 {
            return None;
        }
        self.at += len;
        Some(Word {
            text: rest[..len].to_lowercase(),
            quoted: false,
        })
    }

    fn peek(&mut self) -> Option<Word> {
        let at = self.at;
        let w = self.word();
        self.at = at;
        w
    }

    /// Takes the next word if it is the keyword `kw` (lower case).
    fn eat(&mut self, kw: &str) -> bool {
        match self.peek() {
            Some(w) if !w.quoted && w.text == kw => {
                self.word();
                true
            }
            _ => false,
        }
    }

    fn end(&mut self) -> Result<()> {
        self.skip_blank();
        let rest = self.s[self.at..].trim_end_matches(';').trim();
        if rest.is_empty() {
            Ok(())
        } else {
            Err(near(rest))
        }
    }
}

fn near(rest: &str) -> SqlError {
    let tok: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace())
        .take(40)
        .collect();
    SqlError::syntax(format!("syntax error at or near \"{tok}\""))
}

/// Whether a statement is one of the cursor statements parsed here.
pub fn is_cursor_statement(first: &str) -> bool {
    matches!(first, "DECLARE" | "FETCH" | "MOVE" | "CLOSE")
}

/// Parses DECLARE, FETCH, MOVE or CLOSE (`first` is the upper-case first word).
pub fn parse_cursor_statement(first: &str, sql: &str) -> Result<Command> {
    let mut s = Scan { s: sql, at: 0 };
    s.word();
    match first {
        "DECLARE" => parse_declare(&mut s, sql).map(|d| Command::Declare(Box::new(d))),
        "FETCH" | "MOVE" => parse_fetch(&mut s, first == "MOVE").map(Command::Fetch),
        _ => {
            if s.eat("all") {
                s.end()?;
                return Ok(Command::CloseCursor(None));
            }
            let name = cursor_name(&mut s)?;
            s.end()?;
            Ok(Command::CloseCursor(Some(name)))
        }
    }
}

fn cursor_name(s: &mut Scan<'_>) -> Result<String> {
    match s.word() {
        Some(w) if w.quoted || !w.text.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
            Ok(w.text)
        }
        _ => Err(near(s.s[s.at..].trim_start())),
    }
}

fn parse_declare(s: &mut Scan<'_>, sql: &str) -> Result<DeclareCursor> {
    let name = cursor_name(s)?;
    let (mut binary, mut scroll) = (false, None);
    loop {
        if s.eat("binary") {
            binary = true;
        } else if s.eat("insensitive") || s.eat("asensitive") {
            // Every cursor here reads a fixed snapshot: insensitive.
        } else if s.eat("scroll") {
            scroll = Some(true);
        } else if s.eat("no") {
            if !s.eat("scroll") {
                return Err(near(s.s[s.at..].trim_start()));
            }
            scroll = Some(false);
        } else {
            break;
        }
    }
    if !s.eat("cursor") {
        return Err(near(s.s[s.at..].trim_start()));
    }
    let mut hold = false;
    if s.eat("with") {
        if !s.eat("hold") {
            return Err(near(s.s[s.at..].trim_start()));
        }
        hold = true;
    } else if s.eat("without") && !s.eat("hold") {
        return Err(near(s.s[s.at..].trim_start()));
    }
    if !s.eat("for") {
        return Err(near(s.s[s.at..].trim_start()));
    }
    let query =
        match crate::front::parse_sql(&sql[s.at..]).map_err(|e| e.shift_position(&sql[..s.at]))? {
            Statement::Query(q) => q,
            _ => {
                return Err(near(s.s[s.at..].trim_start()));
            }
        };
    if !query.locks.is_empty() || query.for_clause.is_some() {
        return Err(SqlError::unsupported(
            "DECLARE CURSOR ... FOR UPDATE/SHARE (rows would be locked at DECLARE, not as fetched)",
        ));
    }
    Ok(DeclareCursor {
        name,
        binary,
        scroll,
        hold,
        query,
        text: sql.trim().trim_end_matches(';').trim_end().to_string(),
    })
}

fn count(s: &mut Scan<'_>) -> Result<Option<i64>> {
    match s.peek() {
        Some(w)
            if !w.quoted
                && w.text
                    .starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') =>
        {
            s.word();
            // PostgreSQL's grammar takes a 32-bit integer here.
            w.text
                .parse::<i32>()
                .map(|n| Some(n as i64))
                .map_err(|_| SqlError::syntax(format!("syntax error at or near \"{}\"", w.text)))
        }
        _ => Ok(None),
    }
}

fn parse_fetch(s: &mut Scan<'_>, is_move: bool) -> Result<FetchCursor> {
    use Direction as D;
    let direction = if s.eat("next") {
        D::Forward(1)
    } else if s.eat("prior") {
        D::Backward(1)
    } else if s.eat("first") {
        D::Absolute(1)
    } else if s.eat("last") {
        D::Absolute(-1)
    } else if s.eat("absolute") {
        D::Absolute(count(s)?.ok_or_else(|| near(s.s[s.at..].trim_start()))?)
    } else if s.eat("relative") {
        D::Relative(count(s)?.ok_or_else(|| near(s.s[s.at..].trim_start()))?)
    } else if s.eat("all") {
        D::Forward(FETCH_ALL)
    } else if s.eat("forward") {
        if s.eat("all") {
            D::Forward(FETCH_ALL)
        } else {
            D::Forward(count(s)?.unwrap_or(1))
        }
    } else if s.eat("backward") {
        if s.eat("all") {
            D::Backward(FETCH_ALL)
        } else {
            D::Backward(count(s)?.unwrap_or(1))
        }
    } else if let Some(n) = count(s)? {
        D::Forward(n)
    } else {
        D::Forward(1)
    };
    let _ = s.eat("from") || s.eat("in");
    let name = cursor_name(s)?;
    s.end()?;
    Ok(FetchCursor {
        direction,
        name,
        is_move,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn parse_fetch_sql(sql: &str) -> FetchCursor {
        match parse_cursor_statement(sql.split_whitespace().next().unwrap(), sql).unwrap() {
            crate::front::Command::Fetch(f) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn directions_parse_as_postgres_grammar_has_them() {
        use Direction as D;
        for (sql, dir) in [
            ("FETCH c", D::Forward(1)),
            ("FETCH FROM c", D::Forward(1)),
            ("FETCH NEXT c", D::Forward(1)),
            ("FETCH PRIOR IN c", D::Backward(1)),
            ("FETCH FIRST FROM c", D::Absolute(1)),
            ("FETCH LAST FROM c", D::Absolute(-1)),
            ("FETCH ABSOLUTE -2 FROM c", D::Absolute(-2)),
            ("FETCH RELATIVE +3 FROM c", D::Relative(3)),
            ("FETCH 5 c", D::Forward(5)),
            ("FETCH -5 c", D::Forward(-5)),
            ("FETCH ALL FROM c", D::Forward(FETCH_ALL)),
            ("FETCH FORWARD FROM c", D::Forward(1)),
            ("FETCH FORWARD 7 FROM c", D::Forward(7)),
            ("FETCH BACKWARD ALL FROM c", D::Backward(FETCH_ALL)),
            ("MOVE BACKWARD 2 IN c;", D::Backward(2)),
        ] {
            let f = parse_fetch_sql(sql);
            assert_eq!((f.direction, f.name.as_str()), (dir, "c"), "{sql}");
        }
        assert_eq!(parse_fetch_sql("FETCH 1 FROM \"MiXed\"").name, "MiXed");
        assert_eq!(parse_fetch_sql("FETCH 1 FROM MiXed").name, "mixed");
        for bad in [
            "FETCH 99999999999 FROM c",
            "FETCH ABSOLUTE FROM c",
            "FETCH FROM",
            "FETCH 1 FROM c d",
        ] {
            assert!(parse_cursor_statement("FETCH", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn declare_options_parse() {
        let sql = "DECLARE \"Cur\" BINARY INSENSITIVE NO SCROLL CURSOR WITH HOLD FOR SELECT 1";
        let crate::front::Command::Declare(d) = parse_cursor_statement("DECLARE", sql).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (d.name.as_str(), d.binary, d.scroll, d.hold),
            ("Cur", true, Some(false), true)
        );
        assert!(
            parse_cursor_statement("DECLARE", "DECLARE c CURSOR FOR INSERT INTO t VALUES (1)")
                .is_err()
        );
        assert!(parse_cursor_statement("DECLARE", "DECLARE c CURSOR WITH FOR SELECT 1").is_err());
        let e =
            parse_cursor_statement("DECLARE", "DECLARE c CURSOR FOR SELECT * FROM t FOR UPDATE")
                .unwrap_err();
        assert_eq!(e.kind, ErrorKind::FeatureNotSupported);
    }
}
