//! Compiling a scalar function call from sqlparser's AST: the function
//! it names, its arguments bound and typed (`VARIADIC array` included).

use super::*;
use crate::front::{arg_expr, args_of, fname, VARIADIC_MARK};
use crate::functions::SizeOf;
use crate::functions::*;
use sqlparser::ast::{FunctionArg, FunctionArguments};

/// `pg_typeof(x)`: the argument's type as a `regtype` (a string literal or
/// NULL is `unknown`, as there). The type is known when the statement is
/// planned, so this is a constant.
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
    // After GROUP BY the argument is over the grouped row.
    let types: Vec<DataType> = match &p.agg {
        Some(ctx) => ctx.row_types(&p.params),
        None => scope.cols.iter().map(|c| c.ty.clone()).collect(),
    };
    // A select-list SRF's column is typed by the call.
    let srf_type = match (&p.srf, arg) {
        (crate::query::srf::SrfSlot::Open(calls), Expr::Col(i)) => {
            crate::query::srf::column_type(calls, *i)
        }
        _ => None,
    };
    let ty = srf_type
        .or_else(|| crate::query::static_type(arg, &types, &p.params))
        .filter(|_| !untyped);
    // unknown's OID.
    let oid = ty
        .as_ref()
        .map_or(705, |t| crate::types::type_oid_and_mod(t).0);
    let name = match ty {
        None => "unknown".to_string(),
        // regtype shows bpchar by its SQL name.
        Some(DataType::Char(_)) => "character".to_string(),
        Some(DataType::Enum(e)) => crate::types::quote_ident(&e.name),
        Some(DataType::Array(e)) if matches!(*e, DataType::Enum(_)) => {
            format!("{}[]", e.sql_name())
        }
        _ => crate::types::regtype_name(oid),
    };
    Ok(Expr::Lit(Value::Reg(
        walden_engine::RegKind::Type,
        oid as u32,
        name.into(),
    )))
}

/// An untyped parameter of a polymorphic array function takes its type from
/// the other argument, as PostgreSQL resolves anyarray / anyelement:
/// `array_cat(xs, $1)` makes `$1` int[] beside an int[] `xs`,
/// `array_append($1, 2)` makes it int[], `array_append(xs, $1)` int.
fn infer_array_params(p: &mut Planner<'_>, scope: &Scope, func: Func, args: &[Expr]) {
    // (the array argument, the element argument), by position.
    let (arr, elem) = match func {
        Func::ArrayCat => {
            let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
            for (a, b) in [(0, 1), (1, 0)] {
                if let (Expr::Param(i), Some(t @ DataType::Array(_))) = (
                    &args[a],
                    crate::query::static_type(&args[b], &types, &p.params),
                ) {
                    p.infer_param(*i, t);
                }
            }
            return;
        }
        Func::ArrayAppend | Func::ArrayRemove | Func::ArrayPosition | Func::ArrayPositions => {
            (0, 1)
        }
        Func::ArrayPrepend => (1, 0),
        _ => return,
    };
    let (Some(a), Some(e)) = (args.get(arr), args.get(elem)) else {
        return;
    };
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    match (a, e) {
        (Expr::Param(i), e) => {
            if let Some(t) = crate::query::static_type(e, &types, &p.params)
                .filter(|t| !matches!(t, DataType::Array(_)))
            {
                p.infer_param(*i, DataType::Array(Box::new(t)));
            }
        }
        (a, Expr::Param(i)) => {
            if let Some(DataType::Array(t)) = crate::query::static_type(a, &types, &p.params) {
                p.infer_param(*i, *t);
            }
        }
        _ => {}
    }
}

/// Compiles a scalar function call.
/// The parameter names of the built-in functions that take named
/// arguments (`make_interval(days => 3)`), in their positions.
fn parameter_names(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "make_interval" => Some(&["years", "months", "weeks", "days", "hours", "mins", "secs"]),
        _ => None,
    }
}

