//! Binary encoding of values, rows, definitions and redo records.
//!
//! Little-endian, LEB128 varints for lengths and integers (zigzag for signed
//! ones). The same encoding serves log records and checkpoint images.

//!
//! This file holds the primitives, values and types (their tag bytes, in one
//! place); `defs` the catalog definitions, `redo` the redo records.

mod defs;
mod redo;
#[cfg(test)]
mod tests;

pub use defs::*;
pub use redo::*;

use crate::error::{EngineError, Result};
use crate::types::{DataType, EnumLabel, EnumRef, EnumType, Numeric, Value};
use rust_decimal::Decimal;
use std::sync::Arc;

pub fn put_var(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn put_ivar(out: &mut Vec<u8>, v: i64) {
    put_var(out, ((v << 1) ^ (v >> 63)) as u64);
}

pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_var(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// The largest scale a stored numeric may have: well past numeric's own
/// limit, which no computed value passes.
const MAX_STORED_SCALE: i64 = 4 * crate::types::NUMERIC_MAX_SCALE;

/// A numeric a Decimal does not hold: a kind byte (NaN, +Infinity,
/// -Infinity, finite), then for a finite value its scale, its sign and
/// its magnitude's little-endian bytes.
fn put_big_numeric(out: &mut Vec<u8>, n: &Numeric) {
    match n {
        Numeric::NaN => out.push(0),
        Numeric::PosInf => out.push(1),
        Numeric::NegInf => out.push(2),
        _ => {
            let (int, scale) = n.parts().unwrap_or_default();
            out.push(3);
            put_ivar(out, scale);
            out.push(u8::from(int.sign() == num_bigint::Sign::Minus));
            let mag = int.magnitude().to_bytes_le();
            put_var(out, mag.len() as u64);
            out.extend_from_slice(&mag);
        }
    }
}

pub fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0),
        Value::Bool(false) => out.push(1),
        Value::Bool(true) => out.push(2),
        Value::Int(i) => {
            out.push(3);
            put_ivar(out, *i);
        }
        Value::Float(f) => {
            out.push(4);
            out.extend_from_slice(&f.to_le_bytes());
        }
        // Values a Decimal holds keep the old form (tag 5: what older
        // versions wrote and read); the rest take tag 26.
        Value::Decimal(Numeric::Small(d)) => {
            out.push(5);
            out.extend_from_slice(&d.serialize());
        }
        Value::Decimal(n) => {
            out.push(26);
            put_big_numeric(out, n);
        }
        Value::Text(s) => {
            out.push(6);
            put_str(out, s);
        }
        Value::Timestamp(t) => {
            out.push(7);
            put_ivar(out, *t);
        }
        Value::Date(d) => {
            out.push(8);
            put_ivar(out, *d as i64);
        }
        Value::Uuid(u) => {
            out.push(9);
            out.extend_from_slice(&u.to_le_bytes());
        }
        Value::Bytes(b) => {
            out.push(10);
            put_var(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        Value::TimestampTz(t) => {
            out.push(11);
            put_ivar(out, *t);
        }
        Value::Time(t) => {
            out.push(12);
            put_ivar(out, *t);
        }
        Value::Interval(i) => {
            out.push(13);
            put_ivar(out, i.months as i64);
            put_ivar(out, i.days as i64);
            put_ivar(out, i.micros);
        }
        Value::Json(s) => {
            out.push(14);
            put_str(out, s);
        }
        // jsonb as its canonical text, parsed again on decode: the text is
        // PostgreSQL's own output form and parses to the same tree.
        Value::Jsonb(j) => {
            out.push(15);
            put_str(out, &j.to_string());
        }
        // An array: its length, then its elements (never arrays themselves).
        Value::Array(items) => {
            out.push(16);
            put_values(out, items);
        }
        // An array of another shape: the number of dimensions, each one's
        // length and lower bound, then the elements (never arrays).
        Value::MdArray(a) => {
            out.push(255);
            put_var(out, a.dims.len() as u64);
            for d in a.dims.iter() {
                put_var(out, d.len as u64);
                put_ivar(out, d.lower as i64);
            }
            for v in a.items.iter() {
                put_value(out, v);
            }
        }
        // An enum value: its label's sort position, then the label.
        Value::Enum(sort, label) => {
            out.push(17);
            out.extend_from_slice(&sort.to_le_bytes());
            put_str(out, label);
        }
        // A reg value: which kind, the OID, then the name.
        Value::Reg(kind, oid, name) => {
            out.push(25);
            out.push(reg_kind_tag(*kind));
            put_var(out, *oid as u64);
            put_str(out, name);
        }
    }
}

pub fn put_values(out: &mut Vec<u8>, vals: &[Value]) {
    put_var(out, vals.len() as u64);
    for v in vals {
        put_value(out, v);
    }
}

/// A cursor over encoded bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

pub(crate) fn short() -> EngineError {
    EngineError::Data("truncated or malformed record".into())
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    pub fn u8(&mut self) -> Result<u8> {
        let b = *self.buf.get(self.pos).ok_or_else(short)?;
        self.pos += 1;
        Ok(b)
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(short)?;
        let s = self.buf.get(self.pos..end).ok_or_else(short)?;
        self.pos = end;
        Ok(s)
    }
    pub fn var(&mut self) -> Result<u64> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.u8()?;
            if shift > 63 {
                return Err(short());
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
        }
    }
    pub fn ivar(&mut self) -> Result<i64> {
        let v = self.var()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }
    pub fn str(&mut self) -> Result<&'a str> {
        let n = self.var()? as usize;
        std::str::from_utf8(self.bytes(n)?).map_err(|_| short())
    }
    pub fn value(&mut self) -> Result<Value> {
        Ok(match self.u8()? {
            0 => Value::Null,
            1 => Value::Bool(false),
            2 => Value::Bool(true),
            3 => Value::Int(self.ivar()?),
            4 => Value::Float(f64::from_le_bytes(self.bytes(8)?.try_into().unwrap())),
            5 => Value::Decimal(Numeric::small(Decimal::deserialize(
                self.bytes(16)?.try_into().unwrap(),
            ))),
            26 => Value::Decimal(self.big_numeric()?),
            6 => Value::Text(Arc::from(self.str()?)),
            7 => Value::Timestamp(self.ivar()?),
            8 => Value::Date(self.ivar()? as i32),
            9 => Value::Uuid(u128::from_le_bytes(self.bytes(16)?.try_into().unwrap())),
            10 => {
                let n = self.var()? as usize;
                Value::Bytes(Arc::from(self.bytes(n)?))
            }
            11 => Value::TimestampTz(self.ivar()?),
            12 => Value::Time(self.ivar()?),
            13 => {
                let months = i32::try_from(self.ivar()?).map_err(|_| short())?;
                let days = i32::try_from(self.ivar()?).map_err(|_| short())?;
                Value::Interval(crate::types::Interval::new(months, days, self.ivar()?))
            }
            14 => Value::Json(Arc::from(self.str()?)),
            15 => Value::Jsonb(Arc::new(
                crate::types::jsonb::parse_jsonb(self.str()?).map_err(|_| short())?,
            )),
            16 => {
                let n = self.var()? as usize;
                if n > self.buf.len() {
                    return Err(short());
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    // Arrays are one-dimensional: an array inside one is
                    // a malformed record, not a reason to recurse.
                    if matches!(self.buf.get(self.pos), Some(&16 | &255)) {
                        return Err(short());
                    }
                    items.push(self.value()?);
                }
                Value::Array(items.into())
            }
            255 => self.md_array()?,
            17 => {
                let sort = f64::from_le_bytes(self.bytes(8)?.try_into().unwrap());
                Value::Enum(sort, Arc::from(self.str()?))
            }
            25 => {
                let kind = reg_kind(self.bytes(1)?[0])?;
                let oid = u32::try_from(self.var()?).map_err(|_| short())?;
                Value::Reg(kind, oid, Arc::from(self.str()?))
            }
            _ => return Err(short()),
        })
    }
    /// An array written under tag 255. Damage is refused before anything
    /// is allocated for it: at most six dimensions, each at least one
    /// element, bounds within an int4, and no more elements than bytes
    /// left (each takes at least one).
    fn md_array(&mut self) -> Result<Value> {
        use crate::types::array::{shape, Dim};
        let n = self.var()?;
        if !(1..=shape::MAX_DIMS as u64).contains(&n) {
            return Err(short());
        }
        let mut dims = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let len = i32::try_from(self.var()?).map_err(|_| short())?;
            let lower = i32::try_from(self.ivar()?).map_err(|_| short())?;
            dims.push(Dim { len, lower });
        }
        let count = match shape::check_dims(&dims) {
            Ok(c) if c > 0 && c <= self.buf.len() - self.pos.min(self.buf.len()) => c,
            _ => return Err(short()),
        };
        // What `Value::Array` holds is never stored under this tag.
        if n == 1 && dims[0].lower == 1 {
            return Err(short());
        }
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            if matches!(self.buf.get(self.pos), Some(&16 | &255)) {
                return Err(short());
            }
            items.push(self.value()?);
        }
        Ok(crate::types::array::make(dims, items))
    }

    /// A numeric written by [`put_big_numeric`].
    fn big_numeric(&mut self) -> Result<Numeric> {
        Ok(match self.u8()? {
            0 => Numeric::NaN,
            1 => Numeric::PosInf,
            2 => Numeric::NegInf,
            3 => {
                let scale = self.ivar()?;
                // Stored numerics never carry a negative scale (`from_parts`
                // folds it into the integer) nor one far past numeric's
                // limit; either is damage, and honouring it would mean
                // computing 10^-scale or formatting a scale's worth of zeros.
                if !(0..=MAX_STORED_SCALE).contains(&scale) {
                    return Err(short());
                }
                let sign = match self.u8()? {
                    0 => num_bigint::Sign::Plus,
                    1 => num_bigint::Sign::Minus,
                    _ => return Err(short()),
                };
                let n = self.var()? as usize;
                let mag = num_bigint::BigUint::from_bytes_le(self.bytes(n)?);
                Numeric::from_parts(num_bigint::BigInt::from_biguint(sign, mag), scale)
            }
            _ => return Err(short()),
        })
    }
    pub fn values(&mut self) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        self.values_into(&mut out)?;
        Ok(out)
    }

    /// As [`Reader::values`], into `out` (cleared first): a scan decodes
    /// every row into one buffer.
    pub fn values_into(&mut self, out: &mut Vec<Value>) -> Result<()> {
        out.clear();
        let n = self.var()? as usize;
        if n > self.buf.len() {
            return Err(short());
        }
        out.reserve(n);
        for _ in 0..n {
            out.push(self.value()?);
        }
        Ok(())
    }
}

