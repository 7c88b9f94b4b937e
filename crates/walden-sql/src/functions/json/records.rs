//! Records and arrays as JSON and as text, by their static type.
//!
//! A record is held as a `Value::Array` of its fields, so a value alone does
//! not tell a record from an array nor name its fields. Where one reaches
//! a JSON function (`to_json(t)`, `json_agg(t)`, `json_build_object('k', t)`)
//! or a cast to text, the planner passes its type's *shape* beside it: a
//! value built from the static type, read here.

use super::to_json_text;
use crate::functions::explicit_cast;
use crate::types::array_text::array_format;
use crate::Result;
use walden_engine::{DataType, Value};

/// The shape of a value of type `t`, when `t` holds a record or an array
/// (scalars need none): a record is `[names, shapes]`, an array `[shape]`,
/// a bool `true`, any other scalar NULL.
pub fn shape(t: &DataType) -> Option<Value> {
    matches!(t, DataType::Record(_) | DataType::Array(_)).then(|| shape_of(t))
}

fn shape_of(t: &DataType) -> Value {
    match t {
        DataType::Record(fields) => Value::Array(
            vec![
                Value::Array(
                    fields
                        .iter()
                        .map(|(n, _)| Value::text(n.as_str()))
                        .collect(),
                ),
                Value::Array(fields.iter().map(|(_, t)| shape_of(t)).collect()),
            ]
            .into(),
        ),
        DataType::Array(e) => Value::Array(vec![shape_of(e)].into()),
        DataType::Bool => Value::Bool(true),
        _ => Value::Null,
    }
}

enum Shape<'a> {
    Record(&'a [Value], &'a [Value]),
    Array(&'a Value),
    Bool,
    Scalar,
}

fn read(shape: &Value) -> Shape<'_> {
    match shape {
        Value::Array(parts) => match &parts[..] {
            [Value::Array(names), Value::Array(shapes)] => Shape::Record(names, shapes),
            [elem] => Shape::Array(elem),
            _ => Shape::Scalar,
        },
        Value::Bool(_) => Shape::Bool,
        _ => Shape::Scalar,
    }
}

/// `v` as json text, as PostgreSQL's to_json writes it: records as objects
/// with their field names, arrays as arrays, no spaces.
pub fn to_json(v: &Value, shape: &Value) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    let mut out = String::new();
    write_json(v, shape, &mut out)?;
    Ok(Value::Json(out.into()))
}

fn write_json(v: &Value, shape: &Value, out: &mut String) -> Result<()> {
    if v.is_null() {
        out.push_str("null");
        return Ok(());
    }
    match (read(shape), v) {
        (Shape::Record(names, shapes), Value::Array(fields)) => {
            out.push('{');
            for (i, (name, field)) in names.iter().zip(fields.iter()).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                walden_engine::types::jsonb::write_string(out, &name.to_string());
                out.push(':');
                write_json(field, shapes.get(i).unwrap_or(&Value::Null), out)?;
            }
            out.push('}');
        }
        (Shape::Array(elem), Value::Array(items)) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, elem, out)?;
            }
            out.push(']');
        }
        (Shape::Bool, Value::Int(i)) => out.push_str(if *i != 0 { "true" } else { "false" }),
        (_, other) => out.push_str(&to_json_text(other)?),
    }
    Ok(())
}

/// `v` as text, as PostgreSQL's record and array output functions write it:
/// `(1,"a b",,t)`, `{1,2}`.
pub fn to_text(v: &Value, shape: &Value) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    Ok(Value::text(text_of(v, shape)?))
}

fn text_of(v: &Value, shape: &Value) -> Result<String> {
    Ok(match (read(shape), v) {
        (Shape::Record(_, shapes), Value::Array(fields)) => {
            let mut out = String::from("(");
            for (i, field) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if field.is_null() {
                    continue;
                }
                let s = text_of(field, shapes.get(i).unwrap_or(&Value::Null))?;
                let quote = s.is_empty()
                    || s.chars()
                        .any(|c| matches!(c, ',' | '(' | ')' | '"' | '\\') || c.is_whitespace());
                if quote {
                    out.push('"');
                    for c in s.chars() {
                        if c == '"' || c == '\\' {
                            out.push(c);
                        }
                        out.push(c);
                    }
                    out.push('"');
                } else {
                    out.push_str(&s);
                }
            }
            out.push(')');
            out
        }
        (Shape::Array(elem), Value::Array(items)) => {
            let texts = items
                .iter()
                .map(|x| (!x.is_null()).then(|| text_of(x, elem)).transpose())
                .collect::<Result<Vec<_>>>()?;
            array_format(texts.iter().map(|t| t.as_deref()))
        }
        (Shape::Bool, Value::Bool(b)) => (if *b { "t" } else { "f" }).into(),
        (Shape::Bool, Value::Int(i)) => (if *i != 0 { "t" } else { "f" }).into(),
        (_, other) => match explicit_cast(other.clone(), &DataType::Text)? {
            Value::Text(s) => s.to_string(),
            v => v.to_string(),
        },
    })
}