/// A call with named arguments (`name => value` or `name := value`):
/// positional ones first, then each named one in its parameter's place, the
/// places between filled with the defaults (0 for every such parameter).
fn compile_named(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    name: &str,
    raw: &[&FunctionArg],
) -> Result<Expr> {
    let no_such = || {
        SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "function {name}({}) does not exist",
                raw.iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    };
    let params = parameter_names(name).ok_or_else(no_such)?;
    let mut slots: Vec<Option<Expr>> = params.iter().map(|_| None).collect();
    let mut named_seen = false;
    for (i, a) in raw.iter().enumerate() {
        let (slot, e) = match a {
            FunctionArg::Unnamed(_) if named_seen => {
                return Err(SqlError::syntax(
                    "positional argument cannot follow named argument",
                ))
            }
            FunctionArg::Unnamed(_) => (i, arg_expr(a)),
            FunctionArg::Named { name: n, .. } => {
                named_seen = true;
                let n = crate::expr::fold_ident(n);
                (
                    params.iter().position(|p| *p == n).ok_or_else(no_such)?,
                    arg_expr(a),
                )
            }
            FunctionArg::ExprNamed {
                name: ast::Expr::Identifier(n),
                ..
            } => {
                named_seen = true;
                let n = crate::expr::fold_ident(n);
                (
                    params.iter().position(|p| *p == n).ok_or_else(no_such)?,
                    arg_expr(a),
                )
            }
            _ => return Err(no_such()),
        };
        let e = e.ok_or_else(|| SqlError::syntax(format!("unsupported argument to {name}")))?;
        let place = slots.get_mut(slot).ok_or_else(no_such)?;
        if place.is_some() {
            return Err(SqlError::syntax(format!(
                "argument name \"{}\" used more than once",
                params[slot]
            )));
        }
        *place = Some(Expr::compile(p, scope, e)?);
    }
    let last = slots.iter().rposition(Option::is_some).map_or(0, |k| k + 1);
    let args = slots
        .into_iter()
        .take(last)
        .map(|e| e.unwrap_or(Expr::Lit(Value::Int(0))))
        .collect();
    let func = match name {
        "make_interval" => Func::MakeInterval,
        _ => return Err(no_such()),
    };
    Ok(Expr::Func(func, args))
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
    // Aggregates with FILTER are compiled elsewhere; on anything else the
    // clause would be ignored, so it is an error, as in PostgreSQL.
    if f.filter.is_some() {
        return Err(SqlError::new(
            ErrorKind::WrongObjectType,
            format!("FILTER specified, but {name} is not an aggregate function"),
        ));
    }
    if f.over.is_some() {
        return Err(SqlError::unsupported(format!(
            "window function call {name}() OVER (...)"
        )));
    }
    if !f.within_group.is_empty() {
        return Err(SqlError::unsupported(format!(
            "{name}() WITHIN GROUP (...)"
        )));
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
        // The type: a name, or a name with a length (`varchar(30)`, which
        // parses as a call).
        let type_text = match arg_expr(raw_args[0]) {
            Some(ast::Expr::Identifier(id)) => Some(id.value.clone()),
            Some(ast::Expr::Function(t)) if t.name.0.len() == 1 => Some(t.to_string()),
            _ => None,
        };
        if let Some(type_text) = type_text {
            // A style changes how dates, money and floats are written and
            // read; Walden's conversion has SQL's one form.
            if raw_args.len() > 2 {
                return Err(SqlError::unsupported(format!(
                    "{}(type, value, style): conversion styles",
                    name.to_ascii_uppercase()
                )));
            }
            let ty = crate::types::names::parse_type_name(&type_text)?;
            let v =
                arg_expr(raw_args[1]).ok_or_else(|| SqlError::syntax("bad argument to CONVERT"))?;
            return Ok(Expr::Cast(Box::new(Expr::compile(p, scope, v)?), ty));
        }
    }
    if let Some((last, rest)) = raw_args.split_last() {
        if let Some(array) = arg_expr(last).and_then(variadic_marked) {
            return compile_variadic(p, scope, &name, rest, array);
        }
    }
    if raw_args
        .iter()
        .any(|a| !matches!(a, FunctionArg::Unnamed(_)))
    {
        return compile_named(p, scope, &name, &raw_args);
    }
    let mut args = Vec::new();
    for a in &raw_args {
        let e = arg_expr(a)
            .ok_or_else(|| SqlError::syntax(format!("unsupported argument to {name}")))?;
        args.push(Expr::compile(p, scope, e)?);
    }
    // Set-returning functions run in FROM only.
    if crate::functions::json::srf(&name).is_some() {
        return Err(SqlError::unsupported(format!(
            "set-returning function {name}() outside FROM (write FROM {name}(...))"
        )));
    }
    if let Some(j) = crate::functions::json::lookup(&name) {
        use crate::functions::json::JsonFn;
        // Records and arrays reach the builders as json made by their type.
        let args = match j {
            JsonFn::To { .. } | JsonFn::BuildArray { .. } => args
                .into_iter()
                .map(|a| super::record::json_arg(p, scope, a))
                .collect(),
            JsonFn::BuildObject { .. } => args
                .into_iter()
                .enumerate()
                .map(|(i, a)| {
                    if i % 2 == 1 {
                        super::record::json_arg(p, scope, a)
                    } else {
                        a
                    }
                })
                .collect(),
            _ => args,
        };
        return Ok(Expr::Func(Func::Json(j), args));
    }
    if let Some(b) = crate::functions::BinaryStrFn::by_name(&name) {
        return binary_str_call(p, scope, &name, b, args);
    }
    if name == "row_to_json" || name == "array_to_json" {
        return to_json_of(p, scope, &name, &raw_args, args);
    }
    if name == "pg_typeof" {
        return pg_typeof(p, scope, &raw_args, &args);
    }
    if name == "datalength" {
        return datalength(p, scope, args);
    }
    let func = match name.as_str() {
        // T-SQL's GETDATE() and SYSDATETIME() are datetime / datetime2: a
        // local time without an offset.
        "getdate" | "sysdatetime" => Func::LocalTimestamp,
        "now" | "getutcdate" | "sysutcdatetime" | "current_timestamp" | "transaction_timestamp" => {
            Func::Now
        }
        "localtimestamp" => Func::LocalTimestamp,
        "date_trunc" => Func::DateTrunc,
        "make_date" => Func::MakeDate,
        "make_time" => Func::MakeTime,
        "make_timestamp" => Func::MakeTimestamp,
        "make_timestamptz" => Func::MakeTimestampTz,
        "make_interval" => Func::MakeInterval,
        "to_timestamp" if args.len() == 1 => Func::ToTimestamp,
        "date_bin" => Func::DateBin,
        "justify_days" => Func::JustifyDays,
        "justify_hours" => Func::JustifyHours,
        "justify_interval" => Func::JustifyInterval,
        "isfinite" => Func::IsFinite,
        "age" => Func::Age,
        "statement_timestamp" => Func::StatementTimestamp,
        "clock_timestamp" | "timeofday" => Func::ClockTimestamp,
        "pg_sleep" => Func::Sleep,
        "pg_notify" => Func::Notify,
        "pg_notification_queue_usage" => Func::NotificationQueueUsage,
        "pg_advisory_lock" => Func::AdvisoryLock,
        "pg_try_advisory_lock" => Func::AdvisoryTryLock,
        "pg_advisory_unlock" => Func::AdvisoryUnlock,
        "pg_advisory_unlock_all" => Func::AdvisoryUnlockAll,
        "set_config" => Func::SetConfig,
        "to_regtype" => Func::ToReg(walden_engine::RegKind::Type),
        "to_regclass" => Func::ToReg(walden_engine::RegKind::Class),
        "to_regnamespace" => Func::ToReg(walden_engine::RegKind::Namespace),
        "current_date" => Func::Today,
        "newid" | "gen_random_uuid" | "uuid_generate_v4" => Func::NewUuid,
        "db_id" => Func::DbId,
        "db_name" | "current_database" => Func::DbName,
        "schema_name" => Func::SchemaName,
        "pg_backend_pid" => Func::Spid,
        "pg_my_temp_schema" => Func::MyTempSchema,
        "pg_is_other_temp_schema" => Func::IsOtherTempSchema,
        "pg_reload_conf" => Func::ReloadConf,
        "pg_blocking_pids" => Func::BlockingPids,
        "pg_cancel_backend" => Func::SignalBackend(false),
        "pg_terminate_backend" => Func::SignalBackend(true),
        "version" => Func::Version,
        "current_user" | "session_user" | "current_role" | "suser_sname" | "user_name" => {
            Func::CurrentUser
        }
        "current_schema" => Func::CurrentSchema,
        "current_schemas" => Func::CurrentSchemas,
        "nextval" => Func::NextVal,
        "setval" => Func::SetVal,
        "currval" => Func::CurrVal,
        "lastval" => Func::LastVal,
        "coalesce" | "isnull" | "ifnull" | "nvl" => Func::Coalesce,
        "nullif" => Func::NullIf,
        "upper" | "ucase" => Func::Upper,
        "lower" | "lcase" => Func::Lower,
        "initcap" => Func::Initcap,
        "length" | "len" | "char_length" | "character_length" => Func::Length,
        "substring" | "substr" => Func::Substring,
        "trim" | "btrim" => Func::Trim,
        "ltrim" => Func::Ltrim,
        "rtrim" => Func::Rtrim,
        "replace" => Func::Replace,
        "concat" => Func::Concat,
        "concat_ws" => Func::ConcatWs,
        "left" => Func::Left,
        "md5" => Func::Md5,
        "regexp_replace" => Func::RegexpReplace,
        "regexp_match" => Func::RegexpMatch,
        "regexp_split_to_array" => Func::RegexpSplitToArray,
        "regexp_count" => Func::RegexpCount,
        "regexp_instr" => Func::RegexpInstr,
        "regexp_substr" => Func::RegexpSubstr,
        "regexp_like" => Func::RegexpLike,
        "split_part" => Func::SplitPart,
        "repeat" | "replicate" => Func::Repeat,
        "octet_length" => Func::OctetLength,
        "bit_length" => Func::BitLength,
        "strpos" => Func::StrPos,
        "ascii" => Func::Ascii,
        "chr" => Func::Chr,
        "format" => Func::Format,
        "lpad" => Func::Lpad,
        "rpad" => Func::Rpad,
        "right" => Func::Right,
        "abs" => Func::Abs,
        "round" => Func::Round,
        "trunc" => Func::Trunc,
        "floor" => Func::Floor,
        "ceil" | "ceiling" => Func::Ceil,
        "mod" => Func::Mod,
        "power" | "pow" => Func::Power,
        "sqrt" => Func::Sqrt,
        "ln" => Func::Ln,
        "exp" => Func::Exp,
        "log" => Func::Log,
        "log10" => Func::Log10,
        "cbrt" => Func::FloatFn(crate::functions::FloatFn::Cbrt),
        "sinh" => Func::FloatFn(crate::functions::FloatFn::Sinh),
        "cosh" => Func::FloatFn(crate::functions::FloatFn::Cosh),
        "tanh" => Func::FloatFn(crate::functions::FloatFn::Tanh),
        "asinh" => Func::FloatFn(crate::functions::FloatFn::Asinh),
        "acosh" => Func::FloatFn(crate::functions::FloatFn::Acosh),
        "atanh" => Func::FloatFn(crate::functions::FloatFn::Atanh),
        "sin" => Func::FloatFn(crate::functions::FloatFn::Sin),
        "cos" => Func::FloatFn(crate::functions::FloatFn::Cos),
        "tan" => Func::FloatFn(crate::functions::FloatFn::Tan),
        "cot" => Func::FloatFn(crate::functions::FloatFn::Cot),
        "asin" => Func::FloatFn(crate::functions::FloatFn::Asin),
        "acos" => Func::FloatFn(crate::functions::FloatFn::Acos),
        "atan" => Func::FloatFn(crate::functions::FloatFn::Atan),
        "atan2" => Func::FloatFn(crate::functions::FloatFn::Atan2),
        "sind" => Func::FloatFn(crate::functions::FloatFn::Sind),
        "cosd" => Func::FloatFn(crate::functions::FloatFn::Cosd),
        "tand" => Func::FloatFn(crate::functions::FloatFn::Tand),
        "cotd" => Func::FloatFn(crate::functions::FloatFn::Cotd),
        "asind" => Func::FloatFn(crate::functions::FloatFn::Asind),
        "acosd" => Func::FloatFn(crate::functions::FloatFn::Acosd),
        "atand" => Func::FloatFn(crate::functions::FloatFn::Atand),
        "atan2d" => Func::FloatFn(crate::functions::FloatFn::Atan2d),
        "degrees" => Func::FloatFn(crate::functions::FloatFn::Degrees),
        "radians" => Func::FloatFn(crate::functions::FloatFn::Radians),
        "pi" => Func::FloatFn(crate::functions::FloatFn::Pi),
        "scale" => Func::Scale,
        "min_scale" => Func::MinScale,
        "trim_scale" => Func::TrimScale,
        "sign" => Func::Sign,
        "div" => Func::Div,
        "gcd" => Func::Gcd,
        "lcm" => Func::Lcm,
        "factorial" => Func::Factorial,
        "width_bucket" => Func::WidthBucket,
        "random" | "rand" => Func::Random,
        "date_part" => Func::DatePartPg,
        "greatest" => Func::Greatest,
        "least" => Func::Least,
        "to_char" => Func::ToChar,
        "to_number" => Func::ToNumber,
        "current_setting" => Func::CurrentSetting,
        "pg_get_userbyid" => Func::Privilege(crate::functions::PrivFn::UserById),
        "has_table_privilege" => Func::Privilege(crate::functions::PrivFn::Table),
        "has_column_privilege" => Func::Privilege(crate::functions::PrivFn::Column),
        "has_database_privilege" => Func::Privilege(crate::functions::PrivFn::Database),
        "has_schema_privilege" => Func::Privilege(crate::functions::PrivFn::Schema),
        "pg_has_role" => Func::Privilege(crate::functions::PrivFn::Role),
        "pg_table_is_visible" | "pg_type_is_visible" => Func::IsVisible,
        // Catalog objects are always visible (pg_catalog is on every
        // path), and Walden has no user-made ones of these kinds.
        "pg_function_is_visible"
        | "pg_collation_is_visible"
        | "pg_conversion_is_visible"
        | "pg_opclass_is_visible"
        | "pg_opfamily_is_visible"
        | "pg_operator_is_visible"
        | "pg_statistics_obj_is_visible"
        | "pg_ts_config_is_visible"
        | "pg_ts_dict_is_visible"
        | "pg_ts_parser_is_visible"
        | "pg_ts_template_is_visible" => Func::True,
        "pg_relation_is_publishable" | "pg_is_in_recovery" => Func::False,
        "obj_description" => Func::ObjDescription,
        "col_description" => Func::ColDescription,
        "pg_get_triggerdef" => Func::TriggerDef,
        "shobj_description"
        | "pg_get_statisticsobjdef_columns"
        | "pg_get_ruledef"
        | "pg_tablespace_location"
        | "pg_get_function_sqlbody" => Func::Null,
        "pg_get_function_result" => Func::FunctionResult,
        "pg_get_function_arguments" => Func::FunctionArguments { defaults: true },
        "pg_get_function_identity_arguments" => Func::FunctionArguments { defaults: false },
        "pg_get_serial_sequence" => Func::SerialSequence,
        "scope_identity" => Func::ScopeIdentity,
        "walden_last_identity" => Func::LastIdentity,
        "ident_current" => Func::Ident(crate::functions::IdentFn::Current),
        "ident_seed" => Func::Ident(crate::functions::IdentFn::Seed),
        "ident_incr" => Func::Ident(crate::functions::IdentFn::Incr),
        "pg_encoding_to_char" | "getdatabaseencoding" => Func::EncodingName,
        "pg_char_to_encoding" => Func::EncodingId,
        "array_to_string" => Func::ArrayToString,
        "format_type" => Func::FormatType,
        "pg_get_expr" => Func::PgGetExpr,
        "pg_get_indexdef" => Func::PgGetIndexDef,
        "pg_get_viewdef" => Func::PgGetViewDef,
        "pg_get_partkeydef" => Func::PgGetPartKeyDef,
        "pg_get_constraintdef" => Func::PgGetConstraintDef,
        "array_upper" => Func::ArrayUpper,
        "array_length" => Func::ArrayLength,
        "array_ndims" => Func::ArrayNdims,
        "array_dims" => Func::ArrayDims,
        "array_lower" => Func::ArrayLower,
        "array_cat" => Func::ArrayCat,
        "array_append" => Func::ArrayAppend,
        "array_prepend" => Func::ArrayPrepend,
        "string_to_array" => Func::StringToArray,
        "cardinality" => Func::Cardinality,
        "quote_ident" => Func::QuoteIdent,
        "quotename" => Func::QuoteName,
        "string_escape" => Func::StringEscape,
        "unicode" => Func::Unicode,
        "quote_literal" => Func::QuoteLiteral,
        "acldefault" => Func::AclDefault,
        "array_remove" => Func::ArrayRemove,
        "array_position" => Func::ArrayPosition,
        "array_positions" => Func::ArrayPositions,
        "pg_partition_ancestors" => Func::PartitionAncestors,
        "pg_table_size" | "pg_relation_size" => Func::RelationSize(SizeOf::Relation),
        "pg_total_relation_size" => Func::RelationSize(SizeOf::Total),
        "pg_indexes_size" => Func::RelationSize(SizeOf::Indexes),
        "pg_database_size" => Func::RelationSize(SizeOf::Database),
        "pg_size_pretty" => Func::SizePretty,
        "walden_routine" => Func::Routine,
        other => {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!("function {other}() does not exist"),
            ))
        }
    };
    let arity = match func {
        Func::AdvisoryLock | Func::AdvisoryTryLock | Func::AdvisoryUnlock => Some(1..=2),
        Func::AdvisoryUnlockAll | Func::NotificationQueueUsage => Some(0..=0),
        Func::Notify => Some(2..=2),
        Func::Sleep | Func::ToReg(_) | Func::PartitionAncestors | Func::CurrentSchemas => {
            Some(1..=1)
        }
        Func::SetConfig => Some(3..=3),
        Func::RelationSize(SizeOf::Relation) if name == "pg_relation_size" => Some(1..=2),
        Func::RelationSize(_) => Some(1..=1),
        Func::AclDefault | Func::ArrayRemove | Func::ArrayPositions => Some(2..=2),
        Func::ArrayPosition => Some(2..=3),
        Func::QuoteLiteral | Func::Ascii | Func::Chr | Func::BitLength => Some(1..=1),
        Func::StrPos => Some(2..=2),
        // PostgreSQL 15's start/N forms of regexp_replace are not here.
        Func::RegexpReplace => Some(3..=6),
        Func::RegexpCount => Some(2..=4),
        Func::RegexpInstr => Some(2..=7),
        Func::RegexpSubstr => Some(2..=6),
        Func::RegexpLike => Some(2..=3),
        Func::RegexpMatch | Func::RegexpSplitToArray => Some(2..=3),
        Func::SplitPart => Some(3..=3),
        Func::Format | Func::ConcatWs => Some(1..=usize::MAX),
        Func::SetVal => Some(2..=3),
        Func::CurrVal => Some(1..=1),
        Func::LastVal => Some(0..=0),
        Func::Trim | Func::Ltrim | Func::Rtrim => Some(1..=2),
        Func::DateTrunc => Some(2..=3),
        Func::DatePartPg | Func::ToChar | Func::ToNumber => Some(2..=2),
        Func::Age => Some(1..=2),
        Func::MakeDate | Func::DateBin => Some(3..=3),
        Func::MakeTime => Some(3..=3),
        Func::MakeTimestamp => Some(6..=6),
        Func::MakeTimestampTz => Some(6..=7),
        Func::MakeInterval => Some(0..=7),
        Func::ToTimestamp
        | Func::JustifyDays
        | Func::JustifyHours
        | Func::JustifyInterval
        | Func::IsFinite => Some(1..=1),
        Func::ArrayUpper | Func::ArrayLower | Func::ArrayLength => Some(2..=2),
        Func::ArrayNdims | Func::ArrayDims => Some(1..=1),
        Func::ArrayCat | Func::ArrayAppend | Func::ArrayPrepend => Some(2..=2),
        Func::StringToArray => Some(2..=3),
        Func::Cardinality | Func::BlockingPids | Func::SignalBackend(false) => Some(1..=1),
        // PostgreSQL 15's timeout argument: the termination is not waited for.
        Func::SignalBackend(true) => Some(1..=2),
        Func::ReloadConf => Some(0..=0),
        Func::Scale | Func::MinScale | Func::TrimScale | Func::Sign | Func::Factorial => {
            Some(1..=1)
        }
        Func::Div | Func::Gcd | Func::Lcm => Some(2..=2),
        // width_bucket(operand, thresholds array) or (operand, low, high, count).
        Func::WidthBucket if args.len() == 2 => Some(2..=2),
        Func::WidthBucket => Some(4..=4),
        Func::FloatFn(crate::functions::FloatFn::Pi) => Some(0..=0),
        Func::FloatFn(crate::functions::FloatFn::Atan2 | crate::functions::FloatFn::Atan2d) => {
            Some(2..=2)
        }
        Func::Ln | Func::Exp | Func::Log10 | Func::FloatFn(_) => Some(1..=1),
        Func::Log => Some(1..=2),
        Func::Routine => Some(1..=usize::MAX),
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
    infer_array_params(p, scope, func, &args);
    // A char(n) argument of a function taking text loses its trailing
    // blanks, as PostgreSQL's bpchar-to-text cast drops them (length()
    // does not count them either; octet_length() does).
    if takes_text(func) {
        for a in args.iter_mut() {
            if crate::expr::is_char(p, scope, a) {
                let e = std::mem::replace(a, Expr::Lit(Value::Null));
                *a = crate::expr::unpad(e);
            }
        }
    }
    // int2vector and oidvector number their elements from 0.
    let types = || -> Vec<DataType> { scope.cols.iter().map(|c| c.ty.clone()).collect() };
    if name != "array_length"
        && matches!(func, Func::ArrayUpper | Func::ArrayLower)
        && matches!(
            crate::query::static_type(&args[0], &types(), &p.params),
            Some(DataType::Int2Vector | DataType::OidVector)
        )
    {
        return Ok(Expr::Bin(
            crate::functions::BinOp::Sub,
            Box::new(Expr::Func(func, args)),
            Box::new(Expr::Lit(Value::Int(1))),
        ));
    }
    let context = match func {
        Func::Coalesce => Some("COALESCE"),
        Func::Greatest => Some("GREATEST"),
        Func::Least => Some("LEAST"),
        _ => None,
    };
    if let Some(context) = context {
        crate::expr::resolve_common(p, scope, args.iter_mut().collect(), context)?;
    }
    if func == Func::NullIf && args.len() == 2 {
        nullif_type(p, scope, &mut args);
    }
    if func == Func::NextVal {
        if args.len() != 1 {
            return Err(SqlError::syntax("nextval takes one argument"));
        }
        p.uses_sequences = true;
    }
    if matches!(func, Func::CurrVal | Func::LastVal) {
        p.uses_sequences = true;
    }
    // T-SQL's LEN does not count trailing blanks.
    if name == "len" && args.len() == 1 {
        let a = args.pop().unwrap();
        args.push(Expr::Func(Func::Rtrim, vec![a]));
    }
    // T-SQL's REPLICATE with a negative count is NULL (repeat's is '').
    if name == "replicate" && args.len() == 2 {
        if let Some(n) = raw_args.get(1).and_then(|a| arg_expr(a)) {
            let n = Expr::compile(p, scope, n)?;
            let ok = Expr::Bin(
                crate::functions::BinOp::GtEq,
                Box::new(n),
                Box::new(Expr::Lit(Value::Int(0))),
            );
            return Ok(Expr::Case(None, vec![(ok, Expr::Func(func, args))], None));
        }
    }
    Ok(Expr::Func(func, args))
}

