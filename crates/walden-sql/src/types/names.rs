//! SQL type names to engine types.

use crate::error::{Result, SqlError};
use sqlparser::ast::{CharacterLength, DataType as SqlType, ExactNumberInfo};
use walden_engine::{DataType, Database};

/// The lower-case last part of a custom type name (`pg_catalog."int8"` -> `int8`).
fn custom_name(name: &sqlparser::ast::ObjectName) -> String {
    let n = name.to_string().to_ascii_lowercase();
    n.rsplit('.')
        .next()
        .unwrap_or(&n)
        .trim_matches(['"', '[', ']'])
        .to_string()
}

/// A column type, and whether the type name implies an identity (`SERIAL`).
pub fn column_type(t: &SqlType) -> Result<(DataType, bool)> {
    if let SqlType::Custom(name, _) = t {
        let n = custom_name(name);
        match n.as_str() {
            "serial" | "serial4" => return Ok((DataType::Int, true)),
            "bigserial" | "serial8" => return Ok((DataType::BigInt, true)),
            "smallserial" | "serial2" => return Ok((DataType::SmallInt, true)),
            _ => {}
        }
    }
    Ok((data_type(t)?, false))
}

fn char_len(l: &Option<CharacterLength>) -> Option<u32> {
    match l {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length as u32),
        _ => None,
    }
}

/// `numeric(p, s)`, checked as PostgreSQL checks it (22023). A scale
/// Walden's numeric cannot honour is refused (0A000) rather than changed:
/// a negative one (rounding to tens, hundreds, ...) or one over the 28
/// decimals it carries. A precision over 255 is kept as 255, which allows
/// the same values (a Walden numeric has at most 28 digits).
fn numeric_typmod(p: u64, s: i64) -> Result<DataType> {
    if !(1..=1000).contains(&p) {
        return Err(SqlError::new(
            crate::error::ErrorKind::InvalidParameter,
            format!("NUMERIC precision {p} must be between 1 and 1000"),
        ));
    }
    if !(-1000..=1000).contains(&s) {
        return Err(SqlError::new(
            crate::error::ErrorKind::InvalidParameter,
            format!("NUMERIC scale {s} must be between -1000 and 1000"),
        ));
    }
    Ok(DataType::Decimal {
        precision: p as u16,
        scale: s as i16,
    })
}

/// The precision written after a time type named by a custom name
/// (`timestamptz(3)`, `datetime2(3)`); `None` for other names.
fn custom_time_precision(name: &str, args: &[String]) -> Result<Option<u64>> {
    if !matches!(
        name,
        "timestamptz" | "timetz" | "datetime2" | "datetimeoffset" | "time" | "timestamp"
    ) {
        return Ok(None);
    }
    match args {
        [] => Ok(None),
        [a] => a
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| SqlError::syntax(format!("invalid precision {a} for type {name}"))),
        _ => Err(SqlError::syntax(format!("type {name} takes one precision"))),
    }
}

/// A time type's fractional-second precision split from it, for a column
/// or a cast, which round values to it: `timestamp(2)` is `timestamp` and
/// `Some(2)`. Values keep microseconds, so a larger precision is 6, as
/// PostgreSQL lowers it.
pub fn split_time_precision(t: &SqlType) -> Result<(SqlType, Option<u8>)> {
    use SqlType as S;
    let keep = |p: u64| Some(p.min(6) as u8);
    Ok(match t {
        S::Timestamp(Some(p), tz) => (S::Timestamp(None, *tz), keep(*p)),
        S::Time(Some(p), tz) => (S::Time(None, *tz), keep(*p)),
        S::Datetime(Some(p)) => (S::Datetime(None), keep(*p)),
        S::Interval {
            fields: None,
            precision: Some(p),
        } => (
            S::Interval {
                fields: None,
                precision: None,
            },
            keep(*p),
        ),
        S::Custom(name, args) => match custom_time_precision(&custom_name(name), args)? {
            Some(p) => (S::Custom(name.clone(), vec![]), keep(p)),
            None => (t.clone(), None),
        },
        _ => (t.clone(), None),
    })
}

