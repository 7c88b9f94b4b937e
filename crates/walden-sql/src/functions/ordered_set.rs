//! Ordered-set and hypothetical-set aggregates (`WITHIN GROUP (ORDER BY
//! ...)`): percentile_cont, percentile_disc, mode, and rank, dense_rank,
//! percent_rank, cume_dist of a hypothetical row. Their input is the
//! group's rows sorted by the WITHIN GROUP order; their direct arguments
//! (the fraction, the hypothetical row) are evaluated once per group.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderedFn {
    PercentileCont,
    PercentileDisc,
    Mode,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
}

impl OrderedFn {
    /// The ordered-set aggregate of this name; the hypothetical-set ones
    /// only with WITHIN GROUP (without, they are window functions).
    pub fn from_name(name: &str, within_group: bool) -> Option<OrderedFn> {
        Some(match name {
            "percentile_cont" => OrderedFn::PercentileCont,
            "percentile_disc" => OrderedFn::PercentileDisc,
            "mode" => OrderedFn::Mode,
            "rank" if within_group => OrderedFn::Rank,
            "dense_rank" if within_group => OrderedFn::DenseRank,
            "percent_rank" if within_group => OrderedFn::PercentRank,
            "cume_dist" if within_group => OrderedFn::CumeDist,
            _ => return None,
        })
    }

    pub fn hypothetical(self) -> bool {
        matches!(
            self,
            OrderedFn::Rank | OrderedFn::DenseRank | OrderedFn::PercentRank | OrderedFn::CumeDist
        )
    }

    /// How many direct arguments it takes (the hypothetical ones: one per
    /// ordering column).
    pub fn direct_count(self, order_len: usize) -> usize {
        match self {
            OrderedFn::PercentileCont | OrderedFn::PercentileDisc => 1,
            OrderedFn::Mode => 0,
            _ => order_len,
        }
    }

    /// The result type, given the (first) ordering column's type and the
    /// direct argument's.
    pub fn result_type(self, sort: Option<&DataType>, direct: Option<&DataType>) -> DataType {
        let array = matches!(direct, Some(DataType::Array(_)));
        let wrap = |t: DataType| {
            if array {
                DataType::Array(Box::new(t))
            } else {
                t
            }
        };
        match self {
            OrderedFn::PercentileCont => wrap(match sort {
                Some(DataType::Interval) => DataType::Interval,
                _ => DataType::Double,
            }),
            OrderedFn::PercentileDisc => wrap(sort.cloned().unwrap_or(DataType::Text)),
            OrderedFn::Mode => sort.cloned().unwrap_or(DataType::Text),
            OrderedFn::Rank | OrderedFn::DenseRank => DataType::BigInt,
            OrderedFn::PercentRank | OrderedFn::CumeDist => DataType::Double,
        }
    }

