//! The disk's raw sync-write ceiling: what a log writer could reach at best.
//!
//! Timed writes overwriting a preallocated, zero-filled and fsynced file (an
//! append would also change file metadata and cost more), so the figures are
//! directly comparable with a log that writes into preallocated segments.

use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One ceiling measurement.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct DiskCeiling {
    /// 4 KB writes per second through a file opened with `O_DSYNC`.
    pub dsync_4k_writes_per_s: f64,
    /// 4 KB `pwrite` + `fdatasync` pairs per second.
    pub fdatasync_4k_writes_per_s: f64,
    /// 60 KB writes per second through `O_DSYNC` (one full log block each).
    pub dsync_60k_writes_per_s: f64,
    /// The same in MB/s (10^6 bytes).
    pub dsync_60k_mb_per_s: f64,
}

impl DiskCeiling {
    /// The state of the disk this measurement saw: `fast` above 2,000 4 KB
    /// synchronous writes per second, `slow` otherwise (docs: FACTS.md, "The disk").
    pub fn state(&self) -> DiskState {
        DiskState::of(self.dsync_4k_writes_per_s)
    }
}

/// Which of its two states the disk was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiskState {
    Fast,
    Slow,
    /// Fast at one end of a round and slow at the other.
    Mixed,
}

/// Synchronous 4 KB writes per second above which the disk counts as fast.
pub const FAST_THRESHOLD: f64 = 2000.0;

impl DiskState {
    pub fn of(dsync_4k_writes_per_s: f64) -> DiskState {
        if dsync_4k_writes_per_s > FAST_THRESHOLD {
            DiskState::Fast
        } else {
            DiskState::Slow
        }
    }
    /// The state over a span measured at both ends.
    pub fn span(a: DiskState, b: DiskState) -> DiskState {
        if a == b {
            a
        } else {
            DiskState::Mixed
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            DiskState::Fast => "fast",
            DiskState::Slow => "slow",
            DiskState::Mixed => "mixed",
        }
    }
}

/// A preallocated file to measure on.
pub struct CeilingFile {
    path: PathBuf,
    len: u64,
}

const KB4: usize = 4096;
const KB60: usize = 60 * 1024;

impl CeilingFile {
    /// Creates `dir/ceiling.dat` of `len` bytes (rounded up to 1 MiB), zero-filled and fsynced.
    pub fn create(dir: &Path, len: u64) -> io::Result<CeilingFile> {
        let len = len.max(1 << 20).div_ceil(1 << 20) * (1 << 20);
        let path = dir.join("ceiling.dat");
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        let chunk = vec![0u8; 1 << 20];
        let mut off = 0;
        while off < len {
            f.write_all_at(&chunk, off)?;
            off += chunk.len() as u64;
        }
        f.sync_all()?;
        File::open(dir)?.sync_all()?;
        Ok(CeilingFile { path, len })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Measures the three ceilings, `secs` each.
    pub fn measure(&self, secs: f64) -> io::Result<DiskCeiling> {
        let d4 = self.dsync_rate(KB4, secs)?;
        let f4 = self.fdatasync_rate(KB4, secs)?;
        let d60 = self.dsync_rate(KB60, secs)?;
        Ok(DiskCeiling {
            dsync_4k_writes_per_s: d4,
            fdatasync_4k_writes_per_s: f4,
            dsync_60k_writes_per_s: d60,
            dsync_60k_mb_per_s: d60 * KB60 as f64 / 1e6,
        })
    }

    /// Writes of `size` bytes per second through `O_DSYNC`.
    pub fn dsync_rate(&self, size: usize, secs: f64) -> io::Result<f64> {
        let f = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DSYNC)
            .open(&self.path)?;
        self.timed(&f, size, secs, |_| Ok(()))
    }

    /// `pwrite` of `size` bytes then `fdatasync`, per second.
    pub fn fdatasync_rate(&self, size: usize, secs: f64) -> io::Result<f64> {
        let f = OpenOptions::new().write(true).open(&self.path)?;
        self.timed(&f, size, secs, |f| f.sync_data())
    }

    /// Overwrites the file sequentially (wrapping around) for `secs`.
    fn timed(
        &self,
        f: &File,
        size: usize,
        secs: f64,
        after: impl Fn(&File) -> io::Result<()>,
    ) -> io::Result<f64> {
        let buf = vec![0xA5u8; size];
        let slots = (self.len / size as u64).max(1);
        let dur = Duration::from_secs_f64(secs.max(0.001));
        let t0 = Instant::now();
        let mut n: u64 = 0;
        loop {
            f.write_all_at(&buf, (n % slots) * size as u64)?;
            after(f)?;
            n += 1;
            if t0.elapsed() >= dur {
                break;
            }
        }
        Ok(n as f64 / t0.elapsed().as_secs_f64())
    }
}

impl Drop for CeilingFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Drops the page-cache copy of every file directly in `dir` (they must be
/// clean, that is synced), so the next read comes from the disk.
pub fn evict_dir(dir: &Path) -> io::Result<u64> {
    let mut bytes = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if !e.file_type()?.is_file() {
            continue;
        }
        let f = File::open(e.path())?;
        bytes += f.metadata()?.len();
        evict_file(&f)?;
    }
    Ok(bytes)
}

fn evict_file(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain advisory call on a file descriptor we own.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Cumulative counters of the block device holding a directory (`/proc/diskstats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceSample {
    pub writes: u64,
    pub bytes_written: u64,
}

/// The device counters of the disk under `dir`, if `/proc/diskstats` lists it.
pub fn device_sample(dir: &Path) -> Option<DeviceSample> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let stats = std::fs::read_to_string("/proc/diskstats").ok()?;
    for line in stats.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        if f[0].parse::<u64>().ok()? == major && f[1].parse::<u64>().ok()? == minor {
            return Some(DeviceSample {
                writes: f[7].parse().ok()?,
                bytes_written: f[9].parse::<u64>().ok()? * 512,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_measures_something() {
        let d = tempfile::tempdir().unwrap();
        let f = CeilingFile::create(d.path(), 1 << 20).unwrap();
        let c = f.measure(0.02).unwrap();
        assert!(c.dsync_4k_writes_per_s > 0.0);
        assert!(c.fdatasync_4k_writes_per_s > 0.0);
        assert!(c.dsync_60k_mb_per_s > 0.0);
        assert!(evict_dir(d.path()).unwrap() >= 1 << 20);
        // Not every machine lists the device (overlay and tmpfs do not).
        let _ = device_sample(d.path());
    }
}
