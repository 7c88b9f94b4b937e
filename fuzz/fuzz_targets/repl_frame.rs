//! Replication frames as a secondary or primary reads them from a peer.
#![no_main]
use libfuzzer_sys::fuzz_target;
use walden_replication::proto::{self, Msg};

fuzz_target!(|data: &[u8]| {
    let _ = proto::has_whole_frame(data);
    let mut r = data;
    while let Ok(m) = proto::read_msg_sync(&mut r) {
        let _ = m.encode();
    }
    let _ = Msg::decode(data.to_vec());
});
