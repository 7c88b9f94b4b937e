use walden_log::LogError;

/// Errors of the engine. The wire server maps them to SQLSTATEs; nothing
/// below it knows about SQLSTATE.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Log(#[from] LogError),
    /// The commit record reached the log buffer, then the log failed before
    /// it was known to be hardened: recovery may or may not replay it.
    #[error(
        "the outcome of this commit is unknown: its commit record (LSN {lsn}) was written to \
         the log buffer, then the log failed ({source}); after a restart, check whether it was applied"
    )]
    CommitOutcomeUnknown {
        lsn: u64,
        #[source]
        source: LogError,
    },
    /// The commit is in the log, but reading the rows it replaces failed;
    /// the database refuses writes until a restart applies it.
    #[error(
        "the commit at LSN {lsn} is in the log but could not be applied ({source}); the \
         database refuses writes until it is restarted, and recovery then applies the commit"
    )]
    ApplyFailed {
        lsn: u64,
        #[source]
        source: Box<EngineError>,
    },
    /// The base store (redb) failed or found its file damaged.
    #[error("data store {path}: {source}")]
    Store {
        path: std::path::PathBuf,
        #[source]
        source: Box<redb::Error>,
    },
    #[error("I/O error on {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("database \"{0}\" does not exist")]
    UnknownDatabase(String),
    #[error("database \"{0}\" already exists")]
    DatabaseExists(String),
    #[error("relation \"{0}\" does not exist")]
    UnknownTable(String),
    #[error("relation \"{0}\" already exists")]
    TableExists(String),
    #[error("sequence \"{0}\" does not exist")]
    UnknownSequence(String),
    #[error("sequence \"{0}\" already exists")]
    SequenceExists(String),
    /// `nextval` past a bound of a sequence without CYCLE (2200H).
    #[error("nextval: reached {which} value of sequence \"{name}\" ({limit})")]
    SequenceExhausted {
        name: String,
        /// "maximum" or "minimum".
        which: &'static str,
        limit: i64,
    },
    /// `setval` outside the sequence's bounds (22003).
    #[error("setval: value {value} is out of bounds for sequence \"{name}\" ({min}..{max})")]
    SequenceOutOfBounds {
        name: String,
        value: i64,
        min: i64,
        max: i64,
    },
    /// A sequence definition PostgreSQL refuses (22023), in its words.
    #[error("{0}")]
    SequenceDefinition(String),
    /// `currval` of a sequence this session has not drawn from, or
    /// `lastval` before any `nextval` (55000).
    #[error("{0}")]
    SequenceValueUndefined(String),
    /// A row that needs a column's expression DEFAULT where the SQL layer
    /// did not evaluate it (0A000).
    #[error("the DEFAULT expression of column \"{0}\" is not supported in this statement")]
    DefaultNotEvaluated(String),
    #[error("column \"{column}\" of relation \"{table}\" does not exist")]
    UnknownColumn { table: String, column: String },
    #[error("duplicate key value violates unique constraint \"{}\"", .0.constraint)]
    DuplicateKey(Box<KeyConflict>),
    #[error("could not create unique index \"{}\"", .0.constraint)]
    UniqueBuildFailed(Box<KeyConflict>),
    #[error("relation \"{0}\" already exists")]
    RelationExists(String),
    #[error("index \"{0}\" does not exist")]
    UnknownIndex(String),
    #[error("{}", not_null_message(table, column, row.is_some()))]
    NotNull {
        table: String,
        column: String,
        /// The row refused, as PostgreSQL's DETAIL lists it ("null, x");
        /// `None` when existing rows are checked (ALTER TABLE).
        row: Option<String>,
    },
    #[error("{0}")]
    Data(String),
    /// Text that is not JSON (22P02); the detail says where, as PostgreSQL's.
    #[error("invalid input syntax for type json")]
    InvalidJson { detail: String },
    /// `\u0000` in jsonb input (22P05): text cannot hold it.
    #[error("unsupported Unicode escape sequence")]
    JsonUnicodeNul,
    /// A jsonb container or string cast to a number or boolean (22023).
    #[error("cannot cast jsonb {kind} to type {target}")]
    JsonbCast { kind: &'static str, target: String },
    #[error("value out of range for {0}")]
    OutOfRange(String),
    /// Date/time text PostgreSQL refuses; the kind decides the SQLSTATE.
    #[error("{message}")]
    DatetimeInput {
        kind: DatetimeErrorKind,
        message: String,
    },
    /// A value with more digits left of the point than a numeric(p,s)
    /// holds (22003), PostgreSQL's message; `detail` says the limit.
    #[error("numeric field overflow")]
    NumericFieldOverflow { detail: String },
    /// A numeric operation or cast PostgreSQL refuses (its SQLSTATE is
    /// the variant's).
    #[error(transparent)]
    Numeric(#[from] crate::types::NumericError),
    /// A numeric value or operation Walden does not support (0A000).
    #[error("{0}")]
    NumericUnsupported(String),
    /// Float text beyond the type's range (22003), PostgreSQL's message.
    #[error("\"{text}\" is out of range for type {ty}")]
    FloatOutOfRange { text: String, ty: String },
    /// Bad hex digits in bytea input (22023), PostgreSQL's message.
    #[error("{0}")]
    InvalidHex(String),
    #[error("type \"{0}\" does not exist")]
    UnknownType(String),
    #[error("type \"{0}\" already exists")]
    TypeExists(String),
    #[error("enum label \"{0}\" already exists")]
    EnumLabelExists(String),
    /// ADD VALUE BEFORE/AFTER or RENAME VALUE naming no label (22023).
    #[error("\"{0}\" is not an existing enum label")]
    UnknownEnumLabel(String),
    /// An empty label or one over 63 bytes (22023).
    #[error("invalid enum label \"{label}\"")]
    InvalidEnumLabel { label: String },
    /// ADD VALUE between two labels whose gap was split until no position
    /// lies inside it (0A000: positions are never renumbered).
    #[error("ALTER TYPE {0} ADD VALUE into a gap between labels split more than about 50 times is not supported")]
    EnumOrderExhausted(String),
    /// DROP TYPE (without CASCADE) of a type columns use (2BP01).
    #[error("cannot drop type {name} because other objects depend on it")]
    TypeInUse {
        name: String,
        /// The columns, as (table, column, whether of the array type).
        by: Vec<(String, String, bool)>,
    },
    /// Array input that is not an array literal (22P02).
    #[error("malformed array literal: \"{text}\"")]
    MalformedArray { text: String, detail: String },
    /// An array form Walden does not have (0A000): several dimensions,
    /// explicit bounds.
    #[error("{0} are not supported")]
    ArrayUnsupported(&'static str),
    /// An array past PostgreSQL's limits: six dimensions, 134,217,727
    /// elements (54000).
    #[error("{0}")]
    ArrayLimit(String),
    /// Array bounds that contradict each other (2202E).
    #[error("{0}")]
    ArraySubscript(String),
    #[error("deadlock detected: transaction {victim} was chosen as the victim ({detail})")]
    Deadlock { victim: u64, detail: String },
    #[error("lock request timed out after {0} ms")]
    LockTimeout(u64),
    #[error("canceling statement due to user request (while waiting for a row lock)")]
    Cancelled,
    /// A write or row lock in a `READ ONLY` transaction (25006).
    #[error("cannot execute {0} in a read-only transaction")]
    ReadOnlyTransaction(String),
    /// `NOWAIT` found the row locked (55P03).
    #[error("could not obtain lock on row in relation \"{0}\"")]
    LockNotAvailable(String),
    /// `LOCK TABLE ... NOWAIT` found the table locked (55P03).
    #[error("could not obtain lock on relation \"{0}\"")]
    TableLockNotAvailable(String),
    /// A change of a table's definition after the same transaction wrote
    /// rows of it (0A000): its pending rows have the old shape.
    #[error("{what} of \"{table}\" after this transaction changed its rows is not supported")]
    DdlAfterWrite { what: String, table: String },
    /// A DDL statement that would replace or drop a table after this
    /// transaction moved its new rows to a spill file (0A000; see
    /// `txn/spill.rs`).
    #[error("changing or dropping table \"{0}\" after this transaction moved its rows out of memory (past the spill bound) is not supported: commit the rows first")]
    DdlAfterSpill(String),
    /// REPEATABLE READ: the row was changed (or deleted) by a transaction
    /// that committed after this one's snapshot.
    #[error("could not serialize access due to concurrent {0}")]
    SerializationFailure(&'static str),
    /// SERIALIZABLE: the commit would complete a cycle of rw-dependencies
    /// among concurrent transactions (40001).
    #[error("could not serialize access due to read/write dependencies among transactions")]
    SerializationConflict,
    #[error("savepoint \"{0}\" does not exist")]
    UnknownSavepoint(String),
    /// A row without the row it references (23503), found when a foreign
    /// key is added to a table holding it.
    #[error("insert or update on table \"{}\" violates foreign key constraint \"{}\"", .0.table, .0.constraint)]
    ForeignKeyViolation(Box<FkViolation>),
    /// DROP TABLE of a table a foreign key of another table references
    /// (2BP01) without CASCADE.
    #[error("cannot drop {kind} {table} because other objects depend on it")]
    Referenced {
        /// "table" or "index".
        kind: &'static str,
        table: String,
        /// The foreign keys, as (constraint, referencing table).
        by: Vec<(String, String)>,
    },
    /// ALTER TABLE that would move or retype columns a foreign key names by
    /// position (0A000 until foreign keys follow such changes).
    #[error("ALTER TABLE that drops or changes the type of columns of \"{0}\", which has or is referenced by foreign keys, is not supported")]
    AlterForeignKeyColumns(String),
    /// A write reached a partitioned table's own storage, which holds no
    /// rows (the SQL layer routes rows to its partitions; a path that does
    /// not is refused rather than storing rows no read would see).
    #[error("{0} writing directly into partitioned table \"{1}\" is not supported")]
    PartitionedWrite(&'static str, String),
    #[error("constraint \"{constraint}\" of relation \"{table}\" does not exist")]
    UnknownConstraint { table: String, constraint: String },
    #[error("row not found in \"{0}\"")]
    RowNotFound(String),
    #[error("the transaction is already finished")]
    TransactionFinished,
    #[error("invalid definition: {0}")]
    InvalidDefinition(String),
    #[error("{0}")]
    Backup(String),
    #[error("the data file {path} is damaged: {detail}")]
    CorruptDataFile {
        path: std::path::PathBuf,
        detail: String,
    },
    /// The data directory has content but no catalog: never taken for new.
    #[error(
        "refusing to start: the data directory {dir} holds files ({found}) but no instance.json; \
         restore instance.json (a new instance needs an empty or missing directory)"
    )]
    CatalogMissing {
        dir: std::path::PathBuf,
        found: String,
    },
    /// A database directory and the catalog disagree.
    #[error("refusing to start: database directory {dir} does not match instance.json: {detail}")]
    DirectoryMismatch {
        dir: std::path::PathBuf,
        detail: String,
    },
    /// A directory Walden did not create is in the way; it is never deleted.
    #[error("{dir} already exists and was not created by this instance; move it away first")]
    DirectoryExists { dir: std::path::PathBuf },
    /// A value over the maximum value size (SQLSTATE 54000).
    #[error("value of {size} bytes exceeds the maximum value size of {max} bytes")]
    ValueTooLarge { size: u64, max: u64 },
    /// A row whose log record would exceed the maximum record size (54000).
    #[error("row of {size} bytes exceeds the maximum row size of {max} bytes")]
    RowTooLarge { size: u64, max: u64 },
    /// A transaction's changes passed `Limits::max_transaction_bytes` (53200).
    #[error(
        "out of memory: the transaction's changes exceed transaction_memory_limit_mb ({} MB); \
         commit in smaller transactions or raise the limit",
        max >> 20
    )]
    TransactionTooLarge { max: u64 },
    /// A DDL statement's build (index entries, a rebuilt table) would take
    /// its transaction past `Limits::max_transaction_bytes` (53200).
    #[error(
        "out of memory: building this would take the transaction past \
         transaction_memory_limit_mb ({} MB), and it is held until a checkpoint writes it out; \
         raise the limit in walden.toml for the build",
        max >> 20
    )]
    BuildTooLarge { max: u64 },
    #[error("database \"{0}\" is in use and cannot be dropped")]
    DatabaseInUse(String),
    #[error("the instance is closed")]
    Closed,
    #[error(
        "database \"{0}\" is a secondary replica and is read-only; connect to the primary to write"
    )]
    ReadOnlyReplica(String),
    #[error("{0}")]
    ReplicaCommit(String),
    #[error("{0}")]
    ReplicaQuorum(String),
    #[error("replication: {0}")]
    Replica(String),
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

