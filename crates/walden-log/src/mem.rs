//! An in-memory, fault-injecting file system for crash tests.
//!
//! Every file keeps two images: what was written (live) and what was synced
//! (durable). [`MemVfs::crash`] simulates a power loss: it returns a new file
//! system holding only durable bytes, optionally plus part of the unsynced
//! writes (a torn prefix, or sectors scattered as a disk cache may persist
//! them), and kills the old one so threads still running on it get errors.
//! Directory entries (create, rename, remove) are treated as durable at once:
//! the engine syncs directories anyway, and modelling lost renames would test
//! the file system rather than Walden.

use crate::vfs::{OpenOptionsVfs, Vfs, VfsFile};
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What survives a simulated crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Only synced bytes survive.
    SyncedOnly,
    /// Synced bytes, plus a random number of the unsynced writes in order, the
    /// last of them cut at a random 512-byte sector boundary.
    TornPrefix,
    /// Synced bytes, plus each unsynced 512-byte sector kept with probability 1/2
    /// (out-of-order write-back).
    ScatteredSectors,
}

/// Faults to inject. Counts are of calls made after the fault was armed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Fail every `write_at` once this many more have succeeded.
    pub fail_write_after: Option<u64>,
    /// Fail every `sync_data` once this many more have succeeded.
    pub fail_sync_after: Option<u64>,
    /// Make every `sync_data` take this long (a slow disk, so that tests of
    /// back-pressure do not depend on how fast the machine is).
    pub sync_delay: Option<std::time::Duration>,
}

/// Calls the file system has served (for counting tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemCounters {
    pub writes: u64,
    pub bytes_written: u64,
    pub syncs: u64,
    pub reads: u64,
    pub bytes_read: u64,
}

#[derive(Default, Clone)]
struct Inode {
    live: Vec<u8>,
    durable: Vec<u8>,
    /// Unsynced writes in issue order: (offset, length).
    unsynced: Vec<(u64, usize)>,
}

#[derive(Default)]
struct State {
    dead: bool,
    next_ino: u64,
    inodes: HashMap<u64, Inode>,
    entries: BTreeMap<PathBuf, u64>,
    dirs: std::collections::BTreeSet<PathBuf>,
    faults: Faults,
    counters: MemCounters,
}

/// The in-memory file system. Clones share the same files.
#[derive(Clone, Default)]
pub struct MemVfs {
    state: Arc<Mutex<State>>,
}

fn dead() -> io::Error {
    io::Error::other("simulated power loss: this file system is gone")
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected {what} failure (EIO)"))
}

impl MemVfs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Arms faults (replacing earlier ones).
    pub fn set_faults(&self, faults: Faults) {
        self.state.lock().faults = faults;
    }

    /// Calls served so far.
    pub fn counters(&self) -> MemCounters {
        self.state.lock().counters
    }

    /// Bytes written but not yet synced, over all files.
    pub fn unsynced_bytes(&self) -> u64 {
        let st = self.state.lock();
        st.inodes
            .values()
            .flat_map(|i| i.unsynced.iter())
            .map(|(_, l)| *l as u64)
            .sum()
    }

    /// Simulates a power loss. The returned file system holds what survived;
    /// this one fails every later call.
    pub fn crash(&self, mode: CrashMode, seed: u64) -> MemVfs {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut st = self.state.lock();
        st.dead = true;
        let mut inodes = HashMap::new();
        for (&ino, inode) in &st.inodes {
            let mut image = inode.durable.clone();
            let apply = |image: &mut Vec<u8>, off: u64, bytes: &[u8]| {
                let end = off as usize + bytes.len();
                if image.len() < end {
                    image.resize(end, 0);
                }
                image[off as usize..end].copy_from_slice(bytes);
            };
            match mode {
                CrashMode::SyncedOnly => {}
                CrashMode::TornPrefix => {
                    if !inode.unsynced.is_empty() {
                        let keep = rng.gen_range(0..=inode.unsynced.len());
                        for (i, &(off, len)) in inode.unsynced.iter().enumerate().take(keep + 1) {
                            let len = if i == keep {
                                let sectors = len.div_ceil(512);
                                (rng.gen_range(0..=sectors) * 512).min(len)
                            } else {
                                len
                            };
                            let src = slice_of(&inode.live, off, len);
                            apply(&mut image, off, &src);
                        }
                    }
                }
                CrashMode::ScatteredSectors => {
                    for &(off, len) in &inode.unsynced {
                        let mut s = 0;
                        while s < len {
                            let n = (len - s).min(512);
                            if rng.gen_bool(0.5) {
                                let src = slice_of(&inode.live, off + s as u64, n);
                                apply(&mut image, off + s as u64, &src);
                            }
                            s += n;
                        }
                    }
                }
            }
            // A file never grows past what was allocated for it.
            image.resize(image.len().max(inode.durable.len()), 0);
            inodes.insert(
                ino,
                Inode {
                    live: image.clone(),
                    durable: image,
                    unsynced: Vec::new(),
                },
            );
        }
        let new = State {
            dead: false,
            next_ino: st.next_ino,
            inodes,
            entries: st.entries.clone(),
            dirs: st.dirs.clone(),
            faults: Faults::default(),
            counters: MemCounters::default(),
        };
        MemVfs {
            state: Arc::new(Mutex::new(new)),
        }
    }

    /// Overwrites bytes of a file directly, durably (for corruption tests).
    pub fn corrupt(&self, path: &Path, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut st = self.state.lock();
        let ino = *st
            .entries
            .get(path)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))?;
        let inode = st.inodes.get_mut(&ino).unwrap();
        for img in [&mut inode.live, &mut inode.durable] {
            let end = offset as usize + bytes.len();
            if img.len() < end {
                img.resize(end, 0);
            }
            img[offset as usize..end].copy_from_slice(bytes);
        }
        Ok(())
    }
}

