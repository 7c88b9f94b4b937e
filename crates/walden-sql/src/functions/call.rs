//! Evaluating a scalar function on its arguments.

use super::*;
use walden_engine::RegKind;

/// An advisory lock's name from its arguments: one bigint, or two integers.
pub(super) fn advisory_key(a: &[Value], database: u32) -> Result<crate::advisory::Key> {
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

/// The longest text `lpad` / `rpad` build (PostgreSQL's limit is bytes
/// of a 1 GB value; characters here).
pub(super) const MAX_TEXT_CHARS: usize = 256 << 20;

pub(super) fn text_arg(v: &Value) -> String {
    v.to_string()
}

pub(super) fn int_arg(v: &Value, what: &str) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Reg(_, oid, _) => Ok(*oid as i64),
        Value::Decimal(d) => d
            .to_i64()
            .ok_or_else(|| SqlError::new(ErrorKind::NumericOutOfRange, "integer out of range")),
        Value::Float(f) => Ok(*f as i64),
        Value::Text(s) => s.trim().parse().map_err(|_| {
            SqlError::new(
                ErrorKind::InvalidText,
                format!("invalid integer for {what}: \"{s}\""),
            )
        }),
        other => Err(SqlError::new(
            ErrorKind::DataException,
            format!("{what} must be an integer, not {other}"),
        )),
    }
}
/// Calls a scalar function on evaluated arguments.
pub fn call(f: Func, a: Vec<Value>, env: &Env<'_>) -> Result<Value> {
    let null_in = a.iter().any(|v| v.is_null());
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        Func::Variadic(v) => return call_variadic(v, a, env),
        Func::Json(j) => crate::jsonfn::call(j, a)?,
        Func::Bitwise(op, w) => bitwise::call(op, w, &a)?,
        Func::Now => Value::TimestampTz(env.info.now),
        Func::LocalTimestamp => {
            Value::Timestamp(walden_engine::types::datetime::tz_to_local(env.info.now))
        }
        Func::StatementTimestamp => Value::TimestampTz(env.info.statement_now),
        Func::ClockTimestamp => Value::TimestampTz(now_micros()),
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
            if crate::expr::truth(&arg(2))? == Some(true) {
                env.info.settings.set_local(&name, &value)?;
                return Ok(Value::text(value));
            }
            env.info.settings.set(&name, &value)?;
            Value::text(env.info.settings.get(&name).unwrap_or_default())
        }
        // Names only (PostgreSQL 15 reads digits as a name here too); an
        // unknown name, or one in an unknown schema, is NULL.
        Func::ToReg(kind) => match arg(0) {
            Value::Null => Value::Null,
            v => {
                let name = text_arg(&v);
                let found = match kind {
                    RegKind::Class => crate::pg_catalog::regclass_lookup(env, &name),
                    RegKind::Type => crate::pg_catalog::regtype_lookup(&name),
                    RegKind::Namespace => crate::pg_catalog::regnamespace_lookup(&name),
                };
                let oid = found.ok().and_then(|v| v.as_i64()).or_else(|| {
                    (kind == RegKind::Type)
                        .then(|| crate::pg_catalog::enum_regtype_oid(env, name.trim()))
                        .flatten()
                });
                match oid {
                    Some(oid) => reg_value(env, kind, oid)?,
                    None => Value::Null,
                }
            }
        },
        Func::Today => Value::Date(
            walden_engine::types::datetime::tz_to_local(env.info.now).div_euclid(DAY) as i32,
        ),
        Func::NewUuid => Value::Uuid(uuid::Uuid::new_v4().as_u128()),
        Func::Spid => Value::Int(env.info.spid as i64),
        Func::BlockingPids => match arg(0).as_i64() {
            Some(pid) => Value::Array(
                crate::locks_view::blocking_pids(env, pid)
                    .into_iter()
                    .map(|p| Value::Int(p as i64))
                    .collect(),
            ),
            None => Value::Null,
        },
        Func::Version => Value::text("PostgreSQL 15.0 (Walden 0.1, delayed-durability workbench)"),
        Func::CurrentUser => Value::text(&env.info.user),
        Func::CurrentSchema => env.info.path.current().map_or(Value::Null, Value::text),
        // The path's existing schemas, with pg_catalog first when implicit
        // (an array, in text form).
        Func::CurrentSchemas => match crate::expr::truth(&arg(0))? {
            None => Value::Null,
            Some(implicit) => {
                let path = crate::pg_catalog::search_path_schemas(env, implicit);
                Value::text(crate::pg_catalog::array_format(
                    path.iter().map(|s| Some(*s)),
                ))
            }
        },
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
                return Err(crate::txmodes::read_only_error("nextval()"));
            }
            Value::Int(env.tx.database().nextval(env.tx.session(), &name)?)
        }
        Func::SetVal => {
            let name = env.info.path.user_relation_text(&text_arg(&arg(0)))?;
            if env.tx.read_only() {
                return Err(crate::txmodes::read_only_error("setval()"));
            }
            let value = arg(1);
            if value.is_null() {
                return Ok(Value::Null);
            }
            let v = int_arg(&value, "setval")?;
            // setval(seq, v, NULL) is NULL and changes nothing (strict).
            let is_called = match a.get(2) {
                None => true,
                Some(c) => match crate::expr::truth(c)? {
                    Some(b) => b,
                    None => return Ok(Value::Null),
                },
            };
            let db = env.tx.database();
            let seen = crate::pg_catalog::Seen::of(env);
            match crate::pg_catalog::sequence_relation(&seen, &name) {
                // An identity column's counter, under its sequence's name.
                Some(crate::pg_catalog::SeqRel::Identity(id)) => {
                    let tb = seen.tables().into_iter().find(|t| t.id() == id);
                    let tb = tb
                        .ok_or_else(|| walden_engine::EngineError::UnknownSequence(name.clone()))?;
                    db.set_identity(env.tx.session(), &tb, v, is_called)?
                }
                _ => db.setval(env.tx.session(), &name, v, is_called)?,
            }
            Value::Int(v)
        }
        Func::Coalesce => a.into_iter().find(|v| !v.is_null()).unwrap_or(Value::Null),
        Func::NullIf => {
            if compare(&arg(0), &arg(1))? == Some(Ordering::Equal) {
                Value::Null
            } else {
                arg(0)
            }
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for v in a.into_iter().filter(|v| !v.is_null()) {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = compare(&v, &b)?.unwrap_or(Ordering::Equal);
                        if (f == Func::Greatest) == (o == Ordering::Greater) {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.unwrap_or(Value::Null)
        }
        // format_type(oid, NULL) names the type without a modifier.
        Func::FormatType => match arg(0) {
            Value::Null => Value::Null,
            v => {
                let oid = int_arg(&v, "format_type")?;
                let typmod = match arg(1) {
                    Value::Null => None,
                    m => Some(int_arg(&m, "format_type")?),
                };
                Value::text(
                    crate::pg_catalog::format_type_in(env, oid, typmod)
                        .unwrap_or_else(|| "???".into()),
                )
            }
        },
        Func::ArrayBuild | Func::RowBuild => Value::Array(a.into()),
        Func::RecordField(i) => match arg(0) {
            Value::Array(fields) => fields.get(i as usize).cloned().unwrap_or(Value::Null),
            _ => Value::Null,
        },
        Func::AnyArray(op, all) => {
            // SQL's quantified comparison: a NULL comparison makes an
            // undecided result NULL; an empty array gives ALL true, ANY false.
            let x = arg(0);
            if arg(1).is_null() {
                return Ok(Value::Null);
            }
            let mut saw_null = false;
            for item in crate::arrays::elements(&arg(1)) {
                let r = crate::expr::binary(op, x.clone(), item)?;
                match crate::expr::truth(&r)? {
                    Some(true) if !all => return Ok(Value::Bool(true)),
                    Some(false) if all => return Ok(Value::Bool(false)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bool(all)
            }
        }
        Func::Null => Value::Null,
        Func::ObjDescription => {
            let public = crate::pg_catalog::NS_PUBLIC;
            let catalog = a.get(1).map(text_arg);
            match arg(0) {
                Value::Int(o)
                    if o == public
                        && catalog.as_deref().is_none_or(|c| {
                            c == "pg_namespace" || c == "pg_catalog.pg_namespace"
                        }) =>
                {
                    Value::text(crate::pg_catalog::PUBLIC_COMMENT)
                }
                _ => Value::Null,
            }
        }
        Func::True => Value::Bool(true),
        Func::Privilege(f) => crate::privileges::call(f, &a, env)?,
        Func::False => Value::Bool(false),
        // Not strict: NULL arrays, elements and delimiters mean something.
        Func::ArrayCat => crate::arrays::cat(&arg(0), &arg(1)),
        Func::ArrayAppend => crate::arrays::append(&arg(0), arg(1)),
        Func::ArrayPrepend => crate::arrays::prepend(arg(0), &arg(1)),
        Func::StringToArray => crate::arrays::string_to_array(&arg(0), &arg(1), a.get(2)),
        // Not strict: a NULL null_string is as if omitted.
        Func::ArrayRemove if arg(0).is_null() => Value::Null,
        // Removes the elements equal to the value (NULL removes NULLs).
        Func::ArrayRemove => {
            let x = arg(1);
            let kept: Vec<Value> = crate::arrays::elements(&arg(0))
                .into_iter()
                .filter(|e| match (e.is_null(), x.is_null()) {
                    (true, true) => false,
                    (false, false) => !matches!(compare(e, &x), Ok(Some(Ordering::Equal))),
                    _ => true,
                })
                .collect();
            Value::Array(kept.into())
        }
        Func::ArrayPosition | Func::ArrayPositions if arg(0).is_null() => Value::Null,
        Func::ArrayPosition | Func::ArrayPositions => {
            let start = match a.get(2) {
                None => 1,
                Some(Value::Null) => {
                    return Err(SqlError::new(
                        ErrorKind::NullValueNotAllowed,
                        "initial position must not be null",
                    ))
                }
                Some(v) => int_arg(v, "integer")?,
            };
            let x = arg(1);
            let mut found = crate::arrays::elements(&arg(0))
                .into_iter()
                .enumerate()
                .map(|(k, e)| (k as i64 + 1, e))
                .filter(|(k, e)| {
                    *k >= start
                        && match (e.is_null(), x.is_null()) {
                            (true, true) => true,
                            (false, false) => {
                                matches!(compare(e, &x), Ok(Some(Ordering::Equal)))
                            }
                            _ => false,
                        }
                })
                .map(|(k, _)| Value::Int(k));
            if f == Func::ArrayPosition {
                found.next().unwrap_or(Value::Null)
            } else {
                Value::Array(found.collect::<Vec<_>>().into())
            }
        }
        Func::ArrayToString if arg(0).is_null() || arg(1).is_null() => Value::Null,
        Func::ArrayToString => {
            let sep = text_arg(&arg(1));
            let null_as = a.get(2).filter(|v| !v.is_null()).map(text_arg);
            let parts: Vec<String> = crate::arrays::elements(&arg(0))
                .into_iter()
                .filter_map(|e| {
                    (!e.is_null())
                        .then(|| e.to_string())
                        .or_else(|| null_as.clone())
                })
                .collect();
            Value::text(parts.join(&sep))
        }
        // Only a NULL format string makes the result NULL.
        Func::Format => match arg(0) {
            Value::Null => Value::Null,
            fmt => Value::text(strings::format(&text_arg(&fmt), &a[1..])?),
        },
        // NULL arguments are skipped, only a NULL separator gives NULL.
        Func::ConcatWs => match arg(0) {
            Value::Null => Value::Null,
            sep => Value::text(
                a[1..]
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(&text_arg(&sep)),
            ),
        },
        _ if null_in && f != Func::Concat => Value::Null,
        Func::StrPos => Value::Int(strings::strpos(&text_arg(&arg(0)), &text_arg(&arg(1)))),
        Func::Ascii => Value::Int(strings::ascii(&text_arg(&arg(0)))),
        Func::Chr => Value::text(strings::chr(int_arg(&arg(0), "chr")?)?),
        Func::BitLength => Value::Int(
            8 * match arg(0) {
                Value::Bytes(b) => b.len() as i64,
                v => text_arg(&v).len() as i64,
            },
        ),
        Func::Concat => Value::text(
            a.iter()
                .filter(|v| !v.is_null())
                .map(|v| v.to_string())
                .collect::<String>(),
        ),
        Func::Upper => Value::text(text_arg(&arg(0)).to_uppercase()),
        Func::Lower => Value::text(text_arg(&arg(0)).to_lowercase()),
        Func::Length => Value::Int(match arg(0) {
            Value::Bytes(b) => b.len() as i64,
            v => text_arg(&v).chars().count() as i64,
        }),
        Func::OctetLength => Value::Int(match arg(0) {
            Value::Bytes(b) => b.len() as i64,
            v => text_arg(&v).len() as i64,
        }),
        Func::Repeat => {
            let s = text_arg(&arg(0));
            let n = int_arg(&arg(1), "repeat")?.max(0) as usize;
            if s.len().saturating_mul(n) > MAX_TEXT_CHARS {
                return Err(SqlError::new(
                    ErrorKind::ProgramLimit,
                    "requested length too large",
                ));
            }
            Value::text(s.repeat(n))
        }
        Func::Substring => {
            let s: Vec<char> = text_arg(&arg(0)).chars().collect();
            let start = int_arg(&arg(1), "substring")?;
            let len = if a.len() > 2 {
                Some(int_arg(&arg(2), "substring")?)
            } else {
                None
            };
            let from = (start - 1).max(0) as usize;
            let end = match len {
                Some(l) => (start - 1 + l).max(0) as usize,
                None => s.len(),
            };
            Value::text(
                s.get(from.min(s.len())..end.min(s.len()).max(from.min(s.len())))
                    .unwrap_or(&[])
                    .iter()
                    .collect::<String>(),
            )
        }
        Func::Trim | Func::Ltrim | Func::Rtrim => {
            let s = text_arg(&arg(0));
            // The characters to strip: spaces unless given.
            let chars: Vec<char> = match a.get(1) {
                Some(c) => text_arg(c).chars().collect(),
                None => vec![' '],
            };
            let strip = |c: char| chars.contains(&c);
            Value::text(match f {
                Func::Ltrim => s.trim_start_matches(strip),
                Func::Rtrim => s.trim_end_matches(strip),
                _ => s.trim_matches(strip),
            })
        }
        Func::Replace => {
            Value::text(text_arg(&arg(0)).replace(&text_arg(&arg(1)), &text_arg(&arg(2))))
        }
        Func::Md5 => match arg(0) {
            Value::Null => Value::Null,
            Value::Bytes(b) => Value::text(format!("{:x}", md5::compute(&b[..]))),
            v => Value::text(format!("{:x}", md5::compute(text_arg(&v).as_bytes()))),
        },
        Func::Lpad | Func::Rpad => {
            if null_in {
                return Ok(Value::Null);
            }
            let s: Vec<char> = text_arg(&arg(0)).chars().collect();
            let n = int_arg(&arg(1), "length")?.max(0) as usize;
            if n > MAX_TEXT_CHARS {
                return Err(SqlError::new(
                    ErrorKind::ProgramLimit,
                    "requested length too large",
                ));
            }
            let fill: Vec<char> = match a.get(2) {
                Some(v) => text_arg(v).chars().collect(),
                None => vec![' '],
            };
            // Longer strings are cut to the length; an empty fill pads nothing.
            if s.len() >= n || fill.is_empty() {
                Value::text(s[..n.min(s.len())].iter().collect::<String>())
            } else {
                let pad = fill.iter().cycle().take(n - s.len());
                Value::text(if f == Func::Lpad {
                    pad.chain(s.iter()).collect::<String>()
                } else {
                    s.iter().chain(pad).collect::<String>()
                })
            }
        }
        // User objects (OIDs from 16384, as PostgreSQL's) are all in
        // public; the catalogs' are found through pg_catalog.
        Func::IsVisible => match arg(0) {
            Value::Null => Value::Null,
            v => Value::Bool(int_arg(&v, "oid")? < 16384 || env.info.path.finds_user_objects()),
        },
        Func::Left | Func::Right => {
            let s: Vec<char> = text_arg(&arg(0)).chars().collect();
            let n = (int_arg(&arg(1), "length")?.max(0) as usize).min(s.len());
            Value::text(if f == Func::Left {
                s[..n].iter().collect::<String>()
            } else {
                s[s.len() - n..].iter().collect()
            })
        }
        Func::Abs => match arg(0) {
            Value::Int(i) => Value::Int(i.checked_abs().ok_or_else(|| {
                SqlError::new(ErrorKind::NumericOutOfRange, "integer out of range")
            })?),
            Value::Float(x) => Value::Float(x.abs()),
            Value::Decimal(d) => Value::Decimal(d.abs()),
            v => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function abs({v}) does not exist"),
                ))
            }
        },
        Func::Round => {
            let places = if a.len() > 1 {
                int_arg(&arg(1), "round")?
            } else {
                0
            };
            match arg(0) {
                Value::Int(i) => Value::Int(i),
                Value::Float(x) => {
                    let m = 10f64.powi(places as i32);
                    Value::Float((x * m).round() / m)
                }
                Value::Decimal(d) => Value::Decimal(d.round_dp_with_strategy(
                    places.max(0) as u32,
                    rust_decimal::RoundingStrategy::MidpointAwayFromZero,
                )),
                v => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedFunction,
                        format!("function round({v}) does not exist"),
                    ))
                }
            }
        }
        Func::Floor | Func::Ceil => match arg(0) {
            Value::Int(i) => Value::Int(i),
            Value::Float(x) => Value::Float(if f == Func::Floor {
                x.floor()
            } else {
                x.ceil()
            }),
            Value::Decimal(d) => Value::Decimal(if f == Func::Floor {
                d.floor()
            } else {
                d.ceil()
            }),
            v => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function floor({v}) does not exist"),
                ))
            }
        },
        Func::Mod => crate::expr::binary(crate::expr::BinOp::Mod, arg(0), arg(1))?,
        Func::Power => {
            let x = cast(arg(0), &DataType::Double)?;
            let y = cast(arg(1), &DataType::Double)?;
            match (x, y) {
                (Value::Float(x), Value::Float(y)) => Value::Float(x.powf(y)),
                _ => Value::Null,
            }
        }
        Func::Sqrt => match cast(arg(0), &DataType::Double)? {
            Value::Float(x) if x >= 0.0 => Value::Float(x.sqrt()),
            _ => {
                return Err(SqlError::new(
                    ErrorKind::DataException,
                    "cannot take square root of a negative number",
                ))
            }
        },
        Func::Random => Value::Float(rand_f64()),
        Func::DateAdd => {
            let unit = text_arg(&arg(0));
            let n = int_arg(&arg(1), "DATEADD")?;
            let is_date = matches!(arg(2), Value::Date(_));
            let t = to_ts(&arg(2))?;
            let r = if let Some(m) = month_units(&unit) {
                add_months(t, n * m)
            } else if let Some(u) = unit_micros(&unit) {
                t + n * u
            } else {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("unknown date part \"{unit}\""),
                ));
            };
            if is_date {
                Value::Date(r.div_euclid(DAY) as i32)
            } else {
                Value::Timestamp(r)
            }
        }
        Func::DateDiff => {
            let unit = text_arg(&arg(0));
            let (x, y) = (to_ts(&arg(1))?, to_ts(&arg(2))?);
            if let Some(m) = month_units(&unit) {
                let (ya, ma, _) = civil_from_days(x.div_euclid(DAY));
                let (yb, mb, _) = civil_from_days(y.div_euclid(DAY));
                Value::Int(((yb * 12 + mb as i64) - (ya * 12 + ma as i64)) / m)
            } else if let Some(u) = unit_micros(&unit) {
                // T-SQL counts boundaries crossed.
                Value::Int(y.div_euclid(u) - x.div_euclid(u))
            } else {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!("unknown date part \"{unit}\""),
                ));
            }
        }
        Func::DatePart => {
            let unit = text_arg(&arg(0)).to_ascii_lowercase();
            let t = to_ts(&arg(1))?;
            let days = t.div_euclid(DAY);
            let rem = t.rem_euclid(DAY);
            let (y, m, d) = civil_from_days(days);
            Value::Int(match unit.as_str() {
                "year" | "yy" | "yyyy" => y,
                "month" | "mm" | "m" => m as i64,
                "day" | "dd" | "d" => d as i64,
                "hour" | "hh" => rem / 3_600_000_000,
                "minute" | "mi" => rem / 60_000_000 % 60,
                "second" | "ss" => rem / 1_000_000 % 60,
                "epoch" => t / 1_000_000,
                "dow" => (days + 4).rem_euclid(7),
                "doy" | "dayofyear" => days - days_from_civil(y, 1, 1) + 1,
                other => {
                    return Err(SqlError::new(
                        ErrorKind::InvalidParameter,
                        format!("unknown date part \"{other}\""),
                    ))
                }
            })
        }
        Func::ToChar => crate::temporal::to_char(&arg(0), &text_arg(&arg(1)))?,
        Func::DateTrunc => crate::temporal::date_trunc(&text_arg(&arg(0)), &arg(1))?,
        Func::Extract => crate::temporal::extract(&text_arg(&arg(0)), &arg(1))?,
        Func::DatePartPg => match crate::temporal::extract(&text_arg(&arg(0)), &arg(1))? {
            Value::Decimal(d) => Value::Float(d.to_f64().unwrap_or(f64::NAN)),
            other => other,
        },
        Func::Age => {
            let b = if a.len() == 2 {
                arg(1)
            } else {
                // age(x) counts from today's midnight.
                let local = walden_engine::types::datetime::tz_to_local(env.info.now);
                Value::Timestamp(local - local.rem_euclid(DAY))
            };
            let x = if a.len() == 2 { arg(0) } else { b.clone() };
            let y = if a.len() == 2 { b } else { arg(0) };
            crate::temporal::age(&x, &y)?
        }
        Func::EncodingName => Value::text("UTF8"),
        Func::PgGetExpr => Value::text(crate::pg_catalog::qualify_for_path(
            env,
            &text_arg(&arg(0)),
            "nextval('",
        )),
        Func::SerialSequence => match (arg(0), arg(1)) {
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (t, c) => crate::pg_catalog::serial_sequence(env, &text_arg(&t), &text_arg(&c))?,
        },
        Func::PgGetIndexDef => {
            let oid = int_arg(&arg(0), "pg_get_indexdef")?;
            let col = match a.get(1) {
                Some(v) => int_arg(v, "pg_get_indexdef")?,
                None => 0,
            };
            crate::pg_catalog::indexdef(env, oid, col)
                .map(Value::text)
                .unwrap_or(Value::Null)
        }
        Func::PgGetConstraintDef => {
            let oid = int_arg(&arg(0), "pg_get_constraintdef")?;
            let pretty = matches!(a.get(1), Some(Value::Bool(true)));
            crate::pg_catalog::constraintdef(env, oid, pretty)
                .map(|d| Value::text(crate::pg_catalog::qualify_for_path(env, &d, "REFERENCES ")))
                .unwrap_or(Value::Null)
        }
        // A name (text) is looked up; a number is the OID. Either way the
        // value carries the OID and the name it shows as.
        Func::RegClassOid => match crate::pg_catalog::regclass_oid(env, &text_arg(&arg(0)))? {
            Value::Int(oid) => reg_value(env, RegKind::Class, oid)?,
            other => other,
        },
        Func::RegClassName => reg_value(env, RegKind::Class, int_arg(&arg(0), "regclass")?)?,
        Func::RegTypeOid => {
            let name = text_arg(&arg(0));
            let oid = match crate::pg_catalog::regtype_oid(&name) {
                Err(e) => match crate::pg_catalog::enum_regtype_oid(env, name.trim()) {
                    Some(oid) => oid,
                    None => return Err(e),
                },
                Ok(v) => int_arg(&v, "regtype")?,
            };
            reg_value(env, RegKind::Type, oid)?
        }
        Func::RegTypeName => reg_value(env, RegKind::Type, int_arg(&arg(0), "regtype")?)?,
        Func::RegNamespaceOid => {
            let oid = int_arg(
                &crate::pg_catalog::regnamespace_oid(&text_arg(&arg(0)))?,
                "regnamespace",
            )?;
            reg_value(env, RegKind::Namespace, oid)?
        }
        Func::RegNamespaceName => {
            reg_value(env, RegKind::Namespace, int_arg(&arg(0), "regnamespace")?)?
        }
        // One-dimensional arrays with lower bound 1: an empty array (or
        // another dimension) has no bounds.
        Func::ArrayUpper | Func::ArrayLower => {
            let n = crate::arrays::elements(&arg(0)).len();
            if arg(0).is_null() || n == 0 || !crate::arrays::dimension_is_first(&arg(1))? {
                Value::Null
            } else if f == Func::ArrayLower {
                Value::Int(1)
            } else {
                Value::Int(n as i64)
            }
        }
        Func::Cardinality if null_in => Value::Null,
        Func::Cardinality => Value::Int(crate::arrays::elements(&arg(0)).len() as i64),
        Func::ArrayElement => match arg(1) {
            Value::Null => Value::Null,
            i => {
                let idx = int_arg(&i, "array subscript")?;
                usize::try_from(idx - 1)
                    .ok()
                    .and_then(|i| crate::arrays::elements(&arg(0)).into_iter().nth(i))
                    .unwrap_or(Value::Null)
            }
        },
        Func::ArrayContains(false) => crate::arrays::contains(&arg(0), &arg(1))?,
        Func::ArrayContains(true) => crate::arrays::contains(&arg(1), &arg(0))?,
        Func::ArrayOverlap => crate::arrays::overlap(&arg(0), &arg(1))?,
        Func::QuoteIdent => Value::text(crate::pg_catalog::quote_ident(&text_arg(&arg(0)))),
        Func::QuoteLiteral => {
            Value::text(crate::pg_catalog::quote_literal_text(&text_arg(&arg(0))))
        }
        Func::AclDefault => {
            crate::pg_catalog::acldefault(env, &text_arg(&arg(0)), int_arg(&arg(1), "acldefault")?)?
        }
        Func::RegProcName => match arg(0) {
            Value::Int(0) => Value::text("-"),
            Value::Int(n) => Value::text(n.to_string()),
            other => Value::text(text_arg(&other)),
        },
        Func::PartitionAncestors => match arg(0) {
            Value::Text(t) => crate::pg_catalog::regclass_oid(env, &t)?,
            other => other,
        },
        Func::RelationSize(which) => crate::pg_catalog::size_of(env, which, &a)?,
        Func::SizePretty => Value::text(crate::pg_catalog::size_pretty(int_arg(
            &arg(0),
            "pg_size_pretty",
        )?)),
        Func::CurrentSetting => {
            let name = text_arg(&arg(0)).to_ascii_lowercase();
            // current_setting(name, missing_ok): NULL instead of an error.
            let missing_ok = a.len() > 1 && crate::expr::truth(&arg(1))? == Some(true);
            match env.info.settings.get(&name) {
                Some(v) => Value::text(v),
                None if missing_ok => Value::Null,
                None => return Err(crate::settings::unrecognized(&name)),
            }
        }
    })
}

