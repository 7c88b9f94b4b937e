//! Where `BACKUP DATABASE | LOG ... TO DISK = 'path'` may write.
//!
//! A backup file is written by the server process, which can write the
//! data directory itself: an unconfined path could overwrite another
//! database's checkpoint image or the instance's catalog. Backups therefore
//! go to one configured directory (`backup_dir` in walden.toml): a relative
//! path is taken inside it, an absolute one must lie inside it, `..` is
//! refused, and so is a path that leaves it through a symbolic link.

use std::path::{Component, Path, PathBuf};

use crate::error::{ErrorKind, Result, SqlError};

fn refused(given: &str, why: &str) -> SqlError {
    SqlError::new(
        ErrorKind::InsufficientPrivilege,
        format!("cannot write a backup to '{given}': {why}"),
    )
}

/// The file `given` names inside `dir`, or why it may not be written.
pub fn resolve(dir: Option<&Path>, given: &str) -> Result<PathBuf> {
    let Some(dir) = dir else {
        return Err(refused(
            given,
            "no backup directory is configured (set backup_dir in walden.toml)",
        ));
    };
    let p = Path::new(given);
    if given.is_empty() || p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refused(given, "the path may not contain '..'"));
    }
    let full = if p.is_absolute() {
        if !p.starts_with(dir) {
            return Err(refused(
                given,
                &format!("backups are written inside {}", dir.display()),
            ));
        }
        p.to_path_buf()
    } else {
        dir.join(p)
    };
    if full == dir {
        return Err(refused(given, "that is the backup directory itself"));
    }
    std::fs::create_dir_all(full.parent().unwrap_or(dir))
        .map_err(|e| refused(given, &format!("cannot create its directory: {e}")))?;
    // Symbolic links inside the directory must not lead out of it.
    let real_dir = std::fs::canonicalize(dir)
        .map_err(|e| refused(given, &format!("{}: {e}", dir.display())))?;
    let real_parent = std::fs::canonicalize(full.parent().unwrap_or(dir))
        .map_err(|e| refused(given, &e.to_string()))?;
    if !real_parent.starts_with(&real_dir) {
        return Err(refused(given, "it leads out of the backup directory"));
    }
    if std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refused(given, "it is a symbolic link"));
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backups_stay_inside_the_configured_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("backups");
        std::fs::create_dir_all(&dir).unwrap();
        let d = Some(dir.as_path());
        assert_eq!(resolve(d, "db.bak").unwrap(), dir.join("db.bak"));
        assert_eq!(
            resolve(d, "nightly/db.bak").unwrap(),
            dir.join("nightly/db.bak")
        );
        let inside = dir.join("x.bak");
        assert_eq!(resolve(d, inside.to_str().unwrap()).unwrap(), inside);
        for bad in ["../instance.json", "/etc/passwd", "a/../../x", ""] {
            let e = resolve(d, bad).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InsufficientPrivilege, "{bad}");
        }
        assert!(resolve(None, "db.bak").is_err());
        // A link inside the directory pointing out of it.
        std::os::unix::fs::symlink(tmp.path(), dir.join("out")).unwrap();
        assert!(resolve(d, "out/x.bak").is_err());
    }
}
