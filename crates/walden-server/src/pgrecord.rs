//! Anonymous records (`DataType::Record`, values held as `Value::Array` of
//! the fields) in PostgreSQL's text and binary wire forms, as its
//! `record_out` and `record_send` write them.

use crate::pgtypes::{encode_binary, encode_text, type_oid};
use bytes::{BufMut, BytesMut};
use walden_engine::{DataType, Value};

fn fields(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) => items,
        _ => &[],
    }
}

/// `(a,b,...)`: a NULL field is empty; a field that is empty or holds a
/// quote, backslash, parenthesis, comma or white space is double-quoted,
/// with quotes and backslashes doubled inside.
pub fn encode_record_text(v: &Value, types: &[(String, DataType)], buf: &mut BytesMut) {
    buf.put_u8(b'(');
    for (i, (x, (_, t))) in fields(v).iter().zip(types).enumerate() {
        if i > 0 {
            buf.put_u8(b',');
        }
        if x.is_null() {
            continue;
        }
        let mut one = BytesMut::new();
        encode_text(x, t, &mut one);
        let quote = one.is_empty()
            || one
                .iter()
                .any(|c| matches!(c, b'"' | b'\\' | b'(' | b')' | b',') || c.is_ascii_whitespace());
        if !quote {
            buf.put_slice(&one);
            continue;
        }
        buf.put_u8(b'"');
        for &c in one.iter() {
            if c == b'"' || c == b'\\' {
                buf.put_u8(c);
            }
            buf.put_u8(c);
        }
        buf.put_u8(b'"');
    }
    buf.put_u8(b')');
}

/// The field count, then each field's type OID and length-prefixed
/// binary value (-1 for NULL).
pub fn encode_record_binary(
    v: &Value,
    types: &[(String, DataType)],
    buf: &mut BytesMut,
) -> Result<(), String> {
    let items = fields(v);
    buf.put_i32(types.len() as i32);
    for (x, (_, t)) in items.iter().zip(types) {
        buf.put_u32(type_oid(t));
        if x.is_null() {
            buf.put_i32(-1);
            continue;
        }
        let at = buf.len();
        buf.put_i32(0);
        encode_binary(x, t, buf)?;
        let len = (buf.len() - at - 4) as i32;
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}
