//! Window frames: which rows of its partition each row's frame holds.
//!
//! Positions are indexes into the partition in window order. ROWS counts
//! rows, GROUPS counts peer groups (rows equal in the ORDER BY), RANGE
//! compares the one ORDER BY key with the current row's, plus or minus the
//! offset. A NULL key is a peer of the other NULLs only: with an offset, a
//! NULL row's frame bound is its peer group, and NULL rows are never within
//! an offset of a row with a key (as in PostgreSQL).

use super::{Bound, Exclude, Frame, Units};
use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::Env;
use crate::functions::{binary, compare, BinOp};
use std::cmp::Ordering;
use walden_engine::{DataType, Value};

/// One partition, in window order.
pub(super) struct Part<'a> {
    pub n: usize,
    /// Peer group of each position.
    pub group_of: Vec<usize>,
    /// First position of each peer group, and one past its last.
    pub gstart: Vec<usize>,
    pub gend: Vec<usize>,
    /// The first ORDER BY key at each position (RANGE offsets only).
    pub key: Vec<&'a Value>,
    pub desc: bool,
    /// The positions whose key is not NULL: `[lo, hi)`.
    pub keyed: (usize, usize),
}

impl<'a> Part<'a> {
    /// `keys`: each position's ORDER BY values; `nulls_first` of the first.
    pub fn new(keys: Vec<&'a [Value]>, desc: bool, nulls_first: bool) -> Part<'a> {
        let n = keys.len();
        let mut group_of = Vec::with_capacity(n);
        let mut gstart = Vec::new();
        let mut gend = Vec::new();
        for i in 0..n {
            let peer = i > 0
                && keys[i]
                    .iter()
                    .zip(keys[i - 1])
                    .all(|(a, b)| match (a.is_null(), b.is_null()) {
                        (true, true) => true,
                        (false, false) => compare(a, b).ok().flatten() == Some(Ordering::Equal),
                        _ => false,
                    });
            if !peer {
                if i > 0 {
                    gend.push(i);
                }
                gstart.push(i);
            }
            group_of.push(gstart.len() - 1);
        }
        if n > 0 {
            gend.push(n);
        }
        let key: Vec<&Value> = keys
            .iter()
            .map(|k| k.first().unwrap_or(&Value::Null))
            .collect();
        let nulls = key.iter().filter(|v| v.is_null()).count();
        let keyed = if nulls_first {
            (nulls, n)
        } else {
            (0, n - nulls)
        };
        Part {
            n,
            group_of,
            gstart,
            gend,
            key,
            desc,
            keyed,
        }
    }
}

enum Off {
    Count(usize),
    Value(Value),
}

enum B {
    UnboundedPreceding,
    Preceding(Off),
    CurrentRow,
    Following(Off),
    UnboundedFollowing,
}

/// A frame with its offsets evaluated.
pub(super) struct Bounds {
    units: Units,
    start: B,
    end: B,
    pub exclude: Exclude,
}

/// Up to three runs of positions: the frame less its exclusion.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Segs {
    runs: [(usize, usize); 3],
    len: usize,
}

impl Segs {
    fn push(&mut self, s: usize, e: usize) {
        if s < e {
            self.runs[self.len] = (s, e);
            self.len += 1;
        }
    }
    pub fn runs(&self) -> &[(usize, usize)] {
        &self.runs[..self.len]
    }
    /// The frame as one run, when it is one (or empty).
    pub fn single(&self) -> Option<(usize, usize)> {
        match self.len {
            0 => Some((0, 0)),
            1 => Some(self.runs[0]),
            _ => None,
        }
    }
    pub fn positions(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.runs().iter().flat_map(|&(s, e)| s..e)
    }
}

impl Bounds {
    pub fn new(f: &Frame, env: &Env<'_>) -> Result<Bounds> {
        let off = |e: &crate::expr::Expr, which: &str| -> Result<Off> {
            let v = e.eval(&[], env)?;
            if v.is_null() {
                return Err(SqlError::new(
                    ErrorKind::NullValueNotAllowed,
                    format!("frame {which} offset must not be null"),
                ));
            }
            if f.units == Units::Range {
                let negative = matches!(compare(&v, &Value::Int(0)), Ok(Some(Ordering::Less)));
                let nan = match &v {
                    Value::Float(x) => x.is_nan(),
                    Value::Decimal(d) => d.is_nan(),
                    _ => false,
                };
                if negative || nan {
                    return Err(SqlError::new(
                        ErrorKind::InvalidFrameOffset,
                        "invalid preceding or following size in window function",
                    ));
                }
                return Ok(Off::Value(v));
            }
            let n = crate::functions::cast(v, &DataType::BigInt)?
                .as_i64()
                .unwrap_or(0);
            if n < 0 {
                return Err(SqlError::new(
                    ErrorKind::InvalidFrameOffset,
                    format!("frame {which} offset must not be negative"),
                ));
            }
            Ok(Off::Count(usize::try_from(n).unwrap_or(usize::MAX)))
        };
        let b = |b: &Bound, which: &str| -> Result<B> {
            Ok(match b {
                Bound::UnboundedPreceding => B::UnboundedPreceding,
                Bound::UnboundedFollowing => B::UnboundedFollowing,
                Bound::CurrentRow => B::CurrentRow,
                Bound::Preceding(e) => B::Preceding(off(e, which)?),
                Bound::Following(e) => B::Following(off(e, which)?),
            })
        };
        Ok(Bounds {
            units: f.units,
            start: b(&f.start, "starting")?,
            end: b(&f.end, "ending")?,
            exclude: f.exclude,
        })
    }

