//! Per-column statistics of a table, as ANALYZE gathers them: the share of
//! NULLs, the number of distinct values (PostgreSQL's n_distinct: negative
//! for a share of the rows), the most common values with their shares, a
//! histogram of the others, the average width and the correlation between
//! the key order and the column's order.
//!
//! Statistics are derived data: they are kept in memory beside the table's
//! rows (shared by the table's definitions, dropped with them), not logged.
//! A restarted server or a replica has none until ANALYZE runs there; the
//! planner then uses its default estimates, as PostgreSQL does for a table
//! never analysed.

use super::*;
use std::sync::{Mutex, Weak};

/// Rows ANALYZE reads at most (PostgreSQL's 300 × default_statistics_target).
pub const SAMPLE_ROWS: usize = 30_000;
/// Most common values and histogram buckets kept at most
/// (default_statistics_target).
const TARGET: usize = 100;

#[derive(Debug, Clone)]
pub struct ColumnStats {
    pub name: String,
    pub null_frac: f64,
    pub avg_width: i32,
    /// Distinct values: positive, a count; negative, minus a share of the
    /// rows (PostgreSQL's stadistinct).
    pub n_distinct: f64,
    /// Most common values, most common first, with their shares of rows.
    pub mcv: Vec<(Value, f64)>,
    /// Bounds of equal-population buckets over the values not in `mcv`.
    pub histogram: Vec<Value>,
    pub correlation: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct TableStats {
    /// Rows the table had when analysed (pg_class.reltuples).
    pub reltuples: f64,
    pub columns: Vec<ColumnStats>,
}

impl TableStats {
    /// Pages of 8 kB a PostgreSQL heap would take for the rows: each row's
    /// analysed widths, a 24-byte header aligned to 8 and a 4-byte line
    /// pointer, in 8,168 usable bytes a page.
    pub fn heap_pages(&self) -> u64 {
        let data: i64 = self.columns.iter().map(|c| c.avg_width as i64).sum();
        let row = ((24 + data + 7) / 8 * 8 + 4) as f64;
        (self.reltuples * row / 8168.0).ceil() as u64
    }

    pub fn column(&self, name: &str) -> Option<&ColumnStats> {
        self.columns.iter().find(|c| c.name == name)
    }
}

impl ColumnStats {
    /// Distinct values among `rows` rows.
    pub fn distinct(&self, rows: f64) -> f64 {
        if self.n_distinct < 0.0 {
            (-self.n_distinct * rows).max(1.0)
        } else {
            self.n_distinct.max(1.0)
        }
    }

