//! The session's cursors (a child of `session.rs`): which transaction owns
//! each, DECLARE / FETCH / MOVE / CLOSE, and their memory.
//!
//! As in PostgreSQL, a cursor ends with the transaction that declared it,
//! unless WITH HOLD, which then outlives that transaction's commit (and
//! goes with its rollback). A cursor records the id of the transaction that
//! declared it until that commits; one whose transaction is no longer the
//! session's is gone (the transaction ended without committing it).

use super::SqlSession;
use crate::error::{ErrorKind, Result, SqlError};
use crate::session::cursor::{Cursor, CursorRow, DeclareCursor, FetchCursor};
use crate::QueryOutput;
use sqlparser::ast::Statement;
use walden_engine::Value;

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
