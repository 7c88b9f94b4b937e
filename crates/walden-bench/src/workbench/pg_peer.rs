//! PostgreSQL as a peer: a throwaway cluster (initdb into the scratch
//! directory, a free loopback port, fsync on), stopped when the target is
//! dropped. `synchronous_commit = on` against `off`, set per database.
//!
//! Counters come from `pg_stat_wal` (cluster-wide: only one cell runs at a
//! time, and autovacuum is off, so what it counts during a cell is the
//! cell's) and `pg_stat_database.xact_commit` of the cell's database, read
//! through an admin connection to the `postgres` database so that reading
//! them adds no transactions to the cell's database. PostgreSQL publishes a
//! backend's statistics lazily (when idle, at most once a second, and at
//! exit), so the read after a cell first waits for the closed sessions'
//! backends to exit and for the figures to settle ([`PgDb::settle`]).
//!
//! The mapping: `wal_write` -> log writes, `wal_bytes` -> log bytes,
//! `wal_write_time + wal_sync_time` -> write stall ms (track_wal_io_timing is
//! on), `wal_sync` -> log flushes, the advance of `pg_current_wal_flush_lsn()`
//! -> log bytes flushed, `xact_commit` -> write transactions (every cell's
//! transactions write). No WRITELOG waits, exposure or per-session waits:
//! PostgreSQL samples wait events but does not count them.

use super::pgwire::PgConn;
use super::target::{
    Conn, Counters, Db, Dialect, Durability, ModeSpec, Recovery, Target, TargetKind,
};
use crate::{BenchError, Result};
use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cluster's superuser (trust authentication on loopback only).
const SUPERUSER: &str = "postgres";

/// A running cluster we started; stopped on drop.
struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    /// The unprivileged user the server runs as when we are root.
    run_as: Option<(u32, u32)>,
    port: u16,
    home: PathBuf,
}

/// Where initdb, pg_ctl and postgres are: `$PG_BIN`, `pg_config --bindir`,
/// or Debian's `/usr/lib/postgresql/<major>/bin` (15 first, then newest).
fn find_bin() -> std::result::Result<PathBuf, String> {
    let ok = |d: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|b| d.join(b).is_file())
    };
    if let Ok(d) = std::env::var("PG_BIN") {
        let d = PathBuf::from(d);
        return if ok(&d) {
            Ok(d)
        } else {
            Err(format!(
                "PG_BIN={} holds no initdb, pg_ctl and postgres",
                d.display()
            ))
        };
    }
    let mut tried = Vec::new();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && ok(&d) {
            return Ok(d);
        }
        tried.push(d);
    }
    let mut majors: Vec<u32> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    majors.sort_by_key(|&m| (m != 15, std::cmp::Reverse(m)));
    for m in majors {
        let d = PathBuf::from(format!("/usr/lib/postgresql/{m}/bin"));
        if ok(&d) {
            return Ok(d);
        }
        tried.push(d);
    }
    Err(format!(
        "PostgreSQL is not installed (no initdb/pg_ctl/postgres found{}; install postgresql-15 or set PG_BIN)",
        if tried.is_empty() {
            String::new()
        } else {
            format!(
                " in {}",
                tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
        }
    ))
}

/// The major version `postgres --version` reports.
fn major_version(bin: &Path) -> std::result::Result<u32, String> {
    let out = Command::new(bin.join("postgres"))
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}/postgres: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "postgres (PostgreSQL) 15.14 (Debian ...)"
    text.split_whitespace()
        .nth(2)
        .and_then(|v| v.split('.').next()?.parse().ok())
        .ok_or_else(|| format!("cannot read the version in {:?}", text.trim()))
}

/// uid and gid of a user, if it exists.
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let c = CString::new(name).ok()?;
    // SAFETY: getpwnam returns NULL or a pointer to a static record, which
    // we copy from at once (nothing else here calls getpwnam concurrently).
    unsafe {
        let pw = libc::getpwnam(c.as_ptr());
        if pw.is_null() {
            None
        } else {
            Some(((*pw).pw_uid, (*pw).pw_gid))
        }
    }
}

