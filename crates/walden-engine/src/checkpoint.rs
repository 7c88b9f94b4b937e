//! The checkpointer: what changed since the last checkpoint goes to the base
//! store (`store/write.rs`) beside commits, the redo start moves forward and
//! the log behind it is released. Images (the format the store's catalog
//! record, backups and seeds share) are in `checkpoint/image.rs`; backups
//! and restore in `checkpoint/backup.rs`.

use crate::database::Database;
use crate::error::{EngineError, Result};
use crate::schema::RecoveryModel;
use crate::store::base::TableWrite;
use crate::store::write::{Pace, StoreWrite};
use crate::table::Table;
use parking_lot::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use walden_log::Lsn;

/// What one checkpoint writes to the base store, captured at one instant:
/// the catalog (an image without rows), and each table's changes since the
/// last checkpoint, read at `snapshot`.
struct Cut {
    /// Where redo starts.
    lsn: Lsn,
    /// The log end at the capture: harden through it before writing.
    through: Lsn,
    header: Vec<u8>,
    snapshot: crate::mvcc::Snapshot,
    tables: Vec<TableWrite>,
}

/// The longest pause between two batches of a spread checkpoint.
const MAX_PAUSE: Duration = Duration::from_millis(200);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What a checkpoint or backup did.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointInfo {
    pub lsn: Lsn,
    /// Bytes written to the data file (for an image: its size).
    pub bytes: u64,
    pub elapsed: Duration,
    /// Log segments made reusable.
    pub segments_released: usize,
}

/// The checkpointer's bookkeeping: where the base store stands in the log
/// and when it last moved.
pub(crate) struct Checkpoints {
    /// Redo start of the last checkpoint (the base store's commit).
    pub(crate) lsn: AtomicU64,
    /// Redo start of the checkpoint before the last: the base store's
    /// previous commit, whose log is kept until the next checkpoint.
    pub(crate) prior_lsn: AtomicU64,
    /// Log file bytes written when the last checkpoint was taken.
    pub(crate) log_written_at: AtomicU64,
    pub(crate) last: Mutex<Instant>,
    /// One checkpoint or backup at a time.
    pub(crate) lock: Mutex<()>,
}

impl Checkpoints {
    pub(crate) fn new(lsn: Lsn, prior_lsn: Lsn) -> Self {
        Checkpoints {
            lsn: AtomicU64::new(lsn),
            prior_lsn: AtomicU64::new(prior_lsn),
            log_written_at: AtomicU64::new(0),
            last: Mutex::new(Instant::now()),
            lock: Mutex::new(()),
        }
    }
}

impl Database {
    /// A copy's start while commits go on (see `inflight.rs`): the gate is
    /// held shared only for the instant of the capture (it keeps DDL out);
    /// the rows are read afterwards at the captured snapshot, which the
    /// capture keeps open until it is dropped.
    pub(crate) fn capture_parts(&self) -> (crate::inflight::Capture, Parts) {
        let _gate = self.txns.gate.read();
        let cap = self.txns.inflight.capture(&self.txns.vis, &self.log, || {});
        // Without open transactions' DDL (see `txn/ddl.rs`).
        let cat = self.image_catalog();
        let parts = Parts::of(
            self.txns.next_txid.load(Relaxed),
            self.settings(),
            *self.backup.lock(),
            &cat,
        );
        (cap, parts)
    }

    /// Streams the image of a capture to `emit` (after hardening the log
    /// through the capture's end: the image may hold delayed commits, and
    /// nothing may use them before their log is safe). `begin` learns the
    /// image's LSN before the first byte. Returns the LSN and the size.
    pub(crate) fn stream_image(
        &self,
        chunk: usize,
        waits: walden_log::WaitSinks<'_>,
        begin: &mut dyn FnMut(Lsn) -> Result<()>,
        emit: crate::image_stream::Emit<'_>,
    ) -> Result<(Lsn, u64)> {
        let (cap, parts) = self.capture_parts();
        self.log.wait_hardened(cap.log_end, waits)?;
        let lsn = cap.redo_start;
        begin(lsn)?;
        let horizon = self.txns.vis.horizon();
        let n = crate::image_stream::write_image(
            &parts,
            lsn,
            cap.commit_floor,
            cap.snapshot.csn(),
            horizon,
            chunk,
            emit,
        )?;
        drop(cap);
        Ok((lsn, n))
    }

