//! What a statement's build may hold in memory: the entries of a new index,
//! a table re-keyed by `ADD PRIMARY KEY`, rewritten by `ALTER TABLE` or
//! folded with the transaction's writes. Until the next checkpoint writes
//! them out they are the transaction's memory as much as its write set is,
//! so they count against the same `transaction_memory_limit_mb`: past it
//! the statement fails with 53200 (nothing changed, the server goes on)
//! instead of growing until the process is killed. Redo (recovery, a
//! secondary) builds what the primary committed, with no limit.

use crate::error::{EngineError, Result};
use crate::types::Value;

pub(crate) struct BuildBudget {
    /// The limit (0: none), for the error.
    max: u64,
    /// What the transaction already holds.
    held: u64,
    /// What this build has taken.
    used: u64,
}

impl BuildBudget {
    /// No limit: redo, and tables no transaction builds.
    pub(crate) fn unlimited() -> Self {
        BuildBudget {
            max: 0,
            held: 0,
            used: 0,
        }
    }

    /// A build in a transaction holding `held` bytes under a limit of `max`.
    pub(crate) fn new(max: u64, held: u64) -> Self {
        BuildBudget { max, held, used: 0 }
    }

    /// Takes `bytes` more; fails once the transaction would pass its limit.
    pub(crate) fn charge(&mut self, bytes: u64) -> Result<()> {
        self.used += bytes;
        if self.max > 0 && self.held + self.used > self.max {
            return Err(EngineError::BuildTooLarge { max: self.max });
        }
        Ok(())
    }

    /// A row (or index entry) of these key and row values.
    pub(crate) fn charge_row(&mut self, key: &[Value], row: &[Value]) -> Result<()> {
        self.charge(ENTRY_BYTES + held_bytes(key) + held_bytes(row))
    }

    pub(crate) fn used(&self) -> u64 {
        self.used
    }
}

/// A map entry's own memory beside its key and row: the tree's node share,
/// the version chain, the row's reference count.
pub(crate) const ENTRY_BYTES: u64 = 160;

/// Memory values hold in a row or key, roughly: 32 bytes a value plus text
/// and byte payloads.
pub(crate) fn held_bytes(values: &[Value]) -> u64 {
    values
        .iter()
        .map(|v| {
            32 + match v {
                Value::Text(t) | Value::Json(t) => t.len() as u64,
                Value::Bytes(b) => b.len() as u64,
                Value::Array(a) => held_bytes(a),
                Value::MdArray(a) => held_bytes(&a.items),
                _ => 0,
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_fails_once_the_transaction_passes_its_limit() {
        let row = [Value::Int(1), Value::text("x".repeat(100))];
        // 160 + 32 + (64 + 100) = 356 bytes an entry.
        let mut b = BuildBudget::new(1_000, 300);
        b.charge_row(&row[..1], &row).unwrap();
        assert_eq!(b.used(), 356);
        assert!(matches!(
            b.charge_row(&row[..1], &row),
            Err(EngineError::BuildTooLarge { max: 1_000 })
        ));
        let mut free = BuildBudget::unlimited();
        for _ in 0..100 {
            free.charge_row(&row[..1], &row).unwrap();
        }
    }
}