    /// The share of rows equal to `v` (a constant).
    pub fn eq_selectivity(&self, v: &Value, rows: f64) -> f64 {
        if v.is_null() {
            return 0.0;
        }
        for (m, f) in &self.mcv {
            if matches!(functions::compare(m, v), Ok(Some(Ordering::Equal))) {
                return *f;
            }
        }
        // The rest spread evenly over the other distinct values.
        let mcv_share: f64 = self.mcv.iter().map(|(_, f)| f).sum();
        let others = (self.distinct(rows) - self.mcv.len() as f64).max(1.0);
        ((1.0 - self.null_frac - mcv_share) / others).clamp(0.0, 1.0)
    }
}

type Entry = (Weak<dyn std::any::Any + Send + Sync>, Arc<TableStats>);

/// Statistics by the address of the table's rows (shared by its
/// definitions); the weak reference tells a dropped table's entry.
static REGISTRY: Mutex<Vec<(usize, Entry)>> = Mutex::new(Vec::new());

fn key(table: &Table) -> usize {
    Arc::as_ptr(&table.rows) as *const u8 as usize
}

/// The statistics ANALYZE last stored for `table`.
pub fn of(table: &Table) -> Option<Arc<TableStats>> {
    let k = key(table);
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.iter()
        .find(|(at, (w, _))| *at == k && w.strong_count() > 0)
        .map(|(_, (_, s))| s.clone())
}

/// Stores `stats` for `table`, replacing what it had (and forgetting the
/// entries of dropped tables).
pub fn store(table: &Table, stats: TableStats) {
    let k = key(table);
    let rows: Arc<dyn std::any::Any + Send + Sync> = table.rows.clone();
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.retain(|(at, (w, _))| *at != k && w.strong_count() > 0);
    reg.push((k, (Arc::downgrade(&rows), Arc::new(stats))));
}

/// Statistics of the columns `which` (all when empty) of `table` from the
/// rows read (`sample`, in key order) out of `total` rows; the columns not
/// asked keep what they had.
pub fn gather(
    table: &Table,
    sample: &[walden_engine::Row],
    total: usize,
    which: &[usize],
) -> TableStats {
    let old = of(table);
    let mut columns = Vec::new();
    for (k, col) in table.def.columns.iter().enumerate() {
        if !which.is_empty() && !which.contains(&k) {
            if let Some(c) = old.as_ref().and_then(|o| o.column(&col.name)) {
                columns.push(c.clone());
            }
            continue;
        }
        let values: Vec<Value> = sample
            .iter()
            .map(|r| r.get(k).cloned().unwrap_or(Value::Null))
            .collect();
        columns.push(column_stats(&col.name, &col.data_type, values, total));
    }
    TableStats {
        reltuples: total as f64,
        columns,
    }
}

/// The width of a value as PostgreSQL stores it: the type's length for a
/// fixed-width type, the bytes and a header for the others.
fn width(ty: &DataType, v: &Value) -> usize {
    use DataType as T;
    match ty {
        T::Bool => 1,
        T::SmallInt => 2,
        T::Int | T::Real | T::Date => 4,
        T::BigInt | T::Double | T::Timestamp | T::TimestampTz | T::Time => 8,
        T::Uuid => 16,
        _ => {
            let n = v.to_string().len();
            // A short varlena has a one-byte header.
            n + if n < 127 { 1 } else { 4 }
        }
    }
}

fn column_stats(name: &str, ty: &DataType, values: Vec<Value>, total: usize) -> ColumnStats {
    let samplerows = values.len();
    // Key-order positions of the non-NULL values, for the correlation.
    let mut nonnull: Vec<(usize, Value)> = values
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_null())
        .collect();
    let nulls = samplerows - nonnull.len();
    let null_frac = if samplerows == 0 {
        0.0
    } else {
        nulls as f64 / samplerows as f64
    };
    let avg_width = if nonnull.is_empty() {
        0
    } else {
        (nonnull.iter().map(|(_, v)| width(ty, v)).sum::<usize>() / nonnull.len()) as i32
    };
    let cmp = |a: &Value, b: &Value| {
        functions::compare(a, b)
            .ok()
            .flatten()
            .unwrap_or(Ordering::Equal)
    };
    nonnull.sort_by(|a, b| cmp(&a.1, &b.1));
    // Runs of equal values: (first index in sorted order, count).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, (_, v)) in nonnull.iter().enumerate() {
        match runs.last_mut() {
            Some((s, c)) if cmp(&nonnull[*s].1, v) == Ordering::Equal => *c += 1,
            _ => runs.push((i, 1)),
        }
    }
    let d = runs.len();
    let f1 = runs.iter().filter(|(_, c)| *c == 1).count();
    let nmultiple = d - f1;
    let n = nonnull.len() as f64;
    let totalrows = total.max(samplerows) as f64;
    let mut n_distinct = if nonnull.is_empty() {
        0.0
    } else if nmultiple == 0 {
        // Every value once: a unique column.
        -(1.0 - null_frac)
    } else if nmultiple == d {
        // Every value more than once: probably all the values there are.
        d as f64
    } else {
        // Haas and Stokes' estimator (the Duj1 PostgreSQL uses).
        let big_n = totalrows * (1.0 - null_frac);
        let est = (n * d as f64) / ((n - f1 as f64) + f1 as f64 * n / big_n);
        est.max(d as f64).min(big_n).round()
    };
    if n_distinct > 0.1 * totalrows {
        n_distinct = -(n_distinct / totalrows);
    }

    // Most common values: of the values seen more than once, the most
    // frequent (TARGET at most); all of them when they are every value
    // and few, else those PostgreSQL's rule keeps (`keep_mcvs`).
    let mut track: Vec<(usize, usize)> = runs.iter().copied().filter(|(_, c)| *c > 1).collect();
    track.sort_by_key(|t| std::cmp::Reverse(t.1));
    track.truncate(TARGET);
    let keep = if track.len() == d && n_distinct > 0.0 {
        track.len()
    } else {
        let counts: Vec<usize> = track.iter().map(|(_, c)| *c).collect();
        keep_mcvs(&counts, n_distinct, null_frac, samplerows, totalrows)
    };
    let mcv_runs: Vec<(usize, usize)> = track[..keep].to_vec();
    let mcv: Vec<(Value, f64)> = mcv_runs
        .iter()
        .map(|&(s, c)| (nonnull[s].1.clone(), c as f64 / samplerows as f64))
        .collect();

    // The histogram over the values not in the list, as PostgreSQL picks
    // its bounds.
    let rest: Vec<&Value> = runs
        .iter()
        .filter(|(s, _)| !mcv_runs.iter().any(|(m, _)| m == s))
        .flat_map(|&(s, c)| nonnull[s..s + c].iter().map(|(_, v)| v))
        .collect();
    let rest_distinct = d - mcv_runs.len();
    let mut histogram = Vec::new();
    let num_hist = rest_distinct.min(TARGET + 1);
    if num_hist >= 2 {
        let nvals = rest.len();
        let delta = (nvals - 1) / (num_hist - 1);
        let deltafrac = (nvals - 1) % (num_hist - 1);
        let (mut pos, mut posfrac) = (0usize, 0usize);
        for _ in 0..num_hist {
            histogram.push(rest[pos].clone());
            pos += delta;
            posfrac += deltafrac;
            if posfrac >= num_hist - 1 {
                pos += 1;
                posfrac -= num_hist - 1;
            }
        }
    }

    // Correlation between the key order and the value order.
    let correlation = (nonnull.len() > 1).then(|| {
        let m = nonnull.len() as f64;
        let (mut sx, mut sy, mut sxy, mut sxx) = (0.0, 0.0, 0.0, 0.0);
        for (rank, (at, _)) in nonnull.iter().enumerate() {
            let (x, y) = (*at as f64, rank as f64);
            sx += x;
            sy += y;
            sxy += x * y;
            sxx += x * x;
        }
        let den = m * sxx - sx * sx;
        if den == 0.0 {
            1.0
        } else {
            (m * sxy - sx * sy) / den
        }
    });
    ColumnStats {
        name: name.to_string(),
        null_frac,
        avg_width,
        n_distinct,
        mcv,
        histogram,
        correlation,
    }
}

