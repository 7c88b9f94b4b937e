//! The session's transaction block: BEGIN with modes, SET TRANSACTION,
//! savepoints, what an error does to the block, and the implicit block of a
//! multi-statement simple query. (A child of `session/mod.rs`: it works on the
//! session's private state.)
//!
//! As PostgreSQL: an error inside a block aborts it (25P02 for everything
//! but ROLLBACK, COMMIT and ROLLBACK TO) and undoes at once the work of the
//! innermost savepoint, or of the whole transaction when there is none,
//! releasing the row locks taken there. `ROLLBACK TO` a savepoint makes the
//! block usable again.

use super::SqlSession;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::transaction::{check_isolation, TxCommand, TxModes};
use crate::QueryOutput;
use walden_engine::types::now_micros;
use walden_engine::{CommitRequest, Transaction};

fn no_block(what: &str) -> SqlError {
    SqlError::new(
        ErrorKind::NoActiveTransaction,
        format!("{what} can only be used in transaction blocks"),
    )
}

impl SqlSession {
    /// A new transaction in the session's current read-only mode.
    pub(super) fn new_tx(&self) -> Transaction {
        let mut tx = self.db.begin(&self.session);
        tx.set_read_only(self.settings.tx_read_only());
        tx
    }

    /// An error in a statement: see the module comment. Outside a block the
    /// statement's own (or the implicit block's) transaction is rolled back.
    pub(super) fn note_error(&mut self) {
        if self.explicit {
            self.failed = true;
            if let Some(tx) = self.tx.as_mut().filter(|t| t.in_savepoint()) {
                tx.rollback_to_newest_savepoint();
                return;
            }
        }
        if let Some(tx) = self.tx.take() {
            tx.rollback();
        }
    }

    pub(super) fn tx_command(&mut self, c: &TxCommand) -> Result<QueryOutput> {
        match c {
            TxCommand::Begin(modes) => self.begin_block(modes),
            TxCommand::SetTransaction(modes) => {
                let mut out = QueryOutput::command("SET");
                if !self.explicit && self.implicit {
                    // In a multi-statement query: for its implicit transaction.
                    if let Some(l) = modes.isolation {
                        check_isolation(l)?;
                    }
                    if let Some(ro) = modes.read_only {
                        let tx = self.tx.get_or_insert_with(|| {
                            let mut t = self.db.begin(&self.session);
                            t.set_read_only(ro);
                            t
                        });
                        tx.set_read_only(ro);
                    }
                    return Ok(out);
                }
                if !self.explicit {
                    out.notices
                        .push("SET TRANSACTION can only be used in transaction blocks".into());
                    // The level is still checked, as the SET would have.
                    if let Some(l) = modes.isolation {
                        check_isolation(l)?;
                    }
                    return Ok(out);
                }
                self.set_tx_modes(modes)?;
                Ok(out)
            }
            TxCommand::SetSessionCharacteristics(modes) => {
                if let Some(l) = modes.isolation {
                    self.settings
                        .set("default_transaction_isolation", l.name())?;
                }
                if let Some(ro) = modes.read_only {
                    self.settings.set(
                        "default_transaction_read_only",
                        if ro { "on" } else { "off" },
                    )?;
                }
                Ok(QueryOutput::command("SET"))
            }
            TxCommand::Savepoint(name) => {
                if !self.explicit {
                    return Err(no_block("SAVEPOINT"));
                }
                self.block_tx().savepoint(name)?;
                self.savepoint_marks.push(super::SavepointMark {
                    name: name.to_string(),
                    settings: self.settings.savepoint_mark(),
                    cursors: self.cursors.iter().map(|c| c.name.clone()).collect(),
                });
                Ok(QueryOutput::command("SAVEPOINT"))
            }
            TxCommand::Release(name) => {
                if !self.explicit {
                    return Err(no_block("RELEASE SAVEPOINT"));
                }
                self.block_tx().release_savepoint(name)?;
                if let Some(i) = self.savepoint_mark_of(name) {
                    self.savepoint_marks.truncate(i);
                }
                Ok(QueryOutput::command("RELEASE"))
            }
            TxCommand::RollbackTo(name) => self.rollback_to(name),
            TxCommand::Chain(commit) => self.end_and_chain(*commit),
            TxCommand::RollbackTran(name) => {
                // T-SQL: a savepoint of that name, else the named transaction.
                if self.tx.as_ref().is_some_and(|t| t.has_savepoint(name)) {
                    // The savepoint is used up: a second ROLLBACK TRAN of
                    // the name goes back to an earlier savepoint of that
                    // name (SQL Server's answer in the T-SQL corpus).
                    let o = self.rollback_to(name)?;
                    self.block_tx().release_savepoint(name)?;
                    if let Some(i) = self.savepoint_mark_of(name) {
                        self.savepoint_marks.truncate(i);
                    }
                    Ok(o)
                } else if !self.explicit {
                    // SQL Server's error 3903, where PostgreSQL's ROLLBACK
                    // only warns.
                    Err(no_block("ROLLBACK TRANSACTION"))
                } else {
                    self.execute_command(&crate::front::Command::Rollback, &[])
                }
            }
        }
    }

