//! The log manager: the in-memory log buffer, the flusher thread, group
//! commit, delayed commits and their loss bound.
//!
//! Commit path, in one paragraph: a committer appends its record to the
//! buffer under one mutex and gets the record's end LSN. A delayed committer
//! returns at once (unless the exposure bound says wait). A durable one needs
//! `hardened >= lsn`. All log I/O goes through one `Writer`, which whoever
//! flushes takes out of the state (so one flush runs at a time, in LSN
//! order): if no flush is running, the durable committer takes it and writes
//! and syncs the buffer itself (no thread hand-off on the path of a lone
//! session); otherwise it parks, and the flusher thread (woken when the writer
//! comes back) writes the next group. A flush takes whatever is buffered,
//! cuts it into blocks, writes and syncs them with the mutex released (so
//! appends go on during the I/O), publishes the new hardened LSN and unparks
//! exactly the waiters it covers. The flusher thread also hardens delayed
//! commits after `max_flush_delay` and full blocks as they fill.

mod flush;
mod open;

use crate::block::{self, PAGE, SEGMENT_HEADER};
use crate::config::{LogConfig, SyncMode};
use crate::error::{io_err, LogError, Result};
use crate::scan::{self, RecordSink, ScanOptions, ScanOutcome, SegmentInfo};
use crate::segments::{SegmentFiles, Segments};
use crate::stats::{record_wait, CountingVfs, FileStats, LogCounters, WaitSinks, WaitType};
use crate::subscribe::{LogWrite, Subscriber, Subscription};
use crate::vfs::{OpenOptionsVfs, Vfs, VfsFile};
use crate::Lsn;
use flush::*;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed, Ordering::*};
use std::sync::{mpsc, Arc};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// The live exposure of delayed durability (`sys.dm_log_exposure`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Exposure {
    /// Log bytes of acknowledged delayed commits that are not yet hardened.
    pub unhardened_bytes: u64,
    /// Acknowledged delayed commits not yet hardened.
    pub unhardened_commits: u64,
    /// Age of the oldest of them, in milliseconds.
    pub oldest_age_ms: f64,
    pub end_lsn: Lsn,
    pub hardened_lsn: Lsn,
}

/// What a caller knows about a log from outside it (a database's control
/// file), for [`LogManager::open_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenBounds {
    /// The log must reach at least this LSN: it was hardened once (a
    /// checkpoint's LSN, the hardened LSN at a clean shutdown). Ending
    /// before it is a lost segment or damage, not a torn tail.
    pub min_end: Lsn,
    /// The largest write the previous writer could issue (how far a torn
    /// batch reaches); `None` when unknown.
    pub prior_max_write: Option<usize>,
}

/// What recovery found.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub scan: ScanOutcome,
    pub elapsed: Duration,
}

struct Waiter {
    thread: Thread,
    done: Arc<AtomicBool>,
}

struct State {
    buf: Vec<u8>,
    /// LSN of `buf[0]`: everything before it has been handed to the flusher.
    buf_lsn: Lsn,
    end_lsn: Lsn,
    hardened: Lsn,
    /// When the oldest byte in `buf` was appended.
    buf_since: Option<Instant>,
    /// Highest LSN a waiter needs hardened.
    flush_target: Lsn,
    waiters: BTreeMap<(Lsn, u64), Waiter>,
    next_waiter: u64,
    /// Acknowledged delayed commits not yet hardened: (end LSN, acknowledged at, bytes).
    exposure: VecDeque<(Lsn, Instant)>,
    max_exposure_bytes: Option<u64>,
    max_exposure: Option<Duration>,
    /// Smoothed write+sync latency, for the exposure deadline.
    flush_ewma: Duration,
    poisoned: Option<String>,
    shutdown: bool,
    closed: bool,
    /// The log's only writer; `None` while a flush is running.
    writer: Option<Writer>,
    /// The flusher thread waits for the writer to come back.
    flusher_wants_writer: bool,
    /// The flusher sleeps with no deadline (its buffer was empty).
    flusher_idle: bool,
}

