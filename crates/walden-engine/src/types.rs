//! Column types and values.

use crate::error::{EngineError, Result};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub mod array;
mod bytea;
pub mod datetime;
pub mod enums;
pub mod interval;
pub mod jsonb;
pub mod zone;

pub use bytea::parse_bytea;
pub use enums::{EnumLabel, EnumRef, EnumType};
pub use interval::Interval;
pub use jsonb::Jsonb;

/// A column type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    SmallInt,
    Int,
    BigInt,
    Bool,
    Real,
    Double,
    /// `DECIMAL(precision, scale)`.
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// `VARCHAR(n)`; `None` means unbounded.
    Varchar(Option<u32>),
    Text,
    /// Microseconds since 1970-01-01 00:00:00 (no time zone).
    Timestamp,
    /// Days since 1970-01-01.
    Date,
    Uuid,
    Bytes,
    /// UTC microseconds since 1970-01-01, shown in the session's zone.
    TimestampTz,
    /// Microseconds since midnight.
    Time,
    Interval,
    /// `CHAR(n)`: blank-padded to n characters.
    Char(u32),
    /// `json`: the input text, validated.
    Json,
    /// `jsonb`: a normalized tree.
    Jsonb,
    /// A one-dimensional array of a scalar type (`integer[]`).
    Array(Box<DataType>),
    /// A user-defined enum type.
    Enum(EnumRef),
    /// PostgreSQL's `int2vector` (pg_index.indkey): smallints, subscripts
    /// from 0, shown space-separated. Values are `Value::Array`.
    Int2Vector,
    /// PostgreSQL's `oidvector` (pg_index.indclass, pg_proc.proargtypes).
    OidVector,
    /// PostgreSQL's `oid`: an unsigned 32-bit object identifier (catalog
    /// keys). Values are `Value::Int` in 0..=4294967295.
    Oid,
    /// PostgreSQL's one-byte `"char"` (catalog codes such as relkind and
    /// typtype). Values are `Value::Text` of at most one character.
    PgChar,
    /// PostgreSQL's `name` (catalog identifiers such as relname): text of
    /// at most 63 bytes, longer input cut there. Values are `Value::Text`.
    Name,
    /// An anonymous record (`ROW(...)`, a multi-column function's row):
    /// its fields' names and types. Values are `Value::Array` of the
    /// fields; no table column has this type (PostgreSQL refuses it too).
    Record(Vec<(String, DataType)>),
    /// `regclass`, `regtype`, `regnamespace`: an OID shown as the name of
    /// what it identifies. Values are `Value::Reg` (or a bare `Value::Int`
    /// OID, shown as its digits).
    Reg(RegKind),
}

/// Which catalog a reg type's OIDs identify rows of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegKind {
    Class,
    Type,
    Namespace,
}

impl RegKind {
    pub fn sql_name(self) -> &'static str {
        match self {
            RegKind::Class => "regclass",
            RegKind::Type => "regtype",
            RegKind::Namespace => "regnamespace",
        }
    }
}

impl DataType {
    /// The PostgreSQL name of the type.
    pub fn sql_name(&self) -> String {
        match self {
            DataType::SmallInt => "smallint".into(),
            DataType::Int => "integer".into(),
            DataType::BigInt => "bigint".into(),
            DataType::Bool => "boolean".into(),
            DataType::Real => "real".into(),
            DataType::Double => "double precision".into(),
            DataType::Decimal { precision, scale } => format!("numeric({precision},{scale})"),
            DataType::Varchar(Some(n)) => format!("varchar({n})"),
            DataType::Varchar(None) => "varchar".into(),
            DataType::Text => "text".into(),
            DataType::Timestamp => "timestamp".into(),
            DataType::Date => "date".into(),
            DataType::Uuid => "uuid".into(),
            DataType::Bytes => "bytea".into(),
            DataType::TimestampTz => "timestamp with time zone".into(),
            DataType::Time => "time without time zone".into(),
            DataType::Interval => "interval".into(),
            DataType::Char(n) => format!("character({n})"),
            DataType::Json => "json".into(),
            DataType::Jsonb => "jsonb".into(),
            DataType::Array(e) => format!("{}[]", e.sql_name()),
            DataType::Enum(e) => e.name.clone(),
            DataType::Int2Vector => "int2vector".into(),
            DataType::OidVector => "oidvector".into(),
            DataType::Oid => "oid".into(),
            DataType::PgChar => "\"char\"".into(),
            DataType::Name => "name".into(),
            DataType::Record(_) => "record".into(),
            DataType::Reg(k) => k.sql_name().into(),
        }
    }

