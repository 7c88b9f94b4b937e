//! Mapping between Walden's types and values and PostgreSQL's type OIDs and
//! text and binary wire formats.

use bytes::{BufMut, BytesMut};
use std::sync::Arc;
use walden_engine::types::Numeric;
use walden_engine::types::{array, datetime, parse_date, parse_timestamp};
use walden_engine::{DataType, Value};
use walden_sql::{ErrorKind, SqlError};

mod numeric;
use numeric::{check_numeric_recv, numeric_recv, numeric_send};

pub const OID_BOOL: u32 = 16;
pub const OID_BYTEA: u32 = 17;
pub const OID_CHAR: u32 = 18;
pub const OID_NAME: u32 = 19;
pub const OID_INT8: u32 = 20;
pub const OID_INT2: u32 = 21;
pub const OID_INT4: u32 = 23;
pub const OID_TEXT: u32 = 25;
pub const OID_OID: u32 = 26;
pub const OID_FLOAT4: u32 = 700;
pub const OID_FLOAT8: u32 = 701;
pub const OID_UNKNOWN: u32 = 705;
pub const OID_BPCHAR: u32 = 1042;
pub const OID_VARCHAR: u32 = 1043;
pub const OID_DATE: u32 = 1082;
pub const OID_TIME: u32 = 1083;
pub const OID_INTERVAL: u32 = 1186;
pub const OID_TIMESTAMP: u32 = 1114;
pub const OID_TIMESTAMPTZ: u32 = 1184;
pub const OID_NUMERIC: u32 = 1700;
pub const OID_UUID: u32 = 2950;
pub const OID_JSON: u32 = 114;
pub const OID_JSONB: u32 = 3802;
pub const OID_INT2VECTOR: u32 = 22;
pub const OID_OIDVECTOR: u32 = 30;
pub const OID_RECORD: u32 = 2249;

/// Microseconds between 1970-01-01 (Walden's epoch) and 2000-01-01 (PostgreSQL's).
const PG_EPOCH_OFFSET_US: i64 = 946_684_800_000_000;
/// Days between 1970-01-01 and 2000-01-01.
const PG_EPOCH_OFFSET_DAYS: i32 = 10_957;

/// A timestamp's binary form: microseconds since 2000, `infinity` and
/// `-infinity` kept as i64's ends, as PostgreSQL sends them.
fn ts_send(us: i64) -> i64 {
    match us {
        i64::MAX | i64::MIN => us,
        _ => us - PG_EPOCH_OFFSET_US,
    }
}

/// A date's binary form: days since 2000, infinities at i32's ends.
fn date_send(d: i32) -> i32 {
    match d {
        i32::MAX | i32::MIN => d,
        _ => d - PG_EPOCH_OFFSET_DAYS,
    }
}

/// A binary timestamp read back (infinities kept).
fn ts_recv(us: i64) -> Option<i64> {
    match us {
        i64::MAX | i64::MIN => Some(us),
        _ => us
            .checked_add(PG_EPOCH_OFFSET_US)
            .filter(|v| *v != i64::MAX),
    }
}

/// The PostgreSQL type OID of a Walden type.
pub fn type_oid(t: &DataType) -> u32 {
    match t {
        DataType::SmallInt => OID_INT2,
        DataType::Int => OID_INT4,
        DataType::BigInt => OID_INT8,
        DataType::Bool => OID_BOOL,
        DataType::Real => OID_FLOAT4,
        DataType::Double => OID_FLOAT8,
        DataType::Decimal { .. } => OID_NUMERIC,
        DataType::Varchar(_) => OID_VARCHAR,
        DataType::Text => OID_TEXT,
        DataType::Timestamp => OID_TIMESTAMP,
        DataType::Date => OID_DATE,
        DataType::Uuid => OID_UUID,
        DataType::Bytes => OID_BYTEA,
        DataType::TimestampTz => OID_TIMESTAMPTZ,
        DataType::Time => OID_TIME,
        DataType::Interval => OID_INTERVAL,
        DataType::Char(_) => OID_BPCHAR,
        DataType::Json => OID_JSON,
        DataType::Jsonb => OID_JSONB,
        DataType::Array(e) => match &**e {
            DataType::Enum(e) => walden_sql::enum_array_oid(e.id()) as u32,
            e => array::array_oid_of(type_oid(e)).unwrap_or(OID_TEXT),
        },
        DataType::Enum(e) => walden_sql::enum_oid(e.id()) as u32,
        DataType::Int2Vector => OID_INT2VECTOR,
        DataType::OidVector => OID_OIDVECTOR,
        DataType::Oid => OID_OID,
        DataType::PgChar => OID_CHAR,
        DataType::Name => OID_NAME,
        DataType::Record(_) => OID_RECORD,
        DataType::Reg(k) => walden_sql::reg_type_oid(*k) as u32,
    }
}

