//! The checkpoint image decoder (recovery, RESTORE, a secondary's seed).
//! The input is the image body: the target adds magic, version and checksum
//! so that mutations reach the decoder rather than the checksum test.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let raw = data.first() == Some(&0xff);
    if raw {
        let _ = walden_engine::fuzzing::decode_checkpoint_image(&data[1..]);
        return;
    }
    let mut img = Vec::with_capacity(data.len() + 16);
    img.extend_from_slice(b"WALDNIMG");
    img.extend_from_slice(&1u32.to_le_bytes());
    img.extend_from_slice(data);
    let crc = crc32c::crc32c(&img[12..]);
    img.extend_from_slice(&crc.to_le_bytes());
    let _ = walden_engine::fuzzing::decode_checkpoint_image(&img);
});
