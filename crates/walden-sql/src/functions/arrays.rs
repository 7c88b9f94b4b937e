//! Array operators and functions: containment (`@>`, `<@`), overlap
//! (`&&`), concatenation (`||`, `array_cat`, `array_append`,
//! `array_prepend`), `string_to_array`. Arguments are `Value::Array`s, or
//! arrays in text form (the catalogs' array columns are still text).

use crate::error::{ErrorKind, Result, SqlError};
use walden_engine::{DataType, Value};

/// An array argument's elements: a real array's, or those of an array in
/// text form (as text); a non-array text is a one-element array, NULL none.
pub fn elements(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items.to_vec(),
        other => crate::types::array_elements(other)
            .into_iter()
            .map(|e| e.map(Value::text).unwrap_or(Value::Null))
            .collect(),
    }
}

/// Whether `x` equals a non-NULL element of `items` (NULL equals nothing).
fn has(items: &[Value], x: &Value) -> Result<bool> {
    for y in items {
        if crate::functions::compare(x, y)? == Some(std::cmp::Ordering::Equal) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `a @> b`: every element of b is in a. A NULL element of b is never
/// contained, as PostgreSQL's arraycontains.
pub fn contains(a: &Value, b: &Value) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let (a, b) = (elements(a), elements(b));
    for x in &b {
        if x.is_null() || !has(&a, x)? {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

/// `a && b`: the arrays share a non-NULL element.
pub fn overlap(a: &Value, b: &Value) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let (a, b) = (elements(a), elements(b));
    for x in &b {
        if !x.is_null() && has(&a, x)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

/// `array_cat(a, b)` and `a || b` of two arrays: a NULL array is empty.
pub fn cat(a: &Value, b: &Value) -> Value {
    match (a.is_null(), b.is_null()) {
        (true, true) => Value::Null,
        (true, false) => Value::Array(elements(b).into()),
        (false, true) => Value::Array(elements(a).into()),
        (false, false) => {
            let mut items = elements(a);
            items.extend(elements(b));
            Value::Array(items.into())
        }
    }
}

/// `array_append(a, x)` / `a || x`.
pub fn append(a: &Value, x: Value) -> Value {
    let mut items = elements(a);
    items.push(x);
    Value::Array(items.into())
}

/// `array_prepend(x, a)` / `x || a`.
pub fn prepend(x: Value, a: &Value) -> Value {
    let mut items = vec![x];
    items.extend(elements(a));
    Value::Array(items.into())
}

/// `string_to_array(s, delimiter [, null_string])`: a NULL delimiter splits
/// into characters, an empty one keeps the string whole; an empty string
/// is an empty array.
pub fn string_to_array(s: &Value, delim: &Value, null_as: Option<&Value>) -> Value {
    let Value::Text(s) = s else {
        return if s.is_null() {
            Value::Null
        } else {
            string_to_array(&Value::text(s.to_string()), delim, null_as)
        };
    };
    let parts: Vec<String> = if s.is_empty() {
        vec![]
    } else {
        match delim {
            Value::Null => s.chars().map(String::from).collect(),
            d => {
                let d = d.to_string();
                if d.is_empty() {
                    vec![s.to_string()]
                } else {
                    s.split(d.as_str()).map(String::from).collect()
                }
            }
        }
    };
    let null_as = null_as.filter(|v| !v.is_null()).map(|v| v.to_string());
    Value::Array(
        parts
            .into_iter()
            .map(|p| {
                if null_as.as_deref() == Some(p.as_str()) {
                    Value::Null
                } else {
                    Value::text(p)
                }
            })
            .collect::<Vec<_>>()
            .into(),
    )
}

/// The dimension argument of `array_length` / `array_upper` /
/// `array_lower`: only 1 exists here.
pub fn dimension_is_first(d: &Value) -> Result<bool> {
    match d {
        Value::Int(i) => Ok(*i == 1),
        Value::Null => Ok(false),
        other => Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!("array dimension must be an integer, not {other}"),
        )),
    }
}

/// The type a value of this variant is read as (for text read beside it).
fn variant_type(v: &Value) -> DataType {
    match v {
        Value::Bool(_) => DataType::Bool,
        Value::Int(_) => DataType::BigInt,
        Value::Float(_) => DataType::Double,
        Value::Decimal(_) => DataType::Decimal {
            precision: 0,
            scale: 0,
        },
        Value::Timestamp(_) => DataType::Timestamp,
        Value::Date(_) => DataType::Date,
        Value::Uuid(_) => DataType::Uuid,
        Value::Bytes(_) => DataType::Bytes,
        Value::TimestampTz(_) => DataType::TimestampTz,
        Value::Time(_) => DataType::Time,
        Value::Interval(_) => DataType::Interval,
        Value::Json(_) => DataType::Json,
        Value::Jsonb(_) => DataType::Jsonb,
        _ => DataType::Text,
    }
}

/// Text compared with an array (a literal lifted into a parameter): read
/// as an array literal of that array's element type.
pub fn text_beside(s: &str, like: &[Value]) -> Result<Value> {
    let elem = like
        .iter()
        .find(|v| !v.is_null())
        .map(variant_type)
        .unwrap_or(DataType::Text);
    walden_engine::types::coerce(Value::text(s), &DataType::Array(Box::new(elem)))
        .map_err(SqlError::from)
}
