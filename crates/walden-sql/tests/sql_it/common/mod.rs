//! An SQL engine over an in-memory instance, for the SQL layer's tests.

pub mod statements;

use std::sync::Arc;
use walden_engine::{Instance, InstanceConfig, LogConfig, MemVfs};
use walden_sql::SqlEngine;

/// A fresh instance on the in-memory file system, with small log segments
/// and no background checkpoints.
pub fn engine() -> Arc<SqlEngine> {
    let inst = Instance::open(InstanceConfig {
        vfs: Arc::new(MemVfs::new()),
        log: LogConfig {
            segment_size: 4 << 20,
            preallocate_spare: false,
            ..LogConfig::default()
        },
        background_checkpoints: false,
        ..InstanceConfig::new("/sql")
    })
    .unwrap();
    SqlEngine::new(inst)
}
