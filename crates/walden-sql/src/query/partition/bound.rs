//! A partition's bound: its values (cast to the key's types) and the text
//! it is stored as (`FOR VALUES FROM (1) TO (10)`), which is also what
//! `pg_get_expr(relpartbound, oid)` shows.

use super::Strategy;
use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast;
use std::cmp::Ordering;
use walden_engine::{DataType, Value};

/// One value of a range bound.
#[derive(Clone, Debug, PartialEq)]
pub enum Datum {
    Min,
    Max,
    Val(Value),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    /// Lower bound included, upper excluded.
    Range { from: Vec<Datum>, to: Vec<Datum> },
    /// The values it takes (NULL among them takes NULL keys).
    List(Vec<Value>),
    /// Takes the rows no other partition does.
    Default,
}

fn table_def_err(m: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::InvalidTableDefinition, m)
}

impl Bound {
    /// A bound as written, its values computed by `eval` and cast to the
    /// key's types; `strategy` and `types` are the parent's key's.
    pub fn from_ast(
        fv: &ast::ForValues,
        strategy: Strategy,
        types: &[DataType],
        names: &[String],
        eval: &mut dyn FnMut(&ast::Expr) -> Result<Value>,
    ) -> Result<Bound> {
        let mut value = |e: &ast::Expr, k: usize| -> Result<Value> {
            let v = eval(e)?;
            crate::functions::cast(v, &types[k]).map_err(|_| {
                SqlError::new(
                    ErrorKind::DatatypeMismatch,
                    format!(
                        "specified value cannot be cast to type {} for column \"{}\"",
                        types[k].sql_name(),
                        names[k]
                    ),
                )
            })
        };
        Ok(match (fv, strategy) {
            (ast::ForValues::Default, _) => Bound::Default,
            (ast::ForValues::In(list), Strategy::List) => {
                let mut vals = Vec::with_capacity(list.len());
                for e in list {
                    vals.push(value(e, 0)?);
                }
                Bound::List(vals)
            }
            (ast::ForValues::From { from, to }, Strategy::Range) => {
                let mut side = |vals: &[ast::PartitionBoundValue], which: &str| {
                    if vals.len() != types.len() {
                        return Err(table_def_err(format!(
                            "{which} must specify exactly one value per partitioning column"
                        )));
                    }
                    let mut out = Vec::with_capacity(vals.len());
                    for (k, v) in vals.iter().enumerate() {
                        out.push(match v {
                            ast::PartitionBoundValue::MinValue => Datum::Min,
                            ast::PartitionBoundValue::MaxValue => Datum::Max,
                            ast::PartitionBoundValue::Expr(e) => {
                                let v = value(e, k)?;
                                if v.is_null() {
                                    return Err(table_def_err(
                                        "cannot specify NULL in range bound",
                                    ));
                                }
                                Datum::Val(v)
                            }
                        });
                    }
                    check_infinite_run(&out)?;
                    Ok(out)
                };
                let from = side(from, "FROM")?;
                let to = side(to, "TO")?;
                Bound::Range { from, to }
            }
            (_, s) => {
                return Err(table_def_err(format!(
                    "invalid bound specification for a {} partition",
                    s.word().to_ascii_lowercase()
                )))
            }
        })
    }

    /// Reads a stored bound back (its values are literals), cast to the
    /// key's types.
    pub fn parse(text: &str, strategy: Strategy, types: &[DataType]) -> Result<Bound> {
        let sql = format!("CREATE TABLE x PARTITION OF y {text}");
        let fv = match crate::front::parse_sql(&sql)? {
            ast::Statement::CreateTable(ct) => ct.for_values,
            _ => None,
        }
        .ok_or_else(|| SqlError::internal(format!("stored partition bound {text:?}")))?;
        let names = vec![String::new(); types.len()];
        Bound::from_ast(&fv, strategy, types, &names, &mut literal)
    }

    /// The stored text (and `pg_get_expr`'s).
    pub fn text(&self) -> String {
        let list = |vs: &mut dyn Iterator<Item = String>| vs.collect::<Vec<_>>().join(", ");
        match self {
            Bound::Default => "DEFAULT".into(),
            Bound::List(vals) => {
                format!(
                    "FOR VALUES IN ({})",
                    list(&mut vals.iter().map(literal_text))
                )
            }
            Bound::Range { from, to } => format!(
                "FOR VALUES FROM ({}) TO ({})",
                list(&mut from.iter().map(datum_text)),
                list(&mut to.iter().map(datum_text))
            ),
        }
    }
}

/// After MINVALUE (MAXVALUE) every later value must be MINVALUE (MAXVALUE).
fn check_infinite_run(ds: &[Datum]) -> Result<()> {
    let mut seen: Option<&Datum> = None;
    for d in ds {
        match (seen, d) {
            (Some(Datum::Min), Datum::Min) | (Some(Datum::Max), Datum::Max) => {}
            (Some(Datum::Min), _) => {
                return Err(table_def_err(
                    "every bound following MINVALUE must also be MINVALUE",
                ))
            }
            (Some(Datum::Max), _) => {
                return Err(table_def_err(
                    "every bound following MAXVALUE must also be MAXVALUE",
                ))
            }
            (_, Datum::Min | Datum::Max) => seen = Some(d),
            _ => {}
        }
    }
    Ok(())
}

