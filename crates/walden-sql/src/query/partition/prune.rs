//! Partition pruning: which partitions a statement's WHERE can reach, from
//! its conjuncts that compare a key column with a constant (`k = 5`,
//! `k IN (1, 2)`, `k < 10`, `k BETWEEN 1 AND 5`). A partition is left out
//! only when no row it may hold satisfies them; everything else (any
//! other predicate, a parameter, a default partition) keeps partitions.
//! And the derived table that reads a partitioned table's partitions.

use super::bound::{cmp_key, Bound, Datum};
use super::tree::Node;
use super::{sql_name, Strategy};
use sqlparser::ast;
use std::cmp::Ordering;
use walden_engine::{DataType, Value};

/// One end of an interval: a value and whether it is included.
type End = (Value, bool);

/// What the conjuncts say of one column.
#[derive(Default, Debug)]
struct ColPreds {
    /// Equal to one of these (intersected over conjuncts: kept as lists).
    eq: Vec<Vec<Value>>,
    /// Lower and upper limits, with whether they are included.
    lo: Vec<(Value, bool)>,
    hi: Vec<(Value, bool)>,
}

fn cmp(a: &Value, b: &Value) -> Ordering {
    crate::functions::compare(a, b)
        .ok()
        .flatten()
        .unwrap_or(Ordering::Equal)
}

impl ColPreds {
    /// Whether a value can satisfy every predicate.
    fn admits(&self, v: &Value) -> bool {
        if v.is_null() {
            return self.eq.is_empty() && self.lo.is_empty() && self.hi.is_empty();
        }
        self.eq
            .iter()
            .all(|set| set.iter().any(|x| cmp(v, x) == Ordering::Equal))
            && self.lo.iter().all(|(x, incl)| match cmp(v, x) {
                Ordering::Greater => true,
                Ordering::Equal => *incl,
                Ordering::Less => false,
            })
            && self.hi.iter().all(|(x, incl)| match cmp(v, x) {
                Ordering::Less => true,
                Ordering::Equal => *incl,
                Ordering::Greater => false,
            })
    }

    /// The tightest lower and upper limits (an equality set gives both).
    fn interval(&self) -> (Option<End>, Option<End>) {
        let mut lo: Option<(Value, bool)> = None;
        let mut hi: Option<(Value, bool)> = None;
        let mut tighten_lo = |c: (Value, bool)| {
            lo = Some(match lo.take() {
                None => c,
                Some(o) => match cmp(&c.0, &o.0) {
                    Ordering::Greater => c,
                    Ordering::Equal => (o.0, o.1 && c.1),
                    Ordering::Less => o,
                },
            })
        };
        for set in &self.eq {
            if let Some(m) = set.iter().min_by(|a, b| cmp(a, b)) {
                tighten_lo((m.clone(), true));
            }
        }
        for c in &self.lo {
            tighten_lo(c.clone());
        }
        let mut tighten_hi = |c: (Value, bool)| {
            hi = Some(match hi.take() {
                None => c,
                Some(o) => match cmp(&c.0, &o.0) {
                    Ordering::Less => c,
                    Ordering::Equal => (o.0, o.1 && c.1),
                    Ordering::Greater => o,
                },
            })
        };
        for set in &self.eq {
            if let Some(m) = set.iter().max_by(|a, b| cmp(a, b)) {
                tighten_hi((m.clone(), true));
            }
        }
        for c in &self.hi {
            tighten_hi(c.clone());
        }
        (lo, hi)
    }
}

/// The column a conjunct's side names, when it is this table's.
fn column_of(e: &ast::Expr, label: &str) -> Option<String> {
    match e {
        ast::Expr::Identifier(id) => Some(crate::expr::fold_ident(id)),
        ast::Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            (crate::expr::fold_ident(&parts[0]) == label)
                .then(|| crate::expr::fold_ident(&parts[1]))
        }
        ast::Expr::Nested(inner) => column_of(inner, label),
        _ => None,
    }
}

/// A constant whose comparison with a column of type `ty` compares the
/// same value (an integer literal with an integer column, a string with
/// a text or date column); `None` for anything else.
fn constant(e: &ast::Expr, ty: &DataType) -> Option<Value> {
    match e {
        ast::Expr::Nested(inner) => constant(inner, ty),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match constant(expr, ty)? {
            Value::Int(i) => Some(Value::Int(i.checked_neg()?)),
            Value::Decimal(d) => Some(Value::Decimal(-d)),
            _ => None,
        },
        ast::Expr::Value(v) => match (&v.value, ty) {
            (ast::Value::Number(n, _), t) if t.is_integer() => {
                n.parse::<i64>().ok().map(Value::Int)
            }
            (ast::Value::Number(n, _), DataType::Decimal { .. }) => {
                n.parse().ok().map(Value::Decimal)
            }
            (
                ast::Value::SingleQuotedString(s),
                DataType::Text | DataType::Varchar(_) | DataType::Date | DataType::Timestamp,
            ) => crate::functions::cast(Value::text(s), ty).ok(),
            _ => None,
        },
        _ => None,
    }
}

fn flip(op: &ast::BinaryOperator) -> Option<ast::BinaryOperator> {
    use ast::BinaryOperator as B;
    Some(match op {
        B::Eq => B::Eq,
        B::Lt => B::Gt,
        B::LtEq => B::GtEq,
        B::Gt => B::Lt,
        B::GtEq => B::LtEq,
        _ => return None,
    })
}

