//! json and jsonb operators, functions, aggregates and set-returning
//! functions, as PostgreSQL 15 defines them.

pub(crate) mod raw;
pub(crate) mod records;

use crate::error::{ErrorKind, Result, SqlError};
use std::sync::Arc;
use walden_engine::types::jsonb::{self, Jsonb};
use walden_engine::types::{coerce, datetime, format_date, format_timestamp};
use walden_engine::{DataType, Value};

/// A json/jsonb operator or scalar function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonFn {
    /// `->`: a field or element, as json(b).
    Get,
    /// `->>`: a field or element, as text.
    GetText,
    /// `#>`: the value at a path.
    Path,
    /// `#>>`: the value at a path, as text.
    PathText,
    /// `@>`.
    Contains,
    /// `<@`.
    ContainedBy,
    /// `?`.
    Exists,
    /// `?|`.
    ExistsAny,
    /// `?&`.
    ExistsAll,
    /// jsonb_build_object (json_build_object when not `jsonb`).
    BuildObject {
        jsonb: bool,
    },
    BuildArray {
        jsonb: bool,
    },
    To {
        jsonb: bool,
    },
    Typeof,
    ArrayLength,
    Set,
    Pretty,
    StripNulls,
}

/// The operator a SQL binary operator token names, if it is a json one.
pub fn operator(op: &sqlparser::ast::BinaryOperator) -> Option<JsonFn> {
    use sqlparser::ast::BinaryOperator as B;
    Some(match op {
        B::Arrow => JsonFn::Get,
        B::LongArrow => JsonFn::GetText,
        B::HashArrow => JsonFn::Path,
        B::HashLongArrow => JsonFn::PathText,
        B::AtArrow => JsonFn::Contains,
        B::ArrowAt => JsonFn::ContainedBy,
        B::Question => JsonFn::Exists,
        B::QuestionPipe => JsonFn::ExistsAny,
        B::QuestionAnd => JsonFn::ExistsAll,
        _ => return None,
    })
}

/// The function a name calls, if it is a json one.
pub fn lookup(name: &str) -> Option<JsonFn> {
    Some(match name {
        "jsonb_build_object" => JsonFn::BuildObject { jsonb: true },
        "json_build_object" => JsonFn::BuildObject { jsonb: false },
        "jsonb_build_array" => JsonFn::BuildArray { jsonb: true },
        "json_build_array" => JsonFn::BuildArray { jsonb: false },
        "to_jsonb" => JsonFn::To { jsonb: true },
        "to_json" => JsonFn::To { jsonb: false },
        "jsonb_typeof" | "json_typeof" => JsonFn::Typeof,
        "jsonb_array_length" | "json_array_length" => JsonFn::ArrayLength,
        "jsonb_set" => JsonFn::Set,
        "jsonb_pretty" => JsonFn::Pretty,
        "jsonb_strip_nulls" => JsonFn::StripNulls,
        "jsonb_extract_path" => JsonFn::Path,
        "jsonb_extract_path_text" => JsonFn::PathText,
        _ => return None,
    })
}

/// The static result type.
pub fn result_type(f: JsonFn, args: &[DataType]) -> DataType {
    let same = || {
        if args.first() == Some(&DataType::Json) {
            DataType::Json
        } else {
            DataType::Jsonb
        }
    };
    match f {
        JsonFn::Get | JsonFn::Path => same(),
        JsonFn::GetText | JsonFn::PathText | JsonFn::Typeof | JsonFn::Pretty => DataType::Text,
        JsonFn::Contains
        | JsonFn::ContainedBy
        | JsonFn::Exists
        | JsonFn::ExistsAny
        | JsonFn::ExistsAll => DataType::Bool,
        JsonFn::BuildObject { jsonb } | JsonFn::BuildArray { jsonb } | JsonFn::To { jsonb } => {
            if jsonb {
                DataType::Jsonb
            } else {
                DataType::Json
            }
        }
        JsonFn::ArrayLength => DataType::Int,
        JsonFn::Set | JsonFn::StripNulls => DataType::Jsonb,
    }
}

