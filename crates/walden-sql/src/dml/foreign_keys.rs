//! Enforcing foreign keys, as PostgreSQL's referential triggers do: a
//! writing statement notes the rows it wrote, and at its end each is
//! checked or acted on. A referencing row's key must be found in the
//! referenced table (taking the KEY SHARE lock there, so a concurrent
//! delete of it waits and then sees the new row); a deleted or re-keyed
//! referenced row is looked up among the referencing rows in the newest
//! committed state and its action runs (NO ACTION/RESTRICT fail, CASCADE,
//! SET NULL, SET DEFAULT change those rows, whose own keys are then
//! handled the same way, depth first, as PostgreSQL's nested queries).

use crate::dml::checks::Checks;
use crate::dml::deferred;
use crate::dml::Ctx;
use crate::error::{ErrorFields, ErrorKind, Result, SqlError};
use crate::query::Planner;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;
use walden_engine::{
    value_list, FkAction, ForeignKeyDef, Key, LockMode, Locked, RefPath, Row, Table, Transaction,
    Value, WaitPolicy,
};

/// A row write still to be checked or acted on.
enum Event {
    /// A row of a referencing table was written: check these foreign keys
    /// (positions in its definition), if the row still holds the values.
    Child {
        table: Arc<Table>,
        key: Option<Key>,
        row: Row,
        fks: Vec<usize>,
    },
    /// A row of a referenced table was deleted (`new` None) or updated.
    Parent {
        table: Arc<Table>,
        old: Row,
        new: Option<Row>,
    },
    /// One foreign key's action for one changed referenced row.
    Action {
        parent: Arc<Table>,
        old: Row,
        new: Option<Row>,
        child: Arc<Table>,
        fk: ForeignKeyDef,
    },
}

/// The foreign-key work of one statement.
pub(crate) struct Pending {
    /// Whether the written table has foreign keys / is referenced.
    has_fks: bool,
    referenced: bool,
    events: VecDeque<Event>,
}

impl Pending {
    /// For a statement writing `t` (nothing is noted if no foreign key
    /// involves it).
    pub(crate) fn new(tx: &Transaction, t: &Table) -> Pending {
        Pending {
            has_fks: !t.def.foreign_keys.is_empty(),
            referenced: !tx.database().referencing(t.id()).is_empty(),
            events: VecDeque::new(),
        }
    }

    pub(crate) fn inserted(&mut self, t: &Arc<Table>, row: &Row) {
        if self.has_fks {
            self.events.push_back(child_event(t, row, None));
        }
    }

    pub(crate) fn updated(&mut self, t: &Arc<Table>, old: &Row, new: &Row) {
        if self.referenced {
            self.events.push_back(Event::Parent {
                table: t.clone(),
                old: old.clone(),
                new: Some(new.clone()),
            });
        }
        if self.has_fks {
            self.events.push_back(child_event(t, new, Some(old)));
        }
    }

    pub(crate) fn deleted(&mut self, t: &Arc<Table>, old: &Row) {
        if self.referenced {
            self.events.push_back(Event::Parent {
                table: t.clone(),
                old: old.clone(),
                new: None,
            });
        }
    }

    /// Runs the checks and actions (at the end of the statement).
    pub(crate) fn finish(self, tx: &mut Transaction, ctx: &Ctx<'_>) -> Result<()> {
        if self.events.is_empty() {
            return Ok(());
        }
        let mut stack = vec![self.events];
        while let Some(top) = stack.last_mut() {
            let Some(ev) = top.pop_front() else {
                stack.pop();
                continue;
            };
            let mut produced = VecDeque::new();
            handle(tx, ctx, ev, &mut produced)?;
            if !produced.is_empty() {
                stack.push(produced);
            }
        }
        Ok(())
    }
}

