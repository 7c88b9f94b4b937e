//! Counting SQLite's log I/O: a VFS that forwards every call to the default
//! (unix) VFS and, for the write-ahead log files of registered databases,
//! counts write calls, bytes, syncs and the time spent in them.
//!
//! SQLite keeps no such counters itself. Counting at the VFS sees exactly
//! what SQLite asks of the operating system for its log, per database, and
//! nothing else the process writes (unlike /proc/self/io). The wrapping is
//! the one SQLite's own ext/misc/vfstrace.c uses: our file object holds the
//! real one right behind it, and every method forwards to it.

use rusqlite::ffi;
use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The name connections pass to open through this VFS.
pub const VFS_NAME: &CStr = c"walden-bench-counting";

/// What SQLite asked of one database's write-ahead log, cumulative.
#[derive(Default, Debug)]
pub struct WalStats {
    pub writes: AtomicU64,
    pub bytes: AtomicU64,
    pub write_ns: AtomicU64,
    pub syncs: AtomicU64,
    pub sync_ns: AtomicU64,
    /// Bytes a sync made durable: those written since the previous sync.
    pub bytes_synced: AtomicU64,
    unsynced: AtomicU64,
}

/// Log files being counted, by the path SQLite opens them under.
static REGISTRY: Mutex<Vec<(CString, Arc<WalStats>)>> = Mutex::new(Vec::new());

/// Counts the log of the database file `db_path` (an absolute, canonical
/// path: SQLite names its log `<db_path>-wal`) into `stats`.
pub fn register(db_path: &str, stats: Arc<WalStats>) -> Result<(), String> {
    let wal = CString::new(format!("{db_path}-wal"))
        .map_err(|_| format!("path {db_path:?} holds a NUL byte"))?;
    let mut r = REGISTRY.lock().map_err(|_| "VFS registry poisoned")?;
    r.retain(|(p, _)| *p != wal);
    r.push((wal, stats));
    Ok(())
}

/// Stops counting the log of `db_path`.
pub fn unregister(db_path: &str) {
    let wal = format!("{db_path}-wal");
    if let Ok(mut r) = REGISTRY.lock() {
        r.retain(|(p, _)| p.as_bytes() != wal.as_bytes());
    }
}

fn lookup(name: &CStr) -> Option<Arc<WalStats>> {
    let r = REGISTRY.lock().ok()?;
    r.iter()
        .find(|(p, _)| p.as_c_str() == name)
        .map(|(_, s)| s.clone())
}

/// The default VFS we forward to (a pointer SQLite owns for the process's life).
struct RealVfs(*mut ffi::sqlite3_vfs);
// SAFETY: SQLite's VFS objects are immutable once registered and meant to be
// used from any thread.
unsafe impl Send for RealVfs {}
unsafe impl Sync for RealVfs {}

static REAL: OnceLock<RealVfs> = OnceLock::new();
static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();

/// Registers the counting VFS (once per process; not as the default).
pub fn ensure_registered() -> Result<(), String> {
    REGISTERED
        .get_or_init(|| {
            // SAFETY: sqlite3_vfs_find initializes SQLite and returns the
            // default VFS or NULL; the copy we register is leaked, so it
            // outlives every connection, as SQLite requires.
            unsafe {
                let real = ffi::sqlite3_vfs_find(std::ptr::null());
                if real.is_null() {
                    return Err("SQLite has no default VFS".into());
                }
                let _ = REAL.set(RealVfs(real));
                let mut v: ffi::sqlite3_vfs = *real;
                v.szOsFile = (std::mem::size_of::<ShimFile>() as c_int) + (*real).szOsFile;
                v.pNext = std::ptr::null_mut();
                v.zName = VFS_NAME.as_ptr();
                v.xOpen = Some(shim_open);
                let v = Box::leak(Box::new(v));
                let rc = ffi::sqlite3_vfs_register(v, 0);
                if rc != ffi::SQLITE_OK {
                    return Err(format!("sqlite3_vfs_register failed ({rc})"));
                }
                Ok(())
            }
        })
        .clone()
}

/// Our file object; the default VFS's file object follows it in the same
/// allocation (SQLite allocates `szOsFile` bytes for it).
#[repr(C)]
struct ShimFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// From `Arc::into_raw`, released on close; null when not counted.
    stats: *const WalStats,
}

unsafe extern "C" fn shim_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(real_vfs) = REAL.get() else {
        return ffi::SQLITE_ERROR;
    };
    let real_vfs = real_vfs.0;
    let shim = file as *mut ShimFile;
    let real = (file as *mut u8).add(std::mem::size_of::<ShimFile>()) as *mut ffi::sqlite3_file;
    (*shim).base.pMethods = std::ptr::null();
    (*shim).real = real;
    (*shim).stats = std::ptr::null();
    let Some(open) = (*real_vfs).xOpen else {
        return ffi::SQLITE_ERROR;
    };
    let rc = open(real_vfs, name, real, flags, out_flags);
    // SQLite calls xClose only when pMethods is set, so mirror the real one.
    if (*real).pMethods.is_null() {
        return rc;
    }
    if flags & ffi::SQLITE_OPEN_WAL != 0 && !name.is_null() {
        if let Some(s) = lookup(CStr::from_ptr(name)) {
            (*shim).stats = Arc::into_raw(s);
        }
    }
    (*shim).base.pMethods = &SHIM_METHODS;
    rc
}

