//! Deferred foreign key checks, as PostgreSQL's deferred RI triggers: a
//! statement's check of a `DEFERRABLE` foreign key that is deferred at
//! that moment (`INITIALLY DEFERRED`, or `SET CONSTRAINTS ... DEFERRED`)
//! is noted in the transaction instead of run, and runs at COMMIT (or when
//! `SET CONSTRAINTS ... IMMEDIATE` names the constraint). Only the checks
//! are deferred: a referencing row's key must be present, a removed
//! referenced key (NO ACTION) must not be referenced any more. RESTRICT and
//! the actions (CASCADE, SET NULL, SET DEFAULT) run at the end of the
//! statement as always.
//!
//! The notes live in the engine's transaction (`Transaction::defer`), so a
//! `ROLLBACK TO` drops the ones its savepoint's work made; the modes set by
//! `SET CONSTRAINTS`, and which notes `SET CONSTRAINTS ... IMMEDIATE` has
//! checked, are the transaction's deferred state, which `ROLLBACK TO` puts
//! back as its savepoint saw it.

use crate::dml::foreign_keys::{
    check_child, key_still_present, referencing_rows, still_referenced,
};
use crate::error::Result;
use std::sync::Arc;
use walden_engine::{ForeignKeyDef, Key, Row, Transaction};

/// A check put off to COMMIT.
pub(crate) enum Note {
    /// A written row of table `table` (its key, `None` for a table keyed by
    /// a hidden row id) must satisfy foreign key `fk` of that table.
    Child {
        table: u32,
        key: Option<Key>,
        row: Row,
        fk: String,
    },
    /// Row `old` of table `parent` was deleted or re-keyed: foreign key
    /// `fk` of table `child` (NO ACTION) must not reference its key.
    Parent {
        parent: u32,
        old: Row,
        child: u32,
        fk: String,
    },
}

/// What `SET CONSTRAINTS` made of the transaction's constraints: the modes
/// in the order they were set (`None`: ALL), and the notes that `SET
/// CONSTRAINTS ... IMMEDIATE` has checked (those before `upto`, of the
/// constraints named).
#[derive(Clone, Default)]
struct State {
    modes: Vec<(Option<Vec<String>>, bool)>,
    checked: Vec<(usize, Option<Vec<String>>)>,
}

fn names_have(names: &Option<Vec<String>>, fk: &str) -> bool {
    names
        .as_ref()
        .is_none_or(|n| n.iter().any(|x| x.eq_ignore_ascii_case(fk)))
}

fn state(tx: &Transaction) -> Option<&State> {
    tx.deferred_state().and_then(|s| s.downcast_ref::<State>())
}

/// Whether `fk`'s checks are deferred now in `tx`.
pub(crate) fn is_deferred(tx: &Transaction, fk: &ForeignKeyDef) -> bool {
    if !fk.deferrable {
        return false;
    }
    let mut deferred = fk.initially_deferred;
    if let Some(s) = state(tx) {
        for (names, d) in &s.modes {
            if names_have(names, &fk.name) {
                deferred = *d;
            }
        }
    }
    deferred
}

/// Notes a check for COMMIT.
pub(crate) fn defer(tx: &mut Transaction, note: Note) {
    tx.defer(Box::new(note));
}

/// `SET CONSTRAINTS {ALL | names} {DEFERRED | IMMEDIATE}` in `tx` (the
/// names already checked to be deferrable constraints). IMMEDIATE runs the
/// pending checks of those constraints at once.
pub(crate) fn set_mode(
    tx: &mut Transaction,
    names: Option<Vec<String>>,
    deferred: bool,
) -> Result<()> {
    let mut s = state(tx).cloned().unwrap_or_default();
    s.modes.push((names.clone(), deferred));
    tx.set_deferred_state(Arc::new(s));
    if !deferred {
        run_pending(tx, &names)?;
        let upto = tx.deferred().len();
        let mut s = state(tx).cloned().unwrap_or_default();
        s.checked.push((upto, names));
        tx.set_deferred_state(Arc::new(s));
    }
    Ok(())
}

