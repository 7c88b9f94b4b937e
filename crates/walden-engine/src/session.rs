//! Sessions: who is connected, with per-session wait statistics and the
//! session's default durability request.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::SystemTime;
use walden_log::WaitStats;

/// A session (`@@SPID`). Sessions are created by [`crate::Instance::new_session`].
pub struct Session {
    pub id: u32,
    pub login_time: SystemTime,
    /// `sys.dm_exec_session_wait_stats` for this session.
    pub waits: WaitStats,
    pub(crate) instance_waits: Arc<WaitStats>,
    delayed_default: AtomicBool,
    pub(crate) program: parking_lot::Mutex<String>,
    /// Set to cancel what the session is running (a cancel request, a
    /// statement timeout); row lock waits watch it too.
    pub cancel: std::sync::Arc<AtomicBool>,
    /// The session's open transactions, as (database id, txid): who holds
    /// or waits for a lock, for `pg_locks` and `sys.dm_tran_locks`.
    open: parking_lot::Mutex<smallvec::SmallVec<[(u32, u64); 1]>>,
}

impl Session {
    pub(crate) fn new(id: u32, instance_waits: Arc<WaitStats>) -> Self {
        Session {
            id,
            login_time: SystemTime::now(),
            waits: WaitStats::default(),
            instance_waits,
            delayed_default: AtomicBool::new(false),
            program: parking_lot::Mutex::new(String::new()),
            cancel: Default::default(),
            open: Default::default(),
        }
    }

    pub(crate) fn opened(&self, db: u32, txid: u64) {
        self.open.lock().push((db, txid));
    }

    pub(crate) fn closed(&self, db: u32, txid: u64) {
        self.open.lock().retain(|o| *o != (db, txid));
    }

    /// The session's open transactions, as (database id, txid).
    pub fn open_transactions(&self) -> Vec<(u32, u64)> {
        self.open.lock().to_vec()
    }

    /// `SET DELAYED_DURABILITY ON|OFF` or `SET synchronous_commit = off|on`:
    /// what a commit without its own `WITH (DELAYED_DURABILITY = ...)` asks for.
    pub fn set_delayed_default(&self, on: bool) {
        self.delayed_default.store(on, Relaxed);
    }

    pub fn delayed_default(&self) -> bool {
        self.delayed_default.load(Relaxed)
    }

    pub fn set_program_name(&self, name: &str) {
        *self.program.lock() = name.to_string();
    }

    pub fn program_name(&self) -> String {
        self.program.lock().clone()
    }

    /// Where this session's waits are recorded: its own stats and the instance's.
    pub fn wait_sinks(&self) -> [&WaitStats; 2] {
        [&self.waits, &self.instance_waits]
    }
}

/// What a commit asks for; the database setting decides what it gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CommitRequest {
    /// No explicit option: the session default applies.
    #[default]
    Default,
    /// `WITH (DELAYED_DURABILITY = ON)`.
    Delayed,
    /// `WITH (DELAYED_DURABILITY = OFF)`.
    Durable,
}