/// The check of a written referencing row: the foreign keys whose values
/// the write set (all of them for an insert), skipping rows whose keys are
/// all NULL at once as the check would.
fn child_event(t: &Arc<Table>, row: &Row, old: Option<&Row>) -> Event {
    let fks = t
        .def
        .foreign_keys
        .iter()
        .enumerate()
        .filter(|(_, fk)| {
            let changed = old.is_none_or(|o| fk.columns.iter().any(|&c| o[c] != row[c]));
            changed && fk.columns.iter().any(|&c| !row[c].is_null())
        })
        .map(|(i, _)| i)
        .collect();
    Event::Child {
        table: t.clone(),
        key: t.key_of(row),
        row: row.clone(),
        fks,
    }
}

fn vals(row: &[Value], cols: &[usize]) -> Vec<Value> {
    cols.iter().map(|&c| row[c].clone()).collect()
}

fn handle(tx: &mut Transaction, ctx: &Ctx<'_>, ev: Event, out: &mut VecDeque<Event>) -> Result<()> {
    match ev {
        Event::Child {
            table,
            key,
            row,
            fks,
        } => {
            if fks.is_empty() {
                return Ok(());
            }
            // Checked on the row as it is now: one changed again later in
            // the statement (by an action) is checked by that change.
            let row = match &key {
                Some(k) => match tx.get_in(&table, k)? {
                    Some(now) => now,
                    None => return Ok(()),
                },
                None => row,
            };
            let current = tx.database().table_by_id(table.id()).unwrap_or(table);
            for i in fks {
                if let Some(fk) = current.def.foreign_keys.get(i) {
                    if deferred::is_deferred(tx, fk) {
                        let note = deferred::Note::Child {
                            table: current.id(),
                            key: key.clone(),
                            row: row.clone(),
                            fk: fk.name.clone(),
                        };
                        deferred::defer(tx, note);
                    } else {
                        check_child(tx, &current, fk, &row)?;
                    }
                }
            }
        }
        Event::Parent { table, old, new } => {
            for (child, fk) in tx.database().referencing(table.id()) {
                let ov = vals(&old, &fk.ref_columns);
                if ov.iter().any(Value::is_null) {
                    continue;
                }
                if new.as_ref().is_some_and(|n| vals(n, &fk.ref_columns) == ov) {
                    continue;
                }
                out.push_back(Event::Action {
                    parent: table.clone(),
                    old: old.clone(),
                    new: new.clone(),
                    child,
                    fk,
                });
            }
        }
        Event::Action {
            parent,
            old,
            new,
            child,
            fk,
        } => {
            let action = if new.is_some() {
                fk.on_update
            } else {
                fk.on_delete
            };
            // Only NO ACTION's check waits for COMMIT; RESTRICT and the
            // actions run now, deferrable or not (as PostgreSQL).
            if action == FkAction::NoAction && deferred::is_deferred(tx, &fk) {
                let note = deferred::Note::Parent {
                    parent: parent.id(),
                    old,
                    child: child.id(),
                    fk: fk.name,
                };
                deferred::defer(tx, note);
                return Ok(());
            }
            act(tx, ctx, &parent, &old, new.as_ref(), &child, &fk, out)?
        }
    }
    Ok(())
}

/// How to find the referenced row for these referenced values (in the
/// order of `fk.ref_columns`).
fn ref_path(parent: &Table, fk: &ForeignKeyDef, v: &[Value]) -> Result<RefPath> {
    let pick = |cols: &[usize]| -> Option<Vec<Value>> {
        cols.iter()
            .map(|c| {
                fk.ref_columns
                    .iter()
                    .position(|r| r == c)
                    .map(|i| v[i].clone())
            })
            .collect()
    };
    let pk = &parent.def.primary_key;
    if !pk.is_empty() && pk.len() == fk.ref_columns.len() {
        if let Some(k) = pick(pk) {
            return Ok(RefPath::Key(k));
        }
    }
    for (i, ix) in parent.def.indexes.iter().enumerate() {
        if ix.unique && ix.columns.len() == fk.ref_columns.len() {
            if let Some(k) = pick(&ix.columns) {
                return Ok(RefPath::Index(i, k));
            }
        }
    }
    Err(SqlError::internal(format!(
        "foreign key \"{}\" has no unique index on table \"{}\"",
        fk.name,
        parent.name()
    )))
}