unsafe fn real(
    f: *mut ffi::sqlite3_file,
) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    let r = (*(f as *mut ShimFile)).real;
    (r, &*(*r).pMethods)
}

unsafe fn stats<'a>(f: *mut ffi::sqlite3_file) -> Option<&'a WalStats> {
    (*(f as *mut ShimFile)).stats.as_ref()
}

fn ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

static SHIM_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(shim_close),
    xRead: Some(shim_read),
    xWrite: Some(shim_write),
    xTruncate: Some(shim_truncate),
    xSync: Some(shim_sync),
    xFileSize: Some(shim_file_size),
    xLock: Some(shim_lock),
    xUnlock: Some(shim_unlock),
    xCheckReservedLock: Some(shim_check_reserved_lock),
    xFileControl: Some(shim_file_control),
    xSectorSize: Some(shim_sector_size),
    xDeviceCharacteristics: Some(shim_device_characteristics),
    xShmMap: Some(shim_shm_map),
    xShmLock: Some(shim_shm_lock),
    xShmBarrier: Some(shim_shm_barrier),
    xShmUnmap: Some(shim_shm_unmap),
    xFetch: Some(shim_fetch),
    xUnfetch: Some(shim_unfetch),
};

/// Calls the real method, or answers `missing` where the real VFS lacks it.
macro_rules! forward {
    ($f:expr, $method:ident, $missing:expr $(, $arg:expr)*) => {{
        let (r, m) = real($f);
        match m.$method {
            Some(x) => x(r $(, $arg)*),
            None => $missing,
        }
    }};
}

unsafe extern "C" fn shim_close(f: *mut ffi::sqlite3_file) -> c_int {
    let rc = forward!(f, xClose, ffi::SQLITE_OK);
    let shim = f as *mut ShimFile;
    if !(*shim).stats.is_null() {
        drop(Arc::from_raw((*shim).stats));
        (*shim).stats = std::ptr::null();
    }
    rc
}

unsafe extern "C" fn shim_read(
    f: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    forward!(f, xRead, ffi::SQLITE_IOERR, buf, amt, off)
}

unsafe extern "C" fn shim_write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    let t = Instant::now();
    let rc = forward!(f, xWrite, ffi::SQLITE_IOERR, buf, amt, off);
    if let Some(s) = stats(f) {
        let n = amt.max(0) as u64;
        s.writes.fetch_add(1, Relaxed);
        s.bytes.fetch_add(n, Relaxed);
        s.unsynced.fetch_add(n, Relaxed);
        s.write_ns.fetch_add(ns(t), Relaxed);
    }
    rc
}

unsafe extern "C" fn shim_truncate(f: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    forward!(f, xTruncate, ffi::SQLITE_IOERR, size)
}

unsafe extern "C" fn shim_sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let t = Instant::now();
    let rc = forward!(f, xSync, ffi::SQLITE_IOERR, flags);
    if let Some(s) = stats(f) {
        s.syncs.fetch_add(1, Relaxed);
        s.sync_ns.fetch_add(ns(t), Relaxed);
        s.bytes_synced
            .fetch_add(s.unsynced.swap(0, Relaxed), Relaxed);
    }
    rc
}

unsafe extern "C" fn shim_file_size(
    f: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    forward!(f, xFileSize, ffi::SQLITE_IOERR, size)
}

unsafe extern "C" fn shim_lock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(f, xLock, ffi::SQLITE_IOERR, level)
}

unsafe extern "C" fn shim_unlock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(f, xUnlock, ffi::SQLITE_IOERR, level)
}

unsafe extern "C" fn shim_check_reserved_lock(f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    forward!(f, xCheckReservedLock, ffi::SQLITE_IOERR, out)
}

unsafe extern "C" fn shim_file_control(
    f: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    forward!(f, xFileControl, ffi::SQLITE_NOTFOUND, op, arg)
}

unsafe extern "C" fn shim_sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    forward!(f, xSectorSize, 4096)
}

unsafe extern "C" fn shim_device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    forward!(f, xDeviceCharacteristics, 0)
}

unsafe extern "C" fn shim_shm_map(
    f: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    forward!(f, xShmMap, ffi::SQLITE_IOERR, region, size, extend, out)
}

unsafe extern "C" fn shim_shm_lock(
    f: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    forward!(f, xShmLock, ffi::SQLITE_IOERR, offset, n, flags)
}

unsafe extern "C" fn shim_shm_barrier(f: *mut ffi::sqlite3_file) {
    forward!(f, xShmBarrier, ())
}

unsafe extern "C" fn shim_shm_unmap(f: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    forward!(f, xShmUnmap, ffi::SQLITE_OK, delete)
}

unsafe extern "C" fn shim_fetch(
    f: *mut ffi::sqlite3_file,
    off: ffi::sqlite3_int64,
    amt: c_int,
    pp: *mut *mut c_void,
) -> c_int {
    // No memory map from the real VFS: SQLite reads with xRead instead.
    let (r, m) = real(f);
    match m.xFetch {
        Some(x) if m.iVersion >= 3 => x(r, off, amt, pp),
        _ => {
            *pp = std::ptr::null_mut();
            ffi::SQLITE_OK
        }
    }
}

unsafe extern "C" fn shim_unfetch(
    f: *mut ffi::sqlite3_file,
    off: ffi::sqlite3_int64,
    p: *mut c_void,
) -> c_int {
    let (r, m) = real(f);
    match m.xUnfetch {
        Some(x) if m.iVersion >= 3 => x(r, off, p),
        _ => ffi::SQLITE_OK,
    }
}
