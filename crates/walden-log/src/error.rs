use std::path::PathBuf;

/// Errors of the log manager.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("log I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A failed write or sync: the log refuses all later writes rather than guess
    /// what reached the disk.
    #[error("the log is poisoned after an I/O failure and refuses writes: {0}")]
    Poisoned(String),
    /// Damage before the tail of the log: valid, synced blocks follow a bad one.
    #[error("log corruption in {file} at offset {offset} (LSN {lsn}): {detail}")]
    Corrupt {
        file: PathBuf,
        offset: u64,
        lsn: u64,
        detail: String,
    },
    /// The log needed to recover from a checkpoint is gone.
    #[error("log from LSN {0} is missing: {1}")]
    Missing(u64, String),
    /// The log ends before an LSN known to have been hardened (a checkpoint's
    /// LSN, or the hardened LSN of a clean shutdown): a lost segment or damage
    /// in the last hardened block, never a torn tail.
    #[error(
        "the log in {dir} ends at LSN {end}, before LSN {required}, which was hardened: \
         a segment is missing or its last hardened block is damaged"
    )]
    EndsEarly {
        dir: PathBuf,
        end: u64,
        required: u64,
    },
    /// A record over the largest size the reader accepts, refused at append.
    #[error("log record of {len} bytes exceeds the maximum record size of {max} bytes")]
    RecordTooLarge { len: u64, max: u64 },
    #[error("the log is closed")]
    Closed,
    #[error("invalid log configuration: {0}")]
    Config(String),
}

pub type Result<T, E = LogError> = std::result::Result<T, E>;

pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> LogError {
    let path = path.into();
    move |source| LogError::Io { path, source }
}
