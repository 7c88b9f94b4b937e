//! Transaction control statements and transaction modes: BEGIN / START
//! TRANSACTION with modes, SET TRANSACTION, SET SESSION CHARACTERISTICS,
//! savepoints (PostgreSQL and T-SQL spellings), and the one place that
//! decides which isolation levels Walden honours.

use crate::error::{ErrorKind, Result, SqlError};
use crate::front::Toks;
use sqlparser::tokenizer::Token;

/// An isolation level as a client may name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
    RepeatableRead,
    /// T-SQL's `SNAPSHOT`.
    Snapshot,
    Serializable,
}

impl Isolation {
    /// The spelling `SHOW transaction_isolation` uses.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "read uncommitted",
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Snapshot => "snapshot",
            Isolation::Serializable => "serializable",
        }
    }

    /// A value of `transaction_isolation` / `default_transaction_isolation`.
    pub fn parse(v: &str) -> Option<Isolation> {
        let v = v
            .trim()
            .trim_matches('\'')
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_lowercase();
        Some(match v.as_str() {
            "read uncommitted" => Isolation::ReadUncommitted,
            "read committed" => Isolation::ReadCommitted,
            "repeatable read" => Isolation::RepeatableRead,
            "snapshot" => Isolation::Snapshot,
            "serializable" => Isolation::Serializable,
            _ => return None,
        })
    }
}

/// The isolation levels Walden runs: all of them. Read uncommitted is read
/// committed, as in PostgreSQL; SQL Server's SNAPSHOT is PostgreSQL's
/// REPEATABLE READ (one snapshot per transaction, a write conflict fails);
/// SERIALIZABLE is serializable snapshot isolation (the engine's `ssi.rs`).
pub fn check_isolation(level: Isolation) -> Result<()> {
    match level {
        Isolation::ReadUncommitted
        | Isolation::ReadCommitted
        | Isolation::RepeatableRead
        | Isolation::Snapshot
        | Isolation::Serializable => Ok(()),
    }
}

/// The engine's level for a `transaction_isolation` value.
pub(crate) fn engine_isolation(value: Option<&str>) -> walden_engine::Isolation {
    match value.and_then(Isolation::parse) {
        Some(Isolation::RepeatableRead | Isolation::Snapshot) => {
            walden_engine::Isolation::RepeatableRead
        }
        Some(Isolation::Serializable) => walden_engine::Isolation::Serializable,
        _ => walden_engine::Isolation::ReadCommitted,
    }
}

/// Transaction modes given with BEGIN or SET TRANSACTION.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxModes {
    pub isolation: Option<Isolation>,
    /// `READ ONLY` (true) / `READ WRITE` (false).
    pub read_only: Option<bool>,
    /// `DEFERRABLE` (true) / `NOT DEFERRABLE` (false).
    pub deferrable: Option<bool>,
}

/// Statements that control a transaction block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxCommand {
    Begin(TxModes),
    /// `SET TRANSACTION modes`: this transaction.
    SetTransaction(TxModes),
    /// `SET SESSION CHARACTERISTICS AS TRANSACTION modes`: later ones.
    SetSessionCharacteristics(TxModes),
    /// `SAVEPOINT name`, T-SQL `SAVE TRAN[SACTION] name`.
    Savepoint(String),
    /// `RELEASE [SAVEPOINT] name`.
    Release(String),
    /// `ROLLBACK [WORK | TRANSACTION] TO [SAVEPOINT] name`.
    RollbackTo(String),
    /// T-SQL `ROLLBACK TRAN[SACTION] name`: the savepoint of that name, or the
    /// whole (named) transaction when there is none.
    RollbackTran(String),
    /// `COMMIT [WITH (DELAYED_DURABILITY = ...)] AND CHAIN` (`Some(dd)`) or
    /// `ROLLBACK AND CHAIN` (`None`).
    Chain(Option<Option<bool>>),
}