    /// The frame of the row at `pos`, less the excluded rows.
    pub fn segments(&self, p: &Part<'_>, pos: usize) -> Result<Segs> {
        let s = self.start_of(p, pos)?;
        let e = self.end_of(p, pos)?.max(s);
        let mut out = Segs {
            runs: [(0, 0); 3],
            len: 0,
        };
        let g = p.group_of[pos];
        let (xs, xe) = match self.exclude {
            Exclude::NoOthers => {
                out.push(s, e);
                return Ok(out);
            }
            Exclude::CurrentRow => (pos, pos + 1),
            Exclude::Group | Exclude::Ties => (p.gstart[g], p.gend[g]),
        };
        out.push(s, e.min(xs));
        if self.exclude == Exclude::Ties && s <= pos && pos < e {
            out.push(pos, pos + 1);
        }
        out.push(s.max(xe), e);
        Ok(out)
    }

    fn start_of(&self, p: &Part<'_>, pos: usize) -> Result<usize> {
        let g = p.group_of[pos];
        Ok(match (&self.start, self.units) {
            (B::UnboundedPreceding, _) => 0,
            (B::UnboundedFollowing, _) => p.n,
            (B::CurrentRow, Units::Rows) => pos,
            (B::CurrentRow, _) => p.gstart[g],
            (B::Preceding(Off::Count(k)), Units::Rows) => pos.saturating_sub(*k),
            (B::Following(Off::Count(k)), Units::Rows) => pos.saturating_add(*k).min(p.n),
            (B::Preceding(Off::Count(k)), _) => p.gstart[g.saturating_sub(*k)],
            (B::Following(Off::Count(k)), _) => match g.checked_add(*k) {
                Some(t) if t < p.gstart.len() => p.gstart[t],
                _ => p.n,
            },
            (B::Preceding(Off::Value(v)), _) => range_bound(p, pos, v, true, true)?,
            (B::Following(Off::Value(v)), _) => range_bound(p, pos, v, false, true)?,
        })
    }

    /// One past the frame's last position.
    fn end_of(&self, p: &Part<'_>, pos: usize) -> Result<usize> {
        let g = p.group_of[pos];
        Ok(match (&self.end, self.units) {
            (B::UnboundedFollowing, _) => p.n,
            (B::UnboundedPreceding, _) => 0,
            (B::CurrentRow, Units::Rows) => pos + 1,
            (B::CurrentRow, _) => p.gend[g],
            (B::Preceding(Off::Count(k)), Units::Rows) => (pos + 1).saturating_sub(*k),
            (B::Following(Off::Count(k)), Units::Rows) => {
                pos.saturating_add(*k).saturating_add(1).min(p.n)
            }
            (B::Preceding(Off::Count(k)), _) => match g.checked_sub(*k) {
                Some(t) => p.gend[t],
                None => 0,
            },
            (B::Following(Off::Count(k)), _) => p.gend[g.saturating_add(*k).min(p.gend.len() - 1)],
            (B::Preceding(Off::Value(v)), _) => range_bound(p, pos, v, true, false)?,
            (B::Following(Off::Value(v)), _) => range_bound(p, pos, v, false, false)?,
        })
    }
}

/// `key ± offset`; integers that leave i64 continue as decimals.
fn shifted(key: &Value, off: &Value, add: bool) -> Result<Value> {
    if let (Value::Int(a), Value::Int(b)) = (key, off) {
        let r = if add {
            a.checked_add(*b)
        } else {
            a.checked_sub(*b)
        };
        return Ok(match r {
            Some(x) => Value::Int(x),
            None => {
                let (a, b) = (
                    walden_engine::types::Numeric::from(*a),
                    walden_engine::types::Numeric::from(*b),
                );
                Value::Decimal(if add { a.add(&b)? } else { a.sub(&b)? })
            }
        });
    }
    binary(
        if add { BinOp::Add } else { BinOp::Sub },
        key.clone(),
        off.clone(),
    )
}

/// A RANGE bound with an offset: the first position at or after
/// `key ∓ offset` in window order (a start), or one past the last position
/// at or before it (an end).
fn range_bound(
    p: &Part<'_>,
    pos: usize,
    off: &Value,
    preceding: bool,
    start: bool,
) -> Result<usize> {
    let g = p.group_of[pos];
    let cur = p.key[pos];
    if cur.is_null() {
        return Ok(if start { p.gstart[g] } else { p.gend[g] });
    }
    // Preceding means smaller keys in ascending order, larger in descending.
    let add = preceding == p.desc;
    let target = shifted(cur, off, add)?;
    let (lo, hi) = p.keyed;
    // An infinite offset from an infinite key of the other sign (-inf +
    // inf): PostgreSQL puts every non-null key in the frame.
    let nan = match &target {
        Value::Float(x) => x.is_nan(),
        Value::Decimal(d) => d.is_nan(),
        _ => false,
    };
    if nan && !matches!(off, Value::Float(x) if x.is_nan()) {
        return Ok(if start { lo } else { hi });
    }
    let mut bad = None;
    let mut along = |v: &Value| -> Ordering {
        let o = match compare(v, &target) {
            Ok(Some(o)) => o,
            Ok(None) => Ordering::Equal,
            Err(e) => {
                bad.get_or_insert(e);
                Ordering::Equal
            }
        };
        if p.desc {
            o.reverse()
        } else {
            o
        }
    };
    let keys = &p.key[lo..hi];
    let at = if start {
        keys.partition_point(|v| along(v) == Ordering::Less)
    } else {
        keys.partition_point(|v| along(v) != Ordering::Greater)
    };
    match bad {
        Some(e) => Err(e),
        None => Ok(lo + at),
    }
}
