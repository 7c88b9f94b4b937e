//! What EXPLAIN ANALYZE measures while the statement runs: the rows each
//! plan node produced and how many times it ran, keyed by the node's
//! address in the plan. The executor reports through `note`, which costs
//! one thread-local flag test when no EXPLAIN ANALYZE is running (a
//! statement runs on its session's thread).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// What ran at one plan node.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub rows: u64,
    pub loops: u64,
    /// An index nested-loop join: executions that searched per outer row,
    /// and those that hashed the table instead.
    pub searched: u64,
    pub hashed: u64,
    /// An ORDER BY ... LIMIT walk: executions it served, and those that
    /// fell back to the sort.
    pub walked: u64,
    pub sorted: u64,
}

/// Which part of a plan object a count is for (one object may head
/// several nodes: a SELECT's aggregate and its whole result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// A source's rows (scans, joins, derived tables).
    Source,
    /// A query's result (its top node).
    Query,
    /// A SELECT's groups after HAVING.
    Groups,
}

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNTS: RefCell<HashMap<(usize, Part), Counts>> = RefCell::new(HashMap::new());
}

/// Measuring for the life of the value.
pub struct Recording(());

impl Recording {
    pub fn start() -> Recording {
        COUNTS.with(|c| c.borrow_mut().clear());
        ON.with(|o| o.set(true));
        Recording(())
    }

    /// Stops measuring; what was measured.
    pub fn finish(self) -> Measured {
        ON.with(|o| o.set(false));
        Measured(COUNTS.with(|c| std::mem::take(&mut *c.borrow_mut())))
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        ON.with(|o| o.set(false));
    }
}

/// Whether an EXPLAIN ANALYZE is measuring on this thread.
#[inline]
pub fn on() -> bool {
    ON.with(|o| o.get())
}

/// Records at `at` (a plan object's address).
pub fn note<T>(at: &T, part: Part, f: impl FnOnce(&mut Counts)) {
    if !on() {
        return;
    }
    let key = (at as *const T as usize, part);
    COUNTS.with(|c| f(c.borrow_mut().entry(key).or_default()));
}

/// One execution of `at` that produced `rows` rows.
pub fn ran<T>(at: &T, part: Part, rows: usize) {
    note(at, part, |c| {
        c.rows += rows as u64;
        c.loops += 1;
    });
}

/// The counts of one EXPLAIN ANALYZE.
#[derive(Debug, Default)]
pub struct Measured(HashMap<(usize, Part), Counts>);

impl Measured {
    pub fn get<T>(&self, at: &T, part: Part) -> Option<Counts> {
        self.0.get(&(at as *const T as usize, part)).copied()
    }

    /// (rows per loop, loops) as PostgreSQL shows them; a node that never
    /// ran shows 0 loops.
    pub fn actual<T>(&self, at: &T, part: Part) -> (u64, u64) {
        match self.get(at, part) {
            Some(c) if c.loops > 0 => ((c.rows as f64 / c.loops as f64).round() as u64, c.loops),
            _ => (0, 0),
        }
    }
}
