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
    /// What the session is doing, for `pg_stat_activity` and
    /// `sys.dm_exec_sessions` / `sys.dm_exec_requests`.
    activity: parking_lot::Mutex<Activity>,
    /// Set by `pg_terminate_backend`: the connection ends at its next
    /// chance (the hook wakes it when it waits for its client).
    terminated: AtomicBool,
    terminate_hook: parking_lot::Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// What `currval` and `lastval` return: the last value `nextval` (or a
    /// `setval` with is_called) gave each sequence, by id, and the sequence
    /// `nextval` last drew from.
    pub(crate) seq_memory: parking_lot::Mutex<SeqMemory>,
}

/// A session's sequence values (`currval`, `lastval`).
#[derive(Default)]
pub(crate) struct SeqMemory {
    pub(crate) values: std::collections::HashMap<u32, i64>,
    pub(crate) last: Option<u32>,
}

/// A session's state as `pg_stat_activity.state` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ActivityState {
    #[default]
    Idle,
    Active,
    IdleInTransaction,
    IdleInFailedTransaction,
}

impl ActivityState {
    /// PostgreSQL's name.
    pub fn name(self) -> &'static str {
        match self {
            ActivityState::Idle => "idle",
            ActivityState::Active => "active",
            ActivityState::IdleInTransaction => "idle in transaction",
            ActivityState::IdleInFailedTransaction => "idle in transaction (aborted)",
        }
    }
}

/// Who the session is and what it runs: set by the SQL layer and the server.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    pub user: String,
    pub role: u32,
    pub database: String,
    pub database_id: u32,
    /// The client's address (`None`: an in-process session).
    pub client: Option<std::net::SocketAddr>,
    pub state: ActivityState,
    /// The statement running, or the last one run.
    pub query: String,
    pub query_start: Option<SystemTime>,
    /// When the transaction began (`None` outside one).
    pub xact_start: Option<SystemTime>,
    pub state_change: Option<SystemTime>,
}

impl Session {
    /// `DISCARD SEQUENCES` (and `DISCARD ALL`): forgets what `currval` and
    /// `lastval` would return.
    pub fn discard_sequences(&self) {
        *self.seq_memory.lock() = SeqMemory::default();
    }

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
            activity: Default::default(),
            terminated: AtomicBool::new(false),
            terminate_hook: Default::default(),
            seq_memory: Default::default(),
        }
    }

    /// A copy of what the session is doing.
    pub fn activity(&self) -> Activity {
        self.activity.lock().clone()
    }

    /// Who the session is, at connection.
    pub fn set_identity(&self, user: &str, role: u32, database: &str, database_id: u32) {
        let mut a = self.activity.lock();
        a.user = user.to_string();
        a.role = role;
        a.database = database.to_string();
        a.database_id = database_id;
    }

    pub fn set_client(&self, addr: std::net::SocketAddr) {
        self.activity.lock().client = Some(addr);
    }

    /// A statement starts: the session is active running `query`; a
    /// transaction starts with it unless one is open.
    pub fn statement_started(&self, query: &str) {
        let now = SystemTime::now();
        let mut a = self.activity.lock();
        a.state = ActivityState::Active;
        a.query.clear();
        a.query.push_str(query);
        a.query_start = Some(now);
        a.state_change = Some(now);
        a.xact_start.get_or_insert(now);
    }

    /// The session waits for its client again, in `state`.
    pub fn went_idle(&self, state: ActivityState) {
        let mut a = self.activity.lock();
        if a.state != state {
            a.state = state;
            a.state_change = Some(SystemTime::now());
        }
        // An aborted transaction shows no start, as PostgreSQL's.
        if matches!(
            state,
            ActivityState::Idle | ActivityState::IdleInFailedTransaction
        ) {
            a.xact_start = None;
        } else if a.xact_start.is_none() {
            a.xact_start = a.state_change;
        }
    }

    /// `pg_terminate_backend`: cancels what runs and ends the connection.
    pub fn terminate(&self) {
        self.terminated.store(true, Relaxed);
        self.cancel.store(true, Relaxed);
        if let Some(h) = &*self.terminate_hook.lock() {
            h();
        }
    }

    pub fn is_terminated(&self) -> bool {
        self.terminated.load(Relaxed)
    }

    /// What wakes the session's connection when it is terminated.
    pub fn set_terminate_hook(&self, hook: Box<dyn Fn() + Send + Sync>) {
        *self.terminate_hook.lock() = Some(hook);
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
