//! Value operators: truth, comparison, arithmetic, casts and LIKE.

use crate::error::{ErrorKind, Result, SqlError};
use std::cmp::Ordering;
use std::sync::Arc;
use walden_engine::types::coerce;
use walden_engine::types::Numeric;
use walden_engine::{DataType, Value};

/// A binary operator, as expressions evaluate it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    IsDistinct,
    IsNotDistinct,
    /// `~`, `~*`, `!~`, `!~*`: (case insensitive, negated).
    Regex(bool, bool),
    /// `LIKE`, `ILIKE`, `NOT LIKE`, `NOT ILIKE` (case insensitive,
    /// negated); the quantified forms (`LIKE ANY (array)`) use it.
    Like(bool, bool),
}

pub(crate) fn overflow() -> SqlError {
    SqlError::new(ErrorKind::NumericOutOfRange, "integer out of range")
}

/// SQL truth of a value: `None` for NULL.
pub fn truth(v: &Value) -> Result<Option<bool>> {
    Ok(match v {
        Value::Null => None,
        Value::Bool(b) => Some(*b),
        Value::Int(i) => Some(*i != 0),
        Value::Text(s) => match s.to_ascii_lowercase().as_str() {
            "t" | "true" | "1" | "on" | "yes" => Some(true),
            "f" | "false" | "0" | "off" | "no" => Some(false),
            _ => {
                return Err(SqlError::new(
                    ErrorKind::InvalidText,
                    format!("invalid input syntax for type boolean: \"{s}\""),
                ))
            }
        },
        other => {
            return Err(SqlError::new(
                ErrorKind::DataException,
                format!("argument of WHERE must be type boolean, not {other}"),
            ))
        }
    })
}

/// Brings a text operand to the other operand's type (a quoted literal
/// compared with a number or a date), as PostgreSQL types unknown literals.
pub(crate) fn unify(a: Value, b: Value) -> Result<(Value, Value)> {
    if let Some(r) = crate::functions::temporal::unify(&a, &b) {
        return r;
    }
    Ok(match (&a, &b) {
        // Beside a numeric the text is numeric: exactly, or refused (as a
        // float it would be compared or added inexactly).
        (Value::Text(s), Value::Decimal(_)) => (exact_numeric_text(s)?, b),
        (Value::Decimal(_), Value::Text(s)) => {
            let n = exact_numeric_text(s)?;
            (a, n)
        }
        (Value::Text(s), Value::Int(_) | Value::Float(_)) => (numeric_text(s)?, b),
        (Value::Int(_) | Value::Float(_), Value::Text(s)) => {
            let n = numeric_text(s)?;
            (a, n)
        }
        (Value::Text(_), Value::Timestamp(_)) => (coerce(a, &DataType::Timestamp)?, b),
        (Value::Timestamp(_), Value::Text(_)) => (a, coerce(b, &DataType::Timestamp)?),
        (Value::Text(_), Value::Date(_)) => (coerce(a, &DataType::Date)?, b),
        (Value::Date(_), Value::Text(_)) => (a, coerce(b, &DataType::Date)?),
        (Value::Text(_), Value::Jsonb(_)) => (coerce(a, &DataType::Jsonb)?, b),
        (Value::Jsonb(_), Value::Text(_)) => (a, coerce(b, &DataType::Jsonb)?),
        (Value::Text(s), Value::Array(items)) => {
            (crate::functions::arrays::text_beside(s, items)?, b)
        }
        (Value::Array(items), Value::Text(s)) => {
            let t = crate::functions::arrays::text_beside(s, items)?;
            (a, t)
        }
        (Value::Text(s), Value::MdArray(m)) => {
            (crate::functions::arrays::text_beside(s, &m.items)?, b)
        }
        (Value::MdArray(m), Value::Text(s)) => {
            let t = crate::functions::arrays::text_beside(s, &m.items)?;
            (a, t)
        }
        (Value::Text(_), Value::Uuid(_)) => (coerce(a, &DataType::Uuid)?, b),
        (Value::Uuid(_), Value::Text(_)) => (a, coerce(b, &DataType::Uuid)?),
        (Value::Text(_), Value::Bool(_)) => (Value::Bool(truth(&a)?.unwrap_or(false)), b),
        (Value::Bool(_), Value::Text(_)) => {
            let t = truth(&b)?.unwrap_or(false);
            (a, Value::Bool(t))
        }
        // SQL Server compares a bit with an integer as integers (`b = 1`).
        (Value::Bool(x), Value::Int(_)) => (Value::Int(*x as i64), b),
        (Value::Int(_), Value::Bool(y)) => {
            let y = Value::Int(*y as i64);
            (a, y)
        }
        (Value::Date(d), Value::Timestamp(_)) => (
            Value::Timestamp(walden_engine::types::dtinput::date_to_timestamp_saturating(
                *d,
            )),
            b,
        ),
        (Value::Timestamp(_), Value::Date(d)) => {
            let t = Value::Timestamp(walden_engine::types::dtinput::date_to_timestamp_saturating(
                *d,
            ));
            (a, t)
        }
        _ => (a, b),
    })
}

