//! A secondary seeded from its primary's image: the image arrives in
//! pieces into `<name>.seeding/seed.wdb` beside the live database, which
//! stays readable; once whole (length and checksum agree) the new database
//! is built in that directory and swapped in by renames. The catalog says
//! "replacing" (durably) from the moment the new copy is whole and synced
//! until the swap is done, so a crash at any point leaves the old copy (the
//! state was never written: the staged directory is removed at open) or the
//! new one (the open finishes the swap); never neither.

use super::{DbEntry, DbState, Instance};
use crate::database::Database;
use crate::error::{io_err, EngineError, Result};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use walden_log::{Lsn, OpenOptionsVfs, VfsFile};

/// The image file inside a staged directory, removed once built.
const SEED_FILE: &str = "seed.wdb";

/// A seed being received. Dropped before [`SeedReceiver::finish`] (the
/// connection was lost), it removes what it wrote; the old database is
/// untouched.
pub struct SeedReceiver {
    inst: Instance,
    name: String,
    lsn: Lsn,
    staged: PathBuf,
    file: Option<Arc<dyn VfsFile>>,
    written: u64,
    crc: u32,
}

impl Instance {
    pub(super) fn staged_dir(&self, name: &str) -> PathBuf {
        self.inner
            .cfg
            .data_dir
            .join(format!("{}.seeding", name.to_ascii_lowercase()))
    }

    fn retired_dir(&self, name: &str) -> PathBuf {
        self.inner
            .cfg
            .data_dir
            .join(format!("{}.old", name.to_ascii_lowercase()))
    }

    /// Starts receiving a seed of database `name` whose log continues at
    /// `lsn`.
    pub fn begin_seed(&self, name: &str, lsn: Lsn) -> Result<SeedReceiver> {
        self.check_open()?;
        super::valid_name(name)?;
        let replacing = self
            .inner
            .catalog
            .lock()
            .databases
            .iter()
            .any(|e| e.name.eq_ignore_ascii_case(name) && e.state == DbState::Replacing);
        if replacing {
            // Its staged copy is whole and recorded: only a restart (which
            // finishes the swap) may touch it.
            return Err(EngineError::Replica(format!(
                "database \"{name}\" is half swapped with an earlier seed; restart the instance to finish it"
            )));
        }
        let vfs = &*self.inner.cfg.vfs;
        let staged = self.staged_dir(name);
        if vfs.exists(&staged).map_err(io_err(&staged))? {
            // An earlier attempt's, never recorded.
            vfs.remove_dir_all(&staged).map_err(io_err(&staged))?;
        }
        walden_log::vfs::create_dir_durable(vfs, &staged).map_err(io_err(&staged))?;
        let path = staged.join(SEED_FILE);
        let file = vfs
            .open(
                &path,
                OpenOptionsVfs {
                    create: true,
                    dsync: false,
                },
            )
            .map_err(io_err(&path))?;
        Ok(SeedReceiver {
            inst: self.clone(),
            name: name.to_string(),
            lsn,
            staged,
            file: Some(file),
            written: 0,
            crc: 0,
        })
    }

    /// `Some(k)`: the seed swap stops with an error after its step `k`, as
    /// if the process died there (for crash tests; 0 turns it off).
    #[doc(hidden)]
    pub fn set_seed_fault(&self, step: u32) {
        self.inner.seed_fault.store(step, Relaxed);
    }

    fn fault(&self, step: u32) -> Result<()> {
        if self.inner.seed_fault.load(Relaxed) == step {
            return Err(EngineError::Replica(format!(
                "simulated crash after step {step} of a seed swap"
            )));
        }
        Ok(())
    }

    /// Builds the database in the staged directory from its image, records
    /// the swap and makes it.
    fn install_seed(&self, name: &str, staged: &std::path::Path) -> Result<Arc<Database>> {
        let vfs = self.inner.cfg.vfs.clone();
        let key = name.to_ascii_lowercase();
        let old = self.inner.dbs.read().get(&key).cloned();
        let id = match &old {
            Some(d) => d.id,
            None => {
                let mut cat = self.inner.catalog.lock();
                let id = cat.next_id;
                cat.next_id += 1;
                id
            }
        };
        let opts = self.open_options(true);
        let seed = staged.join(SEED_FILE);
        {
            let image = crate::image_stream::read_image_file(&*vfs, &seed)?;
            Database::create(id, name, staged, &opts, &image)?;
        }
        vfs.remove_file(&seed).map_err(io_err(&seed))?;
        vfs.sync_dir(staged).map_err(io_err(staged))?;
        self.fault(1)?;
        // The new copy is whole: from here on it replaces the old one.
        let before = self.inner.catalog.lock().databases.clone();
        {
            let mut cat = self.inner.catalog.lock();
            cat.databases.retain(|e| e.id != id);
            cat.databases.push(DbEntry {
                name: name.to_string(),
                id,
                secondary: true,
                state: DbState::Replacing,
            });
            cat.databases.sort_by_key(|e| e.id);
        }
        if let Err(e) = self.save_catalog() {
            self.inner.catalog.lock().databases = before;
            return Err(e);
        }
        self.fault(2)?;
        // Readers looking the name up wait here, or follow the superseded
        // copy, rather than being told it does not exist.
        let mut dbs = self.inner.dbs.write();
        if let Some(old) = &old {
            old.mark_superseded();
            let _ = old.log.close();
        }
        self.finish_swap(name)?;
        let dir = self.db_dir(name);
        let db = Database::open(id, name, &dir, &opts)?;
        self.set_state(id, DbState::Ready);
        self.save_catalog()?;
        dbs.insert(key, db.clone());
        Ok(db)
    }