struct Shared {
    cfg: LogConfig,
    state: Mutex<State>,
    flusher_cv: Condvar,
    space_cv: Condvar,
    files: Arc<SegmentFiles>,
    counters: LogCounters,
    subscribers: Mutex<Vec<Subscriber>>,
    has_subscribers: AtomicBool,
    /// Hands groups of hardened committers to the waker thread.
    waker: Option<mpsc::Sender<Ready>>,
}

/// The log of one database.
pub struct LogManager {
    shared: Arc<Shared>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for LogManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogManager")
            .field("dir", &self.shared.files.dir)
            .finish()
    }
}

fn frame_len(rec: &[u8]) -> u64 {
    4 + rec.len() as u64
}

impl LogManager {
    /// Opens (or creates) the log in `dir`, replaying every record from `from`
    /// (a checkpoint LSN) through `on_record(start, end, bytes)`, cutting off a
    /// torn tail, and starting the flusher. The log must reach `from`.
    pub fn open(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        cfg: LogConfig,
        stats: Arc<FileStats>,
        from: Lsn,
        on_record: &mut RecordSink<'_>,
    ) -> Result<(LogManager, RecoveryReport)> {
        let bounds = OpenBounds {
            min_end: from,
            prior_max_write: Some(cfg.max_write),
        };
        Self::open_with(vfs, dir, cfg, stats, from, bounds, on_record)
    }

    pub fn config(&self) -> &LogConfig {
        &self.shared.cfg
    }

    pub fn dir(&self) -> &Path {
        &self.shared.files.dir
    }

    pub fn counters(&self) -> &LogCounters {
        &self.shared.counters
    }

    pub fn file_stats(&self) -> &Arc<FileStats> {
        &self.shared.files.stats
    }

    fn check(st: &State) -> Result<()> {
        if let Some(p) = &st.poisoned {
            return Err(LogError::Poisoned(p.clone()));
        }
        if st.closed || st.shutdown {
            return Err(LogError::Closed);
        }
        Ok(())
    }

    /// Appends one record to the buffer and returns its end LSN. Waits
    /// (LOGBUFFER) while the buffer holds `buffer_size` of unhardened log.
    pub fn append(&self, rec: &[u8], waits: WaitSinks<'_>) -> Result<Lsn> {
        // Refused here, not discovered by the next recovery.
        scan::check_record_len(rec.len())?;
        let sh = &*self.shared;
        let n = frame_len(rec);
        let mut st = sh.state.lock();
        Self::check(&st)?;
        let cap = sh.cfg.buffer_size as u64;
        if st.end_lsn - st.hardened + n > cap && st.end_lsn > st.hardened {
            let t0 = Instant::now();
            while st.end_lsn - st.hardened + n > cap && st.end_lsn > st.hardened {
                st.flush_target = st.flush_target.max(st.end_lsn);
                sh.flusher_cv.notify_one();
                sh.space_cv.wait(&mut st);
                Self::check(&st)?;
            }
            record_wait(waits, WaitType::LogBuffer, t0.elapsed());
        }
        if st.buf.is_empty() {
            st.buf_since = Some(Instant::now());
        }
        let before = st.buf.len();
        st.buf.extend_from_slice(&(rec.len() as u32).to_le_bytes());
        st.buf.extend_from_slice(rec);
        st.end_lsn += n;
        let end = st.end_lsn;
        let payload = sh.cfg.block_payload();
        if before < payload && st.buf.len() >= payload {
            sh.flusher_cv.notify_one();
        }
        drop(st);
        sh.counters.records_appended.fetch_add(1, Relaxed);
        sh.counters.log_bytes_appended.fetch_add(n, Relaxed);
        Ok(end)
    }

