//! The one place where Walden's error kinds become PostgreSQL SQLSTATE codes.

use walden_sql::ErrorKind;

/// `too_many_connections`.
pub const TOO_MANY_CONNECTIONS: &str = "53300";
/// `invalid_catalog_name` (unknown database at startup).
pub const INVALID_CATALOG_NAME: &str = "3D000";
/// `admin_shutdown`.
pub const ADMIN_SHUTDOWN: &str = "57P01";
/// `protocol_violation`.
pub const PROTOCOL_VIOLATION: &str = "08P01";
/// `invalid_sql_statement_name` (unknown prepared statement).
pub const INVALID_SQL_STATEMENT_NAME: &str = "26000";
/// `invalid_cursor_name` (unknown portal).
pub const INVALID_CURSOR_NAME: &str = "34000";
/// `duplicate_prepared_statement`.
pub const DUPLICATE_PREPARED_STATEMENT: &str = "42P05";
/// `query_canceled` (COPY FROM STDIN failed by the client).
pub const QUERY_CANCELED: &str = "57014";
/// `idle_in_transaction_session_timeout`.
pub const IDLE_IN_TRANSACTION_SESSION_TIMEOUT: &str = "25P03";
/// `idle_session_timeout`.
pub const IDLE_SESSION_TIMEOUT: &str = "57P05";
/// `out_of_memory`.
pub const OUT_OF_MEMORY: &str = "53200";
/// `internal_error`.
pub const INTERNAL_ERROR: &str = "XX000";
/// A login refused by the host-based rules, or for a certificate.
pub const INVALID_AUTHORIZATION: &str = "28000";

/// The SQLSTATE of a warning.
pub fn warning(kind: walden_sql::WarningKind) -> &'static str {
    match kind {
        walden_sql::WarningKind::PrivilegeNotGranted => "01007",
        walden_sql::WarningKind::PrivilegeNotRevoked => "01006",
    }
}

/// The SQLSTATE of an error kind.
pub fn sqlstate(kind: ErrorKind) -> &'static str {
    use ErrorKind as K;
    match kind {
        K::Syntax => "42601",
        K::UndefinedTable => "42P01",
        K::UndefinedColumn => "42703",
        K::UndefinedFunction => "42883",
        K::UndefinedObject => "42704",
        K::UndefinedDatabase => "3D000",
        K::DuplicateTable => "42P07",
        K::DuplicateObject => "42710",
        K::DuplicateColumn => "42701",
        K::InvalidTableDefinition => "42P16",
        K::DuplicateDatabase => "42P04",
        K::DuplicateSchema => "42P06",
        K::AmbiguousColumn => "42702",
        K::AmbiguousFunction => "42725",
        K::GroupingError => "42803",
        K::UniqueViolation => "23505",
        K::NotNullViolation => "23502",
        K::DataException => "22000",
        K::NumericOutOfRange => "22003",
        K::DatetimeOverflow => "22008",
        K::InvalidDatetimeFormat => "22007",
        K::InvalidTimeZoneDisplacement => "22009",
        K::DivisionByZero => "22012",
        K::InvalidText => "22P02",
        K::StringTooLong => "22001",
        K::Deadlock => "40P01",
        K::SerializationFailure => "40001",
        K::UntranslatableCharacter => "22P05",
        K::LockTimeout => "55P03",
        K::InFailedTransaction => "25P02",
        K::NoActiveTransaction => "25P01",
        K::ActiveTransaction => "25001",
        K::FeatureNotSupported => "0A000",
        K::Cancelled => "57014",
        K::ReadOnly => "25006",
        K::PrerequisiteState => "55000",
        K::GeneratedAlways => "428C9",
        K::ConfigFileError => "F0000",
        K::CompletionUnknown => "40003",
        K::ObjectInUse => "55006",
        K::CantChangeParameter => "55P02",
        K::DiskFull => "53100",
        K::Io => "58030",
        K::DataCorrupted => "XX001",
        K::Internal => "XX000",
        K::CardinalityViolation => "21000",
        K::InvalidParameter => "22023",
        K::InvalidEscapeSequence => "22025",
        K::InvalidRegex => "2201B",
        K::InvalidArgumentForPower => "2201F",
        K::InvalidArgumentForWidthBucket => "2201G",
        K::StackDepth => "54001",
        K::ProgramLimit => "54000",
        K::TransactionResolutionUnknown => "08007",
        K::CharacterNotInRepertoire => "22021",
        K::InsufficientPrivilege => "42501",
        K::InvalidSchemaName => "3F000",
        K::InvalidSavepoint => "3B001",
        K::DuplicatePreparedStatement => DUPLICATE_PREPARED_STATEMENT,
        K::UndefinedPreparedStatement => INVALID_SQL_STATEMENT_NAME,
        K::CheckViolation => "23514",
        K::SequenceLimitExceeded => "2200H",
        K::ForeignKeyViolation => "23503",
        K::InvalidForeignKey => "42830",
        K::DatatypeMismatch => "42804",
        K::CannotCoerce => "42846",
        K::DuplicateAlias => "42712",
        K::WrongObjectType => "42809",
        K::InvalidObjectDefinition => "42P17",
        K::RaiseException => "P0001",
        K::TooManyColumns => "54011",
        K::InvalidAuthorization => "28000",
        K::DependentObjects => "2BP01",
        K::InvalidGrantOperation => "0LP01",
        K::ReservedName => "42939",
        K::TooManyConnections => TOO_MANY_CONNECTIONS,
        K::OutOfMemory => OUT_OF_MEMORY,
        K::UndefinedCursor => INVALID_CURSOR_NAME,
        K::DuplicateCursor => "42P03",
        K::BadCopyFormat => "22P04",
        K::BadBinaryValue => "22P03",
        K::InvalidColumnReference => "42P10",
        K::WindowingError => "42P20",
        K::InvalidNtileArgument => "22014",
        K::InvalidRowCount => "2201W",
        K::SubstringError => "22011",
        K::InvalidNthValueArgument => "22016",
        K::InvalidFrameOffset => "22013",
        K::NullValueNotAllowed => "22004",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sqlstates() {
        for k in [
            ErrorKind::Syntax,
            ErrorKind::UniqueViolation,
            ErrorKind::Cancelled,
            ErrorKind::Internal,
        ] {
            let c = sqlstate(k);
            assert_eq!(c.len(), 5);
            assert!(c
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
        }
        assert_eq!(sqlstate(ErrorKind::InFailedTransaction), "25P02");
        assert_eq!(sqlstate(ErrorKind::TransactionResolutionUnknown), "08007");
        assert_eq!(sqlstate(ErrorKind::StackDepth), "54001");
        // program_limit_exceeded, for values, rows and log records over a limit.
        assert_eq!(sqlstate(ErrorKind::ProgramLimit), "54000");
    }
}
