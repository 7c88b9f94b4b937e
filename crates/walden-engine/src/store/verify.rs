//! Verifying the data file's pages before the first write after an open.
//!
//! The open reads only what it needs (restart time must not grow with the
//! file), and redb checks page checksums only in its integrity check. A
//! commit, though, reads pages the open did not: the lists of pages freed by
//! earlier commits. A damaged entry there makes redb panic while it holds
//! its allocator's lock, and again in a destructor while unwinding, which
//! aborts the process: no `catch_unwind` can keep the server up. So before
//! the first checkpoint after an open writes, every page of the newest
//! commit is verified on a private handle of the same file, whose writes
//! (redb repairs its allocator state after an unclean stop) go to memory
//! and are thrown away. Damage found stops the checkpoints, as the check in
//! `check.rs` does; the log keeps every change since the last good one.

use super::base::panic_text;
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use walden_log::vfs::{read_exact_at, VfsFile};

/// Granularity of the overlay's copies.
const PAGE: u64 = 4096;

/// The file as it is, with writes kept in memory above it.
struct Overlay {
    base: Arc<dyn VfsFile>,
    state: parking_lot::Mutex<State>,
}

struct State {
    /// Length as redb sees it.
    len: u64,
    /// Bytes of `base` still showing (a shrink hides the rest).
    base_len: u64,
    pages: HashMap<u64, Box<[u8]>>,
}

impl fmt::Debug for Overlay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Overlay")
    }
}

impl Overlay {
    fn new(base: Arc<dyn VfsFile>) -> io::Result<Overlay> {
        let len = base.len()?;
        Ok(Overlay {
            base,
            state: parking_lot::Mutex::new(State {
                len,
                base_len: len,
                pages: HashMap::new(),
            }),
        })
    }

    /// Page `p` as redb last left it.
    fn page(&self, st: &State, p: u64) -> io::Result<Box<[u8]>> {
        if let Some(pg) = st.pages.get(&p) {
            return Ok(pg.clone());
        }
        let mut pg = vec![0; PAGE as usize].into_boxed_slice();
        let start = p * PAGE;
        let end = ((p + 1) * PAGE).min(st.base_len);
        if start < end {
            read_exact_at(&*self.base, &mut pg[..(end - start) as usize], start)?;
        }
        Ok(pg)
    }
}

impl redb::StorageBackend for Overlay {
    fn len(&self) -> io::Result<u64> {
        Ok(self.state.lock().len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let st = self.state.lock();
        let end = offset + out.len() as u64;
        if end > st.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("read to {end} past the end ({})", st.len),
            ));
        }
        let from_base = end.min(st.base_len);
        if offset < from_base {
            read_exact_at(
                &*self.base,
                &mut out[..(from_base - offset) as usize],
                offset,
            )?;
        }
        if from_base < end {
            let z = from_base.max(offset) - offset;
            out[z as usize..].fill(0);
        }
        if out.is_empty() {
            return Ok(());
        }
        for p in offset / PAGE..=(end - 1) / PAGE {
            if let Some(pg) = st.pages.get(&p) {
                let (a, b) = ((p * PAGE).max(offset), ((p + 1) * PAGE).min(end));
                out[(a - offset) as usize..(b - offset) as usize]
                    .copy_from_slice(&pg[(a - p * PAGE) as usize..(b - p * PAGE) as usize]);
            }
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        if len < st.len {
            // Bytes past the new end read as zeros if the file grows again.
            let last = len / PAGE;
            if !len.is_multiple_of(PAGE) {
                let mut pg = self.page(&st, last)?;
                pg[(len % PAGE) as usize..].fill(0);
                st.pages.insert(last, pg);
            }
            st.pages.retain(|&p, _| p * PAGE < len);
            st.base_len = st.base_len.min(len);
        }
        st.len = len;
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let mut st = self.state.lock();
        let end = offset + data.len() as u64;
        for p in offset / PAGE..=(end - 1) / PAGE {
            let mut pg = self.page(&st, p)?;
            let (a, b) = ((p * PAGE).max(offset), ((p + 1) * PAGE).min(end));
            pg[(a - p * PAGE) as usize..(b - p * PAGE) as usize]
                .copy_from_slice(&data[(a - offset) as usize..(b - offset) as usize]);
            st.pages.insert(p, pg);
        }
        st.len = st.len.max(end);
        Ok(())
    }
}

/// Verifies the checksum of every page the file's newest commit reaches,
/// with redb's integrity check on a private handle (see the module
/// comment). `Err` says what is damaged.
pub(crate) fn verify_pages(file: Arc<dyn VfsFile>) -> Result<(), String> {
    let overlay = Overlay::new(file).map_err(|e| format!("reading it failed: {e}"))?;
    let opened = catch_unwind(AssertUnwindSafe(|| {
        redb::Database::builder()
            .set_cache_size(8 << 20)
            .set_check_integrity_on_open(true)
            .create_with_backend(overlay)
    }));
    match opened {
        Ok(Ok(db)) => {
            drop(db);
            Ok(())
        }
        Ok(Err(e)) => Err(format!("its pages do not verify: {e}")),
        Err(p) => Err(format!(
            "verifying it panicked in redb: {}",
            panic_text(&*p)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::StorageBackend;
    use walden_log::{MemVfs, OpenOptionsVfs, Vfs};

    fn file(bytes: &[u8]) -> Arc<dyn VfsFile> {
        let vfs = MemVfs::new();
        let f = vfs
            .open(
                std::path::Path::new("/f"),
                OpenOptionsVfs {
                    create: true,
                    dsync: false,
                },
            )
            .unwrap();
        f.write_at(bytes, 0).unwrap();
        f
    }

    #[test]
    fn the_overlay_reads_its_writes_and_leaves_the_file_alone() {
        let base: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let f = file(&base);
        let o = Overlay::new(f.clone()).unwrap();
        let mut model = base.clone();
        o.write(4000, &[7; 200]).unwrap();
        model[4000..4200].fill(7);
        o.write(9990, &[9; 30]).unwrap();
        model.resize(10_020, 0);
        model[9990..10_020].fill(9);
        let mut out = vec![0; model.len()];
        o.read(0, &mut out).unwrap();
        assert_eq!(out, model);
        // Shrink into a page, grow again: the cut bytes read as zeros.
        o.set_len(5000).unwrap();
        o.set_len(9000).unwrap();
        model.truncate(5000);
        model.resize(9000, 0);
        let mut out = vec![0; 9000];
        o.read(0, &mut out).unwrap();
        assert_eq!(out, model);
        let mut past = [0; 1];
        assert!(o.read(9000, &mut past).is_err());
        let mut under = vec![0; base.len()];
        read_exact_at(&*f, &mut under, 0).unwrap();
        assert_eq!(under, base, "the file is untouched");
    }
}