    /// Waits until the log is hardened through `lsn` (WRITELOG).
    pub fn wait_hardened(&self, lsn: Lsn, waits: WaitSinks<'_>) -> Result<()> {
        self.harden(lsn, waits, WaitType::WriteLog)
    }

    /// Waits until the log is hardened through `lsn`, counting the wait as
    /// `kind`: WRITELOG for a commit waiting for its own log, LOGBUFFER for a
    /// delayed commit held back by an exposure bound.
    fn harden(&self, lsn: Lsn, waits: WaitSinks<'_>, kind: WaitType) -> Result<()> {
        let sh = &*self.shared;
        let mut st = sh.state.lock();
        if st.hardened >= lsn {
            return Ok(());
        }
        if let Some(p) = &st.poisoned {
            return Err(LogError::Poisoned(p.clone()));
        }
        if lsn > st.end_lsn {
            return Err(LogError::Config(format!(
                "cannot wait for LSN {lsn} beyond the end of the log {}",
                st.end_lsn
            )));
        }
        let t0 = Instant::now();
        st.flush_target = st.flush_target.max(lsn);
        if !st.shutdown {
            if let Some(mut w) = st.writer.take() {
                // No flush is running: write and sync ourselves rather than
                // wake the flusher and wait to be woken (two hand-offs).
                lead_flush(sh, &mut st, &mut w, lsn);
                st.writer = Some(w);
                if st.flusher_wants_writer || st.poisoned.is_some() {
                    sh.flusher_cv.notify_one();
                }
                let res = if st.hardened >= lsn {
                    Ok(())
                } else {
                    Err(LogError::Poisoned(
                        st.poisoned.clone().unwrap_or_else(|| "log closed".into()),
                    ))
                };
                drop(st);
                let waited = t0.elapsed();
                record_wait(waits, kind, waited);
                sh.counters
                    .log_flush_wait_us
                    .fetch_add(waited.as_micros() as u64, Relaxed);
                return res;
            }
        }
        let done = Arc::new(AtomicBool::new(false));
        let id = st.next_waiter;
        st.next_waiter += 1;
        st.waiters.insert(
            (lsn, id),
            Waiter {
                thread: std::thread::current(),
                done: done.clone(),
            },
        );
        sh.flusher_cv.notify_one();
        drop(st);
        while !done.load(Acquire) {
            std::thread::park();
        }
        let waited = t0.elapsed();
        record_wait(waits, kind, waited);
        sh.counters
            .log_flush_wait_us
            .fetch_add(waited.as_micros() as u64, Relaxed);
        let st = sh.state.lock();
        if st.hardened >= lsn {
            Ok(())
        } else {
            Err(LogError::Poisoned(
                st.poisoned.clone().unwrap_or_else(|| "log closed".into()),
            ))
        }
    }

    /// A fully durable commit: appends and waits until hardened.
    pub fn commit_durable(&self, rec: &[u8], waits: WaitSinks<'_>) -> Result<Lsn> {
        let lsn = self.append(rec, waits)?;
        self.wait_hardened(lsn, waits)?;
        self.shared.counters.durable_commits.fetch_add(1, Relaxed);
        Ok(lsn)
    }

    /// A delayed commit: appends and returns once the record is buffered,
    /// waiting only if acknowledging it would break the exposure bound.
    pub fn commit_delayed(&self, rec: &[u8], waits: WaitSinks<'_>) -> Result<Lsn> {
        let lsn = self.append(rec, waits)?;
        self.acknowledge_delayed(lsn, waits)?;
        Ok(lsn)
    }

