//! The database's own PostgreSQL functions and procedures in `pg_proc`,
//! read from the rows of its function table (`procedural/funcs.rs`), so
//! that psql's `\df`, `pg_get_function_result` / `_arguments` and ORMs
//! see them, and `pg_trigger.tgfoid` names a trigger's function. T-SQL
//! functions are listed by `sys.objects`, not here.

use super::rows::{b, i, t, NULL};
use super::*;
use crate::front::plpgsql::{function_oid, parse_pg_function, Lang, PgFunc, FUNC_TABLE};

/// PostgreSQL's OIDs of the languages (`sql` is fixed; `plpgsql` is the
/// one PostgreSQL 15's initdb gives it).
pub(super) const LANG_SQL: i64 = 14;
pub(super) const LANG_PLPGSQL: i64 = 13_329;
const RECORD: i64 = 2249;

/// `pg_language`'s rows of the languages of stored routines (PostgreSQL
/// 15's OIDs; below the first user OID, so pg_dump dumps neither).
pub(super) fn language_rows() -> Vec<Vec<Value>> {
    vec![
        vec![
            i(LANG_SQL),
            t("sql"),
            i(OWNER_OID),
            b(false),
            b(true),
            i(0),
            i(0),
            i(2248),
            NULL,
        ],
        vec![
            i(LANG_PLPGSQL),
            t("plpgsql"),
            i(OWNER_OID),
            b(true),
            b(true),
            i(13_326),
            i(13_327),
            i(13_328),
            NULL,
        ],
    ]
}

/// A stored PostgreSQL routine.
pub(super) struct UserProc {
    pub oid: i64,
    pub f: PgFunc,
}

/// The routines the transaction sees, by OID.
pub(super) fn stored(env: &Env<'_>) -> Vec<UserProc> {
    let Ok(rows) = env.tx.scan_all(FUNC_TABLE) else {
        return Vec::new();
    };
    let mut out: Vec<UserProc> = rows
        .into_iter()
        .filter_map(|(_, r)| {
            let key = r.first()?.to_string();
            let f = parse_pg_function(&r.get(1)?.to_string())?;
            Some(UserProc {
                oid: function_oid(&key),
                f,
            })
        })
        .collect();
    out.sort_by_key(|p| p.oid);
    out
}

/// A type as `\df` shows it (`integer`, `character varying(10)`); a name
/// Walden does not know as a type (a table's row type) as written.
fn shown(ty: &str) -> String {
    match crate::types::names::parse_type_name(ty) {
        Ok(t) => {
            let (oid, m) = crate::types::type_oid_and_mod(&t);
            crate::types::format_type(oid, Some(m)).unwrap_or_else(|| ty.to_string())
        }
        Err(_) => ty.to_ascii_lowercase(),
    }
}

fn type_oid(ty: &str) -> i64 {
    crate::types::names::parse_type_name(ty)
        .map(|t| crate::types::type_oid_and_mod(&t).0)
        .unwrap_or(RECORD)
}

/// `pg_get_function_result`.
fn result_text(f: &PgFunc) -> Option<String> {
    if f.procedure {
        return None;
    }
    if f.table {
        let cols: Vec<String> = f
            .out
            .iter()
            .map(|o| format!("{} {}", &o.name[1..], shown(&o.ty)))
            .collect();
        return Some(format!("TABLE({})", cols.join(", ")));
    }
    let base = if f.out.len() > 1 {
        "record".to_string()
    } else {
        shown(&f.returns)
    };
    Some(if f.set { format!("SETOF {base}") } else { base })
}

/// `pg_get_function_arguments` (with defaults) and
/// `pg_get_function_identity_arguments` (without): the arguments in
/// declared order with their modes (a procedure's IN ones say so).
fn arguments_text(f: &PgFunc, defaults: bool) -> String {
    let mut out = Vec::new();
    for (mode, p) in &f.declared {
        let mut s = String::new();
        s.push_str(match mode {
            'o' => "OUT ",
            'b' => "INOUT ",
            'v' => "VARIADIC ",
            _ if f.procedure => "IN ",
            _ => "",
        });
        if !p.name.starts_with("@_") {
            s.push_str(&p.name[1..]);
            s.push(' ');
        }
        s.push_str(&shown(&p.ty));
        if let (true, Some(d)) = (defaults, &p.default) {
            s.push_str(" DEFAULT ");
            s.push_str(d.trim());
        }
        out.push(s);
    }
    out.join(", ")
}

