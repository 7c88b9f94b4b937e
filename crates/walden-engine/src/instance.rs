//! An instance: a data directory holding several databases, the sessions
//! connected to it, instance-wide wait statistics and the background
//! checkpointer.

use crate::checkpoint::{self, Image};
use crate::control;
use crate::database::{Database, Limits, OpenOptions};
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
use walden_log::{LogConfig, Lsn, OsVfs, Vfs, WaitStats};

mod background;
pub(crate) mod roles_txn;
mod seeding;
pub use seeding::SeedReceiver;

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
    /// Largest value and row a transaction may write.
    pub limits: Limits,
    pub storage: crate::store::StorageConfig,
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
            limits: Limits::default(),
            storage: Default::default(),
        }
    }
}

#[derive(Serialize, Deserialize, Default, Clone)]
struct CatalogFile {
    databases: Vec<DbEntry>,
    next_id: u32,
    /// False until the default database of a new instance exists (a crash
    /// before that creates it again on the next open).
    #[serde(default = "yes")]
    initialized: bool,
    /// Roles, memberships, owners and grants (`roles.rs`); an older
    /// catalog without them gets the bootstrap superuser alone.
    #[serde(default)]
    roles: crate::roles::SharedRoles,
    /// Names this instance in its commits' role records (see
    /// `roles_txn.rs`); made when missing.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    instance_id: String,
}

fn yes() -> bool {
    true
}

#[derive(Serialize, Deserialize, Clone)]
struct DbEntry {
    name: String,
    id: u32,
    /// A secondary replica: read-only, its log comes from a primary.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    secondary: bool,
    #[serde(default, skip_serializing_if = "DbState::is_ready")]
    state: DbState,
}

/// Where a database's directory stands. The catalog records the intent
/// durably before the directory is touched, so an interrupted CREATE or DROP
/// is finished on the next open, and no other directory is ever removed.
#[derive(Serialize, Deserialize, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum DbState {
    #[default]
    Ready,
    /// Being created: the directory, if any, was made
    /// by this entry's CREATE after checking that none existed.
    Creating,
    /// DROP DATABASE was asked for; the directory is being removed.
    Dropping,
    /// A whole seeded copy in `<name>.seeding` replaces the directory (see
    /// `seeding.rs`): the next open finishes the swap.
    Replacing,
}

impl DbState {
    fn is_ready(&self) -> bool {
        *self == DbState::Ready
    }
}

struct Inner {
    cfg: InstanceConfig,
    dbs: RwLock<BTreeMap<String, Arc<Database>>>,
    catalog: Mutex<CatalogFile>,
    waits: Arc<WaitStats>,
    sessions: Mutex<BTreeMap<u32, Weak<Session>>>,
    next_spid: AtomicU32,
    closed: AtomicBool,
    /// Shared with the background threads, which must not keep `Inner` alive.
    stop: Arc<(Mutex<bool>, Condvar)>,
    bg: Mutex<Option<JoinHandle<()>>>,
    /// The background check of the data files after the open.
    check_bg: Mutex<Option<JoinHandle<()>>>,
    /// Crash tests: the seed swap step to fail after (0: none).
    seed_fault: AtomicU32,
    /// One role-changing transaction at a time (see `roles_txn.rs`).
    role_lock: roles_txn::RoleLock,
}

