//! Always-on counters: per-file I/O, wait statistics and log counters.
//!
//! Plain relaxed atomics: cheap enough to keep on in every build, and read
//! as cumulative values the way SQL Server's DMVs present them.

use crate::vfs::VfsFile;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `sys.dm_io_virtual_file_stats` for one logical file.
#[derive(Debug, Default)]
pub struct FileStats {
    pub num_of_writes: AtomicU64,
    pub num_of_bytes_written: AtomicU64,
    pub io_stall_write_us: AtomicU64,
    pub num_of_reads: AtomicU64,
    pub num_of_bytes_read: AtomicU64,
    pub io_stall_read_us: AtomicU64,
    pub size_on_disk_bytes: AtomicU64,
    /// Zero-filling writes that preallocate segments (kept apart from log writes).
    pub prealloc_writes: AtomicU64,
    pub prealloc_bytes: AtomicU64,
}

/// A copy of [`FileStats`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FileStatsSnapshot {
    pub num_of_writes: u64,
    pub num_of_bytes_written: u64,
    pub io_stall_write_ms: f64,
    pub num_of_reads: u64,
    pub num_of_bytes_read: u64,
    pub io_stall_read_ms: f64,
    pub size_on_disk_bytes: u64,
    pub prealloc_writes: u64,
    pub prealloc_bytes: u64,
}

impl FileStats {
    pub fn snapshot(&self) -> FileStatsSnapshot {
        FileStatsSnapshot {
            num_of_writes: self.num_of_writes.load(Relaxed),
            num_of_bytes_written: self.num_of_bytes_written.load(Relaxed),
            io_stall_write_ms: self.io_stall_write_us.load(Relaxed) as f64 / 1000.0,
            num_of_reads: self.num_of_reads.load(Relaxed),
            num_of_bytes_read: self.num_of_bytes_read.load(Relaxed),
            io_stall_read_ms: self.io_stall_read_us.load(Relaxed) as f64 / 1000.0,
            size_on_disk_bytes: self.size_on_disk_bytes.load(Relaxed),
            prealloc_writes: self.prealloc_writes.load(Relaxed),
            prealloc_bytes: self.prealloc_bytes.load(Relaxed),
        }
    }
}

/// A file wrapper that counts every call into [`FileStats`]. A sync's time is
/// charged to the write stall, as SQL Server charges the whole log write.
pub struct CountingFile {
    inner: Arc<dyn VfsFile>,
    stats: Arc<FileStats>,
}

impl CountingFile {
    pub fn new(inner: Arc<dyn VfsFile>, stats: Arc<FileStats>) -> Self {
        Self { inner, stats }
    }
    pub fn inner(&self) -> &Arc<dyn VfsFile> {
        &self.inner
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

impl VfsFile for CountingFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let t = Instant::now();
        let r = self.inner.read_at(buf, offset);
        self.stats.num_of_reads.fetch_add(1, Relaxed);
        if let Ok(n) = r {
            self.stats.num_of_bytes_read.fetch_add(n as u64, Relaxed);
        }
        self.stats
            .io_stall_read_us
            .fetch_add(us(t.elapsed()), Relaxed);
        r
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let t = Instant::now();
        let r = self.inner.write_at(buf, offset);
        self.stats.num_of_writes.fetch_add(1, Relaxed);
        if r.is_ok() {
            self.stats
                .num_of_bytes_written
                .fetch_add(buf.len() as u64, Relaxed);
        }
        self.stats
            .io_stall_write_us
            .fetch_add(us(t.elapsed()), Relaxed);
        r
    }
    fn sync_data(&self) -> io::Result<()> {
        let t = Instant::now();
        let r = self.inner.sync_data();
        self.stats
            .io_stall_write_us
            .fetch_add(us(t.elapsed()), Relaxed);
        r
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn is_dsync(&self) -> bool {
        self.inner.is_dsync()
    }
}

/// Wait types, named as SQL Server names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitType {
    /// A commit waiting for its log to be hardened.
    WriteLog,
    /// A commit waiting for room in the log buffer.
    LogBuffer,
    /// A writer waiting for another transaction's row lock.
    LckMX,
    /// A commit waiting for a synchronous secondary to harden.
    HadrSyncCommit,
    /// A commit waiting for a bounded-lag asynchronous secondary to catch
    /// up to within its bound (Walden's own).
    HadrLagBound,
}

impl WaitType {
    pub const ALL: [WaitType; 5] = [
        WaitType::WriteLog,
        WaitType::LogBuffer,
        WaitType::LckMX,
        WaitType::HadrSyncCommit,
        WaitType::HadrLagBound,
    ];
    pub fn name(self) -> &'static str {
        match self {
            WaitType::WriteLog => "WRITELOG",
            WaitType::LogBuffer => "LOGBUFFER",
            WaitType::LckMX => "LCK_M_X",
            WaitType::HadrSyncCommit => "HADR_SYNC_COMMIT",
            WaitType::HadrLagBound => "HADR_LAG_BOUND",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Default)]
