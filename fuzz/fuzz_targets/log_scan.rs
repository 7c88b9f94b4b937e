//! Recovery's scan over a segment file image held in a MemVfs.
//!
//! Checksums would stop nearly every mutation at the first block, so the
//! target re-seals them first unless the input's first byte asks for the raw
//! image: then the scan's own validation (torn tail versus corruption) runs on
//! blocks whose lengths, LSNs and `synced_through` are the fuzzer's.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use walden_log::block::{self, BLOCK_HEADER, BLOCK_MAGIC, PAGE, SEGMENT_MAGIC};
use walden_log::scan::{self, ScanOptions, MAX_BLOCK};
use walden_log::vfs::{OpenOptionsVfs, Vfs};
use walden_log::MemVfs;

fn reseal(img: &mut [u8]) {
    if img.len() >= 40 && img[..8] == SEGMENT_MAGIC {
        img[12..20].copy_from_slice(&1u64.to_le_bytes());
        let crc = crc32c::crc32c(&img[..36]);
        img[36..40].copy_from_slice(&crc.to_le_bytes());
    }
    let mut off = PAGE;
    while off + BLOCK_HEADER <= img.len() {
        if img[off..off + 4] == BLOCK_MAGIC {
            if let Some(h) = block::decode_header(&img[off..], MAX_BLOCK) {
                let end = off + BLOCK_HEADER + h.payload_len as usize;
                if end <= img.len() {
                    let crc = crc32c::crc32c_append(
                        crc32c::crc32c(&img[off..off + 32]),
                        &img[off + BLOCK_HEADER..end],
                    );
                    img[off + 32..off + 36].copy_from_slice(&crc.to_le_bytes());
                }
            }
        }
        off += PAGE;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut img = rest.to_vec();
    if mode & 1 == 0 {
        reseal(&mut img);
    }
    let from = if mode & 2 == 0 && img.len() >= 28 {
        u64::from_le_bytes(img[20..28].try_into().unwrap())
    } else {
        0
    };
    let vfs = MemVfs::new();
    let dir = Path::new("/log");
    vfs.create_dir_all(dir).unwrap();
    let f = vfs
        .open(
            &dir.join(block::segment_name(1)),
            OpenOptionsVfs {
                create: true,
                dsync: false,
            },
        )
        .unwrap();
    f.write_at(&img, 0).unwrap();
    let mut sink = |start: u64, end: u64, rec: &[u8]| {
        assert!(start <= end && rec.len() as u64 <= end - start);
        Ok(())
    };
    let _ = scan::scan(
        &vfs,
        dir,
        ScanOptions {
            from,
            max_block: MAX_BLOCK,
            on_record: &mut sink,
            on_block: None,
        },
    );
});
