//! Server-side cursors: the open cursors of a session, their rows and
//! positions (`FETCH`, `MOVE`), which transaction owns each, and the rows
//! of `pg_cursors`. `DECLARE` / `FETCH` / `MOVE` are parsed in
//! `front/cursor.rs`.
//!
//! A cursor's query runs to completion at DECLARE and its rows are kept
//! (the executor is not streaming): the cursor then reads exactly the
//! snapshot DECLARE saw, as PostgreSQL's does, whatever the transaction
//! writes afterwards. Positioning follows PostgreSQL's portal code
//! (`PortalRunFetch` / `PortalRunSelect` / `DoPortalRewind` in pquery.c)
//! step by step over the kept rows, so the counts in the `FETCH n` / `MOVE n`
//! tags and the cases a NO SCROLL cursor refuses come out as there.
//!
//! As in PostgreSQL, a cursor ends with the transaction that declared it,
//! unless WITH HOLD, which then outlives that transaction's commit (and
//! goes with its rollback). A cursor records the id of the transaction that
//! declared it until that commits; one whose transaction is no longer the
//! session's is gone (the transaction ended without committing it).

use crate::context::CursorRow;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::{DeclareCursor, Direction, FetchCursor, FETCH_ALL};
use crate::session::SqlSession;
use crate::{Column, QueryOutput};
use sqlparser::ast::Statement;
use walden_engine::Value;

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

fn no_cursor(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedCursor,
        format!("cursor \"{name}\" does not exist"),
    )
}

/// The bytes a kept row is charged (as the statement budget charges rows).
fn row_bytes(width: usize) -> u64 {
    24 + 32 * width as u64
}

impl SqlSession {
    fn current_txid(&self) -> Option<u64> {
        self.tx.as_ref().map(|t| t.id())
    }

    /// Drops the cursors whose transaction has ended without committing them.
    fn prune_cursors(&mut self) {
        let current = self.current_txid();
        self.cursors
            .retain(|c| c.owner.is_none() || c.owner == current);
    }

    /// The transaction `txid` committed: its WITH HOLD cursors stay, the
    /// others close.
    pub(super) fn cursors_committed(&mut self, txid: u64) {
        self.cursors.retain_mut(|c| {
            if c.owner == Some(txid) {
                c.owner = None;
                c.hold
            } else {
                true
            }
        });
    }

    /// The open cursors, for `pg_cursors`.
    pub(super) fn cursor_rows(&self) -> Vec<CursorRow> {
        let current = self.current_txid();
        self.cursors
            .iter()
            .filter(|c| c.owner.is_none() || c.owner == current)
            .map(|c| CursorRow {
                name: c.name.clone(),
                statement: c.text.clone(),
                hold: c.hold,
                binary: c.binary,
                scroll: c.scroll,
                created: c.created,
            })
            .collect()
    }

    /// The result columns of an open cursor (Describe of a portal by a
    /// cursor's name, and of a FETCH statement).
    pub fn cursor_columns(&self, name: &str) -> Option<Vec<crate::Column>> {
        let current = self.current_txid();
        self.cursors
            .iter()
            .find(|c| c.name == name && (c.owner.is_none() || c.owner == current))
            .map(|c| c.columns.clone())
    }

    pub(super) fn close_all_cursors(&mut self) {
        self.cursors.clear();
    }

    pub(super) fn declare(&mut self, d: &DeclareCursor, params: &[Value]) -> Result<QueryOutput> {
        // PostgreSQL's implicit block of a multi-statement query counts as
        // a block; the extended protocol's statements between Syncs do not.
        let in_block = self.explicit || (self.implicit && !self.pipeline);
        if !d.hold && !in_block {
            return Err(SqlError::new(
                ErrorKind::NoActiveTransaction,
                "DECLARE CURSOR can only be used in transaction blocks",
            ));
        }
        self.prune_cursors();
        if self.cursors.iter().any(|c| c.name == d.name) {
            return Err(SqlError::new(
                ErrorKind::DuplicateCursor,
                format!("cursor \"{}\" already exists", d.name),
            ));
        }
        // The rows are computed now, in the current transaction: they are
        // what its snapshot at DECLARE shows.
        let out = self.statement(&Statement::Query(d.query.clone()), params)?;
        let columns = out.columns.unwrap_or_default();
        let bytes = out.rows.len() as u64 * row_bytes(columns.len());
        let held: u64 = self.cursors.iter().map(|c| c.bytes).sum();
        let limit = self.engine.statement_memory_limit();
        if limit > 0 && held + bytes > limit {
            return Err(SqlError::new(
                ErrorKind::OutOfMemory,
                format!(
                    "out of memory: the session's open cursors would hold more than statement_memory_limit ({} MB)",
                    limit >> 20
                ),
            ));
        }
        // Outside a block (WITH HOLD) the query's own transaction has
        // committed already.
        let owner = self.current_txid();
        let created = walden_engine::types::now_micros();
        self.cursors
            .push(Cursor::new(d, columns, out.rows, created, owner, bytes));
        Ok(QueryOutput::command("DECLARE CURSOR"))
    }

    pub(super) fn fetch(&mut self, f: &FetchCursor) -> Result<QueryOutput> {
        self.prune_cursors();
        let c = self
            .cursors
            .iter_mut()
            .find(|c| c.name == f.name)
            .ok_or_else(|| no_cursor(&f.name))?;
        let (n, rows) = c.fetch(f.direction, !f.is_move)?;
        if f.is_move {
            return Ok(QueryOutput::command(format!("MOVE {n}")));
        }
        Ok(QueryOutput {
            columns: Some(c.columns.clone()),
            rows,
            tag: format!("FETCH {n}"),
            binary: c.binary,
            ..Default::default()
        })
    }

    pub(super) fn close_cursor(&mut self, name: Option<&str>) -> Result<QueryOutput> {
        self.prune_cursors();
        match name {
            None => {
                self.cursors.clear();
                Ok(QueryOutput::command("CLOSE CURSOR ALL"))
            }
            Some(n) => {
                let i = self
                    .cursors
                    .iter()
                    .position(|c| c.name == n)
                    .ok_or_else(|| no_cursor(n))?;
                self.cursors.remove(i);
                Ok(QueryOutput::command("CLOSE CURSOR"))
            }
        }
    }
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
