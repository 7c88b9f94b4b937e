//! Ordered walks: a table's rows in primary-key order, or in the order of
//! one of its indexes, either way, as a transaction sees them, stopping
//! when the caller has enough (`ORDER BY ... LIMIT`).

use super::Transaction;
use crate::error::EngineError;
use crate::table::Table;
use crate::types::{Key, Row};
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering::Relaxed;

impl Transaction {
    /// Calls `f` with each row of `t` whose key is in `range`, in key order
    /// (or `reverse`), as this transaction sees it (its snapshot, with its
    /// own writes in their places), until `f` returns false.
    pub fn walk_in<E: From<EngineError>>(
        &self,
        t: &Table,
        range: (Bound<Key>, Bound<Key>),
        reverse: bool,
        mut f: impl FnMut(&Row) -> std::result::Result<bool, E>,
    ) -> std::result::Result<(), E> {
        let snap = self.read_snapshot();
        let mut mine: Vec<(&Key, &Option<Row>)> = self.own_writes(t, &range).collect();
        if reverse {
            mine.reverse();
        }
        let mut mine = mine.into_iter().peekable();
        // SERIALIZABLE: the key of the row the walk stopped at.
        let track = self.ssi.is_some();
        let mut stopped: Option<Key> = None;
        t.rows.walk_at::<E>(
            (range.0.as_ref(), range.1.as_ref()),
            snap.csn(),
            reverse,
            |k, r| {
                // The transaction's own rows that come first in this order.
                while let Some((mk, w)) = mine.peek() {
                    if !comes_before(mk, k, reverse) {
                        break;
                    }
                    if let Some(w) = w {
                        if !f(w)? {
                            stopped = Some(if track { (*mk).clone() } else { Key::default() });
                            return Ok(false);
                        }
                    }
                    mine.next();
                }
                // Its own version of this row, if it wrote it.
                let go = match mine.next_if(|(mk, _)| *mk == k) {
                    Some((_, Some(w))) => f(w)?,
                    Some((_, None)) => true,
                    None => f(r)?,
                };
                if !go {
                    stopped = Some(if track { k.clone() } else { Key::default() });
                }
                Ok(go)
            },
        )?;
        if stopped.is_none() {
            for (mk, w) in mine {
                if let Some(w) = w {
                    if !f(w)? {
                        stopped = Some(mk.clone());
                        break;
                    }
                }
            }
        }
        if track {
            self.note_range(t, &read_part(range, stopped, reverse));
        }
        Ok(())
    }

    /// Calls `f` with each row of `t` found through index `ix` from the
    /// entries (indexed values ++ row key) in `range`, in entry order (or
    /// `reverse`), as this transaction sees it, until `f` returns false.
    /// `Ok(false)` when the snapshot is older than the index (the caller
    /// reads another way; nothing was visited). `seek`, for the index's
    /// usage counters: `Some(true)` when leading values were fixed (a
    /// seek), `Some(false)` a scan, `None` for a later part of one walk
    /// (counted already: a statement counts once, as PostgreSQL's idx_scan).
    pub fn index_walk<E: From<EngineError>>(
        &self,
        t: &Table,
        ix: usize,
        range: (Bound<Key>, Bound<Key>),
        reverse: bool,
        seek: Option<bool>,
        mut f: impl FnMut(&Row) -> std::result::Result<bool, E>,
    ) -> std::result::Result<bool, E> {
        let Some((index, snap)) = self.index_read(t, ix) else {
            return Ok(false);
        };
        let csn = snap.csn();
        match seek {
            Some(true) => index.seeks.fetch_add(1, Relaxed),
            Some(false) => index.scans.fetch_add(1, Relaxed),
            None => 0,
        };
        // The transaction's own rows, as the entries they would have.
        let mut mine: Vec<(Key, &Row)> = self
            .own_entries(t, index)
            .filter(|(e, _)| range.contains(e))
            .collect();
        mine.sort_by(|a, b| a.0.cmp(&b.0));
        if reverse {
            mine.reverse();
        }
        let mut mine = mine.into_iter().peekable();
        let track = self.ssi.is_some();
        let mut stopped: Option<Key> = None;
        index.entries.walk_at::<E>(
            (range.0.as_ref(), range.1.as_ref()),
            csn,
            reverse,
            |entry, _| {
                while let Some((e, r)) = mine.peek() {
                    if !comes_before(e, entry, reverse) {
                        break;
                    }
                    if !f(r)? {
                        stopped = Some(if track { e.clone() } else { Key::default() });
                        return Ok(false);
                    }
                    mine.next();
                }
                let pk = index.row_key(entry);
                // A row the transaction wrote comes from `mine`, where its
                // own values place it.
                if self.wrote(t, pk) {
                    return Ok(true);
                }
                let go = match t.rows.get_at(pk, csn).map_err(E::from)? {
                    Some(r) => f(&r)?,
                    None => true,
                };
                if !go {
                    stopped = Some(if track { entry.clone() } else { Key::default() });
                }
                Ok(go)
            },
        )?;
        if stopped.is_none() {
            for (e, r) in mine {
                if !f(r)? {
                    stopped = Some(e);
                    break;
                }
            }
        }
        if track {
            self.note_entries(t, index, read_part(range, stopped, reverse));
        }
        Ok(true)
    }
}

/// The part of `range` a walk read: up to the key it stopped at (from the
/// range's end, if `reverse`), or all of it.
fn read_part(
    range: (Bound<Key>, Bound<Key>),
    stopped: Option<Key>,
    reverse: bool,
) -> (Bound<Key>, Bound<Key>) {
    match stopped {
        None => range,
        Some(k) if reverse => (Bound::Included(k), range.1),
        Some(k) => (range.0, Bound::Included(k)),
    }
}

/// Whether `a` comes before `b` in a walk's order.
fn comes_before(a: &Key, b: &Key, reverse: bool) -> bool {
    if reverse {
        a > b
    } else {
        a < b
    }
}