/// The OID of the routine's schema (`public` when the schema is gone).
fn namespace_oid(env: &Env<'_>, f: &PgFunc) -> i64 {
    match f.schema.as_deref() {
        None | Some("public") | Some("dbo") => crate::types::oids::NS_PUBLIC,
        Some(s) => env
            .tx
            .database()
            .schemas_as(Some(env.tx.id()))
            .iter()
            .find(|x| x.name == s)
            .map_or(crate::types::oids::NS_PUBLIC, |x| {
                crate::catalog::schemas::schema_oid(x.id)
            }),
    }
}

pub(super) fn proc_rows(env: &Env<'_>) -> Vec<Vec<Value>> {
    stored(env)
        .into_iter()
        .map(|p| {
            let f = &p.f;
            // OUT arguments (a procedure's too) are not in proargtypes.
            let arg_oids: Vec<Value> = f
                .declared
                .iter()
                .filter(|(m, _)| *m != 'o')
                .map(|(_, a)| i(type_oid(&a.ty)))
                .collect();
            let rettype = if f.procedure {
                0
            } else if f.out.len() > 1 {
                RECORD
            } else {
                type_oid(&f.returns)
            };
            // With OUT parameters or TABLE columns: every argument's mode,
            // type and name.
            let plain = f.out.is_empty() && f.declared.iter().all(|(m, _)| *m == 'i');
            let (all, modes, names) = if plain {
                let named = f.params.iter().any(|a| !a.name.starts_with("@_"));
                let names = named.then(|| {
                    Value::Array(
                        f.params
                            .iter()
                            .map(|a| {
                                t(a.name
                                    .get(1..)
                                    .filter(|n| !n.starts_with('_'))
                                    .unwrap_or(""))
                            })
                            .collect(),
                    )
                });
                (NULL, NULL, names.unwrap_or(NULL))
            } else {
                let table = f.table;
                let mut all = Vec::new();
                let mut modes = Vec::new();
                let mut names = Vec::new();
                for (m, a) in &f.declared {
                    all.push(i(type_oid(&a.ty)));
                    modes.push(t(m.to_string()));
                    names.push(t(a
                        .name
                        .get(1..)
                        .filter(|n| !n.starts_with('_'))
                        .unwrap_or("")));
                }
                if table {
                    for o in &f.out {
                        all.push(i(type_oid(&o.ty)));
                        modes.push(t("t"));
                        names.push(t(&o.name[1..]));
                    }
                }
                (
                    Value::Array(all.into()),
                    Value::Array(modes.into()),
                    Value::Array(names.into()),
                )
            };
            let defaults = f.params.iter().filter(|a| a.default.is_some()).count();
            vec![
                i(p.oid),
                t(&f.name),
                i(namespace_oid(env, f)),
                i(OWNER_OID),
                i(match f.lang {
                    Lang::Sql => LANG_SQL,
                    Lang::Plpgsql => LANG_PLPGSQL,
                }),
                t(if f.procedure { "p" } else { "f" }),
                b(f.set),
                i(arg_oids.len() as i64),
                i(rettype),
                Value::Array(arg_oids.into()),
                t(f.volatility.to_string()),
                b(f.strict),
                all,
                modes,
                names,
                t(&f.body),
                i(defaults as i64),
                NULL,
                b(false),
                t("u"),
            ]
        })
        .collect()
}

/// `pg_get_function_result(oid)` of a stored routine.
pub(crate) fn function_result(env: &Env<'_>, oid: i64) -> Option<String> {
    stored(env)
        .into_iter()
        .find(|p| p.oid == oid)
        .and_then(|p| result_text(&p.f))
}

/// `pg_get_function_arguments(oid)` (`defaults`) or
/// `pg_get_function_identity_arguments(oid)` of a stored routine.
pub(crate) fn function_arguments(env: &Env<'_>, oid: i64, defaults: bool) -> Option<String> {
    stored(env)
        .into_iter()
        .find(|p| p.oid == oid)
        .map(|p| arguments_text(&p.f, defaults))
}

/// `oid::regproc` of a stored routine.
pub(crate) fn function_name(env: &Env<'_>, oid: i64) -> Option<String> {
    stored(env)
        .into_iter()
        .find(|p| p.oid == oid)
        .map(|p| p.f.name)
}

/// The OID of the trigger function `name` (the one of that name without
/// arguments); 0 when there is none.
pub(super) fn trigger_function_oid(env: &Env<'_>, name: &str) -> i64 {
    stored(env)
        .into_iter()
        .find(|p| p.f.name == name && p.f.params.is_empty())
        .map_or(0, |p| p.oid)
}
