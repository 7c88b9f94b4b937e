//! Scalar functions (PostgreSQL and T-SQL names) and aggregates.

use crate::error::{ErrorKind, Result, SqlError};
use crate::expr::{cast, compare, Env, Expr, Scope};
use crate::query::Planner;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};
use std::cmp::Ordering;
use std::sync::Arc;
use walden_engine::types::{civil_from_days, days_from_civil, now_micros};
use walden_engine::{DataType, Value};

/// What functions may ask about the session.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub spid: u32,
    pub database: String,
    pub database_id: u32,
    pub user: String,
    /// The session's role OID (privilege functions).
    pub role: u32,
    /// The statement's memory budget for materialized rows.
    pub mem: Arc<crate::membudget::Budget>,
    /// Transaction start, for now() and friends.
    pub now: i64,
    /// Statement start (statement_timestamp()).
    pub statement_now: i64,
    /// The session's settings (current_setting, set_config).
    pub settings: crate::settings::Settings,
    /// The instance's advisory locks.
    pub advisory: Arc<crate::advisory::AdvisoryLocks>,
    /// Database ids by lower-case name (for DB_ID and DB_NAME), listed on
    /// first use in the statement: most statements never ask, and listing
    /// every database for each one showed in profiles.
    pub database_ids: std::sync::OnceLock<Vec<(String, u32)>>,
    /// The availability-group layer (for `sys.dm_hadr_*`).
    pub replication: Option<walden_replication::Replication>,
    /// The session's open cursors (`pg_cursors`).
    pub cursors: Vec<crate::cursor::CursorRow>,
}