/// T-SQL's `DATALENGTH(x)`: the bytes a value takes. Strings and binary
/// count their stored bytes (Walden stores text as UTF-8, so an nvarchar
/// counts UTF-8 bytes where SQL Server counts two per UTF-16 unit); the
/// other types their SQL Server size. NULL for NULL.
fn datalength(p: &Planner<'_>, scope: &Scope, mut args: Vec<Expr>) -> Result<Expr> {
    use DataType as T;
    if args.len() != 1 {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "The datalength function requires 1 argument(s), not {}.",
                args.len()
            ),
        ));
    }
    let a = args.pop().expect("one");
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let size = match crate::query::static_type(&a, &types, &p.params) {
        Some(T::Bool) => 1,
        Some(T::SmallInt) => 2,
        Some(T::Int | T::Real | T::Oid) => 4,
        Some(T::BigInt | T::Double | T::Timestamp) => 8,
        Some(T::Date) => 3,
        Some(T::Time) => 5,
        Some(T::TimestampTz) => 10,
        Some(T::Uuid | T::Interval) => 16,
        // decimal(p, s) by its precision; decimal alone is decimal(18, 0).
        Some(T::Decimal { precision, .. }) => match precision {
            1..=9 => 5,
            0 | 10..=19 => 9,
            20..=28 => 13,
            _ => 17,
        },
        _ => return Ok(Expr::Func(Func::OctetLength, vec![a])),
    };
    let null = Expr::IsNull(Box::new(a), false);
    Ok(Expr::Case(
        None,
        vec![(null, Expr::Lit(Value::Null))],
        Some(Box::new(Expr::Lit(Value::Int(size)))),
    ))
}

