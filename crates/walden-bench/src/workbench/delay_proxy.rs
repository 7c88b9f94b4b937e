//! A TCP proxy that adds a fixed delay in each direction, for measuring a
//! synchronous secondary behind a slower network on one machine.
//!
//! Why userspace: the usual tool, `tc qdisc add dev lo root netem delay D`,
//! needs root and the sch_netem kernel module, which the machines Walden is
//! benchmarked on do not have ("Specified qdisc kind is unknown"). The proxy
//! holds every chunk it reads for `delay` before writing it on, like netem
//! on one link: a round trip through it takes `2 x delay` more, order is
//! kept, and throughput is not capped (chunks in flight overlap).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A listening proxy; stopped (and its connections cut) when dropped.
pub struct DelayProxy {
    addr: SocketAddr,
    delay: Duration,
    stop: Arc<AtomicBool>,
    /// Every socket the proxy opened, to shut them down at the end.
    conns: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl DelayProxy {
    /// Listens on an ephemeral loopback port and forwards each connection
    /// to `upstream`, `delay` late in each direction.
    pub fn start(upstream: SocketAddr, delay: Duration) -> std::io::Result<DelayProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (stop2, conns2) = (stop.clone(), conns.clone());
        let acceptor = std::thread::Builder::new()
            .name("wb-delay-proxy".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if stop2.load(SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(upstream) else {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    };
                    // A pair that cannot be set up is dropped; the client
                    // sees its connection close and retries.
                    let _ = connect_pair(client, server, delay, &conns2);
                }
            })?;
        Ok(DelayProxy {
            addr,
            delay,
            stop,
            conns,
            acceptor: Some(acceptor),
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn delay(&self) -> Duration {
        self.delay
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
        for s in self
            .conns
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
        {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn connect_pair(
    client: TcpStream,
    server: TcpStream,
    delay: Duration,
    conns: &Mutex<Vec<TcpStream>>,
) -> std::io::Result<()> {
    // Each chunk is forwarded as soon as it is due: Nagle would hold small
    // ones back for the previous one's ACK and add its own delay.
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    if let Ok(mut v) = conns.lock() {
        v.push(client.try_clone()?);
        v.push(server.try_clone()?);
    }
    pump(client.try_clone()?, server.try_clone()?, delay)?;
    pump(server, client, delay)?;
    Ok(())
}

/// Forwards `from` to `to`: a reader stamps each chunk with when it is due,
/// a writer sleeps until then and writes it (so order is kept and chunks
/// overlap in flight).
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::Builder::new()
        .name("wb-proxy-read".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx
                            .send((Instant::now() + delay, buf[..n].to_vec()))
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
        })?;
    std::thread::Builder::new()
        .name("wb-proxy-write".into())
        .spawn(move || {
            while let Ok((due, chunk)) = rx.recv() {
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                if to.write_all(&chunk).is_err() {
                    break;
                }
            }
            // The reader saw the end (or an error): pass it on.
            let _ = to.shutdown(Shutdown::Write);
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_each_direction_and_keeps_order() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = echo.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut buf = [0u8; 1024];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => s.write_all(&buf[..n]).unwrap(),
                }
            }
        });
        let proxy = DelayProxy::start(upstream, Duration::from_millis(20)).unwrap();
        let mut c = TcpStream::connect(proxy.addr()).unwrap();
        c.set_nodelay(true).unwrap();
        let t0 = Instant::now();
        for i in 0..5u8 {
            c.write_all(&[i]).unwrap();
        }
        let mut got = [0u8; 5];
        c.read_exact(&mut got).unwrap();
        let rtt = t0.elapsed();
        assert_eq!(got, [0, 1, 2, 3, 4], "order kept");
        assert!(rtt >= Duration::from_millis(40), "20 ms each way: {rtt:?}");
        assert!(rtt < Duration::from_millis(500), "chunks overlap: {rtt:?}");
        drop(proxy);
    }
}
