//! Row estimates of planned sources, for EXPLAIN's `rows=` and the join
//! order: a table's rows (known exactly) times the selectivity of its
//! filters, from ANALYZE's statistics where the column has them
//! (`stats.rs`: most common values, histogram, NULL share, distinct
//! count), else PostgreSQL's default selectivities; a join's rows from its
//! sides' and the distinct counts of its key columns.

use super::stats::{self, ColumnStats};
use super::*;

/// PostgreSQL's defaults when nothing is known: `=` (DEFAULT_EQ_SEL), a
/// range comparison (DEFAULT_INEQ_SEL), IS NULL (DEFAULT_UNK_SEL), LIKE
/// (DEFAULT_MATCH_SEL), and any other condition.
const DEFAULT_EQ: f64 = 0.005;
const DEFAULT_INEQ: f64 = 1.0 / 3.0;
const DEFAULT_NULL: f64 = 0.005;
const DEFAULT_MATCH: f64 = 0.005;
const DEFAULT_OTHER: f64 = 0.5;
/// Rows assumed for a source whose size is not known (a function's, as
/// PostgreSQL assumes 1000 for a set-returning function).
pub(super) const UNKNOWN_ROWS: f64 = 1000.0;

/// Estimated rows of a source, at least 1.
pub(super) fn rows(s: &Source) -> f64 {
    match s {
        Source::Single => 1.0,
        Source::Table {
            table,
            lookup,
            filter,
            ..
        } => {
            if lookup.is_some() {
                return 1.0;
            }
            table_rows(table, filter)
        }
        Source::Derived { plan, filter, .. } => {
            let inner = plan_rows(plan);
            (inner * filter.iter().map(|_| DEFAULT_INEQ).product::<f64>()).max(1.0)
        }
        Source::Ordinality { inner, filter } => {
            (rows(inner) * DEFAULT_INEQ.powi(filter.len() as i32)).max(1.0)
        }
        Source::SysView { filter, .. }
        | Source::Srf { filter, .. }
        | Source::Unnest { filter, .. }
        | Source::JsonRows { filter, .. } => {
            (UNKNOWN_ROWS * DEFAULT_INEQ.powi(filter.len() as i32)).max(1.0)
        }
        Source::Ancestors { .. } => 1.0,
        Source::Join {
            left,
            right,
            kind,
            keys,
            on,
            ..
        } => {
            let (l, r) = (rows(left), rows(right));
            let mut sel = 1.0;
            for (a, b) in keys {
                let da = expr_distinct(left, a, l);
                let db = expr_distinct(right, b, r);
                sel /= da.max(db).max(1.0);
            }
            sel *= DEFAULT_INEQ.powi(on.len() as i32);
            let inner = (l * r * sel).max(1.0);
            match kind {
                JoinKind::Inner => inner,
                JoinKind::Left => inner.max(l),
                JoinKind::Right => inner.max(r),
                JoinKind::Full => inner.max(l).max(r),
            }
        }
    }
}

/// Rows of a query plan: its FROM's estimate, or the VALUES rows.
fn plan_rows(plan: &QueryPlan) -> f64 {
    match &plan.body {
        Body::Select(sel) => rows(&sel.from),
        Body::Values(v) => v.len().max(1) as f64,
        _ => UNKNOWN_ROWS,
    }
}

/// Rows of `table` that pass `filter`.
pub(super) fn table_rows(table: &Table, filter: &[Expr]) -> f64 {
    let n = table.len() as f64;
    let st = stats::of(table);
    let mut sel = 1.0;
    let mut fixed: Vec<usize> = Vec::new();
    for e in filter {
        sel *= selectivity(table, st.as_deref(), e, n);
        if let Some(c) = eq_const_col(e) {
            fixed.push(c);
        }
    }
    let est = (n * sel).max(1.0);
    if key_covered(table, &fixed) {
        return est.min(1.0);
    }
    est.min(n.max(1.0))
}

/// The column of `col = constant`.
fn eq_const_col(e: &Expr) -> Option<usize> {
    match e {
        Expr::Bin(BinOp::Eq, a, b) => match (a.as_ref(), b.as_ref()) {
            (Expr::Col(c), k) | (k, Expr::Col(c)) if !k.uses_row() => Some(*c),
            _ => None,
        },
        _ => None,
    }
}