/// Adds what `c` says of column `col` (type `ty`) to `preds`.
fn read_conjunct(c: &ast::Expr, label: &str, col: &str, ty: &DataType, preds: &mut ColPreds) {
    use ast::BinaryOperator as B;
    match c {
        ast::Expr::Nested(inner) => read_conjunct(inner, label, col, ty, preds),
        ast::Expr::BinaryOp { left, op, right } => {
            let (op, v) = if column_of(left, label).as_deref() == Some(col) {
                match constant(right, ty) {
                    Some(v) => (op.clone(), v),
                    None => return,
                }
            } else if column_of(right, label).as_deref() == Some(col) {
                match (constant(left, ty), flip(op)) {
                    (Some(v), Some(op)) => (op, v),
                    _ => return,
                }
            } else {
                return;
            };
            match op {
                B::Eq => preds.eq.push(vec![v]),
                B::Lt => preds.hi.push((v, false)),
                B::LtEq => preds.hi.push((v, true)),
                B::Gt => preds.lo.push((v, false)),
                B::GtEq => preds.lo.push((v, true)),
                _ => {}
            }
        }
        ast::Expr::InList {
            expr,
            list,
            negated: false,
        } if column_of(expr, label).as_deref() == Some(col) => {
            let vals: Option<Vec<Value>> = list.iter().map(|e| constant(e, ty)).collect();
            if let Some(vals) = vals {
                preds.eq.push(vals);
            }
        }
        ast::Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } if column_of(expr, label).as_deref() == Some(col) => {
            if let (Some(l), Some(h)) = (constant(low, ty), constant(high, ty)) {
                preds.lo.push((l, true));
                preds.hi.push((h, true));
            }
        }
        _ => {}
    }
}

/// Whether partition `child` of `parent` may hold a row the conjuncts let through.
fn may_hold(parent: &Node, child: &Node, conjuncts: &[ast::Expr], label: &str) -> bool {
    let Some(key) = &parent.key else {
        return true;
    };
    let Some(col) = key.spec.column_name(0) else {
        return true;
    };
    let mut preds = ColPreds::default();
    for c in conjuncts {
        read_conjunct(c, label, &col, &key.types[0], &mut preds);
    }
    match (key.strategy(), child.bound.as_ref()) {
        (_, None | Some(Bound::Default)) => true,
        (Strategy::List, Some(Bound::List(vals))) => vals.iter().any(|v| preds.admits(v)),
        (Strategy::Range, Some(Bound::Range { from, to })) => {
            let (lo, hi) = preds.interval();
            // Below the partition's lower bound on the first column.
            if let (Some((h, incl)), Datum::Val(f)) = (&hi, &from[0]) {
                match cmp(h, f) {
                    Ordering::Less => return false,
                    Ordering::Equal if !incl => return false,
                    _ => {}
                }
            }
            // At or above its upper bound.
            if let (Some((l, incl)), Datum::Val(t)) = (&lo, &to[0]) {
                let whole = to.len() == 1 || to[1..].iter().all(|d| *d == Datum::Min);
                match cmp(l, t) {
                    Ordering::Greater => return false,
                    Ordering::Equal if whole || !incl => return false,
                    _ => {}
                }
            }
            // A one-column key fixed to one value: the bound decides.
            if let (Some((l, true)), Some((h, true)), 1) = (&lo, &hi, to.len()) {
                if cmp(l, h) == Ordering::Equal {
                    let k = std::slice::from_ref(l);
                    return cmp_key(k, from) != Ordering::Less && cmp_key(k, to) == Ordering::Less;
                }
            }
            true
        }
        _ => true,
    }
}

/// The leaves of `node` a statement with these WHERE conjuncts (over the
/// table labelled `label`) can reach, in order.
pub fn prune<'n>(node: &'n Node, conjuncts: &[ast::Expr], label: &str) -> Vec<&'n Node> {
    let mut out = Vec::new();
    collect(node, conjuncts, label, &mut out);
    out
}

fn collect<'n>(node: &'n Node, conjuncts: &[ast::Expr], label: &str, out: &mut Vec<&'n Node>) {
    if node.key.is_none() {
        out.push(node);
        return;
    }
    for c in &node.children {
        if may_hold(node, c, conjuncts, label) {
            collect(c, conjuncts, label, out);
        }
    }
}

/// The query that reads a partitioned table: its columns, in its order,
/// from each of `leaves`, with each row's `tableoid`.
pub fn expand_sql(root: &walden_engine::Table, leaves: &[&Node]) -> String {
    let q = crate::types::quote::quote_ident;
    let cols: Vec<String> = root.def.columns.iter().map(|c| q(&c.name)).collect();
    if leaves.is_empty() {
        let nulls: Vec<String> = root
            .def
            .columns
            .iter()
            .map(|c| format!("NULL::{} AS {}", c.data_type.sql_name(), q(&c.name)))
            .collect();
        return format!(
            "SELECT {}, 0::oid AS tableoid WHERE false",
            nulls.join(", ")
        );
    }
    let arms: Vec<String> = leaves
        .iter()
        .map(|l| {
            format!(
                "SELECT {}, {}::oid AS tableoid FROM {}",
                cols.join(", "),
                crate::types::oids::table_oid(l.table.id()),
                sql_name(l.table.name())
            )
        })
        .collect();
    arms.join(" UNION ALL ")
}
