//! Order-preserving key encoding ("memcomparable"): the bytes of two encoded
//! keys compare as the keys do under `Value`'s order, so a byte-ordered store
//! (redb) keeps rows in SQL key order and range scans map to byte ranges.
//!
//! Every value's encoding is self-delimiting (fixed width, or terminated with
//! an escape), so a tuple's encoding is the concatenation of its values' and
//! compares column by column. The guarantee holds between values of one
//! variant (and NULL), which is what a key column holds: values are coerced to
//! the column's type before they become keys. Int, Float and Decimal have
//! distinct tags, so mixed numeric variants order by tag, not by value.

use crate::types::Numeric;
use crate::types::Value;
use std::sync::Arc;

const NULL: u8 = 0x00;
const FALSE: u8 = 0x10;
const TRUE: u8 = 0x11;
const INT: u8 = 0x20;
const FLOAT: u8 = 0x21;
const DEC: u8 = 0x22;
const TEXT: u8 = 0x30;
const TIMESTAMP: u8 = 0x40;
const DATE: u8 = 0x50;
const UUID: u8 = 0x60;
const BYTES: u8 = 0x70;
const TIMESTAMPTZ: u8 = 0x80;
const TIME: u8 = 0x90;
const INTERVAL: u8 = 0xA0;
/// json and jsonb by their text. The bytes do not order as jsonb compares,
/// so neither may be a key column (refused with 0A000 at CREATE TABLE); the
/// tags only let any value round-trip.
const JSON: u8 = 0xB0;
const JSONB: u8 = 0xB1;
/// An array: each element as ELEM_VALUE and its encoding, or ELEM_NULL, then
/// ARRAY_END. Bytes order as arrays compare: element by element, a NULL
/// element after any value, a proper prefix first.
const ARRAY: u8 = 0xC0;
const ARRAY_END: u8 = 0x00;
const ELEM_VALUE: u8 = 0x01;
const ELEM_NULL: u8 = 0x02;
/// After ELEM_VALUE (where an element's tag, never NULL's, would be): the
/// shape of an array that is not one-dimensional from 1 follows. Such an
/// array orders after the one-dimensional array of the same elements,
/// which PostgreSQL's order agrees with except for a single dimension
/// with a lower bound below 1 (PostgreSQL puts it first).
const MD_SHAPE: u8 = 0x00;
/// An enum value: its label's sort position as FLOAT's bytes (values of
/// one type order by it), then the label as TEXT's.
const ENUM: u8 = 0xC8;
const DAY_MICROS: i128 = 86_400_000_000;

/// Decimal sub-tags, in numeric's order: -Infinity, negatives, zero,
/// positives, +Infinity, NaN.
const DEC_NEG_INF: u8 = 0x00;
const DEC_NEG: u8 = 0x01;
const DEC_ZERO: u8 = 0x02;
const DEC_POS: u8 = 0x03;
const DEC_POS_INF: u8 = 0x04;
const DEC_NAN: u8 = 0x05;
/// Exponents outside i16's middle (-32767..=32766) are written as this
/// 2-byte escape (0x0000 below, 0xFFFF above) and then 4 bytes.
const EXP_SHORT: std::ops::RangeInclusive<i32> = -32767..=32766;

/// Why a byte string is not an encoded key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed encoded key at byte {at}: {what}")]
pub struct KeyDecodeError {
    pub at: usize,
    pub what: &'static str,
}

/// Appends the encoding of `key` (a tuple of values) to `out`.
pub fn encode_key(key: &[Value], out: &mut Vec<u8>) {
    for v in key {
        encode_value(v, out);
    }
}

/// The encoding of a tuple.
pub fn key_bytes(key: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() * 9);
    encode_key(key, &mut out);
    out
}

fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
        Value::Int(i) => {
            out.push(INT);
            put_i64(*i, out);
        }
        Value::Float(f) => {
            out.push(FLOAT);
            put_f64(*f, out);
        }
        // Keyed as the OID it is.
        Value::Reg(_, oid, _) => {
            out.push(INT);
            put_i64(*oid as i64, out);
        }
        Value::Enum(sort, label) => {
            out.push(ENUM);
            put_f64(*sort, out);
            encode_bytes(label.as_bytes(), out);
        }
        Value::Decimal(d) => {
            out.push(DEC);
            encode_decimal(d, out);
        }
        Value::Text(s) => {
            out.push(TEXT);
            encode_bytes(s.as_bytes(), out);
        }
        Value::Timestamp(t) => {
            out.push(TIMESTAMP);
            put_i64(*t, out);
        }
        Value::Date(d) => {
            out.push(DATE);
            out.extend_from_slice(&((*d as u32) ^ (1 << 31)).to_be_bytes());
        }
        Value::Uuid(u) => {
            out.push(UUID);
            out.extend_from_slice(&u.to_be_bytes());
        }
        Value::Bytes(b) => {
            out.push(BYTES);
            encode_bytes(b, out);
        }
        Value::TimestampTz(t) => {
            out.push(TIMESTAMPTZ);
            put_i64(*t, out);
        }
        Value::Time(t) => {
            out.push(TIME);
            put_i64(*t, out);
        }
        // Intervals compare by their span ('1 mon' = '30 days'), so the key is
        // the span; it decodes as days and microseconds.
        Value::Interval(i) => {
            out.push(INTERVAL);
            out.extend_from_slice(&((i.span() as u128) ^ (1 << 127)).to_be_bytes());
        }
        Value::Json(s) => {
            out.push(JSON);
            encode_bytes(s.as_bytes(), out);
        }
        Value::Jsonb(j) => {
            out.push(JSONB);
            encode_bytes(j.to_string().as_bytes(), out);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            encode_items(items, out);
            out.push(ARRAY_END);
        }
        // The elements as a one-dimensional array's, then the shape after
        // ELEM_VALUE and MD_SHAPE (a pair no element writes): after a
        // one-dimensional array of the same elements, before any with more.
        Value::MdArray(a) => {
            out.push(ARRAY);
            encode_items(&a.items, out);
            out.push(ELEM_VALUE);
            out.push(MD_SHAPE);
            out.push(a.dims.len() as u8);
            for d in a.dims.iter() {
                put_i64(d.len as i64, out);
            }
            for d in a.dims.iter() {
                put_i64(d.lower as i64, out);
            }
            out.push(ARRAY_END);
        }
    }
}

fn encode_items(items: &[Value], out: &mut Vec<u8>) {
    for v in items.iter() {
        if v.is_null() {
            out.push(ELEM_NULL);
        } else {
            out.push(ELEM_VALUE);
            encode_value(v, out);
        }
    }
}

/// IEEE 754 bits ordered as `f64::total_cmp` orders them.
fn put_f64(f: f64, out: &mut Vec<u8>) {
    let bits = f.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    };
    out.extend_from_slice(&ordered.to_be_bytes());
}

fn get_f64(b: &[u8]) -> Result<(f64, &[u8]), &'static str> {
    let (a, rest) = take::<8>(b)?;
    let o = u64::from_be_bytes(a);
    let bits = if o >> 63 == 1 { o ^ (1 << 63) } else { !o };
    Ok((f64::from_bits(bits), rest))
}

/// A signed integer with its sign bit flipped, big-endian: bytes order as numbers.
fn put_i64(v: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
}

fn get_i64(b: &[u8]) -> Result<(i64, &[u8]), &'static str> {
    let (a, rest) = take::<8>(b)?;
    Ok(((u64::from_be_bytes(a) ^ (1 << 63)) as i64, rest))
}

