//! `Command`: what the front end makes of one statement.

use super::*;

/// A statement, either handled by Walden's front end or parsed by sqlparser.
#[derive(Clone, Debug)]
pub enum Command {
    /// BEGIN and the other transaction-control statements (`transaction.rs`).
    Tx(crate::front::transaction::TxCommand),
    /// `COMMIT` / `END`, with `WITH (DELAYED_DURABILITY = ON|OFF)` if given.
    Commit(Option<bool>),
    Rollback,
    /// `PREPARE name [(types)] AS body` (`session/prepare_stmt.rs`).
    Prepare {
        name: String,
        types: Vec<walden_engine::DataType>,
        body: String,
        text: String,
    },
    /// `EXECUTE name [(args)]`: the arguments' SQL texts.
    ExecutePrepared {
        name: String,
        args: Vec<String>,
    },
    /// `SET name = value` / `SET name TO value` / `SET name value`.
    Set(String, String),
    Show(String),
    Use(String),
    FlushLog,
    Checkpoint,
    BackupDatabase {
        name: String,
        path: String,
    },
    BackupLog {
        name: String,
        path: String,
    },
    ClearWaitStats,
    /// `DBCC CHECKDB [(name)] [WITH NO_INFOMSGS]`: reads the data file back.
    CheckDb {
        name: Option<String>,
        quiet: bool,
    },
    /// `DBCC SQLPERF('sys.dm_log_exposure', CLEAR)`: restarts the peak exposure.
    ClearExposurePeaks,
    /// `CREATE AVAILABILITY GROUP ...` (see `availability_group.rs`).
    CreateAvailabilityGroup(Box<walden_replication::AgDef>),
    /// `ALTER AVAILABILITY GROUP name FAILOVER | FORCE_FAILOVER_ALLOW_DATA_LOSS`.
    AvailabilityGroupFailover {
        name: String,
        force: bool,
    },
    DropAvailabilityGroup(String),
    /// `ALTER AVAILABILITY GROUP name RESEED 'replica'`.
    AvailabilityGroupReseed {
        name: String,
        replica: String,
    },
    CreateDatabase(String),
    DropDatabase {
        name: String,
        if_exists: bool,
    },
    /// `ALTER DATABASE name OWNER TO role` (`None`: the current user).
    AlterDatabaseOwner {
        name: String,
        owner: Option<String>,
    },
    /// `ALTER DATABASE name SET option = value`.
    AlterDatabase {
        name: String,
        option: String,
        value: String,
    },
    /// `DELETE TOP (n) ...`: the rest parsed as a DELETE, at most n rows.
    DeleteTop(u64, Box<Statement>),
    /// `CREATE SEQUENCE name [START [WITH] n] [INCREMENT [BY] n] ...` (options in any order).
    CreateSequence {
        /// The qualifier, if the name had one (checked against the path).
        schema: Option<String>,
        name: String,
        if_not_exists: bool,
        options: walden_engine::SequenceOptions,
        /// `OWNED BY table.column`.
        owned_by: Option<(String, String)>,
    },
    /// `ALTER SEQUENCE [IF EXISTS] s ...` (`alter_sequence.rs`).
    AlterSequence {
        if_exists: bool,
        sequence: String,
        change: SequenceChange,
    },
    /// `ALTER TABLE t ALTER c SET GENERATED ... | DROP IDENTITY ...`.
    AlterIdentity(crate::front::alter_table::AlterIdentity),
    /// `ALTER TABLE t ALTER CONSTRAINT c [NOT] DEFERRABLE [INITIALLY ...]`.
    AlterConstraint(crate::front::alter_table::AlterConstraint),
    /// Statements accepted and ignored (`VACUUM`, `SET NOCOUNT ON`, ...).
    Ignored(String),
    /// `ANALYZE [table [(columns)], ...]`, or `VACUUM ANALYZE ...` (`analyze.rs`).
    Analyze {
        vacuum: bool,
        targets: Vec<crate::front::analyze::AnalyzeTarget>,
    },
    /// `SET LOCAL name = value`: until the transaction block ends.
    SetLocal(String, String),
    /// `RESET name` / `RESET ALL` (None).
    Reset(Option<String>),
    /// `DEALLOCATE [PREPARE] name | ALL` (None).
    Deallocate(Option<String>),
    /// `DISCARD ALL`: settings, advisory locks, prepared statements,
    /// cursors, cached plans, temporary tables, sequence state.
    DiscardAll,
    /// `DISCARD TEMP` / `DISCARD TEMPORARY`: drops the session's
    /// temporary tables.
    DiscardTemp,
    /// `DISCARD PLANS`: forgets the session's cached plans.
    DiscardPlans,
    /// `SET CONSTRAINTS { ALL | name, ... } { DEFERRED | IMMEDIATE }`: the
    /// names (none: ALL) and whether DEFERRED (see `dml/deferred.rs`).
    SetConstraints {
        names: Vec<String>,
        deferred: bool,
    },
    /// `DISCARD SEQUENCES`: forgets the session's `currval` / `lastval`.
    DiscardSequences,
    /// `LISTEN channel` (`context/notify.rs`).
    Listen(String),
    /// `UNLISTEN channel`, or `UNLISTEN *` (None).
    Unlisten(Option<String>),
    /// `NOTIFY channel [, 'payload']`.
    Notify {
        channel: String,
        payload: String,
    },
    /// pgbench's catalog probe of `pg_class`/`pg_inherits` for a table.
    PgbenchPartitionProbe(String),
    /// `ALTER TABLE parent ATTACH PARTITION child FOR VALUES ...`, read as
    /// `CREATE TABLE child PARTITION OF parent FOR VALUES ...`.
    AttachPartition(Box<sqlparser::ast::CreateTable>),
    /// `ALTER TABLE parent DETACH PARTITION child` (the same form, its
    /// bound left DEFAULT).
    DetachPartition(Box<sqlparser::ast::CreateTable>),
    /// `DECLARE name ... CURSOR ... FOR query` (see `cursor.rs`).
    Declare(Box<DeclareCursor>),
    /// `FETCH` / `MOVE`.
    Fetch(FetchCursor),
    /// `CLOSE name` / `CLOSE ALL` (None).
    CloseCursor(Option<String>),
    /// CREATE/ALTER/DROP ROLE, GRANT, REVOKE (see `catalog/roles.rs`).
    Access(Box<role::AccessStmt>),
    /// `COMMENT ON CONSTRAINT constraint ON t IS ...`: `stmt` is the
    /// statement as `COMMENT ON TABLE t IS ...` (`catalog/comments.rs`).
    CommentOnConstraint {
        constraint: String,
        stmt: Box<Statement>,
    },
    Sql(Box<Statement>),
}

/// What an `ALTER SEQUENCE` changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SequenceChange {
    pub options: walden_engine::SequenceAlter,
    /// `OWNED BY table.column` (`Some(None)`: `OWNED BY NONE`).
    pub owned_by: Option<Option<(String, String)>>,
    /// `RENAME TO name`.
    pub rename: Option<String>,
}
