use walden_engine::EngineError;

/// What kind of error a statement hit. The wire server maps each kind to a
/// SQLSTATE; nothing in this crate knows SQLSTATE codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Syntax,
    /// XX001: the data file holds something it should not.
    DataCorrupted,
    UndefinedTable,
    UndefinedColumn,
    UndefinedFunction,
    UndefinedObject,
    UndefinedDatabase,
    DuplicateTable,
    DuplicateObject,
    /// 42701
    DuplicateColumn,
    /// 42P16
    InvalidTableDefinition,
    DuplicateDatabase,
    DuplicateSchema,
    AmbiguousColumn,
    GroupingError,
    UniqueViolation,
    NotNullViolation,
    DataException,
    NumericOutOfRange,
    /// A date/time result outside its type's range (22008).
    DatetimeOverflow,
    /// An interval field out of range (22015).
    IntervalFieldOverflow,
    /// Text that is not a date/time value (22007).
    InvalidDatetimeFormat,
    /// A numeric zone offset beyond +-15:59:59 (22009).
    InvalidTimeZoneDisplacement,
    DivisionByZero,
    InvalidText,
    StringTooLong,
    Deadlock,
    LockTimeout,
    InFailedTransaction,
    NoActiveTransaction,
    ActiveTransaction,
    FeatureNotSupported,
    Cancelled,
    ReadOnly,
    ObjectInUse,
    /// SET of a parameter fixed at server start (55P02).
    CantChangeParameter,
    DiskFull,
    Io,
    Internal,
    CardinalityViolation,
    InvalidParameter,
    /// A LIKE escape that is not one character, or a pattern ending
    /// in it (22025).
    InvalidEscapeSequence,
    /// A regular expression that does not compile (2201B).
    InvalidRegex,
    /// power()'s undefined cases (2201F).
    InvalidArgumentForPower,
    /// 2201E.
    InvalidArgumentForLog,
    /// width_bucket's invalid arguments (2201G).
    InvalidArgumentForWidthBucket,
    /// The object is not in a state that allows the operation (55000).
    PrerequisiteState,
    /// A commit's outcome is not known to be what the client asked (40003):
    /// hardened on the primary but not confirmed by required secondaries.
    CompletionUnknown,
    /// A statement nested deeper than Walden evaluates (54001).
    StackDepth,
    /// A value, record or statement over a documented size limit (54000).
    ProgramLimit,
    /// Array subscripts or dimensions that do not fit (2202E).
    ArraySubscript,
    /// The commit record was written but the log failed before it was known
    /// to be hardened (08007, transaction_resolution_unknown).
    TransactionResolutionUnknown,
    /// A byte sequence the database encoding cannot hold (22021): a NUL.
    CharacterNotInRepertoire,
    /// No schema to create in, or a schema that does not exist (3F000).
    InvalidSchemaName,
    /// Not allowed for this user or outside a configured place (42501).
    InsufficientPrivilege,
    /// `ROLLBACK TO` / `RELEASE` of a savepoint that is not set (3B001).
    InvalidSavepoint,
    /// 42P05: PREPARE of a name already taken.
    DuplicatePreparedStatement,
    /// 26000: EXECUTE or DEALLOCATE of a name nothing was prepared as.
    UndefinedPreparedStatement,
    /// A CHECK constraint failed (23514).
    CheckViolation,
    /// `nextval` past a bound of a sequence without CYCLE (2200H).
    SequenceLimitExceeded,
    /// An expression of the wrong type where a type is required (42804).
    DatatypeMismatch,
    /// A value of a type with no implicit cast to the type required
    /// (42846): a UNION branch PostgreSQL cannot convert.
    CannotCoerce,
    /// A table name or alias given twice in one FROM (42712).
    DuplicateAlias,
    /// An object of the wrong kind for the clause (42809): FILTER on a
    /// function that is not an aggregate.
    WrongObjectType,
    /// An error a T-SQL batch raised itself: THROW, RAISERROR (P0001).
    RaiseException,
    /// A PL/pgSQL function's body ended without RETURN (2F005).
    FunctionNoReturn,
    /// A function definition that cannot be (42P13).
    InvalidFunctionDefinition,
    /// More key columns than an index may have (54011).
    TooManyColumns,
    /// More arguments than a call may have (54023).
    TooManyArguments,
    /// A FOREIGN KEY constraint failed (23503).
    ForeignKeyViolation,
    /// A FOREIGN KEY that cannot be declared: no unique key referenced,
    /// column counts differ (42830).
    InvalidForeignKey,
    /// A login refused: no such role, or one without LOGIN (28000).
    InvalidAuthorization,
    /// A role still owns objects or holds privileges (2BP01).
    DependentObjects,
    /// A GRANT that cannot be (0LP01).
    InvalidGrantOperation,
    /// A name reserved for the system (42939).
    ReservedName,
    /// More connections than a role's CONNECTION LIMIT (53300).
    TooManyConnections,
    /// A statement over its memory budget (53200).
    OutOfMemory,
    /// REPEATABLE READ write conflict (40001).
    SerializationFailure,
    /// A Unicode escape the database cannot hold (22P05): `\u0000` in jsonb.
    UntranslatableCharacter,
    /// FETCH, MOVE or CLOSE of a cursor that does not exist (34000).
    UndefinedCursor,
    /// DECLARE of a name already in use (42P03).
    DuplicateCursor,
    /// Malformed COPY data in the binary format (22P04).
    BadCopyFormat,
    /// A value whose binary form has the wrong size (22P03).
    BadBinaryValue,
    /// An ON CONFLICT target no unique constraint matches (42P10).
    InvalidColumnReference,
    /// A window function or window clause where none may be (42P20).
    WindowingError,
    /// ntile's bucket count not above zero (22014).
    InvalidNtileArgument,
    /// A NULL row count in FETCH FIRST ... WITH TIES (2201W).
    InvalidRowCount,
    /// A negative length given to substring (22011).
    SubstringError,
    /// nth_value's position not above zero (22016).
    InvalidNthValueArgument,
    /// A negative window frame offset (22013).
    InvalidFrameOffset,
    /// A NULL where the clause needs a value: a frame offset (22004).
    NullValueNotAllowed,
    /// An operator or function call more than one candidate fits (42725).
    AmbiguousFunction,
    /// A value given for a `GENERATED ALWAYS` identity column (428C9).
    GeneratedAlways,
    /// The server's configuration file has an error (F0000).
    ConfigFileError,
    /// A definition that cannot stand (42P17): a view reading itself.
    InvalidObjectDefinition,
    /// A recursive query that cannot be one (42P19): a data-modifying
    /// statement reading itself.
    InvalidRecursion,
    /// A function of the same name and argument types exists (42723).
    DuplicateFunction,
    /// PL/pgSQL: `SELECT INTO STRICT` found no row (P0002).
    NoDataFound,
    /// PL/pgSQL: `INTO` got more than one row (P0003).
    TooManyRows,
    /// PL/pgSQL: `ASSERT` failed (P0004).
    AssertFailure,
    /// PL/pgSQL: a CASE statement without ELSE matched nothing (20000).
    CaseNotFound,
}