/// Whether the columns cover the table's primary key or a unique index.
pub(super) fn key_covered(table: &Table, cols: &[usize]) -> bool {
    let covers = |k: &[usize]| !k.is_empty() && k.iter().all(|c| cols.contains(c));
    (!table.has_hidden_key() && covers(&table.def.primary_key))
        || table
            .indexes
            .iter()
            .any(|ix| ix.def.unique && covers(&ix.def.columns))
}

fn col_stats<'s>(
    table: &Table,
    st: Option<&'s stats::TableStats>,
    c: usize,
) -> Option<&'s ColumnStats> {
    let name = &table.def.columns.get(c)?.name;
    st?.column(name)
}

/// A constant's value when it is a literal (a parameter's is not known
/// at plan time).
fn literal(e: &Expr) -> Option<&Value> {
    match e {
        Expr::Lit(v) => Some(v),
        Expr::Cast(inner, _) => literal(inner),
        _ => None,
    }
}

/// The share of the table's rows that pass `e`.
fn selectivity(table: &Table, st: Option<&stats::TableStats>, e: &Expr, n: f64) -> f64 {
    let sel = match e {
        Expr::Bin(BinOp::And, a, b) => selectivity(table, st, a, n) * selectivity(table, st, b, n),
        Expr::Bin(BinOp::Or, a, b) => {
            let (x, y) = (selectivity(table, st, a, n), selectivity(table, st, b, n));
            x + y - x * y
        }
        Expr::Not(a) => 1.0 - selectivity(table, st, a, n),
        Expr::Bin(op @ (BinOp::Eq | BinOp::NotEq), a, b) => {
            let eq = match (a.as_ref(), b.as_ref()) {
                (Expr::Col(c), k) | (k, Expr::Col(c)) if !k.uses_row() => {
                    eq_sel(table, st, *c, literal(k), n)
                }
                _ => DEFAULT_EQ,
            };
            if matches!(op, BinOp::Eq) {
                eq
            } else {
                1.0 - eq
            }
        }
        Expr::Bin(op @ (BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq), a, b) => {
            match (a.as_ref(), b.as_ref()) {
                (Expr::Col(c), k) if !k.uses_row() => range_sel(
                    table,
                    st,
                    *c,
                    literal(k),
                    matches!(op, BinOp::Lt | BinOp::LtEq),
                ),
                (k, Expr::Col(c)) if !k.uses_row() => range_sel(
                    table,
                    st,
                    *c,
                    literal(k),
                    matches!(op, BinOp::Gt | BinOp::GtEq),
                ),
                _ => DEFAULT_INEQ,
            }
        }
        Expr::Between(x, lo, hi, negated) => {
            let s = match x.as_ref() {
                Expr::Col(c) if !lo.uses_row() && !hi.uses_row() => {
                    let below_hi = range_sel(table, st, *c, literal(hi), true);
                    let below_lo = range_sel(table, st, *c, literal(lo), true);
                    if literal(lo).is_some() && literal(hi).is_some() {
                        (below_hi - below_lo).max(DEFAULT_EQ)
                    } else {
                        DEFAULT_EQ
                    }
                }
                _ => DEFAULT_EQ,
            };
            if *negated {
                1.0 - s
            } else {
                s
            }
        }
        Expr::InList(x, list, negated) => {
            let s = match x.as_ref() {
                Expr::Col(c) => list
                    .iter()
                    .map(|k| eq_sel(table, st, *c, literal(k), n))
                    .sum::<f64>()
                    .min(1.0),
                _ => (DEFAULT_EQ * list.len() as f64).min(1.0),
            };
            if *negated {
                1.0 - s
            } else {
                s
            }
        }
        Expr::IsNull(x, negated) => {
            let s = match x.as_ref() {
                Expr::Col(c) => match col_stats(table, st, *c) {
                    Some(cs) => cs.null_frac,
                    None if !table.def.columns[*c].nullable => 0.0,
                    None => DEFAULT_NULL,
                },
                _ => DEFAULT_NULL,
            };
            if *negated {
                1.0 - s
            } else {
                s
            }
        }
        Expr::Like { .. } | Expr::Bin(BinOp::Like(..) | BinOp::Regex(..), ..) => DEFAULT_MATCH,
        _ => DEFAULT_OTHER,
    };
    sel.clamp(0.0, 1.0)
}