/// `pg_type.typlen` of a Walden type (-1: variable length).
pub fn type_size(t: &DataType) -> i16 {
    match t {
        DataType::SmallInt => 2,
        DataType::Int | DataType::Oid | DataType::Reg(_) => 4,
        DataType::BigInt => 8,
        DataType::Bool | DataType::PgChar => 1,
        DataType::Name => 64,
        DataType::Real => 4,
        DataType::Double => 8,
        DataType::Timestamp => 8,
        DataType::Date => 4,
        DataType::Uuid => 16,
        DataType::TimestampTz | DataType::Time => 8,
        DataType::Interval => 16,
        // An enum value is its label's OID in PostgreSQL.
        DataType::Enum(_) => 4,
        DataType::Decimal { .. }
        | DataType::Varchar(_)
        | DataType::Text
        | DataType::Bytes
        | DataType::Char(_)
        | DataType::Json
        | DataType::Jsonb
        | DataType::Array(_)
        | DataType::Int2Vector
        | DataType::OidVector
        | DataType::Record(_) => -1,
    }
}

/// The type modifier PostgreSQL reports for a column of this type.
pub fn type_modifier(t: &DataType) -> i32 {
    match t {
        DataType::Array(e) => type_modifier(e),
        DataType::Varchar(Some(n)) => *n as i32 + 4,
        // Char(0) is bpchar without a length.
        DataType::Char(n) if *n > 0 => *n as i32 + 4,
        DataType::Decimal { precision, scale } if *precision > 0 => {
            ((*precision as i32) << 16 | (*scale as i32 & 0x7ff)) + 4
        }
        _ => -1,
    }
}

/// The Walden type a client-specified parameter OID (in Parse) asks for;
/// `None` lets the SQL layer infer it.
pub fn oid_to_type(oid: u32) -> Option<DataType> {
    Some(match oid {
        OID_INT2 => DataType::SmallInt,
        OID_INT4 => DataType::Int,
        OID_OID => DataType::Oid,
        OID_INT8 => DataType::BigInt,
        OID_BOOL => DataType::Bool,
        OID_FLOAT4 => DataType::Real,
        OID_FLOAT8 => DataType::Double,
        OID_VARCHAR | OID_BPCHAR => DataType::Varchar(None),
        OID_TEXT => DataType::Text,
        OID_NAME => DataType::Name,
        OID_CHAR => DataType::PgChar,
        OID_TIMESTAMP => DataType::Timestamp,
        OID_TIMESTAMPTZ => DataType::TimestampTz,
        OID_TIME => DataType::Time,
        OID_INTERVAL => DataType::Interval,
        OID_DATE => DataType::Date,
        OID_UUID => DataType::Uuid,
        OID_BYTEA => DataType::Bytes,
        OID_JSON => DataType::Json,
        OID_JSONB => DataType::Jsonb,
        other => DataType::Array(Box::new(oid_to_type(array::elem_oid_of(other)?)?)),
    })
}

fn fmt_float(x: f64, single: bool) -> String {
    walden_engine::types::float_text::format_float(x, single)
}

/// Appends the PostgreSQL text form of `v` (not NULL) as a column of type `t`.
pub fn encode_text(v: &Value, t: &DataType, buf: &mut BytesMut) {
    use std::fmt::Write;
    if let DataType::Array(e) = t {
        return crate::pgarray::encode_array_text(v, e, buf);
    }
    if let DataType::Record(fields) = t {
        return crate::pgrecord::encode_record_text(v, fields, buf);
    }
    // int2vector and oidvector: the elements separated by spaces.
    if let (DataType::Int2Vector | DataType::OidVector, Value::Array(items)) = (t, v) {
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                buf.put_u8(b' ');
            }
            let _ = write!(BytesMutWriter(buf), "{x}");
        }
        return;
    }
    match v {
        Value::Text(s) => buf.put_slice(s.as_bytes()),
        Value::Float(x) => buf.put_slice(fmt_float(*x, matches!(t, DataType::Real)).as_bytes()),
        Value::Int(i) if matches!(t, DataType::Bool) => {
            buf.put_u8(if *i != 0 { b't' } else { b'f' })
        }
        other => {
            let _ = write!(BytesMutWriter(buf), "{other}");
        }
    }
}

