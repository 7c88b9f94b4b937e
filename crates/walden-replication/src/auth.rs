//! Peer authentication on replication connections.
//!
//! Every instance of a group holds the same shared secret. On connect the
//! primary (client) and the endpoint (server) exchange fresh 32-byte nonces
//! and each proves it knows the secret with HMAC-SHA-256 over the whole
//! exchange; the secret itself never crosses the wire. The client proves
//! first, so a stranger who connects to an endpoint learns nothing it could
//! test guesses against. Both sides then derive one key per direction, and
//! (unless TLS protects the stream) every frame carries a MAC over that key,
//! an implicit frame counter and the frame, so a frame cannot be injected,
//! altered, replayed or reordered.
//!
//! Wire layout (before any protocol frame):
//!
//! ```text
//! client: offer  = MAGIC(8) mode(1) client_nonce(32)
//! server: answer = MAGIC(8) 0 mode(1) server_nonce(32) | MAGIC(8) 1 len(u16) reason
//! client: proof(32)                                     (secret mode only)
//! server: 0 proof(32) | 1 len(u16) reason               (secret mode only)
//! ```

use ring::hmac;
use std::fmt;
use std::io;
use subtle::ConstantTimeEq;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Protocol name and version: anything else is not a Walden replica.
pub const MAGIC: &[u8; 8] = b"WALDNRP\x01";
pub const NONCE_LEN: usize = 32;
pub const TAG_LEN: usize = 32;
pub const OFFER_LEN: usize = MAGIC.len() + 1 + NONCE_LEN;
/// Longest refusal reason read from a peer.
const MAX_REASON: usize = 1024;
/// Shortest secret accepted: a short one falls to guessing.
pub const MIN_SECRET_LEN: usize = 16;

const MODE_NONE: u8 = 0;
const MODE_SECRET: u8 = 1;

/// The shared secret; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Secret, String> {
        let b = bytes.into();
        if b.len() < MIN_SECRET_LEN {
            return Err(format!(
                "the replication secret must be at least {MIN_SECRET_LEN} bytes (it has {})",
                b.len()
            ));
        }
        Ok(Secret(b))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// How this instance authenticates replication peers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PeerAuth {
    /// No proof asked or given: allowed only when the endpoint listens on
    /// loopback (or TLS with a CA authenticates the peer), and a primary
    /// then ships only to loopback endpoints (or over that TLS).
    #[default]
    None,
    /// Mutual challenge-response with the shared secret.
    Secret(Secret),
}

impl PeerAuth {
    fn mode(&self) -> u8 {
        match self {
            PeerAuth::None => MODE_NONE,
            PeerAuth::Secret(_) => MODE_SECRET,
        }
    }
    pub fn desc(&self) -> &'static str {
        match self {
            PeerAuth::None => "none",
            PeerAuth::Secret(_) => "secret",
        }
    }
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The peer did not prove itself, spoke another protocol, or refused us.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// The peer refused this side (its reason).
    #[error("refused by the peer: {0}")]
    Refused(String),
    #[error("I/O error during the handshake: {0}")]
    Io(#[from] io::Error),
}

/// One direction's frame MAC: a key and the number of frames so far.
pub struct FrameMac {
    key: hmac::Key,
    counter: u64,
}

impl FrameMac {
    pub fn new(key: &[u8]) -> FrameMac {
        FrameMac {
            key: hmac::Key::new(hmac::HMAC_SHA256, key),
            counter: 0,
        }
    }

    fn context(&self, parts: &[&[u8]]) -> hmac::Context {
        let mut c = hmac::Context::with_key(&self.key);
        c.update(&self.counter.to_le_bytes());
        for p in parts {
            c.update(p);
        }
        c
    }

    /// Appends the tag to a whole frame (length header included, already
    /// counting the tag) and advances the counter.
    pub fn seal(&mut self, frame: &mut Vec<u8>) {
        let tag = self.context(&[frame]).sign();
        frame.extend_from_slice(tag.as_ref());
        self.counter += 1;
    }

    /// Checks the tag ending a frame (`head`: its length header, `body`:
    /// the rest); on success gives the length of the body without the tag.
    /// A failure leaves the counter alone: the connection is dropped anyway.
    pub fn open(&mut self, head: &[u8; 4], body: &[u8]) -> Result<usize, String> {
        if body.len() < 1 + TAG_LEN {
            return Err("frame too short to carry a MAC".into());
        }
        let n = body.len() - TAG_LEN;
        let expect = self.context(&[head, &body[..n]]).sign();
        // Constant time: no early exit on the first differing byte.
        if !bool::from(expect.as_ref().ct_eq(&body[n..])) {
            return Err(format!(
                "frame {} failed authentication (forged, altered, replayed or reordered)",
                self.counter
            ));
        }
        self.counter += 1;
        Ok(n)
    }
}