/// Text beside a numeric operand: the numeric it spells, exactly.
fn exact_numeric_text(s: &str) -> Result<Value> {
    match walden_engine::types::parse_numeric(s)? {
        Some(d) => Ok(Value::Decimal(d)),
        None => Err(SqlError::new(
            ErrorKind::InvalidText,
            format!("invalid input syntax for type numeric: \"{s}\""),
        )),
    }
}

pub(crate) fn numeric_text(s: &str) -> Result<Value> {
    let t = s.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(Some(d)) = walden_engine::types::parse_numeric(t) {
        return Ok(Value::Decimal(d));
    }
    t.parse::<f64>().map(Value::Float).map_err(|_| {
        SqlError::new(
            ErrorKind::InvalidText,
            format!("invalid input syntax for type numeric: \"{s}\""),
        )
    })
}

/// Compares two values; `None` if either is NULL.
pub fn compare(a: &Value, b: &Value) -> Result<Option<Ordering>> {
    if a.is_null() || b.is_null() {
        return Ok(None);
    }
    // The common same-type cases without copying (sorts call this a lot).
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => return Ok(Some(x.cmp(y))),
        (Value::Text(x), Value::Text(y)) => return Ok(Some(x.cmp(y))),
        _ => {}
    }
    let (a, b) = unify(a.clone(), b.clone())?;
    if let (Some(x), Some(y)) = (kind(&a), kind(&b)) {
        if x != y {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "operator does not exist: {} = {}",
                    type_name(&a),
                    type_name(&b)
                ),
            ));
        }
    }
    Ok(Some(a.cmp(&b)))
}

/// Kinds of values no conversion compares with each other (a date and a
/// number): ordering them by their representation would answer silently.
fn kind(v: &Value) -> Option<u8> {
    Some(match v {
        Value::Int(_) | Value::Float(_) | Value::Decimal(_) => 0,
        Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) => 1,
        Value::Uuid(_) => 2,
        Value::Bool(_) => 3,
        Value::Bytes(_) => 4,
        Value::Interval(_) => 5,
        _ => return None,
    })
}

pub(crate) fn to_dec(v: &Value) -> Option<Numeric> {
    match v {
        Value::Int(i) => Some(Numeric::from(*i)),
        Value::Decimal(d) => Some(d.clone()),
        Value::Float(f) => walden_engine::types::float_to_numeric(*f, 15).ok(),
        _ => None,
    }
}