struct BytesMutWriter<'a>(&'a mut BytesMut);
impl std::fmt::Write for BytesMutWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.put_slice(s.as_bytes());
        Ok(())
    }
}

fn as_i64(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Reg(_, oid, _) => Ok(*oid as i64),
        Value::Bool(b) => Ok(*b as i64),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(*f as i64),
        Value::Decimal(d) => d
            .to_integer(i64::MIN, i64::MAX, "bigint")
            .map_err(|e| e.to_string()),
        Value::Text(s) => s.trim().parse().map_err(|_| format!("not an integer: {s}")),
        other => Err(format!("cannot send {other:?} as an integer")),
    }
}

fn as_f64(v: &Value) -> Result<f64, String> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(i) => Ok(*i as f64),
        Value::Decimal(d) => Ok(d.to_f64()),
        Value::Text(s) => s.trim().parse().map_err(|_| format!("not a number: {s}")),
        other => Err(format!("cannot send {other:?} as a float")),
    }
}

fn as_decimal(v: &Value) -> Result<Numeric, String> {
    match v {
        Value::Decimal(d) => Ok(d.clone()),
        Value::Int(i) => Ok(Numeric::from(*i)),
        Value::Float(f) => {
            walden_engine::types::float_to_numeric(*f, 15).map_err(|e| e.to_string())
        }
        Value::Text(s) => walden_engine::types::parse_numeric(s)
            .ok()
            .flatten()
            .ok_or_else(|| format!("not a number: {s}")),
        other => Err(format!("cannot send {other:?} as numeric")),
    }
}

/// Appends the PostgreSQL binary form of `v` (not NULL) as a column of type `t`.
pub fn encode_binary(v: &Value, t: &DataType, buf: &mut BytesMut) -> Result<(), String> {
    let range = |what: &str| format!("value out of range for {what}");
    match t {
        DataType::SmallInt => {
            buf.put_i16(i16::try_from(as_i64(v)?).map_err(|_| range("smallint"))?)
        }
        DataType::Int => buf.put_i32(i32::try_from(as_i64(v)?).map_err(|_| range("integer"))?),
        DataType::BigInt => buf.put_i64(as_i64(v)?),
        // A reg type sends its OID, as PostgreSQL's regclasssend.
        DataType::Oid | DataType::Reg(_) => {
            buf.put_u32(u32::try_from(as_i64(v)?).map_err(|_| range("oid"))?)
        }
        DataType::Bool => match v {
            Value::Bool(b) => buf.put_u8(*b as u8),
            other => buf.put_u8((as_i64(other)? != 0) as u8),
        },
        DataType::Real => buf.put_f32(as_f64(v)? as f32),
        DataType::Double => buf.put_f64(as_f64(v)?),
        DataType::Decimal { .. } => {
            numeric_send(&as_decimal(v)?, buf);
        }
        // A "char" is its byte, as PostgreSQL's charsend.
        DataType::Varchar(_) | DataType::Text | DataType::PgChar | DataType::Name => {
            encode_text(v, t, buf)
        }
        DataType::Timestamp => match v {
            Value::Timestamp(us) => buf.put_i64(ts_send(*us)),
            Value::Date(d @ (i32::MAX | i32::MIN)) => {
                buf.put_i64(if *d == i32::MAX { i64::MAX } else { i64::MIN })
            }
            Value::Date(d) => buf.put_i64(*d as i64 * 86_400_000_000 - PG_EPOCH_OFFSET_US),
            Value::TimestampTz(us) => {
                buf.put_i64(walden_engine::types::datetime::tz_to_local(*us) - PG_EPOCH_OFFSET_US)
            }
            other => return Err(format!("cannot send {other:?} as a timestamp")),
        },
        // An instant: UTC microseconds since 2000-01-01, whatever the zone.
        DataType::TimestampTz => match v {
            Value::TimestampTz(us) => buf.put_i64(ts_send(*us)),
            Value::Timestamp(_) | Value::Date(_) => {
                match walden_engine::types::coerce(v.clone(), &DataType::TimestampTz) {
                    Ok(Value::TimestampTz(us)) => buf.put_i64(ts_send(us)),
                    _ => return Err(format!("cannot send {v:?} as a timestamptz")),
                }
            }
            other => return Err(format!("cannot send {other:?} as a timestamptz")),
        },
        DataType::Time => match v {
            Value::Time(us) => buf.put_i64(*us),
            other => return Err(format!("cannot send {other:?} as a time")),
        },
        DataType::Interval => match v {
            Value::Interval(i) => {
                buf.put_i64(i.micros);
                buf.put_i32(i.days);
                buf.put_i32(i.months);
            }
            other => return Err(format!("cannot send {other:?} as an interval")),
        },
        // An enum's binary form is its label, as PostgreSQL's enum_send.
        DataType::Char(_) | DataType::Json | DataType::Enum(_) => encode_text(v, t, buf),
        // jsonb's binary form: a version byte (1), then the text.
        DataType::Jsonb => {
            buf.put_u8(1);
            encode_text(v, t, buf);
        }
        DataType::Date => match v {
            Value::Date(d) => buf.put_i32(date_send(*d)),
            Value::Timestamp(us) => {
                buf.put_i32(us.div_euclid(86_400_000_000) as i32 - PG_EPOCH_OFFSET_DAYS)
            }
            other => return Err(format!("cannot send {other:?} as a date")),
        },
        DataType::Uuid => match v {
            Value::Uuid(u) => buf.put_u128(*u),
            other => return Err(format!("cannot send {other:?} as a uuid")),
        },
        DataType::Bytes => match v {
            Value::Bytes(b) => buf.put_slice(b),
            Value::Text(s) => buf.put_slice(s.as_bytes()),
            other => return Err(format!("cannot send {other:?} as bytea")),
        },
        DataType::Array(e) => crate::pgarray::encode_array_binary(v, e, buf)?,
        DataType::Int2Vector => {
            crate::pgarray::encode_array_binary_as(v, &DataType::SmallInt, OID_INT2, 0, buf)?
        }
        DataType::OidVector => {
            crate::pgarray::encode_array_binary_as(v, &DataType::Oid, OID_OID, 0, buf)?
        }
        DataType::Record(fields) => crate::pgrecord::encode_record_binary(v, fields, buf)?,
    }
    Ok(())
}

