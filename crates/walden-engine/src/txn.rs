//! Transactions: a private write set under row locks, logged as redo at
//! commit, durable or delayed as the database setting decides.
//!
//! Reads see a snapshot (see `mvcc.rs`) plus the transaction's own writes:
//! under READ COMMITTED a new snapshot per statement, under REPEATABLE READ
//! one for the whole transaction, taken by its first statement. Writers lock
//! each key they touch until the end of the transaction and work on the
//! newest committed version; under REPEATABLE READ a key changed by a commit
//! the snapshot does not see fails with a serialization failure, as
//! PostgreSQL's first-updater-wins. A fully
//! durable commit applies its changes (and releases its locks) only after its
//! commit record is hardened; a delayed one at once. Because a transaction
//! that reads or overwrites another's change always commits later in log
//! order, hardening it hardens what it depended on.

use crate::database::Database;
use crate::error::{EngineError, Result};
use crate::lock::LockKey;
use crate::mvcc::{Csn, Snapshot};
use crate::savepoint::Savepoints;
use crate::session::Session;
use crate::table::Table;
use crate::types::{Key, Row, Value};
// foldhash rather than std's SipHash: these are made, filled and dropped by
// every transaction, and hashing a key with SipHash cost as much as a
// B-tree step in one-row commits.
use foldhash::{HashMap, HashSet};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use walden_log::Lsn;

mod checks;
mod commit;
pub(crate) mod ddl;
mod enums;
mod fold;
mod ordered;
mod read;
mod ri;
mod roles;
mod savepoints;
mod schemas;
mod spill;
mod upsert;
mod view;
mod views;
mod write;
pub(crate) use ddl::Revert;
pub use ri::RefPath;
pub use upsert::{Arbiters, Upsert};

/// A transaction's isolation level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// A snapshot per statement.
    #[default]
    ReadCommitted,
    /// One snapshot for the transaction; write conflicts fail (40001).
    RepeatableRead,
    /// REPEATABLE READ plus serializable snapshot isolation (`ssi.rs`): a
    /// commit completing a dangerous structure of rw-dependencies fails.
    Serializable,
}

/// How a commit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitOutcome {
    /// End LSN of the commit record (`None` for a read-only transaction).
    pub lsn: Option<Lsn>,
    /// Whether the commit was hardened before it returned.
    pub durable: bool,
}

/// What a transaction's writes to one table were checked against, noted at
/// its first write; the commit fails if the table moved on since.
struct Noted {
    /// The unique indexes (ids) every write to the table was checked
    /// against: a unique index added since fails the commit rather than
    /// let unchecked rows in.
    unique: Vec<u32>,
    /// Its columns and constraints when first written: an ALTER TABLE
    /// since (rows of another shape, a new NOT NULL or CHECK) fails the
    /// commit rather than let rows it never saw in.
    shape: crate::alter::Shape,
    /// The foreign keys (table id, name) on it or referencing it (see
    /// `ri.rs`).
    fks: HashSet<(u32, String)>,
}

