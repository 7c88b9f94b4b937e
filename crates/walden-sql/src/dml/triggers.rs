//! A data change's triggers: loaded once per statement (a table without
//! any costs one look-up), BEFORE STATEMENT fired first, BEFORE ROW on each
//! row before it is written (its result is the row written; none skips
//! it), AFTER ROW queued and fired when the statement's rows are all
//! written (as PostgreSQL's after-trigger queue), then AFTER STATEMENT. The
//! trigger functions run on the procedural runtime through the session's
//! hook (`functions::trigger_hook`).

use super::Ctx;
use crate::error::{Result, SqlError};
use crate::front::plpgsql::trigger::{PgTrigger, Timing, TrigOp};
use crate::functions::trigger_hook::{Fire, FireCtx, RowChange, TableTriggers};
use crate::functions::TriggerHook;
use std::sync::Arc;
use walden_engine::{Table, Transaction, Value};

/// AFTER ROW events waiting for the statement's end: (OLD, NEW).
type Queued = Vec<RowChange>;

/// The triggers one statement fires on one table for one operation.
pub(crate) struct Firing {
    hook: TriggerHook,
    table: Arc<Table>,
    op: TrigOp,
    /// The triggers that apply to this statement, in firing order.
    list: Vec<Arc<PgTrigger>>,
    before_row: bool,
    after_row: bool,
    /// A T-SQL trigger is among them: the changed rows are kept for its
    /// `inserted` / `deleted`.
    tsql: bool,
    assigned: Vec<usize>,
    queued: Queued,
}

/// The triggers on `t`, if any (whatever their events).
fn of(
    tx: &Transaction,
    ctx: &Ctx<'_>,
    t: &Table,
) -> Result<Option<(TriggerHook, Arc<TableTriggers>)>> {
    let Some(h) = &ctx.info.triggers else {
        return Ok(None);
    };
    Ok(h.0.of(&ctx.env(tx), t)?.map(|tt| (h.clone(), tt)))
}

/// Refuses a statement that cannot fire the triggers `t` has (rather than
/// skip them silently).
pub(crate) fn refuse_if_any(tx: &Transaction, ctx: &Ctx<'_>, t: &Table, what: &str) -> Result<()> {
    match of(tx, ctx, t)? {
        Some((_, tt)) if !tt.list.is_empty() => Err(SqlError::unsupported(format!(
            "{what} on table \"{}\", which has triggers",
            t.name()
        ))),
        _ => Ok(()),
    }
}

impl Firing {
    /// The triggers `op` on `table` fires (`assigned`: the columns an
    /// UPDATE sets, for `UPDATE OF`); `None` when there are none.
    pub(crate) fn load(
        tx: &Transaction,
        ctx: &Ctx<'_>,
        table: &Arc<Table>,
        op: TrigOp,
        assigned: &[usize],
    ) -> Result<Option<Firing>> {
        let Some((hook, tt)) = of(tx, ctx, table)? else {
            return Ok(None);
        };
        let list: Vec<Arc<PgTrigger>> = tt
            .list
            .iter()
            .filter(|t| {
                t.fires_on(op)
                    && (op != TrigOp::Update
                        || t.update_of.is_empty()
                        || t.update_of.iter().any(|c| {
                            assigned
                                .iter()
                                .any(|&i| table.def.columns[i].name.eq_ignore_ascii_case(c))
                        }))
            })
            .cloned()
            .collect();
        if list.is_empty() {
            return Ok(None);
        }
        let before_row = list.iter().any(|t| t.row && t.timing == Timing::Before);
        let after_row = list.iter().any(|t| t.row && t.timing == Timing::After);
        let tsql = list.iter().any(|t| t.tsql_body.is_some());
        Ok(Some(Firing {
            hook,
            table: table.clone(),
            op,
            list,
            before_row,
            after_row,
            tsql,
            assigned: assigned.to_vec(),
            queued: Vec::new(),
        }))
    }