    /// Acknowledges a delayed commit whose commit record ends at `lsn`,
    /// enforcing `max_exposure_bytes` and `max_exposure` first.
    ///
    /// Both bounds are checked against the log's state under its mutex, in
    /// the same critical section that records the acknowledgement, so they
    /// hold exactly at every acknowledgement:
    /// - bytes: no more than `max_exposure_bytes` of acknowledged log is
    ///   unhardened once this commit is acknowledged;
    /// - time: no acknowledged commit has been unhardened for
    ///   `max_exposure` or longer when this one is acknowledged.
    ///
    /// A commit that would break either waits (LOGBUFFER) until the log is
    /// hardened far enough. So the commits a crash can lose were all
    /// acknowledged within one `max_exposure` of each other, and hold at
    /// most `max_exposure_bytes` of log.
    pub fn acknowledge_delayed(&self, lsn: Lsn, waits: WaitSinks<'_>) -> Result<()> {
        let sh = &*self.shared;
        let mut st = sh.state.lock();
        let mut held = false;
        loop {
            // A poisoned log will never harden this commit: it must not be
            // acknowledged (the caller reports its outcome as unknown).
            if let Some(p) = &st.poisoned {
                return Err(LogError::Poisoned(p.clone()));
            }
            let mut need: Option<Lsn> = None;
            if let Some(maxb) = st.max_exposure_bytes {
                if lsn.saturating_sub(st.hardened) > maxb {
                    need = Some(lsn - maxb);
                }
            }
            if let Some(maxd) = st.max_exposure {
                // Entries leave the queue in the same critical section that
                // moves `hardened` past them: all are unhardened. The queue
                // is in acknowledgement order, which is not LSN order (a
                // commit appended later may be acknowledged first): the
                // target is the highest LSN among the stale ones.
                let now = Instant::now();
                let stale = st
                    .exposure
                    .iter()
                    .take_while(|(_, t)| now.saturating_duration_since(*t) >= maxd)
                    .map(|e| e.0)
                    .max();
                if let Some(s) = stale {
                    need = Some(need.map_or(s, |n| n.max(s)));
                }
            }
            match need {
                Some(target) if st.hardened < target => {
                    drop(st);
                    if !held {
                        held = true;
                        sh.counters.exposure_bound_waits.fetch_add(1, Relaxed);
                    }
                    self.harden(target, waits, WaitType::LogBuffer)?;
                    st = sh.state.lock();
                }
                _ => break,
            }
        }
        if st.hardened < lsn {
            st.exposure.push_back((lsn, Instant::now()));
            sh.counters
                .peak_exposure_bytes
                .fetch_max(lsn - st.hardened, Relaxed);
            // The flusher may be asleep without a deadline (its buffer was
            // empty when it last looked): wake it to arm the max_flush_delay
            // timer, or this commit would wait for some other event to be
            // hardened. Durable commits need no wake: they flush themselves
            // or ask for a flush.
            if st.flusher_idle {
                sh.flusher_cv.notify_one();
            }
        }
        drop(st);
        sh.counters.delayed_commits.fetch_add(1, Relaxed);
        Ok(())
    }

    /// `sp_flush_log`: hardens everything appended so far; returns the hardened LSN.
    pub fn flush(&self, waits: WaitSinks<'_>) -> Result<Lsn> {
        let end = self.shared.state.lock().end_lsn;
        self.wait_hardened(end, waits)?;
        Ok(end)
    }

    pub fn end_lsn(&self) -> Lsn {
        self.shared.state.lock().end_lsn
    }

    pub fn hardened_lsn(&self) -> Lsn {
        self.shared.state.lock().hardened
    }

    /// Refuses every later append, as a failed write does: the caller found
    /// state that the log and the database no longer agree on.
    pub fn poison(&self, reason: String) {
        let mut st = self.shared.state.lock();
        if st.poisoned.is_none() {
            tracing::error!(%reason, "database poisoned");
            st.poisoned = Some(reason);
        }
        let ready = std::mem::take(&mut st.waiters);
        self.shared.space_cv.notify_all();
        drop(st);
        wake(ready);
    }

    pub fn is_poisoned(&self) -> Option<String> {
        self.shared.state.lock().poisoned.clone()
    }