pub(crate) fn to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Decimal(d) => Some(d.to_f64()),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// Applies a binary operator (not AND/OR).
pub fn binary(op: BinOp, a: Value, b: Value) -> Result<Value> {
    use BinOp::*;
    match op {
        IsDistinct | IsNotDistinct => {
            let same = match (a.is_null(), b.is_null()) {
                (true, true) => true,
                (false, false) => compare(&a, &b)? == Some(Ordering::Equal),
                _ => false,
            };
            return Ok(Value::Bool(same == (op == IsNotDistinct)));
        }
        Eq | NotEq | Lt | LtEq | Gt | GtEq => {
            return Ok(match compare(&a, &b)? {
                None => Value::Null,
                Some(o) => Value::Bool(match op {
                    Eq => o == Ordering::Equal,
                    NotEq => o != Ordering::Equal,
                    Lt => o == Ordering::Less,
                    LtEq => o != Ordering::Greater,
                    Gt => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                }),
            })
        }
        _ => {}
    }
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    if let Some(r) = jsonb_binary(op, &a, &b) {
        return r;
    }
    if op == Concat {
        crate::functions::arrays::one_dim_from_1(&a, "||")?;
        crate::functions::arrays::one_dim_from_1(&b, "||")?;
        return Ok(match (&a, &b) {
            (Value::Array(_), Value::Array(_)) => crate::functions::arrays::cat(&a, &b),
            (Value::Array(_), _) => crate::functions::arrays::append(&a, b),
            (_, Value::Array(_)) => crate::functions::arrays::prepend(a, &b),
            // bytea || bytea joins the bytes (not their \x texts).
            (Value::Bytes(x), Value::Bytes(y)) => Value::Bytes([&x[..], &y[..]].concat().into()),
            _ => Value::text(format!("{a}{b}")),
        });
    }
    if let Like(ci, neg) = op {
        return Ok(Value::Bool(like_value(&a, &b, None, ci)? != neg));
    }
    if let Regex(ci, neg) = op {
        let re = regex::RegexBuilder::new(&b.to_string())
            .case_insensitive(ci)
            .build()
            .map_err(|e| {
                SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("invalid regular expression: {e}"),
                )
            })?;
        return Ok(Value::Bool(re.is_match(&a.to_string()) != neg));
    }
    if let Some(r) = crate::functions::temporal::binary(op, &a, &b) {
        return r;
    }
    // `ts + '1 day'`: a quoted literal beside a date/time is an interval.
    if let (
        Value::Timestamp(_) | Value::TimestampTz(_) | Value::Date(_) | Value::Time(_),
        Value::Text(s),
    ) = (&a, &b)
    {
        if matches!(op, Add | Sub) {
            if let Some(i) = walden_engine::types::interval::parse_interval(s) {
                if let Some(r) = crate::functions::temporal::binary(op, &a, &Value::Interval(i)) {
                    return r;
                }
            }
        }
    }
    let (a, b) = unify(a, b)?;
    let undefined = |a: &Value, b: &Value| {
        SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "operator does not exist: {} {:?} {}",
                type_name(a),
                op,
                type_name(b)
            ),
        )
    };
    Ok(match (&a, &b) {
        (Value::Int(x), Value::Int(y)) => Value::Int(match op {
            Add => x.checked_add(*y).ok_or_else(overflow)?,
            Sub => x.checked_sub(*y).ok_or_else(overflow)?,
            Mul => x.checked_mul(*y).ok_or_else(overflow)?,
            Div => {
                if *y == 0 {
                    return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
                }
                x.checked_div(*y).ok_or_else(overflow)?
            }
            Mod => {
                if *y == 0 {
                    return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
                }
                x.checked_rem(*y).ok_or_else(overflow)?
            }
            _ => return Err(undefined(&a, &b)),
        }),
        (Value::Float(_), _) | (_, Value::Float(_)) => {
            let (x, y) = (
                to_f64(&a).ok_or_else(|| undefined(&a, &b))?,
                to_f64(&b).ok_or_else(|| undefined(&a, &b))?,
            );
            let r = match op {
                Add => x + y,
                Sub => x - y,
                Mul => x * y,
                Div => {
                    // NaN / 0 is NaN, as PostgreSQL's float8div.
                    if y == 0.0 && !x.is_nan() {
                        return Err(SqlError::new(ErrorKind::DivisionByZero, "division by zero"));
                    }
                    x / y
                }
                Mod => x % y,
                _ => return Err(undefined(&a, &b)),
            };
            // PostgreSQL's float8 checks: finite inputs giving an infinite
            // result overflow; a product or quotient of non-zero finite
            // values that comes out zero underflows.
            if r.is_infinite() && x.is_finite() && y.is_finite() {
                return Err(SqlError::new(
                    ErrorKind::NumericOutOfRange,
                    "value out of range: overflow",
                ));
            }
            if r == 0.0 && x != 0.0 && matches!(op, Mul | Div) && y.is_finite() && y != 0.0 {
                return Err(SqlError::new(
                    ErrorKind::NumericOutOfRange,
                    "value out of range: underflow",
                ));
            }
            Value::Float(r)
        }
        (Value::Decimal(_), _) | (_, Value::Decimal(_)) => {
            let (x, y) = (
                to_dec(&a).ok_or_else(|| undefined(&a, &b))?,
                to_dec(&b).ok_or_else(|| undefined(&a, &b))?,
            );
            // Exact, at PostgreSQL's result scales (types/numeric).
            Value::Decimal(match op {
                Add => x.add(&y)?,
                Sub => x.sub(&y)?,
                Mul => x.mul(&y)?,
                Div => x.div(&y)?,
                Mod => x.rem(&y)?,
                _ => return Err(undefined(&a, &b)),
            })
        }
        (Value::Timestamp(t), Value::Int(d)) if matches!(op, Add | Sub) => {
            // timestamp +/- integer days (T-SQL datetime arithmetic).
            let delta = d * 86_400_000_000;
            Value::Timestamp(if op == Add { t + delta } else { t - delta })
        }
        // An infinite date stays infinite; a finite one must stay in the
        // date range (PostgreSQL's date_pli/date_mii).
        (Value::Date(t), Value::Int(d)) if matches!(op, Add | Sub) => {
            if *t == i32::MAX || *t == i32::MIN {
                return Ok(Value::Date(*t));
            }
            let r = if op == Add {
                (*t as i64).checked_add(*d)
            } else {
                (*t as i64).checked_sub(*d)
            };
            match r {
                Some(r) if (-2_440_588..=2_145_042_905).contains(&r) => Value::Date(r as i32),
                _ => {
                    return Err(SqlError::new(
                        ErrorKind::DatetimeOverflow,
                        "date out of range",
                    ))
                }
            }
        }
        (Value::Date(x), Value::Date(y)) if op == Sub => {
            if [*x, *y].iter().any(|d| *d == i32::MAX || *d == i32::MIN) {
                return Err(SqlError::new(
                    ErrorKind::DatetimeOverflow,
                    "cannot subtract infinite dates",
                ));
            }
            Value::Int(*x as i64 - *y as i64)
        }
        (Value::Text(_), _) | (_, Value::Text(_)) if op == Add => Value::text(format!("{a}{b}")),
        _ => return Err(undefined(&a, &b)),
    })
}

