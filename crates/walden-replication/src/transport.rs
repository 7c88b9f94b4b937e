//! A replication connection: TCP, optionally inside TLS, carrying frames
//! that are MAC'd after a secret handshake (unless TLS protects them).
//! Seeding and catch-up run on the runtime ([`Conn`]); the live link then
//! moves to plain threads, one reading and one writing ([`FrameReader`],
//! [`FrameWriter`]).

use crate::auth::{FrameMac, SessionMacs, TAG_LEN};
use crate::proto::{frame_len, Msg};
use parking_lot::Mutex;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// The byte stream under the frames.
pub(crate) enum Stream {
    Plain(TcpStream),
    Client(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    Server(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Client(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Server(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Client(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Stream::Server(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Client(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Stream::Server(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Client(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Server(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Frames one message, sealing it when a MAC is in use.
pub fn seal(m: &Msg, mac: Option<&mut FrameMac>) -> Vec<u8> {
    let mut b = m.encode();
    if let Some(mac) = mac {
        let n = (b.len() - 4 + TAG_LEN) as u32;
        b[..4].copy_from_slice(&n.to_le_bytes());
        mac.seal(&mut b);
    }
    b
}

/// Checks (when a MAC is in use) and decodes one whole frame: `head` is
/// its length header, `body` the rest.
pub fn open(head: [u8; 4], body: Vec<u8>, mac: Option<&mut FrameMac>) -> io::Result<Msg> {
    let Some(mac) = mac else {
        return Msg::decode(body);
    };
    let n = mac
        .open(&head, &body)
        .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e))?;
    let mut body = body;
    body.truncate(n);
    Msg::decode(body)
}

/// A connection during its handshake, seeding and catch-up.
pub(crate) struct Conn {
    pub stream: Stream,
    pub macs: Option<SessionMacs>,
}

impl Conn {
    pub async fn send(&mut self, m: &Msg) -> io::Result<()> {
        let b = seal(m, self.macs.as_mut().map(|s| &mut s.send));
        self.stream.write_all(&b).await?;
        self.stream.flush().await
    }

    pub async fn recv(&mut self) -> io::Result<Msg> {
        let mut head = [0u8; 4];
        self.stream.read_exact(&mut head).await?;
        let n = frame_len(head)?;
        let mut body = vec![0u8; n];
        self.stream.read_exact(&mut body).await?;
        open(head, body, self.macs.as_mut().map(|s| &mut s.recv))
    }

    /// Hands the connection to plain threads: a reader, a writer and the
    /// socket itself (to register for shutdown, set read timeouts on and
    /// close).
    pub fn into_blocking(self) -> Result<(FrameReader, FrameWriter, std::net::TcpStream), String> {
        let (send, recv) = match self.macs {
            Some(m) => (Some(m.send), Some(m.recv)),
            None => (None, None),
        };
        let std_sock = |s: TcpStream| -> Result<std::net::TcpStream, String> {
            let s = s.into_std().map_err(|e| e.to_string())?;
            s.set_nonblocking(false).map_err(|e| e.to_string())?;
            Ok(s)
        };
        let (sock, tls) = match self.stream {
            Stream::Plain(s) => (std_sock(s)?, None),
            Stream::Client(t) => {
                let (s, c) = t.into_inner();
                (std_sock(s)?, Some(rustls::Connection::Client(c)))
            }
            Stream::Server(t) => {
                let (s, c) = t.into_inner();
                (std_sock(s)?, Some(rustls::Connection::Server(c)))
            }
        };
        let clone = || sock.try_clone().map_err(|e| e.to_string());
        let (r, w): (Box<dyn Read + Send>, Box<dyn Write + Send>) = match tls {
            None => (Box::new(clone()?), Box::new(clone()?)),
            Some(mut c) => {
                // Everything queued is written at once, whatever its size.
                c.set_buffer_limit(None);
                let shared = Arc::new(TlsShared {
                    conn: Mutex::new(c),
                    wsock: Mutex::new(clone()?),
                });
                (
                    Box::new(TlsReader {
                        shared: shared.clone(),
                        sock: clone()?,
                        pending: Vec::new(),
                        at: 0,
                    }),
                    Box::new(TlsWriter { shared }),
                )
            }
        };
        Ok((
            FrameReader {
                r: io::BufReader::with_capacity(256 * 1024, r),
                mac: recv,
            },
            FrameWriter { w, mac: send },
            sock,
        ))
    }
}

/// The reading half of a live link.
pub(crate) struct FrameReader {
    r: io::BufReader<Box<dyn Read + Send>>,
    mac: Option<FrameMac>,
}

impl FrameReader {
    /// Blocking read of one message. A read timeout before a frame begins
    /// comes back as `WouldBlock`/`TimedOut` (how readers poll).
    pub fn recv(&mut self) -> io::Result<Msg> {
        let (head, body) = crate::proto::read_frame_sync(&mut self.r)?;
        open(head, body, self.mac.as_mut())
    }

    /// Whether a whole frame is already buffered (reading it needs nothing
    /// more from the socket).
    pub fn has_whole_frame(&self) -> bool {
        crate::proto::has_whole_frame(self.r.buffer())
    }
}

/// The writing half of a live link.
pub(crate) struct FrameWriter {
    w: Box<dyn Write + Send>,
    mac: Option<FrameMac>,
}

impl FrameWriter {
    pub fn send(&mut self, m: &Msg) -> io::Result<()> {
        let b = seal(m, self.mac.as_mut());
        self.w.write_all(&b)?;
        self.w.flush()
    }
}

/// One TLS session shared by a reading and a writing thread. The session
/// state is locked only to move bytes through it, never across a blocking
/// socket read; socket writes keep their order under `wsock`, taken before
/// the session is released.
struct TlsShared {
    conn: Mutex<rustls::Connection>,
    wsock: Mutex<std::net::TcpStream>,
}

impl TlsShared {
    /// Writes out whatever the session has queued (called with it locked).
    fn write_out(&self, mut c: parking_lot::MutexGuard<'_, rustls::Connection>) -> io::Result<()> {
        if !c.wants_write() {
            return Ok(());
        }
        let mut out = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut out)?;
        }
        let mut w = self.wsock.lock();
        drop(c);
        w.write_all(&out)
    }
}

struct TlsReader {
    shared: Arc<TlsShared>,
    sock: std::net::TcpStream,
    /// Bytes read from the socket not yet taken by the session.
    pending: Vec<u8>,
    at: usize,
}

impl Read for TlsReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut c = self.shared.conn.lock();
            while self.at < self.pending.len() {
                let mut rest = &self.pending[self.at..];
                match c.read_tls(&mut rest) {
                    Ok(0) => break,
                    Ok(n) => self.at += n,
                    // Its buffers are full: hand out plaintext first.
                    Err(_) => break,
                }
                c.process_new_packets()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            }
            match c.reader().read(buf) {
                Ok(n) => {
                    self.shared.write_out(c)?;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            let stuck = self.at < self.pending.len();
            self.shared.write_out(c)?;
            if stuck {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "TLS session accepts no more input and gives no plaintext",
                ));
            }
            let mut tmp = [0u8; 16 * 1024];
            let n = self.sock.read(&mut tmp)?;
            if n == 0 {
                return Ok(0);
            }
            self.pending.clear();
            self.pending.extend_from_slice(&tmp[..n]);
            self.at = 0;
        }
    }
}

struct TlsWriter {
    shared: Arc<TlsShared>,
}

impl Write for TlsWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut c = self.shared.conn.lock();
        let n = c.writer().write(buf)?;
        self.shared.write_out(c)?;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How long a peer has to finish TLS and authentication.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether a TLS failure (rustls reports them as `InvalidData`) rather than
/// the network ended a handshake.
fn tls_failure(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::InvalidData
}

/// A primary's connection to an endpoint, authenticated both ways.
pub(crate) async fn connect(inner: &crate::Inner, addr: &str) -> Result<Conn, String> {
    use crate::auth::{client_handshake, HandshakeError, PeerAuth};
    if inner.cfg.auth == PeerAuth::None && inner.tls.is_none() && !crate::config::is_loopback(addr)
    {
        return Err(format!(
            "replication auth is \"none\": log is shipped only to loopback endpoints, not {addr}; configure a replication secret or TLS"
        ));
    }
    let tcp = tokio::time::timeout(std::time::Duration::from_secs(2), TcpStream::connect(addr))
        .await
        .map_err(|_| format!("connect to {addr} timed out"))?
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let handshake = async {
        let mut stream = match &inner.tls {
            None => Stream::Plain(tcp),
            Some(t) => {
                let name = crate::tls::server_name(addr).map_err(HandshakeError::Auth)?;
                let s = t.connector.connect(name, tcp).await.map_err(|e| {
                    if tls_failure(&e) {
                        HandshakeError::Auth(format!("TLS: {e}"))
                    } else {
                        HandshakeError::Io(e)
                    }
                })?;
                Stream::Client(Box::new(s))
            }
        };
        let macs = client_handshake(&mut stream, &inner.cfg.auth).await?;
        Ok::<_, HandshakeError>(Conn {
            // TLS already authenticates every byte.
            macs: if inner.tls.is_some() { None } else { macs },
            stream,
        })
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
        Err(_) => Err(format!("handshake with {addr} timed out")),
        Ok(Ok(c)) => Ok(c),
        Ok(Err(HandshakeError::Auth(why))) => {
            inner.auth_failed(addr, &why);
            Err(format!("authentication of {addr} failed: {why}"))
        }
        Ok(Err(HandshakeError::Refused(why))) => {
            tracing::warn!(endpoint = %addr, reason = %why, "replication endpoint refused this instance");
            Err(format!("refused by {addr}: {why}"))
        }
        Ok(Err(HandshakeError::Io(e))) => Err(format!("handshake with {addr}: {e}")),
    }
}

/// An endpoint's side of a new connection: `None` (logged, and counted
/// when authentication failed) unless the peer proved itself.
pub(crate) async fn accept(
    inner: &crate::Inner,
    tcp: TcpStream,
    peer: std::net::SocketAddr,
) -> Option<Conn> {
    use crate::auth::{server_handshake, HandshakeError};
    if tcp.set_nodelay(true).is_err() {
        return None;
    }
    let handshake = async {
        let mut stream = match &inner.tls {
            None => Stream::Plain(tcp),
            Some(t) => {
                let s = t.acceptor.accept(tcp).await.map_err(|e| {
                    if tls_failure(&e) {
                        HandshakeError::Auth(format!("TLS: {e}"))
                    } else {
                        HandshakeError::Io(e)
                    }
                })?;
                Stream::Server(Box::new(s))
            }
        };
        let macs = server_handshake(&mut stream, &inner.cfg.auth).await?;
        Ok::<_, HandshakeError>(Conn {
            macs: if inner.tls.is_some() { None } else { macs },
            stream,
        })
    };
    let peer = peer.to_string();
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
        Err(_) => {
            inner.auth_failed(&peer, "did not finish the handshake in time");
            None
        }
        Ok(Ok(c)) => Some(c),
        Ok(Err(HandshakeError::Auth(why))) => {
            inner.auth_failed(&peer, &why);
            None
        }
        Ok(Err(e)) => {
            tracing::debug!(peer = %peer, error = %e, "replication connection ended during its handshake");
            None
        }
    }
}

/// Reads and checks one sealed frame from a byte stream (the live link's
/// reader without its socket). For the fuzz targets.
#[doc(hidden)]
pub fn read_sealed<R: Read>(r: &mut R, mac: &mut FrameMac) -> io::Result<Msg> {
    let (head, body) = crate::proto::read_frame_sync(r)?;
    open(head, body, Some(mac))
}