/// Appends one field of a DataRow (length prefix and value) to `buf`.
pub fn encode_field(
    v: &Value,
    t: &DataType,
    binary: bool,
    buf: &mut BytesMut,
) -> Result<(), String> {
    if v.is_null() {
        buf.put_i32(-1);
        return Ok(());
    }
    let at = buf.len();
    buf.put_i32(0);
    if binary {
        encode_binary(v, t, buf)?;
    } else {
        encode_text(v, t, buf);
    }
    let len = (buf.len() - at - 4) as i32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

fn invalid(type_name: &str, s: &str) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidText,
        format!("invalid input syntax for type {type_name}: \"{s}\""),
    )
}

fn out_of_range(type_name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::DatetimeOverflow,
        format!("{type_name} out of range"),
    )
}

fn bad_binary(type_name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::InvalidText,
        format!("incorrect binary data format in bind parameter of type {type_name}"),
    )
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "on" | "1" => Some(true),
        "f" | "false" | "n" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// Decodes a text-format parameter as a value of the type with `oid` (the one
/// the client declared or was told in ParameterDescription).
pub fn decode_text_param(s: &str, oid: u32) -> Result<Value, SqlError> {
    refuse_nul(s)?;
    Ok(match oid {
        OID_INT2 | OID_INT4 | OID_INT8 => {
            let name = match oid {
                OID_INT2 => "smallint",
                OID_INT8 => "bigint",
                _ => "integer",
            };
            Value::Int(s.trim().parse().map_err(|_| invalid(name, s))?)
        }
        OID_OID => walden_engine::types::coerce(Value::text(s), &DataType::Oid)
            .map_err(|_| invalid("oid", s))?,
        OID_BOOL => Value::Bool(parse_bool(s).ok_or_else(|| invalid("boolean", s))?),
        OID_FLOAT4 | OID_FLOAT8 => {
            let single = oid == OID_FLOAT4;
            let name = if single { "real" } else { "double precision" };
            Value::Float(
                walden_engine::types::float_text::parse_float(s, single).map_err(|e| match e {
                    walden_engine::types::float_text::FloatInputError::Syntax => invalid(name, s),
                    walden_engine::types::float_text::FloatInputError::Range => SqlError::new(
                        ErrorKind::NumericOutOfRange,
                        format!("\"{}\" is out of range for type {name}", s.trim()),
                    ),
                })?,
            )
        }
        OID_NUMERIC => {
            let d = walden_engine::types::parse_numeric(s)
                .map_err(SqlError::from)?
                .ok_or_else(|| invalid("numeric", s))?;
            Value::Decimal(d)
        }
        OID_TIMESTAMP => {
            Value::Timestamp(parse_timestamp(s).ok_or_else(|| invalid("timestamp", s))?)
        }
        // Read in the session zone unless the text names one.
        OID_TIMESTAMPTZ => Value::TimestampTz(
            datetime::parse_timestamptz(s).ok_or_else(|| invalid("timestamp with time zone", s))?,
        ),
        OID_TIME => Value::Time(datetime::parse_time(s).ok_or_else(|| invalid("time", s))?),
        OID_INTERVAL => Value::Interval(
            walden_engine::types::interval::parse_interval(s)
                .ok_or_else(|| invalid("interval", s))?,
        ),
        OID_DATE => Value::Date(parse_date(s).ok_or_else(|| invalid("date", s))?),
        OID_UUID => Value::Uuid(
            uuid::Uuid::parse_str(s.trim())
                .map_err(|_| invalid("uuid", s))?
                .as_u128(),
        ),
        OID_BYTEA => Value::Bytes(Arc::from(
            walden_engine::types::parse_bytea(s).map_err(SqlError::from)?,
        )),
        OID_NAME => Value::text(walden_engine::types::truncate_name(s)),
        OID_JSON | OID_JSONB => json_param(s, oid)?,
        other => match oid_to_type(other) {
            // An array literal, each element read as its type's text.
            Some(t @ DataType::Array(_)) => {
                walden_engine::types::coerce(Value::text(s), &t).map_err(SqlError::from)?
            }
            _ => Value::Text(Arc::from(s)),
        },
    })
}

