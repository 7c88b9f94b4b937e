//! redb's storage backend over Walden's I/O layer: the store's file goes
//! through the same `Vfs` as the log, so simulated power losses (`MemVfs`),
//! injected EIO/ENOSPC and bit rot reach the store too.

use std::fmt;
use std::io;
use std::sync::Arc;
use walden_log::vfs::{read_exact_at, VfsFile};

/// The file is usually a `walden_log::CountingFile`, so the data file's I/O
/// shows in `sys.dm_io_virtual_file_stats`.
pub struct VfsBackend {
    file: Arc<dyn VfsFile>,
}

impl VfsBackend {
    pub fn new(file: Arc<dyn VfsFile>) -> Self {
        VfsBackend { file }
    }
}

impl fmt::Debug for VfsBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("VfsBackend")
    }
}

impl VfsBackend {
    /// Reads `out`'s bytes again into `again` until two reads agree.
    fn read_again(&self, offset: u64, out: &mut [u8], again: &mut [u8]) -> io::Result<()> {
        for _ in 0..4 {
            read_exact_at(&*self.file, again, offset)?;
            if *again == *out {
                return Ok(());
            }
            out.copy_from_slice(again);
        }
        Err(io::Error::other(format!(
            "reads of {} bytes at offset {offset} keep returning different bytes",
            out.len()
        )))
    }
}

thread_local! {
    /// The second read of `VfsBackend::read`.
    static AGAIN: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl redb::StorageBackend for VfsBackend {
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }

    /// Every read is read twice and must agree: redb verifies page checksums
    /// only in its integrity check, and its repair walks the pages a second
    /// time without them, so a read that is transiently wrong (a flipped
    /// bit on the way) could otherwise steer a repair that is then committed.
    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        read_exact_at(&*self.file, out, offset)?;
        AGAIN.with_borrow_mut(|again| {
            // One buffer per thread: a scan reads thousands of pages (a
            // rare large read does not stay allocated).
            again.clear();
            again.resize(out.len(), 0);
            let agreed = self.read_again(offset, out, again);
            if again.capacity() > 1 << 20 {
                *again = Vec::new();
            }
            agreed
        })
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_at(data, offset)
    }
}
