//! The wire protocol between a primary and a secondary's endpoint: one TCP
//! connection per (secondary, database), after the authentication handshake
//! ([`crate::auth`]), frames of `u32` length + a type byte + body (+ a MAC,
//! see [`crate::transport`]). Control messages carry JSON; log carries raw
//! record frames.

use serde::{Deserialize, Serialize};
use std::io;
use walden_log::Lsn;

use crate::config::AgState;

/// Largest frame accepted. A seed comes in chunks of at most
/// [`MAX_SEED_CHUNK`]; log messages carry at most a catch-up chunk or a
/// batch of records.
const MAX_FRAME: usize = 1 << 30;

/// What a seed's pieces are: `SeedBegin`'s format. 1: an engine image of
/// version 3 (see walden-engine's `image_stream.rs`) in `SeedChunk`s,
/// closed by `SeedEnd` with its length and CRC-32C.
pub const SEED_FORMAT: u32 = 1;
/// Largest seed chunk a primary sends and a secondary accepts.
pub const MAX_SEED_CHUNK: usize = 16 << 20;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hello {
    pub ag: AgState,
    /// The replica name the primary expects at this endpoint.
    pub to: String,
    pub database: String,
    /// The primary's HA cluster (`--ha-cluster`), `None` without `--ha`:
    /// a secondary of another cluster (or of none) refuses to follow, since
    /// two clusters' leader keys could make two primaries of one group.
    #[serde(default)]
    pub ha_cluster: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum HelloReply {
    /// What the secondary holds of the database.
    State {
        /// `(seed id, epoch it last followed, hardened end LSN)`; `None`
        /// when it has no replica of the database.
        replica: Option<(u64, u64, Lsn)>,
    },
    /// The secondary knows a newer epoch (a failover happened).
    Stale { epoch: u64, primary: String },
    /// Refused, with the reason.
    Refused(String),
}

// A Hello is sent once per connection: its size costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Msg {
    Hello(Hello),
    HelloReply(HelloReply),
    /// A seed starts: an image follows in `SeedChunk`s; the secondary's
    /// log continues at `lsn`.
    SeedBegin {
        format: u32,
        lsn: Lsn,
        seed_id: u64,
    },
    /// The next piece of the seed's image.
    SeedChunk(Vec<u8>),
    /// The seed's image is complete: its length and CRC-32C.
    SeedEnd {
        len: u64,
        crc32c: u32,
    },
    /// Whole records of the primary's log starting at `lsn`.
    Log {
        lsn: Lsn,
        frames: Vec<u8>,
    },
    /// Primary: where its log stands and whether this secondary counts as
    /// SYNCHRONIZED.
    Heartbeat {
        end: Lsn,
        hardened: Lsn,
        synchronized: bool,
    },
    /// Secondary: hardened and applied through.
    Ack {
        hardened: Lsn,
        applied: Lsn,
    },
}

const T_HELLO: u8 = 1;
const T_HELLO_REPLY: u8 = 2;
/// A whole image in one frame (builds before streamed seeds): refused.
const T_SEED_WHOLE: u8 = 3;
const T_LOG: u8 = 4;
const T_HEARTBEAT: u8 = 5;
const T_ACK: u8 = 6;
const T_SEED_BEGIN: u8 = 7;
const T_SEED_CHUNK: u8 = 8;
const T_SEED_END: u8 = 9;

fn json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("protocol message serializes")
}

impl Msg {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&[0; 4]);
        match self {
            Msg::Hello(h) => {
                b.push(T_HELLO);
                b.extend(json(h));
            }
            Msg::HelloReply(r) => {
                b.push(T_HELLO_REPLY);
                b.extend(json(r));
            }
            Msg::SeedBegin {
                format,
                lsn,
                seed_id,
            } => {
                b.push(T_SEED_BEGIN);
                b.extend(format.to_le_bytes());
                b.extend(lsn.to_le_bytes());
                b.extend(seed_id.to_le_bytes());
            }
            Msg::SeedChunk(bytes) => {
                b.push(T_SEED_CHUNK);
                b.extend(bytes);
            }
            Msg::SeedEnd { len, crc32c } => {
                b.push(T_SEED_END);
                b.extend(len.to_le_bytes());
                b.extend(crc32c.to_le_bytes());
            }
            Msg::Log { lsn, frames } => {
                b.push(T_LOG);
                b.extend(lsn.to_le_bytes());
                b.extend(frames);
            }
            Msg::Heartbeat {
                end,
                hardened,
                synchronized,
            } => {
                b.push(T_HEARTBEAT);
                b.extend(end.to_le_bytes());
                b.extend(hardened.to_le_bytes());
                b.push(*synchronized as u8);
            }
            Msg::Ack { hardened, applied } => {
                b.push(T_ACK);
                b.extend(hardened.to_le_bytes());
                b.extend(applied.to_le_bytes());
            }
        }
        let n = (b.len() - 4) as u32;
        b[..4].copy_from_slice(&n.to_le_bytes());
        b
    }

    /// Decodes a frame's body (type byte onwards); public for the fuzz targets.
    #[doc(hidden)]
    pub fn decode(buf: Vec<u8>) -> io::Result<Msg> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let (&t, body) = buf.split_first().ok_or_else(|| bad("empty frame"))?;
        let u64_at = |i: usize| -> io::Result<u64> {
            body.get(i..i + 8)
                .map(|s| u64::from_le_bytes(s.try_into().unwrap()))
                .ok_or_else(|| bad("short frame"))
        };
        let u32_at = |i: usize| -> io::Result<u32> {
            body.get(i..i + 4)
                .map(|s| u32::from_le_bytes(s.try_into().unwrap()))
                .ok_or_else(|| bad("short frame"))
        };
        Ok(match t {
            T_HELLO => Msg::Hello(serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?),
            T_HELLO_REPLY => {
                Msg::HelloReply(serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?)
            }
            T_SEED_WHOLE => {
                return Err(bad(
                    "a seed in one frame, from an older Walden: both replicas need a build that streams seeds",
                ))
            }
            T_SEED_BEGIN => {
                let format = u32_at(0)?;
                if format != SEED_FORMAT {
                    return Err(bad(&format!(
                        "seed format {format} is not the {SEED_FORMAT} this build reads"
                    )));
                }
                Msg::SeedBegin {
                    format,
                    lsn: u64_at(4)?,
                    seed_id: u64_at(12)?,
                }
            }
            T_SEED_CHUNK => {
                if body.len() > MAX_SEED_CHUNK {
                    return Err(bad("seed chunk too large"));
                }
                Msg::SeedChunk(body.to_vec())
            }
            T_SEED_END => Msg::SeedEnd {
                len: u64_at(0)?,
                crc32c: u32_at(8)?,
            },
            T_LOG => Msg::Log {
                lsn: u64_at(0)?,
                frames: body[8..].to_vec(),
            },
            T_HEARTBEAT => Msg::Heartbeat {
                end: u64_at(0)?,
                hardened: u64_at(8)?,
                synchronized: body.get(16).copied().unwrap_or(0) != 0,
            },
            T_ACK => Msg::Ack {
                hardened: u64_at(0)?,
                applied: u64_at(8)?,
            },
            _ => return Err(bad("unknown message type")),
        })
    }
}

