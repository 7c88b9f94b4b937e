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
        walden_sql::WarningKind::NoTransactionBlock => "25P01",
    }
}

/// The SQLSTATE of an error kind.
pub fn sqlstate(kind: ErrorKind) -> &'static str {
    kind.sqlstate()
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
