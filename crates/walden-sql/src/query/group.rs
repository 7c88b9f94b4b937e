//! Grouping and aggregates: rows are fed one at a time, so only the
//! groups (their keys and accumulators) are held, not the input.

use super::*;

/// A group's key, its aggregates' states, their DISTINCT sets, and the
/// rows held back for aggregates with their own ORDER BY (sort key, value,
/// second argument).
type GroupState = (Vec<Value>, Vec<Acc>, Vec<HashSet<Value>>, Vec<Vec<Held>>);
type Held = (Vec<Value>, Value, Value);

pub(super) struct Grouper<'p, 'e> {
    keys: &'p [Expr],
    /// GROUPING SETS: each set's key positions (a group's key then holds
    /// NULL for the others, and the set's index last).
    sets: Option<&'p [Vec<usize>]>,
    aggs: &'p [AggSpec],
    env: &'p Env<'e>,
    groups: foldhash::HashMap<Vec<Value>, usize>,
    states: Vec<GroupState>,
    /// Each aggregate's constant second argument (string_agg's separator).
    seps: Vec<Value>,
}

impl<'p, 'e> Grouper<'p, 'e> {
    pub(super) fn new(
        keys: &'p [Expr],
        sets: Option<&'p [Vec<usize>]>,
        aggs: &'p [AggSpec],
        env: &'p Env<'e>,
    ) -> Result<Grouper<'p, 'e>> {
        let seps = aggs
            .iter()
            .map(|a| {
                a.separator
                    .as_ref()
                    // The object aggregates' value is per row (below).
                    .filter(|_| !a.kind.second_per_row())
                    .map(|s| s.eval(&[], env))
                    .transpose()
                    .map(|v| v.unwrap_or(Value::Null))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Grouper {
            keys,
            sets,
            aggs,
            env,
            groups: Default::default(),
            states: Vec::new(),
            seps,
        })
    }

    /// The index of `r`'s group, made if it is new.
    fn group_of(&mut self, r: &[Value]) -> Result<usize> {
        let env = self.env;
        let k = self
            .keys
            .iter()
            .map(|e| e.eval(r, env))
            .collect::<Result<Vec<_>>>()?;
        self.group_of_key(k)
    }

    /// The index of the group with key `k`, made if it is new.
    fn group_of_key(&mut self, k: Vec<Value>) -> Result<usize> {
        let env = self.env;
        // The group is found by its normalized key (1.0 and 1 are one
        // group) and shows the first key it was made with.
        let nk = normalize_key(k.clone());
        if let Some(&i) = self.groups.get(&nk) {
            return Ok(i);
        }
        env.info
            .mem
            .charge_row(2 * self.keys.len() + self.aggs.len())?;
        self.states.push((
            k,
            self.aggs.iter().map(|a| Acc::new(a.kind)).collect(),
            self.aggs.iter().map(|_| HashSet::new()).collect(),
            self.aggs.iter().map(|_| Vec::new()).collect(),
        ));
        self.groups.insert(nk, self.states.len() - 1);
        Ok(self.states.len() - 1)
    }

    /// Feeds one input row to its group. What is kept (a new group, a
    /// DISTINCT value, a held-back row, a value an aggregate collects)
    /// counts against the statement's memory limit.
    pub(super) fn add(&mut self, r: &[Value]) -> Result<()> {
        if let Some(sets) = self.sets {
            // The row feeds one group of each grouping set.
            let env = self.env;
            let k = self
                .keys
                .iter()
                .map(|e| e.eval(r, env))
                .collect::<Result<Vec<_>>>()?;
            for (si, set) in sets.iter().enumerate() {
                let mut key = vec![Value::Null; k.len() + 1];
                for &i in set {
                    key[i] = k[i].clone();
                }
                key[k.len()] = Value::Int(si as i64);
                let gi = self.group_of_key(key)?;
                self.feed(gi, r)?;
            }
            return Ok(());
        }
        let gi = if self.keys.is_empty() && !self.states.is_empty() {
            // No GROUP BY: every row feeds the one group.
            0
        } else {
            self.group_of(r)?
        };
        self.feed(gi, r)
    }

    /// Feeds one input row to the aggregates of group `gi`.
    fn feed(&mut self, gi: usize, r: &[Value]) -> Result<()> {
        let env = self.env;
        let mem = &env.info.mem;
        let st = &mut self.states[gi];
        for (i, a) in self.aggs.iter().enumerate() {
            if let Some(c) = &a.filter {
                if truth(&c.eval(r, env)?)? != Some(true) {
                    continue;
                }
            }
            let v = match &a.arg {
                Some(e) => e.eval(r, env)?,
                None => Value::Null,
            };
            if a.distinct && !v.is_null() {
                if !st.2[i].insert(normalize_key(vec![v.clone()]).pop().unwrap()) {
                    continue;
                }
                mem.charge_row(1)?;
            }
            let val = match (a.kind, &a.separator) {
                (k, Some(val)) if k.second_per_row() => val.eval(r, env)?,
                _ => self.seps[i].clone(),
            };
            if !a.order.is_empty() {
                let key = a
                    .order
                    .iter()
                    .map(|(e, _, _)| e.eval(r, env))
                    .collect::<Result<Vec<_>>>()?;
                mem.charge_row(key.len() + 2)?;
                st.3[i].push((key, v, val));
                continue;
            }
            if collects(a.kind) {
                mem.charge_row(1)?;
            }
            st.1[i].add(a.kind, v, &val)?;
        }
        Ok(())
    }

    /// One row per group: its key values, then its aggregates' values.
    pub(super) fn finish(mut self) -> Result<Vec<Vec<Value>>> {
        if let (Some(sets), true) = (self.sets, self.states.is_empty()) {
            // No rows: each empty grouping set still gives its row.
            let n = self.keys.len();
            for (si, _) in sets.iter().enumerate().filter(|(_, s)| s.is_empty()) {
                let mut key = vec![Value::Null; n + 1];
                key[n] = Value::Int(si as i64);
                self.states.push((
                    key,
                    self.aggs.iter().map(|a| Acc::new(a.kind)).collect(),
                    vec![],
                    self.aggs.iter().map(|_| Vec::new()).collect(),
                ));
            }
        } else if self.states.is_empty() && self.keys.is_empty() {
            // Aggregates over no rows still give one row.
            self.states.push((
                vec![],
                self.aggs.iter().map(|a| Acc::new(a.kind)).collect(),
                vec![],
                self.aggs.iter().map(|_| Vec::new()).collect(),
            ));
        }
        let aggs = self.aggs;
        let env = self.env;
        self.states
            .into_iter()
            .map(|(mut k, accs, _, held)| {
                let nkeys = k.len();
                for ((mut a, spec), mut rows) in accs.into_iter().zip(aggs).zip(held) {
                    if !spec.order.is_empty() {
                        let dirs: Vec<(bool, bool)> =
                            spec.order.iter().map(|(_, d, n)| (*d, *n)).collect();
                        // Stable: rows equal in the order keep their input order.
                        rows.sort_by(|x, y| compare_keys(&x.0, &y.0, &dirs));
                        if let AggKind::Ordered(o) = spec.kind {
                            // Direct arguments read the group's keys (the
                            // aggregates' places are NULL to them).
                            let mut row = k[..nkeys].to_vec();
                            row.resize(nkeys + aggs.len(), Value::Null);
                            let direct = spec
                                .direct
                                .iter()
                                .map(|e| e.eval(&row, env))
                                .collect::<Result<Vec<_>>>()?;
                            let sorted: Vec<Vec<Value>> =
                                rows.into_iter().map(|(key, _, _)| key).collect();
                            k.push(o.finish(&sorted, &dirs, &direct)?);
                            continue;
                        }
                        for (_, v, val) in rows {
                            a.add(spec.kind, v, &val)?;
                        }
                    }
                    k.push(a.finish(spec.kind)?);
                }
                Ok(k)
            })
            .collect()
    }
}

/// Whether an aggregate keeps every value it is fed (rather than a
/// running count, sum or extreme).
fn collects(kind: AggKind) -> bool {
    matches!(
        kind,
        AggKind::StringAgg
            | AggKind::ArrayAgg
            | AggKind::JsonAgg { .. }
            | AggKind::JsonObjectAgg { .. }
    )
}
