//! Column types and values.

use crate::error::{EngineError, Result};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub mod array;
mod bytea;
mod coerce;
pub mod datetime;
pub mod dtinput;
pub mod enums;
pub mod float_text;
pub mod interval;
pub mod interval_input;
mod interval_iso;
pub mod jsonb;
mod numeric;
pub mod zone;

pub use bytea::parse_bytea;
pub use coerce::{coerce, interval_in, interval_in_range};
pub use enums::{EnumLabel, EnumRef, EnumType};
pub use interval::Interval;
pub use jsonb::Jsonb;
pub use numeric::MAX_SCALE as NUMERIC_MAX_SCALE;
pub use numeric::{float_to_numeric, parse_numeric, Numeric, NumericError};

/// A column type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    SmallInt,
    Int,
    BigInt,
    Bool,
    Real,
    Double,
    /// `DECIMAL(precision, scale)`: precision 1..=1000 and scale
    /// -1000..=1000 as PostgreSQL allows; precision 0 is unconstrained
    /// `numeric`.
    Decimal {
        precision: u16,
        scale: i16,
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
    /// `CHAR(n)`: blank-padded to n characters. `Char(0)` is PostgreSQL's
    /// bpchar without a length (n is at least 1 otherwise): values kept as
    /// they are, the type a UNION of char(1) and char(3) resolves to.
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
            DataType::Char(0) => "bpchar".into(),
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
    Decimal(Numeric),
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
    /// A one-dimensional array numbered from 1 (or an empty one): elements
    /// of its element type, or NULL.
    Array(Arc<[Value]>),
    /// An array of any other shape: several dimensions, or bounds not
    /// from 1 (see `types/array/shape.rs`; never empty, never what
    /// `Value::Array` can hold).
    MdArray(Arc<array::MdArray>),
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
            Value::Array(_) | Value::MdArray(_) => 13,
            Value::Enum(..) => 14,
        }
    }
    fn as_f64(&self) -> f64 {
        match self {
            Value::Int(i) => *i as f64,
            Value::Reg(_, oid, _) => *oid as f64,
            Value::Float(f) => *f,
            Value::Decimal(d) => d.to_f64(),
            _ => f64::NAN,
        }
    }
}

impl Ord for Value {
    /// A total order: NULL first, then by type, numbers compared by value.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // Integer keys are most keys: compared in line (a B-tree search
        // makes ~40 comparisons), everything else out of line.
        if let (Value::Int(a), Value::Int(b)) = (self, other) {
            return a.cmp(b);
        }
        self.cmp_general(other)
    }
}

impl Value {
    #[inline(never)]
    fn cmp_general(&self, other: &Self) -> Ordering {
        use Value::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Decimal(a), Decimal(b)) => a.cmp(b),
            (Int(a), Decimal(b)) => Numeric::from(*a).cmp(b),
            (Decimal(a), Int(b)) => a.cmp(&Numeric::from(*b)),
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
            (Array(_) | MdArray(_), Array(_) | MdArray(_)) => {
                match (array::shaped(self), array::shaped(other)) {
                    (Some(x), Some(y)) => array::shape::compare_shaped(&x, &y),
                    _ => Ordering::Equal,
                }
            }
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
            Value::Decimal(d) => d.hash(state),
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
            Value::MdArray(a) => {
                a.items.len().hash(state);
                for v in a.items.iter() {
                    v.hash(state);
                }
                a.dims.hash(state);
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
            Value::Float(x) => f.write_str(&float_text::format_float(*x, false)),
            // numeric has no negative zero (`Numeric` never holds one).
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Text(s) => write!(f, "{s}"),
            Value::Timestamp(t) => write!(f, "{}", format_timestamp(*t)),
            Value::Date(d) => write!(f, "{}", format_date(*d)),
            Value::Uuid(u) => write!(f, "{}", uuid::Uuid::from_u128(*u)),
            Value::Bytes(b) => {
                if zone::with_current(|z| z.bytea_escape) {
                    // Printable ASCII as is, a backslash doubled, the
                    // rest as three octal digits.
                    for &x in b.iter() {
                        match x {
                            b'\\' => f.write_str("\\\\")?,
                            0x20..=0x7e => fmt::Write::write_char(f, x as char)?,
                            _ => write!(f, "\\{x:03o}")?,
                        }
                    }
                    return Ok(());
                }
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
            Value::MdArray(a) => {
                f.write_str(&array::shape::format_shaped(&a.dims, &a.items, |v| {
                    v.to_string()
                }))
            }
            Value::Enum(_, label) | Value::Reg(_, _, label) => f.write_str(label),
        }
    }
}

/// A primary key (or hidden row id) value.
pub type Key = Box<[Value]>;
/// A stored row: one value per column.
pub type Row = Arc<[Value]>;

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

/// Parses date text with PostgreSQL's rules (`dtinput`).
pub fn parse_date(s: &str) -> Option<i32> {
    dtinput::date_in(s).ok()
}

/// Parses timestamp text (a zone in it is ignored, as PostgreSQL does).
pub fn parse_timestamp(s: &str) -> Option<i64> {
    datetime::parse_timestamp_local(s)
}

/// A date as PostgreSQL's ISO style shows it: `1999-01-08`,
/// `0044-03-15 BC`, `infinity`.
pub fn format_date(d: i32) -> String {
    match d {
        dtinput::DATE_INFINITY => return "infinity".into(),
        dtinput::DATE_MINUS_INFINITY => return "-infinity".into(),
        _ => {}
    }
    let (y, m, dd) = civil_from_days(d as i64);
    if y <= 0 {
        format!("{:04}-{m:02}-{dd:02} BC", 1 - y)
    } else {
        format!("{y:04}-{m:02}-{dd:02}")
    }
}

/// A timestamp in ISO style: `1999-01-08 04:05:06.5`, with ` BC` after
/// it for a year before 1 AD, `infinity` / `-infinity`.
pub fn format_timestamp(t: i64) -> String {
    let (mut s, bc) = match timestamp_text(t) {
        Ok(x) => x,
        Err(special) => return special.into(),
    };
    if bc {
        s.push_str(" BC");
    }
    s
}

/// The date and time of a timestamp without its era, and whether it is
/// BC (a zone offset goes between the two); the text of infinity.
pub fn timestamp_text(t: i64) -> std::result::Result<(String, bool), &'static str> {
    match t {
        dtinput::TIMESTAMP_INFINITY => return Err("infinity"),
        dtinput::TIMESTAMP_MINUS_INFINITY => return Err("-infinity"),
        _ => {}
    }
    let days = t.div_euclid(86_400_000_000);
    let rem = t.rem_euclid(86_400_000_000);
    let (h, mi, s, us) = (
        rem / 3_600_000_000,
        rem / 60_000_000 % 60,
        rem / 1_000_000 % 60,
        rem % 1_000_000,
    );
    let (y, m, d) = civil_from_days(days);
    let bc = y <= 0;
    let y = if bc { 1 - y } else { y };
    let mut out = format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}");
    if us != 0 {
        let frac = format!("{us:06}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    Ok((out, bc))
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
        // PostgreSQL reads this as 01:00 and a zone of -5 (ignored).
        assert_eq!(
            parse_timestamp("2024-01-01 01:-5").map(format_timestamp),
            Some("2024-01-01 01:00:00".into())
        );
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