/// How many of the most common values (their sample counts, most common
/// first) to keep: every one when the whole table was read; else while
/// the least common of them is clearly more common than the average of
/// the values not kept (two standard errors of its count, as PostgreSQL
/// decides).
fn keep_mcvs(
    counts: &[usize],
    n_distinct: f64,
    null_frac: f64,
    samplerows: usize,
    totalrows: f64,
) -> usize {
    let mut k = counts.len();
    if k == 0 || samplerows as f64 >= totalrows {
        return k;
    }
    let distinct_table = if n_distinct < 0.0 {
        -n_distinct * totalrows
    } else {
        n_distinct
    };
    let n = samplerows as f64;
    let big_n = totalrows;
    let mut sum: f64 = counts[..k - 1].iter().map(|&c| c as f64).sum();
    while k > 0 {
        let mut selec = (1.0 - sum / n - null_frac).clamp(0.0, 1.0);
        let other = distinct_table - (k - 1) as f64;
        if other > 1.0 {
            selec /= other;
        }
        let last = counts[k - 1] as f64;
        let big_k = big_n * last / n;
        let variance = n * big_k * (big_n - big_k) * (big_n - n) / (big_n * big_n * (big_n - 1.0));
        if last > selec * n + 2.0 * variance.max(0.0).sqrt() + 0.5 {
            break;
        }
        k -= 1;
        if k == 0 {
            break;
        }
        sum -= counts[k - 1] as f64;
    }
    k
}
