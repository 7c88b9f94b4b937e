//! PostgreSQL frontend messages as the server's codec decodes them from a
//! client, during startup (first byte even) and after it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let _ = walden_server::decode_frontend_for_fuzz(rest, mode & 1 == 1);
});
