//! Arrays on the wire: PostgreSQL's binary array format (`array_send` /
//! `array_recv`) and the text form with each element in its type's text
//! form, of any shape (dimensions with their lower bounds).

use crate::pgtypes::{decode_binary_param, encode_binary, encode_text, type_oid};
use bytes::{BufMut, BytesMut};
use walden_engine::types::array;
use walden_engine::{DataType, Value};
use walden_sql::{ErrorKind, SqlError};

/// The elements of an array value; text (an array in text form, as the
/// catalogs still produce some) is read as a literal of `elem`.
fn items(v: &Value, elem: &DataType) -> Result<Value, String> {
    match v {
        Value::Array(_) | Value::MdArray(_) => Ok(v.clone()),
        Value::Text(s) => array::parse_value(s, elem).map_err(|e| e.to_string()),
        other => Err(format!("cannot send {other:?} as an array")),
    }
}

/// Appends the text form of an array of `elem`.
pub fn encode_array_text(v: &Value, elem: &DataType, buf: &mut BytesMut) {
    let text = match items(v, elem) {
        Ok(a) => match array::shaped(&a) {
            Some(s) => array::shape::format_shaped(&s.dims, s.items, |x| {
                let mut b = BytesMut::new();
                encode_text(x, elem, &mut b);
                String::from_utf8_lossy(&b).into_owned()
            }),
            None => v.to_string(),
        },
        Err(_) => v.to_string(),
    };
    buf.put_slice(text.as_bytes());
}

/// Appends the binary form: dimensions (0 for an empty array), a has-NULLs
/// flag, the element type, then (length, lower bound 1) and each element
/// as a length-prefixed binary value (-1 for NULL).
pub fn encode_array_binary(v: &Value, elem: &DataType, buf: &mut BytesMut) -> Result<(), String> {
    encode_array_binary_as(v, elem, type_oid(elem), 1, buf)
}

/// The binary array form with the element OID and lower bound given: an
/// int2vector or oidvector is sent as an array numbered from 0 (as
/// PostgreSQL's int2vectorsend and oidvectorsend do).
pub fn encode_array_binary_as(
    v: &Value,
    elem: &DataType,
    elem_oid: u32,
    lower: i32,
    buf: &mut BytesMut,
) -> Result<(), String> {
    let a = items(v, elem)?;
    let s = array::shaped(&a).ok_or("not an array")?;
    buf.put_i32(s.dims.len() as i32);
    buf.put_i32(s.items.iter().any(Value::is_null) as i32);
    buf.put_u32(elem_oid);
    for d in s.dims.iter() {
        buf.put_i32(d.len);
        // A vector's one dimension is numbered from `lower`.
        buf.put_i32(if matches!(a, Value::Array(_)) {
            lower
        } else {
            d.lower
        });
    }
    for x in s.items.iter() {
        if x.is_null() {
            buf.put_i32(-1);
            continue;
        }
        let at = buf.len();
        buf.put_i32(0);
        encode_binary(x, elem, buf)?;
        let len = (buf.len() - at - 4) as i32;
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

fn bad(what: &str) -> SqlError {
    SqlError::new(
        ErrorKind::BadBinaryValue,
        format!("invalid array in binary format: {what}"),
    )
}

/// Reads an array of element type `elem_oid` in the binary format.
pub fn decode_array_binary(b: &[u8], elem_oid: u32) -> Result<Value, SqlError> {
    let mut pos = 0usize;
    fn word(b: &[u8], pos: &mut usize) -> Result<i32, SqlError> {
        let w = b
            .get(*pos..*pos + 4)
            .ok_or_else(|| bad("insufficient data left in message"))?;
        *pos += 4;
        Ok(i32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    }
    let ndim = word(b, &mut pos)?;
    let flags = word(b, &mut pos)?;
    let elem = word(b, &mut pos)? as u32;
    if !(0..=1).contains(&flags) {
        return Err(bad("invalid array flags"));
    }
    if elem != elem_oid {
        return Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!("binary data has array element type {elem} instead of expected {elem_oid}"),
        ));
    }
    if !(0..=array::MAX_DIMS as i32).contains(&ndim) {
        return Err(bad("invalid number of dimensions"));
    }
    let mut dims = Vec::with_capacity(ndim as usize);
    for _ in 0..ndim {
        let len = word(b, &mut pos)?;
        let lower = word(b, &mut pos)?;
        dims.push(array::Dim { len, lower });
    }
    let n = array::shape::check_dims(&dims).map_err(|e| bad(&e.to_string()))?;
    // Each element takes at least its 4-byte length.
    if n.saturating_mul(4) > b.len() {
        return Err(bad("invalid array length"));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = word(b, &mut pos)?;
        if len == -1 {
            out.push(Value::Null);
            continue;
        }
        let len = usize::try_from(len).map_err(|_| bad("invalid element length"))?;
        let bytes = b
            .get(pos..pos.saturating_add(len))
            .ok_or_else(|| bad("insufficient data left in message"))?;
        pos += len;
        out.push(decode_binary_param(bytes, elem_oid)?);
    }
    if pos != b.len() {
        return Err(bad("extra data after the last element"));
    }
    Ok(array::make(dims, out))
}
