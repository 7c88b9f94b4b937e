//! `Func`: the scalar functions Walden knows, the names that reach them, their result types.

use super::*;

/// The functions of double precision only (and the `|/`, `||/` operators).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatFn {
    Sqrt,
    Cbrt,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    // Trigonometry (`call/trig.rs`): radians, then degrees.
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sind,
    Cosd,
    Tand,
    Cotd,
    Asind,
    Acosd,
    Atand,
    Atan2d,
    Degrees,
    Radians,
    Pi,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    /// A binary string function, or translate/to_hex/unistr/overlay
    /// (`call/binary_str.rs`).
    BinaryStr(BinaryStrFn),
    /// An integer bitwise operator at one width (`functions/bitwise.rs`).
    Bitwise(bitwise::BitOp, bitwise::IntWidth),
    /// The transaction's start (now(), CURRENT_TIMESTAMP).
    Now,
    /// The transaction's start as local time (LOCALTIMESTAMP).
    LocalTimestamp,
    /// EXTRACT(field FROM x): numeric.
    Extract,
    /// `x AT TIME ZONE zone` (args: x, zone).
    AtTimeZone,
    /// date_part(field, x): double precision.
    DatePartPg,
    /// Values from parts and grids (`call/datetime_make.rs`).
    MakeDate,
    MakeTime,
    MakeTimestamp,
    MakeTimestampTz,
    /// `make_interval(years, months, weeks, days, hours, mins, secs)`.
    MakeInterval,
    /// `to_timestamp(seconds)`.
    ToTimestamp,
    DateBin,
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    IsFinite,
    /// A cast to `timestamp(p)`, `time(p)`: the value kept to `p`
    /// fractional-second digits.
    TimePrecision(u8),
    /// A cast to `interval DAY TO SECOND(p)` and the like: the value cut
    /// to its fields and rounded to its precision.
    IntervalTypmod(Option<sqlparser::ast::IntervalFields>, Option<u8>),
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
    /// pg_notify(channel, payload): NOTIFY as a function.
    Notify,
    /// pg_notification_queue_usage().
    NotificationQueueUsage,
    /// set_config(name, value, is_local).
    SetConfig,
    /// to_regclass / to_regtype / to_regnamespace(name): the object as a
    /// reg value, or NULL when there is none.
    ToReg(walden_engine::RegKind),
    Today,
    NewUuid,
    DbId,
    DbName,
    /// T-SQL `SCHEMA_NAME([schema_id])` (`sys.schemas`' ids).
    SchemaName,
    Spid,
    /// `pg_my_temp_schema()`: the OID of the session's `pg_temp_N`, 0
    /// while it has no temporary table.
    MyTempSchema,
    /// `pg_is_other_temp_schema(oid)`: another session's `pg_temp_N`.
    IsOtherTempSchema,
    /// `pg_reload_conf()`: the hosting server re-reads its configuration.
    ReloadConf,
    /// `pg_blocking_pids(pid)`: the sessions whose locks (held, or
    /// requested ahead of it) the session waits for (`locks_view.rs`).
    BlockingPids,
    /// `pg_cancel_backend(pid)` / `pg_terminate_backend(pid)`
    /// (`compat/activity_view.rs`); true: terminate.
    SignalBackend(bool),
    Version,
    CurrentUser,
    CurrentSchema,
    /// `current_schemas(include_implicit)`: the effective search path.
    CurrentSchemas,
    NextVal,
    /// `currval(seq)`: this session's last `nextval` of the sequence.
    CurrVal,
    /// `lastval()`: this session's last `nextval` of any sequence.
    LastVal,
    /// `setval(seq, value [, is_called])` (pg_dump's restore sets each
    /// sequence with it).
    SetVal,
    Coalesce,
    NullIf,
    Upper,
    Lower,
    /// `initcap(text)`: each word's first letter upper case, the rest lower.
    Initcap,
    Length,
    Substring,
    Trim,
    Ltrim,
    Rtrim,
    Replace,
    Concat,
    Left,
    Right,
    Md5,
    /// regexp_replace, regexp_match, regexp_split_to_array, split_part
    /// (`functions/regex_fns.rs`).
    RegexpReplace,
    RegexpMatch,
    RegexpSplitToArray,
    /// regexp_count, regexp_instr, regexp_substr, regexp_like.
    RegexpCount,
    RegexpInstr,
    RegexpSubstr,
    RegexpLike,
    SplitPart,
    Repeat,
    OctetLength,
    Lpad,
    Rpad,
    /// `pg_table_is_visible(oid)` / `pg_type_is_visible(oid)`: whether the
    /// search path finds the object by its bare name.
    IsVisible,
    Abs,
    Round,
    /// trunc(x [, places]): toward zero.
    Trunc,
    Floor,
    Ceil,
    Mod,
    Power,
    Sqrt,
    /// ln, exp, log(x) / log10(x) and log(base, x): numeric for numeric
    /// arguments, double precision otherwise (`call/transcend.rs`).
    Ln,
    Exp,
    Log,
    Log10,
    /// The double-precision-only functions beside them.
    FloatFn(FloatFn),
    Random,
    /// A real as numeric: PostgreSQL's float4_numeric reads the value at
    /// 6 significant digits (`123456.789::float4::numeric` is 123457),
    /// which a cast cannot tell from a double's 15.
    Float4Numeric,
    /// numeric's exact functions (`call/numeric_fns.rs`).
    Scale,
    MinScale,
    TrimScale,
    Sign,
    Div,
    Gcd,
    Lcm,
    Factorial,
    WidthBucket,
    DateAdd,
    DateDiff,
    DatePart,
    Greatest,
    Least,
    ToChar,
    /// to_number(text, template) (`num_format.rs`).
    ToNumber,
    CurrentSetting,
    /// has_*_privilege, pg_has_role, pg_get_userbyid (`privileges.rs`).
    Privilege(PrivFn),
    /// pg_table_is_visible and friends: everything is visible.
    True,
    /// pg_relation_is_publishable and friends: nothing is.
    False,
    /// Comments and statistics objects, which Walden does not have
    /// (col_description, shobj_description, ...): always NULL.
    Null,
    /// obj_description: `public`'s fixed comment, NULL for the rest.
    ObjDescription,
    /// col_description: a column's `COMMENT ON COLUMN`.
    ColDescription,
    /// pg_get_triggerdef: a trigger's CREATE TRIGGER text.
    TriggerDef,
    /// pg_get_function_result / pg_get_function_arguments of a built-in
    /// function listed in `pg_proc` (`pg_catalog/builtin_procs.rs`).
    FunctionResult,
    /// With defaults (`pg_get_function_arguments`) or without
    /// (`_identity_arguments`).
    FunctionArguments {
        defaults: bool,
    },
    EncodingName,
    /// pg_char_to_encoding: UTF8's number (6), -1 for another name.
    EncodingId,
    ArrayToString,
    FormatType,
    /// pg_get_expr: `adbin` already holds the expression's text.
    PgGetExpr,
    PgGetIndexDef,
    /// `pg_get_viewdef(view [, pretty])`: by OID or by name.
    PgGetViewDef,
    /// `pg_get_partkeydef(table)`: a partitioned table's key (`RANGE (a)`).
    PgGetPartKeyDef,
    /// `pg_get_serial_sequence(table, column)`.
    SerialSequence,
    /// T-SQL's `SCOPE_IDENTITY()` and `@@IDENTITY`: the identity value the
    /// session's last INSERT took in this scope / in any.
    ScopeIdentity,
    LastIdentity,
    /// T-SQL's `IDENT_CURRENT(t)`, `IDENT_SEED(t)`, `IDENT_INCR(t)`.
    Ident(IdentFn),
    PgGetConstraintDef,
    /// `text::regclass` (a relation's OID) and `oid::regclass` (its name);
    /// the same for regtype and regnamespace.
    RegClassOid,
    RegClassName,
    RegTypeOid,
    RegTypeName,
    RegNamespaceOid,
    RegNamespaceName,
    /// `array_upper(a, 1)` and `array_length(a, 1)` (lower bound 1).
    ArrayUpper,
    ArrayLower,
    /// array_length(a, d).
    ArrayLength,
    /// array_ndims(a).
    ArrayNdims,
    /// array_dims(a): `[1:2][1:3]`.
    ArrayDims,
    /// ARRAY[...] of arrays: one more dimension.
    ArrayBuildNested,
    Cardinality,
    /// `a[i]`.
    ArrayElement,
    /// `a @> b` (or `a <@ b` when the flag is set, arguments swapped).
    ArrayContains(bool),
    /// `a && b`.
    ArrayOverlap,
    ArrayCat,
    ArrayAppend,
    ArrayPrepend,
    StringToArray,
    /// `ARRAY[x, y]`.
    ArrayBuild,
    /// `ROW(x, y)`: a record of the arguments (typed by the cast around it,
    /// `expr/record.rs`).
    RowBuild,
    /// A record or array as json, read by its type's shape (the second
    /// argument, `json::records::shape`): `to_json(t)`, `json_agg(t)`.
    RecordJson,
    /// A record (or an array of records) as text: `(1,"a b",)`.
    RecordText,
    /// `(record).field`, by the field's position.
    RecordField(u16),
    /// `x op ANY (array)` (`ALL` when the flag is set).
    AnyArray(crate::functions::BinOp, bool),
    QuoteIdent,
    /// T-SQL's QUOTENAME(s [, q]), STRING_ESCAPE(s, 'json'), UNICODE(s).
    QuoteName,
    StringEscape,
    Unicode,
    /// `quote_literal(text)`.
    QuoteLiteral,
    /// `acldefault(type, owner)`.
    AclDefault,
    /// `array_remove(array, element)`.
    ArrayRemove,
    /// `strpos(s, sub)` and `position(sub IN s)`.
    StrPos,
    Ascii,
    Chr,
    /// `bit_length(s)`: bits of the UTF-8 bytes (of a bytea's bytes).
    BitLength,
    /// `format(fmt, args...)` (`functions/strings.rs`).
    Format,
    /// `concat_ws(sep, args...)`: the arguments that are not NULL, joined.
    ConcatWs,
    /// A variadic function called with `VARIADIC array` last: the array's
    /// elements are its last arguments.
    Variadic(Variadic),
    /// `array_position(a, x [, start])`: the first index holding `x` (NULL
    /// finds a NULL), or NULL.
    ArrayPosition,
    /// `array_positions(a, x)`: every index holding `x`.
    ArrayPositions,
    /// `oid::regproc`: a function's name, `-` for none (Walden lists no
    /// functions in `pg_proc`, so any other OID shows as its number).
    RegProcName,
    /// `pg_partition_ancestors(rel)`: a relation that is no partition (no
    /// Walden table is) is its only ancestor (psql's \d "Referenced by").
    PartitionAncestors,
    /// pg_relation_size and its family (`pg_catalog/sizes.rs`).
    RelationSize(SizeOf),
    SizePretty,
    /// json/jsonb operators and functions (`functions/json.rs`).
    Json(crate::functions::json::JsonFn),
    /// `walden_routine('name', args...)`: a stored function run by the
    /// procedural runtime (`routines.rs`).
    Routine,
}