pub(crate) fn put_type(out: &mut Vec<u8>, t: &DataType) {
    match t {
        DataType::SmallInt => out.push(1),
        DataType::Int => out.push(2),
        DataType::BigInt => out.push(3),
        DataType::Bool => out.push(4),
        DataType::Real => out.push(5),
        DataType::Double => out.push(6),
        // Tag 7 (older versions' form) where it holds the typmod, tag 27
        // (precision, then scale as varints) for a precision past 255 or
        // a negative scale.
        DataType::Decimal { precision, scale } => {
            match (u8::try_from(*precision), u8::try_from(*scale)) {
                (Ok(p), Ok(s)) => out.extend_from_slice(&[7, p, s]),
                _ => {
                    out.push(27);
                    put_var(out, *precision as u64);
                    put_ivar(out, *scale as i64);
                }
            }
        }
        DataType::Varchar(n) => {
            out.push(8);
            put_var(out, n.map_or(0, |n| n as u64 + 1));
        }
        DataType::Text => out.push(9),
        DataType::Timestamp => out.push(10),
        DataType::Date => out.push(11),
        DataType::Uuid => out.push(12),
        DataType::Bytes => out.push(13),
        DataType::TimestampTz => out.push(14),
        DataType::Time => out.push(15),
        DataType::Interval => out.push(16),
        DataType::Char(n) => {
            out.push(17);
            put_var(out, *n as u64);
        }
        DataType::Json => out.push(18),
        DataType::Jsonb => out.push(19),
        DataType::Array(elem) => {
            out.push(20);
            put_type(out, elem);
        }
        // The type's whole definition, so a table definition decodes
        // without the catalog's enum types.
        DataType::Enum(e) => {
            out.push(21);
            put_enum(out, e);
        }
        // Type tag 22, then which vector.
        DataType::Int2Vector => out.extend_from_slice(&[22, 0]),
        DataType::OidVector => out.extend_from_slice(&[22, 1]),
        DataType::Oid => out.push(23),
        DataType::PgChar => out.push(24),
        DataType::Name => out.push(26),
        // Types reach here only from table definitions, and the SQL layer
        // has no way to name a record type for a column (no `record` type
        // name, CREATE TABLE AS and SELECT INTO refused).
        DataType::Record(_) => unreachable!("a table column of type record"),
        // Type tag 25, then which catalog the OIDs are of.
        DataType::Reg(k) => out.extend_from_slice(&[25, reg_kind_tag(*k)]),
    }
}

