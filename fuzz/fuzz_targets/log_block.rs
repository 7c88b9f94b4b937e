//! Block and segment-header decoders over arbitrary bytes (a damaged disk).
#![no_main]
use libfuzzer_sys::fuzz_target;
use walden_log::block;
use walden_log::scan::MAX_BLOCK;

fuzz_target!(|data: &[u8]| {
    if let Some(h) = block::decode_header(data, MAX_BLOCK) {
        let _ = h.end_lsn();
        let _ = block::verify_block(&h, data);
    }
    let _ = block::decode_segment_header(data);
    if let Ok(name) = std::str::from_utf8(data) {
        let _ = block::parse_segment_name(name);
        let _ = block::parse_spare_name(name);
    }
});
