//! An in-memory, fault-injecting file system for crash tests.
//!
//! Every file keeps two images: what was written (live) and what was synced
//! (durable); the namespace does too. A file's bytes and its size become
//! durable at `sync_data` (or at once with `dsync`); a directory entry
//! (create, rename, remove, mkdir) becomes durable only when its parent
//! directory is synced, as on ext4 or XFS without `dirsync`. [`MemVfs::crash`]
//! simulates a power loss: it returns a new file system holding only durable
//! state, optionally plus part of the unsynced writes (a torn prefix, or
//! sectors scattered as a disk cache may persist them), and kills the old one
//! so threads still running on it get errors.
//!
//! Faults: EIO on write or sync and ENOSPC on write after a number of calls
//! ([`Faults`]), and bit rot of stored bytes ([`MemVfs::flip_bit`]) that a
//! checksum must catch.

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
    /// Fail every `write_at` with EIO once this many more have succeeded.
    pub fail_write_after: Option<u64>,
    /// Fail every `sync_data` and `sync_dir` with EIO once this many more
    /// have succeeded.
    pub fail_sync_after: Option<u64>,
    /// Fail every `write_at` with ENOSPC (disk full) once this many more
    /// have succeeded.
    pub enospc_write_after: Option<u64>,
    /// Make every `sync_data` take this long (a slow disk, so that tests of
    /// back-pressure do not depend on how fast the machine is).
    pub sync_delay: Option<std::time::Duration>,
    /// A transient read error the drive does not report: once this many more
    /// reads have succeeded, the next one returns a buffer with one bit
    /// flipped (the stored bytes stay intact). Fires once.
    pub flip_read_after: Option<u64>,
}

/// Calls the file system has served (for counting tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemCounters {
    pub writes: u64,
    pub bytes_written: u64,
    pub syncs: u64,
    pub reads: u64,
    pub bytes_read: u64,
    pub dir_syncs: u64,
}

#[derive(Default, Clone)]
struct Inode {
    live: Vec<u8>,
    durable: Vec<u8>,
    /// Unsynced writes in issue order: (offset, length).
    unsynced: Vec<(u64, usize)>,
    /// Smallest length set by `set_len` since the last sync (a truncation the
    /// durable image has not seen yet).
    min_len: Option<usize>,
}

#[derive(Default)]
struct State {
    dead: bool,
    next_ino: u64,
    inodes: HashMap<u64, Inode>,
    entries: BTreeMap<PathBuf, u64>,
    /// Live directories, each with an identity: a directory removed and made
    /// again under the same name is a new, empty one.
    dirs: BTreeMap<PathBuf, u64>,
    /// Durable names: (inode, identity of the parent directory it is in).
    durable_entries: BTreeMap<PathBuf, (u64, u64)>,
    /// Durable directories: (identity, identity of the parent directory).
    durable_dirs: BTreeMap<PathBuf, (u64, u64)>,
    next_dir: u64,
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

fn not_found(what: &str, p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("no such {what}: {}", p.display()),
    )
}

/// Counts down an armed fault; true when it fires.
fn fires(slot: &mut Option<u64>) -> bool {
    match slot {
        Some(0) => true,
        Some(n) => {
            *n -= 1;
            false
        }
        None => false,
    }
}

/// The root (and the empty path) always exists and is always durable.
fn is_root(p: &Path) -> bool {
    p.as_os_str().is_empty() || p == Path::new("/")
}

impl State {
    fn alive(&self) -> io::Result<()> {
        if self.dead {
            return Err(dead());
        }
        Ok(())
    }

    fn dir_exists(&self, p: &Path) -> bool {
        is_root(p) || self.dirs.contains_key(p)
    }

    /// Identity of a live directory (the root is 0).
    fn dir_id(&self, p: &Path) -> Option<u64> {
        if is_root(p) {
            return Some(0);
        }
        self.dirs.get(p).copied()
    }