/// Bytes with 0x00 escaped as 00 FF and a 00 01 terminator: a proper prefix
/// sorts before every extension of it.
fn encode_bytes(b: &[u8], out: &mut Vec<u8>) {
    for &c in b {
        out.push(c);
        if c == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// A decimal as sign, then the decimal exponent of its leading digit, then its
/// significant digits (trailing zeros dropped, each stored as digit + 1) and a
/// 0 terminator; negatives are the bitwise complement of that, so larger
/// magnitudes sort first. 1.50 and 1.5 encode alike, as they compare equal.
/// The exponent is 2 bytes (biased i16) when in `EXP_SHORT`, else an
/// escape and 4 bytes, which sort beyond every short one.
fn encode_decimal(d: &Numeric, out: &mut Vec<u8>) {
    let (int, scale) = match d {
        Numeric::NaN => return out.push(DEC_NAN),
        Numeric::PosInf => return out.push(DEC_POS_INF),
        Numeric::NegInf => return out.push(DEC_NEG_INF),
        _ if d.is_zero() => return out.push(DEC_ZERO),
        Numeric::Small(s) => (s.mantissa().unsigned_abs().to_string(), s.scale() as i64),
        Numeric::Big(_) => {
            let (i, s) = d.parts().unwrap_or_default();
            (i.magnitude().to_string(), s)
        }
    };
    let exp = (int.len() as i64 - scale) as i32;
    let sig = int.trim_end_matches('0');
    let neg = d.is_negative();
    let flip = |b: u8| if neg { !b } else { b };
    out.push(if neg { DEC_NEG } else { DEC_POS });
    if EXP_SHORT.contains(&exp) {
        for b in ((exp as i16 as u16) ^ 0x8000).to_be_bytes() {
            out.push(flip(b));
        }
    } else {
        let esc: u8 = if exp > 0 { 0xFF } else { 0x00 };
        out.push(flip(esc));
        out.push(flip(esc));
        for b in ((exp as u32) ^ 0x8000_0000).to_be_bytes() {
            out.push(flip(b));
        }
    }
    for c in sig.bytes() {
        out.push(flip(c - b'0' + 1));
    }
    out.push(flip(0));
}

/// Decodes a tuple encoded by [`encode_key`].
pub fn decode_key(mut b: &[u8]) -> Result<Vec<Value>, KeyDecodeError> {
    let total = b.len();
    let mut out = Vec::new();
    while !b.is_empty() {
        let at = total - b.len();
        let (v, rest) = decode_value(b).map_err(|what| KeyDecodeError { at, what })?;
        out.push(v);
        b = rest;
    }
    Ok(out)
}

fn take<const N: usize>(b: &[u8]) -> Result<([u8; N], &[u8]), &'static str> {
    if b.len() < N {
        return Err("truncated value");
    }
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    Ok((a, &b[N..]))
}

fn decode_value(b: &[u8]) -> Result<(Value, &[u8]), &'static str> {
    let (&tag, rest) = b.split_first().ok_or("empty")?;
    Ok(match tag {
        NULL => (Value::Null, rest),
        FALSE => (Value::Bool(false), rest),
        TRUE => (Value::Bool(true), rest),
        INT => {
            let (v, rest) = get_i64(rest)?;
            (Value::Int(v), rest)
        }
        FLOAT => {
            let (f, rest) = get_f64(rest)?;
            (Value::Float(f), rest)
        }
        ENUM => {
            let (sort, rest) = get_f64(rest)?;
            let (bytes, rest) = decode_bytes(rest)?;
            let s = String::from_utf8(bytes).map_err(|_| "enum label is not UTF-8")?;
            (Value::Enum(sort, Arc::from(s)), rest)
        }
        DEC => {
            let (d, rest) = decode_decimal(rest)?;
            (Value::Decimal(d), rest)
        }
        TEXT => {
            let (bytes, rest) = decode_bytes(rest)?;
            let s = String::from_utf8(bytes).map_err(|_| "text is not UTF-8")?;
            (Value::Text(Arc::from(s)), rest)
        }
        TIMESTAMP => {
            let (v, rest) = get_i64(rest)?;
            (Value::Timestamp(v), rest)
        }
        DATE => {
            let (a, rest) = take::<4>(rest)?;
            (
                Value::Date((u32::from_be_bytes(a) ^ (1 << 31)) as i32),
                rest,
            )
        }
        UUID => {
            let (a, rest) = take::<16>(rest)?;
            (Value::Uuid(u128::from_be_bytes(a)), rest)
        }
        BYTES => {
            let (bytes, rest) = decode_bytes(rest)?;
            (Value::Bytes(Arc::from(bytes)), rest)
        }
        TIMESTAMPTZ => {
            let (v, rest) = get_i64(rest)?;
            (Value::TimestampTz(v), rest)
        }
        TIME => {
            let (v, rest) = get_i64(rest)?;
            (Value::Time(v), rest)
        }
        INTERVAL => {
            let (a, rest) = take::<16>(rest)?;
            let span = (u128::from_be_bytes(a) ^ (1 << 127)) as i128;
            let days =
                i32::try_from(span.div_euclid(DAY_MICROS)).map_err(|_| "interval out of range")?;
            let micros = span.rem_euclid(DAY_MICROS) as i64;
            (
                Value::Interval(crate::types::Interval {
                    months: 0,
                    days,
                    micros,
                }),
                rest,
            )
        }
        JSON | JSONB => {
            let (bytes, rest) = decode_bytes(rest)?;
            let s = String::from_utf8(bytes).map_err(|_| "json is not UTF-8")?;
            let v = if tag == JSON {
                Value::Json(Arc::from(s))
            } else {
                Value::Jsonb(Arc::new(
                    crate::types::jsonb::parse_jsonb(&s).map_err(|_| "malformed jsonb")?,
                ))
            };
            (v, rest)
        }
        ARRAY => {
            let mut items = Vec::new();
            let mut rest = rest;
            loop {
                let (&m, r) = rest.split_first().ok_or("unterminated array")?;
                rest = r;
                match m {
                    ARRAY_END => break,
                    ELEM_NULL => items.push(Value::Null),
                    ELEM_VALUE if rest.first() == Some(&MD_SHAPE) => {
                        let value = decode_shape(&rest[1..], items)?;
                        let (&end, r) = value.1.split_first().ok_or("unterminated array")?;
                        if end != ARRAY_END {
                            return Err("bad array shape");
                        }
                        return Ok((value.0, r));
                    }
                    // One dimension: an element is never an array itself.
                    ELEM_VALUE if rest.first() != Some(&ARRAY) => {
                        let (v, r) = decode_value(rest)?;
                        items.push(v);
                        rest = r;
                    }
                    _ => return Err("bad array element"),
                }
            }
            (Value::Array(items.into()), rest)
        }
        _ => return Err("unknown type tag"),
    })
}

