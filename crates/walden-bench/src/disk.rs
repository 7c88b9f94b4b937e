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
        Self::create_named(dir, "ceiling.dat", len)
    }

    /// The same under another name (two measured files in one directory).
    pub fn create_named(dir: &Path, name: &str, len: u64) -> io::Result<CeilingFile> {
        let len = len.max(1 << 20).div_ceil(1 << 20) * (1 << 20);
        let path = dir.join(name);
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

/// What two sync writers cost each other: the floor for a synchronous
/// secondary whose log shares a disk with its primary's. A durable commit
/// then waits for both logs' syncs, which such a device serves one after
/// the other, not for one.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SyncPairFloor {
    /// p50 of one 4 KB pwrite + fdatasync in the first directory, alone, ms.
    pub alone_p50_ms: f64,
    /// p50 of the same in both directories at once (two threads started
    /// together, timed until both are done), ms.
    pub pair_p50_ms: f64,
    /// `pair / alone`: no same-disk secondary can make a commit's p50 lower
    /// than this times the local-only p50.
    pub ratio: f64,
}

/// Measures [`SyncPairFloor`] with `a` and `b` (the primary's and the
/// secondary's directories): `rounds` rounds of `per_round` lone syncs then
/// as many paired ones, medians over every sync.
pub fn sync_pair_floor(
    a: &Path,
    b: &Path,
    rounds: usize,
    per_round: usize,
) -> io::Result<SyncPairFloor> {
    use std::sync::atomic::{AtomicI64, Ordering::*};
    use std::sync::Arc;
    let fa = CeilingFile::create(a, 1 << 20)?;
    std::fs::create_dir_all(b)?;
    let fb = CeilingFile::create_named(b, "ceiling-pair.dat", 1 << 20)?;
    let file_a = OpenOptions::new().write(true).open(fa.path())?;
    let file_b = OpenOptions::new().write(true).open(fb.path())?;
    let slots = (1u64 << 20) / KB4 as u64;
    // The partner spins on `go` rather than sleeping, so the figure is the
    // disk's, not a thread wake-up's. Negative: stop.
    let go = Arc::new(AtomicI64::new(0));
    let done = Arc::new(AtomicI64::new(0));
    let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let partner = {
        let (go, done, failed) = (go.clone(), done.clone(), failed.clone());
        std::thread::spawn(move || {
            let buf = vec![0x5Au8; KB4];
            let mut last = 0;
            loop {
                let g = go.load(Acquire);
                if g < 0 {
                    return;
                }
                if g == last {
                    std::hint::spin_loop();
                    continue;
                }
                last = g;
                let off = (g as u64 % slots) * KB4 as u64;
                if file_b
                    .write_all_at(&buf, off)
                    .and_then(|_| file_b.sync_data())
                    .is_err()
                {
                    failed.store(true, Release);
                }
                done.store(g, Release);
            }
        })
    };
    let buf = vec![0xA5u8; KB4];
    let mut alone = Vec::with_capacity(rounds * per_round);
    let mut pair = Vec::with_capacity(rounds * per_round);
    let sync_a = |i: usize| {
        let off = (i as u64 % slots) * KB4 as u64;
        file_a
            .write_all_at(&buf, off)
            .and_then(|_| file_a.sync_data())
    };
    let mut gen = 0i64;
    let mut measure = || -> io::Result<()> {
        for _ in 0..rounds {
            for i in 0..per_round {
                let t = Instant::now();
                sync_a(i)?;
                alone.push(t.elapsed());
            }
            for i in 0..per_round {
                gen += 1;
                let t = Instant::now();
                go.store(gen, Release);
                sync_a(i)?;
                while done.load(Acquire) != gen {
                    std::hint::spin_loop();
                }
                pair.push(t.elapsed());
            }
        }
        Ok(())
    };
    let res = measure();
    go.store(-1, Release);
    let _ = partner.join();
    res?;
    if failed.load(Acquire) {
        return Err(io::Error::other("a paired sync write failed"));
    }
    let p50 = |v: &mut Vec<Duration>| {
        v.sort();
        v.get(v.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    let alone_p50_ms = p50(&mut alone);
    let pair_p50_ms = p50(&mut pair);
    Ok(SyncPairFloor {
        alone_p50_ms,
        pair_p50_ms,
        ratio: if alone_p50_ms > 0.0 {
            pair_p50_ms / alone_p50_ms
        } else {
            0.0
        },
    })
}