    /// Drops inodes no name (live or durable) refers to.
    fn collect(&mut self, ino: u64) {
        if !self.entries.values().any(|&i| i == ino)
            && !self.durable_entries.values().any(|&(i, _)| i == ino)
        {
            self.inodes.remove(&ino);
        }
    }

    fn inode(&self, ino: u64) -> io::Result<&Inode> {
        self.inodes
            .get(&ino)
            .ok_or_else(|| io::Error::other("file was removed"))
    }

    fn inode_mut(&mut self, ino: u64) -> io::Result<&mut Inode> {
        self.inodes
            .get_mut(&ino)
            .ok_or_else(|| io::Error::other("file was removed"))
    }
}

/// The durable directories that survive a crash: each one's parent must
/// survive too, as the same directory it was in when made durable.
fn surviving_dirs(durable: &BTreeMap<PathBuf, (u64, u64)>) -> BTreeMap<PathBuf, u64> {
    let mut by_depth: Vec<(&PathBuf, &(u64, u64))> = durable.iter().collect();
    by_depth.sort_by_key(|(p, _)| p.components().count());
    let mut alive: BTreeMap<PathBuf, u64> = BTreeMap::new();
    for (p, &(id, parent_id)) in by_depth {
        let parent = p.parent().unwrap_or(Path::new(""));
        let parent_alive = if is_root(parent) {
            Some(0)
        } else {
            alive.get(parent).copied()
        };
        if parent_alive == Some(parent_id) {
            alive.insert(p.clone(), id);
        }
    }
    alive
}

fn apply(image: &mut Vec<u8>, off: u64, bytes: &[u8]) {
    let end = off as usize + bytes.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[off as usize..end].copy_from_slice(bytes);
}

fn slice_of(data: &[u8], off: u64, len: usize) -> Vec<u8> {
    let start = (off as usize).min(data.len());
    let end = (off as usize + len).min(data.len());
    data[start..end].to_vec()
}