/// An enum type's definition (in a column type, an image, a redo record).
pub fn put_enum(out: &mut Vec<u8>, e: &EnumType) {
    put_var(out, e.id as u64);
    put_str(out, &e.name);
    put_var(out, e.labels.len() as u64);
    for l in &e.labels {
        put_str(out, &l.name);
        out.extend_from_slice(&l.sort.to_le_bytes());
        put_var(out, l.member as u64);
    }
}

pub fn get_enum(r: &mut Reader<'_>) -> Result<EnumType> {
    let id = u32::try_from(r.var()?).map_err(|_| short())?;
    let name = r.str()?.to_string();
    let n = r.var()? as usize;
    if n > r.buf.len() {
        return Err(short());
    }
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.str()?.to_string();
        let sort = f64::from_le_bytes(r.bytes(8)?.try_into().unwrap());
        let member = u32::try_from(r.var()?).map_err(|_| short())?;
        labels.push(EnumLabel { name, sort, member });
    }
    Ok(EnumType { id, name, labels })
}

pub(crate) fn get_type(r: &mut Reader<'_>) -> Result<DataType> {
    Ok(match r.u8()? {
        1 => DataType::SmallInt,
        2 => DataType::Int,
        3 => DataType::BigInt,
        4 => DataType::Bool,
        5 => DataType::Real,
        6 => DataType::Double,
        7 => DataType::Decimal {
            precision: r.u8()? as u16,
            scale: r.u8()? as i16,
        },
        27 => DataType::Decimal {
            precision: u16::try_from(r.var()?).map_err(|_| short())?,
            scale: i16::try_from(r.ivar()?).map_err(|_| short())?,
        },
        8 => DataType::Varchar(match r.var()? {
            0 => None,
            n => Some((n - 1) as u32),
        }),
        9 => DataType::Text,
        10 => DataType::Timestamp,
        11 => DataType::Date,
        12 => DataType::Uuid,
        13 => DataType::Bytes,
        14 => DataType::TimestampTz,
        15 => DataType::Time,
        16 => DataType::Interval,
        17 => DataType::Char(u32::try_from(r.var()?).map_err(|_| short())?),
        18 => DataType::Json,
        19 => DataType::Jsonb,
        20 => match get_type(r)? {
            DataType::Array(_) => return Err(short()),
            elem => DataType::Array(Box::new(elem)),
        },
        21 => DataType::Enum(EnumRef(Arc::new(get_enum(r)?))),
        22 => match r.u8()? {
            0 => DataType::Int2Vector,
            1 => DataType::OidVector,
            _ => return Err(short()),
        },
        23 => DataType::Oid,
        24 => DataType::PgChar,
        26 => DataType::Name,
        25 => DataType::Reg(reg_kind(r.u8()?)?),
        _ => return Err(short()),
    })
}

fn reg_kind_tag(k: crate::types::RegKind) -> u8 {
    match k {
        crate::types::RegKind::Class => 0,
        crate::types::RegKind::Type => 1,
        crate::types::RegKind::Namespace => 2,
    }
}

fn reg_kind(tag: u8) -> Result<crate::types::RegKind> {
    Ok(match tag {
        0 => crate::types::RegKind::Class,
        1 => crate::types::RegKind::Type,
        2 => crate::types::RegKind::Namespace,
        _ => return Err(short()),
    })
}
