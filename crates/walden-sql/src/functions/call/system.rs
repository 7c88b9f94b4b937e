//! The session's and the server's functions: advisory locks, pg_sleep,
//! settings (set_config, current_setting), sequences (nextval, setval),
//! and who and where the session is (version(), DB_NAME, @@SPID, ...).

use super::*;

/// Calls one of the system functions (the dispatcher in `call.rs` sends only those).
pub(super) fn call(f: Func, a: Vec<Value>, env: &Env<'_>) -> Result<Value> {
    let null_in = a.iter().any(|v| v.is_null());
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        Func::AdvisoryUnlockAll => {
            env.info.advisory.unlock_all(env.info.spid);
            Value::text("")
        }
        Func::AdvisoryLock | Func::AdvisoryTryLock | Func::AdvisoryUnlock => {
            if null_in {
                return Ok(Value::Null);
            }
            let key = advisory_key(&a, env.info.database_id)?;
            let locks = &env.info.advisory;
            match f {
                Func::AdvisoryLock => {
                    locks.lock(key, env.info.spid, env.cancel)?;
                    Value::text("")
                }
                Func::AdvisoryTryLock => Value::Bool(locks.try_lock(key, env.info.spid)),
                _ => Value::Bool(locks.unlock(key, env.info.spid)),
            }
        }
        Func::Notify => {
            // Not strict: a NULL channel is the empty one (refused), a NULL
            // payload the empty payload, as PostgreSQL's pg_notify does.
            let text = |v: Value| {
                if v.is_null() {
                    String::new()
                } else {
                    text_arg(&v)
                }
            };
            crate::context::notify::notify(env.tx, &text(arg(0)), &text(arg(1)))?;
            Value::text("")
        }
        Func::NotificationQueueUsage => {
            Value::Float(env.info.notify_hub.usage(env.info.database_id))
        }
        Func::Sleep => {
            if null_in {
                return Ok(Value::Null);
            }
            sleep(&arg(0), env)?;
            Value::text("")
        }
        Func::SetConfig => {
            if a.first().is_none_or(|v| v.is_null()) {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    "SET requires parameter name",
                ));
            }
            let name = text_arg(&arg(0));
            let value = if arg(1).is_null() {
                String::new()
            } else {
                text_arg(&arg(1))
            };
            // is_local: until the transaction block ends (outside one, the
            // statement's own transaction ends at once: no lasting effect).
            if crate::functions::truth(&arg(2))? == Some(true) {
                env.info.settings.set_local(&name, &value)?;
                return Ok(Value::text(value));
            }
            env.info.settings.set(&name, &value)?;
            Value::text(env.info.settings.get(&name).unwrap_or_default())
        }
        Func::NewUuid => Value::Uuid(uuid::Uuid::new_v4().as_u128()),
        Func::Spid => Value::Int(env.info.spid as i64),
        Func::ScopeIdentity | Func::LastIdentity => {
            let log = env
                .info
                .identity
                .lock()
                .map(|l| l.clone())
                .unwrap_or_default();
            match if f == Func::ScopeIdentity {
                log.scope
            } else {
                log.last
            } {
                Some(v) => Value::Decimal(walden_engine::types::Numeric::from(v)),
                None => Value::Null,
            }
        }
        Func::MyTempSchema => {
            let own = env
                .tx
                .database()
                .tables_as(Some(env.tx.id()))
                .iter()
                .any(|t| {
                    crate::types::temp_names::split_temp(t.name())
                        .is_some_and(|(s, _)| s == env.info.spid)
                });
            Value::Int(if own {
                crate::types::oids::temp_namespace_oid(env.info.spid)
            } else {
                0
            })
        }
        Func::IsOtherTempSchema => match arg(0) {
            Value::Int(o) => Value::Bool(
                crate::types::oids::temp_namespace_session(o).is_some_and(|s| s != env.info.spid),
            ),
            _ => Value::Null,
        },
        Func::ReloadConf => {
            if !env.instance.roles().is_superuser(env.info.role) {
                return Err(SqlError::new(
                    ErrorKind::InsufficientPrivilege,
                    "permission denied for function pg_reload_conf",
                ));
            }
            match &env.info.host {
                None => Value::Bool(false),
                Some(h) => {
                    h.reload_config().map_err(|e| {
                        SqlError::new(
                            ErrorKind::ConfigFileError,
                            format!("the configuration was not reloaded: {e}"),
                        )
                    })?;
                    Value::Bool(true)
                }
            }
        }
        Func::Version => Value::text("PostgreSQL 15.0 (Walden 0.1, delayed-durability workbench)"),
        Func::CurrentUser => Value::text(&env.info.user),
        Func::DbName => match a.first() {
            None => Value::text(&env.info.database),
            Some(Value::Null) => Value::Null,
            Some(v) => {
                let id = int_arg(v, "DB_NAME")?;
                env.info
                    .database_ids(env.instance)
                    .iter()
                    .find(|(_, i)| *i as i64 == id)
                    .map(|(n, _)| Value::text(n))
                    .unwrap_or(Value::Null)
            }
        },
        Func::SchemaName => match a.first() {
            // The session's default schema: `dbo` (`public`).
            None => Value::text("dbo"),
            Some(Value::Null) => Value::Null,
            Some(v) => {
                let id = int_arg(v, "SCHEMA_NAME")?;
                match id {
                    1 => Value::text("dbo"),
                    2 => Value::text("guest"),
                    3 => Value::text("INFORMATION_SCHEMA"),
                    4 => Value::text("sys"),
                    _ => env
                        .info
                        .path
                        .namespaces()
                        .schemas
                        .iter()
                        .find(|s| {
                            crate::types::oids::user_oid(s.id, crate::types::oids::SLOT_TABLE) == id
                        })
                        .map_or(Value::Null, |s| Value::text(&s.name)),
                }
            }
        },
        Func::DbId => match a.first() {
            None => Value::Int(env.info.database_id as i64),
            Some(Value::Null) => Value::Null,
            Some(v) => {
                let n = text_arg(v).to_ascii_lowercase();
                env.info
                    .database_ids(env.instance)
                    .iter()
                    .find(|(name, _)| *name == n)
                    .map(|(_, i)| Value::Int(*i as i64))
                    .unwrap_or(Value::Null)
            }
        },
        Func::NextVal => {
            let name = env.info.path.user_relation_text(&text_arg(&arg(0)))?;
            if env.tx.read_only() {
                return Err(crate::front::transaction::read_only_error("nextval()"));
            }
            Value::Int(env.tx.database().nextval(env.tx.session(), &name)?)
        }
        Func::CurrVal => {
            let name = env.info.path.user_relation_text(&text_arg(&arg(0)))?;
            Value::Int(env.tx.database().currval(env.tx.session(), &name)?)
        }
        Func::LastVal => Value::Int(env.tx.database().lastval(env.tx.session())?),
        Func::SetVal => {
            let name = env.info.path.user_relation_text(&text_arg(&arg(0)))?;
            if env.tx.read_only() {
                return Err(crate::front::transaction::read_only_error("setval()"));
            }
            let value = arg(1);
            if value.is_null() {
                return Ok(Value::Null);
            }
            let v = int_arg(&value, "setval")?;
            // setval(seq, v, NULL) is NULL and changes nothing (strict).
            let is_called = match a.get(2) {
                None => true,
                Some(c) => match crate::functions::truth(c)? {
                    Some(b) => b,
                    None => return Ok(Value::Null),
                },
            };
            let db = env.tx.database();
            match env.info.system.identity_of_sequence(env, &name) {
                // An identity column's counter, under its sequence's name.
                Some(tb) => db.set_identity(env.tx.session(), &tb, v, is_called)?,
                None => db.setval(env.tx.session(), &name, v, is_called)?,
            }
            Value::Int(v)
        }
        // The rest are strict: a NULL argument makes the result NULL.
        _ if null_in => Value::Null,
        Func::CurrentSetting => {
            let name = text_arg(&arg(0)).to_ascii_lowercase();
            // current_setting(name, missing_ok): NULL instead of an error.
            let missing_ok = a.len() > 1 && crate::functions::truth(&arg(1))? == Some(true);
            match env.info.settings.get(&name) {
                Some(v) => Value::text(v),
                None if missing_ok => Value::Null,
                None => return Err(crate::context::settings::unrecognized(&name)),
            }
        }
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not one of the system functions"
            )))
        }
    })
}