/// `column = value`: the value's share from the statistics, else one
/// distinct value's.
fn eq_sel(
    table: &Table,
    st: Option<&stats::TableStats>,
    c: usize,
    v: Option<&Value>,
    n: f64,
) -> f64 {
    if key_covered(table, &[c]) {
        return 1.0 / n.max(1.0);
    }
    match (col_stats(table, st, c), v) {
        (Some(cs), Some(v)) => cs.eq_selectivity(v, n),
        (Some(cs), None) => ((1.0 - cs.null_frac) / cs.distinct(n)).clamp(0.0, 1.0),
        (None, _) => DEFAULT_EQ,
    }
}

/// `column < value` (`below`) or `column > value`: the share of the most
/// common values on that side and of the histogram below or above the
/// value.
fn range_sel(
    table: &Table,
    st: Option<&stats::TableStats>,
    c: usize,
    v: Option<&Value>,
    below: bool,
) -> f64 {
    let (Some(cs), Some(v)) = (col_stats(table, st, c), v) else {
        return DEFAULT_INEQ;
    };
    let less = |a: &Value| matches!(functions::compare(a, v), Ok(Some(Ordering::Less)));
    let mcv_total: f64 = cs.mcv.iter().map(|(_, f)| f).sum();
    let mcv_below: f64 = cs.mcv.iter().filter(|(m, _)| less(m)).map(|(_, f)| f).sum();
    let rest = (1.0 - cs.null_frac - mcv_total).max(0.0);
    let h = &cs.histogram;
    let hist_below = if h.len() >= 2 {
        let k = h.iter().take_while(|b| less(b)).count();
        if k == 0 {
            0.0
        } else if k >= h.len() {
            1.0
        } else {
            // Linear within the bucket for numbers.
            let frac = match (num(&h[k - 1]), num(&h[k]), num(v)) {
                (Some(a), Some(b), Some(x)) if b > a => ((x - a) / (b - a)).clamp(0.0, 1.0),
                _ => 0.5,
            };
            ((k - 1) as f64 + frac) / (h.len() - 1) as f64
        }
    } else {
        DEFAULT_INEQ
    };
    let below_share = mcv_below + rest * hist_below;
    if below {
        below_share
    } else {
        (1.0 - cs.null_frac - below_share).max(0.0)
    }
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Decimal(d) => d.to_string().parse().ok(),
        Value::Date(d) => Some(*d as f64),
        Value::Timestamp(t) | Value::TimestampTz(t) => Some(*t as f64),
        _ => None,
    }
}

/// Distinct values of `e` over `rows` rows of `s`: a table column's from
/// its statistics or its key, else a guess.
fn expr_distinct(s: &Source, e: &Expr, rows: f64) -> f64 {
    let guess = (rows / 2.0).max(1.0).min(200.0_f64.max(rows / 10.0));
    let Expr::Col(c) = e else {
        return guess;
    };
    match column_at(s, *c) {
        Some((table, col)) => column_distinct(table, col).map_or(guess, |d| d.min(rows).max(1.0)),
        None => guess,
    }
}

/// Distinct values of a table column, when known: all the rows for a
/// column that is a key alone; the statistics' count.
pub(super) fn column_distinct(table: &Table, col: usize) -> Option<f64> {
    let n = table.len().max(1) as f64;
    if key_covered(table, &[col]) {
        return Some(n);
    }
    let st = stats::of(table)?;
    let name = &table.def.columns.get(col)?.name;
    st.column(name).map(|cs| cs.distinct(n))
}

/// The table and column at position `pos` of a source's row.
fn column_at(s: &Source, pos: usize) -> Option<(&Table, usize)> {
    match s {
        Source::Table { table, .. } => Some((table.as_ref(), pos)),
        Source::Join { left, right, .. } => {
            let lw = source_width(left);
            if pos < lw {
                column_at(left, pos)
            } else {
                column_at(right, pos - lw)
            }
        }
        _ => None,
    }
}