/// NULLIF's result is its first argument as the `=` PostgreSQL picks takes
/// it: varchar as text, an integer beside a numeric as numeric, an integer
/// or numeric beside a float as double precision.
fn nullif_type(p: &Planner<'_>, scope: &Scope, args: &mut [Expr]) {
    use DataType as T;
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let t0 = crate::query::static_type(&args[0], &types, &p.params);
    let t1 = match &args[1] {
        Expr::Lit(Value::Text(_) | Value::Null) => None,
        e => crate::query::static_type(e, &types, &p.params),
    };
    let int = |t: &T| matches!(t, T::SmallInt | T::Int | T::BigInt);
    let to = match (&t0, &t1) {
        (Some(T::Varchar(_)), _) => T::Text,
        (Some(a), Some(T::Decimal { .. })) if int(a) => T::Decimal {
            precision: 0,
            scale: 0,
        },
        (Some(a), Some(T::Real | T::Double)) if int(a) || matches!(a, T::Decimal { .. }) => {
            T::Double
        }
        _ => return,
    };
    let a = std::mem::replace(&mut args[0], Expr::Lit(Value::Null));
    args[0] = Expr::Cast(Box::new(a), to);
}

/// The argument of `VARIADIC arg`, as the rewrite marked it.
fn variadic_marked(e: &ast::Expr) -> Option<&ast::Expr> {
    let ast::Expr::Function(f) = e else {
        return None;
    };
    if fname(f) != VARIADIC_MARK {
        return None;
    }
    match args_of(f).as_slice() {
        [a] => arg_expr(a),
        _ => None,
    }
}

