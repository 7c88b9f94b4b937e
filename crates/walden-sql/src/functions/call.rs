//! Evaluating a scalar function on its arguments: `call` sends each
//! function to the file of its kind under `call/`.

use super::*;

mod arrays;
mod binary_str;
pub use binary_str::BinaryStrFn;
mod datetime;
mod datetime_make;
mod math;
mod numeric_fns;
mod system;
mod text;
mod transcend;
mod trig;
mod tsql_text;

/// The longest text `lpad` / `rpad` build (PostgreSQL's limit is bytes
/// of a 1 GB value; characters here).
pub(super) const MAX_TEXT_CHARS: usize = 256 << 20;

pub(crate) fn text_arg(v: &Value) -> String {
    v.to_string()
}

pub(crate) fn int_arg(v: &Value, what: &str) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Reg(_, oid, _) => Ok(*oid as i64),
        Value::Decimal(d) => Ok(d.to_integer(i64::MIN, i64::MAX, "integer")?),
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
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    Ok(match f {
        Func::Variadic(v) => return call_variadic(v, a, env),
        Func::BinaryStr(b) => binary_str::call(b, &a)?,
        Func::Json(j) => crate::functions::json::call(j, a)?,
        Func::RecordJson => crate::functions::json::records::to_json(&a[0], &a[1])?,
        Func::RecordText => crate::functions::json::records::to_text(&a[0], &a[1])?,
        Func::Routine => super::routines::call_routine(a, env)?,
        Func::Bitwise(op, w) => bitwise::call(op, w, &a)?,
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
        Func::Now
        | Func::LocalTimestamp
        | Func::StatementTimestamp
        | Func::ClockTimestamp
        | Func::Today
        | Func::DateAdd
        | Func::DateDiff
        | Func::DatePart
        | Func::ToChar
        | Func::DateTrunc
        | Func::Extract
        | Func::AtTimeZone
        | Func::DatePartPg
        | Func::TimePrecision(_)
        | Func::IntervalTypmod(..)
        | Func::Age => datetime::call(f, a, env)?,
        Func::MakeDate
        | Func::MakeTime
        | Func::MakeTimestamp
        | Func::MakeTimestampTz
        | Func::MakeInterval
        | Func::ToTimestamp
        | Func::DateBin
        | Func::JustifyDays
        | Func::JustifyHours
        | Func::JustifyInterval
        | Func::IsFinite => {
            if a.iter().any(|v| v.is_null()) {
                Value::Null
            } else {
                datetime_make::call(f, &a)?
            }
        }
        Func::AdvisoryUnlockAll
        | Func::AdvisoryLock
        | Func::AdvisoryTryLock
        | Func::AdvisoryUnlock
        | Func::Sleep
        | Func::Notify
        | Func::NotificationQueueUsage
        | Func::SetConfig
        | Func::NewUuid
        | Func::Spid
        | Func::ScopeIdentity
        | Func::LastIdentity
        | Func::MyTempSchema
        | Func::IsOtherTempSchema
        | Func::ReloadConf
        | Func::Version
        | Func::CurrentUser
        | Func::DbName
        | Func::SchemaName
        | Func::DbId
        | Func::NextVal
        | Func::CurrVal
        | Func::LastVal
        | Func::SetVal
        | Func::CurrentSetting => system::call(f, a, env)?,
        Func::BlockingPids
        | Func::SignalBackend(_)
        | Func::ToReg(_)
        | Func::CurrentSchema
        | Func::CurrentSchemas
        | Func::FormatType
        | Func::Null
        | Func::ObjDescription
        | Func::ColDescription
        | Func::TriggerDef
        | Func::FunctionResult
        | Func::FunctionArguments { .. }
        | Func::True
        | Func::Privilege(_)
        | Func::False
        | Func::IsVisible
        | Func::EncodingName
        | Func::EncodingId
        | Func::PgGetExpr
        | Func::SerialSequence
        | Func::Ident(_)
        | Func::PgGetIndexDef
        | Func::PgGetViewDef
        | Func::PgGetPartKeyDef
        | Func::PgGetConstraintDef
        | Func::RegClassOid
        | Func::RegClassName
        | Func::RegTypeOid
        | Func::RegTypeName
        | Func::RegNamespaceOid
        | Func::RegNamespaceName
        | Func::AclDefault
        | Func::RegProcName
        | Func::PartitionAncestors
        | Func::RelationSize(_)
        | Func::SizePretty => env.info.system.call(f, a, env)?,
        Func::ArrayBuild
        | Func::RowBuild
        | Func::RecordField(_)
        | Func::AnyArray(_, _)
        | Func::ArrayCat
        | Func::ArrayAppend
        | Func::ArrayPrepend
        | Func::StringToArray
        | Func::ArrayRemove
        | Func::ArrayPosition
        | Func::ArrayPositions
        | Func::ArrayToString
        | Func::ArrayUpper
        | Func::ArrayLower
        | Func::ArrayLength
        | Func::ArrayNdims
        | Func::ArrayDims
        | Func::ArrayBuildNested
        | Func::Cardinality
        | Func::ArrayElement
        | Func::ArrayContains(_)
        | Func::ArrayOverlap => arrays::call(f, a)?,
        Func::Format
        | Func::ConcatWs
        | Func::StrPos
        | Func::Ascii
        | Func::Chr
        | Func::BitLength
        | Func::Concat
        | Func::Upper
        | Func::Lower
        | Func::Initcap
        | Func::Length
        | Func::OctetLength
        | Func::Repeat
        | Func::Substring
        | Func::Trim
        | Func::Ltrim
        | Func::Rtrim
        | Func::Replace
        | Func::Md5
        | Func::RegexpReplace
        | Func::RegexpMatch
        | Func::RegexpSplitToArray
        | Func::SplitPart
        | Func::Lpad
        | Func::Rpad
        | Func::Left
        | Func::Right
        | Func::QuoteIdent
        | Func::QuoteLiteral => text::call(f, a)?,
        Func::QuoteName | Func::StringEscape | Func::Unicode => tsql_text::call(f, a)?,
        Func::Abs
        | Func::Round
        | Func::Trunc
        | Func::Floor
        | Func::Ceil
        | Func::Mod
        | Func::Power
        | Func::Random => math::call(f, a)?,
        Func::Sqrt
        | Func::Scale
        | Func::MinScale
        | Func::TrimScale
        | Func::Sign
        | Func::Div
        | Func::Gcd
        | Func::Lcm
        | Func::Factorial
        | Func::Float4Numeric
        | Func::WidthBucket => numeric_fns::call(f, a)?,
        Func::RegexpCount | Func::RegexpInstr | Func::RegexpSubstr | Func::RegexpLike => {
            crate::functions::regex_fns::call_positional(f, &a)?
        }
        Func::ToNumber => match (&a[0], &a[1]) {
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (s, t) => crate::functions::num_format::to_number(&text_arg(s), &text_arg(t))?,
        },
        Func::Ln | Func::Exp | Func::Log | Func::Log10 | Func::FloatFn(_) => transcend::call(f, a)?,
    })
}
