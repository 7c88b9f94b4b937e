//! The catalog functions drivers and tools call: the reg casts and
//! to_reg*, format_type, pg_get_*def, pg_get_expr, visibility, comments,
//! privileges, acldefault, relation sizes, current_schema(s).

use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::*;
use walden_engine::{RegKind, Value};

/// An OID argument: a number or a reg* value.
fn oid_value(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Reg(_, oid, _) => Some(*oid as i64),
        _ => None,
    }
}

/// Calls one of the catalog functions (`functions::call` sends only those,
/// through `SystemCatalog`).
pub(super) fn call(f: Func, a: Vec<Value>, env: &Env<'_>) -> Result<Value> {
    let null_in = a.iter().any(|v| v.is_null());
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        // Names only (PostgreSQL 15 reads digits as a name here too); an
        // unknown name, or one in an unknown schema, is NULL.
        Func::SignalBackend(terminate) => {
            super::activity_view::signal_backend(env, &arg(0), terminate)?
        }
        Func::BlockingPids => match arg(0).as_i64() {
            Some(pid) => Value::Array(
                super::locks_view::blocking_pids(env, pid)
                    .into_iter()
                    .map(|p| Value::Int(p as i64))
                    .collect(),
            ),
            None => Value::Null,
        },
        Func::ToReg(kind) => match arg(0) {
            Value::Null => Value::Null,
            v => {
                let name = text_arg(&v);
                let found = match kind {
                    RegKind::Class => crate::compat::pg_catalog::regclass_lookup(env, &name),
                    RegKind::Type => crate::compat::pg_catalog::regtype_lookup(&name),
                    RegKind::Namespace => crate::types::oids::regnamespace_lookup(&name),
                };
                let oid = found.ok().and_then(|v| v.as_i64()).or_else(|| {
                    (kind == RegKind::Type)
                        .then(|| crate::compat::pg_catalog::enum_regtype_oid(env, name.trim()))
                        .flatten()
                });
                match oid {
                    Some(oid) => reg_value(env, kind, oid)?,
                    None => Value::Null,
                }
            }
        },
        Func::CurrentSchema => env.info.path.current().map_or(Value::Null, Value::text),
        // The path's existing schemas, with pg_catalog first when implicit
        // (a name[]).
        Func::CurrentSchemas => match crate::functions::truth(&arg(0))? {
            None => Value::Null,
            Some(implicit) => Value::Array(
                crate::compat::pg_catalog::search_path_schemas(env, implicit)
                    .into_iter()
                    .map(Value::text)
                    .collect(),
            ),
        },
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
                    crate::compat::pg_catalog::format_type_in(env, oid, typmod)
                        .unwrap_or_else(|| "???".into()),
                )
            }
        },
        Func::Null => Value::Null,
        Func::ObjDescription => {
            let catalog = a.get(1).filter(|v| !v.is_null()).map(text_arg);
            match oid_value(&arg(0)) {
                Some(o) if a.get(1).is_none_or(|v| !v.is_null()) => {
                    crate::compat::pg_catalog::obj_description(env, o, catalog.as_deref())
                }
                _ => Value::Null,
            }
        }
        Func::TriggerDef => match oid_value(&arg(0)) {
            Some(o) => crate::compat::pg_catalog::triggers::triggerdef(env, o),
            None => Value::Null,
        },
        Func::ColDescription => match (oid_value(&arg(0)), arg(1)) {
            (Some(o), Value::Int(n)) => crate::compat::pg_catalog::col_description(env, o, n),
            _ => Value::Null,
        },
        Func::True => Value::Bool(true),
        Func::Privilege(f) => crate::catalog::privileges::call(f, &a, env)?,
        Func::False => Value::Bool(false),
        // The rest are strict: a NULL argument makes the result NULL.
        _ if null_in => Value::Null,
        // User objects (OIDs from 16384, as PostgreSQL's) are all in
        // public; the catalogs' are found through pg_catalog.
        Func::IsVisible => match arg(0) {
            Value::Null => Value::Null,
            v => {
                let oid = int_arg(&v, "oid")?;
                Value::Bool(oid < 16384 || temp_aware_visible(env, oid))
            }
        },
        Func::EncodingName => Value::text("UTF8"),
        // Walden's one encoding; PostgreSQL reads the name case-blind.
        Func::EncodingId => Value::Int(if text_arg(&arg(0)).eq_ignore_ascii_case("utf8") {
            6
        } else {
            -1
        }),
        Func::FunctionResult => {
            let oid = int_arg(&arg(0), "oid")?;
            match crate::compat::pg_catalog::function_result(oid) {
                Some(r) => Value::text(r),
                None => crate::compat::pg_catalog::user_function_result(env, oid)
                    .map_or(Value::Null, Value::text),
            }
        }
        Func::FunctionArguments { defaults } => {
            let oid = int_arg(&arg(0), "oid")?;
            match crate::compat::pg_catalog::function_arguments(oid) {
                Some(r) => Value::text(r),
                None => crate::compat::pg_catalog::user_function_arguments(env, oid, defaults)
                    .map_or(Value::Null, Value::text),
            }
        }
        Func::PgGetExpr => {
            let text = text_arg(&arg(0));
            // Pretty: without the parentheses around the whole expression.
            let text = if crate::functions::truth(&arg(2))? == Some(true) {
                crate::compat::pg_catalog::without_outer_parens(&text)
            } else {
                &text
            };
            Value::text(crate::compat::pg_catalog::qualify_for_path(
                env,
                text,
                "nextval('",
            ))
        }
        Func::Ident(which) => match arg(0) {
            Value::Null => Value::Null,
            t => crate::compat::pg_catalog::ident_of(env, &text_arg(&t), which)?,
        },
        Func::SerialSequence => match (arg(0), arg(1)) {
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (t, c) => {
                crate::compat::pg_catalog::serial_sequence(env, &text_arg(&t), &text_arg(&c))?
            }
        },
        Func::PgGetViewDef => match arg(0) {
            Value::Null => Value::Null,
            Value::Text(_) => crate::compat::pg_catalog::viewdef_by_name(env, &text_arg(&arg(0)))
                .map(Value::text)
                .unwrap_or(Value::Null),
            v => crate::compat::pg_catalog::viewdef_by_oid(env, int_arg(&v, "pg_get_viewdef")?)
                .map(Value::text)
                .unwrap_or(Value::Null),
        },
        Func::PgGetPartKeyDef => {
            let oid = int_arg(&arg(0), "pg_get_partkeydef")?;
            env.tx
                .database()
                .tables_as(Some(env.tx.id()))
                .into_iter()
                .find(|t| crate::types::oids::table_oid(t.id()) == oid)
                .and_then(|t| t.def.partition_key.clone())
                .map_or(Value::Null, Value::text)
        }
        Func::PgGetIndexDef => {
            let oid = int_arg(&arg(0), "pg_get_indexdef")?;
            let col = match a.get(1) {
                Some(v) => int_arg(v, "pg_get_indexdef")?,
                None => 0,
            };
            crate::compat::pg_catalog::indexdef(env, oid, col)
                .map(Value::text)
                .unwrap_or(Value::Null)
        }
        Func::PgGetConstraintDef => {
            let oid = int_arg(&arg(0), "pg_get_constraintdef")?;
            let pretty = matches!(a.get(1), Some(Value::Bool(true)));
            crate::compat::pg_catalog::constraintdef(env, oid, pretty)
                .map(|d| {
                    Value::text(crate::compat::pg_catalog::qualify_for_path(
                        env,
                        &d,
                        "REFERENCES ",
                    ))
                })
                .unwrap_or(Value::Null)
        }
        // A name (text) is looked up; a number is the OID. Either way the
        // value carries the OID and the name it shows as.
        Func::RegClassOid => {
            match crate::compat::pg_catalog::regclass_oid(env, &text_arg(&arg(0)))? {
                Value::Int(oid) => reg_value(env, RegKind::Class, oid)?,
                other => other,
            }
        }
        Func::RegClassName => reg_value(env, RegKind::Class, int_arg(&arg(0), "regclass")?)?,
        Func::RegTypeOid => {
            let name = text_arg(&arg(0));
            let oid = match crate::compat::pg_catalog::regtype_oid(&name) {
                Err(e) => match crate::compat::pg_catalog::enum_regtype_oid(env, name.trim()) {
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
                &crate::compat::pg_catalog::regnamespace_oid(&text_arg(&arg(0)))?,
                "regnamespace",
            )?;
            reg_value(env, RegKind::Namespace, oid)?
        }
        Func::RegNamespaceName => {
            reg_value(env, RegKind::Namespace, int_arg(&arg(0), "regnamespace")?)?
        }
        Func::AclDefault => crate::compat::pg_catalog::acldefault(
            env,
            &text_arg(&arg(0)),
            int_arg(&arg(1), "acldefault")?,
        )?,
        Func::RegProcName => match arg(0) {
            Value::Int(0) => Value::text("-"),
            Value::Int(n) => Value::text(
                crate::compat::pg_catalog::function_name(n)
                    .map(str::to_string)
                    .or_else(|| crate::compat::pg_catalog::user_function_name(env, n))
                    .unwrap_or_else(|| n.to_string()),
            ),
            other => Value::text(text_arg(&other)),
        },
        Func::PartitionAncestors => match arg(0) {
            Value::Text(t) => crate::compat::pg_catalog::regclass_oid(env, &t)?,
            other => other,
        },
        Func::RelationSize(which) => crate::compat::pg_catalog::size_of(env, which, &a)?,
        Func::SizePretty => Value::text(crate::compat::pg_catalog::size_pretty(int_arg(
            &arg(0),
            "pg_size_pretty",
        )?)),
        _ => {
            return Err(SqlError::internal(format!(
                "{f:?} is not one of the catalog functions"
            )))
        }
    })
}