/// The per-direction MACs a finished secret handshake gives.
pub struct SessionMacs {
    pub send: FrameMac,
    pub recv: FrameMac,
}

impl fmt::Debug for SessionMacs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionMacs(..)")
    }
}

fn nonce() -> [u8; NONCE_LEN] {
    use ring::rand::SecureRandom;
    let mut n = [0u8; NONCE_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut n)
        .expect("the system random source works");
    n
}

fn prf(secret: &Secret, label: &[u8], transcript: &[u8]) -> hmac::Tag {
    let key = hmac::Key::new(hmac::HMAC_SHA256, &secret.0);
    let mut c = hmac::Context::with_key(&key);
    c.update(label);
    c.update(transcript);
    c.sign()
}

fn check_proof(secret: &Secret, label: &[u8], transcript: &[u8], proof: &[u8]) -> Result<(), ()> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, &secret.0);
    let mut msg = label.to_vec();
    msg.extend_from_slice(transcript);
    hmac::verify(&key, &msg, proof).map_err(|_| ())
}

const CLIENT_PROOF: &[u8] = b"walden replication client proof";
const SERVER_PROOF: &[u8] = b"walden replication server proof";
const KEY_C2S: &[u8] = b"walden replication frames client to server";
const KEY_S2C: &[u8] = b"walden replication frames server to client";

fn session(secret: &Secret, transcript: &[u8], client: bool) -> SessionMacs {
    let c2s = FrameMac::new(prf(secret, KEY_C2S, transcript).as_ref());
    let s2c = FrameMac::new(prf(secret, KEY_S2C, transcript).as_ref());
    if client {
        SessionMacs {
            send: c2s,
            recv: s2c,
        }
    } else {
        SessionMacs {
            send: s2c,
            recv: c2s,
        }
    }
}

/// A client's offer, parsed.
#[derive(Debug, PartialEq, Eq)]
pub struct Offer {
    pub mode: u8,
    pub nonce: [u8; NONCE_LEN],
}

impl Offer {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.push(self.mode);
        b.extend_from_slice(&self.nonce);
        b
    }
    pub fn parse(b: &[u8]) -> Result<Offer, String> {
        if b.len() != OFFER_LEN {
            return Err(format!("offer of {} bytes", b.len()));
        }
        if &b[..8] != MAGIC {
            return Err("not a Walden replication peer (bad greeting)".into());
        }
        let mode = b[8];
        if mode != MODE_NONE && mode != MODE_SECRET {
            return Err(format!("unknown authentication mode {mode}"));
        }
        Ok(Offer {
            mode,
            nonce: b[9..].try_into().unwrap(),
        })
    }
}

fn refusal(reason: &str) -> Vec<u8> {
    let r = &reason.as_bytes()[..reason.len().min(MAX_REASON)];
    let mut b = vec![1u8];
    b.extend_from_slice(&(r.len() as u16).to_le_bytes());
    b.extend_from_slice(r);
    b
}

async fn read_refusal<S: AsyncRead + Unpin>(s: &mut S) -> Result<String, HandshakeError> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).await?;
    let n = u16::from_le_bytes(len) as usize;
    if n > MAX_REASON {
        return Err(HandshakeError::Auth("refusal reason too long".into()));
    }
    let mut r = vec![0u8; n];
    s.read_exact(&mut r).await?;
    Ok(String::from_utf8_lossy(&r).into_owned())
}

async fn send<S: AsyncWrite + Unpin>(s: &mut S, b: &[u8]) -> io::Result<()> {
    s.write_all(b).await?;
    s.flush().await
}

