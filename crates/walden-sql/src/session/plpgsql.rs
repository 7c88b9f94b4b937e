//! PostgreSQL routines in the session: `CREATE FUNCTION ... LANGUAGE sql
//! | plpgsql`, `DROP FUNCTION f(types)` and `DO`, run by the procedural
//! runtime T-SQL batches use (with PostgreSQL's rules: a DO block is one
//! transaction, or fails the open one).

use super::SqlSession;
use crate::error::Result;
use crate::front::plpgsql::{may_be_routine, parse_plpgsql, recognise_routine, PgRoutine};
use crate::procedural::Runner;
use crate::QueryOutput;
use std::sync::atomic::Ordering::Relaxed;

impl SqlSession {
    /// A simple query that is one PostgreSQL routine statement, run;
    /// `pieces` are its statements (`front::split`).
    pub(super) fn pg_routine(&mut self, sql: &str, pieces: &[&str]) -> Option<Result<QueryOutput>> {
        // Most queries are no routine statement: one look at the first word.
        if !may_be_routine(sql) {
            return None;
        }
        // A T-SQL trigger's body runs to the end of the batch, `;` and all.
        if crate::front::plpgsql::trigger::is_tsql_create(sql) {
            let r = recognise_routine(sql)?;
            return Some(self.run_pg_routine(sql, r));
        }
        let [piece] = pieces else {
            return None;
        };
        let r = recognise_routine(piece)?;
        Some(self.run_pg_routine(piece, r))
    }

    /// Whether one of a query's statements is a PostgreSQL routine
    /// statement.
    pub(super) fn has_pg_routine(&self, pieces: &[&str]) -> bool {
        if crate::front::plpgsql::trigger::is_tsql_create(pieces[0]) {
            return false;
        }
        pieces.iter().any(|p| {
            let head = p.split_whitespace().next().unwrap_or("");
            ["create", "do", "drop", "call", "alter"]
                .iter()
                .any(|h| head.eq_ignore_ascii_case(h))
                && recognise_routine(p).is_some()
        })
    }

    /// One statement of a multi-statement query that holds routine
    /// statements, when it needs the procedural runtime: a routine
    /// statement, or one that calls a stored function (which the runtime
    /// inlines or runs). It runs in the query's implicit transaction.
    pub(super) fn routine_piece(&mut self, piece: &str) -> Option<Vec<Result<QueryOutput>>> {
        if let Some(r) = recognise_routine(piece) {
            return Some(vec![self.run_pg_routine(piece, r)]);
        }
        if crate::procedural::calls_user_function(self, piece) {
            return Some(self.run_tsql_batch(piece));
        }
        None
    }

    pub(super) fn run_pg_routine(
        &mut self,
        text: &str,
        r: Result<PgRoutine>,
    ) -> Result<QueryOutput> {
        let was_explicit = self.explicit;
        let out = (|| {
            let r = r?;
            self.cancel.store(false, Relaxed);
            self.tsql.deadline = crate::context::timeouts::statement(&self.settings)
                .map(|d| std::time::Instant::now() + d);
            match r {
                PgRoutine::CreateFunction(f) => Runner::new(self).create_pg_func(&f, text),
                PgRoutine::DropFunction {
                    names,
                    if_exists,
                    procedure,
                } => Runner::new(self).drop_pg_funcs(&names, if_exists, procedure),
                PgRoutine::Call { name, args } => Runner::new(self).run_call(&name, &args),
                PgRoutine::CreateTrigger(t) => Runner::new(self).create_trigger(&t),
                PgRoutine::DropTrigger(d) => Runner::new(self).drop_trigger(&d),
                PgRoutine::EnableTrigger(e) => Runner::new(self).enable_trigger(&e),
                PgRoutine::DropTsqlTriggers { names, if_exists } => {
                    Runner::new(self).drop_tsql_triggers(&names, if_exists)
                }
                PgRoutine::Do(body) => {
                    let stmts = parse_plpgsql(&body, &[])?;
                    Runner::new(self).run_do(&stmts)
                }
            }
        })();
        self.tsql.deadline = None;
        // As any failed statement in PostgreSQL, it fails the transaction.
        if out.is_err() && was_explicit && self.explicit {
            self.failed = true;
        }
        out
    }
}
