//! T-SQL batches in the session: a simple query that `front::is_tsql_batch`
//! recognises runs through the procedural runtime, with the session as its
//! [`Host`]. Each statement auto-commits unless a transaction is open, as
//! in SQL Server; the batch's statement_timeout and the client's cancel
//! apply to the batch as a whole (a WHILE loop included).

use super::SqlSession;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::Command;
use crate::procedural::{Host, Runner, TsqlState};
use crate::QueryOutput;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use walden_engine::Value;

impl SqlSession {
    /// Runs a T-SQL batch: its results in order, then its error if one
    /// stopped it.
    pub(super) fn run_tsql_batch(&mut self, sql: &str) -> Vec<Result<QueryOutput>> {
        let stmts = match crate::front::parse_batch(sql) {
            Ok(s) => s,
            Err(e) => {
                self.note_error();
                return vec![Err(e)];
            }
        };
        self.cancel.store(false, Relaxed);
        self.tsql.deadline = crate::session::timeouts::statement(&self.settings)
            .map(|d| std::time::Instant::now() + d);
        if !self.explicit {
            self.tsql.nest = 0;
        }
        let mut runner = Runner::new(self);
        let r = runner.run_batch(&stmts);
        let mut out = std::mem::take(&mut runner.out);
        drop(runner);
        self.tsql.deadline = None;
        if let Err(e) = r {
            self.note_error();
            out.push(Err(e));
        }
        out
    }
}

impl SqlSession {
    /// `EXECUTE name` alone is PostgreSQL's EXECUTE of a prepared statement
    /// when the session has one of that name, else T-SQL's procedure call.
    pub(super) fn tsql_execute(&self, sql: &str) -> bool {
        let pieces = crate::front::split(sql);
        let [piece] = pieces.as_slice() else {
            return false;
        };
        match crate::front::parse_execute(piece) {
            Some(Command::ExecutePrepared { name, args }) => {
                args.is_empty() && !self.sql_prepared.iter().any(|p| p.name == name)
            }
            _ => false,
        }
    }
}

impl Host for SqlSession {
    fn parse(&mut self, sql: &str) -> Result<Arc<Command>> {
        self.parse_cached(sql)
    }

    fn run(&mut self, cmd: &Arc<Command>, params: &[Value]) -> Result<QueryOutput> {
        let r = self.execute_shared(cmd, params);
        if !self.explicit {
            self.tsql.nest = 0;
        }
        r
    }

    fn in_transaction(&self) -> bool {
        self.explicit
    }

    fn statement_failed(&mut self) {
        self.note_error();
    }

    fn check_cancel(&self) -> Result<()> {
        if self.tsql.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err(SqlError::new(
                ErrorKind::Cancelled,
                "canceling statement due to statement timeout",
            ));
        }
        if self.cancel.load(Relaxed) {
            return Err(SqlError::new(
                ErrorKind::Cancelled,
                "canceling statement due to user request",
            ));
        }
        Ok(())
    }

    fn state(&mut self) -> &mut TsqlState {
        &mut self.tsql
    }
}