/// `jsonb || jsonb` and `jsonb - key`; `None` when neither operand is jsonb.
pub(crate) fn jsonb_binary(op: BinOp, a: &Value, b: &Value) -> Option<Result<Value>> {
    let tree = |v: &Value| {
        crate::functions::json::tree(v).map(|t| {
            t.map(|x| (*x).clone())
                .unwrap_or(walden_engine::types::Jsonb::Null)
        })
    };
    match (op, a, b) {
        (BinOp::Concat, Value::Jsonb(_), _) | (BinOp::Concat, _, Value::Jsonb(_)) => Some((|| {
            Ok(Value::Jsonb(Arc::new(crate::functions::json::concat(
                &tree(a)?,
                &tree(b)?,
            ))))
        })(
        )),
        (BinOp::Sub, Value::Jsonb(j), k) => {
            Some(crate::functions::json::delete(j, k).map(|r| Value::Jsonb(Arc::new(r))))
        }
        _ => None,
    }
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "unknown",
        Value::Bool(_) => "boolean",
        Value::Int(_) => "integer",
        Value::Float(_) => "double precision",
        Value::Decimal(_) => "numeric",
        Value::Text(_) => "text",
        Value::Timestamp(_) => "timestamp",
        Value::Date(_) => "date",
        Value::Uuid(_) => "uuid",
        Value::Bytes(_) => "bytea",
        Value::TimestampTz(_) => "timestamp with time zone",
        Value::Time(_) => "time without time zone",
        Value::Interval(_) => "interval",
        Value::Json(_) => "json",
        Value::Jsonb(_) => "jsonb",
        Value::Array(_) | Value::MdArray(_) => "anyarray",
        Value::Enum(..) => "anyenum",
        Value::Reg(k, ..) => k.sql_name(),
    }
}