pub(super) fn check_child(
    tx: &mut Transaction,
    t: &Table,
    fk: &ForeignKeyDef,
    row: &[Value],
) -> Result<()> {
    let v = vals(row, &fk.columns);
    let nulls = v.iter().filter(|x| x.is_null()).count();
    if nulls == v.len() || (nulls > 0 && !fk.match_full) {
        return Ok(());
    }
    let Some(parent) = tx.database().table_by_id(fk.ref_table) else {
        return Err(SqlError::internal(format!(
            "foreign key \"{}\" references a dropped table",
            fk.name
        )));
    };
    let violation = |detail: String| {
        SqlError::new(
            ErrorKind::ForeignKeyViolation,
            format!(
                "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                t.name(),
                fk.name
            ),
        )
        .with_fields(ErrorFields {
            detail: Some(detail),
            table: Some(t.name().to_string()),
            constraint: Some(fk.name.clone()),
            ..Default::default()
        })
    };
    if nulls > 0 {
        return Err(violation(
            "MATCH FULL does not allow mixing of null and nonnull key values.".into(),
        ));
    }
    let path = ref_path(&parent, fk, &v)?;
    if tx.lock_referenced(&parent, &path)?.is_none() {
        return Err(violation(format!(
            "Key {}=({}) is not present in table \"{}\".",
            t.def.column_list(&fk.columns),
            value_list(&v),
            parent.name()
        )));
    }
    Ok(())
}

/// The rows of `child` whose `fk` columns hold `v`, in the newest committed
/// state with this transaction's own writes (through an index whose
/// leading columns are the foreign key's, when there is one).
pub(super) fn referencing_rows(
    tx: &mut Transaction,
    child: &Table,
    fk: &ForeignKeyDef,
    v: &[Value],
) -> Result<Vec<(Key, Row)>> {
    let n = fk.columns.len();
    let index = child.def.indexes.iter().position(|ix| {
        ix.columns.len() >= n && {
            let mut a = ix.columns[..n].to_vec();
            let mut b = fk.columns.clone();
            a.sort_unstable();
            b.sort_unstable();
            a == b
        }
    });
    let matches = |r: &Row| fk.columns.iter().zip(v).all(|(&c, x)| &r[c] == x);
    tx.with_fresh_snapshot(|tx| {
        let found = match index {
            None => None,
            Some(i) => {
                let ix = &child.def.indexes[i];
                let prefix: Vec<Value> = ix.columns[..n]
                    .iter()
                    .map(|c| {
                        let j = fk.columns.iter().position(|f| f == c).expect("same set");
                        v[j].clone()
                    })
                    .collect();
                let lo: Key = prefix.clone().into_boxed_slice();
                tx.index_scan(child, i, Bound::Included(lo), |e| {
                    e.len() >= n && e[..n] == prefix[..]
                })?
            }
        };
        let rows = match found {
            Some(rows) => rows,
            None => tx.scan_in(child, (Bound::Unbounded, Bound::Unbounded))?,
        };
        Ok(rows.into_iter().filter(|(_, r)| matches(r)).collect())
    })
}

/// Whether the referenced table still has a row with these values (in
/// this transaction's view, newest state): a NO ACTION key that another
/// row took over in the same statement is still satisfied.
pub(super) fn key_still_present(
    tx: &mut Transaction,
    parent: &Table,
    fk: &ForeignKeyDef,
    v: &[Value],
) -> Result<bool> {
    let Ok(path) = ref_path(parent, fk, v) else {
        return Ok(false);
    };
    tx.with_fresh_snapshot(|tx| match &path {
        RefPath::Key(k) => Ok(tx.get_in(parent, k)?.is_some()),
        RefPath::Index(i, k) => {
            let ix = &parent.def.indexes[*i];
            let lo: Key = k.clone().into_boxed_slice();
            let n = k.len();
            let rows = tx.index_scan(parent, *i, Bound::Included(lo), |e| {
                e.len() >= n && e[..n] == k[..]
            })?;
            let rows = match rows {
                Some(rows) => rows,
                None => tx.scan_in(parent, (Bound::Unbounded, Bound::Unbounded))?,
            };
            Ok(rows
                .iter()
                .any(|(_, r)| ix.columns.iter().zip(k).all(|(&c, x)| &r[c] == x)))
        }
    })
}