/// A json or jsonb parameter from its text.
fn json_param(s: &str, oid: u32) -> Result<Value, SqlError> {
    let t = if oid == OID_JSON {
        DataType::Json
    } else {
        DataType::Jsonb
    };
    walden_engine::types::coerce(Value::text(s), &t).map_err(SqlError::from)
}

/// Decodes a binary-format parameter of the type with `oid`.
pub fn decode_binary_param(b: &[u8], oid: u32) -> Result<Value, SqlError> {
    let int = |b: &[u8], name: &str| -> Result<i64, SqlError> {
        Ok(match b.len() {
            2 => i16::from_be_bytes([b[0], b[1]]) as i64,
            4 => i32::from_be_bytes(b.try_into().unwrap()) as i64,
            8 => i64::from_be_bytes(b.try_into().unwrap()),
            _ => return Err(bad_binary(name)),
        })
    };
    Ok(match oid {
        OID_INT2 => Value::Int(int(b, "smallint")?),
        OID_INT4 => Value::Int(int(b, "integer")?),
        // Unsigned on the wire.
        OID_OID => match b.len() {
            4 => Value::Int(u32::from_be_bytes(b.try_into().unwrap()) as i64),
            _ => return Err(bad_binary("oid")),
        },
        OID_INT8 => Value::Int(int(b, "bigint")?),
        OID_BOOL => match b {
            [x] => Value::Bool(*x != 0),
            _ => return Err(bad_binary("boolean")),
        },
        OID_FLOAT4 | OID_FLOAT8 => Value::Float(match b.len() {
            4 => f32::from_be_bytes(b.try_into().unwrap()) as f64,
            8 => f64::from_be_bytes(b.try_into().unwrap()),
            _ => return Err(bad_binary("double precision")),
        }),
        OID_NUMERIC => {
            check_numeric_recv(b)?;
            Value::Decimal(numeric_recv(b)?)
        }
        OID_TIMESTAMP => match b.len() {
            8 => Value::Timestamp(
                ts_recv(i64::from_be_bytes(b.try_into().unwrap()))
                    .ok_or_else(|| out_of_range("timestamp"))?,
            ),
            _ => return Err(bad_binary("timestamp")),
        },
        OID_TIMESTAMPTZ => match b.len() {
            8 => Value::TimestampTz(
                ts_recv(i64::from_be_bytes(b.try_into().unwrap()))
                    .ok_or_else(|| out_of_range("timestamp with time zone"))?,
            ),
            _ => return Err(bad_binary("timestamp with time zone")),
        },
        OID_TIME => match b.len() {
            8 => match i64::from_be_bytes(b.try_into().unwrap()) {
                t @ 0..=86_400_000_000 => Value::Time(t),
                _ => return Err(bad_binary("time")),
            },
            _ => return Err(bad_binary("time")),
        },
        OID_INTERVAL => match b.len() {
            16 => Value::Interval(walden_engine::types::Interval::new(
                i32::from_be_bytes(b[12..16].try_into().unwrap()),
                i32::from_be_bytes(b[8..12].try_into().unwrap()),
                i64::from_be_bytes(b[0..8].try_into().unwrap()),
            )),
            _ => return Err(bad_binary("interval")),
        },
        OID_DATE => match b.len() {
            // Checked: a day count near i32's ends overflowed (found by the
            // copy_binary fuzz target).
            4 => Value::Date(match i32::from_be_bytes(b.try_into().unwrap()) {
                d @ (i32::MAX | i32::MIN) => d,
                d => d
                    .checked_add(PG_EPOCH_OFFSET_DAYS)
                    .filter(|d| *d != i32::MAX)
                    .ok_or_else(|| out_of_range("date"))?,
            }),
            _ => return Err(bad_binary("date")),
        },
        OID_UUID => match b.len() {
            16 => Value::Uuid(u128::from_be_bytes(b.try_into().unwrap())),
            _ => return Err(bad_binary("uuid")),
        },
        OID_BYTEA => Value::Bytes(Arc::from(b)),
        OID_JSON => {
            let s = std::str::from_utf8(b).map_err(|_| bad_binary("json"))?;
            json_param(s, oid)?
        }
        OID_JSONB => match b.split_first() {
            Some((1, rest)) => {
                let s = std::str::from_utf8(rest).map_err(|_| bad_binary("jsonb"))?;
                json_param(s, oid)?
            }
            Some((v, _)) => {
                return Err(SqlError::new(
                    ErrorKind::InvalidText,
                    format!("unsupported jsonb version number {v}"),
                ))
            }
            None => return Err(bad_binary("jsonb")),
        },
        other => match array::elem_oid_of(other).or_else(|| {
            // An enum array: its elements come as labels (read as text,
            // made the enum's values where they are used).
            match walden_sql::decode_enum_oid(other as i64) {
                Some((id, true)) => Some(walden_sql::enum_oid(id) as u32),
                _ => None,
            }
        }) {
            Some(elem) => crate::pgarray::decode_array_binary(b, elem)?,
            None => {
                let s = std::str::from_utf8(b).map_err(|_| bad_binary("text"))?;
                refuse_nul(s)?;
                Value::Text(Arc::from(s))
            }
        },
    })
}

