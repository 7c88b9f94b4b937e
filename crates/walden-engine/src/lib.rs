//! Walden's storage engine.
//!
//! An [`Instance`] holds databases, each with its own directory, log
//! ([`walden_log::LogManager`]) and checkpoint image. Tables live in memory
//! in primary-key order as versioned rows read through snapshots (data size
//! is bounded by memory in this version);
//! transactions keep their changes private under row locks and log them as
//! redo at commit, fully durable or delayed as the database's
//! `DELAYED_DURABILITY` setting and the commit's request decide.
//!
//! ```no_run
//! use walden_engine::*;
//! let inst = Instance::open(InstanceConfig::new("/tmp/walden-demo")).unwrap();
//! let db = inst.database("walden").unwrap();
//! let s = inst.new_session();
//! db.create_table(&s, TableDef::new("t", vec![
//!     ColumnDef::new("id", DataType::BigInt).identity(1, 1),
//!     ColumnDef::new("v", DataType::Text),
//! ], &["id"]).unwrap()).unwrap();
//! db.run(&s, CommitRequest::Default, |tx| tx.insert_named("t", &[("v", Value::text("hi"))])).unwrap();
//! inst.close().unwrap();
//! ```

mod alter;
mod budget;
mod checkpoint;
pub mod codec;
mod comment;
mod control;
mod database;
mod error;
mod image_stream;
mod inflight;
mod instance;
mod lock;
pub mod mvcc;
pub mod namespace;
mod priority;
mod recovery;
mod replica;
pub mod roles;
mod savepoint;
mod schema;
pub mod scram;
mod session;
mod ssi;
pub mod store;
mod table;
mod transactions;
mod txn;
pub mod types;
mod view;

pub use alter::{Alteration, ColumnSource};
pub use checkpoint::{BackupInfo, BackupState, CheckpointInfo};
pub use comment::CommentOn;
pub use database::{
    Database, DbCounters, Limits, SequenceAlter, DEFAULT_TRANSACTION_BYTES, MAX_ROW_BYTES,
};
pub use error::{DatetimeErrorKind, EngineError, FkViolation, KeyConflict, Result};
pub use instance::roles_txn::{RoleCommitHook, ROLE_CATALOG_LOCK};
pub use instance::{Instance, InstanceConfig, SeedReceiver};
pub use lock::{LockMode, LockRequest, RequestMode, TableLockMode, WaitPolicy};
pub use namespace::SchemaDef;
pub use replica::{frames_of, wait_until, RemoteHarden, ReplicaCounters};
pub use schema::{
    CheckDef, Collation, ColumnDef, DbSettings, DefaultExpr, DelayedDurability, FkAction,
    ForeignKeyDef, Identity, IdentityGeneration, IndexDef, PartitionOf, RecoveryModel, SeqOwner,
    SeqType, SequenceDef, SequenceOptions, TableDef, INDEX_DESC, INDEX_NULLS_FIRST,
};
pub use session::{Activity, ActivityState, CommitRequest, Session};
pub use table::{value_list, Table};
pub use txn::{
    Arbiters, CommitOutcome, Deferred, DeferredState, Isolation, Locked, RefPath, Transaction,
    Upsert,
};
pub use types::{DataType, Key, RegKind, Row, Value};
pub use view::ViewDef;
/// Entry points for the fuzz targets in `fuzz/` (the decoders they reach
/// are private); not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    /// Decodes a checkpoint image as recovery and RESTORE do.
    pub fn decode_checkpoint_image(bytes: &[u8]) -> crate::Result<()> {
        crate::checkpoint::decode_image(bytes, std::path::Path::new("fuzz.wdb")).map(drop)
    }
}

pub use walden_log::{
    Exposure, FileStatsSnapshot, LogConfig, LogCounters, Lsn, MemVfs, OsVfs, SyncMode, Vfs,
    WaitRow, WaitStats, WaitType,
};
