//! Ordered walks: a table's rows in primary-key order, or in the order of
//! one of its indexes, either way, as a transaction sees them, stopping
//! when the caller has enough (`ORDER BY ... LIMIT`).

use super::Transaction;
use crate::error::EngineError;
use crate::table::Table;
use crate::types::{Key, Row};
use std::ops::Bound;
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
        self.note_scan(t);
        let own;
        let csn = match &self.snapshot {
            Some(s) => s.csn(),
            None => {
                own = self.db.txns.vis.snapshot();
                own.csn()
            }
        };
        let mut mine: Vec<(Key, Option<Row>)> = self
            .own_writes(t)
            .filter(|(k, _)| in_range(k, &range))
            .map(|(k, w)| (k.clone(), w.clone()))
            .collect();
        if reverse {
            mine.reverse();
        }
        let mut mine = mine.into_iter().peekable();
        let mut stopped = false;
        t.rows.walk_at::<E>(
            (range.0.as_ref(), range.1.as_ref()),
            csn,
            reverse,
            |k, r| {
                // The transaction's own rows that come first in this order.
                while let Some((mk, w)) = mine.peek() {
                    if !comes_before(mk, k, reverse) {
                        break;
                    }
                    if let Some(w) = w {
                        if !f(w)? {
                            stopped = true;
                            return Ok(false);
                        }
                    }
                    mine.next();
                }
                // Its own version of this row, if it wrote it.
                let go = match mine.next_if(|(mk, _)| **mk == **k) {
                    Some((_, Some(w))) => f(&w)?,
                    Some((_, None)) => true,
                    None => f(r)?,
                };
                stopped = !go;
                Ok(go)
            },
        )?;
        if !stopped {
            for (_, w) in mine {
                if let Some(w) = w {
                    if !f(&w)? {
                        break;
                    }
                }
            }
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
        let Some(index) = t.indexes.get(ix) else {
            return Ok(false);
        };
        self.note_scan(t);
        let own;
        let csn = match &self.snapshot {
            Some(s) => s.csn(),
            None => {
                own = self.db.txns.vis.snapshot();
                own.csn()
            }
        };
        if !index.usable_at(csn) {
            return Ok(false);
        }
        match seek {
            Some(true) => index.seeks.fetch_add(1, Relaxed),
            Some(false) => index.scans.fetch_add(1, Relaxed),
            None => 0,
        };
        // The transaction's own rows, as the entries they would have.
        let mut mine: Vec<(Key, Row)> = self
            .own_writes(t)
            .filter_map(|(pk, w)| {
                let r = w.as_ref()?;
                let mut e = index.values_of(r);
                e.extend_from_slice(pk);
                let e: Key = e.into_boxed_slice();
                in_range(&e, &range).then(|| (e, r.clone()))
            })
            .collect();
        mine.sort_by(|a, b| a.0.cmp(&b.0));
        if reverse {
            mine.reverse();
        }
        let mut mine = mine.into_iter().peekable();
        let mut stopped = false;
        let written = |pk: &[crate::types::Value]| self.writes.contains_key(&(t.id(), pk.into()));
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
                        stopped = true;
                        return Ok(false);
                    }
                    mine.next();
                }
                let pk = index.row_key(entry);
                // A row the transaction wrote comes from `mine`, where its
                // own values place it.
                if !self.writes.is_empty() && written(pk) {
                    return Ok(true);
                }
                let go = match t.rows.get_at(pk, csn).map_err(E::from)? {
                    Some(r) => f(&r)?,
                    None => true,
                };
                stopped = !go;
                Ok(go)
            },
        )?;
        if !stopped {
            for (_, r) in mine {
                if !f(&r)? {
                    break;
                }
            }
        }
        Ok(true)
    }

    /// This transaction's writes to `t`, in key order (`None`: deleted).
    fn own_writes<'a>(&'a self, t: &Table) -> impl Iterator<Item = (&'a Key, &'a Option<Row>)> {
        let tid = t.id();
        self.writes
            .range((
                Bound::Included((tid, Key::default())),
                Bound::Excluded((tid + 1, Key::default())),
            ))
            .map(|((_, k), w)| (k, w))
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

fn in_range(k: &Key, range: &(Bound<Key>, Bound<Key>)) -> bool {
    let above = match &range.0 {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    };
    above
        && match &range.1 {
            Bound::Included(h) => k <= h,
            Bound::Excluded(h) => k < h,
            Bound::Unbounded => true,
        }
}