/// What of one file survives a crash.
fn crash_image(inode: &Inode, mode: CrashMode, rng: &mut impl Rng) -> Vec<u8> {
    let mut image = inode.durable.clone();
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
                    apply(&mut image, off, &slice_of(&inode.live, off, len));
                }
            }
        }
        CrashMode::ScatteredSectors => {
            for &(off, len) in &inode.unsynced {
                let mut s = 0;
                while s < len {
                    let n = (len - s).min(512);
                    if rng.gen_bool(0.5) {
                        let at = off + s as u64;
                        apply(&mut image, at, &slice_of(&inode.live, at, n));
                    }
                    s += n;
                }
            }
        }
    }
    // A file never shrinks below its durable size by a crash.
    image.resize(image.len().max(inode.durable.len()), 0);
    image
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

    /// Simulates a power loss. The returned file system holds what survived:
    /// durable names (whose every ancestor directory is durable too) and the
    /// durable bytes of their files, plus unsynced writes as `mode` says.
    /// This one fails every later call.
    pub fn crash(&self, mode: CrashMode, seed: u64) -> MemVfs {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut st = self.state.lock();
        st.dead = true;
        let dirs = surviving_dirs(&st.durable_dirs);
        let parent_id = |p: &Path| {
            let parent = p.parent().unwrap_or(Path::new(""));
            if is_root(parent) {
                Some(0)
            } else {
                dirs.get(parent).copied()
            }
        };
        let entries: BTreeMap<PathBuf, u64> = st
            .durable_entries
            .iter()
            .filter(|(p, &(_, pid))| parent_id(p) == Some(pid))
            .map(|(p, &(i, _))| (p.clone(), i))
            .collect();
        let durable_entries: BTreeMap<PathBuf, (u64, u64)> = entries
            .iter()
            .map(|(p, &i)| (p.clone(), (i, parent_id(p).unwrap_or(0))))
            .collect();
        let durable_dirs: BTreeMap<PathBuf, (u64, u64)> = dirs
            .iter()
            .map(|(p, &id)| (p.clone(), (id, parent_id(p).unwrap_or(0))))
            .collect();
        let mut inos: Vec<u64> = entries.values().copied().collect();
        inos.sort_unstable();
        inos.dedup();
        let mut inodes = HashMap::new();
        for ino in inos {
            let Some(inode) = st.inodes.get(&ino) else {
                continue;
            };
            let image = crash_image(inode, mode, &mut rng);
            inodes.insert(
                ino,
                Inode {
                    live: image.clone(),
                    durable: image,
                    unsynced: Vec::new(),
                    min_len: None,
                },
            );
        }
        let new = State {
            dead: false,
            next_ino: st.next_ino,
            inodes,
            entries,
            dirs,
            durable_entries,
            durable_dirs,
            next_dir: st.next_dir,
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
            .ok_or_else(|| not_found("file", path))?;
        let inode = st.inode_mut(ino)?;
        apply(&mut inode.live, offset, bytes);
        apply(&mut inode.durable, offset, bytes);
        Ok(())
    }

    /// Bit rot: flips one stored bit of a file (live and durable), as a
    /// medium error that the drive does not report. Only checksums see it.
    pub fn flip_bit(&self, path: &Path, offset: u64, bit: u8) -> io::Result<()> {
        let mut st = self.state.lock();
        let ino = *st
            .entries
            .get(path)
            .ok_or_else(|| not_found("file", path))?;
        let inode = st.inode_mut(ino)?;
        let off = offset as usize;
        if off >= inode.live.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "offset past the end of the file",
            ));
        }
        inode.live[off] ^= 1 << (bit % 8);
        if off < inode.durable.len() {
            inode.durable[off] ^= 1 << (bit % 8);
        }
        Ok(())
    }

    /// Files (not directories), with their live sizes.
    pub fn files(&self) -> Vec<(PathBuf, u64)> {
        let st = self.state.lock();
        st.entries
            .iter()
            .map(|(p, i)| {
                (
                    p.clone(),
                    st.inodes.get(i).map_or(0, |n| n.live.len() as u64),
                )
            })
            .collect()
    }
}

struct MemFile {
    state: Arc<Mutex<State>>,
    ino: u64,
    dsync: bool,
}