    /// The element type of an array or vector type.
    pub fn element(&self) -> Option<DataType> {
        match self {
            DataType::Array(e) => Some((**e).clone()),
            DataType::Int2Vector => Some(DataType::SmallInt),
            DataType::OidVector => Some(DataType::Oid),
            _ => None,
        }
    }

    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            DataType::SmallInt | DataType::Int | DataType::BigInt | DataType::Oid
        )
    }
}

/// A value.
#[derive(Clone, Debug, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Decimal(Decimal),
    Text(Arc<str>),
    Timestamp(i64),
    Date(i32),
    Uuid(u128),
    Bytes(Arc<[u8]>),
    /// UTC microseconds since 1970-01-01.
    TimestampTz(i64),
    /// Microseconds since midnight.
    Time(i64),
    Interval(Interval),
    /// A `json` value: its text as given.
    Json(Arc<str>),
    Jsonb(Arc<Jsonb>),
    /// A one-dimensional array: elements of its element type, or NULL.
    Array(Arc<[Value]>),
    /// An enum value: its label's sort position (see `types/enums.rs`)
    /// and the label.
    Enum(f64, Arc<str>),
    /// A reg type's value: the OID, and the name it shows as, looked up
    /// when the value was made (as PostgreSQL's output function looks it
    /// up). It is a number: it compares, sorts and hashes as its OID.
    Reg(RegKind, u32, Arc<str>),
}

impl Value {
    pub fn text(s: impl AsRef<str>) -> Value {
        Value::Text(Arc::from(s.as_ref()))
    }
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Reg(_, oid, _) => Some(*oid as i64),
            _ => None,
        }
    }
    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) | Value::Decimal(_) | Value::Reg(..) => 2,
            Value::Text(_) => 3,
            Value::Timestamp(_) => 4,
            Value::Date(_) => 5,
            Value::Uuid(_) => 6,
            Value::Bytes(_) => 7,
            Value::TimestampTz(_) => 8,
            Value::Time(_) => 9,
            Value::Interval(_) => 10,
            Value::Json(_) => 11,
            Value::Jsonb(_) => 12,
            Value::Array(_) => 13,
            Value::Enum(..) => 14,
        }
    }
    fn as_f64(&self) -> f64 {
        match self {
            Value::Int(i) => *i as f64,
            Value::Reg(_, oid, _) => *oid as f64,
            Value::Float(f) => *f,
            Value::Decimal(d) => d.to_f64().unwrap_or(f64::NAN),
            _ => f64::NAN,
        }
    }
}