/// Maps a SQL type to the engine's.
pub fn data_type(t: &SqlType) -> Result<DataType> {
    use SqlType as S;
    Ok(match t {
        S::SmallInt(_) | S::Int2(_) | S::TinyInt(_) => DataType::SmallInt,
        S::Int(_) | S::Integer(_) | S::Int4(_) | S::MediumInt(_) => DataType::Int,
        S::BigInt(_) | S::Int8(_) | S::Int64 => DataType::BigInt,
        S::Bool | S::Boolean | S::Bit(_) => DataType::Bool,
        S::Real | S::Float4 => DataType::Real,
        S::Float8 | S::Double(_) | S::DoublePrecision | S::Float64 => DataType::Double,
        S::Float(ExactNumberInfo::Precision(p)) if *p <= 24 => DataType::Real,
        S::Float(_) => DataType::Double,
        S::Numeric(info) | S::Decimal(info) | S::Dec(info) => match info {
            ExactNumberInfo::None => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
            ExactNumberInfo::Precision(p) => numeric_typmod(*p, 0)?,
            ExactNumberInfo::PrecisionAndScale(p, s) => numeric_typmod(*p, *s)?,
        },
        S::Varchar(l) | S::Nvarchar(l) | S::CharacterVarying(l) | S::CharVarying(l) => {
            DataType::Varchar(char_len(l))
        }
        // `char` alone is char(1).
        S::Char(l) | S::Character(l) => DataType::Char(char_len(l).unwrap_or(1)),
        S::Text | S::String(_) | S::TinyText | S::MediumText | S::LongText | S::Clob(_) => {
            DataType::Text
        }
        // A precision below microseconds rounds values: only a column and a
        // cast do that (`split_time_precision`); elsewhere it is refused
        // rather than ignored.
        S::Timestamp(Some(p), _) | S::Time(Some(p), _) | S::Datetime(Some(p)) if *p < 6 => {
            return Err(SqlError::unsupported(format!(
                "time precision {p} here (only a column or a cast rounds values)"
            )))
        }
        S::Timestamp(
            _,
            sqlparser::ast::TimezoneInfo::WithTimeZone | sqlparser::ast::TimezoneInfo::Tz,
        ) => DataType::TimestampTz,
        S::Timestamp(_, _) | S::Datetime(_) | S::TimestampNtz(_) => DataType::Timestamp,
        S::Time(
            _,
            sqlparser::ast::TimezoneInfo::WithTimeZone | sqlparser::ast::TimezoneInfo::Tz,
        ) => return Err(SqlError::unsupported("type time with time zone")),
        S::Time(_, _) => DataType::Time,
        S::Interval {
            fields: None,
            precision: None,
        } => DataType::Interval,
        S::Interval { .. } => {
            return Err(SqlError::unsupported(
                "interval with fields or precision here (only a literal or a cast applies them)",
            ))
        }
        S::Date => DataType::Date,
        S::Uuid => DataType::Uuid,
        S::Bytea | S::Blob(_) | S::Varbinary(_) | S::Binary(_) | S::Bytes(_) => DataType::Bytes,
        S::JSON => DataType::Json,
        S::JSONB => DataType::Jsonb,
        // `int[]`, `int[3]`, `int ARRAY`: a declared size is not enforced,
        // as in PostgreSQL. Arrays of arrays are several dimensions.
        S::Array(
            sqlparser::ast::ArrayElemTypeDef::SquareBracket(e, _)
            | sqlparser::ast::ArrayElemTypeDef::Qualified(e, _),
        ) => match data_type(e)? {
            // `int[][]` is `int[]`: PostgreSQL's array types do not fix
            // the number of dimensions.
            t @ DataType::Array(_) => t,
            elem => DataType::Array(Box::new(elem)),
        },
        // `pg_catalog.int8`, `pg_catalog.text`: a built-in type named with its
        // schema is the built-in type.
        S::Custom(name, args) if name.0.len() > 1 && args.is_empty() => {
            parse_type_name(&custom_name(name))?
        }
        S::Custom(name, args) => {
            let n = custom_name(name);
            if let Some(p) = custom_time_precision(&n, args)? {
                if p < 6 {
                    return Err(SqlError::unsupported(format!(
                        "time precision {p} here (only a column or a cast rounds values)"
                    )));
                }
            }
            match n.as_str() {
                "datetime2" | "datetime" | "smalldatetime" => DataType::Timestamp,
                "timestamptz" | "datetimeoffset" => DataType::TimestampTz,
                "timetz" => return Err(SqlError::unsupported("type time with time zone")),
                "uniqueidentifier" => DataType::Uuid,
                "money" | "smallmoney" => DataType::Decimal {
                    precision: 19,
                    scale: 4,
                },
                // bpchar alone has no length (char alone is char(1)).
                "bpchar" => DataType::Char(args.first().and_then(|a| a.parse().ok()).unwrap_or(0)),
                "nchar" | "ntext" | "sysname" | "citext" => {
                    DataType::Varchar(args.first().and_then(|a| a.parse().ok()))
                }
                "int1" | "tinyint" => DataType::SmallInt,
                "json" => DataType::Json,
                "jsonb" => DataType::Jsonb,
                "image" | "varbinary" => DataType::Bytes,
                "oid" => DataType::Oid,
                "regclass" => DataType::Reg(walden_engine::RegKind::Class),
                "regtype" => DataType::Reg(walden_engine::RegKind::Type),
                "regnamespace" => DataType::Reg(walden_engine::RegKind::Namespace),
                // PostgreSQL's one-byte `"char"` (catalog codes such as
                // relkind).
                "char" => DataType::PgChar,
                // PostgreSQL's identifier type (relname and the like).
                "name" => DataType::Name,
                // T-SQL's bracket-quoted type names: `[int]`, `[varchar](10)`.
                other if name.to_string().ends_with(']') => {
                    let a = if args.is_empty() {
                        String::new()
                    } else {
                        format!("({})", args.join(", "))
                    };
                    return parse_type_name(&format!("{other}{a}"));
                }
                other => {
                    return Err(SqlError::new(
                        crate::error::ErrorKind::UndefinedObject,
                        format!("type \"{other}\" does not exist"),
                    ))
                }
            }
        }
        other => return Err(SqlError::unsupported(format!("type {other}"))),
    })
}

