//! Segment files: activation (from a spare or a fresh zero-filled file),
//! recycling of segments the engine no longer needs, and a background
//! preallocator so a segment switch rarely waits for zero-filling.

use crate::block::{self, SegmentHeader};
use crate::error::{io_err, Result};
use crate::scan::SegmentInfo;
use crate::stats::{CountingFile, FileStats};
use crate::vfs::{OpenOptionsVfs, Vfs, VfsFile};
use crate::Lsn;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Spares kept at most; further recycled segments are deleted.
const MAX_SPARES: usize = 2;

pub(crate) struct Segments {
    pub active: Vec<SegmentInfo>,
    pub spares: Vec<PathBuf>,
    pub next_spare: u64,
    pub preallocating: bool,
}

pub(crate) struct SegmentFiles {
    pub vfs: Arc<dyn Vfs>,
    pub dir: PathBuf,
    pub size: u64,
    pub dsync: bool,
    pub stats: Arc<FileStats>,
    pub list: Mutex<Segments>,
}

impl SegmentFiles {
    /// Writes a zero-filled file of the segment size and makes it durable.
    /// Callers on the commit path avoid this by keeping a spare ready.
    pub fn create_zeroed(&self, path: &Path) -> Result<()> {
        let f = self
            .vfs
            .open(
                path,
                OpenOptionsVfs {
                    create: true,
                    dsync: false,
                },
            )
            .map_err(io_err(path))?;
        // Zero-filling is not log writing: keep it out of the log's write
        // counters (it only shows in size_on_disk), or bytes-per-write figures
        // would measure preallocation rather than commits.
        f.set_len(0).map_err(io_err(path))?;
        let chunk = vec![0u8; (1 << 20).min(self.size as usize)];
        let mut off = 0u64;
        while off < self.size {
            let n = chunk.len().min((self.size - off) as usize);
            f.write_at(&chunk[..n], off).map_err(io_err(path))?;
            self.stats.prealloc_writes.fetch_add(1, Relaxed);
            self.stats.prealloc_bytes.fetch_add(n as u64, Relaxed);
            off += n as u64;
        }
        f.sync_data().map_err(io_err(path))?;
        self.stats.size_on_disk_bytes.fetch_add(self.size, Relaxed);
        Ok(())
    }

    pub fn open_for_write(&self, path: &Path) -> Result<Arc<dyn VfsFile>> {
        let f = self
            .vfs
            .open(
                path,
                OpenOptionsVfs {
                    create: false,
                    dsync: self.dsync,
                },
            )
            .map_err(io_err(path))?;
        Ok(Arc::new(CountingFile::new(f, self.stats.clone())))
    }

    /// Makes segment `seq` (first LSN `first_lsn`) the one being written and
    /// returns it with the header bytes its first write must start with.
    pub fn activate(&self, seq: u64, first_lsn: Lsn) -> Result<(Arc<dyn VfsFile>, Vec<u8>)> {
        let path = self.dir.join(block::segment_name(seq));
        let spare = self.list.lock().spares.pop();
        match spare {
            Some(sp) => self.vfs.rename(&sp, &path).map_err(io_err(&sp))?,
            None => {
                let tmp = self.dir.join(format!("{}.new", block::segment_name(seq)));
                self.create_zeroed(&tmp)?;
                self.vfs.rename(&tmp, &path).map_err(io_err(&tmp))?;
            }
        }
        self.vfs.sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        let f = self.open_for_write(&path)?;
        let header = block::encode_segment_header(&SegmentHeader {
            seq,
            first_lsn,
            segment_size: self.size,
        });
        self.list.lock().active.push(SegmentInfo {
            seq,
            path,
            first_lsn,
        });
        Ok((f, header))
    }

    /// Recycles segments that hold only log before `lsn`. Never touches the
    /// segment being written (the last one).
    pub fn release_before(&self, lsn: Lsn) -> Result<usize> {
        let mut released = 0;
        loop {
            let victim = {
                let l = self.list.lock();
                if l.active.len() > 1 && l.active[1].first_lsn <= lsn {
                    Some(l.active[0].clone())
                } else {
                    None
                }
            };
            let Some(v) = victim else { break };
            self.recycle(&v.path)?;
            self.list.lock().active.remove(0);
            released += 1;
        }
        if released > 0 {
            self.vfs.sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        }
        Ok(released)
    }

    /// Turns a file into a spare (or deletes it when enough spares exist).
    pub fn recycle(&self, path: &Path) -> Result<()> {
        let mut l = self.list.lock();
        if l.spares.len() < MAX_SPARES {
            l.next_spare += 1;
            let sp = self.dir.join(block::spare_name(l.next_spare));
            self.vfs.rename(path, &sp).map_err(io_err(path))?;
            l.spares.insert(0, sp);
        } else {
            drop(l);
            self.vfs.remove_file(path).map_err(io_err(path))?;
            self.stats.size_on_disk_bytes.fetch_sub(
                self.size.min(self.stats.size_on_disk_bytes.load(Relaxed)),
                Relaxed,
            );
        }
        Ok(())
    }

    /// Starts a background thread that adds one spare, if none exists and none is
    /// being made. Failures only cost a synchronous creation later.
    pub fn ensure_spare(self: &Arc<Self>) {
        let n = {
            let mut l = self.list.lock();
            if !l.spares.is_empty() || l.preallocating {
                return;
            }
            l.preallocating = true;
            l.next_spare += 1;
            l.next_spare
        };
        let me = self.clone();
        std::thread::Builder::new()
            .name("walden-log-prealloc".into())
            .spawn(move || {
                let sp = me.dir.join(block::spare_name(n));
                let tmp = sp.with_extension("new");
                let ok = me.create_zeroed(&tmp).is_ok()
                    && me.vfs.rename(&tmp, &sp).is_ok()
                    && me.vfs.sync_dir(&me.dir).is_ok();
                let mut l = me.list.lock();
                if ok {
                    l.spares.push(sp);
                }
                l.preallocating = false;
            })
            .ok();
    }

    pub fn has_spare(&self) -> bool {
        !self.list.lock().spares.is_empty()
    }

    /// Waits (up to `timeout`) until no spare is being zero-filled; returns
    /// whether that happened in time.
    pub fn wait_preallocation(&self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if !self.list.lock().preallocating {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    pub fn snapshot(&self) -> Vec<SegmentInfo> {
        self.list.lock().active.clone()
    }
}
