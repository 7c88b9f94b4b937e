//! The memory one statement may hold in rows it materializes (scans,
//! series, joins): the executor is not streaming, so without a bound
//! `SELECT count(*) FROM generate_series(1, 10000000000)` or a large cross
//! join grows until the process is killed. Past the budget the statement
//! fails with 53200 and the session and server go on.

use crate::error::{ErrorKind, Result, SqlError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use walden_engine::Value;

/// The default `statement_memory_limit` (as walden.toml's
/// `statement_memory_limit_mb`): 1 GiB.
pub const DEFAULT_LIMIT: u64 = 1 << 30;

/// A point in a statement's charges (see [`Budget::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct BudgetMark {
    used: u64,
    shared: usize,
}

/// What a statement has charged so far against its limit.
#[derive(Debug, Default)]
pub struct Budget {
    used: AtomicU64,
    limit: u64,
    /// Rows the statement made once and reads again (a WITH query read by
    /// several references), by the plan's address.
    shared: Mutex<HashMap<usize, Arc<Vec<Vec<Value>>>>>,
}

impl Budget {
    pub fn new(limit: u64) -> Budget {
        Budget {
            used: AtomicU64::new(0),
            limit,
            shared: Mutex::default(),
        }
    }

    /// The rows kept under `key` by [`Budget::keep_shared_rows`].
    pub fn shared_rows(&self, key: usize) -> Option<Arc<Vec<Vec<Value>>>> {
        self.shared.lock().get(&key).cloned()
    }

    /// Keeps `rows` under `key` for the rest of the statement.
    pub fn keep_shared_rows(&self, key: usize, rows: Vec<Vec<Value>>) -> Arc<Vec<Vec<Value>>> {
        let rows = Arc::new(rows);
        self.shared.lock().insert(key, rows.clone());
        rows
    }

    /// Charges one materialized row of `width` values: its vector and
    /// values (text and byte payloads are shared, not copied, by a row).
    pub fn charge_row(&self, width: usize) -> Result<()> {
        let bytes = 24 + 32 * width as u64;
        let used = self.used.fetch_add(bytes, Relaxed) + bytes;
        if self.limit > 0 && used > self.limit {
            return Err(SqlError::new(
                ErrorKind::OutOfMemory,
                format!(
                    "out of memory: the statement's rows exceed statement_memory_limit ({} MB)",
                    self.limit >> 20
                ),
            ));
        }
        Ok(())
    }

    /// Where the statement's charges stand now (see [`Budget::release_to`]).
    pub fn mark(&self) -> BudgetMark {
        BudgetMark {
            used: self.used.load(Relaxed),
            shared: self.shared.lock().len(),
        }
    }

    /// Gives back what was charged since `mark`, for rows the statement made
    /// and has dropped since (one execution of a correlated subquery, which
    /// runs again for the next outer row: without this a subquery run once
    /// per row of a large table failed on memory it no longer held). Nothing
    /// when rows were kept for the rest of the statement meanwhile.
    pub fn release_to(&self, mark: BudgetMark) {
        if self.shared.lock().len() == mark.shared {
            let _ = self
                .used
                .fetch_update(Relaxed, Relaxed, |u| Some(u.min(mark.used)));
        }
    }

    /// Gives back a row charged by `charge_row` that the statement no
    /// longer holds (a bounded sort's dropped rows).
    pub fn release_row(&self, width: usize) {
        let bytes = 24 + 32 * width as u64;
        let _ = self
            .used
            .fetch_update(Relaxed, Relaxed, |u| Some(u.saturating_sub(bytes)));
    }
}
