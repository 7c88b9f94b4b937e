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
        Value::MdArray(a) => a.items.to_vec(),
        other => crate::types::array_elements(other)
            .into_iter()
            .map(|e| e.map(Value::text).unwrap_or(Value::Null))
            .collect(),
    }
}

/// Refuses (0A000) a multidimensional array, or one with bounds not from 1,
/// where `what` would otherwise flatten it or lose its bounds.
pub fn one_dim_from_1(v: &Value, what: &str) -> Result<()> {
    if matches!(v, Value::MdArray(_)) {
        return Err(SqlError::unsupported(format!(
            "{what} of a multidimensional array or one with bounds not from 1"
        )));
    }
    Ok(())
}

/// [`one_dim_from_1`] for an array argument, which may also be an untyped
/// literal, text here (`'{{1,2}}'`, `'[0:1]={1,2}'`).
pub fn one_dim_from_1_arg(v: &Value, what: &str) -> Result<()> {
    let md_text = |s: &str| {
        let s = s.trim_start();
        s.starts_with('[')
            || s.strip_prefix('{')
                .is_some_and(|r| r.trim_start().starts_with('{'))
    };
    if matches!(v, Value::MdArray(_)) || matches!(v, Value::Text(s) if md_text(s)) {
        return Err(SqlError::unsupported(format!(
            "{what} of a multidimensional array or one with bounds not from 1"
        )));
    }
    Ok(())
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

/// `ARRAY[a, b, ...]` of arrays: one more dimension over sub-arrays that
/// all have one shape (NULL and empty ones count only when all are).
pub fn stack(parts: &[Value]) -> Result<Value> {
    use walden_engine::types::array::{self, Dim};
    let mismatch = || {
        SqlError::new(
            ErrorKind::ArraySubscript,
            "multidimensional arrays must have array expressions with matching dimensions",
        )
    };
    let mut shape: Option<Vec<Dim>> = None;
    let mut items = Vec::new();
    let mut empty = false;
    let mut n = 0;
    for p in parts {
        let Some(s) = array::shaped(p) else {
            if p.is_null() {
                empty = true;
                continue;
            }
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                "cannot build a multidimensional array from a value that is not an array",
            ));
        };
        if s.dims.is_empty() {
            empty = true;
            continue;
        }
        match &shape {
            None => shape = Some(s.dims.to_vec()),
            Some(d) if d[..] == s.dims[..] => {}
            Some(_) => return Err(mismatch()),
        }
        items.extend_from_slice(s.items);
        n += 1;
    }
    let Some(sub) = shape else {
        return Ok(Value::Array(Vec::new().into()));
    };
    if empty {
        return Err(mismatch());
    }
    let mut dims = vec![Dim { len: n, lower: 1 }];
    dims.extend(sub);
    array::shape::check_dims(&dims)?;
    Ok(array::make(dims, items))
}

/// An integer argument (a subscript, a dimension number).
fn int_of(v: &Value, what: &str) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        other => match walden_engine::types::coerce(other.clone(), &DataType::BigInt) {
            Ok(Value::Int(i)) => Ok(i),
            _ => Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!("{what} must be an integer"),
            )),
        },
    }
}

/// An array's dimensions (none for an empty array or a non-array).
fn dims_of(v: &Value) -> Vec<walden_engine::types::array::Dim> {
    walden_engine::types::array::shaped(v)
        .map(|s| s.dims.to_vec())
        .unwrap_or_default()
}

/// array_ndims: NULL for an empty array.
pub fn ndims(v: &Value) -> Value {
    match dims_of(v).len() {
        0 => Value::Null,
        n => Value::Int(n as i64),
    }
}

/// array_dims: `[1:2][0:3]`, NULL for an empty array.
pub fn dims_text(v: &Value) -> Value {
    let d = dims_of(v);
    if d.is_empty() {
        return Value::Null;
    }
    Value::text(
        d.iter()
            .map(|d| format!("[{}:{}]", d.lower, d.upper()))
            .collect::<String>(),
    )
}

/// array_lower / array_upper / array_length of dimension `d`: NULL where
/// the array has no such dimension.
pub fn bound(v: &Value, d: &Value, which: crate::functions::Func) -> Result<Value> {
    let k = match d {
        Value::Null => return Ok(Value::Null),
        other => int_of(other, "integer")?,
    };
    let dims = dims_of(v);
    let Some(dim) = usize::try_from(k - 1).ok().and_then(|i| dims.get(i)) else {
        return Ok(Value::Null);
    };
    Ok(Value::Int(match which {
        crate::functions::Func::ArrayLower => dim.lower as i64,
        crate::functions::Func::ArrayUpper => dim.upper(),
        _ => dim.len as i64,
    }))
}

/// `a[i][j]...`: the element, NULL when a subscript is NULL, out of range,
/// or their number is not the array's number of dimensions.
pub fn subscript(v: &Value, subs: &[Value]) -> Result<Value> {
    // A scalar is not a one-element array here (`(now())[1]` is an error).
    if matches!(
        v,
        Value::Int(_)
            | Value::Float(_)
            | Value::Decimal(_)
            | Value::Bool(_)
            | Value::Date(_)
            | Value::Time(_)
            | Value::Timestamp(_)
            | Value::TimestampTz(_)
            | Value::Interval(_)
            | Value::Uuid(_)
    ) {
        return Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            "cannot subscript a value that is not an array",
        ));
    }
    let mut idx = Vec::with_capacity(subs.len());
    for s in subs {
        if s.is_null() {
            return Ok(Value::Null);
        }
        idx.push(int_of(s, "array subscript")?);
    }
    let items = elements(v);
    let dims = match v {
        Value::Array(_) | Value::MdArray(_) => dims_of(v),
        // An array in text form (catalog columns): one dimension from 1.
        _ if !items.is_empty() => vec![walden_engine::types::array::Dim {
            len: items.len() as i32,
            lower: 1,
        }],
        _ => Vec::new(),
    };
    if dims.len() != idx.len() {
        return Ok(Value::Null);
    }
    let mut at: i64 = 0;
    for (d, i) in dims.iter().zip(&idx) {
        if *i < d.lower as i64 || *i > d.upper() {
            return Ok(Value::Null);
        }
        at = at * d.len as i64 + (i - d.lower as i64);
    }
    Ok(items.get(at as usize).cloned().unwrap_or(Value::Null))
}