pub struct Transaction {
    db: Arc<Database>,
    session: Arc<Session>,
    txid: u64,
    /// Changes by (table id, key); `None` deletes.
    writes: BTreeMap<(u32, Key), Option<Row>>,
    locks: Vec<LockKey>,
    /// `SAVEPOINT`s set and not yet released (see `savepoint.rs`).
    savepoints: Savepoints,
    /// `READ ONLY`: writes and row locks are refused.
    read_only: bool,
    isolation: Isolation,
    /// What reads see; `None` until the first statement (reads outside a
    /// statement see the newest published state).
    snapshot: Option<Snapshot>,
    /// For each table written, what its writes were checked against (see
    /// [`Noted`]); one map, so a transaction's first write to a table
    /// allocates once.
    noted: HashMap<u32, Noted>,
    /// Rows this transaction gave values in a unique index, by (index id,
    /// values): candidates a later write of the same values checks against
    /// the write set (stale ones, after an update or ROLLBACK TO, are
    /// recognized there).
    own_unique: HashMap<(u32, Vec<Value>), Vec<Key>>,
    /// Table locks held (behind a mutex: reads take them through `&self`).
    table_locks: parking_lot::Mutex<ddl::HeldTableLocks>,
    /// DDL statements run, applied to the catalog and undone on rollback.
    ddl: parking_lot::Mutex<Vec<ddl::DdlStep>>,
    /// Keys this transaction deleted and then inserted again: committed as
    /// a new row, not an update of the old one (see
    /// `VersionedRows::mark_replaced`).
    replaced: HashSet<(u32, Key)>,
    /// Estimated memory the write set holds (see `Limits::max_transaction_bytes`).
    write_bytes: u64,
    /// Estimated memory the DDL steps' builds hold (new indexes, rebuilt
    /// tables; see `budget.rs`), counted against the same limit.
    ddl_held: std::sync::atomic::AtomicU64,
    /// Changes made to the write set so far (see [`Transaction::change_mark`]).
    changes: u64,
    /// A table lock came after another transaction's DDL on the table
    /// committed, so the handle the statement had is stale (see
    /// [`Transaction::take_stale_table`]).
    stale_table: std::sync::atomic::AtomicBool,
    /// SERIALIZABLE: its tracked reads, from the first statement.
    ssi: Option<Arc<crate::ssi::SsiTx>>,
    /// Role changes made, with the role lock (see `instance/roles_txn.rs`).
    roles: Option<crate::instance::roles_txn::TxRoles>,
    /// Logging as it goes, past `Limits::spill_transaction_bytes` (see
    /// `txn/spill.rs`): what changed since its last part.
    spill: Option<Box<spill::Spill>>,
    /// Tables whose rows this transaction moved to spill files (see
    /// `txn/spill.rs`, `store/layer.rs`). Behind a lock because a DDL
    /// build (`alter_table`, which takes `&self`) adds one; read without
    /// locking (`get_mut`) where the transaction is held mutably.
    layers: parking_lot::Mutex<Vec<spill::TxLayer>>,
    /// Work the SQL layer put off to COMMIT (deferred constraint checks
    /// and `SET CONSTRAINTS` modes), in order; opaque to the engine, cut
    /// back by `ROLLBACK TO` (see [`Transaction::defer`]).
    deferred: Vec<Deferred>,
    /// The SQL layer's state for that work (the `SET CONSTRAINTS` modes),
    /// put back by `ROLLBACK TO` (see [`Transaction::set_deferred_state`]).
    deferred_state: Option<DeferredState>,
    /// Work the SQL layer does after the commit (notifications), in order;
    /// opaque to the engine, cut back by `ROLLBACK TO` (see
    /// [`Transaction::on_commit`]).
    on_commit: parking_lot::Mutex<Vec<Deferred>>,
    finished: bool,
}

/// One entry of a transaction's deferred work (the SQL layer's type).
pub type Deferred = Box<dyn std::any::Any + Send + Sync>;
/// The SQL layer's state of its deferred work (its own type, replaced as
/// a whole on each change so a savepoint can keep the one it saw).
pub type DeferredState = Arc<dyn std::any::Any + Send + Sync>;

/// What a locking read found (see [`Transaction::get_locked`]).
pub enum Locked {
    /// The row's latest version under the lock (`None`: it is gone).
    Row(Option<Row>),
    /// Another transaction holds a conflicting lock and the policy was not to wait.
    Busy,
}