/// The connecting side (a primary). `Ok(Some(macs))` after a secret
/// handshake, `Ok(None)` when neither side uses a secret.
pub async fn client_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    auth: &PeerAuth,
) -> Result<Option<SessionMacs>, HandshakeError> {
    let offer = Offer {
        mode: auth.mode(),
        nonce: nonce(),
    }
    .encode();
    send(s, &offer).await?;
    let mut head = [0u8; 9];
    s.read_exact(&mut head).await?;
    if &head[..8] != MAGIC {
        return Err(HandshakeError::Auth(
            "the endpoint is not a Walden replication endpoint (bad greeting)".into(),
        ));
    }
    match head[8] {
        0 => {}
        1 => return Err(HandshakeError::Refused(read_refusal(s).await?)),
        x => return Err(HandshakeError::Auth(format!("bad answer status {x}"))),
    }
    let mut rest = [0u8; 1 + NONCE_LEN];
    s.read_exact(&mut rest).await?;
    if rest[0] != auth.mode() {
        return Err(HandshakeError::Auth(format!(
            "the endpoint's authentication mode ({}) differs from this instance's ({})",
            if rest[0] == MODE_NONE {
                "none"
            } else {
                "secret"
            },
            auth.desc()
        )));
    }
    let PeerAuth::Secret(secret) = auth else {
        return Ok(None);
    };
    let mut transcript = offer;
    transcript.extend_from_slice(&head);
    transcript.extend_from_slice(&rest);
    send(s, prf(secret, CLIENT_PROOF, &transcript).as_ref()).await?;
    let mut status = [0u8; 1];
    s.read_exact(&mut status).await?;
    match status[0] {
        0 => {}
        1 => return Err(HandshakeError::Refused(read_refusal(s).await?)),
        x => return Err(HandshakeError::Auth(format!("bad proof status {x}"))),
    }
    let mut proof = [0u8; TAG_LEN];
    s.read_exact(&mut proof).await?;
    check_proof(secret, SERVER_PROOF, &transcript, &proof).map_err(|_| {
        HandshakeError::Auth(
            "the endpoint does not know the replication secret (bad server proof)".into(),
        )
    })?;
    Ok(Some(session(secret, &transcript, true)))
}

/// The endpoint side. Refusals are sent to the peer (with the reason)
/// before the error is returned.
pub async fn server_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    auth: &PeerAuth,
) -> Result<Option<SessionMacs>, HandshakeError> {
    let mut offer = [0u8; OFFER_LEN];
    s.read_exact(&mut offer).await?;
    let refuse = |why: String| async move {
        let mut b = MAGIC.to_vec();
        b.extend(refusal(&why));
        (b, why)
    };
    let o = match Offer::parse(&offer) {
        Ok(o) => o,
        Err(why) => {
            let (b, why) = refuse(why).await;
            let _ = send(s, &b).await;
            return Err(HandshakeError::Auth(why));
        }
    };
    if o.mode != auth.mode() {
        let why = match auth {
            PeerAuth::Secret(_) => {
                "this endpoint requires the replication secret; the connecting instance has none"
            }
            PeerAuth::None => {
                "this endpoint has no replication secret; the connecting instance uses one"
            }
        };
        let (b, why) = refuse(why.to_string()).await;
        let _ = send(s, &b).await;
        return Err(HandshakeError::Auth(why));
    }
    let mut answer = MAGIC.to_vec();
    answer.push(0);
    answer.push(auth.mode());
    answer.extend_from_slice(&nonce());
    send(s, &answer).await?;
    let PeerAuth::Secret(secret) = auth else {
        return Ok(None);
    };
    let mut transcript = offer.to_vec();
    transcript.extend_from_slice(&answer);
    let mut proof = [0u8; TAG_LEN];
    s.read_exact(&mut proof).await?;
    if check_proof(secret, CLIENT_PROOF, &transcript, &proof).is_err() {
        let why = "the connecting instance does not know the replication secret (bad client proof)";
        let _ = send(s, &refusal(why)).await;
        return Err(HandshakeError::Auth(why.into()));
    }
    let mut ok = vec![0u8];
    ok.extend_from_slice(prf(secret, SERVER_PROOF, &transcript).as_ref());
    send(s, &ok).await?;
    Ok(Some(session(secret, &transcript, false)))
}

/// Polls a handshake over in-memory I/O to its end (it never waits).
fn run_in_memory<F: std::future::Future>(f: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(r) => r,
        std::task::Poll::Pending => unreachable!("in-memory I/O never waits"),
    }
}

/// The endpoint's handshake against `input` (all a peer sends), with what
/// it answers; whether it authenticated the peer. For the fuzz targets.
#[doc(hidden)]
pub fn server_handshake_on(
    input: &[u8],
    auth: &PeerAuth,
) -> (Result<bool, HandshakeError>, Vec<u8>) {
    let mut io = tokio::io::join(input, Vec::new());
    let r = run_in_memory(server_handshake(&mut io, auth)).map(|m| m.is_some());
    (r, io.into_inner().1)
}