/// PostgreSQL refuses ALTER TABLE (and DROP TABLE) of a table with pending
/// deferred checks (55006): `SET CONSTRAINTS ... IMMEDIATE` first.
pub(crate) fn refuse_if_pending(
    tx: &Transaction,
    table: u32,
    name: &str,
    what: &str,
) -> Result<()> {
    let checked = state(tx).map(|s| s.checked.as_slice()).unwrap_or_default();
    let pending = tx.deferred().iter().enumerate().any(|(i, d)| {
        // A note is the event of the table written (as PostgreSQL's
        // trigger event is on the table whose trigger fired).
        let (on, fk) = match d.downcast_ref::<Note>() {
            Some(Note::Child { table, fk, .. }) => (*table, fk),
            Some(Note::Parent { parent, fk, .. }) => (*parent, fk),
            None => return false,
        };
        on == table
            && !checked
                .iter()
                .any(|(upto, names)| i < *upto && names_have(names, fk))
    });
    if pending {
        return Err(crate::error::SqlError::new(
            crate::error::ErrorKind::ObjectInUse,
            format!("cannot {what} \"{name}\" because it has pending trigger events"),
        ));
    }
    Ok(())
}

/// Runs every pending check: at COMMIT, before the transaction commits (a
/// failure fails the COMMIT, which then rolls back).
pub(crate) fn check_at_commit(tx: &mut Transaction) -> Result<()> {
    if tx.deferred().is_empty() {
        return Ok(());
    }
    run_pending(tx, &None)
}

/// The checks of the notes not yet checked, of the constraints named.
fn run_pending(tx: &mut Transaction, names: &Option<Vec<String>>) -> Result<()> {
    let checked = state(tx).map(|s| s.checked.clone()).unwrap_or_default();
    let done = |i: usize, fk: &str| {
        checked
            .iter()
            .any(|(upto, names)| i < *upto && names_have(names, fk))
    };
    let mut todo: Vec<Note> = Vec::new();
    for (i, d) in tx.deferred().iter().enumerate() {
        let Some(note) = d.downcast_ref::<Note>() else {
            continue;
        };
        let fk = match note {
            Note::Child { fk, .. } | Note::Parent { fk, .. } => fk,
        };
        if names_have(names, fk) && !done(i, fk) {
            todo.push(match note {
                Note::Child {
                    table,
                    key,
                    row,
                    fk,
                } => Note::Child {
                    table: *table,
                    key: key.clone(),
                    row: row.clone(),
                    fk: fk.clone(),
                },
                Note::Parent {
                    parent,
                    old,
                    child,
                    fk,
                } => Note::Parent {
                    parent: *parent,
                    old: old.clone(),
                    child: *child,
                    fk: fk.clone(),
                },
            });
        }
    }
    for note in todo {
        run(tx, note)?;
    }
    Ok(())
}

/// One check, on the tables as they are now (a foreign key dropped since,
/// or a table dropped, has nothing left to check).
fn run(tx: &mut Transaction, note: Note) -> Result<()> {
    let db = tx.database().clone();
    match note {
        Note::Child {
            table,
            key,
            row,
            fk,
        } => {
            let Some(t) = db.table_by_id(table) else {
                return Ok(());
            };
            let Some(fk) = t.def.foreign_keys.iter().find(|f| f.name == fk) else {
                return Ok(());
            };
            // The row as it is now; one deleted since needs nothing, one
            // updated since is checked with its new values.
            let row = match &key {
                Some(k) => match tx.get_in(&t, k)? {
                    Some(now) => now,
                    None => return Ok(()),
                },
                None => {
                    let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
                    let there = tx.scan_in(&t, all)?.iter().any(|(_, r)| *r == row);
                    if !there {
                        return Ok(());
                    }
                    row
                }
            };
            check_child(tx, &t, fk, &row)
        }
        Note::Parent {
            parent,
            old,
            child,
            fk,
        } => {
            let (Some(p), Some(c)) = (db.table_by_id(parent), db.table_by_id(child)) else {
                return Ok(());
            };
            let Some(fk) = c.def.foreign_keys.iter().find(|f| f.name == fk) else {
                return Ok(());
            };
            let ov: Vec<_> = fk.ref_columns.iter().map(|&c| old[c].clone()).collect();
            if key_still_present(tx, &p, fk, &ov)? {
                return Ok(());
            }
            if referencing_rows(tx, &c, fk, &ov)?.is_empty() {
                return Ok(());
            }
            Err(still_referenced(&p, &c, fk, &ov))
        }
    }
}
