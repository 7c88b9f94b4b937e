//! `pg_stat_activity` (PostgreSQL 15's columns) and SQL Server's
//! `sys.dm_exec_sessions` / `sys.dm_exec_requests`, one row per live
//! session, from what each session records of itself (engine
//! `Session::activity`: who, where from, the statement and its state) and
//! the lock tables (what it waits for). Also `pg_cancel_backend` and
//! `pg_terminate_backend`.
//!
//! As in PostgreSQL, a role that is neither a superuser nor the session's
//! own sees another role's sessions without their statement
//! (`<insufficient privilege>`), state or client.

use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::Env;
use std::time::{SystemTime, UNIX_EPOCH};
use walden_engine::{ActivityState, DataType as T, RequestMode, Session, Value};

pub fn pg_stat_activity_columns() -> Vec<(&'static str, T)> {
    vec![
        ("datid", T::Oid),
        ("datname", T::Text),
        ("pid", T::Int),
        ("leader_pid", T::Int),
        ("usesysid", T::Oid),
        ("usename", T::Text),
        ("application_name", T::Text),
        ("client_addr", T::Text),
        ("client_hostname", T::Text),
        ("client_port", T::Int),
        ("backend_start", T::TimestampTz),
        ("xact_start", T::TimestampTz),
        ("query_start", T::TimestampTz),
        ("state_change", T::TimestampTz),
        ("wait_event_type", T::Text),
        ("wait_event", T::Text),
        ("state", T::Text),
        ("backend_xid", T::Text),
        ("backend_xmin", T::Text),
        ("query_id", T::BigInt),
        ("query", T::Text),
        ("backend_type", T::Text),
    ]
}

pub fn exec_sessions_columns() -> Vec<(&'static str, T)> {
    let text = T::Varchar(None);
    vec![
        ("session_id", T::SmallInt),
        ("login_time", T::Timestamp),
        ("program_name", text.clone()),
        ("database_id", T::Int),
        ("host_name", text.clone()),
        ("host_process_id", T::Int),
        ("client_interface_name", text.clone()),
        ("login_name", text.clone()),
        ("status", text),
        ("last_request_start_time", T::Timestamp),
        ("is_user_process", T::Bool),
        ("open_transaction_count", T::Int),
    ]
}

pub fn exec_requests_columns() -> Vec<(&'static str, T)> {
    let text = T::Varchar(None);
    vec![
        ("session_id", T::SmallInt),
        ("request_id", T::Int),
        ("start_time", T::Timestamp),
        ("status", text.clone()),
        ("command", text.clone()),
        ("database_id", T::Int),
        ("blocking_session_id", T::SmallInt),
        ("wait_type", text.clone()),
        ("wait_time", T::Int),
        ("open_transaction_count", T::Int),
        // Not SQL Server's (it has sql_handle and dm_exec_sql_text): the
        // statement's text, which is what the usual join fetches.
        ("text", text),
    ]
}

fn micros(t: Option<SystemTime>) -> Option<i64> {
    t.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_micros() as i64)
}

fn tz(t: Option<SystemTime>) -> Value {
    micros(t).map_or(Value::Null, Value::TimestampTz)
}

fn ts(t: Option<SystemTime>) -> Value {
    micros(t).map_or(Value::Null, Value::Timestamp)
}

fn opt_text(s: Option<String>) -> Value {
    s.map_or(Value::Null, Value::text)
}

/// What a session waits for: PostgreSQL's (wait_event_type, wait_event),
/// and since when.
fn wait_of(env: &Env<'_>, s: &Session) -> Option<(&'static str, &'static str, SystemTime)> {
    let open = s.open_transactions();
    for db in env.instance.databases() {
        for r in db.lock_requests() {
            if r.granted || !open.contains(&(db.id(), r.txid)) {
                continue;
            }
            let event = match r.mode {
                RequestMode::Row(_) => "transactionid",
                RequestMode::Table(_) => "relation",
            };
            return Some(("Lock", event, r.wait_start.unwrap_or(UNIX_EPOCH)));
        }
    }
    env.info
        .advisory
        .requests()
        .into_iter()
        .find_map(|(_, sid, waiting)| match waiting {
            Some(w) if sid == s.id => Some(("Lock", "advisory", w)),
            _ => None,
        })
}

fn sessions(env: &Env<'_>) -> Vec<std::sync::Arc<Session>> {
    let mut all = env.instance.sessions();
    all.sort_by_key(|s| s.id);
    all
}

/// Whether the session's role may see `other`'s statement and state.
fn may_see(env: &Env<'_>, other_role: u32) -> bool {
    other_role == env.info.role || env.instance.roles().is_superuser(env.info.role)
}

