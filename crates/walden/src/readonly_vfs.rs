//! A read-only view of the real file system for the inspection commands.
//!
//! [`walden_log::OsVfs`] opens every file read-write, so a scan through it
//! needs write permission and could in principle modify what it inspects.
//! `walden log check` and `walden log dump` go through this instead: files
//! are opened with `O_RDONLY` and every mutating call fails.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use walden_log::{OpenOptionsVfs, Vfs, VfsFile};

#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOnlyVfs;

struct ReadOnlyFile(File);

fn refused(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{what} refused: the log is opened read-only"),
    )
}

impl VfsFile for ReadOnlyFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        loop {
            match self.0.read_at(buf, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
    fn write_at(&self, _buf: &[u8], _offset: u64) -> io::Result<()> {
        Err(refused("write"))
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, _len: u64) -> io::Result<()> {
        Err(refused("truncate"))
    }
    fn is_dsync(&self) -> bool {
        false
    }
}

impl Vfs for ReadOnlyVfs {
    fn open(&self, path: &Path, opts: OpenOptionsVfs) -> io::Result<Arc<dyn VfsFile>> {
        if opts.create {
            return Err(refused("create"));
        }
        Ok(Arc::new(ReadOnlyFile(File::open(path)?)))
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }
    fn create_dir_all(&self, _path: &Path) -> io::Result<()> {
        Err(refused("mkdir"))
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for e in std::fs::read_dir(dir)? {
            if let Some(n) = e?.file_name().to_str() {
                names.push(n.to_string());
            }
        }
        names.sort();
        Ok(names)
    }
    fn remove_file(&self, _path: &Path) -> io::Result<()> {
        Err(refused("remove"))
    }
    fn remove_dir_all(&self, _path: &Path) -> io::Result<()> {
        Err(refused("remove"))
    }
    fn rename(&self, _from: &Path, _to: &Path) -> io::Result<()> {
        Err(refused("rename"))
    }
    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
}
