//! Walden's log manager.
//!
//! One LSN-ordered log per database: records are appended to an in-memory
//! buffer, a single flusher thread cuts the buffer into checksummed blocks of
//! at most `block_size`, writes them into preallocated segment files and
//! hardens them. Fully durable commits wait for hardening (group commit falls
//! out of that); delayed commits return once buffered, within an optional hard
//! loss bound. All I/O goes through the [`Vfs`] trait so crash tests can run on
//! [`MemVfs`], which forgets unsynced writes on a simulated power loss.
//!
//! An LSN is a byte offset in the record stream (each record framed by a
//! 4-byte length). See `docs/design.md` for the on-disk format.

pub mod block;
mod config;
mod error;
mod manager;
mod mem;
pub mod scan;
mod segments;
mod stats;
mod subscribe;
pub mod vfs;

pub use config::{LogConfig, SyncMode};
pub use error::{LogError, Result};
pub use manager::{log_dir, Exposure, LogManager, OpenBounds, RecoveryReport};
pub use mem::{CrashMode, Faults, MemCounters, MemVfs};
pub use scan::{RecordSink, ScanOutcome, SegmentInfo, TailCut};
pub use stats::{
    CountingFile, CountingVfs, FileStats, FileStatsSnapshot, LogCounters, WaitRow, WaitSinks,
    WaitStats, WaitType,
};
pub use subscribe::{LogWrite, Subscription};
pub use vfs::{OpenOptionsVfs, OsVfs, Vfs, VfsFile};

/// A log sequence number: a byte offset in the record stream.
pub type Lsn = u64;
