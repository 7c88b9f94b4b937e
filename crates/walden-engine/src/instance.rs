//! An instance: a data directory holding several databases, the sessions
//! connected to it, instance-wide wait statistics and the background
//! checkpointer.

use crate::checkpoint;
use crate::database::{Database, OpenOptions};
use crate::error::{io_err, EngineError, Result};
use crate::schema::DbSettings;
use crate::session::Session;
use parking_lot::{Condvar, Mutex, RwLock};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;
use walden_log::{FileStats, LogConfig, LogManager, Lsn, OsVfs, Vfs, WaitStats};

const CATALOG_FILE: &str = "instance.json";
/// User database ids start where SQL Server's do, after the system databases.
const FIRST_DATABASE_ID: u32 = 5;

/// Settings of an instance.
#[derive(Clone)]
pub struct InstanceConfig {
    pub data_dir: PathBuf,
    pub vfs: Arc<dyn Vfs>,
    /// Log settings for every database.
    pub log: LogConfig,
    /// Checkpoint a database at least this often when its log has grown.
    pub checkpoint_interval: Option<Duration>,
    /// Checkpoint a database once this much log was written since the last one.
    pub checkpoint_log_bytes: u64,
    /// How long a writer waits for a row lock before failing (`None`: forever;
    /// deadlocks are still detected).
    pub lock_timeout: Option<Duration>,
    /// Database created when the instance is new (`walden`).
    pub default_database: Option<String>,
    /// Run the background checkpointer.
    pub background_checkpoints: bool,
}

impl InstanceConfig {
    /// Defaults on the real file system.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        InstanceConfig {
            data_dir: data_dir.into(),
            vfs: Arc::new(OsVfs),
            log: LogConfig::default(),
            checkpoint_interval: Some(Duration::from_secs(60)),
            checkpoint_log_bytes: 256 * 1024 * 1024,
            lock_timeout: None,
            default_database: Some("walden".into()),
            background_checkpoints: true,
        }
    }
}

#[derive(Serialize, Deserialize, Default, Clone)]
struct CatalogFile {
    databases: Vec<DbEntry>,
    next_id: u32,
}

#[derive(Serialize, Deserialize, Clone)]
struct DbEntry {
    name: String,
    id: u32,
    /// A secondary replica: read-only, its log comes from a primary.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    secondary: bool,
}

struct Inner {
    cfg: InstanceConfig,
    dbs: RwLock<BTreeMap<String, Arc<Database>>>,
    catalog: Mutex<CatalogFile>,
    waits: Arc<WaitStats>,
    sessions: Mutex<BTreeMap<u32, Weak<Session>>>,
    next_spid: AtomicU32,
    closed: AtomicBool,
    stop: (Mutex<bool>, Condvar),
    bg: Mutex<Option<JoinHandle<()>>>,
}

/// An open instance. Cloning shares it.
#[derive(Clone)]
pub struct Instance {
    inner: Arc<Inner>,
}

fn valid_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 128
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(EngineError::InvalidDefinition(format!(
            "invalid database name \"{name}\": use letters, digits, '_' and '-'"
        )));
    }
    Ok(())
}

impl Instance {
    /// Opens (or creates) the instance in `cfg.data_dir` and recovers every
    /// database in it.
    pub fn open(cfg: InstanceConfig) -> Result<Instance> {
        cfg.log.validate().map_err(EngineError::InvalidDefinition)?;
        let vfs = cfg.vfs.clone();
        walden_log::vfs::create_dir_durable(&*vfs, &cfg.data_dir).map_err(io_err(&cfg.data_dir))?;
        let cat_path = cfg.data_dir.join(CATALOG_FILE);
        let fresh = !vfs.exists(&cat_path).map_err(io_err(&cat_path))?;
        let catalog: CatalogFile = if fresh {
            CatalogFile {
                databases: Vec::new(),
                next_id: FIRST_DATABASE_ID,
            }
        } else {
            let bytes = walden_log::vfs::read_file(&*vfs, &cat_path).map_err(io_err(&cat_path))?;
            serde_json::from_slice(&bytes).map_err(|e| EngineError::CorruptDataFile {
                path: cat_path.clone(),
                detail: e.to_string(),
            })?
        };
        let inner = Arc::new(Inner {
            cfg: cfg.clone(),
            dbs: RwLock::new(BTreeMap::new()),
            catalog: Mutex::new(catalog.clone()),
            waits: Arc::new(WaitStats::default()),
            sessions: Mutex::new(BTreeMap::new()),
            next_spid: AtomicU32::new(51),
            closed: AtomicBool::new(false),
            stop: (Mutex::new(false), Condvar::new()),
            bg: Mutex::new(None),
        });
        let inst = Instance { inner };
        for e in &catalog.databases {
            let db = Database::open(
                e.id,
                &e.name,
                &inst.db_dir(&e.name),
                &inst.open_options(e.secondary),
            )?;
            inst.inner
                .dbs
                .write()
                .insert(e.name.to_ascii_lowercase(), db);
        }
        if fresh {
            // Create the default database before the catalog exists, so a crash
            // in between leaves a directory that is still "new" and is set up
            // again on the next open (create_database writes the catalog).
            match cfg.default_database.clone() {
                Some(name) => {
                    inst.create_database(&name)?;
                }
                None => inst.save_catalog()?,
            }
        }
        if cfg.background_checkpoints {
            inst.start_checkpointer();
        }
        Ok(inst)
    }

