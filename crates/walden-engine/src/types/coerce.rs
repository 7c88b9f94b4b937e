//! Converting a value to a column's type (assignment, explicit casts,
//! input from the wire), with PostgreSQL's errors.

use super::*;

/// A date beyond the timestamp range (22008, PostgreSQL's message).
fn date_range_err() -> EngineError {
    EngineError::DatetimeInput {
        kind: crate::error::DatetimeErrorKind::FieldOverflow,
        message: "date out of range for timestamp".into(),
    }
}

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
            V::MdArray(a) => Ok(array::make(
                a.dims.to_vec(),
                a.items
                    .iter()
                    .map(|x| coerce(x.clone(), elem))
                    .collect::<Result<Vec<_>>>()?,
            )),
            V::Text(s) => array::parse_value(&s, elem),
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
            // PostgreSQL rounds with rint(): halves to even (-2.5 is -2).
            let r = f.round_ties_even();
            if !f.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                return Err(range_err(t));
            }
            coerce(V::Int(r as i64), t)?
        }
        (T::SmallInt | T::Int | T::BigInt | T::Oid, V::Decimal(d)) => {
            let ty = match t {
                T::SmallInt => "smallint",
                T::Int => "integer",
                T::Oid => "oid",
                _ => "bigint",
            };
            coerce(V::Int(d.to_integer(i64::MIN, i64::MAX, ty)?), t).map_err(|e| match e {
                EngineError::OutOfRange(_) => NumericError::IntegerRange(ty).into(),
                e => e,
            })?
        }
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
            if *t == T::Real {
                let r = f as f32;
                if r.is_infinite() && f.is_finite() {
                    return Err(range_err(t));
                }
                V::Float(r as f64)
            } else {
                V::Float(f)
            }
        }
        // numeric has no -0: `(-0.0)::float8` is 0 (adding 0.0 clears the sign).
        // A finite numeric beyond the float's range is 22003, as
        // PostgreSQL reads the numeric's text as a float.
        (T::Real | T::Double, V::Decimal(d)) => {
            let f = d.to_f64() + 0.0;
            let f = if *t == T::Real { f as f32 as f64 } else { f };
            if f.is_infinite() && d.is_finite() {
                return Err(EngineError::FloatOutOfRange {
                    text: d.to_string(),
                    ty: t.sql_name(),
                });
            }
            V::Float(f)
        }
        (T::Real | T::Double, V::Text(s)) => V::Float(
            super::float_text::parse_float(&s, *t == T::Real).map_err(|e| match e {
                super::float_text::FloatInputError::Syntax => bad(&V::Text(s.clone())),
                super::float_text::FloatInputError::Range => EngineError::FloatOutOfRange {
                    text: s.trim().to_string(),
                    ty: t.sql_name(),
                },
            })?,
        ),
        (T::Decimal { precision, scale }, v) => {
            let d = match v {
                V::Int(i) => Numeric::from(i),
                V::Decimal(d) => d,
                // PostgreSQL's float8_numeric: the float's 15 significant
                // digits (NaN and ±Infinity as themselves).
                V::Float(f) => super::float_to_numeric(f, 15)?,
                V::Text(ref s) => super::parse_numeric(s)?.ok_or_else(|| bad(&v))?,
                V::Bool(b) => Numeric::from(b as i64),
                other => return Err(bad(&other)),
            };
            // Unconstrained numeric keeps every digit (precision 0; older
            // catalogs wrote scale 6 beside it, which never applied).
            if *precision == 0 {
                return Ok(V::Decimal(d));
            }
            let (p, s) = (*precision as i64, *scale as i64);
            match d.fit(p, s) {
                Some(r) => V::Decimal(r),
                None => {
                    let maxdigits = p - s;
                    return Err(EngineError::NumericFieldOverflow {
                        detail: if d.is_infinite() {
                            format!(
                                "A field with precision {p}, scale {s} cannot hold an infinite value."
                            )
                        } else {
                            format!(
                                "A field with precision {p}, scale {s} must round to an absolute value less than {}.",
                                match maxdigits {
                                    0 => "1".to_string(),
                                    d => format!("10^{d}"),
                                }
                            )
                        },
                    });
                }
            }
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
        // Unsized bpchar keeps the value as it is.
        (T::Char(0), v) => match v {
            V::Bool(b) => V::Text(Arc::from(if b { "true" } else { "false" })),
            V::Text(s) => V::Text(s),
            other => V::Text(Arc::from(other.to_string())),
        },
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
        (T::Timestamp, V::Date(d)) => {
            V::Timestamp(dtinput::date_to_timestamp(d).ok_or_else(date_range_err)?)
        }
        (T::Timestamp, V::TimestampTz(x)) => V::Timestamp(datetime::tz_to_local(x)),
        (T::Timestamp, V::Text(s)) => V::Timestamp(dtinput::timestamp_in(&s)?),
        (T::TimestampTz, V::TimestampTz(x)) => V::TimestampTz(x),
        (T::TimestampTz, V::Timestamp(x)) => V::TimestampTz(datetime::local_to_tz(x)),
        (T::TimestampTz, V::Date(d)) => match dtinput::date_to_timestamp(d) {
            Some(t @ (i64::MAX | i64::MIN)) => V::TimestampTz(t),
            Some(t) => V::TimestampTz(datetime::local_to_tz(t)),
            None => return Err(date_range_err()),
        },
        (T::TimestampTz, V::Text(s)) => V::TimestampTz(dtinput::timestamptz_in(&s)?),
        (T::Time, V::Time(x)) => V::Time(x),
        (T::Time, V::Timestamp(x)) => V::Time(x.rem_euclid(86_400_000_000)),
        (T::Time, V::TimestampTz(x)) => {
            V::Time(datetime::tz_to_local(x).rem_euclid(86_400_000_000))
        }
        (T::Time, V::Interval(i)) => V::Time(i.micros.rem_euclid(86_400_000_000)),
        (T::Time, V::Text(s)) => V::Time(dtinput::time_in(&s)?),
        (T::Interval, V::Interval(i)) => V::Interval(i),
        (T::Interval, V::Time(t)) => V::Interval(Interval::new(0, 0, t)),
        (T::Interval, V::Text(s)) => V::Interval(interval_in(&s)?),
        (T::Date, V::Date(d)) => V::Date(d),
        (T::Date, V::Timestamp(x)) => V::Date(x.div_euclid(86_400_000_000) as i32),
        (T::Date, V::TimestampTz(x)) => {
            V::Date(datetime::tz_to_local(x).div_euclid(86_400_000_000) as i32)
        }
        (T::Date, V::Text(s)) => V::Date(dtinput::date_in(&s)?),
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

/// Interval text, refused with PostgreSQL's SQLSTATE and message.
pub fn interval_in(s: &str) -> Result<Interval, EngineError> {
    let sql_standard = super::zone::with_current(|z| {
        z.interval_style == super::interval::IntervalStyle::SqlStandard
    });
    interval_in_range(s, super::interval_input::IntervalRange::FULL, sql_standard)
}

/// [`interval_in`] under a type modifier's fields.
pub fn interval_in_range(
    s: &str,
    range: super::interval_input::IntervalRange,
    sql_standard: bool,
) -> Result<Interval, EngineError> {
    use super::interval_input::IntervalInputError as E;
    use crate::error::DatetimeErrorKind as K;
    super::interval_input::parse_with_range(s, range, sql_standard).map_err(|e| {
        let (kind, message) = match e {
            E::BadFormat => (
                K::Format,
                format!("invalid input syntax for type interval: \"{s}\""),
            ),
            E::FieldOverflow => (
                K::IntervalFieldOverflow,
                format!("interval field value out of range: \"{s}\""),
            ),
            E::OutOfRange => (K::FieldOverflow, "interval out of range".to_string()),
        };
        EngineError::DatetimeInput { kind, message }
    })
}