    /// Moves a whole staged copy into place: the old directory aside, the
    /// staged one in, then the old one removed. Run again after a crash at
    /// any step, it finishes the same way.
    pub(super) fn finish_swap(&self, name: &str) -> Result<()> {
        let vfs = &*self.inner.cfg.vfs;
        let data = &self.inner.cfg.data_dir;
        let dir = self.db_dir(name);
        let staged = self.staged_dir(name);
        let retired = self.retired_dir(name);
        let exists = |p: &std::path::Path| vfs.exists(p).map_err(io_err(p));
        if exists(&staged)? {
            if exists(&dir)? {
                if exists(&retired)? {
                    vfs.remove_dir_all(&retired).map_err(io_err(&retired))?;
                }
                vfs.rename(&dir, &retired).map_err(io_err(&dir))?;
                vfs.sync_dir(data).map_err(io_err(data))?;
                self.fault(3)?;
            }
            vfs.rename(&staged, &dir).map_err(io_err(&staged))?;
            vfs.sync_dir(data).map_err(io_err(data))?;
            self.fault(4)?;
        }
        if exists(&retired)? {
            vfs.remove_dir_all(&retired).map_err(io_err(&retired))?;
            vfs.sync_dir(data).map_err(io_err(data))?;
        }
        Ok(())
    }

    /// At open, for a database not being swapped: what an interrupted
    /// seed left beside it (never recorded, so never needed).
    pub(super) fn remove_stale_seed(&self, name: &str) -> Result<()> {
        let vfs = &*self.inner.cfg.vfs;
        for p in [self.staged_dir(name), self.retired_dir(name)] {
            if vfs.exists(&p).map_err(io_err(&p))? {
                tracing::warn!(dir = %p.display(), "removing what an interrupted seed left");
                vfs.remove_dir_all(&p).map_err(io_err(&p))?;
                vfs.sync_dir(&self.inner.cfg.data_dir)
                    .map_err(io_err(&self.inner.cfg.data_dir))?;
            }
        }
        Ok(())
    }
}

impl SeedReceiver {
    /// Appends the next piece of the image.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let path = self.staged.join(SEED_FILE);
        let f = self
            .file
            .as_ref()
            .ok_or_else(|| EngineError::Replica("the seed is already finished".into()))?;
        f.write_at(bytes, self.written).map_err(io_err(&path))?;
        self.written += bytes.len() as u64;
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        Ok(())
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.written
    }

    /// The primary says the image was `len` bytes with checksum `crc`: if
    /// that is what arrived, builds the database and swaps it in.
    pub fn finish(mut self, len: u64, crc: u32) -> Result<Arc<Database>> {
        if len != self.written || crc != self.crc {
            return Err(EngineError::Replica(format!(
                "the seed arrived damaged: {} bytes with checksum {:08x}, the primary sent {len} with {crc:08x}",
                self.written, self.crc
            )));
        }
        let path = self.staged.join(SEED_FILE);
        let f = self.file.take().expect("a seed is finished once");
        f.sync_data().map_err(io_err(&path))?;
        drop(f);
        let db = self.inst.install_seed(&self.name, &self.staged)?;
        if db.log.end_lsn() != self.lsn {
            tracing::warn!(database = %self.name, lsn = self.lsn, end = db.log.end_lsn(),
                "a seed's log does not start where its primary said");
        }
        // Installed: nothing of it to remove.
        self.staged = PathBuf::new();
        Ok(db)
    }
}

impl Drop for SeedReceiver {
    fn drop(&mut self) {
        if self.staged.as_os_str().is_empty() {
            return;
        }
        // Not yet recorded as replacing (or the swap itself failed, which
        // the catalog state then covers): only an unrecorded copy goes.
        let recorded = self
            .inst
            .inner
            .catalog
            .lock()
            .databases
            .iter()
            .any(|e| e.name.eq_ignore_ascii_case(&self.name) && e.state == DbState::Replacing);
        if recorded {
            return;
        }
        self.file = None;
        let vfs = &*self.inst.inner.cfg.vfs;
        if vfs.exists(&self.staged).unwrap_or(false) {
            let _ = vfs.remove_dir_all(&self.staged);
            let _ = vfs.sync_dir(&self.inst.inner.cfg.data_dir);
        }
    }
}
