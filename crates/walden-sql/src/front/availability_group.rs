//! Availability-group statements (T-SQL forms):
//!
//! ```sql
//! CREATE AVAILABILITY GROUP ag1
//!   [WITH (REQUIRED_SYNCHRONIZED_SECONDARIES_TO_COMMIT = 1)]
//!   FOR DATABASE walden [, other]
//!   REPLICA ON 'a' WITH (ENDPOINT_URL = 'tcp://10.0.0.1:5022', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT),
//!              'b' WITH (ENDPOINT_URL = 'tcp://10.0.0.2:5022', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT,
//!                        SESSION_TIMEOUT = 10),
//!              'c' WITH (ENDPOINT_URL = 'tcp://10.0.0.3:5022', AVAILABILITY_MODE = ASYNCHRONOUS_COMMIT,
//!                        MAX_LAG_BYTES = 1048576, MAX_LAG_MS = 500);   -- Walden's own
//! ALTER AVAILABILITY GROUP ag1 FAILOVER;                          -- on the target secondary
//! ALTER AVAILABILITY GROUP ag1 FORCE_FAILOVER_ALLOW_DATA_LOSS;
//! ALTER AVAILABILITY GROUP ag1 RESEED 'b';                        -- on the primary (Walden's own)
//! DROP AVAILABILITY GROUP ag1;
//! ```
//! Other SQL Server options (FAILOVER_MODE, SEEDING_MODE, SECONDARY_ROLE, ...)
//! are accepted and ignored: seeding is always automatic and secondaries
//! always readable.

use super::{Command, Toks};
use crate::error::{Result, SqlError};
use sqlparser::tokenizer::Token;
use walden_replication::{AgDef, AvailabilityMode, ReplicaDef};

/// Default `SESSION_TIMEOUT`, in seconds, as SQL Server's.
const DEFAULT_SESSION_TIMEOUT_S: u64 = 10;

/// After `CREATE|ALTER|DROP AVAILABILITY GROUP`.
pub(crate) fn parse(verb: &str, t: &mut Toks) -> Result<Command> {
    let name = t.ident()?;
    match verb {
        "DROP" => {
            t.end("DROP AVAILABILITY GROUP")?;
            Ok(Command::DropAvailabilityGroup(name))
        }
        "ALTER" => {
            if t.eat("RESEED") {
                t.eat("REPLICA");
                let replica = t.ident()?;
                t.end("ALTER AVAILABILITY GROUP ... RESEED")?;
                return Ok(Command::AvailabilityGroupReseed { name, replica });
            }
            let force = if t.eat("FAILOVER") {
                false
            } else if t.eat("FORCE_FAILOVER_ALLOW_DATA_LOSS") {
                true
            } else {
                return Err(SqlError::unsupported(
                    "this ALTER AVAILABILITY GROUP form (only FAILOVER, FORCE_FAILOVER_ALLOW_DATA_LOSS and RESEED 'replica')",
                ));
            };
            t.end("ALTER AVAILABILITY GROUP")?;
            Ok(Command::AvailabilityGroupFailover { name, force })
        }
        _ => create(name, t),
    }
}

