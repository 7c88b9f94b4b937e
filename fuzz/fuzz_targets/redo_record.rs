//! The redo record decoder (recovery and a secondary's apply feed it log bytes).
#![no_main]
use libfuzzer_sys::fuzz_target;
use walden_engine::codec;

fuzz_target!(|data: &[u8]| {
    // A table whose key is its first column, as recovery's key_of answers.
    let key_of = |table: u32, row: &[walden_engine::Value]| {
        (table.is_multiple_of(2) && !row.is_empty()).then(|| row[..1].to_vec().into_boxed_slice())
    };
    if let Ok(r) = codec::decode_redo(data, &key_of) {
        // What decodes re-encodes without panicking.
        let _ = codec::encode_redo(&r);
    }
});