/// A savepoint or transaction name: folded to lower case unless quoted, as
/// every identifier.
fn name(t: &mut Toks) -> Result<String> {
    match t.next() {
        Some(Token::Word(w)) if w.quote_style.is_none() => Ok(w.value.to_ascii_lowercase()),
        Some(Token::Word(w)) => Ok(w.value),
        other => Err(SqlError::syntax(format!(
            "syntax error: expected a savepoint name, found {}",
            other
                .map(|t| t.to_string())
                .unwrap_or_else(|| "end of input".into())
        ))),
    }
}

/// Whether the next word starts a transaction mode.
fn at_mode(t: &Toks) -> bool {
    t.is(0, "ISOLATION") || t.is(0, "READ") || t.is(0, "NOT") || t.is(0, "DEFERRABLE")
}

/// `mode [[,] mode ...]` up to the end of the statement.
pub(crate) fn parse_modes(t: &mut Toks, what: &str) -> Result<TxModes> {
    let mut m = TxModes::default();
    let mut deferrable = false;
    let mut first = true;
    while !t.at_end() {
        if !first {
            t.eat_tok(&Token::Comma);
        }
        first = false;
        if t.eat("ISOLATION") {
            if !t.eat("LEVEL") {
                return Err(SqlError::syntax("syntax error: expected ISOLATION LEVEL"));
            }
            let level = if t.eat("SERIALIZABLE") {
                Isolation::Serializable
            } else if t.eat("SNAPSHOT") {
                Isolation::Snapshot
            } else if t.eat("REPEATABLE") && t.eat("READ") {
                Isolation::RepeatableRead
            } else if t.eat("READ") {
                if t.eat("COMMITTED") {
                    Isolation::ReadCommitted
                } else if t.eat("UNCOMMITTED") {
                    Isolation::ReadUncommitted
                } else {
                    return Err(SqlError::syntax(
                        "syntax error: expected READ COMMITTED or READ UNCOMMITTED",
                    ));
                }
            } else {
                return Err(SqlError::syntax(
                    "syntax error: expected an isolation level (READ UNCOMMITTED, READ COMMITTED, \
                     REPEATABLE READ, SNAPSHOT, SERIALIZABLE)",
                ));
            };
            m.isolation = Some(level);
        } else if t.eat("READ") {
            if t.eat("ONLY") {
                m.read_only = Some(true);
            } else if t.eat("WRITE") {
                m.read_only = Some(false);
            } else {
                return Err(SqlError::syntax(
                    "syntax error: expected READ ONLY or READ WRITE",
                ));
            }
        } else if t.eat("NOT") {
            if !t.eat("DEFERRABLE") {
                return Err(SqlError::syntax("syntax error: expected NOT DEFERRABLE"));
            }
            m.deferrable = Some(false);
        } else if t.eat("DEFERRABLE") {
            // As in PostgreSQL, DEFERRABLE changes nothing unless the
            // transaction is SERIALIZABLE READ ONLY (checked below).
            deferrable = true;
            m.deferrable = Some(true);
        } else {
            t.end(what)?;
            break;
        }
    }
    // PostgreSQL waits for a snapshot no serialization failure can touch;
    // Walden does not, so it refuses rather than promise that.
    if deferrable && m.isolation == Some(Isolation::Serializable) && m.read_only == Some(true) {
        return Err(SqlError::unsupported(
            "DEFERRABLE (waiting for a safe snapshot for SERIALIZABLE READ ONLY)",
        ));
    }
    Ok(m)
}

/// `BEGIN [WORK | TRANSACTION | TRAN [name]] [modes]`, `START TRANSACTION
/// [modes]`. `t` is at the first word.
pub(crate) fn parse_begin(t: &mut Toks) -> Result<TxCommand> {
    let start = t.eat("START");
    if !start {
        t.eat("BEGIN");
    }
    if start && !t.eat("TRANSACTION") {
        return Err(SqlError::syntax("syntax error: expected START TRANSACTION"));
    }
    if !start {
        if t.is(0, "DISTRIBUTED") {
            return Err(SqlError::unsupported("BEGIN DISTRIBUTED TRANSACTION"));
        }
        let named = t.eat("TRAN") || t.eat("TRANSACTION");
        if !named {
            t.eat("WORK");
        }
        // T-SQL names its transactions; the name changes nothing here.
        if named && t.word(0).is_some() && !at_mode(t) {
            name(t)?;
            if t.eat("WITH") {
                return Err(SqlError::unsupported("BEGIN TRANSACTION ... WITH MARK"));
            }
        }
    }
    parse_modes(t, "BEGIN").map(TxCommand::Begin)
}