    /// The explicit block's transaction (started if the block has none yet).
    pub(super) fn block_tx(&mut self) -> &mut Transaction {
        if self.tx.is_none() {
            self.tx = Some(self.new_tx());
        }
        self.tx.as_mut().expect("transaction")
    }

    fn rollback_to(&mut self, name: &str) -> Result<QueryOutput> {
        if !self.explicit {
            return Err(no_block("ROLLBACK TO SAVEPOINT"));
        }
        let Some(tx) = self.tx.as_mut() else {
            return Err(SqlError::new(
                ErrorKind::InvalidSavepoint,
                format!("savepoint \"{name}\" does not exist"),
            ));
        };
        tx.rollback_to_savepoint(name)?;
        self.failed = false;
        // The settings go back to the savepoint's, and the cursors opened
        // since are closed, as PostgreSQL's subtransaction abort does.
        if let Some(i) = self.savepoint_mark_of(name) {
            self.savepoint_marks.truncate(i + 1);
            let mark = &self.savepoint_marks[i];
            self.settings.rollback_to_mark(&mark.settings);
            let kept = &mark.cursors;
            self.cursors.retain(|c| kept.contains(&c.name));
            let ro = self.settings.tx_read_only();
            self.block_tx().set_read_only(ro);
        }
        Ok(QueryOutput::command("ROLLBACK"))
    }

    /// The newest savepoint mark of that name.
    fn savepoint_mark_of(&self, name: &str) -> Option<usize> {
        self.savepoint_marks
            .iter()
            .rposition(|m| m.name.eq_ignore_ascii_case(name))
    }

    fn begin_block(&mut self, modes: &TxModes) -> Result<QueryOutput> {
        if let Some(l) = modes.isolation {
            check_isolation(l)?;
        }
        let mut out = QueryOutput::command("BEGIN");
        if self.explicit {
            // PostgreSQL warns and ignores the modes too.
            out.notices
                .push("there is already a transaction in progress".into());
            return Ok(out);
        }
        self.explicit = true;
        self.tx_queried = false;
        self.savepoint_marks.clear();
        self.tx_start = now_micros();
        self.settings.begin_tx();
        // An implicit block's statements become part of it.
        if self.tx.is_none() {
            self.tx = Some(self.new_tx());
        }
        self.set_tx_modes(modes)?;
        Ok(out)
    }

