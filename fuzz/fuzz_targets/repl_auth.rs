//! The replication handshake as an endpoint and as a primary read it from a
//! peer, and sealed (MAC'd) frames as a live link reads them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use walden_replication::auth::{self, FrameMac, Offer, PeerAuth, Secret};
use walden_replication::transport;

/// The key the seed corpus's sealed frames were made with.
const FRAME_KEY: &[u8] = b"walden fuzz frame key";

fuzz_target!(|data: &[u8]| {
    let _ = Offer::parse(data);
    let secret = PeerAuth::Secret(Secret::new(&b"walden-fuzz-replication-secret"[..]).unwrap());
    let _ = auth::server_handshake_on(data, &secret);
    let _ = auth::server_handshake_on(data, &PeerAuth::None);
    let _ = auth::client_handshake_on(data, &secret);
    let _ = auth::client_handshake_on(data, &PeerAuth::None);
    let mut mac = FrameMac::new(FRAME_KEY);
    let mut r = data;
    while let Ok(m) = transport::read_sealed(&mut r, &mut mac) {
        let _ = transport::seal(&m, None);
    }
});