/// A stored literal's value (numbers, strings, booleans, NULL).
fn literal(e: &ast::Expr) -> Result<Value> {
    Ok(match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => match n.parse::<i64>() {
                Ok(i) => Value::Int(i),
                Err(_) => Value::Decimal(
                    n.parse()
                        .map_err(|_| SqlError::internal(format!("stored bound number {n}")))?,
                ),
            },
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                Value::text(s)
            }
            ast::Value::Boolean(b) => Value::Bool(*b),
            ast::Value::Null => Value::Null,
            other => return Err(SqlError::internal(format!("stored bound value {other}"))),
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            Value::Int(i) => Value::Int(-i),
            Value::Decimal(d) => Value::Decimal(-d),
            other => return Err(SqlError::internal(format!("stored bound value -{other}"))),
        },
        other => return Err(SqlError::internal(format!("stored bound value {other}"))),
    })
}

pub fn literal_text(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => i.to_string(),
        Value::Decimal(_) => v.to_string(),
        Value::Bool(b) => b.to_string(),
        other => crate::types::quote::quote_literal_text(&other.to_string()),
    }
}

fn datum_text(d: &Datum) -> String {
    match d {
        Datum::Min => "MINVALUE".into(),
        Datum::Max => "MAXVALUE".into(),
        Datum::Val(v) => literal_text(v),
    }
}

fn cmp_values(a: &Value, b: &Value) -> Ordering {
    crate::functions::compare(a, b)
        .ok()
        .flatten()
        .unwrap_or(Ordering::Equal)
}

/// Orders two range bounds (MINVALUE below every value, MAXVALUE above;
/// the first infinite value decides).
pub fn cmp_bounds(a: &[Datum], b: &[Datum]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (Datum::Min, Datum::Min) | (Datum::Max, Datum::Max) => return Ordering::Equal,
            (Datum::Min, _) | (_, Datum::Max) => Ordering::Less,
            (Datum::Max, _) | (_, Datum::Min) => Ordering::Greater,
            (Datum::Val(x), Datum::Val(y)) => cmp_values(x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Orders a key (no NULLs) against a range bound.
pub fn cmp_key(key: &[Value], b: &[Datum]) -> Ordering {
    for (v, d) in key.iter().zip(b) {
        let o = match d {
            Datum::Min => return Ordering::Greater,
            Datum::Max => return Ordering::Less,
            Datum::Val(x) => cmp_values(v, x),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

impl Bound {
    /// Whether a key (the parent key's values for a row) falls in this
    /// bound; a default partition's is decided by its siblings.
    pub fn contains(&self, key: &[Value]) -> bool {
        match self {
            Bound::Default => false,
            Bound::List(vals) => {
                let k = &key[0];
                vals.iter().any(|v| {
                    if k.is_null() {
                        v.is_null()
                    } else {
                        !v.is_null() && cmp_values(k, v) == Ordering::Equal
                    }
                })
            }
            Bound::Range { from, to } => {
                !key.iter().any(Value::is_null)
                    && cmp_key(key, from) != Ordering::Less
                    && cmp_key(key, to) == Ordering::Less
            }
        }
    }

    /// Where partitions are listed (PostgreSQL orders them by bound):
    /// ranges by lower bound, lists by their least value, default last.
    pub fn order(&self, other: &Bound) -> Ordering {
        match (self, other) {
            (Bound::Default, Bound::Default) => Ordering::Equal,
            (Bound::Default, _) => Ordering::Greater,
            (_, Bound::Default) => Ordering::Less,
            (Bound::Range { from: a, .. }, Bound::Range { from: b, .. }) => cmp_bounds(a, b),
            (Bound::List(a), Bound::List(b)) => {
                let least = |vs: &[Value]| -> Option<Value> {
                    vs.iter()
                        .filter(|v| !v.is_null())
                        .min_by(|x, y| cmp_values(x, y))
                        .cloned()
                };
                match (least(a), least(b)) {
                    (Some(x), Some(y)) => cmp_values(&x, &y),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                }
            }
            _ => Ordering::Equal,
        }
    }

    /// Whether two bounds of one parent share a key (PostgreSQL's overlap
    /// check).
    pub fn overlaps(&self, other: &Bound) -> bool {
        match (self, other) {
            (Bound::List(a), Bound::List(b)) => a
                .iter()
                .any(|x| Bound::List(b.clone()).contains(std::slice::from_ref(x))),
            (Bound::Range { from: f1, to: t1 }, Bound::Range { from: f2, to: t2 }) => {
                cmp_bounds(f1, t2) == Ordering::Less && cmp_bounds(f2, t1) == Ordering::Less
            }
            _ => false,
        }
    }
}