impl SessionInfo {
    fn database_ids(&self, instance: &walden_engine::Instance) -> &[(String, u32)] {
        self.database_ids.get_or_init(|| {
            instance
                .databases()
                .iter()
                .map(|d| (d.name().to_ascii_lowercase(), d.id()))
                .collect()
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    /// The transaction's start (now(), CURRENT_TIMESTAMP).
    Now,
    /// The transaction's start as local time (LOCALTIMESTAMP).
    LocalTimestamp,
    /// EXTRACT(field FROM x): numeric.
    Extract,
    /// date_part(field, x): double precision.
    DatePartPg,
    DateTrunc,
    /// age(a, b) / age(a).
    Age,
    StatementTimestamp,
    /// The time of the call itself.
    ClockTimestamp,
    /// pg_sleep(seconds), cancellable.
    Sleep,
    /// pg_advisory_lock(key) or (key1, key2), and the try/unlock forms.
    AdvisoryLock,
    AdvisoryTryLock,
    AdvisoryUnlock,
    AdvisoryUnlockAll,
    /// set_config(name, value, is_local).
    SetConfig,
    /// to_regtype(name): the type's OID, or NULL when there is none.
    ToRegType,
    Today,
    NewUuid,
    DbId,
    DbName,
    Spid,
    Version,
    CurrentUser,
    CurrentSchema,
    NextVal,
    Coalesce,
    NullIf,
    Upper,
    Lower,
    Length,
    Substring,
    Trim,
    Ltrim,
    Rtrim,
    Replace,
    Concat,
    Left,
    Right,
    Abs,
    Round,
    Floor,
    Ceil,
    Mod,
    Power,
    Sqrt,
    Random,
    DateAdd,
    DateDiff,
    DatePart,
    Greatest,
    Least,
    ToChar,
    CurrentSetting,
    /// has_*_privilege, pg_has_role, pg_get_userbyid (`privileges.rs`).
    Privilege(crate::privileges::PrivFn),
    /// pg_table_is_visible and friends: everything is visible.
    True,
    /// pg_relation_is_publishable and friends: nothing is.
    False,
    /// Comments and statistics objects, which Walden does not have
    /// (col_description, obj_description, ...): always NULL.
    Null,
    EncodingName,
    ArrayToString,
    FormatType,
    /// pg_get_expr: `adbin` already holds the expression's text.
    PgGetExpr,
    PgGetIndexDef,
    PgGetConstraintDef,
    /// `text::regclass` (a relation's OID) and `oid::regclass` (its name);
    /// the same for regtype and regnamespace.
    RegClassOid,
    RegClassName,
    RegTypeOid,
    RegTypeName,
    RegNamespaceOid,
    RegNamespaceName,
    ArrayUpper,
    Cardinality,
    /// `a[i]` on an array in text form.
    ArrayElement,
    /// `ARRAY[x, y]`.
    ArrayBuild,
    /// `x op ANY (array)` (`ALL` when the flag is set).
    AnyArray(crate::expr::BinOp, bool),
    QuoteIdent,
    /// `pg_partition_ancestors(rel)`: a relation that is no partition (no
    /// Walden table is) is its only ancestor (psql's \d "Referenced by").
    PartitionAncestors,
    /// pg_table_size and friends: tables live in memory and have no file of
    /// their own, so 0.
    RelationSize,
    SizePretty,
    /// json/jsonb operators and functions (`jsonfn.rs`).
    Json(crate::jsonfn::JsonFn),
}

impl Func {
    /// Whether the result depends only on the arguments.
    pub fn is_pure(self) -> bool {
        !matches!(
            self,
            Func::Random
                | Func::NewUuid
                | Func::NextVal
                | Func::ClockTimestamp
                | Func::Sleep
                | Func::AdvisoryLock
                | Func::AdvisoryTryLock
                | Func::AdvisoryUnlock
                | Func::AdvisoryUnlockAll
                | Func::SetConfig
        )
    }
}

/// Functions callable without parentheses (`CURRENT_TIMESTAMP`, `CURRENT_USER`).
pub fn niladic(name: &str) -> Option<Func> {
    Some(match name.to_ascii_lowercase().as_str() {
        "current_timestamp" => Func::Now,
        "localtimestamp" => Func::LocalTimestamp,
        "current_date" => Func::Today,
        "current_user" | "session_user" | "user" => Func::CurrentUser,
        "current_schema" => Func::CurrentSchema,
        _ => return None,
    })
}

/// `@@SPID`, `@@VERSION`.
pub fn global_variable(name: &str) -> Result<Func> {
    match name.to_ascii_uppercase().as_str() {
        "@@SPID" => Ok(Func::Spid),
        "@@VERSION" => Ok(Func::Version),
        other => Err(SqlError::new(
            ErrorKind::UndefinedObject,
            format!("unknown global variable {other}"),
        )),
    }
}

fn fname(f: &ast::Function) -> String {
    f.name
        .0
        .last()
        .map(|p| p.to_string().trim_matches('"').to_ascii_lowercase())
        .unwrap_or_default()
}

fn args_of(f: &ast::Function) -> Vec<&FunctionArg> {
    match &f.args {
        FunctionArguments::List(l) => l.args.iter().collect(),
        _ => Vec::new(),
    }
}

fn arg_expr(a: &FunctionArg) -> Option<&ast::Expr> {
    match a {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
        FunctionArg::Named {
            arg: FunctionArgExpr::Expr(e),
            ..
        } => Some(e),
        FunctionArg::ExprNamed {
            arg: FunctionArgExpr::Expr(e),
            ..
        } => Some(e),
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggKind {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    StringAgg,
    BoolAnd,
    BoolOr,
    /// json_agg / jsonb_agg.
    JsonAgg {
        jsonb: bool,
    },
    /// json_object_agg / jsonb_object_agg(key, value): the value
    /// expression rides in the separator slot, evaluated per row.
    JsonObjectAgg {
        jsonb: bool,
    },
}

/// An aggregate to compute per group.
#[derive(Debug)]
pub struct AggSpec {
    pub kind: AggKind,
    pub arg: Option<Expr>,
    pub distinct: bool,
    pub separator: Option<Expr>,
    /// `agg(x ORDER BY a DESC, ...)`: the order the group's rows are fed in
    /// (expression, descending, nulls first).
    pub order: Vec<(Expr, bool, bool)>,
}

pub fn aggregate_kind(f: &ast::Function) -> Option<AggKind> {
    if f.over.is_some() {
        return None;
    }
    let star = args_of(f)
        .first()
        .is_some_and(|a| matches!(a, FunctionArg::Unnamed(FunctionArgExpr::Wildcard)));
    Some(match fname(f).as_str() {
        "count" if star || args_of(f).is_empty() => AggKind::CountStar,
        "count" | "count_big" => AggKind::Count,
        "sum" => AggKind::Sum,
        "avg" => AggKind::Avg,
        "min" => AggKind::Min,
        "max" => AggKind::Max,
        "string_agg" => AggKind::StringAgg,
        "bool_and" | "every" => AggKind::BoolAnd,
        "bool_or" => AggKind::BoolOr,
        "jsonb_agg" => AggKind::JsonAgg { jsonb: true },
        "json_agg" => AggKind::JsonAgg { jsonb: false },
        "jsonb_object_agg" => AggKind::JsonObjectAgg { jsonb: true },
        "json_object_agg" => AggKind::JsonObjectAgg { jsonb: false },
        _ => return None,
    })
}

pub fn compile_aggregate(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    f: &ast::Function,
    kind: AggKind,
) -> Result<AggSpec> {
    let distinct = matches!(&f.args, FunctionArguments::List(l) if matches!(l.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)));
    // `ORDER BY` inside the call orders the rows the aggregate sees (it
    // decides string_agg's, array_agg's and the json aggregates' result);
    // other clauses are refused rather than ignored.
    let mut order = Vec::new();
    if let FunctionArguments::List(l) = &f.args {
        for c in &l.clauses {
            match c {
                ast::FunctionArgumentClause::OrderBy(items) => {
                    for it in items {
                        let desc = matches!(it.options.sort, Some(ast::OrderBySort::Desc));
                        if matches!(it.options.sort, Some(ast::OrderBySort::Using(_))) {
                            return Err(SqlError::unsupported(
                                "ORDER BY ... USING in an aggregate",
                            ));
                        }
                        let nulls_first = it.options.nulls_first.unwrap_or(desc);
                        order.push((Expr::compile(p, scope, &it.expr)?, desc, nulls_first));
                    }
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "{other} in a call of {}",
                        fname(f)
                    )))
                }
            }
        }
    }
    let args = args_of(f);
    let arg = if kind == AggKind::CountStar {
        None
    } else {
        let e = args
            .first()
            .and_then(|a| arg_expr(a))
            .ok_or_else(|| SqlError::syntax(format!("{} needs an argument", fname(f))))?;
        Some(Expr::compile(p, scope, e)?)
    };
    let separator = if matches!(kind, AggKind::StringAgg | AggKind::JsonObjectAgg { .. }) {
        Some(Expr::compile(
            p,
            scope,
            args.get(1)
                .and_then(|a| arg_expr(a))
                .ok_or_else(|| SqlError::syntax(format!("{} needs a second argument", fname(f))))?,
        )?)
    } else {
        None
    };
    Ok(AggSpec {
        kind,
        arg,
        distinct,
        separator,
        order,
    })
}

/// Compiles a scalar function call.
/// `pg_typeof(x)`: the name of the argument's type, as PostgreSQL's
/// regtype shows it (a string literal or NULL is `unknown`, as there). The
/// type is known when the statement is planned, so this is a constant.
fn pg_typeof(
    p: &Planner<'_>,
    scope: &Scope,
    raw: &[&ast::FunctionArg],
    args: &[Expr],
) -> Result<Expr> {
    let [arg] = args else {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "function pg_typeof() with {} arguments does not exist",
                args.len()
            ),
        ));
    };
    let untyped = matches!(
        raw.first().and_then(|a| arg_expr(a)),
        Some(ast::Expr::Value(v)) if matches!(v.value, ast::Value::SingleQuotedString(_) | ast::Value::Null)
    );
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let name = match crate::query::static_type(arg, &types, &p.params) {
        // regtype shows bpchar by its SQL name.
        Some(DataType::Char(_)) if !untyped => "character".to_string(),
        Some(t) if !untyped => {
            crate::pg_catalog::regtype_name(crate::pg_catalog::type_oid_and_mod(&t).0)
        }
        _ => "unknown".to_string(),
    };
    Ok(Expr::Lit(Value::text(name)))
}