/// A reg type's value for `oid`: the OID and its name as PostgreSQL's
/// output function shows it (the digits when nothing has that OID).
fn reg_value(env: &Env<'_>, kind: RegKind, oid: i64) -> Result<Value> {
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
        RegKind::Class => crate::compat::pg_catalog::regclass_name(env, o),
        RegKind::Type => {
            crate::compat::pg_catalog::enum_type_name(env.tx.database(), Some(env.tx.id()), o)
                .unwrap_or_else(|| crate::types::regtype_name(o))
        }
        RegKind::Namespace => crate::types::oids::regnamespace_name(o),
    };
    Ok(Value::Reg(kind, oid, name.into()))
}

/// Whether a user relation's OID is visible: a temporary table only to its
/// session (always, `pg_temp` being searched first), a permanent one when
/// the path finds `public` and no temporary table of the session hides it.
fn temp_aware_visible(env: &Env<'_>, oid: i64) -> bool {
    use crate::types::temp_names::{internal, split_temp};
    let db = env.tx.database();
    let viewer = Some(env.tx.id());
    let Some((id, _)) = crate::types::oids::decode_oid(oid) else {
        return env.info.path.finds_user_objects();
    };
    let Some(t) = db.tables_as(viewer).into_iter().find(|t| t.id() == id) else {
        return env.info.path.finds_user_objects();
    };
    match split_temp(t.name()) {
        Some((spid, _)) => spid == env.info.spid,
        None => {
            env.info.path.finds_user_objects()
                && db
                    .table_as(viewer, &internal(env.info.spid, t.name()))
                    .is_err()
        }
    }
}