    /// A checkpoint's cut while commits go on: the changed keys are taken
    /// at the capture's instant, so they are exactly the commits at or below
    /// its snapshot, and read afterwards with no lock held.
    fn cut_online(&self) -> Cut {
        let _gate = self.txns.gate.read();
        // The gate keeps DDL out: this list stays the catalog's.
        // Without open transactions' DDL (see `txn/ddl.rs`).
        let image = self.image_catalog();
        let tables: Vec<Arc<Table>> = image.by_id.values().cloned().collect();
        let mut writes = Vec::new();
        let cap = self.txns.inflight.capture(&self.txns.vis, &self.log, || {
            writes = tables.iter().cloned().map(TableWrite::take).collect();
        });
        let parts = Parts::of(
            self.txns.next_txid.load(Relaxed),
            self.settings(),
            *self.backup.lock(),
            &image,
        );
        Cut {
            lsn: cap.redo_start,
            through: cap.log_end,
            header: parts.header(cap.redo_start, cap.commit_floor),
            snapshot: cap.snapshot,
            tables: writes,
        }
    }

    /// A secondary's cut: only between transactions, with its redo stopped.
    fn cut_between_transactions(&self) -> Option<Cut> {
        let _gate = self.txns.gate.write();
        let lsn = self.replica_checkpoint_lsn()?;
        let cat = self.catalog.read();
        let (snapshot, tables) = {
            let _publish = self.txns.vis.hold_publish();
            let tables: Vec<TableWrite> =
                cat.by_id.values().cloned().map(TableWrite::take).collect();
            (self.txns.vis.snapshot(), tables)
        };
        let parts = Parts::of(
            self.txns.next_txid.load(Relaxed),
            self.settings(),
            *self.backup.lock(),
            &cat,
        );
        Some(Cut {
            lsn,
            through: lsn,
            header: parts.header(lsn, lsn),
            snapshot,
            tables,
        })
    }

    /// Hardens the log through the cut (the WAL rule: a delayed commit the
    /// log could still lose must not reach the store) and commits it to the
    /// base store. On failure the changes go back to their tables for the
    /// next checkpoint. `began` is when the checkpoint took its cut.
    fn write_cut(&self, cut: Cut, pace: Pace<'_>, began: Instant) -> Result<StoreWrite> {
        let t0 = Instant::now();
        // With reads through the store, the eviction after the write
        // prunes every key it visits; pruning first as well would hold each
        // table's write lock over all its keys twice per checkpoint.
        if !self.store.reads_through() {
            let horizon = self.txns.vis.horizon();
            for tw in &cut.tables {
                tw.table.prune(horizon);
            }
        }
        let t1 = Instant::now();
        let written = self
            .log
            .wait_hardened(cut.through, &[])
            .map_err(EngineError::from)
            .and_then(|_| {
                self.store
                    .write(&cut.header, &cut.tables, cut.snapshot.csn(), pace)
            });
        let t2 = Instant::now();
        if written.is_err() {
            for tw in cut.tables {
                tw.restore();
            }
            return written;
        }
        // The store's new commit answers for what it holds: those rows can
        // leave memory.
        // Freed rows go back to the operating system by the allocator's
        // own decay (jemalloc's background threads in the walden binary),
        // not by a trim that would hold its locks while commits allocate.
        let mut evicted = 0;
        if self.store.reads_through() {
            let upto = cut.snapshot.csn();
            drop(cut.snapshot);
            evicted = cut
                .tables
                .iter()
                .map(|tw| tw.table.evict(&self.txns.vis, upto))
                .sum();
            self.counters
                .rows_evicted
                .fetch_add(evicted as u64, Relaxed);
        }
        let w = written?;
        // As PostgreSQL's log_checkpoints: where a checkpoint's time went.
        tracing::info!(
            database = %self.name,
            rows = w.rows,
            bytes = w.bytes,
            commits = w.commits,
            evicted,
            total_ms = ms(began.elapsed()),
            cut_ms = ms(t0 - began),
            prune_ms = ms(t1 - t0),
            write_ms = ms(w.write),
            commit_ms = ms(w.commit),
            paused_ms = ms(w.paused),
            wait_log_ms = ms((t2 - t1).saturating_sub(w.write + w.commit + w.paused)),
            evict_ms = ms(t2.elapsed()),
            "checkpoint written"
        );
        Ok(w)
    }

    /// How far back the log must be kept.
    fn retention_lsn(&self, checkpoint: Lsn) -> Lsn {
        let b = *self.backup.lock();
        // Log a secondary still needs stays.
        let checkpoint = checkpoint.min(self.replica_retention());
        match (
            self.settings().recovery_model,
            b.full_backup_lsn,
            b.log_backup_lsn,
        ) {
            (RecoveryModel::Full, Some(_), Some(l)) => checkpoint.min(l),
            _ => checkpoint,
        }
    }