/// `CAST(v AS t)`: like assignment coercion, but text output for any input.
pub fn cast(v: Value, t: &DataType) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    // A float becomes an integer by rint (halves to even), in coerce.
    coerce(v, t).map_err(SqlError::from)
}

/// An explicit cast (`::`, CAST, a typed literal, CONVERT): as
/// PostgreSQL's, a string too long for varchar(n) or char(n) is cut to n
/// characters (`'abcd'::varchar(3)` is `abc`), where an assignment to such
/// a column fails (22001); an array's elements likewise.
pub fn explicit_cast(v: Value, t: &DataType) -> Result<Value> {
    let n = match t {
        DataType::Char(0) => return cast(v, t),
        DataType::Varchar(Some(n)) | DataType::Char(n) => *n as usize,
        DataType::Array(e) if matches!(**e, DataType::Varchar(Some(_)) | DataType::Char(_)) => {
            return match v {
                Value::Array(items) => {
                    let cut = items
                        .iter()
                        .map(|x| explicit_cast(x.clone(), e))
                        .collect::<Result<Vec<_>>>()?;
                    cast(Value::Array(cut.into()), t)
                }
                Value::Text(_) => {
                    let parsed = cast(v, &DataType::Array(Box::new(DataType::Text)))?;
                    explicit_cast(parsed, t)
                }
                other => cast(other, t),
            };
        }
        _ => return cast(v, t),
    };
    if v.is_null() {
        return Ok(Value::Null);
    }
    let s = match cast(v, &DataType::Text)? {
        Value::Text(s) => s,
        other => return cast(other, t),
    };
    match s.char_indices().nth(n) {
        Some((at, _)) => cast(Value::text(&s[..at]), t),
        None => cast(Value::Text(s), t),
    }
}

/// `v [I]LIKE p [ESCAPE e]` on non-NULL values: `escape` is the ESCAPE
/// text (one character, or empty for none); without it, backslash.
pub fn like_value(v: &Value, p: &Value, escape: Option<&Value>, ci: bool) -> Result<bool> {
    let text_escape = || match escape {
        None => Ok(Some('\\')),
        Some(e) => {
            let e = e.to_string();
            let mut cs = e.chars();
            match (cs.next(), cs.next()) {
                (None, _) => Ok(None),
                (Some(c), None) => Ok(Some(c)),
                _ => Err(SqlError::new(
                    ErrorKind::InvalidEscapeSequence,
                    "invalid escape string",
                )),
            }
        }
    };
    // bytea LIKE matches bytes (the pattern read as bytea input); each byte
    // becomes one char so the text matcher serves.
    let (v, p, esc) = match v {
        Value::Bytes(b) => {
            // PostgreSQL has no bytea ILIKE, and ESCAPE with an untyped
            // pattern makes the pattern text.
            if ci || (escape.is_some() && !matches!(p, Value::Bytes(_))) {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!(
                        "operator does not exist: bytea {} text",
                        if ci { "~~*" } else { "~~" }
                    ),
                ));
            }
            let esc_bytes = match escape {
                None => None,
                Some(Value::Bytes(e)) => Some(e.to_vec()),
                Some(e) => Some(walden_engine::types::parse_bytea(&e.to_string())?),
            };
            let esc = match esc_bytes.as_deref() {
                None => Some('\\'),
                Some([]) => None,
                Some([c]) => Some(*c as char),
                Some(_) => {
                    return Err(SqlError::new(
                        ErrorKind::InvalidEscapeSequence,
                        "invalid escape string",
                    ))
                }
            };
            let pat = match p {
                Value::Bytes(pb) => pb.to_vec(),
                other => walden_engine::types::parse_bytea(&other.to_string())?,
            };
            let chars = |x: &[u8]| x.iter().map(|&c| c as char).collect::<String>();
            (chars(b), chars(&pat), esc)
        }
        _ => (v.to_string(), p.to_string(), text_escape()?),
    };
    let m = if ci {
        like_with(&v.to_lowercase(), &p.to_lowercase(), esc)
    } else {
        like_with(&v, &p, esc)
    };
    m.ok_or_else(|| {
        SqlError::new(
            ErrorKind::InvalidEscapeSequence,
            "LIKE pattern must not end with escape character",
        )
    })
}

