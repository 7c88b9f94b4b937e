//! Full and log backups (`BACKUP DATABASE`, `BACKUP LOG`) and the restore
//! that replays a full backup and a chain of log backups into an image.
//!
//! A full backup is an image of version 3 written a block at a time, as a
//! checkpoint reads the database beside commits; a log backup is the log
//! records since the previous backup:
//!
//! ```text
//! "WALDNLBK" | version u32 | body | crc32c(body) u32
//! body: database name, from LSN, to LSN, then (start LSN, length, record)*
//! ```

use super::image::{read_all, write_atomic, Image, BACKUP_CHUNK, LOG_BACKUP_MAGIC};
use crate::codec::{encode_redo, put_str, put_var, Reader, Redo};
use crate::database::Database;
use crate::error::{EngineError, Result};
use crate::recovery::Replay;
use crate::schema::RecoveryModel;
use crate::session::Session;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use walden_log::{FileStats, Lsn, Vfs};

/// What a backup wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct BackupInfo {
    pub path: PathBuf,
    pub from_lsn: Lsn,
    pub to_lsn: Lsn,
    pub bytes: u64,
}

/// Backup state persisted with the database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackupState {
    /// LSN of the last full backup (starts the log-backup chain in FULL).
    pub full_backup_lsn: Option<Lsn>,
    /// Log before this LSN has been written to a log backup.
    pub log_backup_lsn: Option<Lsn>,
}

impl Database {
    /// `BACKUP DATABASE name TO DISK = 'path'`: a full image; starts the
    /// log-backup chain of the FULL recovery model.
    pub fn backup_database(&self, session: &Session, path: &Path) -> Result<BackupInfo> {
        self.check_writable()?;
        let _one = self.checkpoints.lock.lock();
        // Read beside commits, as a checkpoint is, and written as it is
        // read, a block at a time.
        let sinks = session.wait_sinks();
        let mut lsn = 0;
        let bytes = crate::image_stream::write_file_streaming(&*self.vfs, path, |emit| {
            self.stream_image(
                BACKUP_CHUNK,
                &sinks,
                &mut |l| {
                    lsn = l;
                    Ok(())
                },
                emit,
            )
            .map(|(_, n)| n)
        })?;
        let snap_lsn = lsn;
        self.log
            .commit_durable(&encode_redo(&Redo::FullBackup { lsn: snap_lsn }), &sinks)?;
        let mut b = self.backup.lock();
        b.full_backup_lsn = Some(snap_lsn);
        b.log_backup_lsn = Some(snap_lsn);
        Ok(BackupInfo {
            path: path.to_path_buf(),
            from_lsn: snap_lsn,
            to_lsn: snap_lsn,
            bytes,
        })
    }

    /// `BACKUP LOG name TO DISK = 'path'`: writes the log since the last log
    /// backup (or full backup) to a file that a restore can replay.
    pub fn backup_log(&self, session: &Session, path: &Path) -> Result<BackupInfo> {
        self.check_writable()?;
        if self.settings().recovery_model != RecoveryModel::Full {
            return Err(EngineError::Backup(format!(
                "BACKUP LOG cannot be performed because the recovery model of database \"{}\" is SIMPLE; use ALTER DATABASE to change it",
                self.name
            )));
        }
        let _one = self.checkpoints.lock.lock();
        let from = match *self.backup.lock() {
            BackupState {
                full_backup_lsn: Some(_),
                log_backup_lsn: Some(l),
            } => l,
            _ => {
                return Err(EngineError::Backup(format!(
                    "BACKUP LOG cannot be performed because there is no current backup of database \"{}\"; run BACKUP DATABASE first",
                    self.name
                )))
            }
        };
        let sinks = session.wait_sinks();
        let to = self.log.flush(&sinks)?;
        let mut out = Vec::new();
        out.extend_from_slice(LOG_BACKUP_MAGIC);
        out.extend_from_slice(&1u32.to_le_bytes());
        let body_start = out.len();
        put_str(&mut out, &self.name);
        put_var(&mut out, from);
        put_var(&mut out, to);
        let mut n = 0u64;
        self.log.read_range(from, to, &mut |start, _end, rec| {
            put_var(&mut out, start);
            put_var(&mut out, rec.len() as u64);
            out.extend_from_slice(rec);
            n += 1;
            Ok(())
        })?;
        let crc = crc32c::crc32c(&out[body_start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        write_atomic(&*self.vfs, path, &out, &Arc::new(FileStats::default()))?;
        self.log
            .commit_durable(&encode_redo(&Redo::LogBackup { lsn: to }), &sinks)?;
        self.backup.lock().log_backup_lsn = Some(to);
        self.log.release_before(
            self.checkpoints
                .prior_lsn
                .load(Relaxed)
                .min(self.checkpoint_lsn())
                .min(to),
        )?;
        tracing::info!(database = %self.name, from, to, records = n, "log backup written");
        Ok(BackupInfo {
            path: path.to_path_buf(),
            from_lsn: from,
            to_lsn: to,
            bytes: out.len() as u64,
        })
    }
}

/// Replays a full backup and a chain of log backups into an image.
pub(crate) fn restore_image(vfs: &dyn Vfs, full: &Path, logs: &[PathBuf]) -> Result<Image> {
    let stats = Arc::new(FileStats::default());
    let image = crate::image_stream::read_image_file(vfs, full)?;
    let mut expected = image.lsn;
    let mut replay = Replay::new(image);
    for p in logs {
        let bytes = read_all(vfs, p, &stats)?;
        let bad = |d: String| EngineError::Backup(format!("log backup {}: {d}", p.display()));
        if bytes.len() < 16 || &bytes[..8] != LOG_BACKUP_MAGIC {
            return Err(bad("not a Walden log backup".into()));
        }
        let body = &bytes[12..bytes.len() - 4];
        let crc = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap());
        if crc32c::crc32c(body) != crc {
            return Err(bad("checksum mismatch".into()));
        }
        let mut r = Reader::new(body);
        let _name = r.str()?;
        let from = r.var()?;
        let to = r.var()?;
        if from != expected {
            return Err(bad(format!(
                "it starts at LSN {from} but the restore needs LSN {expected} next (backups out of order or missing)"
            )));
        }
        while !r.is_empty() {
            let start = r.var()?;
            let len = r.var()? as usize;
            let rec = r.bytes(len)?;
            replay.apply(start + 4 + len as u64, rec)?;
        }
        expected = to;
    }
    let (mut image, _) = replay.finish();
    image.lsn = expected;
    image.commit_floor = expected;
    Ok(image)
}