impl Func {
    /// Whether the result depends only on the arguments.
    pub fn is_pure(self) -> bool {
        !matches!(
            self,
            Func::Random
                | Func::NewUuid
                | Func::NextVal
                | Func::CurrVal
                | Func::LastVal
                | Func::SetVal
                | Func::ClockTimestamp
                | Func::Sleep
                | Func::Notify
                | Func::NotificationQueueUsage
                | Func::AdvisoryLock
                | Func::AdvisoryTryLock
                | Func::AdvisoryUnlock
                | Func::AdvisoryUnlockAll
                | Func::SetConfig
                | Func::BlockingPids
                | Func::SignalBackend(_)
                | Func::ReloadConf
                | Func::Routine
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

/// Which of T-SQL's identity functions of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdentFn {
    Current,
    Seed,
    Incr,
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

/// The static type of a scalar function's result.
pub fn func_type(f: Func, args: &[DataType]) -> DataType {
    match f {
        Func::BinaryStr(b) => b.result_type(),
        Func::StatementTimestamp | Func::ClockTimestamp => DataType::TimestampTz,
        Func::LocalTimestamp => DataType::Timestamp,
        Func::Extract => DataType::Decimal {
            precision: 0,
            scale: 0,
        },
        Func::DatePartPg => DataType::Double,
        Func::Age => DataType::Interval,
        Func::MakeDate => DataType::Date,
        Func::MakeTime => DataType::Time,
        Func::MakeTimestamp => DataType::Timestamp,
        Func::MakeTimestampTz | Func::ToTimestamp => DataType::TimestampTz,
        Func::MakeInterval | Func::JustifyDays | Func::JustifyHours | Func::JustifyInterval => {
            DataType::Interval
        }
        Func::IsFinite => DataType::Bool,
        Func::DateBin => match (args.get(1), args.get(2)) {
            (Some(DataType::Timestamp), _) | (_, Some(DataType::Timestamp)) => DataType::Timestamp,
            _ => DataType::TimestampTz,
        },
        Func::TimePrecision(_) => args.first().cloned().unwrap_or(DataType::Timestamp),
        Func::IntervalTypmod(..) => DataType::Interval,
        // A timestamp gives the instant; anything else (an unknown literal
        // reads as timestamptz) the wall clock there.
        Func::AtTimeZone => match args.first() {
            Some(DataType::Timestamp) => DataType::TimestampTz,
            _ => DataType::Timestamp,
        },
        Func::DateTrunc if args.len() == 3 => DataType::TimestampTz,
        Func::DateTrunc => match args.get(1) {
            Some(DataType::Timestamp) => DataType::Timestamp,
            Some(DataType::Interval) => DataType::Interval,
            _ => DataType::TimestampTz,
        },
        Func::AdvisoryTryLock | Func::AdvisoryUnlock => DataType::Bool,
        Func::ToReg(k) => DataType::Reg(k),
        Func::PartitionAncestors => DataType::Reg(walden_engine::RegKind::Class),
        Func::RegTypeOid | Func::RegTypeName => DataType::Reg(walden_engine::RegKind::Type),
        Func::RegClassOid | Func::RegClassName => DataType::Reg(walden_engine::RegKind::Class),
        Func::RegNamespaceOid | Func::RegNamespaceName => {
            DataType::Reg(walden_engine::RegKind::Namespace)
        }
        Func::Now => DataType::TimestampTz,
        // substring and trim of a bytea are a bytea.
        Func::Substring | Func::Trim | Func::Ltrim | Func::Rtrim
            if args.first() == Some(&DataType::Bytes) =>
        {
            DataType::Bytes
        }
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
        Func::NotificationQueueUsage => DataType::Double,
        // numeric(38, 0) in SQL Server.
        Func::ScopeIdentity | Func::LastIdentity | Func::Ident(_) => DataType::Decimal {
            precision: 38,
            scale: 0,
        },
        Func::MyTempSchema => DataType::Oid,
        Func::IsOtherTempSchema => DataType::Bool,
        Func::BlockingPids => DataType::Array(Box::new(DataType::Int)),
        Func::NextVal
        | Func::CurrVal
        | Func::LastVal
        | Func::SetVal
        | Func::DateDiff
        | Func::DatePart => DataType::BigInt,
        Func::Coalesce
        | Func::NullIf
        | Func::Greatest
        | Func::Least
        | Func::Abs
        | Func::Round
        | Func::Floor
        | Func::Ceil
        | Func::Mod => args.first().cloned().unwrap_or(DataType::Text),
        // sqrt(numeric) is numeric; of anything else double precision.
        Func::Sqrt if matches!(args.first(), Some(DataType::Decimal { .. })) => DataType::Decimal {
            precision: 0,
            scale: 0,
        },
        Func::Power
            if args.iter().any(|t| matches!(t, DataType::Decimal { .. }))
                && !args
                    .iter()
                    .any(|t| matches!(t, DataType::Double | DataType::Real)) =>
        {
            DataType::Decimal {
                precision: 0,
                scale: 0,
            }
        }
        // log(base, x) is numeric only.
        Func::Log if args.len() == 2 => DataType::Decimal {
            precision: 0,
            scale: 0,
        },
        Func::Ln | Func::Exp | Func::Log | Func::Log10
            if args.iter().any(|t| matches!(t, DataType::Decimal { .. }))
                && !args
                    .iter()
                    .any(|t| matches!(t, DataType::Double | DataType::Real)) =>
        {
            DataType::Decimal {
                precision: 0,
                scale: 0,
            }
        }
        Func::Power
        | Func::Sqrt
        | Func::Random
        | Func::Ln
        | Func::Exp
        | Func::Log
        | Func::Log10
        | Func::FloatFn(_) => DataType::Double,
        Func::Scale
        | Func::MinScale
        | Func::WidthBucket
        | Func::RegexpCount
        | Func::RegexpInstr => DataType::Int,
        Func::RegexpLike => DataType::Bool,
        Func::TrimScale | Func::Div | Func::Factorial | Func::Float4Numeric | Func::ToNumber => {
            DataType::Decimal {
                precision: 0,
                scale: 0,
            }
        }
        // sign(integer) resolves to sign(double precision).
        Func::Sign => match args.first() {
            Some(DataType::Decimal { .. }) => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
            _ => DataType::Double,
        },
        Func::Gcd | Func::Lcm => match (args.first(), args.get(1)) {
            (Some(a @ (DataType::SmallInt | DataType::Int | DataType::BigInt)), Some(b))
                if matches!(b, DataType::SmallInt | DataType::Int | DataType::BigInt) =>
            {
                if a == b {
                    a.clone()
                } else {
                    DataType::BigInt
                }
            }
            _ => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
        },
        // trunc(numeric [, n]) and trunc(x, n) are numeric; trunc of a float
        // or an integer is a float, as PostgreSQL resolves it.
        Func::Trunc => match args.first() {
            Some(DataType::Decimal { .. }) => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
            _ if args.len() > 1 => DataType::Decimal {
                precision: 0,
                scale: 0,
            },
            _ => DataType::Double,
        },
        Func::True
        | Func::False
        | Func::AnyArray(..)
        | Func::IsVisible
        | Func::ReloadConf
        | Func::SignalBackend(_) => DataType::Bool,
        Func::Privilege(f) if f != PrivFn::UserById => DataType::Bool,
        Func::ArrayUpper
        | Func::ArrayLower
        | Func::ArrayLength
        | Func::ArrayNdims
        | Func::Cardinality
        | Func::ArrayPosition
        | Func::StrPos
        | Func::Ascii
        | Func::BitLength
        | Func::OctetLength
        | Func::Unicode
        | Func::Length => DataType::Int,
        Func::QuoteName | Func::StringEscape | Func::ArrayDims => DataType::Text,
        Func::ArrayPositions => DataType::Array(Box::new(DataType::Int)),
        Func::ArrayContains(_) | Func::ArrayOverlap => DataType::Bool,
        Func::ArrayElement => args
            .first()
            .and_then(DataType::element)
            .unwrap_or(DataType::Text),
        // ARRAY[...]: its elements' type (the first that is not text, so
        // ARRAY['a', 1] and ARRAY[NULL, 1] are numbers, as PostgreSQL
        // resolves unknown literals).
        Func::ArrayBuild => DataType::Array(Box::new(
            args.iter()
                .find(|t| !matches!(t, DataType::Text | DataType::Array(_)))
                .or(args.first())
                .filter(|t| !matches!(t, DataType::Array(_)))
                .cloned()
                .unwrap_or(DataType::Text),
        )),
        Func::ArrayBuildNested => args
            .iter()
            .find(|t| matches!(t, DataType::Array(_)))
            .cloned()
            .unwrap_or(DataType::Array(Box::new(DataType::Text))),
        Func::RowBuild => DataType::Record(
            args.iter()
                .enumerate()
                .map(|(i, t)| (format!("f{}", i + 1), t.clone()))
                .collect(),
        ),
        Func::RecordField(i) => match args.first() {
            Some(DataType::Record(fields)) => fields
                .get(i as usize)
                .map_or(DataType::Text, |(_, t)| t.clone()),
            _ => DataType::Text,
        },
        Func::ArrayCat | Func::ArrayAppend | Func::ArrayRemove => match args.first() {
            Some(t @ DataType::Array(_)) => t.clone(),
            Some(e) => DataType::Array(Box::new(e.clone())),
            None => DataType::Array(Box::new(DataType::Text)),
        },
        Func::ArrayPrepend => match args.get(1) {
            Some(t @ DataType::Array(_)) => t.clone(),
            _ => DataType::Array(Box::new(args.first().cloned().unwrap_or(DataType::Text))),
        },
        Func::StringToArray | Func::RegexpMatch | Func::RegexpSplitToArray => {
            DataType::Array(Box::new(DataType::Text))
        }
        // Names, as PostgreSQL's (a UNION with a name column stays name).
        Func::CurrentUser
        | Func::CurrentSchema
        | Func::DbName
        | Func::SchemaName
        | Func::EncodingName
        | Func::Privilege(PrivFn::UserById) => DataType::Name,
        Func::CurrentSchemas => DataType::Array(Box::new(DataType::Name)),
        Func::RelationSize(_) => DataType::BigInt,
        Func::EncodingId => DataType::Int,
        Func::Json(j) => crate::functions::json::result_type(j, args),
        Func::RecordJson => DataType::Json,
        Func::Variadic(v) => func_type(v.func(), args),
        Func::Bitwise(_, w) => w.data_type(),
        _ => DataType::Text,
    }
}

/// `has_table_privilege` and friends, `pg_has_role`, `pg_get_userbyid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrivFn {
    Table,
    Column,
    Database,
    Schema,
    Role,
    UserById,
}

/// Which size a function asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOf {
    /// `pg_relation_size(rel [, fork])`, `pg_table_size(rel)`: the relation
    /// itself (Walden has no TOAST, free-space or visibility maps).
    Relation,
    /// `pg_total_relation_size(rel)`: a table with its indexes.
    Total,
    /// `pg_indexes_size(rel)`: a table's indexes.
    Indexes,
    /// `pg_database_size(name | oid)`.
    Database,
}
