//! The paged base store beneath the tables (docs/design.md, "Storage
//! engine: the decision"): redb over Walden's `Vfs`, keyed by an
//! order-preserving encoding of the primary key, written only by
//! checkpoints (`write.rs`) and read through by rows that left memory
//! (`reads.rs`).

pub mod backend;
pub(crate) mod base;
pub(crate) mod check;
pub mod keycode;
pub(crate) mod layer;
pub(crate) mod reads;
mod verify;
pub(crate) mod write;

pub use backend::VfsBackend;
pub use base::StoredBytes;
pub use check::{CheckReport, TableCheck};
pub use reads::rows_decoded;

/// How tables use memory.
#[derive(Clone, Copy, Debug)]
pub struct StorageConfig {
    /// Rows are read from the base store rather than all loaded at open,
    /// and leave memory once a checkpoint has written them: data larger
    /// than memory. Off, every row is kept in memory.
    pub read_through: bool,
    /// The base store's page cache (redb's), in bytes.
    pub cache_bytes: usize,
    /// redb verifies every page's checksum at open (restart time then
    /// grows with the data file); off, the check runs in the background.
    pub verify_on_open: bool,
    /// After each open, every stored row is read back in the background
    /// (`check.rs`).
    pub background_check: bool,
    /// Encoded bytes per batch when a checkpoint stages a table written
    /// whole (`store/write.rs`).
    pub stage_bytes: usize,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            read_through: true,
            cache_bytes: 128 << 20,
            verify_on_open: false,
            background_check: true,
            stage_bytes: write::STAGE_BYTES,
        }
    }
}
pub use keycode::{decode_key, encode_key, key_bytes, KeyDecodeError};