/// `name(args..., VARIADIC array)`.
fn compile_variadic(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    name: &str,
    rest: &[&FunctionArg],
    array: &ast::Expr,
) -> Result<Expr> {
    let Some(v) = Variadic::of(name) else {
        return Err(SqlError::unsupported(format!(
            "VARIADIC in a call of {name}()"
        )));
    };
    let mut args = Vec::new();
    for a in rest {
        let e = arg_expr(a)
            .ok_or_else(|| SqlError::syntax(format!("unsupported argument to {name}")))?;
        if variadic_marked(e).is_some() {
            return Err(SqlError::syntax(
                "syntax error: VARIADIC must be the last argument",
            ));
        }
        args.push(Expr::compile(p, scope, e)?);
    }
    if v.func() == Func::Format && args.is_empty() {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            "function format(text[]) does not exist",
        )
        .with_fields(crate::error::ErrorFields {
            hint: Some(
                "No function matches the given name and argument types. \
                 You might need to add explicit type casts."
                    .into(),
            ),
            ..Default::default()
        }));
    }
    let untyped = matches!(array, ast::Expr::Value(x) if matches!(x.value, ast::Value::SingleQuotedString(_)));
    let arr = Expr::compile(p, scope, array)?;
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    match (&arr, crate::query::static_type(&arr, &types, &p.params)) {
        (Expr::Param(i), None) => p.infer_param(*i, DataType::Array(Box::new(DataType::Text))),
        (Expr::Lit(Value::Null), _) | (_, Some(DataType::Array(_))) if !untyped => {}
        _ => {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                "VARIADIC argument must be an array",
            ))
        }
    }
    args.push(arr);
    Ok(Expr::Func(Func::Variadic(v), args))
}

