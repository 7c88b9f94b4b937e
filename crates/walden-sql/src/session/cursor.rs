//! Server-side cursors: `DECLARE`, `FETCH`, `MOVE`, `CLOSE` and the rows of
//! `pg_cursors`.
//!
//! A cursor's query runs to completion at DECLARE and its rows are kept
//! (the executor is not streaming): the cursor then reads exactly the
//! snapshot DECLARE saw, as PostgreSQL's does, whatever the transaction
//! writes afterwards. Positioning follows PostgreSQL's portal code
//! (`PortalRunFetch` / `PortalRunSelect` / `DoPortalRewind` in pquery.c)
//! step by step over the kept rows, so the counts in the `FETCH n` / `MOVE n`
//! tags and the cases a NO SCROLL cursor refuses come out as there.
//! The session part (which transaction owns a cursor) is in `cursors.rs`.

use crate::error::{ErrorKind, Result, SqlError};
use crate::Column;
use sqlparser::ast::{Query, Statement};
use walden_engine::Value;

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
pub fn parse(first: &str, sql: &str) -> Result<crate::front::Command> {
    use crate::front::Command;
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

/// One open cursor: its rows and PostgreSQL's portal position.
#[derive(Debug)]
pub struct Cursor {
    pub name: String,
    pub text: String,
    pub columns: Vec<Column>,
    pub binary: bool,
    pub scroll: bool,
    pub hold: bool,
    /// When DECLARE ran (`pg_cursors.creation_time`, UTC microseconds).
    pub created: i64,
    /// The transaction that declared it while that has not committed; `None`
    /// once a WITH HOLD cursor outlives it.
    pub owner: Option<u64>,
    /// Bytes charged for its rows against the session's cursor budget.
    pub bytes: u64,
    rows: Vec<Vec<Value>>,
    /// The scan's place: 0 before the first row, k on row k, len + 1 after
    /// the last (the executor's position under the portal).
    at: usize,
    /// The portal's own bookkeeping (portalPos, atStart, atEnd).
    portal_pos: u64,
    at_start: bool,
    at_end: bool,
}

fn cannot_scroll() -> SqlError {
    SqlError::new(ErrorKind::PrerequisiteState, "cursor can only scan forward").with_fields(
        crate::error::ErrorFields {
            hint: Some("Declare it with SCROLL option to enable backward scan.".into()),
            ..Default::default()
        },
    )
}

impl Cursor {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        d: &DeclareCursor,
        columns: Vec<Column>,
        rows: Vec<Vec<Value>>,
        created: i64,
        owner: Option<u64>,
        bytes: u64,
    ) -> Cursor {
        Cursor {
            name: d.name.clone(),
            text: d.text.clone(),
            columns,
            binary: d.binary,
            // Without SCROLL or NO SCROLL, PostgreSQL allows scrolling when
            // the plan can run backwards at no extra cost; kept rows always can.
            scroll: d.scroll.unwrap_or(true),
            hold: d.hold,
            created,
            owner,
            bytes,
            rows,
            at: 0,
            portal_pos: 0,
            at_start: true,
            at_end: false,
        }
    }

    /// Reads up to `count` rows (0: all) from the kept rows in a direction,
    /// moving the scan; `out` collects them unless the caller only moves.
    fn run_from_store(
        &mut self,
        forward: bool,
        count: u64,
        mut out: Option<&mut Vec<Vec<Value>>>,
    ) -> u64 {
        let len = self.rows.len();
        let mut n = 0u64;
        while count == 0 || n < count {
            if forward {
                if self.at > len {
                    break;
                }
                self.at += 1;
                if self.at > len {
                    break;
                }
            } else {
                if self.at == 0 {
                    break;
                }
                self.at -= 1;
                if self.at == 0 {
                    break;
                }
            }
            if let Some(o) = out.as_deref_mut() {
                o.push(self.rows[self.at - 1].clone());
            }
            n += 1;
        }
        n
    }

    /// PostgreSQL's PortalRunSelect.
    fn run_select(
        &mut self,
        forward: bool,
        count: i64,
        out: Option<&mut Vec<Vec<Value>>>,
    ) -> Result<u64> {
        if forward {
            let moving = !(self.at_end || count <= 0);
            let count = if !moving || count == FETCH_ALL {
                0
            } else {
                count as u64
            };
            if !moving {
                return Ok(0);
            }
            let n = self.run_from_store(true, count, out);
            if n > 0 {
                self.at_start = false;
            }
            if count == 0 || n < count {
                self.at_end = true;
            }
            self.portal_pos += n;
            Ok(n)
        } else {
            if !self.scroll {
                return Err(cannot_scroll());
            }
            let moving = !(self.at_start || count <= 0);
            if !moving {
                return Ok(0);
            }
            let count = if count == FETCH_ALL { 0 } else { count as u64 };
            let n = self.run_from_store(false, count, out);
            if n > 0 && self.at_end {
                self.at_end = false;
                self.portal_pos += 1;
            }
            if count == 0 || n < count {
                self.at_start = true;
                self.portal_pos = 0;
            } else {
                self.portal_pos -= n;
            }
            Ok(n)
        }
    }

    /// PostgreSQL's DoPortalRewind.
    fn rewind(&mut self) -> Result<()> {
        if self.at_start && !self.at_end {
            return Ok(());
        }
        if !self.scroll {
            return Err(cannot_scroll());
        }
        self.at = 0;
        self.at_start = true;
        self.at_end = false;
        self.portal_pos = 0;
        Ok(())
    }

    /// FETCH (rows returned) or MOVE (`want_rows` false): the count for the
    /// command tag and the rows, as PostgreSQL's PortalRunFetch.
    pub fn fetch(&mut self, dir: Direction, want_rows: bool) -> Result<(u64, Vec<Vec<Value>>)> {
        let mut rows = Vec::new();
        let n = self.fetch_into(dir, want_rows.then_some(&mut rows))?;
        Ok((n, rows))
    }

    fn fetch_into(&mut self, dir: Direction, out: Option<&mut Vec<Vec<Value>>>) -> Result<u64> {
        let (mut forward, mut count) = match dir {
            Direction::Forward(c) if c < 0 => (false, -c),
            Direction::Forward(c) => (true, c),
            Direction::Backward(c) if c < 0 => (true, -c),
            Direction::Backward(c) => (false, c),
            Direction::Absolute(c) if c > 0 => {
                let pos = self.portal_pos;
                if (c - 1) as u64 <= pos / 2 || pos >= i64::MAX as u64 {
                    self.rewind()?;
                    if c > 1 {
                        self.run_select(true, c - 1, None)?;
                    }
                } else {
                    let mut pos = pos as i64;
                    if self.at_end {
                        pos += 1;
                    }
                    if c <= pos {
                        self.run_select(false, pos - c + 1, None)?;
                    } else if c > pos + 1 {
                        self.run_select(true, c - pos - 1, None)?;
                    }
                }
                return self.run_select(true, 1, out);
            }
            Direction::Absolute(c) if c < 0 => {
                self.run_select(true, FETCH_ALL, None)?;
                if c < -1 {
                    self.run_select(false, -c - 1, None)?;
                }
                return self.run_select(false, 1, out);
            }
            Direction::Absolute(_) => {
                self.rewind()?;
                return self.run_select(true, 0, out);
            }
            Direction::Relative(c) if c > 0 => {
                if c > 1 {
                    self.run_select(true, c - 1, None)?;
                }
                return self.run_select(true, 1, out);
            }
            Direction::Relative(c) if c < 0 => {
                if c < -1 {
                    self.run_select(false, -c - 1, None)?;
                }
                return self.run_select(false, 1, out);
            }
            Direction::Relative(_) => (true, 0),
        };
        if count == 0 {
            // Zero re-fetches the current row, if the cursor is on one.
            let on_row = !self.at_start && !self.at_end;
            if out.is_none() {
                return Ok(on_row as u64);
            }
            if on_row {
                self.run_select(false, 1, None)?;
                count = 1;
                forward = true;
            }
        }
        if !forward && count == FETCH_ALL && out.is_none() {
            // MOVE BACKWARD ALL is a rewind.
            let mut n = self.portal_pos;
            if n > 0 && !self.at_end {
                n -= 1;
            }
            self.rewind()?;
            return Ok(n);
        }
        self.run_select(forward, count, out)
    }
}