fn invalid_param(msg: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::InvalidParameter, msg)
}

/// A json(b) operand as a tree; `None` for NULL. Text (an untyped literal)
/// is read as jsonb.
pub fn tree(v: &Value) -> Result<Option<Arc<Jsonb>>> {
    Ok(match v {
        Value::Null => None,
        Value::Jsonb(j) => Some(j.clone()),
        Value::Json(s) | Value::Text(s) => {
            match coerce(Value::Text(s.clone()), &DataType::Jsonb)? {
                Value::Jsonb(j) => Some(j),
                _ => None,
            }
        }
        other => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "operator does not exist: {} for json",
                    crate::functions::type_name(other)
                ),
            ))
        }
    })
}

/// A result json(b) value, as json when the operand was json.
fn wrap(j: Jsonb, as_json: bool) -> Value {
    if as_json {
        Value::Json(Arc::from(j.to_string()))
    } else {
        Value::Jsonb(Arc::new(j))
    }
}

fn text_list(v: &Value) -> Vec<Option<String>> {
    crate::types::array_elements(v)
}

/// Follows a path of keys and indexes.
fn at_path<'a>(mut j: &'a Jsonb, path: &[Option<String>]) -> Option<&'a Jsonb> {
    for step in path {
        let step = step.as_deref()?;
        j = match j {
            Jsonb::Object(_) => j.get(step)?,
            Jsonb::Array(_) => j.index(step.trim().parse().ok()?)?,
            _ => return None,
        };
    }
    Some(j)
}

pub fn call(f: JsonFn, a: Vec<Value>) -> Result<Value> {
    match f {
        JsonFn::BuildObject { jsonb } => return build_object(&a, jsonb),
        JsonFn::BuildArray { jsonb } => {
            return Ok(if jsonb {
                Value::Jsonb(Arc::new(Jsonb::Array(
                    a.iter().map(to_jsonb).collect::<Result<_>>()?,
                )))
            } else {
                let items = a.iter().map(to_json_text).collect::<Result<Vec<_>>>()?;
                Value::Json(Arc::from(format!("[{}]", items.join(", "))))
            })
        }
        JsonFn::To { jsonb } => {
            if a[0].is_null() {
                return Ok(Value::Null);
            }
            return Ok(if jsonb {
                Value::Jsonb(Arc::new(to_jsonb(&a[0])?))
            } else {
                Value::Json(Arc::from(to_json_text(&a[0])?))
            });
        }
        _ => {}
    }
    if a.iter().any(Value::is_null) && f != JsonFn::Set {
        return Ok(Value::Null);
    }
    let as_json = matches!(a.first(), Some(Value::Json(_)));
    if let (Value::Json(s), JsonFn::Get | JsonFn::GetText | JsonFn::Path | JsonFn::PathText) =
        (&a[0], f)
    {
        return Ok(json_navigate(s, f, &a[1..]));
    }
    let Some(j) = tree(&a[0])? else {
        return Ok(Value::Null);
    };
    Ok(match f {
        JsonFn::Get | JsonFn::GetText => {
            let got = match &a[1] {
                // A top-level scalar is stored as a one-element array, so
                // PostgreSQL's `->` 0 (or -1) gives the scalar itself.
                Value::Int(0 | -1) if j.is_scalar() => Some(&*j),
                Value::Int(i) => j.index(*i),
                other => j.get(&other.to_string()),
            };
            match (got, f) {
                (None, _) => Value::Null,
                (Some(x), JsonFn::Get) => wrap(x.clone(), as_json),
                (Some(x), _) => x.as_text().map(Value::text).unwrap_or(Value::Null),
            }
        }
        JsonFn::Path | JsonFn::PathText => {
            let path = if a.len() == 2 {
                text_list(&a[1])
            } else {
                // jsonb_extract_path(j, VARIADIC keys)
                a[1..].iter().map(|v| Some(v.to_string())).collect()
            };
            match (at_path(&j, &path), f) {
                (None, _) => Value::Null,
                (Some(x), JsonFn::Path) => wrap(x.clone(), as_json),
                (Some(x), _) => x.as_text().map(Value::text).unwrap_or(Value::Null),
            }
        }
        JsonFn::Contains | JsonFn::ContainedBy => {
            let Some(other) = tree(&a[1])? else {
                return Ok(Value::Null);
            };
            Value::Bool(if f == JsonFn::Contains {
                j.contains(&other)
            } else {
                other.contains(&j)
            })
        }
        JsonFn::Exists => Value::Bool(j.exists(&a[1].to_string())),
        JsonFn::ExistsAny | JsonFn::ExistsAll => {
            let keys = text_list(&a[1]);
            let mut hits = keys.iter().flatten().map(|k| j.exists(k));
            Value::Bool(if f == JsonFn::ExistsAny {
                hits.any(|h| h)
            } else {
                hits.all(|h| h)
            })
        }
        JsonFn::Typeof => Value::text(j.type_name()),
        JsonFn::ArrayLength => match &*j {
            Jsonb::Array(x) => Value::Int(x.len() as i64),
            Jsonb::Object(_) => {
                return Err(invalid_param("cannot get array length of a non-array"))
            }
            _ => return Err(invalid_param("cannot get array length of a scalar")),
        },
        JsonFn::Pretty => Value::text(j.pretty()),
        JsonFn::StripNulls => Value::Jsonb(Arc::new(j.strip_nulls())),
        JsonFn::Set => {
            if a.len() < 3 || a.len() > 4 {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    "function jsonb_set() takes 3 or 4 arguments",
                ));
            }
            // jsonb_set is strict: any NULL argument gives NULL.
            if a.iter().any(Value::is_null) {
                return Ok(Value::Null);
            }
            let path = text_list(&a[1]);
            let new = tree(&a[2])?.map(|n| (*n).clone()).unwrap_or(Jsonb::Null);
            let create = match a.get(3) {
                Some(v) => crate::functions::truth(v)?.unwrap_or(false),
                None => true,
            };
            if j.is_scalar() {
                return Err(invalid_param("cannot set path in scalar"));
            }
            let mut out = (*j).clone();
            set_path(&mut out, &path, new, create)?;
            Value::Jsonb(Arc::new(out))
        }
        JsonFn::BuildObject { .. } | JsonFn::BuildArray { .. } | JsonFn::To { .. } => {
            unreachable!("handled above")
        }
    })
}

