//! `SELECT DISTINCT ON (exprs) ... ORDER BY ...`: of each distinct value
//! of the expressions, the first row in ORDER BY order (without ORDER BY,
//! the first one met). As PostgreSQL, the expressions must match the
//! leftmost ORDER BY items, so each kept row is the first of its group.

use super::*;

/// What a key stands for, to compare DISTINCT ON's keys with ORDER BY's
/// (`DISTINCT ON (1)` and `ORDER BY a` name the same expression).
fn identity(k: &SortKey, projection: &[Expr]) -> String {
    match k {
        SortKey::Output(i) => format!("{:?}", projection[*i]),
        SortKey::Input(e) => format!("{e:?}"),
    }
}

/// PostgreSQL's rule: walking ORDER BY, once an item that is not a
/// DISTINCT ON expression is passed, no DISTINCT ON expression may follow
/// it nor be missing from it (42P10).
pub(super) fn check_order(on: &[SortKey], order: &Order, projection: &[Expr]) -> Result<()> {
    let on_ids: Vec<String> = on.iter().map(|k| identity(k, projection)).collect();
    let order_ids: Vec<String> = order
        .iter()
        .map(|(k, _, _)| identity(k, projection))
        .collect();
    let mismatch = || {
        SqlError::new(
            ErrorKind::InvalidColumnReference,
            "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
        )
    };
    let mut skipped = false;
    for id in &order_ids {
        if on_ids.contains(id) {
            if skipped {
                return Err(mismatch());
            }
        } else {
            skipped = true;
        }
    }
    if skipped && on_ids.iter().any(|id| !order_ids.contains(id)) {
        return Err(mismatch());
    }
    Ok(())
}

/// A row's DISTINCT ON key: of its projection or the row before it.
pub(super) fn key_of(
    on: &[SortKey],
    projected: &[Value],
    r: &[Value],
    env: &Env<'_>,
) -> Result<Vec<Value>> {
    on.iter()
        .map(|k| match k {
            SortKey::Output(i) => Ok(projected[*i].clone()),
            SortKey::Input(e) => e.eval(r, env),
        })
        .collect()
}

/// The first row (in `order`) of each key, in `order`; equal rows keep
/// the order they came in.
pub(super) fn first_of_each(
    rows: Vec<(Vec<Value>, Vec<Value>)>,
    keys: Vec<Vec<Value>>,
    order: &[(SortKey, bool, bool)],
) -> Vec<(Vec<Value>, Vec<Value>)> {
    let dirs: Vec<(bool, bool)> = order.iter().map(|(_, d, n)| (*d, *n)).collect();
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    if !dirs.is_empty() {
        idx.sort_by(|&a, &b| compare_keys(&rows[a].1, &rows[b].1, &dirs));
    }
    let mut seen = HashSet::new();
    let mut kept_order = Vec::new();
    for i in idx {
        // NULLs are one group, and 1 = 1.0, as DISTINCT has them.
        if seen.insert(normalize_key(keys[i].clone())) {
            kept_order.push(i);
        }
    }
    let mut slots: Vec<Option<(Vec<Value>, Vec<Value>)>> = rows.into_iter().map(Some).collect();
    kept_order
        .into_iter()
        .filter_map(|i| slots[i].take())
        .collect()
}