fn create(name: String, t: &mut Toks) -> Result<Command> {
    let mut required = 0u32;
    if t.eat("WITH") {
        // Other group options (AUTOMATED_BACKUP_PREFERENCE, DB_FAILOVER, ...)
        // are accepted.
        for (k, v) in options(t)? {
            if k == "REQUIRED_SYNCHRONIZED_SECONDARIES_TO_COMMIT" {
                required = v.parse().map_err(|_| {
                    SqlError::syntax(format!(
                        "REQUIRED_SYNCHRONIZED_SECONDARIES_TO_COMMIT must be a number, not {v}"
                    ))
                })?;
            }
        }
    }
    if !(t.eat("FOR") && t.eat("DATABASE")) {
        return Err(SqlError::syntax(
            "syntax error: expected FOR DATABASE name[, ...] in CREATE AVAILABILITY GROUP",
        ));
    }
    let mut databases = vec![t.ident()?];
    while t.eat_tok(&Token::Comma) {
        databases.push(t.ident()?);
    }
    if !(t.eat("REPLICA") && t.eat("ON")) {
        return Err(SqlError::syntax(
            "syntax error: expected REPLICA ON 'name' WITH (...) in CREATE AVAILABILITY GROUP",
        ));
    }
    let mut replicas = Vec::new();
    let mut timeout_s = DEFAULT_SESSION_TIMEOUT_S;
    loop {
        let rname = t.ident()?;
        if !t.eat("WITH") {
            return Err(SqlError::syntax(format!(
                "syntax error: expected WITH (ENDPOINT_URL = ..., AVAILABILITY_MODE = ...) after REPLICA ON '{rname}'"
            )));
        }
        let mut url = None;
        let mut mode = None;
        let mut max_lag_bytes = None;
        let mut max_lag_ms = None;
        for (k, v) in options(t)? {
            match k.as_str() {
                "ENDPOINT_URL" => url = Some(v),
                "AVAILABILITY_MODE" => {
                    mode = Some(AvailabilityMode::parse(&v).ok_or_else(|| {
                        SqlError::syntax(format!(
                            "AVAILABILITY_MODE must be SYNCHRONOUS_COMMIT or ASYNCHRONOUS_COMMIT, not {v}"
                        ))
                    })?)
                }
                "SESSION_TIMEOUT" => {
                    timeout_s = v.parse().ok().filter(|s| *s >= 1).ok_or_else(|| {
                        SqlError::syntax(format!(
                            "SESSION_TIMEOUT must be a number of seconds (at least 1), not {v}"
                        ))
                    })?
                }
                "MAX_LAG_BYTES" => max_lag_bytes = Some(lag_option(&k, &v)?),
                "MAX_LAG_MS" => max_lag_ms = Some(lag_option(&k, &v)?),
                _ => {} // FAILOVER_MODE, SEEDING_MODE, ... : accepted
            }
        }
        let endpoint_url = url.ok_or_else(|| {
            SqlError::syntax(format!(
                "REPLICA ON '{rname}' needs ENDPOINT_URL = 'tcp://host:port'"
            ))
        })?;
        let mode = mode.ok_or_else(|| {
            SqlError::syntax(format!(
                "REPLICA ON '{rname}' needs AVAILABILITY_MODE = SYNCHRONOUS_COMMIT | ASYNCHRONOUS_COMMIT"
            ))
        })?;
        if mode == AvailabilityMode::SynchronousCommit
            && (max_lag_bytes.is_some() || max_lag_ms.is_some())
        {
            return Err(SqlError::unsupported(format!(
                "MAX_LAG_BYTES and MAX_LAG_MS on the SYNCHRONOUS_COMMIT replica '{rname}' (a lag bound applies to ASYNCHRONOUS_COMMIT replicas; a synchronous one never lags an acknowledged commit)"
            )));
        }
        replicas.push(ReplicaDef {
            name: rname,
            endpoint_url,
            mode,
            max_lag_bytes,
            max_lag_ms,
        });
        if !t.eat_tok(&Token::Comma) {
            break;
        }
    }
    t.end("CREATE AVAILABILITY GROUP")?;
    Ok(Command::CreateAvailabilityGroup(Box::new(AgDef {
        name,
        databases,
        replicas,
        session_timeout_ms: timeout_s * 1000,
        required_synchronized_secondaries_to_commit: required,
    })))
}

/// `MAX_LAG_BYTES` / `MAX_LAG_MS`: a whole number, at least 1.
fn lag_option(k: &str, v: &str) -> Result<u64> {
    v.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
        SqlError::syntax(format!(
            "{k} must be a whole number of {} (at least 1), not {v}",
            if k == "MAX_LAG_MS" {
                "milliseconds"
            } else {
                "bytes"
            }
        ))
    })
}