/// A type name as transaction `viewer` resolves it: the built-in types,
/// then the database's enum types (`mood`, `public.mood`, `mood[]`).
pub fn data_type_in(db: &Database, viewer: Option<u64>, t: &SqlType) -> Result<DataType> {
    use sqlparser::ast::ArrayElemTypeDef as E;
    match t {
        SqlType::Array(E::SquareBracket(e, _) | E::Qualified(e, _)) => {
            match data_type_in(db, viewer, e)? {
                t @ DataType::Array(_) => Ok(t),
                elem => Ok(DataType::Array(Box::new(elem))),
            }
        }
        SqlType::Custom(name, args) if args.is_empty() => match data_type(t) {
            Err(e) if e.kind == crate::error::ErrorKind::UndefinedObject => {
                let n = custom_name(name);
                match db.enum_type_as(viewer, &n) {
                    Some(def) => Ok(DataType::Enum(walden_engine::types::EnumRef(def))),
                    None => Err(e),
                }
            }
            other => other,
        },
        _ => data_type(t),
    }
}

/// [`column_type`] with the database's enum types.
pub fn column_type_in(db: &Database, viewer: Option<u64>, t: &SqlType) -> Result<(DataType, bool)> {
    let (ty, serial) = column_type_any(db, viewer, t)?;
    // A stored reg value would keep the name it had when written.
    if let DataType::Reg(k) = ty.element().unwrap_or_else(|| ty.clone()) {
        return Err(SqlError::unsupported(format!(
            "a column of type {}",
            k.sql_name()
        )));
    }
    Ok((ty, serial))
}

fn column_type_any(db: &Database, viewer: Option<u64>, t: &SqlType) -> Result<(DataType, bool)> {
    match column_type(t) {
        Err(e) if e.kind == crate::error::ErrorKind::UndefinedObject => {
            Ok((data_type_in(db, viewer, t)?, false))
        }
        Err(e) if matches!(t, SqlType::Array(_)) => data_type_in(db, viewer, t)
            .map(|d| (d, false))
            .map_err(|_| e),
        other => other,
    }
}

/// A type named in text (`int`, `varchar(10)`, `text[]`), as a cast names it.
pub(crate) fn parse_type_name(name: &str) -> Result<DataType> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let mut parser = sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(name)
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    let t = parser
        .parse_data_type()
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    data_type(&t)
}

/// Whether `t` is an enum type.
pub fn is_enum(t: &DataType) -> bool {
    matches!(t, DataType::Enum(_))
}

/// Whether `t` is an enum type or an array of one.
pub fn involves_enum(t: &DataType) -> bool {
    match t {
        DataType::Enum(_) => true,
        DataType::Array(e) => is_enum(e),
        _ => false,
    }
}