    /// The aggregate's value over `rows` (each row's ordering values,
    /// sorted by `dirs`: descending, nulls first), with its direct
    /// arguments' values.
    pub fn finish(
        self,
        rows: &[Vec<Value>],
        dirs: &[(bool, bool)],
        direct: &[Value],
    ) -> Result<Value> {
        match self {
            OrderedFn::PercentileCont | OrderedFn::PercentileDisc => {
                let cont = self == OrderedFn::PercentileCont;
                // NULL inputs are left out.
                let values: Vec<&Value> = rows
                    .iter()
                    .map(|r| &r[0])
                    .filter(|v| !v.is_null())
                    .collect();
                match direct.first().cloned().unwrap_or(Value::Null) {
                    Value::Null => Ok(Value::Null),
                    Value::Array(fractions) => {
                        let mut fs = Vec::with_capacity(fractions.len());
                        for f in fractions.iter() {
                            fs.push(match f {
                                Value::Null => None,
                                f => Some(fraction(f.clone())?),
                            });
                        }
                        if values.is_empty() {
                            return Ok(Value::Null);
                        }
                        let mut out = Vec::with_capacity(fs.len());
                        for f in fs {
                            out.push(match f {
                                None => Value::Null,
                                Some(f) => percentile(&values, f, cont)?,
                            });
                        }
                        Ok(Value::Array(out.into()))
                    }
                    f => {
                        let f = fraction(f)?;
                        if values.is_empty() {
                            return Ok(Value::Null);
                        }
                        percentile(&values, f, cont)
                    }
                }
            }
            OrderedFn::Mode => {
                // The most frequent value; of equally frequent ones, the
                // first in the order.
                let mut best: Option<(&Value, usize)> = None;
                let mut run: Option<(&Value, usize)> = None;
                for v in rows.iter().map(|r| &r[0]).filter(|v| !v.is_null()) {
                    run = match run {
                        Some((cur, n)) if compare(cur, v)? == Some(Ordering::Equal) => {
                            Some((cur, n + 1))
                        }
                        _ => Some((v, 1)),
                    };
                    let (cur, n) = run.unwrap();
                    if best.is_none_or(|(_, b)| n > b) {
                        best = Some((cur, n));
                    }
                }
                Ok(best.map(|(v, _)| v.clone()).unwrap_or(Value::Null))
            }
            _ => {
                // The hypothetical row's place among the group's rows.
                let hypo = direct;
                let cmp = |r: &Vec<Value>| compare_rows(r, hypo, dirs);
                let n = rows.len() as i64;
                let before = rows.iter().filter(|r| cmp(r) == Ordering::Less).count() as i64;
                Ok(match self {
                    OrderedFn::Rank => Value::Int(before + 1),
                    OrderedFn::PercentRank => Value::Float(if n == 0 {
                        0.0
                    } else {
                        before as f64 / n as f64
                    }),
                    OrderedFn::CumeDist => {
                        let peers_or_before =
                            rows.iter().filter(|r| cmp(r) != Ordering::Greater).count() as i64;
                        Value::Float((peers_or_before + 1) as f64 / (n + 1) as f64)
                    }
                    _ => {
                        // dense_rank: distinct rows (by the order) before it.
                        let mut distinct = 0i64;
                        let mut last: Option<&Vec<Value>> = None;
                        for r in rows.iter().filter(|r| cmp(r) == Ordering::Less) {
                            if last.is_none_or(|l| compare_rows(l, r, dirs) != Ordering::Equal) {
                                distinct += 1;
                            }
                            last = Some(r);
                        }
                        Value::Int(distinct + 1)
                    }
                })
            }
        }
    }
}

/// A percentile fraction as float8, checked to lie in [0, 1].
fn fraction(v: Value) -> Result<f64> {
    let f = match cast(v, &DataType::Double)? {
        Value::Float(f) => f,
        other => {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!("percentile value {other} is not a number"),
            ))
        }
    };
    if !(0.0..=1.0).contains(&f) {
        return Err(SqlError::new(
            ErrorKind::NumericOutOfRange,
            format!("percentile value {} is not between 0 and 1", float_g(f)),
        ));
    }
    Ok(f)
}

/// `%g`-like text of a fraction for the error message.
fn float_g(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{f}")
    }
}

/// One percentile of the sorted non-NULL `values` (at least one).
fn percentile(values: &[&Value], f: f64, cont: bool) -> Result<Value> {
    let n = values.len();
    if !cont {
        // The first value whose position reaches the fraction.
        let row = (f * n as f64).ceil() as usize;
        return Ok(values[row.clamp(1, n) - 1].clone());
    }
    // Interpolated in float8 (an interval stays an interval).
    let conv = |v: &Value| match v {
        Value::Interval(_) => Ok(v.clone()),
        v => cast(v.clone(), &DataType::Double),
    };
    let pos = f * (n - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let first = conv(values[lo])?;
    if lo == hi {
        return Ok(first);
    }
    let proportion = pos - lo as f64;
    let second = conv(values[hi])?;
    match (&first, &second) {
        (Value::Float(a), Value::Float(b)) => Ok(Value::Float(a + (b - a) * proportion)),
        _ => {
            // interval: first + (second - first) * proportion.
            let diff = binary(BinOp::Sub, second, first.clone())?;
            let step = binary(BinOp::Mul, diff, Value::Float(proportion))?;
            binary(BinOp::Add, first, step)
        }
    }
}

/// Orders a row against the hypothetical one, column by column.
fn compare_rows(a: &[Value], b: &[Value], dirs: &[(bool, bool)]) -> Ordering {
    for (i, (desc, nulls_first)) in dirs.iter().enumerate() {
        let (x, y) = (&a[i], &b[i]);
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if *nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if *nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => {
                let o = compare(x, y).ok().flatten().unwrap_or(Ordering::Equal);
                if *desc {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}
