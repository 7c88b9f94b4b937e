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

use crate::block::{self, PAGE, SEGMENT_HEADER};
use crate::config::{LogConfig, SyncMode};
use crate::error::{io_err, LogError, Result};
use crate::scan::{self, RecordSink, ScanOptions, ScanOutcome, SegmentInfo};
use crate::segments::{SegmentFiles, Segments};
use crate::stats::{record_wait, CountingVfs, FileStats, LogCounters, WaitSinks, WaitType};
use crate::subscribe::{LogWrite, Subscriber, Subscription};
use crate::vfs::{OpenOptionsVfs, Vfs, VfsFile};
use crate::Lsn;
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

    /// [`LogManager::open`] with what a control file knows about the log.
    pub fn open_with(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        cfg: LogConfig,
        stats: Arc<FileStats>,
        from: Lsn,
        bounds: OpenBounds,
        on_record: &mut RecordSink<'_>,
    ) -> Result<(LogManager, RecoveryReport)> {
        cfg.validate().map_err(LogError::Config)?;
        let t0 = Instant::now();
        crate::vfs::create_dir_durable(&*vfs, dir).map_err(io_err(dir))?;
        let mut spares = Vec::new();
        let mut next_spare = 0;
        for name in vfs.list(dir).map_err(io_err(dir))? {
            if name.ends_with(".new") {
                // An interrupted preallocation.
                let _ = vfs.remove_file(&dir.join(&name));
            } else if let Some(n) = block::parse_spare_name(&name) {
                spares.push(dir.join(&name));
                next_spare = next_spare.max(n);
            }
        }
        let counting = CountingVfs {
            inner: vfs.clone(),
            stats: stats.clone(),
        };
        let outcome = scan::scan(
            &counting,
            dir,
            ScanOptions {
                from,
                max_block: cfg.block_size.max(scan::MAX_BLOCK),
                on_record,
                on_block: None,
            },
        )?;
        // Checked before any repair, so nothing is zeroed on a log that
        // lost hardened records.
        let required = bounds.min_end.max(from);
        if outcome.end_lsn < required {
            return Err(LogError::EndsEarly {
                dir: dir.to_path_buf(),
                end: outcome.end_lsn,
                required,
            });
        }
        let files = Arc::new(SegmentFiles {
            vfs: vfs.clone(),
            dir: dir.to_path_buf(),
            size: cfg.segment_size,
            dsync: cfg.sync_mode == SyncMode::Dsync,
            stats: stats.clone(),
            list: Mutex::new(Segments {
                active: outcome.segments.clone(),
                spares,
                next_spare,
                preallocating: false,
            }),
        });
        let mut on_disk = 0;
        for name in vfs.list(dir).map_err(io_err(dir))? {
            if block::parse_segment_name(&name).is_some()
                || block::parse_spare_name(&name).is_some()
            {
                if let Ok(f) = vfs.open(&dir.join(&name), OpenOptionsVfs::default()) {
                    on_disk += f.len().unwrap_or(0);
                }
            }
        }
        stats.size_on_disk_bytes.store(on_disk, Relaxed);

        // Remove what lies past the valid end so it can never be mistaken for
        // a continuation of the log written from now on.
        // A torn batch of the previous writer reaches at most its max_write
        // past the end (unknown: clear the whole rest of the segment).
        let zero_span = match bounds.prior_max_write {
            Some(m) => m.max(cfg.max_write) + PAGE,
            None => cfg.segment_size as usize,
        };
        for p in &outcome.discard {
            let f = vfs.open(p, OpenOptionsVfs::default()).map_err(io_err(p))?;
            let n = zero_span.min(f.len().map_err(io_err(p))? as usize);
            f.write_at(&vec![0u8; n], 0).map_err(io_err(p))?;
            f.sync_data().map_err(io_err(p))?;
            files.recycle(p)?;
        }
        let writer = if let Some(last) = outcome.segments.last() {
            let f = files.open_for_write(&last.path)?;
            let mut off = outcome.append_offset;
            // Always clear what a torn batch may have left past the end: a valid
            // but unsynced block there could otherwise pass for a continuation
            // of the log written from now on.
            if off < cfg.segment_size {
                let n = (zero_span as u64).min(cfg.segment_size - off) as usize;
                f.write_at(&vec![0u8; n], off).map_err(io_err(&last.path))?;
                f.sync_data().map_err(io_err(&last.path))?;
            }
            if off < SEGMENT_HEADER as u64 {
                off = SEGMENT_HEADER as u64;
            }
            Writer::new(f, last.seq, off, Vec::new())
        } else {
            let (f, header) = files.activate(1, outcome.end_lsn)?;
            // Make the empty log durable now so a crash before the first commit
            // still finds a valid segment.
            f.write_at(&header, 0).map_err(io_err(dir))?;
            f.sync_data().map_err(io_err(dir))?;
            Writer::new(f, 1, SEGMENT_HEADER as u64, Vec::new())
        };
        if !outcome.discard.is_empty() || outcome.segments.is_empty() {
            vfs.sync_dir(dir).map_err(io_err(dir))?;
        }
        let end = outcome.end_lsn;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                buf: Vec::with_capacity(cfg.block_size * 2),
                buf_lsn: end,
                end_lsn: end,
                hardened: end,
                buf_since: None,
                flush_target: end,
                waiters: BTreeMap::new(),
                next_waiter: 0,
                exposure: VecDeque::new(),
                max_exposure_bytes: cfg.max_exposure_bytes,
                max_exposure: cfg.max_exposure,
                flush_ewma: Duration::from_micros(500),
                poisoned: None,
                shutdown: false,
                closed: false,
                writer: Some(writer),
                flusher_wants_writer: false,
                flusher_idle: false,
            }),
            cfg,
            flusher_cv: Condvar::new(),
            space_cv: Condvar::new(),
            files,
            counters: LogCounters::default(),
            subscribers: Mutex::new(Vec::new()),
            has_subscribers: AtomicBool::new(false),
            waker: spawn_waker(),
        });
        if shared.cfg.preallocate_spare {
            shared.files.ensure_spare();
        }
        let s2 = shared.clone();
        let handle = std::thread::Builder::new()
            .name("walden-log-flusher".into())
            .spawn(move || flusher(s2))
            .map_err(io_err(dir))?;
        let report = RecoveryReport {
            scan: outcome,
            elapsed: t0.elapsed(),
        };
        Ok((
            LogManager {
                shared,
                flusher: Mutex::new(Some(handle)),
            },
            report,
        ))
    }

    /// Creates an empty log whose first record will have LSN `lsn` (for a
    /// database restored from backups, whose history starts there).
    pub fn init_at(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        cfg: &LogConfig,
        stats: Arc<FileStats>,
        lsn: Lsn,
    ) -> Result<()> {
        crate::vfs::create_dir_durable(&*vfs, dir).map_err(io_err(dir))?;
        if vfs
            .list(dir)
            .map_err(io_err(dir))?
            .iter()
            .any(|n| block::parse_segment_name(n).is_some())
        {
            return Err(LogError::Config(format!(
                "{} already holds a log",
                dir.display()
            )));
        }
        let files = SegmentFiles {
            vfs: vfs.clone(),
            dir: dir.to_path_buf(),
            size: cfg.segment_size,
            dsync: false,
            stats,
            list: Mutex::new(Segments {
                active: Vec::new(),
                spares: Vec::new(),
                next_spare: 0,
                preallocating: false,
            }),
        };
        let (f, header) = files.activate(1, lsn)?;
        f.write_at(&header, 0).map_err(io_err(dir))?;
        f.sync_data().map_err(io_err(dir))?;
        Ok(())
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

/// Block boundaries for `take` bytes of `buf`: (offset, length, cont_len) per
/// block, and how many bytes of a record continue past `take`.
/// `rec_remaining` is how many leading bytes of `buf` continue an earlier record.
fn plan_blocks(
    buf: &[u8],
    rec_remaining: u64,
    take: usize,
    payload: usize,
) -> (Vec<(usize, usize, u32)>, u64) {
    let mut blocks = Vec::with_capacity(take / payload + 1);
    let mut next_start = rec_remaining as usize;
    let mut off = 0;
    while off < take {
        let len = payload.min(take - off);
        let cont = next_start.saturating_sub(off).min(len) as u32;
        blocks.push((off, len, cont));
        // Records are appended whole, so a record starting inside `take` has
        // its length prefix inside `buf`.
        while next_start < off + len {
            let l = u32::from_le_bytes(buf[next_start..next_start + 4].try_into().unwrap());
            next_start += 4 + l as usize;
        }
        off += len;
    }
    (blocks, (next_start - take) as u64)
}

/// The flusher's own state: the segment being written and where.
struct Writer {
    file: Arc<dyn VfsFile>,
    seq: u64,
    off: u64,
    rec_remaining: u64,
    out: Vec<u8>,
    spare_buf: Vec<u8>,
}

impl Writer {
    fn new(file: Arc<dyn VfsFile>, seq: u64, off: u64, spare_buf: Vec<u8>) -> Self {
        Writer {
            file,
            seq,
            off,
            rec_remaining: 0,
            out: Vec::new(),
            spare_buf,
        }
    }

    /// Writes the planned blocks and makes them durable. Returns bytes written.
    fn write_batch(
        &mut self,
        sh: &Shared,
        start_lsn: Lsn,
        synced: Lsn,
        data: &[u8],
        plan: &[(usize, usize, u32)],
    ) -> Result<u64> {
        let seg_size = sh.cfg.segment_size;
        let mut touched: Vec<Arc<dyn VfsFile>> = Vec::with_capacity(2);
        let mut written = 0u64;
        self.out.clear();
        let mut run_off = self.off;
        for &(o, len, cont) in plan {
            let block_len = block::pad_to_page(block::BLOCK_HEADER + len) as u64;
            if self.off + block_len > seg_size {
                if !self.out.is_empty() {
                    self.file
                        .write_at(&self.out, run_off)
                        .map_err(io_err(&sh.files.dir))?;
                    written += self.out.len() as u64;
                    touched.push(self.file.clone());
                }
                self.out.clear();
                let (f, header) = sh.files.activate(self.seq + 1, start_lsn + o as u64)?;
                self.file = f;
                self.seq += 1;
                self.out.extend_from_slice(&header);
                run_off = 0;
                self.off = SEGMENT_HEADER as u64;
                if sh.cfg.preallocate_spare {
                    sh.files.ensure_spare();
                }
            }
            block::encode_block(
                &mut self.out,
                start_lsn + o as u64,
                synced,
                cont,
                &data[o..o + len],
            );
            self.off += block_len;
        }
        if !self.out.is_empty() {
            self.file
                .write_at(&self.out, run_off)
                .map_err(io_err(&sh.files.dir))?;
            written += self.out.len() as u64;
            touched.push(self.file.clone());
        }
        for f in &touched {
            f.sync_data().map_err(io_err(&sh.files.dir))?;
        }
        Ok(written)
    }
}

fn flush_delay(st: &State, cfg: &LogConfig) -> Duration {
    match st.max_exposure {
        Some(m) => cfg.max_flush_delay.min(m.saturating_sub(st.flush_ewma) / 2),
        None => cfg.max_flush_delay,
    }
}

fn wake(ready: BTreeMap<(Lsn, u64), Waiter>) {
    for (_, w) in ready {
        w.done.store(true, Release);
        w.thread.unpark();
    }
}

type Ready = BTreeMap<(Lsn, u64), Waiter>;

/// Wakes hardened committers on its own thread, so the flusher can start the
/// next write at once instead of spending microseconds per waiter on futex
/// wake-ups (which bound group commit at 16+ sessions otherwise).
fn spawn_waker() -> Option<mpsc::Sender<Ready>> {
    let (tx, rx) = mpsc::channel::<Ready>();
    std::thread::Builder::new()
        .name("walden-log-waker".into())
        .spawn(move || {
            while let Ok(ready) = rx.recv() {
                wake(ready);
            }
        })
        .ok()?;
    Some(tx)
}

/// A durable committer's own flush: writes everything buffered (in batches
/// of at most `max_write`) until `lsn` is hardened or the log is poisoned.
/// The caller holds the writer, so no other flush is running and everything
/// before `buf_lsn` is hardened.
fn lead_flush(sh: &Shared, st: &mut MutexGuard<'_, State>, w: &mut Writer, lsn: Lsn) {
    let max_take = (sh.cfg.max_write / sh.cfg.block_size) * sh.cfg.block_payload();
    while st.hardened < lsn && st.poisoned.is_none() {
        let pending = (st.end_lsn - st.buf_lsn) as usize;
        if pending == 0 {
            break;
        }
        flush_step(sh, st, w, pending.min(max_take));
    }
}

/// Writes and syncs the first `take` buffered bytes with the state mutex
/// released, then publishes the new hardened LSN and wakes the waiters it
/// covers; on failure poisons the log and wakes everyone. The caller holds
/// the writer (taken out of the state), which keeps flushes in LSN order.
fn flush_step(sh: &Shared, st: &mut MutexGuard<'_, State>, w: &mut Writer, take: usize) {
    let payload = sh.cfg.block_payload();
    let (plan, rem_after) = plan_blocks(&st.buf, w.rec_remaining, take, payload);
    let cont0 = w.rec_remaining as u32;
    let data = if take == st.buf.len() {
        let fresh = std::mem::take(&mut w.spare_buf);
        st.buf_since = None;
        std::mem::replace(&mut st.buf, fresh)
    } else {
        let d = st.buf[..take].to_vec();
        st.buf.drain(..take);
        d
    };
    let start_lsn = st.buf_lsn;
    st.buf_lsn += take as u64;
    let synced = st.hardened;
    let t0 = Instant::now();
    let res = MutexGuard::unlocked(st, || {
        if sh.has_subscribers.load(Acquire) {
            publish(
                sh,
                LogWrite {
                    lsn: start_lsn,
                    cont_len: cont0,
                    bytes: Arc::new(data.clone()),
                },
            );
        }
        w.write_batch(sh, start_lsn, synced, &data, &plan)
    });
    let took = t0.elapsed();
    let mut data = data;
    data.clear();
    w.spare_buf = data;
    match res {
        Ok(written) => {
            w.rec_remaining = rem_after;
            let end = start_lsn + take as u64;
            st.hardened = end;
            st.flush_ewma = (st.flush_ewma * 7 + took) / 8;
            let max_age = st.max_exposure;
            // Not only from the front: acknowledgement order is not LSN
            // order, and a hardened entry left behind would make the next
            // acknowledgement wait for nothing and overstate the exposure.
            let counters = &sh.counters;
            st.exposure.retain(|&(l, t)| {
                if l > end {
                    return true;
                }
                let age = t.elapsed();
                if max_age.is_some_and(|m| age > m) {
                    counters.exposure_bound_misses.fetch_add(1, Relaxed);
                }
                counters
                    .peak_exposure_us
                    .fetch_max(age.as_micros() as u64, Relaxed);
                false
            });
            let rest = st.waiters.split_off(&(end + 1, 0));
            let ready = std::mem::replace(&mut st.waiters, rest);
            sh.counters.log_flushes.fetch_add(1, Relaxed);
            sh.counters.log_bytes_flushed.fetch_add(written, Relaxed);
            sh.space_cv.notify_all();
            MutexGuard::unlocked(st, || match &sh.waker {
                Some(tx) if ready.len() > 1 => {
                    if let Err(mpsc::SendError(ready)) = tx.send(ready) {
                        wake(ready);
                    }
                }
                _ => wake(ready),
            });
        }
        Err(e) => {
            tracing::error!(error = %e, "log write failed; database poisoned");
            st.poisoned = Some(e.to_string());
            let ready = std::mem::take(&mut st.waiters);
            sh.space_cv.notify_all();
            MutexGuard::unlocked(st, || wake(ready));
        }
    }
}

fn flusher(sh: Arc<Shared>) {
    let payload = sh.cfg.block_payload();
    let max_take = (sh.cfg.max_write / sh.cfg.block_size) * payload;
    let mut st = sh.state.lock();
    loop {
        st.flusher_wants_writer = false;
        if st.poisoned.is_some() {
            break;
        }
        let pending = (st.end_lsn - st.buf_lsn) as usize;
        if pending == 0 {
            // At shutdown, a committer's flush may still be in flight: wait for
            // it, so its waiters are woken hardened rather than told "closed".
            if st.shutdown {
                if st.writer.is_some() {
                    break;
                }
                st.flusher_wants_writer = true;
            }
            st.flusher_idle = true;
            sh.flusher_cv.wait(&mut st);
            st.flusher_idle = false;
            continue;
        }
        let urgent = st.flush_target > st.buf_lsn || st.shutdown;
        let delay = flush_delay(&st, &sh.cfg);
        let since = st.buf_since.unwrap_or_else(Instant::now);
        let due = since.elapsed() >= delay;
        if !(urgent || due || pending >= payload) {
            sh.flusher_cv.wait_until(&mut st, since + delay);
            continue;
        }
        let Some(mut w) = st.writer.take() else {
            // A committer is flushing; it notifies us when it puts the writer back.
            st.flusher_wants_writer = true;
            sh.flusher_cv.wait(&mut st);
            continue;
        };
        let take = if urgent || due {
            pending.min(max_take)
        } else {
            (pending.min(max_take) / payload) * payload
        };
        flush_step(&sh, &mut st, &mut w, take);
        st.writer = Some(w);
    }
    // Poisoned or shut down: release anyone still waiting.
    let ready = std::mem::take(&mut st.waiters);
    sh.space_cv.notify_all();
    drop(st);
    wake(ready);
}

fn publish(sh: &Shared, w: LogWrite) {
    let mut subs = sh.subscribers.lock();
    subs.retain(|s| s.offer(&w));
    if subs.is_empty() {
        sh.has_subscribers.store(false, Release);
    }
}

/// Directory helper for callers that keep a log under a database directory.
pub fn log_dir(db_dir: &Path) -> PathBuf {
    db_dir.join("log")
}