#[allow(clippy::too_many_arguments)]
fn act(
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
    parent: &Arc<Table>,
    old: &Row,
    new: Option<&Row>,
    child: &Arc<Table>,
    fk: &ForeignKeyDef,
    out: &mut VecDeque<Event>,
) -> Result<()> {
    let ov = vals(old, &fk.ref_columns);
    let action = if new.is_some() {
        fk.on_update
    } else {
        fk.on_delete
    };
    if action == FkAction::NoAction && key_still_present(tx, parent, fk, &ov)? {
        return Ok(());
    }
    let rows = referencing_rows(tx, child, fk, &ov)?;
    if rows.is_empty() {
        return Ok(());
    }
    let matches = |r: &Row| fk.columns.iter().zip(&ov).all(|(&c, x)| &r[c] == x);
    match action {
        FkAction::NoAction | FkAction::Restrict => Err(still_referenced(parent, child, fk, &ov)),
        FkAction::Cascade if new.is_none() => {
            let mut pending = Pending::new(tx, child);
            for (k, _) in rows {
                // Locked, then judged on the newest version (as
                // PostgreSQL's re-check of a concurrently updated row).
                let Locked::Row(Some(r)) =
                    tx.get_locked(child, &k, LockMode::Update, WaitPolicy::Wait)?
                else {
                    continue;
                };
                if !matches(&r) {
                    continue;
                }
                if tx.delete_in(child, &k)? {
                    pending.deleted(child, &r);
                }
            }
            out.extend(pending.events);
            Ok(())
        }
        FkAction::Cascade | FkAction::SetNull | FkAction::SetDefault => {
            let mut pending = Pending::new(tx, child);
            let nv = new.map(|n| vals(n, &fk.ref_columns));
            let mut back_to_old = false;
            // The changed rows meet the table's CHECK constraints too.
            let checks = {
                let mut p = Planner::new(tx.database().clone(), ctx.info.system, &[]);
                Checks::compile(&mut p, child)?
            };
            for (k, _) in rows {
                let Locked::Row(Some(r)) =
                    tx.get_locked(child, &k, LockMode::NoKeyUpdate, WaitPolicy::Wait)?
                else {
                    continue;
                };
                if !matches(&r) {
                    continue;
                }
                let mut row = r.to_vec();
                for (j, &c) in fk.columns.iter().enumerate() {
                    row[c] = match action {
                        FkAction::Cascade => nv.as_ref().expect("an update")[j].clone(),
                        FkAction::SetNull => Value::Null,
                        _ => tx.default_value(&child.def.columns[c])?,
                    };
                }
                // Generated columns follow the changed key.
                checks.generate(&mut row, &ctx.env(tx))?;
                let stored = tx.update_in(child, &k, row)?;
                if !checks.is_empty() {
                    checks.enforce(&stored, &ctx.env(tx))?;
                }
                back_to_old |= vals(&stored, &fk.columns) == ov;
                pending.updated(child, &r, &stored);
            }
            // A default that is the key just removed still references it:
            // PostgreSQL then fails as NO ACTION would.
            if back_to_old && !key_still_present(tx, parent, fk, &ov)? {
                return Err(still_referenced(parent, child, fk, &ov));
            }
            out.extend(pending.events);
            Ok(())
        }
    }
}

pub(super) fn still_referenced(
    parent: &Table,
    child: &Table,
    fk: &ForeignKeyDef,
    ov: &[Value],
) -> SqlError {
    SqlError::new(
        ErrorKind::ForeignKeyViolation,
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            parent.name(),
            fk.name,
            child.name()
        ),
    )
    .with_fields(ErrorFields {
        detail: Some(format!(
            "Key {}=({}) is still referenced from table \"{}\".",
            parent.def.column_list(&fk.ref_columns),
            value_list(ov),
            child.name()
        )),
        table: Some(child.name().to_string()),
        constraint: Some(fk.name.clone()),
        ..Default::default()
    })
}
