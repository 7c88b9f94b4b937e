//! Running a MERGE, as PostgreSQL 15 does.
//!
//! The source's rows and the target's are read once, in the statement's
//! snapshot. Each source row is joined with the target rows ON accepts
//! (by a hash of ON's equalities when it has any); for each such pair the
//! first WHEN MATCHED clause whose condition holds acts, and a source row
//! that joins none goes to the WHEN NOT MATCHED clauses. Target rows no
//! source row joined go to the BY SOURCE clauses last.
//!
//! A row to be updated or deleted is then locked and re-read, as UPDATE
//! does: if another transaction changed it meanwhile, ON and the clauses
//! are judged again on its latest version, and a row that no longer joins
//! (or is gone) leaves its source row NOT MATCHED (PostgreSQL's
//! EvalPlanQual). A target row this statement already changed that a
//! second source row's UPDATE or DELETE reaches is an error (21000); DO
//! NOTHING on it is not.

use super::*;
use std::collections::{HashMap, HashSet};
use walden_engine::Row;

pub(crate) fn run_merge(
    pl: &MergePlan,
    tx: &mut Transaction,
    ctx: &Ctx<'_>,
) -> Result<QueryOutput> {
    let t = pl.target.table.clone();
    check_read_write(tx, &t, "MERGE")?;
    crate::dml::triggers::refuse_if_any(tx, ctx, &t, "MERGE")?;
    for c in &pl.clauses {
        if let Action::Insert(ip, _) = &c.action {
            ip.check_explicit_identity(ctx)?;
        }
    }
    let keys = candidates(&pl.target, tx, ctx, None)?;
    let mut targets: Vec<(Key, Row)> = Vec::with_capacity(keys.len());
    for k in keys {
        if let Some(r) = tx.get_in(&t, &k)? {
            targets.push((k, r));
        }
    }
    let source = query::source_rows(&pl.source, &ctx.env(tx))?;
    let index = (!pl.keys.is_empty()).then(|| {
        let mut m: HashMap<Vec<Value>, Vec<usize>> = HashMap::new();
        for (n, (_, r)) in targets.iter().enumerate() {
            let k: Vec<Value> = pl.keys.iter().map(|(c, _)| r[*c].clone()).collect();
            // NULL joins nothing by `=`.
            if !k.iter().any(Value::is_null) {
                m.entry(query::normalize_key(k)).or_default().push(n);
            }
        }
        m
    });
    let mut st = State {
        pl,
        fks: Pending::new(tx, &t),
        changed: HashSet::new(),
        n: 0,
        out: Vec::new(),
    };
    let mut matched = vec![false; targets.len()];
    let all: Vec<usize> = (0..targets.len()).collect();
    let none: Vec<usize> = Vec::new();
    for s in &source {
        let candidates = match &index {
            Some(m) => {
                let k: Vec<Value> = pl.keys.iter().map(|(_, c)| s[*c].clone()).collect();
                if k.iter().any(Value::is_null) {
                    &none
                } else {
                    m.get(&query::normalize_key(k)).unwrap_or(&none)
                }
            }
            None => &all,
        };
        let mut joined_any = false;
        for &ti in candidates {
            let (k, old) = &targets[ti];
            let joined = concat(old, s);
            if !query::passes(&pl.on, &joined, &ctx.env(tx))? {
                continue;
            }
            matched[ti] = true;
            joined_any |= st.when_matched(tx, ctx, k, old, s, joined)?;
        }
        if !joined_any {
            st.when_not_matched(tx, ctx, s)?;
        }
    }
    if pl.clauses.iter().any(|c| c.kind == Kind::BySource) {
        for (ti, (k, old)) in targets.iter().enumerate() {
            if !matched[ti] {
                st.by_source(tx, ctx, k, old)?;
            }
        }
    }
    let State { fks, n, out, .. } = st;
    fks.finish(tx, ctx)?;
    let mut result = QueryOutput::command(format!("MERGE {n}"));
    output::deliver(&pl.output, out, &mut result, tx, ctx)?;
    Ok(result)
}

fn concat(a: &[Value], b: &[Value]) -> Vec<Value> {
    let mut v = Vec::with_capacity(a.len() + b.len());
    v.extend_from_slice(a);
    v.extend_from_slice(b);
    v
}

/// PostgreSQL's error for a target row two source rows change.
fn affected_twice() -> SqlError {
    SqlError::new(
        ErrorKind::CardinalityViolation,
        "MERGE command cannot affect row a second time",
    )
    .with_fields(crate::error::ErrorFields {
        hint: Some("Ensure that not more than one source row matches any one target row.".into()),
        ..Default::default()
    })
}

struct State<'a> {
    pl: &'a MergePlan,
    fks: Pending,
    /// Keys (as read) of the target rows this statement updated or deleted.
    changed: HashSet<Key>,
    n: u64,
    /// OUTPUT rows.
    out: Vec<Vec<Value>>,
}