/// A row of `pg_cursors`.
#[derive(Clone, Debug)]
pub struct CursorRow {
    pub name: String,
    pub statement: String,
    pub hold: bool,
    pub binary: bool,
    pub scroll: bool,
    pub created: i64,
}

/// `pg_cursors`' columns.
pub fn pg_cursors_columns() -> Vec<(&'static str, walden_engine::DataType)> {
    use walden_engine::DataType as T;
    vec![
        ("name", T::Text),
        ("statement", T::Text),
        ("is_holdable", T::Bool),
        ("is_binary", T::Bool),
        ("is_scrollable", T::Bool),
        ("creation_time", T::TimestampTz),
    ]
}

pub fn pg_cursors_rows(rows: &[CursorRow]) -> Vec<Vec<Value>> {
    rows.iter()
        .map(|c| {
            vec![
                Value::text(&c.name),
                Value::text(&c.statement),
                Value::Bool(c.hold),
                Value::Bool(c.binary),
                Value::Bool(c.scroll),
                Value::TimestampTz(c.created),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(n: i64, scroll: Option<bool>) -> Cursor {
        let d = DeclareCursor {
            name: "c".into(),
            binary: false,
            scroll,
            hold: false,
            query: match crate::front::parse_sql("SELECT 1").unwrap() {
                Statement::Query(q) => q,
                _ => unreachable!(),
            },
            text: String::new(),
        };
        let rows = (1..=n).map(|i| vec![Value::Int(i)]).collect();
        Cursor::new(&d, vec![], rows, 0, None, 0)
    }

    fn ids(r: &[Vec<Value>]) -> Vec<i64> {
        r.iter().map(|r| r[0].as_i64().unwrap()).collect()
    }

    fn parse_fetch_sql(sql: &str) -> FetchCursor {
        match parse(sql.split_whitespace().next().unwrap(), sql).unwrap() {
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
            assert!(parse("FETCH", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn declare_options_parse() {
        let sql = "DECLARE \"Cur\" BINARY INSENSITIVE NO SCROLL CURSOR WITH HOLD FOR SELECT 1";
        let crate::front::Command::Declare(d) = parse("DECLARE", sql).unwrap() else {
            panic!()
        };
        assert_eq!(
            (d.name.as_str(), d.binary, d.scroll, d.hold),
            ("Cur", true, Some(false), true)
        );
        assert!(parse("DECLARE", "DECLARE c CURSOR FOR INSERT INTO t VALUES (1)").is_err());
        assert!(parse("DECLARE", "DECLARE c CURSOR WITH FOR SELECT 1").is_err());
        let e = parse("DECLARE", "DECLARE c CURSOR FOR SELECT * FROM t FOR UPDATE").unwrap_err();
        assert_eq!(e.kind, ErrorKind::FeatureNotSupported);
    }

    #[test]
    fn forward_backward_and_the_ends() {
        let mut c = cursor(3, None);
        assert_eq!(ids(&c.fetch(Direction::Forward(1), true).unwrap().1), [1]);
        assert_eq!(c.fetch(Direction::Backward(1), true).unwrap().0, 0);
        assert_eq!(
            ids(&c.fetch(Direction::Forward(FETCH_ALL), true).unwrap().1),
            [1, 2, 3]
        );
        assert_eq!(ids(&c.fetch(Direction::Backward(1), true).unwrap().1), [3]);
        assert_eq!(
            ids(&c.fetch(Direction::Backward(FETCH_ALL), true).unwrap().1),
            [2, 1]
        );
        assert_eq!(ids(&c.fetch(Direction::Absolute(-1), true).unwrap().1), [3]);
        assert_eq!(ids(&c.fetch(Direction::Relative(0), true).unwrap().1), [3]);
        assert_eq!(ids(&c.fetch(Direction::Absolute(2), true).unwrap().1), [2]);
        assert_eq!(c.fetch(Direction::Absolute(5), true).unwrap().0, 0);
        assert_eq!(ids(&c.fetch(Direction::Relative(-2), true).unwrap().1), [2]);
        assert_eq!(c.fetch(Direction::Forward(0), false).unwrap().0, 1);
    }

    #[test]
    fn no_scroll_refuses_what_postgres_refuses() {
        let mut c = cursor(3, Some(false));
        // Rewinding a cursor that has not moved is allowed.
        assert_eq!(ids(&c.fetch(Direction::Absolute(1), true).unwrap().1), [1]);
        assert_eq!(ids(&c.fetch(Direction::Relative(2), true).unwrap().1), [3]);
        let e = c.fetch(Direction::Backward(1), true).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PrerequisiteState);
        assert!(c.fetch(Direction::Absolute(1), true).is_err());
    }
}
