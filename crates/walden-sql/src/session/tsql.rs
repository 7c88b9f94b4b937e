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
use walden_engine::{DataType, Value};

/// The savepoint each changing statement of a T-SQL batch runs in, inside
/// a transaction (a name no client can write).
const STATEMENT_SAVEPOINT: &str = "walden: T-SQL statement";

impl SqlSession {
    /// Runs a T-SQL batch: its results in order, then its error if one
    /// stopped it.
    pub(super) fn run_tsql_batch(&mut self, sql: &str) -> Vec<Result<QueryOutput>> {
        let stmts = match crate::front::parse_batch(sql) {
            Ok(s) => s,
            // Nothing ran: an open transaction goes on, as in SQL Server.
            Err(e) => {
                self.tsql.handled_errors = 1;
                return vec![Err(e)];
            }
        };
        self.cancel.store(false, Relaxed);
        self.tsql.deadline = crate::context::timeouts::statement(&self.settings)
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
            out.push(Err(e));
        }
        // Each error was dealt with where it happened: outside a
        // transaction its statement's own transaction ended; inside one,
        // the statement's savepoint undid it (SQL Server's statement-level
        // rollback) and the transaction goes on.
        self.tsql.handled_errors = out.iter().filter(|r| r.is_err()).count();
        out
    }
}

impl SqlSession {
    /// Whether a statement of PostgreSQL's grammar runs as a T-SQL batch
    /// because the session speaks T-SQL and has a transaction open: so a
    /// failed statement is undone alone and the transaction goes on, as in
    /// SQL Server, also in a transaction begun with `BEGIN TRANSACTION`
    /// (which PostgreSQL's grammar takes too) and for a statement with no
    /// T-SQL of its own. A failed transaction keeps PostgreSQL's rule;
    /// COPY keeps its own protocol, and a text the batch grammar does not
    /// take (PostgreSQL's `DECLARE c CURSOR`, dollar quotes) PostgreSQL's.
    pub(super) fn tsql_statement_in_transaction(&self, sql: &str) -> bool {
        self.tsql.speaks
            && self.explicit
            && !self.failed
            && !sql
                .trim_start()
                .get(..4)
                .is_some_and(|w| w.eq_ignore_ascii_case("copy"))
            && crate::front::parse_batch(sql).is_ok()
    }
}

impl SqlSession {
    /// `EXECUTE name` alone is PostgreSQL's EXECUTE of a prepared statement
    /// when the session has one of that name, else T-SQL's procedure call.
    /// `pieces`: the query's statements (`front::split`).
    pub(super) fn tsql_execute(&self, pieces: &[&str]) -> bool {
        let [piece] = pieces else {
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

impl SqlSession {
    /// Whether a piece of the batch that PostgreSQL's grammar refuses is
    /// T-SQL statements separated by line breaks (`SELECT ...` newline
    /// `TRUNCATE ...`). Pieces that parse are parsed once: the parse cache
    /// keeps them for the run that follows. A piece with a template (its
    /// literals lifted: `templates`, beside `pieces`) parsed as one
    /// statement, so its text is not parsed again: the text differs call
    /// to call and would only fill the parse cache.
    pub(super) fn newline_batch<T>(&mut self, pieces: &[&str], templates: &[Option<T>]) -> bool {
        pieces.iter().zip(templates).any(|(p, t)| {
            t.is_none()
                && p.trim().contains('\n')
                && matches!(self.parse_cached(p), Err(e) if e.kind == ErrorKind::Syntax)
                && crate::front::parse_batch(p).is_ok_and(|b| b.len() > 1)
        })
    }
}

impl Host for SqlSession {
    fn parse(&mut self, sql: &str) -> Result<Arc<Command>> {
        self.parse_cached(sql)
    }

    fn run_typed(
        &mut self,
        cmd: &Arc<Command>,
        params: &[Value],
        types: &[Option<DataType>],
    ) -> Result<QueryOutput> {
        let before = std::mem::replace(&mut self.routine_param_types, types.to_vec());
        let r = self.run(cmd, params);
        self.routine_param_types = before;
        r
    }

    fn run(&mut self, cmd: &Arc<Command>, params: &[Value]) -> Result<QueryOutput> {
        let query = matches!(cmd.as_ref(), Command::Sql(s) if matches!(s.as_ref(), sqlparser::ast::Statement::Query(_)));
        // An uncommittable transaction (XACT_ABORT's error in TRY) reads;
        // only ROLLBACK ends it.
        if self.explicit && self.tsql.doomed && !query && !matches!(cmd.as_ref(), Command::Rollback)
        {
            return Err(SqlError::new(
                ErrorKind::InFailedTransaction,
                "The current transaction cannot be committed and cannot support operations that write to the log file. Roll back the transaction.",
            ));
        }
        // Inside a transaction a statement that changes something runs in
        // a savepoint of its own: a failed one is undone alone and the
        // transaction goes on, as in SQL Server (PostgreSQL would fail it).
        // (A query changes nothing to undo; transaction control is the
        // transaction's own.)
        let guarded = self.explicit
            && !self.failed
            && !matches!(
                cmd.as_ref(),
                Command::Tx(_) | Command::Commit(_) | Command::Rollback
            )
            && !matches!(cmd.as_ref(), Command::Sql(s) if matches!(s.as_ref(), sqlparser::ast::Statement::Query(_)));
        if guarded {
            self.block_tx().savepoint(STATEMENT_SAVEPOINT)?;
        }
        let r = self.execute_shared(cmd, params);
        if guarded {
            if let Some(tx) = self
                .tx
                .as_mut()
                .filter(|t| t.has_savepoint(STATEMENT_SAVEPOINT))
            {
                let undone = match &r {
                    Ok(_) => Ok(()),
                    Err(_) => tx.rollback_to_savepoint(STATEMENT_SAVEPOINT),
                };
                if undone
                    .and_then(|_| tx.release_savepoint(STATEMENT_SAVEPOINT))
                    .is_err()
                {
                    self.note_error();
                }
            }
        }
        if !self.explicit {
            self.tsql.nest = 0;
            self.tsql.doomed = false;
        }
        r
    }

    fn in_transaction(&self) -> bool {
        // A multi-statement query's implicit block is a transaction too:
        // a DO or a call in it runs in it, not in one of its own.
        self.explicit || self.implicit
    }

    fn transaction_failed(&self) -> bool {
        self.failed
    }

    fn doom(&mut self) {
        if self.explicit {
            self.tsql.doomed = true;
        }
    }

    fn doomed(&self) -> bool {
        self.explicit && self.tsql.doomed
    }

    fn check_cancel(&self) -> Result<()> {
        if self
            .tsql
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
        {
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