    /// Writes what changed since the last checkpoint to the base store, so
    /// the log before the new redo start can be reused (SIMPLE) or kept
    /// only until backed up (FULL). At once, as `CHECKPOINT` asks, on a
    /// thread below the sessions' CPU priority (`priority.rs`).
    pub fn checkpoint(&self) -> Result<CheckpointInfo> {
        crate::priority::at_checkpoint_priority(|| self.checkpoint_paced(&mut |_| {}))
    }

    /// The background checkpointer's: pauses after each batch as long as
    /// the batch took, so a checkpoint takes at most about half of a core
    /// and of the disk's time while commits go on (PostgreSQL spreads its
    /// checkpoints with `checkpoint_completion_target` likewise). Once
    /// `due_bytes` of log have been written since it began, the next
    /// checkpoint is due already: writers are outpacing it (a bulk load),
    /// and every version they commit stays in memory until a checkpoint
    /// writes it, so it stops pausing and catches up.
    pub(crate) fn checkpoint_spread(&self, due_bytes: u64) -> Result<CheckpointInfo> {
        let written = || self.log_file_stats().num_of_bytes_written.load(Relaxed);
        let began = written();
        let mut caught_up = false;
        let info = self.checkpoint_paced(&mut |took| {
            if written().saturating_sub(began) < due_bytes {
                std::thread::sleep(took.min(MAX_PAUSE));
            } else {
                caught_up = true;
            }
        })?;
        if caught_up {
            self.counters.checkpoints_unpaced.fetch_add(1, Relaxed);
        }
        Ok(info)
    }

    fn checkpoint_paced(&self, pace: Pace<'_>) -> Result<CheckpointInfo> {
        // A poisoned log may hold hardened commits that were never applied
        // (their role file or a store read failed): a checkpoint would move
        // the redo start past them, and recovery would not replay them.
        if let Some(why) = self.log.is_poisoned() {
            return Err(walden_log::LogError::Poisoned(why).into());
        }
        // A commit into a damaged tree could spread the damage; the log
        // holds every change since the last good checkpoint meanwhile.
        if let Some(why) = self.store.damaged() {
            return Err(crate::error::EngineError::CorruptDataFile {
                path: self.store.path.clone(),
                detail: format!(
                    "{why}; checkpoints are stopped until it is restored from a backup"
                ),
            });
        }
        let _one = self.checkpoints.lock.lock();
        let t0 = Instant::now();
        let cut = if self.is_secondary() {
            self.cut_between_transactions()
        } else {
            Some(self.cut_online())
        };
        let Some(cut) = cut else {
            // A secondary between a transaction's parts: try again later.
            return Ok(CheckpointInfo {
                lsn: self.checkpoints.lsn.load(Relaxed),
                bytes: 0,
                elapsed: t0.elapsed(),
                segments_released: 0,
            });
        };
        let lsn = cut.lsn;
        let StoreWrite {
            bytes,
            rows,
            commits,
            ..
        } = self.write_cut(cut, pace, t0)?;
        self.counters.checkpoint_bytes.fetch_add(bytes, Relaxed);
        self.counters.checkpoint_rows.fetch_add(rows, Relaxed);
        self.counters.checkpoint_commits.fetch_add(commits, Relaxed);
        let previous = self.checkpoints.lsn.load(Relaxed);
        self.checkpoints.prior_lsn.store(previous, Relaxed);
        self.checkpoints.lsn.store(lsn, Relaxed);
        self.write_control(false)?;
        remove_images(&*self.vfs, &Database::data_dir(&self.dir))?;
        self.checkpoints.log_written_at.store(
            self.log_file_stats().num_of_bytes_written.load(Relaxed),
            Relaxed,
        );
        *self.checkpoints.last.lock() = Instant::now();
        // The store's previous commit is redb's fallback: keep its log.
        let released = self.log.release_before(self.retention_lsn(previous))?;
        self.counters.checkpoints.fetch_add(1, Relaxed);
        Ok(CheckpointInfo {
            lsn,
            bytes,
            elapsed: t0.elapsed(),
            segments_released: released,
        })
    }
}

mod backup;
mod image;

use image::remove_images;

pub(crate) use backup::restore_image;
pub use backup::{BackupInfo, BackupState};
pub(crate) use image::{
    decode_image, decode_whole, load_newest, load_row, write_image, Image, Loaded, Parts,
    IMAGE_MAGIC,
};