pub fn compile_call(p: &mut Planner<'_>, scope: &Arc<Scope>, f: &ast::Function) -> Result<Expr> {
    let name = fname(f);
    // ARRAY(SELECT ...): the subquery's rows as an array (in text form).
    if let FunctionArguments::Subquery(q) = &f.args {
        if name == "array" {
            return crate::expr::array_subquery(p, scope, q);
        }
        return Err(SqlError::unsupported(format!("{name}(subquery)")));
    }
    let raw_args = args_of(f);
    // DATEADD(day, n, d) and DATEDIFF(day, a, b): the first argument is a keyword.
    if matches!(name.as_str(), "dateadd" | "datediff" | "datepart") {
        let mut args = Vec::new();
        for (i, a) in raw_args.iter().enumerate() {
            let e =
                arg_expr(a).ok_or_else(|| SqlError::syntax(format!("bad argument to {name}")))?;
            if i == 0 {
                let unit = match e {
                    ast::Expr::Identifier(id) => id.value.clone(),
                    ast::Expr::Value(v) => v.to_string().trim_matches('\'').to_string(),
                    other => other.to_string(),
                };
                args.push(Expr::Lit(Value::text(unit.to_ascii_lowercase())));
            } else {
                args.push(Expr::compile(p, scope, e)?);
            }
        }
        let func = match name.as_str() {
            "dateadd" => Func::DateAdd,
            "datediff" => Func::DateDiff,
            _ => Func::DatePart,
        };
        return Ok(Expr::Func(func, args));
    }
    // T-SQL CONVERT(type, value [, style]).
    if matches!(name.as_str(), "convert" | "try_convert") && raw_args.len() >= 2 {
        if let Some(ast::Expr::Identifier(id)) = arg_expr(raw_args[0]) {
            let ty = crate::expr::parse_type_name(&id.value)?;
            let v =
                arg_expr(raw_args[1]).ok_or_else(|| SqlError::syntax("bad argument to CONVERT"))?;
            return Ok(Expr::Cast(Box::new(Expr::compile(p, scope, v)?), ty));
        }
    }
    let mut args = Vec::new();
    for a in &raw_args {
        let e = arg_expr(a)
            .ok_or_else(|| SqlError::syntax(format!("unsupported argument to {name}")))?;
        args.push(Expr::compile(p, scope, e)?);
    }
    // Set-returning functions run in FROM only.
    if crate::jsonfn::srf(&name).is_some() {
        return Err(SqlError::unsupported(format!(
            "set-returning function {name}() outside FROM (write FROM {name}(...))"
        )));
    }
    if let Some(j) = crate::jsonfn::lookup(&name) {
        return Ok(Expr::Func(Func::Json(j), args));
    }
    if name == "pg_typeof" {
        return pg_typeof(p, scope, &raw_args, &args);
    }
    let func = match name.as_str() {
        "now"
        | "getdate"
        | "sysdatetime"
        | "getutcdate"
        | "sysutcdatetime"
        | "current_timestamp"
        | "transaction_timestamp" => Func::Now,
        "localtimestamp" => Func::LocalTimestamp,
        "date_trunc" => Func::DateTrunc,
        "age" => Func::Age,
        "statement_timestamp" => Func::StatementTimestamp,
        "clock_timestamp" | "timeofday" => Func::ClockTimestamp,
        "pg_sleep" => Func::Sleep,
        "pg_advisory_lock" => Func::AdvisoryLock,
        "pg_try_advisory_lock" => Func::AdvisoryTryLock,
        "pg_advisory_unlock" => Func::AdvisoryUnlock,
        "pg_advisory_unlock_all" => Func::AdvisoryUnlockAll,
        "set_config" => Func::SetConfig,
        "to_regtype" => Func::ToRegType,
        "current_date" => Func::Today,
        "newid" | "gen_random_uuid" | "uuid_generate_v4" => Func::NewUuid,
        "db_id" => Func::DbId,
        "db_name" | "current_database" => Func::DbName,
        "pg_backend_pid" => Func::Spid,
        "version" => Func::Version,
        "current_user" | "session_user" | "current_role" | "suser_sname" | "user_name" => {
            Func::CurrentUser
        }
        "current_schema" | "schema_name" => Func::CurrentSchema,
        "nextval" => Func::NextVal,
        "coalesce" | "isnull" | "ifnull" | "nvl" => Func::Coalesce,
        "nullif" => Func::NullIf,
        "upper" | "ucase" => Func::Upper,
        "lower" | "lcase" => Func::Lower,
        "length" | "len" | "char_length" | "character_length" => Func::Length,
        "substring" | "substr" => Func::Substring,
        "trim" | "btrim" => Func::Trim,
        "ltrim" => Func::Ltrim,
        "rtrim" => Func::Rtrim,
        "replace" => Func::Replace,
        "concat" => Func::Concat,
        "left" => Func::Left,
        "right" => Func::Right,
        "abs" => Func::Abs,
        "round" => Func::Round,
        "floor" => Func::Floor,
        "ceil" | "ceiling" => Func::Ceil,
        "mod" => Func::Mod,
        "power" | "pow" => Func::Power,
        "sqrt" => Func::Sqrt,
        "random" | "rand" => Func::Random,
        "date_part" => Func::DatePartPg,
        "greatest" => Func::Greatest,
        "least" => Func::Least,
        "to_char" => Func::ToChar,
        "current_setting" => Func::CurrentSetting,
        "pg_get_userbyid" => Func::Privilege(crate::privileges::PrivFn::UserById),
        "has_table_privilege" => Func::Privilege(crate::privileges::PrivFn::Table),
        "has_column_privilege" => Func::Privilege(crate::privileges::PrivFn::Column),
        "has_database_privilege" => Func::Privilege(crate::privileges::PrivFn::Database),
        "has_schema_privilege" => Func::Privilege(crate::privileges::PrivFn::Schema),
        "pg_has_role" => Func::Privilege(crate::privileges::PrivFn::Role),
        "pg_table_is_visible"
        | "pg_type_is_visible"
        | "pg_function_is_visible"
        | "pg_collation_is_visible" => Func::True,
        "pg_relation_is_publishable" | "pg_is_in_recovery" => Func::False,
        "col_description"
        | "obj_description"
        | "shobj_description"
        | "pg_get_statisticsobjdef_columns"
        | "pg_get_partkeydef"
        | "pg_get_viewdef"
        | "pg_get_triggerdef"
        | "pg_get_ruledef"
        | "pg_tablespace_location"
        | "pg_get_function_result"
        | "pg_get_function_arguments"
        // Identity and serial columns here own no sequence object.
        | "pg_get_serial_sequence" => Func::Null,
        "pg_encoding_to_char" => Func::EncodingName,
        "array_to_string" => Func::ArrayToString,
        "format_type" => Func::FormatType,
        "pg_get_expr" => Func::PgGetExpr,
        "pg_get_indexdef" => Func::PgGetIndexDef,
        "pg_get_constraintdef" => Func::PgGetConstraintDef,
        "array_upper" | "array_length" => Func::ArrayUpper,
        "cardinality" => Func::Cardinality,
        "quote_ident" => Func::QuoteIdent,
        "pg_partition_ancestors" => Func::PartitionAncestors,
        "pg_table_size"
        | "pg_relation_size"
        | "pg_total_relation_size"
        | "pg_indexes_size"
        | "pg_database_size" => Func::RelationSize,
        "pg_size_pretty" => Func::SizePretty,
        other => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!("function {other}() does not exist"),
            ))
        }
    };
    let arity = match func {
        Func::AdvisoryLock | Func::AdvisoryTryLock | Func::AdvisoryUnlock => Some(1..=2),
        Func::AdvisoryUnlockAll => Some(0..=0),
        Func::Sleep | Func::ToRegType | Func::PartitionAncestors => Some(1..=1),
        Func::SetConfig => Some(3..=3),
        Func::Trim | Func::Ltrim | Func::Rtrim => Some(1..=2),
        Func::DateTrunc | Func::DatePartPg | Func::ToChar => Some(2..=2),
        Func::Age => Some(1..=2),
        _ => None,
    };
    if let Some(r) = arity {
        if !r.contains(&args.len()) {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function {name}() with {} arguments does not exist",
                    args.len()
                ),
            ));
        }
    }
    // length(char(n)) does not count the padding.
    if func == Func::Length && args.len() == 1 && crate::expr::is_char(p, scope, &args[0]) {
        let a = args.pop().unwrap();
        args.push(crate::expr::unpad(a));
    }
    if func == Func::NextVal {
        if args.len() != 1 {
            return Err(SqlError::syntax("nextval takes one argument"));
        }
        p.uses_sequences = true;
    }
    Ok(Expr::Func(func, args))
}

