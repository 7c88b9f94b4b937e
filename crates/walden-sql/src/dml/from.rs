//! UPDATE ... FROM and DELETE ... USING: the target table joined with a
//! FROM list, as PostgreSQL runs them.
//!
//! The FROM list is read once per statement, in the statement's snapshot
//! (PostgreSQL cannot see the target's row from it either). The target's
//! rows are found, locked and re-checked as a plain UPDATE's are (by the
//! conditions over the target alone); each locked row is then joined with
//! the FROM rows in their order, and the first one the remaining
//! conditions accept is the one its SET and RETURNING see. A target row
//! no FROM row joins is left alone; one many join is changed once (where
//! PostgreSQL takes whichever joined row its plan meets first, Walden
//! takes the first in the FROM list's own order).

use super::*;
use std::collections::HashMap;
use walden_engine::DataType;

/// A planned FROM (USING) list.
pub(crate) struct FromList {
    pub(super) source: Source,
    /// The target's width: a FROM row's columns follow the target's.
    target_width: usize,
    /// Conditions that read a FROM row (with the target's row or not).
    join: Vec<Expr>,
    /// Equalities of a target column and a FROM column, to find the FROM
    /// rows a target row joins without trying each.
    keys: Vec<(usize, usize)>,
}

impl FromList {
    /// EXPLAIN's node: the target's rows (`target`) joined with the list's
    /// rows, read once and hashed by the join's key columns when it has
    /// any.
    pub(super) fn explain<'p>(
        &'p self,
        b: &mut query::explain::Builder<'p, '_>,
        target: query::explain::Node,
        table: &Table,
    ) -> query::explain::Node {
        use query::explain::Node;
        let mut names = query::explain::table_names(table, true);
        names.extend(query::explain::tree_names(&self.source));
        let mut n = if self.keys.is_empty() {
            Node::new("Nested Loop")
        } else {
            let mut n = Node::new("Hash Join");
            n.label = Some("Hash Join".into());
            let hc = self
                .keys
                .iter()
                .map(|(t, f)| {
                    let (t, f) = (
                        names.get(*t).cloned().unwrap_or_default(),
                        names
                            .get(self.target_width + f)
                            .cloned()
                            .unwrap_or_default(),
                    );
                    format!("({t} = {f})")
                })
                .collect();
            n.cond("Hash Cond", hc);
            n
        };
        n.join_type = Some("Inner");
        let jf = b.d.all(&self.join, &names);
        n.cond("Join Filter", jf);
        b.attach_subs(&mut n);
        let rows = query::explain::source_node(b, &self.source, true);
        n.child("Outer", target);
        if self.keys.is_empty() {
            n.child("Inner", rows);
        } else {
            let mut h = Node::new("Hash");
            h.actual = rows.actual;
            n.child("Inner", rows.under(h));
        }
        n
    }
}

/// The rows of a FROM list, read once per statement, with an index by
/// the join's key columns when it has any.
pub(crate) struct FromRows {
    rows: Vec<Vec<Value>>,
    by_key: Option<HashMap<Vec<Value>, Vec<usize>>>,
}

/// The scope of the target's columns followed by the FROM list's, and the
/// list planned.
pub(super) fn plan_list(
    p: &mut Planner<'_>,
    target: &Arc<Scope>,
    from: &[ast::TableWithJoins],
) -> Result<(Arc<Scope>, FromList)> {
    let (source, cols) = query::plan_from_list(p, from)?;
    let target_width = target.cols.len();
    // The target's name (or alias) may not name a FROM item too.
    if let Some(label) = target.cols.first().and_then(|c| c.table.as_ref()) {
        if cols.iter().any(|c| c.table.as_ref() == Some(label)) {
            return Err(SqlError::new(
                ErrorKind::DuplicateAlias,
                format!("table name \"{label}\" specified more than once"),
            ));
        }
    }
    let mut all = target.cols.clone();
    all.extend(cols);
    Ok((
        Arc::new(Scope::new(all)),
        FromList {
            source,
            target_width,
            join: vec![],
            keys: vec![],
        },
    ))
}