impl VfsFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut st = self.state.lock();
        st.alive()?;
        let inode = st.inode(self.ino)?;
        let start = (offset as usize).min(inode.live.len());
        let n = (inode.live.len() - start).min(buf.len());
        buf[..n].copy_from_slice(&inode.live[start..start + n]);
        if n > 0 && fires(&mut st.faults.flip_read_after) {
            st.faults.flip_read_after = None;
            // A position that depends only on the read, so a seed replays it.
            let h = st.counters.reads.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ offset;
            let at = (h.wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 17) as usize % n;
            buf[at] ^= 1 << (at % 8);
        }
        st.counters.reads += 1;
        st.counters.bytes_read += n as u64;
        Ok(n)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        st.alive()?;
        if fires(&mut st.faults.fail_write_after) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        if fires(&mut st.faults.enospc_write_after) {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        st.counters.writes += 1;
        st.counters.bytes_written += buf.len() as u64;
        let dsync = self.dsync;
        if dsync {
            st.counters.syncs += 1;
        }
        let inode = st.inode_mut(self.ino)?;
        apply(&mut inode.live, offset, buf);
        if dsync {
            // O_DSYNC also makes the size needed to read the data durable.
            apply(&mut inode.durable, offset, buf);
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
        st.alive()?;
        if self.dsync {
            return Ok(());
        }
        if fires(&mut st.faults.fail_sync_after) {
            // As after a failed fsync on Linux: what was unsynced may or may
            // not reach the disk; the caller cannot know.
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        st.counters.syncs += 1;
        let inode = st.inode_mut(self.ino)?;
        if let Some(m) = inode.min_len.take() {
            inode.durable.truncate(m);
        }
        let len = inode.live.len();
        inode.durable.resize(len, 0);
        for (off, l) in std::mem::take(&mut inode.unsynced) {
            let start = (off as usize).min(len);
            let end = (off as usize + l).min(len);
            let src = inode.live[start..end].to_vec();
            inode.durable[start..end].copy_from_slice(&src);
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let st = self.state.lock();
        st.alive()?;
        Ok(st.inode(self.ino)?.live.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        st.alive()?;
        let inode = st.inode_mut(self.ino)?;
        let len = len as usize;
        inode.live.resize(len, 0);
        // The new size becomes durable at the next sync, not now.
        inode.min_len = Some(inode.min_len.map_or(len, |m| m.min(len)));
        inode.unsynced.retain(|&(off, l)| off as usize + l <= len);
        Ok(())
    }

    fn is_dsync(&self) -> bool {
        self.dsync
    }
}

impl Vfs for MemVfs {
    fn open(&self, path: &Path, opts: OpenOptionsVfs) -> io::Result<Arc<dyn VfsFile>> {
        let mut st = self.state.lock();
        st.alive()?;
        let ino = match st.entries.get(path) {
            Some(&ino) => ino,
            None if opts.create => {
                let parent = path.parent().unwrap_or(Path::new(""));
                if !st.dir_exists(parent) {
                    return Err(not_found("directory", parent));
                }
                st.next_ino += 1;
                let ino = st.next_ino;
                st.inodes.insert(ino, Inode::default());
                st.entries.insert(path.to_path_buf(), ino);
                ino
            }
            None => return Err(not_found("file", path)),
        };
        Ok(Arc::new(MemFile {
            state: self.state.clone(),
            ino,
            dsync: opts.dsync,
        }))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let st = self.state.lock();
        st.alive()?;
        Ok(st.entries.contains_key(path) || st.dir_exists(path))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.alive()?;
        if st.entries.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} is a file", path.display()),
            ));
        }
        let mut p = Some(path);
        while let Some(d) = p {
            if is_root(d) {
                break;
            }
            if !st.dirs.contains_key(d) {
                st.next_dir += 1;
                let id = st.next_dir;
                st.dirs.insert(d.to_path_buf(), id);
            }
            p = d.parent();
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let st = self.state.lock();
        st.alive()?;
        if !st.dir_exists(dir) {
            return Err(not_found("directory", dir));
        }
        let mut names: Vec<String> = st
            .entries
            .keys()
            .chain(st.dirs.keys())
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.alive()?;
        let ino = st
            .entries
            .remove(path)
            .ok_or_else(|| not_found("file", path))?;
        st.collect(ino);
        Ok(())
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.alive()?;
        if !st.dirs.contains_key(path) {
            return Err(not_found("directory", path));
        }
        let victims: Vec<PathBuf> = st
            .entries
            .keys()
            .filter(|p| p.starts_with(path))
            .cloned()
            .collect();
        for v in victims {
            if let Some(ino) = st.entries.remove(&v) {
                st.collect(ino);
            }
        }
        st.dirs.retain(|d, _| !d.starts_with(path));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.alive()?;
        let parent = to.parent().unwrap_or(Path::new(""));
        if !st.dir_exists(parent) {
            return Err(not_found("directory", parent));
        }
        let ino = st
            .entries
            .remove(from)
            .ok_or_else(|| not_found("file", from))?;
        if let Some(old) = st.entries.insert(to.to_path_buf(), ino) {
            st.collect(old);
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.alive()?;
        if !st.dir_exists(dir) {
            return Err(not_found("directory", dir));
        }
        if fires(&mut st.faults.fail_sync_after) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        st.counters.dir_syncs += 1;
        let id = st.dir_id(dir).expect("checked above");
        // The directory's own entries become what they are live now.
        let child = |p: &Path| p.parent() == Some(dir);
        let gone: Vec<u64> = st
            .durable_entries
            .iter()
            .filter(|(p, _)| child(p))
            .map(|(_, &(i, _))| i)
            .collect();
        st.durable_entries.retain(|p, _| !child(p));
        let now: Vec<(PathBuf, (u64, u64))> = st
            .entries
            .iter()
            .filter(|(p, _)| child(p))
            .map(|(p, &i)| (p.clone(), (i, id)))
            .collect();
        st.durable_entries.extend(now);
        for ino in gone {
            st.collect(ino);
        }
        st.durable_dirs.retain(|d, _| !child(d));
        let dirs: Vec<(PathBuf, (u64, u64))> = st
            .dirs
            .iter()
            .filter(|(d, _)| child(d))
            .map(|(d, &i)| (d.clone(), (i, id)))
            .collect();
        st.durable_dirs.extend(dirs);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> OpenOptionsVfs {
        OpenOptionsVfs {
            create: true,
            dsync: false,
        }
    }

    #[test]
    fn names_need_a_directory_sync_and_sizes_a_file_sync() {
        let m = MemVfs::new();
        m.create_dir_all(Path::new("/d/e")).unwrap();
        let f = m.open(Path::new("/d/e/a"), opts()).unwrap();
        f.write_at(b"hello", 0).unwrap();
        f.sync_data().unwrap();
        // The file is synced but its name and directories are not.
        let c = m.crash(CrashMode::SyncedOnly, 1);
        assert!(!c.exists(Path::new("/d")).unwrap());

        let m = MemVfs::new();
        m.create_dir_all(Path::new("/d/e")).unwrap();
        m.sync_dir(Path::new("/")).unwrap();
        m.sync_dir(Path::new("/d")).unwrap();
        let f = m.open(Path::new("/d/e/a"), opts()).unwrap();
        f.write_at(b"hello", 0).unwrap();
        f.sync_data().unwrap();
        m.sync_dir(Path::new("/d/e")).unwrap();
        f.set_len(2).unwrap();
        m.rename(Path::new("/d/e/a"), Path::new("/d/e/b")).unwrap();
        let c = m.crash(CrashMode::SyncedOnly, 1);
        // Neither the rename nor the truncation was synced.
        assert!(!c.exists(Path::new("/d/e/b")).unwrap());
        let got = crate::vfs::read_file(&c, Path::new("/d/e/a")).unwrap();
        assert_eq!(got, b"hello");
    }

    #[test]
    fn a_directory_made_again_is_a_new_empty_one() {
        let m = MemVfs::new();
        m.create_dir_all(Path::new("/d")).unwrap();
        m.sync_dir(Path::new("/")).unwrap();
        let f = m.open(Path::new("/d/old"), opts()).unwrap();
        f.sync_data().unwrap();
        m.sync_dir(Path::new("/d")).unwrap();
        m.remove_dir_all(Path::new("/d")).unwrap();
        m.sync_dir(Path::new("/")).unwrap();
        m.create_dir_all(Path::new("/d")).unwrap();
        m.sync_dir(Path::new("/")).unwrap();
        let c = m.crash(CrashMode::SyncedOnly, 1);
        assert!(c.exists(Path::new("/d")).unwrap());
        assert!(!c.exists(Path::new("/d/old")).unwrap());
    }

    #[test]
    fn injected_errors_carry_their_errno() {
        let m = MemVfs::new();
        m.create_dir_all(Path::new("/d")).unwrap();
        let f = m.open(Path::new("/d/a"), opts()).unwrap();
        m.set_faults(Faults {
            enospc_write_after: Some(1),
            ..Faults::default()
        });
        f.write_at(b"x", 0).unwrap();
        let e = f.write_at(b"y", 1).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        m.set_faults(Faults {
            fail_sync_after: Some(0),
            ..Faults::default()
        });
        assert_eq!(f.sync_data().unwrap_err().raw_os_error(), Some(libc::EIO));
    }
}