fn slice_of(data: &[u8], off: u64, len: usize) -> Vec<u8> {
    let start = (off as usize).min(data.len());
    let end = (off as usize + len).min(data.len());
    data[start..end].to_vec()
}

struct MemFile {
    state: Arc<Mutex<State>>,
    ino: u64,
    dsync: bool,
}

impl VfsFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        let inode = &st.inodes[&self.ino];
        let start = (offset as usize).min(inode.live.len());
        let n = (inode.live.len() - start).min(buf.len());
        buf[..n].copy_from_slice(&inode.live[start..start + n]);
        st.counters.reads += 1;
        st.counters.bytes_read += n as u64;
        Ok(n)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        if let Some(n) = st.faults.fail_write_after {
            if n == 0 {
                return Err(injected("write"));
            }
            st.faults.fail_write_after = Some(n - 1);
        }
        st.counters.writes += 1;
        st.counters.bytes_written += buf.len() as u64;
        let dsync = self.dsync;
        let inode = st.inodes.get_mut(&self.ino).unwrap();
        let end = offset as usize + buf.len();
        if inode.live.len() < end {
            inode.live.resize(end, 0);
        }
        inode.live[offset as usize..end].copy_from_slice(buf);
        if dsync {
            if inode.durable.len() < end {
                inode.durable.resize(end, 0);
            }
            inode.durable[offset as usize..end].copy_from_slice(buf);
            st.counters.syncs += 1;
        } else {
            inode.unsynced.push((offset, buf.len()));
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let delay = self.state.lock().faults.sync_delay;
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        if self.dsync {
            return Ok(());
        }
        if let Some(n) = st.faults.fail_sync_after {
            if n == 0 {
                return Err(injected("fsync"));
            }
            st.faults.fail_sync_after = Some(n - 1);
        }
        st.counters.syncs += 1;
        let inode = st.inodes.get_mut(&self.ino).unwrap();
        for (off, len) in std::mem::take(&mut inode.unsynced) {
            let end = off as usize + len;
            if inode.durable.len() < end {
                inode.durable.resize(end, 0);
            }
            let live_end = end.min(inode.live.len());
            if (off as usize) < live_end {
                let src = inode.live[off as usize..live_end].to_vec();
                inode.durable[off as usize..live_end].copy_from_slice(&src);
            }
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        Ok(st.inodes[&self.ino].live.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        let inode = st.inodes.get_mut(&self.ino).unwrap();
        inode.live.resize(len as usize, 0);
        inode.durable.resize(len as usize, 0);
        inode.unsynced.retain(|&(off, l)| off + (l as u64) <= len);
        Ok(())
    }

    fn is_dsync(&self) -> bool {
        self.dsync
    }
}

impl Vfs for MemVfs {
    fn open(&self, path: &Path, opts: OpenOptionsVfs) -> io::Result<Arc<dyn VfsFile>> {
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        let ino = match st.entries.get(path) {
            Some(&ino) => ino,
            None if opts.create => {
                let parent = path.parent().unwrap_or(Path::new("")).to_path_buf();
                if !parent.as_os_str().is_empty() && !st.dirs.contains(&parent) {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("no such directory: {}", parent.display()),
                    ));
                }
                st.next_ino += 1;
                let ino = st.next_ino;
                st.inodes.insert(ino, Inode::default());
                st.entries.insert(path.to_path_buf(), ino);
                ino
            }
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no such file: {}", path.display()),
                ))
            }
        };
        Ok(Arc::new(MemFile {
            state: self.state.clone(),
            ino,
            dsync: opts.dsync,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        let st = self.state.lock();
        st.entries.contains_key(path) || st.dirs.contains(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        let mut p = Some(path);
        while let Some(d) = p {
            if d.as_os_str().is_empty() {
                break;
            }
            st.dirs.insert(d.to_path_buf());
            p = d.parent();
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        if !st.dirs.contains(dir) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no such directory: {}", dir.display()),
            ));
        }
        let mut names: Vec<String> = st
            .entries
            .keys()
            .chain(st.dirs.iter())
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        match st.entries.remove(path) {
            Some(ino) => {
                if !st.entries.values().any(|&i| i == ino) {
                    st.inodes.remove(&ino);
                }
                Ok(())
            }
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
        }
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        let victims: Vec<PathBuf> = st
            .entries
            .keys()
            .filter(|p| p.starts_with(path))
            .cloned()
            .collect();
        for v in victims {
            if let Some(ino) = st.entries.remove(&v) {
                st.inodes.remove(&ino);
            }
        }
        st.dirs.retain(|d| !d.starts_with(path));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        let ino = st
            .entries
            .remove(from)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))?;
        if let Some(old) = st.entries.insert(to.to_path_buf(), ino) {
            st.inodes.remove(&old);
        }
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        let st = self.state.lock();
        if st.dead {
            return Err(dead());
        }
        Ok(())
    }
}