/// A loopback port nobody listens on now.
fn free_port() -> std::result::Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn tail(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

impl Cluster {
    fn command(&self, prog: &str) -> Command {
        let mut c = Command::new(self.bin.join(prog));
        // The server's own directory: root's working directory may be closed
        // to the unprivileged user, and the tools complain about that.
        c.current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env_remove("PGDATA")
            .env_remove("PGPORT");
        if let Some((uid, gid)) = self.run_as {
            // initdb and postgres refuse to run as root.
            c.uid(uid).gid(gid);
        }
        c
    }

    fn start(dir: &Path) -> std::result::Result<Cluster, String> {
        let bin = find_bin()?;
        let major = major_version(&bin)?;
        if major < 15 {
            return Err(format!(
                "PostgreSQL {major} at {} is too old (pg_stat_force_next_flush needs 15)",
                bin.display()
            ));
        }
        let home = dir.join("postgres");
        std::fs::create_dir_all(&home)
            .map_err(|e| format!("cannot make {}: {e}", home.display()))?;
        // SAFETY: geteuid has no preconditions.
        let run_as = if unsafe { libc::geteuid() } == 0 {
            let name = std::env::var("WALDEN_BENCH_PG_USER").unwrap_or_else(|_| "postgres".into());
            let ids = user_ids(&name).ok_or_else(|| {
                format!(
                    "running as root, and there is no user {name:?} to run PostgreSQL as \
                     (set WALDEN_BENCH_PG_USER to an unprivileged user)"
                )
            })?;
            std::os::unix::fs::chown(&home, Some(ids.0), Some(ids.1))
                .map_err(|e| format!("cannot chown {} to {name}: {e}", home.display()))?;
            // The scratch directory is ours and private; let the server's
            // user pass through it (search only, not list).
            let mut p = std::fs::metadata(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .permissions();
            p.set_mode(p.mode() | 0o011);
            std::fs::set_permissions(dir, p)
                .map_err(|e| format!("cannot open {} to {name}: {e}", dir.display()))?;
            check_reachable(&home, ids, &name)?;
            Some(ids)
        } else {
            None
        };
        let mut cluster = Cluster {
            bin,
            data: home.join("data"),
            run_as,
            port: 0,
            home,
        };
        cluster.initdb()?;
        // A port can be taken between our probe and the server's bind: retry.
        let mut last = String::new();
        for _ in 0..3 {
            cluster.port = free_port()?;
            match cluster.pg_ctl_start() {
                Ok(()) => return Ok(cluster),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn initdb(&self) -> std::result::Result<(), String> {
        let log = self.home.join("initdb.log");
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        if let Some((uid, gid)) = self.run_as {
            let _ = std::os::unix::fs::chown(&log, Some(uid), Some(gid));
        }
        let st = self
            .command("initdb")
            .arg("-D")
            .arg(&self.data)
            .args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .stdout(out)
            .stderr(err)
            .status()
            .map_err(|e| format!("cannot run initdb: {e}"))?;
        if !st.success() {
            return Err(format!("initdb failed ({st}):\n{}", tail(&log)));
        }
        let sock = self.home.join("sock");
        let _ = std::fs::create_dir_all(&sock);
        if let Some((uid, gid)) = self.run_as {
            let _ = std::os::unix::fs::chown(&sock, Some(uid), Some(gid));
        }
        // A Unix socket path is limited to 107 bytes; past that, TCP only
        // (the workbench connects over TCP anyway, like a Walden server's clients).
        let sock_dir = if sock.as_os_str().len() + 20 < 107 {
            sock.display().to_string()
        } else {
            String::new()
        };
        let conf = format!(
            "\n# walden bench: a throwaway cluster for the workbench\n\
             listen_addresses = '127.0.0.1'\n\
             unix_socket_directories = '{sock_dir}'\n\
             fsync = on\n\
             synchronous_commit = on\n\
             full_page_writes = on\n\
             track_wal_io_timing = on\n\
             max_connections = 100\n\
             shared_buffers = 256MB\n\
             # Background vacuum would add WAL to the cluster-wide counters mid-cell;\n\
             # the cells drop their table after use anyway.\n\
             autovacuum = off\n"
        );
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(self.data.join("postgresql.conf"))
            .and_then(|mut f| f.write_all(conf.as_bytes()))
            .map_err(|e| format!("cannot write postgresql.conf: {e}"))
    }

    fn pg_ctl_start(&self) -> std::result::Result<(), String> {
        let log = self.home.join("server.log");
        let st = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(&log)
            .args([
                "-w",
                "-t",
                "60",
                "-o",
                &format!("-p {}", self.port),
                "start",
            ])
            .status()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        if st.success() {
            Ok(())
        } else {
            Err(format!("PostgreSQL did not start ({st}):\n{}", tail(&log)))
        }
    }

    fn config(&self) -> postgres::Config {
        let mut c = postgres::Config::new();
        c.host("127.0.0.1")
            .port(self.port)
            .user(SUPERUSER)
            .connect_timeout(Duration::from_secs(10));
        c
    }
}

/// Every directory above `home` must let `user` through.
fn check_reachable(
    home: &Path,
    (uid, gid): (u32, u32),
    user: &str,
) -> std::result::Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    for a in home.ancestors().skip(1) {
        let Ok(m) = std::fs::metadata(a) else {
            continue;
        };
        let mode = m.mode();
        let pass = if m.uid() == uid {
            mode & 0o100 != 0
        } else if m.gid() == gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !pass {
            return Err(format!(
                "PostgreSQL runs as {user}, which cannot enter {} (mode {:o}); \
                 use --dir somewhere it can",
                a.display(),
                mode & 0o7777
            ));
        }
    }
    Ok(())
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let stopped = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "fast", "-w", "-t", "60", "stop"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !stopped {
            // The postmaster we started, by the pid it recorded.
            let pid = std::fs::read_to_string(self.data.join("postmaster.pid"))
                .ok()
                .and_then(|s| s.lines().next()?.trim().parse::<i32>().ok());
            if let Some(pid) = pid.filter(|&p| p > 1) {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// A throwaway PostgreSQL cluster.
/// A throwaway PostgreSQL cluster (15 or newer) in a scratch directory, for
/// tests that run the same schedule on Walden and PostgreSQL. Connect as
/// [`ScratchPostgres::USER`] to database `postgres` on loopback (trust);
/// stopped on drop.
pub struct ScratchPostgres(Cluster);

impl ScratchPostgres {
    pub const USER: &'static str = SUPERUSER;

    pub fn start(dir: &Path) -> std::result::Result<ScratchPostgres, String> {
        Cluster::start(dir).map(ScratchPostgres)
    }

    pub fn port(&self) -> u16 {
        self.0.port
    }

    /// Reconfigures the cluster and restarts it on the same port: `files`
    /// (name, contents) are written into the data directory, readable only
    /// by the server's user (TLS keys, certificates); `hba` replaces
    /// `pg_hba.conf`; `conf` is appended to `postgresql.conf` (later lines
    /// win, so it may set `listen_addresses`, `ssl`, ...).
    pub fn reconfigure(
        &mut self,
        files: &[(&str, &[u8])],
        conf: &str,
        hba: &str,
    ) -> std::result::Result<(), String> {
        use std::io::Write;
        let c = &self.0;
        let write = |name: &str, bytes: &[u8]| -> std::result::Result<(), String> {
            let path = c.data.join(name);
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if let Some((uid, gid)) = c.run_as {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                    .map_err(|e| format!("cannot chown {}: {e}", path.display()))?;
            }
            Ok(())
        };
        for (name, bytes) in files {
            write(name, bytes)?;
        }
        write("pg_hba.conf", hba.as_bytes())?;
        std::fs::OpenOptions::new()
            .append(true)
            .open(c.data.join("postgresql.conf"))
            .and_then(|mut f| f.write_all(format!("\n{conf}\n").as_bytes()))
            .map_err(|e| format!("cannot write postgresql.conf: {e}"))?;
        let log = c.home.join("server.log");
        let st = c
            .command("pg_ctl")
            .arg("-D")
            .arg(&c.data)
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "60", "-m", "fast"])
            .args(["-o", &format!("-p {}", c.port), "restart"])
            .status()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        if st.success() {
            Ok(())
        } else {
            Err(format!(
                "PostgreSQL did not restart ({st}):\n{}",
                tail(&log)
            ))
        }
    }
}

pub struct PostgresTarget {
    cluster: Cluster,
    version: String,
}

impl PostgresTarget {
    /// Starts a cluster under `dir/postgres`.
    pub fn start(dir: &Path) -> std::result::Result<PostgresTarget, String> {
        let cluster = Cluster::start(dir)?;
        let mut admin =
            PgConn::connect(&cluster.config(), "postgres").map_err(|e| e.to_string())?;
        let v = admin
            .query("SHOW server_version")
            .map_err(|e| e.to_string())?;
        // "15.14 (Debian 15.14-1.pgdg120+1)" -> "15.14"
        let version = v
            .first()
            .and_then(|r| r[0].as_deref())
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or("?")
            .to_string();
        Ok(PostgresTarget { cluster, version })
    }
}

fn sync_setting(d: Durability) -> &'static str {
    match d {
        Durability::Full => "on",
        Durability::Relaxed => "off",
    }
}

impl Target for PostgresTarget {
    fn kind(&self) -> TargetKind {
        TargetKind::Postgres
    }
    fn label(&self) -> String {
        format!("postgres {}", self.version)
    }
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
    fn mode(&self, d: Durability) -> ModeSpec {
        let s = sync_setting(d);
        ModeSpec {
            durability: d,
            label: format!("synchronous_commit = {s}"),
            short: format!("sync={s}"),
        }
    }
    fn fresh_db(
        &self,
        name: &str,
        d: Durability,
        _recovery: Option<Recovery>,
    ) -> Result<Box<dyn Db>> {
        let cfg = self.cluster.config();
        let mut admin = PgConn::connect(&cfg, "postgres")?;
        let s = sync_setting(d);
        admin.exec(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
        admin.exec(&format!("CREATE DATABASE {name}"))?;
        // New sessions of the database start with it.
        admin.exec(&format!(
            "ALTER DATABASE {name} SET synchronous_commit = {s}"
        ))?;
        let db = PgDb {
            name: name.to_string(),
            cfg,
            admin: Mutex::new(admin),
            live: Arc::new(AtomicUsize::new(0)),
        };
        let mut probe = db.connect()?;
        let got = probe.query("SHOW synchronous_commit")?;
        let got = got.first().and_then(|r| r[0].clone()).unwrap_or_default();
        if got != s {
            return Err(BenchError::Other(format!(
                "postgres: a new session of {name} has synchronous_commit = {got}, not {s}"
            )));
        }
        Ok(Box::new(db))
    }
}

/// One database of the cluster.
struct PgDb {
    name: String,
    cfg: postgres::Config,
    /// Reads the counters (in the `postgres` database, so its own queries
    /// are not commits of this one).
    admin: Mutex<PgConn>,
    /// Connections to this database we have open: when only the monitor is
    /// left, the sessions are closed and it is the read after a cell.
    live: Arc<AtomicUsize>,
}

/// A connection that keeps [`PgDb::live`] up to date.
struct LiveConn {
    inner: PgConn,
    live: Arc<AtomicUsize>,
}

impl Drop for LiveConn {
    fn drop(&mut self) {
        self.live.fetch_sub(1, SeqCst);
    }
}

impl Conn for LiveConn {
    fn exec(&mut self, sql: &str) -> Result<()> {
        self.inner.exec(sql)
    }
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        self.inner.query(sql)
    }
}

/// What [`PgDb::read`] returns; equal twice in a row means settled.
#[derive(PartialEq)]
struct Snapshot {
    wal_write: u64,
    wal_bytes: u64,
    io_ms: f64,
    wal_sync: u64,
    flushed_lsn: u64,
    commits: u64,
}

fn num(rows: &[Vec<Option<String>>], col: usize) -> Result<f64> {
    rows.first()
        .and_then(|r| r.get(col)?.as_deref()?.trim().parse::<f64>().ok())
        .ok_or_else(|| {
            BenchError::Other(format!(
                "postgres: no number in column {col} of the statistics"
            ))
        })
}

impl PgDb {
    fn admin(&self) -> Result<std::sync::MutexGuard<'_, PgConn>> {
        self.admin
            .lock()
            .map_err(|_| BenchError::Other("postgres: admin connection poisoned".into()))
    }

    fn read(&self, admin: &mut PgConn) -> Result<Snapshot> {
        // Publishes the admin backend's own pending statistics (CREATE
        // DATABASE writes WAL) before we read; it takes effect as this
        // statement ends, before the server answers.
        admin.exec("SELECT pg_stat_force_next_flush()")?;
        let r = admin.query(&format!(
            "SELECT w.wal_write, w.wal_bytes, w.wal_write_time + w.wal_sync_time, w.wal_sync, \
             pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0'), d.xact_commit \
             FROM pg_stat_wal w, pg_stat_database d WHERE d.datname = '{}'",
            self.name
        ))?;
        Ok(Snapshot {
            wal_write: num(&r, 0)? as u64,
            wal_bytes: num(&r, 1)? as u64,
            io_ms: num(&r, 2)?,
            wal_sync: num(&r, 3)? as u64,
            flushed_lsn: num(&r, 4)? as u64,
            commits: num(&r, 5)? as u64,
        })
    }

    /// Waits until everything a finished cell did is in the statistics:
    /// 1. backends of closed sessions have exited (each publishes its
    ///    statistics on the way out, before it leaves pg_stat_activity);
    /// 2. the WAL is flushed up to where it was inserted when we began (the
    ///    WAL writer flushes `synchronous_commit = off` commits within
    ///    3 x wal_writer_delay, 600 ms, and publishes right after);
    /// 3. two reads 30 ms apart agree (the WAL writer's and checkpointer's
    ///    reports follow their I/O by a moment).
    ///
    /// Each step is bounded, so a stuck figure costs seconds, not the run.
    fn settle(&self, admin: &mut PgConn) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = admin.query(&format!(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = '{}'",
                self.name
            ))?;
            if num(&r, 0)? as usize <= self.live.load(SeqCst) || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let r = admin.query("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')")?;
        let inserted = num(&r, 0)? as u64;
        let deadline = Instant::now() + Duration::from_millis(1500);
        let mut prev = self.read(admin)?;
        while prev.flushed_lsn < inserted && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            prev = self.read(admin)?;
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            std::thread::sleep(Duration::from_millis(30));
            let cur = self.read(admin)?;
            if cur == prev || Instant::now() > deadline {
                return Ok(());
            }
            prev = cur;
        }
    }
}

impl Db for PgDb {
    fn connect(&self) -> Result<Box<dyn Conn>> {
        let inner = PgConn::connect(&self.cfg, &self.name)?;
        self.live.fetch_add(1, SeqCst);
        Ok(Box::new(LiveConn {
            inner,
            live: self.live.clone(),
        }))
    }

    /// Read through our admin connection, not `_monitor` (see [`PgDb::admin`]).
    fn counters(&self, _monitor: &mut dyn Conn) -> Result<Counters> {
        let mut admin = self.admin()?;
        // Only the monitor left: the sessions have closed, this is the read
        // after a cell. (While they run, the sampler reads as things are.)
        if self.live.load(SeqCst) <= 1 {
            self.settle(&mut admin)?;
        }
        let s = self.read(&mut admin)?;
        Ok(Counters {
            log_writes: Some(s.wal_write),
            log_bytes: Some(s.wal_bytes),
            io_stall_write_ms: Some(s.io_ms),
            log_flushes: Some(s.wal_sync),
            log_bytes_flushed: Some(s.flushed_lsn),
            write_transactions: Some(s.commits),
            // PostgreSQL samples wait events but does not count them.
            writelog_waits: None,
            writelog_wait_ms: None,
        })
    }

    /// No-op: PostgreSQL has no statement that hardens the WAL on demand;
    /// the WAL writer flushes `synchronous_commit = off` commits within
    /// 3 x wal_writer_delay on its own, and the read after the cell waits
    /// for that (see [`PgDb::settle`]).
    fn flush_log(&self, _conn: &mut dyn Conn) -> Result<bool> {
        Ok(false)
    }

    fn checkpoint(&self, conn: &mut dyn Conn) -> Result<()> {
        conn.exec("CHECKPOINT")?;
        // The monitor made the table (and loaded it); publish its statistics
        // now, so they fall before the cell's first read, not inside it.
        conn.exec("SELECT pg_stat_force_next_flush()")?;
        let mut admin = self.admin()?;
        self.settle(&mut admin)
    }

    fn drop_db(self: Box<Self>) -> Result<()> {
        let mut admin = self
            .admin
            .into_inner()
            .map_err(|_| BenchError::Other("postgres: admin connection poisoned".into()))?;
        admin
            .exec(&format!("DROP DATABASE {} WITH (FORCE)", self.name))
            .map_err(|e| BenchError::Other(format!("postgres: {e}")))
    }
}
