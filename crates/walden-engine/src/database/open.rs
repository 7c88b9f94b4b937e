//! Opening, creating and shutting down a database: directories, recovery, control file.

use super::{Database, DbCounters, OpenOptions};
use crate::checkpoint::{self, Checkpoints, Image};
use crate::control::{self, Control};
use crate::error::{io_err, EngineError, Result};
use crate::recovery::Replay;
use crate::replica::ReplicaState;
use crate::store::base::open_and_load;
use crate::transactions::Transactions;
use parking_lot::{Mutex, RwLock};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use walden_log::{FileStats, LogManager, OpenBounds};

impl Database {
    pub(crate) fn data_dir(dir: &Path) -> PathBuf {
        dir.join("data")
    }

    pub(crate) fn log_dir(dir: &Path) -> PathBuf {
        dir.join("log")
    }

    /// Opens a database directory: checks its control file against the
    /// catalog's id and name, loads the newest valid checkpoint image, replays
    /// the log after it, and cuts off a torn tail (refusing a log that ends
    /// before what the control file says was hardened).
    pub(crate) fn open(
        id: u32,
        name: &str,
        dir: &Path,
        opts: &OpenOptions,
    ) -> Result<Arc<Database>> {
        let vfs = opts.vfs.clone();
        if !vfs.exists(dir).map_err(io_err(dir))? {
            return Err(EngineError::DirectoryMismatch {
                dir: dir.to_path_buf(),
                detail: format!("instance.json lists database \"{name}\" (id {id}) but its directory is missing"),
            });
        }
        // Spill files a crash left (the log holds their rows).
        crate::store::layer::clear_spill_dir(&*vfs, dir)?;
        let ctl = control::read(&*vfs, dir)?;
        match &ctl {
            Some(c) => control::check_identity(c, id, name, dir)?,
            None => {
                tracing::warn!(dir = %dir.display(), "database directory has no control file (older build); writing one")
            }
        }
        let data_stats = Arc::new(FileStats::default());
        let (store, image) = open_and_load(&*vfs, &Self::data_dir(dir), &data_stats, opts.storage)?;
        // After a clean shutdown the file is as the shutdown's checkpoint
        // left it, and its pages are not read whole before the first write
        // (that read costs the first checkpoint after every restart a pass
        // over the file; at pgbench scale 100 it cost TPC-B a second below
        // half its median). After an unclean stop they are (`store/verify.rs`).
        if ctl.as_ref().is_some_and(|c| c.clean_shutdown) {
            store.trust_pages();
        }
        let loaded = match image {
            Some(image) => checkpoint::Loaded {
                max_lsn: image.lsn,
                image,
                other_lsn: None,
                damaged: Vec::new(),
            },
            // A database of a build before the base store: its images.
            None => checkpoint::load_newest(&*vfs, &Self::data_dir(dir), &data_stats)?,
        };
        for d in &loaded.damaged {
            tracing::error!(database = name, damage = %d, "checkpoint image unusable; recovering from an older one");
        }
        let from = loaded.image.lsn;
        let prior = loaded.other_lsn.unwrap_or(from);
        let bounds = OpenBounds {
            min_end: ctl
                .as_ref()
                .map_or(0, |c| c.hardened_lsn.max(c.checkpoint_lsn))
                .max(loaded.max_lsn),
            prior_max_write: ctl.as_ref().map(|c| c.log_max_write as usize),
        };
        let mut replay = Replay::new(loaded.image);
        let log_stats = Arc::new(FileStats::default());
        // Redo that needed a damaged row of the data file fails as damage to
        // the data file, not to the log.
        let mut store_err = None;
        let (log, report) = LogManager::open_with(
            vfs.clone(),
            &Self::log_dir(dir),
            opts.log.clone(),
            log_stats,
            from,
            bounds,
            &mut |_, end, rec| {
                replay.apply(end, rec).map_err(|e| {
                    let le = walden_log::LogError::Corrupt {
                        file: Self::log_dir(dir),
                        offset: 0,
                        lsn: end,
                        detail: format!("redo record cannot be applied: {e}"),
                    };
                    if matches!(
                        e,
                        EngineError::CorruptDataFile { .. } | EngineError::Store { .. }
                    ) {
                        store_err = Some(e);
                    }
                    le
                })
            },
        )
        .map_err(|le| store_err.take().unwrap_or_else(|| le.into()))?;
        let roles = replay.take_roles();
        let (state, pending) = replay.finish();
        log.set_exposure_bounds(
            state.settings.max_exposure_bytes,
            state.settings.max_exposure(),
        );
        let end_lsn = log.end_lsn();
        let vis = state.catalog.vis.clone();
        let db = Arc::new(Database {
            id,
            name: name.to_string(),
            dir: dir.to_path_buf(),
            vfs,
            log,
            catalog: RwLock::new(state.catalog),
            catalog_version: AtomicU64::new(0),
            settings: RwLock::new(state.settings),
            txns: Transactions::new(vis, state.next_txid, opts.lock_timeout),
            store,
            checkpoints: Checkpoints::new(from, prior),
            backup: Mutex::new(state.backup),
            replica: ReplicaState::new(opts.secondary, pending, end_lsn),
            data_stats,
            counters: DbCounters::default(),
            limits: opts.limits,
            recovery: report,
        });
        *db.txns.recovered_roles.lock() = roles;
        // Record this run's max_write before it writes anything: the next
        // recovery clears that far past the end. The hardened LSN stays the
        // one of the last checkpoint or clean shutdown.
        control::write(
            &*db.vfs,
            dir,
            &Control {
                format_version: control::FORMAT_VERSION,
                id,
                name: name.to_string(),
                hardened_lsn: ctl.as_ref().map_or(from, |c| c.hardened_lsn),
                checkpoint_lsn: from,
                clean_shutdown: false,
                log_max_write: db.log.config().max_write as u64,
            },
        )?;
        tracing::info!(
            database = name,
            from_lsn = from,
            end_lsn = db.log.end_lsn(),
            records = db.recovery.scan.records,
            cut = ?db.recovery.scan.cut,
            "database opened"
        );
        Ok(db)
    }