    pub(crate) fn has_before_row(&self) -> bool {
        self.before_row
    }

    fn run(
        &self,
        tx: &mut Transaction,
        ctx: &Ctx<'_>,
        trig: &PgTrigger,
        old: Option<&[Value]>,
        new: Option<&[Value]>,
    ) -> Result<Option<Vec<Value>>> {
        let rows: &[RowChange] = if trig.tsql_body.is_some() {
            &self.queued
        } else {
            &[]
        };
        let cx = FireCtx {
            info: ctx.info,
            cancel: ctx.cancel,
            instance: ctx.instance,
        };
        self.hook.0.fire(
            tx,
            &cx,
            Fire {
                trig,
                table: &self.table,
                op: self.op,
                old,
                new,
                rows,
                assigned: &self.assigned,
            },
        )
    }

    fn statement(&self, tx: &mut Transaction, ctx: &Ctx<'_>, timing: Timing) -> Result<()> {
        for t in self.list.iter().filter(|t| !t.row && t.timing == timing) {
            self.run(tx, ctx, t, None, None)?;
        }
        Ok(())
    }

    pub(crate) fn before_statement(&self, tx: &mut Transaction, ctx: &Ctx<'_>) -> Result<()> {
        self.statement(tx, ctx, Timing::Before)
    }

    /// The BEFORE ROW triggers in turn, each given the row the one before
    /// returned: the row to write (for DELETE, the old row), or `None` when
    /// one returned NULL (the row is skipped).
    pub(crate) fn before_row(
        &self,
        tx: &mut Transaction,
        ctx: &Ctx<'_>,
        old: Option<&[Value]>,
        new: Option<Vec<Value>>,
    ) -> Result<Option<Vec<Value>>> {
        let mut cur = new;
        let mut kept = old.map(|o| o.to_vec());
        for t in self
            .list
            .iter()
            .filter(|t| t.row && t.timing == Timing::Before)
        {
            let r = self.run(tx, ctx, t, old, cur.as_deref())?;
            match r {
                None => return Ok(None),
                Some(r) if self.op == TrigOp::Delete => kept = Some(r),
                Some(r) => cur = Some(r),
            }
        }
        Ok(if self.op == TrigOp::Delete { kept } else { cur })
    }

    /// Queues a written row's AFTER ROW triggers.
    pub(crate) fn after_row(&mut self, old: Option<&[Value]>, new: Option<&[Value]>) {
        if self.after_row || self.tsql {
            self.queued
                .push((old.map(|o| o.to_vec()), new.map(|n| n.to_vec())));
        }
    }

    /// The statement's end: its AFTER ROW triggers, row by row in the
    /// order the rows were written, then its AFTER STATEMENT ones.
    pub(crate) fn finish(self, tx: &mut Transaction, ctx: &Ctx<'_>) -> Result<()> {
        if self.after_row {
            for (old, new) in &self.queued {
                for t in self
                    .list
                    .iter()
                    .filter(|t| t.row && t.timing == Timing::After)
                {
                    self.run(tx, ctx, t, old.as_deref(), new.as_deref())?;
                }
            }
        }
        self.statement(tx, ctx, Timing::After)
    }
}

/// DROP TABLE's part: the table's rows of the trigger table go with it
/// (in the dropping transaction), so a later table given the same id
/// never inherits them.
pub(crate) fn forget_table(
    db: &walden_engine::Database,
    tx: &mut Transaction,
    t: &Table,
) -> Result<()> {
    let Ok(store) = db.table_as(Some(tx.id()), crate::front::plpgsql::trigger::TRIGGER_TABLE)
    else {
        return Ok(());
    };
    let oid = crate::types::oids::table_oid(t.id());
    let all = tx.scan_in(
        &store,
        (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
    )?;
    for (k, r) in all {
        if r.first().and_then(Value::as_i64) == Some(oid) {
            tx.get_for_update(store.name(), &k)?;
            tx.delete_in(&store, &k)?;
        }
    }
    Ok(())
}