impl Transaction {
    pub(crate) fn new(db: Arc<Database>, session: Arc<Session>) -> Self {
        let txid = db.txns.next_txid.fetch_add(1, Relaxed);
        db.counters.transactions.fetch_add(1, Relaxed);
        session.opened(db.id(), txid);
        Transaction {
            db,
            session,
            txid,
            writes: BTreeMap::new(),
            locks: Vec::new(),
            savepoints: Savepoints::default(),
            read_only: false,
            isolation: Isolation::ReadCommitted,
            snapshot: None,
            noted: HashMap::default(),
            own_unique: HashMap::default(),
            table_locks: Default::default(),
            ddl: Default::default(),
            replaced: HashSet::default(),
            write_bytes: 0,
            ddl_held: Default::default(),
            changes: 0,
            stale_table: Default::default(),
            ssi: None,
            roles: None,
            spill: None,
            layers: parking_lot::Mutex::new(Vec::new()),
            deferred: Vec::new(),
            deferred_state: None,
            on_commit: Default::default(),
            finished: false,
        }
    }

    /// Sets the isolation level (before the first statement).
    pub fn set_isolation(&mut self, level: Isolation) {
        self.isolation = level;
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// A statement starts: READ COMMITTED takes a new snapshot, REPEATABLE
    /// READ keeps the one its first statement took.
    pub fn begin_statement(&mut self) {
        if self.isolation == Isolation::ReadCommitted || self.snapshot.is_none() {
            // Release the old one first: it may be the oldest open.
            self.snapshot = None;
            // SSI registers before the snapshot is taken (see `ssi.rs`).
            if self.isolation == Isolation::Serializable && self.ssi.is_none() {
                self.ssi = Some(self.db.txns.ssi.register(self.txid));
            }
            self.snapshot = Some(self.db.txns.vis.snapshot());
        }
    }

    /// Whether a statement has run (and fixed the snapshot's level).
    pub fn has_snapshot(&self) -> bool {
        self.snapshot.is_some()
    }

    /// The CSN reads see.
    pub fn read_csn(&self) -> Csn {
        match &self.snapshot {
            Some(s) => s.csn(),
            None => self.db.txns.vis.visible(),
        }
    }

    /// REPEATABLE READ: refuses to write (or lock) a key whose newest
    /// committed version the snapshot does not see.
    fn check_conflict(&self, t: &Table, key: &Key) -> Result<()> {
        if self.isolation == Isolation::ReadCommitted {
            return Ok(());
        }
        let Some(snap) = &self.snapshot else {
            return Ok(());
        };
        if self.writes.contains_key(&(t.id(), key.clone())) {
            return Ok(());
        }
        match t.rows.latest(key)? {
            Some((csn, row)) if csn > snap.csn() => {
                Err(EngineError::SerializationFailure(if row.is_some() {
                    "update"
                } else {
                    "delete"
                }))
            }
            _ => Ok(()),
        }
    }

    /// Whether this transaction has changed rows of table `id` (ALTER TABLE
    /// refuses a table its own open transaction wrote: its rows would not
    /// fit the new definition).
    pub fn has_written(&self, id: u32) -> bool {
        self.writes.keys().any(|(t, _)| *t == id)
    }

    pub fn id(&self) -> u64 {
        self.txid
    }

    /// Changes to rows and catalog so far: equal marks before and after a
    /// statement mean it changed nothing.
    pub fn change_mark(&self) -> (u64, usize) {
        (self.changes, self.ddl_steps())
    }

    /// Whether a table lock since the last call found the table changed by
    /// another transaction's DDL that committed while this one waited (the
    /// statement failed with 40001). READ COMMITTED then runs the
    /// statement again against the new definition, as PostgreSQL re-reads
    /// a table once it has its lock.
    pub fn take_stale_table(&self) -> bool {
        self.stale_table.swap(false, Relaxed)
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Whether the transaction has written anything.
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty() && !self.has_ddl()
    }

    fn check_open(&self) -> Result<()> {
        if self.finished {
            return Err(EngineError::TransactionFinished);
        }
        Ok(())
    }

    /// `SET TRANSACTION READ ONLY` / `READ WRITE`.
    pub fn set_read_only(&mut self, on: bool) {
        self.read_only = on;
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }
}