/// The optional fields of an error that drivers read apart from the message
/// (ErrorResponse fields 'D', 't', 'c', 'n').
impl ErrorKind {
    /// PostgreSQL's SQLSTATE for this kind of error.
    pub fn sqlstate(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "42601",
            ErrorKind::UndefinedTable => "42P01",
            ErrorKind::UndefinedColumn => "42703",
            ErrorKind::UndefinedFunction => "42883",
            ErrorKind::UndefinedObject => "42704",
            ErrorKind::UndefinedDatabase => "3D000",
            ErrorKind::DuplicateTable => "42P07",
            ErrorKind::DuplicateObject => "42710",
            ErrorKind::DuplicateColumn => "42701",
            ErrorKind::InvalidTableDefinition => "42P16",
            ErrorKind::DuplicateDatabase => "42P04",
            ErrorKind::DuplicateSchema => "42P06",
            ErrorKind::AmbiguousColumn => "42702",
            ErrorKind::AmbiguousFunction => "42725",
            ErrorKind::GroupingError => "42803",
            ErrorKind::UniqueViolation => "23505",
            ErrorKind::NotNullViolation => "23502",
            ErrorKind::DataException => "22000",
            ErrorKind::NumericOutOfRange => "22003",
            ErrorKind::DatetimeOverflow => "22008",
            ErrorKind::IntervalFieldOverflow => "22015",
            ErrorKind::InvalidDatetimeFormat => "22007",
            ErrorKind::InvalidTimeZoneDisplacement => "22009",
            ErrorKind::DivisionByZero => "22012",
            ErrorKind::InvalidText => "22P02",
            ErrorKind::StringTooLong => "22001",
            ErrorKind::Deadlock => "40P01",
            ErrorKind::SerializationFailure => "40001",
            ErrorKind::UntranslatableCharacter => "22P05",
            ErrorKind::LockTimeout => "55P03",
            ErrorKind::InFailedTransaction => "25P02",
            ErrorKind::NoActiveTransaction => "25P01",
            ErrorKind::ActiveTransaction => "25001",
            ErrorKind::FeatureNotSupported => "0A000",
            ErrorKind::Cancelled => "57014",
            ErrorKind::ReadOnly => "25006",
            ErrorKind::PrerequisiteState => "55000",
            ErrorKind::GeneratedAlways => "428C9",
            ErrorKind::ConfigFileError => "F0000",
            ErrorKind::CompletionUnknown => "40003",
            ErrorKind::ObjectInUse => "55006",
            ErrorKind::CantChangeParameter => "55P02",
            ErrorKind::DiskFull => "53100",
            ErrorKind::Io => "58030",
            ErrorKind::DataCorrupted => "XX001",
            ErrorKind::Internal => "XX000",
            ErrorKind::CardinalityViolation => "21000",
            ErrorKind::InvalidParameter => "22023",
            ErrorKind::InvalidEscapeSequence => "22025",
            ErrorKind::InvalidRegex => "2201B",
            ErrorKind::InvalidArgumentForPower => "2201F",
            ErrorKind::InvalidArgumentForLog => "2201E",
            ErrorKind::InvalidArgumentForWidthBucket => "2201G",
            ErrorKind::StackDepth => "54001",
            ErrorKind::ProgramLimit => "54000",
            ErrorKind::ArraySubscript => "2202E",
            ErrorKind::TransactionResolutionUnknown => "08007",
            ErrorKind::CharacterNotInRepertoire => "22021",
            ErrorKind::InsufficientPrivilege => "42501",
            ErrorKind::InvalidSchemaName => "3F000",
            ErrorKind::InvalidSavepoint => "3B001",
            ErrorKind::DuplicatePreparedStatement => "42P05",
            ErrorKind::UndefinedPreparedStatement => "26000",
            ErrorKind::CheckViolation => "23514",
            ErrorKind::SequenceLimitExceeded => "2200H",
            ErrorKind::ForeignKeyViolation => "23503",
            ErrorKind::InvalidForeignKey => "42830",
            ErrorKind::DatatypeMismatch => "42804",
            ErrorKind::CannotCoerce => "42846",
            ErrorKind::DuplicateAlias => "42712",
            ErrorKind::WrongObjectType => "42809",
            ErrorKind::InvalidObjectDefinition => "42P17",
            ErrorKind::InvalidRecursion => "42P19",
            ErrorKind::RaiseException => "P0001",
            ErrorKind::FunctionNoReturn => "2F005",
            ErrorKind::InvalidFunctionDefinition => "42P13",
            ErrorKind::TooManyColumns => "54011",
            ErrorKind::TooManyArguments => "54023",
            ErrorKind::InvalidAuthorization => "28000",
            ErrorKind::DependentObjects => "2BP01",
            ErrorKind::InvalidGrantOperation => "0LP01",
            ErrorKind::ReservedName => "42939",
            ErrorKind::TooManyConnections => "53300",
            ErrorKind::OutOfMemory => "53200",
            ErrorKind::UndefinedCursor => "34000",
            ErrorKind::DuplicateCursor => "42P03",
            ErrorKind::BadCopyFormat => "22P04",
            ErrorKind::BadBinaryValue => "22P03",
            ErrorKind::InvalidColumnReference => "42P10",
            ErrorKind::WindowingError => "42P20",
            ErrorKind::InvalidNtileArgument => "22014",
            ErrorKind::InvalidRowCount => "2201W",
            ErrorKind::SubstringError => "22011",
            ErrorKind::InvalidNthValueArgument => "22016",
            ErrorKind::InvalidFrameOffset => "22013",
            ErrorKind::NullValueNotAllowed => "22004",
            ErrorKind::DuplicateFunction => "42723",
            ErrorKind::NoDataFound => "P0002",
            ErrorKind::TooManyRows => "P0003",
            ErrorKind::AssertFailure => "P0004",
            ErrorKind::CaseNotFound => "20000",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorFields {
    /// A SQLSTATE of the error's own (PL/pgSQL `RAISE ... USING ERRCODE`),
    /// in place of its kind's.
    pub sqlstate: Option<String>,
    pub detail: Option<String>,
    pub table: Option<String>,
    pub column: Option<String>,
    pub constraint: Option<String>,
    /// A hint ('H').
    pub hint: Option<String>,
    /// Where in the query string the error is, in characters from 1 ('P').
    pub position: Option<u32>,
    /// What was being done, e.g. `COPY t, line 3` ('W').
    pub context: Option<String>,
}

/// An error of one statement, with a message that names the problem.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct SqlError {
    pub kind: ErrorKind,
    pub message: String,
    /// Detail, table, column and constraint, when the error has them.
    pub fields: Option<Box<ErrorFields>>,
}

pub type Result<T, E = SqlError> = std::result::Result<T, E>;

impl SqlError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        SqlError {
            kind,
            message: message.into(),
            fields: None,
        }
    }
    pub fn syntax(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Syntax, message)
    }
    pub fn unsupported(what: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorKind::FeatureNotSupported,
            format!("{what} is not supported"),
        )
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// The same error with another message (fields kept).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }
    /// Moves a position found in a part of the query string by the
    /// characters before that part.
    pub fn shift_position(mut self, before: &str) -> Self {
        if let Some(p) = self.fields.as_mut().and_then(|f| f.position.as_mut()) {
            *p += before.chars().count() as u32;
        }
        self
    }
    pub fn with_fields(mut self, fields: ErrorFields) -> Self {
        self.fields = Some(Box::new(fields));
        self
    }
}