impl Drop for Inner {
    /// Stops the background check and waits for it: it holds the
    /// databases, which must close with their instance.
    fn drop(&mut self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        if let Some(h) = self.check_bg.lock().take() {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
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

/// `instance.json`: `{"catalog": {...}, "crc32c": n}`, the checksum taken
/// over the catalog's canonical (sorted, compact) JSON.
fn encode_catalog(cat: &CatalogFile) -> Vec<u8> {
    let v = serde_json::to_value(cat).expect("catalog serializes");
    let crc = crc32c::crc32c(&serde_json::to_vec(&v).expect("catalog serializes"));
    let doc = serde_json::json!({ "catalog": v, "crc32c": crc });
    serde_json::to_vec_pretty(&doc).expect("catalog serializes")
}

/// Reads `instance.json`. A bare catalog (an older build's, or edited by
/// hand without its checksum) is accepted as it is.
fn decode_catalog(bytes: &[u8]) -> std::result::Result<CatalogFile, String> {
    let mut doc: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let bare = doc.get("databases").is_some() && doc.get("catalog").is_none();
    let v = if bare {
        doc
    } else {
        let crc = doc
            .get("crc32c")
            .and_then(|c| c.as_u64())
            .ok_or("no checksum")?;
        let v = doc.get_mut("catalog").ok_or("no catalog")?.take();
        let canon = serde_json::to_vec(&v).map_err(|e| e.to_string())?;
        if crc32c::crc32c(&canon) as u64 != crc {
            return Err("checksum mismatch".into());
        }
        v
    };
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// Why `dir` looks like a database directory, if it does: a control file,
/// or a `data` or `log` directory.
fn looks_like_database(vfs: &dyn Vfs, dir: &Path) -> Result<Option<String>> {
    if let Some(c) = control::read(vfs, dir)? {
        return Ok(Some(format!(
            "it holds database \"{}\" (id {}), which instance.json does not list",
            c.name, c.id
        )));
    }
    for sub in ["data", "log"] {
        let p = dir.join(sub);
        match vfs.exists(&p) {
            Ok(true) => {
                return Ok(Some(format!(
                "it has a {sub} directory but no control file, and instance.json does not list it"
            )))
            }
            Ok(false) => {}
            // A plain file in the data directory, not a database.
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(None),
            Err(e) => return Err(EngineError::Io { path: p, source: e }),
        }
    }
    Ok(None)
}

impl Instance {
    /// Opens (or creates) the instance in `cfg.data_dir` and recovers every
    /// database in it. A directory is new only if it is missing or empty: one
    /// with files but no `instance.json` is refused, as is any disagreement
    /// between the catalog and a database directory.
    pub fn open(cfg: InstanceConfig) -> Result<Instance> {
        cfg.log.validate().map_err(EngineError::InvalidDefinition)?;
        let vfs = cfg.vfs.clone();
        let dir = &cfg.data_dir;
        walden_log::vfs::create_dir_durable(&*vfs, dir).map_err(io_err(dir))?;
        let cat_path = dir.join(CATALOG_FILE);
        let fresh = !vfs.exists(&cat_path).map_err(io_err(&cat_path))?;
        let catalog: CatalogFile = if fresh {
            // Our own temporary catalog from a first start that crashed
            // before the rename is not somebody else's file.
            let tmp = cat_path.with_extension("tmp");
            let found: Vec<String> = vfs
                .list(dir)
                .map_err(io_err(dir))?
                .into_iter()
                .filter(|n| Some(n.as_str()) != tmp.file_name().and_then(|f| f.to_str()))
                .collect();
            if !found.is_empty() {
                return Err(EngineError::CatalogMissing {
                    dir: dir.clone(),
                    found: found.join(", "),
                });
            }
            CatalogFile {
                databases: Vec::new(),
                next_id: FIRST_DATABASE_ID,
                initialized: false,
                roles: Default::default(),
                instance_id: uuid::Uuid::new_v4().to_string(),
            }
        } else {
            let read = || {
                let bytes =
                    walden_log::vfs::read_file(&*vfs, &cat_path).map_err(io_err(&cat_path))?;
                decode_catalog(&bytes).map_err(|detail| EngineError::CorruptDataFile {
                    path: cat_path.clone(),
                    detail,
                })
            };
            // Once more on damage: a transient read error is not a damaged file.
            read().or_else(|_| read())?
        };
        let inner = Arc::new(Inner {
            cfg: cfg.clone(),
            dbs: RwLock::new(BTreeMap::new()),
            catalog: Mutex::new(catalog.clone()),
            waits: Arc::new(WaitStats::default()),
            sessions: Mutex::new(BTreeMap::new()),
            next_spid: AtomicU32::new(51),
            closed: AtomicBool::new(false),
            stop: Arc::new((Mutex::new(false), Condvar::new())),
            bg: Mutex::new(None),
            check_bg: Mutex::new(None),
            seed_fault: AtomicU32::new(0),
            role_lock: Default::default(),
        });
        let inst = Instance { inner };
        if fresh {
            // The catalog exists before any database directory does.
            inst.save_catalog()?;
        } else if catalog.instance_id.is_empty() {
            // An older build's catalog: named before any commit can carry
            // role changes.
            inst.inner.catalog.lock().instance_id = uuid::Uuid::new_v4().to_string();
            inst.save_catalog()?;
        }
        inst.finish_interrupted(&catalog)?;
        inst.check_unlisted_directories()?;
        let ready: Vec<DbEntry> = inst.inner.catalog.lock().databases.clone();
        for e in &ready {
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
        inst.reinstall_logged_roles()?;
        if !inst.inner.catalog.lock().initialized {
            if let Some(name) = cfg.default_database.clone() {
                // A crash after the database was made and before the mark
                // below leaves it listed, ready: it is the one to keep.
                let made = inst
                    .inner
                    .dbs
                    .read()
                    .contains_key(&name.to_ascii_lowercase());
                if !made {
                    inst.create_database(&name)?;
                }
            }
            inst.inner.catalog.lock().initialized = true;
            inst.save_catalog()?;
        }
        if cfg.background_checkpoints {
            inst.start_checkpointer();
        }
        if cfg.storage.background_check {
            inst.start_check();
        }
        Ok(inst)
    }

    /// Finishes what a crash interrupted: a seed's swap is finished, a CREATE is rolled back (its
    /// directory was made by that CREATE, after checking none existed, and
    /// never held committed data), a DROP is completed. Either way the
    /// directory's control file, if it has one, must carry the entry's id.
    fn finish_interrupted(&self, catalog: &CatalogFile) -> Result<()> {
        let vfs = &*self.inner.cfg.vfs;
        let mut changed = false;
        for e in &catalog.databases {
            match e.state {
                DbState::Ready => {
                    self.remove_stale_seed(&e.name)?;
                    continue;
                }
                DbState::Replacing => {
                    let staged = self.staged_dir(&e.name);
                    if let Some(c) = control::read(vfs, &staged)? {
                        control::check_identity(&c, e.id, &e.name, &staged)?;
                    }
                    tracing::warn!(database = %e.name, "finishing an interrupted seed: swapping in its whole copy");
                    self.finish_swap(&e.name)?;
                    self.set_state(e.id, DbState::Ready);
                    changed = true;
                    continue;
                }
                DbState::Creating | DbState::Dropping => {}
            }
            let dir = self.db_dir(&e.name);
            if vfs.exists(&dir).map_err(io_err(&dir))? {
                if let Some(c) = control::read(vfs, &dir)? {
                    control::check_identity(&c, e.id, &e.name, &dir)?;
                }
                tracing::warn!(database = %e.name, state = ?e.state, dir = %dir.display(),
                    "finishing an interrupted operation: removing the directory");
                vfs.remove_dir_all(&dir).map_err(io_err(&dir))?;
                vfs.sync_dir(&self.inner.cfg.data_dir)
                    .map_err(io_err(&self.inner.cfg.data_dir))?;
            }
            self.inner.catalog.lock().databases.retain(|x| x.id != e.id);
            changed = true;
        }
        if changed {
            self.save_catalog()?;
        }
        Ok(())
    }

    /// Refuses to start when a directory holds a database the catalog does
    /// not list (a lost or swapped instance.json).
    fn check_unlisted_directories(&self) -> Result<()> {
        let vfs = &*self.inner.cfg.vfs;
        let data = &self.inner.cfg.data_dir;
        let listed: Vec<String> = self
            .inner
            .catalog
            .lock()
            .databases
            .iter()
            .map(|e| e.name.to_ascii_lowercase())
            .collect();
        for name in vfs.list(data).map_err(io_err(data))? {
            if name == CATALOG_FILE || listed.contains(&name) || valid_name(&name).is_err() {
                continue;
            }
            let dir = data.join(&name);
            if let Some(detail) = looks_like_database(vfs, &dir)? {
                return Err(EngineError::DirectoryMismatch { dir, detail });
            }
        }
        Ok(())
    }

    fn open_options(&self, secondary: bool) -> OpenOptions {
        OpenOptions {
            vfs: self.inner.cfg.vfs.clone(),
            log: self.inner.cfg.log.clone(),
            lock_timeout: self.inner.cfg.lock_timeout,
            limits: self.inner.cfg.limits,
            secondary,
            storage: self.inner.cfg.storage,
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

    /// Writes the catalog as it is now. The lock is held through the write
    /// (as `update_roles` does): writes land in the order of the changes,
    /// so an older state can never be written after a newer one, and two
    /// writers never share the temporary file.
    fn save_catalog(&self) -> Result<()> {
        let cat = self.inner.catalog.lock();
        let path = self.inner.cfg.data_dir.join(CATALOG_FILE);
        let bytes = encode_catalog(&cat);
        walden_log::vfs::write_file_atomic(&*self.inner.cfg.vfs, &path, &bytes)
            .map_err(io_err(&path))
    }

    /// The role catalog as it is now (a snapshot; see `roles.rs`).
    pub fn roles(&self) -> std::sync::Arc<crate::roles::RoleCatalog> {
        self.inner.catalog.lock().roles.0.clone()
    }

    /// Changes the role catalog outside any transaction (the server's
    /// configured users, the owner of a new database): `f` edits a copy,
    /// which is written with the instance catalog (atomically, durably)
    /// before it replaces the old one; nothing changes when `f` or the
    /// write fails. It waits for a transaction that is changing roles to
    /// end, so that transaction's commit cannot write over this change.
    pub fn update_roles<R, E: From<EngineError>>(
        &self,
        f: impl FnOnce(&mut crate::roles::RoleCatalog) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        self.check_open()?;
        let _held = self.lock_roles(&AtomicBool::new(false), None)?;
        let mut roles = (*self.roles()).clone();
        let r = f(&mut roles)?;
        self.install_roles(roles)?;
        Ok(r)
    }

    /// Writes `roles` (as the next version) with the instance catalog and
    /// makes it the current one. The caller holds the role lock.
    pub(crate) fn install_roles(&self, mut roles: crate::roles::RoleCatalog) -> Result<()> {
        roles.version = self.roles().version + 1;
        self.write_roles(roles, true)
    }

    /// Makes `roles` (with the version it carries) the current catalog,
    /// written to `instance.json` first when `durable` (nothing changes if
    /// that fails). The caller holds the role lock.
    pub(crate) fn write_roles(
        &self,
        roles: crate::roles::RoleCatalog,
        durable: bool,
    ) -> Result<()> {
        let mut cat = self.inner.catalog.lock();
        let mut next = cat.clone();
        next.roles = crate::roles::SharedRoles(std::sync::Arc::new(roles));
        if durable {
            let path = self.inner.cfg.data_dir.join(CATALOG_FILE);
            walden_log::vfs::write_file_atomic(&*self.inner.cfg.vfs, &path, &encode_catalog(&next))
                .map_err(io_err(&path))?;
        }
        *cat = next;
        Ok(())
    }

    /// This instance's id, as its commits' role records carry it.
    pub(crate) fn instance_id(&self) -> String {
        self.inner.catalog.lock().instance_id.clone()
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
        let image = Image {
            settings,
            ..Image::default()
        };
        // A new database holds one zero-filled log segment; its spare is
        // made once a quarter of that is written (a database that stays
        // small costs one segment of disk).
        self.install(name, &image)
    }

    /// Makes a database directory holding `image` and registers it: the
    /// catalog says "creating" (durably) before the directory is made, and
    /// "ready" once it opened. An existing directory is refused, never
    /// removed (a seed replaces a database through `seeding.rs`).
    fn install(&self, name: &str, image: &Image) -> Result<Arc<Database>> {
        let mut dbs = self.inner.dbs.write();
        let key = name.to_ascii_lowercase();
        if dbs.contains_key(&key) {
            return Err(EngineError::DatabaseExists(name.to_string()));
        }
        let dir = self.db_dir(name);
        let vfs = self.inner.cfg.vfs.clone();
        if vfs.exists(&dir).map_err(io_err(&dir))? {
            return Err(EngineError::DirectoryExists { dir });
        }
        let id = {
            let mut cat = self.inner.catalog.lock();
            let id = cat.next_id;
            cat.next_id += 1;
            cat.databases.push(DbEntry {
                name: name.to_string(),
                id,
                secondary: false,
                state: DbState::Creating,
            });
            cat.databases.sort_by_key(|e| e.id);
            id
        };
        if let Err(e) = self.save_catalog() {
            // Nothing was made: forget the entry.
            self.inner.catalog.lock().databases.retain(|x| x.id != id);
            return Err(e);
        }
        let opts = self.open_options(false);
        let made = Database::create(id, name, &dir, &opts, image)
            .and_then(|()| Database::open(id, name, &dir, &opts));
        let db = match made {
            Ok(db) => db,
            Err(e) => {
                // Made in this run and never used: undo it.
                let _ = vfs.remove_dir_all(&dir);
                let _ = vfs.sync_dir(&self.inner.cfg.data_dir);
                self.inner.catalog.lock().databases.retain(|x| x.id != id);
                let _ = self.save_catalog();
                return Err(e);
            }
        };
        self.set_state(id, DbState::Ready);
        if let Err(e) = self.save_catalog() {
            // On disk the entry still says "creating": the next open rolls
            // it back, so it must not be saved as ready later either.
            self.set_state(id, DbState::Creating);
            let _ = db.log.close();
            return Err(e);
        }
        dbs.insert(key, db.clone());
        Ok(db)
    }

    fn set_state(&self, id: u32, state: DbState) {
        for e in self.inner.catalog.lock().databases.iter_mut() {
            if e.id == id {
                e.state = state;
            }
        }
    }

    /// `DROP DATABASE name`: closes it and removes its files (the catalog
    /// records the drop first, so a crash midway finishes it on next open).
    pub fn drop_database(&self, name: &str) -> Result<()> {
        self.check_open()?;
        let db = self
            .inner
            .dbs
            .write()
            .remove(&name.to_ascii_lowercase())
            .ok_or_else(|| EngineError::UnknownDatabase(name.to_string()))?;
        self.set_state(db.id, DbState::Dropping);
        self.save_catalog()?;
        let _ = db.log.close();
        let vfs = &self.inner.cfg.vfs;
        vfs.remove_dir_all(&db.dir).map_err(io_err(&db.dir))?;
        vfs.sync_dir(&self.inner.cfg.data_dir)
            .map_err(io_err(&db.dir))?;
        self.inner
            .catalog
            .lock()
            .databases
            .retain(|e| e.id != db.id);
        self.save_catalog()
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
        self.install(name, &image)
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
