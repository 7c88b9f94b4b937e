//! The control file each database directory carries (`DB/control`), as
//! PostgreSQL's `pg_control`: who the directory is (id, name, format
//! version) and what recovery must find there (the log hardened through the
//! LSN recorded at the last checkpoint or clean shutdown, and how far a torn
//! batch of the last writer may reach).
//!
//! ```text
//! "WALDNCTL" | version u32 | body_len u32 | body (JSON) | crc32c(body) u32
//! ```
//!
//! Written whole through a temporary file, a sync, a rename and a directory
//! sync, so a crash leaves the old or the new one.

use crate::error::{io_err, EngineError, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use walden_log::{Lsn, Vfs};

const MAGIC: &[u8; 8] = b"WALDNCTL";
const FILE: &str = "control";
/// Version of the database directory layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Control {
    pub format_version: u32,
    pub id: u32,
    pub name: String,
    /// The log was hardened through this LSN at the last checkpoint or clean
    /// shutdown: recovery refuses a log that ends before it.
    pub hardened_lsn: Lsn,
    /// LSN of the newest checkpoint image.
    pub checkpoint_lsn: Lsn,
    /// Whether the last run ended with a clean shutdown.
    pub clean_shutdown: bool,
    /// `max_write` of every log writer since this file was last written: a
    /// torn batch reaches at most this far past the end of the log.
    pub log_max_write: u64,
}

pub fn path(db_dir: &Path) -> PathBuf {
    db_dir.join(FILE)
}

pub fn encode(c: &Control) -> Vec<u8> {
    let body = serde_json::to_vec(c).expect("control serializes");
    let mut out = Vec::with_capacity(body.len() + 20);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out
}

pub fn decode(bytes: &[u8], path: &Path) -> Result<Control> {
    let bad = |d: &str| EngineError::CorruptDataFile {
        path: path.to_path_buf(),
        detail: format!("control file: {d}"),
    };
    if bytes.len() < 20 || &bytes[..8] != MAGIC {
        return Err(bad("bad magic"));
    }
    let len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    if bytes.len() != 20 + len {
        return Err(bad("bad length"));
    }
    let body = &bytes[16..16 + len];
    let crc = u32::from_le_bytes(bytes[16 + len..].try_into().unwrap());
    if crc32c::crc32c(body) != crc {
        return Err(bad("checksum mismatch"));
    }
    let c: Control = serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?;
    if c.format_version > FORMAT_VERSION {
        return Err(bad(&format!(
            "format version {} is newer than this build's {FORMAT_VERSION}",
            c.format_version
        )));
    }
    Ok(c)
}

/// The control file of `db_dir`, or `None` if it has none.
pub fn read(vfs: &dyn Vfs, db_dir: &Path) -> Result<Option<Control>> {
    let p = path(db_dir);
    if !vfs.exists(&p).map_err(io_err(&p))? {
        return Ok(None);
    }
    let read = || {
        let bytes = walden_log::vfs::read_file(vfs, &p).map_err(io_err(&p))?;
        decode(&bytes, &p)
    };
    // Once more on damage: a transient read error is not a damaged file.
    read().or_else(|_| read()).map(Some)
}

pub fn write(vfs: &dyn Vfs, db_dir: &Path, c: &Control) -> Result<()> {
    let p = path(db_dir);
    walden_log::vfs::write_file_atomic(vfs, &p, &encode(c)).map_err(io_err(&p))
}

/// Checks that a directory's control file names the catalog's database.
pub fn check_identity(c: &Control, id: u32, name: &str, db_dir: &Path) -> Result<()> {
    if c.id != id || !c.name.eq_ignore_ascii_case(name) {
        return Err(EngineError::DirectoryMismatch {
            dir: db_dir.to_path_buf(),
            detail: format!(
                "instance.json lists database \"{name}\" (id {id}) here, but the directory's \
                 control file says \"{}\" (id {})",
                c.name, c.id
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let c = Control {
            format_version: FORMAT_VERSION,
            id: 5,
            name: "walden".into(),
            hardened_lsn: 123,
            checkpoint_lsn: 100,
            clean_shutdown: true,
            log_max_write: 1 << 20,
        };
        let mut b = encode(&c);
        assert_eq!(decode(&b, Path::new("x")).unwrap(), c);
        let n = b.len();
        b[n - 10] ^= 4;
        assert!(decode(&b, Path::new("x")).is_err());
    }
}