/// `SET TRANSACTION ...` / `SET SESSION CHARACTERISTICS AS TRANSACTION ...`;
/// `t` is after SET [SESSION].
pub(crate) fn parse_set_transaction(t: &mut Toks) -> Result<TxCommand> {
    if t.eat("SESSION") || t.eat("CHARACTERISTICS") {
        t.eat("CHARACTERISTICS");
        if !(t.eat("AS") && t.eat("TRANSACTION")) {
            return Err(SqlError::syntax(
                "syntax error: expected SET SESSION CHARACTERISTICS AS TRANSACTION",
            ));
        }
        return parse_modes(t, "SET SESSION CHARACTERISTICS")
            .map(TxCommand::SetSessionCharacteristics);
    }
    if !t.eat("TRANSACTION") {
        return Err(SqlError::syntax("syntax error: expected SET TRANSACTION"));
    }
    if t.is(0, "SNAPSHOT") {
        return Err(SqlError::unsupported("SET TRANSACTION SNAPSHOT"));
    }
    parse_modes(t, "SET TRANSACTION").map(TxCommand::SetTransaction)
}

/// `SAVEPOINT name` and T-SQL `SAVE TRAN[SACTION] name`.
pub(crate) fn parse_savepoint(t: &mut Toks) -> Result<TxCommand> {
    if t.eat("SAVE") {
        if !(t.eat("TRAN") || t.eat("TRANSACTION")) {
            return Err(SqlError::syntax(
                "syntax error: expected SAVE TRANSACTION name",
            ));
        }
    } else {
        t.eat("SAVEPOINT");
    }
    let n = name(t)?;
    t.end("SAVEPOINT")?;
    Ok(TxCommand::Savepoint(n))
}

/// `RELEASE [SAVEPOINT] name`.
pub(crate) fn parse_release(t: &mut Toks) -> Result<TxCommand> {
    t.eat("RELEASE");
    t.eat("SAVEPOINT");
    let n = name(t)?;
    t.end("RELEASE")?;
    Ok(TxCommand::Release(n))
}

/// After `ROLLBACK`: `[WORK | TRANSACTION | TRAN] [TO [SAVEPOINT] name |
/// name | AND [NO] CHAIN]`. `None` is a plain ROLLBACK (or AND NO CHAIN).
pub(crate) fn parse_rollback(t: &mut Toks) -> Result<Option<TxCommand>> {
    let named = t.eat("TRAN") || t.eat("TRANSACTION");
    if !named {
        t.eat("WORK");
    }
    if t.eat("TO") {
        t.eat("SAVEPOINT");
        let n = name(t)?;
        t.end("ROLLBACK TO SAVEPOINT")?;
        return Ok(Some(TxCommand::RollbackTo(n)));
    }
    if t.eat("AND") {
        let no = t.eat("NO");
        if !t.eat("CHAIN") {
            return Err(SqlError::syntax("syntax error: expected AND [NO] CHAIN"));
        }
        t.end("ROLLBACK")?;
        return Ok((!no).then_some(TxCommand::Chain(None)));
    }
    if t.at_end() {
        return Ok(None);
    }
    if named {
        let n = name(t)?;
        t.end("ROLLBACK TRANSACTION")?;
        return Ok(Some(TxCommand::RollbackTran(n)));
    }
    t.end("ROLLBACK").map(|_| None)
}

/// Whether the transaction is in a mode that refuses `what` (DDL and other
/// writes outside the row path).
pub fn read_only_error(what: &str) -> SqlError {
    SqlError::new(
        ErrorKind::ReadOnly,
        format!("cannot execute {what} in a read-only transaction"),
    )
}