/// PostgreSQL's text cannot hold a NUL byte (a C string ends there): it
/// refuses one in a parameter rather than store what it cannot give back.
fn refuse_nul(s: &str) -> Result<(), SqlError> {
    if s.contains('\0') {
        return Err(SqlError::new(
            walden_sql::ErrorKind::CharacterNotInRepertoire,
            "invalid byte sequence for encoding \"UTF8\": 0x00",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numeric_beyond_decimal_is_refused_not_a_panic() {
        // Found by fuzz/fuzz_targets/copy_binary.rs: rust_decimal's reader
        // panicked on a large weight (also a Bind parameter's path).
        // No digits with a weight is zero (PostgreSQL's numeric_recv too).
        assert_eq!(
            decode_binary_param(&[0u8, 0, 0, 7, 0, 0, 0, 0], OID_NUMERIC)
                .unwrap()
                .to_string(),
            "0"
        );
        // A large weight is a large number, not a panic.
        assert_eq!(
            decode_binary_param(&[0u8, 1, 0, 9, 0, 0, 0, 0, 0, 1], OID_NUMERIC)
                .unwrap()
                .to_string(),
            format!("1{}", "0".repeat(36))
        );
        for b in [
            &[0u8, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10][..],
            &[0, 1, 0, 0, 0x12, 0, 0, 0, 0, 1],
            &[0, 2, 0, 0, 0, 0, 0, 0, 0, 1],
        ] {
            assert!(decode_binary_param(b, OID_NUMERIC).is_err(), "{b:?}");
        }
        // A day count or timestamp near the type's end overflowed the epoch
        // shift; the ends themselves are +-infinity, as PostgreSQL sends them.
        assert!(decode_binary_param(&[0x7f, 0xff, 0xff, 0xfe], OID_DATE).is_err());
        assert!(decode_binary_param(
            &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe],
            OID_TIMESTAMP
        )
        .is_err());
        assert_eq!(
            decode_binary_param(&[0x7f, 0xff, 0xff, 0xff], OID_DATE).unwrap(),
            Value::Date(i32::MAX)
        );
        assert_eq!(
            decode_binary_param(&[0x80, 0, 0, 0, 0, 0, 0, 0], OID_TIMESTAMP).unwrap(),
            Value::Timestamp(i64::MIN)
        );
        let v = decode_binary_param(&[0, 2, 0, 0, 0x40, 0, 0, 2, 0, 12, 0x0b, 0xb8], OID_NUMERIC);
        assert_eq!(v.unwrap().to_string(), "-12.30");
    }

    /// A numeric's binary form: ndigits, weight, sign, dscale, then the
    /// base-10000 digits.
    fn numeric_bytes(weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [digits.len() as u16, weight as u16, sign, dscale]
            .into_iter()
            .chain(digits.iter().copied())
        {
            b.extend_from_slice(&w.to_be_bytes());
        }
        b
    }

    #[test]
    fn a_numeric_is_sent_as_postgres_sends_it() {
        for (text, want) in [
            ("1.50", numeric_bytes(0, 0, 2, &[1, 5000])),
            ("0.00", numeric_bytes(0, 0, 2, &[])),
            ("0", numeric_bytes(0, 0, 0, &[])),
            ("-123456.7", numeric_bytes(1, 0x4000, 1, &[12, 3456, 7000])),
            ("10000", numeric_bytes(1, 0, 0, &[1])),
            ("0.00012", numeric_bytes(-1, 0, 5, &[1, 2000])),
            ("0.0000000001", numeric_bytes(-3, 0, 10, &[100])),
            (
                "7922816251426433759354395033",
                numeric_bytes(6, 0, 0, &[7922, 8162, 5142, 6433, 7593, 5439, 5033]),
            ),
            // Beyond 28 digits, and the special values (PostgreSQL 15's
            // numeric_send for each).
            (
                "123456789012345678901234567890.123",
                numeric_bytes(
                    7,
                    0,
                    3,
                    &[12, 3456, 7890, 1234, 5678, 9012, 3456, 7890, 1230],
                ),
            ),
            ("NaN", numeric_bytes(0, 0xC000, 0, &[])),
            ("Infinity", numeric_bytes(0, 0xD000, 32, &[])),
            ("-Infinity", numeric_bytes(0, 0xF000, 32, &[])),
        ] {
            let d: Numeric = text.parse().unwrap();
            let mut b = BytesMut::new();
            numeric_send(&d, &mut b);
            assert_eq!(b.to_vec(), want, "{text}");
            // And back, unchanged (display scale included).
            assert_eq!(
                decode_binary_param(&b, OID_NUMERIC).unwrap().to_string(),
                text
            );
        }
    }

    #[test]
    fn a_binary_numeric_is_read_exactly_or_refused() {
        let read = |w, sign, dscale, d: &[u16]| {
            decode_binary_param(&numeric_bytes(w, sign, dscale, d), OID_NUMERIC)
        };
        for (w, sign, dscale, d, want) in [
            // 28 digits after the point: kept, not rounded.
            (
                -1,
                0,
                28,
                &[1234, 5678, 9012, 3456, 7890, 1234, 5678][..],
                "0.1234567890123456789012345678",
            ),
            // The display scale is kept (1.50 stays 1.50).
            (0, 0, 2, &[1, 5000], "1.50"),
            (0, 0, 0, &[7], "7"),
            (1, 0x4000, 1, &[12, 3456, 7000], "-123456.7"),
            // Digits past the display scale are dropped, as numeric_recv does.
            (0, 0, 1, &[1, 9999], "1.9"),
            (-2, 0, 4, &[5], "0.0000"),
            (0, 0x4000, 0, &[], "0"),
            (
                6,
                0,
                0,
                &[7922, 8162, 5142, 6433, 7593, 5439, 5033],
                "7922816251426433759354395033",
            ),
        ] {
            assert_eq!(read(w, sign, dscale, d).unwrap().to_string(), want, "{d:?}");
        }
        for (w, sign, dscale, d, want) in [
            // 32 digits: kept (rust_decimal's reader rounded them to 28).
            (
                -1,
                0,
                32,
                &[1234, 5678, 9012, 3456, 7890, 1234, 5678, 9012][..],
                "0.12345678901234567890123456789012",
            ),
            // A display scale over 28 (1.500...0 at 30 places).
            (0, 0, 30, &[1, 5000], "1.500000000000000000000000000000"),
            (0, 0xC000, 0, &[], "NaN"),
            (0, 0xD000, 0, &[], "Infinity"),
            (0, 0xF000, 0, &[], "-Infinity"),
        ] {
            assert_eq!(read(w, sign, dscale, d).unwrap().to_string(), want, "{d:?}");
        }
        let e = read(0, 0, 0x4000, &[1]).unwrap_err();
        assert_eq!(e.kind, walden_sql::ErrorKind::BadBinaryValue);
    }

    fn field(v: &Value, t: &DataType, binary: bool) -> Vec<u8> {
        let mut b = BytesMut::new();
        encode_field(v, t, binary, &mut b).unwrap();
        b.to_vec()
    }

    #[test]
    fn a_nul_in_a_text_parameter_is_refused_with_22021() {
        for r in [
            decode_text_param("a\0b", OID_TEXT),
            decode_binary_param(b"a\0b", OID_TEXT),
        ] {
            let e = r.unwrap_err();
            assert_eq!(e.kind, walden_sql::ErrorKind::CharacterNotInRepertoire);
        }
        assert!(decode_text_param("ab", OID_TEXT).is_ok());
    }

    #[test]
    fn text_encoding() {
        assert_eq!(&field(&Value::Int(42), &DataType::Int, false)[4..], b"42");
        assert_eq!(
            &field(&Value::Bool(true), &DataType::Bool, false)[4..],
            b"t"
        );
        assert_eq!(
            &field(&Value::Float(0.1f32 as f64), &DataType::Real, false)[4..],
            b"0.1"
        );
        assert_eq!(
            &field(&Value::Float(f64::INFINITY), &DataType::Double, false)[4..],
            b"Infinity"
        );
        assert_eq!(
            field(&Value::Null, &DataType::Int, false),
            (-1i32).to_be_bytes()
        );
        assert_eq!(
            &field(
                &Value::Bytes(Arc::from(&[1u8, 0xab][..])),
                &DataType::Bytes,
                false
            )[4..],
            b"\\x01ab"
        );
    }

    #[test]
    fn binary_round_trips() {
        let cases = [
            (Value::Int(-7), DataType::SmallInt, OID_INT2),
            (Value::Int(123456), DataType::Int, OID_INT4),
            (Value::Int(1 << 40), DataType::BigInt, OID_INT8),
            (Value::Bool(true), DataType::Bool, OID_BOOL),
            (Value::Float(1.5), DataType::Real, OID_FLOAT4),
            (Value::Float(-2.25), DataType::Double, OID_FLOAT8),
            (
                Value::Decimal("12345.678".parse().unwrap()),
                DataType::Decimal {
                    precision: 10,
                    scale: 3,
                },
                OID_NUMERIC,
            ),
            (Value::text("héllo"), DataType::Text, OID_TEXT),
            (
                Value::Timestamp(1_700_000_000_123_456),
                DataType::Timestamp,
                OID_TIMESTAMP,
            ),
            (Value::Date(19_000), DataType::Date, OID_DATE),
            (
                Value::TimestampTz(1_700_000_000_123_456),
                DataType::TimestampTz,
                OID_TIMESTAMPTZ,
            ),
            (Value::Time(45_296_500_000), DataType::Time, OID_TIME),
            (
                Value::Interval(walden_engine::types::Interval::new(14, -3, 3_723_000_001)),
                DataType::Interval,
                OID_INTERVAL,
            ),
            (
                Value::Uuid(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
                DataType::Uuid,
                OID_UUID,
            ),
            (
                Value::Bytes(Arc::from(&b"\x00\x01"[..])),
                DataType::Bytes,
                OID_BYTEA,
            ),
        ];
        for (v, t, oid) in cases {
            assert_eq!(type_oid(&t), oid);
            let f = field(&v, &t, true);
            let back = decode_binary_param(&f[4..], oid).unwrap();
            assert_eq!(format!("{back}"), format!("{v}"), "{t:?}");
            let text = field(&v, &t, false);
            let back = decode_text_param(std::str::from_utf8(&text[4..]).unwrap(), oid).unwrap();
            assert_eq!(format!("{back}"), format!("{v}"), "{t:?} text");
        }
    }

    #[test]
    fn text_params() {
        assert!(
            matches!(decode_text_param("abc", OID_INT4), Err(e) if e.kind == ErrorKind::InvalidText)
        );
        assert!(matches!(
            decode_text_param("yes", OID_BOOL),
            Ok(Value::Bool(true))
        ));
        assert!(matches!(
            decode_text_param("1e3", OID_NUMERIC),
            Ok(Value::Decimal(_))
        ));
        assert!(matches!(
            decode_text_param("x", OID_UNKNOWN),
            Ok(Value::Text(_))
        ));
        match decode_text_param("\\x00ff", OID_BYTEA).unwrap() {
            Value::Bytes(b) => assert_eq!(&b[..], &[0, 255]),
            other => panic!("{other:?}"),
        }
    }
}