/// A binary string function (`functions/call/binary_str.rs`): its arity
/// checked, and the int8 `to_hex` and bytea `overlay` told apart by their
/// arguments' types.
fn binary_str_call(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    name: &str,
    b: crate::functions::BinaryStrFn,
    args: Vec<Expr>,
) -> Result<Expr> {
    use crate::functions::BinaryStrFn as B;
    if !b.arity().contains(&args.len()) {
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "function {name}() with {} arguments does not exist",
                args.len()
            ),
        ));
    }
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let first = args
        .first()
        .and_then(|a| query::static_type(a, &types, &p.params));
    let b = match (b, first) {
        (B::ToHex32, Some(DataType::BigInt)) => B::ToHex64,
        (B::Overlay, Some(DataType::Bytes)) => B::OverlayBytes,
        (b, _) => b,
    };
    Ok(Expr::Func(Func::BinaryStr(b), args))
}

/// Functions whose string parameters are `text` in PostgreSQL (not
/// `bpchar`, `"any"` or `anyelement`).
fn takes_text(f: Func) -> bool {
    matches!(
        f,
        Func::Length
            | Func::Upper
            | Func::Lower
            | Func::Initcap
            | Func::Substring
            | Func::Trim
            | Func::Ltrim
            | Func::Rtrim
            | Func::Replace
            | Func::Left
            | Func::Right
            | Func::Md5
            | Func::RegexpReplace
            | Func::RegexpMatch
            | Func::RegexpSplitToArray
            | Func::RegexpCount
            | Func::RegexpInstr
            | Func::RegexpSubstr
            | Func::RegexpLike
            | Func::SplitPart
            | Func::Repeat
            | Func::Lpad
            | Func::Rpad
            | Func::StrPos
            | Func::Ascii
            | Func::QuoteIdent
            | Func::QuoteLiteral
            | Func::BitLength
    )
}

