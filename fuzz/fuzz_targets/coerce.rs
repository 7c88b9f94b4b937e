//! Text coerced to each column type (literals, parameters, COPY input).
#![no_main]
use libfuzzer_sys::fuzz_target;
use walden_engine::types::coerce;
use walden_engine::{DataType, Value};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let types = [
        DataType::SmallInt,
        DataType::Int,
        DataType::BigInt,
        DataType::Bool,
        DataType::Real,
        DataType::Double,
        DataType::Decimal {
            precision: 38,
            scale: (sel % 39) as i16,
        },
        DataType::Decimal {
            precision: 5,
            scale: 2,
        },
        DataType::Varchar(Some(sel as u32 % 8)),
        DataType::Text,
        DataType::Timestamp,
        DataType::Date,
        DataType::Uuid,
        DataType::Bytes,
        DataType::TimestampTz,
        DataType::Time,
        DataType::Interval,
        DataType::Char(sel as u32 % 8),
    ];
    for t in &types {
        if let Ok(v) = coerce(Value::Text(text.into()), t) {
            let _ = v.to_string();
            // Back through text: what printed must parse (or fail cleanly).
            let _ = coerce(Value::Text(v.to_string().into()), t);
        }
    }
});
