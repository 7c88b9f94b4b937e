//! The storage trait every byte of Walden goes through.
//!
//! Two implementations: [`OsVfs`] (real files) and [`MemVfs`](crate::MemVfs)
//! (in memory, fault injecting, used by the crash tests). Keeping the surface
//! small keeps the fault model honest: these calls are all the engine can do.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a file is opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptionsVfs {
    /// Create the file if it does not exist.
    pub create: bool,
    /// Every write is synchronous (`O_DSYNC`): `write_at` returns once the
    /// bytes are on stable storage, and `sync_data` has nothing left to do.
    pub dsync: bool,
}

/// One open file.
pub trait VfsFile: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read
    /// (fewer only at end of file).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `offset`.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every completed write durable (`fdatasync`).
    fn sync_data(&self) -> io::Result<()>;
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Truncates or extends the file.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Whether writes are synchronous (opened with `dsync`).
    fn is_dsync(&self) -> bool;
}

/// A file system: the directory operations the log and the data files need.
pub trait Vfs: Send + Sync {
    fn open(&self, path: &Path, opts: OpenOptionsVfs) -> io::Result<Arc<dyn VfsFile>>;
    /// Whether a file or directory exists. An error (EACCES, EIO) is not
    /// "absent": callers must not treat an unreadable path as a new one.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Creates a directory and its missing parents. The new entries are not
    /// durable until their parents are synced ([`create_dir_durable`]).
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// File names (not paths) in a directory, sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Atomically renames a file (replacing the target).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// Reads exactly `buf.len()` bytes at `offset`, or fails with `UnexpectedEof`.
pub fn read_exact_at(file: &dyn VfsFile, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = file.read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short read"));
        }
        done += n;
    }
    Ok(())
}

/// Writes a whole file atomically: temporary file, sync, rename, sync dir.
pub fn write_file_atomic(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let f = vfs.open(
        &tmp,
        OpenOptionsVfs {
            create: true,
            dsync: false,
        },
    )?;
    f.set_len(0)?;
    f.write_at(bytes, 0)?;
    f.sync_data()?;
    drop(f);
    vfs.rename(&tmp, path)?;
    vfs.sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Creates `dir` and its missing parents, and syncs the parent of every
/// directory it created, so the new directories survive a power loss.
pub fn create_dir_durable(vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut p = Some(dir);
    while let Some(d) = p {
        if d.as_os_str().is_empty() || vfs.exists(d)? {
            break;
        }
        missing.push(d);
        p = d.parent();
    }
    if missing.is_empty() {
        return Ok(());
    }
    vfs.create_dir_all(dir)?;
    // Innermost first is fine: each sync records one level's entry.
    for d in missing {
        let parent = match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        vfs.sync_dir(parent)?;
    }
    Ok(())
}

/// Reads a whole file.
pub fn read_file(vfs: &dyn Vfs, path: &Path) -> io::Result<Vec<u8>> {
    let f = vfs.open(path, OpenOptionsVfs::default())?;
    let len = f.len()? as usize;
    let mut buf = vec![0u8; len];
    read_exact_at(&*f, &mut buf, 0)?;
    Ok(buf)
}

/// The real file system.
#[derive(Clone, Debug, Default)]
pub struct OsVfs;

struct OsFile {
    file: File,
    dsync: bool,
}

impl VfsFile for OsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        loop {
            match self.file.read_at(buf, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        if self.dsync {
            return Ok(());
        }
        self.file.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
    fn is_dsync(&self) -> bool {
        self.dsync
    }
}

impl Vfs for OsVfs {
    fn open(&self, path: &Path, opts: OpenOptionsVfs) -> io::Result<Arc<dyn VfsFile>> {
        let mut o = OpenOptions::new();
        o.read(true).write(true).create(opts.create);
        if opts.dsync {
            o.custom_flags(libc::O_DSYNC);
        }
        let file = o.open(path)?;
        Ok(Arc::new(OsFile {
            file,
            dsync: opts.dsync,
        }))
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            if let Some(n) = e.file_name().to_str() {
                names.push(n.to_string());
            }
        }
        names.sort();
        Ok(names)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// Joins a directory and a file name (a helper for callers holding names from `list`).
pub fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}