pub fn pg_stat_activity_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for s in sessions(env) {
        let a = s.activity();
        let seen = may_see(env, a.role);
        let idle = a.state != ActivityState::Active;
        let wait = if idle {
            Some(("Client", "ClientRead"))
        } else {
            wait_of(env, &s).map(|(ty, ev, _)| (ty, ev))
        };
        let secret = |v: Value| if seen { v } else { Value::Null };
        out.push(vec![
            Value::Int(a.database_id as i64),
            Value::text(&a.database),
            Value::Int(s.id as i64),
            Value::Null,
            Value::Int(a.role as i64),
            Value::text(&a.user),
            Value::text(s.program_name()),
            secret(opt_text(
                a.client.map(|c| c.ip().to_canonical().to_string()),
            )),
            Value::Null,
            // A session without a client address (in-process) shows -1, as
            // PostgreSQL's over a Unix socket.
            secret(Value::Int(a.client.map_or(-1, |c| c.port() as i64))),
            secret(tz(Some(s.login_time))),
            secret(tz(a.xact_start)),
            secret(tz(a.query_start)),
            secret(tz(a.state_change)),
            secret(opt_text(wait.map(|w| w.0.to_string()))),
            secret(opt_text(wait.map(|w| w.1.to_string()))),
            secret(Value::text(a.state.name())),
            Value::Null,
            Value::Null,
            Value::Null,
            if seen {
                Value::text(&a.query)
            } else {
                Value::text("<insufficient privilege>")
            },
            Value::text("client backend"),
        ]);
    }
    out
}

/// SQL Server's session status: running, or sleeping between requests.
fn tsql_status(state: ActivityState) -> &'static str {
    if state == ActivityState::Active {
        "running"
    } else {
        "sleeping"
    }
}

pub fn exec_sessions_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    sessions(env)
        .into_iter()
        .map(|s| {
            let a = s.activity();
            vec![
                Value::Int(s.id as i64),
                ts(Some(s.login_time)),
                Value::text(s.program_name()),
                Value::Int(a.database_id as i64),
                opt_text(a.client.map(|c| c.ip().to_canonical().to_string())),
                Value::Null,
                Value::text(if a.client.is_some() {
                    "PostgreSQL wire protocol"
                } else {
                    "in-process"
                }),
                Value::text(&a.user),
                Value::text(tsql_status(a.state)),
                ts(a.query_start),
                Value::Bool(true),
                Value::Int(s.open_transactions().len() as i64),
            ]
        })
        .collect()
}

/// One row per session running a statement, as SQL Server lists requests.
pub fn exec_requests_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    let blockers = |sid: u32| {
        crate::compat::locks_view::blocking_pids(env, sid as i64)
            .first()
            .map_or(0, |b| *b as i64)
    };
    let mut out = Vec::new();
    for s in sessions(env) {
        let a = s.activity();
        if a.state != ActivityState::Active {
            continue;
        }
        let wait = wait_of(env, &s);
        let command = a
            .query
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        out.push(vec![
            Value::Int(s.id as i64),
            Value::Int(0),
            ts(a.query_start),
            Value::text(if wait.is_some() {
                "suspended"
            } else {
                "running"
            }),
            Value::text(command),
            Value::Int(a.database_id as i64),
            Value::Int(blockers(s.id)),
            opt_text(wait.map(|w| {
                match w.1 {
                    "transactionid" | "relation" => "LCK_M_X",
                    _ => "LCK_M_X_APP",
                }
                .to_string()
            })),
            Value::Int(wait.map_or(0, |w| {
                SystemTime::now()
                    .duration_since(w.2)
                    .map_or(0, |d| d.as_millis() as i64)
            })),
            Value::Int(s.open_transactions().len() as i64),
            if may_see(env, a.role) {
                Value::text(&a.query)
            } else {
                Value::Null
            },
        ]);
    }
    out
}

/// `pg_cancel_backend(pid)` (`terminate`: `pg_terminate_backend`): true
/// when the session exists and was signalled; false for a pid that is no session's. Signalling another role's session takes a
/// superuser, as in PostgreSQL (or membership, which Walden leaves to
/// superusers).
pub fn signal_backend(env: &Env<'_>, pid: &Value, terminate: bool) -> Result<Value> {
    let Some(pid) = pid.as_i64() else {
        return Ok(Value::Null);
    };
    let Some(s) = env
        .instance
        .sessions()
        .into_iter()
        .find(|s| s.id as i64 == pid)
    else {
        // PostgreSQL also warns "PID n is not a PostgreSQL server
        // process"; functions here have no way to raise a warning.
        return Ok(Value::Bool(false));
    };
    let a = s.activity();
    let roles = env.instance.roles();
    if !roles.is_superuser(env.info.role) {
        if roles.is_superuser(a.role) {
            return Err(SqlError::new(
                ErrorKind::InsufficientPrivilege,
                format!(
                    "must be a superuser to {} superuser query",
                    if terminate { "terminate" } else { "cancel" }
                ),
            ));
        }
        if a.role != env.info.role {
            return Err(SqlError::new(
                ErrorKind::InsufficientPrivilege,
                format!(
                    "must be a member of the role whose {} or member of pg_signal_backend",
                    if terminate {
                        "process is being terminated"
                    } else {
                        "query is being canceled"
                    }
                ),
            ));
        }
    }
    if terminate {
        s.terminate();
    } else if a.state == ActivityState::Active {
        s.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(Value::Bool(true))
}