    /// The live exposure.
    pub fn exposure(&self) -> Exposure {
        let st = self.shared.state.lock();
        let last = st.exposure.iter().map(|e| e.0).max().unwrap_or(st.hardened);
        Exposure {
            unhardened_bytes: last.saturating_sub(st.hardened),
            unhardened_commits: st.exposure.len() as u64,
            oldest_age_ms: st
                .exposure
                .front()
                .map(|e| e.1.elapsed().as_secs_f64() * 1000.0)
                .unwrap_or(0.0),
            end_lsn: st.end_lsn,
            hardened_lsn: st.hardened,
        }
    }

    /// Changes the loss bound of delayed commits.
    pub fn set_exposure_bounds(&self, bytes: Option<u64>, max_age: Option<Duration>) {
        let mut st = self.shared.state.lock();
        st.max_exposure_bytes = bytes;
        st.max_exposure = max_age;
    }

    /// Subscribes to the slices of the record stream as they are written
    /// (for log shipping); dropped once more than `max_queued` bytes wait.
    pub fn subscribe(&self, max_queued: u64) -> Subscription {
        let (tx, rx) = Subscriber::new(max_queued);
        self.shared.subscribers.lock().push(tx);
        self.shared.has_subscribers.store(true, Release);
        rx
    }

    /// Waits (up to `timeout`) for the background zero-filling of a spare
    /// segment to finish; returns whether it did.
    pub fn wait_preallocation(&self, timeout: Duration) -> bool {
        self.shared.files.wait_preallocation(timeout)
    }

    /// Makes sure a spare segment is ready now (zero-filling one if none
    /// is), waiting up to `timeout`: for measurements that should not share
    /// the disk with a preallocation they did not cause. Returns whether a
    /// spare is ready.
    pub fn prepare_spare(&self, timeout: Duration) -> bool {
        if !self.shared.cfg.preallocate_spare {
            return false;
        }
        self.shared.files.ensure_spare();
        self.shared.files.wait_preallocation(timeout) && self.shared.files.has_spare()
    }

    /// Segments currently holding log, oldest first.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        self.shared.files.snapshot()
    }

    /// Reads hardened records in `[from, to)`; `from` must be a record boundary.
    pub fn read_range(&self, from: Lsn, to: Lsn, emit: &mut RecordSink<'_>) -> Result<()> {
        let hardened = self.hardened_lsn();
        if to > hardened {
            return Err(LogError::Config(format!(
                "LSN {to} is not hardened yet (hardened through {hardened})"
            )));
        }
        if from >= to {
            return Ok(());
        }
        let segs = self.segments();
        let counting = CountingVfs {
            inner: self.shared.files.vfs.clone(),
            stats: self.shared.files.stats.clone(),
        };
        scan::read_range(
            &counting,
            &segs,
            from,
            to,
            self.shared.cfg.block_size.max(scan::MAX_BLOCK),
            emit,
        )
    }

    /// Lets segments that hold only log before `lsn` be reused.
    pub fn release_before(&self, lsn: Lsn) -> Result<usize> {
        let lsn = lsn.min(self.hardened_lsn());
        self.shared.files.release_before(lsn)
    }

    /// Hardens everything, stops the flusher and closes the log.
    pub fn close(&self) -> Result<()> {
        let handle = self.flusher.lock().take();
        let Some(handle) = handle else {
            return Ok(());
        };
        {
            let mut st = self.shared.state.lock();
            st.shutdown = true;
            self.shared.flusher_cv.notify_one();
        }
        let _ = handle.join();
        let mut st = self.shared.state.lock();
        st.closed = true;
        if let Some(p) = &st.poisoned {
            return Err(LogError::Poisoned(p.clone()));
        }
        Ok(())
    }
}

impl Drop for LogManager {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Directory helper for callers that keep a log under a database directory.
pub fn log_dir(db_dir: &Path) -> PathBuf {
    db_dir.join("log")
}