/// `( KEY = value [, ...] )`, where a value may itself be `( ... )` (kept as text).
fn options(t: &mut Toks) -> Result<Vec<(String, String)>> {
    if !t.eat_tok(&Token::LParen) {
        return Err(SqlError::syntax("syntax error: expected ( after WITH"));
    }
    let mut out = Vec::new();
    loop {
        let k = t.ident()?.to_ascii_uppercase();
        // `KEY = value`, or `KEY ( ... )` as in SECONDARY_ROLE (ALLOW_CONNECTIONS = ALL).
        let eq = t.eat_tok(&Token::Eq);
        let v = if t.eat_tok(&Token::LParen) {
            let mut depth = 1;
            let mut s = String::new();
            while depth > 0 {
                match t.next() {
                    Some(Token::LParen) => depth += 1,
                    Some(Token::RParen) => depth -= 1,
                    Some(x) => s.push_str(&x.to_string()),
                    None => return Err(SqlError::syntax("syntax error: unbalanced parentheses")),
                }
            }
            s
        } else if eq {
            t.value()?
        } else {
            return Err(SqlError::syntax(format!(
                "syntax error: expected = after {k}"
            )));
        };
        out.push((k, v));
        if t.eat_tok(&Token::Comma) {
            continue;
        }
        if t.eat_tok(&Token::RParen) {
            return Ok(out);
        }
        return Err(SqlError::syntax(
            "syntax error: expected , or ) in WITH (...)",
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::front::{parse, Command};
    use walden_replication::AvailabilityMode;

    #[test]
    fn create_availability_group_parses_the_t_sql_form() {
        let c = parse(
            "CREATE AVAILABILITY GROUP ag1 WITH (REQUIRED_SYNCHRONIZED_SECONDARIES_TO_COMMIT = 1, DB_FAILOVER = ON) \
             FOR DATABASE walden, other \
             REPLICA ON 'a' WITH (ENDPOINT_URL = 'tcp://10.0.0.1:5022', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, FAILOVER_MODE = MANUAL), \
                        'b' WITH (ENDPOINT_URL = 'tcp://10.0.0.2:5022', AVAILABILITY_MODE = ASYNCHRONOUS_COMMIT, SESSION_TIMEOUT = 3, \
                                  SECONDARY_ROLE (ALLOW_CONNECTIONS = ALL))",
        )
        .unwrap();
        let Command::CreateAvailabilityGroup(d) = c else {
            panic!("{c:?}")
        };
        assert_eq!(d.name, "ag1");
        assert_eq!(d.databases, ["walden", "other"]);
        assert_eq!(d.required_synchronized_secondaries_to_commit, 1);
        assert_eq!(d.session_timeout_ms, 3000);
        assert_eq!(d.replicas.len(), 2);
        assert_eq!(d.replicas[1].mode, AvailabilityMode::AsynchronousCommit);
        assert_eq!(d.replicas[0].address().unwrap(), "10.0.0.1:5022");
        assert_eq!(d.replicas[1].lag_bound(), None);
    }

    #[test]
    fn a_bounded_lag_asynchronous_replica_parses_and_bad_bounds_are_refused() {
        let ok = "CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden \
             REPLICA ON 'a' WITH (ENDPOINT_URL = 'tcp://h:1', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT), \
                        'c' WITH (ENDPOINT_URL = 'tcp://h:2', AVAILABILITY_MODE = ASYNCHRONOUS_COMMIT, MAX_LAG_BYTES = 65536, MAX_LAG_MS = 250)";
        let Command::CreateAvailabilityGroup(d) = parse(ok).unwrap() else {
            panic!()
        };
        let b = d.replicas[1].lag_bound().unwrap();
        assert_eq!((b.bytes, b.ms), (Some(65536), Some(250)));
        assert_eq!(d.replicas[0].lag_bound(), None);
        let e = parse(&ok.replace("MAX_LAG_MS = 250", "MAX_LAG_MS = soon")).unwrap_err();
        assert!(e.message.contains("MAX_LAG_MS must be"), "{e}");
        let e = parse(&ok.replace("MAX_LAG_BYTES = 65536", "MAX_LAG_BYTES = 0")).unwrap_err();
        assert!(e.message.contains("MAX_LAG_BYTES must be"), "{e}");
        let e = parse(&ok.replace("= ASYNCHRONOUS_COMMIT", "= SYNCHRONOUS_COMMIT")).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::FeatureNotSupported, "{e}");
    }

    #[test]
    fn availability_group_errors_name_the_problem() {
        let e = parse("CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON 'a' WITH (AVAILABILITY_MODE = SYNCHRONOUS_COMMIT)").unwrap_err();
        assert!(e.message.contains("ENDPOINT_URL"), "{e}");
        let e = parse("CREATE AVAILABILITY GROUP ag1 FOR DATABASE walden REPLICA ON 'a' WITH (ENDPOINT_URL = 'tcp://h:1', AVAILABILITY_MODE = SOMETIMES)").unwrap_err();
        assert!(
            e.message
                .contains("SYNCHRONOUS_COMMIT or ASYNCHRONOUS_COMMIT"),
            "{e}"
        );
        let e = parse("ALTER AVAILABILITY GROUP ag1 REMOVE DATABASE walden").unwrap_err();
        assert!(e.message.contains("FAILOVER"), "{e}");
        assert!(matches!(
            parse("ALTER AVAILABILITY GROUP ag1 FORCE_FAILOVER_ALLOW_DATA_LOSS").unwrap(),
            Command::AvailabilityGroupFailover { force: true, .. }
        ));
        assert!(matches!(
            parse("ALTER AVAILABILITY GROUP ag1 RESEED 'b'").unwrap(),
            Command::AvailabilityGroupReseed { .. }
        ));
        assert!(matches!(
            parse("DROP AVAILABILITY GROUP ag1").unwrap(),
            Command::DropAvailabilityGroup(_)
        ));
    }
}