impl Ord for Value {
    /// A total order: NULL first, then by type, numbers compared by value.
    fn cmp(&self, other: &Self) -> Ordering {
        use Value::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Decimal(a), Decimal(b)) => a.cmp(b),
            (Int(a), Decimal(b)) => rust_decimal::Decimal::from(*a).cmp(b),
            (Decimal(a), Int(b)) => a.cmp(&rust_decimal::Decimal::from(*b)),
            (Text(a), Text(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Uuid(a), Uuid(b)) => a.cmp(b),
            (Bytes(a), Bytes(b)) => a.cmp(b),
            (TimestampTz(a), TimestampTz(b)) => a.cmp(b),
            (Time(a), Time(b)) => a.cmp(b),
            (Interval(a), Interval(b)) => a.cmp(b),
            (Json(a), Json(b)) => a.cmp(b),
            (Jsonb(a), Jsonb(b)) => a.cmp(b),
            (Array(a), Array(b)) => array::compare(a, b),
            (Enum(a, _), Enum(b, _)) => a.total_cmp(b),
            (Reg(_, a, _), Reg(_, b, _)) => a.cmp(b),
            (Reg(_, a, _), Int(b)) => (*a as i64).cmp(b),
            (Int(a), Reg(_, b, _)) => a.cmp(&(*b as i64)),
            (a, b) if a.rank() == 2 && b.rank() == 2 => a.as_f64().total_cmp(&b.as_f64()),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Equal numbers of different variants must hash alike: hash integral
        // numbers as integers, other numbers by their f64 bits.
        match self {
            Value::Null => 0u8.hash(state),
            Value::Bool(b) => b.hash(state),
            Value::Int(i) => i.hash(state),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => (*f as i64).hash(state),
            Value::Float(f) => f.to_bits().hash(state),
            Value::Decimal(d) if d.fract().is_zero() => d.to_i64().unwrap_or(i64::MAX).hash(state),
            Value::Decimal(d) => d.to_f64().unwrap_or(0.0).to_bits().hash(state),
            Value::Text(s) => s.hash(state),
            Value::Timestamp(t) => t.hash(state),
            Value::Date(d) => d.hash(state),
            Value::Uuid(u) => u.hash(state),
            Value::Bytes(b) => b.hash(state),
            Value::TimestampTz(t) => t.hash(state),
            Value::Time(t) => t.hash(state),
            // Equal spans are equal intervals ('1 mon' = '30 days').
            Value::Interval(i) => i.span().hash(state),
            Value::Json(s) => s.hash(state),
            Value::Jsonb(j) => j.hash(state),
            Value::Enum(sort, _) => sort.to_bits().hash(state),
            // As the equal Value::Int.
            Value::Reg(_, oid, _) => (*oid as i64).hash(state),
            Value::Array(items) => {
                items.len().hash(state);
                for v in items.iter() {
                    v.hash(state);
                }
            }
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "NULL"),
            Value::Bool(b) => write!(f, "{}", if *b { "t" } else { "f" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Text(s) => write!(f, "{s}"),
            Value::Timestamp(t) => write!(f, "{}", format_timestamp(*t)),
            Value::Date(d) => write!(f, "{}", format_date(*d)),
            Value::Uuid(u) => write!(f, "{}", uuid::Uuid::from_u128(*u)),
            Value::Bytes(b) => {
                write!(f, "\\x")?;
                for x in b.iter() {
                    write!(f, "{x:02x}")?;
                }
                Ok(())
            }
            Value::TimestampTz(t) => write!(f, "{}", datetime::format_timestamptz(*t)),
            Value::Time(t) => write!(f, "{}", datetime::format_time(*t)),
            Value::Interval(i) => write!(f, "{i}"),
            Value::Json(s) => f.write_str(s),
            Value::Jsonb(j) => write!(f, "{j}"),
            Value::Array(items) => f.write_str(&array::format_with(items, |v| v.to_string())),
            Value::Enum(_, label) | Value::Reg(_, _, label) => f.write_str(label),
        }
    }
}

/// A primary key (or hidden row id) value.
pub type Key = Box<[Value]>;
/// A stored row: one value per column.
pub type Row = Arc<[Value]>;

fn range_err(t: &DataType) -> EngineError {
    EngineError::OutOfRange(t.sql_name())
}

/// Converts a value to a column's type, or fails with a data error.
pub fn coerce(v: Value, t: &DataType) -> Result<Value> {
    use DataType as T;
    use Value as V;
    if v.is_null() {
        return Ok(V::Null);
    }
    let bad = |v: &Value| {
        EngineError::Data(format!(
            "invalid input syntax for type {}: \"{}\"",
            t.sql_name(),
            v
        ))
    };
    // A jsonb scalar casts to a number or boolean as PostgreSQL's
    // `jsonb::numeric` / `jsonb::bool` do; a container or a string does not.
    if let T::Array(elem) = t {
        return match v {
            V::Array(items) => Ok(V::Array(
                items
                    .iter()
                    .map(|x| coerce(x.clone(), elem))
                    .collect::<Result<Vec<_>>>()?
                    .into(),
            )),
            V::Text(s) => Ok(V::Array(array::parse(&s, elem)?.into())),
            other => Err(bad(&other)),
        };
    }
    // A record is only ever made from its fields (there is no record
    // input syntax to parse).
    if let T::Record(_) = t {
        return match v {
            V::Array(_) => Ok(v),
            other => Err(bad(&other)),
        };
    }
    // A vector's text form is its elements separated by spaces.
    if let T::Int2Vector | T::OidVector = t {
        let elem = t.element().expect("vector");
        return match v {
            V::Array(items) => Ok(V::Array(
                items
                    .iter()
                    .map(|x| coerce(x.clone(), &elem))
                    .collect::<Result<Vec<_>>>()?
                    .into(),
            )),
            V::Text(s) => Ok(V::Array(
                s.split_whitespace()
                    .map(|x| coerce(V::Text(Arc::from(x)), &elem))
                    .collect::<Result<Vec<_>>>()?
                    .into(),
            )),
            other => Err(bad(&other)),
        };
    }
    if let T::Enum(e) = t {
        return match v {
            V::Enum(_, l) | V::Text(l) => e.value_of(&l),
            other => Err(bad(&other)),
        };
    }
    let v = match (t, v) {
        (T::Text | T::Varchar(_) | T::Char(_) | T::Name, V::Reg(_, _, name)) => {
            coerce(V::Text(name), t)?
        }
        (T::Reg(k), V::Reg(_, oid, name)) => V::Reg(*k, oid, name),
        (_, V::Reg(_, oid, _)) => coerce(V::Int(oid as i64), t)?,
        // An OID alone has no name to show (a name needs the catalogs,
        // which casts look up).
        (T::Reg(_), v) => coerce(v, &T::Oid)?,
        (T::Json | T::Jsonb | T::Text | T::Varchar(_) | T::Char(_) | T::PgChar | T::Name, v) => v,
        (_, V::Jsonb(j)) => match (&*j, t) {
            (
                Jsonb::Number(n),
                T::SmallInt | T::Int | T::BigInt | T::Oid | T::Real | T::Double | T::Decimal { .. },
            ) => V::Text(Arc::from(&**n)),
            (Jsonb::Bool(b), T::Bool) => V::Bool(*b),
            (j, t) => {
                return Err(EngineError::JsonbCast {
                    kind: j.type_name(),
                    target: t.sql_name(),
                })
            }
        },
        (_, v) => v,
    };
    Ok(match (t, v) {
        (T::Json, V::Json(s)) => V::Json(s),
        (T::Json, V::Jsonb(j)) => V::Json(Arc::from(j.to_string())),
        (T::Json, V::Text(s)) => {
            jsonb::validate_json(&s).map_err(json_error)?;
            V::Json(s)
        }
        (T::Jsonb, V::Jsonb(j)) => V::Jsonb(j),
        (T::Jsonb, V::Json(s) | V::Text(s)) => {
            V::Jsonb(Arc::new(jsonb::parse_jsonb(&s).map_err(json_error)?))
        }
        (T::SmallInt | T::Int | T::BigInt | T::Oid, V::Int(i)) => {
            let (lo, hi) = match t {
                T::SmallInt => (i16::MIN as i64, i16::MAX as i64),
                T::Int => (i32::MIN as i64, i32::MAX as i64),
                // PostgreSQL reads a negative OID as its unsigned value
                // (`'-1'::oid` is 4294967295).
                T::Oid if (i32::MIN as i64..0).contains(&i) => return Ok(V::Int(i + (1 << 32))),
                T::Oid => (0, u32::MAX as i64),
                _ => (i64::MIN, i64::MAX),
            };
            if i < lo || i > hi {
                return Err(range_err(t));
            }
            V::Int(i)
        }
        (T::SmallInt | T::Int | T::BigInt | T::Oid, V::Float(f)) => {
            if !f.is_finite() || f.round() < i64::MIN as f64 || f.round() > i64::MAX as f64 {
                return Err(range_err(t));
            }
            coerce(V::Int(f.round() as i64), t)?
        }
        (T::SmallInt | T::Int | T::BigInt | T::Oid, V::Decimal(d)) => coerce(
            V::Int(
                d.round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
                    .to_i64()
                    .ok_or_else(|| range_err(t))?,
            ),
            t,
        )?,
        (T::SmallInt | T::Int | T::BigInt | T::Oid, V::Text(s)) => {
            let i: i64 = s.trim().parse().map_err(|_| bad(&V::Text(s.clone())))?;
            coerce(V::Int(i), t)?
        }
        (T::SmallInt | T::Int | T::BigInt | T::Oid, V::Bool(b)) => V::Int(b as i64),
        (T::Bool, V::Bool(b)) => V::Bool(b),
        (T::Bool, V::Int(i)) => V::Bool(i != 0),
        (T::Bool, V::Text(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "1" | "yes" | "y" | "on" => V::Bool(true),
            "f" | "false" | "0" | "no" | "n" | "off" => V::Bool(false),
            _ => return Err(bad(&V::Text(s))),
        },
        (T::Real | T::Double, V::Int(i)) => V::Float(i as f64),
        (T::Real | T::Double, V::Float(f)) => {
            V::Float(if *t == T::Real { f as f32 as f64 } else { f })
        }
        (T::Real | T::Double, V::Decimal(d)) => V::Float(d.to_f64().unwrap_or(f64::NAN)),
        (T::Real | T::Double, V::Text(s)) => {
            V::Float(s.trim().parse().map_err(|_| bad(&V::Text(s.clone())))?)
        }
        (T::Decimal { precision, scale }, v) => {
            let d = match v {
                V::Int(i) => Decimal::from(i),
                V::Decimal(d) => d,
                V::Float(f) => Decimal::try_from(f).map_err(|_| range_err(t))?,
                V::Text(ref s) => s.trim().parse::<Decimal>().map_err(|_| bad(&v))?,
                V::Bool(b) => Decimal::from(b as i64),
                other => return Err(bad(&other)),
            };
            let d = d.round_dp_with_strategy(
                *scale as u32,
                rust_decimal::RoundingStrategy::MidpointAwayFromZero,
            );
            // Digits left of the point may not exceed precision - scale.
            let int_digits = d.trunc().abs().to_string().trim_start_matches('0').len() as u32;
            if *precision > 0 && int_digits > (*precision as u32).saturating_sub(*scale as u32) {
                return Err(EngineError::NumericFieldOverflow {
                    detail: format!(
                        "A field with precision {precision}, scale {scale} must round to an absolute value less than {}.",
                        match *precision as u32 - *scale as u32 {
                            0 => "1".to_string(),
                            d => format!("10^{d}"),
                        }
                    ),
                });
            }
            // Shown with its declared scale, as PostgreSQL does (`2.00`).
            let mut d = d;
            // rust_decimal keeps at most 28 places (and panics printing more).
            if *precision > 0 && *scale <= 28 {
                d.rescale(*scale as u32);
            }
            V::Decimal(d)
        }
        // PostgreSQL keeps the first byte (here: character); '' is '\0',
        // shown as the empty string.
        // PostgreSQL cuts a longer name to 63 bytes (NAMEDATALEN - 1),
        // at a character boundary, without an error.
        (T::Name, v) => {
            let s = match v {
                V::Text(s) => s,
                other => Arc::from(other.to_string()),
            };
            V::Text(Arc::from(truncate_name(&s)))
        }
        (T::PgChar, v) => {
            let s = match v {
                V::Text(s) => s,
                other => Arc::from(other.to_string()),
            };
            match s.chars().next() {
                Some(c) if s.chars().nth(1).is_some() => V::Text(Arc::from(c.to_string())),
                _ => V::Text(s),
            }
        }
        (T::Char(n), v) => {
            let s = match v {
                V::Text(s) => s.to_string(),
                V::Bool(b) => (if b { "true" } else { "false" }).to_string(),
                other => other.to_string(),
            };
            // Trailing blanks beyond n are dropped; anything else too long
            // is an error; shorter values are padded.
            let body = s.trim_end_matches(' ');
            let len = body.chars().count();
            if len > *n as usize {
                return Err(EngineError::Data(format!(
                    "value too long for type character({n})"
                )));
            }
            let mut out = String::with_capacity(body.len() + (*n as usize - len));
            out.push_str(body);
            out.extend(std::iter::repeat_n(' ', *n as usize - len));
            V::Text(Arc::from(out))
        }
        (T::Varchar(_) | T::Text, v) => {
            let s: Arc<str> = match v {
                V::Text(s) => s,
                // boolean's output is t/f, its cast to text true/false.
                V::Bool(b) => Arc::from(if b { "true" } else { "false" }),
                other => Arc::from(other.to_string()),
            };
            if let T::Varchar(Some(n)) = t {
                // Blanks past n are cut, as PostgreSQL's; anything else is
                // an error (an explicit cast cuts before it comes here).
                if let Some((at, _)) = s.char_indices().nth(*n as usize) {
                    if s[at..].bytes().any(|b| b != b' ') {
                        return Err(EngineError::Data(format!(
                            "value too long for type character varying({n})"
                        )));
                    }
                    return Ok(V::Text(Arc::from(&s[..at])));
                }
            }
            V::Text(s)
        }
        (T::Timestamp, V::Timestamp(x)) => V::Timestamp(x),
        (T::Timestamp, V::Date(d)) => V::Timestamp(d as i64 * 86_400_000_000),
        (T::Timestamp, V::TimestampTz(x)) => V::Timestamp(datetime::tz_to_local(x)),
        (T::Timestamp, V::Text(s)) => {
            V::Timestamp(parse_timestamp(&s).ok_or_else(|| bad(&V::Text(s.clone())))?)
        }
        (T::TimestampTz, V::TimestampTz(x)) => V::TimestampTz(x),
        (T::TimestampTz, V::Timestamp(x)) => V::TimestampTz(datetime::local_to_tz(x)),
        (T::TimestampTz, V::Date(d)) => {
            V::TimestampTz(datetime::local_to_tz(d as i64 * 86_400_000_000))
        }
        (T::TimestampTz, V::Text(s)) => {
            V::TimestampTz(datetime::parse_timestamptz(&s).ok_or_else(|| bad(&V::Text(s.clone())))?)
        }
        (T::Time, V::Time(x)) => V::Time(x),
        (T::Time, V::Timestamp(x)) => V::Time(x.rem_euclid(86_400_000_000)),
        (T::Time, V::TimestampTz(x)) => {
            V::Time(datetime::tz_to_local(x).rem_euclid(86_400_000_000))
        }
        (T::Time, V::Interval(i)) => V::Time(i.micros.rem_euclid(86_400_000_000)),
        (T::Time, V::Text(s)) => {
            V::Time(datetime::parse_time(&s).ok_or_else(|| bad(&V::Text(s.clone())))?)
        }
        (T::Interval, V::Interval(i)) => V::Interval(i),
        (T::Interval, V::Time(t)) => V::Interval(Interval::new(0, 0, t)),
        (T::Interval, V::Text(s)) => {
            V::Interval(interval::parse_interval(&s).ok_or_else(|| bad(&V::Text(s.clone())))?)
        }
        (T::Date, V::Date(d)) => V::Date(d),
        (T::Date, V::Timestamp(x)) => V::Date(x.div_euclid(86_400_000_000) as i32),
        (T::Date, V::TimestampTz(x)) => {
            V::Date(datetime::tz_to_local(x).div_euclid(86_400_000_000) as i32)
        }
        (T::Date, V::Text(s)) => V::Date(parse_date(&s).ok_or_else(|| bad(&V::Text(s.clone())))?),
        (T::Uuid, V::Uuid(u)) => V::Uuid(u),
        (T::Uuid, V::Text(s)) => V::Uuid(
            uuid::Uuid::parse_str(s.trim())
                .map_err(|_| bad(&V::Text(s.clone())))?
                .as_u128(),
        ),
        (T::Bytes, V::Bytes(b)) => V::Bytes(b),
        (T::Bytes, V::Text(s)) => V::Bytes(parse_bytea(&s)?.into()),
        (_, v) => return Err(bad(&v)),
    })
}

fn json_error(e: jsonb::JsonError) -> EngineError {
    match e {
        jsonb::JsonError::Syntax(detail) => EngineError::InvalidJson { detail },
        jsonb::JsonError::UnicodeNul => EngineError::JsonUnicodeNul,
        jsonb::JsonError::NumericOverflow => {
            EngineError::OutOfRange("value overflows numeric format".into())
        }
    }
}

/// The longest `name` PostgreSQL keeps, in bytes.
pub const NAME_MAX_BYTES: usize = 63;

/// `s` cut to `NAME_MAX_BYTES` at a character boundary.
pub fn truncate_name(s: &str) -> &str {
    if s.len() <= NAME_MAX_BYTES {
        return s;
    }
    let mut end = NAME_MAX_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Days from 1970-01-01 to a civil date (proleptic Gregorian).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day number.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn parse_date(s: &str) -> Option<i32> {
    let s = s.trim();
    let mut it = s.splitn(3, '-');
    let y: i64 = it.next()?.parse().ok()?;
    let m: u32 = it.next()?.parse().ok()?;
    let d: u32 = it.next()?.get(..2).unwrap_or("").trim().parse().ok()?;
    // PostgreSQL's date range (4713 BC to 5874897 AD); beyond it the day
    // arithmetic would overflow.
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || !(-4713..=5_874_897).contains(&y) {
        return None;
    }
    i32::try_from(days_from_civil(y, m, d)).ok()
}

/// Parses `YYYY-MM-DD[ T]HH:MM[:SS[.ffffff]]` (a trailing zone is ignored).
pub fn parse_timestamp(s: &str) -> Option<i64> {
    datetime::parse_timestamp_local(s)
}

pub fn format_date(d: i32) -> String {
    let (y, m, dd) = civil_from_days(d as i64);
    format!("{y:04}-{m:02}-{dd:02}")
}

pub fn format_timestamp(t: i64) -> String {
    let days = t.div_euclid(86_400_000_000);
    let rem = t.rem_euclid(86_400_000_000);
    let (h, mi, s, us) = (
        rem / 3_600_000_000,
        rem / 60_000_000 % 60,
        rem / 1_000_000 % 60,
        rem % 1_000_000,
    );
    let mut out = format!("{} {h:02}:{mi:02}:{s:02}", format_date(days as i32));
    if us != 0 {
        let frac = format!("{us:06}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out
}

/// The current time as a timestamp value.
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_timestamps_out_of_range_are_refused() {
        // Found by fuzz/fuzz_targets/coerce.rs: the day arithmetic overflowed.
        assert_eq!(parse_timestamp("9229992024-02-24775808"), None);
        assert_eq!(parse_date("9229992024-02-24"), None);
        assert_eq!(parse_date("-9223372036854775808-01-01"), None);
        assert!(parse_date("5874897-12-31").is_some());
        assert_eq!(parse_timestamp("5874897-12-31 00:00"), None);
        assert_eq!(parse_timestamp("2024-01-01 -9223372036854775807:00"), None);
        assert_eq!(parse_timestamp("2024-01-01 01:-5"), None);
        assert!(coerce(
            Value::Text("9229992024-02-24775808".into()),
            &DataType::Timestamp
        )
        .is_err());
    }

    #[test]
    fn date_time_text_with_any_characters_is_refused_not_a_panic() {
        for t in [DataType::Time, DataType::TimestampTz, DataType::Interval] {
            for s in [
                "é12",
                "12:00é",
                "2024-01-01 12:00+é",
                "2024-01-01 é",
                "P1é",
                "1 é",
            ] {
                assert!(coerce(Value::text(s), &t).is_err(), "{s} {t:?}");
            }
        }
        assert_eq!(
            coerce(
                Value::text("2024-01-01 12:00:00-05:30"),
                &DataType::TimestampTz
            )
            .unwrap(),
            Value::TimestampTz(parse_timestamp("2024-01-01 17:30").unwrap())
        );
    }

    #[test]
    fn numeric_scale_is_shown_and_printable() {
        for (text, p, sc, want) in [
            ("2", 6, 2, "2.00"),
            (".001", 38, 28, "0.0010000000000000000000000000"),
        ] {
            let t = DataType::Decimal {
                precision: p,
                scale: sc,
            };
            assert_eq!(coerce(Value::text(text), &t).unwrap().to_string(), want);
        }
        // Found by fuzz/fuzz_targets/coerce.rs: a scale past 28 must not panic.
        let t = DataType::Decimal {
            precision: 38,
            scale: 36,
        };
        let _ = coerce(Value::text(".001"), &t).map(|v| v.to_string());
        let t = DataType::Decimal {
            precision: 38,
            scale: 28,
        };
        let _ = coerce(Value::text("1234567890.5"), &t).map(|v| v.to_string());
    }

    #[test]
    fn dates_round_trip() {
        for d in [-1000, 0, 1, 19_000, 20_000] {
            let s = format_date(d);
            assert_eq!(parse_date(&s), Some(d), "{s}");
        }
        assert_eq!(
            parse_timestamp("2024-02-29 12:34:56.5"),
            Some(
                days_from_civil(2024, 2, 29) * 86_400_000_000
                    + (12 * 3600 + 34 * 60 + 56) * 1_000_000
                    + 500_000
            )
        );
        assert_eq!(
            format_timestamp(parse_timestamp("2024-02-29 12:34:56.5").unwrap()),
            "2024-02-29 12:34:56.5"
        );
    }

    #[test]
    fn coercion_checks_ranges_and_lengths() {
        assert!(coerce(Value::Int(40_000), &DataType::SmallInt).is_err());
        assert!(coerce(Value::text("abcdef"), &DataType::Varchar(Some(3))).is_err());
        assert_eq!(
            coerce(
                Value::text("12.345"),
                &DataType::Decimal {
                    precision: 5,
                    scale: 2
                }
            )
            .unwrap(),
            Value::Decimal("12.35".parse().unwrap())
        );
        assert!(coerce(
            Value::Int(1234),
            &DataType::Decimal {
                precision: 5,
                scale: 2
            }
        )
        .is_err());
        assert_eq!(
            coerce(Value::Int(3), &DataType::Double).unwrap(),
            Value::Float(3.0)
        );
        assert!(matches!(
            coerce(Value::text("x"), &DataType::Int),
            Err(EngineError::Data(_))
        ));
    }

    #[test]
    fn numbers_compare_and_hash_across_variants() {
        use std::collections::hash_map::DefaultHasher;
        let h = |v: &Value| {
            let mut s = DefaultHasher::new();
            v.hash(&mut s);
            s.finish()
        };
        assert_eq!(Value::Int(2), Value::Float(2.0));
        assert_eq!(h(&Value::Int(2)), h(&Value::Float(2.0)));
        assert!(Value::Null < Value::Int(i64::MIN));
    }
}