impl<'a> State<'a> {
    /// The first clause of `kind` whose condition holds on `row`.
    fn choose(&self, kind: Kind, row: &[Value], env: &Env<'_>) -> Result<Option<&'a Clause>> {
        let pl: &'a MergePlan = self.pl;
        for c in pl.clauses.iter().filter(|c| c.kind == kind) {
            let holds = match &c.cond {
                None => true,
                Some(e) => query::passes(std::slice::from_ref(e), row, env)?,
            };
            if holds {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    /// A source row joined with a target row; `false` when, locked, the
    /// target row turned out gone or no longer joined.
    fn when_matched(
        &mut self,
        tx: &mut Transaction,
        ctx: &Ctx<'_>,
        k: &Key,
        old: &Row,
        s: &[Value],
        joined: Vec<Value>,
    ) -> Result<bool> {
        let acts = match self.choose(Kind::Matched, &joined, &ctx.env(tx))? {
            None => return Ok(true),
            Some(c) => !matches!(c.action, Action::Nothing),
        };
        if !acts {
            return Ok(true);
        }
        if self.changed.contains(k) {
            return Err(affected_twice());
        }
        let Some(latest) = self.lock(tx, k)? else {
            return Ok(false);
        };
        let joined = if latest[..] == old[..] {
            joined
        } else {
            let j = concat(&latest, s);
            if !query::passes(&self.pl.on, &j, &ctx.env(tx))? {
                return Ok(false);
            }
            j
        };
        let Some(c) = self.choose(Kind::Matched, &joined, &ctx.env(tx))? else {
            return Ok(true);
        };
        self.act(tx, ctx, c, k, &latest, &joined, s)?;
        Ok(true)
    }

    fn when_not_matched(&mut self, tx: &mut Transaction, ctx: &Ctx<'_>, s: &[Value]) -> Result<()> {
        let Some(c) = self.choose(Kind::NotMatched, s, &ctx.env(tx))? else {
            return Ok(());
        };
        let Action::Insert(ip, values) = &c.action else {
            return Ok(());
        };
        let vals = {
            let env = ctx.env(tx);
            values
                .iter()
                .map(|e| e.as_ref().map(|x| x.eval(s, &env)).transpose())
                .collect::<Result<Vec<_>>>()?
        };
        let t = &self.pl.target.table;
        let full = ip.full_row(vals, &ctx.env(tx))?;
        let full = ip.with_generated(tx, full, ctx)?;
        let row = tx.insert_into(t, full)?;
        ip.stored(&row, &mut self.fks, tx, ctx)?;
        self.n += 1;
        self.output(tx, ctx, Some(&row), Some(s), None, "INSERT")
    }

    fn by_source(&mut self, tx: &mut Transaction, ctx: &Ctx<'_>, k: &Key, old: &Row) -> Result<()> {
        match self.choose(Kind::BySource, old, &ctx.env(tx))? {
            Some(c) if !matches!(c.action, Action::Nothing) => {}
            _ => return Ok(()),
        }
        let Some(latest) = self.lock(tx, k)? else {
            return Ok(());
        };
        let Some(c) = self.choose(Kind::BySource, &latest, &ctx.env(tx))? else {
            return Ok(());
        };
        let row = latest.to_vec();
        self.act(tx, ctx, c, k, &latest, &row, &[])
    }

    /// The target row's latest version, locked (`None`: it is gone).
    fn lock(&self, tx: &mut Transaction, k: &Key) -> Result<Option<Row>> {
        let t = &self.pl.target.table;
        match tx.get_locked(t, k, self.pl.mode, WaitPolicy::Wait)? {
            Locked::Row(r) => Ok(r),
            Locked::Busy => Err(SqlError::internal("a waiting row lock came back busy")),
        }
    }

    /// Runs a matched (or BY SOURCE) clause's UPDATE or DELETE on the
    /// locked row `latest`; `row` is what its expressions read, `s` the
    /// source row (empty for BY SOURCE).
    #[allow(clippy::too_many_arguments)]
    fn act(
        &mut self,
        tx: &mut Transaction,
        ctx: &Ctx<'_>,
        c: &Clause,
        k: &Key,
        latest: &Row,
        row: &[Value],
        s: &[Value],
    ) -> Result<()> {
        let t = self.pl.target.table.clone();
        let source = (!s.is_empty() || self.pl.source_width == 0).then_some(s);
        match &c.action {
            Action::Update(assignments) => {
                let new_row = {
                    let env = ctx.env(tx);
                    let mut new_row = latest.to_vec();
                    for (i, e) in assignments {
                        new_row[*i] = e.eval(row, &env)?;
                    }
                    if let Some(ch) = &self.pl.checks {
                        ch.generate(&mut new_row, &env)?;
                    }
                    new_row
                };
                let stored = tx.update_in(&t, k, new_row)?;
                if let Some(ch) = &self.pl.checks {
                    ch.enforce(&stored, &ctx.env(tx))?;
                }
                self.fks.updated(&t, latest, &stored);
                self.changed.insert(k.clone());
                self.n += 1;
                self.output(tx, ctx, Some(&stored), source, Some(latest), "UPDATE")
            }
            Action::Delete => {
                if tx.delete_in(&t, k)? {
                    self.fks.deleted(&t, latest);
                    self.changed.insert(k.clone());
                    self.n += 1;
                    self.output(tx, ctx, None, source, Some(latest), "DELETE")?;
                }
                Ok(())
            }
            Action::Insert(..) | Action::Nothing => Ok(()),
        }
    }

    /// An OUTPUT row: the new row, the source row, the old row (NULLs for
    /// a missing one) and the action.
    fn output(
        &mut self,
        tx: &Transaction,
        ctx: &Ctx<'_>,
        new: Option<&[Value]>,
        source: Option<&[Value]>,
        old: Option<&[Value]>,
        action: &str,
    ) -> Result<()> {
        let Some(r) = &self.pl.output else {
            return Ok(());
        };
        let (w, sw) = (self.pl.width, self.pl.source_width);
        let mut seen = Vec::with_capacity(2 * w + sw + 1);
        let mut part = |v: Option<&[Value]>, n: usize| match v {
            Some(v) => seen.extend_from_slice(v),
            None => seen.extend(std::iter::repeat_n(Value::Null, n)),
        };
        part(new, w);
        part(source, sw);
        part(old, w);
        seen.push(Value::Text(action.into()));
        self.out.push(r.row(&seen, &ctx.env(tx))?);
        Ok(())
    }
}