/// An advisory lock's name from its arguments: one bigint, or two integers.
fn advisory_key(a: &[Value], database: u32) -> Result<crate::advisory::Key> {
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
fn sleep(secs: &Value, env: &Env<'_>) -> Result<()> {
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

fn text_arg(v: &Value) -> String {
    v.to_string()
}

fn int_arg(v: &Value, what: &str) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
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

fn to_ts(v: &Value) -> Result<i64> {
    match cast(v.clone(), &DataType::Timestamp)? {
        Value::Timestamp(t) => Ok(t),
        _ => Err(SqlError::new(
            ErrorKind::DataException,
            "expected a timestamp",
        )),
    }
}

const DAY: i64 = 86_400_000_000;

fn add_months(t: i64, months: i64) -> i64 {
    let days = t.div_euclid(DAY);
    let rem = t.rem_euclid(DAY);
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m as i64 - 1) + months;
    let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    let last = [
        31,
        if (ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0 {
            29
        } else {
            28
        },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ][nm as usize - 1];
    days_from_civil(ny, nm, d.min(last)) * DAY + rem
}

fn unit_micros(unit: &str) -> Option<i64> {
    Some(match unit {
        "day" | "dd" | "d" | "dayofyear" | "dy" | "y" | "weekday" | "dw" => DAY,
        "week" | "wk" | "ww" => 7 * DAY,
        "hour" | "hh" => 3_600_000_000,
        "minute" | "mi" | "n" => 60_000_000,
        "second" | "ss" | "s" => 1_000_000,
        "millisecond" | "ms" => 1000,
        "microsecond" | "mcs" => 1,
        _ => return None,
    })
}

fn month_units(unit: &str) -> Option<i64> {
    Some(match unit {
        "month" | "mm" | "m" => 1,
        "quarter" | "qq" | "q" => 3,
        "year" | "yy" | "yyyy" => 12,
        _ => return None,
    })
}

/// Calls a scalar function on evaluated arguments.
pub fn call(f: Func, a: Vec<Value>, env: &Env<'_>) -> Result<Value> {
    let null_in = a.iter().any(|v| v.is_null());
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        Func::Json(j) => crate::jsonfn::call(j, a)?,
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
        Func::ToRegType => match arg(0) {
            Value::Null => Value::Null,
            v => crate::pg_catalog::regtype_oid(&text_arg(&v)).unwrap_or(Value::Null),
        },
        Func::Today => Value::Date(
            walden_engine::types::datetime::tz_to_local(env.info.now).div_euclid(DAY) as i32,
        ),
        Func::NewUuid => Value::Uuid(uuid::Uuid::new_v4().as_u128()),
        Func::Spid => Value::Int(env.info.spid as i64),
        Func::Version => Value::text("PostgreSQL 15.0 (Walden 0.1, delayed-durability workbench)"),
        Func::CurrentUser => Value::text(&env.info.user),
        Func::CurrentSchema => Value::text("public"),
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
            let name = text_arg(&arg(0));
            let name = name
                .rsplit('.')
                .next()
                .unwrap_or(&name)
                .trim_matches('"')
                .to_string();
            if env.tx.read_only() {
                return Err(crate::txmodes::read_only_error("nextval()"));
            }
            Value::Int(env.tx.database().nextval(env.tx.session(), &name)?)
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
                    crate::pg_catalog::format_type(oid, typmod).unwrap_or_else(|| "???".into()),
                )
            }
        },
        Func::ArrayBuild => {
            let items: Vec<Option<String>> = a
                .iter()
                .map(|v| (!v.is_null()).then(|| v.to_string()))
                .collect();
            Value::text(crate::pg_catalog::array_format(
                items.iter().map(|s| s.as_deref()),
            ))
        }
        Func::AnyArray(op, all) => {
            // SQL's quantified comparison: a NULL comparison makes an
            // undecided result NULL; an empty array gives ALL true, ANY false.
            let x = arg(0);
            if arg(1).is_null() {
                return Ok(Value::Null);
            }
            let mut saw_null = false;
            for item in crate::pg_catalog::array_elements(&arg(1)) {
                let r = crate::expr::binary(
                    op,
                    x.clone(),
                    item.map(Value::text).unwrap_or(Value::Null),
                )?;
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
        Func::True => Value::Bool(true),
        Func::Privilege(f) => crate::privileges::call(f, &a, env)?,
        Func::False => Value::Bool(false),
        _ if null_in && f != Func::Concat => Value::Null,
        Func::Concat => Value::text(
            a.iter()
                .filter(|v| !v.is_null())
                .map(|v| v.to_string())
                .collect::<String>(),
        ),
        Func::Upper => Value::text(text_arg(&arg(0)).to_uppercase()),
        Func::Lower => Value::text(text_arg(&arg(0)).to_lowercase()),
        Func::Length => Value::Int(text_arg(&arg(0)).chars().count() as i64),
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
        Func::ArrayToString => {
            let sep = text_arg(&arg(1));
            let null_as = a.get(2).map(text_arg);
            let parts: Vec<String> = crate::pg_catalog::array_elements(&arg(0))
                .into_iter()
                .filter_map(|e| e.or_else(|| null_as.clone()))
                .collect();
            Value::text(parts.join(&sep))
        }
        Func::PgGetExpr => Value::text(text_arg(&arg(0))),
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
                .map(Value::text)
                .unwrap_or(Value::Null)
        }
        Func::RegClassOid => crate::pg_catalog::regclass_oid(env, &text_arg(&arg(0)))?,
        Func::RegClassName => Value::text(crate::pg_catalog::regclass_name(
            env,
            int_arg(&arg(0), "regclass")?,
        )),
        Func::RegTypeOid => crate::pg_catalog::regtype_oid(&text_arg(&arg(0)))?,
        Func::RegTypeName => Value::text(crate::pg_catalog::regtype_name(int_arg(
            &arg(0),
            "regtype",
        )?)),
        Func::RegNamespaceOid => crate::pg_catalog::regnamespace_oid(&text_arg(&arg(0)))?,
        Func::RegNamespaceName => Value::text(crate::pg_catalog::regnamespace_name(int_arg(
            &arg(0),
            "regnamespace",
        )?)),
        Func::ArrayUpper => {
            // One-dimensional arrays only; an empty array has no upper bound.
            let n = crate::pg_catalog::array_elements(&arg(0)).len();
            if int_arg(&arg(1), "array_upper")? != 1 || n == 0 {
                Value::Null
            } else {
                Value::Int(n as i64)
            }
        }
        Func::Cardinality => Value::Int(crate::pg_catalog::array_elements(&arg(0)).len() as i64),
        Func::ArrayElement => {
            let idx = int_arg(&arg(1), "array subscript")?;
            let items = crate::pg_catalog::array_elements(&arg(0));
            usize::try_from(idx - 1)
                .ok()
                .and_then(|i| items.into_iter().nth(i).flatten())
                .map(Value::text)
                .unwrap_or(Value::Null)
        }
        Func::QuoteIdent => Value::text(crate::pg_catalog::quote_ident(&text_arg(&arg(0)))),
        Func::PartitionAncestors => match arg(0) {
            Value::Text(t) => crate::pg_catalog::regclass_oid(env, &t)?,
            other => other,
        },
        Func::RelationSize => Value::Int(0),
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
                None => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedObject,
                        format!("unrecognized configuration parameter \"{name}\""),
                    ))
                }
            }
        }
    })
}

