//! Binary COPY data (`COPY ... FROM STDIN (FORMAT binary)`) decoded for a
//! row of every column type, and each decoded row encoded again; then the
//! same bytes as one binary array value (a Bind parameter or a COPY field
//! of an array column) of several element types, encoded again.
#![no_main]
use libfuzzer_sys::fuzz_target;
use walden_engine::DataType;
use walden_server::{copybin, pgtypes};

fuzz_target!(|data: &[u8]| {
    // The seeds' table: every type, in the order of
    // crates/walden/tests/copy_binary.rs.
    let types = [
        DataType::Int,
        DataType::SmallInt,
        DataType::BigInt,
        DataType::Real,
        DataType::Double,
        DataType::Decimal {
            precision: 10,
            scale: 2,
        },
        DataType::Decimal {
            precision: 20,
            scale: 6,
        },
        DataType::Text,
        DataType::Varchar(Some(10)),
        DataType::Char(4),
        DataType::Timestamp,
        DataType::TimestampTz,
        DataType::Date,
        DataType::Time,
        DataType::Interval,
        DataType::Uuid,
        DataType::Bytes,
        DataType::Bool,
        DataType::Json,
        DataType::Jsonb,
    ];
    let Ok(rows) = copybin::Decoder::new(data, &types) else {
        return;
    };
    let mut out = bytes::BytesMut::new();
    for row in rows {
        let Ok(row) = row else { break };
        out.clear();
        // Values the types cannot send are errors, not panics.
        let _ = copybin::encode_row(&row, &types, &mut out);
    }
    // int4[], text[], int8[], numeric[], timestamptz[], uuid[], bool[],
    // float8[], jsonb[].
    for oid in [1007, 1009, 1016, 1231, 1185, 2951, 1000, 1022, 3807] {
        if let Ok(v) = pgtypes::decode_binary_param(data, oid) {
            let t = pgtypes::oid_to_type(oid).expect("an array type");
            out.clear();
            let _ = pgtypes::encode_binary(&v, &t, &mut out);
        }
    }
});