struct WaitCounter {
    count: AtomicU64,
    total_us: AtomicU64,
    max_us: AtomicU64,
}

/// Wait statistics (one per instance, and one per session).
#[derive(Debug, Default)]
pub struct WaitStats {
    counters: [WaitCounter; 5],
}

/// One row of `sys.dm_os_wait_stats`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WaitRow {
    pub wait_type: WaitType,
    pub waiting_tasks_count: u64,
    pub wait_time_ms: f64,
    pub max_wait_time_ms: f64,
}

impl WaitStats {
    pub fn record(&self, t: WaitType, d: Duration) {
        let c = &self.counters[t.index()];
        let u = us(d);
        c.count.fetch_add(1, Relaxed);
        c.total_us.fetch_add(u, Relaxed);
        c.max_us.fetch_max(u, Relaxed);
    }
    pub fn get(&self, t: WaitType) -> WaitRow {
        let c = &self.counters[t.index()];
        WaitRow {
            wait_type: t,
            waiting_tasks_count: c.count.load(Relaxed),
            wait_time_ms: c.total_us.load(Relaxed) as f64 / 1000.0,
            max_wait_time_ms: c.max_us.load(Relaxed) as f64 / 1000.0,
        }
    }
    pub fn rows(&self) -> Vec<WaitRow> {
        WaitType::ALL.iter().map(|&t| self.get(t)).collect()
    }
    /// `DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)`.
    pub fn clear(&self) {
        for c in &self.counters {
            c.count.store(0, Relaxed);
            c.total_us.store(0, Relaxed);
            c.max_us.store(0, Relaxed);
        }
    }
}

/// Where a wait is recorded: the instance's stats and the session's.
pub type WaitSinks<'a> = &'a [&'a WaitStats];

pub(crate) fn record_wait(sinks: WaitSinks<'_>, t: WaitType, d: Duration) {
    for s in sinks {
        s.record(t, d);
    }
}

/// Cumulative log counters of one database (`sys.dm_os_performance_counters`).
#[derive(Debug, Default)]
pub struct LogCounters {
    /// Write-and-harden cycles of the flusher.
    pub log_flushes: AtomicU64,
    /// Bytes written by those cycles (blocks with padding).
    pub log_bytes_flushed: AtomicU64,
    /// Cycles that took 40 ms or more (each also logs `slow log flush`,
    /// at most one line a second).
    pub slow_log_flushes: AtomicU64,
    /// Microseconds commits spent waiting for log flushes (WRITELOG).
    pub log_flush_wait_us: AtomicU64,
    /// Record bytes appended.
    pub log_bytes_appended: AtomicU64,
    /// Records appended.
    pub records_appended: AtomicU64,
    /// Delayed commits acknowledged before hardening.
    pub delayed_commits: AtomicU64,
    /// Durable commits (waited for hardening).
    pub durable_commits: AtomicU64,
    /// Delayed commits that had to wait to stay within the exposure bound.
    pub exposure_bound_waits: AtomicU64,
    /// Hardening cycles that found an acknowledged commit older than `max_exposure_ms`
    /// (the disk was slower than the bound allows).
    pub exposure_bound_misses: AtomicU64,
    /// High-water mark of acknowledged-but-unhardened log bytes, since the
    /// log opened or the last [`LogCounters::reset_peaks`].
    pub peak_exposure_bytes: AtomicU64,
    /// Longest time an acknowledged delayed commit stayed unhardened
    /// (microseconds), over the same span.
    pub peak_exposure_us: AtomicU64,
}

impl LogCounters {
    /// Starts the exposure high-water marks afresh
    /// (`DBCC SQLPERF('sys.dm_log_exposure', CLEAR)`).
    pub fn reset_peaks(&self) {
        self.peak_exposure_bytes
            .store(0, std::sync::atomic::Ordering::Relaxed);
        self.peak_exposure_us
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A file system view whose files count their I/O into one [`FileStats`]
/// (the log's reads during recovery and backups show up in its counters).
pub struct CountingVfs {
    pub inner: Arc<dyn crate::vfs::Vfs>,
    pub stats: Arc<FileStats>,
}

impl crate::vfs::Vfs for CountingVfs {
    fn open(
        &self,
        path: &std::path::Path,
        opts: crate::vfs::OpenOptionsVfs,
    ) -> io::Result<Arc<dyn VfsFile>> {
        let f = self.inner.open(path, opts)?;
        Ok(Arc::new(CountingFile::new(f, self.stats.clone())))
    }
    fn exists(&self, path: &std::path::Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn create_dir_all(&self, path: &std::path::Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn list(&self, dir: &std::path::Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn remove_file(&self, path: &std::path::Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_dir_all(&self, path: &std::path::Path) -> io::Result<()> {
        self.inner.remove_dir_all(path)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
}
