//! Enough stack for the statement at hand.
//!
//! Planning and evaluation recurse once per level of a statement's tree, and
//! so do the drops of sqlparser's and Walden's trees. A statement's depth is
//! at most about half its length in bytes (an operand and an operator per
//! level; parenthesised nesting is capped by sqlparser at 50) and at most
//! `front::MAX_DEPTH` (deeper statements are refused before parsing). So a
//! statement gets the stack its length could need: short statements, the
//! OLTP ones, run on the caller's stack as they are; a long one runs on a
//! stack allocated for it when the caller's remaining stack is smaller than
//! it could need (the server's connection threads are large enough for most).

use crate::front::{MAX_DEPTH, MAX_NESTING};

/// Stack a statement needs whatever its depth: the session's frames, the
/// engine's commit path, sqlparser's parse, and headroom.
const BASE: usize = 256 << 10;

/// Stack per two bytes of statement, measured with `tests/sql_it/hostile_statements.rs`
/// (`probe_one_shape`): chains of one-byte operands and operators (`1+1+...`)
/// needed between 3 and 3.5 KB per level on 2026-11-24 (2.0 KB before the
/// bitwise operators and typed comparisons grew `Expr::compile`'s frame to
/// 3,392 bytes), nested function calls 1.9 KB per two bytes, nested CASE
/// 0.6 KB, UNION arms 0.2 KB. About half again as much, for frames that
/// grow with the code.
pub const PER_LEVEL: usize = 5 << 10;

/// Stack per level of parenthesis nesting, on top: a nested scalar subquery
/// needed 16.5 KB per level (at 400 levels).
const PER_NESTING: usize = 24 << 10;

/// The stack a statement may need.
pub fn needed(sql: &str) -> usize {
    BASE + (sql.len() / 2).min(MAX_DEPTH + 64) * per_level()
        + crate::front::paren_nesting(sql).min(MAX_NESTING + 1) * PER_NESTING
}

fn per_level() -> usize {
    static P: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *P.get_or_init(|| {
        std::env::var("WALDEN_STACK_PER_LEVEL_PROBE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(PER_LEVEL)
    })
}

/// Runs `f` with at least `needed(sql)` bytes of stack left, on a new stack
/// if the current one has less.
pub fn with_stack_for<R>(sql: &str, f: impl FnOnce() -> R) -> R {
    let need = needed(sql);
    stacker::maybe_grow(need, need, f)
}

/// Stack per level for dropping a tree (two small frames per level,
/// measured at about 64 bytes; with a margin).
const DROP_PER_LEVEL: usize = 256;

/// Runs `f`, which drops statements of any accepted depth, with enough stack.
pub fn with_stack_to_drop<R>(f: impl FnOnce() -> R) -> R {
    let need = BASE + (MAX_DEPTH + 64) * DROP_PER_LEVEL;
    stacker::maybe_grow(need, need, f)
}