/// `row_to_json(record [, pretty])` and `array_to_json(array [, pretty])`:
/// to_json of a value that must be a record (an array); the pretty form
/// (line breaks between top-level items) is refused.
fn to_json_of(
    p: &mut Planner<'_>,
    scope: &Arc<Scope>,
    name: &str,
    raw_args: &[&ast::FunctionArg],
    mut args: Vec<Expr>,
) -> Result<Expr> {
    let types: Vec<DataType> = scope.cols.iter().map(|c| c.ty.clone()).collect();
    let t = args
        .first()
        .and_then(|a| query::static_type(a, &types, &p.params));
    let fits = matches!(
        (name, &t),
        ("row_to_json", Some(DataType::Record(_))) | ("array_to_json", Some(DataType::Array(_)))
    );
    if args.is_empty() || args.len() > 2 || !fits {
        let shown = t.map(|t| t.sql_name()).unwrap_or_else(|| "unknown".into());
        return Err(SqlError::new(
            ErrorKind::UndefinedFunction,
            format!("function {name}({shown}) does not exist"),
        ));
    }
    if args.len() == 2 {
        let plain = matches!(
            raw_args.get(1).and_then(|a| arg_expr(a)),
            Some(ast::Expr::Value(v)) if matches!(v.value, ast::Value::Boolean(false))
        );
        if !plain {
            return Err(SqlError::unsupported(format!(
                "{name}() with its pretty argument other than false"
            )));
        }
        args.truncate(1);
    }
    let arg = super::record::json_arg(p, scope, args.remove(0));
    Ok(Expr::Func(
        Func::Json(crate::functions::json::JsonFn::To { jsonb: false }),
        vec![arg],
    ))
}