    /// Creates the files of a new database (control file first, so the
    /// directory says whose it is), holding `image` (empty for CREATE
    /// DATABASE, a backup's for RESTORE).
    pub(crate) fn create(
        id: u32,
        name: &str,
        dir: &Path,
        opts: &OpenOptions,
        image: &Image,
    ) -> Result<()> {
        let vfs = &*opts.vfs;
        walden_log::vfs::create_dir_durable(vfs, dir).map_err(io_err(dir))?;
        control::write(
            vfs,
            dir,
            &Control {
                format_version: control::FORMAT_VERSION,
                id,
                name: name.to_string(),
                hardened_lsn: image.lsn,
                checkpoint_lsn: image.lsn,
                clean_shutdown: true,
                log_max_write: opts.log.max_write as u64,
            },
        )?;
        let data = Self::data_dir(dir);
        walden_log::vfs::create_dir_durable(vfs, &data).map_err(io_err(&data))?;
        checkpoint::write_image(vfs, &data, image, &Arc::new(FileStats::default()))?;
        if image.lsn > 0 {
            LogManager::init_at(
                opts.vfs.clone(),
                &Self::log_dir(dir),
                &opts.log,
                Arc::new(FileStats::default()),
                image.lsn,
            )?;
        }
        Ok(())
    }

    /// Records the hardened and checkpoint LSNs in the control file.
    pub(crate) fn write_control(&self, clean_shutdown: bool) -> Result<()> {
        control::write(
            &*self.vfs,
            &self.dir,
            &Control {
                format_version: control::FORMAT_VERSION,
                id: self.id,
                name: self.name.clone(),
                hardened_lsn: self.log.hardened_lsn(),
                checkpoint_lsn: self.checkpoint_lsn(),
                clean_shutdown,
                log_max_write: self.log.config().max_write as u64,
            },
        )
    }

    /// Hardens everything, checkpoints and closes the log.
    pub(crate) fn shutdown(&self) -> Result<()> {
        if self.log.is_poisoned().is_none() {
            self.log.flush(&[])?;
            self.checkpoint()?;
        }
        self.log.close()?;
        if self.log.is_poisoned().is_none() {
            self.write_control(true)?;
        }
        Ok(())
    }
}