/// An advisory lock's name from its arguments: one bigint, or two integers.
pub(super) fn advisory_key(a: &[Value], database: u32) -> Result<crate::context::advisory::Key> {
    Ok(match a {
        [k] => (database, int_arg(k, "advisory lock key")?, false),
        [k1, k2] => {
            let half = |v: &Value| -> Result<i64> {
                let n = int_arg(v, "advisory lock key")?;
                i32::try_from(n).map(|n| n as u32 as i64).map_err(|_| {
                    SqlError::new(ErrorKind::NumericOutOfRange, "integer out of range")
                })
            };
            (database, (half(k1)? << 32) | half(k2)?, true)
        }
        _ => return Err(SqlError::syntax("an advisory lock takes one or two keys")),
    })
}

/// pg_sleep: sleeps in short steps so that a cancel request ends it.
pub(super) fn sleep(secs: &Value, env: &Env<'_>) -> Result<()> {
    let secs = match cast(secs.clone(), &DataType::Double)? {
        Value::Float(f) => f,
        _ => 0.0,
    };
    if !secs.is_finite() || secs > 1e7 {
        return Err(SqlError::new(
            ErrorKind::InvalidParameter,
            format!("pg_sleep: {secs} seconds is not a time to sleep"),
        ));
    }
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs.max(0.0));
    loop {
        if env.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SqlError::new(
                ErrorKind::Cancelled,
                "canceling statement due to user request",
            ));
        }
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
    }
}