pub(super) fn rand_f64() -> f64 {
    use std::cell::Cell;
    thread_local!(static S: Cell<u64> = Cell::new(now_micros() as u64 | 1));
    S.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// A reg type's value for `oid`: the OID and its name as PostgreSQL's
/// output function shows it (the digits when nothing has that OID).
pub(crate) fn reg_value(env: &Env<'_>, kind: RegKind, oid: i64) -> Result<Value> {
    let oid = u32::try_from(if (i32::MIN as i64..0).contains(&oid) {
        oid + (1 << 32)
    } else {
        oid
    })
    .map_err(|_| SqlError::new(ErrorKind::NumericOutOfRange, "OID out of range"))?;
    let o = oid as i64;
    let name = match kind {
        // InvalidOid, as PostgreSQL shows it for every reg type.
        _ if oid == 0 => "-".to_string(),
        RegKind::Class => crate::pg_catalog::regclass_name(env, o),
        RegKind::Type => crate::pg_catalog::enum_type_name(env.tx.database(), Some(env.tx.id()), o)
            .unwrap_or_else(|| crate::pg_catalog::regtype_name(o)),
        RegKind::Namespace => crate::pg_catalog::regnamespace_name(o),
    };
    Ok(Value::Reg(kind, oid, name.into()))
}