/// The highest row position `e` reads, `usize::MAX` when it cannot be
/// told (a correlated subquery reads the row through its own scope).
pub(super) fn max_col(e: &Expr) -> usize {
    match e {
        Expr::Col(i) => *i,
        Expr::Sub(s) if s.correlated => usize::MAX,
        e => e.children().into_iter().map(max_col).max().unwrap_or(0),
    }
}

/// WHERE over the target and the FROM list: conditions over the target
/// alone find and re-check its rows as a plain UPDATE's WHERE does; the
/// rest join them with the FROM rows.
pub(super) fn plan_where(
    p: &mut Planner<'_>,
    t: &Arc<Table>,
    scope: &Arc<Scope>,
    selection: &Option<ast::Expr>,
    from: &mut FromList,
) -> Result<Access> {
    let mut target_only = Vec::new();
    if let Some(w) = selection {
        let mut cs = Vec::new();
        query::conjuncts(w, &mut cs);
        for c in cs {
            let e = Expr::compile(p, scope, &c)?;
            if max_col(&e) < from.target_width && !e.uses_outer() {
                target_only.push(e);
            } else {
                if let Expr::Bin(crate::functions::BinOp::Eq, a, b) = &e {
                    let w = from.target_width;
                    let pair = match (a.as_ref(), b.as_ref()) {
                        (Expr::Col(x), Expr::Col(y)) | (Expr::Col(y), Expr::Col(x))
                            if *x < w && *y >= w =>
                        {
                            Some((*x, *y))
                        }
                        _ => None,
                    };
                    if let Some((x, y)) = pair {
                        if hashable(&scope.cols[x].ty, &scope.cols[y].ty) {
                            from.keys.push((x, y - w));
                        }
                    }
                }
                from.join.push(e);
            }
        }
    }
    Ok(super::access_for(t, target_only))
}

/// Whether values of the two types that `=` calls equal are equal as hash
/// keys (the join's conditions are still checked on each row found).
pub(super) fn hashable(a: &DataType, b: &DataType) -> bool {
    use DataType as T;
    let int = |t: &T| matches!(t, T::SmallInt | T::Int | T::BigInt);
    (int(a) && int(b))
        || (std::mem::discriminant(a) == std::mem::discriminant(b)
            && matches!(
                a,
                T::Text | T::Varchar(_) | T::Uuid | T::Date | T::Timestamp | T::Bool | T::Oid
            ))
}

/// Reads the FROM list's rows for one statement.
pub(super) fn rows(from: &FromList, env: &Env<'_>) -> Result<FromRows> {
    let rows = query::source_rows(&from.source, env)?;
    let by_key = (!from.keys.is_empty()).then(|| {
        let mut m: HashMap<Vec<Value>, Vec<usize>> = HashMap::new();
        for (n, r) in rows.iter().enumerate() {
            let k: Vec<Value> = from.keys.iter().map(|(_, f)| r[*f].clone()).collect();
            // NULL joins nothing by `=`.
            if k.iter().any(Value::is_null) {
                continue;
            }
            m.entry(query::normalize_key(k)).or_default().push(n);
        }
        m
    });
    Ok(FromRows { rows, by_key })
}

/// The target row `row` joined with the first FROM row the join accepts
/// (target columns first), or `None` when no FROM row joins it.
pub(super) fn first_match(
    from: &FromList,
    fr: &FromRows,
    row: &[Value],
    env: &Env<'_>,
) -> Result<Option<Vec<Value>>> {
    let mut joined = row.to_vec();
    let mut try_row = |r: &[Value]| -> Result<bool> {
        joined.truncate(row.len());
        joined.extend_from_slice(r);
        query::passes(&from.join, &joined, env)
    };
    match &fr.by_key {
        Some(m) => {
            let k: Vec<Value> = from.keys.iter().map(|(t, _)| row[*t].clone()).collect();
            if k.iter().any(Value::is_null) {
                return Ok(None);
            }
            if let Some(hits) = m.get(&query::normalize_key(k)) {
                for &n in hits {
                    if try_row(&fr.rows[n])? {
                        return Ok(Some(joined));
                    }
                }
            }
        }
        None => {
            for r in &fr.rows {
                if try_row(r)? {
                    return Ok(Some(joined));
                }
            }
        }
    }
    Ok(None)
}
