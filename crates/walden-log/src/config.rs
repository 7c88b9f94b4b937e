use std::time::Duration;

/// How the flusher makes a write durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// `pwrite` then `fdatasync`.
    #[default]
    Fdatasync,
    /// Segment files opened with `O_DSYNC`: each `pwrite` is durable on return.
    Dsync,
}

impl std::str::FromStr for SyncMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "fdatasync" => Ok(SyncMode::Fdatasync),
            "dsync" | "o_dsync" => Ok(SyncMode::Dsync),
            _ => Err(format!("unknown sync mode '{s}' (fdatasync or dsync)")),
        }
    }
}

/// Log manager settings.
#[derive(Clone, Debug)]
pub struct LogConfig {
    /// Largest log block, header and padding included (default 60 KiB).
    pub block_size: usize,
    /// Size of each preallocated segment file.
    pub segment_size: u64,
    /// Most unhardened log the buffer holds before appends wait (LOGBUFFER).
    pub buffer_size: usize,
    /// The flusher hardens a non-empty buffer at the latest after this long.
    pub max_flush_delay: Duration,
    /// Most bytes written by one write call (several blocks coalesced).
    pub max_write: usize,
    pub sync_mode: SyncMode,
    /// Hard loss bound for delayed commits, in bytes of acknowledged, unhardened log.
    pub max_exposure_bytes: Option<u64>,
    /// Hard loss bound for delayed commits, as the age of the oldest acknowledged,
    /// unhardened commit.
    pub max_exposure: Option<Duration>,
    /// Keep a preallocated spare segment ready (a background thread fills it).
    pub preallocate_spare: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            block_size: 60 * 1024,
            segment_size: 64 * 1024 * 1024,
            buffer_size: 7 * 1024 * 1024,
            max_flush_delay: Duration::from_millis(5),
            max_write: 1024 * 1024,
            sync_mode: SyncMode::Fdatasync,
            max_exposure_bytes: None,
            max_exposure: None,
            preallocate_spare: true,
        }
    }
}

impl LogConfig {
    pub fn validate(&self) -> Result<(), String> {
        use crate::block::PAGE;
        if self.block_size < PAGE || !self.block_size.is_multiple_of(PAGE) {
            return Err(format!("log_block_size must be a multiple of {PAGE}"));
        }
        if self.block_size > crate::scan::MAX_BLOCK {
            return Err(format!(
                "log_block_size must be at most {}",
                crate::scan::MAX_BLOCK
            ));
        }
        if self.max_write < self.block_size {
            return Err("max_write must be at least one block".into());
        }
        if self.segment_size < (crate::block::SEGMENT_HEADER + 2 * self.max_write) as u64 {
            return Err("segment_size must hold a header and two maximal writes".into());
        }
        if self.buffer_size < self.block_size {
            return Err("log_buffer_size must hold at least one block".into());
        }
        Ok(())
    }
    /// Payload bytes one block can carry.
    pub fn block_payload(&self) -> usize {
        self.block_size - crate::block::BLOCK_HEADER
    }
}