/// The primary's handshake against `input` (all an endpoint sends). For
/// the fuzz targets.
#[doc(hidden)]
pub fn client_handshake_on(input: &[u8], auth: &PeerAuth) -> Result<bool, HandshakeError> {
    let mut io = tokio::io::join(input, Vec::new());
    run_in_memory(client_handshake(&mut io, auth)).map(|m| m.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> PeerAuth {
        PeerAuth::Secret(Secret::new(s).unwrap())
    }

    async fn pair(
        a: PeerAuth,
        b: PeerAuth,
    ) -> (
        Result<Option<SessionMacs>, HandshakeError>,
        Result<Option<SessionMacs>, HandshakeError>,
    ) {
        let (mut c, mut s) = tokio::io::duplex(4096);
        let server = tokio::spawn(async move { server_handshake(&mut s, &b).await });
        let client = client_handshake(&mut c, &a).await;
        drop(c);
        (client, server.await.unwrap())
    }

    #[tokio::test]
    async fn the_same_secret_authenticates_both_ways_and_frames_check() {
        let (c, s) = pair(
            secret("0123456789abcdef-one"),
            secret("0123456789abcdef-one"),
        )
        .await;
        let mut c = c.unwrap().unwrap();
        let mut s = s.unwrap().unwrap();
        let mut f1 = vec![1, 2, 3, 4, 5];
        c.send.seal(&mut f1);
        let mut f2 = vec![9, 9, 9, 9, 9];
        c.send.seal(&mut f2);
        let split =
            |f: &[u8]| -> ([u8; 4], Vec<u8>) { (f[..4].try_into().unwrap(), f[4..].to_vec()) };
        let (h1, b1) = split(&f1);
        let (h2, b2) = split(&f2);
        // Reordered: the second frame first fails.
        assert!(s.recv.open(&h2, &b2).is_err());
        assert_eq!(s.recv.open(&h1, &b1), Ok(1));
        // Replayed: the first frame again fails.
        assert!(s.recv.open(&h1, &b1).is_err());
        assert_eq!(s.recv.open(&h2, &b2), Ok(1));
        // A frame of one direction is not valid in the other, nor altered.
        let mut back = vec![7, 7, 7, 7, 7];
        s.send.seal(&mut back);
        let (hb, bb) = split(&back);
        let mut forged = bb.clone();
        forged[0] ^= 1;
        assert!(c.recv.open(&hb, &forged).is_err());
        assert!(c.recv.open(&hb, &bb).is_ok());
    }

    #[tokio::test]
    async fn a_wrong_secret_or_a_missing_one_is_refused() {
        let (c, s) = pair(
            secret("0123456789abcdef-one"),
            secret("0123456789abcdef-two"),
        )
        .await;
        assert!(matches!(c, Err(HandshakeError::Refused(_))), "{c:?}");
        assert!(matches!(s, Err(HandshakeError::Auth(_))), "{s:?}");
        let (c, s) = pair(PeerAuth::None, secret("0123456789abcdef-one")).await;
        assert!(matches!(c, Err(HandshakeError::Refused(_))), "{c:?}");
        assert!(matches!(s, Err(HandshakeError::Auth(_))), "{s:?}");
        let (c, s) = pair(secret("0123456789abcdef-one"), PeerAuth::None).await;
        assert!(c.is_err() && s.is_err());
        let (c, s) = pair(PeerAuth::None, PeerAuth::None).await;
        assert!(c.unwrap().is_none() && s.unwrap().is_none());
        // In memory (the fuzz targets' way): a bare offer passes the first
        // step and stops for want of a proof; garbage is refused.
        let a = secret("0123456789abcdef-one");
        let offer = Offer {
            mode: MODE_SECRET,
            nonce: [1; NONCE_LEN],
        }
        .encode();
        let (r, out) = server_handshake_on(&offer, &a);
        assert!(matches!(r, Err(HandshakeError::Io(_))), "{r:?}");
        assert_eq!(out.len(), MAGIC.len() + 2 + NONCE_LEN);
        let (r, out) = server_handshake_on(&[0; OFFER_LEN], &a);
        assert!(matches!(r, Err(HandshakeError::Auth(_))));
        assert_eq!(out[8], 1, "a refusal");
        assert!(client_handshake_on(&out, &a).is_err());
        assert!(Secret::new("short").is_err());
    }
}
