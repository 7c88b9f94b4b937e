//! Log shipping's view of the log: every slice of the record stream as the
//! flusher is about to write it, through a queue bounded in bytes.
//!
//! A subscriber that falls further behind than its bound (a stalled
//! network, a stopped secondary) is dropped rather than let hold the
//! primary's memory: it sees the queue end with [`Subscription::overflowed`]
//! set, and catches up from the log files instead.

use crate::Lsn;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// A slice of the record stream the flusher is about to write.
/// `cont_len` leading bytes continue a record begun in an earlier slice.
#[derive(Clone, Debug)]
pub struct LogWrite {
    pub lsn: Lsn,
    pub cont_len: u32,
    pub bytes: Arc<Vec<u8>>,
}

struct Gauge {
    queued: AtomicU64,
    overflowed: AtomicBool,
}

/// The receiving end (one per shipping link).
pub struct Subscription {
    rx: mpsc::Receiver<LogWrite>,
    gauge: Arc<Gauge>,
}

impl Subscription {
    /// The next write, waiting up to `timeout`. `Disconnected` means the log
    /// closed, or this subscriber fell behind its bound ([`Self::overflowed`]).
    pub fn recv_timeout(&self, timeout: Duration) -> Result<LogWrite, RecvTimeoutError> {
        let w = self.rx.recv_timeout(timeout)?;
        self.gauge.queued.fetch_sub(w.bytes.len() as u64, Relaxed);
        Ok(w)
    }

    /// Bytes published but not yet received.
    pub fn queued_bytes(&self) -> u64 {
        self.gauge.queued.load(Relaxed)
    }

    /// Whether the log dropped this subscriber for falling behind.
    pub fn overflowed(&self) -> bool {
        self.gauge.overflowed.load(Acquire)
    }
}

/// The log's end of one subscription.
pub(crate) struct Subscriber {
    tx: mpsc::Sender<LogWrite>,
    gauge: Arc<Gauge>,
    max_queued: u64,
}

impl Subscriber {
    pub(crate) fn new(max_queued: u64) -> (Subscriber, Subscription) {
        let (tx, rx) = mpsc::channel();
        let gauge = Arc::new(Gauge {
            queued: AtomicU64::new(0),
            overflowed: AtomicBool::new(false),
        });
        (
            Subscriber {
                tx,
                gauge: gauge.clone(),
                max_queued,
            },
            Subscription { rx, gauge },
        )
    }

    /// Queues `w`; false when the subscriber is gone or just fell behind
    /// its bound (then it is to be dropped).
    pub(crate) fn offer(&self, w: &LogWrite) -> bool {
        let n = w.bytes.len() as u64;
        let queued = self.gauge.queued.fetch_add(n, Relaxed) + n;
        if queued > self.max_queued {
            tracing::warn!(
                queued_bytes = queued,
                bound = self.max_queued,
                "a log shipping subscriber fell behind its bound; dropped (it catches up from the log files)"
            );
            self.gauge.overflowed.store(true, Release);
            return false;
        }
        self.tx.send(w.clone()).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(lsn: Lsn, n: usize) -> LogWrite {
        LogWrite {
            lsn,
            cont_len: 0,
            bytes: Arc::new(vec![0; n]),
        }
    }

    #[test]
    fn a_subscriber_past_its_bound_is_dropped_and_told() {
        let (s, sub) = Subscriber::new(1000);
        assert!(s.offer(&write(0, 600)));
        assert_eq!(sub.queued_bytes(), 600);
        assert_eq!(sub.recv_timeout(Duration::ZERO).unwrap().lsn, 0);
        assert_eq!(sub.queued_bytes(), 0);
        assert!(s.offer(&write(600, 600)));
        assert!(
            !s.offer(&write(1200, 600)),
            "1,200 queued bytes exceed 1,000"
        );
        assert!(sub.overflowed());
        drop(s);
        // What was queued before the bound is still delivered, then the end.
        assert_eq!(sub.recv_timeout(Duration::ZERO).unwrap().lsn, 600);
        assert!(matches!(
            sub.recv_timeout(Duration::ZERO),
            Err(RecvTimeoutError::Disconnected)
        ));
    }
}