pub(crate) fn io_err(
    path: impl Into<std::path::PathBuf>,
) -> impl FnOnce(std::io::Error) -> EngineError {
    let path = path.into();
    move |source| EngineError::Io { path, source }
}

/// A foreign key violated: the referencing table, the constraint and
/// PostgreSQL's DETAIL.
#[derive(Debug)]
pub struct FkViolation {
    pub table: String,
    pub constraint: String,
    pub detail: String,
}

/// Two rows with one value in a unique index (or primary key).
#[derive(Debug)]
pub struct KeyConflict {
    pub table: String,
    /// The constraint's or index's name.
    pub constraint: String,
    /// `(a, b)`, as PostgreSQL's DETAIL names the columns.
    pub columns: String,
    /// `1, x`, as PostgreSQL's DETAIL gives the values.
    pub key: String,
}

/// Why date/time text was refused (each has its own SQLSTATE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatetimeErrorKind {
    /// Not a date/time at all (22007).
    Format,
    /// A field or the value out of range (22008).
    FieldOverflow,
    /// An interval field out of range (22015).
    IntervalFieldOverflow,
    /// A numeric zone beyond +-15:59:59 (22009).
    ZoneDisplacement,
    /// A zone name the time zone database does not hold (22023).
    UnknownZone,
}

/// PostgreSQL's words: a row refused, or a column's existing rows found
/// holding NULLs (ALTER TABLE).
fn not_null_message(table: &str, column: &str, row: bool) -> String {
    if row {
        format!("null value in column \"{column}\" of relation \"{table}\" violates not-null constraint")
    } else {
        format!("column \"{column}\" of relation \"{table}\" contains null values")
    }
}