/// SQL LIKE with `%` and `_` (backslash escapes the next character).
#[cfg(test)]
pub fn like(s: &str, p: &str) -> bool {
    like_with(s, p, Some('\\')).unwrap_or(false)
}

/// SQL LIKE with `%`, `_` and the escape character `esc`; `None` when
/// the pattern ends with the escape character.
///
/// Iterative, with one backtrack point (the last `%`): linear stack and
/// O(len(s) * len(p)) time whatever the pattern. A recursive matcher was
/// exponential in the number of `%` and recursed once per character, so a
/// long string could overflow the stack.
fn like_with(s: &str, p: &str, esc: Option<char>) -> Option<bool> {
    #[derive(Clone, Copy, PartialEq)]
    enum Pat {
        Any,
        One,
        Lit(char),
    }
    let s: Vec<char> = s.chars().collect();
    let mut pat = Vec::new();
    let mut it = p.chars().peekable();
    while let Some(c) = it.next() {
        pat.push(match c {
            c if Some(c) == esc => Pat::Lit(it.next()?),
            '%' => Pat::Any,
            '_' => Pat::One,
            c => Pat::Lit(c),
        });
    }
    let (mut si, mut pi) = (0usize, 0usize);
    // Where the last `%` was, and the string position it matched up to.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match pat.get(pi) {
            Some(Pat::Any) => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(Pat::One) => {
                si += 1;
                pi += 1;
            }
            Some(Pat::Lit(c)) if *c == s[si] => {
                si += 1;
                pi += 1;
            }
            _ => match star {
                // Let the last `%` swallow one more character and retry.
                Some((sp, ss)) => {
                    star = Some((sp, ss + 1));
                    pi = sp + 1;
                    si = ss + 1;
                }
                None => return Some(false),
            },
        }
    }
    Some(pat[pi..].iter().all(|x| *x == Pat::Any))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches() {
        assert!(like("walden", "wal%"));
        assert!(like("walden", "%d_n"));
        assert!(!like("walden", "x%"));
        assert!(like("50%", "50\\%"));
        assert!(like("", "%%"));
        assert!(!like("", "_"));
        assert!(like("abcabd", "%ab_"));
        assert!(like("a_c", "a\\_c"));
        assert!(!like("abc", "a\\_c"));
        // Many `%` against a long near-miss: was exponential, must be quick.
        let s = "a".repeat(5_000);
        assert!(!like(&s, &format!("{}b", "%a".repeat(30))));
        assert!(like(&s, &format!("{}%", "%a".repeat(30))));
        // One frame per character was a stack overflow for long strings.
        let long = "x".repeat(2_000_000);
        assert!(like(&long, &"_".repeat(2_000_000)));
    }

    #[test]
    fn arithmetic_and_nulls() {
        assert_eq!(
            binary(BinOp::Add, Value::Int(2), Value::Int(3)).unwrap(),
            Value::Int(5)
        );
        assert_eq!(
            binary(BinOp::Div, Value::Int(7), Value::Int(2)).unwrap(),
            Value::Int(3)
        );
        assert!(binary(BinOp::Div, Value::Int(1), Value::Int(0)).is_err());
        assert!(binary(BinOp::Add, Value::Int(i64::MAX), Value::Int(1)).is_err());
        assert_eq!(
            binary(BinOp::Eq, Value::Null, Value::Int(1)).unwrap(),
            Value::Null
        );
        assert_eq!(
            binary(BinOp::Eq, Value::text("5"), Value::Int(5)).unwrap(),
            Value::Bool(true)
        );
    }
}
