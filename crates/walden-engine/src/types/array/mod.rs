//! Arrays: PostgreSQL's text form (`{1,2,NULL}`, quoted elements, nested
//! braces, explicit bounds), the order arrays compare in, and the type OIDs
//! of the array types. Values are `Value::Array` (one dimension from 1) or
//! `Value::MdArray` (see `shape.rs`) with elements of the element type (or
//! NULL); the element type itself lives in the static type.

use super::{coerce, DataType, Value};
use crate::error::{EngineError, Result};
use std::cmp::Ordering;

pub mod shape;
pub use shape::{make, shaped, Dim, MdArray, Shaped, MAX_DIMS};

/// (element type OID, array type OID, array type name) of every element
/// type Walden has, as in PostgreSQL's pg_type.
pub const ARRAY_TYPES: &[(u32, u32, &str)] = &[
    (16, 1000, "_bool"),
    (17, 1001, "_bytea"),
    (21, 1005, "_int2"),
    (23, 1007, "_int4"),
    (25, 1009, "_text"),
    (1042, 1014, "_bpchar"),
    (1043, 1015, "_varchar"),
    (20, 1016, "_int8"),
    (700, 1021, "_float4"),
    (701, 1022, "_float8"),
    (1114, 1115, "_timestamp"),
    (1082, 1182, "_date"),
    (1083, 1183, "_time"),
    (1184, 1185, "_timestamptz"),
    (1186, 1187, "_interval"),
    (1700, 1231, "_numeric"),
    (2950, 2951, "_uuid"),
    (114, 199, "_json"),
    (3802, 3807, "_jsonb"),
    (26, 1028, "_oid"),
    (18, 1002, "_char"),
    (19, 1003, "_name"),
    (2205, 2210, "_regclass"),
    (2206, 2211, "_regtype"),
    (4089, 4090, "_regnamespace"),
];

/// The array type OID whose elements have type OID `elem`.
pub fn array_oid_of(elem: u32) -> Option<u32> {
    ARRAY_TYPES
        .iter()
        .find(|(e, _, _)| *e == elem)
        .map(|(_, a, _)| *a)
}

/// The element type OID of the array type OID `array`.
pub fn elem_oid_of(array: u32) -> Option<u32> {
    ARRAY_TYPES
        .iter()
        .find(|(_, a, _)| *a == array)
        .map(|(e, _, _)| *e)
}

/// PostgreSQL's isspace set, which array input skips around elements.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// Splits a one-dimensional array literal (numbered from 1) into its
/// elements' texts (`None`: an unquoted NULL); other shapes are refused.
pub fn split_literal(s: &str) -> Result<Vec<Option<String>>> {
    let (dims, items) = shape::parse_literal(s)?;
    if dims.len() > 1 || dims.first().is_some_and(|d| d.lower != 1) {
        return Err(EngineError::ArrayUnsupported(
            "multidimensional arrays here",
        ));
    }
    Ok(items)
}

/// Parses an array literal of any shape into a value with elements of
/// type `elem`.
pub fn parse_value(s: &str, elem: &DataType) -> Result<Value> {
    let (dims, texts) = shape::parse_literal(s)?;
    let items = texts
        .into_iter()
        .map(|e| match e {
            None => Ok(Value::Null),
            Some(t) => coerce(Value::text(t), elem),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(shape::make(dims, items))
}

/// Parses a one-dimensional array literal into elements of type `elem`.
pub fn parse(s: &str, elem: &DataType) -> Result<Vec<Value>> {
    split_literal(s)?
        .into_iter()
        .map(|e| match e {
            None => Ok(Value::Null),
            Some(t) => coerce(Value::text(t), elem),
        })
        .collect()
}

/// Whether an element's text must be quoted in an array literal.
fn needs_quotes(s: &str) -> bool {
    s.is_empty()
        || s.eq_ignore_ascii_case("null")
        || s.chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || is_space(c))
}

/// Appends one element's text, quoted and escaped when it must be.
pub fn push_element(out: &mut String, s: &str) {
    if needs_quotes(s) {
        out.push('"');
        for c in s.chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// The text form of an array, each non-NULL element written by `text`.
pub fn format_with(items: &[Value], mut text: impl FnMut(&Value) -> String) -> String {
    let mut out = String::from("{");
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if v.is_null() {
            out.push_str("NULL");
        } else {
            push_element(&mut out, &text(v));
        }
    }
    out.push('}');
    out
}

/// PostgreSQL's array order: element by element, a NULL element after every
/// other value; then the shorter array first.
pub fn compare(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<Option<String>> {
        split_literal(s).unwrap()
    }

    #[test]
    fn literals_split_as_postgresql_reads_them() {
        assert_eq!(texts("{}"), Vec::<Option<String>>::new());
        assert_eq!(texts(" { } "), Vec::<Option<String>>::new());
        assert_eq!(
            texts("{1, 2 ,NULL,\"NULL\", \"a b\" , c\\,d ,\"\"}"),
            vec![
                Some("1".into()),
                Some("2".into()),
                None,
                Some("NULL".into()),
                Some("a b".into()),
                Some("c,d".into()),
                Some("".into())
            ]
        );
        assert_eq!(texts("{a\\ }"), vec![Some("a ".into())]);
        for bad in [
            "", "1", "{1", "{1,}", "{,1}", "{1}x", "{\"a}", "{a\"b}", "{1,2",
        ] {
            assert!(
                matches!(split_literal(bad), Err(EngineError::MalformedArray { .. })),
                "{bad}"
            );
        }
        for unsupported in ["{{1,2},{3,4}}", "[0:1]={1,2}", "[1:1][1:1]={{1}}"] {
            assert!(
                matches!(
                    split_literal(unsupported),
                    Err(EngineError::ArrayUnsupported(_))
                ),
                "{unsupported}"
            );
        }
    }

    #[test]
    fn output_quotes_what_input_needs_quoted() {
        let items = [
            Value::text("a"),
            Value::Null,
            Value::text(""),
            Value::text("null"),
            Value::text("x y"),
            Value::text("q\"b\\"),
        ];
        let s = format_with(&items, |v| v.to_string());
        assert_eq!(s, r#"{a,NULL,"","null","x y","q\"b\\"}"#);
        let back = parse(&s, &DataType::Text).unwrap();
        assert_eq!(back.len(), items.len());
        for (a, b) in back.iter().zip(&items) {
            assert_eq!(a.is_null(), b.is_null());
            if !a.is_null() {
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn nulls_sort_last_and_prefixes_first() {
        let a = |v: &[Value]| v.to_vec();
        assert_eq!(
            compare(&a(&[Value::Int(1)]), &a(&[Value::Int(1), Value::Int(0)])),
            Ordering::Less
        );
        assert_eq!(
            compare(&a(&[Value::Null]), &a(&[Value::Int(5)])),
            Ordering::Greater
        );
        assert_eq!(
            compare(&a(&[Value::Int(2)]), &a(&[Value::Int(1), Value::Int(9)])),
            Ordering::Greater
        );
    }
}