    fn open_options(&self, secondary: bool) -> OpenOptions {
        OpenOptions {
            vfs: self.inner.cfg.vfs.clone(),
            log: self.inner.cfg.log.clone(),
            lock_timeout: self.inner.cfg.lock_timeout,
            secondary,
        }
    }

    fn db_dir(&self, name: &str) -> PathBuf {
        self.inner.cfg.data_dir.join(name.to_ascii_lowercase())
    }

    pub fn data_dir(&self) -> &Path {
        &self.inner.cfg.data_dir
    }

    pub fn config(&self) -> &InstanceConfig {
        &self.inner.cfg
    }

    fn save_catalog(&self) -> Result<()> {
        let cat = self.inner.catalog.lock().clone();
        let path = self.inner.cfg.data_dir.join(CATALOG_FILE);
        let bytes = serde_json::to_vec_pretty(&cat).expect("catalog serializes");
        walden_log::vfs::write_file_atomic(&*self.inner.cfg.vfs, &path, &bytes)
            .map_err(io_err(&path))
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Relaxed) {
            return Err(EngineError::Closed);
        }
        Ok(())
    }

    /// `CREATE DATABASE name` with default settings.
    pub fn create_database(&self, name: &str) -> Result<Arc<Database>> {
        self.create_database_with(name, DbSettings::default())
    }

    /// Creates a database with the given settings. Fully durable.
    pub fn create_database_with(&self, name: &str, settings: DbSettings) -> Result<Arc<Database>> {
        self.check_open()?;
        valid_name(name)?;
        let mut dbs = self.inner.dbs.write();
        if dbs.contains_key(&name.to_ascii_lowercase()) {
            return Err(EngineError::DatabaseExists(name.to_string()));
        }
        let dir = self.db_dir(name);
        let vfs = &self.inner.cfg.vfs;
        if vfs.exists(&dir).map_err(io_err(&dir))? {
            // Left over from a create that crashed before it was registered.
            vfs.remove_dir_all(&dir).map_err(io_err(&dir))?;
        }
        let opts = self.open_options(false);
        Database::create(&dir, &opts, settings)?;
        let id = {
            let mut cat = self.inner.catalog.lock();
            let id = cat.next_id;
            cat.next_id += 1;
            cat.databases.push(DbEntry {
                name: name.to_string(),
                id,
                secondary: false,
            });
            id
        };
        let db = Database::open(id, name, &dir, &opts)?;
        self.save_catalog()?;
        dbs.insert(name.to_ascii_lowercase(), db.clone());
        drop(dbs);
        // A new log zero-fills its spare segment in the background; let that
        // finish here, as CREATE DATABASE initialises log files in SQL
        // Server, so the first work in the database does not compete with a
        // 64 MB write it did not ask for.
        db.log().wait_preallocation(Duration::from_secs(30));
        Ok(db)
    }

    /// `DROP DATABASE name`: closes it and removes its files.
    pub fn drop_database(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let db = self
            .inner
            .dbs
            .write()
            .remove(&name.to_ascii_lowercase())
            .ok_or_else(|| EngineError::UnknownDatabase(name.to_string()))?;
        self.inner
            .catalog
            .lock()
            .databases
            .retain(|e| !e.name.eq_ignore_ascii_case(name));
        self.save_catalog()?;
        let _ = db.log.close();
        let vfs = &self.inner.cfg.vfs;
        vfs.remove_dir_all(&db.dir).map_err(io_err(&db.dir))?;
        vfs.sync_dir(&self.inner.cfg.data_dir)
            .map_err(io_err(&db.dir))?;
        Ok(())
    }

    pub fn database(&self, name: &str) -> Result<Arc<Database>> {
        self.inner
            .dbs
            .read()
            .get(&name.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| EngineError::UnknownDatabase(name.to_string()))
    }

    pub fn database_by_id(&self, id: u32) -> Option<Arc<Database>> {
        self.inner.dbs.read().values().find(|d| d.id == id).cloned()
    }

    /// Every database, by id.
    pub fn databases(&self) -> Vec<Arc<Database>> {
        let mut v: Vec<_> = self.inner.dbs.read().values().cloned().collect();
        v.sort_by_key(|d| d.id);
        v
    }

    /// Restores a database from a full backup and a chain of log backups,
    /// under a new name (or the old one, once dropped).
    pub fn restore_database(
        &self,
        name: &str,
        full: &Path,
        logs: &[PathBuf],
    ) -> Result<Arc<Database>> {
        self.check_open()?;
        valid_name(name)?;
        let vfs = self.inner.cfg.vfs.clone();
        let image = checkpoint::restore_image(&*vfs, full, logs)?;
        let mut dbs = self.inner.dbs.write();
        if dbs.contains_key(&name.to_ascii_lowercase()) {
            return Err(EngineError::DatabaseExists(name.to_string()));
        }
        let dir = self.db_dir(name);
        if vfs.exists(&dir).map_err(io_err(&dir))? {
            vfs.remove_dir_all(&dir).map_err(io_err(&dir))?;
        }
        let data = Database::data_dir(&dir);
        walden_log::vfs::create_dir_durable(&*vfs, &data).map_err(io_err(&data))?;
        checkpoint::write_checkpoint(&*vfs, &data, &image, &Arc::new(FileStats::default()))?;
        LogManager::init_at(
            vfs.clone(),
            &Database::log_dir(&dir),
            &self.inner.cfg.log,
            Arc::new(FileStats::default()),
            image.lsn,
        )?;
        let id = {
            let mut cat = self.inner.catalog.lock();
            let id = cat.next_id;
            cat.next_id += 1;
            cat.databases.push(DbEntry {
                name: name.to_string(),
                id,
                secondary: false,
            });
            id
        };
        let db = Database::open(id, name, &dir, &self.open_options(false))?;
        self.save_catalog()?;
        dbs.insert(name.to_ascii_lowercase(), db.clone());
        Ok(db)
    }

    /// Replaces database `name` (if any) with a secondary replica seeded
    /// from a primary's image ([`Database::seed_image`]); its log starts at
    /// the image's LSN.
    pub fn seed_replica(&self, name: &str, image: &[u8]) -> Result<Arc<Database>> {
        self.check_open()?;
        valid_name(name)?;
        let vfs = self.inner.cfg.vfs.clone();
        let dir = self.db_dir(name);
        let decoded = checkpoint::decode_image(image, &dir)?;
        let mut dbs = self.inner.dbs.write();
        let old_id = if let Some(old) = dbs.remove(&name.to_ascii_lowercase()) {
            old.mark_superseded();
            let _ = old.log.close();
            Some(old.id)
        } else {
            None
        };
        if vfs.exists(&dir).map_err(io_err(&dir))? {
            vfs.remove_dir_all(&dir).map_err(io_err(&dir))?;
        }
        let data = Database::data_dir(&dir);
        walden_log::vfs::create_dir_durable(&*vfs, &data).map_err(io_err(&data))?;
        checkpoint::write_checkpoint(&*vfs, &data, &decoded, &Arc::new(FileStats::default()))?;
        LogManager::init_at(
            vfs.clone(),
            &Database::log_dir(&dir),
            &self.inner.cfg.log,
            Arc::new(FileStats::default()),
            decoded.lsn,
        )?;
        let id = {
            let mut cat = self.inner.catalog.lock();
            cat.databases.retain(|e| !e.name.eq_ignore_ascii_case(name));
            let id = old_id.unwrap_or_else(|| {
                let id = cat.next_id;
                cat.next_id += 1;
                id
            });
            cat.databases.push(DbEntry {
                name: name.to_string(),
                id,
                secondary: true,
            });
            cat.databases.sort_by_key(|e| e.id);
            id
        };
        let db = Database::open(id, name, &dir, &self.open_options(true))?;
        self.save_catalog()?;
        dbs.insert(name.to_ascii_lowercase(), db.clone());
        Ok(db)
    }

    /// Makes a secondary database the primary (failover), persistently.
    pub fn promote_database(&self, name: &str) -> Result<Lsn> {
        let db = self.database(name)?;
        let lsn = db.promote()?;
        self.set_secondary_flag(name, false)?;
        Ok(lsn)
    }

    /// Makes a primary database a secondary, persistently.
    pub fn demote_database(&self, name: &str) -> Result<()> {
        let db = self.database(name)?;
        db.demote();
        self.set_secondary_flag(name, true)
    }

    fn set_secondary_flag(&self, name: &str, secondary: bool) -> Result<()> {
        {
            let mut cat = self.inner.catalog.lock();
            for e in cat.databases.iter_mut() {
                if e.name.eq_ignore_ascii_case(name) {
                    e.secondary = secondary;
                }
            }
        }
        self.save_catalog()
    }

    /// A new session (`@@SPID` numbers start at 51, like SQL Server's user sessions).
    pub fn new_session(&self) -> Arc<Session> {
        let id = self.inner.next_spid.fetch_add(1, Relaxed);
        let s = Arc::new(Session::new(id, self.inner.waits.clone()));
        let mut reg = self.inner.sessions.lock();
        reg.retain(|_, w| w.strong_count() > 0);
        reg.insert(id, Arc::downgrade(&s));
        s
    }

    /// Live sessions.
    pub fn sessions(&self) -> Vec<Arc<Session>> {
        self.inner
            .sessions
            .lock()
            .values()
            .filter_map(|w| w.upgrade())
            .collect()
    }

    /// Instance-wide wait statistics (`sys.dm_os_wait_stats`).
    pub fn wait_stats(&self) -> &WaitStats {
        &self.inner.waits
    }

    fn start_checkpointer(&self) {
        let weak = Arc::downgrade(&self.inner);
        let h = std::thread::Builder::new()
            .name("walden-checkpointer".into())
            .spawn(move || loop {
                let Some(inner) = weak.upgrade() else { return };
                {
                    let mut stop = inner.stop.0.lock();
                    if *stop {
                        return;
                    }
                    inner.stop.1.wait_for(&mut stop, Duration::from_millis(250));
                    if *stop {
                        return;
                    }
                }
                let dbs: Vec<_> = inner.dbs.read().values().cloned().collect();
                for db in dbs {
                    let grown = db.log_since_checkpoint();
                    let due_by_size = grown >= inner.cfg.checkpoint_log_bytes;
                    let due_by_time = grown > 0
                        && inner
                            .cfg
                            .checkpoint_interval
                            .is_some_and(|i| db.last_checkpoint.lock().elapsed() >= i);
                    if (due_by_size || due_by_time) && db.log.is_poisoned().is_none() {
                        if let Err(e) = db.checkpoint() {
                            tracing::warn!(database = %db.name, error = %e, "background checkpoint failed");
                        }
                    }
                }
            })
            .ok();
        *self.inner.bg.lock() = h;
    }

    /// `SHUTDOWN WITH NOWAIT`: hardens every log but skips the checkpoints, so
    /// the next open recovers from the log (nothing committed is lost).
    pub fn shutdown_nowait(&self) -> Result<()> {
        if self.inner.closed.swap(true, Relaxed) {
            return Ok(());
        }
        self.stop_checkpointer();
        for db in self.databases() {
            db.log.close()?;
        }
        Ok(())
    }

    fn stop_checkpointer(&self) {
        *self.inner.stop.0.lock() = true;
        self.inner.stop.1.notify_all();
        if let Some(h) = self.inner.bg.lock().take() {
            let _ = h.join();
        }
    }

    /// Clean shutdown: hardens every database's log and checkpoints it, so a
    /// planned restart loses nothing.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Relaxed) {
            return Ok(());
        }
        self.stop_checkpointer();
        let mut first_err = None;
        for db in self.databases() {
            if let Err(e) = db.shutdown() {
                tracing::error!(database = %db.name, error = %e, "shutdown failed");
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