fn rand_f64() -> f64 {
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

/// Running state of one aggregate in one group.
#[derive(Clone, Debug)]
pub enum Acc {
    Count(i64),
    Sum(Option<Value>),
    Avg(Option<Value>, i64),
    MinMax(Option<Value>),
    Str(Option<String>),
    Bool(Option<bool>),
    Json(crate::jsonfn::JsonAcc),
}

impl Acc {
    pub fn new(kind: AggKind) -> Acc {
        match kind {
            AggKind::CountStar | AggKind::Count => Acc::Count(0),
            AggKind::Sum => Acc::Sum(None),
            AggKind::Avg => Acc::Avg(None, 0),
            AggKind::Min | AggKind::Max => Acc::MinMax(None),
            AggKind::StringAgg => Acc::Str(None),
            AggKind::BoolAnd | AggKind::BoolOr => Acc::Bool(None),
            AggKind::JsonAgg { .. } | AggKind::JsonObjectAgg { .. } => {
                Acc::Json(Default::default())
            }
        }
    }

    pub fn add(&mut self, kind: AggKind, v: Value, sep: &Value) -> Result<()> {
        if kind == AggKind::CountStar {
            if let Acc::Count(n) = self {
                *n += 1;
            }
            return Ok(());
        }
        // json aggregates keep NULL inputs (as json null).
        if let Acc::Json(acc) = self {
            match kind {
                AggKind::JsonObjectAgg { .. } => acc.push_pair(v, sep.clone())?,
                _ => acc.push(v),
            }
            return Ok(());
        }
        if v.is_null() {
            return Ok(());
        }
        match self {
            Acc::Count(n) => *n += 1,
            Acc::Sum(s) => {
                *s = Some(match s.take() {
                    None => match v {
                        Value::Int(_) | Value::Float(_) | Value::Decimal(_) => v,
                        other => {
                            crate::expr::binary(crate::expr::BinOp::Add, Value::Int(0), other)?
                        }
                    },
                    Some(acc) => sum_add(acc, v)?,
                })
            }
            Acc::Avg(s, n) => {
                *s = Some(match s.take() {
                    None => v,
                    Some(acc) => sum_add(acc, v)?,
                });
                *n += 1;
            }
            Acc::MinMax(m) => {
                let replace = match m {
                    None => true,
                    Some(cur) => {
                        let o = compare(&v, cur)?.unwrap_or(Ordering::Equal);
                        (kind == AggKind::Min && o == Ordering::Less)
                            || (kind == AggKind::Max && o == Ordering::Greater)
                    }
                };
                if replace {
                    *m = Some(v);
                }
            }
            Acc::Str(s) => {
                let t = v.to_string();
                *s = Some(match s.take() {
                    None => t,
                    Some(mut acc) => {
                        acc.push_str(&sep.to_string());
                        acc.push_str(&t);
                        acc
                    }
                })
            }
            Acc::Bool(b) => {
                let x = crate::expr::truth(&v)?.unwrap_or(false);
                *b = Some(match (*b, kind) {
                    (None, _) => x,
                    (Some(p), AggKind::BoolAnd) => p && x,
                    (Some(p), _) => p || x,
                })
            }
            Acc::Json(_) => {}
        }
        Ok(())
    }

    pub fn finish(self, kind: AggKind) -> Result<Value> {
        Ok(match self {
            Acc::Json(acc) => match kind {
                AggKind::JsonObjectAgg { jsonb } => acc.finish(true, jsonb)?,
                AggKind::JsonAgg { jsonb } => acc.finish(false, jsonb)?,
                _ => Value::Null,
            },
            Acc::Count(n) => Value::Int(n),
            Acc::Sum(s) => s.unwrap_or(Value::Null),
            Acc::Avg(None, _) => Value::Null,
            Acc::Avg(Some(s), n) => match s {
                Value::Float(f) => Value::Float(f / n as f64),
                Value::Int(i) => Value::Decimal(
                    (Decimal::from(i) / Decimal::from(n))
                        .round_dp(16)
                        .normalize(),
                ),
                Value::Decimal(d) => {
                    Value::Decimal((d / Decimal::from(n)).round_dp(16).normalize())
                }
                other => other,
            },
            Acc::MinMax(m) => m.unwrap_or(Value::Null),
            Acc::Str(s) => s.map(Value::text).unwrap_or(Value::Null),
            Acc::Bool(b) => b.map(Value::Bool).unwrap_or(Value::Null),
        })
    }
}

fn sum_add(acc: Value, v: Value) -> Result<Value> {
    match (&acc, &v) {
        // Integer sums that overflow i64 continue as decimals, as PostgreSQL's
        // sum(bigint) returns numeric.
        (Value::Int(a), Value::Int(b)) => Ok(match a.checked_add(*b) {
            Some(s) => Value::Int(s),
            None => Value::Decimal(Decimal::from(*a) + Decimal::from(*b)),
        }),
        _ => crate::expr::binary(crate::expr::BinOp::Add, acc, v),
    }
}

/// The static type of an aggregate's result.
pub fn aggregate_type(kind: AggKind, arg: Option<&DataType>) -> DataType {
    match kind {
        AggKind::CountStar | AggKind::Count => DataType::BigInt,
        AggKind::Sum => match arg {
            Some(DataType::SmallInt | DataType::Int | DataType::BigInt) => DataType::BigInt,
            Some(DataType::Real | DataType::Double) => DataType::Double,
            _ => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
        },
        AggKind::Avg => match arg {
            Some(DataType::Real | DataType::Double) => DataType::Double,
            _ => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
        },
        AggKind::Min | AggKind::Max => arg.cloned().unwrap_or(DataType::Text),
        AggKind::StringAgg => DataType::Text,
        AggKind::BoolAnd | AggKind::BoolOr => DataType::Bool,
        AggKind::JsonAgg { jsonb } | AggKind::JsonObjectAgg { jsonb } => {
            if jsonb {
                DataType::Jsonb
            } else {
                DataType::Json
            }
        }
    }
}

/// The static type of a scalar function's result.
pub fn func_type(f: Func, args: &[DataType]) -> DataType {
    match f {
        Func::StatementTimestamp | Func::ClockTimestamp => DataType::TimestampTz,
        Func::LocalTimestamp => DataType::Timestamp,
        Func::Extract => DataType::Decimal {
            precision: 0,
            scale: 0,
        },
        Func::DatePartPg => DataType::Double,
        Func::Age => DataType::Interval,
        Func::DateTrunc => match args.get(1) {
            Some(DataType::Timestamp) => DataType::Timestamp,
            Some(DataType::Interval) => DataType::Interval,
            _ => DataType::TimestampTz,
        },
        Func::AdvisoryTryLock | Func::AdvisoryUnlock => DataType::Bool,
        Func::ToRegType => DataType::Int,
        Func::Now => DataType::TimestampTz,
        Func::DateAdd => {
            if args.get(2) == Some(&DataType::Date) {
                DataType::Date
            } else {
                DataType::Timestamp
            }
        }
        Func::Today => DataType::Date,
        Func::NewUuid => DataType::Uuid,
        Func::DbId | Func::Spid => DataType::Int,
        Func::NextVal | Func::Length | Func::DateDiff | Func::DatePart => DataType::BigInt,
        Func::Coalesce
        | Func::NullIf
        | Func::Greatest
        | Func::Least
        | Func::Abs
        | Func::Round
        | Func::Floor
        | Func::Ceil
        | Func::Mod => args.first().cloned().unwrap_or(DataType::Text),
        Func::Power | Func::Sqrt | Func::Random => DataType::Double,
        Func::True | Func::False | Func::AnyArray(..) => DataType::Bool,
        Func::Privilege(f) if f != crate::privileges::PrivFn::UserById => DataType::Bool,
        Func::RegClassOid | Func::RegTypeOid | Func::RegNamespaceOid => DataType::Int,
        Func::ArrayUpper | Func::Cardinality => DataType::Int,
        Func::RelationSize => DataType::BigInt,
        Func::Json(j) => crate::jsonfn::result_type(j, args),
        _ => DataType::Text,
    }
}