impl From<walden_engine::types::NumericError> for SqlError {
    fn from(e: walden_engine::types::NumericError) -> Self {
        SqlError::from(EngineError::Numeric(e))
    }
}

impl From<EngineError> for SqlError {
    fn from(e: EngineError) -> Self {
        use EngineError as E;
        let kind = match &e {
            E::UnknownDatabase(_) => ErrorKind::UndefinedDatabase,
            E::DatabaseExists(_) => ErrorKind::DuplicateDatabase,
            E::UnknownTable(_) => ErrorKind::UndefinedTable,
            E::TableExists(_) => ErrorKind::DuplicateTable,
            E::UnknownSequence(_) => ErrorKind::UndefinedTable,
            E::SequenceExists(_) => ErrorKind::DuplicateTable,
            E::SequenceExhausted { .. } => ErrorKind::SequenceLimitExceeded,
            E::SequenceOutOfBounds { .. } => ErrorKind::NumericOutOfRange,
            E::SequenceDefinition(_) => ErrorKind::InvalidParameter,
            E::SequenceValueUndefined(_) => ErrorKind::PrerequisiteState,
            E::DefaultNotEvaluated(_) => ErrorKind::FeatureNotSupported,
            E::UnknownColumn { .. } => ErrorKind::UndefinedColumn,
            E::DuplicateKey(_) | E::UniqueBuildFailed(_) => ErrorKind::UniqueViolation,
            E::RelationExists(_) => ErrorKind::DuplicateTable,
            E::UnknownIndex(_) => ErrorKind::UndefinedObject,
            E::NotNull { .. } => ErrorKind::NotNullViolation,
            E::Data(m) if m.contains("too long") => ErrorKind::StringTooLong,
            E::Data(m) if m.contains("invalid input") => ErrorKind::InvalidText,
            E::Data(_) => ErrorKind::DataException,
            E::InvalidJson { .. } | E::MalformedArray { .. } => ErrorKind::InvalidText,
            E::DatetimeInput { kind, .. } => match kind {
                walden_engine::DatetimeErrorKind::Format => ErrorKind::InvalidDatetimeFormat,
                walden_engine::DatetimeErrorKind::FieldOverflow => ErrorKind::DatetimeOverflow,
                walden_engine::DatetimeErrorKind::IntervalFieldOverflow => {
                    ErrorKind::IntervalFieldOverflow
                }
                walden_engine::DatetimeErrorKind::ZoneDisplacement => {
                    ErrorKind::InvalidTimeZoneDisplacement
                }
                walden_engine::DatetimeErrorKind::UnknownZone => ErrorKind::InvalidParameter,
            },
            E::ArrayUnsupported(_) | E::NumericUnsupported(_) => ErrorKind::FeatureNotSupported,
            E::ArrayLimit(_) => ErrorKind::ProgramLimit,
            E::ArraySubscript(_) => ErrorKind::ArraySubscript,
            E::Numeric(n) => {
                use walden_engine::types::NumericError as N;
                match n {
                    N::Overflow | N::IntegerRange(_) => ErrorKind::NumericOutOfRange,
                    N::DivisionByZero => ErrorKind::DivisionByZero,
                    N::NegativeSqrt => ErrorKind::InvalidArgumentForPower,
                    N::LogZero | N::LogNegative => ErrorKind::InvalidArgumentForLog,
                    N::NaNTo(_) | N::InfinityTo(_) => ErrorKind::FeatureNotSupported,
                }
            }
            E::JsonUnicodeNul => ErrorKind::UntranslatableCharacter,
            E::JsonbCast { .. } | E::InvalidHex(_) => ErrorKind::InvalidParameter,
            E::OutOfRange(_) | E::NumericFieldOverflow { .. } | E::FloatOutOfRange { .. } => {
                ErrorKind::NumericOutOfRange
            }
            E::UnknownType(_) => ErrorKind::UndefinedObject,
            E::TypeExists(_) | E::EnumLabelExists(_) => ErrorKind::DuplicateObject,
            E::UnknownEnumLabel(_) | E::InvalidEnumLabel { .. } => ErrorKind::InvalidParameter,
            E::EnumOrderExhausted(_) => ErrorKind::FeatureNotSupported,
            E::TypeInUse { .. } => ErrorKind::DependentObjects,
            E::Deadlock { .. } => ErrorKind::Deadlock,
            E::LockTimeout(_) => ErrorKind::LockTimeout,
            E::Cancelled => ErrorKind::Cancelled,
            E::RowNotFound(_) => ErrorKind::DataException,
            E::TransactionFinished => ErrorKind::NoActiveTransaction,
            E::InvalidDefinition(_) => ErrorKind::InvalidParameter,
            E::Backup(_) => ErrorKind::InvalidParameter,
            E::DatabaseInUse(_) => ErrorKind::ObjectInUse,
            E::CommitOutcomeUnknown { .. } => ErrorKind::TransactionResolutionUnknown,
            E::Log(walden_log::LogError::Poisoned(_)) => ErrorKind::Io,
            E::ValueTooLarge { .. }
            | E::RowTooLarge { .. }
            | E::Log(walden_log::LogError::RecordTooLarge { .. }) => ErrorKind::ProgramLimit,
            E::TransactionTooLarge { .. } | E::BuildTooLarge { .. } => ErrorKind::OutOfMemory,
            E::DirectoryExists { .. } => ErrorKind::DuplicateDatabase,
            E::CatalogMissing { .. } | E::DirectoryMismatch { .. } => ErrorKind::Io,
            E::CorruptDataFile { .. } => ErrorKind::DataCorrupted,
            E::Log(_) | E::Io { .. } | E::Store { .. } | E::ApplyFailed { .. } => ErrorKind::Io,
            E::Closed => ErrorKind::Internal,
            E::ReadOnlyReplica(_) => ErrorKind::ReadOnly,
            E::ReplicaQuorum(_) => ErrorKind::PrerequisiteState,
            E::ReplicaCommit(_) => ErrorKind::CompletionUnknown,
            E::Replica(_) => ErrorKind::PrerequisiteState,
            E::ReadOnlyTransaction(_) => ErrorKind::ReadOnly,
            E::LockNotAvailable(_) | E::TableLockNotAvailable(_) => ErrorKind::LockTimeout,
            E::DdlAfterWrite { .. } => ErrorKind::FeatureNotSupported,
            E::DdlAfterSpill(_) => ErrorKind::FeatureNotSupported,
            E::UnknownSavepoint(_) => ErrorKind::InvalidSavepoint,
            E::ForeignKeyViolation(_) => ErrorKind::ForeignKeyViolation,
            E::Referenced { .. } => ErrorKind::DependentObjects,
            E::AlterForeignKeyColumns(_) | E::PartitionedWrite(..) => {
                ErrorKind::FeatureNotSupported
            }
            E::UnknownConstraint { .. } => ErrorKind::UndefinedObject,
            E::SerializationFailure(_) | E::SerializationConflict => {
                ErrorKind::SerializationFailure
            }
        };
        let message = match &e {
            E::UnknownTable(t) => format!("relation \"{t}\" does not exist"),
            other => other.to_string(),
        };
        let fields = match &e {
            E::NotNull { table, column, row } => Some(Box::new(ErrorFields {
                detail: row.as_ref().map(|r| format!("Failing row contains ({r}).")),
                table: Some(table.clone()),
                column: Some(column.clone()),
                ..Default::default()
            })),
            E::InvalidJson { detail } | E::MalformedArray { detail, .. } => {
                Some(Box::new(ErrorFields {
                    detail: Some(detail.clone()),
                    ..Default::default()
                }))
            }
            E::NumericFieldOverflow { detail } => Some(Box::new(ErrorFields {
                detail: Some(detail.clone()),
                ..Default::default()
            })),
            E::JsonUnicodeNul => Some(Box::new(ErrorFields {
                detail: Some("\\u0000 cannot be converted to text.".into()),
                ..Default::default()
            })),
            E::DuplicateKey(k) | E::UniqueBuildFailed(k) => Some(Box::new(ErrorFields {
                detail: Some(format!(
                    "Key {}=({}) {}.",
                    k.columns,
                    k.key,
                    if matches!(e, E::DuplicateKey(_)) {
                        "already exists"
                    } else {
                        "is duplicated"
                    }
                )),
                table: Some(k.table.clone()),
                constraint: Some(k.constraint.clone()),
                ..Default::default()
            })),
            E::ForeignKeyViolation(v) => Some(Box::new(ErrorFields {
                detail: Some(v.detail.clone()),
                table: Some(v.table.clone()),
                constraint: Some(v.constraint.clone()),
                ..Default::default()
            })),
            E::TypeInUse { name, by } => Some(Box::new(ErrorFields {
                detail: Some(
                    by.iter()
                        .map(|(t, c, array)| {
                            let brackets = if *array { "[]" } else { "" };
                            format!("column {c} of table {t} depends on type {name}{brackets}")
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                hint: Some("Use DROP ... CASCADE to drop the dependent objects too.".into()),
                ..Default::default()
            })),
            E::Referenced { kind, table, by } => Some(Box::new(ErrorFields {
                detail: Some(
                    by.iter()
                        .map(|(c, t)| {
                            format!("constraint {c} on table {t} depends on {kind} {table}")
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                ..Default::default()
            })),
            _ => None,
        };
        SqlError {
            kind,
            message,
            fields,
        }
    }
}