/// The json operators on json text: sub-values as written.
fn json_navigate(s: &str, f: JsonFn, steps: &[Value]) -> Value {
    let got = match f {
        JsonFn::Get | JsonFn::GetText => match &steps[0] {
            Value::Int(i) => raw::element(s, *i),
            other => raw::field(s, &other.to_string()),
        },
        _ => {
            let path = if steps.len() == 1 {
                text_list(&steps[0])
            } else {
                steps.iter().map(|v| Some(v.to_string())).collect()
            };
            let mut cur = Some(s);
            for p in &path {
                cur = match (cur, p) {
                    (Some(c), Some(k)) => raw::step(c, k),
                    _ => None,
                };
            }
            cur
        }
    };
    match (got, f) {
        (None, _) => Value::Null,
        (Some(x), JsonFn::Get | JsonFn::Path) => Value::Json(Arc::from(x)),
        (Some(x), _) => raw::as_text(x).map(Value::text).unwrap_or(Value::Null),
    }
}

/// jsonb_set's walk: replaces (or, when allowed, adds) the value at the
/// path's end; a missing step before the end leaves the value unchanged.
fn set_path(j: &mut Jsonb, path: &[Option<String>], new: Jsonb, create: bool) -> Result<()> {
    let Some((step, rest)) = path.split_first() else {
        return Ok(());
    };
    let step = step
        .as_deref()
        .ok_or_else(|| invalid_param("path element at position 1 is null"))?;
    match j {
        Jsonb::Object(pairs) => match pairs.binary_search_by(|(k, _)| jsonb::key_order(k, step)) {
            Ok(i) if rest.is_empty() => pairs[i].1 = new,
            Ok(i) => set_path(&mut pairs[i].1, rest, new, create)?,
            Err(i) if rest.is_empty() && create => pairs.insert(i, (step.into(), new)),
            Err(_) => {}
        },
        Jsonb::Array(items) => {
            let i: i64 = step.trim().parse().map_err(|_| {
                invalid_param(format!(
                    "path element at position 1 is not an integer: \"{step}\""
                ))
            })?;
            let n = items.len() as i64;
            let idx = if i < 0 { n + i } else { i };
            if (0..n).contains(&idx) {
                if rest.is_empty() {
                    items[idx as usize] = new;
                } else {
                    set_path(&mut items[idx as usize], rest, new, create)?;
                }
            } else if rest.is_empty() && create {
                // Past either end: added at that end.
                if idx < 0 {
                    items.insert(0, new);
                } else {
                    items.push(new);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn build_object(a: &[Value], jsonb: bool) -> Result<Value> {
    if !a.len().is_multiple_of(2) {
        return Err(invalid_param(
            "argument list must have even number of elements",
        ));
    }
    let mut keys = Vec::with_capacity(a.len() / 2);
    for (i, k) in a.iter().step_by(2).enumerate() {
        if k.is_null() {
            return Err(SqlError::new(
                ErrorKind::NotNullViolation,
                format!("argument {}: key must not be null", 2 * i + 1),
            ));
        }
        keys.push(k.to_string());
    }
    if jsonb {
        let mut pairs = Vec::with_capacity(keys.len());
        for (k, v) in keys.into_iter().zip(a.iter().skip(1).step_by(2)) {
            pairs.push((k.into_boxed_str(), to_jsonb(v)?));
        }
        Ok(Value::Jsonb(Arc::new(Jsonb::object(pairs))))
    } else {
        let mut parts = Vec::with_capacity(keys.len());
        for (k, v) in keys.iter().zip(a.iter().skip(1).step_by(2)) {
            let mut s = String::new();
            jsonb::write_string(&mut s, k);
            s.push_str(" : ");
            s.push_str(&to_json_text(v)?);
            parts.push(s);
        }
        Ok(Value::Json(Arc::from(format!("{{{}}}", parts.join(", ")))))
    }
}

/// A date/time value as json's ISO 8601 text.
fn iso(v: &Value) -> Option<String> {
    Some(match v {
        Value::Timestamp(t) => format_timestamp(*t).replacen(' ', "T", 1),
        Value::Date(d) => format_date(*d),
        Value::TimestampTz(t) => {
            let s = datetime::format_timestamptz(*t).replacen(' ', "T", 1);
            // json writes the offset as +HH:MM.
            let cut = s.rfind(['+', '-']).filter(|&i| i > 10);
            match cut {
                Some(i) if s[i..].len() == 3 => format!("{s}:00"),
                _ => s,
            }
        }
        _ => return None,
    })
}

/// `to_jsonb`: a SQL value as jsonb.
pub fn to_jsonb(v: &Value) -> Result<Jsonb> {
    Ok(match v {
        Value::Null => Jsonb::Null,
        Value::Bool(b) => Jsonb::Bool(*b),
        Value::Int(i) => Jsonb::Number(i.to_string().into()),
        // NaN and ±Infinity are no JSON numbers: strings, as PostgreSQL.
        Value::Decimal(d) if !d.is_finite() => Jsonb::String(d.to_string().into()),
        // A decimal or a finite float is within numeric's range.
        Value::Decimal(d) => Jsonb::Number(
            jsonb::normalize_number(&d.to_string())
                .unwrap_or_else(|_| d.to_string())
                .into(),
        ),
        Value::Float(f) if f.is_finite() => Jsonb::Number(
            jsonb::normalize_number(&f.to_string())
                .unwrap_or_else(|_| f.to_string())
                .into(),
        ),
        Value::Float(f) => Jsonb::String(
            if f.is_nan() {
                "NaN"
            } else if *f > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            }
            .into(),
        ),
        Value::Jsonb(j) => (**j).clone(),
        // An array is a JSON array of its elements.
        Value::Array(items) => Jsonb::Array(items.iter().map(to_jsonb).collect::<Result<_>>()?),
        // Nested JSON arrays by dimension; the bounds are not kept (as PostgreSQL).
        Value::MdArray(a) => {
            let lens: Vec<usize> = a.dims.iter().map(|d| d.len as usize).collect();
            nest_jsonb(&lens, &a.items)?
        }
        Value::Json(s) => match coerce(Value::Json(s.clone()), &DataType::Jsonb)? {
            Value::Jsonb(j) => (*j).clone(),
            _ => Jsonb::Null,
        },
        other => Jsonb::String(iso(other).unwrap_or_else(|| other.to_string()).into()),
    })
}

/// The JSON array of `items` laid out in dimensions of lengths `lens`.
fn nest_jsonb(lens: &[usize], items: &[Value]) -> Result<Jsonb> {
    let Some((_, inner)) = lens.split_first() else {
        return Ok(Jsonb::Array(Vec::new()));
    };
    if inner.is_empty() {
        return Ok(Jsonb::Array(
            items.iter().map(to_jsonb).collect::<Result<_>>()?,
        ));
    }
    let step: usize = inner.iter().product();
    Ok(Jsonb::Array(
        items
            .chunks(step.max(1))
            .map(|c| nest_jsonb(inner, c))
            .collect::<Result<_>>()?,
    ))
}

/// `to_json`: a SQL value as json text (json values verbatim).
pub fn to_json_text(v: &Value) -> Result<String> {
    Ok(match v {
        Value::Json(s) => s.to_string(),
        // As PostgreSQL's array_to_json: nested by dimension, no spaces.
        Value::MdArray(a) => {
            let lens: Vec<usize> = a.dims.iter().map(|d| d.len as usize).collect();
            nest_json_text(&lens, &a.items)?
        }
        other => to_jsonb(other)?.to_string(),
    })
}

/// [`nest_jsonb`]'s layout as json text.
fn nest_json_text(lens: &[usize], items: &[Value]) -> Result<String> {
    let inner = lens.get(1..).unwrap_or(&[]);
    let parts = if inner.is_empty() {
        items.iter().map(to_json_text).collect::<Result<Vec<_>>>()?
    } else {
        let step: usize = inner.iter().product();
        items
            .chunks(step.max(1))
            .map(|c| nest_json_text(inner, c))
            .collect::<Result<Vec<_>>>()?
    };
    Ok(format!("[{}]", parts.join(",")))
}

/// A json(b) set-returning function in FROM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonSrf {
    /// jsonb_each / json_each (`text`: the _text forms).
    Each {
        text: bool,
        json: bool,
    },
    ArrayElements {
        text: bool,
        json: bool,
    },
    ObjectKeys,
}

pub fn srf(name: &str) -> Option<JsonSrf> {
    Some(match name {
        "jsonb_each" => JsonSrf::Each {
            text: false,
            json: false,
        },
        "json_each" => JsonSrf::Each {
            text: false,
            json: true,
        },
        "jsonb_each_text" | "json_each_text" => JsonSrf::Each {
            text: true,
            json: false,
        },
        "jsonb_array_elements" => JsonSrf::ArrayElements {
            text: false,
            json: false,
        },
        "json_array_elements" => JsonSrf::ArrayElements {
            text: false,
            json: true,
        },
        "jsonb_array_elements_text" | "json_array_elements_text" => JsonSrf::ArrayElements {
            text: true,
            json: false,
        },
        "jsonb_object_keys" | "json_object_keys" => JsonSrf::ObjectKeys,
        _ => return None,
    })
}

impl JsonSrf {
    /// Output columns: names and types.
    pub fn columns(self, name: &str) -> Vec<(String, DataType)> {
        let value_type = |text: bool, json: bool| {
            if text {
                DataType::Text
            } else if json {
                DataType::Json
            } else {
                DataType::Jsonb
            }
        };
        match self {
            JsonSrf::Each { text, json } => vec![
                ("key".into(), DataType::Text),
                ("value".into(), value_type(text, json)),
            ],
            JsonSrf::ArrayElements { text, json } => {
                vec![("value".into(), value_type(text, json))]
            }
            JsonSrf::ObjectKeys => vec![(name.into(), DataType::Text)],
        }
    }

    /// The rows for one argument value.
    pub fn rows(self, arg: &Value) -> Result<Vec<Vec<Value>>> {
        if let Value::Json(s) = arg {
            return self.json_rows(s);
        }
        // json_each('...'): an untyped literal is json to the json_ forms.
        if let (
            Value::Text(s),
            JsonSrf::Each { json: true, .. } | JsonSrf::ArrayElements { json: true, .. },
        ) = (arg, self)
        {
            coerce(arg.clone(), &DataType::Json)?;
            return self.json_rows(s);
        }
        let Some(j) = tree(arg)? else {
            return Ok(vec![]);
        };
        let val = |x: &Jsonb, text: bool, json: bool| {
            if text {
                x.as_text().map(Value::text).unwrap_or(Value::Null)
            } else {
                wrap(x.clone(), json)
            }
        };
        Ok(match (self, &*j) {
            (JsonSrf::Each { text, json }, Jsonb::Object(p)) => p
                .iter()
                .map(|(k, v)| vec![Value::text(&**k), val(v, text, json)])
                .collect(),
            (JsonSrf::Each { .. }, _) => {
                return Err(invalid_param("cannot call jsonb_each on a non-object"))
            }
            (JsonSrf::ArrayElements { text, json }, Jsonb::Array(a)) => {
                a.iter().map(|v| vec![val(v, text, json)]).collect()
            }
            (JsonSrf::ArrayElements { .. }, Jsonb::Object(_)) => {
                return Err(invalid_param("cannot extract elements from an object"))
            }
            (JsonSrf::ArrayElements { .. }, _) => {
                return Err(invalid_param("cannot extract elements from a scalar"))
            }
            (JsonSrf::ObjectKeys, Jsonb::Object(p)) => {
                p.iter().map(|(k, _)| vec![Value::text(&**k)]).collect()
            }
            (JsonSrf::ObjectKeys, Jsonb::Array(_)) => {
                return Err(invalid_param("cannot call jsonb_object_keys on an array"))
            }
            (JsonSrf::ObjectKeys, _) => {
                return Err(invalid_param("cannot call jsonb_object_keys on a scalar"))
            }
        })
    }
}

impl JsonSrf {
    /// The rows of a json value: sub-values as written, pairs in input
    /// order (duplicates too), as PostgreSQL's json_ forms give them.
    fn json_rows(self, s: &str) -> Result<Vec<Vec<Value>>> {
        let val = |raw: &str, text: bool| {
            if text {
                raw::as_text(raw).map(Value::text).unwrap_or(Value::Null)
            } else {
                Value::Json(Arc::from(raw))
            }
        };
        let kind = || match s.trim_start().as_bytes().first() {
            Some(b'{') => "an object",
            Some(b'[') => "an array",
            _ => "a scalar",
        };
        Ok(match self {
            JsonSrf::Each { text, .. } => raw::pairs(s)
                .ok_or_else(|| invalid_param(format!("cannot call json_each on {}", kind())))?
                .into_iter()
                .map(|(k, v)| vec![Value::text(k), val(v, text)])
                .collect(),
            JsonSrf::ArrayElements { text, .. } => raw::elements(s)
                .ok_or_else(|| invalid_param(format!("cannot extract elements from {}", kind())))?
                .into_iter()
                .map(|v| vec![val(v, text)])
                .collect(),
            JsonSrf::ObjectKeys => raw::pairs(s)
                .ok_or_else(|| {
                    invalid_param(format!("cannot call json_object_keys on {}", kind()))
                })?
                .into_iter()
                .map(|(k, _)| vec![Value::text(k)])
                .collect(),
        })
    }
}

/// `jsonb || jsonb`: arrays concatenate, objects merge (right wins), a
/// scalar is a one-element array.
pub fn concat(a: &Jsonb, b: &Jsonb) -> Jsonb {
    match (a, b) {
        (Jsonb::Object(x), Jsonb::Object(y)) => {
            let mut pairs = x.clone();
            pairs.extend(y.iter().cloned());
            Jsonb::object(pairs)
        }
        (x, y) => {
            let as_list = |j: &Jsonb| match j {
                Jsonb::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            let mut out = as_list(x);
            out.extend(as_list(y));
            Jsonb::Array(out)
        }
    }
}

/// `jsonb - text` (a key, or string elements of an array) and
/// `jsonb - integer` (an array element).
pub fn delete(a: &Jsonb, what: &Value) -> Result<Jsonb> {
    Ok(match (a, what) {
        (Jsonb::Array(items), Value::Int(i)) => {
            let n = items.len() as i64;
            let idx = if *i < 0 { n + i } else { *i };
            let mut out = items.clone();
            if (0..n).contains(&idx) {
                out.remove(idx as usize);
            }
            Jsonb::Array(out)
        }
        (Jsonb::Object(_), Value::Int(_)) => {
            return Err(invalid_param(
                "cannot delete from object using integer index",
            ))
        }
        (Jsonb::Object(p), k) => {
            let k = k.to_string();
            Jsonb::Object(p.iter().filter(|(x, _)| **x != *k).cloned().collect())
        }
        (Jsonb::Array(items), k) => {
            let k = k.to_string();
            Jsonb::Array(
                items
                    .iter()
                    .filter(|x| !matches!(x, Jsonb::String(s) if **s == *k))
                    .cloned()
                    .collect(),
            )
        }
        _ => return Err(invalid_param("cannot delete from scalar")),
    })
}

/// Running state of json_agg / jsonb_agg / json(b)_object_agg.
#[derive(Clone, Debug, Default)]
pub struct JsonAcc {
    items: Vec<Value>,
    keys: Vec<Value>,
}

impl JsonAcc {
    pub fn push(&mut self, v: Value) {
        self.items.push(v);
    }
    pub fn push_pair(&mut self, k: Value, v: Value) -> Result<()> {
        if k.is_null() {
            return Err(SqlError::new(
                ErrorKind::NotNullViolation,
                "field name must not be null",
            ));
        }
        self.keys.push(k);
        self.items.push(v);
        Ok(())
    }
    /// The aggregate's value (NULL over no rows). `structured`: json_agg's
    /// elements are records or arrays, written one per line as PostgreSQL.
    pub fn finish(self, object: bool, jsonb: bool, structured: bool) -> Result<Value> {
        if self.items.is_empty() {
            return Ok(Value::Null);
        }
        Ok(match (object, jsonb) {
            (false, true) => Value::Jsonb(Arc::new(Jsonb::Array(
                self.items.iter().map(to_jsonb).collect::<Result<_>>()?,
            ))),
            (false, false) => {
                let items = self
                    .items
                    .iter()
                    .map(to_json_text)
                    .collect::<Result<Vec<_>>>()?;
                let sep = if structured { ", \n " } else { ", " };
                Value::Json(Arc::from(format!("[{}]", items.join(sep))))
            }
            (true, true) => {
                let mut pairs = Vec::with_capacity(self.items.len());
                for (k, v) in self.keys.iter().zip(&self.items) {
                    pairs.push((k.to_string().into_boxed_str(), to_jsonb(v)?));
                }
                Value::Jsonb(Arc::new(Jsonb::object(pairs)))
            }
            (true, false) => {
                let mut parts = Vec::with_capacity(self.items.len());
                for (k, v) in self.keys.iter().zip(&self.items) {
                    let mut s = String::new();
                    jsonb::write_string(&mut s, &k.to_string());
                    s.push_str(" : ");
                    s.push_str(&to_json_text(v)?);
                    parts.push(s);
                }
                Value::Json(Arc::from(format!("{{ {} }}", parts.join(", "))))
            }
        })
    }
}