/// A frame's length from its 4-byte header, checked.
pub(crate) fn frame_len(len: [u8; 4]) -> io::Result<usize> {
    let n = u32::from_le_bytes(len) as usize;
    if n == 0 || n > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad frame length {n}"),
        ));
    }
    Ok(n)
}

/// Whether `buf` begins with a whole message (so reading it needs no more
/// bytes from the socket).
pub fn has_whole_frame(buf: &[u8]) -> bool {
    buf.len() >= 4 && buf.len() - 4 >= u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize
}

/// Blocking read of one unauthenticated message (public for the fuzz
/// targets; live links read through [`crate::transport`]).
#[doc(hidden)]
pub fn read_msg_sync<R: std::io::Read>(r: &mut R) -> io::Result<Msg> {
    let (_, body) = read_frame_sync(r)?;
    Msg::decode(body)
}

/// Blocking read of one frame: its length header and the rest.
pub(crate) fn read_frame_sync<R: std::io::Read>(r: &mut R) -> io::Result<([u8; 4], Vec<u8>)> {
    let mut len = [0u8; 4];
    // The first byte may time out with nothing consumed; once a frame has
    // begun, it is read to its end.
    if r.read(&mut len[..1])? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    read_all_retrying(r, &mut len[1..])?;
    let n = frame_len(len)?;
    let mut buf = vec![0u8; n];
    read_all_retrying(r, &mut buf)?;
    Ok((len, buf))
}

/// `read_exact` that keeps going through read timeouts once a frame has
/// begun (a timeout between frames is how readers poll for shutdown).
fn read_all_retrying<R: std::io::Read>(r: &mut R, mut buf: &mut [u8]) -> io::Result<()> {
    let t0 = std::time::Instant::now();
    while !buf.is_empty() {
        match r.read(buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf = &mut buf[n..],
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) && t0.elapsed() < std::time::Duration::from_secs(60) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_frame_is_told_from_part_of_one() {
        let m = Msg::Ack {
            hardened: 7,
            applied: 5,
        }
        .encode();
        assert!(has_whole_frame(&m));
        let mut two = m.clone();
        two.extend_from_slice(&m[..3]);
        assert!(has_whole_frame(&two), "a whole frame, then part of one");
        for cut in 0..m.len() {
            assert!(!has_whole_frame(&m[..cut]), "{cut} of {} bytes", m.len());
        }
        let decoded = read_msg_sync(&mut &m[..]).unwrap();
        assert!(matches!(
            decoded,
            Msg::Ack {
                hardened: 7,
                applied: 5
            }
        ));
    }

    #[test]
    fn seed_messages_round_trip_and_an_older_peer_s_whole_seed_is_refused() {
        let msgs = [
            Msg::SeedBegin {
                format: SEED_FORMAT,
                lsn: 1 << 40,
                seed_id: 7,
            },
            Msg::SeedChunk(vec![1, 2, 3]),
            Msg::SeedEnd {
                len: 3,
                crc32c: 0xdead_beef,
            },
        ];
        for m in msgs {
            let back = read_msg_sync(&mut &m.encode()[..]).unwrap();
            assert_eq!(format!("{back:?}"), format!("{m:?}"));
        }
        let mut other = Msg::SeedBegin {
            format: SEED_FORMAT,
            lsn: 1,
            seed_id: 1,
        }
        .encode();
        other[5] = 9;
        let e = read_msg_sync(&mut &other[..]).unwrap_err();
        assert!(e.to_string().contains("seed format 9"), "{e}");
        // The single-frame seed of builds before streaming: type 3.
        let e = Msg::decode(vec![3, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("older Walden"), "{e}");
    }
}