/// The shape after MD_SHAPE, checked as a stored one is.
fn decode_shape(b: &[u8], items: Vec<Value>) -> Result<(Value, &[u8]), &'static str> {
    use crate::types::array::{shape, Dim};
    let (&n, mut rest) = b.split_first().ok_or("unterminated array")?;
    if !(1..=shape::MAX_DIMS as u8).contains(&n) {
        return Err("bad array shape");
    }
    let mut nums = Vec::with_capacity(2 * n as usize);
    for _ in 0..2 * n {
        let (v, r) = get_i64(rest)?;
        nums.push(i32::try_from(v).map_err(|_| "bad array shape")?);
        rest = r;
    }
    let dims: Vec<Dim> = (0..n as usize)
        .map(|k| Dim {
            len: nums[k],
            lower: nums[n as usize + k],
        })
        .collect();
    match shape::check_dims(&dims) {
        Ok(c) if c == items.len() && c > 0 && !(n == 1 && dims[0].lower == 1) => {}
        _ => return Err("bad array shape"),
    }
    Ok((shape::make(dims, items), rest))
}

fn decode_bytes(b: &[u8]) -> Result<(Vec<u8>, &[u8]), &'static str> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        match (b.get(i), b.get(i + 1)) {
            (Some(0), Some(0xFF)) => {
                out.push(0);
                i += 2;
            }
            (Some(0), Some(0x01)) => return Ok((out, &b[i + 2..])),
            (Some(0), _) => return Err("bad escape in bytes"),
            (Some(&c), _) => {
                out.push(c);
                i += 1;
            }
            (None, _) => return Err("unterminated bytes"),
        }
    }
}

fn decode_decimal(b: &[u8]) -> Result<(Numeric, &[u8]), &'static str> {
    let (&sign, rest) = b.split_first().ok_or("truncated decimal")?;
    let neg = match sign {
        DEC_ZERO => return Ok((Numeric::ZERO, rest)),
        DEC_NAN => return Ok((Numeric::NaN, rest)),
        DEC_POS_INF => return Ok((Numeric::PosInf, rest)),
        DEC_NEG_INF => return Ok((Numeric::NegInf, rest)),
        DEC_NEG => true,
        DEC_POS => false,
        _ => return Err("bad decimal sign"),
    };
    let flip = |b: u8| if neg { !b } else { b };
    let (e, mut rest) = take::<2>(rest)?;
    let short = u16::from_be_bytes([flip(e[0]), flip(e[1])]);
    let exp = if short == 0 || short == 0xFFFF {
        let (w, r) = take::<4>(rest)?;
        rest = r;
        (u32::from_be_bytes([flip(w[0]), flip(w[1]), flip(w[2]), flip(w[3])]) ^ 0x8000_0000) as i32
    } else {
        (short ^ 0x8000) as i16 as i32
    };
    let mut digits = String::new();
    loop {
        let (&c, r) = rest.split_first().ok_or("unterminated decimal")?;
        rest = r;
        match flip(c) {
            0 => break,
            d @ 1..=10 => digits.push((b'0' + d - 1) as char),
            _ => return Err("bad decimal digit"),
        }
    }
    if digits.is_empty() {
        return Err("decimal without digits");
    }
    // value = 0.digits * 10^exp = digits * 10^(exp - len)
    let shift = exp as i64 - digits.len() as i64;
    let mantissa: num_bigint::BigInt = digits.parse().map_err(|_| "bad decimal digits")?;
    let mantissa = if neg { -mantissa } else { mantissa };
    let d = Numeric::from_parts(mantissa, -shift);
    d.clone().checked().map_err(|_| "decimal out of range")?;
    Ok((d, rest))
}