    /// This block's modes, as SET TRANSACTION and BEGIN give them.
    fn set_tx_modes(&mut self, modes: &TxModes) -> Result<()> {
        if let Some(l) = modes.isolation {
            check_isolation(l)?;
            // As PostgreSQL: the same level again is fine.
            let same = self.settings.get("transaction_isolation").as_deref() == Some(l.name());
            if self.tx_queried && !same {
                return Err(SqlError::new(
                    ErrorKind::ActiveTransaction,
                    "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                ));
            }
            self.settings.set_local("transaction_isolation", l.name())?;
        }
        if let Some(d) = modes.deferrable {
            self.settings
                .set_local("transaction_deferrable", if d { "on" } else { "off" })?;
        }
        if let Some(ro) = modes.read_only {
            if !ro && self.tx_queried && self.settings.tx_read_only() {
                return Err(SqlError::new(
                    ErrorKind::ActiveTransaction,
                    "transaction read-write mode must be set before any query",
                ));
            }
            self.settings
                .set_local("transaction_read_only", if ro { "on" } else { "off" })?;
            self.block_tx().set_read_only(ro);
        }
        Ok(())
    }

    /// `SET transaction_isolation | transaction_read_only = v`: the same as
    /// SET TRANSACTION.
    pub(super) fn set_tx_parameter(&mut self, name: &str, value: &str) -> Result<QueryOutput> {
        let mut modes = TxModes::default();
        match name {
            "transaction_isolation" => {
                modes.isolation = Some(
                    crate::front::transaction::Isolation::parse(value).ok_or_else(|| {
                        SqlError::new(
                            ErrorKind::InvalidParameter,
                            format!("invalid value for parameter \"{name}\": \"{value}\""),
                        )
                    })?,
                );
            }
            _ => {
                // Validates the value the way SET would.
                let on = self.settings.normalized(name, value)? == "on";
                if name == "transaction_read_only" {
                    modes.read_only = Some(on);
                }
            }
        }
        self.tx_command(&TxCommand::SetTransaction(modes))
    }

    /// Refuses DDL and other writes outside the row path in a read-only
    /// transaction (the engine refuses the row writes itself).
    pub(super) fn check_writable(&self, what: &str) -> Result<()> {
        if self.settings.tx_read_only() {
            return Err(crate::front::transaction::read_only_error(what));
        }
        Ok(())
    }

    /// COMMIT (`dd`: `WITH (DELAYED_DURABILITY = ON | OFF)`).
    pub(super) fn commit_block(&mut self, dd: Option<bool>) -> Result<QueryOutput> {
        if self.failed {
            self.failed = false;
            self.explicit = false;
            if let Some(tx) = self.tx.take() {
                tx.rollback();
            }
            self.settings.end_tx(false);
            return Ok(QueryOutput::command("ROLLBACK"));
        }
        if !self.explicit {
            // An implicit block ends here, as in PostgreSQL.
            if let Some(mut tx) = self.tx.take() {
                let id = tx.id();
                self.before_commit(&mut tx)?;
                self.commit_tx(tx, CommitRequest::Default)?;
                self.cursors_committed(id);
            }
            let mut out = QueryOutput::command("COMMIT");
            out.notices
                .push("there is no transaction in progress".into());
            return Ok(out);
        }
        self.explicit = false;
        let req = match dd {
            Some(true) => CommitRequest::Delayed,
            Some(false) => CommitRequest::Durable,
            None => CommitRequest::Default,
        };
        // The commit uses the block's settings (SET LOCAL
        // synchronous_commit = off), then they end with it.
        let r = match self.tx.take() {
            Some(mut tx) => {
                let id = tx.id();
                let r = match self.before_commit(&mut tx) {
                    Ok(()) => self.commit_tx(tx, req).map(|_| ()),
                    Err(e) => {
                        tx.rollback();
                        self.settings.end_tx(false);
                        return Err(e);
                    }
                };
                if r.is_ok() {
                    self.cursors_committed(id);
                }
                r
            }
            None => Ok(()),
        };
        self.settings.end_tx(r.is_ok());
        r?;
        Ok(QueryOutput::command("COMMIT"))
    }

    pub(super) fn rollback_block(&mut self) -> Result<QueryOutput> {
        let mut out = QueryOutput::command("ROLLBACK");
        if !self.explicit && !self.failed {
            out.notices
                .push("there is no transaction in progress".into());
        }
        self.explicit = false;
        self.failed = false;
        if let Some(tx) = self.tx.take() {
            tx.rollback();
        }
        self.settings.end_tx(false);
        Ok(out)
    }

    /// `COMMIT AND CHAIN` (`commit`: its delayed-durability option) or
    /// `ROLLBACK AND CHAIN`: ends the block as COMMIT or ROLLBACK does
    /// (a failed block's COMMIT rolls back), then begins another with the
    /// same isolation level, read-only and deferrable modes, as PostgreSQL
    /// does. Only in an explicit block (25P01, which also ends an implicit
    /// one). A commit that fails chains nothing.
    fn end_and_chain(&mut self, commit: Option<Option<bool>>) -> Result<QueryOutput> {
        if !self.explicit {
            return Err(no_block(if commit.is_some() {
                "COMMIT AND CHAIN"
            } else {
                "ROLLBACK AND CHAIN"
            }));
        }
        let setting = |name: &str| self.settings.get(name).map(|v| v == "on");
        let modes = TxModes {
            isolation: self
                .settings
                .get("transaction_isolation")
                .and_then(|l| crate::front::transaction::Isolation::parse(&l)),
            read_only: setting("transaction_read_only"),
            deferrable: setting("transaction_deferrable"),
        };
        let out = match commit {
            Some(dd) => self.commit_block(dd)?,
            None => self.rollback_block()?,
        };
        self.begin_block(&modes)?;
        Ok(out)
    }
}
